module

public import Verified.Thm.DeepSeekV31Layout

public section

/-!
# DeepSeek-V3.1 is lawful

`format f` (`Spec/DeepSeekV31.lean`) is `Format.Lawful` for ids whose control tokens are
distinct (`lawfulV`), so the generic theorems of `Thm/Format.lean` (round trip, soundness,
injectivity of the lowered form, no forgery) hold for both DeepSeek-V3.1 entries in both
thinking modes (`v31_lawful`, `v31LlamaCpp_lawful`):

* each turn reads back from its symbols (`readTurn_turn`): a user turn's text up to the next
  control token, a result between its two tokens, an assistant turn after the header exactly
  when a user message precedes it (`fits`), else straight from its content;
* a whole layout reads back (`readTurns_layout`), the generation prompt told apart from a
  headed turn by length (`turn_ne_prompt`);
* soundness holds by construction (`unlayout` keeps a parse only when it lays out to its
  input), and every control token is reserved (`ctrls_layoutV`).
-/

namespace Verified.DeepSeekV31

open Verified Verified.DeepSeek

/-- The distinct control ids the readers tell apart. -/
structure V31Facts (i : DsIds) : Prop where
  uo : i.user ≠ i.outputBegin
  au : i.assistant ≠ i.user
  ao : i.assistant ≠ i.outputBegin
  eu : i.eos ≠ i.user
  eo : i.eos ≠ i.outputBegin
  cu : i.callsBegin ≠ i.user
  co : i.callsBegin ≠ i.outputBegin
  ec : i.eos ≠ i.callsBegin
  bE : i.callBegin ≠ i.callsEnd

/-- `DsIds.wf` gives the distinctness facts. -/
theorem v31Facts {i : DsIds} (hf : i.wf = true) : V31Facts i := by
  unfold DsIds.wf DsIds.ctrls at hf
  have hn := Qwen.nodup_of_nodupB hf
  exact ⟨Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn)⟩

variable (f : V31Fmt)

/-! ## Symbols of the pieces -/

/-- The symbols of the calls of a turn. -/
@[expose] def callsSyms (ks : List Call) : List Sym :=
  ks.flatMap fun k => .ctrl f.ids.callBegin ::
    (lit k.name ++ .ctrl f.ids.sep :: (lit k.args ++ [.ctrl f.ids.callEnd]))

theorem syms_calls (o : Nat) (ks : List Call) :
    syms (ks.flatMap (callItems f o)) = callsSyms f ks := by
  rw [syms_flatMap]
  unfold callsSyms
  simp [callItems, ctl, txt, Piece.syms, lit]

theorem len_callsSyms (ks : List Call) : ks.length ≤ (callsSyms f ks).length := by
  induction ks with
  | nil => simp [callsSyms]
  | cons k ks ih =>
    simp only [callsSyms, List.flatMap_cons, List.length_append, List.length_cons] at ih ⊢
    omega

theorem syms_header (o : Nat) : syms (header f o) = .ctrl f.ids.assistant ::
    ((if f.openThink then [Sym.ctrl f.ids.think.1] else []) ++ [.ctrl f.ids.think.2]) := by
  unfold header
  cases f.openThink <;> simp [ctl, Piece.syms]

theorem syms_header_owner (o : Nat) : syms (header f o) = syms (header f 0) := by
  simp only [syms_header]

theorem syms_genItems_cons (o : Nat) : ∃ g, syms (genItems f o) = .ctrl f.ids.assistant :: g := by
  unfold genItems
  cases f.thinking
  · exact ⟨_, syms_header f o⟩
  · exact ⟨[.ctrl f.ids.think.1], by simp [ctl, Piece.syms]⟩

theorem len_genItems (o : Nat) :
    (syms (genItems f 0)).length ≤ (syms (header f o)).length := by
  unfold genItems
  cases f.thinking
  · simp only [Bool.false_eq_true, ↓reduceIte, syms_header_owner f o]
    exact Nat.le_refl _
  · simp only [↓reduceIte, syms_header]
    cases f.openThink <;> simp [ctl, Piece.syms]

/-! ## Calls and bodies -/

