module

public import Verified.Thm.HarmonyCtrl
public import Verified.Thm.QwenParse

public section

/-!
# gpt-oss (Harmony): reading turns back

The symbols of a text turn are `<|start|>` followed by its *chunk* (`chunk`): a header text
(`user`, `developer`, `assistant`, `assistant to=functions.NAME`, `functions.NAME to=assistant`),
for assistant and tool turns `<|channel|>` and the channel text, then the body
`<|message|>` TEXT END (`bodySyms`). No chunk holds `<|start|>`, so `unlayout`'s split at
`<|start|>` cuts a text layout exactly into the system chunk, the turn chunks and the
generation prompt's `assistant`.

* `readBody_body`, `readBody_eq_some`: `readBody` reads every body back (an empty text as
  `[<|message|>, END]`), and what it reads is a body.
* `unlayoutTurn_chunk`, `unlayoutTurn_eq_some`: a textual turn's chunk reads back as the turn
  (owners erased), and whatever `unlayoutTurn` reads is a textual turn whose chunk is its input.
* `layout_unlayout`: what `unlayout` returns lays out to its input (the `layout_unlayout`
  field of `Format.Lawful`; no assumption on the ids).
* `unlayout_read`: a layout whose turns are all textual reads back, up to owners, for ids whose
  six control tokens are distinct.
-/

namespace Verified.Harmony

open Verified

/-- The distinct control ids the readers tell apart. -/
structure WfFacts (i : HarmonyIds) : Prop where
  sm : i.start ≠ i.message
  sc : i.start ≠ i.channel
  se : i.start ≠ i.endT
  sr : i.start ≠ i.ret
  sk : i.start ≠ i.call
  er : i.endT ≠ i.ret

/-- `HarmonyIds.wf` gives the distinctness facts. -/
theorem wfFacts {i : HarmonyIds} (hf : i.wf = true) : WfFacts i := by
  unfold HarmonyIds.wf at hf
  have hn := Qwen.nodup_of_nodupB hf
  exact ⟨Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn)⟩

variable (f : HarmonyFmt)

/-! ## Chunks -/

/-- `<|message|>` TEXT END. -/
@[expose] def bodySyms (x : Chars) (e : Token) : List Sym :=
  .ctrl f.ids.message :: (lit x ++ [.ctrl e])

/-- A turn `unlayout` can read: text payloads, and a developer turn with its text folded in
(`pre = post = []`, as `devTurn` writes a text developer message). -/
@[expose] def HTurn.textual : HTurn → Bool
  | .dev pre (.text _) post _ => pre.isEmpty && post.isEmpty
  | .user (.text _) _ => true
  | .analysis (.text _) _ => true
  | .final (.text _) _ _ => true
  | .call .. => true
  | .result .. => true
  | _ => false

/-- The symbols of a textual turn after its `<|start|>`. -/
@[expose] def chunk : HTurn → List Sym
  | .dev _ (.text x) _ _ => lit devRole ++ bodySyms f x f.ids.endT
  | .user (.text x) _ => lit userRole ++ bodySyms f x f.ids.endT
  | .analysis (.text x) _ =>
    lit asstRole ++ .ctrl f.ids.channel :: (lit analysisCh ++ bodySyms f x f.ids.endT)
  | .final (.text x) r _ => lit asstRole ++ .ctrl f.ids.channel ::
      (lit finalCh ++ bodySyms f x (if r then f.ids.ret else f.ids.endT))
  | .call n a _ => lit (asstRole ++ toFunctions ++ n) ++ .ctrl f.ids.channel ::
      (lit callCh ++ bodySyms f a f.ids.call)
  | .result n q _ => lit (functionsDot ++ n ++ toAssistant) ++ .ctrl f.ids.channel ::
      (lit resultCh ++ bodySyms f q f.ids.endT)
  | _ => []

