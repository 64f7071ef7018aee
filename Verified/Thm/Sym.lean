module

public import Verified.Spec.Sym

public section

/-!
# Laws of symbol streams and the text helpers

What the family parsers (`Spec/Qwen.lean`, `Spec/Llama.lean`) are built from, each with the
law that makes it invert what a layout writes (`…_append`, `…_of_clearOf`: completeness) and
the law that makes it never invent input (`…_eq_some`: soundness).
-/

namespace Verified

/-! ## Symbol streams of layouts -/

@[simp] theorem syms_nil : syms [] = [] := rfl

@[simp] theorem syms_cons (i : Item) (is : List Item) : syms (i :: is) = i.piece.syms ++ syms is := by
  simp [syms]

@[simp] theorem syms_append (a b : List Item) : syms (a ++ b) = syms a ++ syms b := by
  simp [syms, List.flatMap_append]

/-- A text-only layout has no verbatim-token symbol. -/
theorem syms_all_not_tok_of_textOnly : ∀ {items : List Item}, textOnly items = true →
    (syms items).all (fun x => !x.isTok) = true
  | [], _ => rfl
  | ⟨p, a⟩ :: is, h => by
    simp only [textOnly, List.all_cons, Bool.and_eq_true] at h
    have ih := syms_all_not_tok_of_textOnly (items := is) h.2
    simp only [syms_cons, List.all_append, Bool.and_eq_true]
    refine ⟨?_, ih⟩
    cases p with
    | ctrl t => rfl
    | text cs => simp [Piece.syms, Sym.isTok]
    | toks ts => simp [Piece.isToks] at h

@[simp] theorem lit_nil : lit [] = [] := rfl

@[simp] theorem lit_cons (c : Char) (cs : Chars) : lit (c :: cs) = .ch c :: lit cs := rfl

@[simp] theorem lit_append (a b : Chars) : lit (a ++ b) = lit a ++ lit b := by
  simp [lit]

theorem lit_injective {a b : Chars} (h : lit a = lit b) : a = b := by
  induction a generalizing b with
  | nil =>
    cases b with
    | nil => rfl
    | cons y b => simp [lit] at h
  | cons x a ih =>
    cases b with
    | nil => simp [lit] at h
    | cons y b =>
      simp only [lit_cons, List.cons.injEq, Sym.ch.injEq] at h
      rw [h.1, ih h.2]

@[simp] theorem chars_lit (cs : Chars) : chars (lit cs) = cs := by
  induction cs <;> simp_all [chars, lit]

@[simp] theorem ctrls_lit (cs : Chars) : ctrls (lit cs) = [] := by
  induction cs <;> simp_all [ctrls, lit]

@[simp] theorem ctrls_append (a b : List Sym) : ctrls (a ++ b) = ctrls a ++ ctrls b := by
  simp [ctrls, List.filterMap_append]

/-! ## `splitBy` and `joinBy` -/

theorem joinBy_splitBy {α : Type} (p : α → Bool) (l : List α) : joinBy (splitBy p l) = l := by
  induction l with
  | nil => rfl
  | cons x xs ih =>
    simp only [joinBy] at ih
    cases hp : p x <;> simp [splitBy, joinBy, hp, ih]

