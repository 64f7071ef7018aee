module

public import Verified.Thm.QwenXmlPrompt

public section

/-!
# The Qwen3.5 structure: the learned tokens of sampled turns

`mask_sampledX`: in a conversation whose assistant turns are all sampled (an RL rollout), the
learned tokens of the render are exactly, message by message, each assistant message's sampled
tokens followed by `<|im_end|>`, owned by that message; nothing else is learned (not the
generation prompt, not the think opening the prompt wrote, not a user's or a tool's text).
With `prompt_prefixX` (`Thm/QwenXmlPrompt.lean`) this is what a trainer relies on: it learns the
ids the policy sampled, no more and no fewer.
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

section Sampled

variable (f : XmlFmt) (ap : ArgsParams)

/-- What a function of the turns collects from a turn before grouping (results: nothing). -/
@[expose] def xpreFlat {β : Type} (G : XTurn → List β) : XPre → List β
  | .turn t => G t
  | .result _ _ => []

/-- Grouping keeps what a function of the turns that ignores tool groups collects. -/
theorem flatMap_groupX {β : Type} (G : XTurn → List β) (hG : ∀ rs, G (.toolGroup rs) = []) :
    ∀ pre : List XPre, (groupX pre).flatMap G = pre.flatMap (xpreFlat G)
  | [] => rfl
  | .turn t :: ps => by
    simp only [groupX, List.flatMap_cons, flatMap_groupX G hG ps, xpreFlat]
  | .result p o :: ps => by
    have ih := flatMap_groupX G hG ps
    simp only [groupX, List.flatMap_cons, xpreFlat, List.nil_append]
    split
    · rename_i rs ts hg
      rw [hg] at ih
      simp only [List.flatMap_cons, hG, List.nil_append] at ih ⊢
      exact ih
    · simp only [List.flatMap_cons, hG, List.nil_append]
      exact ih

/-- The learned tokens of a message of a rollout: its sampled tokens and the end of turn when
it is a sampled assistant message, else none. -/
@[expose] def sampledLearned (e : Token) (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [e]).map (·, x.2)
  | _, _ => []

/-- What a function of the turns that sees only sampled turns collects, message by message. -/
theorem lowerMsgsX_flat (G : XTurn → List (Token × Nat))
    (hG : ∀ t, xAsstOwner t = none → G t = [])
    (hGs : ∀ ts o, G (.sampled ts o) = (ts ++ [f.ids.imEnd]).map (·, o)) {q : Nat} :
    ∀ (ms : List Message) (i : Nat) (pre : List XPre), lowerMsgsX f ap q i ms = some pre →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      pre.flatMap (xpreFlat G) = (ms.zipIdx i).flatMap (sampledLearned f.ids.imEnd)
  | [], i, pre, h, _ => by
    simp only [lowerMsgsX, Option.some.injEq] at h
    subst h
    rfl
  | m :: ms, i, pre, h, hs => by
    simp only [lowerMsgsX, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    rw [List.flatMap_append, List.zipIdx_cons, List.flatMap_cons,
      lowerMsgsX_flat G hG hGs ms (i + 1) b hb (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))]
    congr 1
    rcases lowerMsgX_shape f ap ha with ⟨rfl, hr⟩ | ⟨p, rfl, hr⟩ | ⟨p, rfl, hr⟩ |
      ⟨ts, rfl, hr, hb⟩ | ⟨th, c, s, ks, rfl, hr, hb⟩
    · simp [sampledLearned, hr]
    · simp [sampledLearned, xpreFlat, hr]
    · simp [sampledLearned, xpreFlat, hr, hG (.plain .user p i) rfl]
    · simp [sampledLearned, xpreFlat, hr, hb, hGs]
    · obtain ⟨ts, hts⟩ := hs m List.mem_cons_self hr
      exact absurd hts (hb ts)

