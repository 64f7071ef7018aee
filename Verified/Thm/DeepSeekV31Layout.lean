module

public import Verified.Spec.DeepSeekV31
public import Verified.Thm.DeepSeekRound

public section

/-!
# DeepSeek-V3.1: layout lemmas and what lowering guarantees

* Every control token a layout places is one of the format's (`ctrls_layoutV`), and owners
  never reach the symbols (`syms_layoutV_erase`).
* Lowering writes the turns in an order the reader can follow (`lowerMsgs_chain`): a header
  exactly after a user message, no assistant turn before the first user or tool message
  (`chain`), and the generation prompt only after a user message.
* A text-only layout has text payloads only (`textual_of_textOnlyV`).
-/

namespace Verified.DeepSeekV31

open Verified Verified.DeepSeek

variable (f : V31Fmt)

/-- The DeepSeek-R1 format over the same ids (its item lemmas are reused). -/
@[expose] def V31Fmt.ds : DsFmt := ⟨f.ids, .exact, false, true, true⟩

/-! ## Control tokens -/

theorem ctlOk_header (o : Nat) : ∀ it ∈ header f o, CtlOk f.ds it := by
  unfold header
  cases f.openThink <;> simp [or_imp, forall_and, ctlOk_ctl, DsIds.ctrls, V31Fmt.ds]

theorem ctlOk_genItemsV (o : Nat) : ∀ it ∈ genItems f o, CtlOk f.ds it := by
  unfold genItems
  cases f.thinking
  · exact ctlOk_header f o
  · simp [or_imp, forall_and, ctlOk_ctl, DsIds.ctrls, V31Fmt.ds]

theorem ctlOk_openItems (h : Bool) (o : Nat) : ∀ it ∈ openItems f h o, CtlOk f.ds it := by
  cases h
  · simp [openItems]
  · exact ctlOk_header f o

theorem ctlOk_turnItemsV (t : VTurn) : ∀ it ∈ turnItems f t, CtlOk f.ds it := by
  cases t with
  | user p o => simp [turnItems, or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls, V31Fmt.ds]
  | answer h c o =>
    simp only [turnItems, fa_append]
    exact ⟨ctlOk_openItems f h o,
      by simp [or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls, V31Fmt.ds]⟩
  | calls h c ks o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨⟨ctlOk_openItems f h o,
      by simp [or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls, V31Fmt.ds]⟩, ?_⟩,
      by simp [or_imp, forall_and, ctlOk_ctl, DsIds.ctrls, V31Fmt.ds]⟩
    intro it hit
    obtain ⟨k, -, hk⟩ := List.mem_flatMap.mp hit
    simp only [callItems, List.mem_cons, List.not_mem_nil, or_false] at hk
    rcases hk with rfl | rfl | rfl | rfl | rfl
    · exact ctlOk_ctl f.ds (by simp [DsIds.ctrls, V31Fmt.ds]) _ _
    · exact ctlOk_txt f.ds _ _ _
    · exact ctlOk_ctl f.ds (by simp [DsIds.ctrls, V31Fmt.ds]) _ _
    · exact ctlOk_txt f.ds _ _ _
    · exact ctlOk_ctl f.ds (by simp [DsIds.ctrls, V31Fmt.ds]) _ _
  | result p o => simp [turnItems, or_imp, forall_and, ctlOk_ctl, ctlOk_pay, DsIds.ctrls, V31Fmt.ds]
  | sampled h ts o =>
    simp only [turnItems, fa_append]
    refine ⟨?_, ?_⟩
    · cases h
      · simp
      · exact ctlOk_genItemsV f o
    · intro it hit
      simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
      rcases hit with rfl | rfl
      · simp [CtlOk, Piece.syms, Qwen.ctrls_map_tok]
      · exact ctlOk_ctl f.ds (by simp [DsIds.ctrls, V31Fmt.ds]) _ _

