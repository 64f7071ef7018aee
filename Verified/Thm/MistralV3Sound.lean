module

public import Verified.Thm.MistralV3
public import Verified.Thm.MistralRound

public section

/-!
# Mistral v3: what the reader returns lays out to its input

Version v3 of the Mistral structure (`Spec/MistralV3.lean`) as a `Format`, the half of
`Format.Lawful` about the layout alone and the reader's soundness:

* `layout_unlayoutV3`: whatever the reader returns lays out to its input (every reader reads a
  text piece through `unsp`, whose result `sp` writes back, `sp_unsp`; a call list is accepted
  only when it lays out as the text read, and never as an empty list);
* `ctrl_reservedV3`, `syms_eraseV3`: the controls placed are named ids, owners are not written.

The round trip is `Thm/MistralV3Round.lean`.
-/

namespace Verified.Mistral

open Verified

variable (g : V3Fmt)

/-! ## Distinct control ids -/

/-- The facts about the ids the v3 readers use, from `nodupB` of the named ids. -/
structure V3Facts (i : MistralIds) : Prop where
  t_i : i.tools ≠ i.inst
  t_r : i.tools ≠ i.results
  i_r : i.inst ≠ i.results
  c_t : i.calls ≠ i.tools
  c_i : i.calls ≠ i.inst
  c_r : i.calls ≠ i.results
  e_t : i.eos ≠ i.tools
  e_i : i.eos ≠ i.inst
  e_r : i.eos ≠ i.results
  e_c : i.eos ≠ i.calls

theorem v3Facts {i : MistralIds} (hn : nodupB i.named = true) : V3Facts i := by
  have hn := Qwen.nodup_of_nodupB hn
  unfold MistralIds.named at hn
  exact ⟨Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn)⟩

/-! ## Owners and controls -/

theorem syms_turnItemsV3_erase (t : MTurn) :
    syms (turnItemsV3 g t.erase) = syms (turnItemsV3 g t) := by
  cases t with
  | system p o => rfl
  | user j p o => cases j <;> cases p <;> simp [MTurn.erase, turnItemsV3, spPay]
  | assistant p cs o => cases p <;> cases cs <;> simp [MTurn.erase, turnItemsV3, spPay]
  | result i p o => cases p <;> simp [MTurn.erase, turnItemsV3, spPay]
  | sampled ts o => simp [MTurn.erase, turnItemsV3]

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_eraseV3 (l : MConv) :
    syms ((formatV3 g).layout ((formatV3 g).erase l)) = syms ((formatV3 g).layout l) := by
  simp only [formatV3, layoutV3, MConv.erase, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItemsV3_erase]

/-- The control tokens a v3 turn places are named ids. -/
theorem ctlOk_turnItemsV3 (t : MTurn) : ∀ it ∈ turnItemsV3 g t, CtlOk ⟨g.ids, .v7, false⟩ it := by
  have hn : ∀ x, x ∈ [g.ids.bos, g.ids.eos, g.ids.inst, g.ids.endInst, g.ids.tools,
      g.ids.endTools, g.ids.results, g.ids.endResults, g.ids.calls] → x ∈ g.ids.named := by
    intro x hx
    simp only [MistralIds.named, List.mem_append, List.mem_cons] at hx ⊢
    simp only [List.mem_nil_iff, or_false] at hx
    rcases hx with h | h | h | h | h | h | h | h | h <;> simp [h]
  have c : ∀ (t : Token) (o : Nat) (l : Bool), t ∈ [g.ids.bos, g.ids.eos, g.ids.inst,
      g.ids.endInst, g.ids.tools, g.ids.endTools, g.ids.results, g.ids.endResults,
      g.ids.calls] → CtlOk ⟨g.ids, .v7, false⟩ (ctl t o l) :=
    fun t o l h => ctlOk_ctl ⟨g.ids, .v7, false⟩ (hn t h) o l
  intro it hit
  cases t with
  | system p o => cases hit
  | user j p o =>
    cases j <;> simp only [turnItemsV3, List.nil_append, List.cons_append, List.mem_cons,
      List.mem_nil_iff, or_false] at hit <;>
    rcases hit with rfl | rfl | rfl | rfl | rfl | rfl <;>
    first | exact c _ _ _ (by simp) | exact ctlOk_txt _ _ _ _ | exact ctlOk_pay _ _ _ _
  | assistant p cs o =>
    cases cs <;> simp only [turnItemsV3, List.nil_append, List.cons_append, List.append_nil,
      List.mem_cons, List.mem_nil_iff, or_false, List.singleton_append] at hit <;>
    rcases hit with rfl | rfl | rfl | rfl <;>
    first | exact c _ _ _ (by simp) | exact ctlOk_txt _ _ _ _ | exact ctlOk_pay _ _ _ _
  | result i p o =>
    simp only [turnItemsV3, List.mem_cons, List.mem_nil_iff, or_false] at hit
    rcases hit with rfl | rfl | rfl <;>
    first | exact c _ _ _ (by simp) | exact ctlOk_pay _ _ _ _
  | sampled ts o =>
    simp only [turnItemsV3, List.mem_cons, List.mem_nil_iff, or_false] at hit
    rcases hit with rfl | rfl
    · intro x hx
      simp [Piece.syms, ctrls] at hx
    · exact c _ _ _ (by simp)

