module

public import Verified.Thm.DeepSeekLayout

public section

/-!
# The loss mask of the DeepSeek-R1 family

Only assistant messages are learned (`mask_owner`): every learned item of a layout lies in an
assistant, call or sampled turn, whose owner is the index of an assistant message.
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- The owner of a turn that holds learned items: assistant, call and sampled turns. -/
@[expose] def DTurn.asstOwner : DTurn → Option Nat
  | .assistant _ _ _ o => some o
  | .calls _ _ _ o => some o
  | .sampled _ _ o => some o
  | _ => none

theorem pay_ann (p : LPay) (o : Nat) (l : Bool) : (pay p o l).ann = ⟨o, l⟩ := by
  cases p <;> rfl

theorem thinkItems_owner (o : Nat) (th : Option LPay) : ∀ it ∈ thinkItems f o th, it.ann.owner = o := by
  cases th with
  | none => simp [thinkItems]
  | some r =>
    intro it h
    simp only [thinkItems, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl | rfl | rfl | rfl | rfl <;> simp [ctl, txt, pay_ann]

theorem callsItems_owner (nl : Bool) (o : Nat) (ks : List Call) :
    ∀ it ∈ callsItems f nl o ks, it.ann.owner = o := by
  induction ks generalizing nl with
  | nil => simp [callsItems]
  | cons k ks ih =>
    intro it h
    simp only [callsItems, List.mem_append] at h
    rcases h with h | h
    · unfold callItems at h
      split at h <;> simp only [List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h <;>
        rcases h with h | h <;> (try rcases h with rfl | rfl | rfl | rfl | rfl) <;>
        (try subst h) <;> simp_all [ctl, txt]
    · exact ih true it h

theorem promptItems_learn (a : Bool) (o : Nat) : ∀ it ∈ promptItems f a o, it.ann.learn = false := by
  simp [promptItems, ctl]

theorem genItems_learn (a : Bool) (o : Nat) : ∀ it ∈ genItems f a o, it.ann.learn = false := by
  cases hp : f.promptThink <;> cases a <;> simp [genItems, thinkOpen, hp, promptItems, ctl, txt]

/-- A learned item of a turn belongs to its assistant message. -/
theorem turnItems_learn (t : DTurn) :
    ∀ it ∈ turnItems f t, it.ann.learn = true → t.asstOwner = some it.ann.owner := by
  intro it h hl
  cases t with
  | user p o =>
    simp only [turnItems, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with rfl | rfl
    · simp [ctl] at hl
    · simp [pay_ann] at hl
  | assistant a th c o =>
    simp only [turnItems, List.mem_append] at h
    rcases h with (h | h) | h
    · rw [promptItems_learn f a o it h] at hl
      cases hl
    · simp [DTurn.asstOwner, thinkItems_owner f o th it h]
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [DTurn.asstOwner, ctl, pay_ann]
  | calls hd th ks o =>
    simp only [turnItems, List.mem_append] at h
    rcases h with h | h
    · cases hd with
      | some c =>
        simp only [List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with (((h | h) | h) | h)
        · subst h
          simp [ctl] at hl
        · simp [DTurn.asstOwner, thinkItems_owner f o th it h]
        · rcases h with rfl | rfl <;> simp [DTurn.asstOwner, ctl, pay_ann]
        · simp [DTurn.asstOwner, callsItems_owner f false o ks it h]
      | none =>
        simp only [List.mem_append] at h
        rcases h with h | h
        · simp [DTurn.asstOwner, thinkItems_owner f o th it h]
        · simp [DTurn.asstOwner, callsItems_owner f true o ks it h]
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [DTurn.asstOwner, ctl]
  | results b rs =>
    simp only [turnItems, List.mem_append] at h
    rcases h with h | h
    · split at h
      · simp only [List.mem_singleton] at h
        subst h
        simp [ctl] at hl
      · cases h
    · obtain ⟨r, -, h⟩ := List.mem_flatMap.mp h
      simp only [resultItems, List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl | rfl
      · simp [ctl] at hl
      · simp [pay_ann] at hl
      · simp [ctl] at hl
  | sampled a ts o =>
    simp only [turnItems, List.mem_append] at h
    rcases h with h | h
    · rw [genItems_learn f a o it h] at hl
      cases hl
    · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
      rcases h with rfl | rfl <;> simp [DTurn.asstOwner, ctl]

/-- A run of results added to the turns: the other turns are kept. -/
theorem mem_addResult (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn) :
    ∀ t ∈ addResult fl p i acc, t ∈ acc ∨ t.asstOwner = none := by
  intro t h
  unfold addResult at h
  split at h
  · split at h
    · simp only [List.mem_cons] at h
      rcases h with rfl | h
      · exact Or.inr rfl
      · exact Or.inl (List.mem_cons_of_mem _ h)
    · simp only [List.mem_cons] at h
      rcases h with rfl | h
      · exact Or.inr rfl
      · exact Or.inl (List.mem_cons.mpr h)
  · simp only [List.mem_cons] at h
    rcases h with rfl | h
    · exact Or.inr rfl
    · exact Or.inl h

/-- Every learned turn of the lowering is owned by an assistant message of `full`, where the
messages lowered are those of `full` from index `i`. -/
theorem lowerMsgs_asst (full : List Message) :
    ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn) (fl' : Flags),
      (∀ j (hj : j < ms.length), full[i + j]? = some ms[j]) →
      lowerMsgs f i fl acc ms = some (ts, fl') →
      (∀ t ∈ acc, ∀ o, t.asstOwner = some o → ∃ m, full[o]? = some m ∧ m.role = .assistant) →
      ∀ t ∈ ts, ∀ o, t.asstOwner = some o → ∃ m, full[o]? = some m ∧ m.role = .assistant := by
  intro ms
  induction ms with
  | nil =>
    intro i fl acc ts fl' _ h hacc
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    intro t ht
    exact hacc t (List.mem_reverse.mp ht)
  | cons m ms ih =>
    intro i fl acc ts fl' hix h hacc
    have h0 : full[i]? = some m := by simpa using hix 0 (by simp)
    have hix' : ∀ j (hj : j < ms.length), full[i + 1 + j]? = some ms[j] := by
      intro j hj
      have := hix (j + 1) (by simp; omega)
      rw [show i + 1 + j = i + (j + 1) by omega]
      simpa using this
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system => exact ih _ _ _ _ _ hix' h hacc
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      refine ih _ _ _ _ _ hix' h ?_
      intro t ht
      rcases List.mem_cons.mp ht with rfl | ht
      · simp [DTurn.asstOwner]
      · exact hacc t ht
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      refine ih _ _ _ _ _ hix' h ?_
      intro t ht
      rcases mem_addResult fl p i acc t ht with ht | ht
      · exact hacc t ht
      · simp [ht]
    | assistant =>
      have hown : ∀ t : DTurn, t.asstOwner = some i → ∀ o, t.asstOwner = some o →
          ∃ m : Message, full[o]? = some m ∧ m.role = .assistant := by
        intro t ht o ho
        rw [ht] at ho
        cases ho
        exact ⟨_, h0, rfl⟩
      simp only [lowerMsgs] at h
      split at h
      · refine ih _ _ _ _ _ hix' h ?_
        intro t ht
        rcases List.mem_cons.mp ht with rfl | ht
        · exact hown _ rfl
        · exact hacc t ht
      · simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨r, c, ks⟩, -, h⟩ := h
        dsimp only at h
        split at h
        · refine ih _ _ _ _ _ hix' h ?_
          intro t ht
          rcases List.mem_cons.mp ht with rfl | ht
          · exact hown _ rfl
          · exact hacc t ht
        · refine ih _ _ _ _ _ hix' h ?_
          intro t ht
          rcases List.mem_cons.mp ht with rfl | ht
          · exact hown _ rfl
          · exact hacc t ht

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (codec : Codec) (c : Conversation) (l : DConv) (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, -, s, -, ⟨us, fl⟩, hlow, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    rcases mem_layout f hit with rfl | rfl | ⟨t, ht, hit⟩ | ⟨a, o, hit⟩
    · simp [ctl] at hlearn
    · simp [pay_ann] at hlearn
    · have ho := turnItems_learn f t it hit hlearn.symm
      have := lowerMsgs_asst f c.messages c.messages 0 _ [] us fl (fun j hj => by simp) hlow
        (fun t ht => by cases ht) t ht _ ho
      rw [hown]
      exact this
    · rw [genItems_learn f a o it hit] at hlearn
      cases hlearn
  · cases hl

end Verified.DeepSeek

end
