module

public import Verified.Spec.Qwen
public import Verified.Thm.Format

public section

/-!
# Lowering lemmas of the Qwen family

Lowering message by message (`lower_eq_some`, `lowerMsgs_append`, `lowerMsgs_prefix`,
`lastQuery_append`, `systemTurn_append`), grouping of tool results (`group_append`,
`mem_group`), and the shape of a lowered message (`lowerMsg_shape`, `TurnOf`).
-/

namespace Verified.Qwen

open Verified

/-! ## Lowering, message by message -/

section Lower

variable (f : QwenFmt)

/-- `lower` unfolded. -/
theorem lower_eq_some {c : Conversation} {l : QConv} (h : lower f c = some l) :
    ∃ st pre, systemTurn f c.messages c.tools = some st ∧
      lowerMsgs f c.messages.length (lastQuery c.messages) 0 c.messages = some pre ∧
      (st ++ group pre).all (turnOk f) = true ∧
      l = ⟨st ++ group pre, if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  simp only [lower, Option.bind_eq_some_iff] at h
  obtain ⟨st, hst, pre, hpre, h⟩ := h
  by_cases hall : (st ++ group pre).all (turnOk f) = true
  · rw [if_pos hall] at h
    exact ⟨st, pre, hst, hpre, hall, (Option.some.inj h).symm⟩
  · rw [if_neg hall] at h
    cases h

/-- `lower` from its parts. -/
theorem lower_of {c : Conversation} {st : List QTurn} {pre : List Pre}
    (hst : systemTurn f c.messages c.tools = some st)
    (hpre : lowerMsgs f c.messages.length (lastQuery c.messages) 0 c.messages = some pre)
    (hall : (st ++ group pre).all (turnOk f) = true) :
    lower f c = some ⟨st ++ group pre,
      if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  simp only [lower, hst, hpre, Option.bind_some]
  rw [if_pos hall]

/-- Lowering a concatenation of messages. -/
theorem lowerMsgs_append (n q : Nat) (ms ns : List Message) : ∀ i,
    lowerMsgs f n q i (ms ++ ns) =
      (lowerMsgs f n q i ms).bind fun a => (lowerMsgs f n q (i + ms.length) ns).map (a ++ ·) := by
  induction ms with
  | nil => intro i; simp [lowerMsgs]
  | cons m ms ih =>
    intro i
    simp only [List.cons_append, lowerMsgs, ih (i + 1), List.length_cons]
    rw [show i + (ms.length + 1) = i + 1 + ms.length by omega]
    cases lowerMsg f n q i m <;> cases lowerMsgs f n q (i + 1) ms <;>
      cases lowerMsgs f n q (i + 1 + ms.length) ns <;> simp