/-- Every control token a v3 layout places is reserved. -/
theorem ctrl_reservedV3 (l : MConv) :
    ∀ t ∈ ctrls (syms ((formatV3 g).layout l)), isReserved (formatV3 g).reserved t = true := by
  intro t ht
  obtain ⟨it, hit, h⟩ := Qwen.mem_ctrls_syms ht
  have hn : t ∈ g.ids.named := by
    simp only [formatV3, layoutV3] at hit
    rcases List.mem_append.mp hit with hit | hit
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
      subst hit
      simp only [syms_ctl, Qwen.ctrls_ctrl, List.mem_singleton] at h
      subst h
      simp [MistralIds.named]
    · obtain ⟨u, -, hu⟩ := List.mem_flatMap.mp hit
      exact ctlOk_turnItemsV3 g u it hu t h
  simp [formatV3, isReserved, MistralIds.reserved, hn]

/-! ## The readers never invent a conversation -/

theorem untilSp_sound {c : Token} {s r : List Sym} {x : Chars}
    (h : untilSp g c s = some (x, r)) : s = lit (sp g x) ++ .ctrl c :: r := by
  unfold untilSp at h
  obtain ⟨⟨y, r'⟩, hy, h⟩ := Option.bind_eq_some_iff.mp h
  obtain ⟨z, hz, e⟩ := Option.map_eq_some_iff.mp h
  simp only [Prod.mk.injEq] at e
  obtain ⟨rfl, rfl⟩ := e
  rw [untilCtrl_sound hy, sp_unsp g _ _ hz]

/-- The symbols of an assistant turn's calls: none, or `[TOOL_CALLS]` and the JSON list. -/
@[expose] def callsSymsV3 : List MCall → List Sym
  | [] => []
  | cs => .ctrl g.ids.calls :: lit (sp g (callsJson cs))

@[simp] theorem callsSymsV3_nil : callsSymsV3 g [] = [] := rfl

@[simp] theorem callsSymsV3_cons (k : MCall) (ks : List MCall) :
    callsSymsV3 g (k :: ks) = .ctrl g.ids.calls :: lit (sp g (callsJson (k :: ks))) := rfl

theorem syms_assistantV3 (p : Chars) (cs : List MCall) (o : Nat) :
    syms (turnItemsV3 g (.assistant (.text p) cs o)) =
      lit (sp g p) ++ (callsSymsV3 g cs ++ [.ctrl g.ids.eos]) := by
  cases cs <;> simp [turnItemsV3, spPay, callsSymsV3]

