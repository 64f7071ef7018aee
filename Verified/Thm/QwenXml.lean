module

public import Verified.Spec.QwenXml
public import Verified.Thm.Sym
public import Verified.Thm.QwenMask

public section

/-!
# The Qwen3.5 structure's XML calls read back

The template writes argument values raw between tags (`'<parameter=' + args_name + '>\n' +
value + '\n</parameter>\n'`), so a call's text is a faithful record of the call only for the
names and values that cannot end a tag early. This file proves it for the calls lowering
accepts (`XCall.readable`: names clear of `'>\n'`, values clear of `'\n</parameter>\n'`):

* `parseCall_callText`: the reader gives the call back from its text (completeness);
* `callText_of_parseCall`: whatever the reader accepts is the text of the call it returns
  (soundness), so two readable calls with the same text are the same call
  (`callText_injective`).

What lowering asks beyond `readable` (no `>` or newline in a name; no `</parameter>`,
`<parameter=` or `</function>` in a value; a value whose text reads back as the same JSON
value, `lvt.families.qwen_xml.read_value`) is checked in Python and tested, not modelled here.
The entries' ids are well formed (`qwen35Ids_wf`). The mask of the layout: every item of a
turn other than an assistant or sampled turn is unlearned, and those turns' items are owned by
their message (`turnItems_ann`), so a learned item of a layout belongs to an assistant message
(`learned_asst`).
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

/-- No parameter's text is the end of the call: they start `'<p'`, it starts `'</'`. -/
theorem paramOpen_append_ne (x : Chars) : paramOpen ++ x ≠ fnClose := by
  simp [paramOpen, fnClose]

/-- A parameter's text, regrouped as the reader consumes it. -/
theorem paramText_append (p : Chars × Chars) (r : Chars) :
    paramText p ++ r = paramOpen ++ (p.1 ++ gtNl ++ (p.2 ++ paramClose ++ r)) := by
  simp [paramText, List.append_assoc]

/-- Every parameter writes at least one character. -/
theorem length_le_flatMap_paramText :
    ∀ ps : List (Chars × Chars), ps.length ≤ (ps.flatMap paramText).length
  | [] => Nat.le_refl 0
  | p :: ps => by
    have ih := length_le_flatMap_paramText ps
    have h1 : 1 ≤ (paramText p).length := by simp [paramText, paramOpen]
    simp only [List.flatMap_cons, List.length_append, List.length_cons]
    omega

/-- The parameters of a readable call read back from their text, given enough fuel. -/
theorem parseParams_params : ∀ (ps : List (Chars × Chars)) (n : Nat),
    (ps.all fun p => clearOf gtNl p.1 && clearOf paramClose p.2) = true → ps.length < n →
    parseParams n (ps.flatMap paramText ++ fnClose) = some ps
  | [], n, _, hn => by
    cases n with
    | zero => exact absurd hn (Nat.lt_irrefl 0)
    | succ m => simp [parseParams]
  | p :: ps, n, h, hn => by
    cases n with
    | zero => exact absurd hn (Nat.not_lt_zero _)
    | succ m =>
      simp only [List.all_cons, Bool.and_eq_true] at h
      obtain ⟨⟨h1, h2⟩, h3⟩ := h
      have ih := parseParams_params ps m h3 (Nat.lt_of_succ_lt_succ hn)
      rw [List.flatMap_cons, List.append_assoc, paramText_append]
      unfold parseParams
      rw [if_neg (paramOpen_append_ne _), stripPrefix?_append]
      simp only [splitFirst_of_clearOf _ h1, splitFirst_of_clearOf _ h2, ih, Option.map_some]

/-- **Completeness**: a readable call reads back from the text the template writes for it. -/
theorem parseCall_callText (k : XCall) (h : k.readable = true) :
    parseCall (callText k) = some k := by
  obtain ⟨name, ps⟩ := k
  simp only [XCall.readable, Bool.and_eq_true] at h
  obtain ⟨h1, h2⟩ := h
  have e : callText ⟨name, ps⟩ = fnOpen ++ (name ++ gtNl ++ (ps.flatMap paramText ++ fnClose)) := by
    simp [callText, List.append_assoc]
  have hl : ps.length < (ps.flatMap paramText ++ fnClose).length + 1 := by
    have := length_le_flatMap_paramText ps
    simp only [List.length_append]
    omega
  rw [e]
  unfold parseCall
  rw [stripPrefix?_append]
  simp only [splitFirst_of_clearOf _ h1, parseParams_params ps _ h2 hl, Option.map_some]

