module

public import Verified.Spec.Parse

public section

/-!
# FFI entry points: bytes in, bytes out

The shared library that the Python package loads exports two C functions,
`lvt_render_bytes` and `lvt_parse_bytes`, both `ByteArray → ByteArray`. They are the proven
definitions of `Verified/Spec` behind a byte codec, so the code that runs natively is the code
that was proven: `renderBytes_eq` and `parseBytes_eq` below state, by `rfl`, that each export
is "decode the request, run `Format.renderTok` / `Format.parse`, encode the answer".

No tokenizer runs here: the request carries the format as data (every literal piece already
encoded) and the conversation with already-encoded payloads.

## Wire layout (version 1)

All integers are little-endian `u32`. A *token list* is a `u32` count followed by that many
`u32` ids.

* **format**: 19 token lists, in this order: `reserved`, `bos`, `header r` and then
  `footer r` for the roles `system, developer, user, assistant, tool`, `blockOpen k` and then
  `blockClose k` for the kinds `plain, reasoning, toolCall`, `toolSep`.
* **conversation**: one byte `addGenerationPrompt` (0 or 1), a `u32` message count, then per
  message one role byte (0 system … 4 tool), a `u32` block count and per block one kind byte
  (0 plain, 1 reasoning, 2 tool call) followed by its payload token list (two lists, name then
  arguments, for a tool call).
* **render request**: the version byte `1`, a format, a conversation, nothing after.
* **parse request**: the version byte `1`, a format, a token list, nothing after.
* **render answer**: status byte `0`, a flags byte (bit 0: the format is well formed, bit 1:
  the conversation is valid for it), a `u32` cell count `n`, then `n` token ids (`u32`), `n`
  mask bytes (0/1), `n` owner indices (`u32`), `n` source bytes (0 bos, 1 header, 2 delim,
  3 payload, 4 eot, 5 footer, 6 prompt).
* **parse answer**: status byte `0`, a flags byte (bit 0: well formed), a byte `1` followed by
  the parsed conversation, or a byte `0` when the tokens are not a render.
* **error answer**: status byte `1` (malformed request), a `u32` length and that many bytes of
  UTF-8 message.

Every function here is total and structurally recursive; the decoders are tail recursive
(accumulator plus a final `reverse`), so the compiled code runs in constant stack.
-/

namespace Verified
namespace Ffi

/-- Raw bytes, as a list (what the kernel can evaluate and the proofs talk about). -/
abbrev Bytes := List UInt8

/-- The wire-format version this file speaks. -/
@[expose] def wireVersion : UInt8 := 1

/-! ## Encoding -/

/-- A natural number as four little-endian bytes (taken modulo `2 ^ 32`). -/
@[expose] def u32le (n : Nat) : Bytes :=
  [n.toUInt8, (n / 256).toUInt8, (n / 65536).toUInt8, (n / 16777216).toUInt8]

/-- A token list: its length, then its ids. -/
@[expose] def encToks (ts : List Token) : Bytes :=
  u32le ts.length ++ ts.flatMap u32le

/-- The wire byte of a role. -/
@[expose] def roleByte : Role → UInt8
  | .system => 0
  | .developer => 1
  | .user => 2
  | .assistant => 3
  | .tool => 4

/-- The wire byte of a block kind. -/
@[expose] def kindByte : BlockKind → UInt8
  | .plain => 0
  | .reasoning => 1
  | .toolCall => 2

/-- The wire byte of a token source. -/
@[expose] def srcByte : Src → UInt8
  | .bos => 0
  | .header => 1
  | .delim => 2
  | .payload => 3
  | .eot => 4
  | .footer => 5
  | .prompt => 6

/-- The 19 token lists of a pre-encoded format, in wire order. -/
@[expose] def formatLists (f : EncFormat) : List (List Token) :=
  [f.reserved, f.bos,
   f.header .system, f.footer .system, f.header .developer, f.footer .developer,
   f.header .user, f.footer .user, f.header .assistant, f.footer .assistant,
   f.header .tool, f.footer .tool,
   f.blockOpen .plain, f.blockClose .plain, f.blockOpen .reasoning, f.blockClose .reasoning,
   f.blockOpen .toolCall, f.blockClose .toolCall, f.toolSep]

/-- Encode a pre-encoded format. -/
@[expose] def encFormat (f : EncFormat) : Bytes :=
  (formatLists f).flatMap encToks

/-- Encode one block. -/
@[expose] def encBlock : Block (List Token) → Bytes
  | .plain p => kindByte .plain :: encToks p
  | .reasoning p => kindByte .reasoning :: encToks p
  | .toolCall n a => kindByte .toolCall :: (encToks n ++ encToks a)