theorem unlayoutCallsV3_sound {p : Chars} {s r : List Sym} {cs : List MCall}
    (h : unlayoutCallsV3 g p s = some (cs, r)) :
    (cs = [] ∧ r = s) ∨
      (p = [] ∧ cs ≠ [] ∧ s = .ctrl g.ids.calls :: (lit (sp g (callsJson cs)) ++ r)) := by
  rcases s with _ | ⟨t | ch | t, s⟩
  · simp only [unlayoutCallsV3, Option.some.injEq, Prod.mk.injEq] at h
    exact .inl ⟨h.1.symm, h.2.symm⟩
  rotate_left
  · simp only [unlayoutCallsV3, Option.some.injEq, Prod.mk.injEq] at h
    exact .inl ⟨h.1.symm, h.2.symm⟩
  · simp only [unlayoutCallsV3, Option.some.injEq, Prod.mk.injEq] at h
    exact .inl ⟨h.1.symm, h.2.symm⟩
  unfold unlayoutCallsV3 at h
  try dsimp only at h
  by_cases ht : t = g.ids.calls
  rotate_left
  · rw [if_neg ht] at h
    simp only [Option.some.injEq, Prod.mk.injEq] at h
    exact .inl ⟨h.1.symm, h.2.symm⟩
  rw [if_pos ht] at h
  subst ht
  have e0 := takeText_spec s
  generalize takeText s = x at h e0
  obtain ⟨y, z⟩ := x
  try dsimp only at h e0
  obtain ⟨body, hb, h⟩ := Option.bind_eq_some_iff.mp h
  split at h
  · rename_i b
    by_cases hp : p.isEmpty = true
    · rw [if_pos hp] at h
      obtain ⟨cs', hcs, h⟩ := Option.bind_eq_some_iff.mp h
      by_cases hj : callsJson cs' = '[' :: b
      · rw [if_pos hj] at h
        simp only [Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl⟩ := h
        obtain ⟨k, ks, rfl⟩ := unCallsJson_cons _ _ _ hcs
        refine .inr ⟨List.isEmpty_iff.mp hp, List.cons_ne_nil _ _, ?_⟩
        rw [hj, sp_unsp g _ _ hb, e0]
      · rw [if_neg hj] at h
        cases h
    · rw [if_neg hp] at h
      cases h
  · cases h

theorem unlayoutAssistantV3_sound {s r : List Sym} {a : MTurn}
    (h : unlayoutAssistantV3 g s = some (a, r)) : syms (turnItemsV3 g a) ++ r = s := by
  unfold unlayoutAssistantV3 at h
  have e0 := takeText_spec s
  generalize takeText s = x at h e0
  obtain ⟨y, z⟩ := x
  try dsimp only at h e0
  obtain ⟨p, hp, h⟩ := Option.bind_eq_some_iff.mp h
  obtain ⟨⟨cs, s2⟩, hc, h⟩ := Option.bind_eq_some_iff.mp h
  try dsimp only at h
  rcases s2 with _ | ⟨e | ch | e, rest⟩
  · simp at h
  · try dsimp only at h
    by_cases he : e = g.ids.eos
    · rw [if_pos he] at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      subst he
      rw [syms_assistantV3, ← e0, ← sp_unsp g _ _ hp]
      rcases unlayoutCallsV3_sound g hc with ⟨rfl, hz⟩ | ⟨rfl, hne, hz⟩
      · simp [hz, callsSymsV3_nil]
      · obtain ⟨k, ks, rfl⟩ := List.exists_cons_of_ne_nil hne
        simp [hz, callsSymsV3_cons]
    · rw [if_neg he] at h
      cases h
  · simp at h
  · simp at h

theorem unlayoutTurnsV3_sound : ∀ n s ts, unlayoutTurnsV3 g n s = some ts →
    syms (ts.flatMap (turnItemsV3 g)) = s := by
  intro n
  induction n with
  | zero =>
    intro s ts h
    rcases s with _ | ⟨x, s⟩
    · simp only [unlayoutTurnsV3, Option.some.injEq] at h
      subst h
      rfl
    · simp [unlayoutTurnsV3] at h
  | succ n ih =>
    intro s ts h
    have asst : ∀ s', (unlayoutAssistantV3 g s').bind (fun (a, r) =>
        (unlayoutTurnsV3 g n r).map (a :: ·)) = some ts →
          syms (ts.flatMap (turnItemsV3 g)) = s' := by
      intro s' h
      obtain ⟨⟨a, r⟩, ha, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [List.flatMap_cons, syms_append, ih _ _ hts]
      exact unlayoutAssistantV3_sound g ha
    rcases s with _ | ⟨t | ch | t, s⟩
    · simp only [unlayoutTurnsV3, Option.some.injEq] at h
      subst h
      rfl
    rotate_left
    · exact asst _ h
    · exact asst _ h
    unfold unlayoutTurnsV3 at h
    try dsimp only at h
    by_cases h1 : t = g.ids.tools
    · rw [if_pos h1] at h
      subst h1
      obtain ⟨⟨j, r⟩, hj, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      rcases r with _ | ⟨i | ch | i, r2⟩
      · simp at h
      · try dsimp only at h
        by_cases hi : i = g.ids.inst
        · rw [if_pos hi] at h
          subst hi
          obtain ⟨⟨x, r3⟩, hx, h⟩ := Option.bind_eq_some_iff.mp h
          try dsimp only at h
          obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
          rw [List.flatMap_cons, syms_append, ih _ _ hts, untilSp_sound g hj,
            untilSp_sound g hx]
          simp [turnItemsV3, spPay]
        · rw [if_neg hi] at h
          cases h
      · simp at h
      · simp at h
    rw [if_neg h1] at h
    by_cases h2 : t = g.ids.inst
    · rw [if_pos h2] at h
      subst h2
      obtain ⟨⟨x, r⟩, hx, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [List.flatMap_cons, syms_append, ih _ _ hts, untilSp_sound g hx]
      simp [turnItemsV3, spPay]
    rw [if_neg h2] at h
    by_cases h3 : t = g.ids.results
    · rw [if_pos h3] at h
      subst h3
      obtain ⟨⟨x, r⟩, hx, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [List.flatMap_cons, syms_append, ih _ _ hts, untilSp_sound g hx]
      simp [turnItemsV3, spPay]
    rw [if_neg h3] at h
    exact asst _ h

/-- What the v3 reader returns lays out to its input. -/
theorem layout_unlayoutV3 (s : List Sym) (q : MConv) (h : unlayoutV3 g s = some q) :
    syms (layoutV3 g q) = s := by
  rcases s with _ | ⟨b | ch | b, rest⟩
  · simp [unlayoutV3] at h
  rotate_left
  · simp [unlayoutV3] at h
  · simp [unlayoutV3] at h
  unfold unlayoutV3 at h
  try dsimp only at h
  by_cases hb : b = g.ids.bos
  · rw [if_pos hb] at h
    subst hb
    obtain ⟨ts, hts, rfl⟩ := Option.map_eq_some_iff.mp h
    simp [layoutV3, unlayoutTurnsV3_sound g _ _ _ hts]
  · rw [if_neg hb] at h
    cases h

end Verified.Mistral

end
