module

public import Verified.Thm.LlamaRead

public section

/-!
# Llama 3.1: `unlayout` never invents a conversation

Each reader (`unlayoutSystem`, `unlayoutUserTools`, `unlayoutTurn`, `unlayoutRest`) only returns
turns whose items lay out to the symbols it read (`unlayoutSystem_eq_some`, …), so whatever
`unlayout` returns lays out to its input (`layout_of_unlayout`).
-/

namespace Verified.Llama

open Verified

/-! ## `unlayout` never invents a conversation -/

theorem joinWith_append_of_ne_nil (a b : List Chars) (hb : b ≠ []) :
    joinWith nl2 (a ++ b) = toolBlocks a ++ joinWith nl2 b := by
  induction a with
  | nil => rfl
  | cons x a ih =>
    rw [List.cons_append, joinWith_cons_of_ne_nil _ _ _ (by simp [hb]), ih]
    simp [toolBlocks, List.append_assoc]

theorem parseBlocks_eq_some {w : Chars} {ts : List Chars} {sys : Chars}
    (h : parseBlocks w = some (ts, sys)) : w = toolBlocks ts ++ sys := by
  unfold parseBlocks at h
  dsimp only at h
  split at h
  · cases h
  · rename_i hne
    cases h
    have e := joinWith_splitSeq nl2 w nl2_ne_nil
    rw [← List.takeWhile_append_dropWhile (p := fun p : Chars => p.head? == some '{')
      (l := splitSeq nl2 w), joinWith_append_of_ne_nil _ _ (fun hn => hne (by rw [hn]; rfl))] at e
    exact e.symm

theorem unlayoutTurn_eq_some {f : LlamaFmt} {c : List Sym} {st : LTurn}
    (h : unlayoutTurn f c = some st) : .ctrl f.ids.startHeader :: c = syms (turnItems f st) := by
  unfold unlayoutTurn at h
  cases hb : turnBody f c with
  | none => rw [hb] at h; cases h
  | some r =>
    obtain ⟨role, x⟩ := r
    rw [hb, Option.bind_some] at h
    rw [turnBody_eq_some hb]
    dsimp only at h
    split at h
    · rename_i hr
      subst hr
      cases h
      rw [syms_turnItems_textual f _ rfl]
      rfl
    · split at h
      · rename_i hr
        subst hr
        cases h
        rw [syms_turnItems_textual f _ rfl]
        rfl
      · split at h
        · rename_i hr
          subst hr
          cases h
          rw [syms_turnItems_textual f _ rfl]
          rfl
        · split at h
          · rename_i hr
            subst hr
            cases h
            rw [syms_turnItems_textual f _ rfl]
            rfl
          · split at h
            · rename_i hr
              subst hr
              split at h
              · rename_i n a hp
                cases h
                rw [syms_turnItems_textual f _ rfl, parseCall_eq_some hp]
                rfl
              · cases h
                rw [syms_turnItems_textual f _ rfl]
                rfl
            · cases h

theorem unlayoutUserTools_eq_some {f : LlamaFmt} {u : List Sym} {ut : LTurn}
    (h : unlayoutUserTools f u = some ut) :
    .ctrl f.ids.startHeader :: u = syms (turnItems f ut) := by
  unfold unlayoutUserTools at h
  cases hb : turnBody f u with
  | none => rw [hb] at h; cases h
  | some r =>
    obtain ⟨role, x⟩ := r
    rw [hb, Option.bind_some] at h
    rw [turnBody_eq_some hb]
    dsimp only at h
    split at h
    · cases h
    · rename_i hr
      have hr' : role = ['u', 's', 'e', 'r'] := by simpa using hr
      subst hr'
      cases hw : stripPrefix? userToolsIntro x with
      | none => rw [hw] at h; cases h
      | some w =>
        rw [hw, Option.bind_some] at h
        obtain ⟨⟨ts, u'⟩, hp, rfl⟩ := Option.map_eq_some_iff.mp h
        rw [syms_turnItems_textual f _ rfl, stripPrefix?_eq_some hw, parseBlocks_eq_some hp]
        simp [chunk, bodyText, List.append_assoc]

theorem unlayoutSystem_eq_some {f : LlamaFmt} {c : List Sym} {st : LTurn}
    (h : unlayoutSystem f c = some st) : .ctrl f.ids.startHeader :: c = syms (turnItems f st) := by
  unfold unlayoutSystem at h
  cases hb : turnBody f c with
  | none => rw [hb] at h; cases h
  | some r =>
    obtain ⟨role, x⟩ := r
    rw [hb, Option.bind_some] at h
    rw [turnBody_eq_some hb]
    dsimp only at h
    split at h
    · cases h
    · rename_i hr
      have hr' : role = ['s', 'y', 's', 't', 'e', 'm'] := by simpa using hr
      subst hr'
      cases he : stripPrefix? envLine x with
      | some y =>
        simp only [he] at h
        rw [stripPrefix?_eq_some he]
        cases hz : stripPrefix? (dateLines f.date) y with
        | none => rw [hz] at h; cases h
        | some z =>
          rw [hz, Option.bind_some] at h
          rw [stripPrefix?_eq_some hz]
          cases hu : f.toolsInUser
          · simp only [hu, Bool.not_false, Bool.and_self, ↓reduceIte] at h
            cases hw : stripPrefix? systemToolsIntro z with
            | none => rw [hw] at h; cases h
            | some w =>
              rw [hw, Option.bind_some] at h
              obtain ⟨⟨ts, sys⟩, hp, rfl⟩ := Option.map_eq_some_iff.mp h
              rw [syms_turnItems_textual f _ rfl, stripPrefix?_eq_some hw, parseBlocks_eq_some hp]
              simp [chunk, bodyText, hu, List.append_assoc]
          · simp only [hu, Bool.not_true, Bool.and_false, Bool.false_eq_true, ↓reduceIte,
              Option.some.injEq] at h
            subst h
            rw [syms_turnItems_textual f _ rfl]
            simp [chunk, bodyText, hu]
      | none =>
        simp only [he] at h
        cases hz : stripPrefix? (dateLines f.date) x with
        | none => rw [hz] at h; cases h
        | some z =>
          rw [hz, Option.bind_some] at h
          simp only [Bool.false_and, Bool.false_eq_true, ↓reduceIte, Option.some.injEq] at h
          subst h
          rw [syms_turnItems_textual f _ rfl, stripPrefix?_eq_some hz]
          simp [chunk, bodyText]

