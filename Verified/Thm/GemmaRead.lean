module

public import Verified.Spec.Gemma
public import Verified.Thm.Format
public import Verified.Thm.Items

public section

/-!
# Gemma 3: layouts and reading them back

* `gemma3Ids_wf`: the reference tokenizer's control ids are distinct.
* `layout_eq`: a layout is `bos`, the turns' items, the generation prompt.
* `unlayout_layout`: `unlayout` inverts `layout` (up to owners) on every text-only layout: a
  textual turn lays out to `<start_of_turn>` and its chunk (`syms_turnItems_textual`), and
  `unlayout` splits at `<start_of_turn>` and reads each chunk back.
* `layout_of_unlayout`: what `unlayout` returns lays out to its input.
* `ctrl_reserved_layout`, `syms_layout_erase`: a layout places reserved control tokens only,
  and erasing owners keeps its symbols.
* `lawful`: the Gemma 3 format satisfies `Format.Lawful`.
-/

namespace Verified.Gemma

open Verified

/-- The control ids of the Gemma 3 tokenizer are distinct (what `lawful` assumes). -/
theorem gemma3Ids_wf : gemma3Ids.wf = true := by decide

/-- The control ids are pairwise distinct. -/
theorem ids_ne {i : GemmaIds} (h : i.wf = true) :
    i.bos ≠ i.startTurn ∧ i.bos ≠ i.endTurn ∧ i.startTurn ≠ i.endTurn := by
  refine ⟨?_, ?_, ?_⟩ <;> intro e <;> simp [GemmaIds.wf, nodupB, e] at h

/-- The generation prompt items of a layout. -/
@[expose] def promptOf (f : GemmaFmt) : Option Nat → List Item
  | some o => promptItems f o
  | none => []

/-- A layout: `bos`, the turns, the generation prompt. -/
theorem layout_eq (f : GemmaFmt) (turns : List GTurn) (p : Option Nat) :
    layout f ⟨turns, p⟩ =
      [ctl f.ids.bos 0 false] ++ turns.flatMap (turnItems f) ++ promptOf f p := by
  cases p <;> rfl

/-! ## Textual turns and their chunks -/

/-- A turn whose payload is text (no verbatim tokens, not sampled). -/
@[expose] def GTurn.textual : GTurn → Bool
  | .user _ (.text _) _ => true
  | .model (.text _) _ => true
  | _ => false

/-- The text after `<start_of_turn>` of a textual turn: the role line and the body. -/
@[expose] def bodyText : GTurn → Chars
  | .user pre (.text x) _ => userHead ++ (pre ++ x)
  | .model (.text x) _ => modelHead ++ x
  | _ => []

/-- The symbols of a textual turn after `<start_of_turn>`. -/
@[expose] def chunk (f : GemmaFmt) (t : GTurn) : List Sym := lit (bodyText t) ++ footerSyms f

/-- The chunks of the generation prompt. -/
@[expose] def pchunks : Option Nat → List (List Sym)
  | some _ => [lit modelHead]
  | none => []

theorem textual_of_textOnly (f : GemmaFmt) (l : GConv) (h : textOnly (layout f l) = true) :
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
  | user pre p o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, header, footer, ctl, txt, pay, Piece.isToks] at hall
  | model p o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, header, footer, ctl, txt, pay, Piece.isToks] at hall
  | sampled ts o =>
    simp [textOnly, turnItems, promptItems, header, footer, ctl, txt, Piece.isToks] at hall

theorem syms_promptItems (f : GemmaFmt) (o : Nat) :
    syms (promptItems f o) = .ctrl f.ids.startTurn :: lit modelHead := by
  simp [promptItems, header, ctl, txt, Piece.syms, lit]

theorem syms_turnItems_textual (f : GemmaFmt) (t : GTurn) (ht : t.textual = true) :
    syms (turnItems f t) = .ctrl f.ids.startTurn :: chunk f t := by
  cases t with
  | user pre p o =>
    cases p with
    | text x =>
      simp [turnItems, header, footer, ctl, txt, pay, Piece.syms, chunk, bodyText, footerSyms, lit]
    | toks _ => simp [GTurn.textual] at ht
  | model p o =>
    cases p with
    | text x =>
      simp [turnItems, header, footer, ctl, txt, pay, Piece.syms, chunk, bodyText, footerSyms, lit]
    | toks _ => simp [GTurn.textual] at ht
  | sampled ts o => simp [GTurn.textual] at ht

