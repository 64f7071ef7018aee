module

public import Verified.Spec.Llama
public import Verified.Thm.Format

public section

/-!
# Llama 3.1: the shape of `lower`

`lower` writes the head turns (the system turn, then the user turn that carries the tools when
`toolsInUser`), then one turn per later message (`lower_eq`, `headOf_spec`, `headOf_shape`).
Lowering an extension of a conversation keeps the old turns and appends the new messages' turns
(`lower_append`). Each lowered message turn is owned by its message, and only assistant messages
give learned turns (`lowerMsg_spec`). `llama31Ids_wf` (the reference ids are distinct) comes
first, so that checking it needs nothing but the spec.
-/

namespace Verified.Llama

open Verified

/-! ## The reference ids -/

/-- The control ids of the Llama 3.1 tokenizer are distinct (what `lawful` assumes). -/
theorem llama31Ids_wf : llama31Ids.wf = true := by decide

/-! ## The shape of `lower` -/

/-- Whether a turn has learned items. -/
@[expose] def LTurn.learned : LTurn → Bool
  | .plain r _ _ => r.isAssistant
  | .call .. => true
  | .sampled .. => true
  | _ => false

/-- The owner of a turn. -/
@[expose] def LTurn.owner : LTurn → Nat
  | .system _ _ _ o => o
  | .userTools _ _ o => o
  | .plain _ _ o => o
  | .call _ _ o => o
  | .ipython _ o => o
  | .sampled _ o => o


/-- The first step of `lower`: the system payload, the messages after it, their index. -/
@[expose] def firstOf : List Message → Option (LPay × List Message × Nat)
  | m :: ms => if m.role.isSystem then m.content?.map fun p => (trimPay p, ms, 1)
      else some (.text [], m :: ms, 0)
  | [] => some (.text [], [], 0)

/-- The system turn `lower` writes. -/
@[expose] def sysTurnOf (f : LlamaFmt) (tools : Option (List Json)) (sys : LPay) :
    LTurn :=
  .system tools.isSome (if f.toolsInUser then [] else (tools.getD []).map (Json.pretty 0)) sys 0

/-- The second step of `lower`: the head turns, the messages after them, their index. -/
@[expose] def withUserOf (f : LlamaFmt) (tools : Option (List Json))
    (x : LPay × List Message × Nat) :
    Option (List LTurn × List Message × Nat) :=
  if tools.isSome && f.toolsInUser then
    match x.2.1 with
    | m :: ms => if m.role.isUser then
        m.content?.map fun p =>
          ([sysTurnOf f tools x.1, .userTools ((tools.getD []).map (Json.pretty 0)) (trimPay p)
            x.2.2], ms, x.2.2 + 1)
      else none
    | [] => none
  else some ([sysTurnOf f tools x.1], x.2.1, x.2.2)

/-- The head turns of `lower` (system turn, tools user turn), the messages after them, their
index. -/
@[expose] def headOf (f : LlamaFmt) (c : Conversation) :
    Option (List LTurn × List Message × Nat) :=
  (firstOf c.messages).bind (withUserOf f c.tools)

/-- `lower` is the head turns, then the lowered messages after them. -/
theorem lower_eq (f : LlamaFmt) (c : Conversation) : lower f c = (headOf f c).bind fun x =>
    (lowerMsgs x.2.2 x.2.1).bind fun ts =>
      if (x.1 ++ ts).all (turnOk f) then
        some ⟨x.1 ++ ts, if c.addGenerationPrompt then some c.messages.length else none⟩
      else none := by
  rcases c with ⟨ms, tools, g⟩
  cases ms with
  | nil =>
    simp only [lower, headOf, firstOf, withUserOf, Option.bind_some]
    split <;> rfl
  | cons m ms =>
    simp only [lower, headOf, firstOf]
    split
    · cases m.content? with
      | none => rfl
      | some p =>
        simp only [Option.map_some, Option.bind_some, withUserOf]
        split <;> rfl
    · simp only [Option.bind_some, withUserOf]
      split <;> rfl

