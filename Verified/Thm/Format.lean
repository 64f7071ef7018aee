module

public import Verified.Spec.Format
public import Verified.Thm.Span

public section

/-!
# The theorems every lawful format has

For any format whose family proves `Format.Lawful`, and any lawful codec:

* `parse_render`: parsing the render of a conversation gives back its lowered form (owners
  erased), text byte-exact: what the template writes is recovered from the token ids alone.
* `render_parse`: the parser never invents a conversation: what it accepts re-renders to
  exactly the input tokens.
* `render_injective`: two conversations with the same render have the same lowered form, so
  they are equal up to any normalisation under which the family's lowering is injective
  (`Format.LowerInjective`).
* `no_forgery`: the reserved tokens of a render are exactly the control tokens the layout
  placed, in order; text never produces one, so the control skeleton of a render is the one
  its lowered form dictates.
* `render_append_cells`: a render splits at every control token (the cells before it never
  depend on what follows), the lemma the families' extension theorems are built on.
-/

namespace Verified

namespace Format

variable {F : Format}

/-- Parsing the render of a conversation gives back its lowered form (owners erased). -/
theorem parse_render (hF : F.Lawful) {codec : Codec} (hc : codec.Lawful F.reserved)
    {c : Conversation} {l : F.Lowered} (hl : F.lower c = some l)
    (ht : textOnly (F.layout l) = true) :
    F.parse codec (ids (encodeItems codec (F.layout l))) = some (F.erase l) := by
  have htext := syms_all_not_tok_of_textOnly ht
  simp only [parse, ids_encodeItems,
    decodeSyms_encodeSyms hc _ (hF.ctrl_reserved l) htext, Option.bind_some]
  exact hF.unlayout_layout c l hl ht

/-- `render` then `parse`: the same statement through `Format.render`. -/
theorem parse_of_render (hF : F.Lawful) {codec : Codec} (hc : codec.Lawful F.reserved)
    {c : Conversation} {l : F.Lowered} (hl : F.lower c = some l)
    (ht : textOnly (F.layout l) = true) :
    (F.render codec c).bind (fun cs => F.parse codec (ids cs)) = some (F.erase l) := by
  simp only [render, hl, Option.map_some, Option.bind_some]
  exact parse_render hF hc hl ht

/-- The parser never invents a conversation: what it accepts lays out to exactly the input
tokens. -/
theorem render_parse (hF : F.Lawful) {codec : Codec} {ts : List Token} {l : F.Lowered}
    (h : F.parse codec ts = some l) : ids (encodeItems codec (F.layout l)) = ts := by
  simp only [parse, Option.bind_eq_some_iff] at h
  obtain ⟨s, hs, hu⟩ := h
  rw [ids_encodeItems, hF.layout_unlayout s l hu]
  exact encodeSyms_of_decodeSyms hs

/-- Two conversations with the same render (as ids) have the same lowered form up to
owners. -/
theorem render_injective_lowered (hF : F.Lawful) {codec : Codec}
    (hc : codec.Lawful F.reserved) {c d : Conversation} {l l' : F.Lowered}
    (hl : F.lower c = some l) (hl' : F.lower d = some l')
    (ht : textOnly (F.layout l) = true) (ht' : textOnly (F.layout l') = true)
    (h : ids (encodeItems codec (F.layout l)) = ids (encodeItems codec (F.layout l'))) :
    F.erase l = F.erase l' := by
  have a := parse_render hF hc hl ht
  rw [h, parse_render hF hc hl' ht'] at a
  exact (Option.some.inj a).symm

/-- The render is injective on what users write, up to the normalisation `norm` under which
the family's lowering is injective. -/
theorem render_injective (hF : F.Lawful) {codec : Codec} (hc : codec.Lawful F.reserved)
    {norm : Conversation → Conversation} (hN : F.LowerInjective norm)
    {c d : Conversation} {l l' : F.Lowered}
    (hl : F.lower c = some l) (hl' : F.lower d = some l')
    (ht : textOnly (F.layout l) = true) (ht' : textOnly (F.layout l') = true)
    (h : ids (encodeItems codec (F.layout l)) = ids (encodeItems codec (F.layout l'))) :
    norm c = norm d :=
  hN c d l l' hl hl' (render_injective_lowered hF hc hl hl' ht ht' h)

/-- No forgery: the reserved tokens of a render, in order, are exactly the control tokens its
layout placed. Text, whatever it spells, never becomes a control token. -/
theorem no_forgery (hF : F.Lawful) {codec : Codec} (hc : codec.Lawful F.reserved)
    (l : F.Lowered) (ht : textOnly (F.layout l) = true) :
    (ids (encodeItems codec (F.layout l))).filter (isReserved F.reserved) =
      ctrls (syms (F.layout l)) := by
  have htext := syms_all_not_tok_of_textOnly ht
  rw [ids_encodeItems]
  exact reserved_of_encodeSyms hc _ (hF.ctrl_reserved l) htext

end Format

end Verified

end
