module

public import Verified.Thm.LlamaLayout
public import Verified.Thm.SymSplit

public section

/-!
# Llama 3.1: reading a layout back

A textual turn (text payloads only) lays out to `<|start_header_id|>` and its chunk
(`syms_turnItems_textual`); `unlayout` splits the symbol stream at `<|start_header_id|>` and reads
each chunk back (`unlayoutSystem_chunk`, `unlayoutUserTools_chunk`, `unlayoutTurn_chunk`).
Main result: `unlayout_layout_of_textual`, `unlayout` inverts `layout` (up to owners) on every
lowered conversation whose turns are textual.
-/

namespace Verified.Llama

open Verified

/-! ## Reading a layout back -/

/-- The control ids are pairwise distinct. -/
theorem ids_ne {i : LlamaIds} (h : i.wf = true) :
    i.bos ≠ i.startHeader ∧ i.bos ≠ i.endHeader ∧ i.bos ≠ i.eot ∧
      i.startHeader ≠ i.endHeader ∧ i.startHeader ≠ i.eot ∧ i.endHeader ≠ i.eot := by
  refine ⟨?_, ?_, ?_, ?_, ?_, ?_⟩ <;> intro e <;> simp [LlamaIds.wf, nodupB, e] at h

/-- The payload is text. -/
@[expose] def payText : LPay → Bool
  | .text _ => true
  | .toks _ => false

/-- A turn whose payloads are text (no verbatim tokens, not sampled). -/
@[expose] def LTurn.textual : LTurn → Bool
  | .system _ _ s _ => payText s
  | .userTools _ u _ => payText u
  | .plain _ p _ => payText p
  | .call .. => true
  | .ipython p _ => payText p
  | .sampled .. => false

/-- The header role and the text of a textual turn. -/
@[expose] def bodyText (f : LlamaFmt) : LTurn → Chars × Chars
  | .system env tools (.text s) _ => (['s', 'y', 's', 't', 'e', 'm'],
      (if env then envLine else []) ++
      dateLines f.date ++
      (if env && !f.toolsInUser then systemToolsIntro ++ toolBlocks tools else []) ++ s)
  | .userTools tools (.text u) _ => (['u', 's', 'e', 'r'], userToolsIntro ++ toolBlocks tools ++ u)
  | .plain r (.text p) _ => (r.name, p)
  | .call n a _ =>
      (['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'], callPre ++ n ++ callSep ++ a ++ ['}'])
  | .ipython (.text p) _ => (['i', 'p', 'y', 't', 'h', 'o', 'n'], p)
  | _ => ([], [])

/-- The symbols of a turn after `<|start_header_id|>`. -/
@[expose] def body (f : LlamaFmt) (role x : Chars) : List Sym :=
  lit role ++ .ctrl f.ids.endHeader :: (lit (nl2 ++ x) ++ [.ctrl f.ids.eot])

/-- The chunk of a textual turn. -/
@[expose] def chunk (f : LlamaFmt) (t : LTurn) : List Sym :=
  body f (bodyText f t).1 (bodyText f t).2

/-- The chunk of the generation prompt. -/
@[expose] def pchunk (f : LlamaFmt) : List Sym :=
  lit ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ++ .ctrl f.ids.endHeader :: lit nl2

/-- The chunks of the generation prompt. -/
@[expose] def pchunks (f : LlamaFmt) : Option Nat → List (List Sym)
  | some _ => [pchunk f]
  | none => []

theorem syms_promptItems (f : LlamaFmt) (o : Nat) :
    syms (promptItems f o) = .ctrl f.ids.startHeader :: pchunk f := by
  simp [promptItems, header, ctl, txt, Piece.syms, pchunk, lit]

theorem syms_turnItems_textual (f : LlamaFmt) (t : LTurn) (ht : t.textual = true) :
    syms (turnItems f t) = .ctrl f.ids.startHeader :: chunk f t := by
  cases t with
  | system env tools s o =>
    cases s with
    | text s => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | userTools tools u o =>
    cases u with
    | text u => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | plain r p o =>
    cases p with
    | text p => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | call n a o => simp [turnItems, header, ctl, txt, Piece.syms, chunk, body, bodyText, lit]
  | ipython p o =>
    cases p with
    | text p => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | sampled ts o => simp [LTurn.textual] at ht

theorem turnBody_body (f : LlamaFmt) (role x : Chars) :
    turnBody f (body f role x) = some (role, x) := by
  simp [turnBody, body]