theorem flatMap_cons_eq {f : LlamaFmt} {u : List Sym} {cs : List (List Sym)} {ut : LTurn}
    {q : LConv} (hu : .ctrl f.ids.startHeader :: u = syms (turnItems f ut))
    (hr : cs.flatMap (.ctrl f.ids.startHeader :: ·) =
      syms (q.turns.flatMap (turnItems f) ++ promptOf f q.prompt)) :
    (u :: cs).flatMap (.ctrl f.ids.startHeader :: ·) =
      syms ((ut :: q.turns).flatMap (turnItems f) ++ promptOf f q.prompt) := by
  simp only [List.flatMap_cons, hu, hr, List.append_assoc, syms_append]

theorem unlayoutRest_eq_some {f : LlamaFmt} : ∀ {cs : List (List Sym)} {q : LConv},
    unlayoutRest f cs = some q →
      cs.flatMap (.ctrl f.ids.startHeader :: ·) =
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
      rw [hc]
      rfl
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

theorem layout_cons_eq (f : LlamaFmt) (st : LTurn) (q : LConv) (c : List Sym)
    (cs : List (List Sym))
    (h : (c :: cs).flatMap (.ctrl f.ids.startHeader :: ·) =
      syms ((st :: q.turns).flatMap (turnItems f) ++ promptOf f q.prompt)) :
    syms (layout f ⟨st :: q.turns, q.prompt⟩) =
      [.ctrl f.ids.bos] ++ (c :: cs).flatMap (.ctrl f.ids.startHeader :: ·) := by
  rw [h, layout_eq]
  simp [ctl, Piece.syms, List.append_assoc]

theorem unlayout_generic {f : LlamaFmt} {s c : List Sym} {cs : List (List Sym)} {st : LTurn}
    {l : LConv} (hj : [.ctrl f.ids.bos] ++ (c :: cs).flatMap (.ctrl f.ids.startHeader :: ·) = s)
    (hst : .ctrl f.ids.startHeader :: c = syms (turnItems f st))
    (h : (unlayoutRest f cs).map (fun q => (⟨st :: q.turns, q.prompt⟩ : LConv)) = some l) :
    syms (layout f l) = s := by
  obtain ⟨q, hq, rfl⟩ := Option.map_eq_some_iff.mp h
  rw [← hj]
  exact layout_cons_eq f st q c cs (flatMap_cons_eq hst (unlayoutRest_eq_some hq))

/-- What `unlayout` returns lays out to its input. -/
theorem layout_of_unlayout (f : LlamaFmt) (s : List Sym) (l : LConv)
    (h : unlayout f s = some l) : syms (layout f l) = s := by
  have hj := splitAtCtrl_join f.ids.startHeader s
  unfold unlayout at h
  dsimp only at h
  split at h
  · cases h
  · rename_i hb
    have hb' : (splitAtCtrl f.ids.startHeader s).1 = [.ctrl f.ids.bos] := by simpa using hb
    rw [hb'] at hj
    split at h
    · rename_i c cs hr
      rw [hr] at hj
      cases hs : unlayoutSystem f c with
      | none => rw [hs] at h; cases h
      | some st =>
        rw [hs, Option.bind_some] at h
        have hst := unlayoutSystem_eq_some hs
        cases st
        case system env tools sys o =>
          cases env
          · simp only at h
            exact unlayout_generic hj hst h
          · simp only at h
            split at h
            · cases cs with
              | nil => simp at h
              | cons u cs' =>
                simp only at h
                cases hu : unlayoutUserTools f u with
                | none => rw [hu] at h; cases h
                | some ut =>
                  rw [hu, Option.bind_some] at h
                  obtain ⟨q, hq, rfl⟩ := Option.map_eq_some_iff.mp h
                  have hut := unlayoutUserTools_eq_some hu
                  rw [← hj]
                  exact layout_cons_eq f _ ⟨ut :: q.turns, q.prompt⟩ c (u :: cs')
                    (flatMap_cons_eq hst (flatMap_cons_eq hut (unlayoutRest_eq_some hq)))
            · exact unlayout_generic hj hst h
        all_goals
          simp only at h
          exact unlayout_generic hj hst h
    · cases h

end Verified.Llama

end