/-- A textual turn is `<|start|>` and its chunk. -/
theorem syms_turnItems_textual (t : HTurn) (ht : t.textual = true) :
    syms (turnItems f t) = .ctrl f.ids.start :: chunk f t := by
  cases t with
  | dev pre p post o =>
    cases p with
    | text x =>
      simp only [HTurn.textual, Bool.and_eq_true, List.isEmpty_iff] at ht
      obtain ⟨rfl, rfl⟩ := ht
      simp [turnItems, chunk, head, ctl, txt, pay, bodySyms, Piece.syms, lit]
    | toks _ => simp [HTurn.textual] at ht
  | user p o =>
    cases p with
    | text x => simp [turnItems, chunk, head, body, ctl, txt, pay, bodySyms, Piece.syms, lit]
    | toks _ => simp [HTurn.textual] at ht
  | analysis p o =>
    cases p with
    | text x =>
      simp [turnItems, chunk, head, body, chan, ctl, txt, pay, bodySyms, Piece.syms, lit]
    | toks _ => simp [HTurn.textual] at ht
  | final p r o =>
    cases p with
    | text x =>
      simp [turnItems, chunk, head, body, chan, ctl, txt, pay, bodySyms, Piece.syms, lit]
    | toks _ => simp [HTurn.textual] at ht
  | call n a o => simp [turnItems, chunk, head, body, chan, ctl, txt, pay, bodySyms, Piece.syms, lit]
  | result n q o =>
    simp [turnItems, chunk, head, body, chan, ctl, txt, pay, bodySyms, Piece.syms, lit]
  | sampled ts o => simp [HTurn.textual] at ht

/-- The generation prompt is `<|start|>assistant`. -/
theorem syms_promptItems (o : Nat) : syms (promptItems f o) = .ctrl f.ids.start :: lit asstRole := by
  simp [promptItems, head, ctl, txt, Piece.syms, lit]

/-! ## Bodies -/

theorem readBody_body (ends : List Token) (x : Chars) (e : Token) (he : e ∈ ends) :
    readBody f ends (bodySyms f x e) = some (x, e) := by
  cases x with
  | nil => simp [readBody, bodySyms, he]
  | cons c x =>
    have hx : takeText (Sym.ch c :: (lit x ++ [Sym.ctrl e])) = (c :: x, [.ctrl e]) :=
      Qwen.takeText_lit_of (c :: x) _ rfl
    unfold readBody
    simp only [bodySyms, lit_cons, List.cons_append]
    rw [hx]
    simp [he]

