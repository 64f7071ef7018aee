module

public import Verified.Thm.DeepSeekRead
public import Verified.Thm.Format

public section

/-!
# The DeepSeek-R1 round trip, and `Format.Lawful`

* `lowerMsgs_noAdj`: lowering never writes two runs of tool results in a row (a tool message
  after a tool message joins the open run; a system message leaves it open).
* `readTurns_layout`, `unlayout_read`: the readers read a text layout back turn by turn.
* `unlayout_layout`: `unlayout` inverts `layout` (up to owners) on every lowered conversation
  whose layout is text-only.
* `lawful`: every DeepSeek format (any model entry: R1 exact and stable, R1-Distill-Qwen)
  satisfies `Format.Lawful` for ids whose control tokens are distinct (`distill_lawful`: by
  `decide` on its ids), so `parse_render`, `render_parse`, `render_injective` and `no_forgery` of
  `Thm/Format.lean` hold for them (`r1_parse_render`, `r1_render_parse`, `r1_no_forgery`).
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- No two runs of tool results in a row. -/
@[expose] def noAdjB : List DTurn → Bool
  | a :: b :: l => !(a.isRes && b.isRes) && noAdjB (b :: l)
  | _ => true

theorem noAdjB_snoc : ∀ (l : List DTurn) (t : DTurn),
    noAdjB (l ++ [t]) = (noAdjB l && !((l.getLast?.map DTurn.isRes).getD false && t.isRes)) := by
  intro l
  induction l with
  | nil => intro t; simp [noAdjB]
  | cons a l ih =>
    intro t
    cases l with
    | nil => simp [noAdjB]
    | cons b l =>
      have e : noAdjB ((a :: b :: l) ++ [t]) = (!(a.isRes && b.isRes) && noAdjB ((b :: l) ++ [t])) :=
        rfl
      rw [e, ih t]
      simp only [noAdjB, List.getLast?_cons_cons, Bool.and_assoc]

theorem noAdj_cons_rev (t : DTurn) (acc : List DTurn) (ht : t.isRes = false)
    (h : noAdjB acc.reverse = true) : noAdjB (t :: acc).reverse = true := by
  rw [List.reverse_cons, noAdjB_snoc, h, ht]
  simp