theorem readCalls_calls (hw : V31Facts f.ids) : ∀ (ks : List Call) (n : Nat) (z : List Sym),
    ks ≠ [] → ks.length ≤ n →
    readCalls f n (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: z) = some (ks, z)
  | [], _, _, h, _ => absurd rfl h
  | [⟨a, b⟩], n, z, _, hn => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    simp [callsSyms, readCalls, takeText_lit_append, hw.bE.symm]
  | ⟨a, b⟩ :: k' :: ks, n, z, _, hn => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    have ih := readCalls_calls hw (k' :: ks) m z (List.cons_ne_nil _ _)
      (by simp only [List.length_cons] at hn ⊢; omega)
    have e : callsSyms f (⟨a, b⟩ :: k' :: ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: z =
        .ctrl f.ids.callBegin :: (lit a ++ .ctrl f.ids.sep :: (lit b ++ .ctrl f.ids.callEnd ::
          (callsSyms f (k' :: ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: z))) := by
      simp [callsSyms]
    have e' : callsSyms f (k' :: ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: z =
        .ctrl f.ids.callBegin :: (lit k'.name ++ .ctrl f.ids.sep :: (lit k'.args ++
          .ctrl f.ids.callEnd :: (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: z))) := by
      simp [callsSyms]
    rw [e]
    rw [e'] at ih ⊢
    simp only [readCalls, ↓reduceIte, takeText_lit_append, takeText_ctrl, List.append_nil]
    rw [ih]
    rfl

theorem body_answer (h : Bool) (x : Chars) (R : List Sym) :
    body f h (lit x ++ .ctrl f.ids.eos :: R) = some (.answer h (.text x) 0, R) := by
  simp [body, takeText_lit_append]

theorem body_calls (hw : V31Facts f.ids) (h : Bool) (x : Chars) (ks : List Call) (hk : ks ≠ [])
    (R : List Sym) :
    body f h (lit x ++ .ctrl f.ids.callsBegin ::
      (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R)) =
      some (.calls h (.text x) ks 0, R) := by
  have hl : ks.length ≤
      (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R).length := by
    have := len_callsSyms f ks
    simp only [List.length_append, List.length_cons]
    omega
  simp only [body, takeText_lit_append, takeText_ctrl, List.append_nil, hw.ec.symm, ↓reduceIte,
    readCalls_calls f hw ks _ R hk hl, Option.map_some]

/-! ## One turn -/

/-- The stream starts with a control token. -/
@[expose] def startsCtl : List Sym → Bool
  | .ctrl _ :: _ => true
  | _ => false

/-- The end, or a control token next. -/
@[expose] def CtlNext (R : List Sym) : Prop := R = [] ∨ startsCtl R = true

theorem takeText_ctlNext {R : List Sym} (h : CtlNext R) : takeText R = ([], R) := by
  rcases h with rfl | h
  · rfl
  · rcases R with _ | ⟨a | c | a, r⟩ <;> first | rfl | simp [startsCtl] at h

/-- Characters as symbols are `lit`. -/
theorem map_ch (x : Chars) : x.map Sym.ch = lit x := rfl

theorem readTurn_headless (hw : V31Facts f.ids) (l : Last) (hu : l.isUser = false)
    (hs : l.isStart = false) (s : List Sym) (h1 : ∀ r, s ≠ .ctrl f.ids.user :: r)
    (h2 : ∀ r, s ≠ .ctrl f.ids.outputBegin :: r) :
    readTurn f l s = (body f false s).map fun (t, z) => (t, .asst, z) := by
  rcases s with _ | ⟨a | c | a, r⟩
  · simp [readTurn, hu, hs]
  · have ha1 : a ≠ f.ids.user := fun e => h1 r (by rw [e])
    have ha2 : a ≠ f.ids.outputBegin := fun e => h2 r (by rw [e])
    simp [readTurn, ha1, ha2, hu, hs]
  · simp [readTurn, hu, hs]
  · simp [readTurn, hu, hs]

theorem readTurn_headed (hw : V31Facts f.ids) (l : Last) (hu : l.isUser = true) (z : List Sym) :
    readTurn f l (syms (header f 0) ++ z) = (body f true z).map fun (t, z') => (t, .asst, z') := by
  obtain ⟨hr, e⟩ : ∃ hr, syms (header f 0) = .ctrl f.ids.assistant :: hr := ⟨_, syms_header f 0⟩
  have ha : afterHeader f (syms (header f 0) ++ z) = some z := stripPrefix?_append _ _
  rw [e, List.cons_append] at ha
  rw [e, List.cons_append]
  simp only [readTurn, hw.au, hw.ao, ↓reduceIte, hu]
  rw [ha, Option.bind_some]

theorem content_not_ctl (hw : V31Facts f.ids) (x : Chars) (e : Token) (R : List Sym)
    (he : e ≠ f.ids.user ∧ e ≠ f.ids.outputBegin) :
    (∀ r, lit x ++ .ctrl e :: R ≠ .ctrl f.ids.user :: r) ∧
      ∀ r, lit x ++ .ctrl e :: R ≠ .ctrl f.ids.outputBegin :: r := by
  cases x with
  | nil =>
    refine ⟨fun r h => he.1 ?_, fun r h => he.2 ?_⟩ <;>
      simpa using (List.cons.inj h).1
  | cons c x => exact ⟨fun r h => by simp [lit] at h, fun r h => by simp [lit] at h⟩

/-- Each turn reads back from its symbols, whatever follows a turn that does not end in a
control token (a user turn's text) being the end or a control token. -/
theorem readTurn_turn (hw : V31Facts f.ids) (l : Last) (t : VTurn) (hok : turnOk f t = true)
    (htx : t.textual = true) (hfit : fits l t = true) (R : List Sym)
    (hR : t.step = .user → CtlNext R) :
    readTurn f l (syms (turnItems f t) ++ R) = some (t.erase, t.step, R) := by
  cases t with
  | user p o =>
    cases p with
    | toks _ => simp [VTurn.textual, isTextP] at htx
    | text x =>
      have := takeText_ctlNext (hR rfl)
      simp [turnItems, ctl, pay, Piece.syms, map_ch, readTurn, takeText_lit_append, this,
        VTurn.erase, VTurn.step]
  | result p o =>
    cases p with
    | toks _ => simp [VTurn.textual, isTextP] at htx
    | text x =>
      have e : syms (turnItems f (.result (.text x) o)) ++ R =
          .ctrl f.ids.outputBegin :: (lit x ++ .ctrl f.ids.outputEnd :: R) := by
        simp [turnItems, ctl, pay, Piece.syms, lit]
      rw [e]
      simp [readTurn, hw.uo.symm, takeText_lit_append, VTurn.erase, VTurn.step]
  | answer h c o =>
    cases c with
    | toks _ => simp [VTurn.textual, isTextP] at htx
    | text x =>
      simp only [fits, Bool.and_eq_true, Bool.not_eq_true', beq_iff_eq] at hfit
      obtain ⟨hs, rfl⟩ := hfit
      cases hu : l.isUser
      · have e : syms (turnItems f (.answer false (.text x) o)) ++ R =
            lit x ++ .ctrl f.ids.eos :: R := by
          simp [turnItems, openItems, ctl, pay, Piece.syms, lit]
        rw [e]
        obtain ⟨h1, h2⟩ := content_not_ctl f hw x _ R ⟨hw.eu, hw.eo⟩
        rw [readTurn_headless f hw l hu hs _ h1 h2, body_answer]
        rfl
      · have e : syms (turnItems f (.answer true (.text x) o)) ++ R =
            syms (header f 0) ++ (lit x ++ .ctrl f.ids.eos :: R) := by
          simp [turnItems, openItems, syms_header_owner f o, ctl, pay, Piece.syms, lit]
        rw [e, readTurn_headed f hw l hu, body_answer]
        rfl
  | calls h c ks o =>
    cases c with
    | toks _ => simp [VTurn.textual, isTextP] at htx
    | text x =>
      have hk : ks ≠ [] := by
        intro e
        simp [turnOk, e] at hok
      simp only [fits, Bool.and_eq_true, Bool.not_eq_true', beq_iff_eq] at hfit
      obtain ⟨hs, rfl⟩ := hfit
      have eb : syms ([pay (.text x) o true, ctl f.ids.callsBegin o true] ++
          ks.flatMap (callItems f o) ++ [ctl f.ids.callsEnd o true, ctl f.ids.eos o true]) ++ R =
          lit x ++ .ctrl f.ids.callsBegin ::
            (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R) := by
        simp [syms_calls, ctl, pay, Piece.syms, lit]
      cases hu : l.isUser
      · have e : syms (turnItems f (.calls false (.text x) ks o)) ++ R =
            lit x ++ .ctrl f.ids.callsBegin ::
              (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R) := by
          rw [← eb]
          simp [turnItems, openItems]
        rw [e]
        obtain ⟨h1, h2⟩ := content_not_ctl f hw x _ _ ⟨hw.cu, hw.co⟩
        rw [readTurn_headless f hw l hu hs _ h1 h2, body_calls f hw _ x ks hk]
        rfl
      · have e : syms (turnItems f (.calls true (.text x) ks o)) ++ R =
            syms (header f 0) ++ (lit x ++ .ctrl f.ids.callsBegin ::
              (callsSyms f ks ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R)) := by
          rw [← eb]
          simp [turnItems, openItems, syms_header_owner f o]
        rw [e, readTurn_headed f hw l hu, body_calls f hw _ x ks hk]
        rfl
  | sampled h ts o => simp [VTurn.textual] at htx

/-! ## Whole layouts -/

/-- The symbols of the generation prompt (none: nothing). -/
@[expose] def promptSymsV (p : Option Nat) : List Sym :=
  match p with
  | some o => syms (genItems f o)
  | none => []

theorem readTurns_eq (n : Nat) (l : Last) (s : List Sym) (hs : s ≠ []) :
    readTurns f (n + 1) l s = if l.isUser && s == syms (genItems f 0) then some ([], some 0)
      else (readTurn f l s).bind fun (t, l', z) =>
        (readTurns f n l' z).map fun (ts, p) => (t :: ts, p) := by
  cases s with
  | nil => exact absurd rfl hs
  | cons x xs => rfl

/-- A turn that may follow a user message is not the generation prompt. -/
theorem turn_ne_prompt (hw : V31Facts f.ids) (t : VTurn) (htx : t.textual = true)
    (hfit : fits .user t = true) (R : List Sym) :
    syms (turnItems f t) ++ R ≠ syms (genItems f 0) := by
  obtain ⟨g, hg⟩ := syms_genItems_cons f 0
  intro h
  cases t with
  | user p o =>
    rw [hg] at h
    simp only [turnItems, syms_cons, ctl, Piece.syms, List.cons_append, List.singleton_append,
      List.cons.injEq, Sym.ctrl.injEq] at h
    exact hw.au h.1.symm
  | result p o =>
    rw [hg] at h
    simp only [turnItems, syms_cons, ctl, Piece.syms, List.cons_append, List.singleton_append,
      List.cons.injEq, Sym.ctrl.injEq] at h
    exact hw.ao h.1.symm
  | answer hd c o =>
    simp only [fits, Last.isStart, Last.isUser, Bool.not_false, Bool.true_and, beq_iff_eq] at hfit
    subst hfit
    have hl := congrArg List.length h
    have := len_genItems f o
    simp only [turnItems, openItems, ↓reduceIte, syms_append, List.length_append] at hl
    simp [ctl, Piece.syms] at hl
    omega
  | calls hd c ks o =>
    simp only [fits, Last.isStart, Last.isUser, Bool.not_false, Bool.true_and, beq_iff_eq] at hfit
    subst hfit
    have hl := congrArg List.length h
    have := len_genItems f o
    simp only [turnItems, openItems, ↓reduceIte, syms_append, List.length_append] at hl
    simp [ctl, Piece.syms] at hl
    omega
  | sampled hd ts o => simp [VTurn.textual] at htx

/-- What follows a user turn in a layout is the end or a control token. -/
theorem ctlNext_rest (ts : List VTurn) (p : Option Nat) (hc : chain .user ts = true)
    (htx : ∀ t ∈ ts, t.textual = true) :
    CtlNext (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) := by
  cases ts with
  | nil =>
    cases p with
    | none => exact Or.inl rfl
    | some o =>
      obtain ⟨g, hg⟩ := syms_genItems_cons f o
      exact Or.inr (by simp [promptSymsV, hg, startsCtl])
  | cons t ts =>
    refine Or.inr ?_
    simp only [chain, Bool.and_eq_true] at hc
    have hfit := hc.1
    cases t with
    | user p o => simp [turnItems, ctl, Piece.syms, startsCtl]
    | result p o => simp [turnItems, ctl, Piece.syms, startsCtl]
    | answer hd c o =>
      simp only [fits, Last.isStart, Last.isUser, Bool.not_false, Bool.true_and, beq_iff_eq]
        at hfit
      subst hfit
      simp [turnItems, openItems, syms_header, startsCtl]
    | calls hd c ks o =>
      simp only [fits, Last.isStart, Last.isUser, Bool.not_false, Bool.true_and, beq_iff_eq]
        at hfit
      subst hfit
      simp [turnItems, openItems, syms_header, startsCtl]
    | sampled hd ts' o => simp [VTurn.textual] at htx

theorem turn_ne_nil (t : VTurn) : syms (turnItems f t) ≠ [] := by
  cases t with
  | user p o => simp [turnItems, ctl, Piece.syms]
  | answer h c o => cases h <;> simp [turnItems, openItems, ctl, Piece.syms]
  | calls h c ks o => cases h <;> simp [turnItems, openItems, ctl, Piece.syms]
  | result p o => simp [turnItems, ctl, Piece.syms]
  | sampled h ts o => cases h <;> simp [turnItems, ctl, Piece.syms]

theorem len_turns (ts : List VTurn) : ts.length ≤ (syms (ts.flatMap (turnItems f))).length := by
  induction ts with
  | nil => simp
  | cons t ts ih =>
    have := turn_ne_nil f t
    have : 0 < (syms (turnItems f t)).length := List.length_pos_iff.mpr this
    simp only [List.flatMap_cons, syms_append, List.length_append, List.length_cons]
    omega

/-- A layout whose turns were written in a chain reads back (owners 0). -/
theorem readTurns_layout (hw : V31Facts f.ids) : ∀ (ts : List VTurn) (l : Last) (p : Option Nat)
    (n : Nat), chain l ts = true → (∀ t ∈ ts, turnOk f t = true ∧ t.textual = true) →
    (p.isSome = true → final l ts = .user) → ts.length < n →
    readTurns f n l (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) =
      some (ts.map VTurn.erase, p.map fun _ => 0)
  | [], l, none, n, _, _, _, hn => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    rfl
  | [], l, some o, n, _, _, hp, hn => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    have hl : l = .user := hp rfl
    subst hl
    obtain ⟨g, hg⟩ := syms_genItems_cons f o
    have hne : syms (genItems f o) ≠ [] := by rw [hg]; exact List.cons_ne_nil _ _
    simp only [List.flatMap_nil, syms_nil, promptSymsV, List.nil_append]
    rw [readTurns_eq f m _ _ hne, syms_genItems_owner f o]
    simp [Last.isUser]
  | t :: ts, l, p, n, hc, hall, hp, hn => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    simp only [chain, Bool.and_eq_true] at hc
    obtain ⟨hok, htx⟩ := hall t List.mem_cons_self
    have e : syms ((t :: ts).flatMap (turnItems f)) ++ promptSymsV f p =
        syms (turnItems f t) ++ (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) := by
      simp
    rw [e]
    have hne : syms (turnItems f t) ++ (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) ≠ [] :=
      fun h => turn_ne_nil f t (List.append_eq_nil_iff.mp h).1
    rw [readTurns_eq f m _ _ hne]
    have hcond : (l.isUser && (syms (turnItems f t) ++
        (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) == syms (genItems f 0))) = false := by
      cases hu : l.isUser
      · rfl
      · have hl : l = .user := by cases l <;> simp_all [Last.isUser]
        subst hl
        simp only [Bool.true_and, beq_eq_false_iff_ne, ne_eq]
        exact turn_ne_prompt f hw t htx hc.1 _
    rw [hcond]
    simp only [Bool.false_eq_true, ↓reduceIte]
    have hR : t.step = .user → CtlNext (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) := by
      intro hs
      rw [hs] at hc
      exact ctlNext_rest f ts p hc.2 fun t' ht' => (hall t' (List.mem_cons_of_mem _ ht')).2
    rw [readTurn_turn f hw l t hok htx hc.1 _ hR, Option.bind_some]
    rw [readTurns_layout hw ts t.step p m hc.2 (fun t' ht' => hall t' (List.mem_cons_of_mem _ ht'))
      (fun h => by simpa [final] using hp h) (by simp only [List.length_cons] at hn; omega)]
    rfl

/-! ## The round trip and the format -/

/-- `unlayout` inverts `layout` (up to owners) on every lowered conversation whose layout is
text-only. -/
theorem unlayout_layoutV (hf : f.ids.wf = true) {c : Conversation} {q : VConv}
    (hl : lower f c = some q) (htx : textOnly (layout f q) = true) :
    unlayout f (syms (layout f q)) = some q.erase := by
  have hw := v31Facts hf
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, -, s, -, ⟨ts, l⟩, hlow, hl⟩ := hl
  split at hl
  · rename_i hok
    simp only [Option.some.injEq] at hl
    subst hl
    simp only [Bool.and_eq_true, List.all_eq_true] at hok
    obtain ⟨hch, hfin⟩ := lowerMsgs_chain c.messages 0 .start ts l hlow
    generalize hp : (if c.addGenerationPrompt && l.isUser then some c.messages.length
      else none) = p at htx ⊢
    have hpu : p.isSome = true → final .start ts = .user := by
      intro h
      rw [← hp] at h
      split at h
      · rename_i hg
        obtain ⟨-, hu⟩ := Bool.and_eq_true _ _ ▸ hg
        rw [← hfin]
        cases l <;> simp [Last.isUser] at hu ⊢
      · cases h
    have hall : ∀ t ∈ ts, turnOk f t = true ∧ t.textual = true := by
      intro t ht
      refine ⟨hok.2 t ht, textual_of_textOnlyV f t ?_⟩
      unfold textOnly at htx ⊢
      refine List.all_eq_true.mpr fun it hit => List.all_eq_true.mp htx it ?_
      unfold layout
      exact List.mem_append_left _ (List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hit⟩))
    obtain ⟨x, rfl⟩ : ∃ x, s = .text x := by
      have := isTextP_of_mem htx (p := s) (o := (sys.head?.map Prod.snd).getD 0) (l := false)
        (by unfold layout; exact List.mem_append_left _ (List.mem_append_left _ (by simp)))
      cases s with
      | text x => exact ⟨x, rfl⟩
      | toks _ => simp [isTextP] at this
    have e : syms (layout f ⟨.text x, (sys.head?.map Prod.snd).getD 0, ts, p⟩) =
        .ctrl f.ids.bos :: (lit x ++ (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p)) := by
      cases p <;> simp [layout, promptSymsV, ctl, pay, Piece.syms, lit]
    have hstart : CtlNext (syms (ts.flatMap (turnItems f)) ++ promptSymsV f p) := by
      cases ts with
      | nil =>
        cases p with
        | none => exact Or.inl rfl
        | some o => exact absurd (hpu rfl) (by simp [final])
      | cons t ts' =>
        refine Or.inr ?_
        simp only [chain, Bool.and_eq_true] at hch
        have hfit := hch.1
        cases t with
        | user _ _ => simp [turnItems, ctl, Piece.syms, startsCtl]
        | result _ _ => simp [turnItems, ctl, Piece.syms, startsCtl]
        | answer _ _ _ => simp [fits, Last.isStart] at hfit
        | calls _ _ _ _ => simp [fits, Last.isStart] at hfit
        | sampled _ _ _ => simp [fits, Last.isStart] at hfit
    have hread := readTurns_layout f hw ts .start p
      ((syms (ts.flatMap (turnItems f)) ++ promptSymsV f p).length + 1) hch hall hpu
      (by have := len_turns f ts; simp only [List.length_append]; omega)
    have hparse : parseV f (syms (layout f ⟨.text x, (sys.head?.map Prod.snd).getD 0, ts, p⟩)) =
        some (VConv.erase ⟨.text x, (sys.head?.map Prod.snd).getD 0, ts, p⟩) := by
      rw [e]
      simp only [parseV, ↓reduceIte, takeText_lit_append, takeText_ctlNext hstart,
        List.append_nil, hread, Option.map_some]
      rfl
    unfold unlayout
    rw [hparse, Option.bind_some, syms_layoutV_erase]
    simp
  · cases hl

/-- `unlayout` never invents a conversation: what it returns lays out to its input. -/
theorem layout_unlayoutV (s : List Sym) (q : VConv) (h : unlayout f s = some q) :
    syms (layout f q) = s := by
  unfold unlayout at h
  obtain ⟨q', -, h⟩ := Option.bind_eq_some_iff.mp h
  split at h
  · rename_i he
    cases h
    exact he
  · cases h

/-- Every DeepSeek-V3.1 format is lawful for ids whose control tokens are distinct. -/
theorem lawfulV (hf : f.ids.wf = true) : (format f).Lawful where
  unlayout_layout _ _ hl htx := unlayout_layoutV f hf hl htx
  layout_unlayout := layout_unlayoutV f
  ctrl_reserved l t ht := by
    have := ctrls_layoutV f l t ht
    simp [format, isReserved, DsIds.reserved, this]
  syms_erase := syms_layoutV_erase f

/-- `deepseek-v3.1` (the model repo's template) is lawful, in both thinking modes. -/
theorem v31_lawful (thinking : Bool) : (format (v31 thinking)).Lawful :=
  lawfulV _ (show r1Ids.wf = true by decide)

/-- `deepseek-v3.1-llama.cpp` is lawful, in both thinking modes. -/
theorem v31LlamaCpp_lawful (thinking : Bool) : (format (v31LlamaCpp thinking)).Lawful :=
  lawfulV _ (show r1Ids.wf = true by decide)

end Verified.DeepSeekV31

end
