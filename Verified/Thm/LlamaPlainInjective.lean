module

public import Verified.Thm.LlamaPlain
public import Verified.Spec.LlamaNorm

public section

/-!
# Llama 3's lowering loses only what its template does not write

`lowerInjective0`: two conversations that Llama 3's loop lowers to the same turns (owners
aside) are equal after `norm0` (`Spec/LlamaPlain.lean`): each message's content `| trim`,
no content, empty and blank content alike. With `lawful0`, two conversations the entry renders
to the same ids are the same conversation up to `norm0` (`render_injective0`): what the model
sees tells apart everything but what the template drops.

The proof reads each turn back as a message (`raise0`), canonical for what the render keeps,
and shows that `norm0` of a message is the `raise0` of its turn (`normMsg0_raise`).
-/

namespace Verified.Llama

open Verified

/-- The canonical message of a turn of Llama 3's loop. -/
@[expose] def raise0 : LTurn → Message
  | .sampled ts _ => ⟨.assistant, [.sampled ts]⟩
  | .plain r p _ => ⟨r.role, keptBody p⟩
  | _ => ⟨.user, []⟩

theorem raise0_erase (t : LTurn) : raise0 t.erase = raise0 t := by
  cases t <;> rfl

/-- `norm0` of a message is the canonical message of its turn. -/
theorem normMsg0_raise {i : Nat} {m : Message} {t : LTurn} (h : lowerMsg0 i m = some t) :
    (⟨m.role, normBody0 m⟩ : Message) = raise0 t := by
  rcases m with ⟨r, bs⟩
  unfold lowerMsg0 at h
  cases r with
  | user =>
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [normBody0, hp, raise0, LRole.role]
  | system =>
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [normBody0, hp, raise0, LRole.role]
  | developer =>
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [normBody0, hp, raise0, LRole.role]
  | tool => cases h
  | assistant =>
    simp only at h
    split at h
    · cases h
      rfl
    · rename_i hb
      obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      have e : normBody0 ⟨.assistant, bs⟩ = keptBody (trimPay p) := by
        unfold normBody0
        split
        · rename_i ts hr hb'
          exact (hb ts hb').elim
        · simp only [hp]
      simp only [e, raise0, LRole.role]

theorem lowerMsgs0_raise : ∀ {i : Nat} {ms : List Message} {ts : List LTurn},
    lowerMsgs0 i ms = some ts →
      ms.map (fun m => (⟨m.role, normBody0 m⟩ : Message)) = ts.map raise0
  | _, [], ts, h => by
    simp only [lowerMsgs0, Option.some.injEq] at h
    subst h
    rfl
  | i, m :: ms, ts, h => by
    simp only [lowerMsgs0] at h
    obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp hr
    rw [List.map_cons, List.map_cons, normMsg0_raise h0, lowerMsgs0_raise hts']

/-- `lower0` unfolded: no tools, and the turns of the messages. -/
theorem lower0_shape {f : LlamaFmt} {c : Conversation} {l : LConv} (h : lower0 f c = some l) :
    c.tools = none ∧ ∃ ts, lowerMsgs0 0 c.messages = some ts ∧
      l = ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  unfold lower0 at h
  split at h
  · cases h
  · rename_i hne
    have ht : c.tools = none := by
      cases hc : c.tools with
      | none => rfl
      | some _ => simp [hc] at hne
    obtain ⟨ts, hts, h⟩ := Option.bind_eq_some_iff.mp h
    split at h
    · cases h
      exact ⟨ht, ts, hts, rfl⟩
    · cases h

/-- Llama 3's lowering is injective up to `norm0`: two conversations with the same turns
(owners aside) are equal after `norm0`. -/
theorem lowerInjective0 (f : LlamaFmt) : (format0 f).LowerInjective norm0 := by
  intro c d l l' hl hl' he
  obtain ⟨hc, ts, hts, rfl⟩ := lower0_shape (f := f) hl
  obtain ⟨hd, us, hus, rfl⟩ := lower0_shape (f := f) hl'
  have he' : (⟨ts.map LTurn.erase, _⟩ : LConv) = ⟨us.map LTurn.erase, _⟩ := he
  simp only [LConv.mk.injEq] at he'
  obtain ⟨h1, h2⟩ := he'
  have hm : c.messages.map (fun m => (⟨m.role, normBody0 m⟩ : Message)) =
      d.messages.map (fun m => (⟨m.role, normBody0 m⟩ : Message)) := by
    rw [lowerMsgs0_raise hts, lowerMsgs0_raise hus]
    have e1 : ts.map raise0 = (ts.map LTurn.erase).map raise0 := by
      simp only [List.map_map]
      exact List.map_congr_left fun t _ => (raise0_erase t).symm
    have e2 : us.map raise0 = (us.map LTurn.erase).map raise0 := by
      simp only [List.map_map]
      exact List.map_congr_left fun t _ => (raise0_erase t).symm
    rw [e1, e2, h1]
  have hg : c.addGenerationPrompt = d.addGenerationPrompt := by
    cases hgc : c.addGenerationPrompt <;> cases hgd : d.addGenerationPrompt <;>
      simp_all
  rcases c with ⟨cm, ct, cg⟩
  rcases d with ⟨dm, dt, dg⟩
  simp only at hc hd hm hg
  subst hc hd hg
  simp only [norm0, hm]

/-- Two conversations Llama 3's entry renders to the same ids (text payloads) are the same
conversation up to `norm0`. -/
theorem render_injective0 (f : LlamaFmt) (hf : f.ids.wf = true) {codec : Codec}
    (hc : codec.Lawful f.ids.reserved) {c d : Conversation} {l l' : LConv}
    (hl : lower0 f c = some l) (hl' : lower0 f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    norm0 c = norm0 d :=
  Format.render_injective (F := format0 f) (lawful0 f hf) hc (lowerInjective0 f) hl hl' ht ht' h

end Verified.Llama

end
