module

public import Verified.Thm.MistralRead
public import Verified.Thm.MistralLower
public import Verified.Thm.Mistral
public import Verified.Thm.Format

public section

/-!
# The Mistral round trip, and `Format.Lawful`

* The calls read back: v11/v13 (`unlayoutCalls_read`) and the v7 JSON list
  (`unlayoutCallsV7_read`, from `unCallsJson_read` of `Thm/MistralLower.lean`, which also
  proves what lowering guarantees, `lower_good`).
* `readTurn`, `readTurns`: the readers read a text layout back turn by turn (every turn ends
  with a control token, so what follows a turn never changes how it reads).
* `unlayout_layout`, `lawful`: every Mistral format whose ids are well formed for its version
  (`MistralIds.wf`) satisfies `Format.Lawful`; `tekken_lawful` (v7, v11, v13, either mode) and
  `nemo_lawful` (v7) instantiate it for the shipped vocabularies, with the round trip,
  soundness, injectivity and no-forgery theorems of `Thm/Format.lean`.
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

/-! ## Reading the calls back -/

theorem untilCtrl_lit (c : Token) (x : Chars) (Y : List Sym) :
    untilCtrl c (lit x ++ .ctrl c :: Y) = some (x, Y) := by
  unfold untilCtrl
  rw [Qwen.takeText_lit_of x _ rfl]
  simp

theorem callItems_head {a : Token} (ha : f.ids.args = some a) (o : Nat) (k : MCall) :
    ∃ Y, syms (callItems f o k) = .ctrl f.ids.calls :: Y := by
  obtain ⟨n, x, i⟩ := k
  cases hc : f.ids.callId <;> cases i <;> simp [callItems, ha, hc]

theorem flatMap_callItems_head {a : Token} (ha : f.ids.args = some a) (o : Nat) (k : MCall)
    (ks : List MCall) : ∃ Y, syms ((k :: ks).flatMap (callItems f o)) = .ctrl f.ids.calls :: Y := by
  obtain ⟨Y, hY⟩ := callItems_head f ha o k
  exact ⟨Y ++ syms (ks.flatMap (callItems f o)), by rw [List.flatMap_cons, syms_append, hY]; rfl⟩

theorem len_flatMap_callItems {a : Token} (ha : f.ids.args = some a) (o : Nat) :
    ∀ cs : List MCall, cs.length ≤ (syms (cs.flatMap (callItems f o))).length
  | [] => by simp
  | k :: ks => by
    have := len_flatMap_callItems ha o ks
    obtain ⟨Y, hY⟩ := callItems_head f ha o k
    rw [List.flatMap_cons, syms_append, hY, List.length_append, List.length_cons,
      List.length_cons]
    omega

theorem callsItems_head (hw : WfFacts f.ids f.version) (o : Nat) (k : MCall) (ks : List MCall) :
    ∃ Y, syms (callsItems f o (k :: ks)) = .ctrl f.ids.calls :: Y := by
  by_cases hv : f.version = .v7
  · rw [callsItems_v7 f hv]
    exact ⟨_, rfl⟩
  · obtain ⟨a, ha⟩ := hw.args hv
    rw [callsItems_of_ne f hv]
    exact flatMap_callItems_head f ha o k ks

theorem callsItems_nil (o : Nat) : callsItems f o [] = [] := by
  cases f.version <;> rfl

theorem takeText_calls (hw : WfFacts f.ids f.version) (o : Nat) (cs : List MCall) (e : Token)
    (R : List Sym) :
    takeText (syms (callsItems f o cs) ++ .ctrl e :: R) =
      ([], syms (callsItems f o cs) ++ .ctrl e :: R) := by
  cases cs with
  | nil => rw [callsItems_nil]; rfl
  | cons k ks =>
    obtain ⟨Y, hY⟩ := callsItems_head f hw o k ks
    rw [hY]
    rfl

