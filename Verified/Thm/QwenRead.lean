module

public import Verified.Thm.QwenParse
public import Verified.Thm.QwenLower

public section

/-!
# Reading Qwen layouts back: the round trip

Each readable turn with text payloads reads back to itself up to owners (`turn_read`), and so
does a whole layout (`layout_read`). A text-only layout has text payloads and no sampled turn
(`textTurn_of_textOnly`), so `unlayout` inverts `layout` on the text-only layout of every
lowered conversation (`unlayout_layout`).
-/

namespace Verified.Qwen

open Verified

/-- `'assistant\n'`, `'system\n'`, `'user'`: the role prefixes the reader tells apart. -/
local notation "tAsst" => ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n']
local notation "tSystem" => ['s', 'y', 's', 't', 'e', 'm', '\n']
local notation "tUser" => ['u', 's', 'e', 'r']

/-! ## Turns read back -/

section Read

variable (f : QwenFmt)

/-- A payload is text. -/
@[expose] def isText : LPay → Bool
  | .text _ => true
  | .toks _ => false

/-- The text of a payload. -/
@[expose] def textOf : LPay → Chars
  | .text cs => cs
  | .toks _ => []

/-- Every payload of a turn is text, and the turn is not a sampled turn. -/
@[expose] def textTurn : QTurn → Bool
  | .plain _ p _ => isText p
  | .toolsSystem s _ _ => s.all isText
  | .assistant th c _ _ _ => th.all isText && isText c
  | .toolGroup rs => rs.all fun r => isText r.1
  | .sampled _ _ => false

theorem eq_text_of_isText {p : LPay} (h : isText p = true) : p = .text (textOf p) := by
  cases p
  · rfl
  · cases h

theorem nn_ne : ['\n', '\n'] ≠ [] := by decide

theorem read_plain (hw : WfFacts f.ids) (r : PRole) (p : Chars) (o : Nat)
    (hok : turnOk f (.plain r (.text p) o) = true) :
    ∃ body, syms (turnItems f (.plain r (.text p) o)) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some (QTurn.plain r (.text p) o).erase := by
  refine ⟨lit (r.name ++ ['\n'] ++ p) ++ footerSyms f, ?_, ?_, ?_, ?_⟩
  · simp [turnItems, footer, footerSyms, ctl, txt, pay, Piece.syms, lit]
  · simp [lit, footerSyms, hw.se]
  · simp [footerSyms]
  · cases r with
    | user =>
      have h1 : stripPrefix? tAsst (PRole.name .user ++ ['\n'] ++ p) = none := by
        rw [List.append_assoc]
        exact asst_user _
      have h2 : stripPrefix? tSystem (PRole.name .user ++ ['\n'] ++ p) = none := by
        rw [List.append_assoc]
        exact sys_user _
      have h3 : stripPrefix? tUser (PRole.name .user ++ ['\n'] ++ p) = some (['\n'] ++ p) := by
        rw [List.append_assoc]
        exact stripPrefix?_append _ _
      rw [unlayoutTurn_user f (takeText_footer f) h1 h2 h3]
      unfold unlayoutUser
      cases hr : f.ids.toolResponse with
      | some ab => simp [stripPrefix?, QTurn.erase]
      | none =>
        cases hl : looksLikeResults p
        · simp [stripPrefix?, hl, QTurn.erase]
        · simp [turnOk, hr, payFree, textOk, hl] at hok
    | system =>
      have e : PRole.name .system ++ ['\n'] ++ p = tSystem ++ p := by
        rw [← sys_name]
        rfl
      rw [e, unlayoutTurn_sys f (takeText_footer f) (asst_sys p) (stripPrefix?_append _ _)]
      simp [unlayoutSystem, QTurn.erase]

theorem syms_tools (tools : List Chars) (o : Nat) :
    syms (tools.map fun j => txt ('\n' :: j) o false) = lit (tools.flatMap ('\n' :: ·)) := by
  induction tools with
  | nil => rfl
  | cons j js ih =>
    rw [List.map_cons, syms_cons, ih]
    simp [txt, Piece.syms, lit]

theorem flatMap_nl (j : Chars) : ∀ js : List Chars,
    (j :: js).flatMap ('\n' :: ·) = '\n' :: joinWith ['\n'] (j :: js)
  | [] => by simp [joinWith]
  | j2 :: js => by
    rw [List.flatMap_cons, flatMap_nl j2 js, joinWith_cons_of_ne_nil _ _ _ (List.cons_ne_nil _ _)]
    simp