theorem splitBy_append_of_false {α : Type} (p : α → Bool) (a l : List α)
    (h : ∀ x ∈ a, p x = false) :
    splitBy p (a ++ l) = (a ++ (splitBy p l).1, (splitBy p l).2) := by
  induction a with
  | nil => rfl
  | cons x a ih =>
    have hx : p x = false := h x List.mem_cons_self
    have ih' := ih (fun y hy => h y (List.mem_cons_of_mem _ hy))
    simp [splitBy, hx, ih']

theorem splitBy_of_false {α : Type} (p : α → Bool) (a : List α) (h : ∀ x ∈ a, p x = false) :
    splitBy p a = (a, []) := by
  simpa [splitBy] using splitBy_append_of_false p a [] h


/-- `splitBy` on an element not satisfying the predicate. -/
theorem splitBy_cons_of_false {α : Type} (p : α → Bool) (x : α) (l : List α) (h : p x = false) :
    splitBy p (x :: l) = (x :: (splitBy p l).1, (splitBy p l).2) := by
  simp [splitBy, h]

theorem splitBy_cons_of_true {α : Type} (p : α → Bool) (x : α) (l : List α) (h : p x = true) :
    splitBy p (x :: l) = ([], (x, (splitBy p l).1) :: (splitBy p l).2) := by
  simp [splitBy, h]

/-- The first run of `splitBy` has no element satisfying `p`. -/
theorem splitBy_fst_false {α : Type} (p : α → Bool) (l : List α) :
    ∀ x ∈ (splitBy p l).1, p x = false := by
  induction l with
  | nil => intro x hx; simp [splitBy] at hx
  | cons y l ih =>
    intro x hx
    cases hp : p y
    · rw [splitBy_cons_of_false p y l hp] at hx
      rcases List.mem_cons.mp hx with rfl | hx
      · exact hp
      · exact ih x hx
    · rw [splitBy_cons_of_true p y l hp] at hx
      cases hx

/-- The separators of `splitBy` satisfy `p`, the runs after them do not. -/
theorem splitBy_snd {α : Type} (p : α → Bool) (l : List α) :
    ∀ y ∈ (splitBy p l).2, p y.1 = true ∧ ∀ z ∈ y.2, p z = false := by
  induction l with
  | nil => intro y hy; simp [splitBy] at hy
  | cons x l ih =>
    intro y hy
    cases hp : p x
    · rw [splitBy_cons_of_false p x l hp] at hy
      exact ih y hy
    · rw [splitBy_cons_of_true p x l hp] at hy
      rcases List.mem_cons.mp hy with rfl | hy
      · exact ⟨hp, splitBy_fst_false p l⟩
      · exact ih y hy

/-- The separators of `splitBy` are elements of the list. -/
theorem splitBy_snd_mem {α : Type} (p : α → Bool) (l : List α) :
    ∀ y ∈ (splitBy p l).2, y.1 ∈ l := by
  induction l with
  | nil => intro y hy; simp [splitBy] at hy
  | cons x l ih =>
    intro y hy
    cases hp : p x
    · rw [splitBy_cons_of_false p x l hp] at hy
      exact List.mem_cons_of_mem _ (ih y hy)
    · rw [splitBy_cons_of_true p x l hp] at hy
      rcases List.mem_cons.mp hy with rfl | hy
      · exact List.mem_cons_self
      · exact List.mem_cons_of_mem _ (ih y hy)

/-- `splitBy` commutes with `map` when the predicate factors through the map. -/
theorem splitBy_map {α β : Type} (p : β → Bool) (f : α → β) (l : List α) :
    splitBy p (l.map f) = ((splitBy (fun x => p (f x)) l).1.map f,
      (splitBy (fun x => p (f x)) l).2.map fun y => (f y.1, y.2.map f)) := by
  induction l with
  | nil => rfl
  | cons x l ih => cases hp : p (f x) <;> simp [splitBy, hp, ih]

/-- Separators satisfying `p`, each followed by a run avoiding `p`, split back into themselves. -/
theorem splitBy_flatMap {α : Type} (p : α → Bool) (ys : List (α × List α))
    (h : ∀ y ∈ ys, p y.1 = true ∧ ∀ z ∈ y.2, p z = false) :
    splitBy p (ys.flatMap fun x => x.1 :: x.2) = ([], ys) := by
  induction ys with
  | nil => rfl
  | cons y ys ih =>
    have hy := h y List.mem_cons_self
    have ih' := ih (fun z hz => h z (List.mem_cons_of_mem _ hz))
    simp only [List.flatMap_cons, List.cons_append, splitBy_cons_of_true p _ _ hy.1,
      splitBy_append_of_false p _ _ hy.2, ih', List.append_nil]


/-- No element of a list without `.ctrl t` compares equal to it. -/
theorem beq_ctrl_false_of_not_mem {t : Token} {a : List Sym} (h : .ctrl t ∉ a) :
    ∀ x ∈ a, (x == Sym.ctrl t) = false := by
  intro x hx
  cases e : (x == Sym.ctrl t)
  · rfl
  · rw [beq_iff_eq] at e
    subst e
    exact absurd hx h

/-- `splitBy` inverts `joinBy` on well-formed structures. -/
theorem splitBy_joinBy {α : Type} (p : α → Bool) (a : List α) (ys : List (α × List α))
    (ha : ∀ z ∈ a, p z = false) (h : ∀ y ∈ ys, p y.1 = true ∧ ∀ z ∈ y.2, p z = false) :
    splitBy p (joinBy (a, ys)) = (a, ys) := by
  simp only [joinBy, splitBy_append_of_false p a _ ha, splitBy_flatMap p ys h, List.append_nil]

/-! ## `splitAtCtrl` -/

theorem splitAtCtrl_append_ctrl (t : Token) (a b : List Sym) (h : .ctrl t ∉ a) :
    splitAtCtrl t (a ++ .ctrl t :: b) =
      (a, (splitAtCtrl t b).1 :: (splitAtCtrl t b).2) := by
  simp only [splitAtCtrl, splitBy_append_of_false (fun x => x == Sym.ctrl t) a _
    (beq_ctrl_false_of_not_mem h), splitBy_cons_of_true (fun x => x == Sym.ctrl t) _ _
    (beq_self_eq_true _), List.append_nil, List.map_cons]

theorem splitAtCtrl_of_not_mem (t : Token) (a : List Sym) (h : .ctrl t ∉ a) :
    splitAtCtrl t a = (a, []) := by
  simp only [splitAtCtrl, splitBy_of_false (fun x => x == Sym.ctrl t) a
    (beq_ctrl_false_of_not_mem h), List.map_nil]

/-- `splitAtCtrl` loses nothing. -/
theorem splitAtCtrl_join (t : Token) (s : List Sym) :
    (splitAtCtrl t s).1 ++ (splitAtCtrl t s).2.flatMap (.ctrl t :: ·) = s := by
  simp only [splitAtCtrl]
  induction s with
  | nil => rfl
  | cons x s ih =>
    by_cases hx : x = .ctrl t
    · subst hx
      simp only [splitBy_cons_of_true (fun x => x == Sym.ctrl t) _ _ (beq_self_eq_true _),
        List.map_cons, List.flatMap_cons, List.nil_append, List.cons_append, ih]
    · have hx' : (x == Sym.ctrl t) = false :=
        beq_ctrl_false_of_not_mem (a := [x]) (by simpa [eq_comm] using hx) x List.mem_cons_self
      simp only [splitBy_cons_of_false (fun x => x == Sym.ctrl t) _ _ hx', List.cons_append, ih]

theorem not_mem_splitAtCtrl_fst (t : Token) (s : List Sym) : .ctrl t ∉ (splitAtCtrl t s).1 := by
  intro hm
  have := splitBy_fst_false (fun x => x == Sym.ctrl t) s _ hm
  simp at this

theorem not_mem_splitAtCtrl_snd (t : Token) (s : List Sym) :
    ∀ p ∈ (splitAtCtrl t s).2, .ctrl t ∉ p := by
  intro p hp hm
  simp only [splitAtCtrl, List.mem_map] at hp
  obtain ⟨y, hy, rfl⟩ := hp
  have := (splitBy_snd (fun x => x == Sym.ctrl t) s y hy).2 _ hm
  simp at this

/-! ## `takeText` -/

@[simp] theorem takeText_lit_append (cs : Chars) (s : List Sym) :
    takeText (lit cs ++ s) = (cs ++ (takeText s).1, (takeText s).2) := by
  induction cs with
  | nil => rfl
  | cons c cs ih =>
    rw [lit_cons, List.cons_append]
    simp only [takeText, ih, List.cons_append]

@[simp] theorem takeText_ctrl (t : Token) (s : List Sym) : takeText (.ctrl t :: s) = ([], .ctrl t :: s) := rfl

@[simp] theorem takeText_tok (t : Token) (s : List Sym) : takeText (.tok t :: s) = ([], .tok t :: s) := rfl

@[simp] theorem takeText_nil : takeText [] = ([], []) := rfl

/-- `takeText` loses nothing. -/
theorem takeText_spec (s : List Sym) : lit (takeText s).1 ++ (takeText s).2 = s := by
  induction s with
  | nil => rfl
  | cons x s ih =>
    cases x with
    | ch c => simp only [takeText, lit_cons, List.cons_append, ih]
    | ctrl t => rfl
    | tok t => rfl

/-- After `takeText`, the stream is empty or starts with a symbol that is not a character. -/
theorem takeText_rest (s : List Sym) :
    (takeText s).2 = [] ∨ ∃ x r, (takeText s).2 = x :: r ∧ x.isCh = false := by
  induction s with
  | nil => exact Or.inl rfl
  | cons x s ih =>
    cases x with
    | ch c => exact ih
    | ctrl t => exact Or.inr ⟨.ctrl t, s, rfl, rfl⟩
    | tok t => exact Or.inr ⟨.tok t, s, rfl, rfl⟩

/-! ## Prefixes, suffixes, first occurrences -/

@[simp] theorem stripPrefix?_append {α : Type} [DecidableEq α] (p l : List α) :
    stripPrefix? p (p ++ l) = some l := by
  induction p with
  | nil => rfl
  | cons a p ih => simp [stripPrefix?, ih]

theorem stripPrefix?_eq_some {α : Type} [DecidableEq α] {p l r : List α}
    (h : stripPrefix? p l = some r) : l = p ++ r := by
  induction p generalizing l with
  | nil =>
    simp only [stripPrefix?, Option.some.injEq] at h
    subst h
    rfl
  | cons a p ih =>
    cases l with
    | nil => simp [stripPrefix?] at h
    | cons b l =>
      simp only [stripPrefix?] at h
      split at h
      · rename_i hab
        subst hab
        simp [ih h]
      · cases h

@[simp] theorem stripSuffix?_append {α : Type} [DecidableEq α] (p l : List α) :
    stripSuffix? p (l ++ p) = some l := by
  simp [stripSuffix?, List.reverse_append]

theorem stripSuffix?_eq_some {α : Type} [DecidableEq α] {p l r : List α}
    (h : stripSuffix? p l = some r) : l = r ++ p := by
  unfold stripSuffix? at h
  cases h1 : stripPrefix? p.reverse l.reverse with
  | none => rw [h1] at h; cases h
  | some r' =>
    rw [h1] at h
    cases h
    have e := stripPrefix?_eq_some h1
    rw [← List.reverse_reverse l, e, List.reverse_append, List.reverse_reverse]

theorem splitFirst_eq_some {α : Type} [DecidableEq α] {sep l a b : List α}
    (h : splitFirst sep l = some (a, b)) : l = a ++ sep ++ b := by
  induction l generalizing a b with
  | nil =>
    simp only [splitFirst] at h
    split at h
    · rename_i hs
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      subst hs
      rfl
    · cases h
  | cons x l ih =>
    simp only [splitFirst] at h
    split at h
    · rename_i r hr
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      exact stripPrefix?_eq_some hr
    · cases h1 : splitFirst sep l with
      | none => rw [h1] at h; cases h
      | some q =>
        rw [h1] at h
        obtain ⟨a', b'⟩ := q
        simp only [Option.map_some, Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl⟩ := h
        exact congrArg (x :: ·) (ih h1)


/-- Matching a prefix only looks at as many elements as the prefix has. -/
theorem stripPrefix?_append_of_le {α : Type} [DecidableEq α] (p l m : List α)
    (h : p.length ≤ l.length) : stripPrefix? p (l ++ m) = (stripPrefix? p l).map (· ++ m) := by
  induction p generalizing l with
  | nil => rfl
  | cons a p ih =>
    cases l with
    | nil => simp at h
    | cons b l =>
      simp only [List.cons_append, stripPrefix?]
      by_cases hab : a = b
      · rw [if_pos hab, if_pos hab]
        exact ih l (Nat.le_of_succ_le_succ h)
      · rw [if_neg hab, if_neg hab]
        rfl

/-- A list that starts with the separator splits at its start. -/
theorem splitFirst_sep_append {α : Type} [DecidableEq α] (sep b : List α) :
    splitFirst sep (sep ++ b) = some ([], b) := by
  cases sep with
  | nil => cases b <;> simp [splitFirst, stripPrefix?]
  | cons s sep =>
    simp only [List.cons_append, splitFirst]
    rw [← List.cons_append, stripPrefix?_append]


/-- `splitChar` always returns at least one piece. -/
theorem splitChar_ne_nil (c : Char) (l : Chars) : splitChar c l ≠ [] := by
  cases l with
  | nil => simp [splitChar]
  | cons x l =>
    simp only [splitChar]
    split
    · simp
    · split <;> simp

/-- `joinWith` of a list of at least two pieces. -/
theorem joinWith_cons_of_ne_nil {α : Type} (sep x : List α) (xs : List (List α)) (h : xs ≠ []) :
    joinWith sep (x :: xs) = x ++ sep ++ joinWith sep xs := by
  cases xs with
  | nil => exact absurd rfl h
  | cons y ys => rfl

/-- `joinWith` when the first piece starts with `x`. -/
theorem joinWith_cons_cons {α : Type} (sep : List α) (x : α) (g : List α) (gs : List (List α)) :
    joinWith sep ((x :: g) :: gs) = x :: joinWith sep (g :: gs) := by
  cases gs <;> rfl

/-- A payload followed by a separator it is clear of is read back whatever follows. -/
theorem splitFirst_of_clearOf {α : Type} [DecidableEq α] {sep a : List α} (b : List α)
    (h : clearOf sep a = true) : splitFirst sep (a ++ sep ++ b) = some (a, b) := by
  have h' : splitFirst sep (a ++ sep) = some (a, []) := by
    simpa [clearOf] using h
  clear h
  revert h'
  induction a with
  | nil => intro _; exact splitFirst_sep_append sep b
  | cons x a ih =>
    intro h'
    simp only [List.cons_append, splitFirst] at h' ⊢
    split at h'
    · simp at h'
    · rename_i hn
      have h2 : splitFirst sep (a ++ sep) = some (a, []) := by
        cases h2 : splitFirst sep (a ++ sep) with
        | none => rw [h2] at h'; cases h'
        | some q =>
          rw [h2] at h'
          obtain ⟨q1, q2⟩ := q
          simp only [Option.map_some, Option.some.injEq, Prod.mk.injEq, List.cons.injEq,
            true_and] at h'
          rw [h'.1, h'.2]
      have hn' : stripPrefix? sep (x :: (a ++ sep ++ b)) = none := by
        have e := stripPrefix?_append_of_le sep (x :: (a ++ sep)) b
          (by simp only [List.length_cons, List.length_append]; omega)
        rw [List.cons_append, hn] at e
        exact e
      rw [hn', ih h2]
      rfl

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
