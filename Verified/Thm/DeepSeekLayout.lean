module

public import Verified.Spec.DeepSeek
public import Verified.Thm.QwenLayout

public section

/-!
# Layout lemmas of the DeepSeek-R1 family

Every control token a DeepSeek-R1 layout places is one of the format's control tokens
(`ctrls_layout`), and owners never reach the symbols (`syms_layout_erase`). The generic item
lemmas are those of `Thm/QwenLayout.lean` (`mem_ctrls_syms`, …) and `Thm/Items.lean`
(`fa_append`, …).
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- The control tokens an item may carry are the format's. -/
@[expose] def CtlOk (it : Item) : Prop := ∀ x ∈ ctrls it.piece.syms, x ∈ f.ids.ctrls

theorem ctlOk_ctl {t : Token} (h : t ∈ f.ids.ctrls) (o : Nat) (l : Bool) :
    CtlOk f (ctl t o l) := by
  simp [CtlOk, ctl, Piece.syms, Qwen.ctrls_ctrl, h]

theorem ctlOk_txt (cs : Chars) (o : Nat) (l : Bool) : CtlOk f (txt cs o l) := by
  simp [CtlOk, txt, Piece.syms, Qwen.ctrls_map_ch]

theorem ctlOk_pay (p : LPay) (o : Nat) (l : Bool) : CtlOk f (pay p o l) := by
  cases p <;> simp [CtlOk, pay, Piece.syms, Qwen.ctrls_map_ch, Qwen.ctrls_map_tok]

theorem ctlOk_promptItems (a : Bool) (o : Nat) : ∀ it ∈ promptItems f a o, CtlOk f it := by
  intro it h
  simp only [promptItems, List.mem_singleton] at h
  subst h
  apply ctlOk_ctl
  cases a <;> simp [DsIds.ctrls]

/-- After tool results the generation prompt is its header alone. -/
theorem genItems_true (o : Nat) : genItems f true o = promptItems f true o := by
  simp [genItems, thinkOpen]

/-- Without `promptThink` the generation prompt is its header. -/
theorem genItems_of_not (hp : f.promptThink = false) (a : Bool) (o : Nat) :
    genItems f a o = promptItems f a o := by
  simp [genItems, thinkOpen, hp]

/-- With `promptThink` the generation prompt is `'<｜Assistant｜><think>\n'`. -/
theorem genItems_think (hp : f.promptThink = true) (o : Nat) :
    genItems f false o = [ctl f.ids.assistant o false, ctl f.ids.think.1 o false,
      txt ['\n'] o false] := by
  simp [genItems, thinkOpen, hp, promptItems]

/-- The symbols of the generation prompt: its header, then those of `thinkOpen`. -/
theorem syms_genItems_eq (a : Bool) (o : Nat) :
    syms (genItems f a o) =
      .ctrl (if a then f.ids.outputsEnd else f.ids.assistant) :: syms (thinkOpen f a o) := by
  simp [genItems, promptItems, ctl, Piece.syms]

theorem ctlOk_genItems (a : Bool) (o : Nat) : ∀ it ∈ genItems f a o, CtlOk f it := by
  simp only [genItems, fa_append]
  refine ⟨ctlOk_promptItems f a o, ?_⟩
  cases hp : f.promptThink <;> cases a <;>
    simp [thinkOpen, hp, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, DsIds.ctrls]

theorem ctlOk_thinkItems (o : Nat) (th : Option LPay) : ∀ it ∈ thinkItems f o th, CtlOk f it := by
  cases th with
  | none => simp [thinkItems]
  | some r =>
    simp [thinkItems, or_imp, forall_and, ctlOk_txt, ctlOk_pay, ctlOk_ctl, DsIds.ctrls]

theorem ctlOk_callsItems (nl : Bool) (o : Nat) (ks : List Call) :
    ∀ it ∈ callsItems f nl o ks, CtlOk f it := by
  induction ks generalizing nl with
  | nil => simp [callsItems]
  | cons k ks ih =>
    simp only [callsItems, fa_append]
    refine ⟨?_, ih true⟩
    unfold callItems
    split <;> simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, DsIds.ctrls]

