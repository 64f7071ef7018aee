module

public import Verified.Spec.Format

public section

/-!
# The Llama 3.1 family

What the official template of `meta-llama/Llama-3.1-8B-Instruct` writes, as lowering, layout
and its inverse. Every quirk reproduced here quotes the template construct it mirrors.

Turns (`LTurn`), each `'<|start_header_id|>' + role + '<|end_header_id|>\n\n' … '<|eot_id|>'`:
* `system env tools sys`: always written first: `"Environment: ipython\n"` when tools are
  given, the knowledge-cutoff and date lines (`date_string`), the tool instructions and one
  `tojson(indent=4)` block per tool when `tools_in_user_message` is false, then the first
  system message's text `| trim`;
* `userTools tools u`: with tools and `tools_in_user_message` (the default), the first user
  message: the instructions, the tool blocks, then its text `| trim`;
* `plain r p`: `message['content'] | trim` for user, system, developer and assistant
  messages (the header is `message['role']`, so a developer message is a `developer` turn);
* `call name args`: an assistant tool call as JSON text
  `'{"name": "' + name + '", "parameters": ' + arguments + '}'` (the template does not write
  the message content beside it, and refuses several calls);
* `ipython p`: a tool result under role `ipython`, `tojson`-quoted when it is a string;
* `sampled ts`: an assistant turn kept as the tokens the policy sampled.
-/

namespace Verified.Llama

open Verified

/-- The control tokens of a Llama 3.1 tokenizer. -/
structure LlamaIds where
  /-- `<|begin_of_text|>` -/
  bos : Token
  /-- `<|start_header_id|>` -/
  startHeader : Token
  /-- `<|end_header_id|>` -/
  endHeader : Token
  /-- `<|eot_id|>` -/
  eot : Token
  /-- Every other reserved id (`<|eom_id|>`, `<|python_tag|>`, the special added tokens). -/
  extra : List Token
  deriving DecidableEq, Repr

/-- Every reserved id. -/
@[expose] def LlamaIds.reserved (i : LlamaIds) : List Token :=
  [i.bos, i.startHeader, i.endHeader, i.eot] ++ i.extra

/-- The ids the proofs need: the format's control tokens are pairwise distinct. -/
@[expose] def LlamaIds.wf (i : LlamaIds) : Bool :=
  nodupB [i.bos, i.startHeader, i.endHeader, i.eot]

/-- A Llama 3.1 format instance: ids and template options. -/
structure LlamaFmt where
  /-- Control tokens. -/
  ids : LlamaIds
  /-- `date_string` (default `"26 Jul 2024"`). -/
  date : Chars
  /-- `tools_in_user_message` (default true). -/
  toolsInUser : Bool
  deriving DecidableEq, Repr

/-- The header role of a plain turn. -/
inductive LRole where
  | system
  | user
  | assistant
  | developer
  deriving DecidableEq, Repr

/-- A turn as the template writes it (owners: index of the source message). -/
inductive LTurn where
  | system (env : Bool) (tools : List Chars) (sys : LPay) (owner : Nat)
  | userTools (tools : List Chars) (u : LPay) (owner : Nat)
  | plain (r : LRole) (p : LPay) (owner : Nat)
  | call (name args : Chars) (owner : Nat)
  | ipython (p : LPay) (owner : Nat)
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the turns, and the owner of the generation prompt if one follows. -/
structure LConv where
  turns : List LTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-! ## Template text -/

/-- `"Environment: ipython\n"` -/
@[expose] def envLine : Chars := ['E', 'n', 'v', 'i', 'r', 'o', 'n', 'm', 'e', 'n', 't', ':', ' ', 'i', 'p', 'y', 't', 'h',
    'o', 'n', '\n']

/-- `"Cutting Knowledge Date: December 2023\n" + "Today Date: "` -/
@[expose] def cuttingLine : Chars :=
  ['C', 'u', 't', 't', 'i', 'n', 'g', ' ', 'K', 'n', 'o', 'w', 'l', 'e', 'd', 'g', 'e', ' ',
    'D', 'a', 't', 'e', ':', ' ', 'D', 'e', 'c', 'e', 'm', 'b', 'e', 'r', ' ', '2', '0', '2',
    '3', '\n', 'T', 'o', 'd', 'a', 'y', ' ', 'D', 'a', 't', 'e', ':', ' ']

