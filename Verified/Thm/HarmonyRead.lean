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

/-- Whatever `unlayoutTurn` reads is a textual turn whose chunk is its input. -/
theorem unlayoutTurn_eq_some {c : List Sym} {t : HTurn} (h : unlayoutTurn f c = some t) :
    t.textual = true ∧ chunk f t = c := by
  have hs := takeText_spec c
  unfold unlayoutTurn at h
  dsimp only at h
  split at h
  · rename_i hu
    obtain ⟨⟨x, e⟩, hb, rfl⟩ := Option.map_eq_some_iff.mp h
    obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
    simp only [List.mem_singleton] at hb2
    subst hb2
    rw [hu, hb1] at hs
    exact ⟨rfl, hs⟩
  · split at h
    · rename_i _ hd
      obtain ⟨⟨x, e⟩, hb, rfl⟩ := Option.map_eq_some_iff.mp h
      obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
      simp only [List.mem_singleton] at hb2
      subst hb2
      rw [hd, hb1] at hs
      exact ⟨rfl, hs⟩
    · split at h
      · rename_i c' rest hr
        split at h
        · cases h
        · rename_i hc
          have hc' : c' = f.ids.channel := by simpa using hc
          have hs2 := takeText_spec rest
          rw [hr, hc'] at hs
          split at h
          · rename_i ha
            obtain ⟨⟨x, e⟩, hb, rfl⟩ := Option.map_eq_some_iff.mp h
            obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
            simp only [List.mem_singleton] at hb2
            subst hb2
            rw [ha.2, hb1] at hs2
            rw [ha.1, ← hs2] at hs
            exact ⟨rfl, hs⟩
          · split at h
            · rename_i hf
              obtain ⟨⟨x, e⟩, hb, rfl⟩ := Option.map_eq_some_iff.mp h
              obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
              rw [hf.2, hb1] at hs2
              rw [hf.1, ← hs2] at hs
              refine ⟨rfl, ?_⟩
              rw [← hs]
              have he : (if decide (e = f.ids.ret) = true then f.ids.ret else f.ids.endT) = e := by
                simp only [List.mem_cons, List.not_mem_nil, or_false] at hb2
                rcases hb2 with rfl | rfl
                · by_cases h' : f.ids.endT = f.ids.ret
                  · simp [h']
                  · simp [h']
                · simp
              show lit asstRole ++ .ctrl f.ids.channel :: (lit finalCh ++ bodySyms f x
                (if decide (e = f.ids.ret) = true then f.ids.ret else f.ids.endT)) = _
              rw [he]
            · split at h
              · rename_i n hn
                split at h
                · rename_i hcc
                  obtain ⟨⟨x, e⟩, hb, rfl⟩ := Option.map_eq_some_iff.mp h
                  obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
                  simp only [List.mem_singleton] at hb2
                  subst hb2
                  rw [hcc, hb1] at hs2
                  rw [stripPrefix?_eq_some hn, ← hs2] at hs
                  exact ⟨rfl, hs⟩
                · cases h
              · split at h
                · rename_i n hn
                  obtain ⟨y, hy1, hy2⟩ := Option.bind_eq_some_iff.mp hn
                  split at h
                  · rename_i hcc
                    obtain ⟨⟨x, e⟩, hb, rfl⟩ := Option.map_eq_some_iff.mp h
                    obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
                    simp only [List.mem_singleton] at hb2
                    subst hb2
                    rw [hcc, hb1] at hs2
                    rw [stripPrefix?_eq_some hy1, stripSuffix?_eq_some hy2, ← List.append_assoc,
                      ← hs2] at hs
                    exact ⟨rfl, hs⟩
                  · cases h
                · cases h
      · cases h

/-! ## The parts after each `<|start|>` -/

theorem message_mem_chunk : ∀ t : HTurn, t.textual = true → Sym.ctrl f.ids.message ∈ chunk f t
  | .dev _ (.text _) _ _, _ | .user (.text _) _, _ | .analysis (.text _) _, _
  | .final (.text _) _ _, _ | .call .., _ | .result .., _ => by simp [chunk, bodySyms]
  | .dev _ (.toks _) _ _, h | .user (.toks _) _, h | .analysis (.toks _) _, h
  | .final (.toks _) _ _, h | .sampled .., h => by simp [HTurn.textual] at h

theorem chunk_ne_prompt (t : HTurn) (ht : t.textual = true) : chunk f t ≠ lit asstRole := by
  intro e
  have h := message_mem_chunk f t ht
  rw [e] at h
  simp [lit] at h

theorem start_not_mem_chunk (hw : WfFacts f.ids) : ∀ t : HTurn, Sym.ctrl f.ids.start ∉ chunk f t
  | .dev _ p _ _ => by cases p <;> simp [chunk, bodySyms, lit, hw.sm, hw.se]
  | .user p _ => by cases p <;> simp [chunk, bodySyms, lit, hw.sm, hw.se]
  | .analysis p _ => by cases p <;> simp [chunk, bodySyms, lit, hw.sm, hw.sc, hw.se]
  | .final p r _ => by cases p <;> cases r <;> simp [chunk, bodySyms, lit, hw.sm, hw.sc, hw.se, hw.sr]
  | .call .. => by simp [chunk, bodySyms, lit, hw.sm, hw.sc, hw.sk]
  | .result .. => by simp [chunk, bodySyms, lit, hw.sm, hw.sc, hw.se]
  | .sampled .. => by simp [chunk]

/-- The parts of the generation prompt. -/
@[expose] def pchunks : Option Nat → List (List Sym)
  | some _ => [lit asstRole]
  | none => []

/-- The generation prompt's items. -/
@[expose] def promptOf : Option Nat → List Item
  | some o => promptItems f o
  | none => []

/-- The system message's items. -/
@[expose] def sysItems (x : Chars) : List Item :=
  head f sysRole 0 ++ [ctl f.ids.message 0 false, txt x 0 false, ctl f.ids.endT 0 false]

/-- A layout: the system message, the turns, the generation prompt. -/
theorem layout_eq (x : Chars) (ts : List HTurn) (p : Option Nat) :
    layout f ⟨x, ts, p⟩ = sysItems f x ++ ts.flatMap (turnItems f) ++ promptOf f p := by
  cases p <;> rfl

theorem syms_sysItems (x : Chars) :
    syms (sysItems f x) = .ctrl f.ids.start :: (lit sysRole ++ bodySyms f x f.ids.endT) := by
  simp [sysItems, head, ctl, txt, Piece.syms, lit, bodySyms]

theorem syms_promptOf (p : Option Nat) :
    syms (promptOf f p) = (pchunks p).flatMap (.ctrl f.ids.start :: ·) := by
  cases p with
  | none => rfl
  | some o => simp [promptOf, pchunks, syms_promptItems]

theorem syms_flatMap_turnItems (ts : List HTurn) (h : ∀ t ∈ ts, t.textual = true) :
    syms (ts.flatMap (turnItems f)) = (ts.map (chunk f)).flatMap (.ctrl f.ids.start :: ·) := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    simp only [List.flatMap_cons, syms_append, syms_turnItems_textual f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.map_cons, List.cons_append]

theorem syms_layout (x : Chars) (ts : List HTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (layout f ⟨x, ts, p⟩) = [] ++ ((lit sysRole ++ bodySyms f x f.ids.endT) ::
      (ts.map (chunk f) ++ pchunks p)).flatMap (.ctrl f.ids.start :: ·) := by
  rw [layout_eq, syms_append, syms_append, syms_sysItems, syms_flatMap_turnItems f ts h,
    syms_promptOf, List.nil_append, List.flatMap_cons, List.flatMap_append]
  simp only [List.cons_append, List.append_assoc]

theorem unlayoutRest_cons (c : List Sym) (cs : List (List Sym)) (hc : c ≠ lit asstRole) :
    unlayoutRest f (c :: cs) = (unlayoutTurn f c).bind fun t =>
      (unlayoutRest f cs).map fun q => (t :: q.1, q.2) := by
  cases cs with
  | nil =>
    simp only [unlayoutRest, hc, ↓reduceIte]
    cases unlayoutTurn f c <;> rfl
  | cons d ds => rfl

theorem unlayoutRest_chunks (hw : WfFacts f.ids) (ts : List HTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    unlayoutRest f (ts.map (chunk f) ++ pchunks p) =
      some (ts.map HTurn.erase, p.map fun _ => 0) := by
  induction ts with
  | nil =>
    cases p with
    | none => rfl
    | some o =>
      show unlayoutRest f [lit asstRole] = _
      simp only [unlayoutRest, ↓reduceIte]
      rfl
  | cons t ts ih =>
    have ht := h t List.mem_cons_self
    rw [List.map_cons, List.cons_append, unlayoutRest_cons f _ _ (chunk_ne_prompt f t ht),
      unlayoutTurn_chunk f hw t ht, Option.bind_some,
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))]
    rfl

/-- A layout whose turns are all textual reads back, owners erased. -/
theorem unlayout_read (hw : WfFacts f.ids) (x : Chars) (ts : List HTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    unlayout f (syms (layout f ⟨x, ts, p⟩)) = some ⟨x, ts.map HTurn.erase, p.map fun _ => 0⟩ := by
  have hnot : ∀ c ∈ (lit sysRole ++ bodySyms f x f.ids.endT) :: (ts.map (chunk f) ++ pchunks p),
      Sym.ctrl f.ids.start ∉ c := by
    intro c hc
    simp only [List.mem_cons, List.mem_append, List.mem_map] at hc
    rcases hc with rfl | ⟨t, -, rfl⟩ | hc
    · simp [bodySyms, lit, hw.sm, hw.se]
    · exact start_not_mem_chunk f hw t
    · cases p with
      | none => cases hc
      | some o =>
        simp only [pchunks, List.mem_singleton] at hc
        subst hc
        simp [lit]
  rw [syms_layout f x ts p h]
  unfold unlayout
  rw [Qwen.splitAtCtrl_flatMap _ _ _ (by simp) hnot]
  simp only [takeText_body, ↓reduceIte, readBody_body f [f.ids.endT] x f.ids.endT (by simp),
    Option.bind_some, unlayoutRest_chunks f hw ts p h, Option.map_some]

/-! ## `unlayout` never invents a conversation -/

theorem unlayoutRest_eq_some : ∀ {cs : List (List Sym)} {q : List HTurn × Option Nat},
    unlayoutRest f cs = some q →
      cs.flatMap (.ctrl f.ids.start :: ·) = syms (q.1.flatMap (turnItems f) ++ promptOf f q.2)
  | [], q, h => by
    simp only [unlayoutRest, Option.some.injEq] at h
    subst h
    rfl
  | [c], q, h => by
    simp only [unlayoutRest] at h
    split at h
    · rename_i hc
      cases h
      simp [hc, promptOf, syms_promptItems]
    · obtain ⟨t, ht, rfl⟩ := Option.map_eq_some_iff.mp h
      obtain ⟨htx, hc⟩ := unlayoutTurn_eq_some f ht
      simp [promptOf, syms_turnItems_textual f t htx, hc]
  | c :: d :: ds, q, h => by
    simp only [unlayoutRest] at h
    cases ht : unlayoutTurn f c with
    | none => rw [ht] at h; cases h
    | some t =>
      rw [ht, Option.bind_some] at h
      obtain ⟨q', hq', rfl⟩ := Option.map_eq_some_iff.mp h
      obtain ⟨htx, hc⟩ := unlayoutTurn_eq_some f ht
      have hr := unlayoutRest_eq_some hq'
      rw [List.flatMap_cons, hr]
      simp [syms_turnItems_textual f t htx, hc]

/-- What `unlayout` returns lays out to its input. -/
theorem layout_unlayout (s : List Sym) (l : HConv) (h : unlayout f s = some l) :
    syms (layout f l) = s := by
  have hj := splitAtCtrl_join f.ids.start s
  unfold unlayout at h
  dsimp only at h
  split at h
  · rename_i c cs h1 h2
    split at h
    · rename_i hsys
      obtain ⟨⟨x, e⟩, hb, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨q, hq, rfl⟩ := Option.map_eq_some_iff.mp h
      obtain ⟨hb1, hb2⟩ := readBody_eq_some f hb
      simp only [List.mem_singleton] at hb2
      subst hb2
      have hc := takeText_spec c
      rw [hsys, hb1] at hc
      have hr := unlayoutRest_eq_some f hq
      rw [h1, h2, List.nil_append, List.flatMap_cons, hr, ← hc] at hj
      rw [← hj, layout_eq, syms_append, syms_append, syms_sysItems]
      simp
    · cases h
  · cases h

end Verified.Harmony

end