theorem noAdj_addResult (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn)
    (h : noAdjB acc.reverse = true)
    (hacc : ∀ b rs, acc.head? = some (.results b rs) → fl.inTools = true) :
    noAdjB (addResult fl p i acc).reverse = true := by
  rcases acc with _ | ⟨t0, ts0⟩
  · rfl
  · cases t0 with
    | results b rs =>
      have hin := hacc b rs rfl
      simp only [addResult, hin, ↓reduceIte]
      rw [List.reverse_cons, noAdjB_snoc] at h ⊢
      simpa [DTurn.isRes] using h
    | user p' o =>
        rw [show addResult fl p i (.user p' o :: ts0) = .results fl.outFirst [(p, i)] ::
          .user p' o :: ts0 from rfl, List.reverse_cons, noAdjB_snoc, h]
        simp [DTurn.isRes]
    | assistant a th c o =>
        rw [show addResult fl p i (.assistant a th c o :: ts0) = .results fl.outFirst [(p, i)] ::
          .assistant a th c o :: ts0 from rfl, List.reverse_cons, noAdjB_snoc, h]
        simp [DTurn.isRes]
    | calls hd th ks o =>
        rw [show addResult fl p i (.calls hd th ks o :: ts0) = .results fl.outFirst [(p, i)] ::
          .calls hd th ks o :: ts0 from rfl, List.reverse_cons, noAdjB_snoc, h]
        simp [DTurn.isRes]
    | sampled a ts o =>
        rw [show addResult fl p i (.sampled a ts o :: ts0) = .results fl.outFirst [(p, i)] ::
          .sampled a ts o :: ts0 from rfl, List.reverse_cons, noAdjB_snoc, h]
        simp [DTurn.isRes]

theorem addResult_head (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn) :
    ∃ b rs, (addResult fl p i acc).head? = some (.results b rs) := by
  unfold addResult
  split
  · split
    · exact ⟨_, _, rfl⟩
    · exact ⟨_, _, rfl⟩
  · exact ⟨_, _, rfl⟩

/-- Lowering never writes two runs of tool results in a row. -/
theorem lowerMsgs_noAdj :
    ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn) (fl' : Flags),
      lowerMsgs f i fl acc ms = some (ts, fl') → noAdjB acc.reverse = true →
      (∀ b rs, acc.head? = some (.results b rs) → fl.inTools = true) → noAdjB ts = true := by
  intro ms
  induction ms with
  | nil =>
    intro i fl acc ts fl' h hn _
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    rw [← h.1]
    exact hn
  | cons m ms ih =>
    intro i fl acc ts fl' h hn hacc
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system => exact ih _ _ _ _ _ h hn hacc
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      exact ih _ _ _ _ _ h (noAdj_cons_rev _ _ rfl hn) (fun b rs e => by cases e)
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      exact ih _ _ _ _ _ h (noAdj_addResult fl p i acc hn hacc) (fun _ _ _ => rfl)
    | assistant =>
      simp only [lowerMsgs] at h
      split at h
      · exact ih _ _ _ _ _ h (noAdj_cons_rev _ _ rfl hn) (fun b rs e => by cases e)
      · simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨r, c, ks⟩, -, h⟩ := h
        dsimp only at h
        split at h
        · exact ih _ _ _ _ _ h (noAdj_cons_rev _ _ rfl hn) (fun b rs e => by cases e)
        · exact ih _ _ _ _ _ h (noAdj_cons_rev _ _ rfl hn) (fun b rs e => by cases e)

/-! ## Reading the turns back -/

theorem syms_flatMap_cons (t : DTurn) (ts : List DTurn) (P : List Sym) :
    syms ((t :: ts).flatMap (turnItems f)) ++ P =
      syms (turnItems f t) ++ (syms (ts.flatMap (turnItems f)) ++ P) := by
  simp [List.flatMap_cons]

theorem len_turn (t : DTurn) (hok : turnOk f t = true) : 1 ≤ (syms (turnItems f t)).length := by
  cases t with
  | user p o => simp [turnItems]
  | assistant a th c o => cases a <;> simp [turnItems, promptItems]
  | calls h th ks o => simp [turnItems]
  | results b rs =>
    cases b
    · simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
      obtain ⟨r, rs', rfl⟩ := List.exists_cons_of_ne_nil hok.1
      simp [turnItems, resultItems]
    · simp [turnItems]
  | sampled a ts o => simp [turnItems, syms_genItems_eq] <;> omega

theorem size_le (t : DTurn) : t.size ≤ (syms (turnItems f t)).length := by
  cases t with
  | calls h th ks o =>
    cases h
    · have := len_callsItems f true o ks
      simp [turnItems, DTurn.size]
      omega
    · have := len_callsItems f false o ks
      simp [turnItems, DTurn.size]
      omega
  | results b rs =>
    have := len_results f rs
    cases b <;> simp [turnItems, DTurn.size] <;> omega
  | _ => simp [DTurn.size]

theorem turn_ne_single (t : DTurn) (hok : turnOk f t = true) (R : List Sym) (y : Token)
    (hy : y ≠ f.ids.user) : syms (turnItems f t) ++ R ≠ [.ctrl y] := by
  intro h
  cases t with
  | user p o =>
    obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.user p o)) ++ R = .ctrl f.ids.user :: r' :=
      ⟨_, rfl⟩
    rw [e] at h
    exact hy (Sym.ctrl.inj (List.cons.inj h).1).symm
  | assistant a th c o =>
    have := congrArg List.length h
    cases a <;> simp [turnItems, promptItems] at this <;> omega
  | calls hd th ks o =>
    have := congrArg List.length h
    simp [turnItems] at this
    all_goals omega
  | results b rs =>
    have := congrArg List.length h
    simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
    have hl2 : 2 ≤ (syms (turnItems f (.results b rs))).length := by
      obtain ⟨r, rs', rfl⟩ := List.exists_cons_of_ne_nil hok.1
      cases b <;> simp [turnItems, resultItems] <;> omega
    rw [List.length_append, List.length_singleton] at this
    omega
  | sampled a ts o =>
    have := congrArg List.length h
    simp [turnItems, syms_genItems_eq] at this <;> omega

/-- With `promptThink`, no turn (followed by anything) reads as the bare generation prompt
`'<｜Assistant｜><think>\n'`: a turn headed `<｜Assistant｜>` is longer, or puts its content or
`<｜end▁of▁sentence｜>` where the prompt has `<think>`. -/
theorem turn_ne_think (hw : WfFacts f.ids) (hp : f.promptThink = true) (t : DTurn)
    (hok : turnOk f t = true) (R : List Sym) :
    syms (turnItems f t) ++ R ≠ [.ctrl f.ids.assistant, .ctrl f.ids.think.1, .ch '\n'] := by
  intro h
  cases t with
  | user p o =>
    obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.user p o)) ++ R = .ctrl f.ids.user :: r' :=
      ⟨_, rfl⟩
    rw [e] at h
    exact hw.ua (Sym.ctrl.inj (List.cons.inj h).1)
  | assistant a th c o =>
    cases a
    · cases th with
      | some r =>
        have := congrArg List.length h
        cases r <;> simp [turnItems, promptItems, thinkItems, pay, ctl, txt, Piece.syms] at this <;> omega
      | none =>
        cases c with
        | text cs =>
          cases cs <;> simp [turnItems, promptItems, thinkItems, pay, ctl, Piece.syms] at h <;>
            first | exact hw.et h.1 | exact hw.et h.1.symm | exact hw.et h | exact hw.et h.symm
        | toks ts =>
          cases ts <;> simp [turnItems, promptItems, thinkItems, pay, ctl, Piece.syms] at h <;>
            first | exact hw.et h.1 | exact hw.et h.1.symm | exact hw.et h | exact hw.et h.symm
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.assistant true th c o)) ++ R =
          .ctrl f.ids.outputsEnd :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.aoe (Sym.ctrl.inj (List.cons.inj h).1).symm
  | calls hd th ks o =>
    simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
    obtain ⟨k, ks', rfl⟩ := List.exists_cons_of_ne_nil hok.1.2
    have := congrArg List.length h
    cases hd <;> simp [turnItems, callsItems, callItems, callType, ctl, txt, Piece.syms] at this <;> omega
  | results b rs =>
    simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
    obtain ⟨r, rs', rfl⟩ := List.exists_cons_of_ne_nil hok.1
    cases b <;> simp [turnItems, resultItems, ctl, Piece.syms] at h <;>
      first | exact hw.ao h.1.symm | exact hw.aob h.1.symm | exact hw.ao h.symm |
        exact hw.aob h.symm
  | sampled a ts o =>
    cases a
    · have := congrArg List.length h
      simp [turnItems, genItems_think f hp, ctl, txt, Piece.syms] at this <;> omega
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.sampled true ts o)) ++ R =
          .ctrl f.ids.outputsEnd :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.aoe (Sym.ctrl.inj (List.cons.inj h).1).symm

