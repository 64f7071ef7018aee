module

public import Verified.Spec.Token

public section

/-!
# Messages and conversations

The message AST. A conversation is a list of messages, each with a role and a body made of
blocks; a block is plain content, reasoning, or a tool call (name and argument text). The AST
is polymorphic in the payload type `α`:

* `Conversation Payload` is what users write: each payload is either `text s` (encoded by the
  codec) or `tokens ts` (kept verbatim, e.g. tokens sampled at inference time, so that training
  uses exactly what the model produced);
* `Conversation (List Token)` is the *pre-encoded* form that the render function, the parser
  and the FFI work on. `Conversation.toTokens` maps the first to the second.
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

/-- Every role, in the order the parser tries them. -/
@[expose] def Role.all : List Role := [.system, .developer, .user, .assistant, .tool]

/-- A payload as written by a user: text to be encoded, or tokens kept verbatim. -/
inductive Payload where
  /-- Text, encoded by the codec. -/
  | text (s : String)
  /-- Tokens kept as they are (for instance sampled by the policy). -/
  | tokens (ts : List Token)
  deriving DecidableEq, Repr

/-- One block of a message body. -/
inductive Block (α : Type) where
  /-- Plain content. -/
  | plain (p : α)
  /-- Reasoning ("thinking") content. -/
  | reasoning (p : α)
  /-- A tool call: the tool name and the argument text. -/
  | toolCall (name args : α)
  deriving DecidableEq, Repr

/-- A message: a role and a body of blocks. -/
structure Message (α : Type) where
  /-- Who speaks. -/
  role : Role
  /-- The body. -/
  blocks : List (Block α)
  deriving DecidableEq, Repr

/-- A conversation: messages and whether a generation prompt for the assistant follows. -/
structure Conversation (α : Type) where
  /-- The messages in order. -/
  messages : List (Message α)
  /-- Whether to append the assistant generation prompt. -/
  addGenerationPrompt : Bool
  deriving DecidableEq, Repr

/-- Apply `f` to every payload of a block. -/
@[expose] def Block.map {α β : Type} (f : α → β) : Block α → Block β
  | .plain p => .plain (f p)
  | .reasoning p => .reasoning (f p)
  | .toolCall n a => .toolCall (f n) (f a)

/-- Apply `f` to every payload of a message. -/
@[expose] def Message.map {α β : Type} (f : α → β) (m : Message α) : Message β :=
  ⟨m.role, m.blocks.map (Block.map f)⟩

/-- Apply `f` to every payload of a conversation. -/
@[expose] def Conversation.map {α β : Type} (f : α → β) (c : Conversation α) :
    Conversation β :=
  ⟨c.messages.map (Message.map f), c.addGenerationPrompt⟩

/-- The tokens of a payload: text is encoded by the codec, tokens are kept. -/
@[expose] def Payload.toTokens (codec : Codec) : Payload → List Token
  | .text s => codec.encode s
  | .tokens ts => ts

/-- The pre-encoded form of a conversation (the canonical, token-exact form). -/
@[expose] def Conversation.toTokens (codec : Codec) (c : Conversation Payload) :
    Conversation (List Token) :=
  c.map (Payload.toTokens codec)

/-- A conversation all of whose payloads are text. -/
@[expose] def Conversation.IsText (c : Conversation Payload) : Prop :=
  ∃ d : Conversation String, c = d.map Payload.text

/-- The shape of a conversation: roles and block kinds, with payloads erased. Two
conversations of equal shape have the same control-token skeleton (`no_forgery`). -/
@[expose] def Conversation.shape {α : Type} (c : Conversation α) : Conversation Unit :=
  c.map fun _ => ()

end Verified

end
