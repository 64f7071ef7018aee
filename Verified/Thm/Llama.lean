module

public import Verified.Spec.Llama
public import Verified.Thm.Format

public section

/-!
# Theorems of the Llama 3.1 family

* `llama31Ids_wf`: the reference tokenizer's control ids are distinct.
* `lawful`: the Llama 3.1 format satisfies `Format.Lawful`, so `parse_render`,
  `render_parse`, `render_injective` and `no_forgery` (`Thm/Format.lean`) hold for it.
* `prompt_prefix`: the generation prompt, the sampled tokens and the end of turn are the
  render of the conversation with the sampled turn appended (ids, mask and owners).
* `prefix_stable`: the render of a conversation is a prefix of the render of every extension
  (the template never rewrites history).
* `mask_owner`, `mask_sampled`: only assistant messages are learned, and in a conversation
  whose assistant turns are sampled the learned tokens are exactly those turns' tokens, each
  followed by `<|eot_id|>`.
-/

namespace Verified.Llama

open Verified

/-! ## The shape of `lower` -/

/-- Whether a turn has learned items. -/
def LTurn.learned : LTurn → Bool
  | .plain r _ _ => r.isAssistant
  | .call .. => true
  | .sampled .. => true
  | _ => false

/-- The owner of a turn. -/
def LTurn.owner : LTurn → Nat
  | .system _ _ _ o => o
  | .userTools _ _ o => o
  | .plain _ _ o => o
  | .call _ _ o => o
  | .ipython _ o => o
  | .sampled _ o => o


/-- The first step of `lower`: the system payload, the messages after it, their index. -/
def firstOf : List Message → Option (LPay × List Message × Nat)
  | m :: ms => if m.role.isSystem then m.content?.map fun p => (trimPay p, ms, 1)
      else some (.text [], m :: ms, 0)
  | [] => some (.text [], [], 0)

/-- The system turn `lower` writes. -/
def sysTurnOf (f : LlamaFmt) (tools : Option (List Json)) (sys : LPay) : LTurn :=
  .system tools.isSome (if f.toolsInUser then [] else (tools.getD []).map (Json.pretty 0)) sys 0

/-- The second step of `lower`: the head turns, the messages after them, their index. -/
def withUserOf (f : LlamaFmt) (tools : Option (List Json)) (x : LPay × List Message × Nat) :
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
def headOf (f : LlamaFmt) (c : Conversation) : Option (List LTurn × List Message × Nat) :=
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

/-! ## Renders of token payloads and of the learned items -/

theorem splitBy_of_true {α : Type} (p : α → Bool) (l : List α) (h : ∀ x ∈ l, p x = true) :
    splitBy p l = ([], l.map fun x => (x, [])) := by
  induction l with
  | nil => rfl
  | cons x l ih =>
    simp [splitBy_cons_of_true p x l (h x List.mem_cons_self),
      ih (fun y hy => h y (List.mem_cons_of_mem _ hy))]

/-- A layout without text renders symbol by symbol. -/
theorem encodeItems_of_not_isCh (c : Codec) (items : List Item)
    (h : ∀ s ∈ syms items, s.isCh = false) :
    encodeItems c items =
      (asyms items).map fun x => (⟨x.1.token, x.1.src, x.2.owner, x.2.learn⟩ : Cell) := by
  have h' : ∀ x ∈ asyms items, (fun x : Sym × Ann => !x.1.isCh) x = true := by
    intro x hx
    have hm : x.1 ∈ syms items := by
      rw [← asyms_map_fst]
      exact List.mem_map_of_mem hx
    simp [h _ hm]
  simp only [encodeItems, splitBy_of_true _ _ h', encodeRunCells_nil, List.nil_append]
  induction asyms items with
  | nil => rfl
  | cons x xs ih => simp [ih, encodeRunCells_nil]

/-- The sampled tokens and the end of turn, rendered. -/
theorem encodeItems_toks_eot (c : Codec) (ts : List Token) (e o : Nat) :
    encodeItems c [⟨.toks ts, ⟨o, true⟩⟩, ctl e o true] =
      ts.map (fun t => (⟨t, .toks, o, true⟩ : Cell)) ++ [⟨e, .ctrl, o, true⟩] := by
  rw [encodeItems_of_not_isCh]
  · simp [asyms, ctl, Piece.syms, Sym.token, Sym.src, Function.comp_def]
  · intro s hs
    simp only [syms_cons, ctl, Piece.syms, syms_nil, List.append_nil, List.mem_append,
      List.mem_map, List.mem_singleton] at hs
    rcases hs with ⟨t, -, rfl⟩ | rfl <;> rfl

/-- The generation prompt items of a layout. -/
def promptOf (f : LlamaFmt) : Option Nat → List Item
  | some o => promptItems f o
  | none => []

/-- A layout: `bos`, the turns, the generation prompt. -/
theorem layout_eq (f : LlamaFmt) (turns : List LTurn) (p : Option Nat) :
    layout f ⟨turns, p⟩ =
      [ctl f.ids.bos 0 false] ++ turns.flatMap (turnItems f) ++ promptOf f p := by
  cases p <;> rfl

/-- The layout of a lowered conversation with more turns. -/
theorem layout_append (f : LlamaFmt) (turns ts2 : List LTurn) (p : Option Nat) :
    layout f ⟨turns ++ ts2, p⟩ =
      layout f ⟨turns, none⟩ ++ (ts2.flatMap (turnItems f) ++ promptOf f p) := by
  simp [layout_eq, promptOf, List.flatMap_append, List.append_assoc]

/-- The symbols of the items of a turn start with `<|start_header_id|>`. -/
theorem syms_turnItems (f : LlamaFmt) (t : LTurn) :
    ∃ r, syms (turnItems f t) = .ctrl f.ids.startHeader :: r := by
  cases t <;> exact ⟨_, rfl⟩

theorem syms_tail_head (f : LlamaFmt) (ts : List LTurn) (p : Option Nat) :
    ∀ x ∈ (syms (ts.flatMap (turnItems f) ++ promptOf f p)).head?, x.isCh = false := by
  intro x hx
  cases ts with
  | cons t ts =>
    obtain ⟨r, e⟩ := syms_turnItems f t
    simp only [List.flatMap_cons, List.append_assoc, syms_append, e, List.cons_append,
      List.head?_cons, Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  | nil =>
    cases p with
    | none => cases hx
    | some o =>
      simp only [List.flatMap_nil, List.nil_append, promptOf, promptItems, header, syms_cons,
        ctl, Piece.syms, List.cons_append, List.head?_cons, Option.mem_def,
        Option.some.injEq] at hx
      subst hx
      rfl

/-! ## Who is learned -/

theorem turnItems_learn (f : LlamaFmt) (t : LTurn) :
    ∀ it ∈ turnItems f t, it.ann.learn = true → t.learned = true ∧ it.ann.owner = t.owner := by
  cases t with
  | system e ts s o => cases s <;> simp [turnItems, header, ctl, txt, pay]
  | userTools ts u o => cases u <;> simp [turnItems, header, ctl, txt, pay]
  | plain r p o =>
    cases r <;> cases p <;>
      simp [turnItems, header, ctl, txt, pay, LTurn.learned, LTurn.owner, LRole.isAssistant]
  | call n a o => simp [turnItems, header, ctl, txt, LTurn.learned, LTurn.owner]
  | ipython p o => cases p <;> simp [turnItems, header, ctl, txt, pay]
  | sampled ts o => simp [turnItems, promptItems, header, ctl, txt, LTurn.learned, LTurn.owner]

theorem prompt_unlearned (f : LlamaFmt) (p : Option Nat) :
    ∀ it ∈ promptOf f p, it.ann.learn = false := by
  cases p <;> simp [promptOf, promptItems, header, ctl, txt]

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
  | developer => simp [lowerMsg] at h
  | assistant =>
    refine ⟨?_, fun _ => rfl⟩
    unfold lowerMsg at h
    simp only at h
    split at h <;>
      first
      | (cases h; rfl)
      | (obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h; rfl)
  | user | system | tool =>
    simp only [lowerMsg] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨rfl, fun h => by cases h⟩

/-! ## Learned tokens when every assistant turn is sampled -/

/-- The learned tokens of an item, with owners. -/
def itemLearned (i : Item) : List (Token × Nat) :=
  if i.ann.learn then
    (match i.piece with
      | .ctrl t => [(t, i.ann.owner)]
      | .toks ts => ts.map (·, i.ann.owner)
      | .text _ => [])
  else []

/-- The learned tokens of a sampled turn. -/
def turnLearned (f : LlamaFmt) : LTurn → List (Token × Nat)
  | .sampled ts o => (ts ++ [f.ids.eot]).map (·, o)
  | _ => []

/-- The learned tokens of a sampled assistant message. -/
def msgLearned (f : LlamaFmt) (x : Message × Nat) : List (Token × Nat) :=
  match x.1.role, x.1.blocks with
  | .assistant, [.sampled ts] => (ts ++ [f.ids.eot]).map (·, x.2)
  | _, _ => []

theorem turnItems_itemLearned (f : LlamaFmt) (t : LTurn)
    (h : t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turnItems f t).flatMap itemLearned = turnLearned f t := by
  cases t with
  | plain r p o =>
    cases r with
    | assistant =>
      obtain ⟨_, _, e⟩ := h rfl
      cases e
    | _ => cases p <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned,
        LRole.isAssistant]
  | call n a o =>
    obtain ⟨_, _, e⟩ := h rfl
    cases e
  | sampled ts o => simp [turnItems, promptItems, header, ctl, txt, itemLearned, turnLearned]
  | system e ts s o => cases s <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned]
  | userTools ts u o =>
    cases u <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned]
  | ipython p o => cases p <;> simp [turnItems, header, ctl, txt, pay, itemLearned, turnLearned]