/-- No turn (followed by anything) reads as the generation prompt `syms (genItems f false 0)`. -/
theorem turn_ne_prompt (hw : WfFacts f.ids) (t : DTurn) (hok : turnOk f t = true)
    (R : List Sym) : syms (turnItems f t) ++ R ≠ syms (genItems f false 0) := by
  cases hp : f.promptThink
  · rw [genItems_of_not f hp]
    exact turn_ne_single f t hok R f.ids.assistant (Ne.symm hw.ua)
  · rw [genItems_think f hp]
    exact turn_ne_think f hw hp t hok R

theorem rest_good (hw : WfFacts f.ids) (ts : List DTurn) (p : Option (Bool × Nat))
    (hall : ∀ t ∈ ts, turnOk f t = true) :
    Good f (syms (ts.flatMap (turnItems f)) ++ promptSyms f p) := by
  cases ts with
  | nil =>
    rcases p with _ | ⟨a, o⟩
    · exact Or.inl rfl
    · cases a
      · exact Or.inr (Or.inl ⟨_, _, rfl, hw.ac⟩)
      · exact Or.inr (Or.inl ⟨_, _, rfl, hw.oec⟩)
  | cons t ts =>
    rw [syms_flatMap_cons]
    exact good_turn f hw t (hall t List.mem_cons_self) _

theorem rest_not_ob (hw : WfFacts f.ids) (ts : List DTurn) (p : Option (Bool × Nat))
    (hall : ∀ t ∈ ts, turnOk f t = true) (hh : ∀ t ∈ ts.head?, t.isRes = false) :
    ∀ r, syms (ts.flatMap (turnItems f)) ++ promptSyms f p ≠ .ctrl f.ids.outputBegin :: r := by
  cases ts with
  | nil =>
    intro r h
    rcases p with _ | ⟨a, o⟩
    · cases h
    · cases a
      · simp [promptSyms, syms_genItems_eq] at h
        exact hw.ao h.1
      · simp [promptSyms, syms_genItems_eq] at h
        exact hw.oeo h.1
  | cons t ts =>
    rw [syms_flatMap_cons]
    exact head_not_outputBegin f hw t (hall t List.mem_cons_self) (hh t rfl) _

