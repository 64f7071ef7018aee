module

public import Verified.Spec.DeepSeekNorm
public import Verified.Thm.DeepSeekRound

public section

/-!
# DeepSeek-R1's lowering loses only what its template does not write

`lowerInjective`: for every entry of the structure (R1 exact and stable, R1-Distill), two
conversations that lower to the same turns (owners aside) are equal after `norm f`
(`Spec/DeepSeekNorm.lean`: system texts joined, no and empty content alike, call ids and, in
the exact mode, reasoning dropped, a later call message's content dropped, no tools, the
prompt wherever one is written). With `lawful`, two conversations an entry renders to the
same ids are the same conversation up to `norm f` (`render_injective_norm`).

The proof reads each turn back as the messages it came from (`raiseTurn`; a run of results
is one message per result), canonical for what the render keeps, and shows that `norm f` of
a conversation is the reading of its lowered form (`norm_raise`), which owners do not reach.
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- The canonical messages of a turn. -/
@[expose] def raiseTurn : DTurn → List Message
  | .user p _ => [⟨.user, keptBody p⟩]
  | .assistant _ th c _ => [⟨.assistant, thinkBody th ++ keptBody c⟩]
  | .calls h th ks _ => [⟨.assistant, thinkBody th ++ (match h with
      | some c => keptBody c
      | none => []) ++ ks.map keptCall⟩]
  | .results _ rs => rs.map fun r => ⟨.tool, keptBody r.1⟩
  | .sampled _ ts _ => [⟨.assistant, [.sampled ts]⟩]

/-- The canonical conversation of a lowered one. -/
@[expose] def raiseD (q : DConv) : Conversation :=
  ⟨keptSystem q.system ++ q.turns.flatMap raiseTurn, none, q.prompt.isSome⟩

theorem raiseTurn_erase (t : DTurn) : raiseTurn t.erase = raiseTurn t := by
  cases t <;> simp [DTurn.erase, raiseTurn, List.map_map, Function.comp_def]

theorem raiseD_erase (q : DConv) : raiseD q.erase = raiseD q := by
  obtain ⟨s, o, ts, p⟩ := q
  have e : (ts.map DTurn.erase).flatMap raiseTurn = ts.flatMap raiseTurn := by
    simp [List.flatMap_map, raiseTurn_erase]
  cases p <;> simp [raiseD, DConv.erase, e]

/-- A result added to the turns written so far reads back as one more tool message. -/
theorem addResult_raise (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn) :
    (addResult fl p i acc).reverse.flatMap raiseTurn =
      acc.reverse.flatMap raiseTurn ++ [⟨.tool, keptBody p⟩] := by
  unfold addResult
  split
  · split <;> simp [raiseTurn]
  · simp [raiseTurn]

/-- Lowering an assistant message that is not one sampled block. -/
theorem lowerMsgs_asst_parts (i : Nat) (fl : Flags) (acc : List DTurn) (ms : List Message)
    {bs : List Block} (hbs : ∀ ts, bs = [.sampled ts] → False) :
    lowerMsgs f i fl acc (⟨.assistant, bs⟩ :: ms) = (asstParts bs).bind fun (r, c, ks) =>
      let think := match f.mode with
        | .stable => r
        | .exact => none
      match ks with
      | [] => lowerMsgs f (i + 1) { fl with inTools := false }
          (.assistant fl.inTools think c i :: acc) ms
      | _ :: _ => lowerMsgs f (i + 1) { fl with called := true, inTools := false }
          (.calls (if fl.called then none else some c) think ks i :: acc) ms := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a d => rfl
  · cases b <;> rfl

/-- The kept form of an assistant message that is not one sampled block. -/
theorem normMsgs_asst_parts (mode : Mode) (called : Bool) (ms : List Message)
    {bs : List Block} (hbs : ∀ ts, bs = [.sampled ts] → False) :
    normMsgs mode called (⟨.assistant, bs⟩ :: ms) = match asstParts bs with
      | some (r, c, ks) =>
          let th := match mode with
            | .stable => r
            | .exact => none
          match ks with
          | [] => ⟨.assistant, thinkBody th ++ keptBody c⟩ :: normMsgs mode called ms
          | _ :: _ =>
              ⟨.assistant, thinkBody th ++ (if called then [] else keptBody c) ++
                ks.map keptCall⟩ :: normMsgs mode true ms
      | none => ⟨.assistant, bs⟩ :: normMsgs mode called ms := by
  rcases bs with _ | ⟨b, _ | ⟨b', bs⟩⟩
  · rfl
  · cases b with
    | sampled ts => exact absurd rfl (hbs ts)
    | plain p => rfl
    | reasoning p => rfl
    | toolCall n a d => rfl
  · cases b <;> rfl

