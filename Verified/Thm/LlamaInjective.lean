module

public import Verified.Spec.LlamaNorm
public import Verified.Thm.Llama

public section

/-!
# Llama 3.1's lowering loses only what its template does not write

`lowerInjectiveL`: two conversations that Llama 3.1 lowers to the same turns (owners aside) are
equal after `normL` (`Spec/LlamaNorm.lean`: content `| trim`med, no, empty and blank content
alike, tool results as their `tojson`, a call message's content and call id dropped, tool
definitions as the text the template writes). With `lawful`, two conversations rendered to
the same ids are the same conversation up to `normL` (`render_injective_normL`).

The proof reads each turn back as the message it came from (`raiseTurnL`), canonical for what
the render keeps, and shows that `normL` of a conversation is the reading of its lowered form
(`norm_raiseL`), which owners do not reach.
-/

namespace Verified.Llama

open Verified

variable (f : LlamaFmt)

/-- The canonical messages of a turn. -/
@[expose] def raiseTurnL : LTurn → List Message
  | .system _ _ sys _ => keptSys sys
  | .userTools _ u _ => [⟨.user, keptBody u⟩]
  | .plain r p _ => [⟨r.role, keptBody p⟩]
  | .call n a _ => [⟨.assistant, [.toolCall n a none]⟩]
  | .ipython p _ => [⟨.tool, keptBody p⟩]
  | .sampled ts _ => [⟨.assistant, [.sampled ts]⟩]

/-- The tool definitions a lowered conversation writes (as their texts), `none` without the
`Environment: ipython` line. -/
@[expose] def toolsOfL : List LTurn → Option (List Json)
  | .system env tools _ _ :: rest =>
      if env then some ((if f.toolsInUser then
          (match rest with
            | .userTools ts _ _ :: _ => ts
            | _ => []) else tools).map Json.str)
      else none
  | _ => none

/-- The canonical conversation of a lowered one. -/
@[expose] def raiseL (q : LConv) : Conversation :=
  ⟨q.turns.flatMap raiseTurnL, toolsOfL f q.turns, q.prompt.isSome⟩

theorem raiseTurnL_erase (t : LTurn) : raiseTurnL t.erase = raiseTurnL t := by
  cases t <;> rfl

theorem toolsOfL_erase (ts : List LTurn) : toolsOfL f (ts.map LTurn.erase) = toolsOfL f ts := by
  rcases ts with _ | ⟨t, rest⟩
  · rfl
  · cases t with
    | system e tl s o =>
      rcases rest with _ | ⟨t', rest⟩
      · rfl
      · cases t' <;> rfl
    | _ => rfl

theorem raiseL_erase (q : LConv) : raiseL f q.erase = raiseL f q := by
  obtain ⟨ts, p⟩ := q
  have e : (ts.map LTurn.erase).flatMap raiseTurnL = ts.flatMap raiseTurnL := by
    simp [List.flatMap_map, raiseTurnL_erase]
  cases p <;> simp [raiseL, LConv.erase, e, toolsOfL_erase]

/-- Lowering an assistant message, by the shape of its body. -/
theorem lowerMsg_asst (i : Nat) (bs : List Block) :
    lowerMsg i ⟨.assistant, bs⟩ = match asstShape bs with
      | some (.inl ts) => some (.sampled ts i)
      | some (.inr (n, a)) => some (.call n a i)
      | none => (Message.content? ⟨.assistant, bs⟩).map fun p => .plain .assistant (trimPay p) i := by
  rcases bs with _ | ⟨b1, _ | ⟨b2, _ | ⟨b3, bs⟩⟩⟩ <;> (try cases b1) <;> (try cases b2) <;> rfl

/-- A message's turn reads back as the message as the render keeps it. -/
theorem lowerMsg_raise {i : Nat} {m : Message} {t : LTurn} (h : lowerMsg i m = some t) :
    raiseTurnL t = [normMsgL m] := by
  obtain ⟨r, bs⟩ := m
  cases r with
  | assistant =>
    rw [lowerMsg_asst] at h
    cases hs : asstShape bs with
    | none =>
      rw [hs] at h
      obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp [raiseTurnL, normMsgL, hs, hp, LRole.role]
    | some x =>
      rcases x with ts | ⟨n, a⟩ <;> rw [hs] at h <;> cases h <;> simp [raiseTurnL, normMsgL, hs]
  | _ =>
    simp only [lowerMsg, Option.map_eq_some_iff] at h
    obtain ⟨p, hp, rfl⟩ := h
    simp [raiseTurnL, normMsgL, hp, LRole.role]