theorem turnBody_eq_some {f : LlamaFmt} {s : List Sym} {role x : Chars}
    (h : turnBody f s = some (role, x)) : s = body f role x := by
  have hs := takeText_spec s
  unfold turnBody at h
  dsimp only at h
  split at h
  · rename_i e rest hr
    split at h
    · rename_i he
      subst he
      cases hx : stripPrefix? nl2 (takeText rest).1 with
      | none => rw [hx] at h; cases h
      | some x' =>
        rw [hx, Option.bind_some] at h
        split at h
        · rename_i heot
          cases h
          have h1 := stripPrefix?_eq_some hx
          have h2 := takeText_spec rest
          rw [heot, h1] at h2
          rw [hr, ← h2] at hs
          exact hs.symm
        · cases h
    · cases h
  · cases h

theorem role_ne :
    ['s', 'y', 's', 't', 'e', 'm'] ≠ ['u', 's', 'e', 'r'] ∧
    ['i', 'p', 'y', 't', 'h', 'o', 'n'] ≠ ['u', 's', 'e', 'r'] ∧
    ['i', 'p', 'y', 't', 'h', 'o', 'n'] ≠ ['s', 'y', 's', 't', 'e', 'm'] ∧
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['u', 's', 'e', 'r'] ∧
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['s', 'y', 's', 't', 'e', 'm'] ∧
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['i', 'p', 'y', 't', 'h', 'o', 'n'] := by
  decide

/-- The `developer` header differs from the other role names. -/
theorem developer_ne :
    ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r'] ≠ ['u', 's', 'e', 'r'] ∧
    ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r'] ≠ ['s', 'y', 's', 't', 'e', 'm'] ∧
    ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r'] ≠ ['i', 'p', 'y', 't', 'h', 'o', 'n'] := by
  decide

theorem parseCall_call {n : Chars} (a : Chars) (hn : clearOf callSep n = true) :
    parseCall (callPre ++ n ++ callSep ++ a ++ ['}']) = some (n, a) := by
  have e : callPre ++ n ++ callSep ++ a ++ ['}'] = callPre ++ (n ++ callSep ++ (a ++ ['}'])) := by
    simp only [List.append_assoc]
  rw [e]
  simp only [parseCall, stripPrefix?_append, Option.bind_some, splitFirst_of_clearOf _ hn,
    stripSuffix?_append, Option.map_some]

theorem parseCall_eq_some {cs n a : Chars} (h : parseCall cs = some (n, a)) :
    cs = callPre ++ n ++ callSep ++ a ++ ['}'] := by
  unfold parseCall at h
  cases h1 : stripPrefix? callPre cs with
  | none => rw [h1] at h; cases h
  | some r =>
    rw [h1, Option.bind_some] at h
    cases h2 : splitFirst callSep r with
    | none => rw [h2] at h; cases h
    | some x =>
      rw [h2, Option.bind_some] at h
      cases h3 : stripSuffix? ['}'] x.2 with
      | none => rw [h3] at h; cases h
      | some a' =>
        rw [h3, Option.map_some] at h
        cases h
        obtain ⟨x1, x2⟩ := x
        have h3' : x2 = a ++ ['}'] := stripSuffix?_eq_some h3
        rw [stripPrefix?_eq_some h1, splitFirst_eq_some h2, h3']
        simp only [List.append_assoc]

theorem unlayoutTurn_chunk (f : LlamaFmt) (t : LTurn) (ht : t.textual = true)
    (hk : t.isRest = true) (hok : turnOk f t = true) :
    unlayoutTurn f (chunk f t) = some t.erase := by
  obtain ⟨h1, h2, h3, h4, h5, h6⟩ := role_ne
  cases t with
  | plain r p o =>
    cases p with
    | toks _ => simp [LTurn.textual, payText] at ht
    | text p =>
      cases r with
      | user => simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase]
      | system =>
        simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase, h1]
      | developer =>
        obtain ⟨d1, d2, d3⟩ := developer_ne
        simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase, d1, d2, d3]
      | assistant =>
        have hp : parseCall p = none := by simpa [turnOk] using hok
        simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase, h4, h5, h6,
          hp]
  | call n a o =>
    have hp : parseCall (callPre ++ (n ++ (callSep ++ (a ++ ['}'])))) = some (n, a) := by
      simpa only [List.append_assoc] using parseCall_call a (n := n) hok
    simp [unlayoutTurn, chunk, bodyText, turnBody_body, LTurn.erase, h4, h5, h6, hp]
  | ipython p o =>
    cases p with
    | toks _ => simp [LTurn.textual, payText] at ht
    | text p => simp [unlayoutTurn, chunk, bodyText, turnBody_body, LTurn.erase, h2, h3]
  | system _ _ _ _ => simp [LTurn.isRest] at hk
  | userTools _ _ _ => simp [LTurn.isRest] at hk
  | sampled _ _ => simp [LTurn.textual] at ht

