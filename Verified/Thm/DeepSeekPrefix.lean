module

public import Verified.Thm.DeepSeekLower

public section

/-!
# DeepSeek-R1: appending messages extends the layout and the render

`extension_layout`: in both modes (`exact` drops every reasoning block, `stable` keeps every
one, so neither rewrites an earlier turn), the layout of a conversation without the generation
prompt is a prefix of the layout of that conversation with messages appended, provided

* no appended message is a system message (the system text is hoisted right after BOS), and
* either the last non-system message of the conversation is not a tool message
  (`endsInTools`), or the first appended message is an answer (an assistant message with no
  tool call): the template closes a run of tool results with `<｜tool▁outputs▁end｜>` at the
  end of the conversation, which only an answer writes again.

The proof ties the walk's `ns.is_tool` flag to the messages (`lowerMsgs_inTools`), shows that a
tool result appended to an open run only extends that run (`addResult_prefix`), and that every
other message adds a turn after the others (`lowerMsgs_prefix`).

`extension_ids`: the same on renders (ids, mask and owners, any codec) when, in addition, the
first appended message is not an assistant message with a tool call: then the items appended
start with a control token (`lowerMsgs_head`), or the shorter layout ends with one (the
`<｜tool▁outputs▁end｜>` an answer repeats), so no text span is cut (`encodeItems_append`).
The condition is stronger than needed: only a later call message (written without a header,
from its `'\n'`) right after a user message can fail, its `'\n'` joining the user text's span
(`tests/test_deepseek.py::test_where_prefix_fails`); a call message appended after an answer
or as the first call is a prefix on ids too (`Thm/DeepSeekPrefixCall.lean`: `extension_ids_call`,
and `extension_prefix` for the whole property).
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- The template's `ns.is_tool` after the messages, from `b` before them: a tool message sets
it, a system message keeps it, every other message clears it. -/
@[expose] def openAfter (b : Bool) : List Message → Bool
  | [] => b
  | m :: ms => openAfter (match m.role with
      | .system => b
      | .tool => true
      | _ => false) ms

/-- The last non-system message is a tool message. -/
@[expose] def endsInTools (ms : List Message) : Bool := openAfter false ms

/-- An answer: an assistant message with no tool call. -/
@[expose] def IsAnswer (m : Message) : Prop :=
  m.role = .assistant ∧ ∀ n a d, Block.toolCall n a d ∉ m.blocks

/-- A run of results is not empty. -/
@[expose] def DTurn.runOk : DTurn → Bool
  | .results _ rs => !rs.isEmpty
  | _ => true

theorem runOk_of_turnOk {t : DTurn} (h : turnOk f t = true) : t.runOk = true := by
  cases t <;> simp_all [turnOk, DTurn.runOk]

theorem systems_nosys {ns : List Message} (hns : ∀ m ∈ ns, m.role.isSystem = false) :
    ∀ i, systems i ns = some [] := by
  induction ns with
  | nil => intro i; rfl
  | cons m ms ih =>
    intro i
    have hm := hns m (List.mem_cons_self ..)
    simp only [systems, ih (fun x hx => hns x (List.mem_cons_of_mem _ hx)), Option.bind_some,
      hm, Bool.false_eq_true, ↓reduceIte]

theorem systems_append_nosys {ns : List Message} (hns : ∀ m ∈ ns, m.role.isSystem = false) :
    ∀ (ms : List Message) (i : Nat), systems i (ms ++ ns) = systems i ms := by
  intro ms
  induction ms with
  | nil => intro i; simp [systems_nosys hns, systems]
  | cons m ms ih => intro i; simp only [List.cons_append, systems, ih]

