module

public import Verified.Spec.Token

public section

/-!
# Lemmas about tokens, UTF-8 and lawful codecs

* `utf8Decode_utf8`: the structural UTF-8 decoder inverts the encoding.
* `Codec.decodeBytes_append`: decoding is a monoid homomorphism.
* `Codec.Lawful.encode_ne_nil`: a lawful codec encodes non-empty text to a non-empty list.
* `Codec.Lawful.encode_injective`: a lawful codec never maps two texts to the same tokens.
* `Codec.Lawful.not_reserved`: no token of an encoded text is reserved.
* `allFree_*`: how the `allFree` check decomposes.
* `utf8_eq_toUTF8`: `utf8` is core's `String.toUTF8`, so the codec law is the usual one.
-/

namespace Verified

/-- Every character is below U+110000. -/
theorem Char.toNat_lt_max (c : Char) : c.toNat < 0x110000 := by
  have h := c.valid
  simp only [UInt32.isValidChar, Nat.isValidChar] at h
  simp only [Char.toNat]
  omega

/-- Decoding one encoded character. -/
theorem utf8Decode_encodeChar (c : Char) (rest : List UInt8) :
    utf8Decode (String.utf8EncodeChar c ++ rest) = (utf8Decode rest).map (c :: ·) := by
  have hv := Char.toNat_lt_max c
  have hc : Char.ofNat c.toNat = c := Char.ofNat_toNat c
  simp only [Char.toNat] at hv hc
  simp only [String.utf8EncodeChar]
  generalize c.val.toNat = v at hv hc
  subst hc
  by_cases h1 : v ≤ 127
  · simp only [h1, if_true, List.cons_append, List.nil_append]
    rw [utf8Decode.eq_def]
    simp only [UInt8.toNat_ofNat']
    have e : v % 2 ^ 8 = v := by omega
    simp only [e, show v < 0x80 by omega, if_true]
  · by_cases h2 : v ≤ 2047
    · simp only [h1, h2, if_true, if_false, List.cons_append, List.nil_append, utf8Decode.eq_2,
        UInt8.toNat_ofNat']
      have e0 : (v / 64 % 32 + 192) % 2 ^ 8 = v / 64 % 32 + 192 := by omega
      have e1 : (v % 64 + 128) % 2 ^ 8 = v % 64 + 128 := by omega
      have e2 : (v / 64 % 32 + 192 - 0xC0) * 64 + (v % 64 + 128 - 0x80) = v := by omega
      simp only [e0, e1, e2, show ¬ (v / 64 % 32 + 192 < 0x80) by omega,
        show ¬ (v / 64 % 32 + 192 < 0xC0) by omega, show v / 64 % 32 + 192 < 0xE0 by omega,
        if_true, if_false]
    · by_cases h3 : v ≤ 65535
      · simp only [h1, h2, h3, if_true, if_false, List.cons_append, List.nil_append,
          utf8Decode.eq_2, UInt8.toNat_ofNat']
        have e0 : (v / 4096 % 16 + 224) % 2 ^ 8 = v / 4096 % 16 + 224 := by omega
        have e1 : (v / 64 % 64 + 128) % 2 ^ 8 = v / 64 % 64 + 128 := by omega
        have e2 : (v % 64 + 128) % 2 ^ 8 = v % 64 + 128 := by omega
        have e3 : (v / 4096 % 16 + 224 - 0xE0) * 4096 + (v / 64 % 64 + 128 - 0x80) * 64 +
            (v % 64 + 128 - 0x80) = v := by omega
        simp only [e0, e1, e2, e3, show ¬ (v / 4096 % 16 + 224 < 0x80) by omega,
          show ¬ (v / 4096 % 16 + 224 < 0xC0) by omega,
          show ¬ (v / 4096 % 16 + 224 < 0xE0) by omega,
          show v / 4096 % 16 + 224 < 0xF0 by omega, if_true, if_false]
      · simp only [h1, h2, h3, if_false, List.cons_append, List.nil_append,
          utf8Decode.eq_2, UInt8.toNat_ofNat']
        have e0 : (v / 262144 % 8 + 240) % 2 ^ 8 = v / 262144 % 8 + 240 := by omega
        have e1 : (v / 4096 % 64 + 128) % 2 ^ 8 = v / 4096 % 64 + 128 := by omega
        have e2 : (v / 64 % 64 + 128) % 2 ^ 8 = v / 64 % 64 + 128 := by omega
        have e3 : (v % 64 + 128) % 2 ^ 8 = v % 64 + 128 := by omega
        have e4 : (v / 262144 % 8 + 240 - 0xF0) * 262144 + (v / 4096 % 64 + 128 - 0x80) * 4096 +
            (v / 64 % 64 + 128 - 0x80) * 64 + (v % 64 + 128 - 0x80) = v := by omega
        simp only [e0, e1, e2, e3, e4, show ¬ (v / 262144 % 8 + 240 < 0x80) by omega,
          show ¬ (v / 262144 % 8 + 240 < 0xC0) by omega,
          show ¬ (v / 262144 % 8 + 240 < 0xE0) by omega,
          show ¬ (v / 262144 % 8 + 240 < 0xF0) by omega, if_false]

/-- The decoder inverts the encoding. -/
theorem utf8Decode_utf8 (cs : Chars) : utf8Decode (utf8 cs) = some cs := by
  induction cs with
  | nil => rfl
  | cons c cs ih =>
    simp only [utf8, List.flatMap_cons] at ih ⊢
    rw [utf8Decode_encodeChar, ih]
    rfl


@[simp] theorem utf8_nil : utf8 [] = [] := rfl

@[simp] theorem utf8_append (a b : Chars) : utf8 (a ++ b) = utf8 a ++ utf8 b := by
  simp [utf8, List.flatMap_append]

theorem utf8_cons (c : Char) (cs : Chars) :
    utf8 (c :: cs) = String.utf8EncodeChar c ++ utf8 cs := by
  simp [utf8, List.flatMap_cons]

/-- `utf8` is the encoding core's `String.toUTF8` uses. -/
theorem utf8_eq_toUTF8 (s : String) : utf8 s.toList = s.toUTF8.data.toList := by
  rw [String.toUTF8_eq_toByteArray, ← String.utf8Encode_toList]
  simp [utf8, List.utf8Encode]

theorem utf8_ne_nil {cs : Chars} (h : cs ≠ []) : utf8 cs ≠ [] := by
  cases cs with
  | nil => exact absurd rfl h
  | cons c cs =>
    rw [utf8_cons]
    intro e
    have := String.utf8EncodeChar_ne_nil (c := c)
    simp_all

/-- Two texts with the same UTF-8 bytes are equal. -/
theorem utf8_injective {a b : Chars} (h : utf8 a = utf8 b) : a = b := by
  have ha := utf8Decode_utf8 a
  rw [h, utf8Decode_utf8] at ha
  exact (Option.some.inj ha).symm

@[simp] theorem Codec.decodeBytes_append (c : Codec) (a b : List Token) :
    c.decodeBytes (a ++ b) = c.decodeBytes a ++ c.decodeBytes b := by
  simp [Codec.decodeBytes, List.flatMap_append]

@[simp] theorem Codec.decodeBytes_nil (c : Codec) : c.decodeBytes [] = [] := rfl

@[simp] theorem Codec.decodeBytes_cons (c : Codec) (t : Token) (ts : List Token) :
    c.decodeBytes (t :: ts) = c.bytes t ++ c.decodeBytes ts := by
  simp [Codec.decodeBytes]

/-- A lawful codec never maps two different texts to the same tokens. -/
theorem Codec.Lawful.encode_injective {c : Codec} {res : List Token} (h : c.Lawful res) :
    Function.Injective c.encode := by
  intro a b hab
  have h1 := h.decode_encode a
  rw [hab, h.decode_encode b] at h1
  exact utf8_injective h1.symm

/-- A lawful codec encodes non-empty text to a non-empty token list. -/
theorem Codec.Lawful.encode_ne_nil {c : Codec} {res : List Token} (h : c.Lawful res)
    {cs : Chars} (hcs : cs ≠ []) : c.encode cs ≠ [] := by
  intro e
  have := h.decode_encode cs
  rw [e, Codec.decodeBytes_nil] at this
  exact utf8_ne_nil hcs this.symm

/-- `allFree` holds exactly when no token of the list is reserved. -/
theorem allFree_iff {res ts : List Token} :
    allFree res ts = true ↔ ∀ t ∈ ts, isReserved res t = false := by
  simp [allFree]

@[simp] theorem allFree_append (res a b : List Token) :
    allFree res (a ++ b) = (allFree res a && allFree res b) := by
  simp [allFree, List.all_append]

@[simp] theorem allFree_nil (res : List Token) : allFree res [] = true := rfl

/-- Text encoded by a lawful codec contains no reserved (control) token. -/
theorem Codec.Lawful.not_reserved {c : Codec} {res : List Token} (h : c.Lawful res)
    (cs : Chars) : ∀ t ∈ c.encode cs, isReserved res t = false :=
  allFree_iff.mp (h.encode_free cs)

end Verified

end
