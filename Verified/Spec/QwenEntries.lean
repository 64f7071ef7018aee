module

public import Verified.Spec.Qwen

public section

/-!
# Model entries of the Qwen (ChatML) structure beyond Qwen2.5 and Qwen3

A model entry is data over a proven structure: a `QwenFmt` record (its tokenizer's control
ids, the history mode, the default system text, whether the generation prompt opens the
think block). Nothing here is code or proof: the structure's theorems (`Thm/Qwen.lean`) hold
for every record whose control ids are distinct, which `Thm/QwenEntries.lean` checks by
`decide` for each entry below.

* `qwen25Vl`: Qwen2.5-VL, Qwen2-VL and Qwen2 text chat (`Qwen/Qwen2.5-VL-7B-Instruct`):
  Qwen2.5's tokenizer and the default system text `helpfulSystem`.
* `smollm2`: SmolLM2 (`HuggingFaceTB/SmolLM2-135M-Instruct`, 360M and 1.7B alike): ChatML
  over SmolLM2's own vocabulary (`smollm2Ids`) with the default system text
  `smollm2System`.

Both templates have no tool syntax: they drop tool definitions and calls. The Python front
end refuses tools, calls and results for these entries before either backend runs, so the
conversations they render are those on which this structure writes no tool markup; on those
the structure's theorems are the entries' theorems.
-/

namespace Verified.Qwen

open Verified

/-- `'You are a helpful assistant.'`: Qwen2 / Qwen2-VL / Qwen2.5-VL's
`{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful
assistant.<|im_end|>`. -/
@[expose] def helpfulSystem : Chars :=
  ['Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'a', ' ', 'h', 'e', 'l', 'p', 'f', 'u', 'l', ' ', 'a',
    's', 's', 'i', 's', 't', 'a', 'n', 't', '.']

/-- `'You are a helpful AI assistant named SmolLM, trained by Hugging Face'`: SmolLM2's
`{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a
helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}` (no final
period). -/
@[expose] def smollm2System : Chars :=
  ['Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'a', ' ', 'h', 'e', 'l', 'p', 'f', 'u', 'l', ' ', 'A',
    'I', ' ', 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't', ' ', 'n', 'a', 'm', 'e', 'd', ' ',
    'S', 'm', 'o', 'l', 'L', 'M', ',', ' ', 't', 'r', 'a', 'i', 'n', 'e', 'd', ' ', 'b', 'y',
    ' ', 'H', 'u', 'g', 'g', 'i', 'n', 'g', ' ', 'F', 'a', 'c', 'e']

/-- SmolLM2's tokenizer (49152 ids): `<|im_start|>` 1, `<|im_end|>` 2. It has no
`<tool_call>`/`</tool_call>`: the structure's two call ids are 49152 and 49153, past the
vocabulary, which no text encodes to and the entry never places (it refuses calls). The
other reserved ids are its special added tokens: `<|endoftext|>` 0 and the repository and
notebook tokens 3-16. -/
@[expose] def smollm2Ids : QwenIds :=
  ⟨1, 2, 49152, 49153, none, none, [0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]⟩

/-- Qwen2.5-VL / Qwen2-VL / Qwen2 (`Qwen/Qwen2.5-VL-7B-Instruct`): no reasoning, the default
system text `helpfulSystem`. -/
@[expose] def qwen25Vl : QwenFmt := ⟨qwen25Ids, .v25, true, some helpfulSystem, false⟩

/-- SmolLM2 (`HuggingFaceTB/SmolLM2-135M-Instruct`): no reasoning, the default system text
`smollm2System`, SmolLM2's ids. -/
@[expose] def smollm2 : QwenFmt := ⟨smollm2Ids, .v25, true, some smollm2System, false⟩

end Verified.Qwen

end
