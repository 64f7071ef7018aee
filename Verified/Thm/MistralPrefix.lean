module

public import Verified.Spec.Mistral
public import Verified.Thm.Items

public section

/-!
# The Mistral family: what a conversation keeps when it grows

Lowering reads the messages left to right with a state (previous role and turn, the ids of the
calls not yet answered, the index); nothing in it looks ahead except the index of the user
message that receives `[AVAILABLE_TOOLS]` (`toolsAt`), and the generation prompt writes no
token. So:

* `turns_append`: when the tools go to the same user message among the first messages in both
  conversations, the turns of the extension are the turns of the conversation followed by
  more turns.
* `layout_prefix_first`, `render_prefix_first`: in the stable mode (every version) and in v13,
  which give the tools to the first user message, the layout (items: control ids, texts, token
  payloads, owners, loss bits) and the render (ids, provenance, owners, mask; any codec) of a
  conversation that lowers are prefixes of those of every extension that lowers (same tools,
  any messages appended, either generation prompt on either side).
* `layout_prefix_no_user`, `render_prefix_no_user`: every version and mode, v7 and v11
  included (they give the tools to the last user message), when no appended message is a user
  message.

The hypotheses are exactly what the format needs: in v7/v11 (exact mode) an appended user
message moves `[AVAILABLE_TOOLS]` to itself, so the earlier user turn loses it and the prefix
fails whenever a tool is given and the conversation already had a user message. The render is a
prefix because every turn ends with a control token (`</s>`, `[/INST]`, `[/SYSTEM_PROMPT]`,
`[/TOOL_RESULTS]`), so no text span straddles the seam even though an assistant turn starts
with text.
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

/-! ## Lowering an extension -/

/-- The `[AVAILABLE_TOOLS]` text as `lower` computes it. -/
@[expose] def toolsText (t : Option (List Json)) : Option (Option Chars) :=
  match t with
  | some (t :: ts) => (toolsJson (t :: ts)).map some
  | _ => some none

/-- The turns of a lowered conversation come from `lowerMsgs` from the start. -/
theorem lower_some {ms : List Message} {tj : Option (List Json)} {g : Bool} {l : MConv}
    (h : lower f ⟨ms, tj, g⟩ = some l) :
    ∃ tools, toolsText tj = some tools ∧
      lowerMsgs f tools (if tools.isSome then toolsAt f ms else none) none none [] 0 ms =
        some l.turns := by
  have h' : (toolsText tj).bind (fun tools =>
      (lowerMsgs f tools (if tools.isSome then toolsAt f ms else none) none none [] 0
        ms).bind fun ts =>
          if lastOk ms && ts.all (turnOk f) then
            some (⟨ts, if g then some ms.length else none⟩ : MConv)
          else none) = some l := h
  rw [Option.bind_eq_some_iff] at h'
  obtain ⟨tools, htt, h2⟩ := h'
  rw [Option.bind_eq_some_iff] at h2
  obtain ⟨ts, hts, h3⟩ := h2
  split at h3
  · cases h3
    exact ⟨tools, htt, hts⟩
  · cases h3

theorem ite_none_eq_some {α : Type} {c : Prop} [Decidable c] {x : Option α} {y : α}
    (h : (if c then none else x) = some y) : ¬c ∧ x = some y := by
  by_cases hc : c
  · rw [if_pos hc] at h; cases h
  · rw [if_neg hc] at h; exact ⟨hc, h⟩

