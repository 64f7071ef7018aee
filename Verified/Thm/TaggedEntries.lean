module

public import Verified.Spec.TaggedEntries
public import Verified.Thm.TaggedLawful

public section

/-!
# The tagged-turns structure's theorems for the entries of `Spec/TaggedEntries.lean`

No new proof: each entry's side condition `TaggedFmt.wf` (headers of distinct roles apart,
the footer token nowhere else, the generation prompt distinct from a render's end, every
control token reserved) is decided by the kernel on the record, and the structure's `lawful`
is instantiated with it, so `parse_render`, `render_parse`, `render_injective` and
`no_forgery` (`Thm/Format.lean`) hold for each entry:

* `phi3_lawful`, `talkie_lawful`, `phi4_lawful`;
* `kimiK25_lawful` (both values of the `thinking` option), `kimiK27Code_lawful`.
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

end Verified.Tagged

end
