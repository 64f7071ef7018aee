module

public section

/-!
# Tokens, reserved sets and lawful codecs

The token layer of the formal model (see `shared/DESIGN.md`, "The formal model").

* `Token` is a natural number; the FFI carries it as a little-endian `u32`.
* A chat format names its control tokens in a *reserved* list. Text must never render to a
  reserved token: that is the property the string-then-tokenize pipeline of Jinja chat
  templates lacks, and the hypothesis `Codec.Lawful` that every theorem about text relies on.
* A `Codec` is an abstract text encoder (`encode`) together with a byte table (`bytes`).
  It is *lawful* for a reserved list when decoding after encoding is the identity on UTF-8
  bytes and no encoded token is reserved. At run time the Python side wraps a Hugging Face
  tokenizer as the codec and checks both laws on every call, so the theorems apply to what
  actually runs.
-/

namespace Verified

/-- A token id. -/
abbrev Token := Nat

/-- `isReserved reserved t` holds when `t` is one of the format's control tokens. -/
@[expose] def isReserved (reserved : List Token) (t : Token) : Bool :=
  reserved.elem t

/-- `allFree reserved ts` holds when no token of `ts` is reserved. -/
@[expose] def allFree (reserved : List Token) (ts : List Token) : Bool :=
  ts.all fun t => !isReserved reserved t

/-- An abstract text encoder: `encode` turns text into tokens and `bytes` gives the UTF-8
bytes each token stands for. -/
structure Codec where
  /-- Text to tokens (special-token parsing switched off). -/
  encode : String → List Token
  /-- The bytes a token decodes to. -/
  bytes : Token → List UInt8

/-- The bytes a token list decodes to: decoding is a monoid homomorphism by construction. -/
@[expose] def Codec.decodeBytes (c : Codec) (ts : List Token) : List UInt8 :=
  ts.flatMap c.bytes

/-- The two codec laws, relative to a reserved list:
decoding after encoding gives back the UTF-8 bytes of the text, and text never encodes to a
reserved token. -/
structure Codec.Lawful (c : Codec) (reserved : List Token) : Prop where
  /-- Decoding the encoding of `s` gives the UTF-8 bytes of `s`. -/
  decode_encode : ∀ s : String, c.decodeBytes (c.encode s) = s.toUTF8.data.toList
  /-- No text encodes to a reserved token. -/
  encode_free : ∀ s : String, allFree reserved (c.encode s) = true

end Verified

end
