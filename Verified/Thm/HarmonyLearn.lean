module

public import Verified.Thm.HarmonyMask

public section

/-!
# gpt-oss (Harmony): the learned tokens of a conversation whose assistant turns are sampled

`mask_sampled`: in a conversation whose assistant messages are all sampled turns, the learned
tokens are exactly the sampled tokens of each assistant message, in order, each owned by its
message. A sampled turn is laid out as `<|start|>assistant` (not learned: it is the generation
prompt the policy was given) followed by the sampled tokens (learned); the tokens hold their own
channel headers and stop token (`<|end|>`, `<|call|>` or `<|return|>`) and nothing is added
after them. The system message, the developer turn, the user and tool-result turns and the
generation prompt are never learned.
-/

namespace Verified.Harmony

open Verified

variable (f : HarmonyFmt)

/-- The learned tokens of an item, with owners. -/
@[expose] def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a turn of a conversation whose assistant turns are sampled. -/
@[expose] def turnLearned : HTurn → List (Token × Nat)
  | .sampled ts o => ts.map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message. -/
@[expose] def msgLearned (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => ts.map (·, x.2)
  | _, _ => []

theorem turnItems_itemLearned (t : HTurn) (h : t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turnItems f t).flatMap itemLearned = turnLearned t := by
  cases hl : t.learned
  · have e : turnLearned t = [] := by
      cases t <;> simp_all [turnLearned, HTurn.learned]
    rw [e]
    refine List.flatMap_eq_nil_iff.mpr fun it hit => ?_
    obtain ⟨-, hlt⟩ := turnItems_ann f t it hit
    have hf : it.ann.learn = false := by
      cases h' : it.ann.learn
      · rfl
      · rw [hlt h'] at hl
        cases hl
    simp [itemLearned, hf]
  · obtain ⟨ts, o, rfl⟩ := h hl
    simp [turnItems, promptItems, head, itemLearned, turnLearned, ctl, txt]

theorem turns_itemLearned (turns : List HTurn)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turns.flatMap (turnItems f)).flatMap itemLearned = turns.flatMap turnLearned := by
  induction turns with
  | nil => rfl
  | cons t ts ih =>
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.flatMap_cons]

theorem lowerMsgs_learned (gen : Bool) :
    ∀ (ms : List Message) (last : Option Chars) (i : Nat) (ts : List HTurn),
      lowerMsgs f gen last i ms = some ts →
      (∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      ts.flatMap turnLearned = (ms.zipIdx i).flatMap msgLearned ∧
        ∀ t ∈ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o
  | [], _, _, ts, h, _ => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun t ht => by cases ht⟩
  | ⟨role, blocks⟩ :: ms, last, i, ts, h, hs => by
    have hs' : ∀ m ∈ ms, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts] :=
      fun m' hm' => hs m' (List.mem_cons_of_mem _ hm')
    cases role with
    | assistant =>
      obtain ⟨sts, e⟩ := hs _ List.mem_cons_self rfl
      simp only at e
      subst e
      simp only [lowerMsgs, lowerAsst, Option.bind_some] at h
      obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
      obtain ⟨e1, s1⟩ := lowerMsgs_learned gen ms _ _ _ hts' hs'
      refine ⟨?_, ?_⟩
      · rw [List.flatMap_append, e1, List.zipIdx_cons, List.flatMap_cons]
        simp [turnLearned, msgLearned]
      · intro t ht
        rcases List.mem_append.mp ht with ht | ht
        · rw [List.mem_singleton.mp ht]
          exact fun _ => ⟨_, _, rfl⟩
        · exact s1 t ht
    | tool =>
      simp only [lowerMsgs] at h
      split at h
      · obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨e1, s1⟩ := lowerMsgs_learned gen ms _ _ _ hts' hs'
        refine ⟨by rw [List.flatMap_cons, e1, List.zipIdx_cons, List.flatMap_cons]; rfl, ?_⟩
        intro t ht
        rcases List.mem_cons.mp ht with rfl | ht
        · intro hl
          cases hl
        · exact s1 t ht
      · cases h
    | user =>
      simp only [lowerMsgs] at h
      obtain ⟨p, -, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
      obtain ⟨e1, s1⟩ := lowerMsgs_learned gen ms _ _ _ hts' hs'
      refine ⟨by rw [List.flatMap_cons, e1, List.zipIdx_cons, List.flatMap_cons]; rfl, ?_⟩
      intro t ht
      rcases List.mem_cons.mp ht with rfl | ht
      · intro hl
        cases hl
      · exact s1 t ht
    | system => simp [lowerMsgs] at h
    | developer => simp [lowerMsgs] at h

