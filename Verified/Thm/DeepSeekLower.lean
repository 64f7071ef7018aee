module

public import Verified.Thm.DeepSeekLayout

public section

/-!
# Lowering lemmas of the DeepSeek-R1 family, and `prompt_prefix`

Lowering one message more runs the template's walk one step further from the state it had
reached (`lowerMsgs_append`), and an assistant message adds no system text
(`systems_append_asst`). With them: the generation prompt, the sampled tokens and the end of
turn are the render of the conversation with the sampled turn appended (`prompt_prefix`),
after a user message, after an assistant message and after a run of tool results alike (the
prompt is then that run's `<｜tool▁outputs▁end｜>`).
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

theorem systems_append_asst (bs : List Block) :
    ∀ (ms : List Message) (i : Nat),
      systems i (ms ++ [⟨.assistant, bs⟩]) = systems i ms := by
  intro ms
  induction ms with
  | nil => intro i; simp [systems, Role.isSystem]
  | cons m ms ih => intro i; simp only [List.cons_append, systems, ih]

theorem lowerMsgs_append (ns : List Message) :
    ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc : List DTurn),
      lowerMsgs f i fl acc (ms ++ ns) =
        (lowerMsgs f i fl acc ms).bind fun r => lowerMsgs f (i + ms.length) r.2 r.1.reverse ns := by
  intro ms
  induction ms with
  | nil => intro i fl acc; simp [lowerMsgs]
  | cons x ms ih =>
    intro i fl acc
    have e : i + (x :: ms).length = i + 1 + ms.length := by simp; omega
    rw [e, List.cons_append]
    obtain ⟨role, blocks⟩ := x
    cases role with
    | system => simp only [lowerMsgs]; exact ih _ _ _
    | developer => simp [lowerMsgs]
    | user =>
      simp only [lowerMsgs]
      cases Message.content? ⟨.user, blocks⟩ <;> simp [ih]
    | tool =>
      simp only [lowerMsgs]
      cases Message.content? ⟨.tool, blocks⟩ <;> simp [ih]
    | assistant =>
      simp only [lowerMsgs]
      split
      · exact ih _ _ _
      · cases asstParts blocks with
        | none => simp
        | some x =>
          obtain ⟨r, c, ks⟩ := x
          cases ks <;> simp [ih]

/-- The cells of a sampled turn's tokens and its end of turn after any layout. -/
theorem encode_sampled (c : Codec) (X : List Item) (ts : List Token) (o : Nat) :
    encodeItems c (X ++ [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eos o true]) =
      encodeItems c X ++ ts.map (fun t => ⟨t, .toks, o, true⟩) ++ [⟨f.ids.eos, .ctrl, o, true⟩] := by
  have h1 : ∀ x ∈ (syms [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eos o true]).head?, x.isCh = false := by
    cases ts <;> simp [ctl, Piece.syms, Sym.isCh]
  have h2 : ∀ x ∈ (syms [ctl f.ids.eos o true]).head?, x.isCh = false := by
    simp [ctl, Piece.syms, Sym.isCh]
  rw [encodeItems_append c X _ h1, show [(⟨.toks ts, ⟨o, true⟩⟩ : Item), ctl f.ids.eos o true] =
    [⟨.toks ts, ⟨o, true⟩⟩] ++ [ctl f.ids.eos o true] from rfl,
    encodeItems_append c _ _ h2, Qwen.encodeItems_toks, List.append_assoc]
  rfl

/-- Inference and training agree: the render with the generation prompt (`<｜Assistant｜>`, with
`<think>\n` after it when the entry opens the think block, or a run of tool results'
`<｜tool▁outputs▁end｜>`), then the tokens the policy sampled
(learned, owned by the new message), then `<｜end▁of▁sentence｜>`, is the render of the
conversation with the sampled turn appended — ids, mask and owners. -/
theorem prompt_prefix (codec : Codec) (ms : List Message) (tools : Option (List Json))
    (ts : List Token) (l : DConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hts : ts.all (fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t) = true) :
    ∃ l', lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l' ∧
      encodeItems codec (layout f l') =
        encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          [⟨f.ids.eos, .ctrl, ms.length, true⟩] := by
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, hsys, s, hs, ⟨us, fl⟩, hlow, hl⟩ := hl
  split at hl
  · rename_i hok
    simp only [Option.some.injEq] at hl
    subst hl
    have hok' := hok
    simp only [Bool.and_eq_true] at hok'
    refine ⟨⟨s, (sys.head?.map Prod.snd).getD 0, us ++ [.sampled fl.inTools ts ms.length], none⟩,
      ?_, ?_⟩
    · have hlow' : lowerMsgs f 0 ⟨false, true, false⟩ [] (ms ++ [⟨.assistant, [.sampled ts]⟩]) =
          some (us ++ [.sampled fl.inTools ts ms.length], { fl with inTools := false }) := by
        rw [lowerMsgs_append, hlow]
        simp [lowerMsgs]
      simp only [lower, systems_append_asst, hsys, Option.bind_some, hs, hlow',
        List.length_append, List.length_singleton]
      have hall : (us ++ [DTurn.sampled fl.inTools ts ms.length]).all (turnOk f) = true := by
        simp [List.all_append, hok'.2, turnOk, hts]
      simp [hok'.1, hall]
    · have hp : (if fl.inTools = true then some (true, ms.length)
            else some (false, ms.length)) = some (fl.inTools, ms.length) := by
        cases fl.inTools <;> rfl
      have e : layout f ⟨s, (sys.head?.map Prod.snd).getD 0,
            us ++ [.sampled fl.inTools ts ms.length], none⟩ =
          layout f ⟨s, (sys.head?.map Prod.snd).getD 0, us, some (fl.inTools, ms.length)⟩ ++
            [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eos ms.length true] := by
        simp [layout, turnItems, List.flatMap_append]
      simp only [↓reduceIte]
      rw [hp, e, encode_sampled]
  · cases hl

end Verified.DeepSeek

end