/-- A learned item of a rollout's layout is not text. -/
theorem no_learned_text {c : Conversation} {st : List XTurn} {pre : List XPre} {q : Nat}
    (hst : systemTurnX c.messages c.tools = some st)
    (hpre : lowerMsgsX f ap q 0 c.messages = some pre)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts])
    (p : Option Nat) :
    ∀ it ∈ layout f ⟨st ++ groupX pre, p⟩, it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
  have hT : ∀ t, xAsstOwner t = none → ∀ it ∈ QwenXml.turnItems f t, it.ann.learn = false := by
    intro t ht it hit
    have a := turnItems_ann f t it hit
    unfold xAnnOk at a
    rw [ht] at a
    exact a
  intro it hit hlearn cs hp
  unfold layout at hit
  rcases List.mem_append.mp hit with hit | hit
  · obtain ⟨t, ht, hit⟩ := List.mem_flatMap.mp hit
    rcases List.mem_append.mp ht with ht | ht
    · rw [hT t (systemTurnX_asst hst t ht) it hit] at hlearn
      cases hlearn
    · rcases mem_groupX ht with ⟨rs, rfl⟩ | ht
      · rw [hT _ rfl it hit] at hlearn
        cases hlearn
      · obtain ⟨j, m, ps, hm, hps, ht'⟩ := lowerMsgsX_turn f ap c.messages 0 pre hpre ht
        rcases lowerMsgX_shape f ap hps with ⟨rfl, -⟩ | ⟨p, rfl, -⟩ | ⟨p, rfl, -⟩ |
          ⟨ts, rfl, -, -⟩ | ⟨th, c', s, ks, rfl, hr, hb⟩
        · cases ht'
        · simp at ht'
        · simp only [List.mem_singleton, XPre.turn.injEq] at ht'
          subst ht'
          rw [hT _ rfl it hit] at hlearn
          cases hlearn
        · simp only [List.mem_singleton, XPre.turn.injEq] at ht'
          subst ht'
          exact sampled_no_text f.base ts _ it hit hlearn cs hp
        · obtain ⟨ts, hts⟩ := hs m (List.mem_of_getElem? hm) hr
          exact absurd hts (hb ts)
  · split at hit
    · rw [promptItems_learn f.base _ it hit] at hlearn
      cases hlearn
    · cases hit