theorem ctlOk_turnItems (t : DTurn) : ∀ it ∈ turnItems f t, CtlOk f it := by
  cases t with
  | user p o => simp [turnItems, or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls]
  | assistant a th c o =>
    simp only [turnItems, fa_append]
    exact ⟨⟨ctlOk_promptItems f a o, ctlOk_thinkItems f o th⟩,
      by simp [or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls]⟩
  | calls h th ks o =>
    simp only [turnItems, fa_append]
    refine ⟨?_, by simp [or_imp, forall_and, ctlOk_ctl, DsIds.ctrls]⟩
    cases h with
    | some c =>
      simp only [fa_append]
      exact ⟨⟨⟨by simp [ctlOk_ctl, DsIds.ctrls], ctlOk_thinkItems f o th⟩,
        by simp [or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls]⟩,
        ctlOk_callsItems f false o ks⟩
    | none =>
      simp only [fa_append]
      exact ⟨ctlOk_thinkItems f o th, ctlOk_callsItems f true o ks⟩
  | results b rs =>
    simp only [turnItems, fa_append]
    refine ⟨?_, fun it h => ?_⟩
    · split <;> simp [ctlOk_ctl, DsIds.ctrls]
    · obtain ⟨r, -, h⟩ := List.mem_flatMap.mp h
      simp only [resultItems, List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl | rfl
      · exact ctlOk_ctl f (by simp [DsIds.ctrls]) _ _
      · exact ctlOk_pay f _ _ _
      · exact ctlOk_ctl f (by simp [DsIds.ctrls]) _ _
  | sampled a ts o =>
    simp only [turnItems, fa_append]
    refine ⟨ctlOk_genItems f a o, ?_⟩
    intro it h
    simp only [List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl
    · simp [CtlOk, Piece.syms, Qwen.ctrls_map_tok]
    · exact ctlOk_ctl f (by simp [DsIds.ctrls]) _ _

/-- Where an item of a layout comes from. -/
theorem mem_layout {q : DConv} {it : Item} (h : it ∈ layout f q) :
    it = ctl f.ids.bos q.sysOwner false ∨ it = pay q.system q.sysOwner false ∨
      (∃ t ∈ q.turns, it ∈ turnItems f t) ∨ ∃ a o, it ∈ genItems f a o := by
  unfold layout at h
  rcases List.mem_append.mp h with h | h
  · rcases List.mem_append.mp h with h | h
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with h | h
      · exact Or.inl h
      · exact Or.inr (Or.inl h)
    · exact Or.inr (Or.inr (Or.inl (List.mem_flatMap.mp h)))
  · split at h
    · exact Or.inr (Or.inr (Or.inr ⟨_, _, h⟩))
    · cases h

/-- Every control token of a layout is one of the format's control tokens. -/
theorem ctrls_layout (q : DConv) : ∀ t ∈ ctrls (syms (layout f q)), t ∈ f.ids.ctrls := by
  intro t ht
  obtain ⟨it, hit, h⟩ := Qwen.mem_ctrls_syms ht
  rcases mem_layout f hit with rfl | rfl | ⟨u, -, hu⟩ | ⟨a, o, hu⟩
  · exact ctlOk_ctl f (by simp [DsIds.ctrls]) _ _ t h
  · exact ctlOk_pay f _ _ _ t h
  · exact ctlOk_turnItems f u it hu t h
  · exact ctlOk_genItems f a o it hu t h

/-! ## Owners never reach the symbols -/

theorem syms_pay (p : LPay) (o o' : Nat) (l l' : Bool) :
    (pay p o l).piece.syms = (pay p o' l').piece.syms := by
  cases p <;> rfl

theorem syms_thinkItems (o o' : Nat) (th : Option LPay) :
    syms (thinkItems f o th) = syms (thinkItems f o' th) := by
  cases th with
  | none => rfl
  | some r => simp [thinkItems, ctl, txt, syms_pay r o o' true true]

theorem syms_callsItems (nl : Bool) (o o' : Nat) (ks : List Call) :
    syms (callsItems f nl o ks) = syms (callsItems f nl o' ks) := by
  induction ks generalizing nl with
  | nil => rfl
  | cons k ks ih =>
    simp only [callsItems, syms_append, ih]
    congr 1
    unfold callItems
    split <;> simp [ctl, txt]

theorem syms_promptItems (a : Bool) (o o' : Nat) :
    syms (promptItems f a o) = syms (promptItems f a o') := by
  simp [promptItems, ctl]

theorem syms_genItems (a : Bool) (o o' : Nat) :
    syms (genItems f a o) = syms (genItems f a o') := by
  cases hp : f.promptThink <;> cases a <;> simp [genItems, thinkOpen, hp, promptItems, ctl, txt]

theorem syms_resultsItems (rs : List (LPay × Nat)) :
    syms (rs.flatMap (resultItems f)) =
      syms ((rs.map fun r => (r.1, 0)).flatMap (resultItems f)) := by
  induction rs with
  | nil => rfl
  | cons r rs ih =>
    simp only [List.flatMap_cons, List.map_cons, syms_append, ih]
    congr 1
    simp [resultItems, ctl, syms_pay r.1 r.2 0 false false]

theorem syms_turnItems_erase (t : DTurn) : syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t with
  | user p o => simp [DTurn.erase, turnItems, ctl, syms_pay p 0 o false false]
  | assistant a th c o =>
    simp [DTurn.erase, turnItems, ctl, syms_promptItems f a 0 o, syms_thinkItems f 0 o th,
      syms_pay c 0 o true true]
  | calls h th ks o =>
    cases h with
    | some c =>
      simp [DTurn.erase, turnItems, ctl, syms_thinkItems f 0 o th, syms_pay c 0 o true true,
        syms_callsItems f false 0 o ks]
    | none =>
      simp [DTurn.erase, turnItems, ctl, syms_thinkItems f 0 o th, syms_callsItems f true 0 o ks]
  | results b rs =>
    simp only [DTurn.erase, turnItems, syms_append, ← syms_resultsItems]
    congr 1
    split <;> simp [ctl]
  | sampled a ts o => simp [DTurn.erase, turnItems, ctl, syms_genItems f a 0 o]

theorem syms_flatMap_turnItems_erase (ts : List DTurn) :
    syms ((ts.map DTurn.erase).flatMap (turnItems f)) = syms (ts.flatMap (turnItems f)) := by
  induction ts with
  | nil => rfl
  | cons t ts ih => simp only [List.map_cons, List.flatMap_cons, syms_append, ih,
      syms_turnItems_erase]

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_layout_erase (q : DConv) : syms (layout f q.erase) = syms (layout f q) := by
  obtain ⟨s, so, ts, p⟩ := q
  simp only [layout, DConv.erase, syms_append, syms_flatMap_turnItems_erase]
  congr 1
  · simp [ctl, syms_pay s 0 so false false]
  · cases p with
    | none => rfl
    | some x => simp [syms_genItems f x.1 0 x.2]

end Verified.DeepSeek

end
