module

public import Verified.Spec.Qwen
public import Verified.Thm.Format

public section

/-!
# Layout lemmas of the Qwen family

Helpers of `Thm/Qwen.lean`: the items and symbols of turns (every turn starts with
`<|im_start|>`, owners and loss bits, reserved control tokens, owners never reach the symbols),
lowering message by message (`lowerMsgs_append`, `lowerMsgs_prefix`, `lastQuery_append`,
`systemTurn_append`), grouping of tool results (`group_append`, `mem_group`,
`flatMap_group`), the shape of a lowered message (`lowerMsg_shape`, `TurnOf`), and the cells
of a sampled turn (`encode_sampled`, `encode_prefix`).
-/

namespace Verified.Qwen

open Verified

/-! ## Items and symbols -/

section Items

variable (f : QwenFmt)

/-- The annotation of a payload item. -/
theorem pay_ann (p : LPay) (o : Nat) (l : Bool) : (pay p o l).ann = ⟨o, l⟩ := by
  cases p <;> rfl

/-- The symbols of a payload item do not depend on its annotation. -/
theorem pay_piece (p : LPay) (o o' : Nat) (l l' : Bool) : (pay p o l).piece = (pay p o' l').piece := by
  cases p <;> rfl

/-- The symbols of a turn start with `<|im_start|>`. -/
theorem syms_turnItems (t : QTurn) : ∃ r, syms (turnItems f t) = .ctrl f.ids.imStart :: r := by
  cases t <;> simp [turnItems, promptItems, ctl, Piece.syms]

/-- The symbols of the generation prompt start with `<|im_start|>`. -/
theorem syms_promptItems (o : Nat) : ∃ r, syms (promptItems f o) = .ctrl f.ids.imStart :: r := by
  simp [promptItems, ctl, Piece.syms]

/-- A run of turns followed by items that start with a non-character starts with one. -/
theorem head_flatMap_turnItems (ts : List QTurn) (rest : List Item)
    (h : ∀ x ∈ (syms rest).head?, x.isCh = false) :
    ∀ x ∈ (syms (ts.flatMap (turnItems f) ++ rest)).head?, x.isCh = false := by
  cases ts with
  | nil => simpa using h
  | cons t ts =>
    obtain ⟨r, hr⟩ := syms_turnItems f t
    simp [List.flatMap_cons, syms_append, hr, Sym.isCh]

/-- A verbatim item and a footer start with a non-character. -/
theorem head_toks_footer (ts : List Token) (a : Ann) (o : Nat) (l : Bool) (rest : List Item) :
    ∀ x ∈ (syms (⟨.toks ts, a⟩ :: (footer f o l ++ rest))).head?, x.isCh = false := by
  cases ts <;> simp [footer, ctl, Piece.syms, Sym.isCh]

/-- A footer starts with a non-character. -/
theorem head_footer (o : Nat) (l : Bool) : ∀ x ∈ (syms (footer f o l)).head?, x.isCh = false := by
  simp [footer, ctl, Piece.syms, Sym.isCh]

/-- The cells of a verbatim token item. -/
theorem encodeItems_toks (c : Codec) (ts : List Token) (a : Ann) :
    encodeItems c [⟨.toks ts, a⟩] = ts.map (fun t => ⟨t, .toks, a.owner, a.learn⟩) := by
  have hs : ∀ us : List Token, splitBy (fun x : Sym × Ann => !x.1.isCh)
      (us.map fun t => (Sym.tok t, a)) = ([], us.map fun t => ((Sym.tok t, a), [])) := by
    intro us
    induction us with
    | nil => rfl
    | cons u us ih =>
      rw [List.map_cons, splitBy_cons_of_true _ _ _ rfl, ih]
      rfl
  have ha : asyms [⟨.toks ts, a⟩] = ts.map fun t => (Sym.tok t, a) := by
    simp [asyms, Piece.syms]
  have he : encodeRunCells c [] = [] := rfl
  simp only [encodeItems, ha, hs, he, List.nil_append]
  clear ha hs
  induction ts with
  | nil => rfl
  | cons u us ih =>
    simp only [List.map_cons, List.flatMap_cons, he, ih]
    rfl