/-- Lowering reads each message that is not a system message back as the render keeps it,
in order, and ends after a tool result exactly when the last such message is one. -/
theorem lowerMsgs_raise : ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn)
    (fl' : Flags), lowerMsgs f i fl acc ms = some (ts, fl') →
    ts.flatMap raiseTurn = acc.reverse.flatMap raiseTurn ++ normMsgs f.mode fl.called ms ∧
      fl'.inTools = inToolsAfter fl.inTools ms
  | [], i, fl, acc, ts, fl', h => by
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    simp [normMsgs, inToolsAfter]
  | ⟨r, bs⟩ :: ms, i, fl, acc, ts, fl', h => by
    cases r with
    | system =>
      simp only [lowerMsgs] at h
      obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ _ h
      exact ⟨by simp [h1, normMsgs], by simp [h2, inToolsAfter]⟩
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, hp, h⟩ := h
      obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ _ h
      exact ⟨by simp [h1, normMsgs, hp, raiseTurn], by simp [h2, inToolsAfter]⟩
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, hp, h⟩ := h
      obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ _ h
      exact ⟨by simp [h1, normMsgs, hp, addResult_raise], by simp [h2, inToolsAfter]⟩
    | assistant =>
      by_cases hs : ∃ ts, bs = [.sampled ts]
      · obtain ⟨ts0, rfl⟩ := hs
        simp only [lowerMsgs] at h
        obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ _ h
        exact ⟨by simp [h1, normMsgs, raiseTurn], by simp [h2, inToolsAfter]⟩
      · have hbs : ∀ ts, bs = [.sampled ts] → False := fun ts e => hs ⟨ts, e⟩
        rw [lowerMsgs_asst_parts f i fl acc ms hbs] at h
        rw [normMsgs_asst_parts f.mode fl.called ms hbs]
        obtain ⟨⟨r', c, ks⟩, hp, h⟩ := Option.bind_eq_some_iff.mp h
        simp only [hp]
        cases ks with
        | nil =>
          obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ _ h
          exact ⟨by cases hm : f.mode <;> simp [h1, raiseTurn, hm], by simp [h2, inToolsAfter]⟩
        | cons k ks =>
          obtain ⟨h1, h2⟩ := lowerMsgs_raise ms _ _ _ _ _ h
          refine ⟨?_, by simp [h2, inToolsAfter]⟩
          rw [h1]
          cases hm : f.mode <;> cases hc : fl.called <;> simp [raiseTurn, hm, hc]

/-- `norm f` of a conversation is the reading of its lowered form. -/
theorem norm_raise {c : Conversation} {q : DConv} (hl : lower f c = some q) :
    norm f c = raiseD q := by
  obtain ⟨ms, tools, g⟩ := c
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, hsys, s, hs, ⟨ts, fl⟩, hlow, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    obtain ⟨h1, h2⟩ := lowerMsgs_raise f ms 0 ⟨false, true, false⟩ [] ts fl hlow
    simp only [List.reverse_nil, List.flatMap_nil, List.nil_append] at h1
    simp only [norm, raiseD, hsys, Option.bind_some, hs, h1]
    congr 1
    rw [h2]
    cases g <;> cases inToolsAfter false ms <;> rfl
  · cases hl

/-- DeepSeek-R1's lowering (any entry) loses only what its template does not write. -/
theorem lowerInjective : (format f).LowerInjective (norm f) := by
  intro c d l l' hl hl' he
  have e1 : norm f c = raiseD l := norm_raise f (lower_of_entry f hl)
  have e2 : norm f d = raiseD l' := norm_raise f (lower_of_entry f hl')
  have e3 : raiseD l = raiseD l' := by
    rw [← raiseD_erase l, ← raiseD_erase l']
    exact congrArg raiseD he
  rw [e1, e2, e3]

/-- Two conversations a DeepSeek entry renders to the same ids (text payloads, a lawful codec)
are the same conversation up to `norm f`. -/
theorem render_injective_norm (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : DConv}
    (hl : lowerEntry f c = some l) (hl' : lowerEntry f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    norm f c = norm f d :=
  Format.render_injective (F := format f) (lawful f hf) hc (lowerInjective f) hl hl' ht ht' h

end Verified.DeepSeek

end
