module

public import Verified.Thm.DeepSeekPrefix

public section

/-!
# DeepSeek-R1: appended call messages extend the render

`extension_ids` (in `DeepSeekPrefix`) proves the render prefix when the first appended message
is not an assistant message with a tool call. A call message written after the first one has no
header: its items start with the text `'\n'` (`callsItems f true`, or a think block in the
stable mode), so when the shorter layout ends with a text span, the `'\n'` joins it and the
codec may encode the joined span differently. That span is a user message's text (or the
system text), never anything else:

* `extension_ids_asst`: when the last non-system message of the conversation is an assistant
  message (an answer, a call message or a sampled turn), its layout ends with the control
  `<｜end▁of▁sentence｜>` (`lowerMsgs_endsCtl`), so the render is a prefix of the render of
  any extension `extension_layout` allows (`encodeItems_prefix_endsCtl`), whatever is
  appended.
* `extension_ids_first`: when the conversation has no call message (`NoCalls`), the walk's
  `ns.is_first` flag is still clear (`lowerMsgs_called`), so an appended call message is the
  first one and is written with its `<｜Assistant｜>` header (`lowerMsgs_head_first`): the
  appended items start with a control token.
* `extension_ids_call`: with `extension_ids`, the render is a prefix under
  `extension_layout`'s conditions when the first appended message is not a call message, or
  the last non-system message is an assistant message, or there is no call message yet.
* `extension_ids_except`: the same with exactly one case left out (`LaterCallAfterUser`): the
  first appended message is a call message, the conversation already has one, and its last
  non-system message is a user message (`lastRole`) — a later call message right after a user
  message, the case `tests/test_deepseek.py::test_where_prefix_fails` shows failing. The other
  shapes of the last non-system message are covered (`lastRole_spec`): none (no call message
  then), a tool message (then `extension_layout`'s conditions make the appended message an
  answer), a developer message (nothing is lowered, `lowerMsgs_dev`).
* `extension_prefix`: the extension property as the registry states it, the layout prefix
  (`extension_layout`) and the render prefix (`extension_ids_except`) in one.
-/

namespace Verified.DeepSeek

open Verified

variable (f : DsFmt)

/-- The role of the last non-system message after the messages, `r` if there is none. -/
@[expose] def lastRole (r : Option Role) : List Message → Option Role
  | [] => r
  | m :: ms => lastRole (if m.role.isSystem then r else some m.role) ms

/-- The last non-system message is an assistant message. -/
@[expose] def EndsInAsst (ms : List Message) : Prop := lastRole none ms = some .assistant

/-- No assistant message with a tool call: every assistant message is an answer. -/
@[expose] def NoCalls (ms : List Message) : Prop := ∀ x ∈ ms, x.role = .assistant → IsAnswer x

theorem openAfter_lastRole : ∀ (ms : List Message) (b : Bool) (r : Option Role),
    (b = true ↔ r = some .tool) → (openAfter b ms = true ↔ lastRole r ms = some .tool) := by
  intro ms
  induction ms with
  | nil => intro b r h; exact h
  | cons m ms ih =>
    intro b r h
    obtain ⟨role, blocks⟩ := m
    cases role <;>
      simp only [openAfter, lastRole, Role.isSystem, Bool.false_eq_true, ↓reduceIte] <;>
      exact ih _ _ (by simp [h])

/-- A conversation whose last non-system message is an assistant message does not end in a run
of tool results. -/
theorem endsInTools_of_asst (ms : List Message) (h : EndsInAsst ms) : endsInTools ms = false := by
  have e := openAfter_lastRole ms false none (by simp)
  cases hb : endsInTools ms
  · rfl
  · unfold endsInTools at hb
    have h2 := e.mp hb
    unfold EndsInAsst at h
    rw [h] at h2
    cases h2

/-! ## The layout ends with a control token -/

/-- A list of items that ends with a control item. -/
@[expose] def EndsCtl (L : List Item) : Prop := ∃ X k o lb, L = X ++ [ctl k o lb]

theorem endsCtl_append (A : List Item) {L : List Item} (h : EndsCtl L) : EndsCtl (A ++ L) := by
  obtain ⟨X, k, o, lb, rfl⟩ := h
  exact ⟨A ++ X, k, o, lb, by rw [List.append_assoc]⟩

theorem endsCtl_pair (X : List Item) (a : Item) (k : Token) (o : Nat) (lb : Bool) :
    EndsCtl (X ++ [a, ctl k o lb]) :=
  ⟨X ++ [a], k, o, lb, by simp⟩