/-- Splitting a layout at a list of turns. -/
theorem layout_append (ts us : List QTurn) (p : Option Nat) :
    layout f ⟨ts ++ us, p⟩ = layout f ⟨ts, none⟩ ++ layout f ⟨us, p⟩ := by
  simp [layout]

end Items

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

end Group

/-! ## Annotations and control tokens of the items -/

section Ann

variable (f : QwenFmt)

/-- `∀` over a concatenation. -/
theorem fa_append {α : Type} {P : α → Prop} {a b : List α} :
    (∀ x ∈ a ++ b, P x) ↔ (∀ x ∈ a, P x) ∧ (∀ x ∈ b, P x) := by
  simp only [List.mem_append]
  exact ⟨fun h => ⟨fun x hx => h x (Or.inl hx), fun x hx => h x (Or.inr hx)⟩,
    fun h x hx => hx.elim (h.1 x) (h.2 x)⟩

/-- The owner of the items of an assistant or sampled turn. -/
@[expose] def asstOwner : QTurn → Option Nat
  | .assistant _ _ _ _ o => some o
  | .sampled _ o => some o
  | _ => none

/-- The annotations of the items of a turn: owned by the message in assistant and sampled
turns, never learned elsewhere. -/
@[expose] def annOk (t : QTurn) (a : Ann) : Prop :=
  match asstOwner t with
  | some o => a.owner = o
  | none => a.learn = false

theorem annOk_none {t : QTurn} {a : Ann} (h : asstOwner t = none) (ha : annOk t a) :
    a.learn = false := by
  unfold annOk at ha
  rw [h] at ha
  exact ha

theorem callItems_owner (s : Bool) (k : Call) (o : Nat) :
    ∀ it ∈ callItems f s k o, it.ann.owner = o := by
  unfold callItems
  split <;> simp [ctl, txt]

theorem callsItems_owner (s : Bool) (o : Nat) (ks : List Call) :
    ∀ it ∈ callsItems f s o ks, it.ann.owner = o := by
  induction ks generalizing s with
  | nil => simp [callsItems]
  | cons k ks ih =>
    simp only [callsItems, fa_append]
    exact ⟨callItems_owner f s k o, ih true⟩

theorem resultItems_learn (r : LPay × Nat) : ∀ it ∈ resultItems f r, it.ann.learn = false := by
  unfold resultItems
  split <;> simp [txt, ctl, pay_ann]

theorem flatMap_resultItems_learn (rs : List (LPay × Nat)) :
    ∀ it ∈ rs.flatMap (resultItems f), it.ann.learn = false := by
  intro it h
  obtain ⟨r, -, h⟩ := List.mem_flatMap.mp h
  exact resultItems_learn f r it h

theorem promptItems_ann (o : Nat) : ∀ it ∈ promptItems f o, it.ann = ⟨o, false⟩ := by
  unfold promptItems
  split <;> simp [txt, ctl]

theorem promptItems_learn (o : Nat) : ∀ it ∈ promptItems f o, it.ann.learn = false :=
  fun it h => by rw [promptItems_ann f o it h]

theorem promptItems_owner (o : Nat) : ∀ it ∈ promptItems f o, it.ann.owner = o :=
  fun it h => by rw [promptItems_ann f o it h]

