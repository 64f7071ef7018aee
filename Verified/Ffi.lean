module

public import Verified.Spec.Qwen
public import Verified.Spec.Llama

public section

/-!
# FFI entry points: bytes in, bytes out (wire version 4)

The shared library that the Python package loads exports two C functions, both
`ByteArray → ByteArray`:

* `lvt_layout_bytes`: a format (family and parameters) and a conversation with text payloads
  in, `(Format.lower c).map Format.layout` out: whether the format can express the conversation
  and, if so, the items of its render (control ids, text, verbatim tokens, owner, loss bit);
* `lvt_unlayout_bytes`: a format and a symbol stream in, `Format.unlayout s` out: the lowered
  conversation (owners 0) or "not a render".

The Lean side has no tokenizer: Python encodes the text spans of the items
(`core.encode_items`, `encodeItems` of `Spec/Span.lean`) and reads tokens back as symbols
(`core.decode_syms`, `decodeSyms`) around these calls, so that
`Format.render codec c = (layout answer).map (encodeItems codec)` and
`Format.parse codec ts = (decodeSyms codec reserved ts).bind unlayout` (`Thm/Ffi.lean`).
`layoutBytes_eq` and `unlayoutBytes_eq` state, by `rfl`, that each export is "decode the
request, run the spec function, encode the answer".

## Wire layout (version 4)

Integers are little-endian `u32`. A *bool* is one byte `0`/`1`. A *list* of `x` is a `u32`
count and that many `x`. *Tokens* are a list of `u32`. *Text* is a `u32` byte count and that
many bytes of UTF-8 (decoded with `utf8Decode`). An *option* of `x` is a byte `0`, or a byte
`1` and an `x`.

* **format**: a family byte, then
  - `0` Qwen: `u32` `imStart imEnd callOpen callClose`, option of two `u32` `toolResponse`,
    option of two `u32` `think`, tokens `extra`, mode byte (`0` v25, `1` exact, `2` stable),
    bool `enableThinking`, option of text `defaultSystem`, bool `promptThink`;
  - `1` Llama: `u32` `bos startHeader endHeader eot`, tokens `extra`, text `date`,
    bool `toolsInUser`.
* **json**: a tag byte: `0` null, `1` false, `2` true, `3` num (text), `4` str (text),
  `5` array (list of json), `6` object (list of text key and json value).
* **payload**: `0` text, or `1` tokens. **block**: `0` plain (payload), `1` reasoning
  (payload), `2` tool call (text name, text args), `3` sampled (tokens).
  **message**: a role byte (`0` system, `1` developer, `2` user, `3` assistant, `4` tool) and a
  list of blocks. **conversation**: bool `addGenerationPrompt`, option of a list of json
  `tools`, list of messages.
* **symbols**: a list of entries: `0` control (`u32`), `1` a run of characters (text),
  `2` verbatim token (`u32`); the stream is the entries' symbols in order.
* **layout request**: version byte `4`, format, conversation, nothing after.
  **unlayout request**: version byte `4`, format, symbols, nothing after.
* **layout answer**: status `0`, then `0` (the format cannot express the conversation) or `1`
  and a list of items; an item is a piece (`0` control `u32`, `1` text, `2` tokens), a `u32`
  owner and a bool learn.
* **unlayout answer**: status `0`, then an option of the lowered conversation: a list of turns
  and an option of a `u32` prompt owner. A lowered payload is `0` text or `1` tokens.
  Qwen turns: `0` plain (role byte `0` system / `1` user, payload, owner), `1` tools system
  (option of payload, list of text, owner), `2` assistant (option of payload think, payload
  content, bool sep, list of calls (text name, text args), owner), `3` tool group (list of
  payload and `u32` owner), `4` sampled (tokens, owner). Llama turns: `0` system (bool env, list
  of text, payload, owner), `1` user tools (list of text, payload, owner), `2` plain (role byte
  `0` system / `1` user / `2` assistant, payload, owner), `3` call (text, text, owner),
  `4` ipython (payload, owner), `5` sampled (tokens, owner).