theorem takeText_chunk (f : GemmaFmt) (cs : Chars) :
    takeText (lit cs ++ footerSyms f) = (cs, footerSyms f) := by
  simp [footerSyms]

theorem stripPrefix_user_model (x : Chars) : stripPrefix? userHead (modelHead ++ x) = none := by
  simp [userHead, modelHead, stripPrefix?]

theorem unlayoutTurn_chunk (f : GemmaFmt) (t : GTurn) (ht : t.textual = true) :
    unlayoutTurn f (chunk f t) = some t.erase := by
  cases t with
  | user pre p o =>
    cases p with
    | text x =>
      simp only [unlayoutTurn, chunk, bodyText, takeText_chunk, ↓reduceIte, stripPrefix?_append]
      rfl
    | toks _ => simp [GTurn.textual] at ht
  | model p o =>
    cases p with
    | text x =>
      simp only [unlayoutTurn, chunk, bodyText, takeText_chunk, ↓reduceIte,
        stripPrefix_user_model, stripPrefix?_append, Option.map_some]
      rfl
    | toks _ => simp [GTurn.textual] at ht
  | sampled ts o => simp [GTurn.textual] at ht

theorem chunk_ne_prompt (f : GemmaFmt) (t : GTurn) : chunk f t ≠ lit modelHead := by
  intro e
  have h1 : Sym.ctrl f.ids.endTurn ∈ chunk f t := by simp [chunk, footerSyms]
  rw [e] at h1
  simp [lit] at h1

theorem unlayoutRest_cons (f : GemmaFmt) (c : List Sym) (cs : List (List Sym))
    (hc : c ≠ lit modelHead) :
    unlayoutRest f (c :: cs) = (unlayoutTurn f c).bind fun t =>
      (unlayoutRest f cs).map fun q => ⟨t :: q.turns, q.prompt⟩ := by
  cases cs with
  | nil =>
    simp only [unlayoutRest, hc, ↓reduceIte]
    cases unlayoutTurn f c <;> rfl
  | cons d ds => rfl

theorem unlayoutRest_chunks (f : GemmaFmt) (ts : List GTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    unlayoutRest f (ts.map (chunk f) ++ pchunks p) =
      some ⟨ts.map GTurn.erase, p.map fun _ => 0⟩ := by
  induction ts with
  | nil =>
    cases p with
    | none => rfl
    | some o =>
      show unlayoutRest f [lit modelHead] = _
      simp only [unlayoutRest, ↓reduceIte]
      rfl
  | cons t ts ih =>
    rw [List.map_cons, List.cons_append, unlayoutRest_cons f _ _ (chunk_ne_prompt f t),
      unlayoutTurn_chunk f t (h t List.mem_cons_self), Option.bind_some,
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))]
    rfl

theorem syms_flatMap_turnItems (f : GemmaFmt) (ts : List GTurn)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (ts.flatMap (turnItems f)) =
      (ts.map (chunk f)).flatMap (.ctrl f.ids.startTurn :: ·) := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    simp only [List.flatMap_cons, syms_append, syms_turnItems_textual f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.map_cons, List.cons_append]

