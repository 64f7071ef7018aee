module

public import Verified.Thm.Gemma

public section

/-!
# Gemma 3: the learned tokens of a conversation whose assistant turns are sampled

`mask_sampled`: in a conversation whose assistant messages are all sampled turns, the learned
tokens are exactly the sampled tokens of each assistant message followed by `<end_of_turn>`,
in order, each owned by its message (the `\n` after `<end_of_turn>`, the headers, the user and
system text are never learned).
-/

namespace Verified.Gemma

open Verified

/-- The learned tokens of an item, with owners. -/
@[expose] def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a sampled turn. -/
@[expose] def turnLearned (f : GemmaFmt) : GTurn → List (Token × Nat)
  | .sampled ts o => (ts ++ [f.ids.endTurn]).map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message. -/
@[expose] def msgLearned (f : GemmaFmt) (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [f.ids.endTurn]).map (·, x.2)
  | _, _ => []

theorem turnItems_itemLearned (f : GemmaFmt) (t : GTurn)
    (h : t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turnItems f t).flatMap itemLearned = turnLearned f t := by
  cases t with
  | user pre p o =>
    cases p <;> simp [turnItems, header, footer, ctl, txt, pay, itemLearned, turnLearned]
  | model p o =>
    obtain ⟨_, _, e⟩ := h rfl
    cases e
  | sampled ts o =>
    simp [turnItems, promptItems, header, footer, ctl, txt, itemLearned, turnLearned]

theorem turns_itemLearned (f : GemmaFmt) (turns : List GTurn)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turns.flatMap (turnItems f)).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  induction turns with
  | nil => rfl
  | cons t ts ih =>
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.flatMap_cons]

theorem layout_itemLearned (f : GemmaFmt) (turns : List GTurn) (p : Option Nat)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (layout f ⟨turns, p⟩).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  have hp : (promptOf f p).flatMap itemLearned = [] := by
    cases p <;> simp [promptOf, promptItems, header, ctl, txt, itemLearned]
  rw [layout_eq, List.flatMap_append, List.flatMap_append, hp, List.append_nil,
    turns_itemLearned f _ h]
  rfl

theorem lowerMsg_learned {f : GemmaFmt} {pre : Chars} {u : Bool} {i : Nat} {m : Message}
    {t : GTurn} (h : lowerMsg pre u i m = some t)
    (hs : m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    turnLearned f t = msgLearned f (m, i) ∧ (t.learned = true → ∃ ts o, t = .sampled ts o) := by
  rcases m with ⟨role, blocks⟩
  by_cases hr : role = .assistant
  · subst hr
    obtain ⟨ts, e⟩ := hs rfl
    simp only at e
    subst e
    have ht := lowerMsg_sampled h
    subst ht
    exact ⟨rfl, fun _ => ⟨ts, i, rfl⟩⟩
  · obtain ⟨-, hl⟩ := lowerMsg_spec h
    have hlf : t.learned = false := by
      cases hlt : t.learned
      · rfl
      · exact absurd (hl hlt) hr
    refine ⟨?_, fun h' => by rw [hlf] at h'; cases h'⟩
    have e1 : turnLearned f t = [] := by
      cases t <;> simp_all [turnLearned, GTurn.learned]
    rw [e1]
    cases role <;> first | exact absurd rfl hr | rfl

theorem lowerMsgs_learned {f : GemmaFmt} : ∀ {rest : List Message} {pre : Chars} {u : Bool}
    {i : Nat} {ts : List GTurn}, lowerMsgs pre u i rest = some ts →
      (∀ m ∈ rest, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      ts.flatMap (turnLearned f) = (rest.zipIdx i).flatMap (msgLearned f) ∧
        ∀ t ∈ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o
  | [], _, _, _, ts, h, _ => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun t ht => by cases ht⟩
  | m :: rest, pre, u, i, ts, h, hs => by
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
        obtain ⟨h1, h2⟩ := lowerMsg_learned (f := f) hm (hs m List.mem_cons_self)
        obtain ⟨h3, h4⟩ := lowerMsgs_learned (f := f) hr
          (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))
        refine ⟨?_, ?_⟩
        · rw [List.flatMap_cons, h1, h3, List.zipIdx_cons, List.flatMap_cons]
        · intro t ht
          rcases List.mem_cons.mp ht with rfl | ht
          · exact h2
          · exact h4 t ht

theorem msgLearned_pre (f : GemmaFmt) (pre : List Message)
    (h : ∀ m ∈ pre, m.role ≠ .assistant) : ∀ n, (pre.zipIdx n).flatMap (msgLearned f) = [] := by
  induction pre with
  | nil => intro n; rfl
  | cons m pre ih =>
    intro n
    rw [List.zipIdx_cons, List.flatMap_cons, ih (fun m' hm' => h m' (List.mem_cons_of_mem _ hm'))]
    have hm := h m List.mem_cons_self
    rcases m with ⟨role, blocks⟩
    cases role <;> first | exact absurd rfl hm | rfl

theorem sampled_no_learned_text (f : GemmaFmt) (ts : List Token) (o : Nat) :
    ∀ it ∈ turnItems f (.sampled ts o), it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
  simp [turnItems, promptItems, header, footer, ctl, txt]

/-- In a conversation whose assistant turns are all sampled, the learned tokens are exactly
the sampled tokens of each assistant message followed by `<end_of_turn>`, in order, each owned
by its message. -/
theorem mask_sampled (f : GemmaFmt) (codec : Codec) (c : Conversation) (l : GConv)
    (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => (ts ++ [f.ids.endTurn]).map (·, i)
        | _, _ => []) := by
  obtain ⟨-, y, hy, ts, hts, -, rfl⟩ := lower_some hl
  obtain ⟨hd, e, hlen, hpre⟩ := headOf_spec hy
  have hrest : ∀ m ∈ y.2.1, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts] :=
    fun m hm => hs m (by rw [e]; exact List.mem_append_right _ hm)
  obtain ⟨hL, hS⟩ := lowerMsgs_learned (f := f) hts hrest
  have hno : ∀ it ∈ layout f ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩,
      it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
    intro it hit hlearn cs hcs
    rw [layout_eq] at hit
    simp only [List.mem_append, List.mem_flatMap] at hit
    rcases hit with (hit | ⟨t, ht, hit⟩) | hit
    · simp only [List.mem_singleton] at hit
      rw [hit] at hcs
      cases hcs
    · obtain ⟨htl, -⟩ := turnItems_learn f t it hit hlearn
      obtain ⟨ts', o, rfl⟩ := hS t ht htl
      exact sampled_no_learned_text f ts' o it hit hlearn cs hcs
    · rw [prompt_unlearned f _ it hit] at hlearn
      cases hlearn
  have key : (layout f ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩
      ).flatMap itemLearned = c.messages.zipIdx.flatMap (msgLearned f) := by
    rw [layout_itemLearned f _ _ hS, hL]
    simp only [e, List.zipIdx_append, List.flatMap_append, msgLearned_pre f hd hpre,
      List.nil_append, Nat.zero_add, hlen]
  rw [learned_of_no_learned_text codec _ hno]
  exact key

end Verified.Gemma

end