theorem toolLines_nl (l : Chars) : toolLines ('\n' :: l) = some (splitChar '\n' l) := by
  simp [toolLines]

theorem toolLines_tools (tools : List Chars) (h : tools.all (fun j => !j.contains '\n') = true) :
    toolLines (tools.flatMap ('\n' :: ·)) = some tools := by
  cases tools with
  | nil => rfl
  | cons j js =>
    rw [flatMap_nl, toolLines_nl, Option.some.injEq]
    apply splitChar_joinWith _ _ (List.cons_ne_nil _ _)
    intro p hp hm
    have := List.all_eq_true.mp h p hp
    simp [hm] at this

theorem ctl_piece (t : Token) (o : Nat) (l : Bool) : (ctl t o l).piece = .ctrl t := rfl
theorem txt_piece (cs : Chars) (o : Nat) (l : Bool) : (txt cs o l).piece = .text cs := rfl

theorem read_toolsSystem (hw : WfFacts f.ids) (s : Option LPay) (tools : List Chars) (o : Nat)
    (hok : turnOk f (.toolsSystem s tools o) = true) (htx : s.all isText = true) :
    ∃ body, syms (turnItems f (.toolsSystem s tools o)) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some (QTurn.toolsSystem s tools o).erase := by
  simp only [turnOk, Bool.and_eq_true] at hok
  obtain ⟨hlines, hs⟩ := hok
  obtain ⟨S, hS1, hS2⟩ : ∃ S : Chars, syms (turnItems f (.toolsSystem s tools o)) =
      .ctrl f.ids.imStart :: (lit (tSystem ++
        (S ++ toolsIntro ++ tools.flatMap ('\n' :: ·) ++ toolsOutro)) ++ toolsTail f) ∧
      ∀ L, (stripSuffix? toolsOutro (S ++ toolsIntro ++ L ++ toolsOutro)).bind (fun y =>
        (splitFirst toolsIntro y).bind fun r => (toolLines r.2).bind fun ls =>
          if r.1 = [] then some (QTurn.toolsSystem none ls 0)
          else (stripSuffix? ['\n', '\n'] r.1).map fun sys =>
            QTurn.toolsSystem (some (.text sys)) ls 0) =
        (toolLines L).bind fun ls => some (.toolsSystem s ls 0) := by
    cases s with
    | none =>
      refine ⟨[], ?_, fun L => ?_⟩
      · simp [turnItems, syms_tools, ctl_piece, txt_piece, Piece.syms, lit, toolsTail,
          syms_footer, footerSyms]
      · rw [List.nil_append, stripSuffix?_append, Option.bind_some, splitFirst_sep_append,
          Option.bind_some]
        simp
    | some p =>
      obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨textOf p, eq_text_of_isText (by simpa using htx)⟩
      have hc : clearOf toolsIntro (c ++ ['\n', '\n']) = true := by
        simpa [payFree, textOk] using hs
      refine ⟨c ++ ['\n', '\n'], ?_, fun L => ?_⟩
      · simp [turnItems, syms_tools, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit,
          toolsTail, syms_footer, footerSyms]
      · rw [stripSuffix?_append, Option.bind_some, splitFirst_of_clearOf L hc, Option.bind_some]
        simp
  refine ⟨_, hS1, ?_, ?_, ?_⟩
  · simp [lit, toolsTail, footerSyms, hw.so, hw.sc, hw.se]
  · simp [toolsTail, footerSyms]
  · rw [unlayoutTurn_sys f rfl (asst_sys _) (stripPrefix?_append _ _)]
    have hne : toolsTail f ≠ footerSyms f := by
      intro h
      simp only [toolsTail, footerSyms, List.cons_append, List.cons.injEq, Sym.ctrl.injEq] at h
      exact hw.eo h.1.symm
    simp only [unlayoutSystem, hne, ↓reduceIte]
    rw [hS2, toolLines_tools tools hlines]
    rfl

theorem takeText_lit_ctrl (cs : Chars) (t : Token) (s : List Sym) :
    takeText (lit cs ++ .ctrl t :: s) = (cs, .ctrl t :: s) := takeText_lit_of _ _ rfl

theorem ctrl_not_mem_pay (t : Token) (p : LPay) (o : Nat) (l : Bool) :
    .ctrl t ∉ (pay p o l).piece.syms := by
  cases p <;> simp [pay, Piece.syms]

