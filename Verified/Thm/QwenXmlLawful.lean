module

public import Verified.Thm.QwenXmlRead

public section

/-!
# The Qwen3.5 structure is lawful

`formatX f ap` (`Spec/QwenXmlFormat.lean`) is `Format.Lawful` for every entry with well-formed
ids and every value typing `ap` (`lawfulX`), so the generic theorems of `Thm/Format.lean`
(round trip, soundness, no forgery) hold for Qwen3.5, Qwen3.6 and both Ornith-1.0 entries
(`qwen35_lawful`, `qwen36_lawful`, `ornith_lawful`, `ornith9b_lawful`):

* the round trip: a whole layout reads back turn by turn (`layout_readX`, from
  `Thm/QwenXmlRead.lean`), and the check the reader ends with passes because erasing owners
  does not change the symbols (`syms_layoutX_erase`);
* soundness: what the reader returns lays out to its input, by that check;
* every control token a layout places is reserved (`ctrls_layoutX`).
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

section Lawful

variable (f : XmlFmt) (ap : ArgsParams)

/-! ## Whole layouts read back -/

theorem unlayoutChunksX_cons (hw : WfFacts f.ids) {c : List Sym} (hc : .ctrl f.ids.imEnd ∈ c)
    (cs : List (List Sym)) :
    unlayoutChunksX f (c :: cs) = (unlayoutTurnX f c).bind fun t =>
      (unlayoutChunksX f cs).map fun q => ⟨t :: q.turns, q.prompt⟩ := by
  cases cs with
  | nil =>
    have hne : (.ctrl f.ids.imStart :: c) ≠ syms (promptItems f.base 0) := by
      obtain ⟨pb, hpb, -, hE⟩ := prompt_read f.base hw 0
      rw [hpb]
      intro h
      exact hE ((List.cons.inj h).2 ▸ hc)
    simp only [unlayoutChunksX, hne, ↓reduceIte]
    cases unlayoutTurnX f c <;> rfl
  | cons c' cs => rfl

/-- Each turn's symbols are a chunk after `<|im_start|>` that reads back as the turn. -/
@[expose] def ReadsBack (t : XTurn) : Prop :=
  ∃ body, syms (QwenXml.turnItems f t) = .ctrl f.ids.imStart :: body ∧
    .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧ unlayoutTurnX f body = some t.erase

theorem chunks_readX (hw : WfFacts f.ids) : ∀ (ts : List XTurn), (∀ t ∈ ts, ReadsBack f t) →
    ∃ bodies : List (List Sym),
      syms (ts.flatMap (QwenXml.turnItems f)) = bodies.flatMap (.ctrl f.ids.imStart :: ·) ∧
      (∀ b ∈ bodies, .ctrl f.ids.imStart ∉ b) ∧
      ∀ tail q, unlayoutChunksX f tail = some ⟨[], q⟩ →
        unlayoutChunksX f (bodies ++ tail) = some ⟨ts.map XTurn.erase, q⟩
  | [], _ => ⟨[], rfl, fun _ h => (by cases h), fun _ _ h => h⟩
  | t :: ts, h => by
    obtain ⟨body, hb1, hb2, hb3, hb4⟩ := h t List.mem_cons_self
    obtain ⟨bodies, h1, h2, h3⟩ :=
      chunks_readX hw ts (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))
    refine ⟨body :: bodies, ?_, ?_, fun tail q htail => ?_⟩
    · rw [List.flatMap_cons, syms_append, hb1, h1, List.flatMap_cons]
    · intro b hb
      rcases List.mem_cons.mp hb with rfl | hb
      · exact hb2
      · exact h2 b hb
    · rw [List.cons_append, unlayoutChunksX_cons f hw hb3, hb4, Option.bind_some,
        h3 tail q htail]
      rfl

