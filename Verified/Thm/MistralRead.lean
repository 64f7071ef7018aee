module

public import Verified.Thm.MistralPrefix
public import Verified.Thm.QwenParse

public section

/-!
# The Mistral family: owners, reserved controls, and a parser that invents nothing

Three fields of `Format.Lawful` for every Mistral format (any ids, version and mode):

* `syms_erase`: erasing owners keeps a layout's symbols (owners are annotations only);
* `ctrl_reserved`: every control token a layout places is one of the named control tokens
  (`MistralIds.named`), so it is reserved;
* `layout_unlayout`: `unlayout` never invents a conversation: whatever it returns lays out to
  exactly the symbols it read. Each reader (`untilCtrl`, `unlayoutCalls`, `unlayoutCallsV7`,
  `unlayoutAssistant`, `unlayoutTurns`) is proved sound on its own: it returns a value and the
  rest of the stream, and the value's symbols followed by the rest are the stream it was
  given. The v7 reader needs no property of the JSON it reads: it re-checks that the calls it
  read write the text it was given.
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

/-! ## Soundness of the readers -/

theorem untilCtrl_sound {c : Token} {s r : List Sym} {x : Chars}
    (h : untilCtrl c s = some (x, r)) : s = lit x ++ .ctrl c :: r := by
  unfold untilCtrl at h
  have e0 := takeText_spec s
  generalize takeText s = r0 at h e0
  obtain ⟨y, z⟩ := r0
  rcases z with _ | ⟨t | ch | t, rest⟩
  · simp at h
  · try dsimp only at h
    by_cases ht : t = c
    · rw [if_pos ht] at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      subst ht
      exact e0.symm
    · rw [if_neg ht] at h
      cases h
  · simp at h
  · simp at h

theorem syms_callItems_id {a c : Token} (ha : f.ids.args = some a) (hc : f.ids.callId = some c)
    (o : Nat) (n x i : Chars) :
    syms (callItems f o (n, x, some i)) =
      .ctrl f.ids.calls :: (lit n ++ .ctrl c :: (lit i ++ .ctrl a :: lit x)) := by
  simp [callItems, ha, hc]

theorem syms_callItems_none {a : Token} (ha : f.ids.args = some a) (o : Nat) (n x : Chars) :
    syms (callItems f o (n, x, none)) = .ctrl f.ids.calls :: (lit n ++ .ctrl a :: lit x) := by
  cases hc : f.ids.callId <;> simp [callItems, ha, hc]

