module

public import Verified.Thm.Sym

public section

/-!
# Laws of the splitting helpers

What the Qwen and Llama parsers split text and symbol streams with: `splitChar`, `splitSeq`
(at a separator, with `joinWith` their inverse), and `parsePieces` (one reader applied to the
pieces `piecesOf` writes), each with its completeness and soundness law.
-/

namespace Verified

/-! ## Splitting at a character or a separator -/

theorem joinWith_splitChar (c : Char) (l : Chars) : joinWith [c] (splitChar c l) = l := by
  induction l with
  | nil => rfl
  | cons x l ih =>
    simp only [splitChar]
    split
    · rename_i hx
      rw [joinWith_cons_of_ne_nil _ _ _ (splitChar_ne_nil c l), ih, hx]
      rfl
    · split
      · rename_i g gs hr
        rw [hr] at ih
        rw [joinWith_cons_cons, ih]
      · rename_i hr
        exact absurd hr (splitChar_ne_nil c l)


/-- Text without the character is one piece. -/
theorem splitChar_of_not_mem (c : Char) (p : Chars) (h : c ∉ p) : splitChar c p = [p] := by
  induction p with
  | nil => rfl
  | cons x p ih =>
    have hx : x ≠ c := fun e => h (by simp [e])
    have ih' := ih (fun hm => h (List.mem_cons_of_mem _ hm))
    simp only [splitChar, hx, ih', ↓reduceIte]

/-- A piece without the character, then the character: the piece comes off. -/
theorem splitChar_append_cons (c : Char) (p rest : Chars) (h : c ∉ p) :
    splitChar c (p ++ c :: rest) = p :: splitChar c rest := by
  induction p with
  | nil => simp [splitChar]
  | cons x p ih =>
    have hx : x ≠ c := fun e => h (by simp [e])
    have ih' := ih (fun hm => h (List.mem_cons_of_mem _ hm))
    simp only [List.cons_append, splitChar, hx, ih', ↓reduceIte]

theorem splitChar_joinWith (c : Char) (ps : List Chars) (hne : ps ≠ [])
    (h : ∀ p ∈ ps, c ∉ p) : splitChar c (joinWith [c] ps) = ps := by
  induction ps with
  | nil => exact absurd rfl hne
  | cons p ps ih =>
    have hp : c ∉ p := h p List.mem_cons_self
    cases ps with
    | nil => exact splitChar_of_not_mem c p hp
    | cons q qs =>
      rw [joinWith_cons_of_ne_nil _ _ _ (List.cons_ne_nil _ _), List.append_assoc,
        List.singleton_append, splitChar_append_cons c p _ hp,
        ih (List.cons_ne_nil _ _) (fun r hr => h r (List.mem_cons_of_mem _ hr))]


/-- `splitSeqAux` always returns at least one piece. -/
theorem splitSeqAux_ne_nil {α : Type} [DecidableEq α] (sep : List α) (n : Nat) (l : List α) :
    splitSeqAux sep n l ≠ [] := by
  cases n with
  | zero => simp [splitSeqAux]
  | succ n =>
    simp only [splitSeqAux]
    split <;> simp

/-- `splitSeqAux` loses nothing, whatever the fuel. -/
theorem joinWith_splitSeqAux {α : Type} [DecidableEq α] (sep : List α) (n : Nat) (l : List α) :
    joinWith sep (splitSeqAux sep n l) = l := by
  induction n generalizing l with
  | zero => rfl
  | succ n ih =>
    simp only [splitSeqAux]
    split
    · rename_i r hr
      obtain ⟨a, b⟩ := r
      rw [joinWith_cons_of_ne_nil _ _ _ (splitSeqAux_ne_nil sep n _), ih]
      exact (splitFirst_eq_some hr).symm
    · rfl

/-- Any fuel at least the length of the list gives the same split. -/
theorem splitSeqAux_fuel {α : Type} [DecidableEq α] {sep : List α} (hs : sep ≠ []) :
    ∀ (n m : Nat) (l : List α), l.length ≤ n → l.length ≤ m →
      splitSeqAux sep n l = splitSeqAux sep m l := by
  have hsep : 0 < sep.length := List.length_pos_iff.mpr hs
  intro n
  induction n with
  | zero =>
    intro m l hn _
    have hl : l = [] := List.eq_nil_of_length_eq_zero (Nat.le_zero.mp hn)
    subst hl
    cases m with
    | zero => rfl
    | succ m => simp [splitSeqAux, splitFirst, hs]
  | succ n ih =>
    intro m l hn hm
    cases m with
    | zero =>
      have hl : l = [] := List.eq_nil_of_length_eq_zero (Nat.le_zero.mp hm)
      subst hl
      simp [splitSeqAux, splitFirst, hs]
    | succ m =>
      cases hr : splitFirst sep l with
      | none => simp only [splitSeqAux, hr]
      | some r =>
        obtain ⟨a, b⟩ := r
        have e := congrArg List.length (splitFirst_eq_some hr)
        simp only [List.length_append] at e
        simp only [splitSeqAux, hr, ih m b (by omega) (by omega)]

/-- `splitSeq` unfolds at a first occurrence of the separator. -/
theorem splitSeq_of_splitFirst {α : Type} [DecidableEq α] {sep l a b : List α} (hs : sep ≠ [])
    (h : splitFirst sep l = some (a, b)) : splitSeq sep l = a :: splitSeq sep b := by
  have hsep : 0 < sep.length := List.length_pos_iff.mpr hs
  have e := congrArg List.length (splitFirst_eq_some h)
  simp only [List.length_append] at e
  unfold splitSeq
  obtain ⟨k, hk⟩ : ∃ k, l.length = k + 1 := ⟨l.length - 1, by omega⟩
  rw [hk]
  simp only [splitSeqAux, h]
  rw [splitSeqAux_fuel hs k b.length b (by omega) (Nat.le_refl _)]

theorem joinWith_splitSeq {α : Type} [DecidableEq α] (sep l : List α) (hs : sep ≠ []) :
    joinWith sep (splitSeq sep l) = l := by
  have _ := hs
  exact joinWith_splitSeqAux sep l.length l

theorem splitSeq_ne_nil {α : Type} [DecidableEq α] (sep l : List α) : splitSeq sep l ≠ [] := by
  exact splitSeqAux_ne_nil sep l.length l

/-- One piece clear of the separator, then the separator: the piece comes off whole. -/
theorem splitSeq_append_of_clearOf {α : Type} [DecidableEq α] {sep a : List α} (b : List α)
    (hs : sep ≠ []) (h : clearOf sep a = true) :
    splitSeq sep (a ++ sep ++ b) = a :: splitSeq sep b := by
  exact splitSeq_of_splitFirst hs (splitFirst_of_clearOf b h)


/-- `parsePieces` on a list of at least two pieces. -/
theorem parsePieces_cons_of_ne_nil {α : Type} (one : List Sym → Option (α × List Sym))
    (between final p : List Sym) (ps : List (List Sym)) (h : ps ≠ []) :
    parsePieces one between final (p :: ps) = (one p).bind fun r =>
      if r.2 = between then (parsePieces one between final ps).map (r.1 :: ·) else none := by
  cases ps with
  | nil => exact absurd rfl h
  | cons q qs => rfl

/-- `piecesOf` of a non-empty list is non-empty. -/
theorem piecesOf_ne_nil {α : Type} (g : α → List Sym) (between final : List Sym) (as : List α)
    (h : as ≠ []) : piecesOf g between final as ≠ [] := by
  cases as with
  | nil => exact absurd rfl h
  | cons a as =>
    cases as with
    | nil => exact List.cons_ne_nil _ _
    | cons b bs => exact List.cons_ne_nil _ _

/-- `piecesOf` on a list of at least two values. -/
theorem piecesOf_cons_of_ne_nil {α : Type} (g : α → List Sym) (between final : List Sym) (a : α)
    (as : List α) (h : as ≠ []) :
    piecesOf g between final (a :: as) = (g a ++ between) :: piecesOf g between final as := by
  cases as with
  | nil => exact absurd rfl h
  | cons b bs => rfl

/-- A piece that holds no separator is split into itself. -/
theorem splitSeq_of_none {α : Type} [DecidableEq α] {sep a : List α}
    (h : splitFirst sep a = none) : splitSeq sep a = [a] := by
  unfold splitSeq
  cases a.length with
  | zero => rfl
  | succ k => simp only [splitSeqAux, h]

/-! ## `parsePieces` -/

theorem parsePieces_piecesOf {α β : Type} (one : List Sym → Option (β × List Sym))
    (g : α → List Sym) (e : α → β) (between final : List Sym) (as : List α) (hne : as ≠ [])
    (h : ∀ a ∈ as, ∀ t ∈ [between, final], one (g a ++ t) = some (e a, t)) :
    parsePieces one between final (piecesOf g between final as) = some (as.map e) := by
  induction as with
  | nil => exact absurd rfl hne
  | cons a as ih =>
    have ha := h a List.mem_cons_self
    by_cases has : as = []
    · subst has
      have hf := ha final (by simp)
      show ((one (g a ++ final)).bind fun r => if r.2 = final then some [r.1] else none) =
        some [e a]
      rw [hf]
      simp
    · have hb := ha between (by simp)
      rw [piecesOf_cons_of_ne_nil _ _ _ _ _ has,
        parsePieces_cons_of_ne_nil _ _ _ _ _ (piecesOf_ne_nil _ _ _ _ has), hb,
        ih has (fun a' ha' => h a' (List.mem_cons_of_mem _ ha'))]
      simp

theorem piecesOf_parsePieces {β : Type} (one : List Sym → Option (β × List Sym))
    (g : β → List Sym) (between final : List Sym)
    (h : ∀ p b r, one p = some (b, r) → p = g b ++ r) :
    ∀ ps bs, parsePieces one between final ps = some bs →
      bs ≠ [] ∧ ps = piecesOf g between final bs := by
  intro ps
  induction ps with
  | nil => intro bs hb; cases hb
  | cons p ps ih =>
    intro bs hb
    by_cases hps : ps = []
    · subst hps
      have hb' : ((one p).bind fun r => if r.2 = final then some [r.1] else none) = some bs := hb
      cases ho : one p with
      | none => rw [ho] at hb'; cases hb'
      | some r =>
        obtain ⟨v, rest⟩ := r
        rw [ho, Option.bind_some] at hb'
        have hp := h p v rest ho
        split at hb'
        · rename_i hr
          cases hb'
          have hr' : rest = final := hr
          subst hp hr'
          exact ⟨List.cons_ne_nil _ _, rfl⟩
        · cases hb'
    · rw [parsePieces_cons_of_ne_nil _ _ _ _ _ hps] at hb
      cases ho : one p with
      | none => rw [ho] at hb; cases hb
      | some r =>
        obtain ⟨v, rest⟩ := r
        rw [ho, Option.bind_some] at hb
        have hp := h p v rest ho
        split at hb
        · rename_i hr
          cases hq : parsePieces one between final ps with
          | none => rw [hq] at hb; cases hb
          | some bs' =>
            rw [hq] at hb
            cases hb
            obtain ⟨hne, hps'⟩ := ih bs' hq
            refine ⟨List.cons_ne_nil _ _, ?_⟩
            have hr' : rest = between := hr
            rw [piecesOf_cons_of_ne_nil _ _ _ _ _ hne, hp, hr', ← hps']
        · cases hb

end Verified

end