theorem readBody_eq_some {ends : List Token} {s : List Sym} {x : Chars} {e : Token}
    (h : readBody f ends s = some (x, e)) : s = bodySyms f x e ∧ e ∈ ends := by
  unfold readBody at h
  split at h
  · split at h
    · rename_i hc
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      refine ⟨by simp [bodySyms, hc.1], by simpa using hc.2⟩
    · cases h
  · rename_i m rest _
    have hs := takeText_spec rest
    dsimp only at h
    split at h
    · rename_i e' he'
      split at h
      · rename_i hc
        simp only [Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl⟩ := h
        rw [he'] at hs
        refine ⟨?_, by simpa using hc.2.1⟩
        rw [hc.1]
        conv => lhs; rw [← hs]
        rfl
      · cases h
    · cases h
  · cases h

/-! ## Header texts -/

theorem cons_ne_cons {a b : Char} (h : a ≠ b) (l m : Chars) : a :: l ≠ b :: m :=
  fun e => h (List.cons.inj e).1

theorem dev_ne_user : devRole ≠ userRole := by decide
theorem asst_ne_user : asstRole ≠ userRole := by decide
theorem asst_ne_dev : asstRole ≠ devRole := by decide
theorem final_ne_analysis : finalCh ≠ analysisCh := by decide

theorem callHead_eq (n : Chars) :
    asstRole ++ toFunctions ++ n = 'a' :: (['s', 's', 'i', 's', 't', 'a', 'n', 't'] ++ toFunctions ++ n) :=
  rfl

theorem resultHead_eq (n : Chars) :
    functionsDot ++ n ++ toAssistant =
      'f' :: (['u', 'n', 'c', 't', 'i', 'o', 'n', 's', '.'] ++ n ++ toAssistant) :=
  rfl

theorem callHead_ne (n : Chars) : asstRole ++ toFunctions ++ n ≠ userRole ∧
    asstRole ++ toFunctions ++ n ≠ devRole ∧ asstRole ++ toFunctions ++ n ≠ asstRole := by
  refine ⟨?_, ?_, fun h => ?_⟩
  · rw [callHead_eq]; exact cons_ne_cons (by decide) _ _
  · rw [callHead_eq]; exact cons_ne_cons (by decide) _ _
  · have := congrArg List.length h
    simp [asstRole, toFunctions] at this

theorem resultHead_ne (n : Chars) : functionsDot ++ n ++ toAssistant ≠ userRole ∧
    functionsDot ++ n ++ toAssistant ≠ devRole ∧ functionsDot ++ n ++ toAssistant ≠ asstRole ∧
    stripPrefix? (asstRole ++ toFunctions) (functionsDot ++ n ++ toAssistant) = none := by
  refine ⟨?_, ?_, ?_, ?_⟩
  · rw [resultHead_eq]; exact cons_ne_cons (by decide) _ _
  · rw [resultHead_eq]; exact cons_ne_cons (by decide) _ _
  · rw [resultHead_eq]; exact cons_ne_cons (by decide) _ _
  · rw [resultHead_eq]
    exact Qwen.stripPrefix?_cons_ne _ _ (by decide)

theorem strip_callHead (n : Chars) : stripPrefix? (asstRole ++ toFunctions) (asstRole ++ toFunctions ++ n) = some n :=
  stripPrefix?_append _ _

theorem strip_resultHead (n : Chars) :
    (stripPrefix? functionsDot (functionsDot ++ n ++ toAssistant)).bind (stripSuffix? toAssistant) =
      some n := by
  rw [List.append_assoc, stripPrefix?_append, Option.bind_some, stripSuffix?_append]

/-! ## Turns -/

theorem takeText_head (h : Chars) (c : Token) (r : List Sym) :
    takeText (lit h ++ .ctrl c :: r) = (h, .ctrl c :: r) :=
  Qwen.takeText_lit_of _ _ rfl

theorem takeText_body (h : Chars) (x : Chars) (e : Token) :
    takeText (lit h ++ bodySyms f x e) = (h, bodySyms f x e) :=
  Qwen.takeText_lit_of _ _ rfl

/-- A textual turn's chunk reads back as the turn, owners erased. -/
theorem unlayoutTurn_chunk (hw : WfFacts f.ids) (t : HTurn) (ht : t.textual = true) :
    unlayoutTurn f (chunk f t) = some t.erase := by
  cases t with
  | dev pre p post o =>
    cases p with
    | text x =>
      simp only [HTurn.textual, Bool.and_eq_true, List.isEmpty_iff] at ht
      obtain ⟨rfl, rfl⟩ := ht
      unfold unlayoutTurn
      simp only [chunk, takeText_body, dev_ne_user, ↓reduceIte,
        readBody_body f [f.ids.endT] x f.ids.endT (by simp), Option.map_some, HTurn.erase]
    | toks _ => simp [HTurn.textual] at ht
  | user p o =>
    cases p with
    | text x =>
      unfold unlayoutTurn
      simp only [chunk, takeText_body, ↓reduceIte,
        readBody_body f [f.ids.endT] x f.ids.endT (by simp), Option.map_some, HTurn.erase]
    | toks _ => simp [HTurn.textual] at ht
  | analysis p o =>
    cases p with
    | text x =>
      unfold unlayoutTurn
      simp only [chunk, takeText_head, takeText_body, asst_ne_user, asst_ne_dev, ↓reduceIte,
        ne_eq, not_true_eq_false, and_self,
        readBody_body f [f.ids.endT] x f.ids.endT (by simp), Option.map_some, HTurn.erase]
    | toks _ => simp [HTurn.textual] at ht
  | final p r o =>
    cases p with
    | text x =>
      unfold unlayoutTurn
      have hr : decide ((if r = true then f.ids.ret else f.ids.endT) = f.ids.ret) = r := by
        cases r <;> simp [hw.er]
      simp only [chunk, takeText_head, takeText_body, asst_ne_user, asst_ne_dev, ↓reduceIte,
        ne_eq, not_true_eq_false, and_self, and_false, final_ne_analysis, true_and,
        readBody_body f [f.ids.endT, f.ids.ret] x (if r then f.ids.ret else f.ids.endT)
          (by cases r <;> simp), Option.map_some,
        HTurn.erase, hr]
    | toks _ => simp [HTurn.textual] at ht
  | call n a o =>
    obtain ⟨h1, h2, h3⟩ := callHead_ne n
    unfold unlayoutTurn
    simp only [chunk, takeText_head, takeText_body, h1, h2, h3, ↓reduceIte, ne_eq,
      not_true_eq_false, false_and, strip_callHead,
      readBody_body f [f.ids.call] a f.ids.call (by simp), Option.map_some, HTurn.erase]
  | result n q o =>
    obtain ⟨h1, h2, h3, h4⟩ := resultHead_ne n
    unfold unlayoutTurn
    simp only [chunk, takeText_head, takeText_body, h1, h2, h3, h4, ↓reduceIte, ne_eq,
      not_true_eq_false, false_and, strip_resultHead,
      readBody_body f [f.ids.endT] q f.ids.endT (by simp), Option.map_some, HTurn.erase]
  | sampled ts o => simp [HTurn.textual] at ht

end Verified.Harmony

end
