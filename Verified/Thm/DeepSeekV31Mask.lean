module

public import Verified.Thm.DeepSeekV31Prefix
public import Verified.Thm.DeepSeekMask

public section

/-!
# DeepSeek-V3.1: the loss mask

* `mask_ownerV`: only assistant messages are learned. Every token with loss bit 1 belongs to an
  assistant message of the conversation: the header the templates write before an answer and
  the generation prompt are never learned, and user text and tool results never are.
* `learned_assistantV`: every assistant message is learned. Its turn's items are its header
  (or, for a sampled turn, the generation prompt), which is never learned (`opening_learn`),
  or learned and owned by the message (content, calls, `<｜end▁of▁sentence｜>`), so a lowering
  that stopped learning text turns breaks this proof.
-/

namespace Verified.DeepSeekV31

open Verified Verified.DeepSeek

variable (f : V31Fmt)

/-- The owner of a turn that holds learned items: answers, call turns and sampled turns. -/
@[expose] def VTurn.asstOwner : VTurn → Option Nat
  | .answer _ _ o => some o
  | .calls _ _ _ o => some o
  | .sampled _ _ o => some o
  | _ => none

theorem header_learn (o : Nat) : ∀ it ∈ header f o, it.ann.learn = false := by
  unfold header
  cases f.openThink <;> simp [ctl]

theorem openItems_learn (h : Bool) (o : Nat) : ∀ it ∈ openItems f h o, it.ann.learn = false := by
  cases h
  · simp [openItems]
  · exact header_learn f o

theorem genItems_learnV (o : Nat) : ∀ it ∈ genItems f o, it.ann.learn = false := by
  unfold genItems
  cases f.thinking
  · exact header_learn f o
  · simp [ctl]

