module

public import Verified.Spec.Format

public section

/-!
# The Qwen templates' literal text

The fixed strings the Qwen chat templates write (`Qwen/Qwen2.5-7B-Instruct`, `Qwen/Qwen3-0.6B`
and their successors), as character lists: kernel evaluation cannot reduce `String`
literals, so the layout and its proofs work on `Chars`. `Spec/Qwen.lean` lays them out.
-/

namespace Verified.Qwen

open Verified

/-- `'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.'` (Qwen2.5). -/
@[expose] def defaultSystem : Chars :=
  ['Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'Q', 'w', 'e', 'n', ',', ' ', 'c', 'r', 'e', 'a',
    't', 'e', 'd', ' ', 'b', 'y', ' ', 'A', 'l', 'i', 'b', 'a', 'b', 'a', ' ', 'C', 'l', 'o',
    'u', 'd', '.', ' ', 'Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'a', ' ', 'h', 'e', 'l', 'p',
    'f', 'u', 'l', ' ', 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '.']

/-- `'Please reason step by step, and put your final answer within \\boxed{}.'`
(Qwen2.5-Math's default system text). -/
@[expose] def mathSystem : Chars :=
  ['P', 'l', 'e', 'a', 's', 'e', ' ', 'r', 'e', 'a', 's', 'o', 'n', ' ', 's', 't', 'e', 'p', ' ',
    'b', 'y', ' ', 's', 't', 'e', 'p', ',', ' ', 'a', 'n', 'd', ' ', 'p', 'u', 't', ' ', 'y', 'o',
    'u', 'r', ' ', 'f', 'i', 'n', 'a', 'l', ' ', 'a', 'n', 's', 'w', 'e', 'r', ' ', 'w', 'i', 't',
    'h', 'i', 'n', ' ', '\\', 'b', 'o', 'x', 'e', 'd', '{', '}', '.']

/-- `"# Tools\n\nYou may call one or more functions … XML tags:\n<tools>"` -/
@[expose] def toolsIntro : Chars :=
  ['#', ' ', 'T', 'o', 'o', 'l', 's', '\n', '\n', 'Y', 'o', 'u', ' ', 'm', 'a', 'y', ' ', 'c',
    'a', 'l', 'l', ' ', 'o', 'n', 'e', ' ', 'o', 'r', ' ', 'm', 'o', 'r', 'e', ' ', 'f', 'u',
    'n', 'c', 't', 'i', 'o', 'n', 's', ' ', 't', 'o', ' ', 'a', 's', 's', 'i', 's', 't', ' ',
    'w', 'i', 't', 'h', ' ', 't', 'h', 'e', ' ', 'u', 's', 'e', 'r', ' ', 'q', 'u', 'e', 'r',
    'y', '.', '\n', '\n', 'Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'p', 'r', 'o', 'v', 'i', 'd',
    'e', 'd', ' ', 'w', 'i', 't', 'h', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 's',
    'i', 'g', 'n', 'a', 't', 'u', 'r', 'e', 's', ' ', 'w', 'i', 't', 'h', 'i', 'n', ' ', '<',
    't', 'o', 'o', 'l', 's', '>', '<', '/', 't', 'o', 'o', 'l', 's', '>', ' ', 'X', 'M', 'L',
    ' ', 't', 'a', 'g', 's', ':', '\n', '<', 't', 'o', 'o', 'l', 's', '>']

/-- `"\n</tools>\n\nFor each function call, … within "` (then `<tool_call></tool_call>`). -/
@[expose] def toolsOutro : Chars :=
  ['\n', '<', '/', 't', 'o', 'o', 'l', 's', '>', '\n', '\n', 'F', 'o', 'r', ' ', 'e', 'a',
    'c', 'h', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'c', 'a', 'l', 'l', ',', ' ',
    'r', 'e', 't', 'u', 'r', 'n', ' ', 'a', ' ', 'j', 's', 'o', 'n', ' ', 'o', 'b', 'j', 'e',
    'c', 't', ' ', 'w', 'i', 't', 'h', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'n',
    'a', 'm', 'e', ' ', 'a', 'n', 'd', ' ', 'a', 'r', 'g', 'u', 'm', 'e', 'n', 't', 's', ' ',
    'w', 'i', 't', 'h', 'i', 'n', ' ']

/-- `" XML tags:\n"` (between `</tool_call>` and `<tool_call>` of the preamble). -/
@[expose] def toolsTags : Chars := [' ', 'X', 'M', 'L', ' ', 't', 'a', 'g', 's', ':', '\n']

/-- `"\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"` -/
@[expose] def toolsExample : Chars :=
  ['\n', '{', '"', 'n', 'a', 'm', 'e', '"', ':', ' ', '<', 'f', 'u', 'n', 'c', 't', 'i', 'o',
    'n', '-', 'n', 'a', 'm', 'e', '>', ',', ' ', '"', 'a', 'r', 'g', 'u', 'm', 'e', 'n', 't',
    's', '"', ':', ' ', '<', 'a', 'r', 'g', 's', '-', 'j', 's', 'o', 'n', '-', 'o', 'b', 'j',
    'e', 'c', 't', '>', '}', '\n']

/-- `'\n{"name": "'` after `<tool_call>`. -/
@[expose] def callPre : Chars := ['\n', '{', '"', 'n', 'a', 'm', 'e', '"', ':', ' ', '"']

/-- `'", "arguments": '` -/
@[expose] def callSep : Chars := ['"', ',', ' ', '"', 'a', 'r', 'g', 'u', 'm', 'e', 'n', 't', 's', '"', ':', ' ']

/-- `'}\n'` before `</tool_call>`. -/
@[expose] def callPost : Chars := ['}', '\n']

/-- `'<tool_response>\n'` as text (Qwen2.5). -/
@[expose] def respOpenText : Chars := ['<', 't', 'o', 'o', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '>', '\n']

/-- `'\n</tool_response>'` as text (Qwen2.5). -/
@[expose] def respCloseText : Chars := ['\n', '<', '/', 't', 'o', 'o', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '>']

/-- Between two results written as text (Qwen2.5). -/
@[expose] def respSepText : Chars := ['\n', '<', '/', 't', 'o', 'o', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '>', '\n',
    '<', 't', 'o', 'o', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '>', '\n']

end Verified.Qwen

end
