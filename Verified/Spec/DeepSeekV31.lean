module

public import Verified.Spec.DeepSeek

public section

/-!
# DeepSeek-V3.1: the DeepSeek structure's tokens with V3.1's turns

What the chat templates of DeepSeek-V3.1 write (the model repo's, as
`tencent/DeepSeek-V3.1-Terminus-W4AFP8` ships it, and llama.cpp's rewrite), as lowering, layout
and its inverse, over DeepSeek-R1's control tokens (`DsIds`: V3.1 shares the V3 vocabulary).
Every quirk reproduced here quotes the template construct it mirrors.

* The system text: every system message, joined by `'\n\n'`, right after BOS
  (`{{ bos_token }}{{ ns.system_prompt }}`), as DeepSeek-R1's `systems` and `joinSystem`.
* Turns (`VTurn`):
  - `user p`: `'<｜User｜>' + message['content']`, with no end of turn;
  - `answer headed c`: content, then `'<｜end▁of▁sentence｜>'`; after a user message only,
    the header `'<｜Assistant｜></think>'` before it (`{%- if ns.is_last_user %}`; llama.cpp's
    template writes `'<｜Assistant｜><think></think>'`: `openThink`), and nothing at all after
    tool results or another assistant message;
  - `calls headed c ks`: the header as for an answer, content, `'<｜tool▁calls▁begin｜>'`, each
    call `'<｜tool▁call▁begin｜>' + name + '<｜tool▁sep｜>' + arguments + '<｜tool▁call▁end｜>'`
    (no newline between calls: `ns.is_first` is reset per message), then
    `'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'`;
  - `result p`: `'<｜tool▁output▁begin｜>' + content + '<｜tool▁output▁end｜>'`, one per tool
    message (no wrapper around a run);
  - `sampled headed ts`: the tokens the policy sampled after the generation prompt.
* Reasoning is never written (`reasoning_content` appears nowhere in the templates).
* The generation prompt is the header, or `'<｜Assistant｜><think>'` in thinking mode, and
  only after a user message (`{%- if add_generation_prompt and ns.is_last_user and not
  ns.is_tool %}`).
* An assistant message before any user or tool message is refused: written without a header,
  its text would run into the system prompt. A developer message is refused (dropped).

The reader is the parse (`readTurns`), kept only when its layout is the input (`unlayout`), so
what it returns lays out to its input by construction; `Thm/DeepSeekV31.lean` proves that it
reads every lowered conversation back.
-/

namespace Verified.DeepSeekV31

open Verified Verified.DeepSeek

/-- A DeepSeek-V3.1 format: the ids and a template's values. -/
structure V31Fmt where
  /-- Control tokens (DeepSeek-R1's). -/
  ids : DsIds
  /-- The generation prompt opens `<think>` (the option `thinking`). -/
  thinking : Bool
  /-- The header is `'<｜Assistant｜><think></think>'` (llama.cpp's template), not
  `'<｜Assistant｜></think>'`. -/
  openThink : Bool
  deriving DecidableEq, Repr

/-- A turn as the templates write it (owners: index of the source message). -/
inductive VTurn where
  | user (p : LPay) (owner : Nat)
  | answer (headed : Bool) (content : LPay) (owner : Nat)
  | calls (headed : Bool) (content : LPay) (calls : List Call) (owner : Nat)
  | result (p : LPay) (owner : Nat)
  | sampled (headed : Bool) (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the system text and its owner, the turns, and the generation
prompt's owner if one follows. -/
structure VConv where
  system : LPay
  sysOwner : Nat
  turns : List VTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-- The previous message the templates wrote: none yet, a user message, a tool message, an
assistant message (`ns.is_last_user`, `ns.is_tool`). -/
inductive Last where
  | start
  | user
  | tool
  | asst
  deriving DecidableEq, Repr

/-- After a user message (`ns.is_last_user`). -/
@[expose] def Last.isUser : Last → Bool
  | .user => true
  | _ => false

/-- Before any user, tool or assistant message. -/
@[expose] def Last.isStart : Last → Bool
  | .start => true
  | _ => false

variable (f : V31Fmt)

/-! ## Layout -/

/-- The header of an assistant turn after a user message: `'<｜Assistant｜></think>'`, or
`'<｜Assistant｜><think></think>'` (`openThink`). -/
@[expose] def header (o : Nat) : List Item :=
  [ctl f.ids.assistant o false] ++ (if f.openThink then [ctl f.ids.think.1 o false] else []) ++
    [ctl f.ids.think.2 o false]

/-- What precedes an assistant body: the header when `headed`, else nothing. -/
@[expose] def openItems (headed : Bool) (o : Nat) : List Item :=
  if headed then header f o else []

/-- The generation prompt: `'<｜Assistant｜><think>'` in thinking mode, else the header. -/
@[expose] def genItems (o : Nat) : List Item :=
  if f.thinking then [ctl f.ids.assistant o false, ctl f.ids.think.1 o false] else header f o

/-- One call: `'<｜tool▁call▁begin｜>' + name + '<｜tool▁sep｜>' + arguments +
'<｜tool▁call▁end｜>'`. -/
@[expose] def callItems (o : Nat) (k : Call) : List Item :=
  [ctl f.ids.callBegin o true, txt k.name o true, ctl f.ids.sep o true, txt k.args o true,
    ctl f.ids.callEnd o true]

/-- The items of one turn. -/
@[expose] def turnItems : VTurn → List Item
  | .user p o => [ctl f.ids.user o false, pay p o false]
  | .answer h c o => openItems f h o ++ [pay c o true, ctl f.ids.eos o true]
  | .calls h c ks o => openItems f h o ++ [pay c o true, ctl f.ids.callsBegin o true] ++
      ks.flatMap (callItems f o) ++ [ctl f.ids.callsEnd o true, ctl f.ids.eos o true]
  | .result p o => [ctl f.ids.outputBegin o false, pay p o false, ctl f.ids.outputEnd o false]
  | .sampled h ts o =>
      (if h then genItems f o else []) ++ [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eos o true]

/-- The items of a lowered conversation: BOS, the system text, the turns, the prompt. -/
@[expose] def layout (q : VConv) : List Item :=
  [ctl f.ids.bos q.sysOwner false, pay q.system q.sysOwner false] ++
    q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => genItems f o
    | none => []

/-! ## Lowering -/

/-- The turn of an assistant message (`headed`: it follows a user message): a sampled turn,
an answer, or a call turn; reasoning is never written. -/
@[expose] def asstTurn (headed : Bool) (i : Nat) (bs : List Block) : Option VTurn :=
  match bs with
  | [.sampled ts] => some (.sampled headed ts i)
  | bs => (asstParts bs).map fun (_, c, ks) =>
      match ks with
      | [] => .answer headed c i
      | _ :: _ => .calls headed c ks i

/-- What message `i` writes after the previous message `l`: `none` when it is refused (a
developer message, which the templates drop; an assistant message before any user or tool
message, whose text would run into the system prompt), `some none` for a system message
(hoisted after BOS), else its turn and the previous message after it. -/
@[expose] def msgStep (l : Last) (i : Nat) (m : Message) : Option (Option (VTurn × Last)) :=
  match m.role with
  | .system => some none
  | .developer => none
  | .user => m.content?.map fun p => some (.user p i, .user)
  | .tool => m.content?.map fun p => some (.result p i, .tool)
  | .assistant =>
      if l.isStart then none
      else (asstTurn l.isUser i m.blocks).map fun t => some (t, .asst)

/-- Lower the messages from index `i`, `l` the previous message written: the turns and the
last message written. -/
@[expose] def lowerMsgs : Nat → Last → List Message → Option (List VTurn × Last)
  | _, l, [] => some ([], l)
  | i, l, m :: ms => (msgStep l i m).bind fun
      | none => lowerMsgs (i + 1) l ms
      | some (t, l') => (lowerMsgs (i + 1) l' ms).map fun r => (t :: r.1, r.2)

/-- A turn can be read back: token payloads hold no reserved id, a call turn has calls, and a
sampled turn holds no control token but those the model writes in an assistant body. -/
@[expose] def turnOk : VTurn → Bool
  | .user p _ => payFree f.ids.reserved p
  | .answer _ c _ => payFree f.ids.reserved c
  | .calls _ c ks _ => payFree f.ids.reserved c && !ks.isEmpty
  | .result p _ => payFree f.ids.reserved p
  | .sampled _ ts _ => ts.all fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t

/-- Lower a conversation. -/
@[expose] def lower (c : Conversation) : Option VConv :=
  let ms := c.messages
  (systems 0 ms).bind fun sys =>
    (joinSystem (sys.map Prod.fst)).bind fun s =>
      (lowerMsgs 0 .start ms).bind fun (ts, l) =>
        if payFree f.ids.reserved s && ts.all (turnOk f) then
          some ⟨s, (sys.head?.map Prod.snd).getD 0, ts,
            if c.addGenerationPrompt && l.isUser then some ms.length else none⟩
        else none

/-! ## Reading a layout back -/

/-- The calls from a `<｜tool▁call▁begin｜>` up to `<｜tool▁calls▁end｜><｜end▁of▁sentence｜>`,
and the rest. -/
@[expose] def readCalls : Nat → List Sym → Option (List Call × List Sym)
  | 0, _ => none
  | n + 1, .ctrl t :: rest =>
      if t = f.ids.callBegin then
        let r := takeText rest
        match r.2 with
        | .ctrl sp :: rest2 =>
            if sp = f.ids.sep then
              let r2 := takeText rest2
              match r2.2 with
              | .ctrl e :: rest3 =>
                  if e = f.ids.callEnd then
                    match rest3 with
                    | .ctrl a :: rest4 =>
                        if a = f.ids.callBegin then
                          (readCalls n rest3).map fun (ks, z) => (⟨r.1, r2.1⟩ :: ks, z)
                        else if a = f.ids.callsEnd then
                          match rest4 with
                          | .ctrl b :: z => if b = f.ids.eos then some ([⟨r.1, r2.1⟩], z) else none
                          | _ => none
                        else none
                    | _ => none
                  else none
              | _ => none
            else none
        | _ => none
      else none
  | _ + 1, _ => none

/-- An assistant body after its header (if any): content, then `<｜end▁of▁sentence｜>` or
`<｜tool▁calls▁begin｜>` and the calls; the turn and the rest. -/
@[expose] def body (headed : Bool) (s : List Sym) : Option (VTurn × List Sym) :=
  let r := takeText s
  match r.2 with
  | .ctrl e :: z =>
      if e = f.ids.eos then some (.answer headed (.text r.1) 0, z)
      else if e = f.ids.callsBegin then
        (readCalls f z.length z).map fun (ks, z') => (.calls headed (.text r.1) ks 0, z')
      else none
  | _ => none

/-- The rest after the header, when the stream starts with it. -/
@[expose] def afterHeader (s : List Sym) : Option (List Sym) :=
  stripPrefix? (syms (header f 0)) s

/-- One turn from the start of the stream, `l` the previous message: the turn, the message
it makes the previous one, and the rest. -/
@[expose] def readTurn (l : Last) (s : List Sym) : Option (VTurn × Last × List Sym) :=
  match s with
  | .ctrl t :: rest =>
      if t = f.ids.user then
        let r := takeText rest
        some (.user (.text r.1) 0, .user, r.2)
      else if t = f.ids.outputBegin then
        let r := takeText rest
        match r.2 with
        | .ctrl e :: z => if e = f.ids.outputEnd then some (.result (.text r.1) 0, .tool, z)
            else none
        | _ => none
      else if l.isUser then
        (afterHeader f s).bind fun z => (body f true z).map fun (t, z') => (t, .asst, z')
      else if l.isStart then none
      else (body f false s).map fun (t, z) => (t, .asst, z)
  | _ => if l.isUser || l.isStart then none
      else (body f false s).map fun (t, z) => (t, .asst, z)

/-- The turns and the generation prompt, `l` the previous message. -/
@[expose] def readTurns : Nat → Last → List Sym → Option (List VTurn × Option Nat)
  | 0, _, _ => none
  | _ + 1, _, [] => some ([], none)
  | n + 1, l, s =>
      if l.isUser && s == syms (genItems f 0) then some ([], some 0)
      else (readTurn f l s).bind fun (t, l', z) =>
        (readTurns n l' z).map fun (ts, p) => (t :: ts, p)

/-- The parse: BOS, the system text, the turns. -/
@[expose] def parseV (s : List Sym) : Option VConv :=
  match s with
  | .ctrl b :: rest =>
      if b = f.ids.bos then
        let r := takeText rest
        (readTurns f (r.2.length + 1) .start r.2).map fun (ts, p) => ⟨.text r.1, 0, ts, p⟩
      else none
  | _ => none

/-- Read a symbol stream back: the parse, kept only when it lays out to the stream. -/
@[expose] def unlayout (s : List Sym) : Option VConv :=
  (parseV f s).bind fun q => if syms (layout f q) = s then some q else none

/-! ## Owners, entries and the format -/

/-- Set every owner of a turn to 0. -/
@[expose] def VTurn.erase : VTurn → VTurn
  | .user p _ => .user p 0
  | .answer h c _ => .answer h c 0
  | .calls h c ks _ => .calls h c ks 0
  | .result p _ => .result p 0
  | .sampled h ts _ => .sampled h ts 0

/-- Set every owner to 0. -/
@[expose] def VConv.erase (q : VConv) : VConv :=
  ⟨q.system, 0, q.turns.map VTurn.erase, q.prompt.map fun _ => 0⟩

/-! ## What the render keeps (`Format.LowerInjective`'s normalisation) -/

/-- The previous message after message `m`, as lowering tracks it (a system message is hoisted,
so it leaves the previous one). -/
@[expose] def Last.after (l : Last) (m : Message) : Last :=
  match m.role with
  | .user => .user
  | .tool => .tool
  | .assistant => .asst
  | _ => l

/-- A call as the render keeps it: name and arguments (the templates write no call id). -/
@[expose] def keptCall (k : Call) : Block := .toolCall k.name k.args none

/-- A message as the render keeps it: no and empty content alike (`keptBody`); an assistant
message's reasoning dropped (never written) and its calls without ids. -/
@[expose] def normMsg (m : Message) : Message :=
  match m.role with
  | .assistant =>
      match m.blocks with
      | [.sampled _] => m
      | bs => match asstParts bs with
          | some (_, c, ks) => ⟨.assistant, keptBody c ++ ks.map keptCall⟩
          | none => m
  | _ => match m.content? with
      | some p => ⟨m.role, keptBody p⟩
      | none => m

/-- A system payload as the render keeps it: one leading system message, none for empty text. -/
@[expose] def keptSystem (p : LPay) : List Message :=
  match keptBody p with
  | [] => []
  | bs => [⟨.system, bs⟩]

/-- A conversation as the render keeps it (`norm`): every system text joined into one leading
system message (`ns.system_prompt`), the other messages as `normMsg` keeps them, no tools (the
templates write none), and the generation prompt only after a user message (the only place
it is written). -/
@[expose] def norm (c : Conversation) : Conversation :=
  ⟨(match (systems 0 c.messages).bind fun sys => joinSystem (sys.map Prod.fst) with
      | some p => keptSystem p
      | none => []) ++
    (c.messages.filter fun m => !m.role.isSystem).map normMsg, none,
    c.addGenerationPrompt && (c.messages.foldl Last.after .start).isUser⟩

/-- DeepSeek-V3.1 and V3.1-Terminus (the model repo's template), in thinking mode or not. -/
@[expose] def v31 (thinking : Bool) : V31Fmt := ⟨r1Ids, thinking, false⟩

/-- DeepSeek-V3.1 as llama.cpp's template writes it (`<think></think>` in the header). -/
@[expose] def v31LlamaCpp (thinking : Bool) : V31Fmt := ⟨r1Ids, thinking, true⟩

/-- The DeepSeek-V3.1 format as a `Format`. -/
@[expose] def format : Format where
  Lowered := VConv
  reserved := f.ids.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := VConv.erase

end Verified.DeepSeekV31

end