/-- Who owns the items of a turn, and which are learned. -/
theorem turnItems_ann (t : QTurn) : ∀ it ∈ turnItems f t, annOk t it.ann := by
  cases t with
  | plain r p o => simp [turnItems, footer, annOk, asstOwner, ctl, txt, pay_ann, or_imp, forall_and]
  | toolsSystem s ts o =>
    cases s <;> simp [turnItems, footer, annOk, asstOwner, ctl, txt, pay_ann, or_imp, forall_and]
  | assistant th c s ks o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨⟨⟨?_, ?_⟩, ?_⟩, callsItems_owner f s o ks⟩, ?_⟩
    · simp [annOk, asstOwner, ctl, txt]
    · split <;> simp [annOk, asstOwner, ctl, txt, pay_ann]
    · simp [annOk, asstOwner, pay_ann]
    · simp [annOk, asstOwner, footer, ctl, txt]
  | toolGroup rs =>
    simp only [turnItems, fa_append]
    refine ⟨⟨?_, flatMap_resultItems_learn f rs⟩, ?_⟩
    · simp [annOk, asstOwner, ctl, txt]
    · simp [annOk, asstOwner, footer, ctl, txt]
  | sampled ts o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨promptItems_owner f o, ?_⟩, ?_⟩
    · simp [annOk, asstOwner]
    · simp [annOk, asstOwner, footer, ctl, txt]

/-- The turn of a message: a learned item is owned by an assistant message. -/
theorem TurnOf.learned {m : Message} {i : Nat} {t : QTurn} {a : Ann} (h : TurnOf m i t)
    (ha : annOk t a) (hl : a.learn = true) : a.owner = i ∧ m.role = .assistant := by
  cases t with
  | plain r p o =>
    have := annOk_none rfl ha
    rw [hl] at this
    cases this
  | toolsSystem s ts o => exact h.elim
  | assistant th c s ks o => exact ⟨ha.trans h.1, h.2.1⟩
  | toolGroup rs => exact h.elim
  | sampled ts o => exact ⟨ha.trans h.1, h.2.1⟩

/-- The system turn is not an assistant turn. -/
theorem systemTurn_asst {ms : List Message} {tools : Option (List Json)} {st : List QTurn}
    (h : systemTurn f ms tools = some st) : ∀ t ∈ st, asstOwner t = none := by
  unfold systemTurn at h
  obtain ⟨g, -, rfl⟩ := Option.map_eq_some_iff.mp h
  intro t ht
  dsimp only at ht
  repeat' split at ht
  all_goals first
    | (cases ht; done)
    | (rcases List.mem_singleton.mp ht with rfl; rfl)

/-- Where an item of a layout comes from. -/
theorem mem_layout {l : QConv} {it : Item} (h : it ∈ layout f l) :
    (∃ t ∈ l.turns, it ∈ turnItems f t) ∨ ∃ o, it ∈ promptItems f o := by
  unfold layout at h
  rcases List.mem_append.mp h with h | h
  · exact Or.inl (List.mem_flatMap.mp h)
  · split at h
    · exact Or.inr ⟨_, h⟩
    · cases h

/-- A layout starts with a control token (or is empty). -/
theorem head_layout (l : QConv) : ∀ x ∈ (syms (layout f l)).head?, x.isCh = false := by
  unfold layout
  apply head_flatMap_turnItems
  cases l.prompt with
  | none => simp
  | some o =>
    obtain ⟨r, hr⟩ := syms_promptItems f o
    simp [hr, Sym.isCh]

end Ann

/-! ## Renders of extensions -/

section Extend

variable (f : QwenFmt)

/-- Lowering the sampled assistant message. -/
theorem lowerMsg_sampled (n q i : Nat) (ts : List Token) :
    lowerMsg f n q i ⟨.assistant, [.sampled ts]⟩ = some [.turn (.sampled ts i)] := rfl

/-- The cells of a layout followed by a sampled turn's tokens and footer. -/
theorem encode_sampled (c : Codec) (X : List Item) (ts : List Token) (o : Nat) :
    encodeItems c (X ++ ([⟨.toks ts, ⟨o, true⟩⟩] ++ footer f o true)) =
      encodeItems c X ++ ts.map (fun t => ⟨t, .toks, o, true⟩) ++
        encodeItems c (footer f o true) := by
  have h1 : ∀ x ∈ (syms ([⟨.toks ts, ⟨o, true⟩⟩] ++ footer f o true)).head?, x.isCh = false := by
    cases ts <;> simp [footer, ctl, Piece.syms, Sym.isCh]
  rw [encodeItems_append c X _ h1, encodeItems_append c [_] _ (head_footer f o true),
    encodeItems_toks, List.append_assoc]

