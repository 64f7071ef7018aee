module

public import Verified.Spec.TaggedDefault
public import Verified.Thm.TaggedEntries

public section

/-!
# Tagged turns with the template's default system turn are lawful

* `lawfulD`: every `DfltFmt` meeting `DfltFmt.wf` satisfies `Format.Lawful`. The inserted turn
  is read off the front of a stream (`unlayoutD`); a lowering without it never starts with it
  (`no_dflt_prefix`): its first turn would have to be a system message with the default text
  (the stream is cut at the footer token, which neither contains), which lowering makes the
  inserted turn where nothing follows the turn's footer, and which the text after the turn
  tells apart elsewhere (nothing after a turn starts with text: `TaggedFmt.appendable`).
* `kimiK2_wf`, `kimiK2Thinking_wf`, `kimiK2_lawful`, `kimiK2Thinking_lawful`: Kimi K2-Instruct
  and K2-Thinking, by `decide` on their records.
-/

namespace Verified.Tagged

open Verified

section

variable {d : DfltFmt} (hd : d.wf = true)
include hd

theorem dwf_base : d.base.wf = true := by
  simp only [DfltFmt.wf, Bool.and_eq_true] at hd
  exact hd.1.1.1.1

theorem dwf_system : (headOf d.base .system).isSome = true := by
  simp only [DfltFmt.wf, Bool.and_eq_true] at hd
  exact hd.1.1.1.2

theorem dwf_tail : d.tail.isEmpty = true ∨ d.base.appendable = true := by
  simp only [DfltFmt.wf, Bool.and_eq_true, Bool.or_eq_true] at hd
  exact hd.1.1.2

theorem dwf_prompt : stripPrefix? (dfltSyms d) (promptSyms d.base) = none := by
  simp only [DfltFmt.wf, Bool.and_eq_true, Option.isNone_iff_eq_none] at hd
  exact hd.1.2

theorem dwf_eos : stripPrefix? (dfltSyms d) (eosSyms d.base) = none := by
  simp only [DfltFmt.wf, Bool.and_eq_true, Option.isNone_iff_eq_none] at hd
  exact hd.2

end

/-- The system header's chunk with the default text. -/
@[expose] def dfltChunk (d : DfltFmt) : List Sym :=
  partsSyms ((headOf d.base .system).getD []) ++ lit d.text

theorem dfltSyms_eq (d : DfltFmt) :
    dfltSyms d = dfltChunk d ++ .ctrl d.base.endTurn :: (lit d.base.footTail ++ lit d.tail) := by
  simp [dfltSyms, dfltItems, dfltChunk, syms_headItems, syms_footItems, txt, Piece.syms, lit]