theorem firstOf_spec {ms : List Message} {x : LPay × List Message × Nat}
    (h : firstOf ms = some x) :
    ∃ pre, ms = pre ++ x.2.1 ∧ pre.length = x.2.2 ∧ ∀ m ∈ pre, m.role ≠ .assistant := by
  cases ms with
  | nil =>
    simp only [firstOf, Option.some.injEq] at h
    subst h
    exact ⟨[], rfl, rfl, by simp⟩
  | cons m ms =>
    by_cases hs : m.role.isSystem = true
    · simp only [firstOf, hs, ↓reduceIte] at h
      obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      refine ⟨[m], rfl, rfl, ?_⟩
      intro m' hm' e
      simp only [List.mem_singleton] at hm'
      subst hm'
      simp [e, Role.isSystem] at hs
    · simp only [firstOf, hs, Bool.false_eq_true, ↓reduceIte] at h
      cases h
      exact ⟨[], rfl, rfl, by simp⟩

theorem withUserOf_spec {f : LlamaFmt} {tools : Option (List Json)}
    {x : LPay × List Message × Nat} {y : List LTurn × List Message × Nat}
    (h : withUserOf f tools x = some y) :
    ∃ pre, x.2.1 = pre ++ y.2.1 ∧ x.2.2 + pre.length = y.2.2 ∧
      (∀ m ∈ pre, m.role ≠ .assistant) ∧ ∀ t ∈ y.1, t.learned = false := by
  obtain ⟨sys, rest, i⟩ := x
  unfold withUserOf at h
  split at h
  · split at h
    · rename_i m ms hr
      split at h
      · rename_i hu
        obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
        refine ⟨[m], hr, rfl, ?_, ?_⟩
        · intro m' hm' e
          simp only [List.mem_singleton] at hm'
          subst hm'
          simp [e, Role.isUser] at hu
        · intro t ht
          simp only [List.mem_cons, List.not_mem_nil, or_false] at ht
          rcases ht with rfl | rfl <;> rfl
      · cases h
    · cases h
  · cases h
    refine ⟨[], rfl, rfl, by simp, ?_⟩
    intro t ht
    simp only [List.mem_singleton] at ht
    subst ht
    rfl

theorem headOf_spec {f : LlamaFmt} {c : Conversation} {y : List LTurn × List Message × Nat}
    (h : headOf f c = some y) :
    ∃ pre, c.messages = pre ++ y.2.1 ∧ pre.length = y.2.2 ∧
      (∀ m ∈ pre, m.role ≠ .assistant) ∧ ∀ t ∈ y.1, t.learned = false := by
  unfold headOf at h
  cases hf : firstOf c.messages with
  | none => rw [hf] at h; cases h
  | some x =>
    rw [hf, Option.bind_some] at h
    obtain ⟨p1, e1, l1, a1⟩ := firstOf_spec hf
    obtain ⟨p2, e2, l2, a2, t2⟩ := withUserOf_spec h
    refine ⟨p1 ++ p2, by rw [e1, e2, List.append_assoc], by simp [l1, ← l2], ?_, t2⟩
    intro m hm
    rcases List.mem_append.mp hm with hm | hm
    · exact a1 m hm
    · exact a2 m hm

theorem firstOf_append {ms ns : List Message} {x : LPay × List Message × Nat}
    (hms : ms ≠ [] ∨ ∀ m ∈ ns.head?, m.role.isSystem = false) (h : firstOf ms = some x) :
    firstOf (ms ++ ns) = some (x.1, x.2.1 ++ ns, x.2.2) := by
  cases ms with
  | nil =>
    simp only [firstOf, Option.some.injEq] at h
    subst h
    cases ns with
    | nil => rfl
    | cons n ns =>
      have hn : n.role.isSystem = false := by
        rcases hms with hms | hms
        · exact absurd rfl hms
        · exact hms n rfl
      simp [firstOf, hn]
  | cons m ms =>
    by_cases hs : m.role.isSystem = true
    · simp only [firstOf, hs, ↓reduceIte] at h
      obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp [firstOf, hs, hp]
    · simp only [firstOf, hs, Bool.false_eq_true, ↓reduceIte] at h
      cases h
      simp [firstOf, hs]

