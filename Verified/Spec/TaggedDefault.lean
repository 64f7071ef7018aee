module

public import Verified.Spec.TaggedEntries

public section

/-!
# Tagged turns with the template's default system turn

Kimi K2-Instruct and K2-Thinking insert a system turn of their own before a first message that
is not a system message (`{%- if loop.first and messages[0]['role'] != 'system' -%}`),
followed by text of its own (K2-Instruct: a newline, the text before `{% endif %}`), and
K2-Thinking also before an empty conversation (`{%- if messages|length == 0 or ... -%}`). A
`DfltFmt` is a tagged-turns entry (`TaggedFmt`) with that turn's text, the text after it, and
whether an empty conversation gets it.

The lowered form (`DConv`) is whether the turn is written, then the structure's lowering of the
messages: the structure's layout and reader are reused unchanged, the inserted turn is laid
out before them and read off the front of the stream before them (`unlayoutD`). Without a text
after the turn, a first system message holding exactly the default text renders as the
inserted turn does; lowering makes it that turn (`lowerD`, by `dfltTwin`), so it reads back as
no message: the one normalisation these entries add.

`Thm/TaggedDefault.lean` proves `Format.Lawful` for every entry meeting `DfltFmt.wf`;
`kimiK2` and `kimiK2Thinking` are the entries.
-/

namespace Verified.Tagged

open Verified

/-- A tagged-turns entry whose template inserts a default system turn. -/
structure DfltFmt where
  /-- The structure's entry for the turns. -/
  base : TaggedFmt
  /-- The inserted turn's system text. -/
  text : Chars
  /-- The text the template writes after that turn's footer. -/
  tail : Chars
  /-- Whether a conversation without messages gets the turn. -/
  ifEmpty : Bool
  deriving DecidableEq, Repr

/-- A lowered conversation: whether the default turn is written, then the messages' turns. -/
structure DConv where
  dflt : Bool
  conv : TConv
  deriving DecidableEq, Repr

variable (d : DfltFmt)

/-- The inserted turn: the system header, the default text, the footer, the text after it
(never learned; owned by message 0). -/
@[expose] def dfltItems : List Item :=
  headItems d.base .system 0 ++ [txt d.text 0 false] ++ footItems d.base 0 false ++
    [txt d.tail 0 false]

/-- The symbols of the inserted turn. -/
@[expose] def dfltSyms : List Sym := syms (dfltItems d)

/-- The layout: the inserted turn where it is written, then the structure's layout. -/
@[expose] def layoutD (q : DConv) : List Item :=
  (if q.dflt then dfltItems d else []) ++ layout d.base q.conv

/-- A turn that renders as the inserted turn does where nothing follows the turn: a system
message of the default text, owned by message 0 (a Boolean the kernel evaluates). -/
@[expose] def dfltTwin : TTurn → Bool
  | .msg .system none (.text cs) 0 => decide (cs = d.text)
  | _ => false

/-- Lower a conversation: the structure's lowering, and the default turn before a first
message that is not a system message (before no message where `ifEmpty`); without a text after
the turn, a first system message with the default text is that turn. -/
@[expose] def lowerD (c : Conversation) : Option DConv :=
  (lower d.base c).map fun q =>
    match c.messages with
    | [] => ⟨d.ifEmpty, q⟩
    | m :: _ =>
        if !m.role.isSystem then ⟨true, q⟩
        else if d.tail.isEmpty && (q.turns.head?.map (dfltTwin d)).getD false then
          ⟨true, ⟨q.turns.tail, q.prompt⟩⟩
        else ⟨false, q⟩

/-- Read a stream back: the inserted turn off its front where it starts with it, then the
structure's reader. -/
@[expose] def unlayoutD (s : List Sym) : Option DConv :=
  match stripPrefix? (dfltSyms d) s with
  | some r => (unlayout d.base r).map (⟨true, ·⟩)
  | none => (unlayout d.base s).map (⟨false, ·⟩)

/-- Set every owner to 0. -/
@[expose] def DConv.erase (q : DConv) : DConv := ⟨q.dflt, q.conv.erase⟩

/-- The side conditions: the structure's (`TaggedFmt.wf`); a system header; a text after the
turn only where nothing after a turn starts with text (`TaggedFmt.appendable`), so a user's
system message with the default text, followed by anything, never reads as the inserted turn;
and neither the generation prompt nor a render's end starts with the inserted turn. -/
@[expose] def DfltFmt.wf : Bool :=
  d.base.wf && (headOf d.base .system).isSome && (d.tail.isEmpty || d.base.appendable) &&
    (stripPrefix? (dfltSyms d) (promptSyms d.base)).isNone &&
    (stripPrefix? (dfltSyms d) (eosSyms d.base)).isNone

/-- An entry with the default turn as a `Format`. -/
@[expose] def formatD : Format where
  Lowered := DConv
  reserved := d.base.reserved
  lower := lowerD d
  layout := layoutD d
  unlayout := unlayoutD d
  erase := DConv.erase

/-! ## Kimi K2-Instruct and K2-Thinking -/

/-- `'You are Kimi, an AI assistant created by Moonshot AI.'` -/
@[expose] def kimiSystem : Chars :=
  ['Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'K', 'i', 'm', 'i', ',', ' ', 'a', 'n', ' ', 'A', 'I',
    ' ', 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't', ' ', 'c', 'r', 'e', 'a', 't', 'e', 'd', ' ',
    'b', 'y', ' ', 'M', 'o', 'o', 'n', 's', 'h', 'o', 't', ' ', 'A', 'I', '.']

/-- Kimi K2-Instruct (`moonshotai-Kimi-K2-Instruct`, `-0905`): K2.5's turns without a think
block, the default turn followed by a newline. -/
@[expose] def kimiK2 : DfltFmt :=
  ⟨{ kimi true 0 with think := none }, kimiSystem, ['\n'], false⟩

/-- Kimi K2-Thinking (`moonshotai-Kimi-K2-Thinking`): K2.5's think blocks, reasoning dropped, a
prompt that writes none of the block; the default turn with nothing after it, also before an
empty conversation. -/
@[expose] def kimiK2Thinking : DfltFmt := ⟨kimi false 0, kimiSystem, [], true⟩

end Verified.Tagged

end
