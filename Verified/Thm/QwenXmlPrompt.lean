module

public import Verified.Thm.QwenXmlLawful

public section

/-!
# The Qwen3.5 structure: inference and training render alike

`prompt_prefixX`: for every entry and value typing, the render of a conversation with the
generation prompt, then the tokens the policy sampled (learned, owned by the new message), then
the end of turn, is the render of the conversation with the sampled assistant turn appended.
Nothing the templates write before the prompt depends on what follows it: lowering a message
reads the last query (which an assistant message never moves) but not the message count, and
the system turn only the first message. So the trainer learns exactly the ids the rollout
engine sampled, after exactly the ids it was prompted with.

`mask_ownerX`: only assistant messages are learned: every token with loss bit 1 belongs to an
assistant message of the conversation (the layout's part is `learned_asst`,
`Thm/QwenXml.lean`; this file ties a turn's owner to its message).
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

section Prompt

variable (f : XmlFmt) (ap : ArgsParams)

/-- `lowerX` from its parts. -/
theorem lowerX_of {c : Conversation} {lastQ : Nat} {st : List XTurn} {pre : List XPre}
    (hm : c.messages ≠ []) (hq : lastQueryFrom 0 c.messages = some lastQ)
    (hst : systemTurnX c.messages c.tools = some st)
    (hpre : lowerMsgsX f ap lastQ 0 c.messages = some pre)
    (hall : (st ++ groupX pre).all (turnOkX f) = true) :
    lowerX f ap c = some ⟨st ++ groupX pre,
      if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  have hm' : c.messages.isEmpty = false := by simpa using hm
  simp only [lowerX, hm', Bool.false_eq_true, ↓reduceIte, hq, hst, hpre, Option.bind_some]
  rw [if_pos hall]

/-- A message that is not a query does not move the last query. -/
theorem lastQueryFrom_append (m : Message) (hm : isQuery m = false) :
    ∀ (ms : List Message) (i : Nat), lastQueryFrom i (ms ++ [m]) = lastQueryFrom i ms
  | [], i => by simp [lastQueryFrom, hm]
  | m' :: ms, i => by
    simp only [List.cons_append, lastQueryFrom, lastQueryFrom_append m hm ms (i + 1)]

/-- The system turn reads only the first message. -/
theorem systemTurnX_append (ms : List Message) (m : Message) (tools : Option (List Json))
    (hms : ms ≠ []) : systemTurnX (ms ++ [m]) tools = systemTurnX ms tools := by
  obtain ⟨m0, ms', rfl⟩ := List.exists_cons_of_ne_nil hms
  rw [List.cons_append]
  rfl

/-- Lowering a concatenation of messages. -/
theorem lowerMsgsX_append (q : Nat) (ms ns : List Message) : ∀ i,
    lowerMsgsX f ap q i (ms ++ ns) =
      (lowerMsgsX f ap q i ms).bind fun a => (lowerMsgsX f ap q (i + ms.length) ns).map (a ++ ·) := by
  induction ms with
  | nil => intro i; simp [lowerMsgsX]
  | cons m ms ih =>
    intro i
    simp only [List.cons_append, lowerMsgsX, ih (i + 1), List.length_cons]
    rw [show i + (ms.length + 1) = i + 1 + ms.length by omega]
    cases lowerMsgX f ap q i m <;> cases lowerMsgsX f ap q (i + 1) ms <;>
      cases lowerMsgsX f ap q (i + 1 + ms.length) ns <;> simp

/-- A turn closes the tool group before it. -/
theorem groupX_append_turn (t : XTurn) (ht : ∀ rs, t ≠ .toolGroup rs) :
    ∀ a : List XPre, groupX (a ++ [.turn t]) = groupX a ++ [t]
  | [] => rfl
  | .turn t' :: a => by
    simp only [List.cons_append, groupX, groupX_append_turn t ht a]
  | .result p o :: a => by
    simp only [List.cons_append, groupX, groupX_append_turn t ht a]
    cases hg : groupX a with
    | nil => cases t <;> first | rfl | exact absurd rfl (ht _)
    | cons x xs => cases x <;> rfl

/-- **Inference and training agree**: the render with the generation prompt, then the sampled
tokens (learned, owned by the new message), then the end of turn, is the render of the
conversation with the sampled turn appended; for every entry and every value typing. -/
theorem prompt_prefixX (codec : Codec) (ms : List Message) (tools : Option (List Json))
    (ts : List Token) (l : XConv) (hl : lowerX f ap ⟨ms, tools, true⟩ = some l)
    (hts : ts.all (fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t) = true) :
    ∃ l', lowerX f ap ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l' ∧
      encodeItems codec (layout f l') =
        encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          encodeItems codec (footer f.base ms.length true) := by
  obtain ⟨hms, lastQ, st, pre, hq, hst, hpre, hall, rfl⟩ := lowerX_eq_some f ap hl
  have hms' : ms ++ [(⟨.assistant, [.sampled ts]⟩ : Message)] ≠ [] := by simp
  have hq' : lastQueryFrom 0 (ms ++ [⟨.assistant, [.sampled ts]⟩]) = some lastQ := by
    rw [lastQueryFrom_append _ rfl]
    exact hq
  have hst' : systemTurnX (ms ++ [⟨.assistant, [.sampled ts]⟩]) tools = some st := by
    rw [systemTurnX_append ms _ tools hms]
    exact hst
  have hpre' : lowerMsgsX f ap lastQ 0 (ms ++ [⟨.assistant, [.sampled ts]⟩]) =
      some (pre ++ [.turn (.sampled ts ms.length)]) := by
    rw [lowerMsgsX_append, hpre]
    simp [lowerMsgsX, lowerMsgX]
  have hg : groupX (pre ++ [.turn (.sampled ts ms.length)]) =
      groupX pre ++ [.sampled ts ms.length] := groupX_append_turn _ (fun rs h => by cases h) pre
  have hall' : (st ++ groupX (pre ++ [.turn (.sampled ts ms.length)])).all (turnOkX f) = true := by
    rw [hg, ← List.append_assoc, List.all_append, hall]
    simp [turnOkX, turnOk, XmlFmt.base, hts]
  have hl' := lowerX_of f ap (c := ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩)
    hms' hq' hst' hpre' hall'
  simp only [Bool.false_eq_true, ↓reduceIte] at hl'
  refine ⟨_, hl', ?_⟩
  have e1 : layout f ⟨st ++ groupX (pre ++ [.turn (.sampled ts ms.length)]), none⟩ =
      layout f ⟨st ++ groupX pre, some ms.length⟩ ++
        ([⟨.toks ts, ⟨ms.length, true⟩⟩] ++ footer f.base ms.length true) := by
    rw [hg]
    simp [layout, QwenXml.turnItems]
  rw [e1, encode_sampled]
  rfl

end Prompt

/-! ## Only assistant messages are learned -/

section Mask

variable (f : XmlFmt) (ap : ArgsParams)

/-- The turns of the system turn are never an assistant's. -/
theorem systemTurnX_asst {ms : List Message} {tools : Option (List Json)} {st : List XTurn}
    (h : systemTurnX ms tools = some st) : ∀ t ∈ st, xAsstOwner t = none := by
  intro t ht
  unfold systemTurnX at h
  obtain ⟨g, -, h⟩ := Option.bind_eq_some_iff.mp h
  rcases tools with _ | ⟨_ | ⟨j, js⟩⟩ <;> rcases g with _ | ⟨⟨_ | ⟨ch, cs⟩⟩ | ts'⟩ <;>
    simp at h <;> subst h <;> simp_all [xAsstOwner]

/-- What one message lowers to. -/
theorem lowerMsgX_shape {q i : Nat} {m : Message} {ps : List XPre}
    (h : lowerMsgX f ap q i m = some ps) :
    (ps = [] ∧ m.role = .system) ∨ (∃ p, ps = [.result p i] ∧ m.role = .tool) ∨
      (∃ p, ps = [.turn (.plain .user p i)] ∧ m.role = .user) ∨
      (∃ ts, ps = [.turn (.sampled ts i)] ∧ m.role = .assistant ∧ m.blocks = [.sampled ts]) ∨
      (∃ th c s ks, ps = [.turn (.assistant th c s ks i)] ∧ m.role = .assistant ∧
        ∀ ts, m.blocks ≠ [.sampled ts]) := by
  rcases m with ⟨r, bs⟩
  cases r with
  | assistant =>
    unfold lowerMsgX at h
    simp only at h
    split at h
    · cases h
      exact Or.inr (Or.inr (Or.inr (Or.inl ⟨_, rfl, rfl, rfl⟩)))
    · rename_i hb
      obtain ⟨⟨r', c, ks⟩, -, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨xs, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact Or.inr (Or.inr (Or.inr (Or.inr ⟨_, _, _, _, rfl, rfl, fun ts e => hb ts e⟩)))
  | user =>
    unfold lowerMsgX at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact Or.inr (Or.inr (Or.inl ⟨_, rfl, rfl⟩))
  | system =>
    unfold lowerMsgX at h
    simp only at h
    split at h
    · cases h
      exact Or.inl ⟨rfl, rfl⟩
    · cases h
  | tool =>
    unfold lowerMsgX at h
    simp only at h
    split at h
    · cases h
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact Or.inr (Or.inl ⟨_, rfl, rfl⟩)
  | developer =>
    unfold lowerMsgX at h
    cases h

/-- A turn one message lowers to is an assistant's only when the message is, and is owned by
it. -/
theorem lowerMsgX_asst {q i : Nat} {m : Message} {ps : List XPre}
    (h : lowerMsgX f ap q i m = some ps) :
    ∀ t, XPre.turn t ∈ ps → ∀ o, xAsstOwner t = some o → o = i ∧ m.role = .assistant := by
  intro t ht o ho
  rcases lowerMsgX_shape f ap h with ⟨rfl, -⟩ | ⟨p, rfl, -⟩ | ⟨p, rfl, -⟩ | ⟨ts, rfl, hr, -⟩ |
    ⟨th, c, s, ks, rfl, hr, -⟩
  · cases ht
  · simp at ht
  · simp only [List.mem_singleton, XPre.turn.injEq] at ht
    subst ht
    cases ho
  · simp only [List.mem_singleton, XPre.turn.injEq] at ht
    subst ht
    simp only [xAsstOwner, Option.some.injEq] at ho
    exact ⟨ho.symm, hr⟩
  · simp only [List.mem_singleton, XPre.turn.injEq] at ht
    subst ht
    simp only [xAsstOwner, Option.some.injEq] at ho
    exact ⟨ho.symm, hr⟩

/-- A turn of a lowering comes from one message. -/
theorem lowerMsgsX_turn {q : Nat} {t : XTurn} : ∀ (ms : List Message) (i : Nat) (pre : List XPre),
    lowerMsgsX f ap q i ms = some pre → XPre.turn t ∈ pre →
      ∃ j m ps, ms[j]? = some m ∧ lowerMsgX f ap q (i + j) m = some ps ∧ XPre.turn t ∈ ps
  | [], i, pre, h, ht => by
    simp only [lowerMsgsX, Option.some.injEq] at h
    subst h
    cases ht
  | m :: ms, i, pre, h, ht => by
    simp only [lowerMsgsX, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
    obtain ⟨a, ha, b, hb, rfl⟩ := h
    rcases List.mem_append.mp ht with ht | ht
    · exact ⟨0, m, a, rfl, ha, ht⟩
    · obtain ⟨j, m', ps, hm', hps, ht'⟩ := lowerMsgsX_turn ms (i + 1) b hb ht
      exact ⟨j + 1, m', ps, by simpa using hm', by rw [show i + (j + 1) = i + 1 + j by omega]; exact hps, ht'⟩

/-- An assistant's turn of a lowering is owned by an assistant message. -/
theorem lowerMsgsX_asst {q : Nat} (ms : List Message) (i : Nat) (pre : List XPre)
    (h : lowerMsgsX f ap q i ms = some pre) (t : XTurn) (ht : XPre.turn t ∈ pre) (o : Nat)
    (ho : xAsstOwner t = some o) : ∃ j m, ms[j]? = some m ∧ o = i + j ∧ m.role = .assistant := by
  obtain ⟨j, m, ps, hm, hps, ht'⟩ := lowerMsgsX_turn f ap ms i pre h ht
  obtain ⟨e, hr⟩ := lowerMsgX_asst f ap hps t ht' o ho
  exact ⟨j, m, hm, e, hr⟩

/-- A grouped turn is a tool group or one of the turns grouped. -/
theorem mem_groupX {t : XTurn} : ∀ {pre : List XPre}, t ∈ groupX pre →
    (∃ rs, t = .toolGroup rs) ∨ XPre.turn t ∈ pre
  | [], h => by cases h
  | .turn t' :: ps, h => by
    simp only [groupX, List.mem_cons] at h
    rcases h with rfl | h
    · exact Or.inr List.mem_cons_self
    · rcases mem_groupX h with h | h
      · exact Or.inl h
      · exact Or.inr (List.mem_cons_of_mem _ h)
  | .result p o :: ps, h => by
    have key : t ∈ groupX ps ∨ ∃ rs, t = .toolGroup rs := by
      simp only [groupX] at h
      split at h
      · rename_i rs ts hg
        rcases List.mem_cons.mp h with rfl | h
        · exact Or.inr ⟨_, rfl⟩
        · exact Or.inl (by rw [hg]; exact List.mem_cons_of_mem _ h)
      · rcases List.mem_cons.mp h with rfl | h
        · exact Or.inr ⟨_, rfl⟩
        · exact Or.inl h
    rcases key with h | h
    · rcases mem_groupX h with h | h
      · exact Or.inl h
      · exact Or.inr (List.mem_cons_of_mem _ h)
    · exact Or.inl h

/-- **Only assistant messages are learned**: every token with loss bit 1 belongs to an
assistant message of the conversation; for every entry and every value typing. -/
theorem mask_ownerX (codec : Codec) (c : Conversation) (l : XConv) (hl : lowerX f ap c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  obtain ⟨-, lastQ, st, pre, -, hst, hpre, -, rfl⟩ := lowerX_eq_some f ap hl
  obtain ⟨t, ht, ho⟩ := learned_asst f _ it hit hlearn.symm
  rcases List.mem_append.mp ht with ht | ht
  · rw [systemTurnX_asst hst t ht] at ho
    cases ho
  · rcases mem_groupX ht with ⟨rs, rfl⟩ | ht
    · cases ho
    · obtain ⟨j, m, hm, e, hr⟩ := lowerMsgsX_asst f ap c.messages 0 pre hpre t ht _ ho
      refine ⟨m, ?_, hr⟩
      rw [hown, e, Nat.zero_add]
      exact hm

end Mask

end Verified.QwenXml

end
