module

public import Verified.Thm.TaggedLawful

public section

/-!
# Tagged turns: what is learned

Proven once over the structure's parameters, for every entry:

* `learned_msg`: the learned items of a message turn are exactly, on an assistant turn, the
  think block's tokens the generation prompt does not write, the reasoning, the content and
  the footer token (in that order), and nothing on any other turn: a definition that never
  learns text turns, or learns a header, breaks this theorem;
* `mask_owner`: only assistant messages are learned: every token of a render with loss bit 1
  belongs to an assistant message of the conversation;
* `mask_sampled`: when every assistant message is a sampled turn, the learned tokens are
  exactly each one's sampled tokens followed by the footer token, in order, each owned by its
  message (the header, the footer's text and every other message are never learned).
-/

namespace Verified.Tagged

open Verified

/-- Whether a turn has learned items: assistant message turns and sampled turns. -/
@[expose] def TTurn.learned : TTurn → Bool
  | .msg r _ _ _ => isAsst r
  | .sampled _ _ => true

theorem isAsst_eq {r : Role} (h : isAsst r = true) : r = .assistant := by
  cases r <;> first | rfl | (simp [isAsst, roleCode] at h)

theorem headItems_ann (f : TaggedFmt) (r : Role) (o : Nat) :
    ∀ it ∈ headItems f r o, it.ann = ⟨o, false⟩ := by
  intro it hit
  obtain ⟨x, -, rfl⟩ := List.mem_map.mp hit
  cases x <;> rfl

theorem promptItems_ann (f : TaggedFmt) (o : Nat) : ∀ it ∈ promptItems f o, it.ann = ⟨o, false⟩ := by
  intro it hit
  rcases List.mem_append.mp hit with h | h
  · exact headItems_ann f _ o it h
  · obtain ⟨x, -, rfl⟩ := List.mem_map.mp h
    rfl

theorem eosItems_ann (f : TaggedFmt) (o : Nat) : ∀ it ∈ eosItems f o, it.ann = ⟨o, false⟩ := by
  unfold eosItems
  cases f.eos <;> simp [ctl]

theorem thinkItems_none (f : TaggedFmt) (o : Nat) : thinkItems f none o = [] := by
  unfold thinkItems
  cases f.think <;> rfl

theorem thinkItems_owner (f : TaggedFmt) (th : Option LPay) (o : Nat) :
    ∀ it ∈ thinkItems f th o, it.ann.owner = o := by
  unfold thinkItems
  cases f.think with
  | none => simp
  | some ab =>
    cases th with
    | none => simp
    | some p => cases p <;> simp [ctl, pay]

/-- A message turn's learned items are its think block's or the turn is an assistant's. -/
theorem msg_learn (f : TaggedFmt) (r : Role) (th : Option LPay) (p : LPay) (o : Nat) :
    ∀ it ∈ turnItems f (.msg r th p o), it.ann.learn = true →
      it ∈ thinkItems f th o ∨ isAsst r = true := by
  intro it hit hl
  simp only [turnItems, List.mem_append, List.mem_singleton] at hit
  rcases hit with ((h | h) | h) | h
  · rw [headItems_ann f r o it h] at hl
    cases hl
  · exact Or.inl h
  · subst h
    exact Or.inr (by cases p <;> exact hl)
  · rcases mem_footItems h with h | h <;> subst h
    · exact Or.inr hl
    · cases hl

theorem turnItems_learn {f : TaggedFmt} {t : TTurn} (hfit : t.fits f) :
    ∀ it ∈ turnItems f t, it.ann.learn = true → t.learned = true := by
  cases t with
  | sampled ts o => intro _ _ _; rfl
  | msg r th p o =>
    intro it hit hl
    rcases msg_learn f r th p o it hit hl with h | h
    · cases hr : isAsst r
      · have hth : th = none := by
          obtain ⟨-, h2⟩ := hfit
          cases th <;> simp_all
        subst hth
        rw [thinkItems_none] at h
        cases h
      · exact hr
    · exact h

theorem turnItems_owner (f : TaggedFmt) (t : TTurn) :
    ∀ it ∈ turnItems f t, it.ann.owner = t.owner := by
  cases t with
  | msg r th p o =>
    intro it hit
    simp only [turnItems, List.mem_append, List.mem_singleton] at hit
    rcases hit with ((h | h) | h) | h
    · rw [headItems_ann f r o it h]
      rfl
    · exact thinkItems_owner f th o it h
    · subst h
      cases p <;> rfl
    · rcases mem_footItems h with h | h <;> subst h <;> rfl
  | sampled ts o =>
    intro it hit
    simp only [turnItems, List.mem_append, List.mem_singleton] at hit
    rcases hit with (h | h) | h
    · rw [promptItems_ann f o it h]
      rfl
    · subst h
      rfl
    · rcases mem_footItems h with h | h <;> subst h <;> rfl

/-! ## The learned items of a message turn -/

/-- What a message turn learns: on an assistant turn the think block's items that are learned
(the tokens the prompt does not write, the reasoning), the content and the footer token. -/
theorem learned_msg (f : TaggedFmt) (r : Role) (th : Option LPay) (p : LPay) (o : Nat)
    (hfit : (TTurn.msg r th p o).fits f) :
    (turnItems f (.msg r th p o)).filter (·.ann.learn) =
      if isAsst r then (thinkItems f th o).filter (·.ann.learn) ++ [pay p o true,
        ctl f.endTurn o true] else [] := by
  have hh : (headItems f r o).filter (·.ann.learn) = [] := by
    rw [List.filter_eq_nil_iff]
    intro it hit
    simp [headItems_ann f r o it hit]
  have hpay : ∀ l, (pay p o l).ann.learn = l := by cases p <;> intro l <;> rfl
  cases hr : isAsst r
  · have hth : th = none := by
      obtain ⟨-, h2⟩ := hfit
      cases th <;> simp_all
    subst hth
    by_cases hft : f.footTail = [] <;>
      simp [turnItems, footItems, hh, thinkItems_none, hr, hpay, ctl, txt, List.filter_cons, hft]
  · by_cases hft : f.footTail = [] <;>
      simp [turnItems, footItems, hh, hr, hpay, ctl, txt, List.filter_cons, hft]

/-! ## Owners from lowering -/

theorem lowerBody_shape {f : TaggedFmt} {r : Role} {i : Nat} {bs : List Block} {t : TTurn}
    (h : lowerBody f r i bs = some t) : ∃ th p, t = .msg r th p i := by
  unfold lowerBody at h
  split at h
  · split at h
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨_, _, rfl⟩
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨_, _, rfl⟩
  · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨_, _, rfl⟩

theorem lowerTurn_spec {f : TaggedFmt} {i : Nat} {m : Message} {t : TTurn}
    (h : lowerTurn f i m = some t) :
    t.owner = i ∧ (t.learned = true → m.role = .assistant) ∧
      (m.role = .assistant → ∀ ts, m.blocks = [.sampled ts] → t = .sampled ts i) := by
  unfold lowerTurn at h
  split at h
  · rename_i ts hr hb
    cases h
    refine ⟨rfl, fun _ => hr, fun _ ts' e => ?_⟩
    rw [hb] at e
    cases e
    rfl
  · rename_i hne
    obtain ⟨th, p, rfl⟩ := lowerBody_shape h
    exact ⟨rfl, fun hl => isAsst_eq hl, fun hr ts e => absurd e (hne ts hr)⟩

theorem lowerMsg_spec {f : TaggedFmt} {i : Nat} {m : Message} {t : TTurn}
    (h : lowerMsg f i m = some t) :
    t.owner = i ∧ (t.learned = true → m.role = .assistant) ∧
      (m.role = .assistant → ∀ ts, m.blocks = [.sampled ts] → t = .sampled ts i) := by
  unfold lowerMsg at h
  split at h
  · cases h
  · obtain ⟨t', ht', hok⟩ := Option.bind_eq_some_iff.mp h
    split at hok
    · cases hok
      exact lowerTurn_spec ht'
    · cases hok

theorem lowerMsgs_spec {f : TaggedFmt} : ∀ {i : Nat} {ms : List Message} {ts : List TTurn},
    lowerMsgs f i ms = some ts → ∀ t ∈ ts, ∃ j m, ms[j]? = some m ∧ t.owner = i + j ∧
      (t.learned = true → m.role = .assistant)
  | _, [], ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | i, m :: ms, ts, h => by
    obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp hr
    intro t ht
    rcases List.mem_cons.mp ht with rfl | ht
    · obtain ⟨ho, hl, -⟩ := lowerMsg_spec h0
      exact ⟨0, m, rfl, by simp [ho], hl⟩
    · obtain ⟨j, m', hj, ho, hl⟩ := lowerMsgs_spec hts' t ht
      exact ⟨j + 1, m', by simpa using hj, by omega, hl⟩

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (f : TaggedFmt) (codec : Codec) (c : Conversation) (l : TConv)
    (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  have hfit := lower_fits hl
  unfold lower at hl
  split at hl
  · cases hl
  · obtain ⟨ts, hts, rfl⟩ := Option.map_eq_some_iff.mp hl
    unfold layout at hit
    simp only [List.mem_append, List.mem_flatMap] at hit
    rcases hit with ⟨t, ht, hit⟩ | hit
    · have htl := turnItems_learn (hfit t ht) it hit hlearn.symm
      obtain ⟨j, m, hj, ho, hrole⟩ := lowerMsgs_spec hts t ht
      refine ⟨m, ?_, hrole htl⟩
      rw [hown, turnItems_owner f t it hit, ho, Nat.zero_add]
      exact hj
    · split at hit
      · rw [promptItems_ann f _ it hit] at hlearn
        simp at hlearn
      · rw [eosItems_ann f _ it hit] at hlearn
        simp at hlearn

/-! ## Sampled assistant turns -/

/-- The learned tokens of an item, with owners. -/
@[expose] def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a sampled turn: its tokens and the footer token. -/
@[expose] def turnLearned (f : TaggedFmt) : TTurn → List (Token × Nat)
  | .sampled ts o => (ts ++ [f.endTurn]).map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message (message, index). -/
@[expose] def msgLearned (f : TaggedFmt) (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [f.endTurn]).map (·, x.2)
  | _, _ => []

theorem unlearned_itemLearned {items : List Item} (h : ∀ it ∈ items, it.ann.learn = false) :
    items.flatMap itemLearned = [] := by
  rw [List.flatMap_eq_nil_iff]
  intro it hit
  simp [itemLearned, h it hit]

theorem turnItems_itemLearned {f : TaggedFmt} {t : TTurn} (hfit : t.fits f)
    (h : t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turnItems f t).flatMap itemLearned = turnLearned f t := by
  cases t with
  | sampled ts o =>
    have hp := unlearned_itemLearned (items := promptItems f o) fun it hit => by
      rw [promptItems_ann f o it hit]
    by_cases hft : f.footTail = [] <;> simp [turnItems, footItems, List.flatMap_append, hp,
      itemLearned, turnLearned, ctl, txt, hft]
  | msg r th p o =>
    have hr : isAsst r = false := by
      cases hr : isAsst r
      · rfl
      · obtain ⟨_, _, e⟩ := h hr
        cases e
    apply unlearned_itemLearned
    intro it hit
    cases hl : it.ann.learn
    · rfl
    · exact absurd (turnItems_learn hfit it hit hl) (by simp [TTurn.learned, hr])

theorem turns_itemLearned (f : TaggedFmt) : ∀ ts : List TTurn,
    (∀ t ∈ ts, t.fits f ∧ (t.learned = true → ∃ ts o, t = .sampled ts o)) →
    (ts.flatMap (turnItems f)).flatMap itemLearned = ts.flatMap (turnLearned f)
  | [], _ => rfl
  | t :: ts, h => by
    obtain ⟨h1, h2⟩ := h t List.mem_cons_self
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned h1 h2,
      turns_itemLearned f ts fun t' ht' => h t' (List.mem_cons_of_mem _ ht'), List.flatMap_cons]

