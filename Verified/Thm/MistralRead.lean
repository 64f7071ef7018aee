module

public import Verified.Thm.MistralPrefix
public import Verified.Thm.QwenParse

public section

/-!
# The Mistral family: owners and reserved controls

Two fields of `Format.Lawful` for every Mistral format (any ids, version and mode):

* `syms_erase`: erasing owners keeps a layout's symbols (owners are annotations only);
* `ctrl_reserved`: every control token a layout places is one of the named control tokens
  (`MistralIds.named`), so it is reserved;
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

@[simp] theorem syms_ctl (t : Token) (o : Nat) (l : Bool) : (ctl t o l).piece.syms = [.ctrl t] :=
  rfl

@[simp] theorem syms_txt (cs : Chars) (o : Nat) (l : Bool) : (txt cs o l).piece.syms = lit cs :=
  rfl

@[simp] theorem syms_pay_text (cs : Chars) (o : Nat) (l : Bool) :
    (pay (.text cs) o l).piece.syms = lit cs := rfl

@[simp] theorem syms_pay_toks (ts : List Token) (o : Nat) (l : Bool) :
    (pay (.toks ts) o l).piece.syms = ts.map .tok := rfl

theorem syms_flatMap {α : Type} (l : List α) (g : α → List Item) :
    syms (l.flatMap g) = l.flatMap fun x => syms (g x) := by
  induction l with
  | nil => rfl
  | cons x l ih => rw [List.flatMap_cons, syms_append, ih, List.flatMap_cons]

/-! ## Owners -/