/-- A layout is a prefix of the cells of the layout followed by a sampled turn and more. -/
theorem encode_prefix (c : Codec) (X R : List Item) (ts : List Token) (a : Ann) (o : Nat)
    (l : Bool) : encodeItems c X <+: encodeItems c (X ++ ([⟨.toks ts, a⟩] ++ (footer f o l ++ R))) := by
  have h1 : ∀ x ∈ (syms ([⟨.toks ts, a⟩] ++ (footer f o l ++ R))).head?, x.isCh = false := by
    cases ts <;> simp [footer, ctl, Piece.syms, Sym.isCh]
  rw [encodeItems_append c X _ h1]
  exact List.prefix_append _ _

end Extend

/-! ## Learned tokens of conversations of sampled turns -/

section Sampled

variable (f : QwenFmt)

/-- A layout is its turns, then its generation prompt. -/
theorem layout_eq (ts : List QTurn) (p : Option Nat) :
    layout f ⟨ts, p⟩ = ts.flatMap (turnItems f) ++ layout f ⟨[], p⟩ := by
  simp [layout]

/-- What a function of the turns collects from a pre-turn (nothing from a result). -/
@[expose] def preFlat {β : Type} (G : QTurn → List β) : Pre → List β
  | .turn t => G t
  | .result _ _ => []

/-- Grouping keeps what a function of the turns that ignores tool groups collects. -/
theorem flatMap_group {β : Type} (G : QTurn → List β) (hG : ∀ rs, G (.toolGroup rs) = []) :
    ∀ pre : List Pre, (group pre).flatMap G = pre.flatMap (preFlat G)
  | [] => rfl
  | .turn t :: ps => by
    simp only [group, List.flatMap_cons, flatMap_group G hG ps, preFlat]
  | .result p o :: ps => by
    have ih := flatMap_group G hG ps
    simp only [group, List.flatMap_cons, preFlat, List.nil_append]
    split
    · rename_i rs ts hg
      rw [hg] at ih
      simp only [List.flatMap_cons, hG, List.nil_append] at ih ⊢
      exact ih
    · simp only [List.flatMap_cons, hG, List.nil_append]
      exact ih

/-- The learned pieces of a lowering, message by message. -/
theorem lowerMsgs_flat (G : QTurn → List (Token × Nat)) (H : Message × Nat → List (Token × Nat))
    (hGH : ∀ m i t, (m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      TurnOf m i t → G t = H (m, i))
    (hH0 : ∀ m i, (m.role = .system ∨ m.role = .tool) → H (m, i) = []) {n q : Nat} :
    ∀ (ms : List Message) (i : Nat) (pre : List Pre), lowerMsgs f n q i ms = some pre →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      pre.flatMap (preFlat G) = (ms.zipIdx i).flatMap H
  | [], i, pre, h, _ => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    rfl
  | m :: ms, i, pre, h, hs => by
    simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    rw [List.flatMap_append, List.zipIdx_cons, List.flatMap_cons,
      lowerMsgs_flat G H hGH hH0 ms (i + 1) b hb (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))]
    congr 1
    rcases lowerMsg_shape f ha with ⟨rfl, -, hr⟩ | ⟨p, rfl, hr⟩ | ⟨t, rfl, ht⟩
    · exact (hH0 m i (Or.inl hr)).symm
    · simp only [List.flatMap_cons, List.flatMap_nil, preFlat, List.append_nil]
      exact (hH0 m i (Or.inr hr)).symm
    · simp only [List.flatMap_cons, List.flatMap_nil, preFlat, List.append_nil]
      exact hGH m i t (hs m List.mem_cons_self) ht

/-- The learned items of a sampled turn are not text. -/
theorem sampled_no_text (ts : List Token) (o : Nat) :
    ∀ it ∈ turnItems f (.sampled ts o), it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
  simp only [turnItems, fa_append]
  refine ⟨⟨fun it h hl => ?_, ?_⟩, ?_⟩
  · rw [promptItems_learn f o it h] at hl
    cases hl
  · simp
  · simp [footer, ctl, txt]

