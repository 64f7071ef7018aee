module

public import Verified.Thm.QwenInjective
public import Verified.Thm.QwenQwQ

public section

/-!
# QwQ-32B's lowering loses only what its template does not write

`lowerInjectiveQwQ`: two conversations that QwQ's loop (`Spec/QwenQwQ.lean`) lowers to the same
turns (owners aside) are equal after `normQwQ f` (`Spec/QwenNorm.lean`: reasoning never read,
an assistant message's content `lstrip('\n')`ed but in the last message, the empty system text
the template writes before the tool preamble, and the structure's normalisation otherwise).
With `lawfulQ`, two conversations rendered to the same ids are the same conversation up to it
(`render_injective_normQwQ`). The reading of turns and groups is the structure's
(`Thm/QwenInjective.lean`); only the assistant messages and the system turn are QwQ's own.
-/

namespace Verified.Qwen

open Verified

variable (f : QwenFmt)

/-- The kept form of an assistant message that is not one sampled block (QwQ). -/
theorem normMsgQwQ_asst_parts (n lastQ i : Nat) {bs : List Block}
    (hbs : ∀ ts, bs = [.sampled ts] → False) :
    normMsgQwQ f n lastQ i ⟨.assistant, bs⟩ = match asstParts bs with
      | some (_, c, ks) =>
          [⟨.assistant, keptBody (if i + 1 == n then c else lstripNl c) ++ ks.map keptCall⟩]
      | none => [⟨.assistant, bs⟩] := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a d => rfl
  · cases b <;> rfl

/-- Lowering an assistant message that is not one sampled block (QwQ). -/
theorem lowerMsgQ_asst_parts (n lastQ i : Nat) {bs : List Block}
    (hbs : ∀ ts, bs = [.sampled ts] → False) :
    lowerMsgQ f n lastQ i ⟨.assistant, bs⟩ = (asstParts bs).map fun (_, c, ks) =>
      [.turn (.assistant none (if i + 1 == n then c else lstripNl c)
        (!c.isEmpty && !ks.isEmpty) ks i)] := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a d => rfl
  · cases b <;> rfl

/-- A message's turns read back as the message as QwQ's render keeps it. -/
theorem lowerMsgQ_raise {n lastQ i : Nat} {m : Message} {ps : List Pre}
    (h : lowerMsgQ f n lastQ i m = some ps) :
    ps.flatMap raisePre = normMsgQwQ f n lastQ i m ∧ ∀ x ∈ ps, x.notTools = true := by
  obtain ⟨r, bs⟩ := m
  cases r with
  | assistant =>
    by_cases hs : ∃ ts, bs = [.sampled ts]
    · obtain ⟨ts, rfl⟩ := hs
      simp only [lowerMsgQ, Option.some.injEq] at h
      subst h
      exact ⟨by simp [raisePre, raiseTurnQ, normMsgQwQ], by simp [Pre.notTools]⟩
    · have hbs : ∀ ts, bs = [.sampled ts] → False := fun ts e => hs ⟨ts, e⟩
      rw [lowerMsgQ_asst_parts f n lastQ i hbs] at h
      rw [normMsgQwQ_asst_parts f n lastQ i hbs]
      obtain ⟨⟨r', c, ks⟩, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp only [hp]
      exact ⟨by simp [raisePre, raiseTurnQ, thinkBlocks], by simp [Pre.notTools]⟩
  | _ =>
    simp only [lowerMsgQ] at h
    simp only [normMsgQwQ]
    exact lowerMsg_raiseQ f h

theorem lowerMsgsQ_raise (n lastQ : Nat) : ∀ (ms : List Message) (i : Nat) (ps : List Pre),
    lowerMsgsQ f n lastQ i ms = some ps →
    ps.flatMap raisePre = normMsgsQwQ f n lastQ i ms ∧ ∀ x ∈ ps, x.notTools = true
  | [], i, ps, h => by
    simp only [lowerMsgsQ, Option.some.injEq] at h
    subst h
    exact ⟨rfl, by simp⟩
  | m :: ms, i, ps, h => by
    simp only [lowerMsgsQ, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    obtain ⟨h1, h2⟩ := lowerMsgQ_raise f ha
    obtain ⟨h3, h4⟩ := lowerMsgsQ_raise n lastQ ms _ _ hb
    refine ⟨by simp [normMsgsQwQ, h1, h3], fun x hx => ?_⟩
    rcases List.mem_append.mp hx with hx | hx
    · exact h2 x hx
    · exact h4 x hx

/-- `normQwQ f` of a conversation is the reading of its lowered form. -/
theorem norm_raiseQwQ {c : Conversation} {q : QConv} (hl : lowerQ f c = some q) :
    normQwQ f c = raiseQ q := by
  obtain ⟨ms, tools, g⟩ := c
  simp only [lowerQ, Option.bind_eq_some_iff] at hl
  obtain ⟨st, hst, pre, hpre, hq⟩ := hl
  split at hq
  · simp only [Option.some.injEq] at hq
    subst hq
    obtain ⟨h1, h2⟩ := lowerMsgsQ_raise f _ _ ms 0 pre hpre
    have hn := group_notTools pre h2
    simp only [normQwQ, raiseQ, List.flatMap_append, group_raise, h1, Conversation.mk.injEq]
    unfold systemTurnQ systemTurn at hst
    rcases ms with _ | ⟨m, ms⟩
    · cases tools with
      | some ts =>
        simp only [Bool.false_eq_true, ↓reduceIte, Option.some.injEq] at hst
        subst hst
        refine ⟨by simp [raiseTurnQ], ?_, by cases g <;> rfl⟩
        simp [toolsOfQ, keptToolQ, List.map_map, Function.comp_def]
      | none =>
        simp only [Option.map_some, Option.some.injEq] at hst
        subst hst
        cases hd : f.defaultSystem with
        | none =>
          refine ⟨by simp [keptSystemQ, hd], ?_, by cases g <;> rfl⟩
          simp [hd, hn]
        | some d =>
          refine ⟨by simp [raiseTurnQ, keptSystemQ, PRole.role, hd], ?_, by cases g <;> rfl⟩
          simp [hd, toolsOfQ]
    · by_cases hs : m.role.isSystem = true
      · cases tools with
        | some ts =>
          simp only [hs, ↓reduceIte, Option.map_eq_some_iff] at hst
          obtain ⟨x, ⟨p, hp, rfl⟩, rfl⟩ := hst
          refine ⟨by simp [hs, hp, raiseTurnQ], ?_, by cases g <;> rfl⟩
          simp [toolsOfQ, keptToolQ, List.map_map, Function.comp_def]
        | none =>
          simp only [hs, ↓reduceIte, Option.map_map, Option.map_eq_some_iff,
            Function.comp_apply] at hst
          obtain ⟨p, hp, rfl⟩ := hst
          refine ⟨by simp [hs, hp, raiseTurnQ, keptSystemQ, PRole.role], ?_,
            by cases g <;> rfl⟩
          simp [toolsOfQ]
      · cases tools with
        | some ts =>
          simp only [hs, Bool.false_eq_true, ↓reduceIte, Option.some.injEq] at hst
          subst hst
          refine ⟨by simp [hs, raiseTurnQ], ?_, by cases g <;> rfl⟩
          simp [toolsOfQ, keptToolQ, List.map_map, Function.comp_def]
        | none =>
          simp only [hs, Bool.false_eq_true, ↓reduceIte, Option.map_some,
            Option.some.injEq] at hst
          subst hst
          cases hd : f.defaultSystem with
          | none =>
            refine ⟨by simp [hs, keptSystemQ, hd], ?_, by cases g <;> rfl⟩
            simp [hd, hn]
          | some d =>
            refine ⟨by simp [hs, raiseTurnQ, keptSystemQ, PRole.role, hd], ?_,
              by cases g <;> rfl⟩
            simp [hd, toolsOfQ]
  · cases hq

/-- QwQ-32B's lowering loses only what its template does not write. -/
theorem lowerInjectiveQwQ : (formatQ f).LowerInjective (normQwQ f) := by
  intro c d l l' hl hl' he
  have e1 : normQwQ f c = raiseQ l := norm_raiseQwQ f hl
  have e2 : normQwQ f d = raiseQ l' := norm_raiseQwQ f hl'
  have e3 : raiseQ l = raiseQ l' := by
    rw [← raiseQ_erase l, ← raiseQ_erase l']
    exact congrArg raiseQ he
  rw [e1, e2, e3]

/-- Two conversations QwQ's loop renders to the same ids (text payloads, a lawful codec) are
the same conversation up to `normQwQ f`. -/
theorem render_injective_normQwQ (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : QConv}
    (hl : lowerQ f c = some l) (hl' : lowerQ f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    normQwQ f c = normQwQ f d :=
  Format.render_injective (F := formatQ f) (lawfulQ f hf) hc (lowerInjectiveQwQ f) hl hl' ht ht' h

end Verified.Qwen

end