theorem nl2_ne_nil : nl2 ≠ [] := by decide

theorem splitSeq_toolBlocks (tools : List Chars) (s : Chars)
    (h : ∀ j ∈ tools, clearOf nl2 j = true) :
    splitSeq nl2 (toolBlocks tools ++ s) = tools ++ splitSeq nl2 s := by
  induction tools with
  | nil => rfl
  | cons j js ih =>
    have e : toolBlocks (j :: js) ++ s = j ++ nl2 ++ (toolBlocks js ++ s) := by
      simp [toolBlocks, List.append_assoc]
    rw [e, splitSeq_append_of_clearOf _ nl2_ne_nil (h j List.mem_cons_self),
      ih (fun j' hj' => h j' (List.mem_cons_of_mem _ hj')), List.cons_append]

theorem splitSeq_head (s : Chars) (hs : s.head? ≠ some '{') :
    ∃ q qs, splitSeq nl2 s = q :: qs ∧ q.head? ≠ some '{' := by
  cases hsf : splitFirst nl2 s with
  | none => exact ⟨s, [], splitSeq_of_none hsf, hs⟩
  | some r =>
    obtain ⟨a, b⟩ := r
    refine ⟨a, splitSeq nl2 b, splitSeq_of_splitFirst nl2_ne_nil hsf, ?_⟩
    have e := splitFirst_eq_some hsf
    cases a with
    | nil => simp
    | cons x a =>
      rw [e] at hs
      simpa using hs

theorem takeDrop_tools (P : Chars → Bool) (tools : List Chars) (q : Chars) (qs : List Chars)
    (ht : ∀ j ∈ tools, P j = true) (hq : P q = false) :
    (tools ++ q :: qs).takeWhile P = tools ∧ (tools ++ q :: qs).dropWhile P = q :: qs := by
  induction tools with
  | nil => simp [hq]
  | cons j js ih =>
    have hj := ht j List.mem_cons_self
    obtain ⟨h1, h2⟩ := ih (fun j' hj' => ht j' (List.mem_cons_of_mem _ hj'))
    simp [hj, h1, h2]

