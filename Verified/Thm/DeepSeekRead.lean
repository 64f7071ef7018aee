module

public import Verified.Thm.DeepSeekSound
public import Verified.Thm.QwenParse

public section

/-!
# Reading DeepSeek-R1 turns back

Each reader of `Spec/DeepSeek.lean` returns, on the symbols of a readable text turn followed by
what may follow it, the turn (owners erased) and exactly what follows:

* `bodyStart_none`, `bodyStart_some`: an optional think block;
* `callPiece_call`, `readCalls_calls`: the calls of a message, up to
  `<｜tool▁calls▁end｜><｜end▁of▁sentence｜>` (a name clear of `'\n```json\n'` splits at its
  first occurrence);
* `readResults_results`: a run of tool results, as long as no result follows it;
* `readTurn_turn`: any turn, when what follows is `Good` (the end, a control token other than
  `<｜tool▁call▁begin｜>`, or a later call turn's `'\n' + '<｜tool▁call▁begin｜>'`): the
  user text then gives back the `'\n'` it swallowed (`splitTail`).

`WfFacts` lists the distinctness facts of the control ids that the readers use, from
`DsIds.wf`.
-/

namespace Verified.DeepSeek

open Verified

/-- The distinct control ids the readers tell apart. -/
structure WfFacts (i : DsIds) : Prop where
  ua : i.user ≠ i.assistant
  uoe : i.user ≠ i.outputsEnd
  uob : i.user ≠ i.outputsBegin
  uo : i.user ≠ i.outputBegin
  ut : i.user ≠ i.think.1
  uc : i.user ≠ i.callBegin
  aoe : i.assistant ≠ i.outputsEnd
  aob : i.assistant ≠ i.outputsBegin
  ao : i.assistant ≠ i.outputBegin
  at' : i.assistant ≠ i.think.1
  ac : i.assistant ≠ i.callBegin
  oeob : i.outputsEnd ≠ i.outputsBegin
  oeo : i.outputsEnd ≠ i.outputBegin
  oet : i.outputsEnd ≠ i.think.1
  oec : i.outputsEnd ≠ i.callBegin
  obo : i.outputsBegin ≠ i.outputBegin
  obt : i.outputsBegin ≠ i.think.1
  obc : i.outputsBegin ≠ i.callBegin
  ot : i.outputBegin ≠ i.think.1
  oc : i.outputBegin ≠ i.callBegin
  tc : i.think.1 ≠ i.callBegin
  et : i.eos ≠ i.think.1
  cbt : i.callsBegin ≠ i.think.1
  cbe : i.callsBegin ≠ i.eos

/-- `DsIds.wf` gives the distinctness facts. -/
theorem wfFacts {i : DsIds} (hf : i.wf = true) : WfFacts i := by
  unfold DsIds.wf DsIds.ctrls at hf
  have hn := Qwen.nodup_of_nodupB hf
  exact ⟨Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn)⟩

variable (f : DsFmt)

/-- A text payload. -/
@[expose] def isTextP : LPay → Bool
  | .text _ => true
  | .toks _ => false

/-- A turn whose payloads are all text (hence not a sampled turn). -/
@[expose] def DTurn.textual : DTurn → Bool
  | .user p _ => isTextP p
  | .assistant _ th c _ => th.all isTextP && isTextP c
  | .calls h th _ _ => h.all isTextP && th.all isTextP
  | .results _ rs => rs.all fun r => isTextP r.1
  | .sampled _ _ _ => false

/-- A run of tool results. -/
@[expose] def DTurn.isRes : DTurn → Bool
  | .results _ _ => true
  | _ => false

/-- How many pieces a turn's reader loops over: calls, results. -/
@[expose] def DTurn.size : DTurn → Nat
  | .calls _ _ ks _ => ks.length
  | .results _ rs => rs.length
  | _ => 0

/-- What may follow a turn read by `readTurn`: the end, a control token other than
`<｜tool▁call▁begin｜>`, or a later call turn's `'\n' + '<｜tool▁call▁begin｜>'`. -/
@[expose] def Good (R : List Sym) : Prop :=
  R = [] ∨ (∃ t r, R = .ctrl t :: r ∧ t ≠ f.ids.callBegin) ∨
    ∃ r, R = .ch '\n' :: .ctrl f.ids.callBegin :: r

/-! ## Think blocks -/

