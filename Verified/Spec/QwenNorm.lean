module

public import Verified.Spec.QwenQwQ

public section

/-!
# What a Qwen render keeps

The normalisation under which `Thm/QwenInjective.lean` proves the Qwen structure's lowering
injective (`Format.LowerInjective`) for every entry (Qwen2.5, Qwen3 exact and stable, their
model entries): what the template (`Spec/Qwen.lean`) never writes is forgotten, everything
else is kept.

* The system text the template writes: the first message's, or, without one, the entry's
  default (`{%- else %}` the default system text), so a conversation without a system message
  and one whose system message is the default are one conversation.
* No and empty content alike (`keptBody`), call ids dropped (the template writes none).
* Reasoning as the history policy writes it: never in `v25`; in every turn in `stable`,
  `strip('\n')`ed, with the content `lstrip('\n')`ed; in `exact` only after the last query
  (`loop.index0 > ns.last_query_index` and, before the last message, not empty), else dropped.
* A tool definition as the text the template writes for it (`tojson`): two definitions with
  one text are one definition.
-/

namespace Verified.Qwen

open Verified

/-- The role of a plain turn as a message role. -/
@[expose] def PRole.role : PRole → Role
  | .system => .system
  | .user => .user

/-- A call as the render keeps it: name and arguments, no id. -/
@[expose] def keptCall (k : Call) : Block := .toolCall k.name k.args none

/-- A tool definition as the render keeps it: the text the template writes. -/
@[expose] def keptToolQ (j : Json) : Json := .str (Json.compact j)

/-- A think block's reasoning as a body. -/
@[expose] def thinkBlocks : Option LPay → List Block
  | none => []
  | some t => [.reasoning t.raise]

/-- The leading system text as the render keeps it (written even when empty). -/
@[expose] def keptSystemQ : Option LPay → List Message
  | some p => [⟨.system, keptBody p⟩]
  | none => []

variable (f : QwenFmt)

/-- An assistant body as the render keeps it (message `i` of `n`, `lastQ` the last query). -/
@[expose] def normAsst (n lastQ i : Nat) (r : Option LPay) (c : LPay) (ks : List Call) :
    List Block :=
  let think := some (stripNl (r.getD (.text [])))
  match f.mode with
  | .v25 => keptBody c ++ ks.map keptCall
  | .stable => thinkBlocks think ++ keptBody (lstripNl c) ++ ks.map keptCall
  | .exact =>
      if lastQ < i && (i + 1 == n || !(r.getD (.text [])).isEmpty) then
        thinkBlocks think ++ keptBody (lstripNl c) ++ ks.map keptCall
      else keptBody c ++ ks.map keptCall

/-- A message as the render keeps it (the first one, a system message, is the system turn's). -/
@[expose] def normMsgQ (n lastQ i : Nat) (m : Message) : List Message :=
  match m.role with
  | .system => if i = 0 then [] else
      match m.content? with
      | some p => [⟨.system, keptBody p⟩]
      | none => [m]
  | .assistant =>
      match m.blocks with
      | [.sampled _] => [m]
      | bs => match asstParts bs with
          | some (r, c, ks) => [⟨.assistant, normAsst f n lastQ i r c ks⟩]
          | none => [m]
  | r => match m.content? with
      | some p => [⟨r, keptBody p⟩]
      | none => [m]

/-- The messages from index `i` as the render keeps them. -/
@[expose] def normMsgsQ (n lastQ : Nat) : Nat → List Message → List Message
  | _, [] => []
  | i, m :: ms => normMsgQ f n lastQ i m ++ normMsgsQ n lastQ (i + 1) ms

/-- A conversation as a Qwen render keeps it. -/
@[expose] def normQ (c : Conversation) : Conversation :=
  let ms := c.messages
  let given : Option LPay :=
    match ms with
    | m :: _ => if m.role.isSystem then m.content? else none
    | [] => none
  let s := match given with
    | some p => some p
    | none => f.defaultSystem.map LPay.text
  ⟨keptSystemQ s ++ normMsgsQ f ms.length (lastQuery ms) 0 ms, c.tools.map (·.map keptToolQ),
    c.addGenerationPrompt⟩

/-! ## QwQ-32B's loop -/

/-- A message as QwQ's render keeps it: an assistant message's reasoning never read, its
content `lstrip('\n')`ed but in the last message; the others as the structure keeps them. -/
@[expose] def normMsgQwQ (n lastQ i : Nat) (m : Message) : List Message :=
  match m.role with
  | .assistant =>
      match m.blocks with
      | [.sampled _] => [m]
      | bs => match asstParts bs with
          | some (_, c, ks) =>
              [⟨.assistant, keptBody (if i + 1 == n then c else lstripNl c) ++ ks.map keptCall⟩]
          | none => [m]
  | _ => normMsgQ f n lastQ i m

/-- The messages from index `i` as QwQ's render keeps them. -/
@[expose] def normMsgsQwQ (n lastQ : Nat) : Nat → List Message → List Message
  | _, [] => []
  | i, m :: ms => normMsgQwQ f n lastQ i m ++ normMsgsQwQ n lastQ (i + 1) ms

/-- A conversation as QwQ's render keeps it: with tools and no system message, the empty
system text its template writes before the tool preamble; else as the structure. -/
@[expose] def normQwQ (c : Conversation) : Conversation :=
  let ms := c.messages
  let first : Bool :=
    match ms with
    | m :: _ => m.role.isSystem
    | [] => false
  let given : Option LPay :=
    match ms with
    | m :: _ => if m.role.isSystem then m.content? else none
    | [] => none
  let s := match c.tools, first, given with
    | some _, false, _ => some (.text [])
    | _, _, some p => some p
    | _, _, none => f.defaultSystem.map LPay.text
  ⟨keptSystemQ s ++ normMsgsQwQ f ms.length (lastQuery ms) 0 ms, c.tools.map (·.map keptToolQ),
    c.addGenerationPrompt⟩

end Verified.Qwen

end