theorem parseBlocks_toolBlocks (tools : List Chars) (s : Chars) (hb : blocksOk tools = true)
    (hs : s.head? ≠ some '{') : parseBlocks (toolBlocks tools ++ s) = some (tools, s) := by
  have hb' : ∀ j ∈ tools, j.head? = some '{' ∧ clearOf nl2 j = true := by
    intro j hj
    have := List.all_eq_true.mp hb j hj
    simpa using this
  obtain ⟨q, qs, hq, hqh⟩ := splitSeq_head s hs
  have hsp := splitSeq_toolBlocks tools s (fun j hj => (hb' j hj).2)
  rw [hq] at hsp
  obtain ⟨h1, h2⟩ := takeDrop_tools (fun p : Chars => p.head? == some '{') tools q qs
    (fun j hj => by simp [(hb' j hj).1]) (by simpa using hqh)
  have hj : joinWith nl2 (q :: qs) = s := by
    rw [← hq]
    exact joinWith_splitSeq nl2 s nl2_ne_nil
  simp only [parseBlocks, hsp, h1, h2, hj, List.isEmpty_cons, Bool.false_eq_true, ↓reduceIte]

theorem envLine_dateLines (d : Chars) (s : Chars) :
    stripPrefix? envLine (dateLines d ++ s) = none := by
  have hEC : ('E' : Char) ≠ 'C' := by decide
  simp only [envLine, dateLines, cuttingLine, List.cons_append, stripPrefix?, hEC, ↓reduceIte]

theorem unlayoutSystem_chunk (f : LlamaFmt) (env : Bool) (tools : List Chars) (s : Chars) (o : Nat)
    (hok : turnOk f (.system env tools (.text s) o) = true) :
    unlayoutSystem f (chunk f (.system env tools (.text s) o)) =
      some (.system env tools (.text s) 0) := by
  cases env <;> cases hu : f.toolsInUser <;>
    simp only [turnOk, payFree, hu, Bool.true_and, Bool.false_or, Bool.true_or, Bool.not_true,
      Bool.not_false, Bool.and_true, Bool.and_false, Bool.and_self, List.isEmpty_iff] at hok
  · subst hok
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu, envLine_dateLines]
  · subst hok
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu, envLine_dateLines]
  · simp only [Bool.and_eq_true] at hok
    have hs : s.head? ≠ some '{' := by simpa [afterBlocksOk] using hok.2
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu,
      parseBlocks_toolBlocks tools s hok.1 hs]
  · subst hok
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu]

theorem unlayoutUserTools_chunk (f : LlamaFmt) (tools : List Chars) (u : Chars) (o : Nat)
    (hok : turnOk f (.userTools tools (.text u) o) = true) :
    unlayoutUserTools f (chunk f (.userTools tools (.text u) o)) =
      some (.userTools tools (.text u) 0) := by
  simp only [turnOk, payFree, Bool.true_and, Bool.and_eq_true] at hok
  obtain ⟨hb, ha⟩ := hok
  have hs : u.head? ≠ some '{' := by simpa [afterBlocksOk] using ha
  simp [unlayoutUserTools, chunk, bodyText, turnBody_body, List.append_assoc,
    parseBlocks_toolBlocks tools u hb hs]

theorem chunk_ne_prompt (f : LlamaFmt) (hf : f.ids.wf = true) (t : LTurn) :
    .ctrl f.ids.startHeader :: chunk f t ≠ syms (promptItems f 0) := by
  obtain ⟨-, -, -, -, hso, heo⟩ := ids_ne hf
  intro e
  have h1 : Sym.ctrl f.ids.eot ∈ Sym.ctrl f.ids.startHeader :: chunk f t := by
    simp [chunk, body]
  rw [e, syms_promptItems] at h1
  simp [pchunk, lit, Ne.symm hso, Ne.symm heo] at h1

theorem unlayoutRest_cons (f : LlamaFmt) (c : List Sym) (cs : List (List Sym))
    (hc : .ctrl f.ids.startHeader :: c ≠ syms (promptItems f 0)) :
    unlayoutRest f (c :: cs) = (unlayoutTurn f c).bind fun t =>
      (unlayoutRest f cs).map fun q => ⟨t :: q.turns, q.prompt⟩ := by
  cases cs with
  | nil =>
    simp only [unlayoutRest, hc, ↓reduceIte]
    cases unlayoutTurn f c <;> rfl
  | cons d ds => rfl

theorem unlayoutRest_chunks (f : LlamaFmt) (hf : f.ids.wf = true) (ts : List LTurn)
    (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true ∧ t.isRest = true ∧ turnOk f t = true) :
    unlayoutRest f (ts.map (chunk f) ++ pchunks f p) =
      some ⟨ts.map LTurn.erase, p.map fun _ => 0⟩ := by
  induction ts with
  | nil =>
    cases p with
    | none => rfl
    | some o =>
      show unlayoutRest f [pchunk f] = _
      simp only [unlayoutRest]
      rw [if_pos (syms_promptItems f 0).symm]
      rfl
  | cons t ts ih =>
    obtain ⟨h1, h2, h3⟩ := h t List.mem_cons_self
    rw [List.map_cons, List.cons_append, unlayoutRest_cons f _ _ (chunk_ne_prompt f hf t),
      unlayoutTurn_chunk f t h1 h2 h3, Option.bind_some,
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))]
    rfl

theorem syms_flatMap_turnItems (f : LlamaFmt) (ts : List LTurn)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (ts.flatMap (turnItems f)) =
      (ts.map (chunk f)).flatMap (.ctrl f.ids.startHeader :: ·) := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    simp only [List.flatMap_cons, syms_append, syms_turnItems_textual f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.map_cons, List.cons_append]

