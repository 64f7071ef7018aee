module

public import Verified.Thm.LlamaSound

public section

/-!
# Theorems of the Llama 3.1 family

* `llama31Ids_wf` (in `Thm/LlamaLower.lean`, first in the chain): the reference tokenizer's
  control ids are distinct.
* `lawful`: the Llama 3.1 format satisfies `Format.Lawful`, so `parse_render`,
  `render_parse`, `render_injective` and `no_forgery` (`Thm/Format.lean`) hold for it.
* `prompt_prefix`: the generation prompt, the sampled tokens and the end of turn are the
  render of the conversation with the sampled turn appended (ids, mask and owners).
* `prefix_stable`: the render of a conversation is a prefix of the render of every extension
  (the template never rewrites history).
* `mask_owner`, `mask_sampled`: only assistant messages are learned, and in a conversation
  whose assistant turns are sampled the learned tokens are exactly those turns' tokens, each
  followed by `<|eot_id|>`.

The lemmas live in `Thm/LlamaLower.lean` (the shape of `lower`), `Thm/LlamaLayout.lean`
(layouts, renders, the learned mask), `Thm/LlamaRead.lean` (`unlayout` inverts `layout` on
textual turns) and `Thm/LlamaSound.lean` (`unlayout` never invents a conversation).
-/

namespace Verified.Llama

open Verified

/-! ## Text-only layouts have textual turns -/

/-- Every turn of a text-only layout is textual: a turn with a token payload (even an empty
one, `.toks []` or `.sampled []`) places a `.toks` item. -/
theorem textual_of_textOnly (f : LlamaFmt) (l : LConv) (h : textOnly (layout f l) = true) :
    ∀ t ∈ l.turns, t.textual = true := by
  intro t ht
  have hall : textOnly (turnItems f t) = true := by
    simp only [textOnly, List.all_eq_true] at h ⊢
    intro i hi
    apply h
    obtain ⟨turns, p⟩ := l
    rw [layout_eq]
    exact List.mem_append_left _ (List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hi⟩))
  cases t with
  | system e ts s o =>
    cases s with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, header, ctl, txt, pay, Piece.isToks] at hall
  | userTools ts u o =>
    cases u with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, header, ctl, txt, pay, Piece.isToks] at hall
  | plain r p o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, header, ctl, txt, pay, Piece.isToks] at hall
  | call n a o => rfl
  | ipython p o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, header, ctl, txt, pay, Piece.isToks] at hall
  | sampled xs o => simp [textOnly, turnItems, promptItems, header, ctl, txt, Piece.isToks] at hall

/-! ## The main theorems -/

/-- The Llama 3.1 format is lawful for ids whose control tokens are distinct. -/
theorem lawful (f : LlamaFmt) (hf : f.ids.wf = true) : (format f).Lawful := by
  refine ⟨?_, layout_of_unlayout f, ctrl_reserved_layout f, syms_layout_erase f⟩
  intro c l hl ht
  exact unlayout_layout_of_textual f hf c l hl (textual_of_textOnly f l ht)