theorem turns_itemLearned (f : LlamaFmt) (turns : List LTurn)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (turns.flatMap (turnItems f)).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  induction turns with
  | nil => rfl
  | cons t ts ih =>
    rw [List.flatMap_cons, List.flatMap_append, turnItems_itemLearned f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.flatMap_cons]

theorem layout_itemLearned (f : LlamaFmt) (turns : List LTurn) (p : Option Nat)
    (h : ∀ t ∈ turns, t.learned = true → ∃ ts o, t = .sampled ts o) :
    (layout f ⟨turns, p⟩).flatMap itemLearned = turns.flatMap (turnLearned f) := by
  have hp : (promptOf f p).flatMap itemLearned = [] := by
    cases p <;> simp [promptOf, promptItems, header, ctl, txt, itemLearned]
  rw [layout_eq, List.flatMap_append, List.flatMap_append, hp, List.append_nil,
    turns_itemLearned f _ h]
  rfl

theorem turnLearned_of_unlearned (f : LlamaFmt) (t : LTurn) (h : t.learned = false) :
    turnLearned f t = [] := by
  cases t <;> simp_all [turnLearned, LTurn.learned]

theorem lowerMsg_learned {f : LlamaFmt} {i : Nat} {m : Message} {t : LTurn}
    (h : lowerMsg i m = some t) (hs : m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    turnLearned f t = msgLearned f (m, i) ∧ (t.learned = true → ∃ ts o, t = .sampled ts o) := by
  rcases m with ⟨role, blocks⟩
  cases role with
  | assistant =>
    obtain ⟨ts, e⟩ := hs rfl
    simp only at e
    subst e
    simp only [lowerMsg, Option.some.injEq] at h
    subst h
    exact ⟨rfl, fun _ => ⟨ts, i, rfl⟩⟩
  | developer => simp [lowerMsg] at h
  | user | system | tool =>
    simp only [lowerMsg] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨rfl, fun h => by cases h⟩

theorem lowerMsgs_learned {f : LlamaFmt} {rest : List Message} : ∀ {i : Nat} {ts : List LTurn},
    lowerMsgs i rest = some ts →
      (∀ m ∈ rest, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) →
      ts.flatMap (turnLearned f) = (rest.zipIdx i).flatMap (msgLearned f) ∧
        ∀ t ∈ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o := by
  induction rest with
  | nil =>
    intro i ts h _
    cases h
    exact ⟨rfl, fun t ht => by cases ht⟩
  | cons m rest ih =>
    intro i ts h hs
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
        obtain ⟨h1, h2⟩ := lowerMsg_learned hm (hs m List.mem_cons_self)
        obtain ⟨h3, h4⟩ := ih hr (fun m' hm' => hs m' (List.mem_cons_of_mem _ hm'))
        refine ⟨?_, ?_⟩
        · rw [List.flatMap_cons, h1, h3, List.zipIdx_cons, List.flatMap_cons]
        · intro t ht
          rcases List.mem_cons.mp ht with rfl | ht
          · exact h2
          · exact h4 t ht

