module

public import Verified.Spec.TaggedEntries
public import Verified.Thm.TaggedPrefix

public section

/-!
# The tagged-turns structure's theorems for the entries of `Spec/TaggedEntries.lean`

No new proof: each entry's side condition `TaggedFmt.wf` (headers of distinct roles apart,
the footer token nowhere else, the generation prompt distinct from a render's end, every
control token reserved) is decided by the kernel on the record, and the structure's `lawful`
is instantiated with it, so `parse_render`, `render_parse`, `render_injective` and
`no_forgery` (`Thm/Format.lean`) hold for each entry:

* `phi3_lawful`, `talkie_lawful`, `phi4_lawful`;
* `kimiK25_lawful` (both values of the `thinking` option), `kimiK27Code_lawful`;
* `talkie_prefix_stable`, `phi4_prefix_stable`, `kimiK25_prefix_stable`,
  `kimiK27Code_prefix_stable`: the structure's `prefix_stable` for the entries that write
  nothing after the last turn (`TaggedFmt.appendable`, decided). Phi-3 writes `eos_token`
  there, so its training renders are not prefixes of their extensions; what holds for it (and
  every entry, with no side condition) is the structure's `prompt_prefix`, and `mask_owner`,
  `mask_sampled` and `learned_msg` (`Thm/TaggedMask.lean`) hold for every entry as stated,
  and `render_injective_norm` (`Thm/TaggedInjective.lean`) for every entry with its `wf`
  theorem here: two conversations with the same render are equal up to `norm`.
-/

namespace Verified.Tagged

open Verified

theorem phi3_wf : phi3.wf = true := by decide

theorem talkie_wf : talkie.wf = true := by decide

theorem phi4_wf : phi4.wf = true := by decide

theorem kimiK25_wf : ∀ thinking, (kimiK25 thinking).wf = true := by decide

theorem kimiK27Code_wf : kimiK27Code.wf = true := by decide

/-- Phi-3 is lawful: its renders parse back, parsing is sound and injective, and no text
forges a control token. -/
theorem phi3_lawful : (format phi3).Lawful := lawful phi3 phi3_wf

/-- talkie is lawful. -/
theorem talkie_lawful : (format talkie).Lawful := lawful talkie talkie_wf

/-- Phi-4 is lawful. -/
theorem phi4_lawful : (format phi4).Lawful := lawful phi4 phi4_wf

/-- Kimi K2.5 / K2.6 is lawful in either thinking mode. -/
theorem kimiK25_lawful (thinking : Bool) : (format (kimiK25 thinking)).Lawful :=
  lawful (kimiK25 thinking) (kimiK25_wf thinking)

/-- Kimi K2.7-Code is lawful. -/
theorem kimiK27Code_lawful : (format kimiK27Code).Lawful := lawful kimiK27Code kimiK27Code_wf

/-- talkie's renders are prefix stable (for any codec). -/
theorem talkie_prefix_stable (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : TConv)
    (hl : lower talkie ⟨ms, tools, false⟩ = some l)
    (hl' : lower talkie ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout talkie l) <+: encodeItems codec (layout talkie l') :=
  prefix_stable talkie (by decide) codec ms ns tools g l l' hl hl'

/-- Phi-4's renders are prefix stable (for any codec). -/
theorem phi4_prefix_stable (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : TConv)
    (hl : lower phi4 ⟨ms, tools, false⟩ = some l)
    (hl' : lower phi4 ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout phi4 l) <+: encodeItems codec (layout phi4 l') :=
  prefix_stable phi4 (by decide) codec ms ns tools g l l' hl hl'

/-- Kimi K2.5 / K2.6's renders are prefix stable in either thinking mode (for any codec). -/
theorem kimiK25_prefix_stable (thinking : Bool) (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : TConv)
    (hl : lower (kimiK25 thinking) ⟨ms, tools, false⟩ = some l)
    (hl' : lower (kimiK25 thinking) ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout (kimiK25 thinking) l) <+:
      encodeItems codec (layout (kimiK25 thinking) l') :=
  prefix_stable (kimiK25 thinking) (by cases thinking <;> decide) codec ms ns tools g l l' hl hl'

/-- Kimi K2.7-Code's renders are prefix stable (for any codec). -/
theorem kimiK27Code_prefix_stable (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : TConv)
    (hl : lower kimiK27Code ⟨ms, tools, false⟩ = some l)
    (hl' : lower kimiK27Code ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout kimiK27Code l) <+: encodeItems codec (layout kimiK27Code l') :=
  prefix_stable kimiK27Code (by decide) codec ms ns tools g l l' hl hl'

end Verified.Tagged

end
