module

public import Verified.Spec.Format

public section

/-!
# Shipped chat formats

Each shipped format is a function of the control-token ids of a tokenizer family (the ids
are parameters, supplied per tokenizer; the Python side looks them up by name), built from
control pieces and literal pieces. Role names and other literal text are encoded by the codec
when the format is instantiated (`ChatFormat.encode`).

No format rewrites history: the render of a conversation never depends on later messages.
Where the model's own Jinja template differs (Qwen3 strips earlier `<think>` blocks, gpt-oss
swaps `<|end|>` and `<|return|>`, tool results rendered inside user turns), `lvt check`
reports the divergence and its cause.

For each family, `…Reference` gives the ids of a reference tokenizer; `Thm/Formats.lean`
proves each format well-formed for them with `decide`.
-/

namespace Verified.Formats

open Verified

/-- The role name used by ChatML-style headers. -/
@[expose] def chatmlRole : Role → String
  | .system => "system"
  | .developer => "developer"
  | .user => "user"
  | .assistant => "assistant"
  | .tool => "tool"

/-- Control tokens of the ChatML family (Qwen2.5, Qwen3). -/
structure ChatMLIds where
  /-- `<|im_start|>` -/
  imStart : Token
  /-- `<|im_end|>` -/
  imEnd : Token
  /-- `<|endoftext|>` -/
  endOfText : Token
  /-- `<tool_call>` -/
  toolCallOpen : Token
  /-- `</tool_call>` -/
  toolCallClose : Token

/-- ChatML as used by Qwen2.5: `<|im_start|>role\n … <|im_end|>\n`. Tool calls are
`<tool_call>\n{json}\n</tool_call>` with the name inside the JSON argument text. The
developer role is not supported. -/
@[expose] def chatml (ids : ChatMLIds) : ChatFormat where
  reserved := [ids.imStart, ids.imEnd, ids.endOfText, ids.toolCallOpen, ids.toolCallClose]
  bos := []
  header
    | .developer => []
    | r => [.ctrl ids.imStart, .lit (chatmlRole r ++ "\n")]
  footer
    | .developer => []
    | _ => [.ctrl ids.imEnd, .lit "\n"]
  blockOpen
    | .toolCall => [.ctrl ids.toolCallOpen, .lit "\n"]
    | _ => []
  blockClose
    | .toolCall => [.ctrl ids.toolCallClose]
    | _ => []
  toolSep := []

/-- Control tokens of Qwen3 beyond ChatML. -/
structure Qwen3Ids extends ChatMLIds where
  /-- `<think>` -/
  thinkOpen : Token
  /-- `</think>` -/
  thinkClose : Token

/-- Qwen3 without history rewriting: ChatML plus `<think>\n … </think>\n\n` reasoning
blocks, kept in every assistant turn. -/
@[expose] def qwen3 (ids : Qwen3Ids) : ChatFormat :=
  let base := chatml ids.toChatMLIds
  { base with
    reserved := base.reserved ++ [ids.thinkOpen, ids.thinkClose]
    blockOpen := fun
      | .reasoning => [.ctrl ids.thinkOpen, .lit "\n"]
      | k => base.blockOpen k
    blockClose := fun
      | .reasoning => [.ctrl ids.thinkClose, .lit "\n\n"]
      | k => base.blockClose k }

/-- Control tokens of Llama 3.x. -/
structure Llama3Ids where
  /-- `<|begin_of_text|>` -/
  beginOfText : Token
  /-- `<|end_of_text|>` -/
  endOfText : Token
  /-- `<|start_header_id|>` -/
  startHeader : Token
  /-- `<|end_header_id|>` -/
  endHeader : Token
  /-- `<|eom_id|>` -/
  eom : Token
  /-- `<|eot_id|>` -/
  eot : Token
  /-- `<|python_tag|>` -/
  pythonTag : Token

/-- The role name used by Llama 3 headers (tool results are `ipython`). -/
@[expose] def llamaRole : Role → String
  | .tool => "ipython"
  | r => chatmlRole r

/-- Llama 3.x: `<|begin_of_text|>` then `<|start_header_id|>role<|end_header_id|>\n\n …
<|eot_id|>`; a tool call is `<|python_tag|>call<|eom_id|>`. -/
@[expose] def llama3 (ids : Llama3Ids) : ChatFormat where
  reserved := [ids.beginOfText, ids.endOfText, ids.startHeader, ids.endHeader, ids.eom, ids.eot,
    ids.pythonTag]
  bos := [.ctrl ids.beginOfText]
  header
    | .developer => []
    | r => [.ctrl ids.startHeader, .lit (llamaRole r), .ctrl ids.endHeader, .lit "\n\n"]
  footer
    | .developer => []
    | _ => [.ctrl ids.eot]
  blockOpen
    | .toolCall => [.ctrl ids.pythonTag]
    | _ => []
  blockClose
    | .toolCall => [.ctrl ids.eom]
    | _ => []
  toolSep := []