/-- A layout whose turns read back is parsed back to them (owners 0). -/
theorem layout_readX (hw : WfFacts f.ids) (ts : List XTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, ReadsBack f t) :
    unlayoutCands f (syms (layout f ⟨ts, p⟩)) = some ⟨ts.map XTurn.erase, p.map fun _ => 0⟩ := by
  obtain ⟨bodies, h1, h2, h3⟩ := chunks_readX f hw ts h
  obtain ⟨tail, ht1, ht2, ht3⟩ : ∃ tail : List (List Sym),
      syms (layout f ⟨[], p⟩) = tail.flatMap (.ctrl f.ids.imStart :: ·) ∧
      (∀ b ∈ tail, .ctrl f.ids.imStart ∉ b) ∧
      unlayoutChunksX f tail = some ⟨[], p.map fun _ => 0⟩ := by
    cases p with
    | none => exact ⟨[], rfl, fun _ h => (by cases h), rfl⟩
    | some o =>
      obtain ⟨pb, hpb, hS, -⟩ := prompt_read f.base hw o
      have e : syms (layout f ⟨[], some o⟩) = syms (promptItems f.base o) := rfl
      refine ⟨[pb], by rw [e, hpb]; simp [XmlFmt.base], by simpa using hS, ?_⟩
      have e0 : Sym.ctrl f.ids.imStart :: pb = syms (promptItems f.base 0) := by
        rw [syms_promptItems', ← syms_promptItems' f.base o, hpb]
        rfl
      simp only [unlayoutChunksX, e0, ↓reduceIte]
      rfl
  have hsplit := splitAtCtrl_flatMap f.ids.imStart (bodies ++ tail) [] (by simp)
    (fun b hb => (List.mem_append.mp hb).elim (h2 b) (ht2 b))
  have el : layout f ⟨ts, p⟩ = ts.flatMap (QwenXml.turnItems f) ++ layout f ⟨[], p⟩ := by
    simp [layout]
  rw [List.nil_append, List.flatMap_append, ← h1, ← ht1, ← syms_append, ← el] at hsplit
  unfold unlayoutCands
  simp only [hsplit, ↓reduceIte]
  exact h3 tail _ ht3

/-! ## Owners do not change the symbols -/

