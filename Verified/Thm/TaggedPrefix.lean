module

public import Verified.Thm.TaggedMask

public section

/-!
# Tagged turns: extensions

* `lowerMsgs_append`: lowering an extension lowers the old messages to the same turns and
  appends the new messages' turns;
* `prompt_prefix`: the render of a conversation with the generation prompt, then the sampled
  tokens, the footer and (where the entry writes it) `eos_token`, is the render of the
  conversation with the sampled turn appended: what the policy sampled is trained on verbatim,
  after exactly the prompt it was sampled from;
* `prefix_stable`: for an entry without `eos_token` after the last turn whose headers each open
  with a control token (`TaggedFmt.appendable`, decided on the entry), the render of a
  conversation is a prefix of the render of every extension (ids, mask and owners): the
  structure never rewrites history.
-/

namespace Verified.Tagged

open Verified

theorem lowerMsgs_append (f : TaggedFmt) : ∀ (i : Nat) (ms ns : List Message),
    lowerMsgs f i (ms ++ ns) =
      (lowerMsgs f i ms).bind fun ts => (lowerMsgs f (i + ms.length) ns).map (ts ++ ·)
  | i, [], ns => by simp [lowerMsgs]
  | i, m :: ms, ns => by
    simp only [List.cons_append, lowerMsgs]
    rw [lowerMsgs_append f (i + 1) ms ns]
    have e : i + 1 + ms.length = i + (m :: ms).length := by simp only [List.length_cons]; omega
    rw [e]
    cases lowerMsg f i m with
    | none => rfl
    | some t =>
      cases lowerMsgs f (i + 1) ms with
      | none => rfl
      | some ts =>
        cases lowerMsgs f (i + (m :: ms).length) ns with
        | none => rfl
        | some us => rfl

theorem lower_shape {f : TaggedFmt} {c : Conversation} {l : TConv} (h : lower f c = some l) :
    (c.tools.getD []).isEmpty = true ∧ ∃ ts, lowerMsgs f 0 c.messages = some ts ∧
      l = ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  unfold lower at h
  split at h
  · cases h
  · rename_i ht
    obtain ⟨ts, hts, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨by simpa using ht, ts, hts, rfl⟩

/-- A symbol stream whose first symbol (if any) is not a character: a span before it is
closed. -/
@[expose] def HeadNotCh (s : List Sym) : Prop := ∀ x ∈ s.head?, x.isCh = false

theorem headNotCh_append {a b : List Sym} (ha : HeadNotCh a) (hb : a = [] → HeadNotCh b) :
    HeadNotCh (a ++ b) := by
  cases a with
  | nil => exact hb rfl
  | cons x r => exact fun y hy => ha y (by simpa using hy)