/-- Control tokens of Mistral v7 (Tekken). -/
structure MistralIds where
  /-- `<s>` -/
  bos : Token
  /-- `</s>` -/
  eos : Token
  /-- `[INST]` -/
  inst : Token
  /-- `[/INST]` -/
  instEnd : Token
  /-- `[SYSTEM_PROMPT]` -/
  systemOpen : Token
  /-- `[/SYSTEM_PROMPT]` -/
  systemClose : Token
  /-- `[TOOL_CALLS]` -/
  toolCalls : Token
  /-- `[ARGS]` -/
  args : Token
  /-- `[TOOL_RESULTS]` -/
  toolResults : Token
  /-- `[/TOOL_RESULTS]` -/
  toolResultsEnd : Token

/-- Mistral v7 / Tekken: `<s>[SYSTEM_PROMPT]…[/SYSTEM_PROMPT][INST]…[/INST]…</s>`. The
`[/INST]` that ends a user turn is modelled as the assistant header (the generation prompt);
tool calls are `[TOOL_CALLS]name[ARGS]arguments`. -/
@[expose] def mistral (ids : MistralIds) : ChatFormat where
  reserved := [ids.bos, ids.eos, ids.inst, ids.instEnd, ids.systemOpen, ids.systemClose,
    ids.toolCalls, ids.args, ids.toolResults, ids.toolResultsEnd]
  bos := [.ctrl ids.bos]
  header
    | .system => [.ctrl ids.systemOpen]
    | .developer => []
    | .user => [.ctrl ids.inst]
    | .assistant => [.ctrl ids.instEnd]
    | .tool => [.ctrl ids.toolResults]
  footer
    | .system => [.ctrl ids.systemClose]
    | .developer => []
    | .user => []
    | .assistant => [.ctrl ids.eos]
    | .tool => [.ctrl ids.toolResultsEnd]
  blockOpen
    | .toolCall => [.ctrl ids.toolCalls]
    | _ => []
  blockClose _ := []
  toolSep := [.ctrl ids.args]

/-- Control tokens of the Harmony format (gpt-oss). -/
structure HarmonyIds where
  /-- `<|start|>` -/
  start : Token
  /-- `<|end|>` -/
  «end» : Token
  /-- `<|message|>` -/
  message : Token
  /-- `<|channel|>` -/
  channel : Token
  /-- `<|constrain|>` -/
  constrain : Token
  /-- `<|return|>` -/
  «return» : Token
  /-- `<|call|>` -/
  call : Token

/-- Harmony-style (gpt-oss): `<|start|>role<|message|>…<|end|>` for every role but the
assistant, whose blocks carry channels: `<|channel|>analysis<|message|>…<|end|>` for
reasoning, `<|channel|>final<|message|>…` for content and
`<|channel|>commentary to=functions.NAME<|constrain|>json<|message|>ARGS<|call|>` for tool
calls. The assistant turn always ends with `<|end|>` (never swapped for `<|return|>`). -/
@[expose] def harmony (ids : HarmonyIds) : ChatFormat where
  reserved := [ids.start, ids.«end», ids.message, ids.channel, ids.constrain, ids.«return»,
    ids.call]
  bos := []
  header
    | .assistant => [.ctrl ids.start, .lit "assistant"]
    | .tool => [.ctrl ids.start, .lit "functions", .ctrl ids.message]
    | r => [.ctrl ids.start, .lit (chatmlRole r), .ctrl ids.message]
  footer _ := [.ctrl ids.«end»]
  blockOpen
    | .plain => [.ctrl ids.channel, .lit "final", .ctrl ids.message]
    | .reasoning => [.ctrl ids.channel, .lit "analysis", .ctrl ids.message]
    | .toolCall => [.ctrl ids.channel, .lit "commentary to=functions."]
  blockClose
    | .plain => []
    | .reasoning => [.ctrl ids.«end», .ctrl ids.start, .lit "assistant"]
    | .toolCall => [.ctrl ids.call]
  toolSep := [.ctrl ids.constrain, .lit "json", .ctrl ids.message]

/-- Control tokens of DeepSeek-R1. -/
structure DeepSeekR1Ids where
  /-- `<｜begin▁of▁sentence｜>` -/
  bos : Token
  /-- `<｜end▁of▁sentence｜>` -/
  eos : Token
  /-- `<｜User｜>` -/
  user : Token
  /-- `<｜Assistant｜>` -/
  assistant : Token
  /-- `<think>` -/
  thinkOpen : Token
  /-- `</think>` -/
  thinkClose : Token
  /-- `<｜tool▁calls▁begin｜>` -/
  toolCallsBegin : Token
  /-- `<｜tool▁calls▁end｜>` -/
  toolCallsEnd : Token
  /-- `<｜tool▁call▁begin｜>` -/
  toolCallBegin : Token
  /-- `<｜tool▁call▁end｜>` -/
  toolCallEnd : Token
  /-- `<｜tool▁sep｜>` -/
  toolSep : Token
  /-- `<｜tool▁outputs▁begin｜>` -/
  toolOutputsBegin : Token
  /-- `<｜tool▁outputs▁end｜>` -/
  toolOutputsEnd : Token
  /-- `<｜tool▁output▁begin｜>` -/
  toolOutputBegin : Token
  /-- `<｜tool▁output▁end｜>` -/
  toolOutputEnd : Token

