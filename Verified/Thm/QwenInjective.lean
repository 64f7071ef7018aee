module

public import Verified.Spec.QwenNorm
public import Verified.Thm.Qwen

public section

/-!
# The Qwen structure's lowering loses only what its template does not write

`lowerInjectiveQ`: for every entry (Qwen2.5 and Qwen3 in every mode, and their model entries),
two conversations that lower to the same turns (owners aside) are equal after `normQ f`
(`Spec/QwenNorm.lean`: the system text the template writes, the entry's default made explicit;
no and empty content alike; call ids dropped; reasoning as the history policy writes it; tool
definitions as their written text). With `lawful`, two conversations an entry renders to the
same ids are the same conversation up to `normQ f` (`render_injective_normQ`).

The proof reads each turn back as the messages it came from (`raiseTurnQ`; a group of tool
results is one message per result), canonical for what the render keeps, and shows that
`normQ f` of a conversation is the reading of its lowered form (`norm_raiseQ`), which owners do
not reach.
-/

namespace Verified.Qwen

open Verified

variable (f : QwenFmt)

/-- The canonical messages of a turn. -/
@[expose] def raiseTurnQ : QTurn → List Message
  | .plain r p _ => [⟨r.role, keptBody p⟩]
  | .toolsSystem s _ _ => keptSystemQ s
  | .assistant th c _ ks _ => [⟨.assistant, thinkBlocks th ++ keptBody c ++ ks.map keptCall⟩]
  | .toolGroup rs => rs.map fun r => ⟨.tool, keptBody r.1⟩
  | .sampled ts _ => [⟨.assistant, [.sampled ts]⟩]

/-- The canonical messages of a turn before grouping. -/
@[expose] def raisePre : Pre → List Message
  | .turn t => raiseTurnQ t
  | .result p _ => [⟨.tool, keptBody p⟩]

/-- Not the tools turn (which only the system turn writes). -/
@[expose] def Pre.notTools : Pre → Bool
  | .turn (.toolsSystem _ _ _) => false
  | _ => true

/-- The tool definitions a lowered conversation writes (as their texts). -/
@[expose] def toolsOfQ : List QTurn → Option (List Json)
  | .toolsSystem _ ls _ :: _ => some (ls.map Json.str)
  | _ => none

/-- The canonical conversation of a lowered one. -/
@[expose] def raiseQ (q : QConv) : Conversation :=
  ⟨q.turns.flatMap raiseTurnQ, toolsOfQ q.turns, q.prompt.isSome⟩

theorem raiseTurnQ_erase (t : QTurn) : raiseTurnQ t.erase = raiseTurnQ t := by
  cases t <;> simp [QTurn.erase, raiseTurnQ, List.map_map, Function.comp_def]

theorem toolsOfQ_erase (ts : List QTurn) : toolsOfQ (ts.map QTurn.erase) = toolsOfQ ts := by
  rcases ts with _ | ⟨t, ts⟩
  · rfl
  · cases t <;> rfl

theorem raiseQ_erase (q : QConv) : raiseQ q.erase = raiseQ q := by
  obtain ⟨ts, p⟩ := q
  have e : (ts.map QTurn.erase).flatMap raiseTurnQ = ts.flatMap raiseTurnQ := by
    simp [List.flatMap_map, raiseTurnQ_erase]
  cases p <;> simp [raiseQ, QConv.erase, e, toolsOfQ_erase]

/-- Grouping tool results keeps every message. -/
theorem group_raise : ∀ ps : List Pre, (group ps).flatMap raiseTurnQ = ps.flatMap raisePre
  | [] => rfl
  | .turn t :: ps => by simp [group, raisePre, group_raise ps]
  | .result p o :: ps => by
    have ih := group_raise ps
    simp only [group]
    cases h : group ps with
    | nil =>
      rw [h] at ih
      simp [raiseTurnQ, raisePre, ← ih]
    | cons t ts =>
      rw [h] at ih
      cases t <;> simp [raiseTurnQ, raisePre, ← ih]

theorem group_notTools : ∀ ps : List Pre, (∀ x ∈ ps, x.notTools = true) →
    toolsOfQ (group ps) = none
  | [], _ => rfl
  | .turn t :: ps, h => by
    have := h _ List.mem_cons_self
    cases t <;> simp_all [Pre.notTools, group, toolsOfQ]
  | .result p o :: ps, _ => by
    simp only [group]
    cases group ps with
    | nil => rfl
    | cons t ts => cases t <;> rfl