theorem read_assistant (hw : WfFacts f.ids) (th : Option LPay) (cs : Chars) (sep : Bool)
    (calls : List Call) (o : Nat) (hok : turnOk f (.assistant th (.text cs) sep calls o) = true)
    (htx : th.all isText = true) :
    ∃ body, syms (turnItems f (.assistant th (.text cs) sep calls o)) =
        .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some (QTurn.assistant th (.text cs) sep calls o).erase := by
  simp only [turnOk, Bool.and_eq_true] at hok
  obtain ⟨⟨⟨⟨h0, -⟩, h1⟩, h2⟩, h3⟩ := hok
  obtain ⟨x, rest, heq, htake, ⟨r, hhead⟩, hnS, hE, hcc⟩ :=
    contentCalls_read f hw cs sep calls o h1 h2 h3
  cases th with
  | none =>
    refine ⟨lit (tAsst ++ x) ++ rest, ?_, ?_, List.mem_append_right _ hE, ?_⟩
    · have e : syms (turnItems f (.assistant none (.text cs) sep calls o)) =
          .ctrl f.ids.imStart :: (lit tAsst ++
            (lit cs ++ (syms (callsItems f sep o calls) ++ footerSyms f))) := by
        simp [turnItems, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit, syms_footer]
      rw [e, heq, ← List.append_assoc, ← lit_append]
    · simp [lit, hnS]
    · rw [unlayoutTurn_asst f htake (stripPrefix?_append _ _)]
      unfold unlayoutAssistant
      cases ht : f.ids.think with
      | none => simp [hcc, QTurn.erase]
      | some ab =>
        obtain ⟨a, b⟩ := ab
        have h4 := hw.think a b ht
        rcases hhead with rfl | rfl
        · simp [hcc, QTurn.erase, h4.2.2.2.2]
        · simp [hcc, QTurn.erase, h4.2.2.1]
  | some t =>
    obtain ⟨rt, rfl⟩ : ∃ rt, t = .text rt := ⟨textOf t, eq_text_of_isText (by simpa using htx)⟩
    obtain ⟨⟨a, b⟩, ht⟩ : ∃ ab, f.ids.think = some ab := by
      cases h : f.ids.think with
      | none =>
        rw [h] at h0
        simp at h0
      | some ab => exact ⟨ab, rfl⟩
    have h4 := hw.think a b ht
    refine ⟨lit tAsst ++ (.ctrl a :: (lit (['\n'] ++ rt ++ ['\n']) ++
      (.ctrl b :: (lit (['\n', '\n'] ++ x) ++ rest)))), ?_, ?_, by simp [hE], ?_⟩
    · have e : syms (turnItems f (.assistant (some (.text rt)) (.text cs) sep calls o)) =
          .ctrl f.ids.imStart :: (lit tAsst ++ (.ctrl a :: (lit (['\n'] ++ rt ++ ['\n']) ++
            (.ctrl b :: (lit ['\n', '\n'] ++
              (lit cs ++ (syms (callsItems f sep o calls) ++ footerSyms f))))))) := by
        simp [turnItems, ht, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit,
          syms_footer]
      rw [e, heq, ← List.append_assoc (lit ['\n', '\n']) (lit x) rest, ← lit_append]
    · simp [lit, hnS, h4.1, h4.2.1]
    · have hA : stripPrefix? tAsst tAsst = some [] := by
        simpa using stripPrefix?_append tAsst []
      rw [unlayoutTurn_asst f rfl hA]
      have s1 : stripPrefix? ['\n'] (['\n'] ++ rt ++ ['\n']) = some (rt ++ ['\n']) := by
        rw [List.append_assoc]
        exact stripPrefix?_append _ _
      have s2 : stripSuffix? ['\n'] (rt ++ ['\n']) = some rt := stripSuffix?_append _ _
      have s3 : stripPrefix? ['\n', '\n'] (['\n', '\n'] ++ x) = some x := stripPrefix?_append _ _
      unfold unlayoutAssistant
      simp only [ht, and_self, ↓reduceIte, takeText_lit_ctrl, s1, s2, s3, Option.bind_some,
        takeText_lit_of _ _ htake, hcc, Option.map_some, QTurn.erase]

/-- The symbols of one tool result after `<tool_response>` (Qwen3). -/
@[expose] def gR (b : Token) (r : LPay × Nat) : List Sym :=
  lit ['\n'] ++ (pay r.1 0 false).piece.syms ++ lit ['\n'] ++ [.ctrl b]