/-- The flag `ns.is_tool` the walk ends with. -/
theorem lowerMsgs_inTools :
    ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn) (fl' : Flags),
      lowerMsgs f i fl acc ms = some (ts, fl') → fl'.inTools = openAfter fl.inTools ms := by
  intro ms
  induction ms with
  | nil =>
    intro i fl acc ts fl' h
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨-, rfl⟩ := h
    rfl
  | cons m ms ih =>
    intro i fl acc ts fl' h
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system => exact ih _ _ _ _ _ h
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      exact ih _ _ _ _ _ h
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      exact ih _ _ _ _ _ h
    | assistant =>
      simp only [lowerMsgs] at h
      split at h
      · exact ih _ _ _ _ _ h
      · simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨r, c, ks⟩, -, h⟩ := h
        dsimp only at h
        split at h
        · exact ih _ _ _ _ _ h
        · exact ih _ _ _ _ _ h

/-- A turn added after the others. -/
theorem prefix_cons (acc : List DTurn) (t : DTurn) :
    acc.reverse.flatMap (turnItems f) <+: (t :: acc).reverse.flatMap (turnItems f) := by
  rw [List.reverse_cons, List.flatMap_append]
  exact List.prefix_append _ _

/-- A tool result extends the open run or adds a run: the items so far are kept, and runs
stay non-empty. -/
theorem addResult_prefix (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn)
    (hacc : ∀ t ∈ acc, t.runOk = true) :
    acc.reverse.flatMap (turnItems f) <+: (addResult fl p i acc).reverse.flatMap (turnItems f) ∧
      ∀ t ∈ addResult fl p i acc, t.runOk = true := by
  unfold addResult
  split
  · rename_i b rs ts
    split
    · have hrs : (DTurn.results b rs).runOk = true := hacc _ (List.mem_cons_self ..)
      cases rs with
      | nil => simp [DTurn.runOk] at hrs
      | cons r rs =>
        refine ⟨?_, ?_⟩
        · have e : turnItems f (.results b (r :: rs ++ [(p, i)])) =
              turnItems f (.results b (r :: rs)) ++ resultItems f (p, i) := by
            simp [turnItems, groupOwner, List.flatMap_append]
          simp only [List.reverse_cons, List.flatMap_append, List.flatMap_cons,
            List.flatMap_nil, List.append_nil, e]
          refine (List.prefix_append_right_inj _).mpr ?_
          exact List.prefix_append _ _
        · intro t ht
          rcases List.mem_cons.mp ht with rfl | ht
          · simp [DTurn.runOk]
          · exact hacc t (List.mem_cons_of_mem _ ht)
    · refine ⟨prefix_cons f _ _, ?_⟩
      intro t ht
      rcases List.mem_cons.mp ht with rfl | ht
      · simp [DTurn.runOk]
      · exact hacc t ht
  · refine ⟨prefix_cons f _ _, ?_⟩
    intro t ht
    rcases List.mem_cons.mp ht with rfl | ht
    · simp [DTurn.runOk]
    · exact hacc t ht

/-- The walk only adds items: the items of the turns it starts from are a prefix of the items
of the turns it ends with. -/
theorem lowerMsgs_prefix :
    ∀ (ns : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn) (fl' : Flags),
      lowerMsgs f i fl acc ns = some (ts, fl') → (∀ t ∈ acc, t.runOk = true) →
      acc.reverse.flatMap (turnItems f) <+: ts.flatMap (turnItems f) := by
  intro ns
  induction ns with
  | nil =>
    intro i fl acc ts fl' h _
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, -⟩ := h
    exact List.prefix_refl _
  | cons m ms ih =>
    intro i fl acc ts fl' h hacc
    have hcons : ∀ t : DTurn, t.runOk = true → ∀ fl'' i', lowerMsgs f i' fl'' (t :: acc) ms =
        some (ts, fl') → acc.reverse.flatMap (turnItems f) <+: ts.flatMap (turnItems f) := by
      intro t ht fl'' i' h'
      refine (prefix_cons f acc t).trans (ih _ _ _ _ _ h' ?_)
      intro u hu
      rcases List.mem_cons.mp hu with rfl | hu
      · exact ht
      · exact hacc u hu
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system => exact ih _ _ _ _ _ h hacc
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      exact hcons _ rfl _ _ h
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      obtain ⟨h1, h2⟩ := addResult_prefix f fl p i acc hacc
      exact h1.trans (ih _ _ _ _ _ h h2)
    | assistant =>
      simp only [lowerMsgs] at h
      split at h
      · exact hcons _ rfl _ _ h
      · simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨r, c, ks⟩, -, h⟩ := h
        dsimp only at h
        split at h
        · exact hcons _ rfl _ _ h
        · exact hcons _ rfl _ _ h

theorem callsOf_nocall :
    ∀ (bs : List Block) (ks : List Call), (∀ n a d, Block.toolCall n a d ∉ bs) →
      asstParts.callsOf bs = some ks → ks = [] := by
  intro bs ks hb h
  cases bs with
  | nil => simp [asstParts.callsOf] at h; exact h
  | cons b bs =>
    cases b with
    | toolCall n a d => exact absurd (List.mem_cons_self ..) (hb n a d)
    | plain p => simp [asstParts.callsOf] at h
    | reasoning p => simp [asstParts.callsOf] at h
    | sampled ts => simp [asstParts.callsOf] at h

theorem asstRest_nocall (bs : List Block) (c : LPay) (ks : List Call)
    (hb : ∀ n a d, Block.toolCall n a d ∉ bs) (h : asstParts.asstRest bs = some (c, ks)) :
    ks = [] := by
  unfold asstParts.asstRest at h
  split at h
  · rename_i p bs'
    simp only [Option.map_eq_some_iff] at h
    obtain ⟨ks', h1, h2⟩ := h
    rw [← (Prod.mk.inj h2).2]
    exact callsOf_nocall bs' ks' (fun n a d hm => hb n a d (List.mem_cons_of_mem _ hm)) h1
  · simp only [Option.map_eq_some_iff] at h
    obtain ⟨ks', h1, h2⟩ := h
    rw [← (Prod.mk.inj h2).2]
    exact callsOf_nocall bs ks' hb h1

/-- The parts of an answer have no call. -/
theorem asstParts_nocall (bs : List Block) (r : Option LPay) (c : LPay) (ks : List Call)
    (hb : ∀ n a d, Block.toolCall n a d ∉ bs) (h : asstParts bs = some (r, c, ks)) :
    ks = [] := by
  unfold asstParts at h
  split at h
  · rename_i p bs'
    simp only [Option.map_eq_some_iff] at h
    obtain ⟨⟨c', ks'⟩, h1, h2⟩ := h
    rw [← (Prod.mk.inj (Prod.mk.inj h2).2).2]
    exact asstRest_nocall bs' c' ks' (fun n a d hm => hb n a d (List.mem_cons_of_mem _ hm)) h1
  · simp only [Option.map_eq_some_iff] at h
    obtain ⟨⟨c', ks'⟩, h1, h2⟩ := h
    rw [← (Prod.mk.inj (Prod.mk.inj h2).2).2]
    exact asstRest_nocall bs c' ks' hb h1

/-- An answer lowered after tool results is written from the prompt `<｜tool▁outputs▁end｜>`
on: the walk over it and the messages after it extends the turns so far followed by that
prompt. -/
theorem lowerMsgs_answer (m : Message) (hm : IsAnswer m) (ms : List Message) (i : Nat)
    (fl : Flags) (acc ts : List DTurn) (fl' : Flags)
    (h : lowerMsgs f i fl acc (m :: ms) = some (ts, fl')) (hacc : ∀ t ∈ acc, t.runOk = true) :
    acc.reverse.flatMap (turnItems f) ++ promptItems f fl.inTools i <+:
      ts.flatMap (turnItems f) := by
  obtain ⟨role, blocks⟩ := m
  obtain ⟨hr, hb⟩ := hm
  simp only at hr hb
  subst hr
  have key : ∀ t : DTurn, t.runOk = true → promptItems f fl.inTools i <+: turnItems f t →
      ∀ fl'' i', lowerMsgs f i' fl'' (t :: acc) ms = some (ts, fl') →
      acc.reverse.flatMap (turnItems f) ++ promptItems f fl.inTools i <+:
        ts.flatMap (turnItems f) := by
    intro t ht hp fl'' i' h'
    refine List.IsPrefix.trans ?_ (lowerMsgs_prefix f _ _ _ _ _ _ h' ?_)
    · rw [List.reverse_cons, List.flatMap_append, List.flatMap_cons, List.flatMap_nil,
        List.append_nil]
      exact (List.prefix_append_right_inj _).mpr hp
    · intro u hu
      rcases List.mem_cons.mp hu with rfl | hu
      · exact ht
      · exact hacc u hu
  simp only [lowerMsgs] at h
  split at h
  · exact key _ rfl (by simp only [turnItems]; exact List.prefix_append _ _) _ _ h
  · simp only [Option.bind_eq_some_iff] at h
    obtain ⟨⟨r, c, ks⟩, hp, h⟩ := h
    have hks := asstParts_nocall blocks r c ks hb hp
    subst hks
    dsimp only at h
    exact key _ rfl (by simp only [turnItems, List.append_assoc]; exact List.prefix_append _ _)
      _ _ h

/-- DeepSeek-R1 extension, both modes, on layouts: the layout of a conversation without the
generation prompt is a prefix of the layout (items: symbols, owners and loss bits) of the
conversation with messages `ns` appended (any tools, with or without the prompt), provided no
appended message is a system message and either the last non-system message is not a tool
message or the first appended message is an answer (an assistant message with no tool call). -/
theorem extension_layout (ms ns : List Message) (tools tools' : Option (List Json)) (g : Bool)
    (l l' : DConv) (hl : lower f ⟨ms, tools, false⟩ = some l)
    (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false)
    (hend : endsInTools ms = false ∨ ∃ m ns', ns = m :: ns' ∧ IsAnswer m) :
    layout f l <+: layout f l' := by
  simp only [lower, Option.bind_eq_some_iff] at hl hl'
  obtain ⟨sys, hsy, s, hs, ⟨us, fl⟩, hlow, hl⟩ := hl
  obtain ⟨sys', hsy', s', hs', ⟨us', fl'⟩, hlow', hl'⟩ := hl'
  rw [systems_append_nosys hsys, hsy, Option.some.injEq] at hsy'
  subst hsy'
  rw [hs, Option.some.injEq] at hs'
  subst hs'
  rw [lowerMsgs_append, hlow] at hlow'
  simp only [Option.bind_some, Nat.zero_add] at hlow'
  have hfl : fl.inTools = endsInTools ms := lowerMsgs_inTools f _ _ _ _ _ _ hlow
  split at hl
  · rename_i hok
    simp only [Bool.and_eq_true, List.all_eq_true] at hok
    have hacc : ∀ t ∈ us.reverse, t.runOk = true :=
      fun t ht => runOk_of_turnOk f (hok.2 t (List.mem_reverse.mp ht))
    split at hl'
    · simp only [Option.some.injEq] at hl hl'
      subst hl hl'
      simp only [layout, List.append_assoc, Bool.false_eq_true, ↓reduceIte]
      refine (List.prefix_append_right_inj _).mpr ?_
      cases hfa : fl.inTools
      · simp only [Bool.false_eq_true, ↓reduceIte, List.append_nil]
        have := lowerMsgs_prefix f _ _ _ _ _ _ hlow' hacc
        rw [List.reverse_reverse] at this
        exact this.trans (List.prefix_append _ _)
      · rw [hfl] at hfa
        rcases hend with he | ⟨m, ns', rfl, hm⟩
        · rw [hfa] at he; cases he
        · simp only [↓reduceIte, genItems_true]
          have := lowerMsgs_answer f m hm ns' _ _ _ _ _ hlow' hacc
          rw [List.reverse_reverse, hfl, hfa] at this
          exact this.trans (List.prefix_append _ _)
    · cases hl'
  · cases hl

/-! ## Ids -/

/-- A list of items that starts with a control item. -/
@[expose] def HeadCtl (L : List Item) : Prop := ∃ k o lb rest, L = ctl k o lb :: rest

theorem headCtl_append {L : List Item} (h : HeadCtl L) (L' : List Item) : HeadCtl (L ++ L') := by
  obtain ⟨k, o, lb, rest, rfl⟩ := h
  exact ⟨k, o, lb, rest ++ L', rfl⟩

theorem headCtl_not_isCh {L : List Item} (h : HeadCtl L) :
    ∀ x ∈ (syms L).head?, x.isCh = false := by
  obtain ⟨k, o, lb, rest, rfl⟩ := h
  intro x hx
  simp only [syms, ctl, List.flatMap_cons, Piece.syms, List.cons_append, List.nil_append,
    List.head?_cons, Option.mem_def, Option.some.injEq] at hx
  subst hx
  rfl

/-- A tool result adds items that start with a control token. -/
theorem addResult_headCtl (fl : Flags) (p : LPay) (i : Nat) (acc : List DTurn)
    (hacc : ∀ t ∈ acc, t.runOk = true) :
    ∃ R, (addResult fl p i acc).reverse.flatMap (turnItems f) =
      acc.reverse.flatMap (turnItems f) ++ R ∧ HeadCtl R := by
  have hnew : ∀ b, HeadCtl (turnItems f (.results b [(p, i)])) := by
    intro b
    cases b
    · exact ⟨_, _, _, _, rfl⟩
    · exact ⟨_, _, _, _, rfl⟩
  unfold addResult
  split
  · rename_i b rs ts
    split
    · have hrs : (DTurn.results b rs).runOk = true := hacc _ (List.mem_cons_self ..)
      cases rs with
      | nil => simp [DTurn.runOk] at hrs
      | cons r rs =>
        refine ⟨resultItems f (p, i), ?_, ⟨_, _, _, _, rfl⟩⟩
        have e : turnItems f (.results b (r :: rs ++ [(p, i)])) =
            turnItems f (.results b (r :: rs)) ++ resultItems f (p, i) := by
          simp [turnItems, groupOwner, List.flatMap_append]
        simp only [List.reverse_cons, List.flatMap_append, List.flatMap_cons,
          List.flatMap_nil, List.append_nil, e, List.append_assoc]
    · refine ⟨_, ?_, hnew fl.outFirst⟩
      rw [List.reverse_cons, List.flatMap_append, List.flatMap_cons, List.flatMap_nil,
        List.append_nil]
  · refine ⟨_, ?_, hnew fl.outFirst⟩
    rw [List.reverse_cons, List.flatMap_append, List.flatMap_cons, List.flatMap_nil,
      List.append_nil]

/-- The first message appended (not a system message, not a call message) adds items that
start with a control token. -/
theorem lowerMsgs_head (m : Message) (hs : m.role.isSystem = false)
    (hc : m.role = .assistant → IsAnswer m) (ms : List Message) (i : Nat) (fl : Flags)
    (acc ts : List DTurn) (fl' : Flags) (h : lowerMsgs f i fl acc (m :: ms) = some (ts, fl'))
    (hacc : ∀ t ∈ acc, t.runOk = true) :
    ∃ R, ts.flatMap (turnItems f) = acc.reverse.flatMap (turnItems f) ++ R ∧ HeadCtl R := by
  have key : ∀ acc1 : List DTurn, (∀ t ∈ acc1, t.runOk = true) → ∀ R,
      acc1.reverse.flatMap (turnItems f) = acc.reverse.flatMap (turnItems f) ++ R →
      HeadCtl R → ∀ fl'' i', lowerMsgs f i' fl'' acc1 ms = some (ts, fl') →
      ∃ R, ts.flatMap (turnItems f) = acc.reverse.flatMap (turnItems f) ++ R ∧ HeadCtl R := by
    intro acc1 h1 R e hR fl'' i' h'
    obtain ⟨R', hR'⟩ := lowerMsgs_prefix f _ _ _ _ _ _ h' h1
    refine ⟨R ++ R', ?_, headCtl_append hR R'⟩
    rw [← hR', e, List.append_assoc]
  have kcons : ∀ t : DTurn, t.runOk = true → HeadCtl (turnItems f t) → ∀ fl'' i',
      lowerMsgs f i' fl'' (t :: acc) ms = some (ts, fl') →
      ∃ R, ts.flatMap (turnItems f) = acc.reverse.flatMap (turnItems f) ++ R ∧ HeadCtl R := by
    intro t ht hh fl'' i' h'
    refine key (t :: acc) ?_ _ ?_ hh _ _ h'
    · intro u hu
      rcases List.mem_cons.mp hu with rfl | hu
      · exact ht
      · exact hacc u hu
    · rw [List.reverse_cons, List.flatMap_append, List.flatMap_cons, List.flatMap_nil,
        List.append_nil]
  obtain ⟨role, blocks⟩ := m
  cases role with
  | system => simp [Role.isSystem] at hs
  | developer => simp [lowerMsgs] at h
  | user =>
    simp only [lowerMsgs, Option.bind_eq_some_iff] at h
    obtain ⟨p, -, h⟩ := h
    exact kcons _ rfl ⟨_, _, _, _, rfl⟩ _ _ h
  | tool =>
    simp only [lowerMsgs, Option.bind_eq_some_iff] at h
    obtain ⟨p, -, h⟩ := h
    obtain ⟨h1, h2⟩ := addResult_prefix f fl p i acc hacc
    obtain ⟨R, e, hR⟩ := addResult_headCtl f fl p i acc hacc
    exact key _ h2 R e hR _ _ h
  | assistant =>
    obtain ⟨-, hb⟩ := hc rfl
    simp only at hb
    simp only [lowerMsgs] at h
    split at h
    · exact kcons _ rfl ⟨_, _, _, _, rfl⟩ _ _ h
    · simp only [Option.bind_eq_some_iff] at h
      obtain ⟨⟨r, c, ks⟩, hp, h⟩ := h
      have hks := asstParts_nocall blocks r c ks hb hp
      subst hks
      dsimp only at h
      exact kcons _ rfl ⟨_, _, _, _, rfl⟩ _ _ h

/-- DeepSeek-R1 extension, both modes, on ids, mask and owners (any codec): the render of a
conversation without the generation prompt is a prefix of the render of the conversation with
messages `ns` appended (any tools, with or without the prompt), provided no appended message is
a system message, the first appended message is not an assistant message with a tool call, and
either the last non-system message is not a tool message or the first appended message is an
answer. -/
theorem extension_ids (codec : Codec) (ms ns : List Message) (tools tools' : Option (List Json))
    (g : Bool) (l l' : DConv) (hl : lower f ⟨ms, tools, false⟩ = some l)
    (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false)
    (hcall : ∀ m ns', ns = m :: ns' → m.role = .assistant → IsAnswer m)
    (hend : endsInTools ms = false ∨ ∃ m ns', ns = m :: ns' ∧ IsAnswer m) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  have hpre := extension_layout f ms ns tools tools' g l l' hl hl' hsys hend
  simp only [lower, Option.bind_eq_some_iff] at hl hl'
  obtain ⟨sys, hsy, s, hs, ⟨us, fl⟩, hlow, hl⟩ := hl
  obtain ⟨sys', hsy', s', hs', ⟨us', fl'⟩, hlow', hl'⟩ := hl'
  rw [systems_append_nosys hsys, hsy, Option.some.injEq] at hsy'
  subst hsy'
  rw [hs, Option.some.injEq] at hs'
  subst hs'
  rw [lowerMsgs_append, hlow] at hlow'
  simp only [Option.bind_some, Nat.zero_add] at hlow'
  split at hl
  · rename_i hok
    simp only [Bool.and_eq_true, List.all_eq_true] at hok
    have hacc : ∀ t ∈ us.reverse, t.runOk = true :=
      fun t ht => runOk_of_turnOk f (hok.2 t (List.mem_reverse.mp ht))
    split at hl'
    · simp only [Option.some.injEq] at hl hl'
      subst hl hl'
      cases hfa : fl.inTools
      · simp only [hfa, layout, Bool.false_eq_true, ↓reduceIte, List.append_nil] at hpre ⊢
        have hP : ∀ P : Option (Bool × Nat), HeadCtl (match P with
            | some (a, o) => genItems f a o
            | none => []) ∨ (match P with
            | some (a, o) => genItems f a o
            | none => []) = [] := by
          intro P
          match P with
          | some (a, o) => exact Or.inl ⟨_, _, _, _, rfl⟩
          | none => exact Or.inr rfl
        have fin : ∀ A P : List Item, (HeadCtl P ∨ P = []) →
            encodeItems codec A <+: encodeItems codec (A ++ P) := by
          intro A P hh
          rcases hh with hh | hh
          · rw [encodeItems_append _ _ _ (headCtl_not_isCh hh)]
            exact List.prefix_append _ _
          · rw [hh, List.append_nil]
            exact List.prefix_refl _
        cases ns with
        | nil =>
          simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at hlow'
          obtain ⟨rfl, -⟩ := hlow'
          rw [List.reverse_reverse]
          exact fin _ _ (hP _)
        | cons m ns' =>
          have hm := hsys m (List.mem_cons_self ..)
          obtain ⟨R, e, hR⟩ := lowerMsgs_head f m hm (hcall m ns' rfl) ns' _ _ _ _ _ hlow' hacc
          rw [e, List.reverse_reverse, ← List.append_assoc _ (List.flatMap (turnItems f) us) R,
            List.append_assoc (_ ++ _) R]
          exact fin _ _ (Or.inl (headCtl_append hR _))
      · simp only [hfa, layout, ↓reduceIte] at hpre ⊢
        obtain ⟨R, hR⟩ := hpre
        rw [← hR]
        simp only [genItems_true, promptItems, ↓reduceIte, List.append_assoc,
          List.singleton_append]
        simp only [← List.append_assoc]
        exact encodeItems_prefix_ctl codec _ R _ _
    · cases hl'
  · cases hl

end Verified.DeepSeek

end
