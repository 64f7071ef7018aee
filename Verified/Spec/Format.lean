module

public import Verified.Spec.Span

public section

/-!
# Chat formats

A chat format is a family's template as three functions and a reserved set:

* `lower` maps the conversation a user writes to the turns the template writes (defaults
  inserted, tool results grouped, tools placed and laid out, content trimmed where the template
  trims, history reasoning dropped where the template drops it), or `none` for a conversation
  the format cannot express;
* `layout` writes a lowered conversation as items (control tokens, text, verbatim tokens, each
  with its owner message and loss bit);
* `unlayout` reads a symbol stream back as a lowered conversation.

The render is `encodeItems codec (layout l)`: text spans encoded whole, as the template's
tokenizer does. The parser is `unlayout` after `decodeSyms`. Owner indices are annotations of
the render that tokens do not determine; `erase` sets them to a canonical value, and the
parser returns lowered conversations up to them. `LowerInjective norm` states that lowering
loses nothing but what `norm` forgets; with the round trip it makes the render injective up to
`norm`.

`Format.Lawful` collects what a family proves about its three functions (`Thm/Qwen.lean`,
`Thm/Llama.lean`); `Thm/Format.lean` derives the round trip, soundness, injectivity and
no-forgery theorems for every lawful format from it.
-/

namespace Verified

/-- A chat format. -/
structure Format where
  /-- The lowered form: the turns the template writes. -/
  Lowered : Type
  /-- The control tokens: text never encodes to them. -/
  reserved : List Token
  /-- From the conversation users write to the turns the format renders. -/
  lower : Conversation → Option Lowered
  /-- The items of a lowered conversation. -/
  layout : Lowered → List Item
  /-- Read a symbol stream back as a lowered conversation. -/
  unlayout : List Sym → Option Lowered
  /-- Forget the owner annotations (set them to a canonical value). -/
  erase : Lowered → Lowered

namespace Format

variable (F : Format)

/-- The render of a conversation (`none` when the format cannot express it). -/
@[expose] def render (codec : Codec) (c : Conversation) : Option (List Cell) :=
  (F.lower c).map fun l => encodeItems codec (F.layout l)

/-- Parse a token list back to a lowered conversation. -/
@[expose] def parse (codec : Codec) (ts : List Token) : Option F.Lowered :=
  (decodeSyms codec F.reserved ts).bind F.unlayout

/-- What a family proves about its format; every generic theorem assumes it. -/
structure Lawful : Prop where
  /-- `unlayout` inverts `layout` on every lowered conversation with text payloads. -/
  unlayout_layout : ∀ c l, F.lower c = some l → textOnly (F.layout l) = true →
    F.unlayout (syms (F.layout l)) = some (F.erase l)
  /-- `unlayout` never invents a conversation: what it returns lays out to its input. -/
  layout_unlayout : ∀ s l, F.unlayout s = some l → syms (F.layout l) = s
  /-- Every control token a layout places is reserved. -/
  ctrl_reserved : ∀ l, ∀ t ∈ ctrls (syms (F.layout l)), isReserved F.reserved t = true
  /-- Erasing owners does not change the symbols. -/
  syms_erase : ∀ l, syms (F.layout (F.erase l)) = syms (F.layout l)

/-- `norm` is a normalisation of conversations under which lowering is injective: two
conversations with the same lowered form (up to owners) are equal after `norm`. A family
proves this for its own `norm` (trim where the template trims, defaults made explicit, empty
content = no block, reasoning the template drops dropped). -/
@[expose] def LowerInjective (norm : Conversation → Conversation) : Prop :=
  ∀ c d l l', F.lower c = some l → F.lower d = some l' → F.erase l = F.erase l' →
    norm c = norm d

end Format

end Verified

end