/-- Lowering an assistant message that is not one sampled block. -/
theorem lowerMsg_asst_parts (n lastQ i : Nat) {bs : List Block}
    (hbs : ∀ ts, bs = [.sampled ts] → False) :
    lowerMsg f n lastQ i ⟨.assistant, bs⟩ = (asstParts bs).bind fun (r, c, ks) =>
      let sep := !c.isEmpty && !ks.isEmpty
      let think := some (stripNl (r.getD (.text [])))
      match f.mode with
      | .v25 => if r.isSome then none else some [.turn (.assistant none c sep ks i)]
      | .stable => some [.turn (.assistant think (lstripNl c) sep ks i)]
      | .exact =>
          if lastQ < i && (i + 1 == n || !(r.getD (.text [])).isEmpty) then
            some [.turn (.assistant think (lstripNl c) sep ks i)]
          else some [.turn (.assistant none c sep ks i)] := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a d => rfl
  · cases b <;> rfl

/-- The kept form of an assistant message that is not one sampled block. -/
theorem normMsgQ_asst_parts (n lastQ i : Nat) {bs : List Block}
    (hbs : ∀ ts, bs = [.sampled ts] → False) :
    normMsgQ f n lastQ i ⟨.assistant, bs⟩ = match asstParts bs with
      | some (r, c, ks) => [⟨.assistant, normAsst f n lastQ i r c ks⟩]
      | none => [⟨.assistant, bs⟩] := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a d => rfl
  · cases b <;> rfl

/-- A message's turns read back as the message as the render keeps it. -/
theorem lowerMsg_raiseQ {n lastQ i : Nat} {m : Message} {ps : List Pre}
    (h : lowerMsg f n lastQ i m = some ps) :
    ps.flatMap raisePre = normMsgQ f n lastQ i m ∧ ∀ x ∈ ps, x.notTools = true := by
  obtain ⟨r, bs⟩ := m
  cases r with
  | user =>
    simp only [lowerMsg, Option.map_eq_some_iff] at h
    obtain ⟨p, hp, rfl⟩ := h
    exact ⟨by simp [raisePre, raiseTurnQ, normMsgQ, hp, PRole.role], by simp [Pre.notTools]⟩
  | tool =>
    simp only [lowerMsg, Option.map_eq_some_iff] at h
    obtain ⟨p, hp, rfl⟩ := h
    exact ⟨by simp [raisePre, normMsgQ, hp], by simp [Pre.notTools]⟩
  | developer => simp [lowerMsg] at h
  | system =>
    by_cases hi : i = 0
    · simp only [lowerMsg, hi, ↓reduceIte, Option.some.injEq] at h
      subst h
      simp [normMsgQ, hi]
    · simp only [lowerMsg, hi, ↓reduceIte, Option.map_eq_some_iff] at h
      obtain ⟨p, hp, rfl⟩ := h
      exact ⟨by simp [raisePre, raiseTurnQ, normMsgQ, hi, hp, PRole.role],
        by simp [Pre.notTools]⟩
  | assistant =>
    by_cases hs : ∃ ts, bs = [.sampled ts]
    · obtain ⟨ts, rfl⟩ := hs
      simp only [lowerMsg, Option.some.injEq] at h
      subst h
      exact ⟨by simp [raisePre, raiseTurnQ, normMsgQ], by simp [Pre.notTools]⟩
    · have hbs : ∀ ts, bs = [.sampled ts] → False := fun ts e => hs ⟨ts, e⟩
      rw [lowerMsg_asst_parts f n lastQ i hbs] at h
      rw [normMsgQ_asst_parts f n lastQ i hbs]
      obtain ⟨⟨r', c, ks⟩, hp, h⟩ := Option.bind_eq_some_iff.mp h
      simp only [hp]
      cases hm : f.mode with
      | v25 =>
        simp only [hm] at h
        split at h
        · cases h
        · simp only [Option.some.injEq] at h
          subst h
          exact ⟨by simp [raisePre, raiseTurnQ, normAsst, hm, thinkBlocks],
            by simp [Pre.notTools]⟩
      | stable =>
        simp only [hm, Option.some.injEq] at h
        subst h
        exact ⟨by simp [raisePre, raiseTurnQ, normAsst, hm], by simp [Pre.notTools]⟩
      | exact =>
        simp only [hm] at h
        split at h
        · rename_i hc
          simp only [Option.some.injEq] at h
          subst h
          exact ⟨by simp [raisePre, raiseTurnQ, normAsst, hm, hc], by simp [Pre.notTools]⟩
        · rename_i hc
          simp only [Option.some.injEq] at h
          subst h
          exact ⟨by simp [raisePre, raiseTurnQ, normAsst, hm, hc, thinkBlocks],
            by simp [Pre.notTools]⟩

