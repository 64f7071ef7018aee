module

public import Verified.Spec.Formats

public section

/-!
# Well-formedness of the shipped formats

Each shipped format, instantiated with the control ids of its reference tokenizer and with
literal pieces encoded by the kernel-evaluable character-level codec `charCodec`, satisfies
`WellFormed`; every proof is `by decide`, so the kernel evaluates the check.

With a real tokenizer the literal pieces encode differently, so the Python side re-runs the
same check (a line-by-line transliteration of `Format.wf`, itself compared with Lean by the
differential tests) on the format it instantiates, and refuses a format that fails it.
-/

namespace Verified.Formats

open Verified

/-- ChatML (Qwen2.5) is well-formed. -/
theorem chatml_wellFormed : ((chatml qwen25Reference).encode charCodec).WellFormed := by
  decide

/-- Qwen3 (no history rewriting) is well-formed. -/
theorem qwen3_wellFormed : ((qwen3 qwen3Reference).encode charCodec).WellFormed := by
  decide

/-- Llama 3.x is well-formed. -/
theorem llama3_wellFormed : ((llama3 llama3Reference).encode charCodec).WellFormed := by
  decide

/-- Mistral v7 / Tekken is well-formed. -/
theorem mistral_wellFormed : ((mistral mistralReference).encode charCodec).WellFormed := by
  decide

/-- The Harmony-style gpt-oss format is well-formed. -/
theorem harmony_wellFormed : ((harmony harmonyReference).encode charCodec).WellFormed := by
  decide

/-- DeepSeek-R1 is well-formed. -/
theorem deepseekR1_wellFormed :
    ((deepseekR1 deepseekR1Reference).encode charCodec).WellFormed := by
  decide

/-- Gemma is well-formed. -/
theorem gemma_wellFormed : ((gemma gemmaReference).encode charCodec).WellFormed := by
  decide

/-- The check is not vacuous: a ChatML variant whose user and tool headers coincide is
rejected. -/
theorem chatml_sameHeaders_not_wellFormed :
    ¬ (ChatFormat.encode charCodec
        { chatml qwen25Reference with
          header := fun r => [.ctrl qwen25Reference.imStart,
            .lit (if r = Role.tool then "user\n" else chatmlRole r ++ "\n")] }).WellFormed := by
  decide

end Verified.Formats

end