theorem lowerMsgs_learned {f : TaggedFmt} : ∀ {i : Nat} {ms : List Message} {ts : List TTurn},
    lowerMsgs f i ms = some ts →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      ts.flatMap (turnLearned f) = (ms.zipIdx i).flatMap (msgLearned f) ∧
        ∀ t ∈ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o
  | _, [], ts, h, _ => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun t ht => by cases ht⟩
  | i, m :: ms, ts, h, hs => by
    obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp hr
    obtain ⟨h3, h4⟩ := lowerMsgs_learned hts' fun m' hm' => hs m' (List.mem_cons_of_mem _ hm')
    obtain ⟨-, hl, hsm⟩ := lowerMsg_spec h0
    have h1 : turnLearned f t0 = msgLearned f (m, i) ∧
        (t0.learned = true → ∃ ts' o, t0 = .sampled ts' o) := by
      rcases m with ⟨role, blocks⟩
      by_cases hra : role = .assistant
      · subst hra
        obtain ⟨tsm, rfl⟩ := hs _ List.mem_cons_self rfl
        rw [hsm rfl tsm rfl]
        exact ⟨rfl, fun _ => ⟨tsm, i, rfl⟩⟩
      · have hlf : t0.learned = false := by
          cases hlt : t0.learned
          · rfl
          · exact absurd (hl hlt) hra
        refine ⟨?_, fun h' => by rw [hlf] at h'; cases h'⟩
        have e1 : turnLearned f t0 = [] := by
          cases t0 <;> simp_all [turnLearned, TTurn.learned]
        rw [e1]
        cases role <;> first | exact absurd rfl hra | rfl
    refine ⟨?_, ?_⟩
    · rw [List.flatMap_cons, h1.1, h3, List.zipIdx_cons, List.flatMap_cons]
    · intro t ht
      rcases List.mem_cons.mp ht with rfl | ht
      · exact h1.2
      · exact h4 t ht

/-- What follows the turns of a layout: the generation prompt or `eosItems`. -/
@[expose] def tailItems (f : TaggedFmt) (q : TConv) : List Item :=
  match q.prompt with
  | some o => promptItems f o
  | none => eosItems f ((q.turns.getLast?.map TTurn.owner).getD 0)

theorem layout_tail (f : TaggedFmt) (q : TConv) :
    layout f q = q.turns.flatMap (turnItems f) ++ tailItems f q := rfl

theorem tailItems_learn (f : TaggedFmt) (q : TConv) :
    ∀ it ∈ tailItems f q, it.ann.learn = false := by
  intro it hit
  unfold tailItems at hit
  split at hit
  · rw [promptItems_ann f _ it hit]
  · rw [eosItems_ann f _ it hit]

/-- In a conversation whose assistant messages are all sampled turns, the learned tokens are
exactly the sampled tokens of each assistant message followed by the footer token, in order,
each owned by its message. -/
theorem mask_sampled (f : TaggedFmt) (codec : Codec) (c : Conversation) (l : TConv)
    (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      c.messages.zipIdx.flatMap (msgLearned f) := by
  have hfit := lower_fits hl
  unfold lower at hl
  split at hl
  · cases hl
  · obtain ⟨ts, hts, rfl⟩ := Option.map_eq_some_iff.mp hl
    obtain ⟨hL, hS⟩ := lowerMsgs_learned hts hs
    have hfin := tailItems_learn f ⟨ts, if c.addGenerationPrompt then some c.messages.length
      else none⟩
    have hno : ∀ it ∈ layout f ⟨ts, if c.addGenerationPrompt then some c.messages.length
        else none⟩, it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
      intro it hit hlearn cs hcs
      rw [layout_tail] at hit
      rcases List.mem_append.mp hit with hit | hit
      · obtain ⟨t, ht, hit⟩ := List.mem_flatMap.mp hit
        obtain ⟨ts', o, rfl⟩ := hS t ht (turnItems_learn (hfit t ht) it hit hlearn)
        simp only [turnItems, List.mem_append, List.mem_singleton] at hit
        rcases hit with (h | h) | h
        · rw [promptItems_ann f o it h] at hlearn
          cases hlearn
        · subst h
          cases hcs
        · rcases mem_footItems h with h | h <;> subst h
          · cases hcs
          · cases hlearn
      · rw [hfin it hit] at hlearn
        cases hlearn
    have key : (layout f ⟨ts, if c.addGenerationPrompt then some c.messages.length
        else none⟩).flatMap itemLearned = c.messages.zipIdx.flatMap (msgLearned f) := by
      rw [layout_tail, List.flatMap_append, unlearned_itemLearned hfin, List.append_nil,
        turns_itemLearned f ts fun t ht => ⟨hfit t ht, hS t ht⟩, hL]
    rw [learned_of_no_learned_text codec _ hno]
    exact key

end Verified.Tagged

end