theorem lowerMsgs_raiseL : ∀ (ms : List Message) (i : Nat) (ts : List LTurn),
    lowerMsgs i ms = some ts → ts.flatMap raiseTurnL = ms.map normMsgL
  | [], i, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    rfl
  | m :: ms, i, ts, h => by
    simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨t, ht, ts', hts', rfl⟩ := h
    simp [lowerMsg_raise ht, lowerMsgs_raiseL ms _ _ hts']

/-- `normL` from the first step of lowering: the leading system text and the rest. -/
theorem normL_first {ms : List Message} {tools : Option (List Json)} {g : Bool} {sys : LPay}
    {rest : List Message} {i : Nat}
    (h : (match ms with
      | m :: ms => if m.role.isSystem then m.content?.map fun p => (trimPay p, ms, 1)
          else some (.text [], m :: ms, 0)
      | [] => some (.text [], [], 0)) = some (sys, rest, i)) :
    normL ⟨ms, tools, g⟩ = ⟨keptSys sys ++ rest.map normMsgL, tools.map (·.map keptTool), g⟩ := by
  rcases ms with _ | ⟨m, ms⟩
  · simp only [Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl, -⟩ := h
    rfl
  · by_cases hs : m.role.isSystem = true
    · simp only [hs, ↓reduceIte, Option.map_eq_some_iff, Prod.mk.injEq] at h
      obtain ⟨p, hp, rfl, rfl, -⟩ := h
      simp [normL, hs, hp]
    · simp only [hs, Bool.false_eq_true, ↓reduceIte, Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl, -⟩ := h
      simp [normL, hs, keptSys, keptBody]

/-- `normL` of a conversation is the reading of its lowered form. -/
theorem norm_raiseL {c : Conversation} {q : LConv} (hl : lower f c = some q) :
    normL c = raiseL f q := by
  obtain ⟨ms, tools, g⟩ := c
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨⟨sys, rest, i⟩, hfirst, ⟨head, rest', i'⟩, hwith, ts, hts, hq⟩ := hl
  rw [normL_first hfirst]
  split at hq
  · simp only [Option.some.injEq] at hq
    subst hq
    have hr := lowerMsgs_raiseL rest' i' ts hts
    cases hE : (tools.isSome && f.toolsInUser)
    · simp only [hE, Bool.false_eq_true, ↓reduceIte, Option.some.injEq, Prod.mk.injEq] at hwith
      obtain ⟨rfl, rfl, -⟩ := hwith
      simp only [raiseL, List.singleton_append, List.flatMap_cons, hr, Conversation.mk.injEq]
      refine ⟨by simp [raiseTurnL], ?_, by cases g <;> rfl⟩
      cases ht : tools with
      | none => simp [toolsOfL]
      | some js =>
        have hu : f.toolsInUser = false := by simpa [ht] using hE
        simp [toolsOfL, hu, keptTool, List.map_map, Function.comp_def]
    · have ht : ∃ js, tools = some js := by
        cases tools with
        | none => simp at hE
        | some js => exact ⟨js, rfl⟩
      obtain ⟨js, rfl⟩ := ht
      have hu : f.toolsInUser = true := by simpa using hE
      simp only [hE, ↓reduceIte] at hwith
      rcases rest with _ | ⟨⟨r, bs⟩, rest⟩
      · cases hwith
      · cases r with
        | user =>
          simp only [Role.isUser, ↓reduceIte, Option.map_eq_some_iff, Prod.mk.injEq] at hwith
          obtain ⟨p, hp, rfl, rfl, -⟩ := hwith
          simp only [raiseL, List.flatMap_cons, List.flatMap_nil, List.cons_append,
            List.nil_append, hr, List.map_cons, Conversation.mk.injEq]
          refine ⟨by simp [raiseTurnL, normMsgL, hp], ?_, by cases g <;> rfl⟩
          simp [toolsOfL, hu, keptTool, List.map_map, Function.comp_def]
        | _ => simp [Role.isUser] at hwith
  · cases hq

/-- Llama 3.1's lowering loses only what its template does not write. -/
theorem lowerInjectiveL : (format f).LowerInjective normL := by
  intro c d l l' hl hl' he
  have e1 : normL c = raiseL f l := norm_raiseL f hl
  have e2 : normL d = raiseL f l' := norm_raiseL f hl'
  have e3 : raiseL f l = raiseL f l' := by
    rw [← raiseL_erase f l, ← raiseL_erase f l']
    exact congrArg (raiseL f) he
  rw [e1, e2, e3]

/-- Two conversations Llama 3.1 renders to the same ids (text payloads, a lawful codec) are the
same conversation up to `normL`. -/
theorem render_injective_normL (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : LConv}
    (hl : lower f c = some l) (hl' : lower f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    normL c = normL d :=
  Format.render_injective (F := format f) (lawful f hf) hc (lowerInjectiveL f) hl hl' ht ht' h

end Verified.Llama

end