/-- Encode one message. -/
@[expose] def encMsg (m : Message (List Token)) : Bytes :=
  roleByte m.role :: (u32le m.blocks.length ++ m.blocks.flatMap encBlock)

/-- Encode a pre-encoded conversation. -/
@[expose] def encConv (c : Conversation (List Token)) : Bytes :=
  (if c.addGenerationPrompt then (1 : UInt8) else 0) ::
    (u32le c.messages.length ++ c.messages.flatMap encMsg)

/-- A render request, as the Python side builds it. -/
@[expose] def encRenderRequest (f : EncFormat) (c : Conversation (List Token)) : Bytes :=
  wireVersion :: (encFormat f ++ encConv c)

/-- A parse request, as the Python side builds it. -/
@[expose] def encParseRequest (f : EncFormat) (ts : List Token) : Bytes :=
  wireVersion :: (encFormat f ++ encToks ts)

/-- A Boolean as a flag bit. -/
@[expose] def bit (b : Bool) (v : UInt8) : UInt8 := if b then v else 0

/-- The answer to a render request: flags, then the four aligned columns of the cells. -/
@[expose] def encRenderAnswer (wf valid : Bool) (cs : List Cell) : Bytes :=
  (0 : UInt8) :: (bit wf 1 + bit valid 2) ::
    (u32le cs.length ++ cs.flatMap (fun c => u32le c.tok) ++
      cs.map (fun c => if c.loss then (1 : UInt8) else 0) ++
      cs.flatMap (fun c => u32le c.owner) ++ cs.map (fun c => srcByte c.src))

/-- The answer to a parse request. -/
@[expose] def encParseAnswer (wf : Bool) : Option (Conversation (List Token)) → Bytes
  | none => [0, bit wf 1, 0]
  | some c => (0 : UInt8) :: bit wf 1 :: (1 : UInt8) :: encConv c

/-- Why a request could not be decoded. -/
inductive WireError where
  /-- The request is empty. -/
  | empty
  /-- The first byte is not the wire version this library speaks. -/
  | version
  /-- The format section is truncated or malformed. -/
  | format
  /-- The conversation section is truncated or malformed (bad role or kind byte, say). -/
  | conversation
  /-- The token list of a parse request is truncated. -/
  | tokens
  /-- Bytes are left over after the request. -/
  | trailing
  deriving DecidableEq, Repr

/-- A human-readable message for a wire error. -/
@[expose] def WireError.message : WireError → String
  | .empty => "lvt wire: empty request"
  | .version => "lvt wire: unsupported wire version (expected 1)"
  | .format => "lvt wire: truncated or malformed format section"
  | .conversation => "lvt wire: truncated or malformed conversation section"
  | .tokens => "lvt wire: truncated token list"
  | .trailing => "lvt wire: trailing bytes after the request"

/-- The answer to a request that could not be decoded: status `1` and the message. -/
@[expose] def encError (e : WireError) : Bytes :=
  let msg := e.message.toUTF8.data.toList
  (1 : UInt8) :: (u32le msg.length ++ msg)

/-! ## Decoding -/

/-- Read one little-endian `u32`. -/
@[expose] def readU32 : Bytes → Option (Nat × Bytes)
  | b0 :: b1 :: b2 :: b3 :: rest =>
      some (b0.toNat + 256 * (b1.toNat + 256 * (b2.toNat + 256 * b3.toNat)), rest)
  | _ => none

/-- Read `n` ids after the ones already read (kept reversed in `acc`); tail recursive. -/
@[expose] def readIdsAux : Nat → List Token → Bytes → Option (List Token × Bytes)
  | 0, acc, bs => some (acc.reverse, bs)
  | n + 1, acc, bs =>
      match readU32 bs with
      | none => none
      | some (t, rest) => readIdsAux n (t :: acc) rest

/-- Read a token list: a count, then the ids. -/
@[expose] def readToks (bs : Bytes) : Option (List Token × Bytes) :=
  match readU32 bs with
  | none => none
  | some (n, rest) => readIdsAux n [] rest

/-- Read `n` token lists (kept reversed in `acc`); tail recursive. -/
@[expose] def readListsAux : Nat → List (List Token) → Bytes →
    Option (List (List Token) × Bytes)
  | 0, acc, bs => some (acc.reverse, bs)
  | n + 1, acc, bs =>
      match readToks bs with
      | none => none
      | some (ts, rest) => readListsAux n (ts :: acc) rest

