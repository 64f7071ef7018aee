module

public import Verified.Thm.LlamaPlain

public section

/-!
# Llama 3's loop never rewrites history

Llama 3's template writes each message on its own (`{% for message in loop_messages %}`), so
its lowering of a longer conversation is the lowering of the shorter one followed by the new
messages' turns (`lowerMsgs0_append`). Stated on renders (ids, mask and owners, any codec):

* `prompt_prefix0`: the render with the generation prompt, then the tokens the policy sampled
  (learned, owned by the new message), then `<|eot_id|>`, is the render of the conversation
  with the sampled turn appended: inference and training agree;
* `prefix_stable0`: the render of a conversation is a prefix of the render of every extension
  of it, whatever is appended and whether the extension asks for the generation prompt.
-/

namespace Verified.Llama

open Verified

/-- Lowering the messages of a longer conversation lowers the shorter one first. -/
theorem lowerMsgs0_append : ∀ (i : Nat) (ms ns : List Message),
    lowerMsgs0 i (ms ++ ns) = (lowerMsgs0 i ms).bind fun ts =>
      (lowerMsgs0 (i + ms.length) ns).map (ts ++ ·)
  | i, [], ns => by
    cases h : lowerMsgs0 i ns <;> simp [lowerMsgs0, h]
  | i, m :: ms, ns => by
    simp only [List.cons_append, lowerMsgs0, List.length_cons]
    rw [lowerMsgs0_append (i + 1) ms ns]
    cases lowerMsg0 i m with
    | none => rfl
    | some t =>
      simp only [Option.bind_some]
      cases lowerMsgs0 (i + 1) ms with
      | none => rfl
      | some ts =>
        simp only [Option.bind_some, Option.map_some, Nat.add_assoc, Nat.add_comm 1 ms.length]
        cases lowerMsgs0 (i + (ms.length + 1)) ns <;> rfl

/-- The sampled turn's tokens and `<|eot_id|>` start with no text symbol. -/
theorem sampled_head (f : LlamaFmt) (ts : List Token) (o : Nat) :
    ∀ x ∈ (syms [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eot o true]).head?, x.isCh = false := by
  intro x hx
  cases ts with
  | nil =>
    simp only [syms_cons, ctl, Piece.syms, List.map_nil, syms_nil, List.nil_append,
      List.append_nil, List.head?_cons, Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  | cons t ts =>
    simp only [syms_cons, ctl, Piece.syms, List.map_cons, List.cons_append, List.head?_cons,
      Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl

/-- Inference and training agree: the render with the generation prompt, then the tokens the
policy sampled (learned, owned by the new message), then `<|eot_id|>`, is the render of the
conversation with the sampled turn appended. -/
theorem prompt_prefix0 (f : LlamaFmt) (codec : Codec) (ms : List Message) (ts : List Token)
    (l : LConv) (hl : lower0 f ⟨ms, none, true⟩ = some l)
    (hts : allFree f.ids.reserved ts = true) :
    ∃ l', lower0 f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], none, false⟩ = some l' ∧
      encodeItems codec (layout f l') =
        encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          [⟨f.ids.eot, .ctrl, ms.length, true⟩] := by
  unfold lower0 at hl ⊢
  dsimp only at hl ⊢
  split at hl
  · cases hl
  · cases h1 : lowerMsgs0 0 ms with
    | none => rw [h1] at hl; cases hl
    | some turns =>
      rw [h1, Option.bind_some] at hl
      split at hl
      · rename_i hok
        cases hl
        have hmsg : lowerMsgs0 (0 + ms.length) [⟨.assistant, [.sampled ts]⟩] =
            some [.sampled ts (0 + ms.length)] := rfl
        refine ⟨⟨turns ++ [.sampled ts ms.length], none⟩, ?_, ?_⟩
        · have hall : (turns ++ [LTurn.sampled ts ms.length]).all (turnOk0 f) = true := by
            rw [List.all_append, hok]
            simp [turnOk0, hts]
          rw [lowerMsgs0_append, h1, Option.bind_some, hmsg]
          have hne : ((none : Option (List Json)).isSome ||
              (ms ++ [(⟨.assistant, [.sampled ts]⟩ : Message)]).isEmpty) = false := by simp
          simp only [Option.map_some, Nat.zero_add, hne, Bool.false_eq_true, ↓reduceIte,
            Option.bind_some, hall]
        · have e1 : layout f ⟨turns ++ [.sampled ts ms.length], none⟩ =
              layout f ⟨turns, some ms.length⟩ ++
                [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eot ms.length true] := by
            simp [layout_eq, promptOf, turnItems, List.flatMap_append, List.append_assoc]
          simp only [↓reduceIte]
          rw [e1, encodeItems_append codec _ _ (sampled_head f ts ms.length),
            encodeItems_toks_eot, List.append_assoc]
      · cases hl

/-- Llama 3's loop never rewrites history: the render of a conversation is a prefix of the
render of any extension of it (ids, mask and owners). -/
theorem prefix_stable0 (f : LlamaFmt) (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : LConv)
    (hl : lower0 f ⟨ms, tools, false⟩ = some l) (hl' : lower0 f ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  unfold lower0 at hl hl'
  dsimp only at hl hl'
  split at hl
  · cases hl
  · split at hl'
    · cases hl'
    · cases h1 : lowerMsgs0 0 ms with
      | none => rw [h1] at hl; cases hl
      | some ts =>
        rw [h1, Option.bind_some] at hl
        split at hl
        · cases hl
          rw [lowerMsgs0_append, h1, Option.bind_some] at hl'
          cases h2 : lowerMsgs0 (0 + ms.length) ns with
          | none => rw [h2] at hl'; cases hl'
          | some ts2 =>
            rw [h2, Option.map_some, Option.bind_some] at hl'
            split at hl'
            · cases hl'
              simp only [Bool.false_eq_true, ↓reduceIte]
              rw [layout_append, encodeItems_append _ _ _ (syms_tail_head f ts2 _)]
              exact List.prefix_append _ _
            · cases hl'
        · cases hl

end Verified.Llama

end
