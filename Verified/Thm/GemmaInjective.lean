module

public import Verified.Thm.Gemma
public import Verified.Thm.GemmaRead

public section

/-!
# Gemma 3's lowering loses only what its template does not write

`lowerInjective`: two conversations that Gemma 3's format lowers to the same turns (owners
aside) are equal after `norm` (`Spec/Gemma.lean`): each message's content `| trim`med, no
content and empty content alike, and a leading system text folded into the first user text
(the template writes it there, `first_user_prefix`, so "system `S`, user `U`" and "user
`S\n\nU`" are one render). With `lawful`, two conversations Gemma 3 renders to the same ids
are the same conversation up to `norm` (`render_injective_norm`).

The proof reads each erased turn back as the messages it came from (`raise`) and shows that
`normMsgs` of the messages is what the turns read back as (`lower_raise`).
-/

namespace Verified.Gemma

open Verified

/-- The messages a turn (owners erased) reads back as: a user turn with a prefix is the system
text before it and the user message. -/
@[expose] def raise : GTurn → List Message
  | .user pre p _ =>
      match stripSuffix? nl2 pre with
      | some s => [⟨.system, keptBody (.text s)⟩, ⟨.user, keptBody p⟩]
      | none => [⟨.user, keptBody p⟩]
  | .model p _ => [⟨.assistant, keptBody p⟩]
  | .sampled ts _ => [⟨.assistant, [.sampled ts]⟩]

theorem nl2_none : stripSuffix? nl2 [] = none := by decide

/-- A message with content is not a sampled turn. -/
theorem normMsg_of_content {m : Message} {p : LPay} (hp : m.content? = some p) :
    normMsg m = ⟨m.role, keptBody (trimPay p)⟩ := by
  unfold normMsg
  split
  · rename_i ts hb
    simp [Message.content?, hb] at hp
  · simp only [hp]

/-- A later message (no prefix) reads back as its normal form. -/
theorem lowerMsg_raise {u : Bool} {i : Nat} {m : Message} {t : GTurn}
    (h : lowerMsg [] u i m = some t) : raise t.erase = [normMsg m] := by
  rcases m with ⟨role, blocks⟩
  unfold lowerMsg at h
  cases u
  · rw [if_neg (by decide)] at h
    cases role <;> dsimp only at h <;> try cases h
    split at h
    · cases h
      simp [GTurn.erase, raise, normMsg]
    · obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [normMsg_of_content hp]
      rfl
  · rw [if_pos rfl] at h
    cases role <;> dsimp only at h <;> try cases h
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    rw [normMsg_of_content hp]
    cases p <;> simp [userTurn, GTurn.erase, raise, nl2_none, trimPay]

theorem lowerMsgs_raise : ∀ {ms : List Message} {u : Bool} {i : Nat} {ts : List GTurn},
    lowerMsgs [] u i ms = some ts → (ts.map GTurn.erase).flatMap raise = ms.map normMsg
  | [], _, _, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    rfl
  | m :: ms, u, i, ts, h => by
    simp only [lowerMsgs] at h
    obtain ⟨t0, h0, h⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hr, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [List.map_cons, List.flatMap_cons, lowerMsg_raise h0, lowerMsgs_raise hr]
    rfl

/-- What the turns of a lowered conversation read back as is `normMsgs` of its messages. -/
theorem lower_raise {c : Conversation} {y : Chars × List Message × Nat} {ts : List GTurn}
    (hy : headOf c = some y) (hts : lowerMsgs y.1 true y.2.2 y.2.1 = some ts) :
    (ts.map GTurn.erase).flatMap raise = normMsgs c.messages := by
  rcases c with ⟨ms, tools, g⟩
  cases ms with
  | nil =>
    simp only [headOf, Option.some.injEq] at hy
    subst hy
    simp only [lowerMsgs, Option.some.injEq] at hts
    subst hts
    rfl
  | cons m ms =>
    simp only [headOf] at hy
    split at hy
    · rename_i hsys
      split at hy
      · rename_i s u ms' hc
        simp only [Option.some.injEq] at hy
        subst hy
        simp only [lowerMsgs] at hts
        obtain ⟨t0, h0, h⟩ := Option.bind_eq_some_iff.mp hts
        obtain ⟨ts', hr, rfl⟩ := Option.map_eq_some_iff.mp h
        rcases u with ⟨urole, ublocks⟩
        unfold lowerMsg at h0
        rw [if_pos rfl] at h0
        cases urole <;> dsimp only at h0 <;> try cases h0
        obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h0
        simp only [List.map_cons, List.flatMap_cons, lowerMsgs_raise hr]
        cases p with
        | text x =>
          simp only [normMsgs, hsys, ↓reduceIte, hc, hp, userTurn, GTurn.erase, raise,
            nl2_none, List.nil_append, List.append_assoc]
          rfl
        | toks us =>
          have e : stripSuffix? nl2 (s ++ nl2) = some s := stripSuffix?_append _ _
          simp only [normMsgs, hsys, ↓reduceIte, hc, hp, userTurn, GTurn.erase, raise, e,
            normMsg_of_content hp, trimPay]
          rfl
      · cases hy
    · rename_i hsys
      simp only [Option.some.injEq] at hy
      subst hy
      rw [lowerMsgs_raise hts]
      cases ms with
      | nil => rfl
      | cons u ms => simp only [normMsgs, hsys]; rfl

/-- Gemma 3's lowering is injective up to `norm`: two conversations with the same turns
(owners aside) are equal after `norm`. -/
theorem lowerInjective (f : GemmaFmt) : (format f).LowerInjective norm := by
  have key : ∀ c l, lower f c = some l → norm c =
      ⟨(GConv.erase l).turns.flatMap raise, none, (GConv.erase l).prompt.isSome⟩ := by
    intro c l hl
    obtain ⟨htools, y, hy, ts, hts, -, rfl⟩ := lower_some hl
    have ht : c.tools = none := by
      cases h : c.tools with
      | none => rfl
      | some _ => simp [h] at htools
    simp only [norm, GConv.erase, lower_raise hy hts, ht, Option.isSome_map]
    cases c.addGenerationPrompt <;> rfl
  intro c d l l' hl hl' he
  rw [key c l hl, key d l' hl']
  have he' : GConv.erase l = GConv.erase l' := he
  rw [he']

/-- Two conversations Gemma 3 renders to the same ids (text payloads) are the same
conversation up to `norm`. -/
theorem render_injective_norm (f : GemmaFmt) (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : GConv}
    (hl : lower f c = some l) (hl' : lower f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    norm c = norm d :=
  Format.render_injective (F := format f) (lawful f hf) hc (lowerInjective f) hl hl' ht ht' h

end Verified.Gemma

end