/-- The learned pieces of a layout of sampled turns. -/
theorem sampled_flat (F : Item → List (Token × Nat))
    (hF0 : ∀ it, it.ann.learn = false → F it = [])
    (hFt : ∀ ts o, F ⟨.toks ts, ⟨o, true⟩⟩ = ts.map (·, o))
    (hFc : ∀ t o, F ⟨.ctrl t, ⟨o, true⟩⟩ = [(t, o)])
    {ms : List Message} {tools : Option (List Json)} {st : List QTurn} {pre : List Pre}
    {n q : Nat} (hst : systemTurn f ms tools = some st) (hpre : lowerMsgs f n q 0 ms = some pre)
    (hs : ∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) (p : Option Nat)
    (H : Message × Nat → List (Token × Nat))
    (hH1 : ∀ m i, m.role ≠ .assistant → H (m, i) = [])
    (hH2 : ∀ m i ts, m.role = .assistant → m.blocks = [.sampled ts] →
      H (m, i) = (ts ++ [f.ids.imEnd]).map (·, i)) :
    (layout f ⟨st ++ group pre, p⟩).flatMap F = ms.zipIdx.flatMap H := by
  have hT : ∀ t, asstOwner t = none → (turnItems f t).flatMap F = [] := fun t ht =>
    List.flatMap_eq_nil_iff.mpr fun it hit => hF0 it (annOk_none ht (turnItems_ann f t it hit))
  have hP : (layout f ⟨[], p⟩).flatMap F = [] := by
    apply List.flatMap_eq_nil_iff.mpr
    intro it hit
    apply hF0
    rcases mem_layout f hit with ⟨t, ht, -⟩ | ⟨o, hit⟩
    · cases ht
    · exact promptItems_learn f o it hit
  have hS : st.flatMap (fun t => (turnItems f t).flatMap F) = [] :=
    List.flatMap_eq_nil_iff.mpr fun t ht => hT t (systemTurn_asst f hst t ht)
  rw [layout_eq f, List.flatMap_append, hP, List.append_nil, List.flatMap_append,
    List.flatMap_append, List.flatMap_assoc, List.flatMap_assoc, hS, List.nil_append,
    flatMap_group (fun t => (turnItems f t).flatMap F) (fun rs => hT _ rfl) pre]
  refine lowerMsgs_flat f _ H ?_ (fun m i h => hH1 m i (by rcases h with h | h <;> rw [h] <;> nofun))
    ms 0 pre hpre hs
  intro m i t hm ht
  cases t with
  | plain r p o => exact (hT _ rfl).trans (hH1 m i ht.2.1).symm
  | toolsSystem s ts o => exact ht.elim
  | assistant th c s ks o =>
    obtain ⟨ts, hts⟩ := hm ht.2.1
    exact absurd hts (ht.2.2 ts)
  | toolGroup rs => exact ht.elim
  | sampled ts o =>
    obtain ⟨rfl, hr, hb⟩ := ht
    rw [hH2 m o ts hr hb]
    simp [turnItems, footer, ctl, txt, List.flatMap_eq_nil_iff.mpr fun it h =>
      hF0 it (promptItems_learn f o it h), hFt, hFc, hF0]

end Sampled

/-! ## Control tokens and owners of the symbols -/

section Ctrl

variable (f : QwenFmt)

theorem ctrls_map_ch (cs : Chars) : ctrls (cs.map Sym.ch) = [] := ctrls_lit cs

theorem ctrls_map_tok (ts : List Token) : ctrls (ts.map Sym.tok) = [] := by
  induction ts with
  | nil => rfl
  | cons t ts ih => exact ih

theorem ctrls_ctrl (t : Token) : ctrls [Sym.ctrl t] = [t] := rfl

theorem ctrls_pay (p : LPay) (o : Nat) (l : Bool) : ctrls (pay p o l).piece.syms = [] := by
  cases p
  · exact ctrls_map_ch _
  · exact ctrls_map_tok _

