module

public import Verified.Spec.Format

public section

/-!
# Render

`renderTok f c` renders a pre-encoded conversation with a pre-encoded format into a list of
`Cell`s: one cell per token, carrying the token id, where it came from (`Src`), the index of
the message that owns it, and the loss-mask bit. The three aligned output arrays of the
Python API and the FFI are the projections `ids`, `mask` and `owner` of this list, so they
are aligned by construction.

`render fmt codec c` is the string-level render: encode the format's literal pieces and the
conversation's text payloads with the codec, then `renderTok`. Text payloads are encoded one
by one, never concatenated with delimiters, which is what makes `no_forgery` hold.

Loss-mask policy: a token is learned exactly when its message is an assistant message and
it was produced by the model: payload tokens, block delimiters (the model samples them), and
the first footer token (the end of turn). Headers, BOS, the rest of a footer and the
generation prompt are never learned.
-/

namespace Verified

/-- Where a rendered token comes from. -/
inductive Src where
  /-- The BOS pieces. -/
  | bos
  /-- A message header. -/
  | header
  /-- A block opener, closer or tool separator. -/
  | delim
  /-- A payload token. -/
  | payload
  /-- The end-of-turn token (first token of a footer). -/
  | eot
  /-- The rest of a footer. -/
  | footer
  /-- The generation prompt. -/
  | prompt
  deriving DecidableEq, Repr

/-- Tokens the model itself produces in an assistant turn: these are learned. -/
@[expose] def Src.learned : Src → Bool
  | .delim | .payload | .eot => true
  | _ => false

/-- One rendered token with its provenance, owner message index and loss-mask bit. -/
structure Cell where
  /-- Token id. -/
  tok : Token
  /-- Provenance. -/
  src : Src
  /-- Index of the owning message (the BOS belongs to message 0, the generation prompt to the
  message about to be generated). -/
  owner : Nat
  /-- Loss-mask bit. -/
  loss : Bool
  deriving DecidableEq, Repr

/-- Cells for a token list from one source. -/
@[expose] def cellsOf (src : Src) (owner : Nat) (learn : Bool) (ts : List Token) : List Cell :=
  ts.map fun t => ⟨t, src, owner, learn && src.learned⟩

namespace Format

variable (f : EncFormat)

/-- Render one block of message `i`; `learn` is whether the message is the assistant's. -/
@[expose] def renderBlock (i : Nat) (learn : Bool) : Block (List Token) → List Cell
  | .plain p =>
      cellsOf .delim i learn (f.blockOpen .plain) ++ cellsOf .payload i learn p ++
        cellsOf .delim i learn (f.blockClose .plain)
  | .reasoning p =>
      cellsOf .delim i learn (f.blockOpen .reasoning) ++ cellsOf .payload i learn p ++
        cellsOf .delim i learn (f.blockClose .reasoning)
  | .toolCall n a =>
      cellsOf .delim i learn (f.blockOpen .toolCall) ++ cellsOf .payload i learn n ++
        cellsOf .delim i learn f.toolSep ++ cellsOf .payload i learn a ++
        cellsOf .delim i learn (f.blockClose .toolCall)

/-- Render a list of blocks. -/
@[expose] def renderBlocks (i : Nat) (learn : Bool) : List (Block (List Token)) → List Cell
  | [] => []
  | b :: bs => f.renderBlock i learn b ++ renderBlocks i learn bs

/-- Render a footer: its first token is the end of turn, the rest is plain footer. (The
format argument only enables `f.renderFooter` notation.) -/
@[expose] def renderFooter (_f : EncFormat) (i : Nat) (learn : Bool) : List Token → List Cell
  | [] => []
  | t :: ts => ⟨t, .eot, i, learn⟩ :: cellsOf .footer i learn ts

/-- Render message number `i`. -/
@[expose] def renderMsg (i : Nat) (m : Message (List Token)) : List Cell :=
  let learn := m.role == .assistant
  cellsOf .header i learn (f.header m.role) ++ f.renderBlocks i learn m.blocks ++
    f.renderFooter i learn (f.footer m.role)

/-- Render messages numbered from `i`. -/
@[expose] def renderMsgs : Nat → List (Message (List Token)) → List Cell
  | _, [] => []
  | i, m :: ms => f.renderMsg i m ++ renderMsgs (i + 1) ms

/-- The generation prompt for a conversation of `n` messages: the assistant header. -/
@[expose] def renderPrompt (n : Nat) : List Cell := cellsOf .prompt n false (f.header .assistant)

/-- Render a pre-encoded conversation. -/
@[expose] def renderTok (c : Conversation (List Token)) : List Cell :=
  cellsOf .bos 0 false f.bos ++ f.renderMsgs 0 c.messages ++
    (if c.addGenerationPrompt then f.renderPrompt c.messages.length else [])

end Format

/-- Token ids of a render. -/
@[expose] def ids (cs : List Cell) : List Token := cs.map Cell.tok

/-- Loss mask of a render. -/
@[expose] def mask (cs : List Cell) : List Bool := cs.map Cell.loss

/-- Owner message indices of a render. -/
@[expose] def owners (cs : List Cell) : List Nat := cs.map Cell.owner

/-- The string-level render: pre-encode the format and the conversation with the codec,
then render. -/
@[expose] def render (fmt : ChatFormat) (codec : Codec) (c : Conversation Payload) : List Cell :=
  (fmt.encode codec).renderTok (c.toTokens codec)

/-- A text conversation is valid for a format and codec when its pre-encoded form is. -/
@[expose] def ChatFormat.Valid (fmt : ChatFormat) (codec : Codec) (c : Conversation Payload) :
    Prop :=
  (fmt.encode codec).Valid (c.toTokens codec)

end Verified

end
