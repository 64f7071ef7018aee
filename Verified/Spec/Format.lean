module

public import Verified.Spec.Message

public section

/-!
# Chat formats as data

A chat format is data: BOS pieces, a header and a footer per role, an opening and a closing
delimiter per block kind, and a separator between a tool call's name and its arguments.
A piece is a control token or a literal string. `ChatFormat` is the user-facing form
(`Format Piece`); `EncFormat` (`Format Token`) is the *pre-encoded* form, with every literal
piece already encoded by the codec, which is what the render function, the parser and the FFI
run on.

`EncFormat.WellFormed` is a decidable predicate (a `Bool` function, transliterated in Python
and checked when a format is instantiated from a real tokenizer) capturing what the round-trip
proofs need: every delimiter that can follow a payload starts with a reserved token, headers
of distinct roles and block openers are prefix-incomparable, and the assistant has a non-empty
end of turn. The generation prompt is the assistant header.
-/

namespace Verified

/-- The kind of a block. -/
inductive BlockKind where
  | plain
  | reasoning
  | toolCall
  deriving DecidableEq, Repr

/-- Block kinds in the order the parser tries their opening delimiters. -/
@[expose] def BlockKind.all : List BlockKind := [.reasoning, .toolCall, .plain]

/-- The kind of a block. -/
@[expose] def Block.kind {α : Type} : Block α → BlockKind
  | .plain _ => .plain
  | .reasoning _ => .reasoning
  | .toolCall _ _ => .toolCall

/-- A piece of a delimiter: a control token, or literal text encoded by the codec. -/
inductive Piece where
  /-- A control token, by id. -/
  | ctrl (t : Token)
  /-- Literal text. -/
  | lit (s : String)
  deriving DecidableEq, Repr

/-- A chat format over delimiter elements of type `π`. -/
structure Format (π : Type) where
  /-- The control tokens that text must never produce. -/
  reserved : List Token
  /-- Emitted once at the start of every render. -/
  bos : List π
  /-- Opens a message of the given role; empty means the role is not supported. -/
  header : Role → List π
  /-- Closes a message of the given role; its first token is the end of turn. -/
  footer : Role → List π
  /-- Opens a block of the given kind; empty for a bare block (or an unsupported kind). -/
  blockOpen : BlockKind → List π
  /-- Closes a block of the given kind. -/
  blockClose : BlockKind → List π
  /-- Separates a tool call's name from its arguments; empty means the name is not rendered
  separately (the format expects it inside the argument text). -/
  toolSep : List π

/-- A format with literal pieces: what users and the shipped formats write. -/
abbrev ChatFormat := Format Piece

/-- A pre-encoded format: every delimiter is a token list. -/
abbrev EncFormat := Format Token

/-- The tokens of one piece. -/
@[expose] def Piece.toTokens (codec : Codec) : Piece → List Token
  | .ctrl t => [t]
  | .lit s => codec.encode s

/-- The tokens of a list of pieces. -/
@[expose] def Piece.encodeAll (codec : Codec) (ps : List Piece) : List Token :=
  ps.flatMap (Piece.toTokens codec)

/-- Pre-encode every literal piece of a format with the codec. -/
@[expose] def ChatFormat.encode (codec : Codec) (f : ChatFormat) : EncFormat where
  reserved := f.reserved
  bos := Piece.encodeAll codec f.bos
  header r := Piece.encodeAll codec (f.header r)
  footer r := Piece.encodeAll codec (f.footer r)
  blockOpen k := Piece.encodeAll codec (f.blockOpen k)
  blockClose k := Piece.encodeAll codec (f.blockClose k)
  toolSep := Piece.encodeAll codec f.toolSep

/-- `isPrefixB a b` holds when `a` is a prefix of `b`. -/
@[expose] def isPrefixB : List Token → List Token → Bool
  | [], _ => true
  | _ :: _, [] => false
  | a :: as, b :: bs => a == b && isPrefixB as bs

/-- Neither list is a prefix of the other. -/
@[expose] def incomparable (a b : List Token) : Bool :=
  !isPrefixB a b && !isPrefixB b a

/-- The list is non-empty and its first token is reserved. -/
@[expose] def leadsReserved (reserved : List Token) : List Token → Bool
  | [] => false
  | t :: _ => isReserved reserved t

namespace Format

variable (f : EncFormat)

/-- A role is supported when its header is non-empty. -/
@[expose] def supports (r : Role) : Bool := !(f.header r).isEmpty