* **error answer**: status `1` and one byte, the `WireError` code (`0` empty, `1` version,
  `2` family, `3` format, `4` conversation, `5` symbols, `6` trailing).

Every function here is total and structurally recursive (JSON, the only nested structure, is
read with fuel = the request length); list readers are tail recursive.
-/

namespace Verified
namespace Ffi

/-- Raw bytes, as a list (what the kernel can evaluate and the proofs talk about). -/
abbrev Bytes := List UInt8

/-- The wire-format version this file speaks. -/
@[expose] def wireVersion : UInt8 := 4

/-! ## Encoders -/

/-- A natural number as four little-endian bytes (taken modulo `2 ^ 32`). -/
@[expose] def u32le (n : Nat) : Bytes :=
  [n.toUInt8, (n / 256).toUInt8, (n / 65536).toUInt8, (n / 16777216).toUInt8]

/-- A Boolean as one byte. -/
@[expose] def encBool (b : Bool) : Bytes := [if b then 1 else 0]

/-- A list: its length, then its elements. -/
@[expose] def encList {α : Type} (enc : α → Bytes) (xs : List α) : Bytes :=
  u32le xs.length ++ xs.flatMap enc

/-- An option: `0`, or `1` and the value. -/
@[expose] def encOpt {α : Type} (enc : α → Bytes) : Option α → Bytes
  | none => [0]
  | some a => 1 :: enc a

/-- A token list. -/
@[expose] def encToks (ts : List Token) : Bytes := encList u32le ts

/-- Text: its UTF-8 byte count, then the bytes. -/
@[expose] def encText (cs : Chars) : Bytes := u32le (utf8 cs).length ++ utf8 cs

/-- A pair of ids. -/
@[expose] def encPair (p : Token × Token) : Bytes := u32le p.1 ++ u32le p.2

mutual
/-- A JSON value. -/
@[expose] def encJson : Json → Bytes
  | .null => [0]
  | .bool false => [1]
  | .bool true => [2]
  | .num s => 3 :: encText s
  | .str s => 4 :: encText s
  | .arr xs => 5 :: (u32le xs.length ++ encJsons xs)
  | .obj kvs => 6 :: (u32le kvs.length ++ encMembers kvs)

/-- The items of an array. -/
@[expose] def encJsons : List Json → Bytes
  | [] => []
  | x :: xs => encJson x ++ encJsons xs

/-- The members of an object. -/
@[expose] def encMembers : List (Chars × Json) → Bytes
  | [] => []
  | (k, v) :: kvs => encText k ++ encJson v ++ encMembers kvs
end

/-- The wire byte of a role. -/
@[expose] def roleByte : Role → UInt8
  | .system => 0
  | .developer => 1
  | .user => 2
  | .assistant => 3
  | .tool => 4

/-- A payload. -/
@[expose] def encPayload : Payload → Bytes
  | .text s => 0 :: encText s
  | .tokens ts => 1 :: encToks ts

/-- A block. -/
@[expose] def encBlock : Block → Bytes
  | .plain p => 0 :: encPayload p
  | .reasoning p => 1 :: encPayload p
  | .toolCall n a i => 2 :: (encText n ++ encText a ++ encOpt encText i)
  | .sampled ts => 3 :: encToks ts

/-- A message. -/
@[expose] def encMsg (m : Message) : Bytes := roleByte m.role :: encList encBlock m.blocks

/-- A conversation. -/
@[expose] def encConv (c : Conversation) : Bytes :=
  encBool c.addGenerationPrompt ++ encOpt (encList encJson) c.tools ++
    encList encMsg c.messages

/-- The wire byte of a Qwen mode. -/
@[expose] def modeByte : Qwen.Mode → UInt8
  | .v25 => 0
  | .exact => 1
  | .stable => 2