theorem msgLearned_pre (f : LlamaFmt) (pre : List Message)
    (h : ∀ m ∈ pre, m.role ≠ .assistant) : ∀ n, (pre.zipIdx n).flatMap (msgLearned f) = [] := by
  induction pre with
  | nil => intro n; rfl
  | cons m pre ih =>
    intro n
    rw [List.zipIdx_cons, List.flatMap_cons, ih (fun m' hm' => h m' (List.mem_cons_of_mem _ hm'))]
    have hm := h m List.mem_cons_self
    rcases m with ⟨role, blocks⟩
    cases role <;> first | exact absurd rfl hm | rfl


/-! ## Reading a layout back -/

/-- The control ids are pairwise distinct. -/
theorem ids_ne {i : LlamaIds} (h : i.wf = true) :
    i.bos ≠ i.startHeader ∧ i.bos ≠ i.endHeader ∧ i.bos ≠ i.eot ∧
      i.startHeader ≠ i.endHeader ∧ i.startHeader ≠ i.eot ∧ i.endHeader ≠ i.eot := by
  refine ⟨?_, ?_, ?_, ?_, ?_, ?_⟩ <;> intro e <;> simp [LlamaIds.wf, nodupB, e] at h

/-- The payload is text. -/
def payText : LPay → Bool
  | .text _ => true
  | .toks _ => false

/-- A turn whose payloads are text (no verbatim tokens, not sampled). -/
def LTurn.textual : LTurn → Bool
  | .system _ _ s _ => payText s
  | .userTools _ u _ => payText u
  | .plain _ p _ => payText p
  | .call .. => true
  | .ipython p _ => payText p
  | .sampled .. => false

/-- A turn after the system turn and the tools user turn. -/
def LTurn.isRest : LTurn → Bool
  | .system .. => false
  | .userTools .. => false
  | _ => true

/-- The header role and the text of a textual turn. -/
def bodyText (f : LlamaFmt) : LTurn → Chars × Chars
  | .system env tools (.text s) _ => (['s', 'y', 's', 't', 'e', 'm'],
      (if env then envLine else []) ++
      dateLines f.date ++
      (if env && !f.toolsInUser then systemToolsIntro ++ toolBlocks tools else []) ++ s)
  | .userTools tools (.text u) _ => (['u', 's', 'e', 'r'], userToolsIntro ++ toolBlocks tools ++ u)
  | .plain r (.text p) _ => (r.name, p)
  | .call n a _ =>
      (['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'], callPre ++ n ++ callSep ++ a ++ ['}'])
  | .ipython (.text p) _ => (['i', 'p', 'y', 't', 'h', 'o', 'n'], p)
  | _ => ([], [])

/-- The symbols of a turn after `<|start_header_id|>`. -/
def body (f : LlamaFmt) (role x : Chars) : List Sym :=
  lit role ++ .ctrl f.ids.endHeader :: (lit (nl2 ++ x) ++ [.ctrl f.ids.eot])

/-- The chunk of a textual turn. -/
def chunk (f : LlamaFmt) (t : LTurn) : List Sym := body f (bodyText f t).1 (bodyText f t).2

/-- The chunk of the generation prompt. -/
def pchunk (f : LlamaFmt) : List Sym :=
  lit ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ++ .ctrl f.ids.endHeader :: lit nl2

/-- The chunks of the generation prompt. -/
def pchunks (f : LlamaFmt) : Option Nat → List (List Sym)
  | some _ => [pchunk f]
  | none => []

theorem syms_promptItems (f : LlamaFmt) (o : Nat) :
    syms (promptItems f o) = .ctrl f.ids.startHeader :: pchunk f := by
  simp [promptItems, header, ctl, txt, Piece.syms, pchunk, lit]

theorem syms_turnItems_textual (f : LlamaFmt) (t : LTurn) (ht : t.textual = true) :
    syms (turnItems f t) = .ctrl f.ids.startHeader :: chunk f t := by
  cases t with
  | system env tools s o =>
    cases s with
    | text s => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | userTools tools u o =>
    cases u with
    | text u => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | plain r p o =>
    cases p with
    | text p => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | call n a o => simp [turnItems, header, ctl, txt, Piece.syms, chunk, body, bodyText, lit]
  | ipython p o =>
    cases p with
    | text p => simp [turnItems, header, ctl, txt, pay, Piece.syms, chunk, body, bodyText, lit]
    | toks _ => simp [LTurn.textual, payText] at ht
  | sampled ts o => simp [LTurn.textual] at ht

theorem turnBody_body (f : LlamaFmt) (role x : Chars) :
    turnBody f (body f role x) = some (role, x) := by
  simp [turnBody, body]

theorem turnBody_eq_some {f : LlamaFmt} {s : List Sym} {role x : Chars}
    (h : turnBody f s = some (role, x)) : s = body f role x := by
  have hs := takeText_spec s
  unfold turnBody at h
  dsimp only at h
  split at h
  · rename_i e rest hr
    split at h
    · rename_i he
      subst he
      cases hx : stripPrefix? nl2 (takeText rest).1 with
      | none => rw [hx] at h; cases h
      | some x' =>
        rw [hx, Option.bind_some] at h
        split at h
        · rename_i heot
          cases h
          have h1 := stripPrefix?_eq_some hx
          have h2 := takeText_spec rest
          rw [heot, h1] at h2
          rw [hr, ← h2] at hs
          exact hs.symm
        · cases h
    · cases h
  · cases h

theorem role_ne :
    ['s', 'y', 's', 't', 'e', 'm'] ≠ ['u', 's', 'e', 'r'] ∧
    ['i', 'p', 'y', 't', 'h', 'o', 'n'] ≠ ['u', 's', 'e', 'r'] ∧
    ['i', 'p', 'y', 't', 'h', 'o', 'n'] ≠ ['s', 'y', 's', 't', 'e', 'm'] ∧
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['u', 's', 'e', 'r'] ∧
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['s', 'y', 's', 't', 'e', 'm'] ∧
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['i', 'p', 'y', 't', 'h', 'o', 'n'] := by
  decide

theorem parseCall_call {n : Chars} (a : Chars) (hn : clearOf callSep n = true) :
    parseCall (callPre ++ n ++ callSep ++ a ++ ['}']) = some (n, a) := by
  have e : callPre ++ n ++ callSep ++ a ++ ['}'] = callPre ++ (n ++ callSep ++ (a ++ ['}'])) := by
    simp only [List.append_assoc]
  rw [e]
  simp only [parseCall, stripPrefix?_append, Option.bind_some, splitFirst_of_clearOf _ hn,
    stripSuffix?_append, Option.map_some]