/-- What `parseParams` accepts is the text of the parameters it returns. -/
theorem flatMap_of_parseParams : ∀ (n : Nat) (body : Chars) (ps : List (Chars × Chars)),
    parseParams n body = some ps → body = ps.flatMap paramText ++ fnClose
  | 0, _, _, h => by simp [parseParams] at h
  | n + 1, body, ps, h => by
    unfold parseParams at h
    split at h
    · rename_i he
      simp only [Option.some.injEq] at h
      subst h
      simpa using he
    · cases h1 : stripPrefix? paramOpen body with
      | none => rw [h1] at h; cases h
      | some b =>
        rw [h1] at h
        simp only at h
        cases h2 : splitFirst gtNl b with
        | none => rw [h2] at h; cases h
        | some q =>
          obtain ⟨p, r⟩ := q
          rw [h2] at h
          simp only at h
          cases h3 : splitFirst paramClose r with
          | none => rw [h3] at h; cases h
          | some q' =>
            obtain ⟨v, rest⟩ := q'
            rw [h3] at h
            simp only at h
            cases h4 : parseParams n rest with
            | none => rw [h4] at h; cases h
            | some ps' =>
              rw [h4] at h
              simp only [Option.map_some, Option.some.injEq] at h
              subst h
              have e1 := stripPrefix?_eq_some h1
              have e2 := splitFirst_eq_some h2
              have e3 := splitFirst_eq_some h3
              have e4 := flatMap_of_parseParams n rest ps' h4
              subst e1 e2 e3 e4
              simp [paramText, List.append_assoc]

/-- **Soundness**: whatever the reader accepts is the text of the call it returns. -/
theorem callText_of_parseCall (cs : Chars) (k : XCall) (h : parseCall cs = some k) :
    cs = callText k := by
  unfold parseCall at h
  cases h1 : stripPrefix? fnOpen cs with
  | none => rw [h1] at h; cases h
  | some r =>
    rw [h1] at h
    simp only at h
    cases h2 : splitFirst gtNl r with
    | none => rw [h2] at h; cases h
    | some q =>
      obtain ⟨name, body⟩ := q
      rw [h2] at h
      simp only at h
      cases h3 : parseParams (body.length + 1) body with
      | none => rw [h3] at h; cases h
      | some ps =>
        rw [h3] at h
        simp only [Option.map_some, Option.some.injEq] at h
        subst h
        have e1 := stripPrefix?_eq_some h1
        have e2 := splitFirst_eq_some h2
        have e3 := flatMap_of_parseParams _ body ps h3
        subst e1 e2 e3
        simp [callText, List.append_assoc]