/-- **The learned tokens of a rollout**: in a conversation whose assistant messages are all
sampled turns, the learned tokens of the render are exactly each assistant message's sampled
tokens followed by `<|im_end|>`, in order, each owned by its message; for every entry and value
typing. -/
theorem mask_sampledX (codec : Codec) (c : Conversation) (l : XConv) (hl : lowerX f ap c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      c.messages.zipIdx.flatMap (sampledLearned f.ids.imEnd) := by
  obtain ⟨-, q, st, pre, -, hst, hpre, -, rfl⟩ := lowerX_eq_some f ap hl
  rw [learned_of_no_learned_text codec _ (no_learned_text f ap hst hpre hs _)]
  -- what a learned item contributes
  let F : Item → List (Token × Nat) := fun i => if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
    else []
  have hT : ∀ t, xAsstOwner t = none → (QwenXml.turnItems f t).flatMap F = [] := by
    intro t ht
    refine List.flatMap_eq_nil_iff.mpr fun it hit => ?_
    have a := turnItems_ann f t it hit
    unfold xAnnOk at a
    rw [ht] at a
    simp [F, a]
  generalize (if c.addGenerationPrompt = true then some c.messages.length else none) = p
  have hP : (layout f ⟨[], p⟩).flatMap F = [] := by
    refine List.flatMap_eq_nil_iff.mpr fun it hit => ?_
    unfold layout at hit
    simp only [List.flatMap_nil, List.nil_append] at hit
    split at hit
    · simp [F, promptItems_learn f.base _ it hit]
    · cases hit
  have el : layout f ⟨st ++ groupX pre, p⟩ =
      (st ++ groupX pre).flatMap (QwenXml.turnItems f) ++ layout f ⟨[], p⟩ := by
    simp [layout]
  show (layout f ⟨st ++ groupX pre, p⟩).flatMap F = _
  rw [el, List.flatMap_append, hP, List.append_nil, List.flatMap_assoc, List.flatMap_append]
  have hS : st.flatMap (fun t => (QwenXml.turnItems f t).flatMap F) = [] :=
    List.flatMap_eq_nil_iff.mpr fun t ht => hT t (systemTurnX_asst hst t ht)
  rw [hS, List.nil_append,
    flatMap_groupX (fun t => (QwenXml.turnItems f t).flatMap F) (fun rs => hT _ rfl) pre]
  refine lowerMsgsX_flat f ap _ hT (fun ts o => ?_) c.messages 0 pre hpre hs
  have hp : (promptItems f.base o).flatMap F = [] :=
    List.flatMap_eq_nil_iff.mpr fun it hit => by simp [F, promptItems_learn f.base o it hit]
  simp only [QwenXml.turnItems, List.flatMap_append, hp, List.nil_append]
  simp [F, footer, ctl, txt, XmlFmt.base]

/-! ## Text assistant turns -/

theorem callsItems'_learn (o : Nat) (ks : List XCall) :
    ∀ it ∈ QwenXml.callsItems.callsItems' f o ks, it.ann.learn = true := by
  induction ks with
  | nil => simp [QwenXml.callsItems.callsItems']
  | cons k ks ih =>
    simp only [QwenXml.callsItems.callsItems', fa_append]
    exact ⟨by simp [ctl, txt], ih⟩

theorem callsItems_learn (s : Bool) (o : Nat) (ks : List XCall) :
    ∀ it ∈ QwenXml.callsItems f s o ks, it.ann.learn = true := by
  cases ks with
  | nil => simp [QwenXml.callsItems]
  | cons k ks =>
    simp only [QwenXml.callsItems, fa_append]
    refine ⟨⟨?_, by simp [ctl, txt]⟩, callsItems'_learn f o ks⟩
    split <;> simp [txt]

/-- **The mask of a text assistant turn, by structure**: it learns exactly its think block
(unless that is the empty block the non-thinking generation prompt already wrote), its content,
its calls (with the newlines between them) and its `<|im_end|>`; its header and the newline
after `<|im_end|>` are never learned. -/
theorem learned_assistant (th : Option LPay) (c : LPay) (s : Bool) (ks : List XCall) (o : Nat) :
    (QwenXml.turnItems f (.assistant th c s ks o)).filter (·.ann.learn) =
      (match th, f.ids.think with
        | some r, some (a, b) =>
            if thinkLearned f.base r then
              [ctl a o true, txt ['\n'] o true, pay r o true, txt ['\n'] o true, ctl b o true,
                txt ['\n', '\n'] o true]
            else []
        | _, _ => []) ++
        [pay c o true] ++ QwenXml.callsItems f s o ks ++ [ctl f.ids.imEnd o true] := by
  have hc : (QwenXml.callsItems f s o ks).filter (·.ann.learn) = QwenXml.callsItems f s o ks :=
    List.filter_eq_self.mpr fun it h => by simpa using callsItems_learn f s o ks it h
  simp only [QwenXml.turnItems, List.filter_append, hc, footer]
  have hp : ∀ (p : LPay) (l : Bool), (pay p o l).ann.learn = l := fun p l => by
    cases p <;> rfl
  have he : f.base.ids.imEnd = f.ids.imEnd := rfl
  cases th with
  | none => simp [ctl, txt, hp, he]
  | some r =>
    cases hth : f.ids.think with
    | none => simp [hth, ctl, txt, hp, he]
    | some ab =>
      obtain ⟨a, b⟩ := ab
      cases hl : thinkLearned f.base r <;> simp [hth, hl, ctl, txt, hp, he]

end Sampled

end Verified.QwenXml

end