/-- Inference and training agree: the render with the generation prompt, then the tokens the
policy sampled (learned, owned by the new message), then `<|eot_id|>`, is the render of the
conversation with the sampled turn appended. -/
theorem prompt_prefix (f : LlamaFmt) (codec : Codec) (ms : List Message)
    (tools : Option (List Json)) (ts : List Token) (l : LConv)
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hts : allFree f.ids.reserved ts = true) :
    ∃ l', lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l' ∧
      encodeItems codec (layout f l') =
        encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          [⟨f.ids.eot, .ctrl, ms.length, true⟩] := by
  have hms : ms ≠ [] ∨ ∀ m ∈ ([⟨.assistant, [.sampled ts]⟩] : List Message).head?,
      m.role.isSystem = false := by
    refine Or.inr fun m hm => ?_
    simp only [List.head?_cons, Option.mem_def, Option.some.injEq] at hm
    subst hm
    rfl
  obtain ⟨hp, hl'⟩ := lower_append (g' := false) hms hl
  have hmsg : lowerMsgs ms.length [⟨.assistant, [.sampled ts]⟩] =
      some [.sampled ts ms.length] := rfl
  refine ⟨⟨l.turns ++ [.sampled ts ms.length], none⟩, ?_, ?_⟩
  · rw [hl', hmsg]
    simp [turnOk, hts]
  · obtain ⟨turns, prompt⟩ := l
    simp only [↓reduceIte] at hp
    subst hp
    have e1 : layout f ⟨turns ++ [.sampled ts ms.length], none⟩ =
        layout f ⟨turns, some ms.length⟩ ++
          [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eot ms.length true] := by
      simp [layout_eq, promptOf, turnItems, List.flatMap_append, List.append_assoc]
    have hhd : ∀ x ∈ (syms [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eot ms.length true]).head?,
        x.isCh = false := by
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
    rw [e1, encodeItems_append codec _ _ hhd, encodeItems_toks_eot, List.append_assoc]

/-- Llama 3.1 never rewrites history: the render of a conversation is a prefix of the render
of any extension of it (ids, mask and owners). -/
theorem prefix_stable (f : LlamaFmt) (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : LConv) (hms : ms ≠ [])
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨hp, hl2⟩ := lower_append (ns := ns) (g' := g) (Or.inl hms) hl
  rw [hl2] at hl'
  cases h2 : lowerMsgs ms.length ns with
  | none => rw [h2] at hl'; cases hl'
  | some ts2 =>
    rw [h2, Option.bind_some] at hl'
    split at hl'
    · cases hl'
      obtain ⟨turns, prompt⟩ := l
      have hp' : prompt = none := hp
      subst hp'
      rw [layout_append, encodeItems_append _ _ _ (syms_tail_head f ts2 _)]
      exact List.prefix_append _ _
    · cases hl'

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (f : LlamaFmt) (codec : Codec) (c : Conversation) (l : LConv)
    (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  rw [lower_eq] at hl
  cases hh : headOf f c with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    obtain ⟨pre, e, hlen, -, hhead⟩ := headOf_spec hh
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · cases hl
        simp only [layout_eq, List.mem_append, List.mem_flatMap] at hit
        rcases hit with (hit | ⟨t, ht, hit⟩) | hit
        · simp only [List.mem_singleton] at hit
          rw [hit] at hlearn
          cases hlearn
        · obtain ⟨htl, hto⟩ := turnItems_learn f t it hit hlearn.symm
          rcases ht with ht | ht
          · rw [hhead t ht] at htl
            cases htl
          · obtain ⟨j, m, hj, hm⟩ := lowerMsgs_mem hts t ht
            obtain ⟨ho, hrole⟩ := lowerMsg_spec hm
            refine ⟨m, ?_, hrole htl⟩
            rw [hown, hto, ho, e, List.getElem?_append_right (by omega)]
            simpa [hlen] using hj
        · rw [prompt_unlearned f _ it hit] at hlearn
          cases hlearn
      · cases hl

/-- In a conversation whose assistant turns are all sampled, the learned tokens are exactly
the sampled tokens of each assistant message followed by `<|eot_id|>`, in order, each owned by
its message. -/
theorem mask_sampled (f : LlamaFmt) (codec : Codec) (c : Conversation) (l : LConv)
    (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => (ts ++ [f.ids.eot]).map (·, i)
        | _, _ => []) := by
  rw [lower_eq] at hl
  cases hh : headOf f c with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    obtain ⟨pre, e, hlen, hpre, hhead⟩ := headOf_spec hh
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · cases hl
        have hrest : ∀ m ∈ y.2.1, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts] :=
          fun m hm => hs m (by rw [e]; exact List.mem_append_right _ hm)
        obtain ⟨hL, hS⟩ := lowerMsgs_learned (f := f) hts hrest
        have hturns : ∀ t ∈ y.1 ++ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o := by
          intro t ht htl
          rcases List.mem_append.mp ht with ht | ht
          · rw [hhead t ht] at htl
            cases htl
          · exact hS t ht htl
        have hno : ∀ it ∈ layout f ⟨y.1 ++ ts, if c.addGenerationPrompt then
            some c.messages.length else none⟩, it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
          intro it hit hlearn cs hcs
          simp only [layout_eq, List.mem_append, List.mem_flatMap] at hit
          rcases hit with (hit | ⟨t, ht, hit⟩) | hit
          · simp only [List.mem_singleton] at hit
            rw [hit] at hcs
            cases hcs
          · obtain ⟨htl, -⟩ := turnItems_learn f t it hit hlearn
            obtain ⟨ts', o, rfl⟩ := hturns t (List.mem_append.mpr ht) htl
            simp only [turnItems, promptItems, header, ctl, txt, List.mem_append, List.mem_cons,
              List.not_mem_nil, or_false] at hit
            rcases hit with (rfl | rfl | rfl | rfl) | rfl | rfl <;> simp_all
          · rw [prompt_unlearned f _ it hit] at hlearn
            cases hlearn
        have key : ∀ p, (layout f ⟨y.1 ++ ts, p⟩).flatMap itemLearned =
            c.messages.zipIdx.flatMap (msgLearned f) := by
          intro p
          have hhead' : y.1.flatMap (turnLearned f) = [] :=
            List.flatMap_eq_nil_iff.mpr fun t ht => turnLearned_of_unlearned f t (hhead t ht)
          rw [layout_itemLearned f _ p hturns, List.flatMap_append, hhead', List.nil_append, hL]
          simp only [e, List.zipIdx_append, List.flatMap_append, msgLearned_pre f pre hpre,
            List.nil_append, Nat.zero_add, hlen]
        rw [learned_of_no_learned_text codec _ hno]
        exact key _
      · cases hl

end Verified.Llama

end
