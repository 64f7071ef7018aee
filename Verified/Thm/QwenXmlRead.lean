module

public import Verified.Spec.QwenXmlFormat
public import Verified.Thm.QwenRead
public import Verified.Thm.QwenXml

public section

/-!
# Reading the Qwen3.5 structure back: each turn

Every readable turn with text payloads reads back to itself up to owners (`turn_readX`):

* a plain user turn and a tool group through the Qwen structure's own reader and its lemmas
  (`read_plain`, `turn_read`), which `unlayoutTurnX` delegates to after `'user'`;
* a plain system turn and the tools turn (`read_toolsSystemX`): the tool lines between the
  preamble and the instructions, the system text after the reminder;
* an assistant turn (`read_assistantX`): the think block, the content, and each XML call read
  back by `parseCall_callText` (`Thm/QwenXml.lean`), the `'\n\n'` before the first call
  written exactly after non-empty content (`contentCallsX_read`).
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

/-- `'assistant\n'`, `'system\n'`, `'user'`: the role prefixes the reader tells apart. -/
local notation "tAsst" => ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n']
local notation "tSystem" => ['s', 'y', 's', 't', 'e', 'm', '\n']
local notation "tUser" => ['u', 's', 'e', 'r']

section Read

variable (f : XmlFmt)

/-- Every payload of a turn is text, and the turn is not a sampled turn. -/
@[expose] def textTurnX : XTurn → Bool
  | .plain _ p _ => isText p
  | .toolsSystem s _ _ => s.all isText
  | .assistant th c _ _ _ => th.all isText && isText c
  | .toolGroup rs => rs.all fun r => isText r.1
  | .sampled _ _ => false

/-! ## Dispatch on the role -/

theorem turnX_asst {pre x : Chars} {rest : List Sym} (hr : takeText rest = ([], rest))
    (h : stripPrefix? tAsst pre = some x) :
    unlayoutTurnX f (lit pre ++ rest) = unlayoutAssistantX f x rest := by
  unfold unlayoutTurnX
  simp only [takeText_lit_of _ _ hr, h]

theorem turnX_sys {pre x : Chars} {rest : List Sym} (hr : takeText rest = ([], rest))
    (h1 : stripPrefix? tAsst pre = none) (h : stripPrefix? tSystem pre = some x) :
    unlayoutTurnX f (lit pre ++ rest) = unlayoutSystemX f x rest := by
  unfold unlayoutTurnX
  simp only [takeText_lit_of _ _ hr, h1, h]

/-- After `'user'`, the reader is the Qwen structure's. -/
theorem turnX_user (R : List Sym) :
    unlayoutTurnX f (lit tUser ++ R) = (unlayoutTurn f.base (lit tUser ++ R)).bind ofQ := by
  unfold unlayoutTurnX unlayoutTurn
  simp only [takeText_lit_append, asst_user, sys_user, stripPrefix?_append]

/-- A turn the Qwen structure writes after `'user'` and reads back reads back here too. -/
theorem read_viaQ (hw : WfFacts f.ids) (t : QTurn) (xt : XTurn) (R : List Sym)
    (hi : QwenXml.turnItems f xt = Qwen.turnItems f.base t)
    (hs : syms (Qwen.turnItems f.base t) = .ctrl f.ids.imStart :: (lit tUser ++ R))
    (hq : ∃ body, syms (Qwen.turnItems f.base t) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurn f.base body = some t.erase)
    (he : ofQ t.erase = some xt.erase) :
    ∃ body, syms (QwenXml.turnItems f xt) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurnX f body = some xt.erase := by
  obtain ⟨body, h1, h2, h3, h4⟩ := hq
  have e : body = lit tUser ++ R := by
    rw [hs] at h1
    exact (List.cons.inj h1).2.symm
  subst e
  refine ⟨_, hi ▸ hs, h2, h3, ?_⟩
  rw [turnX_user, h4, Option.bind_some, he]

/-! ## Calls -/

/-- The symbols of one call after `<tool_call>`. -/
@[expose] def gX (k : XCall) : List Sym := lit (callText k) ++ [.ctrl f.ids.callClose]

