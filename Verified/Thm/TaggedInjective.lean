module

public import Verified.Thm.TaggedPrefix

public section

/-!
# Tagged turns: lowering loses only what the render cannot show

`lowerInjective`: for every entry, two conversations that lower to the same turns (owners
aside) are equal after `norm` (`Spec/Tagged.lean`: a leading reasoning block the entry does
not write is dropped, no content is empty text). With `lawful`, `render_injective`
(`Thm/Format.lean`) then holds for every entry meeting `wf`: two conversations with the same
text render are the same conversation up to `norm` (`render_injective_norm`).

The proof reads each turn back as a message (`raise`), canonical for what the render keeps,
and shows that `norm` of a message is the `raise` of its turn (`normMsg_raise`).
-/

namespace Verified.Tagged

open Verified

theorem raise_lower (q : Payload) : q.lower.raise = q := by
  cases q <;> rfl

/-- The canonical message of a turn: its reasoning block where the render writes reasoning,
then its content. -/
@[expose] def raise (f : TaggedFmt) : TTurn → Message
  | .sampled ts _ => ⟨.assistant, [.sampled ts]⟩
  | .msg r th p _ =>
      ⟨r, (match th with
        | some q => if f.keep && q != .text [] then [.reasoning q.raise] else []
        | none => []) ++ [.plain p.raise]⟩

theorem raise_erase (f : TaggedFmt) (t : TTurn) : raise f t.erase = raise f t := by
  cases t <;> rfl

theorem normContent_of_content {r : Role} {bs : List Block} {p : LPay}
    (h : Message.content? ⟨r, bs⟩ = some p) : normContent bs = [.plain p.raise] := by
  unfold Message.content? at h
  split at h
  · rename_i hb
    simp only [Option.some.injEq] at h
    subst h
    simp only at hb
    subst hb
    rfl
  · rename_i q hb
    simp only [Option.some.injEq] at h
    subst h
    simp only at hb
    subst hb
    simp [normContent, raise_lower]
  · cases h

theorem content_reasoning {r : Role} {q : Payload} {rest : List Block} :
    Message.content? ⟨r, .reasoning q :: rest⟩ = none := by
  unfold Message.content?
  split <;> simp_all

/-- `norm` of a message is the canonical message of its turn. -/
theorem normMsg_raise {f : TaggedFmt} {i : Nat} {m : Message} {t : TTurn}
    (h : lowerTurn f i m = some t) : (⟨m.role, normBlocks f m.role m.blocks⟩ : Message) =
      raise f t := by
  rcases m with ⟨r, bs⟩
  unfold lowerTurn at h
  split at h
  · rename_i ts hr hb
    simp only at hr hb
    subst hr hb
    cases h
    rfl
  · simp only at h
    unfold lowerBody at h
    split at h
    · rename_i hc
      split at h
      · rename_i q rest _
        obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
        have hn := normContent_of_content hp
        have hc' : (isAsst r && f.think.isSome) = true := hc
        simp only [normBlocks, hc', if_true, raise, hn]
        cases hk : f.keep
        · simp
        · simp [raise_lower]
      · rename_i hnot
        obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
        have hn := normContent_of_content hp
        have e : normBlocks f r bs = normContent bs := by
          unfold normBlocks
          split
          · exact (hnot _ _ rfl).elim
          · rfl
        simp only [e, hn, raise]
        simp
    · obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      have hn := normContent_of_content hp
      have e : normBlocks f r bs = normContent bs := by
        unfold normBlocks
        split
        · rename_i q rest
          rw [content_reasoning] at hp
          cases hp
        · rfl
      simp only [e, hn, raise]
      simp

theorem lowerMsgs_raise {f : TaggedFmt} : ∀ {i : Nat} {ms : List Message} {ts : List TTurn},
    lowerMsgs f i ms = some ts →
      ms.map (fun m => (⟨m.role, normBlocks f m.role m.blocks⟩ : Message)) = ts.map (raise f)
  | _, [], ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    rfl
  | i, m :: ms, ts, h => by
    obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp hr
    unfold lowerMsg at h0
    split at h0
    · cases h0
    · obtain ⟨t1, h1, hok⟩ := Option.bind_eq_some_iff.mp h0
      split at hok
      · cases hok
        rw [List.map_cons, List.map_cons, normMsg_raise h1, lowerMsgs_raise hts']
      · cases hok

/-- Lowering is injective up to `norm`: two conversations with the same turns (owners aside)
are equal after `norm`. -/
theorem lowerInjective (f : TaggedFmt) : (format f).LowerInjective (norm f) := by
  intro c d l l' hl hl' he
  obtain ⟨hc, ts, hts, rfl⟩ := lower_shape hl
  obtain ⟨hd, us, hus, rfl⟩ := lower_shape hl'
  have he' : (⟨ts.map TTurn.erase, _⟩ : TConv) = ⟨us.map TTurn.erase, _⟩ := he
  simp only [TConv.mk.injEq] at he'
  obtain ⟨h1, h2⟩ := he'
  have hm : c.messages.map (fun m => (⟨m.role, normBlocks f m.role m.blocks⟩ : Message)) =
      d.messages.map (fun m => (⟨m.role, normBlocks f m.role m.blocks⟩ : Message)) := by
    rw [lowerMsgs_raise hts, lowerMsgs_raise hus]
    have e1 : ts.map (raise f) = (ts.map TTurn.erase).map (raise f) := by
      simp only [List.map_map]
      exact List.map_congr_left fun t _ => (raise_erase f t).symm
    have e2 : us.map (raise f) = (us.map TTurn.erase).map (raise f) := by
      simp only [List.map_map]
      exact List.map_congr_left fun t _ => (raise_erase f t).symm
    rw [e1, e2, h1]
  have hg : c.addGenerationPrompt = d.addGenerationPrompt := by
    cases hgc : c.addGenerationPrompt <;> cases hgd : d.addGenerationPrompt <;>
      simp_all
  rcases c with ⟨cm, ct, cg⟩
  rcases d with ⟨dm, dt, dg⟩
  simp only at hc hd hm hg
  subst hg
  simp only [norm, hm, hc, hd, if_true]

/-- Two conversations an entry renders to the same ids (text payloads) are the same
conversation up to `norm`. -/
theorem render_injective_norm (f : TaggedFmt) (hf : f.wf = true) {codec : Codec}
    (hc : codec.Lawful f.reserved) {c d : Conversation} {l l' : TConv}
    (hl : lower f c = some l) (hl' : lower f d = some l')
    (ht : textOnly (layout f l) = true) (ht' : textOnly (layout f l') = true)
    (h : ids (encodeItems codec (layout f l)) = ids (encodeItems codec (layout f l'))) :
    norm f c = norm f d :=
  Format.render_injective (F := format f) (lawful f hf) hc (lowerInjective f) hl hl' ht ht' h

end Verified.Tagged

end
