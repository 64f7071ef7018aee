module

public import Verified.Spec.QwenQwQ
public import Verified.Thm.Qwen

public section

/-!
# QwQ-32B's loop is lawful

`formatQ` (`Spec/QwenQwQ.lean`) lays out and reads back with the Qwen structure's `layout`
and `unlayout`, whose read-back theorem (`layout_read`, `turn_read`) is stated over any list
of readable turns in which no tool group is empty. QwQ's lowering makes exactly such lists:

* each message lowers to nothing (the first system message), one tool result, or one turn
  of its own that is not a tool group (`lowerMsgQ_shape`: the structure's `TurnOf`);
* its system turn is not a tool group (`systemTurnQ_notGroup`);

so `unlayout_layoutQ` holds by the structure's proof, soundness is the structure's
(`layout_unlayout`), and `lawfulQ` gives `Format.Lawful` for every `QwenFmt` with well-formed
ids; `qwq_lawful` is the entry's, with no proof of its own.
-/

namespace Verified.Qwen

open Verified

section QwQ

variable (f : QwenFmt)

/-- `lowerQ` unfolded. -/
theorem lowerQ_eq_some {c : Conversation} {l : QConv} (h : lowerQ f c = some l) :
    ∃ st pre, systemTurnQ f c.messages c.tools = some st ∧
      lowerMsgsQ f c.messages.length (lastQuery c.messages) 0 c.messages = some pre ∧
      (st ++ group pre).all (turnOk f) = true ∧
      l = ⟨st ++ group pre, if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  simp only [lowerQ, Option.bind_eq_some_iff] at h
  obtain ⟨st, hst, pre, hpre, h⟩ := h
  by_cases hall : (st ++ group pre).all (turnOk f) = true
  · rw [if_pos hall] at h
    exact ⟨st, pre, hst, hpre, hall, (Option.some.inj h).symm⟩
  · rw [if_neg hall] at h
    cases h

/-- A message lowers to nothing (the first system message), one tool result, or a turn of
its own. -/
theorem lowerMsgQ_shape {n q i : Nat} {m : Message} {ps : List Pre}
    (h : lowerMsgQ f n q i m = some ps) :
    (ps = [] ∧ i = 0 ∧ m.role = .system) ∨ (∃ p, ps = [.result p i] ∧ m.role = .tool) ∨
      (∃ t, ps = [.turn t] ∧ TurnOf m i t) := by
  unfold lowerMsgQ at h
  split at h
  · rename_i hr
    split at h
    · rename_i ts hb
      cases h
      exact Or.inr (Or.inr ⟨_, rfl, rfl, hr, hb⟩)
    · rename_i hb
      obtain ⟨⟨r, c, ks⟩, -, h⟩ := Option.map_eq_some_iff.mp h
      cases h
      exact Or.inr (Or.inr ⟨_, rfl, rfl, hr, fun ts e => hb ts e⟩)
  · exact lowerMsg_shape f h

/-- Every turn of QwQ's lowering is the turn of one of the messages. -/
theorem lowerMsgsQ_turn {n q : Nat} : ∀ (ms : List Message) (i : Nat) (pre : List Pre),
    lowerMsgsQ f n q i ms = some pre →
      ∀ t, .turn t ∈ pre → ∃ j m, ms[j]? = some m ∧ TurnOf m (i + j) t
  | [], i, pre, h, t, ht => by
    simp only [lowerMsgsQ, Option.some.injEq] at h
    subst h
    cases ht
  | m :: ms, i, pre, h, t, ht => by
    simp only [lowerMsgsQ, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    rcases List.mem_append.mp ht with ht | ht
    · rcases lowerMsgQ_shape f ha with ⟨rfl, -⟩ | ⟨p, rfl, -⟩ | ⟨t', rfl, ht'⟩
      · cases ht
      · simp at ht
      · simp only [List.mem_singleton, Pre.turn.injEq] at ht
        subst ht
        exact ⟨0, m, rfl, by simpa using ht'⟩
    · obtain ⟨j, m', hm, hj⟩ := lowerMsgsQ_turn ms (i + 1) b hb t ht
      exact ⟨j + 1, m', by simpa using hm, by rwa [show i + (j + 1) = i + 1 + j by omega]⟩

/-- QwQ's system turn is not a tool group. -/
theorem systemTurnQ_notGroup {ms : List Message} {tools : Option (List Json)}
    {st : List QTurn} (h : systemTurnQ f ms tools = some st) : ∀ t ∈ st, NotGroup t := by
  unfold systemTurnQ at h
  dsimp only at h
  repeat' split at h
  all_goals first
    | exact systemTurn_notGroup f h
    | (cases h
       intro t ht
       rcases List.mem_singleton.mp ht with rfl
       intro rs e
       cases e)

/-- `unlayout` inverts `layout` on every conversation QwQ's lowering accepts whose layout is
text-only. -/
theorem unlayout_layoutQ (hf : f.ids.wf = true) {c : Conversation} {l : QConv}
    (hl : lowerQ f c = some l) (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  obtain ⟨st, pre, hst, hpre, hall, rfl⟩ := lowerQ_eq_some f hl
  apply layout_read f hw
  intro t ht
  have hok := List.all_eq_true.mp hall t ht
  have htt : textOnly (turnItems f t) = true := by
    unfold textOnly at htx ⊢
    refine List.all_eq_true.mpr fun x hx => List.all_eq_true.mp htx x ?_
    unfold layout
    exact List.mem_append_left _ (List.mem_flatMap.mpr ⟨t, ht, hx⟩)
  refine turn_read f hw t hok (textTurn_of_textOnly f t hok htt) ?_
  rcases List.mem_append.mp ht with ht | ht
  · intro rs e
    exact absurd e (systemTurnQ_notGroup f hst t ht rs)
  · exact group_nonempty pre (fun t' h' => by
      obtain ⟨j, m, -, hto⟩ := lowerMsgsQ_turn f _ 0 pre hpre t' h'
      exact hto.notGroup) t ht

/-- QwQ's loop is `Format.Lawful` for every `QwenFmt` with well-formed ids. -/
theorem lawfulQ (hf : f.ids.wf = true) : (formatQ f).Lawful := by
  refine ⟨fun c l hl ht => unlayout_layoutQ f hf hl ht, fun s l h => layout_unlayout f s l h,
    fun l t ht => ?_, syms_layout_erase f⟩
  have := ctrls_layout f l t ht
  simp [formatQ, isReserved, this]

end QwQ

/-- QwQ-32B's entry is lawful (its ids decided well formed in the kernel). -/
theorem qwq_lawful : (formatQ qwq).Lawful :=
  lawfulQ qwq (by decide)

end Verified.Qwen

end