theorem syms_thinkItems_some (o : Nat) (r : Chars) :
    syms (thinkItems f o (some (.text r))) =
      .ctrl f.ids.think.1 :: (lit (['\n'] ++ r ++ ['\n']) ++
        .ctrl f.ids.think.2 :: lit ['\n', '\n']) := by
  simp [thinkItems]

theorem bodyStart_none (R : List Sym) (hR : ∀ r, R ≠ .ctrl f.ids.think.1 :: r) :
    bodyStart f R = some (none, R) := by
  unfold bodyStart
  rcases R with _ | ⟨t | c | t, rest⟩
  · rfl
  · have ht : t ≠ f.ids.think.1 := fun e => hR rest (by rw [e])
    simp [ht]
  · rfl
  · rfl

theorem bodyStart_some (r : Chars) (R : List Sym) :
    bodyStart f (.ctrl f.ids.think.1 :: (lit (['\n'] ++ r ++ ['\n']) ++
      .ctrl f.ids.think.2 :: (lit ['\n', '\n'] ++ R))) = some (some (.text r), R) := by
  have e : takeText (lit (['\n'] ++ r ++ ['\n']) ++ .ctrl f.ids.think.2 :: (lit ['\n', '\n'] ++ R)) =
      (['\n'] ++ r ++ ['\n'], .ctrl f.ids.think.2 :: (lit ['\n', '\n'] ++ R)) :=
    Qwen.takeText_lit_of _ _ rfl
  have s1 : stripPrefix? ['\n'] (['\n'] ++ r ++ ['\n']) = some (r ++ ['\n']) := by
    rw [List.append_assoc]
    exact stripPrefix?_append _ _
  have s2 : stripSuffix? ['\n'] (r ++ ['\n']) = some r := stripSuffix?_append _ _
  have s3 : stripPrefix? (lit ['\n', '\n']) (lit ['\n', '\n'] ++ R) = some R :=
    stripPrefix?_append _ _
  unfold bodyStart
  simp only [↓reduceIte, e, s1, s2, s3, Option.bind_some, Option.map_some]

/-- The symbols of an optional think block followed by `R`, read by `bodyStart`. -/
theorem bodyStart_think (o : Nat) (th : Option LPay) (hth : th.all isTextP = true)
    (R : List Sym) (hR : ∀ r, R ≠ .ctrl f.ids.think.1 :: r) :
    bodyStart f (syms (thinkItems f o th) ++ R) = some (th, R) := by
  rcases th with _ | ⟨r | ts⟩
  · exact bodyStart_none f R hR
  · rw [syms_thinkItems_some, List.cons_append, List.append_assoc, List.cons_append]
    exact bodyStart_some f r R
  · simp [isTextP] at hth

/-! ## Calls -/

/-- The text of a call between `<｜tool▁sep｜>` and `<｜tool▁call▁end｜>`. -/
@[expose] def callText (k : Call) : Chars := k.name ++ jsonOpen ++ k.args ++ jsonClose

theorem callPiece_call (k : Call) (hk : clearOf jsonOpen k.name = true) (R : List Sym) :
    callPiece f (lit callType ++ .ctrl f.ids.sep :: (lit (callText k) ++
      .ctrl f.ids.callEnd :: R)) = some (k, R) := by
  have e1 : takeText (lit callType ++ .ctrl f.ids.sep ::
      (lit (callText k) ++ .ctrl f.ids.callEnd :: R)) =
      (callType, .ctrl f.ids.sep :: (lit (callText k) ++ .ctrl f.ids.callEnd :: R)) :=
    Qwen.takeText_lit_of _ _ rfl
  have e2 : takeText (lit (callText k) ++ .ctrl f.ids.callEnd :: R) =
      (callText k, .ctrl f.ids.callEnd :: R) :=
    Qwen.takeText_lit_of _ _ rfl
  have s1 : stripSuffix? jsonClose (callText k) = some (k.name ++ jsonOpen ++ k.args) :=
    stripSuffix?_append _ _
  have s2 : splitFirst jsonOpen (k.name ++ jsonOpen ++ k.args) = some (k.name, k.args) :=
    splitFirst_of_clearOf _ hk
  unfold callPiece
  simp only [e1, e2, and_self, ↓reduceIte, s1, s2, Option.bind_some, Option.map_some]