/-- **Injectivity**: readable calls with the same text are the same call. -/
theorem callText_injective (k k' : XCall) (h : k.readable = true) (h' : k'.readable = true)
    (e : callText k = callText k') : k = k' := by
  have a := parseCall_callText k h
  rw [e, parseCall_callText k' h'] at a
  exact (Option.some.inj a).symm

/-- The entries' control ids are pairwise distinct. -/
theorem qwen35Ids_wf : qwen35Ids.wf = true := by decide

/-- A call with a multi-line value and an empty value is readable, so it reads back. -/
example : parseCall (callText ⟨['f'], [(['x'], ['1', '\n', '2']), (['y'], [])]⟩) =
    some ⟨['f'], [(['x'], ['1', '\n', '2']), (['y'], [])]⟩ :=
  parseCall_callText _ (by decide)

/-- A value holding `'\n</parameter>\n'` is not readable: its text would end early. -/
example : (XCall.readable ⟨['f'], [(['x'], ['a'] ++ paramClose ++ ['b'])]⟩) = false := by decide

/-! ## The mask: only assistant messages are learned -/

section Mask

variable (f : XmlFmt)

/-- The owner of the items of an assistant or sampled turn. -/
@[expose] def xAsstOwner : XTurn → Option Nat
  | .assistant _ _ _ _ o => some o
  | .sampled _ o => some o
  | _ => none

/-- The annotations of the items of a turn: owned by the message in assistant and sampled
turns, never learned elsewhere. -/
@[expose] def xAnnOk (t : XTurn) (a : Ann) : Prop :=
  match xAsstOwner t with
  | some o => a.owner = o
  | none => a.learn = false

theorem callsItems'_owner (o : Nat) (ks : List XCall) :
    ∀ it ∈ QwenXml.callsItems.callsItems' f o ks, it.ann.owner = o := by
  induction ks with
  | nil => simp [QwenXml.callsItems.callsItems']
  | cons k ks ih =>
    simp only [QwenXml.callsItems.callsItems', fa_append]
    exact ⟨by simp [ctl, txt], ih⟩

theorem callsItems_owner (s : Bool) (o : Nat) (ks : List XCall) :
    ∀ it ∈ QwenXml.callsItems f s o ks, it.ann.owner = o := by
  cases ks with
  | nil => simp [QwenXml.callsItems]
  | cons k ks =>
    simp only [QwenXml.callsItems, fa_append]
    refine ⟨⟨?_, by simp [ctl, txt]⟩, callsItems'_owner f o ks⟩
    split <;> simp [txt]

/-- Who owns the items of a turn, and which are learned. -/
theorem turnItems_ann (t : XTurn) : ∀ it ∈ QwenXml.turnItems f t, xAnnOk t it.ann := by
  cases t with
  | plain r p o =>
    simp [QwenXml.turnItems, footer, xAnnOk, xAsstOwner, ctl, txt, pay_ann, or_imp, forall_and]
  | toolsSystem s ts o =>
    cases s <;> simp [QwenXml.turnItems, toolsSystemItems, footer, xAnnOk, xAsstOwner, ctl, txt,
      pay_ann, or_imp, forall_and]
  | assistant th c s ks o =>
    simp only [QwenXml.turnItems, fa_append]
    refine ⟨⟨⟨⟨?_, ?_⟩, ?_⟩, callsItems_owner f s o ks⟩, ?_⟩
    · simp [xAnnOk, xAsstOwner, ctl, txt]
    · split <;> simp [xAnnOk, xAsstOwner, ctl, txt, pay_ann]
    · simp [xAnnOk, xAsstOwner, pay_ann]
    · simp [xAnnOk, xAsstOwner, footer, ctl, txt]
  | toolGroup rs =>
    simp only [QwenXml.turnItems, fa_append]
    refine ⟨⟨?_, flatMap_resultItems_learn f.base rs⟩, ?_⟩
    · simp [xAnnOk, xAsstOwner, ctl, txt]
    · simp [xAnnOk, xAsstOwner, footer, ctl, txt]
  | sampled ts o =>
    simp only [QwenXml.turnItems, fa_append]
    refine ⟨⟨promptItems_owner f.base o, ?_⟩, ?_⟩
    · simp [xAnnOk, xAsstOwner]
    · simp [xAnnOk, xAsstOwner, footer, ctl, txt]

/-- **Mask**: a learned item of a layout belongs to an assistant (or sampled) turn and is
owned by its message; the generation prompt is never learned. -/
theorem learned_asst (q : XConv) (it : Item) (h : it ∈ QwenXml.layout f q)
    (hl : it.ann.learn = true) : ∃ t ∈ q.turns, xAsstOwner t = some it.ann.owner := by
  unfold QwenXml.layout at h
  rcases List.mem_append.mp h with h | h
  · obtain ⟨t, ht, hi⟩ := List.mem_flatMap.mp h
    have a := turnItems_ann f t it hi
    unfold xAnnOk at a
    cases e : xAsstOwner t with
    | none =>
      rw [e] at a
      have a' : it.ann.learn = false := a
      rw [a'] at hl
      cases hl
    | some o =>
      rw [e] at a
      have a' : it.ann.owner = o := a
      exact ⟨t, ht, by rw [e, a']⟩
  · split at h
    · rw [promptItems_learn f.base _ it h] at hl
      cases hl
    · cases h

end Mask

end Verified.QwenXml
