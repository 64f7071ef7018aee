module

public import Verified.Spec.Mistral

public section

/-!
# The Mistral templates' loops over the Mistral structure

The Hugging Face templates of the 2512 models (Ministral 3 3B/8B/14B, Devstral Small 2,
Devstral 2: lvt's `ministral-3-*`, `devstral-*`) and of Mistral Small 3 / 3.1 write the tekken
markup of the Mistral structure (`Spec/MistralLayout.lean`'s `turnItems` and `layout`, read back
by `Spec/Mistral.lean`'s `unlayout`, unchanged), with loops of their own. A model entry is a
`MistralTFmt`: the structure's record and the model's default system prompt.

The 2512 templates (`lowerT`) lower as mistral-common does (the structure's `lowerMsgs`: message
order, tool placement, call ids) with two differences:

* assistant text is written as given (`{{- content -}}` in `render_content`), where
  mistral-common strips trailing spaces (`content.rstrip(" ")`);
* the model's default system prompt when the conversation does not open with a system message
  (`{%- if messages[0]['role'] != 'system' and default_system_message != '' %}`), placed as the
  first turn of the lowered conversation, owned by message 0, as the Qwen structure places its
  default text.

Mistral Small 3 / 3.1's template (`lowerS`) has no tool syntax and no role order:

* every message where it is (`{%- for message in loop_messages %}`): `[INST]…[/INST]` for a
  user message, `[SYSTEM_PROMPT]…[/SYSTEM_PROMPT]` for a system message, `content + eos_token`
  for an assistant message, in any order;
* the system prompt first, always: the first message's, else the default;
* the template ignores `tools` and drops calls, and raises on a `tool` message: tools, calls and
  results are refused (the front end gives the reason).

A conversation without messages is refused by both (the template would write only its default
prompt). `Thm/MistralTemplate.lean` proves both formats lawful for every record whose ids are
well formed for its version, whatever the default text; `lvt.families.mistral_template`
(`MistralTemplate`, `MistralSmall3`) is their transliteration.
-/

namespace Verified.Mistral

open Verified

/-- A model entry of a Mistral template: the structure's record and the default system text
(the date the template stamps already written in). -/
structure MistralTFmt where
  /-- The structure's record: ids, version, mode. -/
  fmt : MistralFmt
  /-- `default_system_message`, never empty for an entry. -/
  dflt : Chars
  deriving Repr

variable (g : MistralTFmt)

/-! ## The 2512 templates -/

/-- Lower one message as the structure does, with assistant text as given
(`{{- content -}}`). -/
@[expose] def lowerMsgT (tools : Option Chars) (rid : Option (Option Chars)) (i : Nat)
    (m : Message) : Option MTurn :=
  match m.role with
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some (.sampled ts i)
      | bs => (bodyOf bs).bind fun (p, cs) => (callIds g.fmt cs).bind fun cs =>
          if isEmptyText p && cs.isEmpty then none
          else some (.assistant p cs i)
  | _ => lowerMsg g.fmt tools rid i m

/-- Lower the messages from index `i`, as the structure's `lowerMsgs` (message order, results
after calls, pending call ids), with `lowerMsgT`. -/
@[expose] def lowerMsgsT (tools : Option Chars) (pos : Option Nat) :
    Option Role → Option MTurn → List (Option Chars) → Nat → List Message →
      Option (List MTurn)
  | _, _, _, _, [] => some []
  | prev, prevT, pend, i, m :: ms =>
      let ok : Bool := match prev with
        | none => m.role = .user || m.role = .system
        | some r => allowed r m.role
      if !ok then none else
        (lowerMsgT g (if pos = some i then tools else none) pend.head? i m).bind fun t =>
          if t.isResult && !afterCall prevT then none else
            (lowerMsgsT tools pos (some m.role) (some t) (t.pending pend) (i + 1) ms).map
              (t :: ·)

/-- The default system turn before the turns, unless the first message is a system message
(`messages[0]['role'] != 'system'`). -/
@[expose] def withDefault (ms : List Message) (ts : List MTurn) : List MTurn :=
  match ms with
  | m :: _ => if m.role.isSystem then ts else .system (.text g.dflt) 0 :: ts
  | [] => ts

/-- Lower a conversation as the 2512 templates write it. -/
@[expose] def lowerT (c : Conversation) : Option MConv :=
  if c.messages.isEmpty then none else
    let tj : Option (Option Chars) := match c.tools with
      | some (t :: ts) => (toolsJson (t :: ts)).map some
      | _ => some none
    tj.bind fun tools =>
      (lowerMsgsT g tools (if tools.isSome then toolsAt g.fmt c.messages else none) none none []
          0 c.messages).bind fun ts =>
        if lastOk c.messages && ts.all (turnOk g.fmt) then
          some ⟨withDefault g c.messages ts,
            if c.addGenerationPrompt then some c.messages.length else none⟩
        else none

/-- The layout of a Mistral template: the structure's. -/
@[expose] def layoutT (q : MConv) : List Item := layout g.fmt q

/-- The 2512 templates' loop as a `Format`: this lowering, the structure's layout and reader. -/
@[expose] def formatT : Format where
  Lowered := MConv
  reserved := g.fmt.ids.reserved
  lower := lowerT g
  layout := layoutT g
  unlayout := unlayout g.fmt
  erase := MConv.erase

/-! ## Mistral Small 3 / 3.1 -/

/-- Lower one message where it stands: a system or user message as its turn, an assistant
message as its content only (a sampled turn kept), anything else refused (no tool syntax). -/
@[expose] def lowerMsgS (i : Nat) (m : Message) : Option MTurn :=
  match m.role with
  | .system => m.content?.map fun p => .system p i
  | .user => m.content?.map fun p => .user none p i
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some (.sampled ts i)
      -- `message['content'] + eos_token`: the content only; calls and reasoning refused
      | [] => some (.assistant (.text []) [] i)
      | [.plain p] => some (.assistant p.lower [] i)
      | _ => none
  | _ => none

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgsS : Nat → List Message → Option (List MTurn)
  | _, [] => some []
  | i, m :: ms => (lowerMsgS i m).bind fun t => (lowerMsgsS (i + 1) ms).map (t :: ·)

/-- Lower a conversation as Mistral Small 3 / 3.1's template writes it. -/
@[expose] def lowerS (c : Conversation) : Option MConv :=
  if c.messages.isEmpty then none else
    match c.tools with
    -- the template ignores `tools`: refused rather than silently dropped
    | some (_ :: _) => none
    | _ =>
      (lowerMsgsS 0 c.messages).bind fun ts =>
        if (withDefault g c.messages ts).all (turnOk g.fmt) then
          some ⟨withDefault g c.messages ts,
            if c.addGenerationPrompt then some c.messages.length else none⟩
        else none

/-- The layout of Small 3's template: the structure's. -/
@[expose] def layoutS (q : MConv) : List Item := layout g.fmt q

/-- The Small 3 loop as a `Format`: this lowering, the structure's layout and reader. -/
@[expose] def formatS : Format where
  Lowered := MConv
  reserved := g.fmt.ids.reserved
  lower := lowerS g
  layout := layoutS g
  unlayout := unlayout g.fmt
  erase := MConv.erase

/-! ## What Small 3's template does not write -/

/-- What Small 3's template keeps of a message's body: a sampled answer as it is; otherwise its
content as one plain block, none when that is empty text (no content and empty content render
alike). A body lowering refuses is left as it is. -/
@[expose] def normBodyS (m : Message) : List Block :=
  match m.role, m.blocks with
  | .assistant, [.sampled ts] => [.sampled ts]
  | _, bs =>
      match m.content? with
      | some p => keptBody p
      | none => bs

/-- The normalisation under which Small 3's lowering is injective
(`Thm/MistralTemplateInjective.lean`): every message's body as `normBodyS` keeps it, the
default system prompt written out as the first message when the conversation does not open
with a system message (`{%- else %}` the default: the render is the same), no tools (an empty
list renders as none; a non-empty one is refused) and no generation prompt (the Mistral
markup writes nothing for it: a render with it is the render without). -/
@[expose] def normS (c : Conversation) : Conversation :=
  let ms := c.messages.map fun m => (⟨m.role, normBodyS m⟩ : Message)
  ⟨match c.messages with
    | m :: _ => if m.role.isSystem then ms else ⟨.system, keptBody (.text g.dflt)⟩ :: ms
    | [] => ms,
    none, false⟩

end Verified.Mistral

end
