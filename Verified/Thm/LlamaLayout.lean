module

public import Verified.Thm.LlamaLower
public import Verified.Thm.Items

public section

/-!
# Llama 3.1: layouts, renders and the learned mask

* `layout_eq`, `layout_append`: a layout is `bos`, the turns' items, the generation prompt.
* `encodeItems_toks_eot`, `syms_tail_head`: renders of sampled tokens and of later turns.
* `turnItems_learn`, `layout_itemLearned`, `lowerMsgs_learned`: which items are learned, and the
  learned tokens of a conversation whose assistant turns are sampled.
* `ctrl_reserved_layout`, `syms_layout_erase`: a layout places reserved control tokens only, and
  erasing owners keeps its symbols.
-/

namespace Verified.Llama

open Verified

/-! ## Renders of token payloads and of the learned items -/

/-- The sampled tokens and the end of turn, rendered. -/
theorem encodeItems_toks_eot (c : Codec) (ts : List Token) (e o : Nat) :
    encodeItems c [⟨.toks ts, ⟨o, true⟩⟩, ctl e o true] =
      ts.map (fun t => (⟨t, .toks, o, true⟩ : Cell)) ++ [⟨e, .ctrl, o, true⟩] := by
  rw [encodeItems_of_not_isCh]
  · simp [asyms, ctl, Piece.syms, Sym.token, Sym.src, Function.comp_def]
  · intro s hs
    simp only [syms_cons, ctl, Piece.syms, syms_nil, List.append_nil, List.mem_append,
      List.mem_map, List.mem_singleton] at hs
    rcases hs with ⟨t, -, rfl⟩ | rfl <;> rfl

/-- The generation prompt items of a layout. -/
@[expose] def promptOf (f : LlamaFmt) : Option Nat → List Item
  | some o => promptItems f o
  | none => []

/-- A layout: `bos`, the turns, the generation prompt. -/
theorem layout_eq (f : LlamaFmt) (turns : List LTurn) (p : Option Nat) :
    layout f ⟨turns, p⟩ =
      [ctl f.ids.bos 0 false] ++ turns.flatMap (turnItems f) ++ promptOf f p := by
  cases p <;> rfl

/-- The layout of a lowered conversation with more turns. -/
theorem layout_append (f : LlamaFmt) (turns ts2 : List LTurn) (p : Option Nat) :
    layout f ⟨turns ++ ts2, p⟩ =
      layout f ⟨turns, none⟩ ++ (ts2.flatMap (turnItems f) ++ promptOf f p) := by
  simp [layout_eq, promptOf, List.flatMap_append, List.append_assoc]

/-- The symbols of the items of a turn start with `<|start_header_id|>`. -/
theorem syms_turnItems (f : LlamaFmt) (t : LTurn) :
    ∃ r, syms (turnItems f t) = .ctrl f.ids.startHeader :: r := by
  cases t <;> exact ⟨_, rfl⟩

theorem syms_tail_head (f : LlamaFmt) (ts : List LTurn) (p : Option Nat) :
    ∀ x ∈ (syms (ts.flatMap (turnItems f) ++ promptOf f p)).head?, x.isCh = false := by
  intro x hx
  cases ts with
  | cons t ts =>
    obtain ⟨r, e⟩ := syms_turnItems f t
    simp only [List.flatMap_cons, List.append_assoc, syms_append, e, List.cons_append,
      List.head?_cons, Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  | nil =>
    cases p with
    | none => cases hx
    | some o =>
      simp only [List.flatMap_nil, List.nil_append, promptOf, promptItems, header, syms_cons,
        ctl, Piece.syms, List.cons_append, List.head?_cons, Option.mem_def,
        Option.some.injEq] at hx
      subst hx
      rfl

/-! ## Who is learned -/

theorem turnItems_learn (f : LlamaFmt) (t : LTurn) :
    ∀ it ∈ turnItems f t, it.ann.learn = true → t.learned = true ∧ it.ann.owner = t.owner := by
  cases t with
  | system e ts s o => cases s <;> simp [turnItems, header, ctl, txt, pay]
  | userTools ts u o => cases u <;> simp [turnItems, header, ctl, txt, pay]
  | plain r p o =>
    cases r <;> cases p <;>
      simp [turnItems, header, ctl, txt, pay, LTurn.learned, LTurn.owner, LRole.isAssistant]
  | call n a o => simp [turnItems, header, ctl, txt, LTurn.learned, LTurn.owner]
  | ipython p o => cases p <;> simp [turnItems, header, ctl, txt, pay]
  | sampled ts o => simp [turnItems, promptItems, header, ctl, txt, LTurn.learned, LTurn.owner]

theorem prompt_unlearned (f : LlamaFmt) (p : Option Nat) :
    ∀ it ∈ promptOf f p, it.ann.learn = false := by
  cases p <;> simp [promptOf, promptItems, header, ctl, txt]


/-! ## Learned tokens when every assistant turn is sampled -/

/-- The learned tokens of an item, with owners. -/
@[expose] def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a sampled turn. -/
@[expose] def turnLearned (f : LlamaFmt) : LTurn → List (Token × Nat)
  | .sampled ts o => (ts ++ [f.ids.eot]).map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message. -/
@[expose] def msgLearned (f : LlamaFmt) (x : Message × Nat) :
    List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [f.ids.eot]).map (·, x.2)
  | _, _ => []

