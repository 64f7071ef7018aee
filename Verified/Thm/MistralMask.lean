module

public import Verified.Spec.Mistral
public import Verified.Thm.Span

public section

/-!
# The loss mask of the Mistral family

Every item of a Mistral turn carries the turn's owner, and it is learned exactly when the turn
is an assistant or a sampled turn (`turnItems_ann`); the lowering gives every turn the index of
the message it comes from, and only assistant messages lower to those two kinds
(`lowerMsg_spec`). Hence:

* `mask_owner`: every token with loss bit 1 belongs to an assistant message of the
  conversation; `mask_not_asst`: a token owned by a system, user or tool message (or by the
  leading `<s>`) is never learned.
* `mask_sampled`: in a conversation whose assistant messages are all sampled turns, the learned
  tokens are exactly the sampled tokens of each assistant message followed by `</s>`, in order,
  each owned by its message. The generation prompt writes nothing, so nothing of it is learned.

The proofs destructure `lower` and never look at its `turnOk` check.
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

/-- The message index a turn belongs to. -/
@[expose] def MTurn.owner : MTurn → Nat
  | .system _ o | .user _ _ o | .assistant _ _ o | .result _ _ o | .sampled _ o => o

/-- Whether a turn is learned: assistant and sampled turns. -/
@[expose] def MTurn.learned : MTurn → Bool
  | .assistant .. | .sampled .. => true
  | _ => false

theorem pay_ann (p : LPay) (o : Nat) (l : Bool) : (pay p o l).ann = ⟨o, l⟩ := by
  cases p <;> rfl