/-- Lowering a concatenation of messages, as parts. -/
theorem lowerMsgs_append_eq_some {n q i : Nat} {ms ns : List Message} {pre : List Pre}
    (h : lowerMsgs f n q i (ms ++ ns) = some pre) :
    ∃ a b, lowerMsgs f n q i ms = some a ∧ lowerMsgs f n q (i + ms.length) ns = some b ∧
      pre = a ++ b := by
  rw [lowerMsgs_append] at h
  simp only [Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
  obtain ⟨a, ha, b, hb, rfl⟩ := h
  exact ⟨a, b, ha, hb, rfl⟩

/-- One message lowers the same for two counts and query indices that agree on it. -/
theorem lowerMsg_congr {n q n' q' i : Nat} {m : Message}
    (h : f.mode = .exact → m.role = .assistant →
      (q < i ↔ q' < i) ∧ (q < i → (i + 1 = n ↔ i + 1 = n'))) :
    lowerMsg f n q i m = lowerMsg f n' q' i m := by
  unfold lowerMsg
  split
  · rfl
  · rfl
  · rfl
  · rfl
  · rename_i hr
    split
    · rfl
    · congr 1
      funext x
      obtain ⟨r, c, ks⟩ := x
      dsimp only
      cases hm : f.mode
      · rfl
      · have key : ∀ b : Bool, (decide (q < i) && (i + 1 == n || b)) =
            (decide (q' < i) && (i + 1 == n' || b)) := by
          intro b
          obtain ⟨h1, h2⟩ := h hm hr
          by_cases hq : q < i
          · have h3 := h2 hq
            have hq' := h1.mp hq
            simp only [hq, hq', decide_true, Bool.true_and]
            cases b
            · simp only [Bool.or_false]
              rw [Bool.eq_iff_iff]
              simp only [beq_iff_eq]
              exact h3
            · simp only [Bool.or_true]
          · have hq' : ¬ q' < i := fun x => hq (h1.mpr x)
            simp only [hq, hq', decide_false, Bool.false_and]
        simp only [key]
      · rfl

/-- Lowering a list of messages is determined message by message. -/
theorem lowerMsgs_congr {n q n' q' : Nat} (ms : List Message) : ∀ (i : Nat),
    (∀ j m, ms[j]? = some m → lowerMsg f n q (i + j) m = lowerMsg f n' q' (i + j) m) →
    lowerMsgs f n q i ms = lowerMsgs f n' q' i ms := by
  induction ms with
  | nil => intro i _; rfl
  | cons m ms ih =>
    intro i h
    have h0 := h 0 m rfl
    rw [Nat.add_zero] at h0
    have h1 : ∀ j m', ms[j]? = some m' →
        lowerMsg f n q (i + 1 + j) m' = lowerMsg f n' q' (i + 1 + j) m' := by
      intro j m' hm
      have := h (j + 1) m' (by simpa using hm)
      rw [show i + (j + 1) = i + 1 + j by omega] at this
      exact this
    simp only [lowerMsgs, h0, ih (i + 1) h1]

/-- `ns.last_query_index` of a filter over indices, when the extension adds no query. -/
theorem lastQ_abstract (p q : Nat → Bool) (n k : Nat) (h1 : ∀ i < n, p i = q i)
    (h2 : ∀ i, n ≤ i → p i = false) :
    ((List.range (n + k)).filter p).getLast?.getD (n + k - 1) =
        ((List.range n).filter q).getLast?.getD (n - 1) ∨
      (((List.range n).filter q).getLast?.getD (n - 1) = n - 1 ∧
        ((List.range (n + k)).filter p).getLast?.getD (n + k - 1) = n + k - 1) := by
  have e2 : (List.map (fun x => n + x) (List.range k)).filter p = [] := by
    apply List.filter_eq_nil_iff.mpr
    intro i hi
    simp only [List.mem_map, List.mem_range] at hi
    obtain ⟨j, -, rfl⟩ := hi
    simp [h2 (n + j) (Nat.le_add_right n j)]
  have e : (List.range (n + k)).filter p = (List.range n).filter q := by
    rw [List.range_add, List.filter_append, e2, List.append_nil]
    exact List.filter_congr fun i hi => h1 i (List.mem_range.mp hi)
  rw [e]
  cases (List.filter q (List.range n)).getLast? with
  | none => exact Or.inr ⟨rfl, rfl⟩
  | some x => exact Or.inl rfl

/-- Appending messages that are not user messages keeps `ns.last_query_index`, or moves it
from the last index to the new last index. -/
theorem lastQuery_append (ms ns : List Message) (h : ∀ m ∈ ns, m.role ≠ .user) :
    lastQuery (ms ++ ns) = lastQuery ms ∨
      (lastQuery ms = ms.length - 1 ∧ lastQuery (ms ++ ns) = ms.length + ns.length - 1) := by
  unfold lastQuery
  rw [List.length_append]
  refine lastQ_abstract _ _ _ _ (fun i hi => ?_) (fun i hi => ?_)
  · simp only [List.getElem?_append_left hi]
  · simp only [List.getElem?_append_right hi]
    split
    · rename_i m hm
      have hr : m.role ≠ .user := h m (List.mem_of_getElem? hm)
      cases e : m.role <;> simp_all [Role.isUser]
    · rfl

/-- Before the last message, the query index compares the same after such an append. -/
theorem lastQuery_lt_iff (ms ns : List Message) (h : ∀ m ∈ ns, m.role ≠ .user) (i : Nat)
    (hi : i + 1 < ms.length) : lastQuery ms < i ↔ lastQuery (ms ++ ns) < i := by
  rcases lastQuery_append ms ns h with e | ⟨e1, e2⟩
  · rw [e]
  · rw [e1, e2]
    constructor <;> intro <;> omega

/-- The old messages lower the same in an extension (in the exact mode: no new query, and the
last old message is not an assistant message). -/
theorem lowerMsgs_prefix (ms ns : List Message)
    (h : f.mode = .exact → (∀ m ∈ ns, m.role ≠ .user) ∧ ∀ m ∈ ms.getLast?, m.role ≠ .assistant) :
    lowerMsgs f (ms ++ ns).length (lastQuery (ms ++ ns)) 0 ms =
      lowerMsgs f ms.length (lastQuery ms) 0 ms := by
  apply lowerMsgs_congr
  intro j m hm
  apply lowerMsg_congr
  intro hmode hr
  obtain ⟨hns, hlast⟩ := h hmode
  have hj : j < ms.length := by
    rcases Nat.lt_or_ge j ms.length with h' | h'
    · exact h'
    · rw [List.getElem?_eq_none h'] at hm
      cases hm
  have hj' : j + 1 < ms.length := by
    rcases Nat.lt_or_ge (j + 1) ms.length with h' | h'
    · exact h'
    · exfalso
      have hl : ms.getLast? = some m := by
        rw [List.getLast?_eq_getElem?, show ms.length - 1 = j by omega, hm]
      exact hlast m hl hr
  rw [Nat.zero_add]
  have := lastQuery_lt_iff ms ns hns j hj'
  simp only [List.length_append]
  exact ⟨this.symm, fun _ => by constructor <;> intro <;> omega⟩

/-- The system turn of an extension. -/
theorem systemTurn_append (ms ns : List Message) (tools : Option (List Json))
    (h : ms ≠ [] ∨ ∀ m ∈ ns.head?, m.role ≠ .system) :
    systemTurn f (ms ++ ns) tools = systemTurn f ms tools := by
  cases ms with
  | cons m ms => rfl
  | nil =>
    cases ns with
    | nil => rfl
    | cons m ns =>
      have hm : m.role ≠ .system := by
        rcases h with h | h
        · exact absurd rfl h
        · exact h m rfl
      have : m.role.isSystem = false := by
        cases hr : m.role <;> simp_all [Role.isSystem]
      simp [systemTurn, this]

end Lower

/-! ## Grouping tool results, and the shape of lowered messages -/

section Group

variable (f : QwenFmt)

/-- A turn that is not a group of tool results. -/
@[expose] def NotGroup (t : QTurn) : Prop := ∀ rs, t ≠ .toolGroup rs

/-- A turn that is not a tool group closes the group before it. -/
theorem group_append_turn (t : QTurn) (ht : NotGroup t) (b : List Pre) :
    ∀ a : List Pre, group (a ++ .turn t :: b) = group a ++ t :: group b
  | [] => rfl
  | .turn t' :: a => by
    simp only [List.cons_append, group, group_append_turn t ht b a]
  | .result p o :: a => by
    simp only [List.cons_append, group, group_append_turn t ht b a]
    cases hg : group a with
    | nil => cases t <;> first | rfl | exact absurd rfl (ht _)
    | cons x xs => cases x <;> rfl

/-- Grouping splits where no result follows a result. -/
theorem group_append (a b : List Pre)
    (h : (a = [] ∨ ∃ a0 t, a = a0 ++ [.turn t] ∧ NotGroup t) ∨
      (b = [] ∨ ∃ t b0, b = .turn t :: b0 ∧ NotGroup t)) :
    group (a ++ b) = group a ++ group b := by
  rcases h with (rfl | ⟨a0, t, rfl, ht⟩) | (rfl | ⟨t, b0, rfl, ht⟩)
  · rfl
  · rw [List.append_assoc, List.singleton_append, group_append_turn t ht,
      group_append_turn t ht]
    simp [group]
  · simp [group]
  · rw [group_append_turn t ht]
    rfl

/-- Every turn of a grouping is a tool group or one of the turns. -/
theorem mem_group {t : QTurn} : ∀ {pre : List Pre}, t ∈ group pre →
    (∃ rs, t = .toolGroup rs) ∨ .turn t ∈ pre
  | [], h => by cases h
  | .turn t' :: ps, h => by
    simp only [group, List.mem_cons] at h
    rcases h with rfl | h
    · exact Or.inr List.mem_cons_self
    · exact (mem_group h).imp id (List.mem_cons_of_mem _)
  | .result p o :: ps, h => by
    simp only [group] at h
    split at h
    · rename_i rs ts hg
      rcases List.mem_cons.mp h with rfl | h
      · exact Or.inl ⟨_, rfl⟩
      · have : t ∈ group ps := by rw [hg]; exact List.mem_cons_of_mem _ h
        exact (mem_group this).imp id (List.mem_cons_of_mem _)
    · rcases List.mem_cons.mp h with rfl | h
      · exact Or.inl ⟨_, rfl⟩
      · exact (mem_group h).imp id (List.mem_cons_of_mem _)

/-- What a message lowers to: a turn of its own, owned by its index. -/
@[expose] def TurnOf (m : Message) (i : Nat) : QTurn → Prop
  | .plain _ _ o => o = i ∧ m.role ≠ .assistant ∧ m.role ≠ .tool
  | .assistant _ _ _ _ o => o = i ∧ m.role = .assistant ∧ ∀ ts, m.blocks ≠ [.sampled ts]
  | .sampled ts o => o = i ∧ m.role = .assistant ∧ m.blocks = [.sampled ts]
  | _ => False

/-- The turn of a message is not a tool group. -/
theorem TurnOf.notGroup {m : Message} {i : Nat} {t : QTurn} (h : TurnOf m i t) : NotGroup t := by
  intro rs e
  subst e
  exact h

/-- A message lowers to nothing (the first system message), one tool result, or a turn. -/
theorem lowerMsg_shape {n q i : Nat} {m : Message} {ps : List Pre}
    (h : lowerMsg f n q i m = some ps) :
    (ps = [] ∧ i = 0 ∧ m.role = .system) ∨ (∃ p, ps = [.result p i] ∧ m.role = .tool) ∨
      (∃ t, ps = [.turn t] ∧ TurnOf m i t) := by
  unfold lowerMsg at h
  split at h
  · rename_i hr
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact Or.inr (Or.inr ⟨_, rfl, rfl, by simp [hr], by simp [hr]⟩)
  · rename_i hr
    split at h
    · rename_i hi
      cases h
      exact Or.inl ⟨rfl, hi, hr⟩
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact Or.inr (Or.inr ⟨_, rfl, rfl, by simp [hr], by simp [hr]⟩)
  · rename_i hr
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact Or.inr (Or.inl ⟨p, rfl, hr⟩)
  · cases h
  · rename_i hr
    split at h
    · rename_i ts hb
      cases h
      exact Or.inr (Or.inr ⟨_, rfl, rfl, hr, hb⟩)
    · rename_i hb
      obtain ⟨⟨r, c, ks⟩, -, h⟩ := Option.bind_eq_some_iff.mp h
      have hb' : ∀ ts, m.blocks ≠ [.sampled ts] := fun ts e => hb ts e
      dsimp only at h
      repeat' split at h
      all_goals first
        | (cases h; done)
        | (cases h; exact Or.inr (Or.inr ⟨_, rfl, rfl, hr, hb'⟩))

/-- Lowering one message, as a list of messages. -/
theorem lowerMsgs_singleton (n q i : Nat) (m : Message) :
    lowerMsgs f n q i [m] = lowerMsg f n q i m := by
  simp only [lowerMsgs]
  cases lowerMsg f n q i m <;> simp

/-- Every turn of a lowering is the turn of one of the messages. -/
theorem lowerMsgs_turn {n q : Nat} : ∀ (ms : List Message) (i : Nat) (pre : List Pre),
    lowerMsgs f n q i ms = some pre →
      ∀ t, .turn t ∈ pre → ∃ j m, ms[j]? = some m ∧ TurnOf m (i + j) t
  | [], i, pre, h, t, ht => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    cases ht
  | m :: ms, i, pre, h, t, ht => by
    simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    rcases List.mem_append.mp ht with ht | ht
    · rcases lowerMsg_shape f ha with ⟨rfl, -⟩ | ⟨p, rfl, -⟩ | ⟨t', rfl, ht'⟩
      · cases ht
      · simp at ht
      · simp only [List.mem_singleton, Pre.turn.injEq] at ht
        subst ht
        exact ⟨0, m, rfl, by simpa using ht'⟩
    · obtain ⟨j, m', hm, hj⟩ := lowerMsgs_turn ms (i + 1) b hb t ht
      exact ⟨j + 1, m', by simpa using hm, by rwa [show i + (j + 1) = i + 1 + j by omega]⟩

/-- A lowering whose last message is not a tool result ends with a turn (or is empty). -/
theorem lowerMsgs_last {n q i : Nat} {ms : List Message} {pre : List Pre}
    (h : lowerMsgs f n q i ms = some pre) (hl : ∀ m ∈ ms.getLast?, m.role ≠ .tool) :
    pre = [] ∨ ∃ a0 t, pre = a0 ++ [.turn t] ∧ NotGroup t := by
  by_cases hne : ms = []
  · subst hne
    left
    simp only [lowerMsgs, Option.some.injEq] at h
    exact h.symm
  · rw [← List.dropLast_concat_getLast hne] at h hl
    generalize ms.dropLast = L at h hl
    generalize ms.getLast hne = b at h hl
    obtain ⟨a, c, ha, hc, rfl⟩ := lowerMsgs_append_eq_some f h
    rw [lowerMsgs_singleton] at hc
    have hb : b.role ≠ .tool := hl b (by simp)
    rcases lowerMsg_shape f hc with ⟨rfl, hi, -⟩ | ⟨p, -, hr⟩ | ⟨t, rfl, ht⟩
    · left
      have hL : L = [] := List.eq_nil_of_length_eq_zero (by omega)
      subst hL
      simp only [lowerMsgs, Option.some.injEq] at ha
      subst ha
      rfl
    · exact absurd hr hb
    · exact Or.inr ⟨a, t, rfl, ht.notGroup⟩

/-- A lowering of messages after the first that starts with a message other than a tool
result starts with a turn. -/
theorem lowerMsgs_head {n q i : Nat} {m : Message} {ms : List Message} {pre : List Pre}
    (h : lowerMsgs f n q i (m :: ms) = some pre) (hi : 0 < i) (hm : m.role ≠ .tool) :
    ∃ t b0, pre = .turn t :: b0 ∧ NotGroup t := by
  simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
  obtain ⟨a, ha, b, -, rfl⟩ := h
  rcases lowerMsg_shape f ha with ⟨-, hi', -⟩ | ⟨p, -, hr⟩ | ⟨t, rfl, ht⟩
  · omega
  · exact absurd hr hm
  · exact ⟨t, b, rfl, ht.notGroup⟩

/-- Lowering the sampled assistant message. -/
theorem lowerMsg_sampled (n q i : Nat) (ts : List Token) :
    lowerMsg f n q i ⟨.assistant, [.sampled ts]⟩ = some [.turn (.sampled ts i)] := rfl

/-- The system turn is not a tool group. -/
theorem systemTurn_notGroup {ms : List Message} {tools : Option (List Json)} {st : List QTurn}
    (h : systemTurn f ms tools = some st) : ∀ t ∈ st, NotGroup t := by
  unfold systemTurn at h
  obtain ⟨g, -, rfl⟩ := Option.map_eq_some_iff.mp h
  intro t ht
  dsimp only at ht
  repeat' split at ht
  all_goals first
    | (cases ht; done)
    | (rcases List.mem_singleton.mp ht with rfl; intro rs h; cases h)

/-- The tool groups of a grouping are not empty. -/
theorem group_nonempty : ∀ (pre : List Pre), (∀ t, .turn t ∈ pre → NotGroup t) →
    ∀ t ∈ group pre, ∀ rs, t = .toolGroup rs → rs ≠ []
  | [], _, t, ht => by cases ht
  | .turn t' :: ps, h, t, ht => by
    simp only [group, List.mem_cons] at ht
    rcases ht with rfl | ht
    · exact fun rs e => absurd e (h t List.mem_cons_self rs)
    · exact group_nonempty ps (fun t'' h'' => h t'' (List.mem_cons_of_mem _ h'')) t ht
  | .result p o :: ps, h, t, ht => by
    have ih := group_nonempty ps (fun t'' h'' => h t'' (List.mem_cons_of_mem _ h''))
    simp only [group] at ht
    split at ht
    · rename_i rs' ts hg
      rcases List.mem_cons.mp ht with rfl | ht
      · intro rs e
        cases e
        exact List.cons_ne_nil _ _
      · exact ih t (by rw [hg]; exact List.mem_cons_of_mem _ ht)
    · rcases List.mem_cons.mp ht with rfl | ht
      · intro rs e
        cases e
        exact List.cons_ne_nil _ _
      · exact ih t ht

end Group

end Verified.Qwen

end