theorem syms_callsItems_cons (o : Nat) (k : Call) (ks : List Call) (X : List Sym) :
    syms (callsItems f false o (k :: ks)) ++ X = .ctrl f.ids.callBegin :: (lit callType ++
      .ctrl f.ids.sep :: (lit (callText k) ++ .ctrl f.ids.callEnd ::
        (syms (callsItems f true o ks) ++ X))) := by
  simp [callsItems, callItems, callText]

theorem syms_callsItems_true (o : Nat) (k : Call) (ks : List Call) :
    syms (callsItems f true o (k :: ks)) = .ch '\n' :: syms (callsItems f false o (k :: ks)) := by
  simp [callsItems, callItems]

theorem len_callsItems (nl : Bool) (o : Nat) :
    ∀ ks : List Call, ks.length ≤ (syms (callsItems f nl o ks)).length := by
  intro ks
  induction ks generalizing nl with
  | nil => simp
  | cons k ks ih =>
    have := ih true
    cases nl <;> simp [callsItems, callItems] <;> omega

theorem readCalls_calls (o : Nat) :
    ∀ (ks : List Call) (n : Nat) (R : List Sym), ks ≠ [] → ks.length ≤ n →
      (ks.all fun k => clearOf jsonOpen k.name) = true →
      readCalls f n (syms (callsItems f false o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R) =
        some (ks, R) := by
  intro ks
  induction ks with
  | nil => intro n R h; exact absurd rfl h
  | cons k ks ih =>
    intro n R _ hn hc
    simp only [List.all_cons, Bool.and_eq_true] at hc
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    rw [syms_callsItems_cons]
    simp only [readCalls, ↓reduceIte]
    rw [callPiece_call f k hc.1]
    cases ks with
    | nil => simp [callsItems]
    | cons k' ks' =>
      have ih' := ih m R (List.cons_ne_nil _ _) (by simp at hn ⊢; omega) hc.2
      rw [syms_callsItems_cons] at ih'
      rw [syms_callsItems_true, List.cons_append, syms_callsItems_cons]
      simp only [Option.bind_some, and_self, ↓reduceIte, ih', Option.map_some]

/-! ## Results -/

theorem syms_results_cons (x : Chars) (o : Nat) (rs : List (LPay × Nat)) (X : List Sym) :
    syms (((LPay.text x, o) :: rs).flatMap (resultItems f)) ++ X =
      .ctrl f.ids.outputBegin :: (lit x ++ .ctrl f.ids.outputEnd ::
        (syms (rs.flatMap (resultItems f)) ++ X)) := by
  simp [resultItems]

theorem len_results : ∀ rs : List (LPay × Nat),
    rs.length ≤ (syms (rs.flatMap (resultItems f))).length := by
  intro rs
  induction rs with
  | nil => simp
  | cons r rs ih => simp [resultItems]; omega

theorem readResults_results :
    ∀ (rs : List (LPay × Nat)) (n : Nat) (R : List Sym), rs ≠ [] → rs.length ≤ n →
      (rs.all fun r => isTextP r.1) = true → (∀ r, R ≠ .ctrl f.ids.outputBegin :: r) →
      readResults f n (syms (rs.flatMap (resultItems f)) ++ R) =
        some (rs.map fun r => (r.1, 0), R) := by
  intro rs
  induction rs with
  | nil => intro n R h; exact absurd rfl h
  | cons r rs ih =>
    intro n R _ hn ht hR
    simp only [List.all_cons, Bool.and_eq_true] at ht
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    obtain ⟨x | ts, o⟩ := r
    rotate_left
    · simp [isTextP] at ht
    rw [syms_results_cons]
    have e0 : takeText (lit x ++ .ctrl f.ids.outputEnd :: (syms (rs.flatMap (resultItems f)) ++ R)) =
        (x, .ctrl f.ids.outputEnd :: (syms (rs.flatMap (resultItems f)) ++ R)) :=
      Qwen.takeText_lit_of _ _ rfl
    simp only [readResults, ↓reduceIte, e0]
    cases rs with
    | nil =>
      simp only [List.flatMap_nil, syms_nil, List.nil_append, List.map_cons, List.map_nil]
      rcases R with _ | ⟨t2 | c | t2, R'⟩
      · rfl
      · have h2 : t2 ≠ f.ids.outputBegin := fun e => hR R' (by rw [e])
        simp [h2]
      · rfl
      · rfl
    | cons r' rs' =>
      obtain ⟨x' | ts', o'⟩ := r'
      rotate_left
      · simp [isTextP] at ht
      have ih' := ih m R (List.cons_ne_nil _ _) (by simp at hn ⊢; omega) ht.2 hR
      rw [syms_results_cons] at ih' ⊢
      simp only [↓reduceIte, ih', Option.map_some, List.map_cons]

/-! ## Assistant bodies -/

theorem answer_asst (hw : WfFacts f.ids) (n : Nat) (a : Bool) (th : Option LPay) (x : Chars)
    (o : Nat) (R : List Sym) (hth : th.all isTextP = true) :
    answer f n a (syms (thinkItems f o th) ++ (lit x ++ .ctrl f.ids.eos :: R)) =
      some (.assistant a th (.text x) 0, R) := by
  have hR : ∀ r, lit x ++ .ctrl f.ids.eos :: R ≠ .ctrl f.ids.think.1 :: r := by
    intro r h
    cases x with
    | nil => simp at h; exact hw.et h.1
    | cons c x => simp at h
  unfold answer
  rw [bodyStart_think f o th hth _ hR]
  simp only [Option.bind_some, Qwen.takeText_lit_of x (.ctrl f.ids.eos :: R) rfl, ↓reduceIte]

theorem answer_calls (hw : WfFacts f.ids) (n : Nat) (th : Option LPay) (x : Chars) (o : Nat)
    (ks : List Call) (R : List Sym) (hth : th.all isTextP = true) (hks : ks ≠ [])
    (hn : ks.length ≤ n) (hc : (ks.all fun k => clearOf jsonOpen k.name) = true) :
    answer f n false (syms (thinkItems f o th) ++ (lit x ++ .ctrl f.ids.callsBegin ::
      (syms (callsItems f false o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R))) =
      some (.calls (some (.text x)) th ks 0, R) := by
  have hR : ∀ r, lit x ++ .ctrl f.ids.callsBegin ::
      (syms (callsItems f false o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R) ≠
        .ctrl f.ids.think.1 :: r := by
    intro r h
    cases x with
    | nil => simp at h; exact hw.cbt h.1
    | cons c x => simp at h
  unfold answer
  rw [bodyStart_think f o th hth _ hR]
  simp only [Option.bind_some, Qwen.takeText_lit_of x (.ctrl f.ids.callsBegin ::
      (syms (callsItems f false o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R)) rfl,
    hw.cbe, ↓reduceIte, and_self, and_true,
    readCalls_calls f o ks n R hks hn hc, Option.map_some]

theorem laterCalls_calls (n : Nat) (th : Option LPay) (o : Nat)
    (ks : List Call) (R : List Sym) (hth : th.all isTextP = true) (hks : ks ≠ [])
    (hn : ks.length ≤ n) (hc : (ks.all fun k => clearOf jsonOpen k.name) = true) :
    laterCalls f n (syms (thinkItems f o th) ++ (.ch '\n' ::
      (syms (callsItems f false o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R))) =
      some (.calls none th ks 0, R) := by
  unfold laterCalls
  rw [bodyStart_think f o th hth _ (by intro r h; simp at h)]
  simp only [Option.bind_some, ↓reduceIte, readCalls_calls f o ks n R hks hn hc, Option.map_some]

/-! ## Turns -/

theorem splitTail_good (x : Chars) (R : List Sym) (hR : Good f R) :
    splitTail f (takeText (lit x ++ R)).1 (takeText (lit x ++ R)).2 = (x, R) := by
  rw [takeText_lit_append]
  rcases hR with rfl | ⟨t, r, rfl, ht⟩ | ⟨r, rfl⟩
  · simp [splitTail]
  · simp [splitTail, ht]
  · simp [splitTail, takeText]

theorem readTurn_turn (hw : WfFacts f.ids) (n : Nat) (t : DTurn) (hok : turnOk f t = true)
    (htx : t.textual = true) (R : List Sym) (hR : Good f R)
    (hres : t.isRes = true → ∀ r, R ≠ .ctrl f.ids.outputBegin :: r) (hn : t.size ≤ n) :
    readTurn f n (syms (turnItems f t) ++ R) = some (t.erase, R) := by
  cases t with
  | user p o =>
    rcases p with x | ts
    rotate_left
    · simp [DTurn.textual, isTextP] at htx
    have e : syms (turnItems f (.user (.text x) o)) ++ R = .ctrl f.ids.user :: (lit x ++ R) := by
      simp [turnItems]
    rw [e]
    unfold readTurn
    simp only [↓reduceIte, splitTail_good f x R hR, DTurn.erase]
  | assistant a th c o =>
    rcases c with x | ts
    rotate_left
    · simp [DTurn.textual, isTextP] at htx
    simp only [DTurn.textual, isTextP, Bool.and_true] at htx
    cases a
    · have e : syms (turnItems f (.assistant false th (.text x) o)) ++ R =
          .ctrl f.ids.assistant :: (syms (thinkItems f o th) ++ (lit x ++ .ctrl f.ids.eos :: R)) := by
        simp [turnItems, promptItems]
      rw [e]
      unfold readTurn
      simp only [Ne.symm hw.ua, ↓reduceIte, answer_asst f hw n false th x o R htx, DTurn.erase]
    · have e : syms (turnItems f (.assistant true th (.text x) o)) ++ R =
          .ctrl f.ids.outputsEnd :: (syms (thinkItems f o th) ++ (lit x ++ .ctrl f.ids.eos :: R)) := by
        simp [turnItems, promptItems]
      rw [e]
      unfold readTurn
      simp only [Ne.symm hw.uoe, Ne.symm hw.aoe, ↓reduceIte, answer_asst f hw n true th x o R htx,
        DTurn.erase]
  | calls h th ks o =>
    simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
    obtain ⟨⟨⟨-, -⟩, hks⟩, hc⟩ := hok
    have hn' : ks.length ≤ n := hn
    simp only [DTurn.textual, Bool.and_eq_true] at htx
    rcases h with _ | ⟨x | ts⟩
    · obtain ⟨k, ks', rfl⟩ := List.exists_cons_of_ne_nil hks
      rcases th with _ | ⟨r | ts⟩
      · have hL := laterCalls_calls f n none o (k :: ks') R rfl hks hn' hc
        have e : syms (turnItems f (.calls none none (k :: ks') o)) ++ R =
            .ch '\n' :: (syms (callsItems f false o (k :: ks')) ++
              .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R) := by
          simp [turnItems, thinkItems, syms_callsItems_true]
        simp only [thinkItems, syms_nil, List.nil_append] at hL
        rw [e]
        unfold readTurn
        simp only [hL, DTurn.erase]
      · have hL := laterCalls_calls f n (some (.text r)) o (k :: ks') R rfl hks hn' hc
        have e : syms (turnItems f (.calls none (some (.text r)) (k :: ks') o)) ++ R =
            syms (thinkItems f o (some (.text r))) ++ (.ch '\n' ::
              (syms (callsItems f false o (k :: ks')) ++
                .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R)) := by
          simp [turnItems, syms_callsItems_true]
        rw [e]
        rw [syms_thinkItems_some, List.cons_append] at hL ⊢
        unfold readTurn
        simp only [Ne.symm hw.ut, Ne.symm hw.at', Ne.symm hw.oet, Ne.symm hw.obt, Ne.symm hw.ot,
          ↓reduceIte, hL, DTurn.erase]
      · simp [isTextP] at htx
    · have e : syms (turnItems f (.calls (some (.text x)) th ks o)) ++ R =
          .ctrl f.ids.assistant :: (syms (thinkItems f o th) ++ (lit x ++ .ctrl f.ids.callsBegin ::
            (syms (callsItems f false o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: R))) := by
        simp [turnItems]
      rw [e]
      unfold readTurn
      simp only [Ne.symm hw.ua, ↓reduceIte, answer_calls f hw n th x o ks R htx.2 hks hn' hc,
        DTurn.erase]
    · simp [isTextP] at htx
  | results b rs =>
    simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
    have hn' : rs.length ≤ n := hn
    have hRR := readResults_results f rs n R hok.1 hn' htx (hres rfl)
    cases b
    · obtain ⟨⟨x | ts, o⟩, rs', rfl⟩ := List.exists_cons_of_ne_nil hok.1
      rotate_left
      · simp [DTurn.textual, isTextP] at htx
      have e : syms (turnItems f (.results false ((LPay.text x, o) :: rs'))) ++ R =
          syms (((LPay.text x, o) :: rs').flatMap (resultItems f)) ++ R := by
        simp [turnItems]
      rw [e]
      rw [syms_results_cons] at hRR ⊢
      unfold readTurn
      simp only [Ne.symm hw.uo, Ne.symm hw.ao, Ne.symm hw.oeo, Ne.symm hw.obo, ↓reduceIte, hRR,
        Option.map_some, DTurn.erase]
    · have e : syms (turnItems f (.results true rs)) ++ R =
          .ctrl f.ids.outputsBegin :: (syms (rs.flatMap (resultItems f)) ++ R) := by
        simp [turnItems]
      rw [e]
      unfold readTurn
      simp only [Ne.symm hw.uob, Ne.symm hw.aob, Ne.symm hw.oeob, ↓reduceIte, hRR,
        Option.map_some, DTurn.erase]
  | sampled a ts o => simp [DTurn.textual] at htx


/-! ## What follows a turn -/

theorem good_turn (hw : WfFacts f.ids) (t : DTurn) (hok : turnOk f t = true) (X : List Sym) :
    Good f (syms (turnItems f t) ++ X) := by
  cases t with
  | user p o => exact Or.inr (Or.inl ⟨_, _, rfl, hw.uc⟩)
  | assistant a th c o =>
    cases a
    · exact Or.inr (Or.inl ⟨_, _, rfl, hw.ac⟩)
    · exact Or.inr (Or.inl ⟨_, _, rfl, hw.oec⟩)
  | calls h th ks o =>
    rcases h with _ | c
    · rcases th with _ | r
      · simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
        obtain ⟨k, ks', rfl⟩ := List.exists_cons_of_ne_nil hok.1.2
        exact Or.inr (Or.inr ⟨_, rfl⟩)
      · exact Or.inr (Or.inl ⟨_, _, rfl, hw.tc⟩)
    · exact Or.inr (Or.inl ⟨_, _, rfl, hw.ac⟩)
  | results b rs =>
    cases b
    · simp only [turnOk, Bool.and_eq_true, Bool.not_eq_true', List.isEmpty_eq_false_iff] at hok
      obtain ⟨r, rs', rfl⟩ := List.exists_cons_of_ne_nil hok.1
      exact Or.inr (Or.inl ⟨_, _, rfl, hw.oc⟩)
    · exact Or.inr (Or.inl ⟨_, _, rfl, hw.obc⟩)
  | sampled a ts o =>
    cases a
    · exact Or.inr (Or.inl ⟨_, _, rfl, hw.ac⟩)
    · exact Or.inr (Or.inl ⟨_, _, rfl, hw.oec⟩)

theorem head_not_outputBegin (hw : WfFacts f.ids) (t : DTurn) (hok : turnOk f t = true)
    (hr : t.isRes = false)
    (X : List Sym) : ∀ r, syms (turnItems f t) ++ X ≠ .ctrl f.ids.outputBegin :: r := by
  intro r h
  cases t with
  | user p o =>
    obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.user p o)) ++ X = .ctrl f.ids.user :: r' :=
      ⟨_, rfl⟩
    rw [e] at h
    exact hw.uo (Sym.ctrl.inj (List.cons.inj h).1)
  | assistant a th c o =>
    cases a
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.assistant false th c o)) ++ X =
          .ctrl f.ids.assistant :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.ao (Sym.ctrl.inj (List.cons.inj h).1)
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.assistant true th c o)) ++ X =
          .ctrl f.ids.outputsEnd :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.oeo (Sym.ctrl.inj (List.cons.inj h).1)
  | calls hd th ks o =>
    rcases hd with _ | c
    · rcases th with _ | th
      · cases ks with
        | nil => simp [turnOk] at hok
        | cons k ks =>
          obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.calls none none (k :: ks) o)) ++ X =
              .ch '\n' :: r' := ⟨_, rfl⟩
          rw [e] at h
          cases h
      · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.calls none (some th) ks o)) ++ X =
            .ctrl f.ids.think.1 :: r' := ⟨_, rfl⟩
        rw [e] at h
        exact hw.ot (Sym.ctrl.inj (List.cons.inj h).1).symm
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.calls (some c) th ks o)) ++ X =
          .ctrl f.ids.assistant :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.ao (Sym.ctrl.inj (List.cons.inj h).1)
  | results b rs => simp [DTurn.isRes] at hr
  | sampled a ts o =>
    cases a
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.sampled false ts o)) ++ X =
          .ctrl f.ids.assistant :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.ao (Sym.ctrl.inj (List.cons.inj h).1)
    · obtain ⟨r', e⟩ : ∃ r', syms (turnItems f (.sampled true ts o)) ++ X =
          .ctrl f.ids.outputsEnd :: r' := ⟨_, rfl⟩
      rw [e] at h
      exact hw.oeo (Sym.ctrl.inj (List.cons.inj h).1)

end Verified.DeepSeek

end
