module

public import Verified.Spec.Sym

public section

/-!
# Laws of symbol streams and the text helpers

What the family parsers (`Spec/Qwen.lean`, `Spec/Llama.lean`) are built from, each with the
law that makes it invert what a layout writes (`…_append`, `…_of_clearOf`: completeness) and
the law that makes it never invent input (`…_eq_some`: soundness). The laws of splitting at a
character or a separator, and of `parsePieces`, are in `Thm/SymSplit.lean`.
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

end Verified

end