/-- A render cut right after a control token is a prefix of the render of anything that
continues it. -/
theorem encodeItems_prefix_endsCtl (codec : Codec) {A : List Item} (h : EndsCtl A)
    (R : List Item) : encodeItems codec A <+: encodeItems codec (A ++ R) := by
  obtain ⟨X, k, o, lb, rfl⟩ := h
  rw [List.append_assoc, List.singleton_append]
  exact encodeItems_prefix_ctl codec X R k ⟨o, lb⟩

/-- After an assistant message (and any system messages), the items end with a control token:
every assistant turn ends with `<｜end▁of▁sentence｜>`. -/
theorem lowerMsgs_endsCtl :
    ∀ (ms : List Message) (r : Option Role) (i : Nat) (fl : Flags) (acc ts : List DTurn)
      (fl' : Flags), lowerMsgs f i fl acc ms = some (ts, fl') →
      lastRole r ms = some .assistant →
      (r = some .assistant → EndsCtl (acc.reverse.flatMap (turnItems f))) →
      EndsCtl (ts.flatMap (turnItems f)) := by
  intro ms
  induction ms with
  | nil =>
    intro r i fl acc ts fl' h hr ha
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨rfl, -⟩ := h
    exact ha hr
  | cons m ms ih =>
    intro r i fl acc ts fl' h hr ha
    have hcons : ∀ t : DTurn, EndsCtl (turnItems f t) → ∀ fl'' i',
        lowerMsgs f i' fl'' (t :: acc) ms = some (ts, fl') →
        lastRole (some .assistant) ms = some .assistant → EndsCtl (ts.flatMap (turnItems f)) := by
      intro t ht fl'' i' h' hr'
      refine ih _ _ _ _ _ _ h' hr' (fun _ => ?_)
      rw [List.reverse_cons, List.flatMap_append, List.flatMap_cons, List.flatMap_nil,
        List.append_nil]
      exact endsCtl_append _ ht
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system =>
      simp only [lastRole, Role.isSystem, ↓reduceIte] at hr
      exact ih _ _ _ _ _ _ h hr ha
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      simp only [lastRole, Role.isSystem, Bool.false_eq_true, ↓reduceIte] at hr
      exact ih _ _ _ _ _ _ h hr (fun e => by cases e)
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      simp only [lastRole, Role.isSystem, Bool.false_eq_true, ↓reduceIte] at hr
      exact ih _ _ _ _ _ _ h hr (fun e => by cases e)
    | assistant =>
      simp only [lastRole, Role.isSystem, Bool.false_eq_true, ↓reduceIte] at hr
      simp only [lowerMsgs] at h
      split at h
      · exact hcons _ (by simp only [turnItems]; exact endsCtl_pair _ _ _ _ _) _ _ h hr
      · simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨r', c, ks⟩, -, h⟩ := h
        dsimp only at h
        split at h
        · exact hcons _ (by simp only [turnItems]; exact endsCtl_pair _ _ _ _ _) _ _ h hr
        · exact hcons _ (by simp only [turnItems]; exact endsCtl_pair _ _ _ _ _) _ _ h hr

/-- DeepSeek-R1 extension after an assistant message, both modes, on ids, mask and owners (any
codec): when the last non-system message of a conversation without the generation prompt is an
assistant message, its render is a prefix of the render of the conversation with messages `ns`
appended (any tools, with or without the prompt), whatever `ns` holds but system messages —
in particular a later call message, written without a header. -/
theorem extension_ids_asst (codec : Codec) (ms ns : List Message)
    (tools tools' : Option (List Json)) (g : Bool) (l l' : DConv)
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false) (hasst : EndsInAsst ms) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  have hend : endsInTools ms = false := endsInTools_of_asst ms hasst
  obtain ⟨R, hR⟩ := extension_layout f ms ns tools tools' g l l' hl hl' hsys (Or.inl hend)
  rw [← hR]
  refine encodeItems_prefix_endsCtl codec ?_ R
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨sys, hsy, s, hs, ⟨us, fl⟩, hlow, hl⟩ := hl
  have hfl : fl.inTools = endsInTools ms := lowerMsgs_inTools f _ _ _ _ _ _ hlow
  have hE := lowerMsgs_endsCtl f ms none _ _ _ _ _ hlow hasst (fun h => by cases h)
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    simp only [layout, hfl, hend, Bool.false_eq_true, ↓reduceIte, List.append_nil]
    exact endsCtl_append _ hE
  · cases hl

