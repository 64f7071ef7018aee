module

public import Verified.Thm.QwenLayout
public import Verified.Thm.QwenLower

public section

/-!
# Owners and loss bits of the Qwen family

The annotations of the items of each turn (`turnItems_ann`, `TurnOf.learned`): only
assistant messages are learned; and the learned tokens of a conversation whose assistant
turns are sampled (`sampled_flat`).
-/

namespace Verified.Qwen

open Verified

/-! ## Annotations of the items -/

section Ann

variable (f : QwenFmt)

/-- The owner of the items of an assistant or sampled turn. -/
@[expose] def asstOwner : QTurn → Option Nat
  | .assistant _ _ _ _ o => some o
  | .sampled _ o => some o
  | _ => none

/-- The annotations of the items of a turn: owned by the message in assistant and sampled
turns, never learned elsewhere. -/
@[expose] def annOk (t : QTurn) (a : Ann) : Prop :=
  match asstOwner t with
  | some o => a.owner = o
  | none => a.learn = false

theorem annOk_none {t : QTurn} {a : Ann} (h : asstOwner t = none) (ha : annOk t a) :
    a.learn = false := by
  unfold annOk at ha
  rw [h] at ha
  exact ha

theorem callItems_owner (s : Bool) (k : Call) (o : Nat) :
    ∀ it ∈ callItems f s k o, it.ann.owner = o := by
  unfold callItems
  split <;> simp [ctl, txt]

theorem callsItems_owner (s : Bool) (o : Nat) (ks : List Call) :
    ∀ it ∈ callsItems f s o ks, it.ann.owner = o := by
  induction ks generalizing s with
  | nil => simp [callsItems]
  | cons k ks ih =>
    simp only [callsItems, fa_append]
    exact ⟨callItems_owner f s k o, ih true⟩

theorem resultItems_learn (r : LPay × Nat) : ∀ it ∈ resultItems f r, it.ann.learn = false := by
  unfold resultItems
  split <;> simp [txt, ctl, pay_ann]

theorem flatMap_resultItems_learn (rs : List (LPay × Nat)) :
    ∀ it ∈ rs.flatMap (resultItems f), it.ann.learn = false := by
  intro it h
  obtain ⟨r, -, h⟩ := List.mem_flatMap.mp h
  exact resultItems_learn f r it h

theorem promptItems_ann (o : Nat) : ∀ it ∈ promptItems f o, it.ann = ⟨o, false⟩ := by
  unfold promptItems
  split <;> simp [txt, ctl]

theorem promptItems_learn (o : Nat) : ∀ it ∈ promptItems f o, it.ann.learn = false :=
  fun it h => by rw [promptItems_ann f o it h]

theorem promptItems_owner (o : Nat) : ∀ it ∈ promptItems f o, it.ann.owner = o :=
  fun it h => by rw [promptItems_ann f o it h]

/-- Who owns the items of a turn, and which are learned. -/
theorem turnItems_ann (t : QTurn) : ∀ it ∈ turnItems f t, annOk t it.ann := by
  cases t with
  | plain r p o => simp [turnItems, footer, annOk, asstOwner, ctl, txt, pay_ann, or_imp, forall_and]
  | toolsSystem s ts o =>
    cases s <;> simp [turnItems, footer, annOk, asstOwner, ctl, txt, pay_ann, or_imp, forall_and]
  | assistant th c s ks o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨⟨⟨?_, ?_⟩, ?_⟩, callsItems_owner f s o ks⟩, ?_⟩
    · simp [annOk, asstOwner, ctl, txt]
    · split <;> simp [annOk, asstOwner, ctl, txt, pay_ann]
    · simp [annOk, asstOwner, pay_ann]
    · simp [annOk, asstOwner, footer, ctl, txt]
  | toolGroup rs =>
    simp only [turnItems, fa_append]
    refine ⟨⟨?_, flatMap_resultItems_learn f rs⟩, ?_⟩
    · simp [annOk, asstOwner, ctl, txt]
    · simp [annOk, asstOwner, footer, ctl, txt]
  | sampled ts o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨promptItems_owner f o, ?_⟩, ?_⟩
    · simp [annOk, asstOwner]
    · simp [annOk, asstOwner, footer, ctl, txt]