theorem syms_callItems (o o' : Nat) (k : MCall) :
    syms (callItems f o k) = syms (callItems f o' k) := by
  obtain ⟨n, a, i⟩ := k
  cases h1 : f.ids.args <;> cases h2 : f.ids.callId <;> cases i <;>
    simp [callItems, h1, h2]

theorem syms_callsItems (o o' : Nat) (cs : List MCall) :
    syms (callsItems f o cs) = syms (callsItems f o' cs) := by
  cases cs with
  | nil => simp [callsItems]
  | cons k ks =>
    cases hv : f.version <;>
      simp [callsItems, hv, syms_flatMap, syms_callItems f o o']

theorem syms_turnItems_erase (t : MTurn) : syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t with
  | system p o => cases p <;> simp [MTurn.erase, turnItems]
  | user j p o => cases j <;> cases p <;> simp [MTurn.erase, turnItems]
  | assistant p cs o => cases p <;> simp [MTurn.erase, turnItems, syms_callsItems f 0 o]
  | result i p o =>
    cases i <;> cases h : f.ids.toolContent <;> cases p <;> simp [MTurn.erase, turnItems, h]
  | sampled ts o => simp [MTurn.erase, turnItems]

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_erase (l : MConv) :
    syms ((format f).layout ((format f).erase l)) = syms ((format f).layout l) := by
  simp only [format, layout, MConv.erase, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItems_erase]

/-! ## Reserved controls -/

/-- The control tokens an item places are named control tokens. -/
@[expose] def CtlOk (it : Item) : Prop := ∀ x ∈ ctrls it.piece.syms, x ∈ f.ids.named

theorem ctlOk_ctl {t : Token} (h : t ∈ f.ids.named) (o : Nat) (l : Bool) :
    CtlOk f (ctl t o l) := by
  simp [CtlOk, Qwen.ctrls_ctrl, h]

theorem ctlOk_txt (cs : Chars) (o : Nat) (l : Bool) : CtlOk f (txt cs o l) := by
  simp [CtlOk]

theorem ctlOk_pay (p : LPay) (o : Nat) (l : Bool) : CtlOk f (pay p o l) := by
  cases p <;> simp [CtlOk, Qwen.ctrls_map_tok]

theorem fa_append {α : Type} {P : α → Prop} {a b : List α} :
    (∀ x ∈ a ++ b, P x) ↔ (∀ x ∈ a, P x) ∧ (∀ x ∈ b, P x) := List.forall_mem_append

theorem ctlOk_callItems (o : Nat) (k : MCall) : ∀ it ∈ callItems f o k, CtlOk f it := by
  obtain ⟨n, a, i⟩ := k
  cases h1 : f.ids.args with
  | none => simp [callItems, h1]
  | some ar =>
    have ha : ar ∈ f.ids.named := by simp [MistralIds.named, h1]
    have hc : f.ids.calls ∈ f.ids.named := by simp [MistralIds.named]
    cases h2 : f.ids.callId with
    | none =>
      cases i <;> simp [callItems, h1, h2, or_imp, forall_and, ctlOk_ctl f ha, ctlOk_ctl f hc,
        ctlOk_txt]
    | some c =>
      have hcc : c ∈ f.ids.named := by simp [MistralIds.named, h2]
      cases i <;> simp [callItems, h1, h2, or_imp, forall_and, ctlOk_ctl f ha, ctlOk_ctl f hc,
        ctlOk_ctl f hcc, ctlOk_txt]

theorem ctlOk_callsItems (o : Nat) (cs : List MCall) : ∀ it ∈ callsItems f o cs, CtlOk f it := by
  have hc : f.ids.calls ∈ f.ids.named := by simp [MistralIds.named]
  intro it hit
  cases cs with
  | nil => simp [callsItems] at hit
  | cons k ks =>
    cases hv : f.version
    all_goals simp only [callsItems, hv] at hit
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
      rcases hit with rfl | rfl
      · exact ctlOk_ctl f hc o true
      · exact ctlOk_txt f _ o true
    all_goals
      obtain ⟨k', -, h⟩ := List.mem_flatMap.mp hit
      exact ctlOk_callItems f o k' it h

theorem ctlOk_turnItems (t : MTurn) : ∀ it ∈ turnItems f t, CtlOk f it := by
  have m : ∀ t ∈ [f.ids.bos, f.ids.eos, f.ids.inst, f.ids.endInst, f.ids.tools, f.ids.endTools,
      f.ids.results, f.ids.endResults, f.ids.calls, f.ids.sysOpen, f.ids.sysClose],
      t ∈ f.ids.named := by
    intro t ht
    unfold MistralIds.named
    exact List.mem_append_left _ (List.mem_append_left _ (List.mem_append_left _ ht))
  simp only [List.mem_cons, List.not_mem_nil, or_false, forall_eq_or_imp, forall_eq] at m
  obtain ⟨_, heos, hinst, hendInst, htools, hendTools, hres, hendRes, _, hso, hsc⟩ := m
  cases t with
  | system p o =>
    simp [turnItems, or_imp, forall_and, ctlOk_ctl f hso, ctlOk_ctl f hsc, ctlOk_pay]
  | user j p o =>
    cases j <;> simp [turnItems, or_imp, forall_and, ctlOk_ctl f hinst, ctlOk_ctl f hendInst,
      ctlOk_ctl f htools, ctlOk_ctl f hendTools, ctlOk_txt, ctlOk_pay]
  | assistant p cs o =>
    simp only [turnItems, fa_append]
    exact ⟨⟨by simp [ctlOk_pay], ctlOk_callsItems f o cs⟩, by simp [ctlOk_ctl f heos]⟩
  | result i p o =>
    cases i with
    | none =>
      simp [turnItems, or_imp, forall_and, ctlOk_ctl f hres, ctlOk_ctl f hendRes, ctlOk_pay]
    | some x =>
      cases h : f.ids.toolContent with
      | none =>
        simp [turnItems, h, or_imp, forall_and, ctlOk_ctl f hres, ctlOk_ctl f hendRes, ctlOk_pay]
      | some tc =>
        have htc : tc ∈ f.ids.named := by simp [MistralIds.named, h]
        simp [turnItems, h, or_imp, forall_and, ctlOk_ctl f hres, ctlOk_ctl f hendRes, ctlOk_pay,
          ctlOk_ctl f htc, ctlOk_txt]
  | sampled ts o =>
    intro it hit
    simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at hit
    rcases hit with rfl | rfl
    · intro x hx
      simp [Piece.syms, Qwen.ctrls_map_tok] at hx
    · exact ctlOk_ctl f heos o true

/-- Every control token of a layout is a named control token. -/
theorem ctrls_layout (l : MConv) : ∀ t ∈ ctrls (syms (layout f l)), t ∈ f.ids.named := by
  intro t ht
  obtain ⟨it, hit, h⟩ := Qwen.mem_ctrls_syms ht
  unfold layout at hit
  rcases List.mem_append.mp hit with hit | hit
  · simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
    subst hit
    simp only [syms_ctl, Qwen.ctrls_ctrl, List.mem_singleton] at h
    subst h
    simp [MistralIds.named]
  · obtain ⟨u, -, hu⟩ := List.mem_flatMap.mp hit
    exact ctlOk_turnItems f u it hu t h

/-- Every control token a layout places is reserved. -/
theorem ctrl_reserved (l : MConv) :
    ∀ t ∈ ctrls (syms ((format f).layout l)), isReserved (format f).reserved t = true := by
  intro t ht
  have h := ctrls_layout f l t ht
  simp [format, isReserved, MistralIds.reserved, h]

end Verified.Mistral

end