/-- Every control token of a layout is one of the format's control tokens. -/
theorem ctrls_layoutV (q : VConv) : ∀ t ∈ ctrls (syms (layout f q)), t ∈ f.ids.ctrls := by
  intro t ht
  obtain ⟨it, hit, h⟩ := Qwen.mem_ctrls_syms ht
  have hok : CtlOk f.ds it := by
    unfold layout at hit
    rcases List.mem_append.mp hit with hit | hit
    · rcases List.mem_append.mp hit with hit | hit
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at hit
        rcases hit with rfl | rfl
        · exact ctlOk_ctl f.ds (by simp [DsIds.ctrls, V31Fmt.ds]) _ _
        · exact ctlOk_pay f.ds _ _ _
      · obtain ⟨u, -, hu⟩ := List.mem_flatMap.mp hit
        exact ctlOk_turnItemsV f u it hu
    · split at hit
      · exact ctlOk_genItemsV f _ it hit
      · cases hit
  exact hok t h

/-! ## Owners never reach the symbols -/

/-- The piece of a payload item. -/
@[expose] def payPiece : LPay → Piece
  | .text cs => .text cs
  | .toks ts => .toks ts

@[simp] theorem pay_piece (p : LPay) (o : Nat) (l : Bool) : (pay p o l).piece = payPiece p := by
  cases p <;> rfl

theorem syms_of_pieces : ∀ {a b : List Item}, a.map Item.piece = b.map Item.piece →
    syms a = syms b
  | [], [], _ => rfl
  | x :: a, y :: b, h => by
    simp only [List.map_cons, List.cons.injEq] at h
    rw [syms_cons, syms_cons, h.1, syms_of_pieces h.2]
  | [], _ :: _, h => by simp at h
  | _ :: _, [], h => by simp at h

theorem pieces_genItems (o : Nat) : (genItems f o).map Item.piece = (genItems f 0).map Item.piece := by
  unfold genItems header
  cases f.thinking <;> cases f.openThink <;> simp [ctl]

theorem pieces_turnItems_erase (t : VTurn) :
    (turnItems f t.erase).map Item.piece = (turnItems f t).map Item.piece := by
  cases t with
  | user p o => simp [turnItems, VTurn.erase, ctl]
  | answer h c o =>
    cases h <;> simp [turnItems, VTurn.erase, openItems, header, ctl] <;>
      cases f.openThink <;> simp
  | calls h c ks o =>
    cases h <;> simp [turnItems, VTurn.erase, openItems, header, ctl, callItems, txt,
      List.map_flatMap] <;> cases f.openThink <;> simp
  | result p o => simp [turnItems, VTurn.erase, ctl]
  | sampled h ts o =>
    cases h
    · simp [turnItems, VTurn.erase, ctl]
    · simp only [turnItems, VTurn.erase, ↓reduceIte, List.map_append, pieces_genItems f o]
      simp [ctl, pieces_genItems f 0]

theorem syms_genItems_owner (o : Nat) : syms (genItems f o) = syms (genItems f 0) :=
  syms_of_pieces (pieces_genItems f o)

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_layoutV_erase (q : VConv) : syms (layout f q.erase) = syms (layout f q) := by
  obtain ⟨s, so, ts, p⟩ := q
  simp only [layout, VConv.erase, syms_append, syms_flatMap, List.flatMap_map]
  congr 1
  · congr 1
    · simp [ctl]
    · congr 1
      funext t
      exact syms_of_pieces (pieces_turnItems_erase f t)
  · cases p with
    | none => rfl
    | some o => simp only [Option.map_some]; exact (syms_genItems_owner f o).symm

/-! ## The order lowering writes turns in -/

/-- The previous message after a turn. -/
@[expose] def VTurn.step : VTurn → Last
  | .user _ _ => .user
  | .result _ _ => .tool
  | _ => .asst

/-- A turn may follow the previous message `l`: an assistant turn never first, and headed
exactly after a user message. -/
@[expose] def fits (l : Last) : VTurn → Bool
  | .user _ _ => true
  | .result _ _ => true
  | .answer h _ _ => !l.isStart && h == l.isUser
  | .calls h _ _ _ => !l.isStart && h == l.isUser
  | .sampled h _ _ => !l.isStart && h == l.isUser