/-- Build a format from its 19 token lists in wire order. -/
@[expose] def formatOfLists : List (List Token) → Option EncFormat
  | [res, bos, hs, fs, hd, fd, hu, fu, ha, fa, ht, ft, op, cp, orr, cr, ot, ct, sep] =>
      some {
        reserved := res,
        bos := bos,
        header := fun r => match r with
          | .system => hs | .developer => hd | .user => hu | .assistant => ha | .tool => ht,
        footer := fun r => match r with
          | .system => fs | .developer => fd | .user => fu | .assistant => fa | .tool => ft,
        blockOpen := fun k => match k with
          | .plain => op | .reasoning => orr | .toolCall => ot,
        blockClose := fun k => match k with
          | .plain => cp | .reasoning => cr | .toolCall => ct,
        toolSep := sep }
  | _ => none

/-- Read a format. -/
@[expose] def readFormat (bs : Bytes) : Option (EncFormat × Bytes) :=
  match readListsAux 19 [] bs with
  | none => none
  | some (ls, rest) =>
      match formatOfLists ls with
      | none => none
      | some f => some (f, rest)

/-- The role of a wire byte. -/
@[expose] def roleOfByte (b : UInt8) : Option Role :=
  match b.toNat with
  | 0 => some .system
  | 1 => some .developer
  | 2 => some .user
  | 3 => some .assistant
  | 4 => some .tool
  | _ => none

/-- Read one block. -/
@[expose] def readBlock : Bytes → Option (Block (List Token) × Bytes)
  | [] => none
  | k :: bs =>
      match k.toNat with
      | 0 => (readToks bs).map fun (p, rest) => (Block.plain p, rest)
      | 1 => (readToks bs).map fun (p, rest) => (Block.reasoning p, rest)
      | 2 =>
          match readToks bs with
          | none => none
          | some (n, bs₁) => (readToks bs₁).map fun (a, rest) => (Block.toolCall n a, rest)
      | _ => none

/-- Read `n` blocks (kept reversed in `acc`); tail recursive. -/
@[expose] def readBlocksAux : Nat → List (Block (List Token)) → Bytes →
    Option (List (Block (List Token)) × Bytes)
  | 0, acc, bs => some (acc.reverse, bs)
  | n + 1, acc, bs =>
      match readBlock bs with
      | none => none
      | some (b, rest) => readBlocksAux n (b :: acc) rest

/-- Read one message. -/
@[expose] def readMsg : Bytes → Option (Message (List Token) × Bytes)
  | [] => none
  | r :: bs =>
      match roleOfByte r with
      | none => none
      | some role =>
          match readU32 bs with
          | none => none
          | some (n, bs₁) =>
              (readBlocksAux n [] bs₁).map fun (blocks, rest) => (Message.mk role blocks, rest)

/-- Read `n` messages (kept reversed in `acc`); tail recursive. -/
@[expose] def readMsgsAux : Nat → List (Message (List Token)) → Bytes →
    Option (List (Message (List Token)) × Bytes)
  | 0, acc, bs => some (acc.reverse, bs)
  | n + 1, acc, bs =>
      match readMsg bs with
      | none => none
      | some (m, rest) => readMsgsAux n (m :: acc) rest

/-- Read a conversation. -/
@[expose] def readConv : Bytes → Option (Conversation (List Token) × Bytes)
  | [] => none
  | g :: bs =>
      if g.toNat < 2 then
        match readU32 bs with
        | none => none
        | some (n, bs₁) =>
            (readMsgsAux n [] bs₁).map fun (ms, rest) => (Conversation.mk ms (g.toNat == 1), rest)
      else none

/-- Decode a render request. -/
@[expose] def readRenderRequest : Bytes → Except WireError (EncFormat × Conversation (List Token))
  | [] => .error .empty
  | v :: bs =>
      if v != wireVersion then .error .version else
      match readFormat bs with
      | none => .error .format
      | some (f, bs₁) =>
          match readConv bs₁ with
          | none => .error .conversation
          | some (c, []) => .ok (f, c)
          | some (_, _ :: _) => .error .trailing

/-- Decode a parse request. -/
@[expose] def readParseRequest : Bytes → Except WireError (EncFormat × List Token)
  | [] => .error .empty
  | v :: bs =>
      if v != wireVersion then .error .version else
      match readFormat bs with
      | none => .error .format
      | some (f, bs₁) =>
          match readToks bs₁ with
          | none => .error .tokens
          | some (ts, []) => .ok (f, ts)
          | some (_, _ :: _) => .error .trailing

/-! ## The two services, on byte lists -/

/-- Render service: decode, render with `Format.renderTok`, encode the cells. -/
@[expose] def renderService (req : Bytes) : Bytes :=
  match readRenderRequest req with
  | .ok (f, c) => encRenderAnswer f.wf (f.valid c) (f.renderTok c)
  | .error e => encError e