theorem callItems_ann (o : Nat) (k : MCall) : ∀ it ∈ callItems f o k, it.ann = ⟨o, true⟩ := by
  intro it h
  unfold callItems at h
  split at h
  · simp only [List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with ((rfl | rfl) | h) | rfl | rfl
    · rfl
    · rfl
    · split at h
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with rfl | rfl <;> rfl
      · cases h
    · rfl
    · rfl
  · cases h

theorem callsItems_ann (o : Nat) (cs : List MCall) : ∀ it ∈ callsItems f o cs, it.ann = ⟨o, true⟩ := by
  intro it h
  unfold callsItems at h
  split at h
  · cases h
  · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl <;> rfl
  · obtain ⟨k, -, hk⟩ := List.mem_flatMap.mp h
    exact callItems_ann f o k it hk

/-- Every item of a turn carries the turn's owner, and is learned exactly when the turn is. -/
theorem turnItems_ann (t : MTurn) : ∀ it ∈ turnItems f t, it.ann = ⟨t.owner, t.learned⟩ := by
  intro it h
  have hp := pay_ann
  cases t with
  | system p o =>
    simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl | rfl
    · rfl
    · exact hp p o false
    · rfl
  | user tools p o =>
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with h | h | h | h
    · split at h
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with rfl | rfl | rfl <;> rfl
      · cases h
    · subst h
      rfl
    · subst h
      exact hp p o false
    · subst h
      rfl
  | assistant p cs o =>
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with (h | h) | h
    · subst h
      exact hp p o true
    · exact callsItems_ann f o cs it h
    · subst h
      rfl
  | result i p o =>
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with ((h | h) | h | h)
    · subst h
      rfl
    · split at h
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with rfl | rfl <;> rfl
      · cases h
    · subst h
      exact hp p o false
    · subst h
      rfl
  | sampled ts o =>
    simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl <;> rfl

/-! ## The lowering -/

/-- A lowered message is a turn owned by the message's index, learned only when the message is
an assistant message. -/
theorem lowerMsg_spec {tl : Option Chars} {rid : Option (Option Chars)} {i : Nat} {m : Message}
    {t : MTurn} (h : lowerMsg f tl rid i m = some t) :
    t.owner = i ∧ (t.learned = true → m.role = .assistant) := by
  rcases m with ⟨role, blocks⟩
  cases role with
  | system =>
    simp only [lowerMsg, Option.map_eq_some_iff] at h
    obtain ⟨p, -, rfl⟩ := h
    exact ⟨rfl, fun h => by cases h⟩
  | user =>
    simp only [lowerMsg, Option.map_eq_some_iff] at h
    obtain ⟨p, -, rfl⟩ := h
    exact ⟨rfl, fun h => by cases h⟩
  | assistant =>
    refine ⟨?_, fun _ => rfl⟩
    simp only [lowerMsg] at h
    split at h
    · cases h
      rfl
    · simp only [Option.bind_eq_some_iff] at h
      obtain ⟨⟨p, cs⟩, -, h⟩ := h
      obtain ⟨cs', -, h⟩ := h
      split at h
      · cases h
      · cases h
        rfl
  | tool =>
    simp only [lowerMsg] at h
    split at h
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨rfl, fun h => by cases h⟩
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨rfl, fun h => by cases h⟩
    · cases h
  | developer => simp [lowerMsg] at h

theorem ite_none_some {α : Type} {c : Prop} [Decidable c] {x : Option α} {y : α}
    (h : (if c then none else x) = some y) : x = some y := by
  split at h
  · cases h
  · exact h

/-- One step of `lowerMsgs`: the first message lowers to the first turn, the rest to the rest. -/
theorem lowerMsgs_cons {tools : Option Chars} {pos : Option Nat} {prev : Option Role}
    {prevT : Option MTurn} {pend : List (Option Chars)} {i : Nat} {m : Message}
    {ms : List Message} {ts : List MTurn}
    (h : lowerMsgs f tools pos prev prevT pend i (m :: ms) = some ts) :
    ∃ tl rid t prev' prevT' pend' ts', lowerMsg f tl rid i m = some t ∧
      lowerMsgs f tools pos prev' prevT' pend' (i + 1) ms = some ts' ∧ ts = t :: ts' := by
  simp only [lowerMsgs] at h
  obtain ⟨t, ht, h⟩ := Option.bind_eq_some_iff.mp (ite_none_some h)
  obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp (ite_none_some h)
  exact ⟨_, _, t, _, _, _, ts', ht, hts', rfl⟩

/-- Every learned turn of the lowering is owned by an assistant message. -/
theorem lowerMsgs_owner (tools : Option Chars) (pos : Option Nat) :
    ∀ (ms : List Message) (prev : Option Role) (prevT : Option MTurn)
      (pend : List (Option Chars)) (i : Nat) (ts : List MTurn),
      lowerMsgs f tools pos prev prevT pend i ms = some ts →
      ∀ t ∈ ts, t.learned = true →
        ∃ j m, t.owner = i + j ∧ ms[j]? = some m ∧ m.role = .assistant
  | [], _, _, _, _, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | m :: ms, _, _, _, i, _, h => by
    obtain ⟨tl, rid, t0, _, _, _, ts', h0, h1, rfl⟩ := lowerMsgs_cons f h
    intro t ht hl
    rcases List.mem_cons.mp ht with rfl | ht
    · obtain ⟨ho, hr⟩ := lowerMsg_spec f h0
      exact ⟨0, m, by simp [ho], rfl, hr hl⟩
    · obtain ⟨j, m', ho, hm, hr⟩ := lowerMsgs_owner tools pos ms _ _ _ _ _ h1 t ht hl
      exact ⟨j + 1, m', by omega, by simpa using hm, hr⟩

/-- The turns of a lowered conversation are a lowering of its messages from index 0 (whatever
`lower` checks of them afterwards). -/
theorem lower_turns {c : Conversation} {l : MConv} (h : lower f c = some l) :
    ∃ tools pos, lowerMsgs f tools pos none none [] 0 c.messages = some l.turns := by
  simp only [lower, Option.bind_eq_some_iff] at h
  obtain ⟨tools, -, ts, hts, h⟩ := h
  split at h
  · cases h
    exact ⟨_, _, hts⟩
  · cases h

/-! ## Only assistant messages are learned -/

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (codec : Codec) (c : Conversation) (l : MConv) (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  obtain ⟨tools, pos, hts⟩ := lower_turns f hl
  simp only [layout, List.mem_append, List.mem_singleton, List.mem_flatMap] at hit
  rcases hit with rfl | ⟨t, ht, hit⟩
  · simp [ctl] at hlearn
  · have ha := turnItems_ann f t it hit
    rw [ha] at hown hlearn
    obtain ⟨j, m, ho, hm, hr⟩ :=
      lowerMsgs_owner f tools pos c.messages none none [] 0 l.turns hts t ht hlearn.symm
    rw [hown, ho, Nat.zero_add]
    exact ⟨m, hm, hr⟩

/-- A token owned by a system, user or tool message is never learned. -/
theorem mask_not_asst (codec : Codec) (c : Conversation) (l : MConv) (hl : lower f c = some l)
    (x : Cell) (hx : x ∈ encodeItems codec (layout f l)) (m : Message)
    (hm : c.messages[x.owner]? = some m) (hr : m.role ≠ .assistant) : x.loss = false := by
  cases h : x.loss
  · rfl
  · obtain ⟨m', hm', hr'⟩ := mask_owner f codec c l hl x hx h
    rw [hm] at hm'
    cases hm'
    exact absurd hr' hr

/-! ## Sampled assistant turns -/

/-- The learned tokens of an item, with owners. -/
@[expose] def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a turn of a conversation whose assistant turns are sampled. -/
@[expose] def turnLearned : MTurn → List (Token × Nat)
  | .sampled ts o => (ts ++ [f.ids.eos]).map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message. -/
@[expose] def msgLearned (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [f.ids.eos]).map (·, x.2)
  | _, _ => []

theorem turnItems_itemLearned (t : MTurn) (h : t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turnItems f t).flatMap itemLearned = turnLearned f t := by
  cases hl : t.learned
  · have e : turnLearned f t = [] := by
      cases t <;> simp_all [turnLearned, MTurn.learned]
    rw [e]
    refine List.flatMap_eq_nil_iff.mpr fun it hit => ?_
    have ha := turnItems_ann f t it hit
    simp [itemLearned, ha, hl]
  · obtain ⟨ts, o, rfl⟩ := h hl
    simp [turnItems, itemLearned, turnLearned, ctl]

theorem turns_itemLearned (turns : List MTurn)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turns.flatMap (turnItems f)).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  induction turns with
  | nil => rfl
  | cons t ts ih =>
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.flatMap_cons]