theorem turnItems_itemLearned (f : LlamaFmt) (t : LTurn)
    (h : t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turnItems f t).flatMap itemLearned = turnLearned f t := by
  cases t with
  | plain r p o =>
    cases r with
    | assistant =>
      obtain ⟨_, _, e⟩ := h rfl
      cases e
    | _ => cases p <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned,
        LRole.isAssistant]
  | call n a o =>
    obtain ⟨_, _, e⟩ := h rfl
    cases e
  | sampled ts o => simp [turnItems, promptItems, header, ctl, txt, itemLearned, turnLearned]
  | system e ts s o => cases s <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned]
  | userTools ts u o =>
    cases u <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned]
  | ipython p o => cases p <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned]

theorem turns_itemLearned (f : LlamaFmt) (turns : List LTurn)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turns.flatMap (turnItems f)).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  induction turns with
  | nil => rfl
  | cons t ts ih =>
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.flatMap_cons]

theorem layout_itemLearned (f : LlamaFmt) (turns : List LTurn) (p : Option Nat)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (layout f ⟨turns, p⟩).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  have hp : (promptOf f p).flatMap itemLearned = [] := by
    cases p <;> simp [promptOf, promptItems, header, ctl, txt, itemLearned]
  rw [layout_eq, List.flatMap_append, List.flatMap_append, hp, List.append_nil,
    turns_itemLearned f _ h]
  rfl

theorem turnLearned_of_unlearned (f : LlamaFmt) (t : LTurn) (h : t.learned = false) :
    turnLearned f t = [] := by
  cases t <;> simp_all [turnLearned, LTurn.learned]