theorem append_ctrl_cancel {t : Token} : ∀ {a a' b b' : List Sym}, Sym.ctrl t ∉ a →
    Sym.ctrl t ∉ a' → a ++ .ctrl t :: b = a' ++ .ctrl t :: b' → a = a' ∧ b = b'
  | [], [], _, _, _, _, h => by simpa using h
  | [], x :: a', _, _, _, h', h => by
    simp only [List.nil_append, List.cons_append, List.cons.injEq] at h
    exact absurd (h.1 ▸ List.mem_cons_self) h'
  | x :: a, [], _, _, h, _, h' => by
    simp only [List.nil_append, List.cons_append, List.cons.injEq] at h'
    exact absurd (h'.1 ▸ List.mem_cons_self) h
  | x :: a, y :: a', b, b', h, h', e => by
    simp only [List.cons_append, List.cons.injEq] at e
    obtain ⟨rfl, e⟩ := e
    obtain ⟨h1, h2⟩ := append_ctrl_cancel (fun m => h (List.mem_cons_of_mem _ m))
      (fun m => h' (List.mem_cons_of_mem _ m)) e
    exact ⟨by rw [h1], h2⟩

theorem readTurn_dfltChunk {d : DfltFmt} (hd : d.wf = true) :
    readTurn d.base (dfltChunk d) = some (.msg .system none (.text d.text) 0) := by
  obtain ⟨h, hh⟩ := Option.isSome_iff_exists.mp (dwf_system hd)
  have e := findSome?_heads (readBody d.base) (wf_heads (dwf_base hd)) (h := h) hh (lit d.text)
  simp only [readTurn, dfltChunk, hh, Option.getD_some]
  rw [e]
  unfold readBody
  cases d.base.think with
  | none => exact readPlain_lit _ _ _
  | some ab => exact readPlain_lit _ _ _

/-- A layout whose first turn is not the inserted turn's twin never starts with the inserted
turn. -/
theorem no_dflt_prefix {d : DfltFmt} (hd : d.wf = true) (q : TConv)
    (hfit : ∀ t ∈ q.turns, t.fits d.base) (ht : textOnly (layout d.base q) = true)
    (hfirst : ∀ t ∈ q.turns.head?, d.tail = [] → t.erase ≠ .msg .system none (.text d.text) 0) :
    stripPrefix? (dfltSyms d) (syms (layout d.base q)) = none := by
  cases hs : stripPrefix? (dfltSyms d) (syms (layout d.base q)) with
  | none => rfl
  | some r =>
    exfalso
    have e := stripPrefix?_eq_some hs
    obtain ⟨turns, p⟩ := q
    cases turns with
    | nil =>
      rw [syms_layout] at e hs
      simp only [List.flatMap_nil, List.nil_append] at e hs
      cases p with
      | some o => rw [finOf, dwf_prompt hd] at hs; cases hs
      | none => rw [finOf, dwf_eos hd] at hs; cases hs
    | cons t ts =>
      have hft := hfit t List.mem_cons_self
      have htt := textOnly_turn ht t List.mem_cons_self
      obtain ⟨hr, hc⟩ := readTurn_chunk (dwf_base hd) hft htt
      rw [syms_layout, List.flatMap_cons, syms_turnItems, dfltSyms_eq] at e
      simp only [List.append_assoc, List.cons_append] at e
      have hA : Sym.ctrl d.base.endTurn ∉ dfltChunk d := by
        simp only [dfltChunk, List.mem_append, not_or]
        exact ⟨end_not_mem_head (dwf_base hd) _, not_ctrl_mem_lit _ _⟩
      obtain ⟨e1, e2⟩ := append_ctrl_cancel hc hA e
      have htw : t.erase = .msg .system none (.text d.text) 0 := by
        have := readTurn_dfltChunk hd
        rw [← e1, hr] at this
        exact Option.some.inj this
      rw [List.append_cancel_left_eq] at e2
      rcases dwf_tail hd with hte | ha
      · exact hfirst t (by simp) (List.isEmpty_iff.mp hte) htw
      · -- the text after the turn starts with a character, what follows a turn does not
        cases htl : d.tail with
        | nil => exact hfirst t (by simp) htl htw
        | cons c cs =>
          rw [htl] at e2
          have hh : HeadNotCh (ts.flatMap (fun t => syms (turnItems d.base t)) ++ finOf d.base p) := by
            cases ts with
            | cons u us =>
              rw [List.flatMap_cons, List.append_assoc]
              exact headNotCh_append (headNotCh_turn ha (hfit u (by simp))) fun he => by
                rw [syms_turnItems] at he
                simp at he
            | nil =>
              simp only [List.flatMap_nil, List.nil_append]
              cases p with
              | some _ => exact headNotCh_prompt ha
              | none =>
                have heos : d.base.eos = none := by
                  simp only [TaggedFmt.appendable, Bool.and_eq_true,
                    Option.isNone_iff_eq_none] at ha
                  exact ha.1
                intro x hx
                simp [finOf, eosSyms, eosItems_of_none heos] at hx
          rw [e2] at hh
          exact absurd (hh (.ch c) (by simp [lit])) (by simp [Sym.isCh])

/-! ## Lowering -/

theorem erase_of_owner {t : TTurn} (h : t.owner = 0) : t.erase = t := by
  cases t with
  | msg r th p o => simp only [TTurn.owner] at h; subst h; rfl
  | sampled ts o => simp only [TTurn.owner] at h; subst h; rfl

/-- What `lowerD` writes: the structure's lowering, or it without its first turn (the user's
system message that is the inserted turn); and without the inserted turn, a first turn that is
not its twin where nothing follows the turn's footer. -/
theorem lowerD_spec {d : DfltFmt} {c : Conversation} {q : DConv} (h : lowerD d c = some q) :
    (∀ t ∈ q.conv.turns, t.fits d.base) ∧
      (q.dflt = false → ∀ t ∈ q.conv.turns.head?, d.tail = [] →
        t.erase ≠ .msg .system none (.text d.text) 0) := by
  unfold lowerD at h
  obtain ⟨l, hl, rfl⟩ := Option.map_eq_some_iff.mp h
  have hfit := lower_fits hl
  obtain ⟨-, ts, hts, hl'⟩ := lower_shape hl
  rcases c with ⟨ms, tools, g⟩
  cases ms with
  | nil =>
    simp only [lowerMsgs, Option.some.injEq] at hts
    subst hts hl'
    exact ⟨hfit, fun _ t ht => by simp at ht⟩
  | cons m ms =>
    simp only
    split
    · exact ⟨hfit, fun h => by cases h⟩
    · split
      · refine ⟨fun t ht => hfit t (List.mem_of_mem_tail ht), fun h => by cases h⟩
      · rename_i hne
        refine ⟨hfit, fun _ t ht htl he => hne ?_⟩
        obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp hts
        obtain ⟨ts', -, rfl⟩ := Option.map_eq_some_iff.mp hr
        subst hl'
        simp only [List.head?_cons, Option.mem_def, Option.some.injEq] at ht
        subst ht
        have ho := (lowerMsg_spec h0).1
        rw [erase_of_owner ho] at he
        simp [htl, he, dfltTwin]

theorem textOnly_append {a b : List Item} (h : textOnly (a ++ b) = true) :
    textOnly a = true ∧ textOnly b = true := by
  simpa [textOnly, List.all_append] using h

/-- `unlayoutD` inverts `layoutD` (owners erased) on every text-only layout of a lowering. -/
theorem unlayoutD_layoutD {d : DfltFmt} (hd : d.wf = true) (c : Conversation) (q : DConv)
    (hl : lowerD d c = some q) (ht : textOnly (layoutD d q) = true) :
    unlayoutD d (syms (layoutD d q)) = some q.erase := by
  obtain ⟨hfit, hfirst⟩ := lowerD_spec hl
  have ht' := (textOnly_append ht).2
  have hu := unlayout_layout (dwf_base hd) q.conv hfit ht'
  obtain ⟨b, conv⟩ := q
  cases b with
  | true =>
    simp only [layoutD, if_true, syms_append, unlayoutD, dfltSyms, stripPrefix?_append]
    simp only [dfltSyms] at hu
    rw [hu]
    rfl
  | false =>
    have hn := no_dflt_prefix hd conv hfit ht' (hfirst rfl)
    simp only [layoutD, Bool.false_eq_true, if_false, List.nil_append, unlayoutD, hn, hu]
    rfl

/-- What `unlayoutD` returns lays out to its input. -/
theorem layoutD_unlayoutD {d : DfltFmt} (hd : d.wf = true) (s : List Sym) (q : DConv)
    (h : unlayoutD d s = some q) : syms (layoutD d q) = s := by
  unfold unlayoutD at h
  cases hs : stripPrefix? (dfltSyms d) s with
  | some r =>
    rw [hs] at h
    obtain ⟨conv, hc, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [layoutD, if_true, syms_append, layout_unlayout (dwf_base hd) r conv hc]
    exact (stripPrefix?_eq_some hs).symm
  | none =>
    rw [hs] at h
    obtain ⟨conv, hc, rfl⟩ := Option.map_eq_some_iff.mp h
    simp only [layoutD, Bool.false_eq_true, if_false, List.nil_append]
    exact layout_unlayout (dwf_base hd) s conv hc

theorem ctrl_mem_dflt {d : DfltFmt} {t : Token} (h : Sym.ctrl t ∈ dfltSyms d) :
    t ∈ ctrlToks d.base := by
  rw [dfltSyms_eq] at h
  simp only [dfltChunk, List.mem_append, List.mem_cons] at h
  rcases h with (h | h) | h | h | h
  · exact ctrl_mem_head h
  · exact absurd h (not_ctrl_mem_lit _ _)
  · cases h
    simp [ctrlToks]
  · exact absurd h (not_ctrl_mem_lit _ _)
  · exact absurd h (not_ctrl_mem_lit _ _)

/-- A layout places only reserved control tokens. -/
theorem ctrl_reservedD {d : DfltFmt} (hd : d.wf = true) (q : DConv) :
    ∀ t ∈ ctrls (syms (layoutD d q)), isReserved d.base.reserved t = true := by
  intro t ht
  simp only [ctrls, List.mem_filterMap] at ht
  obtain ⟨x, hx, hxt⟩ := ht
  cases x with
  | ctrl t' =>
    simp only [Option.some.injEq] at hxt
    subst hxt
    have hm : t' ∈ ctrlToks d.base := by
      simp only [layoutD, syms_append, List.mem_append] at hx
      rcases hx with hx | hx
      · split at hx
        · exact ctrl_mem_dflt hx
        · simp at hx
      · exact ctrl_mem_layout hx
    simpa [isReserved] using wf_reserved (dwf_base hd) _ hm
  | ch _ => simp at hxt
  | tok _ => simp at hxt

theorem syms_layoutD_erase (d : DfltFmt) (q : DConv) :
    syms (layoutD d q.erase) = syms (layoutD d q) := by
  simp only [layoutD, DConv.erase, syms_append, syms_layout_erase]

/-- Every entry with a default system turn meeting `wf` is lawful: its renders parse back (up
to owners; the inserted turn reads back as the template's, not a message), parsing is sound
and injective, and no text forges a control token. -/
theorem lawfulD (d : DfltFmt) (hd : d.wf = true) : (formatD d).Lawful :=
  ⟨fun c q hl ht => unlayoutD_layoutD hd c q hl ht, layoutD_unlayoutD hd, ctrl_reservedD hd,
    syms_layoutD_erase d⟩

/-! ## Kimi K2-Instruct and K2-Thinking -/

theorem kimiK2_wf : kimiK2.wf = true := by decide

theorem kimiK2Thinking_wf : kimiK2Thinking.wf = true := by decide

/-- Kimi K2-Instruct is lawful. -/
theorem kimiK2_lawful : (formatD kimiK2).Lawful := lawfulD kimiK2 kimiK2_wf

/-- Kimi K2-Thinking is lawful. -/
theorem kimiK2Thinking_lawful : (formatD kimiK2Thinking).Lawful :=
  lawfulD kimiK2Thinking kimiK2Thinking_wf

end Verified.Tagged

end
