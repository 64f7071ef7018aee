module

public import Verified.Thm.Span

public section

/-!
# Lemmas every family's proofs share

Facts about item lists, their symbol streams and their renders that hold for any layout, so
that each family proves them once here instead of once per family:

* `syms_flatMap`: the symbols of a flattened list of item lists;
* `splitBy_of_true`, `encodeItems_of_not_isCh`: a layout without text renders symbol by symbol;
* `encodeItems_prefix_ctl`: a render cut right after a control token is a prefix of the render
  of every continuation (the extension theorems of the families rest on it);
* `splitAtCtrl_chunks`, `takeText_eq`: reading a stream back at its separators and its text;
* `fa_append`: `∀` over a concatenation, as the families' `simp only` calls use it.
-/

namespace Verified

/-! ## Lists -/

/-- `∀` over a concatenation. -/
theorem fa_append {α : Type} {P : α → Prop} {a b : List α} :
    (∀ x ∈ a ++ b, P x) ↔ (∀ x ∈ a, P x) ∧ (∀ x ∈ b, P x) := List.forall_mem_append

/-! ## Symbol streams -/

/-- The symbols of a flattened list of item lists are the flattened symbols. -/
theorem syms_flatMap {α : Type} (l : List α) (g : α → List Item) :
    syms (l.flatMap g) = l.flatMap fun x => syms (g x) := by
  induction l with
  | nil => rfl
  | cons x l ih => rw [List.flatMap_cons, syms_append, ih, List.flatMap_cons]

/-- Splitting at a control token that only the separators carry gives back the chunks. -/
theorem splitAtCtrl_chunks (t : Token) (a : List Sym) (cs : List (List Sym))
    (ha : .ctrl t ∉ a) (hc : ∀ c ∈ cs, .ctrl t ∉ c) :
    splitAtCtrl t (a ++ cs.flatMap (.ctrl t :: ·)) = (a, cs) := by
  induction cs generalizing a with
  | nil => simpa using splitAtCtrl_of_not_mem t a ha
  | cons c cs ih =>
    rw [List.flatMap_cons, List.cons_append, splitAtCtrl_append_ctrl t a _ ha,
      ih c (hc c List.mem_cons_self) (fun c' hc' => hc c' (List.mem_cons_of_mem _ hc'))]

/-- What `takeText` returns puts the stream back together. -/
theorem takeText_eq {s r : List Sym} {x : Chars} (h : takeText s = (x, r)) : s = lit x ++ r := by
  have := takeText_spec s
  rw [h] at this
  exact this.symm

/-! ## Renders -/

/-- `splitBy` of a list on which the predicate always holds: no run, every element alone. -/
theorem splitBy_of_true {α : Type} (p : α → Bool) (l : List α) (h : ∀ x ∈ l, p x = true) :
    splitBy p l = ([], l.map fun x => (x, [])) := by
  induction l with
  | nil => rfl
  | cons x l ih =>
    simp [splitBy_cons_of_true p x l (h x List.mem_cons_self),
      ih (fun y hy => h y (List.mem_cons_of_mem _ hy))]

/-- A layout without text renders symbol by symbol. -/
theorem encodeItems_of_not_isCh (c : Codec) (items : List Item)
    (h : ∀ s ∈ syms items, s.isCh = false) :
    encodeItems c items =
      (asyms items).map fun x => (⟨x.1.token, x.1.src, x.2.owner, x.2.learn⟩ : Cell) := by
  have h' : ∀ x ∈ asyms items, (fun x : Sym × Ann => !x.1.isCh) x = true := by
    intro x hx
    have hm : x.1 ∈ syms items := by
      rw [← asyms_map_fst]
      exact List.mem_map_of_mem hx
    simp [h _ hm]
  simp only [encodeItems, splitBy_of_true _ _ h', encodeRunCells_nil, List.nil_append]
  induction asyms items with
  | nil => rfl
  | cons x xs ih => simp [ih, encodeRunCells_nil]

/-- A render cut right after a control token is a prefix of the render of anything that
continues it: the span after the control token starts afresh. Every family's `ctl k o l` is
such an item (`⟨.ctrl k, ⟨o, l⟩⟩`). -/
theorem encodeItems_prefix_ctl (codec : Codec) (a b : List Item) (k : Token) (ann : Ann) :
    encodeItems codec (a ++ [(⟨.ctrl k, ann⟩ : Item)]) <+:
      encodeItems codec (a ++ (⟨.ctrl k, ann⟩ : Item) :: b) := by
  have h1 : ∀ x ∈ (syms [(⟨.ctrl k, ann⟩ : Item)]).head?, x.isCh = false := by
    intro x hx
    simp only [syms_cons, syms_nil, Piece.syms, List.append_nil, List.head?_cons,
      Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  have h2 : ∀ x ∈ (syms ((⟨.ctrl k, ann⟩ : Item) :: b)).head?, x.isCh = false := by
    intro x hx
    simp only [syms_cons, Piece.syms, List.cons_append, List.nil_append, List.head?_cons,
      Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  rw [encodeItems_append _ _ _ h1, encodeItems_append _ _ _ h2, List.prefix_append_right_inj]
  simp [encodeItems, asyms, Piece.syms, splitBy, Sym.isCh, encodeRunCells_nil]

end Verified

end
