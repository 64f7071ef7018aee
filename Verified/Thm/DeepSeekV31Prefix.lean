module

public import Verified.Thm.DeepSeekV31
public import Verified.Thm.DeepSeekLower

public section

/-!
# DeepSeek-V3.1: the generation prompt and appended messages extend the render

* `prompt_prefixV`: inference and training agree. The render with the generation prompt
  (`<｜Assistant｜></think>`, `<｜Assistant｜><think>` in thinking mode, or nothing after tool
  results or an answer), then the tokens the policy sampled (learned, owned by the new
  message), then `<｜end▁of▁sentence｜>`, is the render of the conversation with the sampled
  turn appended: ids, mask and owners, for any codec.
* `extension_prefixV`: a training render (no generation prompt) is a prefix of the layout of
  every extension by messages that are not system messages (a system message is hoisted
  after BOS, so it changes the start of the render).
-/

namespace Verified.DeepSeekV31

open Verified Verified.DeepSeek

variable (f : V31Fmt)

/-! ## Lowering an appended conversation -/

theorem lowerMsgs_append : ∀ (ms ns : List Message) (i : Nat) (l : Last),
    lowerMsgs i l (ms ++ ns) = (lowerMsgs i l ms).bind fun r =>
      (lowerMsgs (i + ms.length) r.2 ns).map fun r' => (r.1 ++ r'.1, r'.2)
  | [], ns, i, l => by
    simp only [List.nil_append, lowerMsgs, Option.bind_some, List.length_nil, Nat.add_zero]
    cases lowerMsgs i l ns <;> rfl
  | m :: ms, ns, i, l => by
    have e : i + 1 + ms.length = i + (m :: ms).length := by
      simp only [List.length_cons]
      omega
    simp only [List.cons_append, lowerMsgs]
    cases msgStep l i m with
    | none => rfl
    | some x =>
      rcases x with _ | ⟨t, l'⟩
      · simp only [Option.bind_some]
        rw [lowerMsgs_append ms ns (i + 1) l, e]
      · simp only [Option.bind_some]
        rw [lowerMsgs_append ms ns (i + 1) l', e]
        cases lowerMsgs (i + 1) l' ms with
        | none => rfl
        | some r =>
          simp only [Option.bind_some, Option.map_some]
          cases lowerMsgs (i + (m :: ms).length) r.2 ns <;> rfl

theorem systems_nosys : ∀ (ns : List Message) (i : Nat), (∀ m ∈ ns, m.role.isSystem = false) →
    systems i ns = some []
  | [], _, _ => rfl
  | m :: ns, i, h => by
    simp [systems, systems_nosys ns (i + 1) (fun m' hm => h m' (List.mem_cons_of_mem _ hm)),
      h m List.mem_cons_self]

theorem systems_append_nosys : ∀ (ms ns : List Message) (i : Nat),
    (∀ m ∈ ns, m.role.isSystem = false) → systems i (ms ++ ns) = systems i ms
  | [], ns, i, h => by simp only [List.nil_append, systems_nosys ns i h]; rfl
  | m :: ms, ns, i, h => by simp only [List.cons_append, systems, systems_append_nosys ms ns (i + 1) h]

/-- Once a user or tool message is written, the previous message is never the start again. -/
theorem lowerMsgs_not_start : ∀ (ms : List Message) (i : Nat) (l : Last) (ts : List VTurn)
    (l' : Last), lowerMsgs i l ms = some (ts, l') →
    (l.isStart = false ∨ ∃ m ∈ ms, m.role = .user ∨ m.role = .tool) → l'.isStart = false
  | [], i, l, ts, l', h, hs => by
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨-, rfl⟩ := h
    rcases hs with hs | ⟨m, hm, -⟩
    · exact hs
    · cases hm
  | m :: ms, i, l, ts, l', h, hs => by
    unfold lowerMsgs at h
    obtain ⟨x, hx, h⟩ := Option.bind_eq_some_iff.mp h
    rcases x with _ | ⟨t, l''⟩
    · refine lowerMsgs_not_start ms _ _ _ _ h ?_
      rcases hs with hs | ⟨m', hm', hr⟩
      · exact Or.inl hs
      · rcases List.mem_cons.mp hm' with rfl | hm'
        · unfold msgStep at hx
          rcases hr with hr | hr <;> simp [hr] at hx
        · exact Or.inr ⟨m', hm', hr⟩
    · obtain ⟨⟨ts', l3⟩, h1, h2⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at h2
      obtain ⟨-, rfl⟩ := h2
      obtain ⟨-, rfl⟩ := msgStep_fits hx
      refine lowerMsgs_not_start ms _ _ _ _ h1 (Or.inl ?_)
      cases t <;> rfl

/-! ## Inference and training agree -/

/-- The cells of a sampled turn's tokens and its end of turn after any layout. -/
theorem encode_sampledV (c : Codec) (X : List Item) (ts : List Token) (o : Nat) :
    encodeItems c (X ++ [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eos o true]) =
      encodeItems c X ++ ts.map (fun t => ⟨t, .toks, o, true⟩) ++
        [⟨f.ids.eos, .ctrl, o, true⟩] :=
  DeepSeek.encode_sampled f.ds c X ts o

/-- Inference and training agree: when the conversation has a user or tool message, the render
with the generation prompt, then the tokens the policy sampled (learned, owned by the new
message), then `<｜end▁of▁sentence｜>`, is the render of the conversation with the sampled
turn appended: ids, mask and owners. -/
theorem prompt_prefixV (codec : Codec) (ms : List Message) (tools : Option (List Json))
    (ts : List Token) (q : VConv) (hl : lower f ⟨ms, tools, true⟩ = some q)
    (hm : ∃ m ∈ ms, m.role = .user ∨ m.role = .tool)
    (hts : ts.all (fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t) = true) :
    ∃ q', lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some q' ∧
      encodeItems codec (layout f q') =
        encodeItems codec (layout f q) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          [⟨f.ids.eos, .ctrl, ms.length, true⟩] := by
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, hsys, s, hs, ⟨us, l⟩, hlow, hl⟩ := hl
  split at hl
  · rename_i hok
    simp only [Option.some.injEq] at hl
    subst hl
    have hok' := hok
    simp only [Bool.and_eq_true] at hok'
    have hl0 : l.isStart = false := lowerMsgs_not_start ms 0 .start us l hlow (Or.inr hm)
    refine ⟨⟨s, (sys.head?.map Prod.snd).getD 0, us ++ [.sampled l.isUser ts ms.length], none⟩,
      ?_, ?_⟩
    · have hlow' : lowerMsgs 0 .start (ms ++ [⟨.assistant, [.sampled ts]⟩]) =
          some (us ++ [.sampled l.isUser ts ms.length], .asst) := by
        rw [lowerMsgs_append, hlow]
        simp [lowerMsgs, msgStep, asstTurn, hl0]
      simp only [lower, systems_append_asst, hsys, Option.bind_some, hs, hlow',
        List.length_append, List.length_singleton]
      have hall : (us ++ [VTurn.sampled l.isUser ts ms.length]).all (turnOk f) = true := by
        simp [List.all_append, hok'.2, turnOk, hts]
      simp only [hok'.1, hall, Bool.and_self, ↓reduceIte, Bool.false_and, Bool.false_eq_true]
    · have e : layout f ⟨s, (sys.head?.map Prod.snd).getD 0,
            us ++ [.sampled l.isUser ts ms.length], none⟩ =
          layout f ⟨s, (sys.head?.map Prod.snd).getD 0, us,
            if true && l.isUser then some ms.length else none⟩ ++
            [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eos ms.length true] := by
        cases l.isUser <;> simp [layout, turnItems, List.flatMap_append]
      rw [e, encode_sampledV]
  · cases hl

/-! ## Appended messages -/

/-- A training render (no generation prompt) is a prefix of the layout of its extension by
messages that are not system messages: the turns already written never change. -/
theorem extension_prefixV (ms ns : List Message) (tools tools' : Option (List Json)) (g : Bool)
    (q q' : VConv) (hl : lower f ⟨ms, tools, false⟩ = some q)
    (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some q')
    (hns : ∀ m ∈ ns, m.role.isSystem = false) :
    ∃ rest, layout f q' = layout f q ++ rest := by
  simp only [lower, Option.bind_eq_some_iff] at hl hl'
  obtain ⟨sys, hsys, s, hs, ⟨us, l⟩, hlow, hl⟩ := hl
  obtain ⟨sys', hsys', s', hs', ⟨us', l'⟩, hlow', hl'⟩ := hl'
  rw [systems_append_nosys ms ns 0 hns, hsys, Option.some.injEq] at hsys'
  subst hsys'
  rw [hs, Option.some.injEq] at hs'
  subst hs'
  rw [lowerMsgs_append, hlow, Option.bind_some] at hlow'
  obtain ⟨⟨vs, l2⟩, -, hv⟩ := Option.map_eq_some_iff.mp hlow'
  simp only [Prod.mk.injEq] at hv
  obtain ⟨rfl, rfl⟩ := hv
  split at hl
  · split at hl'
    · simp only [Option.some.injEq] at hl hl'
      subst hl hl'
      apply Exists.intro
      simp only [layout, List.flatMap_append, List.append_assoc, Bool.false_and,
        Bool.false_eq_true, ↓reduceIte, List.append_nil]
      rfl
    · cases hl'
  · cases hl

end Verified.DeepSeekV31

end