/-- DeepSeek-R1: `<｜begin▁of▁sentence｜><｜User｜>…<｜Assistant｜><think>\n…\n</think>\n\n…
<｜end▁of▁sentence｜>`. The R1 template writes the system prompt right after BOS with no
delimiter, which cannot be parsed back, so system messages are not supported here. Tool
calls are `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>…` with the name
and the fenced JSON arguments in the argument text. -/
@[expose] def deepseekR1 (ids : DeepSeekR1Ids) : ChatFormat where
  reserved := [ids.bos, ids.eos, ids.user, ids.assistant, ids.thinkOpen, ids.thinkClose,
    ids.toolCallsBegin, ids.toolCallsEnd, ids.toolCallBegin, ids.toolCallEnd, ids.toolSep,
    ids.toolOutputsBegin, ids.toolOutputsEnd, ids.toolOutputBegin, ids.toolOutputEnd]
  bos := [.ctrl ids.bos]
  header
    | .user => [.ctrl ids.user]
    | .assistant => [.ctrl ids.assistant]
    | .tool => [.ctrl ids.toolOutputsBegin, .ctrl ids.toolOutputBegin]
    | _ => []
  footer
    | .assistant => [.ctrl ids.eos]
    | .tool => [.ctrl ids.toolOutputEnd, .ctrl ids.toolOutputsEnd]
    | _ => []
  blockOpen
    | .reasoning => [.ctrl ids.thinkOpen, .lit "\n"]
    | .toolCall => [.ctrl ids.toolCallsBegin, .ctrl ids.toolCallBegin, .lit "function",
        .ctrl ids.toolSep]
    | .plain => []
  blockClose
    | .reasoning => [.ctrl ids.thinkClose, .lit "\n\n"]
    | .toolCall => [.ctrl ids.toolCallEnd, .ctrl ids.toolCallsEnd]
    | .plain => []
  toolSep := []

/-- Control tokens of Gemma. -/
structure GemmaIds where
  /-- `<bos>` -/
  bos : Token
  /-- `<eos>` -/
  eos : Token
  /-- `<start_of_turn>` -/
  startOfTurn : Token
  /-- `<end_of_turn>` -/
  endOfTurn : Token

/-- Gemma: `<bos><start_of_turn>user\n…<end_of_turn>\n<start_of_turn>model\n…`. Gemma has no
system, developer or tool turns (its template folds the system prompt into the first user
turn, a rewrite lvt does not do), so only user and assistant are supported. -/
@[expose] def gemma (ids : GemmaIds) : ChatFormat where
  reserved := [ids.bos, ids.eos, ids.startOfTurn, ids.endOfTurn]
  bos := [.ctrl ids.bos]
  header
    | .user => [.ctrl ids.startOfTurn, .lit "user\n"]
    | .assistant => [.ctrl ids.startOfTurn, .lit "model\n"]
    | _ => []
  footer
    | .user | .assistant => [.ctrl ids.endOfTurn, .lit "\n"]
    | _ => []
  blockOpen _ := []
  blockClose _ := []
  toolSep := []

/-- Qwen2.5 ids. -/
@[expose] def qwen25Reference : ChatMLIds :=
  ⟨151644, 151645, 151643, 151657, 151658⟩

/-- Qwen3 ids. -/
@[expose] def qwen3Reference : Qwen3Ids :=
  { qwen25Reference with thinkOpen := 151667, thinkClose := 151668 }

/-- Llama 3.x ids. -/
@[expose] def llama3Reference : Llama3Ids :=
  ⟨128000, 128001, 128006, 128007, 128008, 128009, 128010⟩

/-- Mistral v7 Tekken ids. -/
@[expose] def mistralReference : MistralIds :=
  ⟨1, 2, 3, 4, 17, 18, 9, 32, 7, 8⟩

/-- gpt-oss (o200k_harmony) ids. -/
@[expose] def harmonyReference : HarmonyIds :=
  ⟨200006, 200007, 200008, 200005, 200003, 200002, 200012⟩

/-- DeepSeek-R1 ids. -/
@[expose] def deepseekR1Reference : DeepSeekR1Ids :=
  ⟨0, 1, 128803, 128804, 128798, 128799, 128806, 128807, 128808, 128809, 128814, 128810,
    128811, 128812, 128813⟩

/-- Gemma ids. -/
@[expose] def gemmaReference : GemmaIds := ⟨2, 1, 106, 107⟩

/-- A character-level reference codec, evaluable by the kernel: each character becomes one
token `charBase + code point`, far above every control id. -/
@[expose] def charBase : Nat := 1000000

/-- The character-level reference codec used to instantiate formats in kernel checks. -/
@[expose] def charCodec : Codec where
  encode s := s.toList.map fun c => charBase + c.toNat
  bytes t := (String.singleton (Char.ofNat (t - charBase))).toUTF8.data.toList

end Verified.Formats

end