/-- A Qwen format instance. -/
@[expose] def encQwenFmt (f : Qwen.QwenFmt) : Bytes :=
  u32le f.ids.imStart ++ u32le f.ids.imEnd ++ u32le f.ids.callOpen ++ u32le f.ids.callClose ++
    encOpt encPair f.ids.toolResponse ++ encOpt encPair f.ids.think ++ encToks f.ids.extra ++
    modeByte f.mode :: (encBool f.enableThinking ++ encOpt encText f.defaultSystem ++
      encBool f.promptThink)

/-- A Llama format instance. -/
@[expose] def encLlamaFmt (f : Llama.LlamaFmt) : Bytes :=
  u32le f.ids.bos ++ u32le f.ids.startHeader ++ u32le f.ids.endHeader ++ u32le f.ids.eot ++
    encToks f.ids.extra ++ encText f.date ++ encBool f.toolsInUser

/-- The formats the library serves. -/
inductive Fam where
  | qwen (f : Qwen.QwenFmt)
  | llama (f : Llama.LlamaFmt)

/-- The `Format` of a family instance. -/
@[expose] def Fam.format : Fam → Format
  | .qwen f => Qwen.format f
  | .llama f => Llama.format f

/-- A format on the wire: the family byte and the parameters. -/
@[expose] def encFam : Fam → Bytes
  | .qwen f => 0 :: encQwenFmt f
  | .llama f => 1 :: encLlamaFmt f

/-- One symbol (a character as a one-character run). -/
@[expose] def encSym : Sym → Bytes
  | .ctrl t => 0 :: u32le t
  | .ch c => 1 :: encText [c]
  | .tok t => 2 :: u32le t

/-- A symbol stream, one entry per symbol (the decoder also accepts longer runs). -/
@[expose] def encSyms (s : List Sym) : Bytes := encList encSym s

/-- A layout request, as the Python side builds it. -/
@[expose] def encLayoutRequest (fam : Fam) (c : Conversation) : Bytes :=
  wireVersion :: (encFam fam ++ encConv c)

/-- An unlayout request, as the Python side builds it. -/
@[expose] def encUnlayoutRequest (fam : Fam) (s : List Sym) : Bytes :=
  wireVersion :: (encFam fam ++ encSyms s)

/-! ### Answers -/

/-- The content of an item. -/
@[expose] def encPiece : Piece → Bytes
  | .ctrl t => 0 :: u32le t
  | .text cs => 1 :: encText cs
  | .toks ts => 2 :: encToks ts

/-- An item: piece, owner, learn. -/
@[expose] def encItem (i : Item) : Bytes :=
  encPiece i.piece ++ u32le i.ann.owner ++ encBool i.ann.learn

/-- The answer to a layout request: `none` when the format cannot express the conversation. -/
@[expose] def encLayoutAnswer : Option (List Item) → Bytes
  | none => [0, 0]
  | some is => 0 :: 1 :: encList encItem is

/-- A lowered payload. -/
@[expose] def encLPay : LPay → Bytes
  | .text cs => 0 :: encText cs
  | .toks ts => 1 :: encToks ts

/-- A Qwen tool call. -/
@[expose] def encCall (k : Qwen.Call) : Bytes := encText k.name ++ encText k.args

/-- A Qwen tool result and its owner. -/
@[expose] def encResult (r : LPay × Nat) : Bytes := encLPay r.1 ++ u32le r.2

/-- A Qwen turn. -/
@[expose] def encQTurn : Qwen.QTurn → Bytes
  | .plain r p o => 0 :: (match r with | .system => 0 | .user => 1) :: (encLPay p ++ u32le o)
  | .toolsSystem sys tools o => 1 :: (encOpt encLPay sys ++ encList encText tools ++ u32le o)
  | .assistant th c sep ks o =>
      2 :: (encOpt encLPay th ++ encLPay c ++ encBool sep ++ encList encCall ks ++ u32le o)
  | .toolGroup rs => 3 :: encList encResult rs
  | .sampled ts o => 4 :: (encToks ts ++ u32le o)

/-- A lowered Qwen conversation. -/
@[expose] def encQConv (q : Qwen.QConv) : Bytes :=
  encList encQTurn q.turns ++ encOpt u32le q.prompt