/-- The v11/v13 calls read back, up to the control token after them. -/
theorem unlayoutCalls_read (hw : WfFacts f.ids f.version) (hv : f.version ≠ .v7) (o : Nat)
    (R : List Sym) (e : Token) (he : e ≠ f.ids.calls) :
    ∀ (cs : List MCall) (n : Nat), cs.length ≤ n → (∀ k ∈ cs, CallGood f k ∧ nameOk k.1 = true) →
      unlayoutCalls f n (syms (cs.flatMap (callItems f o)) ++ .ctrl e :: R) =
        some (cs, .ctrl e :: R) := by
  obtain ⟨a, ha⟩ := hw.args hv
  intro cs
  induction cs with
  | nil =>
    intro n _ _
    cases n with
    | zero => rfl
    | succ n => simp [unlayoutCalls, he]
  | cons k ks ih =>
    intro n hn hk
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    obtain ⟨⟨ha0, h13, hid⟩, hnm⟩ := hk k List.mem_cons_self
    have ih' := ih m (by simp at hn; omega) (fun k' h' => hk k' (List.mem_cons_of_mem _ h'))
    have hnm0 : k.1 ≠ [] := by
      intro h0
      simp [nameOk, h0] at hnm
    have hT : takeText (syms (ks.flatMap (callItems f o)) ++ .ctrl e :: R) =
        ([], syms (ks.flatMap (callItems f o)) ++ .ctrl e :: R) := by
      have := takeText_calls f hw o ks e R
      rwa [callsItems_of_ne f hv] at this
    obtain ⟨nm, x, i⟩ := k
    have hc7 : (decide (f.ids.calls = f.ids.calls) && f.version != .v7) = true := by
      simpa using hv
    cases hv' : f.version with
    | v7 => exact absurd hv' hv
    | v11 =>
      obtain ⟨c, hc⟩ := hw.cid hv'
      obtain ⟨i', hi, hok⟩ := hid (by rw [hv']; exact fun h => by cases h)
      simp only at hi
      subst hi
      rw [List.flatMap_cons, syms_append, syms_callItems_id f ha hc]
      simp only [List.cons_append, List.append_assoc]
      first
        | (simp only [unlayoutCalls]; rw [if_pos hc7])
        | simp only [unlayoutCalls, hc7, ↓reduceIte]
        | simp only [unlayoutCalls, decide_true, Bool.true_and, hv', bne_iff_ne, ne_eq,
            reduceCtorEq, not_false_eq_true, ↓reduceIte]
      simp only [ha, hv', hc]
      rw [untilCtrl_lit]
      simp only [Option.bind_some]
      rw [untilCtrl_lit]
      simp only [Option.bind_some]
      rw [Qwen.takeText_lit_of x _ hT]
      have e1 : (nm.isEmpty || i'.isEmpty || x.isEmpty) = false := by
        try simp only at ha0 hnm0
        simp [List.isEmpty_iff, ha0, hnm0, ne_nil_of_idOk hok]
      simp only [e1, Bool.false_eq_true, if_false, ↓reduceIte, ih', Option.map_some]
      first | rfl | (rw [if_pos (by decide)]) | simp
    | v13 =>
      have hi : i = none := h13 hv'
      simp only at hi
      subst hi
      rw [List.flatMap_cons, syms_append, syms_callItems_none f ha]
      simp only [List.cons_append, List.append_assoc]
      first
        | (simp only [unlayoutCalls]; rw [if_pos hc7])
        | simp only [unlayoutCalls, hc7, ↓reduceIte]
        | simp only [unlayoutCalls, decide_true, Bool.true_and, hv', bne_iff_ne, ne_eq,
            reduceCtorEq, not_false_eq_true, ↓reduceIte]
      simp only [ha, hv']
      rw [untilCtrl_lit]
      simp only [Option.bind_some]
      rw [Qwen.takeText_lit_of x _ hT]
      have e1 : (nm.isEmpty || x.isEmpty) = false := by
        try simp only at ha0 hnm0
        simp [List.isEmpty_iff, ha0, hnm0]
      simp only [e1, Bool.false_eq_true, if_false, ↓reduceIte, ih', Option.map_some]
      first | rfl | (rw [if_pos (by decide)]) | simp

theorem callsJson_eq (cs : List MCall) :
    callsJson cs = '[' :: (joinObjs (cs.map callJson) ++ [']']) := rfl

/-- The v7 call list reads back, up to the control token after it. -/
theorem unlayoutCallsV7_read (hv : f.version = .v7) (hw : WfFacts f.ids f.version) (o : Nat)
    (cs : List MCall) (R : List Sym) (e : Token) (he : e ≠ f.ids.calls) (hk : ∀ k ∈ cs, JGood k) :
    unlayoutCallsV7 f (syms (callsItems f o cs) ++ .ctrl e :: R) = some (cs, .ctrl e :: R) := by
  cases cs with
  | nil => simp [callsItems_nil, unlayoutCallsV7, he]
  | cons k ks =>
    rw [callsItems_v7 f hv]
    have e0 : syms [ctl f.ids.calls o true, txt (callsJson (k :: ks)) o true] ++ .ctrl e :: R =
        .ctrl f.ids.calls :: (lit (callsJson (k :: ks)) ++ .ctrl e :: R) := by
      simp
    have hlen : (k :: ks).length ≤ (joinObjs ((k :: ks).map callJson) ++ [']']).length := by
      have := len_joinObjs (k :: ks)
      simp only [List.length_append] at this ⊢
      omega
    rw [e0]
    unfold unlayoutCallsV7
    try dsimp only
    rw [if_pos rfl, Qwen.takeText_lit_of _ _ rfl, callsJson_eq]
    first | dsimp only | simp only
    rw [unCallsJson_read (k :: ks) _ (List.cons_ne_nil _ _) hlen hk]
    simp only [Option.bind_some]
    rw [if_pos (callsJson_eq _)]

/-! ## Reading the turns back -/

/-- A text payload. -/
@[expose] def isTextP : LPay → Bool
  | .text _ => true
  | .toks _ => false

/-- A turn whose payload is text (hence not a sampled turn). -/
@[expose] def MTurn.textual : MTurn → Bool
  | .system p _ | .user _ p _ | .assistant p _ _ | .result _ p _ => isTextP p
  | .sampled _ _ => false

/-- What a call needs to read back: lowering's guarantees, `nameOk`, and `scanOk` in v7. -/
@[expose] def CallRead (k : MCall) : Prop :=
  CallGood f k ∧ nameOk k.1 = true ∧ (f.version = .v7 → scanOk k.2.1 = true)

theorem no_quote_of_nameOk {n : Chars} (h : nameOk n = true) : ∀ c ∈ n, c ≠ '"' := by
  intro c hc hq
  subst hq
  simp only [nameOk, Bool.and_eq_true, List.all_eq_true] at h
  have := h.2 _ hc
  revert this
  decide

theorem no_quote_of_idOk {i : Chars} (h : idOk i = true) : ∀ c ∈ i, c ≠ '"' := by
  intro c hc hq
  subst hq
  simp only [idOk, Bool.and_eq_true, List.all_eq_true] at h
  have := h.2 _ hc
  revert this
  decide

theorem jGood_of (hv : f.version = .v7) {k : MCall} (hk : CallRead f k) : JGood k := by
  obtain ⟨⟨ha0, -, hid⟩, hn, hs⟩ := hk
  obtain ⟨i, hi, hok⟩ := hid (by rw [hv]; exact fun h => by cases h)
  refine ⟨no_quote_of_nameOk hn, ?_, hs hv, ha0, i, hi, no_quote_of_idOk hok, ne_nil_of_idOk hok⟩
  intro h0
  simp [nameOk, h0] at hn

theorem syms_assistant (x : Chars) (cs : List MCall) (o : Nat) (R : List Sym) :
    syms (turnItems f (.assistant (.text x) cs o)) ++ R =
      lit x ++ (syms (callsItems f o cs) ++ .ctrl f.ids.eos :: R) := by
  simp [turnItems]

theorem unlayoutAssistant_read (hw : WfFacts f.ids f.version) (x : Chars) (cs : List MCall)
    (o : Nat) (R : List Sym) (hk : ∀ k ∈ cs, CallRead f k) :
    unlayoutAssistant f (syms (turnItems f (.assistant (.text x) cs o)) ++ R) =
      some (.assistant (.text x) cs 0, R) := by
  rw [syms_assistant]
  unfold unlayoutAssistant
  rw [Qwen.takeText_lit_of x _ (takeText_calls f hw o cs f.ids.eos R)]
  simp only
  have hc : (if f.version = .v7 then unlayoutCallsV7 f (syms (callsItems f o cs) ++
      .ctrl f.ids.eos :: R) else unlayoutCalls f (syms (callsItems f o cs) ++
        .ctrl f.ids.eos :: R).length (syms (callsItems f o cs) ++ .ctrl f.ids.eos :: R)) =
      some (cs, .ctrl f.ids.eos :: R) := by
    by_cases hv : f.version = .v7
    · rw [if_pos hv]
      exact unlayoutCallsV7_read f hv hw o cs R f.ids.eos hw.e_c
        (fun k h => jGood_of f hv (hk k h))
    · rw [if_neg hv, callsItems_of_ne f hv]
      obtain ⟨a, ha⟩ := hw.args hv
      refine unlayoutCalls_read f hw hv o R f.ids.eos hw.e_c cs _ ?_
        (fun k h => ⟨(hk k h).1, (hk k h).2.1⟩)
      have := len_flatMap_callItems f ha o cs
      simp only [List.length_append] at this ⊢
      omega
  rw [hc]
  simp

theorem unlayoutTurns_asst (hw : WfFacts f.ids f.version) (m : Nat) (x : Chars)
    (cs : List MCall) (o : Nat) (R : List Sym) (hk : ∀ k ∈ cs, CallRead f k) :
    unlayoutTurns f (m + 1) (syms (turnItems f (.assistant (.text x) cs o)) ++ R) =
      (unlayoutTurns f m R).map (.assistant (.text x) cs 0 :: ·) := by
  have hA := unlayoutAssistant_read f hw x cs o R hk
  rw [syms_assistant] at hA ⊢
  cases x with
  | cons c x =>
    rw [lit_cons, List.cons_append] at hA ⊢
    rw [show unlayoutTurns f (m + 1) (.ch c :: (lit x ++ (syms (callsItems f o cs) ++
        .ctrl f.ids.eos :: R))) = (unlayoutAssistant f (.ch c :: (lit x ++
          (syms (callsItems f o cs) ++ .ctrl f.ids.eos :: R)))).bind
            (fun (a, r) => (unlayoutTurns f m r).map (a :: ·)) from rfl, hA]
    rfl
  | nil =>
    rw [lit_nil, List.nil_append] at hA ⊢
    cases cs with
    | nil =>
      simp only [callsItems_nil, syms_nil, List.nil_append] at hA ⊢
      simp only [unlayoutTurns, hw.e_so, hw.e_t, hw.e_i, hw.e_r, ↓reduceIte, hA, Option.bind_some]
    | cons k ks =>
      obtain ⟨Y, hY⟩ := callsItems_head f hw o k ks
      rw [hY, List.cons_append] at hA ⊢
      simp only [unlayoutTurns, hw.c_so, hw.c_t, hw.c_i, hw.c_r, ↓reduceIte, hA, Option.bind_some]

/-- A text turn as lowering writes it reads back (owner erased), whatever follows it. -/
theorem readTurn (hw : WfFacts f.ids f.version) (t : MTurn) (hg : TGood f t)
    (hok : turnOk f t = true) (htx : t.textual = true) (m : Nat) (R : List Sym) :
    unlayoutTurns f (m + 1) (syms (turnItems f t) ++ R) =
      (unlayoutTurns f m R).map (t.erase :: ·) := by
  cases t with
  | system p o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    have e : syms (turnItems f (.system (.text x) o)) ++ R =
        .ctrl f.ids.sysOpen :: (lit x ++ .ctrl f.ids.sysClose :: R) := by
      simp [turnItems]
    rw [e]
    simp only [unlayoutTurns, ↓reduceIte, untilCtrl_lit, Option.bind_some, MTurn.erase]
  | user j p o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    cases j with
    | none =>
      have e : syms (turnItems f (.user none (.text x) o)) ++ R =
          .ctrl f.ids.inst :: (lit x ++ .ctrl f.ids.endInst :: R) := by
        simp [turnItems]
      rw [e]
      simp only [unlayoutTurns, Ne.symm hw.so_i, Ne.symm hw.t_i, ↓reduceIte, untilCtrl_lit,
        Option.bind_some, MTurn.erase]
    | some j =>
      have e : syms (turnItems f (.user (some j) (.text x) o)) ++ R =
          .ctrl f.ids.tools :: (lit j ++ .ctrl f.ids.endTools :: .ctrl f.ids.inst ::
            (lit x ++ .ctrl f.ids.endInst :: R)) := by
        simp [turnItems]
      rw [e]
      simp only [unlayoutTurns, Ne.symm hw.so_t, ↓reduceIte, untilCtrl_lit, Option.bind_some,
        MTurn.erase]
  | assistant p cs o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    simp only [turnOk, Bool.and_eq_true, List.all_eq_true] at hok
    have hk : ∀ k ∈ cs, CallRead f k := by
      intro k h
      have := hok.2 k h
      simp only [Bool.and_eq_true, Bool.or_eq_true, bne_iff_ne, ne_eq] at this
      refine ⟨hg k h, this.1, fun hv => ?_⟩
      rcases this.2 with h' | h'
      · exact absurd hv h'
      · exact h'
    rw [unlayoutTurns_asst f hw m x cs o R hk]
    rfl
  | result i p o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    obtain ⟨h13, hn13⟩ := hg
    by_cases hv : f.version = .v13
    · have hi : i = none := h13 hv
      subst hi
      have e : syms (turnItems f (.result none (.text x) o)) ++ R =
          .ctrl f.ids.results :: (lit x ++ .ctrl f.ids.endResults :: R) := by
        simp [turnItems]
      rw [e]
      simp only [unlayoutTurns, Ne.symm hw.so_r, Ne.symm hw.t_r, Ne.symm hw.i_r, ↓reduceIte, hv,
        untilCtrl_lit, Option.bind_some, MTurn.erase]
    · obtain ⟨y, rfl, hy⟩ := hn13 hv
      obtain ⟨tc, htc⟩ := hw.tc hv
      have e : syms (turnItems f (.result (some y) (.text x) o)) ++ R =
          .ctrl f.ids.results :: (lit y ++ .ctrl tc :: (lit x ++ .ctrl f.ids.endResults :: R)) := by
        simp [turnItems, htc]
      rw [e]
      have hy' : y.isEmpty = false := by simpa [List.isEmpty_iff] using hy
      cases hv' : f.version with
      | v13 => exact absurd hv' hv
      | v7 =>
        simp only [unlayoutTurns, Ne.symm hw.so_r, Ne.symm hw.t_r, Ne.symm hw.i_r, ↓reduceIte,
          hv', htc, untilCtrl_lit, Option.bind_some, hy', Bool.false_eq_true, MTurn.erase]
      | v11 =>
        simp only [unlayoutTurns, Ne.symm hw.so_r, Ne.symm hw.t_r, Ne.symm hw.i_r, ↓reduceIte,
          hv', htc, untilCtrl_lit, Option.bind_some, hy', Bool.false_eq_true, MTurn.erase]
  | sampled ts o => simp [MTurn.textual] at htx

theorem readTurns (hw : WfFacts f.ids f.version) :
    ∀ (ts : List MTurn) (n : Nat), ts.length ≤ n →
      (∀ t ∈ ts, TGood f t ∧ turnOk f t = true ∧ t.textual = true) →
      unlayoutTurns f n (syms (ts.flatMap (turnItems f))) = some (ts.map MTurn.erase) := by
  intro ts
  induction ts with
  | nil => intro n _ _; cases n <;> rfl
  | cons t ts ih =>
    intro n hn hall
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    obtain ⟨hg, hok, htx⟩ := hall t List.mem_cons_self
    rw [List.flatMap_cons, syms_append, readTurn f hw t hg hok htx m,
      ih m (by simp at hn; omega) (fun t' h' => hall t' (List.mem_cons_of_mem _ h'))]
    rfl

theorem len_turns : ∀ ts : List MTurn, ts.length ≤ (syms (ts.flatMap (turnItems f))).length
  | [] => by simp
  | t :: ts => by
    have := len_turns ts
    obtain ⟨a, k, o, lb, e⟩ := turnItems_last f t
    simp only [List.flatMap_cons, syms_append, e, List.length_append, syms_cons, syms_ctl,
      syms_nil, List.append_nil, List.length_cons, List.length_nil] at this ⊢
    omega

/-! ## Text-only layouts -/

theorem isTextP_of_mem {items : List Item} (h : textOnly items = true) {p : LPay} {o : Nat}
    {l : Bool} (hm : pay p o l ∈ items) : isTextP p = true := by
  unfold textOnly at h
  have := List.all_eq_true.mp h _ hm
  cases p
  · rfl
  · simp [pay, Piece.isToks] at this

theorem textual_of_textOnly (t : MTurn) (h : textOnly (turnItems f t) = true) :
    t.textual = true := by
  cases t with
  | system p o => exact isTextP_of_mem h (o := o) (l := false) (by simp [turnItems])
  | user j p o => exact isTextP_of_mem h (o := o) (l := false) (by simp [turnItems])
  | assistant p cs o => exact isTextP_of_mem h (o := o) (l := true) (by simp [turnItems])
  | result i p o => exact isTextP_of_mem h (o := o) (l := false) (by simp [turnItems])
  | sampled ts o =>
    unfold textOnly at h
    have := List.all_eq_true.mp h ⟨.toks ts, ⟨o, true⟩⟩ (by simp [turnItems])
    simp [Piece.isToks] at this

/-! ## The round trip -/

/-- `unlayout` inverts `layout` (up to owners) on every lowered conversation whose layout is
text-only, for ids well formed for the version. -/
theorem unlayout_layout (hf : f.ids.wf f.version = true) {c : Conversation} {l : MConv}
    (hl : lower f c = some l) (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  have hgood := lower_good f hl
  obtain ⟨ts, p⟩ := l
  have hall : ∀ t ∈ ts, TGood f t ∧ turnOk f t = true ∧ t.textual = true := by
    intro t ht
    refine ⟨(hgood t ht).1, (hgood t ht).2, textual_of_textOnly f t ?_⟩
    unfold textOnly at htx ⊢
    refine List.all_eq_true.mpr fun it hit => List.all_eq_true.mp htx it ?_
    unfold layout
    exact List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hit⟩)
  have e : syms (layout f ⟨ts, p⟩) = .ctrl f.ids.bos :: syms (ts.flatMap (turnItems f)) := by
    simp [layout]
  rw [e]
  unfold unlayout
  simp only [↓reduceIte, readTurns f hw ts _ (len_turns f ts) hall, Option.map_some]
  rfl

/-- Every Mistral format whose ids are well formed for its version is lawful. -/
theorem lawful (hf : f.ids.wf f.version = true) : (format f).Lawful :=
  ⟨fun _ _ hl ht => unlayout_layout f hf hl ht, fun s l h => layout_unlayout f s l h,
    ctrl_reserved f, syms_erase f⟩

/-! ## The shipped vocabularies -/

theorem tekkenIds_wf (v : Version) : tekkenIds.wf v = true := by
  cases v
  · exact tekkenIds_wf_v7
  · exact tekkenIds_wf_v11
  · exact tekkenIds_wf_v13

/-- The tekken v7+ vocabularies (Mistral Small 3.x, Devstral, Magistral): every version, both
modes. -/
theorem tekken_lawful (v : Version) (st : Bool) : (format ⟨tekkenIds, v, st⟩).Lawful :=
  lawful _ (tekkenIds_wf v)

/-- Nemo's vocabulary, v7, both modes. -/
theorem nemo_lawful (st : Bool) : (format ⟨nemoIds, .v7, st⟩).Lawful :=
  lawful _ nemoIds_wf_v7

/-- Parsing the render of a conversation gives back its lowered form (owners erased), for
every tekken format and every lawful codec. -/
theorem tekken_parse_render (v : Version) (st : Bool) {codec : Codec}
    (hc : codec.Lawful tekkenIds.reserved) {c : Conversation} {l : MConv}
    (hl : lower ⟨tekkenIds, v, st⟩ c = some l)
    (ht : textOnly (layout ⟨tekkenIds, v, st⟩ l) = true) :
    (format ⟨tekkenIds, v, st⟩).parse codec (ids (encodeItems codec (layout ⟨tekkenIds, v, st⟩ l))) =
      some l.erase :=
  Format.parse_render (tekken_lawful v st) hc hl ht

/-- The tekken parser never invents a conversation: what it accepts re-renders to exactly the
input tokens. -/
theorem tekken_render_parse (v : Version) (st : Bool) {codec : Codec} {ts : List Token}
    {l : MConv} (h : (format ⟨tekkenIds, v, st⟩).parse codec ts = some l) :
    ids (encodeItems codec (layout ⟨tekkenIds, v, st⟩ l)) = ts :=
  Format.render_parse (tekken_lawful v st) h

/-- Two conversations with the same tekken render have the same lowered form up to owners. -/
theorem tekken_render_injective (v : Version) (st : Bool) {codec : Codec}
    (hc : codec.Lawful tekkenIds.reserved) {c d : Conversation} {l l' : MConv}
    (hl : lower ⟨tekkenIds, v, st⟩ c = some l) (hl' : lower ⟨tekkenIds, v, st⟩ d = some l')
    (ht : textOnly (layout ⟨tekkenIds, v, st⟩ l) = true)
    (ht' : textOnly (layout ⟨tekkenIds, v, st⟩ l') = true)
    (h : ids (encodeItems codec (layout ⟨tekkenIds, v, st⟩ l)) =
      ids (encodeItems codec (layout ⟨tekkenIds, v, st⟩ l'))) : l.erase = l'.erase :=
  Format.render_injective_lowered (tekken_lawful v st) hc hl hl' ht ht' h

/-- No forgery: the reserved tokens of a tekken render are exactly the control tokens its
layout placed, in order. -/
theorem tekken_no_forgery (v : Version) (st : Bool) {codec : Codec}
    (hc : codec.Lawful tekkenIds.reserved) (l : MConv)
    (ht : textOnly (layout ⟨tekkenIds, v, st⟩ l) = true) :
    (ids (encodeItems codec (layout ⟨tekkenIds, v, st⟩ l))).filter
        (isReserved tekkenIds.reserved) = ctrls (syms (layout ⟨tekkenIds, v, st⟩ l)) :=
  Format.no_forgery (tekken_lawful v st) hc l ht

/-- Nemo (v7): parsing the render gives back the lowered form (owners erased). -/
theorem nemo_parse_render (st : Bool) {codec : Codec} (hc : codec.Lawful nemoIds.reserved)
    {c : Conversation} {l : MConv} (hl : lower ⟨nemoIds, .v7, st⟩ c = some l)
    (ht : textOnly (layout ⟨nemoIds, .v7, st⟩ l) = true) :
    (format ⟨nemoIds, .v7, st⟩).parse codec (ids (encodeItems codec (layout ⟨nemoIds, .v7, st⟩ l))) =
      some l.erase :=
  Format.parse_render (nemo_lawful st) hc hl ht

/-- Nemo (v7): what the parser accepts re-renders to exactly the input tokens. -/
theorem nemo_render_parse (st : Bool) {codec : Codec} {ts : List Token} {l : MConv}
    (h : (format ⟨nemoIds, .v7, st⟩).parse codec ts = some l) :
    ids (encodeItems codec (layout ⟨nemoIds, .v7, st⟩ l)) = ts :=
  Format.render_parse (nemo_lawful st) h

/-- Nemo (v7): the render is injective on lowered forms up to owners. -/
theorem nemo_render_injective (st : Bool) {codec : Codec} (hc : codec.Lawful nemoIds.reserved)
    {c d : Conversation} {l l' : MConv} (hl : lower ⟨nemoIds, .v7, st⟩ c = some l)
    (hl' : lower ⟨nemoIds, .v7, st⟩ d = some l')
    (ht : textOnly (layout ⟨nemoIds, .v7, st⟩ l) = true)
    (ht' : textOnly (layout ⟨nemoIds, .v7, st⟩ l') = true)
    (h : ids (encodeItems codec (layout ⟨nemoIds, .v7, st⟩ l)) =
      ids (encodeItems codec (layout ⟨nemoIds, .v7, st⟩ l'))) : l.erase = l'.erase :=
  Format.render_injective_lowered (nemo_lawful st) hc hl hl' ht ht' h

/-- Nemo (v7): no forgery. -/
theorem nemo_no_forgery (st : Bool) {codec : Codec} (hc : codec.Lawful nemoIds.reserved)
    (l : MConv) (ht : textOnly (layout ⟨nemoIds, .v7, st⟩ l) = true) :
    (ids (encodeItems codec (layout ⟨nemoIds, .v7, st⟩ l))).filter
        (isReserved nemoIds.reserved) = ctrls (syms (layout ⟨nemoIds, .v7, st⟩ l)) :=
  Format.no_forgery (nemo_lawful st) hc l ht

end Verified.Mistral

end
