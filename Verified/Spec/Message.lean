module

public import Verified.Spec.Json

public section

/-!
# Messages and conversations

The conversation as users write it. A conversation is a list of messages, the tool
definitions the model may call, and whether a generation prompt follows. A message has a role
and a body of blocks:

* `plain p`: the message content;
* `reasoning p`: the assistant's reasoning ("thinking");
* `toolCall name args id`: a call of the tool `name` with the argument text `args` (the JSON
  text the family's template writes; the Python front end serialises argument objects with the
  family's `tojson`) and the call's id, if it has one (the OpenAI `tool_calls[].id`; families
  whose templates ignore ids ignore it; a tool result answers the call at its position, so
  results carry no id of their own);
* `sampled ts`: the tokens an assistant turn was sampled as, kept verbatim from the generation
  prompt to the end of turn (so a rollout is trained on exactly what the policy produced,
  including the format's in-body control tokens such as `<think>` or `<tool_call>`).

A payload of `plain` and `reasoning` is `text s` (encoded by the codec together with the text
around it) or `tokens ts` (kept verbatim, splitting the text span it sits in).

Text is `Chars` (a list of characters) throughout: every function on it is then structurally
recursive, so the kernel can evaluate renders of concrete conversations (the differential
tests do; kernel evaluation of `String` literals is far too slow here). The FFI turns the
UTF-8 strings it receives into `Chars`.

Each chat family (`Spec/Qwen.lean`, `Spec/Llama.lean`) decides which shapes it can express and
*lowers* a conversation to the turns its template writes.
-/

namespace Verified

/-- The speaker of a message. -/
inductive Role where
  | system
  | developer
  | user
  | assistant
  | tool
  deriving DecidableEq, Repr

/-- The role is `system`. -/
@[expose] def Role.isSystem : Role → Bool
  | .system => true
  | _ => false

/-- The role is `user`. -/
@[expose] def Role.isUser : Role → Bool
  | .user => true
  | _ => false

/-- A payload as written by a user: text to be encoded, or tokens kept verbatim. -/
inductive Payload where
  /-- Text, encoded by the codec with the text around it. -/
  | text (s : Chars)
  /-- Tokens kept as they are (for instance sampled by the policy). -/
  | tokens (ts : List Token)
  deriving DecidableEq, Repr

/-- One block of a message body. -/
inductive Block where
  /-- Content. -/
  | plain (p : Payload)
  /-- Reasoning ("thinking") content. -/
  | reasoning (p : Payload)
  /-- A tool call: the tool name, the argument text and the call id (the OpenAI
  `tool_calls[].id`; families whose templates ignore ids ignore it). -/
  | toolCall (name args : Chars) (id : Option Chars)
  /-- A sampled assistant turn: every token after the generation prompt, up to (not
  including) the end of turn. -/
  | sampled (ts : List Token)
  deriving DecidableEq, Repr

/-- A message: a role and a body of blocks. -/
structure Message where
  /-- Who speaks. -/
  role : Role
  /-- The body. -/
  blocks : List Block
  deriving DecidableEq, Repr

/-- A conversation: messages, tool definitions (`none`: no tools were given) and whether the
assistant generation prompt follows. -/
structure Conversation where
  /-- The messages in order. -/
  messages : List Message
  /-- The tool definitions (JSON objects, as passed to `apply_chat_template(tools=…)`). -/
  tools : Option (List Json)
  /-- Whether to append the assistant generation prompt. -/
  addGenerationPrompt : Bool
  deriving Repr

/-- A lowered payload: text (characters) or verbatim tokens. -/
inductive LPay where
  /-- Text, encoded with the text around it. -/
  | text (cs : Chars)
  /-- Tokens kept verbatim. -/
  | toks (ts : List Token)
  deriving DecidableEq, Repr

/-- The lowered form of a payload. -/
@[expose] def Payload.lower : Payload → LPay
  | .text s => .text s
  | .tokens ts => .toks ts

/-- The payload a lowered payload came from (the inverse of `Payload.lower`). -/
@[expose] def LPay.raise : LPay → Payload
  | .text cs => .text cs
  | .toks ts => .tokens ts

/-- The body a lowered content reads back as: no block for empty text (no content and empty
content render alike in the templates that write content alone), else one plain block. -/
@[expose] def keptBody : LPay → List Block
  | .text [] => []
  | q => [.plain q.raise]

/-- A lowered payload is empty (the template's `if content` is false). -/
@[expose] def LPay.isEmpty : LPay → Bool
  | .text cs => cs.isEmpty
  | .toks ts => ts.isEmpty

/-- The text of a message: the payload of its only plain block; `none` when the body is not
exactly zero or one plain block. A missing plain block is empty text. -/
@[expose] def Message.content? (m : Message) : Option LPay :=
  match m.blocks with
  | [] => some (.text [])
  | [.plain p] => some p.lower
  | _ => none

end Verified

end
