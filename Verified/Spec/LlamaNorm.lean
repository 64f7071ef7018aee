module

public import Verified.Spec.Llama

public section

/-!
# What a Llama 3.1 render keeps

The normalisation under which `Thm/LlamaInjective.lean` proves Llama 3.1's lowering injective
(`Format.LowerInjective`): what the template (`Spec/Llama.lean`) never writes is forgotten,
everything else is kept.

* Content `| trim`med, and no, empty and blank content alike (`keptBody (trimPay p)`): a
  leading system message whose trimmed text is empty is no system message.
* A tool result as the template writes it (`message.content | tojson`).
* An assistant message with one call: the call without its id, and without the content the
  template does not write next to it (`'tool_calls' in message`).
* A tool definition as the text the template writes for it (`tojson(indent=4)`): two
  definitions with one text are one definition.
-/

namespace Verified.Llama

open Verified

/-- The header role of a plain turn as a message role. -/
@[expose] def LRole.role : LRole → Role
  | .system => .system
  | .user => .user
  | .assistant => .assistant
  | .developer => .developer

/-- The assistant bodies the template tells apart: the sampled tokens, one call (name,
arguments), or neither (`none`: a plain answer). -/
@[expose] def asstShape : List Block → Option (Sum (List Token) (Chars × Chars))
  | [.sampled ts] => some (.inl ts)
  | [.toolCall n a _] => some (.inr (n, a))
  | [.plain _, .toolCall n a _] => some (.inr (n, a))
  | _ => none

/-- A tool definition as the render keeps it: the text the template writes. -/
@[expose] def keptTool (j : Json) : Json := .str (Json.pretty 0 j)

/-- A leading system text as the render keeps it: one message, none for empty text. -/
@[expose] def keptSys (p : LPay) : List Message :=
  match keptBody p with
  | [] => []
  | bs => [⟨.system, bs⟩]

/-- A message after the leading system message as the render keeps it. -/
@[expose] def normMsgL (m : Message) : Message :=
  match m.role with
  | .tool => match m.content? with
      | some p => ⟨.tool, keptBody (quotePay p)⟩
      | none => m
  | .assistant => match asstShape m.blocks with
      | some (.inl ts) => ⟨.assistant, [.sampled ts]⟩
      | some (.inr (n, a)) => ⟨.assistant, [.toolCall n a none]⟩
      | none => match m.content? with
          | some p => ⟨.assistant, keptBody (trimPay p)⟩
          | none => m
  | r => match m.content? with
      | some p => ⟨r, keptBody (trimPay p)⟩
      | none => m

/-- A conversation as a Llama 3.1 render keeps it. -/
@[expose] def normL (c : Conversation) : Conversation :=
  let r : List Message × List Message :=
    match c.messages with
    | m :: ms => if m.role.isSystem then (keptSys (trimPay (m.content?.getD (.text []))), ms)
        else ([], m :: ms)
    | [] => ([], [])
  ⟨r.1 ++ r.2.map normMsgL, c.tools.map (·.map keptTool), c.addGenerationPrompt⟩

end Verified.Llama

end
