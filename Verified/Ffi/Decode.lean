module

public import Verified.Ffi.Encode

public section

/-!
# FFI wire format: the decoders

The readers of every value `Ffi/Encode.lean` writes, each returning the value and the bytes
after it (`none` on malformed input): requests as the exports read them (`readLayoutRequest`,
`readUnlayoutRequest`, with the `WireError` that says why one is refused) and layout answers
as the Python side reads them (`readLayoutAnswer`). Every reader is total and structurally
recursive (JSON, the only nested structure, is read with fuel = the request length); list
readers are tail recursive.
-/

namespace Verified
namespace Ffi

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

end Ffi
end Verified

end