/-- The symbols of a turn's calls do not depend on their owner. -/
theorem syms_callsItemsX_owner (s : Bool) (o : Nat) (ks : List XCall) :
    syms (QwenXml.callsItems f s o ks) = syms (QwenXml.callsItems f s 0 ks) := by
  have h' : ∀ ks : List XCall, syms (QwenXml.callsItems.callsItems' f o ks) =
      syms (QwenXml.callsItems.callsItems' f 0 ks) := by
    intro ks
    induction ks with
    | nil => rfl
    | cons k ks ih =>
      simp only [QwenXml.callsItems.callsItems', syms_append, ih]
      simp [ctl, txt]
  cases ks with
  | nil => rfl
  | cons k ks =>
    simp only [QwenXml.callsItems, syms_append, h']
    cases s <;> simp [ctl, txt]

theorem syms_turnItemsX_erase (t : XTurn) :
    syms (QwenXml.turnItems f t.erase) = syms (QwenXml.turnItems f t) := by
  cases t with
  | plain r p o => exact syms_turnItems_erase f.base (.plain r p o)
  | toolsSystem s ts o =>
    cases s <;> simp [XTurn.erase, QwenXml.turnItems, toolsSystemItems, footer, ctl, txt,
      pay_piece', syms, List.flatMap_map]
  | assistant th c s ks o =>
    simp only [XTurn.erase, QwenXml.turnItems, syms_append]
    rw [syms_callsItemsX_owner f s o ks]
    split <;> simp [footer, ctl, txt, pay_piece']
  | toolGroup rs => exact syms_turnItems_erase f.base (.toolGroup rs)
  | sampled ts o => exact syms_turnItems_erase f.base (.sampled ts o)

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_layoutX_erase (l : XConv) : syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨ts, p⟩ := l
  simp only [XConv.erase, layout, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItemsX_erase]
  cases p <;> simp [syms_promptItems']

/-! ## Control tokens -/

theorem ctlOk_callsItemsX (s : Bool) (o : Nat) (ks : List XCall) :
    ∀ it ∈ QwenXml.callsItems f s o ks, CtlOk f.base it := by
  have h' : ∀ ks : List XCall, ∀ it ∈ QwenXml.callsItems.callsItems' f o ks, CtlOk f.base it := by
    intro ks
    induction ks with
    | nil => simp [QwenXml.callsItems.callsItems']
    | cons k ks ih =>
      simp only [QwenXml.callsItems.callsItems', fa_append]
      refine ⟨?_, ih⟩
      simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, callOpen_mem, callClose_mem,
        show f.ids = f.base.ids from rfl]
  cases ks with
  | nil => simp [QwenXml.callsItems]
  | cons k ks =>
    simp only [QwenXml.callsItems, fa_append]
    refine ⟨⟨?_, ?_⟩, h' ks⟩
    · split <;> simp [ctlOk_txt]
    · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, callOpen_mem, callClose_mem,
        show f.ids = f.base.ids from rfl]

theorem ctlOk_turnItemsX (t : XTurn) : ∀ it ∈ QwenXml.turnItems f t, CtlOk f.base it := by
  have e : f.ids = f.base.ids := rfl
  cases t with
  | plain r p o => exact ctlOk_turnItems f.base (.plain r p o)
  | toolsSystem s ts o =>
    cases s <;> simp [QwenXml.turnItems, toolsSystemItems, footer, or_imp, forall_and, ctlOk_txt,
      ctlOk_ctl, ctlOk_pay, imStart_mem, imEnd_mem, callOpen_mem, callClose_mem, e]
  | assistant th c s ks o =>
    simp only [QwenXml.turnItems, fa_append]
    refine ⟨⟨⟨⟨?_, ?_⟩, ?_⟩, ctlOk_callsItemsX f s o ks⟩, ?_⟩
    · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem, e]
    · split
      · rename_i a b _ h
        simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, (think_mem f.base h).1,
          (think_mem f.base h).2]
      · simp
    · simp [ctlOk_pay]
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]
  | toolGroup rs => exact ctlOk_turnItems f.base (.toolGroup rs)
  | sampled ts o => exact ctlOk_turnItems f.base (.sampled ts o)

/-- Every control token of a layout is reserved. -/
theorem ctrls_layoutX (l : XConv) : ∀ t ∈ ctrls (syms (layout f l)), t ∈ f.ids.reserved := by
  intro t ht
  obtain ⟨it, hit, h⟩ := mem_ctrls_syms ht
  unfold layout at hit
  rcases List.mem_append.mp hit with hit | hit
  · obtain ⟨u, -, hu⟩ := List.mem_flatMap.mp hit
    exact ctlOk_turnItemsX f u it hu t h
  · split at hit
    · exact ctlOk_promptItems f.base _ it hit t h
    · cases hit

/-! ## Lowered conversations -/

/-- `lowerX` unfolded. -/
theorem lowerX_eq_some {c : Conversation} {l : XConv} (h : lowerX f ap c = some l) :
    c.messages ≠ [] ∧ ∃ lastQ st pre, lastQueryFrom 0 c.messages = some lastQ ∧
      systemTurnX c.messages c.tools = some st ∧
      lowerMsgsX f ap lastQ 0 c.messages = some pre ∧
      (st ++ groupX pre).all (turnOkX f) = true ∧
      l = ⟨st ++ groupX pre, if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  cases hm : c.messages.isEmpty with
  | true => simp [lowerX, hm] at h
  | false =>
    simp only [lowerX, hm, Bool.false_eq_true, ↓reduceIte, Option.bind_eq_some_iff] at h
    obtain ⟨lastQ, hq, st, hst, pre, hpre, h⟩ := h
    by_cases hall : (st ++ groupX pre).all (turnOkX f) = true
    · rw [if_pos hall] at h
      exact ⟨by simpa using hm, lastQ, st, pre, hq, hst, hpre, hall, (Option.some.inj h).symm⟩
    · rw [if_neg hall] at h
      cases h

/-- Every turn of a lowered conversation is readable. -/
theorem lowerX_turnOk {c : Conversation} {l : XConv} (h : lowerX f ap c = some l) :
    ∀ t ∈ l.turns, turnOkX f t = true := by
  obtain ⟨-, -, st, pre, -, -, -, hall, rfl⟩ := lowerX_eq_some f ap h
  exact fun t ht => List.all_eq_true.mp hall t ht

/-- A readable turn whose items are text-only has text payloads and is not sampled. -/
theorem textTurnX_of_textOnly (t : XTurn) (hok : turnOkX f t = true)
    (h : textOnly (QwenXml.turnItems f t) = true) : textTurnX t = true := by
  cases t with
  | plain r p o => exact isText_of_mem h (o := o) (l := false) (by simp [QwenXml.turnItems])
  | toolsSystem s ts o =>
    cases s with
    | none => rfl
    | some p =>
      exact isText_of_mem h (o := o) (l := false) (by simp [QwenXml.turnItems, toolsSystemItems])
  | assistant th c sep ks o =>
    have hc : isText c = true := isText_of_mem h (o := o) (l := true)
      (by simp [QwenXml.turnItems])
    cases th with
    | none => simpa [textTurnX] using hc
    | some r =>
      obtain ⟨⟨a, b⟩, hth⟩ : ∃ ab, f.ids.think = some ab := by
        cases hth : f.ids.think with
        | none => simp [turnOkX, hth] at hok
        | some ab => exact ⟨ab, rfl⟩
      have hr : isText r = true :=
        isText_of_mem h (o := o) (l := thinkLearned f.base r) (by simp [QwenXml.turnItems, hth])
      simp [textTurnX, hr, hc]
  | toolGroup rs =>
    simp only [turnOkX, Bool.and_eq_true] at hok
    exact textTurn_of_textOnly f.base (.toolGroup rs) hok.2 h
  | sampled ts o =>
    unfold textOnly at h
    have := List.all_eq_true.mp h ⟨.toks ts, ⟨o, true⟩⟩ (by simp [QwenXml.turnItems])
    simp [Piece.isToks] at this

/-- `unlayout` inverts `layout` on every lowered conversation whose layout is text-only. -/
theorem unlayout_layoutX (hf : f.ids.wf = true) {c : Conversation} {l : XConv}
    (hl : lowerX f ap c = some l) (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  have hcand : unlayoutCands f (syms (layout f l)) = some l.erase := by
    obtain ⟨ts, p⟩ := l
    apply layout_readX f hw
    intro t ht
    have hok := lowerX_turnOk f ap hl t ht
    have htt : textOnly (QwenXml.turnItems f t) = true := by
      unfold textOnly at htx ⊢
      refine List.all_eq_true.mpr fun x hx => List.all_eq_true.mp htx x ?_
      unfold layout
      exact List.mem_append_left _ (List.mem_flatMap.mpr ⟨t, ht, hx⟩)
    exact turn_readX f hw t hok (textTurnX_of_textOnly f t hok htt)
  unfold unlayout
  rw [hcand, Option.bind_some, syms_layoutX_erase, if_pos rfl]

/-- What `unlayout` returns lays out to its input (the check it ends with). -/
theorem layout_unlayoutX (s : List Sym) (l : XConv) (h : unlayout f s = some l) :
    syms (layout f l) = s := by
  unfold unlayout at h
  cases hc : unlayoutCands f s with
  | none => rw [hc] at h; cases h
  | some q =>
    rw [hc, Option.bind_some] at h
    by_cases e : syms (layout f q) = s
    · rw [if_pos e] at h
      cases h
      exact e
    · rw [if_neg e] at h
      cases h

/-- **The Qwen3.5 structure is lawful** for every entry with well-formed ids and every value
typing. -/
theorem lawfulX (hf : f.ids.wf = true) : (formatX f ap).Lawful where
  unlayout_layout _ _ hl htx := unlayout_layoutX f ap hf hl htx
  layout_unlayout := layout_unlayoutX f
  ctrl_reserved l t ht := by
    have h := ctrls_layoutX f l t ht
    simpa [formatX, isReserved] using h
  syms_erase := syms_layoutX_erase f

end Lawful

/-! ## The entries -/

/-- Qwen3.6 is lawful, whatever its value typing. -/
theorem qwen36_lawful (ap : ArgsParams) : (formatX qwen36 ap).Lawful := lawfulX _ ap (by decide)

/-- Qwen3.5 is lawful, whatever its value typing. -/
theorem qwen35_lawful (ap : ArgsParams) : (formatX qwen35 ap).Lawful := lawfulX _ ap (by decide)

/-- Ornith-1.0 (35B) is lawful, whatever its value typing. -/
theorem ornith_lawful (ap : ArgsParams) : (formatX ornith ap).Lawful := lawfulX _ ap (by decide)

/-- Ornith-1.0-9B is lawful, whatever its value typing. -/
theorem ornith9b_lawful (ap : ArgsParams) : (formatX ornith9b ap).Lawful :=
  lawfulX _ ap (by decide)

end Verified.QwenXml

end