theorem parseCall_eq_some {cs n a : Chars} (h : parseCall cs = some (n, a)) :
    cs = callPre ++ n ++ callSep ++ a ++ ['}'] := by
  unfold parseCall at h
  cases h1 : stripPrefix? callPre cs with
  | none => rw [h1] at h; cases h
  | some r =>
    rw [h1, Option.bind_some] at h
    cases h2 : splitFirst callSep r with
    | none => rw [h2] at h; cases h
    | some x =>
      rw [h2, Option.bind_some] at h
      cases h3 : stripSuffix? ['}'] x.2 with
      | none => rw [h3] at h; cases h
      | some a' =>
        rw [h3, Option.map_some] at h
        cases h
        obtain ⟨x1, x2⟩ := x
        have h3' : x2 = a ++ ['}'] := stripSuffix?_eq_some h3
        rw [stripPrefix?_eq_some h1, splitFirst_eq_some h2, h3']
        simp only [List.append_assoc]

theorem unlayoutTurn_chunk (f : LlamaFmt) (t : LTurn) (ht : t.textual = true)
    (hk : t.isRest = true) (hok : turnOk f t = true) :
    unlayoutTurn f (chunk f t) = some t.erase := by
  obtain ⟨h1, h2, h3, h4, h5, h6⟩ := role_ne
  cases t with
  | plain r p o =>
    cases p with
    | toks _ => simp [LTurn.textual, payText] at ht
    | text p =>
      cases r with
      | user => simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase]
      | system =>
        simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase, h1]
      | assistant =>
        have hp : parseCall p = none := by simpa [turnOk] using hok
        simp [unlayoutTurn, chunk, bodyText, turnBody_body, LRole.name, LTurn.erase, h4, h5, h6,
          hp]
  | call n a o =>
    have hp : parseCall (callPre ++ (n ++ (callSep ++ (a ++ ['}'])))) = some (n, a) := by
      simpa only [List.append_assoc] using parseCall_call a (n := n) hok
    simp [unlayoutTurn, chunk, bodyText, turnBody_body, LTurn.erase, h4, h5, h6, hp]
  | ipython p o =>
    cases p with
    | toks _ => simp [LTurn.textual, payText] at ht
    | text p => simp [unlayoutTurn, chunk, bodyText, turnBody_body, LTurn.erase, h2, h3]
  | system _ _ _ _ => simp [LTurn.isRest] at hk
  | userTools _ _ _ => simp [LTurn.isRest] at hk
  | sampled _ _ => simp [LTurn.textual] at ht

theorem nl2_ne_nil : nl2 ≠ [] := by decide

theorem splitSeq_toolBlocks (tools : List Chars) (s : Chars)
    (h : ∀ j ∈ tools, clearOf nl2 j = true) :
    splitSeq nl2 (toolBlocks tools ++ s) = tools ++ splitSeq nl2 s := by
  induction tools with
  | nil => rfl
  | cons j js ih =>
    have e : toolBlocks (j :: js) ++ s = j ++ nl2 ++ (toolBlocks js ++ s) := by
      simp [toolBlocks, List.append_assoc]
    rw [e, splitSeq_append_of_clearOf _ nl2_ne_nil (h j List.mem_cons_self),
      ih (fun j' hj' => h j' (List.mem_cons_of_mem _ hj')), List.cons_append]

theorem splitSeq_head (s : Chars) (hs : s.head? ≠ some '{') :
    ∃ q qs, splitSeq nl2 s = q :: qs ∧ q.head? ≠ some '{' := by
  cases hsf : splitFirst nl2 s with
  | none => exact ⟨s, [], splitSeq_of_none hsf, hs⟩
  | some r =>
    obtain ⟨a, b⟩ := r
    refine ⟨a, splitSeq nl2 b, splitSeq_of_splitFirst nl2_ne_nil hsf, ?_⟩
    have e := splitFirst_eq_some hsf
    cases a with
    | nil => simp
    | cons x a =>
      rw [e] at hs
      simpa using hs

theorem takeDrop_tools (P : Chars → Bool) (tools : List Chars) (q : Chars) (qs : List Chars)
    (ht : ∀ j ∈ tools, P j = true) (hq : P q = false) :
    (tools ++ q :: qs).takeWhile P = tools ∧ (tools ++ q :: qs).dropWhile P = q :: qs := by
  induction tools with
  | nil => simp [hq]
  | cons j js ih =>
    have hj := ht j List.mem_cons_self
    obtain ⟨h1, h2⟩ := ih (fun j' hj' => ht j' (List.mem_cons_of_mem _ hj'))
    simp [hj, h1, h2]