/-- Parse service: decode, parse with `Format.parse`, encode the conversation. -/
@[expose] def parseService (req : Bytes) : Bytes :=
  match readParseRequest req with
  | .ok (f, ts) => encParseAnswer f.wf (f.parse ts)
  | .error e => encError e

/-! ## The exports -/

/-- Bytes of a list, as a `ByteArray`. -/
@[expose] def toByteArray (bs : Bytes) : ByteArray := ⟨bs.toArray⟩

/-- C symbol `lvt_render_bytes`: decode the request, run the proven `Format.renderTok` (and
the decidable `wf` / `valid` checks), encode the cells. -/
@[expose, export lvt_render_bytes]
def renderBytes (req : ByteArray) : ByteArray :=
  match readRenderRequest req.data.toList with
  | .ok (f, c) => toByteArray (encRenderAnswer f.wf (f.valid c) (f.renderTok c))
  | .error e => toByteArray (encError e)

/-- C symbol `lvt_parse_bytes`: decode the request, run the proven `Format.parse`, encode the
conversation. -/
@[expose, export lvt_parse_bytes]
def parseBytes (req : ByteArray) : ByteArray :=
  match readParseRequest req.data.toList with
  | .ok (f, ts) => toByteArray (encParseAnswer f.wf (f.parse ts))
  | .error e => toByteArray (encError e)

/-! ## What runs is what was proven -/

/-- The exported render is, by definition, the proven `Format.renderTok` between the wire
decoder and encoder: the native library runs the code the theorems are about. -/
theorem renderBytes_eq (req : ByteArray) :
    renderBytes req =
      match readRenderRequest req.data.toList with
      | .ok (f, c) => toByteArray (encRenderAnswer f.wf (f.valid c) (f.renderTok c))
      | .error e => toByteArray (encError e) := rfl

/-- The exported parse is, by definition, the proven `Format.parse` between the wire decoder
and encoder. -/
theorem parseBytes_eq (req : ByteArray) :
    parseBytes req =
      match readParseRequest req.data.toList with
      | .ok (f, ts) => toByteArray (encParseAnswer f.wf (f.parse ts))
      | .error e => toByteArray (encError e) := rfl

/-- The export is the list-level render service (which the kernel-checked differential tests
evaluate) on the bytes of the request. -/
theorem renderBytes_eq_service (req : ByteArray) :
    renderBytes req = toByteArray (renderService req.data.toList) := by
  unfold renderBytes renderService
  cases readRenderRequest req.data.toList <;> rfl

/-- The export is the list-level parse service on the bytes of the request. -/
theorem parseBytes_eq_service (req : ByteArray) :
    parseBytes req = toByteArray (parseService req.data.toList) := by
  unfold parseBytes parseService
  cases readParseRequest req.data.toList <;> rfl

/-! ## The codec round-trips -/

/-- Every id of the list fits in a `u32`. -/
abbrev Fits (ts : List Token) : Prop := ∀ t ∈ ts, t < 4294967296

/-- A byte's value is the number modulo 256. -/
theorem toNat_toUInt8_eq (n : Nat) : n.toUInt8.toNat = n % 256 := rfl

/-- A `u32` reads back as itself. -/
theorem readU32_u32le (n : Nat) (rest : Bytes) (h : n < 4294967296) :
    readU32 (u32le n ++ rest) = some (n, rest) := by
  have key : n.toUInt8.toNat + 256 * ((n / 256).toUInt8.toNat + 256 * ((n / 65536).toUInt8.toNat +
      256 * (n / 16777216).toUInt8.toNat)) = n := by
    simp only [toNat_toUInt8_eq]
    omega
  simp only [u32le, List.cons_append, List.nil_append, readU32, key]

/-- Reading the ids of an encoded list appends them to the accumulator. -/
theorem readIdsAux_enc (ts acc : List Token) (rest : Bytes) (h : Fits ts) :
    readIdsAux ts.length acc (ts.flatMap u32le ++ rest) = some (acc.reverse ++ ts, rest) := by
  induction ts generalizing acc with
  | nil => simp [readIdsAux]
  | cons t ts ih =>
    have ht : t < 4294967296 := h t (by simp)
    have hts : Fits ts := fun x hx => h x (by simp [hx])
    simp [readIdsAux, readU32_u32le t _ ht, ih (t :: acc) hts]

/-- A token list reads back as itself (every id and the length fit in a `u32`). -/
theorem readToks_encToks (ts : List Token) (rest : Bytes) (h : Fits ts)
    (hl : ts.length < 4294967296) :
    readToks (encToks ts ++ rest) = some (ts, rest) := by
  simp [encToks, readToks, readU32_u32le _ _ hl, readIdsAux_enc ts [] rest h]

end Ffi
end Verified

end