/-- A learned item of a turn belongs to its assistant message. -/
theorem turnItems_learnV (t : VTurn) :
    ∀ it ∈ turnItems f t, it.ann.learn = true → t.asstOwner = some it.ann.owner := by
  intro it h hl
  cases t with
  | user p o =>
    simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl
    · simp [ctl] at hl
    · simp [pay_ann] at hl
  | answer hd c o =>
    simp only [turnItems, List.mem_append] at h
    rcases h with h | h
    · rw [openItems_learn f hd o it h] at hl
      cases hl
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [VTurn.asstOwner, ctl, pay_ann]
  | calls hd c ks o =>
    simp only [turnItems, List.mem_append] at h
    rcases h with ((h | h) | h) | h
    · rw [openItems_learn f hd o it h] at hl
      cases hl
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [VTurn.asstOwner, ctl, pay_ann]
    · obtain ⟨k, -, h⟩ := List.mem_flatMap.mp h
      simp only [callItems, List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl | rfl | rfl | rfl <;> simp [VTurn.asstOwner, ctl, txt]
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [VTurn.asstOwner, ctl]
  | result p o =>
    simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl | rfl
    · simp [ctl] at hl
    · simp [pay_ann] at hl
    · simp [ctl] at hl
  | sampled hd ts o =>
    simp only [turnItems, List.mem_append] at h
    rcases h with h | h
    · cases hd
      · cases h
      · rw [genItems_learnV f o it h] at hl
        cases hl
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [VTurn.asstOwner, ctl]

/-- A message's turn is learned only when the message is an assistant message, and then it
is owned by the message. -/
theorem msgStep_asst {l : Last} {i : Nat} {m : Message} {t : VTurn} {l' : Last}
    (h : msgStep l i m = some (some (t, l'))) (o : Nat) (ho : t.asstOwner = some o) :
    o = i ∧ m.role = .assistant := by
  unfold msgStep at h
  split at h
  · cases h
  · cases h
  · obtain ⟨p, -, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    simp [VTurn.asstOwner] at ho
  · obtain ⟨p, -, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    simp [VTurn.asstOwner] at ho
  · rename_i hr
    split at h
    · cases h
    · obtain ⟨t', ht, h⟩ := Option.map_eq_some_iff.mp h
      cases h
      refine ⟨?_, hr⟩
      unfold asstTurn at ht
      split at ht
      · cases ht
        simp only [VTurn.asstOwner, Option.some.injEq] at ho
        exact ho.symm
      · obtain ⟨⟨r, c, ks⟩, -, ht⟩ := Option.map_eq_some_iff.mp ht
        subst ht
        cases ks <;> simp only [VTurn.asstOwner, Option.some.injEq] at ho <;> exact ho.symm

/-- Every learned turn of the lowering is owned by an assistant message of `full`, where the
messages lowered are those of `full` from index `i`. -/
theorem lowerMsgs_asstV (full : List Message) :
    ∀ (ms : List Message) (i : Nat) (l : Last) (ts : List VTurn) (l' : Last),
      (∀ j (hj : j < ms.length), full[i + j]? = some ms[j]) →
      lowerMsgs i l ms = some (ts, l') →
      ∀ t ∈ ts, ∀ o, t.asstOwner = some o → ∃ m, full[o]? = some m ∧ m.role = .assistant
  | [], i, l, ts, l', _, h => by
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    intro t ht
    cases ht
  | m :: ms, i, l, ts, l', hix, h => by
    have h0 : full[i]? = some m := by simpa using hix 0 (by simp)
    have hix' : ∀ j (hj : j < ms.length), full[i + 1 + j]? = some ms[j] := by
      intro j hj
      have := hix (j + 1) (by simp; omega)
      rw [show i + 1 + j = i + (j + 1) by omega]
      simpa using this
    unfold lowerMsgs at h
    obtain ⟨x, hx, h⟩ := Option.bind_eq_some_iff.mp h
    rcases x with _ | ⟨t0, l0⟩
    · exact lowerMsgs_asstV full ms _ _ _ _ hix' h
    · obtain ⟨⟨ts', l3⟩, h1, h2⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at h2
      obtain ⟨rfl, rfl⟩ := h2
      intro t ht o ho
      rcases List.mem_cons.mp ht with rfl | ht
      · obtain ⟨rfl, hr⟩ := msgStep_asst hx o ho
        exact ⟨m, h0, hr⟩
      · exact lowerMsgs_asstV full ms _ _ _ _ hix' h1 t ht o ho

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_ownerV (codec : Codec) (c : Conversation) (q : VConv) (hl : lower f c = some q) :
    ∀ x ∈ encodeItems codec (layout f q), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, -, s, -, ⟨us, l⟩, hlow, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    unfold layout at hit
    rcases List.mem_append.mp hit with hit | hit
    · rcases List.mem_append.mp hit with hit | hit
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
        rcases hit with rfl | rfl
        · simp [ctl] at hlearn
        · simp [pay_ann] at hlearn
      · obtain ⟨t, ht, hit⟩ := List.mem_flatMap.mp hit
        have ho := turnItems_learnV f t it hit hlearn.symm
        rw [hown]
        exact lowerMsgs_asstV c.messages c.messages 0 .start us l (fun j hj => by simp) hlow
          t ht _ ho
    · split at hit
      · rw [genItems_learnV f _ it hit] at hlearn
        cases hlearn
      · cases hit
  · cases hl

/-- What a turn writes before its message's own tokens: an answer's or a call turn's header,
a sampled turn's generation prompt. -/
@[expose] def opening : VTurn → List Item
  | .answer h _ o => openItems f h o
  | .calls h _ _ o => openItems f h o
  | .sampled h _ o => if h then genItems f o else []
  | _ => []

/-- What a turn writes before its message's tokens is never learned. -/
theorem opening_learn (t : VTurn) : ∀ it ∈ opening f t, it.ann.learn = false := by
  cases t with
  | answer h c o => exact openItems_learn f h o
  | calls h c ks o => exact openItems_learn f h o
  | sampled h ts o =>
    cases h
    · simp [opening]
    · exact genItems_learnV f o
  | user p o => simp [opening]
  | result p o => simp [opening]

/-- Everything else of an assistant turn is learned and owned by its message: the content,
the calls and `<｜end▁of▁sentence｜>` (the sampled tokens and theirs). -/
theorem turn_learned (t : VTurn) (o : Nat) (ho : t.asstOwner = some o) :
    ∀ it ∈ turnItems f t, it ∈ opening f t ∨ it.ann = ⟨o, true⟩ := by
  intro it hit
  cases t with
  | user _ _ => simp [VTurn.asstOwner] at ho
  | result _ _ => simp [VTurn.asstOwner] at ho
  | answer h c o' =>
    simp only [VTurn.asstOwner, Option.some.injEq] at ho
    subst ho
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at hit
    rcases hit with h1 | rfl | rfl
    · exact Or.inl h1
    · exact Or.inr (pay_ann _ _ _)
    · exact Or.inr rfl
  | calls h c ks o' =>
    simp only [VTurn.asstOwner, Option.some.injEq] at ho
    subst ho
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at hit
    rcases hit with ((h1 | rfl | rfl) | h2) | rfl | rfl
    · exact Or.inl h1
    · exact Or.inr (pay_ann _ _ _)
    · exact Or.inr rfl
    · obtain ⟨k, -, h2⟩ := List.mem_flatMap.mp h2
      simp only [callItems, List.mem_cons, List.not_mem_nil, or_false] at h2
      rcases h2 with rfl | rfl | rfl | rfl | rfl <;> exact Or.inr rfl
    · exact Or.inr rfl
    · exact Or.inr rfl
  | sampled h ts o' =>
    simp only [VTurn.asstOwner, Option.some.injEq] at ho
    subst ho
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at hit
    rcases hit with h1 | rfl | rfl
    · exact Or.inl h1
    · exact Or.inr rfl
    · exact Or.inr rfl

/-- An assistant message writes a turn of its own. -/
theorem msgStep_asst_turn {l : Last} {i : Nat} {m : Message} {x : Option (VTurn × Last)}
    (h : msgStep l i m = some x) (hr : m.role = .assistant) :
    ∃ t l', x = some (t, l') ∧ t.asstOwner = some i := by
  unfold msgStep at h
  rw [hr] at h
  simp only at h
  split at h
  · cases h
  · obtain ⟨t, ht, rfl⟩ := Option.map_eq_some_iff.mp h
    refine ⟨t, .asst, rfl, ?_⟩
    unfold asstTurn at ht
    split at ht
    · cases ht
      rfl
    · obtain ⟨⟨r, c, ks⟩, -, ht⟩ := Option.map_eq_some_iff.mp ht
      subst ht
      cases ks <;> rfl

/-- Every assistant message of the lowered messages has its turn. -/
theorem lowerMsgs_covers : ∀ (ms : List Message) (i : Nat) (l : Last) (ts : List VTurn)
    (l' : Last), lowerMsgs i l ms = some (ts, l') →
    ∀ j (hj : j < ms.length), ms[j].role = .assistant → ∃ t ∈ ts, t.asstOwner = some (i + j)
  | [], _, _, _, _, _, j, hj, _ => by simp at hj
  | m :: ms, i, l, ts, l', h, j, hj, hr => by
    unfold lowerMsgs at h
    obtain ⟨x, hx, h⟩ := Option.bind_eq_some_iff.mp h
    cases j with
    | zero =>
      obtain ⟨t, l0, rfl, ho⟩ := msgStep_asst_turn hx hr
      obtain ⟨⟨ts', l3⟩, -, h2⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at h2
      obtain ⟨rfl, -⟩ := h2
      exact ⟨t, List.mem_cons_self, by simpa using ho⟩
    | succ j =>
      have hj' : j < ms.length := by simp at hj; omega
      have e : i + (j + 1) = i + 1 + j := by omega
      rw [e]
      rcases x with _ | ⟨t0, l0⟩
      · exact lowerMsgs_covers ms _ _ _ _ h j hj' hr
      · obtain ⟨⟨ts', l3⟩, h1, h2⟩ := Option.map_eq_some_iff.mp h
        simp only [Prod.mk.injEq] at h2
        obtain ⟨rfl, -⟩ := h2
        obtain ⟨t, ht, ho⟩ := lowerMsgs_covers ms _ _ _ _ h1 j hj' hr
        exact ⟨t, List.mem_cons_of_mem _ ht, ho⟩

/-- Every assistant message is learned: its turn's items are its header or generation prompt
(never learned, `opening_learn`) or learned and owned by the message. With `mask_ownerV`, the
learned tokens of a render are exactly the assistant messages' own. -/
theorem learned_assistantV (c : Conversation) (q : VConv) (hl : lower f c = some q) (j : Nat)
    (hj : j < c.messages.length) (hr : c.messages[j].role = .assistant) :
    ∃ t ∈ q.turns, t.asstOwner = some j ∧
      ∀ it ∈ turnItems f t, it ∈ opening f t ∨ it.ann = ⟨j, true⟩ := by
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, -, s, -, ⟨us, l⟩, hlow, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    obtain ⟨t, ht, ho⟩ := lowerMsgs_covers _ 0 .start us l hlow j hj hr
    rw [Nat.zero_add] at ho
    exact ⟨t, ht, ho, turn_learned f t j ho⟩
  · cases hl

end Verified.DeepSeekV31

end
