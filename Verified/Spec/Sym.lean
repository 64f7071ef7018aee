module

public import Verified.Spec.Message

public section

/-!
# Layouts: items and symbol streams

A family lays a lowered conversation out as a list of `Item`s: a control token, a piece of
text, or verbatim tokens, each annotated with the message that owns it and whether it is
learned (`Ann`). Text items are not encoded one by one: every maximal run of text between two
control tokens (or verbatim tokens) is one *span*, encoded by the codec as one string, exactly
as the template's tokenizer encodes the text between two added tokens (`Spec/Span.lean`).

The *symbol stream* of a layout (`syms`) forgets the annotations and spells text character by
character: `ctrl t`, `ch c`, `tok t`. It is what the tokens of a render determine (the parser
recovers it, `Spec/Span.lean`), and what a family's `unlayout` reads back (`Spec/Qwen.lean`,
`Spec/Llama.lean`). Splitting a stream at a symbol (`splitBy`) and the text helpers below are
the vocabulary those parsers are written in; `Thm/Sym.lean` proves their laws.
-/

namespace Verified

/-- One symbol of a layout: a control token, a character of text, or a verbatim token. -/
inductive Sym where
  | ctrl (t : Token)
  | ch (c : Char)
  | tok (t : Token)
  deriving Repr

/-- Decidable equality of symbols, written out (and exposed) so that the kernel can evaluate
comparisons of concrete symbol streams; a derived instance is opaque to importing modules. -/
@[expose] def Sym.decEq : (a b : Sym) → Decidable (a = b)
  | .ctrl x, .ctrl y => if h : x = y then .isTrue (h ▸ rfl) else .isFalse (by intro e; cases e; exact h rfl)
  | .ch x, .ch y => if h : x = y then .isTrue (h ▸ rfl) else .isFalse (by intro e; cases e; exact h rfl)
  | .tok x, .tok y => if h : x = y then .isTrue (h ▸ rfl) else .isFalse (by intro e; cases e; exact h rfl)
  | .ctrl _, .ch _ => .isFalse (by intro e; cases e)
  | .ctrl _, .tok _ => .isFalse (by intro e; cases e)
  | .ch _, .ctrl _ => .isFalse (by intro e; cases e)
  | .ch _, .tok _ => .isFalse (by intro e; cases e)
  | .tok _, .ctrl _ => .isFalse (by intro e; cases e)
  | .tok _, .ch _ => .isFalse (by intro e; cases e)

instance : DecidableEq Sym := Sym.decEq

/-- What an item of a layout carries besides its content. -/
structure Ann where
  /-- Index of the message (as the user wrote the conversation) the item belongs to. -/
  owner : Nat
  /-- Whether the tokens are learned (loss mask 1). -/
  learn : Bool
  deriving DecidableEq, Repr

/-- The content of an item. -/
inductive Piece where
  | ctrl (t : Token)
  | text (cs : Chars)
  | toks (ts : List Token)
  deriving DecidableEq, Repr

/-- An item of a layout. -/
structure Item where
  /-- Content. -/
  piece : Piece
  /-- Owner and loss bit. -/
  ann : Ann
  deriving DecidableEq, Repr

/-- The symbols of a piece. -/
@[expose] def Piece.syms : Piece → List Sym
  | .ctrl t => [.ctrl t]
  | .text cs => cs.map .ch
  | .toks ts => ts.map .tok

/-- The symbol stream of a layout. -/
@[expose] def syms (items : List Item) : List Sym :=
  items.flatMap fun i => i.piece.syms

/-- The symbol stream of a layout, each symbol with the annotation of its item. -/
@[expose] def asyms (items : List Item) : List (Sym × Ann) :=
  items.flatMap fun i => i.piece.syms.map fun s => (s, i.ann)

/-- A character symbol. -/
@[expose] def Sym.isCh : Sym → Bool
  | .ch _ => true
  | _ => false

/-- A verbatim-token symbol. -/
@[expose] def Sym.isTok : Sym → Bool
  | .tok _ => true
  | _ => false

/-- A verbatim-token item (even an empty one). -/
@[expose] def Piece.isToks : Piece → Bool
  | .toks _ => true
  | _ => false

/-- The layout has no verbatim-token item: all its payloads are text. Stated on items, not
symbols: an empty token payload has no symbol, yet a parser cannot tell it from empty text. -/
@[expose] def textOnly (items : List Item) : Bool :=
  items.all fun i => !i.piece.isToks

/-- The control tokens of a symbol stream, in order. -/
@[expose] def ctrls (s : List Sym) : List Token :=
  s.filterMap fun | .ctrl t => some t | _ => none

/-- The characters of a symbol stream. -/
@[expose] def chars (s : List Sym) : Chars :=
  s.filterMap fun | .ch c => some c | _ => none

/-- Text as symbols. -/
@[expose] def lit (cs : Chars) : List Sym := cs.map .ch

/-! ## Splitting at a predicate -/

/-- Split a list at the elements satisfying `p`: the run before the first such element, then
each such element with the run that follows it. -/
@[expose] def splitBy {α : Type} (p : α → Bool) : List α → List α × List (α × List α)
  | [] => ([], [])
  | x :: xs =>
      let r := splitBy p xs
      if p x then ([], (x, r.1) :: r.2) else (x :: r.1, r.2)

/-- The inverse of `splitBy`. -/
@[expose] def joinBy {α : Type} (r : List α × List (α × List α)) : List α :=
  r.1 ++ r.2.flatMap fun x => x.1 :: x.2