/-- Every turn fits the message before it. -/
@[expose] def chain : Last → List VTurn → Bool
  | _, [] => true
  | l, t :: ts => fits l t && chain t.step ts

/-- The previous message after the turns. -/
@[expose] def final : Last → List VTurn → Last
  | l, [] => l
  | _, t :: ts => final t.step ts

/-- A message's turn fits the previous message, and makes its own the previous one. -/
theorem msgStep_fits {l : Last} {i : Nat} {m : Message} {t : VTurn} {l' : Last}
    (h : msgStep l i m = some (some (t, l'))) : fits l t = true ∧ l' = t.step := by
  unfold msgStep at h
  split at h
  · cases h
  · cases h
  · obtain ⟨p, -, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    exact ⟨rfl, rfl⟩
  · obtain ⟨p, -, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    exact ⟨rfl, rfl⟩
  · split at h
    · cases h
    · rename_i hs
      simp only [Bool.not_eq_true] at hs
      obtain ⟨t', ht, h⟩ := Option.map_eq_some_iff.mp h
      cases h
      unfold asstTurn at ht
      split at ht
      · cases ht
        exact ⟨by simp [fits, hs], rfl⟩
      · obtain ⟨⟨r, c, ks⟩, -, ht⟩ := Option.map_eq_some_iff.mp ht
        subst ht
        cases ks <;> exact ⟨by simp [fits, hs], rfl⟩

/-- Lowering writes a chain, and returns the last message written. -/
theorem lowerMsgs_chain : ∀ (ms : List Message) (i : Nat) (l : Last) (ts : List VTurn) (l' : Last),
    lowerMsgs i l ms = some (ts, l') → chain l ts = true ∧ l' = final l ts
  | [], i, l, ts, l', h => by
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    exact ⟨rfl, rfl⟩
  | m :: ms, i, l, ts, l', h => by
    unfold lowerMsgs at h
    obtain ⟨x, hx, h⟩ := Option.bind_eq_some_iff.mp h
    rcases x with _ | ⟨t, l''⟩
    · exact lowerMsgs_chain ms _ _ _ _ h
    · obtain ⟨⟨ts', l3⟩, h1, h2⟩ := Option.map_eq_some_iff.mp h
      simp only [Prod.mk.injEq] at h2
      obtain ⟨rfl, rfl⟩ := h2
      obtain ⟨hf, rfl⟩ := msgStep_fits hx
      obtain ⟨c1, c2⟩ := lowerMsgs_chain ms _ _ _ _ h1
      exact ⟨by simp [chain, hf, c1], by simp [final, c2]⟩

/-! ## Text-only layouts -/

/-- A turn whose payloads are all text (hence not a sampled turn). -/
@[expose] def VTurn.textual : VTurn → Bool
  | .user p _ => isTextP p
  | .answer _ c _ => isTextP c
  | .calls _ c _ _ => isTextP c
  | .result p _ => isTextP p
  | .sampled _ _ _ => false

theorem textual_of_textOnlyV (t : VTurn) (h : textOnly (turnItems f t) = true) :
    t.textual = true := by
  cases t with
  | user p o => exact isTextP_of_mem h (o := o) (l := false) (by simp [turnItems])
  | answer hd c o => exact isTextP_of_mem h (o := o) (l := true) (by simp [turnItems])
  | calls hd c ks o => exact isTextP_of_mem h (o := o) (l := true) (by simp [turnItems])
  | result p o => exact isTextP_of_mem h (o := o) (l := false) (by simp [turnItems])
  | sampled hd ts o =>
    unfold textOnly at h
    have := List.all_eq_true.mp h ⟨.toks ts, ⟨o, true⟩⟩ (by simp [turnItems])
    simp [Piece.isToks] at this

end Verified.DeepSeekV31

end
