module

public import Verified.Thm.DeepSeekMask

public section

/-!
# DeepSeek-R1: the learned tokens of a conversation whose assistant turns are sampled

`mask_sampled`: in a conversation whose assistant messages are all sampled turns, the learned
tokens are exactly the sampled tokens of each assistant message followed by
`<｜end▁of▁sentence｜>`, in order, each owned by its message. The generation prompt
(`<｜Assistant｜>` or `<｜tool▁outputs▁end｜>`), the system text, the user turns and the tool
results are never learned.
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- The learned tokens of an item, with owners. -/
@[expose] def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a turn of a conversation whose assistant turns are sampled. -/
@[expose] def turnLearned : DTurn → List (Token × Nat)
  | .sampled _ ts o => (ts ++ [f.ids.eos]).map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message. -/
@[expose] def msgLearned (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [f.ids.eos]).map (·, x.2)
  | _, _ => []

/-- Neither an answer nor a call turn. -/
@[expose] def DTurn.noAsst : DTurn → Bool
  | .assistant .. => false
  | .calls .. => false
  | _ => true

theorem turnItems_itemLearned (t : DTurn) (hna : t.noAsst = true) :
    (turnItems f t).flatMap itemLearned = turnLearned f t := by
  cases t with
  | user p o => cases p <;> simp [turnItems, ctl, pay, itemLearned, turnLearned]
  | assistant => simp [DTurn.noAsst] at hna
  | calls => simp [DTurn.noAsst] at hna
  | results b rs =>
    refine List.flatMap_eq_nil_iff.mpr fun it hit => ?_
    have := turnItems_learn f (.results b rs) it hit
    unfold itemLearned
    cases h : it.ann.learn
    · rfl
    · simp [DTurn.asstOwner] at this
      exact absurd h (by simp [this])
  | sampled a ts o =>
    cases hp : f.promptThink <;> cases a <;>
      simp [turnItems, genItems, thinkOpen, hp, promptItems, ctl, txt, itemLearned, turnLearned]

theorem turns_itemLearned (ts : List DTurn) (h : ∀ t ∈ ts, t.noAsst = true) :
    (ts.flatMap (turnItems f)).flatMap itemLearned = ts.flatMap (turnLearned f) := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.flatMap_cons]

theorem addResult_learned (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn) :
    (addResult fl p i acc).reverse.flatMap (turnLearned f) = acc.reverse.flatMap (turnLearned f) := by
  unfold addResult
  split
  · split <;> simp [turnLearned]
  · simp [turnLearned]

theorem lowerMsgs_learned :
    ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn) (fl' : Flags),
      lowerMsgs f i fl acc ms = some (ts, fl') →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      (∀ t ∈ acc, t.noAsst = true) →
      (∀ t ∈ ts, t.noAsst = true) ∧
        ts.flatMap (turnLearned f) =
          acc.reverse.flatMap (turnLearned f) ++ (ms.zipIdx i).flatMap (msgLearned f) := by
  intro ms
  induction ms with
  | nil =>
    intro i fl acc ts fl' h _ hacc
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    rw [← h.1]
    exact ⟨fun t ht => hacc t (List.mem_reverse.mp ht), by simp⟩
  | cons m ms ih =>
    intro i fl acc ts fl' h hs hacc
    have hs' : ∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts] :=
      fun m' hm' => hs m' (List.mem_cons_of_mem _ hm')
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system =>
      obtain ⟨h1, h2⟩ := ih _ _ _ _ _ h hs' hacc
      exact ⟨h1, by rw [h2]; simp [List.zipIdx_cons, msgLearned]⟩
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      obtain ⟨h1, h2⟩ := ih _ _ _ _ _ h hs' (fun t ht => by
        rcases List.mem_cons.mp ht with rfl | ht
        · rfl
        · exact hacc t ht)
      exact ⟨h1, by rw [h2]; simp [List.zipIdx_cons, msgLearned, turnLearned]⟩
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      obtain ⟨h1, h2⟩ := ih _ _ _ _ _ h hs' (fun t ht => by
        rcases mem_addResult fl p i acc t ht with ht | ht
        · exact hacc t ht
        · cases t <;> simp_all [DTurn.asstOwner, DTurn.noAsst])
      exact ⟨h1, by rw [h2, addResult_learned]; simp [List.zipIdx_cons, msgLearned]⟩
    | assistant =>
      obtain ⟨sts, rfl⟩ := hs ⟨.assistant, blocks⟩ List.mem_cons_self rfl
      simp only [lowerMsgs] at h
      obtain ⟨h1, h2⟩ := ih _ _ _ _ _ h hs' (fun t ht => by
        rcases List.mem_cons.mp ht with rfl | ht
        · rfl
        · exact hacc t ht)
      exact ⟨h1, by rw [h2]; simp [List.zipIdx_cons, msgLearned, turnLearned]⟩

/-- In a conversation whose assistant turns are all sampled, the learned tokens are exactly
the sampled tokens of each assistant message followed by `<｜end▁of▁sentence｜>`, in order,
each owned by its message. -/
theorem mask_sampled (codec : Codec) (c : Conversation) (l : DConv) (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => (ts ++ [f.ids.eos]).map (·, i)
        | _, _ => []) := by
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, -, s, -, ⟨us, fl⟩, hlow, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    obtain ⟨hna, hL⟩ := lowerMsgs_learned f c.messages 0 _ [] us fl hlow hs (by simp)
    generalize (if fl.inTools = true then some (true, c.messages.length)
      else if c.addGenerationPrompt = true then some (false, c.messages.length) else none) = p
    have key : (layout f ⟨s, (sys.head?.map Prod.snd).getD 0, us, p⟩).flatMap itemLearned =
        c.messages.zipIdx.flatMap (msgLearned f) := by
      simp only [layout, List.flatMap_append, turns_itemLearned f us hna, hL, List.nil_append,
        List.append_nil, List.reverse_nil, List.flatMap_nil]
      simp [itemLearned, ctl, pay_ann]
      intro x hx hl
      rcases p with _ | ⟨a, o⟩
      · cases hx
      · rw [genItems_learn f a o x hx] at hl
        cases hl
    have hno : ∀ it ∈ layout f ⟨s, (sys.head?.map Prod.snd).getD 0, us, p⟩,
        it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
      intro it hit hlearn cs hp
      rcases mem_layout f hit with rfl | rfl | ⟨t, ht, hit⟩ | ⟨a, o, hit⟩
      · simp [ctl] at hlearn
      · simp [pay_ann] at hlearn
      · have ho := turnItems_learn f t it hit hlearn
        cases t with
        | user => simp [DTurn.asstOwner] at ho
        | assistant => simp [DTurn.noAsst] at hna; exact absurd (hna _ ht) (by simp)
        | calls => simp [DTurn.noAsst] at hna; exact absurd (hna _ ht) (by simp)
        | results => simp [DTurn.asstOwner] at ho
        | sampled a ts o =>
          simp only [turnItems, List.mem_append] at hit
          rcases hit with hit | hit
          · rw [genItems_learn f a o it hit] at hlearn
            cases hlearn
          · simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
            rcases hit with rfl | rfl <;> simp [ctl] at hp
      · rw [genItems_learn f a o it hit] at hlearn
        cases hlearn
    rw [learned_of_no_learned_text codec _ hno]
    exact key
  · cases hl

end Verified.DeepSeek

end