/-- The turn of a message: a learned item is owned by an assistant message. -/
theorem TurnOf.learned {m : Message} {i : Nat} {t : QTurn} {a : Ann} (h : TurnOf m i t)
    (ha : annOk t a) (hl : a.learn = true) : a.owner = i ∧ m.role = .assistant := by
  cases t with
  | plain r p o =>
    have := annOk_none rfl ha
    rw [hl] at this
    cases this
  | toolsSystem s ts o => exact h.elim
  | assistant th c s ks o => exact ⟨ha.trans h.1, h.2.1⟩
  | toolGroup rs => exact h.elim
  | sampled ts o => exact ⟨ha.trans h.1, h.2.1⟩

/-- The system turn is not an assistant turn. -/
theorem systemTurn_asst {ms : List Message} {tools : Option (List Json)} {st : List QTurn}
    (h : systemTurn f ms tools = some st) : ∀ t ∈ st, asstOwner t = none := by
  unfold systemTurn at h
  obtain ⟨g, -, rfl⟩ := Option.map_eq_some_iff.mp h
  intro t ht
  dsimp only at ht
  repeat' split at ht
  all_goals first
    | (cases ht; done)
    | (rcases List.mem_singleton.mp ht with rfl; rfl)

end Ann

/-! ## Learned tokens of conversations of sampled turns -/

section Sampled

variable (f : QwenFmt)

/-- What a function of the turns collects from a pre-turn (nothing from a result). -/
@[expose] def preFlat {β : Type} (G : QTurn → List β) : Pre → List β
  | .turn t => G t
  | .result _ _ => []

/-- Grouping keeps what a function of the turns that ignores tool groups collects. -/
theorem flatMap_group {β : Type} (G : QTurn → List β) (hG : ∀ rs, G (.toolGroup rs) = []) :
    ∀ pre : List Pre, (group pre).flatMap G = pre.flatMap (preFlat G)
  | [] => rfl
  | .turn t :: ps => by
    simp only [group, List.flatMap_cons, flatMap_group G hG ps, preFlat]
  | .result p o :: ps => by
    have ih := flatMap_group G hG ps
    simp only [group, List.flatMap_cons, preFlat, List.nil_append]
    split
    · rename_i rs ts hg
      rw [hg] at ih
      simp only [List.flatMap_cons, hG, List.nil_append] at ih ⊢
      exact ih
    · simp only [List.flatMap_cons, hG, List.nil_append]
      exact ih

/-- The learned pieces of a lowering, message by message. -/
theorem lowerMsgs_flat (G : QTurn → List (Token × Nat)) (H : Message × Nat → List (Token × Nat))
    (hGH : ∀ m i t, (m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      TurnOf m i t → G t = H (m, i))
    (hH0 : ∀ m i, (m.role = .system ∨ m.role = .tool) → H (m, i) = []) {n q : Nat} :
    ∀ (ms : List Message) (i : Nat) (pre : List Pre), lowerMsgs f n q i ms = some pre →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      pre.flatMap (preFlat G) = (ms.zipIdx i).flatMap H
  | [], i, pre, h, _ => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    rfl
  | m :: ms, i, pre, h, hs => by
    simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    rw [List.flatMap_append, List.zipIdx_cons, List.flatMap_cons,
      lowerMsgs_flat G H hGH hH0 ms (i + 1) b hb (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))]
    congr 1
    rcases lowerMsg_shape f ha with ⟨rfl, -, hr⟩ | ⟨p, rfl, hr⟩ | ⟨t, rfl, ht⟩
    · exact (hH0 m i (Or.inl hr)).symm
    · simp only [List.flatMap_cons, List.flatMap_nil, preFlat, List.append_nil]
      exact (hH0 m i (Or.inr hr)).symm
    · simp only [List.flatMap_cons, List.flatMap_nil, preFlat, List.append_nil]
      exact hGH m i t (hs m List.mem_cons_self) ht