/-- The wire byte of a Llama header role. -/
@[expose] def lroleByte : Llama.LRole → UInt8
  | .system => 0
  | .user => 1
  | .assistant => 2

/-- A Llama turn. -/
@[expose] def encLTurn : Llama.LTurn → Bytes
  | .system env tools sys o => 0 :: (encBool env ++ encList encText tools ++ encLPay sys ++ u32le o)
  | .userTools tools u o => 1 :: (encList encText tools ++ encLPay u ++ u32le o)
  | .plain r p o => 2 :: lroleByte r :: (encLPay p ++ u32le o)
  | .call n a o => 3 :: (encText n ++ encText a ++ u32le o)
  | .ipython p o => 4 :: (encLPay p ++ u32le o)
  | .sampled ts o => 5 :: (encToks ts ++ u32le o)

/-- A lowered Llama conversation. -/
@[expose] def encLConv (q : Llama.LConv) : Bytes :=
  encList encLTurn q.turns ++ encOpt u32le q.prompt

/-- Why a request could not be decoded. -/
inductive WireError where
  | empty
  | version
  | family
  | format
  | conversation
  | symbols
  | trailing
  deriving DecidableEq, Repr

/-- The wire code of an error. -/
@[expose] def WireError.code : WireError → UInt8
  | .empty => 0
  | .version => 1
  | .family => 2
  | .format => 3
  | .conversation => 4
  | .symbols => 5
  | .trailing => 6

/-- The answer to a request that could not be decoded: status `1` and the code. -/
@[expose] def encError (e : WireError) : Bytes := [1, e.code]

/-! ## Decoders -/

/-- Read one little-endian `u32`. -/
@[expose] def readU32 : Bytes → Option (Nat × Bytes)
  | b0 :: b1 :: b2 :: b3 :: rest =>
      some (b0.toNat + 256 * (b1.toNat + 256 * (b2.toNat + 256 * b3.toNat)), rest)
  | _ => none

/-- Read a Boolean byte. -/
@[expose] def readBool : Bytes → Option (Bool × Bytes)
  | b :: bs => if b.toNat = 0 then some (false, bs) else if b.toNat = 1 then some (true, bs)
      else none
  | [] => none

/-- Read `n` values after the ones already read (kept reversed in `acc`); tail recursive. -/
@[expose] def readManyAux {α : Type} (rd : Bytes → Option (α × Bytes)) :
    Nat → List α → Bytes → Option (List α × Bytes)
  | 0, acc, bs => some (acc.reverse, bs)
  | n + 1, acc, bs =>
      match rd bs with
      | none => none
      | some (a, rest) => readManyAux rd n (a :: acc) rest

/-- Read a list: a count, then the values. -/
@[expose] def readList {α : Type} (rd : Bytes → Option (α × Bytes)) (bs : Bytes) :
    Option (List α × Bytes) :=
  match readU32 bs with
  | none => none
  | some (n, rest) => readManyAux rd n [] rest

/-- Read an option. -/
@[expose] def readOpt {α : Type} (rd : Bytes → Option (α × Bytes)) :
    Bytes → Option (Option α × Bytes)
  | b :: bs =>
      if b.toNat = 0 then some (none, bs)
      else if b.toNat = 1 then
        match rd bs with
        | none => none
        | some (a, rest) => some (some a, rest)
      else none
  | [] => none

/-- Read a token list. -/
@[expose] def readToks (bs : Bytes) : Option (List Token × Bytes) := readList readU32 bs

/-- Read text: a byte count, then UTF-8. -/
@[expose] def readText (bs : Bytes) : Option (Chars × Bytes) :=
  match readU32 bs with
  | none => none
  | some (n, rest) =>
      if n ≤ rest.length then
        match utf8Decode (rest.take n) with
        | none => none
        | some cs => some (cs, rest.drop n)
      else none