/-- Split a symbol stream at a control token: the part before the first occurrence, then the
part after each occurrence. -/
@[expose] def splitAtCtrl (t : Token) (s : List Sym) : List Sym × List (List Sym) :=
  let r := splitBy (fun x => x == .ctrl t) s
  (r.1, r.2.map Prod.snd)

/-! ## Text helpers -/

/-- The maximal prefix of characters, and the rest. -/
@[expose] def takeText : List Sym → Chars × List Sym
  | .ch c :: s => let r := takeText s; (c :: r.1, r.2)
  | s => ([], s)

/-- `stripPrefix? p l` is `some r` when `l = p ++ r`. -/
@[expose] def stripPrefix? {α : Type} [DecidableEq α] : List α → List α → Option (List α)
  | [], l => some l
  | _ :: _, [] => none
  | a :: p, b :: l => if a = b then stripPrefix? p l else none

/-- `stripSuffix? p l` is `some r` when `l = r ++ p`. -/
@[expose] def stripSuffix? {α : Type} [DecidableEq α] (p l : List α) : Option (List α) :=
  (stripPrefix? p.reverse l.reverse).map List.reverse

/-- `splitFirst sep l` splits `l` at the first occurrence of `sep`:
`some (a, b)` with `l = a ++ sep ++ b` and no earlier occurrence. -/
@[expose] def splitFirst {α : Type} [DecidableEq α] (sep : List α) : List α → Option (List α × List α)
  | [] => if sep = [] then some ([], []) else none
  | x :: l =>
      match stripPrefix? sep (x :: l) with
      | some r => some ([], r)
      | none => (splitFirst sep l).map fun r => (x :: r.1, r.2)

/-- `sep` occurs in `a ++ sep` only at the end: then `splitFirst sep (a ++ sep ++ b)` is
`(a, b)` whatever `b` is (`Thm/Sym.lean`). The decidable side condition under which a payload
followed by a literal can be read back. -/
@[expose] def clearOf {α : Type} [DecidableEq α] (sep a : List α) : Bool :=
  splitFirst sep (a ++ sep) == some (a, [])

/-- Split text at every occurrence of a character. -/
@[expose] def splitChar (c : Char) : Chars → List Chars
  | [] => [[]]
  | x :: l =>
      let r := splitChar c l
      if x = c then [] :: r else
        match r with
        | g :: gs => (x :: g) :: gs
        | [] => [[x]]

/-- Join pieces with a separator. -/
@[expose] def joinWith {α : Type} (sep : List α) : List (List α) → List α
  | [] => []
  | [x] => x
  | x :: xs => x ++ sep ++ joinWith sep xs

/-- Split at every occurrence of a separator (at most `n` splits). -/
@[expose] def splitSeqAux {α : Type} [DecidableEq α] (sep : List α) : Nat → List α → List (List α)
  | 0, l => [l]
  | n + 1, l =>
      match splitFirst sep l with
      | some r => r.1 :: splitSeqAux sep n r.2
      | none => [l]

/-- Split at every occurrence of a (non-empty) separator. -/
@[expose] def splitSeq {α : Type} [DecidableEq α] (sep l : List α) : List (List α) :=
  splitSeqAux sep l.length l

/-- Parse the pieces between occurrences of a delimiter: each piece with `one`, which returns
a value and the rest of the piece; the rest must be `between` for every piece but the last
and `final` for the last. -/
@[expose] def parsePieces {α : Type} (one : List Sym → Option (α × List Sym))
    (between final : List Sym) : List (List Sym) → Option (List α)
  | [] => none
  | [p] => (one p).bind fun r => if r.2 = final then some [r.1] else none
  | p :: ps => (one p).bind fun r =>
      if r.2 = between then (parsePieces one between final ps).map (r.1 :: ·) else none

/-- The pieces a list of values is written as: each value's symbols, then `between` (`final`
after the last). -/
@[expose] def piecesOf {α : Type} (g : α → List Sym) (between final : List Sym) :
    List α → List (List Sym)
  | [] => []
  | [a] => [g a ++ final]
  | a :: as => (g a ++ between) :: piecesOf g between final as

/-- No element occurs twice (a decidable `Nodup` the kernel can evaluate). -/
@[expose] def nodupB : List Nat → Bool
  | [] => true
  | x :: xs => !xs.elem x && nodupB xs

/-- Python's `str.isspace`, which Jinja's `trim` (`str.strip()`) strips. -/
@[expose] def isPySpace (c : Char) : Bool :=
  let n := c.toNat
  (9 ≤ n && n ≤ 13) || (28 ≤ n && n ≤ 32) || n == 0x85 || n == 0xA0 || n == 0x1680 ||
    (0x2000 ≤ n && n ≤ 0x200A) || n == 0x2028 || n == 0x2029 || n == 0x202F ||
    n == 0x205F || n == 0x3000

/-- Jinja's `| trim`: strip Python whitespace at both ends. -/
@[expose] def trim (cs : Chars) : Chars :=
  ((cs.dropWhile isPySpace).reverse.dropWhile isPySpace).reverse

/-- Python's `s.lstrip(c)`. -/
@[expose] def lstripChar (c : Char) (cs : Chars) : Chars :=
  cs.dropWhile (· == c)

/-- Python's `s.strip(c)`. -/
@[expose] def stripChar (c : Char) (cs : Chars) : Chars :=
  ((cs.dropWhile (· == c)).reverse.dropWhile (· == c)).reverse

end Verified

end