theorem lowerMsg_learned {f : LlamaFmt} {i : Nat} {m : Message} {t : LTurn}
    (h : lowerMsg i m = some t) (hs : m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    turnLearned f t = msgLearned f (m, i) ∧ (t.learned = true → ∃ ts o, t = .sampled ts o) := by
  rcases m with ⟨role, blocks⟩
  cases role with
  | assistant =>
    obtain ⟨ts, e⟩ := hs rfl
    simp only at e
    subst e
    simp only [lowerMsg, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun _ => ⟨ts, i, rfl⟩⟩
  | user | system | tool | developer =>
    simp only [lowerMsg] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨rfl, fun h => by cases h⟩

theorem lowerMsgs_learned {f : LlamaFmt} {rest : List Message} : ∀ {i : Nat} {ts : List LTurn},
    lowerMsgs i rest = some ts →
      (∀ m ∈ rest, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      ts.flatMap (turnLearned f) = (rest.zipIdx i).flatMap (msgLearned f) ∧
        ∀ t ∈ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o := by
  induction rest with
  | nil =>
    intro i ts h _
    cases h
    exact ⟨rfl, fun t ht => by cases ht⟩
  | cons m rest ih =>
    intro i ts h hs
    simp only [lowerMsgs] at h
    cases hm : lowerMsg i m with
    | none => rw [hm] at h; cases h
    | some t0 =>
      rw [hm, Option.bind_some] at h
      cases hr : lowerMsgs (i + 1) rest with
      | none => rw [hr] at h; cases h
      | some ts' =>
        rw [hr, Option.map_some] at h
        cases h
        obtain ⟨h1, h2⟩ := lowerMsg_learned hm (hs m List.mem_cons_self)
        obtain ⟨h3, h4⟩ := ih hr (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))
        refine ⟨?_, ?_⟩
        · rw [List.flatMap_cons, h1, h3, List.zipIdx_cons, List.flatMap_cons]
        · intro t ht
          rcases List.mem_cons.mp ht with rfl | ht
          · exact h2
          · exact h4 t ht

theorem msgLearned_pre (f : LlamaFmt) (pre : List Message)
    (h : ∀ m ∈ pre, m.role ≠ .assistant) : ∀ n, (pre.zipIdx n).flatMap (msgLearned f) = [] := by
  induction pre with
  | nil => intro n; rfl
  | cons m pre ih =>
    intro n
    rw [List.zipIdx_cons, List.flatMap_cons, ih (fun m' hm' => h m' (List.mem_cons_of_mem _ hm'))]
    have hm := h m List.mem_cons_self
    rcases m with ⟨role, blocks⟩
    cases role <;> first | exact absurd rfl hm | rfl



/-! ## Control tokens and owners -/

theorem turnItems_ctrl (f : LlamaFmt) (tr : LTurn) :
    ∀ it ∈ turnItems f tr, ∀ t, it.piece = .ctrl t →
      t ∈ [f.ids.bos, f.ids.startHeader, f.ids.endHeader, f.ids.eot] := by
  cases tr <;> (try cases ‹LPay›) <;> simp [turnItems, header, ctl, txt, pay, promptItems]

theorem layout_ctrl (f : LlamaFmt) (l : LConv) :
    ∀ it ∈ layout f l, ∀ t, it.piece = .ctrl t →
      t ∈ [f.ids.bos, f.ids.startHeader, f.ids.endHeader, f.ids.eot] := by
  obtain ⟨turns, p⟩ := l
  intro it hit t ht
  rw [layout_eq] at hit
  simp only [List.mem_append, List.mem_flatMap] at hit
  rcases hit with (hit | ⟨tr, -, hit⟩) | hit
  · simp only [List.mem_singleton] at hit
    subst hit
    simp only [ctl, Piece.ctrl.injEq] at ht
    simp [ht]
  · exact turnItems_ctrl f tr it hit t ht
  · cases p with
    | none => simp [promptOf] at hit
    | some o =>
      simp only [promptOf, promptItems, header, ctl, txt, List.mem_cons, List.not_mem_nil,
        or_false] at hit
      rcases hit with rfl | rfl | rfl | rfl <;> simp_all

theorem ctrl_reserved_layout (f : LlamaFmt) (l : LConv) :
    ∀ t ∈ ctrls (syms (layout f l)), isReserved f.ids.reserved t = true := by
  intro t ht
  simp only [ctrls, List.mem_filterMap] at ht
  obtain ⟨s, hs, hst⟩ := ht
  cases s with
  | ctrl t' =>
    simp only [Option.some.injEq] at hst
    subst hst
    simp only [syms, List.mem_flatMap] at hs
    obtain ⟨it, hit, hs⟩ := hs
    have hp : it.piece = .ctrl t' := by
      cases hp : it.piece <;> simp_all [Piece.syms]
    have hm := layout_ctrl f l it hit t' hp
    simp only [List.mem_cons, List.not_mem_nil, or_false] at hm
    rcases hm with rfl | rfl | rfl | rfl <;> simp [isReserved, LlamaIds.reserved]
  | ch _ => simp at hst
  | tok _ => simp at hst

theorem syms_turnItems_erase (f : LlamaFmt) (t : LTurn) :
    syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t <;> (try cases ‹LPay›) <;> rfl

theorem syms_layout_erase (f : LlamaFmt) (l : LConv) :
    syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨turns, p⟩ := l
  have hp : syms (promptOf f (p.map fun _ => 0)) = syms (promptOf f p) := by
    cases p <;> rfl
  simp only [LConv.erase, layout_eq, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItems_erase, hp]

end Verified.Llama

end