/-- The control tokens of the symbols of some items come from their items. -/
theorem mem_ctrls_syms {items : List Item} {x : Token} (h : x ∈ ctrls (syms items)) :
    ∃ it ∈ items, x ∈ ctrls it.piece.syms := by
  induction items with
  | nil => simp [syms, ctrls] at h
  | cons it items ih =>
    rw [syms_cons, ctrls_append] at h
    rcases List.mem_append.mp h with h | h
    · exact ⟨it, List.mem_cons_self, h⟩
    · obtain ⟨it', hit', h'⟩ := ih h
      exact ⟨it', List.mem_cons_of_mem _ hit', h'⟩

theorem imStart_mem : f.ids.imStart ∈ f.ids.reserved := by simp [QwenIds.reserved]
theorem imEnd_mem : f.ids.imEnd ∈ f.ids.reserved := by simp [QwenIds.reserved]
theorem callOpen_mem : f.ids.callOpen ∈ f.ids.reserved := by simp [QwenIds.reserved]
theorem callClose_mem : f.ids.callClose ∈ f.ids.reserved := by simp [QwenIds.reserved]

theorem think_mem {a b : Token} (h : f.ids.think = some (a, b)) :
    a ∈ f.ids.reserved ∧ b ∈ f.ids.reserved := by
  simp [QwenIds.reserved, h]

theorem resp_mem {a b : Token} (h : f.ids.toolResponse = some (a, b)) :
    a ∈ f.ids.reserved ∧ b ∈ f.ids.reserved := by
  simp [QwenIds.reserved, h]

/-- The control tokens an item may carry are reserved. -/
@[expose] def CtlOk (it : Item) : Prop := ∀ x ∈ ctrls it.piece.syms, x ∈ f.ids.reserved

theorem ctlOk_ctl {t : Token} (h : t ∈ f.ids.reserved) (o : Nat) (l : Bool) :
    CtlOk f (ctl t o l) := by
  simp [CtlOk, ctl, Piece.syms, ctrls_ctrl, h]

theorem ctlOk_txt (cs : Chars) (o : Nat) (l : Bool) : CtlOk f (txt cs o l) := by
  simp [CtlOk, txt, Piece.syms, ctrls_map_ch]

theorem ctlOk_pay (p : LPay) (o : Nat) (l : Bool) : CtlOk f (pay p o l) := by
  simp [CtlOk, ctrls_pay]

theorem ctlOk_callsItems (s : Bool) (o : Nat) (ks : List Call) :
    ∀ it ∈ callsItems f s o ks, CtlOk f it := by
  induction ks generalizing s with
  | nil => simp [callsItems]
  | cons k ks ih =>
    simp only [callsItems, fa_append]
    refine ⟨?_, ih true⟩
    unfold callItems
    split <;> simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, callOpen_mem, callClose_mem]

theorem ctlOk_resultItems (r : LPay × Nat) : ∀ it ∈ resultItems f r, CtlOk f it := by
  unfold resultItems
  split
  · rename_i a b h
    simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, (resp_mem f h).1, (resp_mem f h).2]
  · simp [or_imp, forall_and, ctlOk_txt, ctlOk_pay]

theorem ctlOk_promptItems (o : Nat) : ∀ it ∈ promptItems f o, CtlOk f it := by
  unfold promptItems
  split
  · rename_i a b h _
    simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem, (think_mem f h).1,
      (think_mem f h).2]
  · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem]