theorem results_syms {a b : Token} (ht : f.ids.toolResponse = some (a, b)) :
    ∀ (rs : List (LPay × Nat)) (r : LPay × Nat),
    syms ((r :: rs).flatMap (resultItems f)) ++ footerSyms f =
      lit ['\n'] ++ (piecesOf (gR b) (lit ['\n']) (footerSyms f) (r :: rs)).flatMap (.ctrl a :: ·)
  | [], r => by
    simp [resultItems, ht, piecesOf, gR, ctl_piece, txt_piece, pay_piece', Piece.syms, lit]
  | r2 :: rs, r => by
    rw [List.flatMap_cons, syms_append, List.append_assoc, results_syms ht rs r2,
      piecesOf_cons_of_ne_nil _ _ _ r (r2 :: rs) (List.cons_ne_nil _ _), List.flatMap_cons]
    simp [resultItems, ht, gR, ctl_piece, txt_piece, pay_piece', Piece.syms, lit]

theorem resultPiece_gR (b : Token) (r : LPay × Nat) (hr : isText r.1 = true) (t : List Sym) :
    resultPiece b (gR b r ++ t) = some ((r.1, 0), t) := by
  obtain ⟨p, o⟩ := r
  obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨textOf p, eq_text_of_isText hr⟩
  have e : gR b (.text c, o) ++ t = lit (['\n'] ++ c ++ ['\n']) ++ .ctrl b :: t := by
    simp [gR, pay, Piece.syms, lit]
  unfold resultPiece
  rw [e, takeText_lit_ctrl]
  simp [stripPrefix?]

theorem read_group3 (hw : WfFacts f.ids) {a b : Token} (ht : f.ids.toolResponse = some (a, b))
    (rs : List (LPay × Nat)) (hne : rs ≠ []) (htx : rs.all (fun r => isText r.1) = true) :
    ∃ body, syms (turnItems f (.toolGroup rs)) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some (QTurn.toolGroup rs).erase := by
  obtain ⟨r, rs', rfl⟩ : ∃ r rs', rs = r :: rs' := by
    cases rs with
    | nil => exact absurd rfl hne
    | cons r rs' => exact ⟨r, rs', rfl⟩
  have htx' : ∀ r' ∈ r :: rs', isText r'.1 = true := List.all_eq_true.mp htx
  obtain ⟨P, hP⟩ := flatMap_piecesOf_cons (Sym.ctrl a) (gR b) (lit ['\n']) (footerSyms f)
    (List.cons_ne_nil r rs')
  have hw3 := hw.resp a b ht
  have hpieces : ∀ p ∈ piecesOf (gR b) (lit ['\n']) (footerSyms f) (r :: rs'), Sym.ctrl a ∉ p := by
    intro p hp
    obtain ⟨r', -, e | e⟩ := mem_piecesOf hp <;> subst e <;>
      simp [gR, lit, footerSyms, ctrl_not_mem_pay, Ne.symm hw3.2.2.2, Ne.symm hw3.2.2.1]
  refine ⟨lit (tUser ++ ['\n']) ++
    (piecesOf (gR b) (lit ['\n']) (footerSyms f) (r :: rs')).flatMap (.ctrl a :: ·),
    ?_, ?_, ?_, ?_⟩
  · have e : syms (turnItems f (.toolGroup (r :: rs'))) =
        .ctrl f.ids.imStart :: (lit tUser ++
          (syms ((r :: rs').flatMap (resultItems f)) ++ footerSyms f)) := by
      simp [turnItems, ctl_piece, txt_piece, Piece.syms, lit, syms_footer]
    rw [e, results_syms f ht, lit_append, List.append_assoc]
  · simp only [List.mem_append, not_or]
    exact ⟨ctrl_not_mem_lit _ _, not_mem_piecesOf (fun h => hw3.1 (Sym.ctrl.inj h).symm)
      (fun r => by simp [gR, lit, hw3.2.1, ctrl_not_mem_pay]) (by simp [lit])
      (footer_not_mem f hw.se.symm) _⟩
  · exact List.mem_append_right _ (final_mem_piecesOf _ (by simp [footerSyms])
      (List.cons_ne_nil r rs'))
  · rw [unlayoutTurn_user f (by rw [hP]; rfl) (asst_user _) (sys_user _)
      (stripPrefix?_append _ _)]
    have hneF : (piecesOf (gR b) (lit ['\n']) (footerSyms f) (r :: rs')).flatMap
        (Sym.ctrl a :: ·) ≠ footerSyms f := by
      rw [hP]
      intro h
      simp only [footerSyms, List.cons.injEq, Sym.ctrl.injEq] at h
      exact hw3.2.2.1 h.1.symm
    have hsplit := splitAtCtrl_flatMap a
      (piecesOf (gR b) (lit ['\n']) (footerSyms f) (r :: rs')) [] (by simp) hpieces
    rw [List.nil_append] at hsplit
    have hparse := parsePieces_piecesOf (resultPiece b) (gR b) (fun r => (r.1, 0)) (lit ['\n'])
      (footerSyms f) (r :: rs') (List.cons_ne_nil _ _)
      (fun r' hr' t _ => resultPiece_gR b r' (htx' r' hr') t)
    unfold unlayoutUser
    simp only [ht, hneF, ↓reduceIte, hsplit, ne_eq, not_true_eq_false, hparse, Option.map_some,
      QTurn.erase]

theorem textOf_text (c : Chars) : textOf (.text c) = c := rfl

theorem flat25 (c : Chars) (cs : List Chars) (hcs : cs ≠ []) :
    (['\n'] ++ respOpenText ++ c ++ respCloseText) ++
        (['\n'] ++ respOpenText ++ joinWith respSepText cs ++ respCloseText) =
      ['\n'] ++ respOpenText ++ joinWith respSepText (c :: cs) ++ respCloseText := by
  rw [joinWith_cons_of_ne_nil _ _ _ hcs, ← respSep_eq]
  simp only [List.append_assoc]

theorem results_syms25 (ht : f.ids.toolResponse = none) :
    ∀ (rs : List (LPay × Nat)) (r : LPay × Nat), (∀ r' ∈ r :: rs, isText r'.1 = true) →
    syms ((r :: rs).flatMap (resultItems f)) =
      lit (['\n'] ++ respOpenText ++ joinWith respSepText ((r :: rs).map fun r => textOf r.1) ++
        respCloseText)
  | [], r, h => by
    obtain ⟨p, o⟩ := r
    obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨_, eq_text_of_isText (h _ List.mem_cons_self)⟩
    simp [resultItems, ht, txt_piece, pay, Piece.syms, lit, joinWith, textOf_text]
  | r2 :: rs, r, h => by
    obtain ⟨p, o⟩ := r
    obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨_, eq_text_of_isText (h _ List.mem_cons_self)⟩
    have hs : syms (resultItems f (.text c, o)) =
        lit (['\n'] ++ respOpenText ++ c ++ respCloseText) := by
      simp [resultItems, ht, txt_piece, pay, Piece.syms, lit]
    rw [List.flatMap_cons, syms_append,
      results_syms25 ht rs r2 (fun r' hr' => h r' (List.mem_cons_of_mem _ hr')), hs,
      ← lit_append]
    simp only [List.map_cons, textOf_text]
    rw [flat25 c (textOf r2.1 :: rs.map fun r => textOf r.1) (List.cons_ne_nil _ _)]

theorem splitSeq_results : ∀ (rs : List (LPay × Nat)) (r : LPay × Nat),
    (∀ r' ∈ r :: rs, isText r'.1 = true) →
    ((r :: rs).dropLast.all fun r => textOk (clearOf respSepText) r.1) = true →
    ((r :: rs).getLast?.all fun r => textOk (fun cs => (splitFirst respSepText cs).isNone) r.1) =
      true →
    splitSeq respSepText (joinWith respSepText ((r :: rs).map fun r => textOf r.1)) =
      (r :: rs).map fun r => textOf r.1
  | [], r, htx, _, h2 => by
    obtain ⟨p, o⟩ := r
    obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨_, eq_text_of_isText (htx _ List.mem_cons_self)⟩
    simp only [List.map_cons, List.map_nil, joinWith, textOf]
    rw [splitSeq_of_none]
    simpa [textOk] using h2
  | r2 :: rs, r, htx, h1, h2 => by
    obtain ⟨p, o⟩ := r
    obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨_, eq_text_of_isText (htx _ List.mem_cons_self)⟩
    simp only [List.dropLast_cons₂, List.all_cons, Bool.and_eq_true] at h1
    rw [List.getLast?_cons_cons] at h2
    have ih := splitSeq_results rs r2 (fun r' hr' => htx r' (List.mem_cons_of_mem _ hr')) h1.2 h2
    simp only [List.map_cons, textOf_text] at ih ⊢
    rw [joinWith_cons_of_ne_nil _ _ _ (List.cons_ne_nil _ _),
      splitSeq_append_of_clearOf _ respSep_ne h1.1, ih]

theorem read_group25 (hw : WfFacts f.ids) (ht : f.ids.toolResponse = none)
    (rs : List (LPay × Nat)) (hne : rs ≠ []) (hok : turnOk f (.toolGroup rs) = true)
    (htx : rs.all (fun r => isText r.1) = true) :
    ∃ body, syms (turnItems f (.toolGroup rs)) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some (QTurn.toolGroup rs).erase := by
  obtain ⟨r, rs', rfl⟩ : ∃ r rs', rs = r :: rs' := by
    cases rs with
    | nil => exact absurd rfl hne
    | cons r rs' => exact ⟨r, rs', rfl⟩
  have htx' : ∀ r' ∈ r :: rs', isText r'.1 = true := List.all_eq_true.mp htx
  simp only [turnOk, ht, Option.isSome_none, Bool.false_or, Bool.and_eq_true] at hok
  obtain ⟨-, h1, h2⟩ := hok
  refine ⟨lit (tUser ++ (['\n'] ++ (respOpenText ++
    joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++ respCloseText))) ++ footerSyms f,
    ?_, by simp [lit, footerSyms, hw.se], by simp [footerSyms], ?_⟩
  · have e : syms (turnItems f (.toolGroup (r :: rs'))) =
        .ctrl f.ids.imStart :: (lit tUser ++
          (syms ((r :: rs').flatMap (resultItems f)) ++ footerSyms f)) := by
      simp [turnItems, ctl_piece, txt_piece, Piece.syms, lit, syms_footer]
    rw [e, results_syms25 f ht rs' r htx', ← List.append_assoc, ← lit_append]
    simp only [List.append_assoc]
  · rw [unlayoutTurn_user f (takeText_footer f) (asst_user _) (sys_user _)
      (stripPrefix?_append _ _)]
    have hs1 : stripPrefix? ['\n'] (['\n'] ++ (respOpenText ++
        joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++ respCloseText)) =
        some (respOpenText ++ joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++
          respCloseText) := stripPrefix?_append _ _
    have hL : looksLikeResults (respOpenText ++
        joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++ respCloseText) = true := by
      simp only [looksLikeResults, Bool.and_eq_true]
      exact ⟨List.isPrefixOf_iff_prefix.mpr ⟨_, (List.append_assoc _ _ _).symm⟩,
        List.isSuffixOf_iff_suffix.mpr ⟨_, rfl⟩⟩
    have hs2 : stripPrefix? respOpenText (respOpenText ++
        joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++ respCloseText) =
        some (joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++ respCloseText) := by
      rw [List.append_assoc]
      exact stripPrefix?_append _ _
    have hs3 : stripSuffix? respCloseText
        (joinWith respSepText ((r :: rs').map fun r => textOf r.1) ++ respCloseText) =
        some (joinWith respSepText ((r :: rs').map fun r => textOf r.1)) := stripSuffix?_append _ _
    unfold unlayoutUser
    simp only [ht, ↓reduceIte, hs1, Option.bind_some, hL, hs2, hs3,
      Option.map_some, splitSeq_results rs' r htx' h1 h2, List.map_map, QTurn.erase,
      Option.some.injEq, QTurn.toolGroup.injEq]
    apply List.map_congr_left
    intro r' hr'
    simp only [Function.comp]
    rw [← eq_text_of_isText (htx' r' hr')]

theorem turn_read (hw : WfFacts f.ids) (t : QTurn) (hok : turnOk f t = true)
    (htx : textTurn t = true) (hne : ∀ rs, t = .toolGroup rs → rs ≠ []) :
    ∃ body, syms (turnItems f t) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some t.erase := by
  cases t with
  | plain r p o =>
    obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨textOf p, eq_text_of_isText htx⟩
    exact read_plain f hw r c o hok
  | toolsSystem s ts o => exact read_toolsSystem f hw s ts o hok htx
  | assistant th c sep calls o =>
    simp only [textTurn, Bool.and_eq_true] at htx
    obtain ⟨cs, rfl⟩ : ∃ cs, c = .text cs := ⟨textOf c, eq_text_of_isText htx.2⟩
    exact read_assistant f hw th cs sep calls o hok htx.1
  | toolGroup rs =>
    cases hr : f.ids.toolResponse with
    | none => exact read_group25 f hw hr rs (hne rs rfl) hok htx
    | some ab =>
      obtain ⟨a, b⟩ := ab
      exact read_group3 f hw hr rs (hne rs rfl) htx
  | sampled ts o => cases htx

theorem prompt_read (hw : WfFacts f.ids) (o : Nat) :
    ∃ pb, syms (promptItems f o) = .ctrl f.ids.imStart :: pb ∧ .ctrl f.ids.imStart ∉ pb ∧
      .ctrl f.ids.imEnd ∉ pb := by
  cases hth : f.ids.think with
  | none =>
    refine ⟨lit tAsst, ?_, ?_, ?_⟩
    · simp [promptItems, hth, ctl_piece, txt_piece, Piece.syms, lit]
    · simp [lit]
    · simp [lit]
  | some ab =>
    obtain ⟨a, b⟩ := ab
    have h4 := hw.think a b hth
    cases hp : f.promptThink
    · cases he : f.enableThinking
      · refine ⟨lit tAsst ++ [.ctrl a] ++ lit ['\n', '\n'] ++ [.ctrl b] ++
          lit ['\n', '\n'], ?_, ?_, ?_⟩
        · simp [promptItems, hth, hp, he, ctl_piece, txt_piece, Piece.syms, lit]
        · simp [lit, h4.1, h4.2.1]
        · simp [lit, h4.2.2.1, h4.2.2.2.1]
      · refine ⟨lit tAsst, ?_, ?_, ?_⟩
        · simp [promptItems, hth, hp, he, ctl_piece, txt_piece, Piece.syms, lit]
        · simp [lit]
        · simp [lit]
    · refine ⟨lit tAsst ++ [.ctrl a] ++ lit ['\n'], ?_, ?_, ?_⟩
      · simp [promptItems, hth, hp, ctl_piece, txt_piece, Piece.syms, lit]
      · simp [lit, h4.1]
      · simp [lit, h4.2.2.1]

theorem unlayoutChunks_cons (hw : WfFacts f.ids) {c : List Sym} (hc : .ctrl f.ids.imEnd ∈ c)
    (cs : List (List Sym)) :
    unlayoutChunks f (c :: cs) = (unlayoutTurn f c).bind fun t =>
      (unlayoutChunks f cs).map fun q => ⟨t :: q.turns, q.prompt⟩ := by
  cases cs with
  | nil =>
    have hne : (.ctrl f.ids.imStart :: c) ≠ syms (promptItems f 0) := by
      obtain ⟨pb, hpb, -, hE⟩ := prompt_read f hw 0
      rw [hpb]
      intro h
      exact hE ((List.cons.inj h).2 ▸ hc)
    simp only [unlayoutChunks, hne, ↓reduceIte]
    cases unlayoutTurn f c <;> rfl
  | cons c' cs => rfl

theorem chunks_read (hw : WfFacts f.ids) : ∀ (ts : List QTurn),
    (∀ t ∈ ts, ∃ body, syms (turnItems f t) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some t.erase) →
    ∃ bodies : List (List Sym),
      syms (ts.flatMap (turnItems f)) = bodies.flatMap (.ctrl f.ids.imStart :: ·) ∧
      (∀ b ∈ bodies, .ctrl f.ids.imStart ∉ b) ∧
      ∀ tail q, unlayoutChunks f tail = some ⟨[], q⟩ →
        unlayoutChunks f (bodies ++ tail) = some ⟨ts.map QTurn.erase, q⟩
  | [], _ => ⟨[], rfl, fun _ h => (by cases h), fun _ _ h => h⟩
  | t :: ts, h => by
    obtain ⟨body, hb1, hb2, hb3, hb4⟩ := h t List.mem_cons_self
    obtain ⟨bodies, h1, h2, h3⟩ :=
      chunks_read hw ts (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))
    refine ⟨body :: bodies, ?_, ?_, fun tail q htail => ?_⟩
    · rw [List.flatMap_cons, syms_append, hb1, h1, List.flatMap_cons]
    · intro b hb
      rcases List.mem_cons.mp hb with rfl | hb
      · exact hb2
      · exact h2 b hb
    · rw [List.cons_append, unlayoutChunks_cons f hw hb3, hb4, Option.bind_some,
        h3 tail q htail]
      rfl

theorem layout_read (hw : WfFacts f.ids) (ts : List QTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, ∃ body, syms (turnItems f t) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f body = some t.erase) :
    unlayout f (syms (layout f ⟨ts, p⟩)) = some ⟨ts.map QTurn.erase, p.map fun _ => 0⟩ := by
  obtain ⟨bodies, h1, h2, h3⟩ := chunks_read f hw ts h
  obtain ⟨tail, ht1, ht2, ht3⟩ : ∃ tail : List (List Sym),
      syms (layout f ⟨[], p⟩) = tail.flatMap (.ctrl f.ids.imStart :: ·) ∧
      (∀ b ∈ tail, .ctrl f.ids.imStart ∉ b) ∧
      unlayoutChunks f tail = some ⟨[], p.map fun _ => 0⟩ := by
    cases p with
    | none => exact ⟨[], rfl, fun _ h => (by cases h), rfl⟩
    | some o =>
      obtain ⟨pb, hpb, hS, -⟩ := prompt_read f hw o
      have e : syms (layout f ⟨[], some o⟩) = syms (promptItems f o) := rfl
      refine ⟨[pb], by rw [e, hpb]; simp, by simpa using hS, ?_⟩
      have e0 : Sym.ctrl f.ids.imStart :: pb = syms (promptItems f 0) := by
        rw [← hpb, syms_promptItems', syms_promptItems']
      simp only [unlayoutChunks, e0, ↓reduceIte]
      rfl
  have hsplit := splitAtCtrl_flatMap f.ids.imStart (bodies ++ tail) [] (by simp)
    (fun b hb => (List.mem_append.mp hb).elim (h2 b) (ht2 b))
  rw [List.nil_append, List.flatMap_append, ← h1, ← ht1, ← syms_append, ← layout_eq] at hsplit
  unfold unlayout
  simp only [hsplit, ↓reduceIte]
  exact h3 tail _ ht3

/-- A payload laid out in a text-only item list is text. -/
theorem isText_of_mem {items : List Item} (h : textOnly items = true) {p : LPay} {o : Nat}
    {l : Bool} (hm : pay p o l ∈ items) : isText p = true := by
  unfold textOnly at h
  have := List.all_eq_true.mp h _ hm
  cases p
  · rfl
  · simp [pay, Piece.isToks] at this

theorem pay_mem_resultItems (r : LPay × Nat) : pay r.1 r.2 false ∈ resultItems f r := by
  unfold resultItems
  split <;> simp

/-- A readable turn whose items are text-only has text payloads and is not sampled. -/
theorem textTurn_of_textOnly (t : QTurn) (hok : turnOk f t = true)
    (h : textOnly (turnItems f t) = true) : textTurn t = true := by
  cases t with
  | plain r p o => exact isText_of_mem h (o := o) (l := false) (by simp [turnItems])
  | toolsSystem s ts o =>
    cases s with
    | none => rfl
    | some p => exact isText_of_mem h (o := o) (l := false) (by simp [turnItems])
  | assistant th c sep ks o =>
    have hc : isText c = true := isText_of_mem h (o := o) (l := true) (by simp [turnItems])
    cases th with
    | none => simpa [textTurn] using hc
    | some r =>
      obtain ⟨⟨a, b⟩, hth⟩ : ∃ ab, f.ids.think = some ab := by
        cases hth : f.ids.think with
        | none => simp [turnOk, hth] at hok
        | some ab => exact ⟨ab, rfl⟩
      have hr : isText r = true :=
        isText_of_mem h (o := o) (l := thinkLearned f r) (by simp [turnItems, hth])
      simp [textTurn, hr, hc]
  | toolGroup rs =>
    refine List.all_eq_true.mpr fun r hr => isText_of_mem h (o := r.2) (l := false) ?_
    unfold turnItems
    exact List.mem_append_left _ (List.mem_append_right _
      (List.mem_flatMap.mpr ⟨r, hr, pay_mem_resultItems f r⟩))
  | sampled ts o =>
    unfold textOnly at h
    have := List.all_eq_true.mp h ⟨.toks ts, ⟨o, true⟩⟩ (by simp [turnItems])
    simp [Piece.isToks] at this

/-- `unlayout` inverts `layout` on every lowered conversation whose layout is text-only. -/
theorem unlayout_layout (hf : f.ids.wf = true) {c : Conversation} {l : QConv}
    (hl : lower f c = some l) (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  obtain ⟨st, pre, hst, hpre, hall, rfl⟩ := lower_eq_some f hl
  apply layout_read f hw
  intro t ht
  have hok := List.all_eq_true.mp hall t ht
  have htt : textOnly (turnItems f t) = true := by
    unfold textOnly at htx ⊢
    refine List.all_eq_true.mpr fun x hx => List.all_eq_true.mp htx x ?_
    unfold layout
    exact List.mem_append_left _ (List.mem_flatMap.mpr ⟨t, ht, hx⟩)
  refine turn_read f hw t hok (textTurn_of_textOnly f t hok htt) ?_
  rcases List.mem_append.mp ht with ht | ht
  · intro rs e
    exact absurd e (systemTurn_notGroup f hst t ht rs)
  · exact group_nonempty pre (fun t' h' => by
      obtain ⟨j, m, -, hto⟩ := lowerMsgs_turn f _ 0 pre hpre t' h'
      exact hto.notGroup) t ht

end Read

end Verified.Qwen

end
