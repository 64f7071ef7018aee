module

public import Verified.Thm.Harmony
public import Verified.Thm.QwenLayout

public section

/-!
# gpt-oss: what each format keeps when a conversation grows

* `extension_stable`: in the stable format, the layout of a conversation with the generation
  prompt (`<|start|>assistant`) is a prefix of the layout of the conversation followed by any
  messages that start with an assistant message (items: control ids, texts, token payloads,
  owners and loss bits). Every earlier turn is written as before: stable mode keeps every
  reasoning block, so no later message changes how an earlier one is lowered.
* `extension_exact`: the exact format (the official template) has the same property for the
  extensions in which no appended message is a final answer (every appended assistant message
  calls a tool: the agent loop). The template drops a call message's analysis only when a
  final answer follows it (`future_final_message`); `KeepsHistory` names both conditions and
  `extension_keeps` proves the prefix from either.
* `sampled_extension_stable`: the same at the token level when the new assistant message is a
  sampled turn (inference and training agree: the render with the prompt, then the sampled
  tokens, learned and owned by the new message, is the render of the conversation with the
  sampled turn appended, for every codec).
* `extension_stable_training`: the `<|return|>` exception made precise. Without the prompt,
  the layout of a conversation with its final answers ended by `<|end|>` (`HTurn.unret`) is a
  prefix of the layout of the conversation followed by any messages: an appended message
  changes only the last answer's `<|return|>`.

Token-level prefixes of the prompt render are in `Thm/HarmonyPromptIds.lean` (a call message:
` to=functions.NAME` is text right after the prompt's `assistant`, one span, so only for a
codec that splits before the space; o200k does, `tests/test_harmony.py` checks it). Not stated:
token-level prefixes of the training render, and the exact format's extensions by a final
answer, which are not prefixes (the answer drops the analysis of earlier call messages).
-/

namespace Verified.Harmony

open Verified

