module

public import Verified.Spec.MistralV3
public import Verified.Thm.MistralMask

public section

/-!
# The loss mask of Mistral v3

As for v7, v11 and v13 (`Thm/MistralMask.lean`): every item of a v3 turn carries the turn's
owner and is learned exactly when the turn is an assistant or a sampled turn
(`turnItemsV3_ann`; a system turn, which v3 never writes, has no items); the v3 lowering gives
every turn the index of the message it comes from, skipping the system and developer messages
it folds into the last user message, and only assistant messages lower to learned turns
(`lowerMsgV3_spec`, `lowerMsgsV3_owner`). Hence, for any codec:

* `maskV3_owner`: every token with loss bit 1 belongs to an assistant message;
* `maskV3_not_asst`: a token owned by a system, developer, user or tool message (or by the
  leading `<s>`) is never learned. The folded system prompt is written inside the last user
  turn, owned by that user message: never learned either.

The proofs destructure `lowerV3` and never look at its `turnOkV3` check.
-/

namespace Verified.Mistral

open Verified

variable (g : V3Fmt)

/-- Every item of a v3 turn carries the turn's owner, and is learned exactly when the turn
is. -/
theorem turnItemsV3_ann (t : MTurn) : ∀ it ∈ turnItemsV3 g t, it.ann = ⟨t.owner, t.learned⟩ := by
  intro it h
  have hp := pay_ann
  cases t with
  | system p o => simp [turnItemsV3] at h
  | user tools p o =>
    simp only [turnItemsV3, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with h | h | h | h
    · split at h
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with rfl | rfl | rfl <;> rfl
      · cases h
    · subst h
      rfl
    · subst h
      exact hp _ o false
    · subst h
      rfl
  | assistant p cs o =>
    simp only [turnItemsV3, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with (h | h) | h
    · subst h
      exact hp _ o true
    · split at h
      · cases h
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with rfl | rfl <;> rfl
    · subst h
      rfl
  | result i p o =>
    simp only [turnItemsV3, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl | rfl
    · rfl
    · exact hp _ o false
    · rfl
  | sampled ts o =>
    simp only [turnItemsV3, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl <;> rfl

/-- A message v3 lowers is a turn owned by the message's index, learned only when the message
is an assistant message. -/
theorem lowerMsgV3_spec {tools sys : Option Chars} {isLast : Bool}
    {rid : Option (Option Chars)} {i : Nat} {m : Message} {t : MTurn}
    (h : lowerMsgV3 g tools sys isLast rid i m = some t) :
    t.owner = i ∧ (t.learned = true → m.role = .assistant) := by
  rcases m with ⟨role, blocks⟩
  cases role with
  | system => simp [lowerMsgV3] at h
  | developer => simp [lowerMsgV3] at h
  | user =>
    simp only [lowerMsgV3, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨p, -, p', -, rfl⟩ := h
    exact ⟨rfl, fun h => by cases h⟩
  | assistant =>
    refine ⟨?_, fun _ => rfl⟩
    simp only [lowerMsgV3] at h
    split at h
    · cases h
      rfl
    · simp only [Option.bind_eq_some_iff] at h
      obtain ⟨⟨p, cs⟩, -, h⟩ := h
      obtain ⟨cs', -, h⟩ := h
      split at h
      · cases h
      · split at h
        · cases h
        · cases h
          rfl
  | tool =>
    simp only [lowerMsgV3] at h
    split at h
    · cases h
      exact ⟨rfl, fun h => by cases h⟩
    · cases h

/-- Every learned turn of the v3 lowering is owned by an assistant message. -/
theorem lowerMsgsV3_owner (tools : Option Chars) (pos : Option Nat) (sys : Option Chars)
    (last : Option Nat) :
    ∀ (ms : List Message) (prev : Option Role) (prevT : Option MTurn)
      (pend : List (Option Chars)) (i : Nat) (ts : List MTurn),
      lowerMsgsV3 g tools pos sys last prev prevT pend i ms = some ts →
      ∀ t ∈ ts, t.learned = true →
        ∃ j m, t.owner = i + j ∧ ms[j]? = some m ∧ m.role = .assistant
  | [], _, _, _, _, ts, h => by
    simp only [lowerMsgsV3, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | m :: ms, prev, prevT, pend, i, ts, h => by
    simp only [lowerMsgsV3] at h
    split at h
    · split at h
      · cases h
      · intro t ht hl
        obtain ⟨j, m', ho, hm, hr⟩ :=
          lowerMsgsV3_owner tools pos sys last ms _ _ _ _ _ h t ht hl
        exact ⟨j + 1, m', by omega, by simpa using hm, hr⟩
    · obtain ⟨t0, h0, h⟩ := Option.bind_eq_some_iff.mp (ite_none_some h)
      obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp (ite_none_some h)
      intro t ht hl
      rcases List.mem_cons.mp ht with rfl | ht
      · obtain ⟨ho, hr⟩ := lowerMsgV3_spec g h0
        exact ⟨0, m, by simp [ho], rfl, hr hl⟩
      · obtain ⟨j, m', ho, hm, hr⟩ :=
          lowerMsgsV3_owner tools pos sys last ms _ _ _ _ _ h1 t ht hl
        exact ⟨j + 1, m', by omega, by simpa using hm, hr⟩

/-- The turns of a v3 lowering are a lowering of its messages from index 0. -/
theorem lowerV3_turns {c : Conversation} {l : MConv} (h : lowerV3 g c = some l) :
    ∃ tools pos sys last,
      lowerMsgsV3 g tools pos sys last none none [] 0 c.messages = some l.turns := by
  simp only [lowerV3, Option.bind_eq_some_iff] at h
  obtain ⟨tools, -, sysTs, -, h⟩ := h
  obtain ⟨ts, hts, h⟩ := Option.bind_eq_some_iff.mp (ite_none_some h)
  split at h
  · cases h
    exact ⟨_, _, _, _, hts⟩
  · cases h

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem maskV3_owner (codec : Codec) (c : Conversation) (l : MConv)
    (hl : lowerV3 g c = some l) :
    ∀ x ∈ encodeItems codec (layoutV3 g l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  obtain ⟨tools, pos, sys, last, hts⟩ := lowerV3_turns g hl
  simp only [layoutV3, List.mem_append, List.mem_singleton, List.mem_flatMap] at hit
  rcases hit with rfl | ⟨t, ht, hit⟩
  · simp [ctl] at hlearn
  · have ha := turnItemsV3_ann g t it hit
    rw [ha] at hown hlearn
    obtain ⟨j, m, ho, hm, hr⟩ :=
      lowerMsgsV3_owner g tools pos sys last c.messages none none [] 0 l.turns hts t ht
        hlearn.symm
    rw [hown, ho, Nat.zero_add]
    exact ⟨m, hm, hr⟩

/-- A token owned by a system, developer, user or tool message is never learned. -/
theorem maskV3_not_asst (codec : Codec) (c : Conversation) (l : MConv)
    (hl : lowerV3 g c = some l) (x : Cell) (hx : x ∈ encodeItems codec (layoutV3 g l))
    (m : Message) (hm : c.messages[x.owner]? = some m) (hr : m.role ≠ .assistant) :
    x.loss = false := by
  cases h : x.loss
  · rfl
  · obtain ⟨m', hm', hr'⟩ := maskV3_owner g codec c l hl x hx h
    rw [hm] at hm'
    cases hm'
    exact absurd hr' hr

end Verified.Mistral

end