theorem readTurns_layout (hw : WfFacts f.ids) :
    ∀ (ts : List DTurn) (p : Option (Bool × Nat)) (n : Nat),
      (∀ t ∈ ts, turnOk f t = true ∧ t.textual = true) → noAdjB ts = true →
      (syms (ts.flatMap (turnItems f)) ++ promptSyms f p).length < n →
      readTurns f n (syms (ts.flatMap (turnItems f)) ++ promptSyms f p) =
        some (ts.map DTurn.erase, p.map fun q => (q.1, 0)) := by
  intro ts
  induction ts with
  | nil =>
    intro p n _ _ hn
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by omega⟩
    rcases p with _ | ⟨a, o⟩
    · simp [promptSyms, readTurns]
    · cases a
      · cases hp : f.promptThink <;>
          simp [promptSyms, readTurns, syms_genItems_eq, thinkOpen, hp, ctl, txt]
      · simp [promptSyms, readTurns, syms_genItems_eq, thinkOpen, Ne.symm hw.aoe]
  | cons t ts ih =>
    intro p n hall hadj hn
    have ht := hall t List.mem_cons_self
    have hall' : ∀ t ∈ ts, turnOk f t = true ∧ t.textual = true :=
      fun t' h' => hall t' (List.mem_cons_of_mem _ h')
    have hadj' : noAdjB ts = true := by
      cases ts with
      | nil => rfl
      | cons t' ts' =>
        simp only [noAdjB, Bool.and_eq_true] at hadj
        exact hadj.2
    have hres : t.isRes = true → ∀ r, syms (ts.flatMap (turnItems f)) ++ promptSyms f p ≠
        .ctrl f.ids.outputBegin :: r := by
      intro htr
      refine rest_not_ob f hw ts p (fun t' h' => (hall' t' h').1) ?_
      intro t' ht'
      cases ts with
      | nil => cases ht'
      | cons t1 ts1 =>
        cases ht'
        simp only [noAdjB, Bool.and_eq_true, htr, Bool.true_and, Bool.not_eq_true'] at hadj
        exact hadj.1
    rw [syms_flatMap_cons] at hn ⊢
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by omega⟩
    have hlen := len_turn f t ht.1
    have hsz := size_le f t
    have hread := readTurn_turn f hw m t ht.1 ht.2 _
      (rest_good f hw ts p (fun t' h' => (hall' t' h').1)) hres
      (by simp only [List.length_append] at hn; omega)
    have h1 := turn_ne_prompt f hw t ht.1 (syms (ts.flatMap (turnItems f)) ++ promptSyms f p)
    have h2 := turn_ne_single f t ht.1 (syms (ts.flatMap (turnItems f)) ++ promptSyms f p)
      f.ids.outputsEnd (Ne.symm hw.uoe)
    have hlt : (syms (ts.flatMap (turnItems f)) ++ promptSyms f p).length <
        (syms (turnItems f t) ++ (syms (ts.flatMap (turnItems f)) ++ promptSyms f p)).length := by
      simp only [List.length_append] at hn ⊢
      omega
    have hih := ih p m hall' hadj' (by simp only [List.length_append] at hn ⊢; omega)
    obtain ⟨y, ys, hy⟩ : ∃ y ys, syms (turnItems f t) ++
        (syms (ts.flatMap (turnItems f)) ++ promptSyms f p) = y :: ys := by
      cases e : syms (turnItems f t) with
      | nil => rw [e] at hlen; simp at hlen
      | cons y ys => exact ⟨y, _, rfl⟩
    rw [hy]
    simp only [readTurns]
    rw [← hy]
    simp only [h1, h2, ↓reduceIte, hread, Option.bind_some, hlt, hih, Option.map_some,
      List.map_cons]

/-- A text layout reads back: BOS, the system text, the turns, the prompt. -/
theorem unlayout_read (hw : WfFacts f.ids) (x : Chars) (so : Nat) (ts : List DTurn)
    (p : Option (Bool × Nat)) (hall : ∀ t ∈ ts, turnOk f t = true ∧ t.textual = true)
    (hadj : noAdjB ts = true) :
    unlayout f (syms (layout f ⟨.text x, so, ts, p⟩)) =
      some ⟨.text x, 0, ts.map DTurn.erase, p.map fun q => (q.1, 0)⟩ := by
  have e : syms (layout f ⟨.text x, so, ts, p⟩) =
      .ctrl f.ids.bos :: (lit x ++ (syms (ts.flatMap (turnItems f)) ++ promptSyms f p)) := by
    cases p <;> simp [layout, promptSyms]
  rw [e]
  unfold unlayout
  simp only [↓reduceIte, splitTail_good f x _ (rest_good f hw ts p (fun t h => (hall t h).1)),
    readTurns_layout f hw ts p _ hall hadj (Nat.lt_succ_self _), Option.map_some]

/-! ## Text-only layouts -/

theorem isTextP_of_mem {items : List Item} (h : textOnly items = true) {p : LPay} {o : Nat}
    {l : Bool} (hm : pay p o l ∈ items) : isTextP p = true := by
  unfold textOnly at h
  have := List.all_eq_true.mp h _ hm
  cases p
  · rfl
  · simp [pay, Piece.isToks] at this

theorem textual_of_textOnly (t : DTurn) (h : textOnly (turnItems f t) = true) :
    t.textual = true := by
  cases t with
  | user p o => exact isTextP_of_mem h (o := o) (l := false) (by simp [turnItems])
  | assistant a th c o =>
    have hc : isTextP c = true := isTextP_of_mem h (o := o) (l := true) (by simp [turnItems])
    cases th with
    | none => simp [DTurn.textual, hc]
    | some r =>
      have hr : isTextP r = true :=
        isTextP_of_mem h (o := o) (l := true) (by simp [turnItems, thinkItems])
      simp [DTurn.textual, hc, hr]
  | calls hd th ks o =>
    have hth : th.all isTextP = true := by
      cases th with
      | none => rfl
      | some r =>
        cases hd <;>
        simpa using isTextP_of_mem h (p := r) (o := o) (l := true) (by simp [turnItems, thinkItems])
    cases hd with
    | none => simp [DTurn.textual, hth]
    | some c =>
      have hc : isTextP c = true := isTextP_of_mem h (o := o) (l := true) (by simp [turnItems])
      simp [DTurn.textual, hth, hc]
  | results b rs =>
    refine List.all_eq_true.mpr fun r hr => isTextP_of_mem h (o := r.2) (l := false) ?_
    simp only [turnItems, List.mem_append, List.mem_flatMap]
    exact Or.inr ⟨r, hr, by simp [resultItems]⟩
  | sampled a ts o =>
    unfold textOnly at h
    have := List.all_eq_true.mp h ⟨.toks ts, ⟨o, true⟩⟩ (by simp [turnItems])
    simp [Piece.isToks] at this

/-! ## The round trip -/

/-- `unlayout` inverts `layout` (up to owners) on every lowered conversation whose layout is
text-only. -/
theorem unlayout_layout (hf : f.ids.wf = true) {c : Conversation} {l : DConv}
    (hl : lower f c = some l) (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, -, s, -, ⟨us, fl⟩, hlow, hl⟩ := hl
  split at hl
  · rename_i hok
    simp only [Option.some.injEq] at hl
    subst hl
    simp only [Bool.and_eq_true, List.all_eq_true] at hok
    have hmem : ∀ t ∈ us, ∀ it ∈ turnItems f t, it ∈ layout f ⟨s, (sys.head?.map Prod.snd).getD 0,
        us, if fl.inTools then some (true, c.messages.length)
          else if c.addGenerationPrompt then some (false, c.messages.length) else none⟩ := by
      intro t ht it hit
      unfold layout
      exact List.mem_append_left _ (List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hit⟩))
    have hall : ∀ t ∈ us, turnOk f t = true ∧ t.textual = true := by
      intro t ht
      refine ⟨hok.2 t ht, textual_of_textOnly f t ?_⟩
      unfold textOnly at htx ⊢
      exact List.all_eq_true.mpr fun it hit => List.all_eq_true.mp htx it (hmem t ht it hit)
    have hadj := lowerMsgs_noAdj f c.messages 0 _ [] us fl hlow rfl (fun _ _ e => by cases e)
    obtain ⟨x, rfl⟩ : ∃ x, s = .text x := by
      have := isTextP_of_mem htx (p := s) (o := (sys.head?.map Prod.snd).getD 0) (l := false)
        (by unfold layout; exact List.mem_append_left _ (List.mem_append_left _ (by simp)))
      cases s with
      | text x => exact ⟨x, rfl⟩
      | toks _ => simp [isTextP] at this
    rw [unlayout_read f hw x _ us _ hall hadj]
    rfl
  · cases hl

/-- The entry's lowering answers as `lower` does, on the conversations it admits. -/
theorem lower_of_entry {c : Conversation} {l : DConv} (h : lowerEntry f c = some l) :
    lower f c = some l := by
  unfold lowerEntry at h
  split at h
  · exact h
  · cases h

/-- Every DeepSeek format (any model entry) is lawful for ids whose control tokens are
distinct. -/
theorem lawful (hf : f.ids.wf = true) : (format f).Lawful :=
  ⟨fun _ _ hl ht => unlayout_layout f hf (lower_of_entry f hl) ht,
    fun s l h => layout_unlayout f s l h,
    fun l t ht => by
      have := ctrls_layout f l t ht
      simp [format, isReserved, DsIds.reserved, this],
    syms_layout_erase f⟩

/-- The shipped ids: `deepseek-r1` and `deepseek-r1-stable` are lawful. -/
theorem r1_lawful (m : Mode) : (format (r1 m)).Lawful := by
  have h : r1Ids.wf = true := by decide
  exact lawful _ h

/-- DeepSeek-R1 admits every conversation: its format lowers as `lower`. -/
theorem r1_lowerEntry (m : Mode) (c : Conversation) : (format (r1 m)).lower c = lower (r1 m) c := by
  simp [format, lowerEntry, admits, r1]

/-- The DeepSeek-R1-Distill-Qwen entry is lawful: its control ids are distinct (`decide`). -/
theorem distill_lawful : (format distill).Lawful := by
  have h : distillIds.wf = true := by decide
  exact lawful _ h

/-- Parsing the render of a conversation gives back its lowered form (owners erased), for
both DeepSeek-R1 formats and every lawful codec. -/
theorem r1_parse_render (m : Mode) {codec : Codec} (hc : codec.Lawful r1Ids.reserved)
    {c : Conversation} {l : DConv} (hl : lower (r1 m) c = some l)
    (ht : textOnly (layout (r1 m) l) = true) :
    (format (r1 m)).parse codec (ids (encodeItems codec (layout (r1 m) l))) =
      some l.erase :=
  Format.parse_render (r1_lawful m) hc ((r1_lowerEntry m c).trans hl) ht

/-- The DeepSeek-R1 parser never invents a conversation: what it accepts re-renders to exactly
the input tokens. -/
theorem r1_render_parse (m : Mode) {codec : Codec} {ts : List Token} {l : DConv}
    (h : (format (r1 m)).parse codec ts = some l) :
    ids (encodeItems codec (layout (r1 m) l)) = ts :=
  Format.render_parse (r1_lawful m) h

/-- Two conversations with the same DeepSeek-R1 render have the same lowered form up to
owners. -/
theorem r1_render_injective (m : Mode) {codec : Codec} (hc : codec.Lawful r1Ids.reserved)
    {c d : Conversation} {l l' : DConv} (hl : lower (r1 m) c = some l)
    (hl' : lower (r1 m) d = some l') (ht : textOnly (layout (r1 m) l) = true)
    (ht' : textOnly (layout (r1 m) l') = true)
    (h : ids (encodeItems codec (layout (r1 m) l)) =
      ids (encodeItems codec (layout (r1 m) l'))) : l.erase = l'.erase :=
  Format.render_injective_lowered (r1_lawful m) hc ((r1_lowerEntry m c).trans hl)
    ((r1_lowerEntry m d).trans hl') ht ht' h

/-- No forgery: the reserved tokens of a DeepSeek-R1 render are exactly the control tokens
its layout placed, in order. -/
theorem r1_no_forgery (m : Mode) {codec : Codec} (hc : codec.Lawful r1Ids.reserved)
    (l : DConv) (ht : textOnly (layout (r1 m) l) = true) :
    (ids (encodeItems codec (layout (r1 m) l))).filter (isReserved r1Ids.reserved) =
      ctrls (syms (layout (r1 m) l)) :=
  Format.no_forgery (r1_lawful m) hc l ht

end Verified.DeepSeek

end
