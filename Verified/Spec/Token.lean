module

public section

/-!
# Tokens, text, UTF-8 and lawful codecs

The token layer of the formal model (see `shared/DESIGN.md`, "The formal model").

* `Token` is a natural number; the FFI carries it as a little-endian `u32`.
* Text is a list of characters (`Chars`), in conversations as in renders: every operation on
  it is then structurally recursive, so the kernel can evaluate renders of concrete
  conversations (the differential tests do that; kernel evaluation of `String` literals is far
  too slow here). `utf8_eq_toUTF8` (`Thm/Token.lean`) ties `utf8` to `String.toUTF8`.
* `utf8` is the UTF-8 encoding (`String.utf8EncodeChar` per character, the same function
  core's `String.toUTF8` is built from) and `utf8Decode` a structural decoder with
  `utf8Decode (utf8 cs) = some cs` (`Thm/Token.lean`).
* A format names its control tokens in a *reserved* list. Text must never encode to a
  reserved token: that is the property the string-then-tokenize pipeline of Jinja chat
  templates lacks, and the hypothesis `Codec.Lawful` that every theorem about text relies on.
* A `Codec` is an abstract text encoder (`encode`) with a byte table (`bytes`). It is *lawful*
  for a reserved list when decoding after encoding gives the UTF-8 bytes back and no encoded
  token is reserved. At run time the Python side wraps a Hugging Face tokenizer as the codec
  and checks both laws, so the theorems apply to what actually runs.
-/

namespace Verified

/-- A token id. -/
abbrev Token := Nat

/-- Text as a list of characters. -/
abbrev Chars := List Char

/-- `isReserved reserved t` holds when `t` is one of the format's control tokens. -/
@[expose] def isReserved (reserved : List Token) (t : Token) : Bool :=
  reserved.elem t

/-- `allFree reserved ts` holds when no token of `ts` is reserved. -/
@[expose] def allFree (reserved : List Token) (ts : List Token) : Bool :=
  ts.all fun t => !isReserved reserved t

/-- The UTF-8 bytes of a text. -/
@[expose] def utf8 (cs : Chars) : List UInt8 :=
  cs.flatMap String.utf8EncodeChar

/-- Decode UTF-8 bytes to characters (`none` on a truncated sequence or a stray continuation
byte). The decoder does not reject every malformed sequence (overlong forms decode to some
character): the parser re-encodes every decoded span and compares, so only exact renders are
accepted whatever this function returns on malformed input. -/
@[expose] def utf8Decode : List UInt8 → Option Chars
  | [] => some []
  | b :: bs =>
      if b.toNat < 0x80 then (utf8Decode bs).map (Char.ofNat b.toNat :: ·)
      else if b.toNat < 0xC0 then none
      else if b.toNat < 0xE0 then
        match bs with
        | b1 :: bs' =>
            (utf8Decode bs').map (Char.ofNat ((b.toNat - 0xC0) * 64 + (b1.toNat - 0x80)) :: ·)
        | [] => none
      else if b.toNat < 0xF0 then
        match bs with
        | b1 :: b2 :: bs' =>
            (utf8Decode bs').map (Char.ofNat ((b.toNat - 0xE0) * 4096 + (b1.toNat - 0x80) * 64 +
              (b2.toNat - 0x80)) :: ·)
        | _ => none
      else
        match bs with
        | b1 :: b2 :: b3 :: bs' =>
            (utf8Decode bs').map (Char.ofNat ((b.toNat - 0xF0) * 262144 +
              (b1.toNat - 0x80) * 4096 + (b2.toNat - 0x80) * 64 + (b3.toNat - 0x80)) :: ·)
        | _ => none

/-- An abstract text encoder: `encode` turns text into tokens and `bytes` gives the bytes each
token stands for. -/
structure Codec where
  /-- Text to tokens (special-token parsing switched off). -/
  encode : Chars → List Token
  /-- The bytes a token decodes to. -/
  bytes : Token → List UInt8

/-- The bytes a token list decodes to: decoding is a monoid homomorphism by construction. -/
@[expose] def Codec.decodeBytes (c : Codec) (ts : List Token) : List UInt8 :=
  ts.flatMap c.bytes

/-- The two codec laws, relative to a reserved list: decoding after encoding gives back the
UTF-8 bytes of the text, and text never encodes to a reserved token. -/
structure Codec.Lawful (c : Codec) (reserved : List Token) : Prop where
  /-- Decoding the encoding of `cs` gives the UTF-8 bytes of `cs`. -/
  decode_encode : ∀ cs : Chars, c.decodeBytes (c.encode cs) = utf8 cs
  /-- No text encodes to a reserved token. -/
  encode_free : ∀ cs : Chars, allFree reserved (c.encode cs) = true

end Verified

end