/-- In the stable format the messages after an assistant message do not change its turns. -/
theorem lowerAsst_stable {f : HarmonyFmt} (hs : f.mode = .stable) (i : Nat) (m : Message)
    (later later' : List Message) (last : Bool) :
    lowerAsst f i m later last = lowerAsst f i m later' last := by
  unfold lowerAsst
  simp [hs]

/-- The appended messages `ys` keep the turns of the messages before them: the stable format
keeps every reasoning block; the exact one drops the analysis of a call message only when a
final answer follows it (`future_final_message`), so it keeps history while none of `ys` is a
final answer (an assistant message without a tool call). -/
@[expose] def KeepsHistory (f : HarmonyFmt) (ys : List Message) : Prop :=
  f.mode = .stable ∨ ys.any isFinalMsg = false

/-- Messages that keep history do not change how an earlier assistant message is lowered. -/
theorem lowerAsst_keeps {f : HarmonyFmt} {ys : List Message} (hk : KeepsHistory f ys) (i : Nat)
    (m : Message) (later : List Message) (last : Bool) :
    lowerAsst f i m (later ++ ys) last = lowerAsst f i m later last := by
  rcases hk with hs | hy
  · exact lowerAsst_stable hs i m _ _ last
  · unfold lowerAsst
    simp [List.any_append, hy]

theorem isEmpty_append_cons {α : Type} (xs ys : List α) (y : α) :
    (xs ++ y :: ys).isEmpty = false := by
  cases xs <;> rfl

/-- Lowering a list of messages with the prompt, then appending messages that keep history:
the turns of the list are kept. -/
theorem lowerMsgs_append_keeps {f : HarmonyFmt} (g : Bool) (y : Message) (ys : List Message)
    (hk : KeepsHistory f (y :: ys)) :
    ∀ {ms : List Message} {st : Option Chars} {i : Nat} {ts : List HTurn},
      lowerMsgs f true st i ms = some ts →
      ∃ st', lowerMsgs f g st i (ms ++ y :: ys) =
        (lowerMsgs f g st' (i + ms.length) (y :: ys)).map (ts ++ ·)
  | [], st, i, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨st, by simp⟩
  | ⟨role, bs⟩ :: ms, st, i, ts, h => by
    have e : i + (ms.length + 1) = i + 1 + ms.length := by omega
    cases role with
    | assistant =>
      simp only [lowerMsgs] at h
      cases ha : lowerAsst f i ⟨.assistant, bs⟩ ms false with
      | none => simp [ha] at h
      | some r =>
        simp only [ha, Bool.not_true, Bool.and_false, Option.bind_some] at h
        obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨st', hap⟩ := lowerMsgs_append_keeps g y ys hk h1
        refine ⟨st', ?_⟩
        simp only [List.cons_append, lowerMsgs, isEmpty_append_cons, Bool.false_and]
        rw [lowerAsst_keeps hk i _ ms, ha, Option.bind_some, hap,
          List.length_cons, e, Option.map_map]
        simp [Function.comp_def, lowerMsgs]
    | tool =>
      simp only [lowerMsgs] at h
      split at h
      · rename_i n s hc
        obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨st', hap⟩ := lowerMsgs_append_keeps g y ys hk h1
        refine ⟨st', ?_⟩
        simp only [List.cons_append, lowerMsgs, hc]
        rw [hap, List.length_cons, e, Option.map_map]
        simp [Function.comp_def, lowerMsgs]
      · cases h
    | user =>
      simp only [lowerMsgs] at h
      cases hc : Message.content? ⟨.user, bs⟩ with
      | none => simp [hc] at h
      | some p =>
        simp only [hc, Option.bind_some] at h
        obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨st', hap⟩ := lowerMsgs_append_keeps g y ys hk h1
        refine ⟨st', ?_⟩
        simp only [List.cons_append, lowerMsgs, hc, Option.bind_some]
        rw [hap, List.length_cons, e, Option.map_map]
        simp [Function.comp_def, lowerMsgs]
    | system => simp [lowerMsgs] at h
    | developer => simp [lowerMsgs] at h

/-- The messages `headOf` leaves for the loop start at its index. -/
theorem headOf_length {c : Conversation} {y : Option LPay × List Message × Nat}
    (h : headOf c = some y) : c.messages.length = y.2.2 + y.2.1.length := by
  rcases c with ⟨ms, tools, g⟩
  cases ms with
  | nil =>
    simp only [headOf, Option.some.injEq] at h
    subst h
    rfl
  | cons m ms =>
    simp only [headOf] at h
    split at h
    · obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp only [List.length_cons]
      omega
    · obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp only [List.length_cons]
      omega
    · simp only [Option.some.injEq] at h
      subst h
      simp

/-- `headOf` of a non-empty list with messages appended. -/
theorem headOf_append {ms ns : List Message} {tools : Option (List Json)} {g g' : Bool}
    {y : Option LPay × List Message × Nat} (hms : ms ≠ [])
    (h : headOf ⟨ms, tools, g⟩ = some y) :
    headOf ⟨ms ++ ns, tools, g'⟩ = some (y.1, y.2.1 ++ ns, y.2.2) := by
  cases ms with
  | nil => exact absurd rfl hms
  | cons m ms =>
    simp only [headOf, List.cons_append] at h ⊢
    split at h
    · obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp [hp]
    · obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
      simp [hp]
    · simp only [Option.some.injEq] at h
      subst h
      rfl

/-- A turn an assistant message at index `n` is written as. -/
@[expose] def asstAt (n : Nat) : HTurn → Prop
  | .analysis _ o | .final _ _ o | .call _ _ o | .sampled _ o => o = n
  | _ => False

/-- Every assistant turn starts with the generation prompt. -/
theorem prompt_prefix_turn (f : HarmonyFmt) {n : Nat} {t : HTurn} (h : asstAt n t) :
    promptItems f n <+: turnItems f t := by
  cases t with
  | analysis p o => subst h; exact List.prefix_append _ _
  | final p r o => subst h; exact List.prefix_append _ _
  | call a b o => subst h; exact List.prefix_append _ _
  | sampled ts o => subst h; exact List.prefix_append _ _
  | dev => cases h
  | user => cases h
  | result => cases h

theorem head_asst {n : Nat} (as : List HTurn) (t : HTurn) (has : ∀ x ∈ as, asstAt n x)
    (ht : asstAt n t) : ∃ t' rest, as ++ [t] = t' :: rest ∧ asstAt n t' := by
  cases as with
  | nil => exact ⟨t, [], rfl, ht⟩
  | cons a as => exact ⟨a, as ++ [t], rfl, has a List.mem_cons_self⟩

theorem analysis_asst (n : Nat) (c : Prop) [Decidable c] (L : List LPay) :
    ∀ x ∈ (if c then L.map (fun p => HTurn.analysis p n) else []), asstAt n x := by
  intro x hx
  split at hx
  · obtain ⟨p, -, rfl⟩ := List.mem_map.mp hx
    rfl
  · cases hx

/-- An assistant message is written as a non-empty list of assistant turns. -/
theorem lowerAsst_turns {f : HarmonyFmt} {n : Nat} {m : Message} {later : List Message}
    {last : Bool} {r : List HTurn × Option Chars} (h : lowerAsst f n m later last = some r) :
    ∃ t rest, r.1 = t :: rest ∧ asstAt n t := by
  unfold lowerAsst at h
  split at h
  · simp only [Option.some.injEq] at h
    subst h
    exact ⟨_, [], rfl, rfl⟩
  · cases hb : asmBlocks none none [] m.blocks with
    | none => simp [hb] at h
    | some x =>
      obtain ⟨th, co, cs⟩ := x
      simp only [hb, Option.bind_some] at h
      split at h
      · simp only [Option.some.injEq] at h
        subst h
        exact head_asst _ _ (analysis_asst _ _ _) rfl
      · split at h
        · cases h
        · simp only [Option.some.injEq] at h
          subst h
          exact head_asst _ _ (analysis_asst _ _ _) rfl
      · cases h

/-- A layout with the generation prompt. -/
theorem layout_some (f : HarmonyFmt) (s : Chars) (ts : List HTurn) (n : Nat) :
    layout f ⟨s, ts, some n⟩ = layout f ⟨s, ts, none⟩ ++ promptItems f n := by
  simp [layout]

/-- A layout with more turns. -/
theorem layout_append_turns (f : HarmonyFmt) (s : Chars) (ts us : List HTurn)
    (p : Option Nat) :
    layout f ⟨s, ts ++ us, p⟩ =
      layout f ⟨s, ts, none⟩ ++ (us.flatMap (turnItems f) ++ p.elim [] (promptItems f)) := by
  cases p <;> simp [layout, List.flatMap_append, List.append_assoc]

/-- The lowered forms of a conversation with the prompt and of an extension of it that starts
with an assistant message and keeps history: the same system text and turns, then the new
message's turns. -/
theorem extension_lower (f : HarmonyFmt) (ms ns : List Message)
    (bs : List Block) (hk : KeepsHistory f (⟨.assistant, bs⟩ :: ns))
    (tools : Option (List Json)) (g : Bool)
    (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ ⟨.assistant, bs⟩ :: ns, tools, g⟩ = some l') :
    ∃ r ts3, lowerAsst f ms.length ⟨.assistant, bs⟩ ns (ns.isEmpty && !g) = some r ∧
      lowerMsgs f g r.2 (ms.length + 1) ns = some ts3 ∧ l.prompt = some ms.length ∧
      l' = ⟨l.system, l.turns ++ (r.1 ++ ts3),
        if g then some (ms ++ ⟨.assistant, bs⟩ :: ns).length else none⟩ := by
  unfold lower at hl hl'
  have et : toolsOf ⟨ms ++ ⟨.assistant, bs⟩ :: ns, tools, g⟩ = toolsOf ⟨ms, tools, true⟩ := rfl
  rw [et] at hl'
  cases htt : toolsTextOf (toolsOf ⟨ms, tools, true⟩) with
  | none => rw [htt] at hl; cases hl
  | some tt =>
    rw [htt, Option.bind_some] at hl hl'
    cases hy : headOf ⟨ms, tools, true⟩ with
    | none => rw [hy] at hl; cases hl
    | some y =>
      have hlen := headOf_length hy
      rw [headOf_append hms hy] at hl'
      rw [hy, Option.bind_some] at hl
      rw [Option.bind_some] at hl'
      obtain ⟨instr, rest, i0⟩ := y
      simp only at hl hl' hlen
      cases hts : lowerMsgs f true none i0 rest with
      | none => rw [hts] at hl; cases hl
      | some ts =>
        rw [hts, Option.bind_some] at hl
        obtain ⟨st', hap⟩ := lowerMsgs_append_keeps g _ ns hk hts
        rw [hap] at hl'
        simp only [lowerMsgs] at hl'
        rw [← hlen] at hl'
        cases ha : lowerAsst f ms.length ⟨.assistant, bs⟩ ns (ns.isEmpty && !g) with
        | none => simp [ha] at hl'
        | some r =>
          cases hr : lowerMsgs f g r.2 (ms.length + 1) ns with
          | none => simp [ha, hr] at hl'
          | some ts3 =>
            simp only [ha, hr, Option.bind_some, Option.map_some] at hl'
            refine ⟨r, ts3, rfl, hr, ?_⟩
            split at hl
            · split at hl'
              · simp only [Option.some.injEq] at hl hl'
                subst hl hl'
                simp
              · cases hl'
            · cases hl

/-- Appending messages that keep history and start with an assistant message: the layout of
the conversation with the generation prompt is a prefix of the layout of the extension. -/
theorem extension_keeps (f : HarmonyFmt) (ms ns : List Message)
    (m : Message) (hm : m.role = .assistant) (hk : KeepsHistory f (m :: ns))
    (tools : Option (List Json)) (g : Bool)
    (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    layout f l <+: layout f l' := by
  obtain ⟨role, bs⟩ := m
  simp only at hm
  subst hm
  obtain ⟨r, ts3, ha, -, hp, e⟩ := extension_lower f ms ns bs hk tools g hms l l' hl hl'
  obtain ⟨t, tl, hr1, hat⟩ := lowerAsst_turns ha
  obtain ⟨s, ts, p⟩ := l
  simp only at hp e
  subst hp e
  rw [layout_append_turns, layout_some]
  refine (List.prefix_append_right_inj _).mpr ?_
  rw [hr1, List.cons_append, List.flatMap_cons, List.append_assoc]
  exact (prompt_prefix_turn f hat).trans (List.prefix_append _ _)

/-- The stable format never rewrites history: the layout of a conversation with the
generation prompt is a prefix of the layout of the conversation followed by any messages that
start with an assistant message. -/
theorem extension_stable (f : HarmonyFmt) (hs : f.mode = .stable) (ms ns : List Message)
    (m : Message) (hm : m.role = .assistant) (tools : Option (List Json)) (g : Bool)
    (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    layout f l <+: layout f l' :=
  extension_keeps f ms ns m hm (Or.inl hs) tools g hms l l' hl hl'

/-- The exact format (the official template) rewrites history only for a final answer: while
the model keeps calling tools (no appended assistant message is a final answer, i.e. every one
has a tool call), the layout of the conversation with the generation prompt is a prefix of the
layout of the extension. An appended final answer drops the analysis of the earlier call
messages (`future_final_message`): there the exact format is not a prefix, the stable one is. -/
theorem extension_exact (f : HarmonyFmt) (ms ns : List Message)
    (m : Message) (hm : m.role = .assistant) (hf : (m :: ns).any isFinalMsg = false)
    (tools : Option (List Json)) (g : Bool)
    (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    layout f l <+: layout f l' :=
  extension_keeps f ms ns m hm (Or.inr hf) tools g hms l l' hl hl'

/-- Inference and training agree (stable format): the render of a conversation with a sampled
turn appended is the render with the generation prompt, then the sampled tokens, learned and
owned by the new message. -/
theorem sampled_extension_stable (f : HarmonyFmt) (hs : f.mode = .stable) (codec : Codec)
    (ms : List Message) (tools : Option (List Json)) (ts : List Token) (hms : ms ≠ [])
    (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l') :
    encodeItems codec (layout f l') =
      encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) := by
  obtain ⟨r, ts3, ha, hr, hp, e⟩ :=
    extension_lower f ms [] [.sampled ts] (Or.inl hs) tools false hms l l' hl hl'
  simp only [lowerAsst, Option.some.injEq] at ha
  subst ha
  simp only [lowerMsgs, Option.some.injEq] at hr
  subst hr
  obtain ⟨s, tl, p⟩ := l
  simp only at hp e
  subst hp
  have e2 : layout f l' = layout f ⟨s, tl, some ms.length⟩ ++ [⟨.toks ts, ⟨ms.length, true⟩⟩] := by
    subst e
    simp [layout, turnItems, promptItems, List.flatMap_append]
  have hh : ∀ x ∈ (syms [(⟨.toks ts, ⟨ms.length, true⟩⟩ : Item)]).head?, x.isCh = false := by
    intro x hx
    cases ts with
    | nil => simp [Piece.syms] at hx
    | cons t ts =>
      simp only [syms_cons, syms_nil, Piece.syms, List.map_cons, List.append_nil,
        List.head?_cons, Option.mem_def, Option.some.injEq] at hx
      subst hx
      rfl
  rw [e2, encodeItems_append _ _ _ hh, Qwen.encodeItems_toks]

/-! ## Training renders: the `<|return|>` exception -/

/-- A final answer ended with `<|end|>` instead of `<|return|>` (what an appended message does
to the last answer of a training render); every other turn unchanged. -/
@[expose] def HTurn.unret : HTurn → HTurn
  | .final p _ o => .final p false o
  | .dev pre p post o => .dev pre p post o
  | .user p o => .user p o
  | .analysis p o => .analysis p o
  | .call n a o => .call n a o
  | .result n q o => .result n q o
  | .sampled ts o => .sampled ts o

theorem unret_unret (t : HTurn) : t.unret.unret = t.unret := by
  cases t <;> rfl

theorem map_unret_ite (c : Prop) [Decidable c] (L : List LPay) (i : Nat) :
    List.map HTurn.unret (if c then L.map (fun x => HTurn.analysis x i) else []) =
      (if c then L.map (fun x => HTurn.analysis x i) else []) := by
  split
  · simp only [List.map_map]
    rfl
  · rfl

/-- The last message of a training render differs from an earlier one only in `<|return|>`
(stable format). -/
theorem lowerAsst_last {f : HarmonyFmt} (hs : f.mode = .stable) (i : Nat) (m : Message)
    (later : List Message) :
    lowerAsst f i m later false =
      (lowerAsst f i m later true).map fun r => (r.1.map HTurn.unret, r.2) := by
  unfold lowerAsst
  split
  · rfl
  · cases asmBlocks none none [] m.blocks with
    | none => rfl
    | some x =>
      obtain ⟨th, co, cs⟩ := x
      simp only [Option.bind_some]
      split
      · cases th <;> simp [hs, HTurn.unret]
      · split
        · rfl
        · simp only [Option.map_some, List.map_append, map_unret_ite, List.map_cons,
            List.map_nil, HTurn.unret]
      · rfl

theorem lowerAsst_false {f : HarmonyFmt} (hs : f.mode = .stable) (i : Nat) (m : Message)
    (later : List Message) (b : Bool) :
    lowerAsst f i m later false =
      (lowerAsst f i m later b).map fun r => (r.1.map HTurn.unret, r.2) := by
  cases b with
  | true => exact lowerAsst_last hs i m later
  | false =>
    rw [lowerAsst_last hs i m later, Option.map_map]
    congr 1
    funext r
    simp [Function.comp_def, unret_unret]

/-- Lowering a training render's messages, then appending messages: the turns of the list are
kept but for `<|return|>` (stable format). -/
theorem lowerMsgs_append_training {f : HarmonyFmt} (hs : f.mode = .stable) (g : Bool) :
    ∀ {ms : List Message} {st : Option Chars} {i : Nat} {ts : List HTurn},
      lowerMsgs f false st i ms = some ts →
      ∃ st', ∀ y ys, lowerMsgs f g st i (ms ++ y :: ys) =
        (lowerMsgs f g st' (i + ms.length) (y :: ys)).map (ts.map HTurn.unret ++ ·)
  | [], st, i, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨st, fun y ys => by simp⟩
  | ⟨role, bs⟩ :: ms, st, i, ts, h => by
    have e : i + (ms.length + 1) = i + 1 + ms.length := by omega
    cases role with
    | assistant =>
      simp only [lowerMsgs, Bool.not_false, Bool.and_true] at h
      cases ha : lowerAsst f i ⟨.assistant, bs⟩ ms ms.isEmpty with
      | none => simp [ha] at h
      | some r =>
        try simp only [ha, Option.bind_some] at h
        obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨st', hap⟩ := lowerMsgs_append_training hs g h1
        refine ⟨st', fun y ys => ?_⟩
        simp only [List.cons_append, lowerMsgs, isEmpty_append_cons, Bool.false_and]
        rw [lowerAsst_stable hs i _ (ms ++ y :: ys) ms, lowerAsst_false hs i _ ms ms.isEmpty, ha]
        simp only [Option.map_some, Option.bind_some]
        rw [hap y ys, List.length_cons, e, Option.map_map]
        simp [Function.comp_def, lowerMsgs]
    | tool =>
      simp only [lowerMsgs] at h
      split at h
      · rename_i n s hc
        obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨st', hap⟩ := lowerMsgs_append_training hs g h1
        refine ⟨st', fun y ys => ?_⟩
        simp only [List.cons_append, lowerMsgs, hc]
        rw [hap y ys, List.length_cons, e, Option.map_map]
        simp [Function.comp_def, HTurn.unret, lowerMsgs]
      · cases h
    | user =>
      simp only [lowerMsgs] at h
      cases hc : Message.content? ⟨.user, bs⟩ with
      | none => simp [hc] at h
      | some p =>
        simp only [hc, Option.bind_some] at h
        obtain ⟨ts', h1, rfl⟩ := Option.map_eq_some_iff.mp h
        obtain ⟨st', hap⟩ := lowerMsgs_append_training hs g h1
        refine ⟨st', fun y ys => ?_⟩
        simp only [List.cons_append, lowerMsgs, hc, Option.bind_some]
        rw [hap y ys, List.length_cons, e, Option.map_map]
        simp [Function.comp_def, HTurn.unret, lowerMsgs]
    | system => simp [lowerMsgs] at h
    | developer => simp [lowerMsgs] at h

theorem devTurn_unret (instr : Option LPay) (tt : Option Chars) :
    (devTurn instr tt).toList.map HTurn.unret = (devTurn instr tt).toList := by
  have h : ∀ t ∈ devTurn instr tt, t.unret = t := by
    intro t ht
    simp only [devTurn] at ht
    repeat' split at ht
    all_goals first
      | (simp only [Option.mem_def, Option.some.injEq] at ht; subst ht; rfl)
      | simp at ht
  cases hd : devTurn instr tt with
  | none => rfl
  | some t =>
    have ht : t.unret = t := h t (by simp [hd])
    simp [ht]

/-- The stable format's training renders are prefixes of their extensions' but for the last
answer's `<|return|>`: the layout of a conversation without the generation prompt, its final
answers ended with `<|end|>`, is a prefix of the layout of the conversation followed by any
messages. -/
theorem extension_stable_training (f : HarmonyFmt) (hs : f.mode = .stable)
    (ms ns : List Message) (m : Message) (tools : Option (List Json)) (g : Bool)
    (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, false⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    layout f ⟨l.system, l.turns.map HTurn.unret, none⟩ <+: layout f l' := by
  unfold lower at hl hl'
  have et : toolsOf ⟨ms ++ m :: ns, tools, g⟩ = toolsOf ⟨ms, tools, false⟩ := rfl
  rw [et] at hl'
  cases htt : toolsTextOf (toolsOf ⟨ms, tools, false⟩) with
  | none => rw [htt] at hl; cases hl
  | some tt =>
    rw [htt, Option.bind_some] at hl hl'
    cases hy : headOf ⟨ms, tools, false⟩ with
    | none => rw [hy] at hl; cases hl
    | some y =>
      rw [headOf_append hms hy] at hl'
      rw [hy, Option.bind_some] at hl
      rw [Option.bind_some] at hl'
      obtain ⟨instr, rest, i0⟩ := y
      simp only at hl hl'
      cases hts : lowerMsgs f false none i0 rest with
      | none => rw [hts] at hl; cases hl
      | some ts =>
        rw [hts, Option.bind_some] at hl
        obtain ⟨st', hap⟩ := lowerMsgs_append_training hs g hts
        rw [hap m ns] at hl'
        cases hr : lowerMsgs f g st' (i0 + rest.length) (m :: ns) with
        | none => simp [hr] at hl'
        | some ts3 =>
          simp only [hr, Option.map_some, Option.bind_some] at hl'
          split at hl
          · split at hl'
            · simp only [Option.some.injEq] at hl hl'
              subst hl hl'
              simp only [List.map_append, devTurn_unret]
              rw [← List.append_assoc, layout_append_turns f _ _ ts3]
              exact List.prefix_append _ _
            · cases hl'
          · cases hl

end Verified.Harmony

end