theorem callsItems'_syms (o : Nat) : ∀ (ks : List XCall) (k : XCall),
    syms ([ctl f.ids.callOpen o true, txt (callText k) o true, ctl f.ids.callClose o true] ++
        QwenXml.callsItems.callsItems' f o ks) ++ footerSyms f.base =
      (piecesOf (gX f) (lit ['\n']) (footerSyms f.base) (k :: ks)).flatMap
        (.ctrl f.ids.callOpen :: ·)
  | [], k => by
    simp [QwenXml.callsItems.callsItems', piecesOf, gX, ctl, txt, lit, Piece.syms]
  | k2 :: ks, k => by
    have e : [ctl f.ids.callOpen o true, txt (callText k) o true, ctl f.ids.callClose o true] ++
        QwenXml.callsItems.callsItems' f o (k2 :: ks) =
        [ctl f.ids.callOpen o true, txt (callText k) o true, ctl f.ids.callClose o true] ++
          (txt ['\n'] o true :: ([ctl f.ids.callOpen o true, txt (callText k2) o true,
            ctl f.ids.callClose o true] ++ QwenXml.callsItems.callsItems' f o ks)) := rfl
    rw [e, syms_append, syms_cons (txt ['\n'] o true), List.append_assoc, List.append_assoc,
      callsItems'_syms o ks k2,
      piecesOf_cons_of_ne_nil _ _ _ k (k2 :: ks) (List.cons_ne_nil _ _), List.flatMap_cons]
    simp [gX, ctl, txt, lit, Piece.syms]

theorem callsItems_symsX (o : Nat) (k : XCall) (ks : List XCall) (first : Bool) :
    syms (QwenXml.callsItems f first o (k :: ks)) ++ footerSyms f.base =
      (if first then lit ['\n', '\n'] else []) ++
        (piecesOf (gX f) (lit ['\n']) (footerSyms f.base) (k :: ks)).flatMap
          (.ctrl f.ids.callOpen :: ·) := by
  rw [← callsItems'_syms f o ks k]
  cases first <;> simp [QwenXml.callsItems, txt, lit, Piece.syms]

theorem callPieceX_gX (k : XCall) (h : k.readable = true) (t : List Sym) :
    callPieceX f (gX f k ++ t) = some (k, t) := by
  unfold callPieceX gX
  rw [List.append_assoc, List.singleton_append, takeText_lit_of _ _ rfl]
  simp [parseCall_callText k h]

/-- Content and calls read back. -/
theorem contentCallsX_read (hw : WfFacts f.ids) (cs : Chars) (sep : Bool) (calls : List XCall)
    (o : Nat) (h1 : calls.all XCall.readable = true)
    (h2 : (sep == (!cs.isEmpty && !calls.isEmpty)) = true) :
    ∃ x rest, lit cs ++ (syms (QwenXml.callsItems f sep o calls) ++ footerSyms f.base) =
        lit x ++ rest ∧
      takeText rest = ([], rest) ∧
      (∃ r, rest = .ctrl f.ids.callOpen :: r ∨ rest = .ctrl f.ids.imEnd :: r) ∧
      .ctrl f.ids.imStart ∉ rest ∧ .ctrl f.ids.imEnd ∈ rest ∧
      contentCallsX f x rest = some (.text cs, sep, calls) := by
  cases calls with
  | nil =>
    cases sep
    · refine ⟨cs, footerSyms f.base, by simp [QwenXml.callsItems], rfl, ⟨_, Or.inr rfl⟩,
        footer_not_mem f.base hw.se.symm, by simp [footerSyms, XmlFmt.base], ?_⟩
      simp [contentCallsX]
    · simp at h2
  | cons k ks =>
    have hk : ∀ k' ∈ k :: ks, k'.readable = true := by simpa using h1
    obtain ⟨r, hr⟩ := flatMap_piecesOf_cons (Sym.ctrl f.ids.callOpen) (gX f) (lit ['\n'])
      (footerSyms f.base) (List.cons_ne_nil k ks)
    have hpieces : ∀ p ∈ piecesOf (gX f) (lit ['\n']) (footerSyms f.base) (k :: ks),
        Sym.ctrl f.ids.callOpen ∉ p := by
      intro p hp
      obtain ⟨a, -, e | e⟩ := mem_piecesOf hp <;> subst e <;>
        simp [gX, lit, footerSyms, XmlFmt.base, hw.oc, Ne.symm hw.eo]
    refine ⟨cs ++ (if sep then ['\n', '\n'] else []), _, ?_, ?_, ⟨r, Or.inl hr⟩, ?_, ?_, ?_⟩
    · rw [callsItems_symsX]
      cases sep <;> simp
    · rw [hr]
      rfl
    · exact not_mem_piecesOf (fun h => hw.so (Sym.ctrl.inj h).symm)
        (fun a => by simp [gX, lit, hw.sc]) (by simp [lit])
        (footer_not_mem f.base hw.se.symm) _
    · exact final_mem_piecesOf _ (by simp [footerSyms, XmlFmt.base]) (List.cons_ne_nil k ks)
    · have hsplit := splitAtCtrl_flatMap f.ids.callOpen
        (piecesOf (gX f) (lit ['\n']) (footerSyms f.base) (k :: ks)) [] (by simp) hpieces
      rw [List.nil_append] at hsplit
      have hparse := parsePieces_piecesOf (callPieceX f) (gX f) id (lit ['\n'])
        (footerSyms f.base) (k :: ks) (List.cons_ne_nil k ks)
        (fun a ha t _ => callPieceX_gX f a (hk a ha) t)
      rw [List.map_id] at hparse
      have hne : (piecesOf (gX f) (lit ['\n']) (footerSyms f.base) (k :: ks)).flatMap
          (Sym.ctrl f.ids.callOpen :: ·) ≠ footerSyms f.base := by
        rw [hr]
        intro h
        simp only [footerSyms, XmlFmt.base, List.cons.injEq, Sym.ctrl.injEq] at h
        exact hw.eo h.1.symm
      simp only [contentCallsX, hne, ↓reduceIte, hsplit, ne_eq, not_true_eq_false, hparse,
        Option.bind_some]
      cases sep
      · have hc : cs = [] := by simpa using h2
        subst hc
        simp
      · have hc : cs ≠ [] := by simpa using h2
        simp [hc]

/-! ## Assistant turns -/

theorem read_assistantX (hw : WfFacts f.ids) (th : Option LPay) (cs : Chars) (sep : Bool)
    (calls : List XCall) (o : Nat)
    (hok : turnOkX f (.assistant th (.text cs) sep calls o) = true)
    (htx : th.all isText = true) :
    ∃ body, syms (QwenXml.turnItems f (.assistant th (.text cs) sep calls o)) =
        .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurnX f body = some (XTurn.assistant th (.text cs) sep calls o).erase := by
  simp only [turnOkX, Bool.and_eq_true] at hok
  obtain ⟨⟨⟨h0, -⟩, h1⟩, h2⟩ := hok
  obtain ⟨x, rest, heq, htake, ⟨r, hhead⟩, hnS, hE, hcc⟩ :=
    contentCallsX_read f hw cs sep calls o h1 h2
  cases th with
  | none =>
    refine ⟨lit (tAsst ++ x) ++ rest, ?_, ?_, List.mem_append_right _ hE, ?_⟩
    · have e : syms (QwenXml.turnItems f (.assistant none (.text cs) sep calls o)) =
          .ctrl f.ids.imStart :: (lit tAsst ++
            (lit cs ++ (syms (QwenXml.callsItems f sep o calls) ++ footerSyms f.base))) := by
        simp [QwenXml.turnItems, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit,
          syms_footer]
      rw [e, heq, ← List.append_assoc, ← lit_append]
    · simp [lit, hnS]
    · rw [turnX_asst f htake (stripPrefix?_append _ _)]
      unfold unlayoutAssistantX
      cases ht : f.ids.think with
      | none => simp [hcc, XTurn.erase]
      | some ab =>
        obtain ⟨a, b⟩ := ab
        have h4 := hw.think a b ht
        rcases hhead with rfl | rfl
        · simp [hcc, XTurn.erase, h4.2.2.2.2]
        · simp [hcc, XTurn.erase, h4.2.2.1]
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
    · have e : syms (QwenXml.turnItems f (.assistant (some (.text rt)) (.text cs) sep calls o)) =
          .ctrl f.ids.imStart :: (lit tAsst ++ (.ctrl a :: (lit (['\n'] ++ rt ++ ['\n']) ++
            (.ctrl b :: (lit ['\n', '\n'] ++
              (lit cs ++ (syms (QwenXml.callsItems f sep o calls) ++
                footerSyms f.base))))))) := by
        simp [QwenXml.turnItems, ht, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit,
          syms_footer]
      rw [e, heq, ← List.append_assoc (lit ['\n', '\n']) (lit x) rest, ← lit_append]
    · simp [lit, hnS, h4.1, h4.2.1]
    · have hA : stripPrefix? tAsst tAsst = some [] := by
        simpa using stripPrefix?_append tAsst []
      rw [turnX_asst f rfl hA]
      have s1 : stripPrefix? ['\n'] (['\n'] ++ rt ++ ['\n']) = some (rt ++ ['\n']) := by
        rw [List.append_assoc]
        exact stripPrefix?_append _ _
      have s2 : stripSuffix? ['\n'] (rt ++ ['\n']) = some rt := stripSuffix?_append _ _
      have s3 : stripPrefix? ['\n', '\n'] (['\n', '\n'] ++ x) = some x := stripPrefix?_append _ _
      unfold unlayoutAssistantX
      simp only [ht, and_self, ↓reduceIte, takeText_lit_ctrl, s1, s2, s3, Option.bind_some,
        takeText_lit_of _ _ htake, hcc, Option.map_some, XTurn.erase]

/-! ## System turns -/

theorem toolLinesX_tools (tools : List Chars) (hne : tools ≠ [])
    (h : tools.all (fun j => !j.contains '\n') = true) :
    toolLinesX (tools.flatMap ('\n' :: ·)) = some tools := by
  obtain ⟨j, js, rfl⟩ := List.exists_cons_of_ne_nil hne
  have e := toolLines_tools (j :: js) h
  rw [flatMap_nl] at e ⊢
  simpa [toolLines, toolLinesX] using e

theorem read_toolsSystemX (hw : WfFacts f.ids) (s : Option LPay) (tools : List Chars) (o : Nat)
    (hok : turnOkX f (.toolsSystem s tools o) = true) (htx : s.all isText = true) :
    ∃ body, syms (QwenXml.turnItems f (.toolsSystem s tools o)) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurnX f body = some (XTurn.toolsSystem s tools o).erase := by
  simp only [turnOkX, Bool.and_eq_true] at hok
  obtain ⟨⟨hne, hlines⟩, hs⟩ := hok
  have hne' : tools ≠ [] := by simpa using hne
  obtain ⟨S, hS1, hS2⟩ : ∃ S : Chars, syms (QwenXml.turnItems f (.toolsSystem s tools o)) =
      .ctrl f.ids.imStart :: (lit (tSystem ++
        (xmlToolsIntro ++ tools.flatMap ('\n' :: ·) ++ xmlToolsClose)) ++
          (toolsFixed f ++ (lit (xmlReminderEnd ++ S) ++ footerSyms f.base))) ∧
      (if S = [] then some (XTurn.toolsSystem none tools 0)
        else (stripPrefix? ['\n', '\n'] S).bind fun s' =>
          if s' = [] then none else some (XTurn.toolsSystem (some (.text s')) tools 0)) =
        some (XTurn.toolsSystem s tools o).erase := by
    cases s with
    | none =>
      refine ⟨[], ?_, by simp [XTurn.erase]⟩
      simp [QwenXml.turnItems, toolsSystemItems, syms_tools, ctl_piece, txt_piece, Piece.syms,
        lit, toolsFixed, syms_footer, footerSyms]
    | some p =>
      obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨textOf p, eq_text_of_isText (by simpa using htx)⟩
      have hc : c ≠ [] := by
        simp only [Option.all, Bool.and_eq_true, Bool.not_eq_true', LPay.isEmpty,
          List.isEmpty_eq_false_iff] at hs
        exact hs.1
      refine ⟨['\n', '\n'] ++ c, ?_, by simp [hc, XTurn.erase, stripPrefix?]⟩
      simp [QwenXml.turnItems, toolsSystemItems, syms_tools, ctl_piece, txt_piece, pay_piece',
        payPiece, Piece.syms, lit, toolsFixed, syms_footer, footerSyms]
  refine ⟨_, hS1, ?_, ?_, ?_⟩
  · simp [lit, toolsFixed, footerSyms, XmlFmt.base, hw.so, hw.sc, hw.se]
  · simp [footerSyms, XmlFmt.base]
  · have hfix : ∃ r, toolsFixed f = .ctrl f.ids.callOpen :: r := ⟨_, rfl⟩
    obtain ⟨r, hr⟩ := hfix
    rw [turnX_sys f (by rw [hr]; rfl) (asst_sys _) (stripPrefix?_append _ _)]
    have hne2 : toolsFixed f ++ (lit (xmlReminderEnd ++ S) ++ footerSyms f.base) ≠
        footerSyms f.base := by
      rw [hr]
      intro h
      simp only [footerSyms, XmlFmt.base, List.cons_append, List.cons.injEq, Sym.ctrl.injEq] at h
      exact hw.eo h.1.symm
    have e1 : stripPrefix? xmlToolsIntro
        (xmlToolsIntro ++ tools.flatMap ('\n' :: ·) ++ xmlToolsClose) =
        some (tools.flatMap ('\n' :: ·) ++ xmlToolsClose) := by
      rw [List.append_assoc]
      exact stripPrefix?_append _ _
    have e2 : takeText (lit (xmlReminderEnd ++ S) ++ footerSyms f.base) =
        (xmlReminderEnd ++ S, footerSyms f.base) := takeText_lit_of _ _ rfl
    unfold unlayoutSystemX
    simp only [hne2, ↓reduceIte, stripPrefix?_append, Option.bind_some, e2, e1,
      stripSuffix?_append, toolLinesX_tools tools hne' hlines]
    exact hS2

/-! ## Every turn -/

theorem turn_readX (hw : WfFacts f.ids) (t : XTurn) (hok : turnOkX f t = true)
    (htx : textTurnX t = true) :
    ∃ body, syms (QwenXml.turnItems f t) = .ctrl f.ids.imStart :: body ∧
      .ctrl f.ids.imStart ∉ body ∧ .ctrl f.ids.imEnd ∈ body ∧
      unlayoutTurnX f body = some t.erase := by
  cases t with
  | plain r p o =>
    obtain ⟨c, rfl⟩ : ∃ c, p = .text c := ⟨textOf p, eq_text_of_isText htx⟩
    obtain ⟨body, h1, h2, h3, -⟩ := read_plain f.base hw r c o hok
    cases r with
    | user =>
      exact read_viaQ f hw (.plain .user (.text c) o) _ (lit ('\n' :: c) ++ footerSyms f.base)
        rfl (by simp [Qwen.turnItems, footer, footerSyms, ctl, txt, pay, Piece.syms, lit,
          PRole.name, XmlFmt.base])
        (read_plain f.base hw .user c o hok) (by rfl)
    | system =>
      have e : body = lit (tSystem ++ c) ++ footerSyms f.base := by
        have : syms (Qwen.turnItems f.base (.plain .system (.text c) o)) =
            .ctrl f.ids.imStart :: (lit (tSystem ++ c) ++ footerSyms f.base) := by
          simp [Qwen.turnItems, footer, footerSyms, ctl, txt, pay, Piece.syms, lit, PRole.name,
            XmlFmt.base]
        rw [this] at h1
        exact (List.cons.inj h1).2.symm
      subst e
      refine ⟨_, h1, h2, h3, ?_⟩
      rw [turnX_sys f (takeText_footer f.base) (asst_sys c) (stripPrefix?_append _ _)]
      simp [unlayoutSystemX, XTurn.erase]
  | toolsSystem s ts o => exact read_toolsSystemX f hw s ts o hok htx
  | assistant th c sep calls o =>
    simp only [textTurnX, Bool.and_eq_true] at htx
    obtain ⟨cs, rfl⟩ : ∃ cs, c = .text cs := ⟨textOf c, eq_text_of_isText htx.2⟩
    exact read_assistantX f hw th cs sep calls o hok htx.1
  | toolGroup rs =>
    simp only [turnOkX, Bool.and_eq_true] at hok
    have hne : rs ≠ [] := by simpa using hok.1
    exact read_viaQ f hw (.toolGroup rs) _
      (syms (rs.flatMap (resultItems f.base) ++ footer f.base (groupOwner rs) false)) rfl
      (by simp [Qwen.turnItems, ctl, txt, Piece.syms, lit, XmlFmt.base])
      (turn_read f.base hw (.toolGroup rs) hok.2 htx (fun _ e => by cases e; exact hne))
      (by rfl)
  | sampled ts o => cases htx

end Read

end Verified.QwenXml

end