theorem syms_layout (f : LlamaFmt) (ts : List LTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (layout f ⟨ts, p⟩) = [.ctrl f.ids.bos] ++
      (ts.map (chunk f) ++ pchunks f p).flatMap (.ctrl f.ids.startHeader :: ·) := by
  rw [layout_eq, syms_append, syms_append, syms_flatMap_turnItems f ts h, List.flatMap_append]
  cases p with
  | none => simp [promptOf, pchunks, ctl, Piece.syms]
  | some o => simp [promptOf, pchunks, syms_promptItems, ctl, Piece.syms]

theorem not_mem_chunk (f : LlamaFmt) (hf : f.ids.wf = true) (t : LTurn) :
    .ctrl f.ids.startHeader ∉ chunk f t := by
  obtain ⟨-, -, -, hse, hso, -⟩ := ids_ne hf
  simp [chunk, body, lit, hse, hso]

theorem not_mem_pchunk (f : LlamaFmt) (hf : f.ids.wf = true) :
    .ctrl f.ids.startHeader ∉ pchunk f := by
  obtain ⟨-, -, -, hse, -, -⟩ := ids_ne hf
  simp [pchunk, lit, hse]

/-- `unlayout` reads back the layout of every lowered conversation whose turns are textual. -/
theorem unlayout_layout_of_textual (f : LlamaFmt) (hf : f.ids.wf = true) (c : Conversation)
    (l : LConv) (hl : lower f c = some l) (ht : ∀ t ∈ l.turns, t.textual = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  obtain ⟨hbs, -, -, -, -, -⟩ := ids_ne hf
  rw [lower_eq] at hl
  cases hh : headOf f c with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · rename_i hok
        cases hl
        have hok' : ∀ t ∈ y.1 ++ ts, turnOk f t = true := List.all_eq_true.mp hok
        have hrest : ∀ t ∈ ts, t.textual = true ∧ t.isRest = true ∧ turnOk f t = true :=
          fun t h => ⟨ht t (List.mem_append_right _ h),
            (by
              obtain ⟨j, m, -, hm⟩ := lowerMsgs_mem hts t h
              exact lowerMsg_isRest hm),
            hok' t (List.mem_append_right _ h)⟩
        generalize (if c.addGenerationPrompt = true then some c.messages.length else none) = P
        have hnot : ∀ ch ∈ (y.1 ++ ts).map (chunk f) ++ pchunks f P,
            .ctrl f.ids.startHeader ∉ ch := by
          intro ch hch
          rcases List.mem_append.mp hch with hch | hch
          · obtain ⟨t, -, rfl⟩ := List.mem_map.mp hch
            exact not_mem_chunk f hf t
          · cases P with
            | none => cases hch
            | some o =>
              simp only [pchunks, List.mem_singleton] at hch
              subst hch
              exact not_mem_pchunk f hf
        have hbos : Sym.ctrl f.ids.startHeader ∉ [Sym.ctrl f.ids.bos] := by
          simp [Ne.symm hbs]
        rw [syms_layout f _ _ ht]
        unfold unlayout
        rw [splitAtCtrl_chunks _ _ _ hbos hnot]
        simp only [ne_eq, not_true_eq_false, ↓reduceIte]
        obtain ⟨sys, ⟨hy, hcond⟩ | ⟨u, i, hy, hcond⟩⟩ := headOf_shape hh
        · have hsys : (sysTurnOf f c.tools sys).textual = true := ht _ (by simp [hy])
          have hsok : turnOk f (sysTurnOf f c.tools sys) = true := hok' _ (by simp [hy])
          cases sys with
          | toks _ => simp [sysTurnOf, LTurn.textual, payText] at hsys
          | text s =>
            simp only [hy, List.map_cons, List.cons_append, List.nil_append]
            simp only [sysTurnOf] at hsok ⊢
            rw [unlayoutSystem_chunk f _ _ s 0 hsok, Option.bind_some]
            cases henv : c.tools.isSome <;> cases hu : f.toolsInUser <;>
              simp only [henv, hu, Bool.true_and, Bool.false_and, Bool.and_true] at hcond ⊢
            · rw [unlayoutRest_chunks f hf ts P hrest]
              rfl
            · rw [unlayoutRest_chunks f hf ts P hrest]
              rfl
            · rw [unlayoutRest_chunks f hf ts P hrest]
              rfl
            · cases hcond
        · have hsys : (sysTurnOf f c.tools sys).textual = true := ht _ (by simp [hy])
          have hsok : turnOk f (sysTurnOf f c.tools sys) = true := hok' _ (by simp [hy])
          have hut : (LTurn.userTools ((c.tools.getD []).map (Json.pretty 0)) u i).textual = true :=
            ht _ (by simp [hy])
          have huok : turnOk f (LTurn.userTools ((c.tools.getD []).map (Json.pretty 0)) u i) =
              true := hok' _ (by simp [hy])
          have henv : c.tools.isSome = true := by simp_all
          have hu : f.toolsInUser = true := by simp_all
          cases sys with
          | toks _ => simp [sysTurnOf, LTurn.textual, payText] at hsys
          | text s =>
            cases u with
            | toks _ => simp [LTurn.textual, payText] at hut
            | text u =>
              simp only [hy, List.cons_append, List.map_cons, List.nil_append]
              simp only [sysTurnOf] at hsok ⊢
              rw [unlayoutSystem_chunk f _ _ s 0 hsok, Option.bind_some]
              simp only [henv, hu, ↓reduceIte]
              rw [unlayoutUserTools_chunk f _ u i huok, Option.bind_some,
                unlayoutRest_chunks f hf ts P hrest]
              rfl
      · cases hl

end Verified.Llama

end