theorem lowerMsgs_raiseQ (n lastQ : Nat) : ∀ (ms : List Message) (i : Nat) (ps : List Pre),
    lowerMsgs f n lastQ i ms = some ps →
    ps.flatMap raisePre = normMsgsQ f n lastQ i ms ∧ ∀ x ∈ ps, x.notTools = true
  | [], i, ps, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨rfl, by simp⟩
  | m :: ms, i, ps, h => by
    simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    obtain ⟨h1, h2⟩ := lowerMsg_raiseQ f ha
    obtain ⟨h3, h4⟩ := lowerMsgs_raiseQ n lastQ ms _ _ hb
    refine ⟨by simp [normMsgsQ, h1, h3], fun x hx => ?_⟩
    rcases List.mem_append.mp hx with hx | hx
    · exact h2 x hx
    · exact h4 x hx

/-- `normQ f` of a conversation is the reading of its lowered form. -/
theorem norm_raiseQ {c : Conversation} {q : QConv} (hl : lower f c = some q) :
    normQ f c = raiseQ q := by
  obtain ⟨ms, tools, g⟩ := c
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨st, hst, pre, hpre, hq⟩ := hl
  split at hq
  · simp only [Option.some.injEq] at hq
    subst hq
    obtain ⟨h1, h2⟩ := lowerMsgs_raiseQ f _ _ ms 0 pre hpre
    have hn := group_notTools pre h2
    simp only [normQ, raiseQ, List.flatMap_append, group_raise, h1, Conversation.mk.injEq]
    refine ⟨?_, ?_, by cases g <;> rfl⟩
    · congr 1
      unfold systemTurn at hst
      rcases ms with _ | ⟨m, ms⟩
      · simp only [Option.map_some, Option.some.injEq] at hst
        subst hst
        cases tools with
        | some ts => simp [raiseTurnQ]
        | none =>
          cases f.defaultSystem <;> simp [raiseTurnQ, keptSystemQ, PRole.role]
      · by_cases hs : m.role.isSystem = true
        · simp only [hs, ↓reduceIte, Option.map_map, Option.map_eq_some_iff,
            Function.comp_apply] at hst
          obtain ⟨p, hp, rfl⟩ := hst
          cases tools <;> simp [hs, hp, raiseTurnQ, keptSystemQ, PRole.role]
        · simp only [hs, Bool.false_eq_true, ↓reduceIte, Option.map_some,
            Option.some.injEq] at hst
          subst hst
          cases tools with
          | some ts => simp [hs, raiseTurnQ]
          | none => cases f.defaultSystem <;> simp [hs, raiseTurnQ, keptSystemQ, PRole.role]
    · unfold systemTurn at hst
      obtain ⟨given, -, rfl⟩ := Option.map_eq_some_iff.mp hst
      cases tools with
      | some ts => simp [toolsOfQ, keptToolQ, List.map_map, Function.comp_def]
      | none =>
        simp only [Option.map_none]
        split
        · simp [toolsOfQ]
        · simpa using hn.symm
  · cases hq

/-- The Qwen structure's lowering (every entry) loses only what its template does not write. -/
theorem lowerInjectiveQ : (format f).LowerInjective (normQ f) := by
  intro c d l l' hl hl' he
  have e1 : normQ f c = raiseQ l := norm_raiseQ f hl
  have e2 : normQ f d = raiseQ l' := norm_raiseQ f hl'
  have e3 : raiseQ l = raiseQ l' := by
    rw [← raiseQ_erase l, ← raiseQ_erase l']
    exact congrArg raiseQ he
  rw [e1, e2, e3]

/-- Two conversations a Qwen entry renders to the same ids (text payloads, a lawful codec) are
the same conversation up to `normQ f`. -/
theorem render_injective_normQ (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : QConv}
    (hl : lower f c = some l) (hl' : lower f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    normQ f c = normQ f d :=
  Format.render_injective (F := format f) (lawful f hf) hc (lowerInjectiveQ f) hl hl' ht ht' h

end Verified.Qwen

end
