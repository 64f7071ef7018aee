module

public import Verified.Spec.Sym

public section

/-!
# Encoding layouts span by span, and reading tokens back as symbols

`encodeItems codec items` is the token-level render of a layout. The symbol stream is split at
every symbol that is not a character (`splitBy`); each maximal run of characters between them
is a *span*, encoded by the codec as one string (`Codec.encodeRun`), exactly as the template's
tokenizer encodes the text between two added tokens. Control tokens and verbatim tokens are
emitted as they are, so verbatim tokens split spans.

Each rendered token is a `Cell`: the id, where it comes from (`Src`), the owner message and
the loss bit. A token of a span takes the annotation of the character its first byte belongs
to (`assign`): tokens never straddle two items unless the tokenizer merges across the seam,
and then the earlier item decides.

`decodeSyms codec reserved ts` reads a token list back as a symbol stream: it splits at the
reserved tokens, decodes each run between them to characters and keeps the run only when
re-encoding the characters gives the same tokens (`Codec.decodeRun`). So it accepts exactly
the token lists that are renders of some symbol stream (`Thm/Span.lean`: `decodeSyms_encodeSyms`
and `encodeSyms_of_decodeSyms`).
-/

namespace Verified

/-- Where a rendered token comes from. -/
inductive Src where
  /-- A control token placed by the layout. -/
  | ctrl
  /-- A token of a text span. -/
  | text
  /-- A verbatim token of a token payload. -/
  | toks
  deriving DecidableEq, Repr

/-- One rendered token: id, provenance, owner message and loss-mask bit. -/
structure Cell where
  /-- Token id. -/
  tok : Token
  /-- Provenance. -/
  src : Src
  /-- Index of the owning message. -/
  owner : Nat
  /-- Loss-mask bit. -/
  loss : Bool
  deriving DecidableEq, Repr

/-- Token ids of a render. -/
@[expose] def ids (cs : List Cell) : List Token := cs.map Cell.tok

/-- Loss mask of a render. -/
@[expose] def mask (cs : List Cell) : List Bool := cs.map Cell.loss

/-- Owner message indices of a render. -/
@[expose] def owners (cs : List Cell) : List Nat := cs.map Cell.owner

/-- Encode one span: nothing for empty text, else the codec's encoding. -/
@[expose] def Codec.encodeRun (c : Codec) (cs : Chars) : List Token :=
  if cs.isEmpty then [] else c.encode cs

/-- The token of a symbol that is not a character. -/
@[expose] def Sym.token : Sym → Token
  | .ctrl t => t
  | .tok t => t
  | .ch _ => 0

/-- The provenance of a symbol that is not a character. -/
@[expose] def Sym.src : Sym → Src
  | .ctrl _ => .ctrl
  | .tok _ => .toks
  | .ch _ => .text

/-- The token ids of a symbol stream: spans encoded whole, other symbols as they are. -/
@[expose] def encodeSyms (c : Codec) (s : List Sym) : List Token :=
  let r := splitBy (fun x => !x.isCh) s
  c.encodeRun (chars r.1) ++ r.2.flatMap fun x => x.1.token :: c.encodeRun (chars x.2)

/-- Give each token of a span the annotation of the byte it starts at (`ms` lists the
annotation of every byte of the span; `d` is used past its end). -/
@[expose] def assign (bytes : Token → List UInt8) : List Token → List Ann → Ann → List Cell
  | [], _, _ => []
  | t :: ts, ms, d =>
      let a := ms.headD d
      ⟨t, .text, a.owner, a.learn⟩ :: assign bytes ts (ms.drop (bytes t).length) d

/-- The annotation of every byte of an annotated character run. -/
@[expose] def byteAnns (run : List (Sym × Ann)) : List Ann :=
  run.flatMap fun x => (utf8 (chars [x.1])).map fun _ => x.2

/-- The cells of one annotated span. -/
@[expose] def encodeRunCells (c : Codec) (run : List (Sym × Ann)) : List Cell :=
  assign c.bytes (c.encodeRun (chars (run.map Prod.fst))) (byteAnns run)
    ((run.getLast?.map Prod.snd).getD ⟨0, false⟩)

/-- The token-level render of a layout, with provenance, owner and loss bit per token. -/
@[expose] def encodeItems (c : Codec) (items : List Item) : List Cell :=
  let r := splitBy (fun x => !x.1.isCh) (asyms items)
  encodeRunCells c r.1 ++
    r.2.flatMap fun x => ⟨x.1.1.token, x.1.1.src, x.1.2.owner, x.1.2.learn⟩ ::
      encodeRunCells c x.2

/-- Read one run of non-reserved tokens back as characters: decode the bytes, and keep the
result only when it re-encodes to the same tokens. -/
@[expose] def Codec.decodeRun (c : Codec) (u : List Token) : Option (List Sym) :=
  if u.isEmpty then some [] else
    match utf8Decode (c.decodeBytes u) with
    | none => none
    | some cs => if c.encodeRun cs == u then some (lit cs) else none

/-- Read a token list back as a symbol stream (reserved tokens become control symbols), or
`none` when some run is not the exact encoding of its text. -/
@[expose] def decodeSyms (c : Codec) (reserved : List Token) (ts : List Token) :
    Option (List Sym) :=
  let r := splitBy (isReserved reserved) ts
  match c.decodeRun r.1, r.2.mapM (fun x => (c.decodeRun x.2).map (Sym.ctrl x.1 :: ·)) with
  | some a, some bs => some (a ++ bs.flatten)
  | _, _ => none

end Verified

end
