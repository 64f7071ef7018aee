module

public import Verified.Spec.QwenEntries
public import Verified.Thm.Qwen

public section

/-!
# The Qwen structure's theorems for the entries of `Spec/QwenEntries.lean`

No new proof: each entry's side condition (distinct control ids) is decided by the kernel on
the record, and the structure's theorems are instantiated with it.

* `smollm2Ids_wf`: SmolLM2's control ids (the two past the vocabulary included) are distinct.
* `qwen25Vl_lawful`, `smollm2_lawful`: `Format.Lawful` (so `parse_render`, `render_parse`,
  `render_injective` and `no_forgery` of `Thm/Format.lean`).
* `qwen25Vl_prefix_stable`, `smollm2_prefix_stable`: the render of a conversation is a prefix
  of the render of every extension (the structure's exception, a tool result right after a
  tool result, cannot arise: these entries refuse tool results).
* `smollm2_calls_past_vocab`: the call ids lie past SmolLM2's 49152 ids and differ from every
  other reserved id.
-/

namespace Verified.Qwen

open Verified

theorem smollm2Ids_wf : smollm2Ids.wf = true := by decide

/-- The call ids of the SmolLM2 entry are past its vocabulary: no id a tokenizer of that
vocabulary produces is one of them. -/
theorem smollm2_calls_past_vocab :
    49152 ≤ smollm2Ids.callOpen ∧ 49152 ≤ smollm2Ids.callClose ∧
      smollm2Ids.callOpen ∉ smollm2Ids.extra ∧ smollm2Ids.callClose ∉ smollm2Ids.extra := by
  decide

/-- Qwen2.5-VL is lawful: its renders parse back, parsing is sound and injective, and no
text forges a control token. -/
theorem qwen25Vl_lawful : (format qwen25Vl).Lawful := lawful qwen25Vl qwen25Ids_wf

/-- SmolLM2 is lawful: its renders parse back, parsing is sound and injective, and no text
forges a control token. -/
theorem smollm2_lawful : (format smollm2).Lawful := lawful smollm2 smollm2Ids_wf

/-- Qwen2.5-VL's renders are prefix stable (for any codec). -/
theorem qwen25Vl_prefix_stable (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : QConv) (hms : ms ≠ [])
    (hsep : (∀ m ∈ ms.getLast?, m.role ≠ .tool) ∨ (∀ m ∈ ns.head?, m.role ≠ .tool))
    (hl : lower qwen25Vl ⟨ms, tools, false⟩ = some l)
    (hl' : lower qwen25Vl ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout qwen25Vl l) <+: encodeItems codec (layout qwen25Vl l') :=
  prefix_stable qwen25Vl (by decide) codec ms ns tools g l l' hms hsep hl hl'

/-- SmolLM2's renders are prefix stable (for any codec). -/
theorem smollm2_prefix_stable (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : QConv) (hms : ms ≠ [])
    (hsep : (∀ m ∈ ms.getLast?, m.role ≠ .tool) ∨ (∀ m ∈ ns.head?, m.role ≠ .tool))
    (hl : lower smollm2 ⟨ms, tools, false⟩ = some l)
    (hl' : lower smollm2 ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout smollm2 l) <+: encodeItems codec (layout smollm2 l') :=
  prefix_stable smollm2 (by decide) codec ms ns tools g l l' hms hsep hl hl'

end Verified.Qwen

end
