module

public import Verified.Thm.DeepSeekV31

public section

/-!
# DeepSeek-V3.1's lowering loses only what its templates do not write

`lowerInjectiveV`: two conversations that lower to the same turns (owners aside) are equal
after `norm` (`Spec/DeepSeekV31.lean`): the system texts joined into one leading message, no
and empty content alike, reasoning and call ids dropped, no tools, and the generation prompt
only after a user message. With `lawfulV`, two conversations an entry renders to the same ids
are the same conversation up to `norm` (`render_injective_normV`).

The proof reads each turn back as a message (`raiseTurn`), canonical for what the render
keeps, and shows that `norm` of a conversation is the reading of its lowered form
(`norm_raise`), which owners do not reach.
-/

namespace Verified.DeepSeekV31

open Verified Verified.DeepSeek

variable (f : V31Fmt)

/-- The canonical message of a turn. -/
@[expose] def raiseTurn : VTurn → Message
  | .user p _ => ⟨.user, keptBody p⟩
  | .result p _ => ⟨.tool, keptBody p⟩
  | .answer _ c _ => ⟨.assistant, keptBody c⟩
  | .calls _ c ks _ => ⟨.assistant, keptBody c ++ ks.map keptCall⟩
  | .sampled _ ts _ => ⟨.assistant, [.sampled ts]⟩

/-- The canonical conversation of a lowered one. -/
@[expose] def raiseV (q : VConv) : Conversation :=
  ⟨keptSystem q.system ++ q.turns.map raiseTurn, none, q.prompt.isSome⟩

theorem raiseTurn_erase (t : VTurn) : raiseTurn t.erase = raiseTurn t := by
  cases t <;> rfl

theorem raiseV_erase (q : VConv) : raiseV q.erase = raiseV q := by
  obtain ⟨s, o, ts, p⟩ := q
  have e : (ts.map VTurn.erase).map raiseTurn = ts.map raiseTurn := by
    simp [List.map_map, Function.comp_def, raiseTurn_erase]
  cases p <;> simp [raiseV, VConv.erase, e]

/-- An assistant message that is not one sampled block, as the render keeps it. -/
theorem normMsg_asst {bs : List Block} (hbs : ∀ ts, bs = [.sampled ts] → False) :
    normMsg ⟨.assistant, bs⟩ = match asstParts bs with
      | some (_, c, ks) => ⟨.assistant, keptBody c ++ ks.map keptCall⟩
      | none => ⟨.assistant, bs⟩ := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a i => rfl
  · cases b <;> rfl

/-- A system message writes no turn and leaves the previous message. -/
theorem msgStep_none {l : Last} {i : Nat} {m : Message} (h : msgStep l i m = some none) :
    m.role.isSystem = true := by
  unfold msgStep at h
  split at h
  · rename_i hr
    simp [hr, Role.isSystem]
  · cases h
  · simp at h
  · simp at h
  · split at h
    · cases h
    · simp at h

/-- A message's turn reads back as the message as the render keeps it. -/
theorem msgStep_raise {l : Last} {i : Nat} {m : Message} {t : VTurn} {l' : Last}
    (h : msgStep l i m = some (some (t, l'))) :
    raiseTurn t = normMsg m ∧ l' = l.after m ∧ m.role.isSystem = false := by
  obtain ⟨r, bs⟩ := m
  unfold msgStep at h
  cases r with
  | system => simp at h
  | developer => simp at h
  | user =>
    obtain ⟨p, hp, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    refine ⟨?_, rfl, rfl⟩
    simp only [normMsg, hp, raiseTurn]
  | tool =>
    obtain ⟨p, hp, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    refine ⟨?_, rfl, rfl⟩
    simp only [normMsg, hp, raiseTurn]
  | assistant =>
    simp only at h
    split at h
    · cases h
    · obtain ⟨t', ht, h⟩ := Option.map_eq_some_iff.mp h
      cases h
      refine ⟨?_, rfl, rfl⟩
      unfold asstTurn at ht
      split at ht
      · cases ht
        rfl
      · rename_i hbs
        obtain ⟨⟨r, c, ks⟩, hp, ht⟩ := Option.map_eq_some_iff.mp ht
        subst ht
        rw [normMsg_asst hbs, hp]
        cases ks <;> simp [raiseTurn]

/-- Lowering reads each message that is not a system message as one turn, in order. -/
theorem lowerMsgs_raise : ∀ (ms : List Message) (i : Nat) (l : Last) (ts : List VTurn)
    (l' : Last), lowerMsgs i l ms = some (ts, l') →
    ts.map raiseTurn = (ms.filter fun m => !m.role.isSystem).map normMsg ∧
      l' = ms.foldl Last.after l
  | [], i, l, ts, l', h => by
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    exact ⟨rfl, rfl⟩
  | m :: ms, i, l, ts, l', h => by
    unfold lowerMsgs at h
    obtain ⟨x, hx, h⟩ := Option.bind_eq_some_iff.mp h
    rcases x with _ | ⟨t, l0⟩
    · have hs := msgStep_none hx
      obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ h
      have ha : l.after m = l := by
        obtain ⟨r, bs⟩ := m
        cases r <;> simp_all [Role.isSystem, Last.after]
      refine ⟨by simp [List.filter_cons, hs, h1], by simp [h2, ha]⟩
    · obtain ⟨⟨ts', l3⟩, h1, h2⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at h2
      obtain ⟨rfl, rfl⟩ := h2
      obtain ⟨e1, rfl, hs⟩ := msgStep_raise hx
      obtain ⟨h3, h4⟩ := lowerMsgs_raise ms _ _ _ _ h1
      refine ⟨by simp [List.filter_cons, hs, e1, h3], by simp [h4]⟩

/-- `norm` of a conversation is the reading of its lowered form. -/
theorem norm_raise {c : Conversation} {q : VConv} (hl : lower f c = some q) :
    norm c = raiseV q := by
  obtain ⟨ms, tools, g⟩ := c
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, hsys, s, hs, ⟨ts, l⟩, hlow, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    obtain ⟨h1, h2⟩ := lowerMsgs_raise ms 0 .start ts l hlow
    simp only [norm, raiseV, hsys, Option.bind_some, hs, h1, ← h2]
    congr 1
    cases g <;> cases l.isUser <;> rfl
  · cases hl

/-- DeepSeek-V3.1's lowering loses only what its templates do not write. -/
theorem lowerInjectiveV : (format f).LowerInjective norm := by
  intro c d l l' hl hl' he
  have e1 : norm c = raiseV l := norm_raise f hl
  have e2 : norm d = raiseV l' := norm_raise f hl'
  have e3 : raiseV l = raiseV l' := by
    rw [← raiseV_erase l, ← raiseV_erase l']
    exact congrArg raiseV he
  rw [e1, e2, e3]

/-- Two conversations a DeepSeek-V3.1 entry renders to the same ids (text payloads, a lawful
codec) are the same conversation up to `norm`. -/
theorem render_injective_normV (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : VConv}
    (hl : lower f c = some l) (hl' : lower f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    norm c = norm d :=
  Format.render_injective (F := format f) (lawfulV f hf) hc (lowerInjectiveV f) hl hl' ht ht' h

end Verified.DeepSeekV31

end