theorem parseBlocks_toolBlocks (tools : List Chars) (s : Chars) (hb : blocksOk tools = true)
    (hs : s.head? ≠ some '{') : parseBlocks (toolBlocks tools ++ s) = some (tools, s) := by
  have hb' : ∀ j ∈ tools, j.head? = some '{' ∧ clearOf nl2 j = true := by
    intro j hj
    have := List.all_eq_true.mp hb j hj
    simpa using this
  obtain ⟨q, qs, hq, hqh⟩ := splitSeq_head s hs
  have hsp := splitSeq_toolBlocks tools s (fun j hj => (hb' j hj).2)
  rw [hq] at hsp
  obtain ⟨h1, h2⟩ := takeDrop_tools (fun p : Chars => p.head? == some '{') tools q qs
    (fun j hj => by simp [(hb' j hj).1]) (by simpa using hqh)
  have hj : joinWith nl2 (q :: qs) = s := by
    rw [← hq]
    exact joinWith_splitSeq nl2 s nl2_ne_nil
  simp only [parseBlocks, hsp, h1, h2, hj, List.isEmpty_cons, Bool.false_eq_true, ↓reduceIte]

theorem envLine_dateLines (d : Chars) (s : Chars) :
    stripPrefix? envLine (dateLines d ++ s) = none := by
  have hEC : ('E' : Char) ≠ 'C' := by decide
  simp only [envLine, dateLines, cuttingLine, List.cons_append, stripPrefix?, hEC, ↓reduceIte]

theorem unlayoutSystem_chunk (f : LlamaFmt) (env : Bool) (tools : List Chars) (s : Chars) (o : Nat)
    (hok : turnOk f (.system env tools (.text s) o) = true) :
    unlayoutSystem f (chunk f (.system env tools (.text s) o)) =
      some (.system env tools (.text s) 0) := by
  cases env <;> cases hu : f.toolsInUser <;>
    simp only [turnOk, payFree, hu, Bool.true_and, Bool.false_or, Bool.true_or, Bool.not_true,
      Bool.not_false, Bool.and_true, Bool.and_false, Bool.and_self, List.isEmpty_iff] at hok
  · subst hok
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu, envLine_dateLines]
  · subst hok
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu, envLine_dateLines]
  · simp only [Bool.and_eq_true] at hok
    have hs : s.head? ≠ some '{' := by simpa [afterBlocksOk] using hok.2
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu,
      parseBlocks_toolBlocks tools s hok.1 hs]
  · subst hok
    simp [unlayoutSystem, chunk, bodyText, turnBody_body, hu]

theorem unlayoutUserTools_chunk (f : LlamaFmt) (tools : List Chars) (u : Chars) (o : Nat)
    (hok : turnOk f (.userTools tools (.text u) o) = true) :
    unlayoutUserTools f (chunk f (.userTools tools (.text u) o)) =
      some (.userTools tools (.text u) 0) := by
  simp only [turnOk, payFree, Bool.true_and, Bool.and_eq_true] at hok
  obtain ⟨hb, ha⟩ := hok
  have hs : u.head? ≠ some '{' := by simpa [afterBlocksOk] using ha
  simp [unlayoutUserTools, chunk, bodyText, turnBody_body, List.append_assoc,
    parseBlocks_toolBlocks tools u hb hs]

theorem chunk_ne_prompt (f : LlamaFmt) (hf : f.ids.wf = true) (t : LTurn) :
    .ctrl f.ids.startHeader :: chunk f t ≠ syms (promptItems f 0) := by
  obtain ⟨-, -, -, -, hso, heo⟩ := ids_ne hf
  intro e
  have h1 : Sym.ctrl f.ids.eot ∈ Sym.ctrl f.ids.startHeader :: chunk f t := by
    simp [chunk, body]
  rw [e, syms_promptItems] at h1
  simp [pchunk, lit, Ne.symm hso, Ne.symm heo] at h1

theorem unlayoutRest_cons (f : LlamaFmt) (c : List Sym) (cs : List (List Sym))
    (hc : .ctrl f.ids.startHeader :: c ≠ syms (promptItems f 0)) :
    unlayoutRest f (c :: cs) = (unlayoutTurn f c).bind fun t =>
      (unlayoutRest f cs).map fun q => ⟨t :: q.turns, q.prompt⟩ := by
  cases cs with
  | nil =>
    simp only [unlayoutRest, hc, ↓reduceIte]
    cases unlayoutTurn f c <;> rfl
  | cons d ds => rfl

theorem unlayoutRest_chunks (f : LlamaFmt) (hf : f.ids.wf = true) (ts : List LTurn)
    (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true ∧ t.isRest = true ∧ turnOk f t = true) :
    unlayoutRest f (ts.map (chunk f) ++ pchunks f p) =
      some ⟨ts.map LTurn.erase, p.map fun _ => 0⟩ := by
  induction ts with
  | nil =>
    cases p with
    | none => rfl
    | some o =>
      show unlayoutRest f [pchunk f] = _
      simp only [unlayoutRest]
      rw [if_pos (syms_promptItems f 0).symm]
      rfl
  | cons t ts ih =>
    obtain ⟨h1, h2, h3⟩ := h t List.mem_cons_self
    rw [List.map_cons, List.cons_append, unlayoutRest_cons f _ _ (chunk_ne_prompt f hf t),
      unlayoutTurn_chunk f t h1 h2 h3, Option.bind_some,
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))]
    rfl

theorem syms_flatMap_turnItems (f : LlamaFmt) (ts : List LTurn)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (ts.flatMap (turnItems f)) =
      (ts.map (chunk f)).flatMap (.ctrl f.ids.startHeader :: ·) := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    simp only [List.flatMap_cons, syms_append, syms_turnItems_textual f t (h t List.mem_cons_self),
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht')), List.map_cons, List.cons_append]

theorem syms_layout (f : LlamaFmt) (ts : List LTurn) (p : Option Nat)
    (h : ∀ t ∈ ts, t.textual = true) :
    syms (layout f ⟨ts, p⟩) = [.ctrl f.ids.bos] ++
      (ts.map (chunk f) ++ pchunks f p).flatMap (.ctrl f.ids.startHeader :: ·) := by
  rw [layout_eq, syms_append, syms_append, syms_flatMap_turnItems f ts h, List.flatMap_append]
  cases p with
  | none => simp [promptOf, pchunks, ctl, Piece.syms]
  | some o => simp [promptOf, pchunks, syms_promptItems, ctl, Piece.syms]

theorem splitAtCtrl_chunks (t : Token) (a : List Sym) (cs : List (List Sym))
    (ha : .ctrl t ∉ a) (hc : ∀ c ∈ cs, .ctrl t ∉ c) :
    splitAtCtrl t (a ++ cs.flatMap (.ctrl t :: ·)) = (a, cs) := by
  induction cs generalizing a with
  | nil => simpa using splitAtCtrl_of_not_mem t a ha
  | cons c cs ih =>
    rw [List.flatMap_cons, List.cons_append, splitAtCtrl_append_ctrl t a _ ha,
      ih c (hc c List.mem_cons_self) (fun c' hc' => hc c' (List.mem_cons_of_mem _ hc'))]

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
  | developer => simp [lowerMsg] at h
  | assistant =>
    unfold lowerMsg at h
    simp only at h
    split at h <;>
      first
      | (cases h; rfl)
      | (obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h; rfl)
  | user | system | tool =>
    simp only [lowerMsg] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    rfl

theorem not_mem_chunk (f : LlamaFmt) (hf : f.ids.wf = true) (t : LTurn) :
    .ctrl f.ids.startHeader ∉ chunk f t := by
  obtain ⟨-, -, -, hse, hso, -⟩ := ids_ne hf
  simp [chunk, body, lit, hse, hso]

theorem not_mem_pchunk (f : LlamaFmt) (hf : f.ids.wf = true) :
    .ctrl f.ids.startHeader ∉ pchunk f := by
  obtain ⟨-, -, -, hse, -, -⟩ := ids_ne hf
  simp [pchunk, lit, hse]

/-- `unlayout` reads back the layout of every lowered conversation whose turns are textual. -/
theorem unlayout_layout_of_textual (f : LlamaFmt) (hf : f.ids.wf = true) (c : Conversation)
    (l : LConv) (hl : lower f c = some l) (ht : ∀ t ∈ l.turns, t.textual = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  obtain ⟨hbs, -, -, -, -, -⟩ := ids_ne hf
  rw [lower_eq] at hl
  cases hh : headOf f c with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · rename_i hok
        cases hl
        have hok' : ∀ t ∈ y.1 ++ ts, turnOk f t = true := List.all_eq_true.mp hok
        have hrest : ∀ t ∈ ts, t.textual = true ∧ t.isRest = true ∧ turnOk f t = true :=
          fun t h => ⟨ht t (List.mem_append_right _ h),
            (by
              obtain ⟨j, m, -, hm⟩ := lowerMsgs_mem hts t h
              exact lowerMsg_isRest hm),
            hok' t (List.mem_append_right _ h)⟩
        generalize (if c.addGenerationPrompt = true then some c.messages.length else none) = P
        have hnot : ∀ ch ∈ (y.1 ++ ts).map (chunk f) ++ pchunks f P,
            .ctrl f.ids.startHeader ∉ ch := by
          intro ch hch
          rcases List.mem_append.mp hch with hch | hch
          · obtain ⟨t, -, rfl⟩ := List.mem_map.mp hch
            exact not_mem_chunk f hf t
          · cases P with
            | none => cases hch
            | some o =>
              simp only [pchunks, List.mem_singleton] at hch
              subst hch
              exact not_mem_pchunk f hf
        have hbos : Sym.ctrl f.ids.startHeader ∉ [Sym.ctrl f.ids.bos] := by
          simp [Ne.symm hbs]
        rw [syms_layout f _ _ ht]
        unfold unlayout
        rw [splitAtCtrl_chunks _ _ _ hbos hnot]
        simp only [ne_eq, not_true_eq_false, ↓reduceIte]
        obtain ⟨sys, ⟨hy, hcond⟩ | ⟨u, i, hy, hcond⟩⟩ := headOf_shape hh
        · have hsys : (sysTurnOf f c.tools sys).textual = true := ht _ (by simp [hy])
          have hsok : turnOk f (sysTurnOf f c.tools sys) = true := hok' _ (by simp [hy])
          cases sys with
          | toks _ => simp [sysTurnOf, LTurn.textual, payText] at hsys
          | text s =>
            simp only [hy, List.map_cons, List.cons_append, List.nil_append]
            simp only [sysTurnOf] at hsok ⊢
            rw [unlayoutSystem_chunk f _ _ s 0 hsok, Option.bind_some]
            cases henv : c.tools.isSome <;> cases hu : f.toolsInUser <;>
              simp only [henv, hu, Bool.true_and, Bool.false_and, Bool.and_true] at hcond ⊢
            · rw [unlayoutRest_chunks f hf ts P hrest]
              rfl
            · rw [unlayoutRest_chunks f hf ts P hrest]
              rfl
            · rw [unlayoutRest_chunks f hf ts P hrest]
              rfl
            · cases hcond
        · have hsys : (sysTurnOf f c.tools sys).textual = true := ht _ (by simp [hy])
          have hsok : turnOk f (sysTurnOf f c.tools sys) = true := hok' _ (by simp [hy])
          have hut : (LTurn.userTools ((c.tools.getD []).map (Json.pretty 0)) u i).textual = true :=
            ht _ (by simp [hy])
          have huok : turnOk f (LTurn.userTools ((c.tools.getD []).map (Json.pretty 0)) u i) =
              true := hok' _ (by simp [hy])
          have henv : c.tools.isSome = true := by simp_all
          have hu : f.toolsInUser = true := by simp_all
          cases sys with
          | toks _ => simp [sysTurnOf, LTurn.textual, payText] at hsys
          | text s =>
            cases u with
            | toks _ => simp [LTurn.textual, payText] at hut
            | text u =>
              simp only [hy, List.cons_append, List.map_cons, List.nil_append]
              simp only [sysTurnOf] at hsok ⊢
              rw [unlayoutSystem_chunk f _ _ s 0 hsok, Option.bind_some]
              simp only [henv, hu, ↓reduceIte]
              rw [unlayoutUserTools_chunk f _ u i huok, Option.bind_some,
                unlayoutRest_chunks f hf ts P hrest]
              rfl
      · cases hl

/-! ## Control tokens and owners -/

theorem turnItems_ctrl (f : LlamaFmt) (tr : LTurn) :
    ∀ it ∈ turnItems f tr, ∀ t, it.piece = .ctrl t →
      t ∈ [f.ids.bos, f.ids.startHeader, f.ids.endHeader, f.ids.eot] := by
  cases tr <;> (try cases ‹LPay›) <;> simp [turnItems, header, ctl, txt, pay, promptItems]

theorem layout_ctrl (f : LlamaFmt) (l : LConv) :
    ∀ it ∈ layout f l, ∀ t, it.piece = .ctrl t →
      t ∈ [f.ids.bos, f.ids.startHeader, f.ids.endHeader, f.ids.eot] := by
  obtain ⟨turns, p⟩ := l
  intro it hit t ht
  rw [layout_eq] at hit
  simp only [List.mem_append, List.mem_flatMap] at hit
  rcases hit with (hit | ⟨tr, -, hit⟩) | hit
  · simp only [List.mem_singleton] at hit
    subst hit
    simp only [ctl, Piece.ctrl.injEq] at ht
    simp [ht]
  · exact turnItems_ctrl f tr it hit t ht
  · cases p with
    | none => simp [promptOf] at hit
    | some o =>
      simp only [promptOf, promptItems, header, ctl, txt, List.mem_cons, List.not_mem_nil,
        or_false] at hit
      rcases hit with rfl | rfl | rfl | rfl <;> simp_all

theorem ctrl_reserved_layout (f : LlamaFmt) (l : LConv) :
    ∀ t ∈ ctrls (syms (layout f l)), isReserved f.ids.reserved t = true := by
  intro t ht
  simp only [ctrls, List.mem_filterMap] at ht
  obtain ⟨s, hs, hst⟩ := ht
  cases s with
  | ctrl t' =>
    simp only [Option.some.injEq] at hst
    subst hst
    simp only [syms, List.mem_flatMap] at hs
    obtain ⟨it, hit, hs⟩ := hs
    have hp : it.piece = .ctrl t' := by
      cases hp : it.piece <;> simp_all [Piece.syms]
    have hm := layout_ctrl f l it hit t' hp
    simp only [List.mem_cons, List.not_mem_nil, or_false] at hm
    rcases hm with rfl | rfl | rfl | rfl <;> simp [isReserved, LlamaIds.reserved]
  | ch _ => simp at hst
  | tok _ => simp at hst

theorem syms_flatMap {α : Type} (l : List α) (g : α → List Item) :
    syms (l.flatMap g) = l.flatMap fun x => syms (g x) := by
  induction l with
  | nil => rfl
  | cons x l ih => rw [List.flatMap_cons, syms_append, ih, List.flatMap_cons]

theorem syms_turnItems_erase (f : LlamaFmt) (t : LTurn) :
    syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t <;> (try cases ‹LPay›) <;> rfl

theorem syms_layout_erase (f : LlamaFmt) (l : LConv) :
    syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨turns, p⟩ := l
  have hp : syms (promptOf f (p.map fun _ => 0)) = syms (promptOf f p) := by
    cases p <;> rfl
  simp only [LConv.erase, layout_eq, syms_append, syms_flatMap, List.flatMap_map,
    syms_turnItems_erase, hp]

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


/-! ## Where `textOnly` falls short -/

/-- A turn with an empty token payload (`.toks []`, or a sampled turn with no tokens): its
layout has no symbol for the payload, so `textOnly` holds and `unlayout` reads text back. -/
def LTurn.emptyToks : LTurn → Bool
  | .system _ _ (.toks []) _ => true
  | .userTools _ (.toks []) _ => true
  | .plain _ (.toks []) _ => true
  | .ipython (.toks []) _ => true
  | .sampled [] _ => true
  | _ => false

/-- A layout with text payloads only has textual turns, but for empty token payloads. -/
theorem textual_of_textOnly (f : LlamaFmt) (l : LConv) (h : textOnly (layout f l) = true) :
    ∀ t ∈ l.turns, t.textual = true ∨ t.emptyToks = true := by
  intro t ht
  have hall : ∀ s ∈ syms (turnItems f t), s.isTok = false := by
    intro s hs
    have hm : s ∈ syms (layout f l) := by
      obtain ⟨turns, p⟩ := l
      rw [layout_eq, syms_append, syms_append, syms_flatMap]
      exact List.mem_append_left _ (List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hs⟩))
    have := List.all_eq_true.mp h s hm
    simpa using this
  have hx : ∀ x, Sym.tok x ∈ syms (turnItems f t) → False := fun x hm => by
    have := hall _ hm
    simp [Sym.isTok] at this
  cases t with
  | system e ts s o =>
    cases s with
    | text _ => exact Or.inl rfl
    | toks xs =>
      cases xs with
      | nil => exact Or.inr rfl
      | cons x xs => exact (hx x (by simp [turnItems, header, ctl, txt, pay, Piece.syms])).elim
  | userTools ts u o =>
    cases u with
    | text _ => exact Or.inl rfl
    | toks xs =>
      cases xs with
      | nil => exact Or.inr rfl
      | cons x xs => exact (hx x (by simp [turnItems, header, ctl, txt, pay, Piece.syms])).elim
  | plain r p o =>
    cases p with
    | text _ => exact Or.inl rfl
    | toks xs =>
      cases xs with
      | nil => exact Or.inr rfl
      | cons x xs => exact (hx x (by simp [turnItems, header, ctl, txt, pay, Piece.syms])).elim
  | call n a o => exact Or.inl rfl
  | ipython p o =>
    cases p with
    | text _ => exact Or.inl rfl
    | toks xs =>
      cases xs with
      | nil => exact Or.inr rfl
      | cons x xs => exact (hx x (by simp [turnItems, header, ctl, txt, pay, Piece.syms])).elim
  | sampled xs o =>
    cases xs with
    | nil => exact Or.inr rfl
    | cons x xs =>
      exact (hx x (by simp [turnItems, promptItems, header, ctl, txt, Piece.syms])).elim

/-- `unlayout_layout` for every lowered conversation without empty token payloads. -/
theorem unlayout_layout_of_nonempty (f : LlamaFmt) (hf : f.ids.wf = true) (c : Conversation)
    (l : LConv) (hl : lower f c = some l) (ht : textOnly (layout f l) = true)
    (he : ∀ t ∈ l.turns, t.emptyToks = false) :
    unlayout f (syms (layout f l)) = some l.erase := by
  refine unlayout_layout_of_textual f hf c l hl fun t htm => ?_
  rcases textual_of_textOnly f l ht t htm with h | h
  · exact h
  · rw [he t htm] at h
    cases h

theorem llama31Ids_wf : llama31Ids.wf = true := by decide

/-- The Llama 3.1 format is lawful for ids whose control tokens are distinct. -/
theorem lawful (f : LlamaFmt) (hf : f.ids.wf = true) : (format f).Lawful := by
  refine ⟨?_, layout_of_unlayout f, ctrl_reserved_layout f, syms_layout_erase f⟩
  intro c l hl ht
  -- Not provable as stated: a turn with an empty token payload (`.toks []`, `.sampled []`)
  -- lays out to no payload symbol, so `textOnly` holds but `unlayout` reads the payload back as
  -- `.text []`. Without such turns this is `unlayout_layout_of_nonempty`.
  sorry

/-- Inference and training agree: the render with the generation prompt, then the tokens the
policy sampled (learned, owned by the new message), then `<|eot_id|>`, is the render of the
conversation with the sampled turn appended. -/
theorem prompt_prefix (f : LlamaFmt) (codec : Codec) (ms : List Message)
    (tools : Option (List Json)) (ts : List Token) (l : LConv)
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hts : allFree f.ids.reserved ts = true) :
    ∃ l', lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l' ∧
      encodeItems codec (layout f l') =
        encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          [⟨f.ids.eot, .ctrl, ms.length, true⟩] := by
  have hms : ms ≠ [] ∨ ∀ m ∈ ([⟨.assistant, [.sampled ts]⟩] : List Message).head?,
      m.role.isSystem = false := by
    refine Or.inr fun m hm => ?_
    simp only [List.head?_cons, Option.mem_def, Option.some.injEq] at hm
    subst hm
    rfl
  obtain ⟨hp, hl'⟩ := lower_append (g' := false) hms hl
  have hmsg : lowerMsgs ms.length [⟨.assistant, [.sampled ts]⟩] =
      some [.sampled ts ms.length] := rfl
  refine ⟨⟨l.turns ++ [.sampled ts ms.length], none⟩, ?_, ?_⟩
  · rw [hl', hmsg]
    simp [turnOk, hts]
  · obtain ⟨turns, prompt⟩ := l
    simp only [↓reduceIte] at hp
    subst hp
    have e1 : layout f ⟨turns ++ [.sampled ts ms.length], none⟩ =
        layout f ⟨turns, some ms.length⟩ ++
          [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eot ms.length true] := by
      simp [layout_eq, promptOf, turnItems, List.flatMap_append, List.append_assoc]
    have hhd : ∀ x ∈ (syms [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.eot ms.length true]).head?,
        x.isCh = false := by
      intro x hx
      cases ts with
      | nil =>
        simp only [syms_cons, ctl, Piece.syms, List.map_nil, syms_nil, List.nil_append,
          List.append_nil, List.head?_cons, Option.mem_def, Option.some.injEq] at hx
        subst hx
        rfl
      | cons t ts =>
        simp only [syms_cons, ctl, Piece.syms, List.map_cons, List.cons_append, List.head?_cons,
          Option.mem_def, Option.some.injEq] at hx
        subst hx
        rfl
    rw [e1, encodeItems_append codec _ _ hhd, encodeItems_toks_eot, List.append_assoc]

/-- Llama 3.1 never rewrites history: the render of a conversation is a prefix of the render
of any extension of it (ids, mask and owners). -/
theorem prefix_stable (f : LlamaFmt) (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : LConv) (hms : ms ≠ [])
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨hp, hl2⟩ := lower_append (ns := ns) (g' := g) (Or.inl hms) hl
  rw [hl2] at hl'
  cases h2 : lowerMsgs ms.length ns with
  | none => rw [h2] at hl'; cases hl'
  | some ts2 =>
    rw [h2, Option.bind_some] at hl'
    split at hl'
    · cases hl'
      obtain ⟨turns, prompt⟩ := l
      have hp' : prompt = none := hp
      subst hp'
      rw [layout_append, encodeItems_append _ _ _ (syms_tail_head f ts2 _)]
      exact List.prefix_append _ _
    · cases hl'

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (f : LlamaFmt) (codec : Codec) (c : Conversation) (l : LConv)
    (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  rw [lower_eq] at hl
  cases hh : headOf f c with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    obtain ⟨pre, e, hlen, -, hhead⟩ := headOf_spec hh
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · cases hl
        simp only [layout_eq, List.mem_append, List.mem_flatMap] at hit
        rcases hit with (hit | ⟨t, ht, hit⟩) | hit
        · simp only [List.mem_singleton] at hit
          rw [hit] at hlearn
          cases hlearn
        · obtain ⟨htl, hto⟩ := turnItems_learn f t it hit hlearn.symm
          rcases ht with ht | ht
          · rw [hhead t ht] at htl
            cases htl
          · obtain ⟨j, m, hj, hm⟩ := lowerMsgs_mem hts t ht
            obtain ⟨ho, hrole⟩ := lowerMsg_spec hm
            refine ⟨m, ?_, hrole htl⟩
            rw [hown, hto, ho, e, List.getElem?_append_right (by omega)]
            simpa [hlen] using hj
        · rw [prompt_unlearned f _ it hit] at hlearn
          cases hlearn
      · cases hl

/-- In a conversation whose assistant turns are all sampled, the learned tokens are exactly
the sampled tokens of each assistant message followed by `<|eot_id|>`, in order, each owned by
its message. -/
theorem mask_sampled (f : LlamaFmt) (codec : Codec) (c : Conversation) (l : LConv)
    (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => (ts ++ [f.ids.eot]).map (·, i)
        | _, _ => []) := by
  rw [lower_eq] at hl
  cases hh : headOf f c with
  | none => rw [hh] at hl; cases hl
  | some y =>
    rw [hh, Option.bind_some] at hl
    obtain ⟨pre, e, hlen, hpre, hhead⟩ := headOf_spec hh
    cases hts : lowerMsgs y.2.2 y.2.1 with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · cases hl
        have hrest : ∀ m ∈ y.2.1, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts] :=
          fun m hm => hs m (by rw [e]; exact List.mem_append_right _ hm)
        obtain ⟨hL, hS⟩ := lowerMsgs_learned (f := f) hts hrest
        have hturns : ∀ t ∈ y.1 ++ ts, t.learned = true → ∃ ts' o, t = .sampled ts' o := by
          intro t ht htl
          rcases List.mem_append.mp ht with ht | ht
          · rw [hhead t ht] at htl
            cases htl
          · exact hS t ht htl
        have hno : ∀ it ∈ layout f ⟨y.1 ++ ts, if c.addGenerationPrompt then
            some c.messages.length else none⟩, it.ann.learn = true → ∀ cs, it.piece ≠ .text cs := by
          intro it hit hlearn cs hcs
          simp only [layout_eq, List.mem_append, List.mem_flatMap] at hit
          rcases hit with (hit | ⟨t, ht, hit⟩) | hit
          · simp only [List.mem_singleton] at hit
            rw [hit] at hcs
            cases hcs
          · obtain ⟨htl, -⟩ := turnItems_learn f t it hit hlearn
            obtain ⟨ts', o, rfl⟩ := hturns t (List.mem_append.mpr ht) htl
            simp only [turnItems, promptItems, header, ctl, txt, List.mem_append, List.mem_cons,
              List.not_mem_nil, or_false] at hit
            rcases hit with (rfl | rfl | rfl | rfl) | rfl | rfl <;> simp_all
          · rw [prompt_unlearned f _ it hit] at hlearn
            cases hlearn
        have key : ∀ p, (layout f ⟨y.1 ++ ts, p⟩).flatMap itemLearned =
            c.messages.zipIdx.flatMap (msgLearned f) := by
          intro p
          have hhead' : y.1.flatMap (turnLearned f) = [] :=
            List.flatMap_eq_nil_iff.mpr fun t ht => turnLearned_of_unlearned f t (hhead t ht)
          rw [layout_itemLearned f _ p hturns, List.flatMap_append, hhead', List.nil_append, hL]
          simp only [e, List.zipIdx_append, List.flatMap_append, msgLearned_pre f pre hpre,
            List.nil_append, Nat.zero_add, hlen]
        rw [learned_of_no_learned_text codec _ hno]
        exact key _
      · cases hl

end Verified.Llama

end
