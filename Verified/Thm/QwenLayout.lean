module

public import Verified.Spec.Qwen
public import Verified.Thm.Format
public import Verified.Thm.Items

public section

/-!
# Layout lemmas of the Qwen family

The items and symbols of a Qwen layout: every turn starts with `<|im_start|>`
(`syms_turnItems`, `head_layout`), where an item comes from (`mem_layout`), the cells of a
sampled turn (`encode_sampled`, `encode_prefix`), every control token placed is reserved
(`ctrls_layout`), and owners never reach the symbols (`syms_layout_erase`).
-/

namespace Verified.Qwen

open Verified

/-! ## Items and symbols -/

section Items

variable (f : QwenFmt)

/-- The annotation of a payload item. -/
theorem pay_ann (p : LPay) (o : Nat) (l : Bool) : (pay p o l).ann = ⟨o, l⟩ := by
  cases p <;> rfl

/-- The symbols of a payload item do not depend on its annotation. -/
theorem pay_piece (p : LPay) (o o' : Nat) (l l' : Bool) : (pay p o l).piece = (pay p o' l').piece := by
  cases p <;> rfl

/-- The symbols of a turn start with `<|im_start|>`. -/
theorem syms_turnItems (t : QTurn) : ∃ r, syms (turnItems f t) = .ctrl f.ids.imStart :: r := by
  cases t <;> simp [turnItems, promptItems, ctl, Piece.syms]

/-- The symbols of the generation prompt start with `<|im_start|>`. -/
theorem syms_promptItems (o : Nat) : ∃ r, syms (promptItems f o) = .ctrl f.ids.imStart :: r := by
  simp [promptItems, ctl, Piece.syms]

/-- A run of turns followed by items that start with a non-character starts with one. -/
theorem head_flatMap_turnItems (ts : List QTurn) (rest : List Item)
    (h : ∀ x ∈ (syms rest).head?, x.isCh = false) :
    ∀ x ∈ (syms (ts.flatMap (turnItems f) ++ rest)).head?, x.isCh = false := by
  cases ts with
  | nil => simpa using h
  | cons t ts =>
    obtain ⟨r, hr⟩ := syms_turnItems f t
    simp [List.flatMap_cons, syms_append, hr, Sym.isCh]

/-- A verbatim item and a footer start with a non-character. -/
theorem head_toks_footer (ts : List Token) (a : Ann) (o : Nat) (l : Bool) (rest : List Item) :
    ∀ x ∈ (syms (⟨.toks ts, a⟩ :: (footer f o l ++ rest))).head?, x.isCh = false := by
  cases ts <;> simp [footer, ctl, Piece.syms, Sym.isCh]

/-- A footer starts with a non-character. -/
theorem head_footer (o : Nat) (l : Bool) : ∀ x ∈ (syms (footer f o l)).head?, x.isCh = false := by
  simp [footer, ctl, Piece.syms, Sym.isCh]

/-- The cells of a verbatim token item. -/
theorem encodeItems_toks (c : Codec) (ts : List Token) (a : Ann) :
    encodeItems c [⟨.toks ts, a⟩] = ts.map (fun t => ⟨t, .toks, a.owner, a.learn⟩) := by
  have hs : ∀ us : List Token, splitBy (fun x : Sym × Ann => !x.1.isCh)
      (us.map fun t => (Sym.tok t, a)) = ([], us.map fun t => ((Sym.tok t, a), [])) := by
    intro us
    induction us with
    | nil => rfl
    | cons u us ih =>
      rw [List.map_cons, splitBy_cons_of_true _ _ _ rfl, ih]
      rfl
  have ha : asyms [⟨.toks ts, a⟩] = ts.map fun t => (Sym.tok t, a) := by
    simp [asyms, Piece.syms]
  have he : encodeRunCells c [] = [] := rfl
  simp only [encodeItems, ha, hs, he, List.nil_append]
  clear ha hs
  induction ts with
  | nil => rfl
  | cons u us ih =>
    simp only [List.map_cons, List.flatMap_cons, he, ih]
    rfl

