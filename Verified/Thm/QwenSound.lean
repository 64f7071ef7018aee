module

public import Verified.Thm.QwenRead

public section

/-!
# Reading Qwen layouts back: soundness

What `unlayout` returns lays out to its input (`layout_unlayout`): each branch of the reader
(`contentCalls_sound`, `unlayoutAssistant_sound`, `unlayoutSystem_sound`,
`unlayoutUser_sound`) only accepts symbols that are the layout of the turn it returns.
-/

namespace Verified.Qwen

open Verified

/-- `'assistant\n'`, `'system\n'`, `'user'`: the role prefixes the reader tells apart. -/
local notation "tAsst" => ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n']
local notation "tSystem" => ['s', 'y', 's', 't', 'e', 'm', '\n']
local notation "tUser" => ['u', 's', 'e', 'r']

/-! ## What `unlayout` returns lays out to its input -/

section Sound

variable (f : QwenFmt)

theorem parseCall_sound {cs : Chars} {k : Call} (h : parseCall cs = some k) :
    cs = callPre ++ k.name ++ callSep ++ k.args ++ callPost := by
  simp only [parseCall, Option.bind_eq_some_iff, Option.map_eq_some_iff] at h
  obtain ⟨r1, h1, r2, h2, ⟨a, b⟩, h3, rfl⟩ := h
  rw [stripPrefix?_eq_some h1, stripSuffix?_eq_some h2, splitFirst_eq_some h3]
  simp only [List.append_assoc]

theorem callPiece_sound (p : List Sym) (k : Call) (rest : List Sym)
    (h : callPiece f p = some (k, rest)) : p = gC f k ++ rest := by
  unfold callPiece at h
  obtain ⟨k', hk, h⟩ := Option.bind_eq_some_iff.mp h
  have hp := takeText_spec p
  split at h
  · rename_i t rest' heq
    split at h
    · rename_i htc
      cases h
      subst htc
      rw [← hp, heq, parseCall_sound hk]
      simp [gC]
    · cases h
  · cases h

/-- The symbols after `assistant\n` of an assistant turn without think block. -/
theorem syms_asst_body (c : LPay) (sep : Bool) (ks : List Call) :
    syms ([pay c 0 true] ++ callsItems f sep 0 ks ++ footer f 0 true) =
      (pay c 0 true).piece.syms ++ (syms (callsItems f sep 0 ks) ++ footerSyms f) := by
  simp only [syms_append, syms_cons, syms_nil, List.append_nil, syms_footer, List.append_assoc]