theorem msgLearned_pre (pre : List Message) (h : ∀ m ∈ pre, m.role ≠ .assistant) :
    ∀ n, (pre.zipIdx n).flatMap msgLearned = [] := by
  induction pre with
  | nil => intro n; rfl
  | cons m pre ih =>
    intro n
    rw [List.zipIdx_cons, List.flatMap_cons, ih (fun m' hm' => h m' (List.mem_cons_of_mem _ hm'))]
    have hm := h m List.mem_cons_self
    rcases m with ⟨role, blocks⟩
    cases role <;> first | exact absurd rfl hm | rfl

/-- In a conversation whose assistant messages are all sampled turns, the learned tokens are
exactly the sampled tokens of each assistant message, in order, each owned by its message: the
`<|start|>assistant` header before them is not learned and nothing after them is added. -/
theorem mask_sampled (codec : Codec) (c : Conversation) (l : HConv) (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => ts.map (·, i)
        | _, _ => []) := by
  obtain ⟨tt, instr, rest, i0, ts, hh, hts, hturns⟩ := lower_spec f hl
  obtain ⟨hd, e, hlen, hpre⟩ := headOf_spec hh
  dsimp only at e hlen
  have hrest : ∀ m ∈ rest, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts] :=
    fun m hm => hs m (by rw [e]; exact List.mem_append_right _ hm)
  obtain ⟨hL, hS⟩ := lowerMsgs_learned f _ rest none i0 ts hts hrest
  have hdev : ∀ t ∈ (devTurn instr tt).toList, t.learned = false :=
    fun t ht => devTurn_learned (Option.mem_toList.mp ht)
  have hS' : ∀ t ∈ l.turns, t.learned = true → ∃ ts o, t = .sampled ts o := by
    intro t ht htl
    rw [hturns] at ht
    rcases List.mem_append.mp ht with ht | ht
    · rw [hdev t ht] at htl
      cases htl
    · exact hS t ht htl
  have hd0 : (devTurn instr tt).toList.flatMap turnLearned = [] := by
    refine List.flatMap_eq_nil_iff.mpr fun t ht => ?_
    have := hdev t ht
    cases t <;> simp_all [turnLearned, HTurn.learned]
  have hL' : l.turns.flatMap turnLearned = c.messages.zipIdx.flatMap msgLearned := by
    rw [hturns, List.flatMap_append, hL, hd0, e, List.zipIdx_append, List.flatMap_append,
      msgLearned_pre hd hpre, Nat.zero_add, hlen]
  have hno : ∀ it ∈ layout f l, it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
    intro it hit hlearn cs hcs
    rcases layout_mem f hit with h | ⟨t, ht, hit⟩
    · rw [h] at hlearn
      cases hlearn
    · obtain ⟨-, hlt⟩ := turnItems_ann f t it hit
      obtain ⟨sts, o, rfl⟩ := hS' t ht (hlt hlearn)
      simp only [turnItems, promptItems, head, List.mem_append, List.mem_cons, List.not_mem_nil,
        or_false] at hit
      rcases hit with (rfl | rfl) | rfl
      · cases hcs
      · simp [txt] at hlearn
      · cases hcs
  have key : (layout f l).flatMap itemLearned = c.messages.zipIdx.flatMap msgLearned := by
    unfold layout
    simp only [List.flatMap_append]
    rw [turns_itemLearned f _ hS', hL']
    cases l.prompt <;> simp [head, promptItems, itemLearned, ctl, txt]
  rw [learned_of_no_learned_text codec _ hno]
  exact key

end Verified.Harmony

end