/-- Splitting a layout at a list of turns. -/
theorem layout_append (ts us : List QTurn) (p : Option Nat) :
    layout f ⟨ts ++ us, p⟩ = layout f ⟨ts, none⟩ ++ layout f ⟨us, p⟩ := by
  simp [layout]

/-- Where an item of a layout comes from. -/
theorem mem_layout {l : QConv} {it : Item} (h : it ∈ layout f l) :
    (∃ t ∈ l.turns, it ∈ turnItems f t) ∨ ∃ o, it ∈ promptItems f o := by
  unfold layout at h
  rcases List.mem_append.mp h with h | h
  · exact Or.inl (List.mem_flatMap.mp h)
  · split at h
    · exact Or.inr ⟨_, h⟩
    · cases h

/-- A layout starts with a control token (or is empty). -/
theorem head_layout (l : QConv) : ∀ x ∈ (syms (layout f l)).head?, x.isCh = false := by
  unfold layout
  apply head_flatMap_turnItems
  cases l.prompt with
  | none => simp
  | some o =>
    obtain ⟨r, hr⟩ := syms_promptItems f o
    simp [hr, Sym.isCh]

/-- A layout is its turns, then its generation prompt. -/
theorem layout_eq (ts : List QTurn) (p : Option Nat) :
    layout f ⟨ts, p⟩ = ts.flatMap (turnItems f) ++ layout f ⟨[], p⟩ := by
  simp [layout]

/-- The cells of a layout followed by a sampled turn's tokens and footer. -/
theorem encode_sampled (c : Codec) (X : List Item) (ts : List Token) (o : Nat) :
    encodeItems c (X ++ ([⟨.toks ts, ⟨o, true⟩⟩] ++ footer f o true)) =
      encodeItems c X ++ ts.map (fun t => ⟨t, .toks, o, true⟩) ++
        encodeItems c (footer f o true) := by
  have h1 : ∀ x ∈ (syms ([⟨.toks ts, ⟨o, true⟩⟩] ++ footer f o true)).head?, x.isCh = false := by
    cases ts <;> simp [footer, ctl, Piece.syms, Sym.isCh]
  rw [encodeItems_append c X _ h1, encodeItems_append c [_] _ (head_footer f o true),
    encodeItems_toks, List.append_assoc]

/-- A layout is a prefix of the cells of the layout followed by a sampled turn and more. -/
theorem encode_prefix (c : Codec) (X R : List Item) (ts : List Token) (a : Ann) (o : Nat)
    (l : Bool) : encodeItems c X <+: encodeItems c (X ++ ([⟨.toks ts, a⟩] ++ (footer f o l ++ R))) := by
  have h1 : ∀ x ∈ (syms ([⟨.toks ts, a⟩] ++ (footer f o l ++ R))).head?, x.isCh = false := by
    cases ts <;> simp [footer, ctl, Piece.syms, Sym.isCh]
  rw [encodeItems_append c X _ h1]
  exact List.prefix_append _ _

end Items

/-! ## Control tokens and owners of the symbols -/

section Ctrl

variable (f : QwenFmt)

theorem ctrls_map_ch (cs : Chars) : ctrls (cs.map Sym.ch) = [] := ctrls_lit cs

theorem ctrls_map_tok (ts : List Token) : ctrls (ts.map Sym.tok) = [] := by
  induction ts with
  | nil => rfl
  | cons t ts ih => exact ih

theorem ctrls_ctrl (t : Token) : ctrls [Sym.ctrl t] = [t] := rfl

theorem ctrls_pay (p : LPay) (o : Nat) (l : Bool) : ctrls (pay p o l).piece.syms = [] := by
  cases p
  · exact ctrls_map_ch _
  · exact ctrls_map_tok _