theorem contentCalls_sound {x : Chars} {rest : List Sym} {c : LPay} {sep : Bool}
    {ks : List Call} (h : contentCalls f x rest = some (c, sep, ks)) :
    lit x ++ rest = syms ([pay c 0 true] ++ callsItems f sep 0 ks ++ footer f 0 true) := by
  rw [syms_asst_body]
  unfold contentCalls at h
  by_cases hr : rest = footerSyms f
  · rw [if_pos hr] at h
    cases h
    subst hr
    simp [pay, Piece.syms, callsItems, lit]
  · rw [if_neg hr] at h
    dsimp only at h
    by_cases hr1 : (splitAtCtrl f.ids.callOpen rest).1 = []
    · rw [if_neg (fun h' => h' hr1)] at h
      obtain ⟨ks', hks, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨hne, hpieces⟩ := piecesOf_parsePieces (callPiece f) (gC f) (lit ['\n'])
        (footerSyms f) (fun p b r h => callPiece_sound f p b r h) _ _ hks
      have hj := splitAtCtrl_join f.ids.callOpen rest
      rw [hr1, List.nil_append, hpieces] at hj
      obtain ⟨k, ks'', rfl⟩ : ∃ k ks'', ks' = k :: ks'' := by
        cases ks' with
        | nil => exact absurd rfl hne
        | cons k ks'' => exact ⟨k, ks'', rfl⟩
      by_cases hx : x = []
      · simp only [hx, ↓reduceIte, Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl, rfl⟩ := h
        subst hx
        rw [callsItems_syms, ← hj]
        simp [pay, Piece.syms, lit]
      · simp only [hx, ↓reduceIte] at h
        obtain ⟨c', hc', h⟩ := Option.map_eq_some_iff.mp h
        cases h
        rw [stripSuffix?_eq_some hc', callsItems_syms, ← hj]
        simp [pay, Piece.syms, lit]
    · rw [if_pos hr1] at h
      cases h

theorem unlayoutAssistant_sound {x : Chars} {rest : List Sym} {t : QTurn}
    (h : unlayoutAssistant f x rest = some t) :
    syms (turnItems f t) = .ctrl f.ids.imStart :: (lit (tAsst ++ x) ++ rest) := by
  have hnone : ∀ c sep ks, contentCalls f x rest = some (c, sep, ks) →
      syms (turnItems f (.assistant none c sep ks 0)) =
        .ctrl f.ids.imStart :: (lit (tAsst ++ x) ++ rest) := by
    intro c sep ks hc
    have e : syms (turnItems f (.assistant none c sep ks 0)) = .ctrl f.ids.imStart ::
        (lit tAsst ++ syms ([pay c 0 true] ++ callsItems f sep 0 ks ++
          footer f 0 true)) := by
      simp [turnItems, ctl_piece, txt_piece, Piece.syms, lit]
    rw [e, ← contentCalls_sound f hc, lit_append, List.append_assoc]
  unfold unlayoutAssistant at h
  split at h
  · rename_i a b t0 rest' hth
    by_cases h0 : t0 = a ∧ x = []
    · rw [if_pos h0] at h
      obtain ⟨hta, rfl⟩ := h0
      rw [← hta] at hth
      dsimp only at h
      split at h
      · rename_i t' rest'' heq
        by_cases htb : t' = b
        · rw [if_pos htb] at h
          rw [htb] at heq
          obtain ⟨y, hy, h⟩ := Option.bind_eq_some_iff.mp h
          obtain ⟨th, hth', h⟩ := Option.bind_eq_some_iff.mp h
          obtain ⟨z, hz, h⟩ := Option.bind_eq_some_iff.mp h
          obtain ⟨⟨c, sep, ks⟩, hc, h⟩ := Option.map_eq_some_iff.mp h
          cases h
          have h1 := takeText_spec rest'
          rw [heq, stripPrefix?_eq_some hy, stripSuffix?_eq_some hth'] at h1
          have h2 := takeText_spec rest''
          rw [stripPrefix?_eq_some hz] at h2
          generalize (takeText rest'').snd = R at hc h2
          have e : syms (turnItems f (.assistant (some (.text th)) c sep ks 0)) =
              .ctrl f.ids.imStart :: (lit tAsst ++ (.ctrl t0 ::
                (lit (['\n'] ++ th ++ ['\n']) ++ (.ctrl b :: (lit ['\n', '\n'] ++
                  syms ([pay c 0 true] ++ callsItems f sep 0 ks ++ footer f 0 true)))))) := by
            simp [turnItems, hth, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit]
          rw [e, ← contentCalls_sound f hc, ← h1, ← h2]
          simp [lit]
        · rw [if_neg htb] at h
          cases h
      · cases h
    · rw [if_neg h0] at h
      obtain ⟨⟨c, sep, ks⟩, hc, h⟩ := Option.map_eq_some_iff.mp h
      cases h
      exact hnone c sep ks hc
  · obtain ⟨⟨c, sep, ks⟩, hc, h⟩ := Option.map_eq_some_iff.mp h
    cases h
    exact hnone c sep ks hc

theorem resultPiece_sound (b : Token) (p : List Sym) (r : LPay × Nat) (rest : List Sym)
    (h : resultPiece b p = some (r, rest)) : p = gR b r ++ rest := by
  unfold resultPiece at h
  have hp := takeText_spec p
  dsimp only at h
  split at h
  · rename_i t rest' heq
    by_cases htb : t = b
    · rw [if_pos htb] at h
      obtain ⟨y, hy, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨c, hc, h⟩ := Option.map_eq_some_iff.mp h
      cases h
      rw [← hp, heq, htb, stripPrefix?_eq_some hy, stripSuffix?_eq_some hc]
      simp [gR, pay, Piece.syms, lit]
    · rw [if_neg htb] at h
      cases h
  · cases h

theorem toolLines_sound {r : Chars} {ls : List Chars} (h : toolLines r = some ls) :
    ls.flatMap ('\n' :: ·) = r := by
  cases r with
  | nil =>
    simp only [toolLines, Option.some.injEq] at h
    subst h
    rfl
  | cons c J =>
    by_cases hc : c = '\n'
    · subst hc
      rw [toolLines_nl, Option.some.injEq] at h
      subst h
      obtain ⟨g, gs, hg⟩ : ∃ g gs, splitChar '\n' J = g :: gs := by
        cases hs : splitChar '\n' J with
        | nil => exact absurd hs (splitChar_ne_nil _ _)
        | cons g gs => exact ⟨g, gs, rfl⟩
      rw [hg, flatMap_nl, ← hg, joinWith_splitChar]
    · simp [toolLines, hc] at h

/-- The plain branch of `unlayoutSystem` lays out to its input. -/
theorem unlayoutSystem_plain_sound {x : Chars} :
    syms (turnItems f (.plain .system (.text x) 0)) =
      .ctrl f.ids.imStart :: (lit (tSystem ++ x) ++ footerSyms f) := by
  rw [← sys_name]
  simp [turnItems, PRole.name, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit,
    syms_footer]

/-- The tools branch of `unlayoutSystem` lays out to its input. -/
theorem unlayoutSystem_tools_sound {x : Chars} {t : QTurn}
    (h : ((stripSuffix? toolsOutro x).bind fun y => (splitFirst toolsIntro y).bind fun r =>
      (toolLines r.2).bind fun ls =>
        if r.1 = [] then some (QTurn.toolsSystem none ls 0)
        else (stripSuffix? ['\n', '\n'] r.1).map fun sys =>
          QTurn.toolsSystem (some (.text sys)) ls 0) = some t) :
    syms (turnItems f t) = .ctrl f.ids.imStart :: (lit (tSystem ++ x) ++ toolsTail f) := by
  obtain ⟨y, hy, h⟩ := Option.bind_eq_some_iff.mp h
  obtain ⟨⟨r1, r2⟩, hr, h⟩ := Option.bind_eq_some_iff.mp h
  obtain ⟨ls, hls, h⟩ := Option.bind_eq_some_iff.mp h
  have htl := toolLines_sound hls
  rw [stripSuffix?_eq_some hy, splitFirst_eq_some hr]
  by_cases h1 : r1 = []
  · simp only [h1, ↓reduceIte, Option.some.injEq] at h
    subst h
    subst h1
    simp [turnItems, ctl_piece, txt_piece, Piece.syms, lit, syms_tools, htl, toolsTail,
      syms_footer, footerSyms]
  · simp only [h1, ↓reduceIte] at h
    obtain ⟨sys, hs, h⟩ := Option.map_eq_some_iff.mp h
    subst h
    rw [stripSuffix?_eq_some hs]
    simp [turnItems, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit, syms_tools, htl,
      toolsTail, syms_footer, footerSyms]

/-- `unlayoutSystem` lays out to its input. -/
theorem unlayoutSystem_sound {x : Chars} {rest : List Sym} {t : QTurn}
    (h : unlayoutSystem f x rest = some t) :
    syms (turnItems f t) = .ctrl f.ids.imStart :: (lit (tSystem ++ x) ++ rest) := by
  unfold unlayoutSystem at h
  by_cases h1 : rest = footerSyms f
  · rw [if_pos h1] at h
    cases h
    subst h1
    exact unlayoutSystem_plain_sound f
  · rw [if_neg h1] at h
    by_cases h2 : rest = toolsTail f
    · rw [if_pos h2] at h
      subst h2
      exact unlayoutSystem_tools_sound f h
    · rw [if_neg h2] at h
      cases h

theorem map_textOf_text : ∀ cs : List Chars,
    ((cs.map fun r => (LPay.text r, (0 : Nat))).map fun r => textOf r.1) = cs
  | [] => rfl
  | c :: cs => by
    simp only [List.map_cons]
    rw [map_textOf_text cs]
    rfl

theorem results_syms25' (ht : f.ids.toolResponse = none) (cs : List Chars) (hcs : cs ≠ []) :
    syms ((cs.map fun r => (LPay.text r, (0 : Nat))).flatMap (resultItems f)) =
      lit (['\n'] ++ respOpenText ++ joinWith respSepText cs ++ respCloseText) := by
  obtain ⟨g, gs, rfl⟩ : ∃ g gs, cs = g :: gs := by
    cases cs with
    | nil => exact absurd rfl hcs
    | cons g gs => exact ⟨g, gs, rfl⟩
  have hm := map_textOf_text (g :: gs)
  rw [List.map_cons] at hm
  rw [List.map_cons, results_syms25 f ht _ _ (by simp [isText]), hm]

theorem unlayoutUser_sound {x : Chars} {rest : List Sym} {t : QTurn}
    (h : unlayoutUser f x rest = some t) :
    syms (turnItems f t) = .ctrl f.ids.imStart :: (lit (tUser ++ x) ++ rest) := by
  have hplain : ∀ c, stripPrefix? ['\n'] x = some c →
      syms (turnItems f (.plain .user (.text c) 0)) =
        .ctrl f.ids.imStart :: (lit (tUser ++ x) ++ footerSyms f) := by
    intro c hc
    rw [stripPrefix?_eq_some hc]
    simp [turnItems, PRole.name, ctl_piece, txt_piece, pay_piece', payPiece, Piece.syms, lit,
      syms_footer]
  unfold unlayoutUser at h
  split at h
  · rename_i a b hab
    by_cases h1 : rest = footerSyms f
    · rw [if_pos h1] at h
      obtain ⟨c, hc, h⟩ := Option.map_eq_some_iff.mp h
      subst h h1
      exact hplain c hc
    · rw [if_neg h1] at h
      by_cases h2 : x = ['\n']
      · rw [if_pos h2] at h
        dsimp only at h
        by_cases h3 : (splitAtCtrl a rest).1 = []
        · rw [if_neg (fun h' => h' h3)] at h
          obtain ⟨rs, hrs, h⟩ := Option.map_eq_some_iff.mp h
          subst h h2
          obtain ⟨hne, hpieces⟩ := piecesOf_parsePieces (resultPiece b) (gR b) (lit ['\n'])
            (footerSyms f) (fun p r' rest' h => resultPiece_sound b p r' rest' h) _ _ hrs
          have hj := splitAtCtrl_join a rest
          rw [h3, List.nil_append, hpieces] at hj
          obtain ⟨r, rs', rfl⟩ : ∃ r rs', rs = r :: rs' := by
            cases rs with
            | nil => exact absurd rfl hne
            | cons r rs' => exact ⟨r, rs', rfl⟩
          have e : syms (turnItems f (.toolGroup (r :: rs'))) =
              .ctrl f.ids.imStart :: (lit tUser ++
                (syms ((r :: rs').flatMap (resultItems f)) ++ footerSyms f)) := by
            simp [turnItems, ctl_piece, txt_piece, Piece.syms, lit, syms_footer]
          rw [e, results_syms f hab, hj, lit_append, List.append_assoc]
        · rw [if_pos h3] at h
          cases h
      · rw [if_neg h2] at h
        cases h
  · rename_i hab
    by_cases h1 : rest = footerSyms f
    · rw [if_pos h1] at h
      subst h1
      obtain ⟨c, hc, h⟩ := Option.bind_eq_some_iff.mp h
      by_cases hL : looksLikeResults c = true
      · rw [if_pos hL] at h
        obtain ⟨y, hy, h⟩ := Option.bind_eq_some_iff.mp h
        obtain ⟨z, hz, h⟩ := Option.map_eq_some_iff.mp h
        subst h
        have e : syms (turnItems f (.toolGroup ((splitSeq respSepText z).map fun r => (.text r, 0)))) =
            .ctrl f.ids.imStart :: (lit tUser ++
              (syms (((splitSeq respSepText z).map fun r => (LPay.text r, 0)).flatMap
                (resultItems f)) ++ footerSyms f)) := by
          simp [turnItems, ctl_piece, txt_piece, Piece.syms, lit, syms_footer]
        rw [e, results_syms25' f hab _ (splitSeq_ne_nil _ _), joinWith_splitSeq _ _ respSep_ne,
          stripPrefix?_eq_some hc, stripPrefix?_eq_some hy, stripSuffix?_eq_some hz]
        simp [lit]
      · rw [if_neg hL] at h
        cases h
        exact hplain c hc
    · rw [if_neg h1] at h
      cases h

theorem unlayoutTurn_sound {c : List Sym} {t : QTurn} (h : unlayoutTurn f c = some t) :
    syms (turnItems f t) = .ctrl f.ids.imStart :: c := by
  have hc := takeText_spec c
  unfold unlayoutTurn at h
  dsimp only at h
  split at h
  · rename_i x hx
    rw [unlayoutAssistant_sound f h, ← stripPrefix?_eq_some hx, hc]
  · split at h
    · rename_i x hx
      rw [unlayoutSystem_sound f h, ← stripPrefix?_eq_some hx, hc]
    · split at h
      · rename_i x hx
        rw [unlayoutUser_sound f h, ← stripPrefix?_eq_some hx, hc]
      · cases h

theorem unlayoutChunks_sound :
    ∀ (cs : List (List Sym)) (q : QConv), unlayoutChunks f cs = some q →
      syms (layout f q) = cs.flatMap (.ctrl f.ids.imStart :: ·)
  | [], q, h => by
    cases h
    rfl
  | [c], q, h => by
    unfold unlayoutChunks at h
    by_cases hp : Sym.ctrl f.ids.imStart :: c = syms (promptItems f 0)
    · rw [if_pos hp] at h
      cases h
      simp [layout, hp]
    · rw [if_neg hp] at h
      obtain ⟨t, ht, h⟩ := Option.map_eq_some_iff.mp h
      subst h
      simp [layout, unlayoutTurn_sound f ht]
  | c :: c' :: cs, q, h => by
    have h' : unlayoutChunks f (c :: c' :: cs) = (unlayoutTurn f c).bind fun t =>
        (unlayoutChunks f (c' :: cs)).map fun q => ⟨t :: q.turns, q.prompt⟩ := rfl
    rw [h'] at h
    obtain ⟨t, ht, h⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨q', hq', h⟩ := Option.map_eq_some_iff.mp h
    subst h
    have ih := unlayoutChunks_sound (c' :: cs) q' hq'
    obtain ⟨ts', p'⟩ := q'
    rw [show layout f ⟨t :: ts', p'⟩ = turnItems f t ++ layout f ⟨ts', p'⟩ by simp [layout],
      syms_append, ih, unlayoutTurn_sound f ht, List.flatMap_cons]
    rfl

/-- `unlayout` never invents a conversation: what it returns lays out to its input. -/
theorem layout_unlayout (s : List Sym) (l : QConv) (h : unlayout f s = some l) :
    syms (layout f l) = s := by
  unfold unlayout at h
  dsimp only at h
  by_cases h1 : (splitAtCtrl f.ids.imStart s).1 = []
  · rw [if_pos h1] at h
    have hj := splitAtCtrl_join f.ids.imStart s
    rw [h1, List.nil_append] at hj
    rw [unlayoutChunks_sound f _ _ h, hj]
  · rw [if_neg h1] at h
    cases h

end Sound

end Verified.Qwen

end