theorem syms_layout (f : GemmaFmt) (ts : List GTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (layout f ⟨ts, p⟩) = [.ctrl f.ids.bos] ++
      (ts.map (chunk f) ++ pchunks p).flatMap (.ctrl f.ids.startTurn :: ·) := by
  rw [layout_eq, syms_append, syms_append, syms_flatMap_turnItems f ts h, List.flatMap_append]
  cases p with
  | none => simp [promptOf, pchunks, ctl, Piece.syms]
  | some o => simp [promptOf, pchunks, syms_promptItems, ctl, Piece.syms]

theorem not_mem_chunk (f : GemmaFmt) (hf : f.ids.wf = true) (t : GTurn) :
    .ctrl f.ids.startTurn ∉ chunk f t := by
  obtain ⟨-, -, hse⟩ := ids_ne hf
  simp [chunk, footerSyms, lit, hse]

/-- `unlayout` reads back every text-only layout, up to owners. -/
theorem unlayout_layout (f : GemmaFmt) (hf : f.ids.wf = true) (l : GConv)
    (h : textOnly (layout f l) = true) : unlayout f (syms (layout f l)) = some l.erase := by
  obtain ⟨hbs, -, -⟩ := ids_ne hf
  have ht := textual_of_textOnly f l h
  obtain ⟨ts, p⟩ := l
  have hnot : ∀ ch ∈ ts.map (chunk f) ++ pchunks p, .ctrl f.ids.startTurn ∉ ch := by
    intro ch hch
    rcases List.mem_append.mp hch with hch | hch
    · obtain ⟨t, -, rfl⟩ := List.mem_map.mp hch
      exact not_mem_chunk f hf t
    · cases p with
      | none => cases hch
      | some o =>
        simp only [pchunks, List.mem_singleton] at hch
        subst hch
        simp [lit]
  have hbos : Sym.ctrl f.ids.startTurn ∉ [Sym.ctrl f.ids.bos] := by simp [Ne.symm hbs]
  rw [syms_layout f _ _ ht]
  unfold unlayout
  rw [splitAtCtrl_chunks _ _ _ hbos hnot]
  simp only [↓reduceIte]
  exact unlayoutRest_chunks f ts p ht

/-! ## `unlayout` never invents a conversation -/

theorem unlayoutTurn_eq_some {f : GemmaFmt} {c : List Sym} {t : GTurn}
    (h : unlayoutTurn f c = some t) : .ctrl f.ids.startTurn :: c = syms (turnItems f t) := by
  have hs := takeText_spec c
  unfold unlayoutTurn at h
  dsimp only at h
  split at h
  · rename_i hf
    rw [hf] at hs
    split at h
    · rename_i x hx
      cases h
      rw [syms_turnItems_textual f _ rfl, ← hs, stripPrefix?_eq_some hx]
      rfl
    · obtain ⟨x, hx, rfl⟩ := Option.map_eq_some_iff.mp h
      rw [syms_turnItems_textual f _ rfl, ← hs, stripPrefix?_eq_some hx]
      rfl
  · cases h

theorem flatMap_cons_eq {f : GemmaFmt} {u : List Sym} {cs : List (List Sym)} {ut : GTurn}
    {q : GConv} (hu : .ctrl f.ids.startTurn :: u = syms (turnItems f ut))
    (hr : cs.flatMap (.ctrl f.ids.startTurn :: ·) =
      syms (q.turns.flatMap (turnItems f) ++ promptOf f q.prompt)) :
    (u :: cs).flatMap (.ctrl f.ids.startTurn :: ·) =
      syms ((ut :: q.turns).flatMap (turnItems f) ++ promptOf f q.prompt) := by
  simp only [List.flatMap_cons, hu, hr, List.append_assoc, syms_append]

theorem unlayoutRest_eq_some {f : GemmaFmt} : ∀ {cs : List (List Sym)} {q : GConv},
    unlayoutRest f cs = some q →
      cs.flatMap (.ctrl f.ids.startTurn :: ·) =
        syms (q.turns.flatMap (turnItems f) ++ promptOf f q.prompt)
  | [], q, h => by
    simp only [unlayoutRest, Option.some.injEq] at h
    subst h
    rfl
  | [c], q, h => by
    simp only [unlayoutRest] at h
    split at h
    · rename_i hc
      cases h
      simp only [List.flatMap_cons, List.flatMap_nil, List.append_nil]
      rw [hc, promptOf, List.nil_append, syms_promptItems]
    · obtain ⟨t, ht, rfl⟩ := Option.map_eq_some_iff.mp h
      simp [unlayoutTurn_eq_some ht, promptOf]
  | c :: d :: ds, q, h => by
    simp only [unlayoutRest] at h
    cases ht : unlayoutTurn f c with
    | none => rw [ht] at h; cases h
    | some t =>
      rw [ht, Option.bind_some] at h
      obtain ⟨q', hq', rfl⟩ := Option.map_eq_some_iff.mp h
      exact flatMap_cons_eq (unlayoutTurn_eq_some ht) (unlayoutRest_eq_some hq')

/-- What `unlayout` returns lays out to its input. -/
theorem layout_of_unlayout (f : GemmaFmt) (s : List Sym) (l : GConv)
    (h : unlayout f s = some l) : syms (layout f l) = s := by
  have hj := splitAtCtrl_join f.ids.startTurn s
  unfold unlayout at h
  dsimp only at h
  split at h
  · rename_i hb
    rw [hb] at hj
    have hr := unlayoutRest_eq_some h
    obtain ⟨ts, p⟩ := l
    rw [layout_eq, ← hj, hr]
    simp [ctl, Piece.syms, List.append_assoc]
  · cases h

/-! ## Control tokens and owners -/

theorem turnItems_ctrl (f : GemmaFmt) (tr : GTurn) :
    ∀ it ∈ turnItems f tr, ∀ t, it.piece = .ctrl t →
      t ∈ [f.ids.bos, f.ids.startTurn, f.ids.endTurn] := by
  cases tr <;> (try cases ‹LPay›) <;> simp [turnItems, header, footer, ctl, txt, pay, promptItems]

theorem layout_ctrl (f : GemmaFmt) (l : GConv) :
    ∀ it ∈ layout f l, ∀ t, it.piece = .ctrl t →
      t ∈ [f.ids.bos, f.ids.startTurn, f.ids.endTurn] := by
  obtain ⟨turns, p⟩ := l
  intro it hit t ht
  rw [layout_eq] at hit
  simp only [List.mem_append, List.mem_flatMap] at hit
  rcases hit with (hit | ⟨tr, -, hit⟩) | hit
  · simp only [List.mem_singleton] at hit
    subst hit
    simp only [ctl, Piece.ctrl.injEq] at ht
    simp [ht]
  · exact turnItems_ctrl f tr it hit t ht
  · cases p with
    | none => simp [promptOf] at hit
    | some o =>
      simp only [promptOf, promptItems, header, ctl, txt, List.mem_cons, List.not_mem_nil,
        or_false] at hit
      rcases hit with rfl | rfl <;> simp_all

theorem ctrl_reserved_layout (f : GemmaFmt) (l : GConv) :
    ∀ t ∈ ctrls (syms (layout f l)), isReserved f.ids.reserved t = true := by
  intro t ht
  simp only [ctrls, List.mem_filterMap] at ht
  obtain ⟨s, hs, hst⟩ := ht
  cases s with
  | ctrl t' =>
    simp only [Option.some.injEq] at hst
    subst hst
    simp only [syms, List.mem_flatMap] at hs
    obtain ⟨it, hit, hs⟩ := hs
    have hp : it.piece = .ctrl t' := by
      cases hp : it.piece <;> simp_all [Piece.syms]
    have hm := layout_ctrl f l it hit t' hp
    simp only [List.mem_cons, List.not_mem_nil, or_false] at hm
    rcases hm with rfl | rfl | rfl <;> simp [isReserved, GemmaIds.reserved]
  | ch _ => simp at hst
  | tok _ => simp at hst

theorem syms_turnItems_erase (f : GemmaFmt) (t : GTurn) :
    syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t with
  | user pre p o =>
    cases p with
    | text x => simp [GTurn.erase, turnItems, header, footer, ctl, txt, pay, Piece.syms]
    | toks _ => rfl
  | model p o => cases p <;> rfl
  | sampled ts o => rfl

theorem syms_layout_erase (f : GemmaFmt) (l : GConv) :
    syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨turns, p⟩ := l
  have hp : syms (promptOf f (p.map fun _ => 0)) = syms (promptOf f p) := by
    cases p <;> rfl
  simp only [GConv.erase, layout_eq, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItems_erase, hp]

/-! ## Lawful -/

/-- The Gemma 3 format is lawful for ids whose control tokens are distinct. -/
theorem lawful (f : GemmaFmt) (hf : f.ids.wf = true) : (format f).Lawful :=
  ⟨fun _ l _ ht => unlayout_layout f hf l ht, layout_of_unlayout f, ctrl_reserved_layout f,
    syms_layout_erase f⟩

end Verified.Gemma

end
