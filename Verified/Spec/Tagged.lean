module

public import Verified.Spec.Format

public section

/-!
# The tagged-turns structure

The structure of `lvt.families.tagged` (Phi-3, Phi-4, talkie, Kimi K2.5 / K2.6 /
K2.7-Code): every message is one turn, a role's header, the content verbatim, a footer. A
model is data (`TaggedFmt`): each role's header as parts (a control token of the vocabulary or
literal text, the template's `{role}` already substituted), the footer's control token and the
text after it, the token after the last turn of a render without a generation prompt
(Phi-3's `{% else %}{{ eos_token }}`), and for reasoning models a think block on every
assistant turn (its two tokens, whether the template keeps the reasoning, and how much of the
block the generation prompt writes). `Thm/Tagged*.lean` prove the structure's theorems once
over these parameters, under side conditions the kernel decides on an entry
(`TaggedFmt.wf`); `Spec/TaggedEntries.lean` holds the entries.

Turns (`TTurn`):
* `msg r th p`: a message of role `r`: header, the think block `th` (assistant turns of an
  entry with a block; `some (.text [])` is an empty block), the content `p`, the footer;
* `sampled ts`: an assistant turn kept as the tokens the policy sampled after the generation
  prompt.

`lower` refuses what the templates do not write (tools, tool calls, a role without a header,
reasoning where no block is written, a token payload holding a control id): the Python front
end gives the reason. The default system turn Kimi K2-Instruct and K2-Thinking insert is
stated on top of this structure, in `Spec/TaggedDefault.lean`.
-/

namespace Verified.Tagged

open Verified

/-- A part of a header: a control token, or literal text. -/
inductive Part where
  | ctrl (t : Token)
  | text (cs : Chars)
  deriving DecidableEq, Repr

/-- The symbols of a part. -/
@[expose] def Part.syms : Part → List Sym
  | .ctrl t => [.ctrl t]
  | .text cs => lit cs

/-- The symbols of a list of parts. -/
@[expose] def partsSyms (ps : List Part) : List Sym := ps.flatMap Part.syms

/-- The control tokens of a list of parts. -/
@[expose] def partsCtrls (ps : List Part) : List Token :=
  ps.flatMap fun | .ctrl t => [t] | .text _ => []

/-- A role as a number (comparisons the kernel evaluates across modules). -/
@[expose] def roleCode : Role → Nat
  | .system => 0
  | .developer => 1
  | .user => 2
  | .assistant => 3
  | .tool => 4

/-- The role is `assistant` (the role the generation prompt opens and the model learns). -/
@[expose] def isAsst (r : Role) : Bool := roleCode r == 3

/-- A tagged-turns entry. -/
structure TaggedFmt where
  /-- Each role the template writes, with its header. -/
  heads : List (Role × List Part)
  /-- The footer's control token: the end of a turn, learned on assistant turns. -/
  endTurn : Token
  /-- The text the footer writes after it (never learned). -/
  footTail : Chars
  /-- `eos_token` after the last turn of a render without a generation prompt, or none. -/
  eos : Option Token
  /-- The think block's opening and closing tokens on every assistant turn, or none. -/
  think : Option (Token × Token)
  /-- Whether the template writes the reasoning in the block (else the block is empty). -/
  keep : Bool
  /-- How many of the block's two tokens the generation prompt writes (0, 1 or 2). -/
  promptThink : Nat
  /-- Every reserved id of the tokenizer (text never encodes to them). -/
  reserved : List Token
  deriving DecidableEq, Repr

/-- A turn as the template writes it (owners: index of the source message). -/
inductive TTurn where
  | msg (r : Role) (th : Option LPay) (p : LPay) (owner : Nat)
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the turns, and the owner of the generation prompt if one
follows. -/
structure TConv where
  turns : List TTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-- The message a turn belongs to. -/
@[expose] def TTurn.owner : TTurn → Nat
  | .msg _ _ _ o => o
  | .sampled _ o => o

variable (f : TaggedFmt)

/-- The header of role `r` in a list of headers (the first entry for it). -/
@[expose] def findHead (hs : List (Role × List Part)) (r : Role) : Option (List Part) :=
  (hs.find? fun e => roleCode e.1 == roleCode r).map Prod.snd

/-- The header of a role. -/
@[expose] def headOf (r : Role) : Option (List Part) := findHead f.heads r

/-- The think block's tokens (none without a block). -/
@[expose] def thinkToks : List Token :=
  match f.think with
  | some (a, b) => [a, b]
  | none => []

/-! ## Layout -/

/-- A control item. -/
@[expose] def ctl (t : Token) (o : Nat) (l : Bool) : Item := ⟨.ctrl t, ⟨o, l⟩⟩

/-- A text item. -/
@[expose] def txt (cs : Chars) (o : Nat) (l : Bool) : Item := ⟨.text cs, ⟨o, l⟩⟩

/-- A payload item. -/
@[expose] def pay (p : LPay) (o : Nat) (l : Bool) : Item :=
  match p with
  | .text cs => ⟨.text cs, ⟨o, l⟩⟩
  | .toks ts => ⟨.toks ts, ⟨o, l⟩⟩

/-- A header part as an item (never learned). -/
@[expose] def partItem (o : Nat) : Part → Item
  | .ctrl t => ctl t o false
  | .text cs => txt cs o false

/-- A role's header (`'<|' + message['role'] + '|>'`, `'<|im_start|>' + role +
'<|im_sep|>'`, …), never learned. -/
@[expose] def headItems (r : Role) (o : Nat) : List Item :=
  ((headOf f r).getD []).map (partItem o)

/-- The footer: its control token (learned on an assistant turn, where the model ends its
turn with it), then its text where it has one (never learned). -/
@[expose] def footItems (o : Nat) (l : Bool) : List Item :=
  ctl f.endTurn o l :: if f.footTail = [] then [] else [txt f.footTail o false]

/-- An assistant turn's think block: its tokens learned where the generation prompt does not
write them, the reasoning always. -/
@[expose] def thinkItems (th : Option LPay) (o : Nat) : List Item :=
  match f.think, th with
  | some (a, b), some p => [ctl a o (f.promptThink == 0), pay p o true, ctl b o (f.promptThink < 2)]
  | _, _ => []

/-- The generation prompt: the assistant header, then the think block's tokens it writes. -/
@[expose] def promptItems (o : Nat) : List Item :=
  headItems f .assistant o ++ ((thinkToks f).take f.promptThink).map fun t => ctl t o false

/-- The items of one turn. -/
@[expose] def turnItems : TTurn → List Item
  | .msg r th p o =>
      headItems f r o ++ thinkItems f th o ++ [pay p o (isAsst r)] ++ footItems f o (isAsst r)
  | .sampled ts o => promptItems f o ++ [⟨.toks ts, ⟨o, true⟩⟩] ++ footItems f o true

/-- What follows the turns of a render without a generation prompt: `eos_token` where the
template writes it (`{% else %}{{ eos_token }}`), owned by the last turn. -/
@[expose] def eosItems (o : Nat) : List Item :=
  match f.eos with
  | some e => [ctl e o false]
  | none => []

/-- The items of a lowered conversation: the turns, then the generation prompt or
`eosItems`. -/
@[expose] def layout (q : TConv) : List Item :=
  q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => promptItems f o
    | none => eosItems f ((q.turns.getLast?.map TTurn.owner).getD 0)

/-! ## Lowering -/

/-- A token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def payFree : LPay → Bool
  | .text _ => true
  | .toks ts => allFree f.reserved ts

/-- A sampled turn holds no reserved id but the think block's tokens (the model opens and
closes its block itself). -/
@[expose] def sampledFree (ts : List Token) : Bool :=
  ts.all fun t => !isReserved f.reserved t || (thinkToks f).elem t

/-- The body of a message of role `r` (a header exists): the think block on an assistant turn
of an entry with one (the leading reasoning block's payload where the template keeps it, else
empty), then the content, one plain block or none. -/
@[expose] def lowerBody (r : Role) (i : Nat) (bs : List Block) : Option TTurn :=
  if isAsst r && f.think.isSome then
    match bs with
    | .reasoning q :: rest =>
        (Message.content? ⟨r, rest⟩).map fun p =>
          .msg r (some (if f.keep then q.lower else .text [])) p i
    | _ => (Message.content? ⟨r, bs⟩).map fun p => .msg r (some (.text [])) p i
  else (Message.content? ⟨r, bs⟩).map fun p => .msg r none p i

/-- A lowered turn's token payloads are free of control ids. -/
@[expose] def turnOk : TTurn → Bool
  | .msg _ th p _ => payFree f p && (th.map (payFree f)).getD true
  | .sampled ts _ => sampledFree f ts

/-- The turn of message `i`: an assistant message that is one sampled block is a sampled
turn, any other message its body. -/
@[expose] def lowerTurn (i : Nat) (m : Message) : Option TTurn :=
  match m.role, m.blocks with
  | .assistant, [.sampled ts] => some (TTurn.sampled ts i)
  | r, bs => lowerBody f r i bs

/-- Lower message `i`: refused for a role without a header or a token payload holding a
control id. -/
@[expose] def lowerMsg (i : Nat) (m : Message) : Option TTurn :=
  if (headOf f m.role).isNone then none else
    (lowerTurn f i m).bind fun t => if turnOk f t then some t else none

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgs : Nat → List Message → Option (List TTurn)
  | _, [] => some []
  | i, m :: ms => (lowerMsg f i m).bind fun t => (lowerMsgs (i + 1) ms).map (t :: ·)

/-- Lower a conversation (`none` with tools: the structure writes none; an empty tool list is
no tools, as the templates' `{% if tools %}` reads it). -/
@[expose] def lower (c : Conversation) : Option TConv :=
  if !(c.tools.getD []).isEmpty then none else
    (lowerMsgs f 0 c.messages).map fun ts =>
      ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩

/-! ## Reading a layout back -/

/-- A content run that ends its chunk. -/
@[expose] def readPlain (r : Role) (th : Option LPay) (s : List Sym) : Option TTurn :=
  let x := takeText s
  if x.2 = [] then some (.msg r th (.text x.1) 0) else none

/-- A turn's body after its header: the think block (assistant turns of an entry with one),
then the content up to the footer. -/
@[expose] def readBody (r : Role) (s : List Sym) : Option TTurn :=
  match f.think with
  | some (a, b) =>
      if isAsst r then
        (stripPrefix? [Sym.ctrl a] s).bind fun s1 =>
          let x := takeText s1
          (stripPrefix? [Sym.ctrl b] x.2).bind fun s2 => readPlain r (some (.text x.1)) s2
      else readPlain r none s
  | none => readPlain r none s

/-- A turn from its chunk (the symbols before its footer token): the header that starts the
chunk, then the body. -/
@[expose] def readTurn (c : List Sym) : Option TTurn :=
  f.heads.findSome? fun e => (stripPrefix? (partsSyms e.2) c).bind (readBody f e.1)

/-- The symbols of the generation prompt. -/
@[expose] def promptSyms : List Sym := syms (promptItems f 0)

/-- The symbols after the last turn of a render without a generation prompt. -/
@[expose] def eosSyms : List Sym := syms (eosItems f 0)

/-- The last chunk: the generation prompt (`some 0`) or what a render without it ends with. -/
@[expose] def readFin (a : List Sym) : Option (Option Nat) :=
  if a = promptSyms f then some (some 0) else if a = eosSyms f then some none else none

/-- The turns from the chunks between footer tokens: each chunk after the first opens with the
footer's text. -/
@[expose] def readChunks : List Sym → List (List Sym) → Option TConv
  | a, [] => (readFin f a).map fun p => ⟨[], p⟩
  | a, c :: cs => (readTurn f a).bind fun t => (stripPrefix? (lit f.footTail) c).bind fun c' =>
      (readChunks c' cs).map fun q => ⟨t :: q.turns, q.prompt⟩

/-- Read a symbol stream back as a lowered conversation (owners 0): split at the footer
token, read each chunk. -/
@[expose] def unlayout (s : List Sym) : Option TConv :=
  let r := splitAtCtrl f.endTurn s
  readChunks f r.1 r.2

/-! ## Owners -/

/-- Set a turn's owner to 0. -/
@[expose] def TTurn.erase : TTurn → TTurn
  | .msg r th p _ => .msg r th p 0
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0. -/
@[expose] def TConv.erase (q : TConv) : TConv :=
  ⟨q.turns.map TTurn.erase, q.prompt.map fun _ => 0⟩

/-! ## Side conditions an entry must meet (decided by the kernel on the record) -/

/-- Two symbol lists agree up to the end of the shorter: one is a prefix of the other. -/
@[expose] def clash : List Sym → List Sym → Bool
  | [], _ => true
  | _, [] => true
  | x :: xs, y :: ys => if x = y then clash xs ys else false

/-- Every pair of elements, in list order, satisfies `p`. -/
@[expose] def pairwiseB {α : Type} (p : α → α → Bool) : List α → Bool
  | [] => true
  | x :: xs => xs.all (p x) && pairwiseB p xs

/-- Two headers of different roles, neither a prefix of the other. -/
@[expose] def headsApart (e e' : Role × List Part) : Bool :=
  roleCode e.1 != roleCode e'.1 && !clash (partsSyms e.2) (partsSyms e'.2) &&
    !clash (partsSyms e'.2) (partsSyms e.2)

/-- Every control token the structure places. -/
@[expose] def ctrlToks : List Token :=
  f.heads.flatMap (fun e => partsCtrls e.2) ++ f.endTurn :: thinkToks f ++ f.eos.toList

/-- The side conditions of the structure's theorems, decided by the kernel on an entry:
headers of distinct roles apart (neither a prefix of the other); the footer token in no
header, think block or `eos`; the generation prompt distinct from what a render without it
ends with; the prompt writes at most the block it has; every control token reserved. -/
@[expose] def TaggedFmt.wf : Bool :=
  pairwiseB headsApart f.heads &&
    decide (∀ e ∈ f.heads, Sym.ctrl f.endTurn ∉ partsSyms e.2) &&
    decide (f.endTurn ∉ thinkToks f) && decide (f.endTurn ∉ f.eos.toList) &&
    decide (promptSyms f ≠ eosSyms f) && decide (f.promptThink ≤ (thinkToks f).length) &&
    decide (∀ t ∈ ctrlToks f, t ∈ f.reserved)

/-! ## What lowering forgets -/

/-- Content blocks as the render keeps them: no block is an empty text block. -/
@[expose] def normContent : List Block → List Block
  | [] => [.plain (.text [])]
  | bs => bs

/-- A message's blocks as the render keeps them: on an assistant turn of an entry with a think
block, a leading reasoning block the render does not write is dropped (every one where the
entry drops reasoning, an empty one where it keeps it: both write an empty block), and no
content is empty text. -/
@[expose] def normBlocks (r : Role) : List Block → List Block
  | .reasoning q :: rest =>
      if isAsst r && f.think.isSome then
        (if f.keep && q.lower != .text [] then [.reasoning q] else []) ++ normContent rest
      else .reasoning q :: rest
  | bs => normContent bs

/-- A conversation as the render keeps it (`Format.LowerInjective`'s normalisation): every
message's blocks by `normBlocks`, and an empty tool list as none. -/
@[expose] def norm (c : Conversation) : Conversation :=
  ⟨c.messages.map fun m => ⟨m.role, normBlocks f m.role m.blocks⟩,
    if (c.tools.getD []).isEmpty then none else c.tools, c.addGenerationPrompt⟩

/-- Renders of an entry extend (`Thm/TaggedPrefix.lean`): no `eos_token` after the last turn,
and every header opens with a control token (so the text before it is a closed span). -/
@[expose] def TaggedFmt.appendable : Bool :=
  f.eos.isNone && f.heads.all fun e => match partsSyms e.2 with
    | .ctrl _ :: _ => true
    | _ => false

/-! ## The format -/

/-- A tagged-turns entry as a `Format`. -/
@[expose] def format : Format where
  Lowered := TConv
  reserved := f.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := TConv.erase

end Verified.Tagged

end
