module

public import Verified.Thm.DeepSeekLayout

public section

/-!
# Soundness of the DeepSeek-R1 parser

`unlayout` never invents a conversation: whatever it returns lays out to exactly the symbols it
read (`layout_unlayout`). Each reader is proved sound on its own: it returns a value and the
rest of the stream, and the value's symbols followed by the rest are the stream it was given.
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

@[simp] theorem syms_ctl (t : Token) (o : Nat) (l : Bool) : (ctl t o l).piece.syms = [.ctrl t] :=
  rfl

@[simp] theorem syms_txt (cs : Chars) (o : Nat) (l : Bool) : (txt cs o l).piece.syms = lit cs :=
  rfl

@[simp] theorem syms_pay_text (cs : Chars) (o : Nat) (l : Bool) :
    (pay (.text cs) o l).piece.syms = lit cs := rfl

theorem bodyStart_sound {s r : List Sym} {th : Option LPay} (o : Nat)
    (h : bodyStart f s = some (th, r)) : syms (thinkItems f o th) ++ r = s := by
  unfold bodyStart at h
  rcases s with _ | ⟨t | c | t, rest⟩
  · simp only [Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    rfl
  · by_cases ht : t = f.ids.think.1
    · try dsimp only at h
      try dsimp only at h
      rw [if_pos ht] at h
      subst ht
      have e0 := takeText_spec rest
      generalize takeText rest = r0 at h e0
      obtain ⟨x, y⟩ := r0
      dsimp only at h e0
      rcases y with _ | ⟨t' | c | t', rest'⟩
      · simp at h
      · by_cases ht' : t' = f.ids.think.2
        · try dsimp only at h
          rw [if_pos ht'] at h
          subst ht'
          simp only [Option.bind_eq_some_iff, Option.map_eq_some_iff, Prod.mk.injEq] at h
          obtain ⟨y, hy, th', hth, z, hz, rfl, rfl⟩ := h
          rw [← e0, stripPrefix?_eq_some hy, stripSuffix?_eq_some hth, stripPrefix?_eq_some hz]
          simp [thinkItems]
        · try dsimp only at h
          rw [if_neg ht'] at h
          cases h
      · simp at h
      · simp at h
    · try dsimp only at h
      try dsimp only at h
      rw [if_neg ht] at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl
  · simp only [Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    rfl
  · simp only [Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, rfl⟩ := h
    rfl

theorem callPiece_sound {s r : List Sym} {k : Call} (h : callPiece f s = some (k, r)) :
    lit callType ++ .ctrl f.ids.sep :: lit (k.name ++ jsonOpen ++ k.args ++ jsonClose) ++
      .ctrl f.ids.callEnd :: r = s := by
  unfold callPiece at h
  have e0 := takeText_spec s
  generalize takeText s = r0 at h e0
  obtain ⟨x, y⟩ := r0
  dsimp only at h e0
  rcases y with _ | ⟨t | c | t, rest⟩
  · simp at h
  · by_cases hc : x = callType ∧ t = f.ids.sep
    · try dsimp only at h
      try dsimp only at h
      rw [if_pos hc] at h
      obtain ⟨rfl, rfl⟩ := hc
      have e1 := takeText_spec rest
      generalize takeText rest = r1 at h e1
      obtain ⟨x', y'⟩ := r1
      dsimp only at h e1
      rcases y' with _ | ⟨e | c | e, rest'⟩
      · simp at h
      · by_cases he : e = f.ids.callEnd
        · try dsimp only at h
          try dsimp only at h
          rw [if_pos he] at h
          subst he
          simp only [Option.bind_eq_some_iff, Option.map_eq_some_iff, Prod.mk.injEq] at h
          obtain ⟨y, hy, ⟨a, b⟩, hab, hk, rfl⟩ := h
          subst hk
          rw [← e0, ← e1, stripSuffix?_eq_some hy, splitFirst_eq_some hab]
          simp
        · try dsimp only at h
          try dsimp only at h
          rw [if_neg he] at h
          cases h
      · simp at h
      · simp at h
    · try dsimp only at h
      try dsimp only at h
      rw [if_neg hc] at h
      cases h
  · simp at h
  · simp at h

theorem readCalls_sound (o : Nat) :
    ∀ n s ks r (nl : Bool), readCalls f n s = some (ks, r) →
      syms (callsItems f nl o ks) ++ .ctrl f.ids.callsEnd :: .ctrl f.ids.eos :: r =
        (if nl then .ch '\n' :: s else s) := by
  intro n
  induction n with
  | zero => intro s ks r nl h; simp [readCalls] at h
  | succ n ih =>
    intro s ks r nl h
    rcases s with _ | ⟨t | c | t, rest⟩
    · simp [readCalls] at h
    · simp only [readCalls] at h
      by_cases ht : t = f.ids.callBegin
      · try dsimp only at h
        try dsimp only at h
        rw [if_pos ht] at h
        subst ht
        simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨k, r1⟩, hk, h⟩ := h
        have e0 := callPiece_sound f hk
        dsimp only at h
        rcases r1 with _ | ⟨t1 | c1 | t1, r2⟩
        · simp at h
        · rcases r2 with _ | ⟨t2 | c2 | t2, r3⟩
          · simp at h
          · by_cases hab : t1 = f.ids.callsEnd ∧ t2 = f.ids.eos
            · try dsimp only at h
              try dsimp only at h
              rw [if_pos hab] at h
              obtain ⟨rfl, rfl⟩ := hab
              simp only [Option.some.injEq, Prod.mk.injEq] at h
              obtain ⟨rfl, rfl⟩ := h
              rw [← e0]
              cases nl <;> simp [callsItems, callItems]
            · try dsimp only at h
              try dsimp only at h
              rw [if_neg hab] at h
              cases h
          · simp at h
          · simp at h
        · rcases r2 with _ | ⟨t2 | c2 | t2, r3⟩
          · simp at h
          · by_cases hc : c1 = '\n' ∧ t2 = f.ids.callBegin
            · try dsimp only at h
              try dsimp only at h
              rw [if_pos hc] at h
              obtain ⟨rfl, rfl⟩ := hc
              simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
              obtain ⟨⟨ks', z⟩, hks, rfl, rfl⟩ := h
              have := ih _ ks' z true hks
              simp only [if_true] at this
              rw [← e0]
              cases nl <;> simp [callsItems, callItems, ← this]
            · try dsimp only at h
              try dsimp only at h
              rw [if_neg hc] at h
              cases h
          · simp at h
          · simp at h
        · simp at h
      · try dsimp only at h
        try dsimp only at h
        rw [if_neg ht] at h
        cases h
    · simp [readCalls] at h
    · simp [readCalls] at h

theorem readResults_sound :
    ∀ n s rs r, readResults f n s = some (rs, r) → syms (rs.flatMap (resultItems f)) ++ r = s := by
  intro n
  induction n with
  | zero => intro s rs r h; simp [readResults] at h
  | succ n ih =>
    intro s rs r h
    rcases s with _ | ⟨t | c | t, rest⟩
    · simp [readResults] at h
    · simp only [readResults] at h
      by_cases ht : t = f.ids.outputBegin
      · try dsimp only at h
        try dsimp only at h
        rw [if_pos ht] at h
        subst ht
        have e0 := takeText_spec rest
        generalize takeText rest = r0 at h e0
        obtain ⟨x, y⟩ := r0
        dsimp only at h e0
        rcases y with _ | ⟨e | c | e, r'⟩
        · simp at h
        · by_cases he : e = f.ids.outputEnd
          · try dsimp only at h
            try dsimp only at h
            rw [if_pos he] at h
            subst he
            rcases r' with _ | ⟨t2 | c2 | t2, r2⟩
            · simp only [Option.some.injEq, Prod.mk.injEq] at h
              obtain ⟨rfl, rfl⟩ := h
              rw [← e0]
              simp [resultItems]
            · by_cases ht2 : t2 = f.ids.outputBegin
              · try dsimp only at h
                try dsimp only at h
                rw [if_pos ht2] at h
                subst ht2
                simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
                obtain ⟨⟨rs', z⟩, hrs, rfl, rfl⟩ := h
                have := ih _ rs' z hrs
                rw [← e0]
                simp [resultItems, ← this]
              · try dsimp only at h
                try dsimp only at h
                rw [if_neg ht2] at h
                simp only [Option.some.injEq, Prod.mk.injEq] at h
                obtain ⟨rfl, rfl⟩ := h
                rw [← e0]
                simp [resultItems]
            · simp only [Option.some.injEq, Prod.mk.injEq] at h
              obtain ⟨rfl, rfl⟩ := h
              rw [← e0]
              simp [resultItems]
            · simp only [Option.some.injEq, Prod.mk.injEq] at h
              obtain ⟨rfl, rfl⟩ := h
              rw [← e0]
              simp [resultItems]
          · try dsimp only at h
            try dsimp only at h
            rw [if_neg he] at h
            cases h
        · simp at h
        · simp at h
      · try dsimp only at h
        try dsimp only at h
        rw [if_neg ht] at h
        cases h
    · simp [readResults] at h
    · simp [readResults] at h

theorem splitTail_sound (x : Chars) (rest : List Sym) :
    lit (splitTail f x rest).1 ++ (splitTail f x rest).2 = lit x ++ rest := by
  unfold splitTail
  split
  · split
    · split
      · rename_i y hy
        rw [stripSuffix?_eq_some hy]
        simp
      · rfl
    · rfl
  · rfl

theorem answer_sound {n : Nat} {after : Bool} {s r : List Sym} {t : DTurn}
    (h : answer f n after s = some (t, r)) :
    syms (turnItems f t) ++ r = syms (promptItems f after 0) ++ s := by
  unfold answer at h
  simp only [Option.bind_eq_some_iff] at h
  obtain ⟨⟨th, r1⟩, hb, h⟩ := h
  have e1 := bodyStart_sound f 0 hb
  have e2 := takeText_spec r1
  split at h
  · rename_i e r3 hr
    rw [hr] at e2
    split at h
    · rename_i he
      subst he
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rw [← e1, ← e2]
      simp [turnItems]
    · split at h
      · rename_i hc
        obtain ⟨rfl, rfl⟩ := hc
        simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
        obtain ⟨⟨ks, z⟩, hks, rfl, rfl⟩ := h
        have e3 := readCalls_sound f 0 n r3 ks z false hks
        simp only [Bool.false_eq_true, if_false] at e3
        rw [← e1, ← e2, ← e3]
        simp [turnItems, promptItems]
      · cases h
  · cases h

theorem laterCalls_sound {n : Nat} {s r : List Sym} {t : DTurn}
    (h : laterCalls f n s = some (t, r)) : syms (turnItems f t) ++ r = s := by
  unfold laterCalls at h
  simp only [Option.bind_eq_some_iff] at h
  obtain ⟨⟨th, r1⟩, hb, h⟩ := h
  have e1 := bodyStart_sound f 0 hb
  dsimp only at h
  rcases r1 with _ | ⟨t1 | c | t1, r2⟩
  · simp at h
  · simp at h
  · by_cases hc : c = '\n'
    · try dsimp only at h
      try dsimp only at h
      rw [if_pos hc] at h
      subst hc
      simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
      obtain ⟨⟨ks, z⟩, hks, rfl, rfl⟩ := h
      have e3 := readCalls_sound f 0 n r2 ks z true hks
      simp only [if_true] at e3
      rw [← e1, ← e3]
      simp [turnItems]
    · try dsimp only at h
      try dsimp only at h
      rw [if_neg hc] at h
      cases h
  · simp at h

theorem readTurn_sound {n : Nat} {s r : List Sym} {t : DTurn}
    (h : readTurn f n s = some (t, r)) : syms (turnItems f t) ++ r = s := by
  unfold readTurn at h
  split at h
  · rename_i u rest
    split at h
    · rename_i hu
      subst hu
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      have e := splitTail_sound f (takeText rest).1 (takeText rest).2
      rw [takeText_spec] at e
      simp [turnItems, e]
    · split at h
      · rename_i hu
        subst hu
        have := answer_sound f h
        simpa [promptItems] using this
      · split at h
        · rename_i hu
          subst hu
          have := answer_sound f h
          simpa [promptItems] using this
        · split at h
          · rename_i hu
            subst hu
            simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
            obtain ⟨⟨rs, z⟩, hrs, rfl, rfl⟩ := h
            have := readResults_sound f n rest rs z hrs
            simp [turnItems, groupOwner, this]
          · split at h
            · rename_i hu
              subst hu
              simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
              obtain ⟨⟨rs, z⟩, hrs, rfl, rfl⟩ := h
              have := readResults_sound f n _ rs z hrs
              simp [turnItems, this]
            · split at h
              · exact laterCalls_sound f h
              · cases h
  · exact laterCalls_sound f h
  · cases h

/-- The symbols of an optional generation prompt. -/
@[expose] def promptSyms : Option (Bool × Nat) → List Sym
  | some (a, o) => syms (genItems f a o)
  | none => []

theorem readTurns_sound :
    ∀ n s ts p, readTurns f n s = some (ts, p) →
      syms (ts.flatMap (turnItems f)) ++ promptSyms f p = s := by
  intro n
  induction n with
  | zero => intro s ts p h; simp [readTurns] at h
  | succ n ih =>
    intro s ts p h
    rcases s with _ | ⟨x, s'⟩
    · simp only [readTurns, Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      rfl
    · unfold readTurns at h
      simp only at h
      by_cases h1 : x :: s' = syms (genItems f false 0)
      · try dsimp only at h
        try dsimp only at h
        rw [if_pos h1] at h
        simp only [Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl⟩ := h
        rw [h1]
        simp [promptSyms]
      · try dsimp only at h
        try dsimp only at h
        rw [if_neg h1] at h
        by_cases h2 : x :: s' = [.ctrl f.ids.outputsEnd]
        · try dsimp only at h
          try dsimp only at h
          rw [if_pos h2] at h
          simp only [Option.some.injEq, Prod.mk.injEq] at h
          obtain ⟨rfl, rfl⟩ := h
          rw [h2]
          simp [promptSyms, genItems_true, promptItems]
        · try dsimp only at h
          try dsimp only at h
          rw [if_neg h2] at h
          simp only [Option.bind_eq_some_iff] at h
          obtain ⟨⟨t, z⟩, ht, h⟩ := h
          dsimp only at h
          by_cases hz : z.length < (x :: s').length
          · try dsimp only at h
            try dsimp only at h
            rw [if_pos hz] at h
            simp only [Option.map_eq_some_iff, Prod.mk.injEq] at h
            obtain ⟨⟨ts', p'⟩, hts, rfl, rfl⟩ := h
            have e1 := readTurn_sound f ht
            have e2 := ih z ts' p' hts
            rw [← e1, ← e2]
            simp
          · try dsimp only at h
            try dsimp only at h
            rw [if_neg hz] at h
            cases h

/-- `unlayout` never invents a conversation: what it returns lays out to its input. -/
theorem layout_unlayout (s : List Sym) (q : DConv) (h : unlayout f s = some q) :
    syms (layout f q) = s := by
  unfold unlayout at h
  rcases s with _ | ⟨b | c | b, rest⟩
  · simp at h
  · by_cases hb : b = f.ids.bos
    · try dsimp only at h
      try dsimp only at h
      rw [if_pos hb] at h
      subst hb
      have e2 := splitTail_sound f (takeText rest).1 (takeText rest).2
      rw [takeText_spec] at e2
      try dsimp only at h
      generalize splitTail f (takeText rest).1 (takeText rest).2 = x at h e2
      simp only [Option.map_eq_some_iff] at h
      obtain ⟨⟨ts, p⟩, hts, rfl⟩ := h
      have e1 := readTurns_sound f _ _ ts p hts
      have e3 : syms (layout f ⟨.text x.1, 0, ts, p⟩) =
          .ctrl f.ids.bos :: (lit x.1 ++ (syms (ts.flatMap (turnItems f)) ++ promptSyms f p)) := by
        cases p <;> simp [layout, promptSyms]
      rw [e3, e1, e2]
    · try dsimp only at h
      try dsimp only at h
      rw [if_neg hb] at h
      cases h
  · simp at h
  · simp at h

end Verified.DeepSeek

end