/-- `"Cutting Knowledge Date: December 2023\n" + "Today Date: " + date_string + "\n\n"` -/
@[expose] def dateLines (date : Chars) : Chars :=
  cuttingLine ++ date ++ ['\n', '\n']

/-- `'Respond in the format {"name": …}.' + "Do not use variables.\n\n"` -/
@[expose] def respondLine : Chars :=
  ['R', 'e', 's', 'p', 'o', 'n', 'd', ' ', 'i', 'n', ' ', 't', 'h', 'e', ' ', 'f', 'o', 'r',
    'm', 'a', 't', ' ', '{', '"', 'n', 'a', 'm', 'e', '"', ':', ' ', 'f', 'u', 'n', 'c', 't',
    'i', 'o', 'n', ' ', 'n', 'a', 'm', 'e', ',', ' ', '"', 'p', 'a', 'r', 'a', 'm', 'e', 't',
    'e', 'r', 's', '"', ':', ' ', 'd', 'i', 'c', 't', 'i', 'o', 'n', 'a', 'r', 'y', ' ', 'o',
    'f', ' ', 'a', 'r', 'g', 'u', 'm', 'e', 'n', 't', ' ', 'n', 'a', 'm', 'e', ' ', 'a', 'n',
    'd', ' ', 'i', 't', 's', ' ', 'v', 'a', 'l', 'u', 'e', '}', '.', 'D', 'o', ' ', 'n', 'o',
    't', ' ', 'u', 's', 'e', ' ', 'v', 'a', 'r', 'i', 'a', 'b', 'l', 'e', 's', '.', '\n', '\n']

/-- The tool instructions of the system turn (`tools_in_user_message` false). -/
@[expose] def systemToolsIntro : Chars :=
  ['Y', 'o', 'u', ' ', 'h', 'a', 'v', 'e', ' ', 'a', 'c', 'c', 'e', 's', 's', ' ', 't', 'o',
    ' ', 't', 'h', 'e', ' ', 'f', 'o', 'l', 'l', 'o', 'w', 'i', 'n', 'g', ' ', 'f', 'u', 'n',
    'c', 't', 'i', 'o', 'n', 's', '.', ' ', 'T', 'o', ' ', 'c', 'a', 'l', 'l', ' ', 'a', ' ',
    'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ',', ' ', 'p', 'l', 'e', 'a', 's', 'e', ' ', 'r',
    'e', 's', 'p', 'o', 'n', 'd', ' ', 'w', 'i', 't', 'h', ' ', 'J', 'S', 'O', 'N', ' ', 'f',
    'o', 'r', ' ', 'a', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', ' ', 'c', 'a', 'l', 'l',
    '.'] ++ respondLine

/-- The tool instructions of the first user turn. -/
@[expose] def userToolsIntro : Chars :=
  ['G', 'i', 'v', 'e', 'n', ' ', 't', 'h', 'e', ' ', 'f', 'o', 'l', 'l', 'o', 'w', 'i', 'n',
    'g', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's', ',', ' ', 'p', 'l', 'e', 'a', 's',
    'e', ' ', 'r', 'e', 's', 'p', 'o', 'n', 'd', ' ', 'w', 'i', 't', 'h', ' ', 'a', ' ', 'J',
    'S', 'O', 'N', ' ', 'f', 'o', 'r', ' ', 'a', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n',
    ' ', 'c', 'a', 'l', 'l', ' ', 'w', 'i', 't', 'h', ' ', 'i', 't', 's', ' ', 'p', 'r', 'o',
    'p', 'e', 'r', ' ', 'a', 'r', 'g', 'u', 'm', 'e', 'n', 't', 's', ' ', 't', 'h', 'a', 't',
    ' ', 'b', 'e', 's', 't', ' ', 'a', 'n', 's', 'w', 'e', 'r', 's', ' ', 't', 'h', 'e', ' ',
    'g', 'i', 'v', 'e', 'n', ' ', 'p', 'r', 'o', 'm', 'p', 't', '.', '\n', '\n'] ++ respondLine

