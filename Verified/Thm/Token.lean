module

public import Verified.Spec.Token

public section

/-!
# Lemmas about tokens, reserved sets and lawful codecs

* `Codec.decodeBytes_append`: decoding is a monoid homomorphism (decoding a concatenation is
  the concatenation of the decodings).
* `Codec.Lawful.encode_injective`: a lawful codec never maps two different strings to the same
  tokens, because the decoded bytes determine the UTF-8 bytes and hence the string.
* `Codec.Lawful.not_reserved`: no token of an encoded text is reserved.
* `allFree_append`, `allFree_cons`, `allFree_iff`: how the `allFree` check decomposes.
-/

namespace Verified

/-- Decoding the tokens of a concatenation gives the concatenation of the decoded bytes:
token streams may be decoded piece by piece. -/
@[simp] theorem Codec.decodeBytes_append (c : Codec) (a b : List Token) :
    c.decodeBytes (a ++ b) = c.decodeBytes a ++ c.decodeBytes b := by
  simp [Codec.decodeBytes, List.flatMap_append]

@[simp] theorem Codec.decodeBytes_nil (c : Codec) : c.decodeBytes [] = [] := rfl

@[simp] theorem Codec.decodeBytes_cons (c : Codec) (t : Token) (ts : List Token) :
    c.decodeBytes (t :: ts) = c.bytes t ++ c.decodeBytes ts := by
  simp [Codec.decodeBytes]

/-- Two strings with the same UTF-8 byte list are equal. -/
theorem string_eq_of_utf8_toList {s t : String}
    (h : s.toUTF8.data.toList = t.toUTF8.data.toList) : s = t := by
  simp only [String.toUTF8_eq_toByteArray] at h
  have hd : s.toByteArray.data = t.toByteArray.data := Array.ext' h
  exact String.toByteArray_inj.mp (ByteArray.ext_iff.mpr hd)

/-- A lawful codec is injective on text: two different strings never encode to the same
tokens, so a token-level payload identifies its text uniquely. -/
theorem Codec.Lawful.encode_injective {c : Codec} {res : List Token} (h : c.Lawful res) :
    Function.Injective c.encode := by
  intro s t hst
  have h1 := h.decode_encode s
  have h2 := h.decode_encode t
  rw [hst, h2] at h1
  exact string_eq_of_utf8_toList h1.symm

/-- `allFree` holds exactly when no token of the list is reserved. -/
theorem allFree_iff {res ts : List Token} :
    allFree res ts = true ↔ ∀ t ∈ ts, isReserved res t = false := by
  simp [allFree]

/-- `allFree` of a concatenation is the conjunction of `allFree` of its parts. -/
@[simp] theorem allFree_append (res a b : List Token) :
    allFree res (a ++ b) = (allFree res a && allFree res b) := by
  simp [allFree, List.all_append]

/-- `allFree` of a cons: the head is not reserved and the tail is free. -/
@[simp] theorem allFree_cons (res : List Token) (t : Token) (ts : List Token) :
    allFree res (t :: ts) = (!isReserved res t && allFree res ts) := by
  simp [allFree, List.all_cons]

@[simp] theorem allFree_nil (res : List Token) : allFree res [] = true := rfl

/-- Text encoded by a lawful codec contains no reserved (control) token. -/
theorem Codec.Lawful.not_reserved {c : Codec} {res : List Token} (h : c.Lawful res)
    (s : String) : ∀ t ∈ c.encode s, isReserved res t = false :=
  allFree_iff.mp (h.encode_free s)

end Verified

end
