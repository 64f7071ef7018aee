module

public import Verified.Thm.Gemma

public section

/-!
# Gemma 3: a sampled answer after a user message always lowers

`prompt_lowers` completes `prompt_prefix` (`Thm/Gemma.lean`): when a conversation with a
generation prompt lowers and ends with a user message, the conversation with a sampled
assistant turn appended (tokens free of control ids) lowers too, so `prompt_prefix` applies.
-/

namespace Verified.Gemma

open Verified

theorem lowerMsg_user {pre : Chars} {u : Bool} {i : Nat} {m : Message} {t : GTurn}
    (h : lowerMsg pre u i m = some t) (hu : m.role = .user) : u = true := by
  rcases m with ⟨role, blocks⟩
  simp only at hu
  subst hu
  cases u
  · unfold lowerMsg at h
    rw [if_neg (by decide)] at h
    cases h
  · rfl

theorem lowerMsg_sampled_after (j : Nat) (ts : List Token) :
    lowerMsg [] false j ⟨.assistant, [.sampled ts]⟩ = some (.sampled ts j) := by
  unfold lowerMsg
  rw [if_neg (by decide)]

theorem lowerMsgs_snoc (ts : List Token) : ∀ {rest : List Message} {pre : Chars} {u : Bool}
    {i : Nat} {tl : List GTurn}, lowerMsgs pre u i rest = some tl →
      (∀ m ∈ rest.getLast?, m.role = .user) → rest ≠ [] →
      lowerMsgs pre u i (rest ++ [⟨.assistant, [.sampled ts]⟩]) =
        some (tl ++ [.sampled ts (i + rest.length)])
  | [], _, _, _, _, _, _, hne => absurd rfl hne
  | m :: rest, pre, u, i, tl, h, hl, _ => by
    simp only [lowerMsgs] at h
    cases hm : lowerMsg pre u i m with
    | none => rw [hm] at h; cases h
    | some t0 =>
      rw [hm, Option.bind_some] at h
      cases hr : lowerMsgs [] (!u) (i + 1) rest with
      | none => rw [hr] at h; cases h
      | some ts' =>
        rw [hr, Option.map_some, Option.some.injEq] at h
        subst h
        cases rest with
        | nil =>
          have hu := lowerMsg_user hm (hl m rfl)
          subst hu
          simp only [lowerMsgs, Option.some.injEq] at hr
          subst hr
          show (lowerMsg pre true i m).bind (fun t =>
            (lowerMsgs [] false (i + 1) [⟨.assistant, [.sampled ts]⟩]).map (t :: ·)) = _
          rw [hm, Option.bind_some]
          show (((lowerMsg [] false (i + 1) ⟨.assistant, [.sampled ts]⟩).bind fun t =>
            (lowerMsgs [] (!false) (i + 1 + 1) []).map (t :: ·)).map (t0 :: ·)) = _
          rw [lowerMsg_sampled_after]
          rfl
        | cons m2 rest' =>
          have hl' : ∀ m ∈ (m2 :: rest').getLast?, m.role = .user := by
            intro x hx
            apply hl x
            simpa [List.getLast?_cons_cons] using hx
          have ih := lowerMsgs_snoc ts hr hl' (List.cons_ne_nil _ _)
          show (lowerMsg pre u i m).bind (fun t =>
            (lowerMsgs [] (!u) (i + 1) ((m2 :: rest') ++ [⟨.assistant, [.sampled ts]⟩])).map
              (t :: ·)) = _
          rw [hm, Option.bind_some, ih, Option.map_some]
          have e : i + 1 + (m2 :: rest').length = i + (m :: m2 :: rest').length := by
            simp only [List.length_cons]
            omega
          rw [e]
          rfl

theorem headOf_rest_ne {c : Conversation} {y : Chars × List Message × Nat}
    (h : headOf c = some y) (hne : c.messages ≠ []) : y.2.1 ≠ [] := by
  rcases c with ⟨ms, tools, g⟩
  cases ms with
  | nil => exact absurd rfl hne
  | cons m ms =>
    simp only [headOf] at h
    split at h
    · split at h
      · simp only [Option.some.injEq] at h
        subst h
        first | exact List.cons_ne_nil _ _ | (intro h0; simp_all)
      · cases h
    · simp only [Option.some.injEq] at h
      subst h
      exact List.cons_ne_nil _ _

/-- After a user message, a sampled answer always lowers: `prompt_prefix` then describes its
render. -/
theorem prompt_lowers (f : GemmaFmt) (ms : List Message) (tools : Option (List Json))
    (ts : List Token) (l : GConv) (hms : ms ≠ []) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hlast : ∀ m ∈ ms.getLast?, m.role = .user) (hts : allFree f.ids.reserved ts = true) :
    ∃ l', lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l' := by
  obtain ⟨htools, y, hy, tl, htl, hok, -⟩ := lower_some hl
  obtain ⟨hd, e, -, -⟩ := headOf_spec hy
  have hrest : y.2.1 ≠ [] := headOf_rest_ne hy hms
  have hlast' : ∀ m ∈ y.2.1.getLast?, m.role = .user := by
    intro m hm
    apply hlast m
    simp only at e
    rw [e, List.getLast?_append]
    simp only [Option.mem_def] at hm ⊢
    rw [hm]
    rfl
  have hsn := lowerMsgs_snoc ts htl hlast' hrest
  refine ⟨⟨tl ++ [.sampled ts (y.2.2 + y.2.1.length)], none⟩, ?_⟩
  unfold lower
  rw [if_neg (by simpa using htools), headOf_append hms hy, Option.bind_some]
  show (lowerMsgs y.1 true y.2.2 (y.2.1 ++ [⟨.assistant, [.sampled ts]⟩])).bind _ = _
  rw [hsn, Option.bind_some, List.all_append, hok]
  simp [turnOk, hts]

end Verified.Gemma

end