theorem withUserOf_append {f : LlamaFmt} {tools : Option (List Json)} (ns : List Message)
    {x : LPay × List Message × Nat} {y : List LTurn × List Message × Nat}
    (h : withUserOf f tools x = some y) :
    withUserOf f tools (x.1, x.2.1 ++ ns, x.2.2) = some (y.1, y.2.1 ++ ns, y.2.2) := by
  obtain ⟨sys, rest, i⟩ := x
  unfold withUserOf at h ⊢
  split at h
  · rename_i hc
    rw [if_pos hc]
    split at h
    · rename_i m ms hr
      simp only at hr
      subst hr
      simp only [List.cons_append]
      split at h
      · rename_i hu
        obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
        simp [hu, hp]
      · cases h
    · cases h
  · rename_i hc
    rw [if_neg hc]
    cases h
    rfl

theorem headOf_append {f : LlamaFmt} {ms ns : List Message} {tools : Option (List Json)}
    {g g' : Bool} {y : List LTurn × List Message × Nat}
    (hms : ms ≠ [] ∨ ∀ m ∈ ns.head?, m.role.isSystem = false)
    (h : headOf f ⟨ms, tools, g⟩ = some y) :
    headOf f ⟨ms ++ ns, tools, g'⟩ = some (y.1, y.2.1 ++ ns, y.2.2) := by
  unfold headOf at h ⊢
  cases hf : firstOf ms with
  | none => simp only [hf] at h; cases h
  | some x =>
    simp only [hf, Option.bind_some] at h
    simp only [firstOf_append hms hf, Option.bind_some]
    exact withUserOf_append ns h

theorem lowerMsgs_append (a b : List Message) : ∀ i,
    lowerMsgs i (a ++ b) = (lowerMsgs i a).bind fun ta =>
      (lowerMsgs (i + a.length) b).map (ta ++ ·) := by
  induction a with
  | nil => intro i; simp [lowerMsgs]
  | cons m a ih =>
    intro i
    simp only [List.cons_append, lowerMsgs, ih (i + 1)]
    cases lowerMsg i m with
    | none => rfl
    | some t =>
      cases lowerMsgs (i + 1) a with
      | none => rfl
      | some ta =>
        simp only [Option.bind_some, Option.map_some, List.length_cons, Nat.add_assoc,
          Nat.add_comm 1]
        cases lowerMsgs (i + (a.length + 1)) b <;> rfl

/-- Lowering an extension: the old turns, then the new messages' turns. -/
theorem lower_append {f : LlamaFmt} {ms ns : List Message} {tools : Option (List Json)}
    {g g' : Bool} {l : LConv}
    (hms : ms ≠ [] ∨ ∀ m ∈ ns.head?, m.role.isSystem = false)
    (hl : lower f ⟨ms, tools, g⟩ = some l) :
    l.prompt = (if g then some ms.length else none) ∧
    lower f ⟨ms ++ ns, tools, g'⟩ = (lowerMsgs ms.length ns).bind fun ts2 =>
      if ts2.all (turnOk f) then
        some ⟨l.turns ++ ts2, if g' then some (ms ++ ns).length else none⟩
      else none := by
  rw [lower_eq] at hl ⊢
  cases hh : headOf f ⟨ms, tools, g⟩ with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    obtain ⟨pre, e, hlen, -, -⟩ := headOf_spec hh
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · rename_i hok
        cases hl
        refine ⟨rfl, ?_⟩
        have hi : y.2.2 + y.2.1.length = ms.length := by
          have := congrArg List.length e
          simp only [List.length_append] at this
          omega
        simp only [headOf_append hms hh, Option.bind_some, lowerMsgs_append, hts, hi]
        cases lowerMsgs ms.length ns with
        | none => rfl
        | some ts2 =>
          have hok' := hok
          rw [List.all_append, Bool.and_eq_true] at hok'
          simp only [Option.map_some, Option.bind_some, List.append_assoc, List.all_append,
            hok'.1, hok'.2, Bool.true_and]
      · cases hl


/-- A turn after the system turn and the tools user turn. -/
@[expose] def LTurn.isRest : LTurn → Bool
  | .system .. => false
  | .userTools .. => false
  | _ => true


theorem lowerMsgs_mem {rest : List Message} : ∀ {i : Nat} {ts : List LTurn},
    lowerMsgs i rest = some ts →
      ∀ t ∈ ts, ∃ j m, rest[j]? = some m ∧ lowerMsg (i + j) m = some t := by
  induction rest with
  | nil =>
    intro i ts h t ht
    cases h
    cases ht
  | cons m rest ih =>
    intro i ts h t ht
    simp only [lowerMsgs] at h
    cases hm : lowerMsg i m with
    | none => rw [hm] at h; cases h
    | some t0 =>
      rw [hm, Option.bind_some] at h
      cases hr : lowerMsgs (i + 1) rest with
      | none => rw [hr] at h; cases h
      | some ts' =>
        rw [hr, Option.map_some] at h
        cases h
        rcases List.mem_cons.mp ht with rfl | ht
        · exact ⟨0, m, rfl, hm⟩
        · obtain ⟨j, m', hj, hm'⟩ := ih hr t ht
          refine ⟨j + 1, m', by simpa using hj, ?_⟩
          rw [show i + (j + 1) = i + 1 + j by omega]
          exact hm'

theorem lowerMsg_spec {i : Nat} {m : Message} {t : LTurn}
    (h : lowerMsg i m = some t) : t.owner = i ∧ (t.learned = true → m.role = .assistant) := by
  rcases m with ⟨role, blocks⟩
  cases role with
  | assistant =>
    refine ⟨?_, fun _ => rfl⟩
    unfold lowerMsg at h
    simp only at h
    split at h <;>
      first
      | (cases h; rfl)
      | (obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h; rfl)
  | user | system | tool | developer =>
    simp only [lowerMsg] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨rfl, fun h => by cases h⟩

theorem headOf_shape {f : LlamaFmt} {c : Conversation} {y : List LTurn × List Message × Nat}
    (h : headOf f c = some y) : ∃ sys,
      (y.1 = [sysTurnOf f c.tools sys] ∧ (c.tools.isSome && f.toolsInUser) = false) ∨
      (∃ u i, y.1 = [sysTurnOf f c.tools sys,
          .userTools ((c.tools.getD []).map (Json.pretty 0)) u i] ∧
        (c.tools.isSome && f.toolsInUser) = true) := by
  unfold headOf at h
  cases hf : firstOf c.messages with
  | none => rw [hf] at h; cases h
  | some x =>
    rw [hf, Option.bind_some] at h
    refine ⟨x.1, ?_⟩
    unfold withUserOf at h
    split at h
    · rename_i hc
      split at h
      · split at h
        · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
          exact Or.inr ⟨_, _, rfl, hc⟩
        · cases h
      · cases h
    · rename_i hc
      cases h
      exact Or.inl ⟨rfl, by simpa using hc⟩

theorem lowerMsg_isRest {i : Nat} {m : Message} {t : LTurn} (h : lowerMsg i m = some t) :
    t.isRest = true := by
  rcases m with ⟨role, blocks⟩
  cases role with
  | assistant =>
    unfold lowerMsg at h
    simp only at h
    split at h <;>
      first
      | (cases h; rfl)
      | (obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h; rfl)
  | user | system | tool | developer =>
    simp only [lowerMsg] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    rfl

end Verified.Llama

end