theorem lowerMsg_learned {tl : Option Chars} {rid : Option (Option Chars)} {i : Nat}
    {m : Message} {t : MTurn} (h : lowerMsg f tl rid i m = some t)
    (hs : m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    turnLearned f t = msgLearned f (m, i) ∧ (t.learned = true → ∃ ts o, t = .sampled ts o) := by
  rcases m with ⟨role, blocks⟩
  by_cases hr : role = .assistant
  · subst hr
    obtain ⟨ts, e⟩ := hs rfl
    simp only at e
    subst e
    simp only [lowerMsg, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun _ => ⟨ts, i, rfl⟩⟩
  · obtain ⟨-, hl⟩ := lowerMsg_spec f h
    have hlf : t.learned = false := by
      cases hlt : t.learned
      · rfl
      · exact absurd (hl hlt) hr
    refine ⟨?_, fun h' => by rw [hlf] at h'; cases h'⟩
    have e1 : turnLearned f t = [] := by
      cases t <;> simp_all [turnLearned, MTurn.learned]
    rw [e1]
    cases role <;> first | exact absurd rfl hr | rfl

theorem lowerMsgs_learned (tools : Option Chars) (pos : Option Nat) :
    ∀ (ms : List Message) (prev : Option Role) (prevT : Option MTurn)
      (pend : List (Option Chars)) (i : Nat) (ts : List MTurn),
      lowerMsgs f tools pos prev prevT pend i ms = some ts →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      ts.flatMap (turnLearned f) = (ms.zipIdx i).flatMap (msgLearned f) ∧
        ∀ t ∈ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o
  | [], _, _, _, _, ts, h, _ => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun t ht => by cases ht⟩
  | m :: ms, _, _, _, i, _, h, hs => by
    obtain ⟨tl, rid, t0, _, _, _, ts', h0, h1, rfl⟩ := lowerMsgs_cons f h
    obtain ⟨e0, s0⟩ := lowerMsg_learned f h0 (hs m List.mem_cons_self)
    obtain ⟨e1, s1⟩ := lowerMsgs_learned tools pos ms _ _ _ _ _ h1
      (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))
    refine ⟨?_, ?_⟩
    · rw [List.flatMap_cons, e0, e1, List.zipIdx_cons, List.flatMap_cons]
    · intro t ht
      rcases List.mem_cons.mp ht with rfl | ht
      · exact s0
      · exact s1 t ht

/-- In a conversation whose assistant messages are all sampled turns, the learned tokens are
exactly the sampled tokens of each assistant message followed by `</s>`, in order, each owned
by its message: nothing of `<s>`, the system, user and tool turns, or the generation prompt
(which writes nothing) is learned. -/
theorem mask_sampled (codec : Codec) (c : Conversation) (l : MConv) (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => (ts ++ [f.ids.eos]).map (·, i)
        | _, _ => []) := by
  obtain ⟨tools, pos, hts⟩ := lower_turns f hl
  obtain ⟨hL, hS⟩ := lowerMsgs_learned f tools pos c.messages none none [] 0 l.turns hts hs
  have hno : ∀ it ∈ layout f l, it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
    intro it hit hlearn cs hcs
    simp only [layout, List.mem_append, List.mem_singleton, List.mem_flatMap] at hit
    rcases hit with rfl | ⟨t, ht, hit⟩
    · cases hcs
    · have ha := turnItems_ann f t it hit
      rw [ha] at hlearn
      obtain ⟨ts, o, rfl⟩ := hS t ht hlearn
      simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at hit
      rcases hit with rfl | rfl <;> cases hcs
  have key : (layout f l).flatMap itemLearned = c.messages.zipIdx.flatMap (msgLearned f) := by
    rw [layout, List.flatMap_append, turns_itemLearned f _ hS, hL]
    simp [itemLearned, ctl]
  rw [learned_of_no_learned_text codec _ hno]
  exact key

end Verified.Mistral

end