theorem ctlOk_turnItems (t : QTurn) : ∀ it ∈ turnItems f t, CtlOk f it := by
  cases t with
  | plain r p o =>
    simp [turnItems, footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, imStart_mem,
      imEnd_mem]
  | toolsSystem s ts o =>
    cases s <;> simp [turnItems, footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay,
      imStart_mem, imEnd_mem, callOpen_mem, callClose_mem]
  | assistant th c s ks o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨⟨⟨?_, ?_⟩, ?_⟩, ctlOk_callsItems f s o ks⟩, ?_⟩
    · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem]
    · split
      · rename_i a b _ h
        simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, (think_mem f h).1,
          (think_mem f h).2]
      · simp
    · simp [ctlOk_pay]
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]
  | toolGroup rs =>
    simp only [turnItems, fa_append]
    refine ⟨⟨?_, fun it h => ?_⟩, ?_⟩
    · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem]
    · obtain ⟨r, -, h⟩ := List.mem_flatMap.mp h
      exact ctlOk_resultItems f r it h
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]
  | sampled ts o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨ctlOk_promptItems f o, ?_⟩, ?_⟩
    · simp [CtlOk, Piece.syms, ctrls_map_tok]
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]

/-- Every control token of a layout is reserved. -/
theorem ctrls_layout (l : QConv) : ∀ t ∈ ctrls (syms (layout f l)), t ∈ f.ids.reserved := by
  intro t ht
  obtain ⟨it, hit, h⟩ := mem_ctrls_syms ht
  rcases mem_layout f hit with ⟨u, -, hu⟩ | ⟨o, hu⟩
  · exact ctlOk_turnItems f u it hu t h
  · exact ctlOk_promptItems f o it hu t h

/-- The symbols of a payload. -/
@[expose] def payPiece : LPay → Piece
  | .text cs => .text cs
  | .toks ts => .toks ts

theorem pay_piece' (p : LPay) (o : Nat) (l : Bool) : (pay p o l).piece = payPiece p := by
  cases p <;> rfl

theorem syms_flatMap {α : Type} (g : α → List Item) (l : List α) :
    syms (l.flatMap g) = l.flatMap (fun x => syms (g x)) := by
  induction l with
  | nil => rfl
  | cons x l ih => simp [List.flatMap_cons, syms_append, ih]

/-- The symbols of the calls of a message. -/
@[expose] def callsSyms (s : Bool) (ks : List Call) : List Sym := syms (callsItems f s 0 ks)

theorem syms_callsItems (s : Bool) (o : Nat) (ks : List Call) :
    syms (callsItems f s o ks) = callsSyms f s ks := by
  unfold callsSyms
  induction ks generalizing s with
  | nil => rfl
  | cons k ks ih =>
    simp only [callsItems, syms_append, ih]
    congr 1
    unfold callItems
    split <;> simp [ctl, txt]

/-- The symbols of one tool result. -/
@[expose] def resultSyms (p : LPay) : List Sym := syms (resultItems f (p, 0))

theorem syms_resultItems (r : LPay × Nat) : syms (resultItems f r) = resultSyms f r.1 := by
  unfold resultSyms resultItems
  split <;> simp [ctl, txt, pay_piece']

/-- The symbols of the generation prompt. -/
@[expose] def promptSyms : List Sym := syms (promptItems f 0)

theorem syms_promptItems' (o : Nat) : syms (promptItems f o) = promptSyms f := by
  unfold promptSyms promptItems
  split <;> simp [ctl, txt]

theorem syms_turnItems_erase (t : QTurn) : syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t with
  | plain r p o => simp [QTurn.erase, turnItems, footer, ctl, txt, pay_piece']
  | toolsSystem s ts o =>
    cases s <;> simp [QTurn.erase, turnItems, footer, ctl, txt, pay_piece', syms,
      List.flatMap_map]
  | assistant th c s ks o =>
    simp only [QTurn.erase, turnItems, syms_append, syms_callsItems]
    split <;> simp [footer, ctl, txt, pay_piece']
  | toolGroup rs =>
    simp [QTurn.erase, turnItems, footer, ctl, txt, syms_flatMap, syms_resultItems,
      List.flatMap_map]
  | sampled ts o => simp [QTurn.erase, turnItems, footer, ctl, txt, syms_promptItems']

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_layout_erase (l : QConv) : syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨ts, p⟩ := l
  simp only [QConv.erase, layout, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItems_erase]
  cases p <;> simp [syms_promptItems']

end Ctrl

end Verified.Qwen

end