theorem headNotCh_ctrls (l : List Token) : HeadNotCh (l.map .ctrl) := by
  intro x hx
  cases l with
  | nil => cases hx
  | cons t l =>
    simp only [List.map_cons, List.head?_cons, Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl

theorem headNotCh_head {f : TaggedFmt} (ha : f.appendable = true) (r : Role) :
    HeadNotCh (partsSyms ((headOf f r).getD [])) := by
  cases hh : headOf f r with
  | none => intro x hx; cases hx
  | some h =>
    obtain ⟨e, he, -, rfl⟩ := findHead_mem hh
    simp only [TaggedFmt.appendable, Bool.and_eq_true, List.all_eq_true] at ha
    have h2 := ha.2 e he
    intro x hx
    simp only [Option.getD_some] at hx
    split at h2
    · rename_i t r' hs
      rw [hs] at hx
      simp only [List.head?_cons, Option.mem_def, Option.some.injEq] at hx
      subst hx
      rfl
    · cases h2

theorem headNotCh_prompt {f : TaggedFmt} (ha : f.appendable = true) :
    HeadNotCh (promptSyms f) := by
  simp only [promptSyms, promptItems, syms_append, syms_headItems, syms_ctls]
  exact headNotCh_append (headNotCh_head ha _) fun _ => headNotCh_ctrls _

theorem headNotCh_turn {f : TaggedFmt} (ha : f.appendable = true) {t : TTurn}
    (hfit : t.fits f) : HeadNotCh (syms (turnItems f t)) := by
  cases t with
  | msg r th p o =>
    obtain ⟨hh, -⟩ := hfit
    obtain ⟨h, hh'⟩ := Option.isSome_iff_exists.mp hh
    rw [syms_turnItems_msg, List.append_assoc, List.append_assoc]
    refine headNotCh_append (headNotCh_head ha r) fun he => ?_
    rw [hh', Option.getD_some] at he
    obtain ⟨e, hm, -, rfl⟩ := findHead_mem hh'
    simp only [TaggedFmt.appendable, Bool.and_eq_true, List.all_eq_true] at ha
    have h2 := ha.2 e hm
    rw [he] at h2
    cases h2
  | sampled ts o =>
    rw [syms_turnItems_sampled, List.append_assoc]
    refine headNotCh_append (headNotCh_prompt ha) fun _ => ?_
    cases ts with
    | nil => intro x hx; simp only [List.map_nil, List.nil_append, List.head?_cons,
        Option.mem_def, Option.some.injEq] at hx; subst hx; rfl
    | cons t ts => intro x hx; simp only [List.map_cons, List.cons_append, List.head?_cons,
        Option.mem_def, Option.some.injEq] at hx; subst hx; rfl

theorem eosItems_of_none {f : TaggedFmt} (h : f.eos = none) (o : Nat) : eosItems f o = [] := by
  unfold eosItems
  rw [h]

/-- The renders of an appendable entry never rewrite history: the render of a conversation is
a prefix of the render of every extension of it (ids, mask and owners), for any codec. -/
theorem prefix_stable (f : TaggedFmt) (ha : f.appendable = true) (codec : Codec)
    (ms ns : List Message) (tools : Option (List Json)) (g : Bool) (l l' : TConv)
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  have heos : f.eos = none := by
    simp only [TaggedFmt.appendable, Bool.and_eq_true, Option.isNone_iff_eq_none] at ha
    exact ha.1
  have hfit' := lower_fits hl'
  obtain ⟨-, ts, hts, rfl⟩ := lower_shape hl
  obtain ⟨-, ts', hts', rfl⟩ := lower_shape hl'
  rw [lowerMsgs_append, hts, Option.bind_some] at hts'
  obtain ⟨us, -, rfl⟩ := Option.map_eq_some_iff.mp hts'
  simp only [Bool.false_eq_true, ↓reduceIte] at hfit' ⊢
  rw [layout_tail, layout_tail]
  simp only [tailItems, eosItems_of_none heos, List.append_nil, List.flatMap_append,
    List.append_assoc]
  have hh : HeadNotCh (syms (us.flatMap (turnItems f) ++ tailItems f
      ⟨ts ++ us, if g then some (ms ++ ns).length else none⟩)) := by
    rw [syms_append]
    cases us with
    | cons u us =>
      rw [List.flatMap_cons, syms_append, List.append_assoc]
      exact headNotCh_append (headNotCh_turn ha (hfit' u (by simp))) fun he => by
        have : syms (turnItems f u) ≠ [] := by
          rw [syms_turnItems]
          simp
        exact absurd he this
    | nil =>
      simp only [List.flatMap_nil, syms_nil, List.nil_append, tailItems]
      split
      · rw [syms_promptItems]
        exact headNotCh_prompt ha
      · rw [eosItems_of_none heos]
        intro x hx
        cases hx
  simp only [tailItems, eosItems_of_none heos] at hh
  rw [encodeItems_append _ _ _ hh]
  exact List.prefix_append _ _

/-- The generation prompt, then the sampled tokens, the footer and (where the entry writes it)
`eos_token`, is the render of the conversation with the sampled turn appended: the policy's
tokens are trained on verbatim, after exactly the prompt they were sampled from. -/
theorem prompt_prefix (f : TaggedFmt) (codec : Codec) (ms : List Message)
    (tools : Option (List Json)) (ts : List Token) (l l' : TConv)
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l') :
    encodeItems codec (layout f l') = encodeItems codec (layout f l) ++
      encodeItems codec (⟨.toks ts, ⟨ms.length, true⟩⟩ :: footItems f ms.length true ++
        eosItems f ms.length) := by
  obtain ⟨-, tl, htl, rfl⟩ := lower_shape hl
  obtain ⟨-, tl', htl', rfl⟩ := lower_shape hl'
  rw [lowerMsgs_append, htl, Option.bind_some, Nat.zero_add] at htl'
  obtain ⟨us, hus, rfl⟩ := Option.map_eq_some_iff.mp htl'
  simp only [lowerMsgs] at hus
  obtain ⟨t, ht, hr⟩ := Option.bind_eq_some_iff.mp hus
  obtain ⟨-, -, hsm⟩ := lowerMsg_spec ht
  have e := hsm rfl ts rfl
  subst e
  simp only [Option.map_some, Option.some.injEq] at hr
  subst hr
  simp only [Bool.false_eq_true, ↓reduceIte, if_true]
  have e1 : layout f ⟨tl ++ [.sampled ts ms.length], none⟩ =
      layout f ⟨tl, some ms.length⟩ ++ (⟨.toks ts, ⟨ms.length, true⟩⟩ ::
        footItems f ms.length true ++ eosItems f ms.length) := by
    simp [layout, turnItems, List.flatMap_append, List.append_assoc, TTurn.owner]
  have hh : HeadNotCh (syms (⟨.toks ts, ⟨ms.length, true⟩⟩ :: footItems f ms.length true ++
      eosItems f ms.length)) := by
    intro x hx
    cases ts with
    | nil =>
      simp [footItems, ctl, Piece.syms] at hx
      subst hx
      rfl
    | cons t ts =>
      simp [Piece.syms] at hx
      subst hx
      rfl
  rw [e1, encodeItems_append _ _ _ hh]

end Verified.Tagged

end