/-- Read a pair of ids. -/
@[expose] def readPair (bs : Bytes) : Option ((Token × Token) × Bytes) :=
  match readU32 bs with
  | none => none
  | some (a, bs₁) =>
      match readU32 bs₁ with
      | none => none
      | some (b, rest) => some ((a, b), rest)

/-- Read one object member (a text key, then a value read with `rdv`). -/
@[expose] def readMemberWith (rdv : Bytes → Option (Json × Bytes)) (bs : Bytes) :
    Option ((Chars × Json) × Bytes) :=
  match readText bs with
  | none => none
  | some (k, bs₁) =>
      match rdv bs₁ with
      | none => none
      | some (v, rest) => some ((k, v), rest)

/-- Read a JSON value with at most `fuel` nested reads (the request length suffices: every
value takes at least one byte). -/
@[expose] def readJson : Nat → Bytes → Option (Json × Bytes)
  | 0, _ => none
  | _ + 1, [] => none
  | fuel + 1, b :: bs =>
      match b.toNat with
      | 0 => some (.null, bs)
      | 1 => some (.bool false, bs)
      | 2 => some (.bool true, bs)
      | 3 => match readText bs with
        | none => none
        | some (s, rest) => some (.num s, rest)
      | 4 => match readText bs with
        | none => none
        | some (s, rest) => some (.str s, rest)
      | 5 => match readList (readJson fuel) bs with
        | none => none
        | some (xs, rest) => some (.arr xs, rest)
      | 6 => match readList (readMemberWith (readJson fuel)) bs with
        | none => none
        | some (kvs, rest) => some (.obj kvs, rest)
      | _ => none

/-- The role of a wire byte. -/
@[expose] def roleOfByte (b : UInt8) : Option Role :=
  match b.toNat with
  | 0 => some .system
  | 1 => some .developer
  | 2 => some .user
  | 3 => some .assistant
  | 4 => some .tool
  | _ => none

/-- Read a payload. -/
@[expose] def readPayload : Bytes → Option (Payload × Bytes)
  | b :: bs =>
      match b.toNat with
      | 0 => match readText bs with
        | none => none
        | some (s, rest) => some (.text s, rest)
      | 1 => match readToks bs with
        | none => none
        | some (ts, rest) => some (.tokens ts, rest)
      | _ => none
  | [] => none

/-- Read a block. -/
@[expose] def readBlock : Bytes → Option (Block × Bytes)
  | b :: bs =>
      match b.toNat with
      | 0 => match readPayload bs with
        | none => none
        | some (p, rest) => some (.plain p, rest)
      | 1 => match readPayload bs with
        | none => none
        | some (p, rest) => some (.reasoning p, rest)
      | 2 => match readText bs with
        | none => none
        | some (n, bs₁) =>
            match readText bs₁ with
            | none => none
            | some (a, bs₂) =>
                match readOpt readText bs₂ with
                | none => none
                | some (i, rest) => some (.toolCall n a i, rest)
      | 3 => match readToks bs with
        | none => none
        | some (ts, rest) => some (.sampled ts, rest)
      | _ => none
  | [] => none

/-- Read a message. -/
@[expose] def readMsg : Bytes → Option (Message × Bytes)
  | r :: bs =>
      match roleOfByte r with
      | none => none
      | some role =>
          match readList readBlock bs with
          | none => none
          | some (blocks, rest) => some (⟨role, blocks⟩, rest)
  | [] => none

/-- Read a conversation (`fuel` bounds the nesting of its JSON tools). -/
@[expose] def readConv (fuel : Nat) (bs : Bytes) : Option (Conversation × Bytes) :=
  match readBool bs with
  | none => none
  | some (g, bs₁) =>
      match readOpt (readList (readJson fuel)) bs₁ with
      | none => none
      | some (tools, bs₂) =>
          match readList readMsg bs₂ with
          | none => none
          | some (ms, rest) => some (⟨ms, tools, g⟩, rest)

/-- The Qwen mode of a wire byte. -/
@[expose] def modeOfByte (b : UInt8) : Option Qwen.Mode :=
  match b.toNat with
  | 0 => some .v25
  | 1 => some .exact
  | 2 => some .stable
  | _ => none