/-- Lowering a list of messages, then more: the turns of the list are kept, provided the user
message receiving the tools is the same among the list's indices. -/
theorem lowerMsgs_append (tools : Option Chars) :
    ∀ {ms : List Message} {pos pos' : Option Nat} {prev : Option Role} {prevT : Option MTurn}
      {pend : List (Option Chars)} {i : Nat} {ts : List MTurn},
      (∀ j, j < i + ms.length → (pos = some j ↔ pos' = some j)) →
      lowerMsgs f tools pos prev prevT pend i ms = some ts →
      ∃ prev' prevT' pend', ∀ ns, lowerMsgs f tools pos' prev prevT pend i (ms ++ ns) =
        (lowerMsgs f tools pos' prev' prevT' pend' (i + ms.length) ns).map (ts ++ ·)
  | [], pos, pos', prev, prevT, pend, i, ts, _, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    exact ⟨prev, prevT, pend, fun ns => by simp⟩
  | m :: ms, pos, pos', prev, prevT, pend, i, ts, hpos, h => by
    have hsame : (if pos' = some i then tools else none) =
        (if pos = some i then tools else none) := by
      by_cases hp : pos = some i
      · rw [if_pos hp, if_pos ((hpos i (by simp)).mp hp)]
      · rw [if_neg hp, if_neg (fun hp' => hp ((hpos i (by simp)).mpr hp'))]
    simp only [lowerMsgs] at h
    obtain ⟨hok, h⟩ := ite_none_eq_some h
    cases hm : lowerMsg f (if pos = some i then tools else none) pend.head? i m with
    | none => rw [hm] at h; cases h
    | some t =>
      rw [hm, Option.bind_some] at h
      obtain ⟨hres, h⟩ := ite_none_eq_some h
      cases hr : lowerMsgs f tools pos (some m.role) (some t) (t.pending pend) (i + 1) ms with
      | none => rw [hr] at h; cases h
      | some ts' =>
        rw [hr, Option.map_some, Option.some.injEq] at h
        subst h
        obtain ⟨prev', prevT', pend', hap⟩ := lowerMsgs_append tools (pos' := pos')
          (fun j hj => hpos j (by simp only [List.length_cons]; omega)) hr
        refine ⟨prev', prevT', pend', fun ns => ?_⟩
        have e : i + (ms.length + 1) = i + 1 + ms.length := by omega
        simp only [List.cons_append, lowerMsgs, hsame, hm, Option.bind_some, hok, hres,
          ↓reduceIte, hap ns, List.length_cons, e, Option.map_map]
        rfl

/-- The turns of an extension: when the tools go to the same user message among the first
messages, lowering the extension appends turns to those of the conversation. -/
theorem turns_append {ms ns : List Message} {tj : Option (List Json)} {g g' : Bool}
    {l l' : MConv}
    (hat : ∀ j, j < ms.length → (toolsAt f ms = some j ↔ toolsAt f (ms ++ ns) = some j))
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    ∃ ts2, l'.turns = l.turns ++ ts2 := by
  obtain ⟨tools, htt, hts⟩ := lower_some f hl
  obtain ⟨tools', htt', hts'⟩ := lower_some f hl'
  rw [htt, Option.some.injEq] at htt'
  subst htt'
  have hp : ∀ j, j < 0 + ms.length →
      ((if tools.isSome then toolsAt f ms else none) = some j ↔
        (if tools.isSome then toolsAt f (ms ++ ns) else none) = some j) := by
    intro j hj
    cases hs : tools.isSome
    · simp
    · simpa using hat j (by omega)
  obtain ⟨p', pt', pd', hap⟩ := lowerMsgs_append f tools hp hts
  rw [hap ns] at hts'
  obtain ⟨ts2, -, e⟩ := Option.map_eq_some_iff.mp hts'
  exact ⟨ts2, e.symm⟩

/-! ## Where the tools go -/

theorem userIdxs_append : ∀ (i : Nat) (ms ns : List Message),
    userIdxs i (ms ++ ns) = userIdxs i ms ++ userIdxs (i + ms.length) ns
  | i, [], ns => by simp [userIdxs]
  | i, m :: ms, ns => by
    have e : i + (ms.length + 1) = i + 1 + ms.length := by omega
    by_cases hu : m.role = .user
    · simp [userIdxs, hu, userIdxs_append (i + 1) ms ns, e]
    · simp [userIdxs, hu, userIdxs_append (i + 1) ms ns, e]

theorem userIdxs_ge : ∀ (i : Nat) (ns : List Message), ∀ k ∈ userIdxs i ns, i ≤ k
  | i, [], k, hk => by simp [userIdxs] at hk
  | i, m :: ns, k, hk => by
    by_cases hu : m.role = .user
    · simp only [userIdxs, hu, ↓reduceIte, List.mem_cons] at hk
      rcases hk with rfl | hk
      · exact Nat.le_refl _
      · have := userIdxs_ge (i + 1) ns k hk
        omega
    · simp only [userIdxs, hu, ↓reduceIte] at hk
      have := userIdxs_ge (i + 1) ns k hk
      omega

theorem userIdxs_nil : ∀ (i : Nat) (ns : List Message), (∀ m ∈ ns, m.role ≠ .user) →
    userIdxs i ns = []
  | i, [], _ => rfl
  | i, m :: ns, h => by
    have hu : ¬ m.role = .user := h m List.mem_cons_self
    simp only [userIdxs, hu, ↓reduceIte]
    exact userIdxs_nil (i + 1) ns fun m' hm' => h m' (List.mem_cons_of_mem _ hm')

/-- The stable mode and v13 give the tools to the first user message: appending messages
never moves it. -/
theorem toolsAt_first (hf : f.stable = true ∨ f.version = .v13) (ms ns : List Message) :
    ∀ j, j < ms.length → (toolsAt f ms = some j ↔ toolsAt f (ms ++ ns) = some j) := by
  intro j hj
  have hc : (f.stable || decide (f.version = .v13)) = true := by
    rcases hf with h | h <;> simp [h]
  unfold toolsAt
  rw [if_pos hc, if_pos hc, userIdxs_append]
  cases hu : userIdxs 0 ms with
  | cons a as => simp
  | nil =>
    simp only [List.head?_nil, List.nil_append, Nat.zero_add]
    constructor
    · intro h; cases h
    · intro h
      have := userIdxs_ge ms.length ns j (List.mem_of_head? h)
      omega

/-- When no appended message is a user message, the tools stay where they were (every version
and mode). -/
theorem toolsAt_no_user (ms ns : List Message) (hn : ∀ m ∈ ns, m.role ≠ .user) :
    toolsAt f (ms ++ ns) = toolsAt f ms := by
  unfold toolsAt
  rw [userIdxs_append, userIdxs_nil _ ns hn, List.append_nil]

/-! ## Layouts and renders -/

theorem layout_append (turns ts2 : List MTurn) (p p' : Option Nat) :
    layout f ⟨turns ++ ts2, p'⟩ = layout f ⟨turns, p⟩ ++ ts2.flatMap (turnItems f) := by
  simp [layout, List.flatMap_append]

theorem snoc2 {α : Type} (m : List α) (y z : α) : m ++ [y, z] = (m ++ [y]) ++ [z] := by simp

theorem snoc3 {α : Type} (m : List α) (x y z : α) : m ++ [x, y, z] = (m ++ [x, y]) ++ [z] := by
  simp

/-- Every turn ends with a control token. -/
theorem turnItems_last (t : MTurn) : ∃ a k o lb, turnItems f t = a ++ [ctl k o lb] := by
  cases t with
  | system p o => exact ⟨[ctl f.ids.sysOpen o false, pay p o false], _, _, _, rfl⟩
  | user tools p o => exact ⟨_, _, _, _, snoc3 _ _ _ _⟩
  | assistant p cs o => exact ⟨_, _, _, _, rfl⟩
  | result i p o => exact ⟨_, _, _, _, snoc2 _ _ _⟩
  | sampled ts o => exact ⟨[⟨.toks ts, ⟨o, true⟩⟩], _, _, _, rfl⟩

theorem flatMap_last (pre : List Item) (hpre : ∃ a k o lb, pre = a ++ [ctl k o lb]) :
    ∀ ts : List MTurn, ∃ a k o lb, pre ++ ts.flatMap (turnItems f) = a ++ [ctl k o lb]
  | [] => by simpa using hpre
  | t :: ts => by
    obtain ⟨a, k, o, lb, e⟩ := turnItems_last f t
    obtain ⟨a', k', o', lb', e'⟩ := flatMap_last (pre ++ turnItems f t)
      ⟨pre ++ a, k, o, lb, by rw [e, List.append_assoc]⟩ ts
    exact ⟨a', k', o', lb', by rw [List.flatMap_cons, ← List.append_assoc, e']⟩

/-- A layout ends with a control token (`<s>` or the last turn's). -/
theorem layout_last (q : MConv) : ∃ a k o lb, layout f q = a ++ [ctl k o lb] :=
  flatMap_last f [ctl f.ids.bos 0 false] ⟨[], _, _, _, rfl⟩ q.turns

/-! ## The main theorems -/

/-- The layout of a conversation is a prefix of the layout of an extension whenever the tools
go to the same user message among the first messages (`hat`). -/
theorem layout_prefix_of {ms ns : List Message} {tj : Option (List Json)} {g g' : Bool}
    {l l' : MConv}
    (hat : ∀ j, j < ms.length → (toolsAt f ms = some j ↔ toolsAt f (ms ++ ns) = some j))
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    layout f l <+: layout f l' := by
  obtain ⟨ts2, e⟩ := turns_append f hat hl hl'
  obtain ⟨turns, p⟩ := l
  obtain ⟨turns', p'⟩ := l'
  dsimp only at e
  subst e
  rw [layout_append f turns ts2 p p']
  exact List.prefix_append _ _

/-- The render of a conversation is a prefix of the render of an extension whenever the tools
go to the same user message among the first messages (`hat`); any codec. -/
theorem render_prefix_of (codec : Codec) {ms ns : List Message} {tj : Option (List Json)}
    {g g' : Bool} {l l' : MConv}
    (hat : ∀ j, j < ms.length → (toolsAt f ms = some j ↔ toolsAt f (ms ++ ns) = some j))
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨ts2, e⟩ := turns_append f hat hl hl'
  obtain ⟨turns, p⟩ := l
  obtain ⟨turns', p'⟩ := l'
  dsimp only at e
  subst e
  rw [layout_append f turns ts2 p p']
  obtain ⟨a, k, o, lb, e2⟩ := layout_last f ⟨turns, p⟩
  rw [e2, List.append_assoc, List.singleton_append]
  exact encodeItems_prefix_ctl codec a _ k ⟨o, lb⟩

/-- The stable mode (every version) and v13 never rewrite history: the layout of a
conversation that lowers is a prefix of the layout of every extension that lowers (same tools,
any messages appended, either generation prompt). -/
theorem layout_prefix_first (hf : f.stable = true ∨ f.version = .v13) {ms ns : List Message}
    {tj : Option (List Json)} {g g' : Bool} {l l' : MConv}
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    layout f l <+: layout f l' :=
  layout_prefix_of f (toolsAt_first f hf ms ns) hl hl'

/-- The stable mode (every version) and v13 never rewrite history, token for token: the render
(ids, provenance, owners, mask) of a conversation that lowers is a prefix of the render of
every extension that lowers, for every codec. -/
theorem render_prefix_first (hf : f.stable = true ∨ f.version = .v13) (codec : Codec)
    {ms ns : List Message} {tj : Option (List Json)} {g g' : Bool} {l l' : MConv}
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') :=
  render_prefix_of f codec (toolsAt_first f hf ms ns) hl hl'

/-- Every version and mode (v7 and v11 exact included): appending messages none of which is a
user message keeps the layout as a prefix. -/
theorem layout_prefix_no_user {ms ns : List Message} (hn : ∀ m ∈ ns, m.role ≠ .user)
    {tj : Option (List Json)} {g g' : Bool} {l l' : MConv}
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    layout f l <+: layout f l' :=
  layout_prefix_of f (fun j _ => by rw [toolsAt_no_user f ms ns hn]) hl hl'

/-- Every version and mode (v7 and v11 exact included): appending messages none of which is a
user message keeps the render as a prefix, for every codec. -/
theorem render_prefix_no_user (codec : Codec) {ms ns : List Message}
    (hn : ∀ m ∈ ns, m.role ≠ .user) {tj : Option (List Json)} {g g' : Bool} {l l' : MConv}
    (hl : lower f ⟨ms, tj, g⟩ = some l) (hl' : lower f ⟨ms ++ ns, tj, g'⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') :=
  render_prefix_of f codec (fun j _ => by rw [toolsAt_no_user f ms ns hn]) hl hl'

end Verified.Mistral

end