/-- Empty, or led by a reserved token. -/
@[expose] def guarded (d : List Token) : Bool := d.isEmpty || leadsReserved f.reserved d

/-- `d` cannot be confused with any non-empty footer or any supported header. -/
@[expose] def apartFromTurns (d : List Token) : Bool :=
  Role.all.all fun r =>
    ((f.footer r).isEmpty || incomparable d (f.footer r)) &&
    ((f.header r).isEmpty || incomparable d (f.header r))

/-- The decidable well-formedness check that the round-trip theorems assume. -/
@[expose] def wf : Bool :=
  -- every header and footer is empty or led by a reserved token
  (Role.all.all fun r => f.guarded (f.header r) && f.guarded (f.footer r)) &&
  -- the assistant is supported and has a non-empty end of turn
  f.supports .assistant && !(f.footer .assistant).isEmpty &&
  -- headers of distinct supported roles are prefix-incomparable
  (Role.all.all fun r => Role.all.all fun r' =>
    r == r' || (f.header r).isEmpty || (f.header r').isEmpty ||
      incomparable (f.header r) (f.header r')) &&
  -- every block delimiter and the tool separator is empty or led by a reserved token
  (BlockKind.all.all fun k => f.guarded (f.blockOpen k) && f.guarded (f.blockClose k)) &&
  f.guarded f.toolSep &&
  -- non-empty openers are pairwise incomparable and apart from footers and headers
  (BlockKind.all.all fun k => BlockKind.all.all fun k' =>
    k == k' || (f.blockOpen k).isEmpty || (f.blockOpen k').isEmpty ||
      incomparable (f.blockOpen k) (f.blockOpen k')) &&
  (BlockKind.all.all fun k => (f.blockOpen k).isEmpty || f.apartFromTurns (f.blockOpen k))

/-- A well-formed format: the hypothesis of the round-trip theorems. -/
@[expose] def WellFormed : Prop := f.wf = true

instance : Decidable f.WellFormed := inferInstanceAs (Decidable (f.wf = true))

/-- A block kind is usable when it has an opener, or it is plain (bare plain blocks). -/
@[expose] def hasKind (k : BlockKind) : Bool := !(f.blockOpen k).isEmpty || k == .plain

/-- Plain blocks are bare: rendered without any opener. -/
@[expose] def plainBare : Bool := (f.blockOpen .plain).isEmpty

/-- A block is valid on its own: its kind is usable, its payloads are free of reserved
tokens, a bare plain block is non-empty, and a tool name is only given when the format can
separate it from the arguments. -/
@[expose] def blockOk : Block (List Token) → Bool
  | .plain p => f.hasKind .plain && allFree f.reserved p && (!f.plainBare || !p.isEmpty)
  | .reasoning p => f.hasKind .reasoning && allFree f.reserved p
  | .toolCall n a => f.hasKind .toolCall && allFree f.reserved n && allFree f.reserved a &&
      (!f.toolSep.isEmpty || n.isEmpty)

/-- The render of the block ends with its payload (its closer is empty). -/
@[expose] def openEnd (b : Block (List Token)) : Bool := (f.blockClose b.kind).isEmpty

/-- The block starts with its payload (a bare plain block). -/
@[expose] def openStart : Block (List Token) → Bool
  | .plain _ => f.plainBare
  | _ => false

/-- Blocks are valid in sequence: each is valid, and no payload-led block follows a
payload-ended one (their payloads would merge). -/
@[expose] def blocksOk : Bool → List (Block (List Token)) → Bool
  | _, [] => true
  | afterOpen, b :: bs =>
      f.blockOk b && !(afterOpen && f.openStart b) && blocksOk (f.openEnd b) bs

/-- A message is valid: its role is supported and its blocks are valid. -/
@[expose] def msgOk (m : Message (List Token)) : Bool :=
  f.supports m.role && f.blocksOk false m.blocks

/-- A pre-encoded conversation is valid for the format. -/
@[expose] def valid (c : Conversation (List Token)) : Bool := c.messages.all f.msgOk

/-- A pre-encoded conversation is valid for the format. -/
@[expose] def Valid (c : Conversation (List Token)) : Prop := f.valid c = true

instance (c : Conversation (List Token)) : Decidable (f.Valid c) :=
  inferInstanceAs (Decidable (f.valid c = true))

end Format

end Verified

end