/-- Read a Qwen format instance. -/
@[expose] def readQwenFmt (bs : Bytes) : Option (Qwen.QwenFmt × Bytes) :=
  match readU32 bs with
  | none => none
  | some (s, bs₁) =>
  match readU32 bs₁ with
  | none => none
  | some (e, bs₂) =>
  match readU32 bs₂ with
  | none => none
  | some (co, bs₃) =>
  match readU32 bs₃ with
  | none => none
  | some (cc, bs₄) =>
  match readOpt readPair bs₄ with
  | none => none
  | some (tr, bs₅) =>
  match readOpt readPair bs₅ with
  | none => none
  | some (th, bs₆) =>
  match readToks bs₆ with
  | none => none
  | some (ex, bs₇) =>
  match bs₇ with
  | [] => none
  | m :: bs₈ =>
  match modeOfByte m with
  | none => none
  | some mode =>
  match readBool bs₈ with
  | none => none
  | some (et, bs₉) =>
  match readOpt readText bs₉ with
  | none => none
  | some (ds, bs₁₀) =>
  match readBool bs₁₀ with
  | none => none
  | some (pt, rest) => some (⟨⟨s, e, co, cc, tr, th, ex⟩, mode, et, ds, pt⟩, rest)

/-- Read a Llama format instance. -/
@[expose] def readLlamaFmt (bs : Bytes) : Option (Llama.LlamaFmt × Bytes) :=
  match readU32 bs with
  | none => none
  | some (b, bs₁) =>
  match readU32 bs₁ with
  | none => none
  | some (sh, bs₂) =>
  match readU32 bs₂ with
  | none => none
  | some (eh, bs₃) =>
  match readU32 bs₃ with
  | none => none
  | some (eot, bs₄) =>
  match readToks bs₄ with
  | none => none
  | some (ex, bs₅) =>
  match readText bs₅ with
  | none => none
  | some (date, bs₆) =>
  match readBool bs₆ with
  | none => none
  | some (tu, rest) => some (⟨⟨b, sh, eh, eot, ex⟩, date, tu⟩, rest)

/-- Read one symbol entry: a control token, a run of characters, or a verbatim token. -/
@[expose] def readSymEntry : Bytes → Option (List Sym × Bytes)
  | k :: bs =>
      match k.toNat with
      | 0 => match readU32 bs with
        | none => none
        | some (t, rest) => some ([.ctrl t], rest)
      | 1 => match readText bs with
        | none => none
        | some (cs, rest) => some (lit cs, rest)
      | 2 => match readU32 bs with
        | none => none
        | some (t, rest) => some ([.tok t], rest)
      | _ => none
  | [] => none

/-- Read a symbol stream. -/
@[expose] def readSyms (bs : Bytes) : Option (List Sym × Bytes) :=
  match readList readSymEntry bs with
  | none => none
  | some (xs, rest) => some (xs.flatten, rest)

/-- Read the version byte and the format of a request. -/
@[expose] def readHead : Bytes → Except WireError (Fam × Bytes)
  | [] => .error .empty
  | v :: bs =>
      if v != wireVersion then .error .version else
      match bs with
      | [] => .error .family
      | k :: bs₁ =>
          match k.toNat with
          | 0 => match readQwenFmt bs₁ with
            | none => .error .format
            | some (f, rest) => .ok (.qwen f, rest)
          | 1 => match readLlamaFmt bs₁ with
            | none => .error .format
            | some (f, rest) => .ok (.llama f, rest)
          | _ => .error .family

/-- Decode a layout request. -/
@[expose] def readLayoutRequest (req : Bytes) : Except WireError (Fam × Conversation) :=
  match readHead req with
  | .error e => .error e
  | .ok (fam, bs) =>
      match readConv req.length bs with
      | none => .error .conversation
      | some (c, []) => .ok (fam, c)
      | some (_, _ :: _) => .error .trailing

