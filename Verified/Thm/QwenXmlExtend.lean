module

public import Verified.Thm.QwenXmlPrompt

public section

/-!
# The Qwen3.5 structure: what extends at a generation prompt

`extension_exactX`: for every entry and value typing, the render with the generation prompt is
a prefix of the render of every extension that starts with the sampled assistant turn and
appends no user query (the ids, for any codec). An appended query moves the last query, so an
earlier turn may lose its think block (the history policy, `keepsThink`): the extension by a
user message is not a prefix in general, as for Qwen3 exact (`exact_not_prefix`).

The proof: the last query and the system turn do not depend on what is appended, lowering is
message by message (`lowerMsgsX_append`), a turn closes the tool group before it
(`groupX_append_turn_cons`), and the sampled turn's items start with the generation prompt,
followed by its tokens, which no text merges across.
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

section Extend

variable (f : XmlFmt) (ap : ArgsParams)

theorem lastQueryFrom_noq : ∀ (ns : List Message) (i : Nat), (∀ m ∈ ns, isQuery m = false) →
    lastQueryFrom i ns = none
  | [], _, _ => rfl
  | m :: ns, i, h => by
    simp [lastQueryFrom, lastQueryFrom_noq ns (i + 1) (fun m' hm => h m' (List.mem_cons_of_mem _ hm)),
      h m List.mem_cons_self]

/-- Messages that are not queries do not move the last query. -/
theorem lastQueryFrom_append_noq : ∀ (ms ns : List Message) (i : Nat),
    (∀ m ∈ ns, isQuery m = false) → lastQueryFrom i (ms ++ ns) = lastQueryFrom i ms
  | [], ns, i, h => by
    simp only [List.nil_append]
    exact lastQueryFrom_noq ns i h
  | m :: ms, ns, i, h => by
    simp only [List.cons_append, lastQueryFrom, lastQueryFrom_append_noq ms ns (i + 1) h]

/-- The system turn reads only the first message. -/
theorem systemTurnX_append_list (ms ns : List Message) (tools : Option (List Json))
    (hms : ms ≠ []) : systemTurnX (ms ++ ns) tools = systemTurnX ms tools := by
  obtain ⟨m0, ms', rfl⟩ := List.exists_cons_of_ne_nil hms
  rw [List.cons_append]
  rfl

/-- A turn closes the tool group before it, whatever follows. -/
theorem groupX_append_turn_cons (t : XTurn) (ht : ∀ rs, t ≠ .toolGroup rs) :
    ∀ a b : List XPre, groupX (a ++ .turn t :: b) = groupX a ++ t :: groupX b
  | [], _ => rfl
  | .turn t' :: a, b => by
    simp only [List.cons_append, groupX, groupX_append_turn_cons t ht a b]
  | .result p o :: a, b => by
    simp only [List.cons_append, groupX, groupX_append_turn_cons t ht a b]
    cases hg : groupX a with
    | nil => cases t <;> first | rfl | exact absurd rfl (ht _)
    | cons x xs => cases x <;> rfl

/-- **What extends at a generation prompt**: the render with the generation prompt is a prefix
of the render of every extension that starts with the sampled assistant turn and appends no
user query; for every entry and every value typing. -/
theorem extension_exactX (codec : Codec) (ms ns : List Message) (tools : Option (List Json))
    (ts : List Token) (g : Bool) (l l' : XConv) (hns : ∀ m ∈ ns, isQuery m = false)
    (hl : lowerX f ap ⟨ms, tools, true⟩ = some l)
    (hl' : lowerX f ap ⟨ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨hms, lastQ, st, pre, hq, hst, hpre, -, rfl⟩ := lowerX_eq_some f ap hl
  obtain ⟨-, lastQ', st', pre', hq', hst', hpre', -, rfl⟩ := lowerX_eq_some f ap hl'
  have hns' : ∀ m ∈ (⟨.assistant, [.sampled ts]⟩ :: ns : List Message), isQuery m = false := by
    intro m hm
    rcases List.mem_cons.mp hm with rfl | hm
    · rfl
    · exact hns m hm
  have e1 : lastQueryFrom 0 (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns) = lastQueryFrom 0 ms :=
    lastQueryFrom_append_noq _ _ 0 hns'
  simp only at hq' hst' hpre'
  rw [e1, hq, Option.some.injEq] at hq'
  subst hq'
  rw [systemTurnX_append_list _ _ tools hms, hst, Option.some.injEq] at hst'
  subst hst'
  rw [lowerMsgsX_append, hpre, Option.bind_some] at hpre'
  obtain ⟨b, hb, rfl⟩ := Option.map_eq_some_iff.mp hpre'
  rw [Nat.zero_add] at hb
  simp only [lowerMsgsX, Option.bind_eq_some_iff, Option.map_eq_some_iff] at hb
  obtain ⟨a1, ha1, b1, -, rfl⟩ := hb
  simp only [lowerMsgX, Option.some.injEq] at ha1
  subst ha1
  rw [List.singleton_append, groupX_append_turn_cons _ (fun rs h => by cases h)]
  have e2 : layout f ⟨st ++ (groupX pre ++ .sampled ts ms.length :: groupX b1),
      if g then some (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns).length else none⟩ =
      layout f ⟨st ++ groupX pre, some ms.length⟩ ++
        ([⟨.toks ts, ⟨ms.length, true⟩⟩] ++ (footer f.base ms.length true ++
          layout f ⟨groupX b1, if g then some (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns).length
            else none⟩)) := by
    simp [layout, QwenXml.turnItems]
  simp only [↓reduceIte]
  rw [e2]
  exact Qwen.encode_prefix f.base codec _ _ ts _ ms.length true

end Extend

end Verified.QwenXml

end