/-- `'{"name": "'` -/
@[expose] def callPre : Chars := ['{', '"', 'n', 'a', 'm', 'e', '"', ':', ' ', '"']

/-- `'", ' + '"parameters": '` -/
@[expose] def callSep : Chars := ['"', ',', ' ', '"', 'p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', 's', '"', ':', ' ']

/-- `"\n\n"` -/
@[expose] def nl2 : Chars := ['\n', '\n']

/-- The role is `assistant` (its turns are learned). -/
@[expose] def LRole.isAssistant : LRole → Bool
  | .assistant => true
  | _ => false

/-- The header role name. -/
@[expose] def LRole.name : LRole → Chars
  | .system => ['s', 'y', 's', 't', 'e', 'm']
  | .user => ['u', 's', 'e', 'r']
  | .assistant => ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't']
  | .developer => ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r']

/-- The tool blocks and the text after them: `tojson(indent=4) + "\n\n"` per tool. -/
@[expose] def toolBlocks (tools : List Chars) : Chars :=
  tools.flatMap fun j => j ++ nl2

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

variable (f : LlamaFmt)

/-- `'<|start_header_id|>' + role + '<|end_header_id|>\n\n'` (never learned). -/
@[expose] def header (role : Chars) (o : Nat) : List Item :=
  [ctl f.ids.startHeader o false, txt role o false, ctl f.ids.endHeader o false, txt nl2 o false]

/-- The generation prompt `'<|start_header_id|>assistant<|end_header_id|>\n\n'`. -/
@[expose] def promptItems (o : Nat) : List Item := header f ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] o

/-- The items of one turn. -/
@[expose] def turnItems : LTurn → List Item
  | .system env tools sys o =>
      header f ['s', 'y', 's', 't', 'e', 'm'] o ++
        [txt ((if env then envLine else []) ++ dateLines f.date ++
          (if env && !f.toolsInUser then systemToolsIntro ++ toolBlocks tools else [])) o false,
          pay sys o false, ctl f.ids.eot o false]
  | .userTools tools u o =>
      header f ['u', 's', 'e', 'r'] o ++
        [txt (userToolsIntro ++ toolBlocks tools) o false, pay u o false, ctl f.ids.eot o false]
  | .plain r p o =>
      let l := r.isAssistant
      header f r.name o ++ [pay p o l, ctl f.ids.eot o l]
  | .call n a o =>
      header f ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] o ++
        [txt (callPre ++ n ++ callSep ++ a ++ ['}']) o true, ctl f.ids.eot o true]
  | .ipython p o => header f ['i', 'p', 'y', 't', 'h', 'o', 'n'] o ++ [pay p o false, ctl f.ids.eot o false]
  | .sampled ts o => promptItems f o ++ [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eot o true]

/-- The items of a lowered conversation: `bos_token`, the turns, the generation prompt. -/
@[expose] def layout (q : LConv) : List Item :=
  [ctl f.ids.bos 0 false] ++ q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => promptItems f o
    | none => []

/-! ## Lowering -/

/-- `| trim` on text (token payloads are kept). -/
@[expose] def trimPay : LPay → LPay
  | .text cs => .text (trim cs)
  | p => p

/-- A tool result: `message.content | tojson` when it is text (a string is iterable). -/
@[expose] def quotePay : LPay → LPay
  | .text cs => .text (Json.quote cs)
  | p => p

/-- `'{"name": "' + name + '", "parameters": ' + arguments + '}'` back to name and
arguments. -/
@[expose] def parseCall (cs : Chars) : Option (Chars × Chars) :=
  (stripPrefix? callPre cs).bind fun r => (splitFirst callSep r).bind fun x =>
    (stripSuffix? ['}'] x.2).map fun a => (x.1, a)

