module

public import Verified.Spec.Tagged

public section

/-!
# Model entries of the tagged-turns structure

Each entry is a `TaggedFmt` record: its headers, footer, end token and think block, over the
control ids of the vocabulary lvt tests it on (`phi3-text`: Phi-3's added tokens on Mistral
7B v0.1's vocabulary; `phi4-text` and `kimi-text`: the models' markers on cl100k_base, as
`lvt.zoo.textlevel` builds them; the ids are those the Python registry resolves, checked by
`tests/lean/test_tagged_ids.py`). Nothing here is code or proof: `Thm/TaggedEntries.lean`
decides each entry's side condition and instantiates the structure's theorems.

* `phi3` (`microsoft-Phi-3-mini-4k-instruct`, Phi-3.5 mini, Phi-tiny-MoE):
  `'<|' + message['role'] + '|>' + '\n' + message['content'] + '<|end|>' + '\n'`, the prompt
  `'<|assistant|>\n'`, else `{{ eos_token }}`;
* `talkie` (`lewtun-talkie-1930-13b-it-hf`): Phi-3's tags without the newlines and no
  `eos_token`;
* `phi4` (`microsoft-phi-4`): `'<|im_start|>' + message['role'] + '<|im_sep|>' +
  message['content'] + '<|im_end|>'`;
* `kimiK25 thinking` (`moonshotai-Kimi-K2.5`, K2.6): `<|im_user|>user<|im_middle|>` (the
  role's own token) + content + `<|im_end|>`, every assistant turn `'<think></think>' +
  content` (history reasoning dropped), the prompt `…<|im_middle|><think>`, or
  `<think></think>` with `thinking=False`;
* `kimiK27Code` (`moonshotai-Kimi-K2.7-Code`): K2.5's turns with the reasoning kept
  (`'<think>' + rc + '</think>'`) and the prompt always `…<think>`.
-/

namespace Verified.Tagged

open Verified

/-- `'system'` -/
@[expose] def systemText : Chars := ['s', 'y', 's', 't', 'e', 'm']

/-- `'user'` -/
@[expose] def userText : Chars := ['u', 's', 'e', 'r']

/-- `'assistant'` -/
@[expose] def assistantText : Chars := ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't']

/-- The role's text as the templates write `message['role']`. -/
@[expose] def roleText : Role → Chars
  | .system => systemText
  | .user => userText
  | _ => assistantText

/-- The three roles the templates write. -/
@[expose] def chatRoles : List Role := [.system, .user, .assistant]

/-! ## Phi-3 and talkie (`phi3-text`) -/

/-- `<|system|>` 32006, `<|user|>` 32010, `<|assistant|>` 32001 -/
@[expose] def phi3RoleTok : Role → Token
  | .system => 32006
  | .user => 32010
  | _ => 32001

/-- The reserved ids of `phi3-text`: `<unk>` 0, `<s>` 1, `</s>` 2 and Phi-3's added tokens
32000-32010 (`<|endoftext|>` 32000, `<|end|>` 32007, …). -/
@[expose] def phi3Reserved : List Token :=
  [32000, 32001, 32006, 32007, 32010, 0, 1, 2, 32002, 32003, 32004, 32005, 32008, 32009]

/-- Phi-3: `'<|' + message['role'] + '|>' + '\n'` … `'<|end|>' + '\n'`, then
`'<|assistant|>\n'` or `{{ eos_token }}` (`<|endoftext|>` 32000). -/
@[expose] def phi3 : TaggedFmt where
  heads := chatRoles.map fun r => (r, [.ctrl (phi3RoleTok r), .text ['\n']])
  endTurn := 32007
  footTail := ['\n']
  eos := some 32000
  think := none
  keep := true
  promptThink := 0
  reserved := phi3Reserved

/-- talkie: `'<|' + message['role'] + '|>'` + content + `'<|end|>'`, nothing after the last
turn. -/
@[expose] def talkie : TaggedFmt where
  heads := chatRoles.map fun r => (r, [.ctrl (phi3RoleTok r)])
  endTurn := 32007
  footTail := []
  eos := none
  think := none
  keep := true
  promptThink := 0
  reserved := phi3Reserved

/-! ## Phi-4 (`phi4-text`) -/

/-- Phi-4: `'<|im_start|>'` 100264 `+ role + '<|im_sep|>'` 100266 … `'<|im_end|>'` 100265;
the other reserved ids are cl100k_base's special tokens 100257-100263 and 100276. -/
@[expose] def phi4 : TaggedFmt where
  heads := chatRoles.map fun r => (r, [.ctrl 100264, .text (roleText r), .ctrl 100266])
  endTurn := 100265
  footTail := []
  eos := none
  think := none
  keep := true
  promptThink := 0
  reserved := [100264, 100265, 100266, 100257, 100258, 100259, 100260, 100261, 100262, 100263,
    100276]

/-! ## Kimi K2.5, K2.6 and K2.7-Code (`kimi-text`) -/

/-- `<|im_system|>` 100266, `<|im_user|>` 100264, `<|im_assistant|>` 100265 -/
@[expose] def kimiRoleTok : Role → Token
  | .system => 100266
  | .user => 100264
  | _ => 100265

/-- The reserved ids of `kimi-text`: Kimi's markers 100263-100276 (`<|im_end|>` 100263,
`<|im_middle|>` 100267, `<think>` 100268, `</think>` 100269, …) and cl100k_base's special
tokens. -/
@[expose] def kimiReserved : List Token :=
  [100263, 100264, 100265, 100266, 100267, 100268, 100269, 100257, 100258, 100259, 100260,
    100261, 100262, 100270, 100271, 100272, 100273, 100274, 100275, 100276]

/-- Kimi's turns: `'<|im_' + role + '|>' + role + '<|im_middle|>'` … `'<|im_end|>'`, a think
block `<think>` `</think>` on every assistant turn, kept or not, and `pt` of its tokens in the
generation prompt. -/
@[expose] def kimi (keep : Bool) (pt : Nat) : TaggedFmt where
  heads := chatRoles.map fun r => (r, [.ctrl (kimiRoleTok r), .text (roleText r), .ctrl 100267])
  endTurn := 100263
  footTail := []
  eos := none
  think := some (100268, 100269)
  keep := keep
  promptThink := pt
  reserved := kimiReserved

/-- Kimi K2.5 / K2.6: history reasoning dropped (without tools every assistant message is in
`hist_msgs`); the prompt opens `<think>`, or writes `<think></think>` with `thinking=False`
(`{%- if thinking is defined and thinking is false -%}`). -/
@[expose] def kimiK25 (thinking : Bool) : TaggedFmt := kimi false (if thinking then 1 else 2)

/-- Kimi K2.7-Code: `'<think>' + rc + '</think>'` on every assistant turn, the prompt always
`…<think>`. -/
@[expose] def kimiK27Code : TaggedFmt := kimi true 1

end Verified.Tagged

end