theorem unlayoutCalls_sound (o : Nat) :
    ∀ n s cs r, unlayoutCalls f n s = some (cs, r) → syms (cs.flatMap (callItems f o)) ++ r = s := by
  intro n
  induction n with
  | zero =>
    intro s cs r h
    simp only [unlayoutCalls, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    rfl
  | succ n ih =>
    intro s cs r h
    rcases s with _ | ⟨t | ch | t, s⟩
    · unfold unlayoutCalls at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl
    rotate_left
    · unfold unlayoutCalls at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl
    · unfold unlayoutCalls at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl
    unfold unlayoutCalls at h
    try dsimp only at h
    split at h
    rotate_left
    · simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl
    rename_i hc
    simp only [Bool.and_eq_true, decide_eq_true_eq] at hc
    obtain ⟨ht, -⟩ := hc
    subst ht
    split at h
    · -- v11: `[TOOL_CALLS]` name `[CALL_ID]` id `[ARGS]` arguments
      obtain ⟨⟨name, s2⟩, h1, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨⟨i, s3⟩, h2, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      have e4 := takeText_spec s3
      generalize takeText s3 = r3 at h e4
      obtain ⟨x, s5⟩ := r3
      try dsimp only at h e4
      split at h
      · cases h
      obtain ⟨⟨cs', s4⟩, h3, he⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at he
      obtain ⟨rfl, rfl⟩ := he
      have e1 := untilCtrl_sound h1
      have e2 := untilCtrl_sound h2
      have e3 := ih _ _ _ h3
      subst e1 e2 e4 e3
      simp only [List.flatMap_cons, syms_append, syms_callItems_id f (by assumption) (by assumption), List.cons_append,
        List.append_assoc]
    · -- v13: `[TOOL_CALLS]` name `[ARGS]` arguments
      obtain ⟨⟨name, s2⟩, h1, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      have e4 := takeText_spec s2
      generalize takeText s2 = r3 at h e4
      obtain ⟨x, s5⟩ := r3
      try dsimp only at h e4
      split at h
      · cases h
      obtain ⟨⟨cs', s4⟩, h3, he⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at he
      obtain ⟨rfl, rfl⟩ := he
      have e1 := untilCtrl_sound h1
      have e3 := ih _ _ _ h3
      subst e1 e4 e3
      simp only [List.flatMap_cons, syms_append, syms_callItems_none f (by assumption), List.cons_append,
        List.append_assoc]
    · simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl

theorem unCallsJson_cons : ∀ n cs ks, unCallsJson n cs = some ks → ∃ k ks', ks = k :: ks' := by
  intro n cs ks h
  cases n with
  | zero => simp [unCallsJson] at h
  | succ n =>
    simp only [unCallsJson, Option.bind_eq_some_iff] at h
    obtain ⟨⟨k, r⟩, -, h⟩ := h
    try dsimp only at h
    split at h
    · cases h
      exact ⟨_, _, rfl⟩
    · obtain ⟨ks', -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨_, _, rfl⟩
    · cases h

theorem callsItems_v7 (hv : f.version = .v7) (o : Nat) (k : MCall) (ks : List MCall) :
    callsItems f o (k :: ks) = [ctl f.ids.calls o true, txt (callsJson (k :: ks)) o true] := by
  simp [callsItems, hv]

theorem callsItems_of_ne (hv : f.version ≠ .v7) (o : Nat) (cs : List MCall) :
    callsItems f o cs = cs.flatMap (callItems f o) := by
  cases cs with
  | nil => simp [callsItems]
  | cons k ks =>
    cases h : f.version with
    | v7 => exact absurd h hv
    | v11 => simp [callsItems, h]
    | v13 => simp [callsItems, h]

theorem unlayoutCallsV7_sound (hv : f.version = .v7) (o : Nat) {s r : List Sym}
    {cs : List MCall} (h : unlayoutCallsV7 f s = some (cs, r)) :
    syms (callsItems f o cs) ++ r = s := by
  rcases s with _ | ⟨t | ch | t, s⟩
  · simp only [unlayoutCallsV7, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    simp [callsItems]
  rotate_left
  · simp only [unlayoutCallsV7, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    simp [callsItems]
  · simp only [unlayoutCallsV7, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    simp [callsItems]
  unfold unlayoutCallsV7 at h
  try dsimp only at h
  by_cases ht : t = f.ids.calls
  rotate_left
  · rw [if_neg ht] at h
    simp only [Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    simp [callsItems]
  rw [if_pos ht] at h
  subst ht
  have e0 := takeText_spec s
  generalize takeText s = x at h e0
  split at h
  · rename_i body rest
    obtain ⟨cs', hcs, h⟩ := Option.bind_eq_some_iff.mp h
    by_cases hj : callsJson cs' = '[' :: body
    · rw [if_pos hj] at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      obtain ⟨k, ks, rfl⟩ := unCallsJson_cons _ _ _ hcs
      rw [callsItems_v7 f hv, ← e0]
      simp only [List.cons_append, syms_cons, syms_ctl, syms_txt, syms_nil, List.append_nil]
      rw [hj]
      simp
    · rw [if_neg hj] at h
      cases h
  · cases h

theorem unlayoutAssistant_sound {s r : List Sym} {t : MTurn}
    (h : unlayoutAssistant f s = some (t, r)) : syms (turnItems f t) ++ r = s := by
  unfold unlayoutAssistant at h
  have e0 := takeText_spec s
  generalize takeText s = x at h e0
  obtain ⟨y, z⟩ := x
  try dsimp only at h e0
  obtain ⟨⟨cs, s2⟩, hc, h⟩ := Option.bind_eq_some_iff.mp h
  try dsimp only at h
  have e1 : syms (callsItems f 0 cs) ++ s2 = z := by
    by_cases hv : f.version = .v7
    · rw [if_pos hv] at hc
      exact unlayoutCallsV7_sound f hv 0 hc
    · rw [if_neg hv] at hc
      rw [callsItems_of_ne f hv]
      exact unlayoutCalls_sound f 0 _ _ _ _ hc
  rcases s2 with _ | ⟨e | ch | e, rest⟩
  · simp at h
  · try dsimp only at h
    by_cases he : e = f.ids.eos
    · rw [if_pos he] at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      subst he e0 e1
      simp [turnItems]
    · rw [if_neg he] at h
      cases h
  · simp at h
  · simp at h

theorem unlayoutTurns_sound : ∀ n s ts, unlayoutTurns f n s = some ts →
    syms (ts.flatMap (turnItems f)) = s := by
  intro n
  induction n with
  | zero =>
    intro s ts h
    rcases s with _ | ⟨x, s⟩
    · simp only [unlayoutTurns, Option.some.injEq] at h
      subst h
      rfl
    · simp [unlayoutTurns] at h
  | succ n ih =>
    intro s ts h
    have asst : ∀ s', (unlayoutAssistant f s').bind (fun (a, r) =>
        (unlayoutTurns f n r).map (a :: ·)) = some ts → syms (ts.flatMap (turnItems f)) = s' := by
      intro s' h
      obtain ⟨⟨a, r⟩, ha, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [List.flatMap_cons, syms_append, ih _ _ hts]
      exact unlayoutAssistant_sound f ha
    rcases s with _ | ⟨t | ch | t, s⟩
    · simp only [unlayoutTurns, Option.some.injEq] at h
      subst h
      rfl
    rotate_left
    · exact asst _ h
    · exact asst _ h
    unfold unlayoutTurns at h
    try dsimp only at h
    by_cases h1 : t = f.ids.sysOpen
    · rw [if_pos h1] at h
      subst h1
      obtain ⟨⟨x, r⟩, hu, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [untilCtrl_sound hu, List.flatMap_cons, syms_append, ih _ _ hts]
      simp [turnItems]
    rw [if_neg h1] at h
    by_cases h2 : t = f.ids.tools
    · rw [if_pos h2] at h
      subst h2
      obtain ⟨⟨j, r⟩, hu, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      rcases r with _ | ⟨i | ch | i, r2⟩
      · cases h
      · try dsimp only at h
        by_cases hi : i = f.ids.inst
        · rw [if_pos hi] at h
          subst hi
          obtain ⟨⟨x, r3⟩, hu2, h⟩ := Option.bind_eq_some_iff.mp h
          try dsimp only at h
          obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
          rw [untilCtrl_sound hu, untilCtrl_sound hu2, List.flatMap_cons, syms_append,
            ih _ _ hts]
          simp [turnItems]
        · rw [if_neg hi] at h
          cases h
      · cases h
      · cases h
    rw [if_neg h2] at h
    by_cases h3 : t = f.ids.inst
    · rw [if_pos h3] at h
      subst h3
      obtain ⟨⟨x, r⟩, hu, h⟩ := Option.bind_eq_some_iff.mp h
      try dsimp only at h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [untilCtrl_sound hu, List.flatMap_cons, syms_append, ih _ _ hts]
      simp [turnItems]
    rw [if_neg h3] at h
    by_cases h4 : t = f.ids.results
    · rw [if_pos h4] at h
      subst h4
      rcases hv : f.version with _ | _ | _ <;> rcases htc : f.ids.toolContent with _ | tc <;>
        simp only [hv, htc] at h
      all_goals first | (cases h; done) | skip
      -- v7 and v11 with `[TOOL_CONTENT]`
      rotate_left 2
      all_goals first
        | (obtain ⟨⟨x, r⟩, hu, h⟩ := Option.bind_eq_some_iff.mp h
           try dsimp only at h
           obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
           rw [untilCtrl_sound hu, List.flatMap_cons, syms_append, ih _ _ hts]
           simp [turnItems]
           done)
        | skip
      all_goals
        obtain ⟨⟨i, r⟩, hu, h⟩ := Option.bind_eq_some_iff.mp h
        try dsimp only at h
        obtain ⟨⟨x, r2⟩, hu2, h⟩ := Option.bind_eq_some_iff.mp h
        try dsimp only at h
        split at h
        · cases h
        obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
        rw [untilCtrl_sound hu, untilCtrl_sound hu2, List.flatMap_cons, syms_append, ih _ _ hts]
        simp [turnItems, htc]
    rw [if_neg h4] at h
    exact asst _ h

/-- `unlayout` never invents a conversation: what it returns lays out to its input. -/
theorem layout_unlayout (s : List Sym) (q : MConv) (h : unlayout f s = some q) :
    syms (layout f q) = s := by
  unfold unlayout at h
  rcases s with _ | ⟨b | c | b, rest⟩
  · cases h
  · try dsimp only at h
    by_cases hb : b = f.ids.bos
    · rw [if_pos hb] at h
      subst hb
      obtain ⟨ts, hts, rfl⟩ := Option.map_eq_some_iff.mp h
      simp only [layout, syms_append, syms_cons, syms_ctl, syms_nil, List.append_nil,
        List.singleton_append, unlayoutTurns_sound f _ _ _ hts]
    · rw [if_neg hb] at h
      cases h
  · cases h
  · cases h

end Verified.Mistral

end