/-- The learned items of a sampled turn are not text. -/
theorem sampled_no_text (ts : List Token) (o : Nat) :
    ∀ it ∈ turnItems f (.sampled ts o), it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
  simp only [turnItems, fa_append]
  refine ⟨⟨fun it h hl => ?_, ?_⟩, ?_⟩
  · rw [promptItems_learn f o it h] at hl
    cases hl
  · simp
  · simp [footer, ctl, txt]

/-- The learned pieces of a layout of sampled turns. -/
theorem sampled_flat (F : Item → List (Token × Nat))
    (hF0 : ∀ it, it.ann.learn = false → F it = [])
    (hFt : ∀ ts o, F ⟨.toks ts, ⟨o, true⟩⟩ = ts.map (·, o))
    (hFc : ∀ t o, F ⟨.ctrl t, ⟨o, true⟩⟩ = [(t, o)])
    {ms : List Message} {tools : Option (List Json)} {st : List QTurn} {pre : List Pre}
    {n q : Nat} (hst : systemTurn f ms tools = some st) (hpre : lowerMsgs f n q 0 ms = some pre)
    (hs : ∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) (p : Option Nat)
    (H : Message × Nat → List (Token × Nat))
    (hH1 : ∀ m i, m.role ≠ .assistant → H (m, i) = [])
    (hH2 : ∀ m i ts, m.role = .assistant → m.blocks = [.sampled ts] →
      H (m, i) = (ts ++ [f.ids.imEnd]).map (·, i)) :
    (layout f ⟨st ++ group pre, p⟩).flatMap F = ms.zipIdx.flatMap H := by
  have hT : ∀ t, asstOwner t = none → (turnItems f t).flatMap F = [] := fun t ht =>
    List.flatMap_eq_nil_iff.mpr fun it hit => hF0 it (annOk_none ht (turnItems_ann f t it hit))
  have hP : (layout f ⟨[], p⟩).flatMap F = [] := by
    apply List.flatMap_eq_nil_iff.mpr
    intro it hit
    apply hF0
    rcases mem_layout f hit with ⟨t, ht, -⟩ | ⟨o, hit⟩
    · cases ht
    · exact promptItems_learn f o it hit
  have hS : st.flatMap (fun t => (turnItems f t).flatMap F) = [] :=
    List.flatMap_eq_nil_iff.mpr fun t ht => hT t (systemTurn_asst f hst t ht)
  rw [layout_eq f, List.flatMap_append, hP, List.append_nil, List.flatMap_append,
    List.flatMap_append, List.flatMap_assoc, List.flatMap_assoc, hS, List.nil_append,
    flatMap_group (fun t => (turnItems f t).flatMap F) (fun rs => hT _ rfl) pre]
  refine lowerMsgs_flat f _ H ?_ (fun m i h => hH1 m i (by rcases h with h | h <;> rw [h] <;> nofun))
    ms 0 pre hpre hs
  intro m i t hm ht
  cases t with
  | plain r p o => exact (hT _ rfl).trans (hH1 m i ht.2.1).symm
  | toolsSystem s ts o => exact ht.elim
  | assistant th c s ks o =>
    obtain ⟨ts, hts⟩ := hm ht.2.1
    exact absurd hts (ht.2.2 ts)
  | toolGroup rs => exact ht.elim
  | sampled ts o =>
    obtain ⟨rfl, hr, hb⟩ := ht
    rw [hH2 m o ts hr hb]
    simp [turnItems, footer, ctl, txt, List.flatMap_eq_nil_iff.mpr fun it h =>
      hF0 it (promptItems_learn f o it h), hFt, hFc, hF0]

end Sampled

end Verified.Qwen

end