/-! ## The first call message -/

/-- Without call messages the walk leaves `ns.is_first` as it was. -/
theorem lowerMsgs_called :
    ∀ (ms : List Message) (i : Nat) (fl : Flags) (acc ts : List DTurn) (fl' : Flags),
      lowerMsgs f i fl acc ms = some (ts, fl') → NoCalls ms → fl'.called = fl.called := by
  intro ms
  induction ms with
  | nil =>
    intro i fl acc ts fl' h _
    simp only [lowerMsgs, Option.some.injEq, Prod.mk.injEq] at h
    obtain ⟨-, rfl⟩ := h
    rfl
  | cons m ms ih =>
    intro i fl acc ts fl' h hno
    have hno' : NoCalls ms := fun x hx => hno x (List.mem_cons_of_mem _ hx)
    have hm : m.role = .assistant → IsAnswer m := hno m (List.mem_cons_self ..)
    obtain ⟨role, blocks⟩ := m
    cases role with
    | system => exact ih _ _ _ _ _ h hno'
    | developer => simp [lowerMsgs] at h
    | user =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      have := ih _ _ _ _ _ h hno'
      exact this
    | tool =>
      simp only [lowerMsgs, Option.bind_eq_some_iff] at h
      obtain ⟨p, -, h⟩ := h
      have := ih _ _ _ _ _ h hno'
      exact this
    | assistant =>
      obtain ⟨-, hb⟩ := hm rfl
      simp only at hb
      simp only [lowerMsgs] at h
      split at h
      · have := ih _ _ _ _ _ h hno'
        exact this
      · simp only [Option.bind_eq_some_iff] at h
        obtain ⟨⟨r, c, ks⟩, hp, h⟩ := h
        have hks := asstParts_nocall blocks r c ks hb hp
        subst hks
        dsimp only at h
        have := ih _ _ _ _ _ h hno'
        exact this

/-- Before any call message (`ns.is_first` clear), the first message appended (not a system
message) adds items that start with a control token: a call message is then written with its
`<｜Assistant｜>` header. -/
theorem lowerMsgs_head_first (m : Message) (hs : m.role.isSystem = false) (ms : List Message)
    (i : Nat) (fl : Flags) (hfl : fl.called = false) (acc ts : List DTurn) (fl' : Flags)
    (h : lowerMsgs f i fl acc (m :: ms) = some (ts, fl')) (hacc : ∀ t ∈ acc, t.runOk = true) :
    ∃ R, ts.flatMap (turnItems f) = acc.reverse.flatMap (turnItems f) ++ R ∧ HeadCtl R := by
  by_cases hc : m.role = .assistant
  · have kcons : ∀ t : DTurn, t.runOk = true → HeadCtl (turnItems f t) → ∀ fl'' i',
        lowerMsgs f i' fl'' (t :: acc) ms = some (ts, fl') →
        ∃ R, ts.flatMap (turnItems f) = acc.reverse.flatMap (turnItems f) ++ R ∧
          HeadCtl R := by
      intro t ht hh fl'' i' h'
      obtain ⟨R', hR'⟩ := lowerMsgs_prefix f _ _ _ _ _ _ h' (by
        intro u hu
        rcases List.mem_cons.mp hu with rfl | hu
        · exact ht
        · exact hacc u hu)
      refine ⟨turnItems f t ++ R', ?_, headCtl_append hh R'⟩
      rw [← hR', List.reverse_cons, List.flatMap_append, List.flatMap_cons, List.flatMap_nil,
        List.append_nil, List.append_assoc]
    obtain ⟨role, blocks⟩ := m
    simp only at hc
    subst hc
    simp only [lowerMsgs] at h
    split at h
    · exact kcons _ rfl ⟨_, _, _, _, rfl⟩ _ _ h
    · simp only [Option.bind_eq_some_iff] at h
      obtain ⟨⟨r, c, ks⟩, -, h⟩ := h
      dsimp only at h
      split at h
      · exact kcons _ rfl ⟨_, _, _, _, rfl⟩ _ _ h
      · simp only [hfl, Bool.false_eq_true, ↓reduceIte] at h
        exact kcons _ rfl ⟨_, _, _, _, rfl⟩ _ _ h
  · exact lowerMsgs_head f m hs (fun e => absurd e hc) ms i fl acc ts fl' h hacc

/-- DeepSeek-R1 extension before any call message, both modes, on ids, mask and owners (any
codec): the render of a conversation without the generation prompt and without a call message
is a prefix of the render of the conversation with messages `ns` appended (any tools, with or
without the prompt), provided no appended message is a system message and either the last
non-system message is not a tool message or the first appended message is an answer; the first
appended message may be a call message (it is the first, written with its header). -/
theorem extension_ids_first (codec : Codec) (ms ns : List Message)
    (tools tools' : Option (List Json)) (g : Bool) (l l' : DConv)
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false) (hno : NoCalls ms)
    (hend : endsInTools ms = false ∨ ∃ m ns', ns = m :: ns' ∧ IsAnswer m) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  have hpre := extension_layout f ms ns tools tools' g l l' hl hl' hsys hend
  simp only [lower, Option.bind_eq_some_iff] at hl hl'
  obtain ⟨sys, hsy, s, hs, ⟨us, fl⟩, hlow, hl⟩ := hl
  obtain ⟨sys', hsy', s', hs', ⟨us', fl'⟩, hlow', hl'⟩ := hl'
  have hcalled : fl.called = false := lowerMsgs_called f _ _ _ _ _ _ hlow hno
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
          obtain ⟨R, e, hR⟩ :=
            lowerMsgs_head_first f m hm ns' _ _ hcalled _ _ _ hlow' hacc
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

/-! ## All together -/

/-- DeepSeek-R1 extension, both modes, on ids, mask and owners (any codec), with the one case
that fails left out: the render of a conversation without the generation prompt is a prefix of
the render of the conversation with messages `ns` appended (any tools, with or without the
prompt), provided no appended message is a system message, either the last non-system message
is not a tool message or the first appended message is an answer (`extension_layout`'s
conditions), and, when the first appended message is an assistant message with a tool call,
either the last non-system message is an assistant message or the conversation has no call
message yet. -/
theorem extension_ids_call (codec : Codec) (ms ns : List Message)
    (tools tools' : Option (List Json)) (g : Bool) (l l' : DConv)
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false)
    (hend : endsInTools ms = false ∨ ∃ m ns', ns = m :: ns' ∧ IsAnswer m)
    (hcall : ∀ m ns', ns = m :: ns' → m.role = .assistant → ¬ IsAnswer m →
      EndsInAsst ms ∨ NoCalls ms) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  cases ns with
  | nil =>
    exact extension_ids f codec ms [] tools tools' g l l' hl hl' hsys (fun _ _ e => by cases e)
      hend
  | cons m ns' =>
    rcases Classical.em (m.role = .assistant → IsAnswer m) with ha | ha
    · exact extension_ids f codec ms _ tools tools' g l l' hl hl' hsys
        (fun _ _ e => by cases e; exact ha) hend
    · have hr : m.role = .assistant :=
        Classical.byContradiction fun hr => ha (fun h => absurd h hr)
      rcases hcall m ns' rfl hr (fun h => ha (fun _ => h)) with h | h
      · exact extension_ids_asst f codec ms _ tools tools' g l l' hl hl' hsys h
      · exact extension_ids_first f codec ms _ tools tools' g l l' hl hl' hsys h hend

/-! ## Exactly one case left out -/

/-- Where the last non-system message comes from: there is none (every message is a system
message and `r` is kept), or it is one of the messages. -/
theorem lastRole_spec : ∀ (ms : List Message) (r : Option Role),
    (lastRole r ms = r ∧ ∀ x ∈ ms, x.role.isSystem = true) ∨
      ∃ x ∈ ms, x.role.isSystem = false ∧ lastRole r ms = some x.role := by
  intro ms
  induction ms with
  | nil => intro r; exact Or.inl ⟨rfl, fun x hx => by cases hx⟩
  | cons m ms ih =>
    intro r
    simp only [lastRole]
    rcases ih (if m.role.isSystem then r else some m.role) with ⟨h1, h2⟩ | ⟨x, hx, h1, h2⟩
    · cases hs : m.role.isSystem
      · refine Or.inr ⟨m, List.mem_cons_self .., hs, ?_⟩
        simp only [hs, Bool.false_eq_true, ↓reduceIte] at h1 ⊢
        exact h1
      · refine Or.inl ⟨?_, ?_⟩
        · simp only [hs, ↓reduceIte] at h1 ⊢
          exact h1
        · intro x hx
          rcases List.mem_cons.mp hx with rfl | hx
          · exact hs
          · exact h2 x hx
    · exact Or.inr ⟨x, List.mem_cons_of_mem _ hx, h1, h2⟩

/-- A developer message anywhere: the template has no such role, nothing is lowered. -/
theorem lowerMsgs_dev (ms : List Message) (x : Message) (hx : x ∈ ms)
    (hd : x.role = .developer) (i : Nat) (fl : Flags) (acc : List DTurn) :
    lowerMsgs f i fl acc ms = none := by
  obtain ⟨s, t, rfl⟩ := List.append_of_mem hx
  obtain ⟨role, blocks⟩ := x
  simp only at hd
  subst hd
  rw [lowerMsgs_append]
  cases lowerMsgs f i fl acc s <;> simp [lowerMsgs]

/-- The one case the render prefix fails on (`test_where_prefix_fails`): the first appended
message is a call message (an assistant message that is not an answer) written without its
header (the conversation already has a call message), right after a user message (the last
non-system message of the conversation). -/
@[expose] def LaterCallAfterUser (ms ns : List Message) : Prop :=
  ∃ m ns', ns = m :: ns' ∧ m.role = .assistant ∧ ¬ IsAnswer m ∧ ¬ NoCalls ms ∧
    lastRole none ms = some .user

/-- DeepSeek-R1 extension, both modes, on ids, mask and owners (any codec), under
`extension_layout`'s conditions alone but for the one case that fails: the render of a
conversation without the generation prompt is a prefix of the render of the conversation with
messages `ns` appended (any tools, with or without the prompt), provided no appended message is
a system message, either the last non-system message is not a tool message or the first
appended message is an answer, and the first appended message is not a later call message
right after a user message. -/
theorem extension_ids_except (codec : Codec) (ms ns : List Message)
    (tools tools' : Option (List Json)) (g : Bool) (l l' : DConv)
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false)
    (hend : endsInTools ms = false ∨ ∃ m ns', ns = m :: ns' ∧ IsAnswer m)
    (hex : ¬ LaterCallAfterUser ms ns) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  refine extension_ids_call f codec ms ns tools tools' g l l' hl hl' hsys hend ?_
  intro m ns' e hr ha
  rcases Classical.em (NoCalls ms) with hno | hno
  · exact Or.inr hno
  · refine Or.inl ?_
    rcases lastRole_spec ms none with ⟨-, h2⟩ | ⟨x, hx, hs, h1⟩
    · refine absurd ?_ hno
      intro y hy hy'
      have := h2 y hy
      rw [hy'] at this
      cases this
    · unfold EndsInAsst
      rw [h1]
      obtain ⟨role, blocks⟩ := x
      cases role with
      | system => simp [Role.isSystem] at hs
      | developer =>
        simp only [lower, Option.bind_eq_some_iff] at hl
        obtain ⟨sys, -, s, -, ⟨us, fl⟩, hlow, -⟩ := hl
        rw [lowerMsgs_dev f ms _ hx rfl] at hlow
        cases hlow
      | user => exact absurd ⟨m, ns', e, hr, ha, hno, h1⟩ hex
      | assistant => rfl
      | tool =>
        have ht : endsInTools ms = true := (openAfter_lastRole ms false none (by simp)).mpr h1
        rcases hend with he | ⟨m', ns'', e', hm'⟩
        · rw [ht] at he
          cases he
        · rw [e] at e'
          cases e'
          exact absurd hm' ha

/-- DeepSeek-R1's extension property, both modes: under `extension_layout`'s conditions (no
appended system message; after tool results the first appended message is an answer) the
layout of a conversation without the generation prompt is a prefix of the layout of the
conversation with messages appended, and its render (ids, mask, owners, any codec) is a prefix
of the longer render unless the first appended message is a later call message right after a
user message. -/
theorem extension_prefix (codec : Codec) (ms ns : List Message)
    (tools tools' : Option (List Json)) (g : Bool) (l l' : DConv)
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools', g⟩ = some l')
    (hsys : ∀ m ∈ ns, m.role.isSystem = false)
    (hend : endsInTools ms = false ∨ ∃ m ns', ns = m :: ns' ∧ IsAnswer m) :
    layout f l <+: layout f l' ∧ (¬ LaterCallAfterUser ms ns →
      encodeItems codec (layout f l) <+: encodeItems codec (layout f l')) :=
  ⟨extension_layout f ms ns tools tools' g l l' hl hl' hsys hend,
    extension_ids_except f codec ms ns tools tools' g l l' hl hl' hsys hend⟩

end Verified.DeepSeek

end
