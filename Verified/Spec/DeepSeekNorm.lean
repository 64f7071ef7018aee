module

public import Verified.Spec.DeepSeek

public section

/-!
# What a DeepSeek-R1 render keeps

The normalisation under which `Thm/DeepSeekInjective.lean` proves DeepSeek-R1's lowering
injective (`Format.LowerInjective`): what the template (`Spec/DeepSeek.lean`) never writes is
forgotten, everything else is kept.

* Every system text is joined into one leading system message (`ns.system_prompt`, written
  after BOS), none when the joined text is empty.
* No and empty content alike (`keptBody`); calls without their ids (the template writes none).
* Reasoning dropped in the exact mode (the template never reads it), kept in the stable mode.
* The content of a call message after the first call message of the conversation dropped:
  `ns.is_first` is never reset, so the template writes neither its header nor its content.
* No tools (the template does not render them), and a generation prompt wherever one is
  written: when asked for, and after a run of tool results at the end, whose
  `<｜tool▁outputs▁end｜>` the template writes either way.
-/

namespace Verified.DeepSeek

open Verified

/-- A call as the render keeps it: name and arguments, no id. -/
@[expose] def keptCall (k : Call) : Block := .toolCall k.name k.args none

/-- A think block's reasoning as a body. -/
@[expose] def thinkBody : Option LPay → List Block
  | none => []
  | some r => [.reasoning r.raise]

/-- A system payload as the render keeps it: one leading system message, none for empty text. -/
@[expose] def keptSystem (p : LPay) : List Message :=
  match keptBody p with
  | [] => []
  | bs => [⟨.system, bs⟩]

/-- The messages other than system messages as the render keeps them; `called`: a call
message was written before (`ns.is_first`). -/
@[expose] def normMsgs (mode : Mode) : Bool → List Message → List Message
  | _, [] => []
  | called, m :: ms =>
      match m.role with
      | .system => normMsgs mode called ms
      | .assistant =>
          match m.blocks with
          | [.sampled _] => m :: normMsgs mode called ms
          | bs => match asstParts bs with
              | some (r, c, ks) =>
                  let th := match mode with
                    | .stable => r
                    | .exact => none
                  match ks with
                  | [] => ⟨.assistant, thinkBody th ++ keptBody c⟩ :: normMsgs mode called ms
                  | _ :: _ =>
                      ⟨.assistant, thinkBody th ++ (if called then [] else keptBody c) ++
                        ks.map keptCall⟩ :: normMsgs mode true ms
              | none => m :: normMsgs mode called ms
      | _ => (match m.content? with
          | some p => ⟨m.role, keptBody p⟩
          | none => m) :: normMsgs mode called ms

/-- Whether the last message that is not a system message is a tool result (`ns.is_tool`). -/
@[expose] def inToolsAfter : Bool → List Message → Bool
  | b, [] => b
  | b, m :: ms =>
      match m.role with
      | .tool => inToolsAfter true ms
      | .system => inToolsAfter b ms
      | .developer => inToolsAfter b ms
      | _ => inToolsAfter false ms

/-- A conversation as a DeepSeek-R1 render keeps it. -/
@[expose] def norm (f : DsFmt) (c : Conversation) : Conversation :=
  ⟨(match (systems 0 c.messages).bind fun sys => joinSystem (sys.map Prod.fst) with
      | some p => keptSystem p
      | none => []) ++ normMsgs f.mode false c.messages, none,
    c.addGenerationPrompt || inToolsAfter false c.messages⟩

end Verified.DeepSeek

end