/-- Lower one message after the system turn (and the tools user turn). -/
@[expose] def lowerMsg (i : Nat) (m : Message) : Option LTurn :=
  match m.role with
  | .user => m.content?.map fun p => .plain .user (trimPay p) i
  | .system => m.content?.map fun p => .plain .system (trimPay p) i
  | .tool => m.content?.map fun p => .ipython (quotePay p) i
  -- `'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'`: any role is a header
  | .developer => m.content?.map fun p => .plain .developer (trimPay p) i
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some (.sampled ts i)
      -- `'tool_calls' in message`: one call; the template does not write the content
      | [.toolCall n a _] | [.plain _, .toolCall n a _] => some (.call n a i)
      | _ => m.content?.map fun p => .plain .assistant (trimPay p) i

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgs : Nat → List Message → Option (List LTurn)
  | _, [] => some []
  | i, m :: ms => (lowerMsg i m).bind fun t => (lowerMsgs (i + 1) ms).map (t :: ·)

/-- Text that may follow tool blocks (it must not read as one more block). -/
@[expose] def afterBlocksOk : LPay → Bool
  | .text cs => cs.head? != some '{'
  | .toks _ => true

/-- Tool blocks that can be read back: each an object holding no blank line. -/
@[expose] def blocksOk (tools : List Chars) : Bool :=
  tools.all fun j => j.head? == some '{' && clearOf nl2 j

/-- A token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def payFree (res : List Token) : LPay → Bool
  | .text _ => true
  | .toks ts => allFree res ts

/-- A turn can be read back, and its token payloads hold no control token. -/
@[expose] def turnOk : LTurn → Bool
  | .system env tools sys _ =>
      payFree f.ids.reserved sys &&
        (env || tools.isEmpty) && (!f.toolsInUser || tools.isEmpty) &&
          (!(env && !f.toolsInUser) || (blocksOk tools && afterBlocksOk sys))
  | .userTools tools u _ => payFree f.ids.reserved u && blocksOk tools && afterBlocksOk u
  | .plain .assistant (.text cs) _ => (parseCall cs).isNone
  | .plain _ p _ => payFree f.ids.reserved p
  | .call n _ _ => clearOf callSep n
  | .ipython p _ => payFree f.ids.reserved p
  | .sampled ts _ => allFree f.ids.reserved ts

/-- Lower a conversation: the system turn (the first message's text if it is a system
message), the tools user turn, then every other message. -/
@[expose] def lower (c : Conversation) : Option LConv :=
  let env := c.tools.isSome
  let tools := (c.tools.getD []).map (Json.pretty 0)
  let first : Option (LPay × List Message × Nat) :=
    match c.messages with
    | m :: ms => if m.role.isSystem then m.content?.map fun p => (trimPay p, ms, 1)
        else some (.text [], m :: ms, 0)
    | [] => some (.text [], [], 0)
  first.bind fun (sys, rest, i) =>
    let sysTurn := LTurn.system env (if f.toolsInUser then [] else tools) sys 0
    let withUser : Option (List LTurn × List Message × Nat) :=
      if env && f.toolsInUser then
        match rest with
        | m :: ms => if m.role.isUser then
            m.content?.map fun p => ([sysTurn, .userTools tools (trimPay p) i], ms, i + 1)
          else none
        | [] => none
      else some ([sysTurn], rest, i)
    withUser.bind fun (head, rest, i) =>
      (lowerMsgs i rest).bind fun ts =>
        let turns := head ++ ts
        if turns.all (turnOk f) then
          some ⟨turns, if c.addGenerationPrompt then some c.messages.length else none⟩
        else none

/-! ## Reading a layout back -/

/-- The tool blocks and the text after them, from the text after the instructions. -/
@[expose] def parseBlocks (cs : Chars) : Option (List Chars × Chars) :=
  let ps := splitSeq nl2 cs
  let rest := ps.dropWhile fun p => p.head? == some '{'
  if rest.isEmpty then none else some (ps.takeWhile fun p => p.head? == some '{', joinWith nl2 rest)

/-- The body of a turn: role, the text between `<|end_header_id|>` and `<|eot_id|>`. -/
@[expose] def turnBody (s : List Sym) : Option (Chars × Chars) :=
  let r := takeText s
  match r.2 with
  | .ctrl e :: rest =>
      if e = f.ids.endHeader then
        (stripPrefix? nl2 (takeText rest).1).bind fun x =>
          if (takeText rest).2 = [.ctrl f.ids.eot] then some (r.1, x) else none
      else none
  | _ => none