/-- The control tokens of the symbols of some items come from their items. -/
theorem mem_ctrls_syms {items : List Item} {x : Token} (h : x ∈ ctrls (syms items)) :
    ∃ it ∈ items, x ∈ ctrls it.piece.syms := by
  induction items with
  | nil => simp [syms, ctrls] at h
  | cons it items ih =>
    rw [syms_cons, ctrls_append] at h
    rcases List.mem_append.mp h with h | h
    · exact ⟨it, List.mem_cons_self, h⟩
    · obtain ⟨it', hit', h'⟩ := ih h
      exact ⟨it', List.mem_cons_of_mem _ hit', h'⟩

theorem imStart_mem : f.ids.imStart ∈ f.ids.reserved := by simp [QwenIds.reserved]
theorem imEnd_mem : f.ids.imEnd ∈ f.ids.reserved := by simp [QwenIds.reserved]
theorem callOpen_mem : f.ids.callOpen ∈ f.ids.reserved := by simp [QwenIds.reserved]
theorem callClose_mem : f.ids.callClose ∈ f.ids.reserved := by simp [QwenIds.reserved]

theorem think_mem {a b : Token} (h : f.ids.think = some (a, b)) :
    a ∈ f.ids.reserved ∧ b ∈ f.ids.reserved := by
  simp [QwenIds.reserved, h]

theorem resp_mem {a b : Token} (h : f.ids.toolResponse = some (a, b)) :
    a ∈ f.ids.reserved ∧ b ∈ f.ids.reserved := by
  simp [QwenIds.reserved, h]

/-- The control tokens an item may carry are reserved. -/
@[expose] def CtlOk (it : Item) : Prop := ∀ x ∈ ctrls it.piece.syms, x ∈ f.ids.reserved

theorem ctlOk_ctl {t : Token} (h : t ∈ f.ids.reserved) (o : Nat) (l : Bool) :
    CtlOk f (ctl t o l) := by
  simp [CtlOk, ctl, Piece.syms, ctrls_ctrl, h]

theorem ctlOk_txt (cs : Chars) (o : Nat) (l : Bool) : CtlOk f (txt cs o l) := by
  simp [CtlOk, txt, Piece.syms, ctrls_map_ch]

theorem ctlOk_pay (p : LPay) (o : Nat) (l : Bool) : CtlOk f (pay p o l) := by
  simp [CtlOk, ctrls_pay]

theorem ctlOk_callsItems (s : Bool) (o : Nat) (ks : List Call) :
    ∀ it ∈ callsItems f s o ks, CtlOk f it := by
  induction ks generalizing s with
  | nil => simp [callsItems]
  | cons k ks ih =>
    simp only [callsItems, fa_append]
    refine ⟨?_, ih true⟩
    unfold callItems
    split <;> simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, callOpen_mem, callClose_mem]

theorem ctlOk_resultItems (r : LPay × Nat) : ∀ it ∈ resultItems f r, CtlOk f it := by
  unfold resultItems
  split
  · rename_i a b h
    simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, (resp_mem f h).1, (resp_mem f h).2]
  · simp [or_imp, forall_and, ctlOk_txt, ctlOk_pay]

theorem ctlOk_promptItems (o : Nat) : ∀ it ∈ promptItems f o, CtlOk f it := by
  cases hth : f.ids.think with
  | none => simp [promptItems, hth, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem]
  | some ab =>
    obtain ⟨a, b⟩ := ab
    cases hp : f.promptThink <;> cases he : f.enableThinking <;>
      simp [promptItems, hth, hp, he, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem,
        (think_mem f hth).1, (think_mem f hth).2]

