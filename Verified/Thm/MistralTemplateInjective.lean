module

public import Verified.Thm.MistralTemplate

public section

/-!
# Mistral Small 3's lowering loses only what its template does not write

`lowerInjectiveS`: two conversations that Small 3's loop lowers to the same turns (owners
aside) are equal after `normS` (`Spec/MistralTemplate.lean`): no content and empty content
alike, and the default system prompt written out where the template writes it. With
`lawfulS`, two conversations an entry renders to the same ids are the same conversation up to
`normS` (`render_injectiveS`). Lowering never reads the tools (a non-empty list is refused)
and the markup writes nothing for the generation prompt, so `normS` forgets both.

The proof reads each turn back as a message (`raiseS`), canonical for what the render keeps,
and shows that `normS` of a conversation is the `raiseS` of its turns (`normS_raise`).
-/

namespace Verified.Mistral

open Verified

/-- The canonical message of a turn of Small 3's loop. -/
@[expose] def raiseS : MTurn → Message
  | .system p _ => ⟨.system, keptBody p⟩
  | .user _ p _ => ⟨.user, keptBody p⟩
  | .assistant p _ _ => ⟨.assistant, keptBody p⟩
  | .sampled ts _ => ⟨.assistant, [.sampled ts]⟩
  | .result _ _ _ => ⟨.tool, []⟩

theorem raiseS_erase (t : MTurn) : raiseS t.erase = raiseS t := by
  cases t <;> rfl

theorem keptBody_content {bs : List Block} {r : Role} {p : LPay}
    (h : Message.content? ⟨r, bs⟩ = some p) (hb : bs = []) : keptBody p = [] := by
  subst hb
  simp only [Message.content?, Option.some.injEq] at h
  subst h
  rfl

/-- `normBodyS` of a message is the canonical message of its turn. -/
theorem normMsgS_raise {i : Nat} {m : Message} {t : MTurn} (h : lowerMsgS i m = some t) :
    (⟨m.role, normBodyS m⟩ : Message) = raiseS t := by
  rcases m with ⟨r, bs⟩
  unfold lowerMsgS at h
  cases r with
  | user =>
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [normBodyS, hp, raiseS]
  | system =>
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [normBodyS, hp, raiseS]
  | developer => cases h
  | tool => cases h
  | assistant =>
    simp only at h
    split at h
    · cases h
      rfl
    · cases h
      rfl
    · rename_i q
      cases h
      simp only [normBodyS, Message.content?, raiseS]
    · cases h

theorem lowerMsgsS_raise : ∀ {i : Nat} {ms : List Message} {ts : List MTurn},
    lowerMsgsS i ms = some ts →
      ms.map (fun m => (⟨m.role, normBodyS m⟩ : Message)) = ts.map raiseS
  | _, [], ts, h => by
    simp only [lowerMsgsS, Option.some.injEq] at h
    subst h
    rfl
  | i, m :: ms, ts, h => by
    simp only [lowerMsgsS] at h
    obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp hr
    rw [List.map_cons, List.map_cons, normMsgS_raise h0, lowerMsgsS_raise hts']

/-- `lowerS` unfolded: the turns of the messages, after the default turn where it is written. -/
theorem lowerS_shape {g : MistralTFmt} {c : Conversation} {l : MConv} (h : lowerS g c = some l) :
    ∃ ts, lowerMsgsS 0 c.messages = some ts ∧
      l = ⟨withDefault g c.messages ts,
        if c.addGenerationPrompt then some c.messages.length else none⟩ ∧
      ∀ t ts', c.tools = some (t :: ts') → False := by
  unfold lowerS at h
  split at h
  · cases h
  · split at h
    · cases h
    · rename_i hnt
      obtain ⟨ts, hts, h⟩ := Option.bind_eq_some_iff.mp h
      split at h
      · cases h
        exact ⟨ts, hts, rfl, fun t ts' e => hnt t ts' e⟩
      · cases h

/-- `normS` of a conversation is the canonical messages of its turns. -/
theorem normS_raise (g : MistralTFmt) {c : Conversation} {ts : List MTurn}
    (h : lowerMsgsS 0 c.messages = some ts) :
    (normS g c).messages = (withDefault g c.messages ts).map raiseS := by
  have hm := lowerMsgsS_raise h
  unfold normS withDefault
  dsimp only
  split
  · rename_i m ms
    split
    · exact hm
    · simp only [List.map_cons, hm]
      rfl
  · exact hm

/-- Small 3's lowering is injective up to `normS`: two conversations with the same turns
(owners aside) are equal after `normS`. -/
theorem lowerInjectiveS (g : MistralTFmt) : (formatS g).LowerInjective (normS g) := by
  intro c d l l' hl hl' he
  obtain ⟨ts, hts, rfl, hc⟩ := lowerS_shape (g := g) hl
  obtain ⟨us, hus, rfl, hd⟩ := lowerS_shape (g := g) hl'
  have he' : (⟨(withDefault g c.messages ts).map MTurn.erase, none⟩ : MConv) =
      ⟨(withDefault g d.messages us).map MTurn.erase, none⟩ := he
  simp only [MConv.mk.injEq, and_true] at he'
  have hm : (normS g c).messages = (normS g d).messages := by
    rw [normS_raise g hts, normS_raise g hus]
    have e1 : ∀ xs : List MTurn, xs.map raiseS = (xs.map MTurn.erase).map raiseS := fun xs => by
      simp only [List.map_map]
      exact List.map_congr_left fun t _ => (raiseS_erase t).symm
    rw [e1, e1 (withDefault g d.messages us), he']
  have key : ∀ x, normS g x = ⟨(normS g x).messages, none, false⟩ := fun _ => rfl
  rw [key c, key d, hm]

/-- Two conversations a Small 3 entry renders to the same ids (text payloads) are the same
conversation up to `normS`. -/
theorem render_injectiveS (g : MistralTFmt) (hf : g.fmt.ids.wf g.fmt.version = true)
    {codec : Codec} (hc : codec.Lawful g.fmt.ids.reserved) {c d : Conversation} {l l' : MConv}
    (hl : lowerS g c = some l) (hl' : lowerS g d = some l')
    (ht : textOnly (layoutS g l) = true) (ht' : textOnly (layoutS g l') = true)
    (h : ids (encodeItems codec (layoutS g l)) = ids (encodeItems codec (layoutS g l'))) :
    normS g c = normS g d :=
  Format.render_injective (F := formatS g) (lawfulS g hf) hc (lowerInjectiveS g) hl hl' ht ht' h

end Verified.Mistral

end