/-- Decode an unlayout request. -/
@[expose] def readUnlayoutRequest (req : Bytes) : Except WireError (Fam × List Sym) :=
  match readHead req with
  | .error e => .error e
  | .ok (fam, bs) =>
      match readSyms bs with
      | none => .error .symbols
      | some (s, []) => .ok (fam, s)
      | some (_, _ :: _) => .error .trailing

/-! ### Reading a layout answer (what the Python side does) -/

/-- Read the content of an item. -/
@[expose] def readPiece : Bytes → Option (Piece × Bytes)
  | k :: bs =>
      match k.toNat with
      | 0 => match readU32 bs with
        | none => none
        | some (t, rest) => some (.ctrl t, rest)
      | 1 => match readText bs with
        | none => none
        | some (cs, rest) => some (.text cs, rest)
      | 2 => match readToks bs with
        | none => none
        | some (ts, rest) => some (.toks ts, rest)
      | _ => none
  | [] => none

/-- Read an item. -/
@[expose] def readItem (bs : Bytes) : Option (Item × Bytes) :=
  match readPiece bs with
  | none => none
  | some (p, bs₁) =>
      match readU32 bs₁ with
      | none => none
      | some (o, bs₂) =>
          match readBool bs₂ with
          | none => none
          | some (l, rest) => some (⟨p, ⟨o, l⟩⟩, rest)

/-- Read a layout answer (status `0`). -/
@[expose] def readLayoutAnswer : Bytes → Option (Option (List Item))
  | s :: k :: bs =>
      if s.toNat ≠ 0 then none
      else if k.toNat = 0 then
        match bs with
        | [] => some none
        | _ :: _ => none
      else if k.toNat = 1 then
        match readList readItem bs with
        | some (is, []) => some (some is)
        | _ => none
      else none
  | _ => none

/-! ## The two services, on byte lists -/

/-- The spec function behind `lvt_layout_bytes`: lower, then lay out. -/
@[expose] def layoutOf (fam : Fam) (c : Conversation) : Option (List Item) :=
  (fam.format.lower c).map fam.format.layout

/-- The answer to an unlayout request for a family. -/
@[expose] def unlayoutAnswer : Fam → List Sym → Bytes
  | .qwen f, s => 0 :: encOpt encQConv (Qwen.unlayout f s)
  | .llama f, s => 0 :: encOpt encLConv (Llama.unlayout f s)

/-- Layout service: decode, lower and lay out, encode the items. -/
@[expose] def layoutService (req : Bytes) : Bytes :=
  match readLayoutRequest req with
  | .ok (fam, c) => encLayoutAnswer (layoutOf fam c)
  | .error e => encError e

/-- Unlayout service: decode, read the symbols back, encode the lowered conversation. -/
@[expose] def unlayoutService (req : Bytes) : Bytes :=
  match readUnlayoutRequest req with
  | .ok (fam, s) => unlayoutAnswer fam s
  | .error e => encError e

/-! ## The exports -/

/-- Bytes of a list, as a `ByteArray`. -/
@[expose] def toByteArray (bs : Bytes) : ByteArray := ⟨bs.toArray⟩

/-- C symbol `lvt_layout_bytes`: decode the request, run the proven `Format.lower` and
`Format.layout`, encode the items. -/
@[expose, export lvt_layout_bytes]
def layoutBytes (req : ByteArray) : ByteArray :=
  match readLayoutRequest req.data.toList with
  | .ok (fam, c) => toByteArray (encLayoutAnswer (layoutOf fam c))
  | .error e => toByteArray (encError e)

/-- C symbol `lvt_unlayout_bytes`: decode the request, run the proven `Format.unlayout`, encode
the lowered conversation. -/
@[expose, export lvt_unlayout_bytes]
def unlayoutBytes (req : ByteArray) : ByteArray :=
  match readUnlayoutRequest req.data.toList with
  | .ok (fam, s) => toByteArray (unlayoutAnswer fam s)
  | .error e => toByteArray (encError e)

end Ffi
end Verified

end