theorem ctlOk_turnItems (t : QTurn) : ∀ it ∈ turnItems f t, CtlOk f it := by
  cases t with
  | plain r p o =>
    simp [turnItems, footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, imStart_mem,
      imEnd_mem]
  | toolsSystem s ts o =>
    cases s <;> simp [turnItems, footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay,
      imStart_mem, imEnd_mem, callOpen_mem, callClose_mem]
  | assistant th c s ks o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨⟨⟨?_, ?_⟩, ?_⟩, ctlOk_callsItems f s o ks⟩, ?_⟩
    · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem]
    · split
      · rename_i a b _ h
        simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, ctlOk_pay, (think_mem f h).1,
          (think_mem f h).2]
      · simp
    · simp [ctlOk_pay]
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]
  | toolGroup rs =>
    simp only [turnItems, fa_append]
    refine ⟨⟨?_, fun it h => ?_⟩, ?_⟩
    · simp [or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imStart_mem]
    · obtain ⟨r, -, h⟩ := List.mem_flatMap.mp h
      exact ctlOk_resultItems f r it h
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]
  | sampled ts o =>
    simp only [turnItems, fa_append]
    refine ⟨⟨ctlOk_promptItems f o, ?_⟩, ?_⟩
    · simp [CtlOk, Piece.syms, ctrls_map_tok]
    · simp [footer, or_imp, forall_and, ctlOk_txt, ctlOk_ctl, imEnd_mem]

/-- Every control token of a layout is reserved. -/
theorem ctrls_layout (l : QConv) : ∀ t ∈ ctrls (syms (layout f l)), t ∈ f.ids.reserved := by
  intro t ht
  obtain ⟨it, hit, h⟩ := mem_ctrls_syms ht
  rcases mem_layout f hit with ⟨u, -, hu⟩ | ⟨o, hu⟩
  · exact ctlOk_turnItems f u it hu t h
  · exact ctlOk_promptItems f o it hu t h

/-- The symbols of a payload. -/
@[expose] def payPiece : LPay → Piece
  | .text cs => .text cs
  | .toks ts => .toks ts

theorem pay_piece' (p : LPay) (o : Nat) (l : Bool) : (pay p o l).piece = payPiece p := by
  cases p <;> rfl

/-- The symbols of the calls of a message. -/
@[expose] def callsSyms (s : Bool) (ks : List Call) : List Sym := syms (callsItems f s 0 ks)

theorem syms_callsItems (s : Bool) (o : Nat) (ks : List Call) :
    syms (callsItems f s o ks) = callsSyms f s ks := by
  unfold callsSyms
  induction ks generalizing s with
  | nil => rfl
  | cons k ks ih =>
    simp only [callsItems, syms_append, ih]
    congr 1
    unfold callItems
    split <;> simp [ctl, txt]

/-- The symbols of one tool result. -/
@[expose] def resultSyms (p : LPay) : List Sym := syms (resultItems f (p, 0))

theorem syms_resultItems (r : LPay × Nat) : syms (resultItems f r) = resultSyms f r.1 := by
  unfold resultSyms resultItems
  split <;> simp [ctl, txt, pay_piece']

/-- The symbols of the generation prompt. -/
@[expose] def promptSyms : List Sym := syms (promptItems f 0)

theorem syms_promptItems' (o : Nat) : syms (promptItems f o) = promptSyms f := by
  unfold promptSyms promptItems
  split <;> simp [ctl, txt]

theorem syms_turnItems_erase (t : QTurn) : syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t with
  | plain r p o => simp [QTurn.erase, turnItems, footer, ctl, txt, pay_piece']
  | toolsSystem s ts o =>
    cases s <;> simp [QTurn.erase, turnItems, footer, ctl, txt, pay_piece', syms,
      List.flatMap_map]
  | assistant th c s ks o =>
    simp only [QTurn.erase, turnItems, syms_append, syms_callsItems]
    split <;> simp [footer, ctl, txt, pay_piece']
  | toolGroup rs =>
    simp [QTurn.erase, turnItems, footer, ctl, txt, syms_flatMap, syms_resultItems,
      List.flatMap_map]
  | sampled ts o => simp [QTurn.erase, turnItems, footer, ctl, txt, syms_promptItems']

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_layout_erase (l : QConv) : syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨ts, p⟩ := l
  simp only [QConv.erase, layout, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItems_erase]
  cases p <;> simp [syms_promptItems']

end Ctrl

end Verified.Qwen

end