/-- The system turn. -/
@[expose] def unlayoutSystem (s : List Sym) : Option LTurn :=
  (turnBody f s).bind fun (role, x) =>
    if role ≠ ['s', 'y', 's', 't', 'e', 'm'] then none else
      let (env, y) := match stripPrefix? envLine x with
        | some y => (true, y)
        | none => (false, x)
      (stripPrefix? (dateLines f.date) y).bind fun z =>
        if env && !f.toolsInUser then
          (stripPrefix? systemToolsIntro z).bind fun w => (parseBlocks w).map fun (ts, sys) =>
            .system true ts (.text sys) 0
        else some (.system env [] (.text z) 0)

/-- The tools user turn. -/
@[expose] def unlayoutUserTools (s : List Sym) : Option LTurn :=
  (turnBody f s).bind fun (role, x) =>
    if role ≠ ['u', 's', 'e', 'r'] then none else
      (stripPrefix? userToolsIntro x).bind fun w => (parseBlocks w).map fun (ts, u) =>
        .userTools ts (.text u) 0

/-- Any other turn. -/
@[expose] def unlayoutTurn (s : List Sym) : Option LTurn :=
  (turnBody f s).bind fun (role, x) =>
    if role = ['u', 's', 'e', 'r'] then some (.plain .user (.text x) 0)
    else if role = ['s', 'y', 's', 't', 'e', 'm'] then some (.plain .system (.text x) 0)
    else if role = ['i', 'p', 'y', 't', 'h', 'o', 'n'] then some (.ipython (.text x) 0)
    else if role = ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r'] then
      some (.plain .developer (.text x) 0)
    else if role = ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] then
      match parseCall x with
      | some (n, a) => some (.call n a 0)
      | none => some (.plain .assistant (.text x) 0)
    else none

/-- The turns after the system turn (and the tools user turn), and the generation prompt. -/
@[expose] def unlayoutRest : List (List Sym) → Option LConv
  | [] => some ⟨[], none⟩
  | [c] =>
      if .ctrl f.ids.startHeader :: c = syms (promptItems f 0) then some ⟨[], some 0⟩
      else (unlayoutTurn f c).map fun t => ⟨[t], none⟩
  | c :: cs => (unlayoutTurn f c).bind fun t =>
      (unlayoutRest cs).map fun q => ⟨t :: q.turns, q.prompt⟩

/-- Read a symbol stream back as a lowered conversation (owners 0). -/
@[expose] def unlayout (s : List Sym) : Option LConv :=
  let r := splitAtCtrl f.ids.startHeader s
  if r.1 ≠ [.ctrl f.ids.bos] then none else
    match r.2 with
    | c :: cs => (unlayoutSystem f c).bind fun st =>
        match st with
        | .system true _ _ _ =>
            if f.toolsInUser then
              match cs with
              | u :: cs' => (unlayoutUserTools f u).bind fun ut =>
                  (unlayoutRest f cs').map fun q => ⟨st :: ut :: q.turns, q.prompt⟩
              | [] => none
            else (unlayoutRest f cs).map fun q => ⟨st :: q.turns, q.prompt⟩
        | _ => (unlayoutRest f cs).map fun q => ⟨st :: q.turns, q.prompt⟩
    | [] => none

/-! ## Owners -/

/-- Set every owner of a turn to 0. -/
@[expose] def LTurn.erase : LTurn → LTurn
  | .system e ts s _ => .system e ts s 0
  | .userTools ts u _ => .userTools ts u 0
  | .plain r p _ => .plain r p 0
  | .call n a _ => .call n a 0
  | .ipython p _ => .ipython p 0
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0. -/
@[expose] def LConv.erase (q : LConv) : LConv :=
  ⟨q.turns.map LTurn.erase, q.prompt.map fun _ => 0⟩

/-! ## Reference ids -/

/-- Llama 3.1's tokenizer (`<|end_of_text|>`, `<|eom_id|>`, `<|python_tag|>` as other
reserved ids). -/
@[expose] def llama31Ids : LlamaIds :=
  ⟨128000, 128006, 128007, 128009, [128001, 128008, 128010]⟩

/-! ## The format -/

/-- The Llama 3.1 format as a `Format`. -/
@[expose] def format : Format where
  Lowered := LConv
  reserved := f.ids.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := LConv.erase

end Verified.Llama

end
