module

public import Verified.Spec.Format
public import Verified.Spec.QwenText

public section

/-!
# The Qwen family: Qwen2.5 and Qwen3 (exact and stable)

What the official templates write (`Qwen/Qwen2.5-7B-Instruct`, and `Qwen/Qwen3-0.6B` at the
current Hugging Face revision), as lowering, layout and its inverse. Every quirk reproduced
here quotes the template construct it mirrors.

Turns (`QTurn`):
* `plain r p`: `'<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n'`
  for user messages and system messages that are not first;
* `toolsSystem sys tools`: the system turn written when tools are given: the system text (if
  any) and `'\n\n'`, the tool preamble, one `tojson` line per tool, the closing instructions
  (whose `<tool_call></tool_call>` are the control tokens, as the tokenizer reads them);
* `assistant think content sep calls`: `'<|im_start|>assistant\n'`, a think block
  `'<think>\n' + reasoning + '\n</think>\n\n'` when present, the content, each call as
  `'<tool_call>\n{"name": "' + name + '", "arguments": ' + arguments + '}\n</tool_call>'`
  preceded by `'\n'` after another call, and before the first when `sep` (the template tests
  the content before `lstrip`: `(loop.first and content) or (not loop.first)`);
* `toolGroup results`: a run of tool messages in one user turn, each result as
  `'\n<tool_response>\n' + content + '\n</tool_response>'`;
* `sampled ts`: an assistant turn kept as the tokens the policy sampled after the generation
  prompt.

Qwen2.5 has no `<tool_response>`/`<think>` added tokens: its tool-result markers are text
(`QwenIds.toolResponse = none`), and it has no reasoning. Qwen3 `exact` drops reasoning as the
template does (`loop.index0 > ns.last_query_index` and `loop.last or reasoning_content`);
`stable` writes a think block in every assistant turn (its reasoning, or empty), so turn `t`
is a prefix of turn `t + 1`.
-/

namespace Verified.Qwen

open Verified

/-- The control tokens of a Qwen tokenizer. -/
structure QwenIds where
  /-- `<|im_start|>` -/
  imStart : Token
  /-- `<|im_end|>` -/
  imEnd : Token
  /-- `<tool_call>` -/
  callOpen : Token
  /-- `</tool_call>` -/
  callClose : Token
  /-- `<tool_response>`, `</tool_response>` (Qwen3); `none` when they are text (Qwen2.5). -/
  toolResponse : Option (Token × Token)
  /-- `<think>`, `</think>` (Qwen3); `none` without reasoning support (Qwen2.5). -/
  think : Option (Token × Token)
  /-- Every other reserved id (`<|endoftext|>`, the tokenizer's special added tokens). -/
  extra : List Token
  deriving DecidableEq, Repr

/-- The history policy: how assistant reasoning is written. -/
inductive Mode where
  /-- No reasoning (`Qwen/Qwen2.5-7B-Instruct`, `Qwen/Qwen3-4B-Instruct-2507`): a reasoning
  block is refused, assistant turns are written as given. -/
  | v25
  /-- `Qwen/Qwen3-0.6B`, exactly (reasoning dropped from history as the template does). -/
  | exact
  /-- Qwen3 with a think block in every assistant turn (prefix stable). -/
  | stable
  deriving DecidableEq, Repr

/-- A Qwen format instance: ids and template options. -/
structure QwenFmt where
  /-- Control tokens. -/
  ids : QwenIds
  /-- Which template. -/
  mode : Mode
  /-- `enable_thinking` (Qwen3): when false the generation prompt holds an empty think block. -/
  enableThinking : Bool
  /-- The system text written when the conversation has none (Qwen2.5's `'You are Qwen, …'`,
  Qwen2.5-Math's `'Please reason step by step, …'`), or `none` (Qwen3 and its successors). -/
  defaultSystem : Option Chars
  /-- The generation prompt opens the think block (Qwen3-Thinking-2507:
  `'<|im_start|>assistant\n<think>\n'`); `enableThinking` is then not read. -/
  promptThink : Bool
  deriving DecidableEq, Repr

/-- A tool call as the template writes it: name and argument text. -/
structure Call where
  name : Chars
  args : Chars
  deriving DecidableEq, Repr

/-- The role of a plain turn. -/
inductive PRole where
  | system
  | user
  deriving DecidableEq, Repr

/-- A turn as the template writes it (owners: index of the source message). -/
inductive QTurn where
  | plain (r : PRole) (p : LPay) (owner : Nat)
  | toolsSystem (sys : Option LPay) (tools : List Chars) (owner : Nat)
  | assistant (think : Option LPay) (content : LPay) (sep : Bool) (calls : List Call)
      (owner : Nat)
  | toolGroup (results : List (LPay × Nat))
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the turns, and the owner of the generation prompt if one follows. -/
structure QConv where
  turns : List QTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-- Every reserved id: the format's control tokens, then the other reserved ids. -/
@[expose] def QwenIds.reserved (i : QwenIds) : List Token :=
  [i.imStart, i.imEnd, i.callOpen, i.callClose] ++
    (match i.toolResponse with | some (a, b) => [a, b] | none => []) ++
    (match i.think with | some (a, b) => [a, b] | none => []) ++ i.extra

/-- The ids the proofs need: the format's control tokens are pairwise distinct. -/
@[expose] def QwenIds.wf (i : QwenIds) : Bool :=
  nodupB ([i.imStart, i.imEnd, i.callOpen, i.callClose] ++
    (match i.toolResponse with | some (a, b) => [a, b] | none => []) ++
    (match i.think with | some (a, b) => [a, b] | none => []))

/-- The control tokens a sampled assistant turn may hold (the model writes them itself):
`<think>`, `</think>`, `<tool_call>`, `</tool_call>`. -/
@[expose] def QwenIds.bodyCtrl (i : QwenIds) (t : Token) : Bool :=
  t == i.callOpen || t == i.callClose ||
    match i.think with
    | some (a, b) => t == a || t == b
    | none => false

/-- The role name of a plain turn. -/
@[expose] def PRole.name : PRole → Chars
  | .system => ['s', 'y', 's', 't', 'e', 'm']
  | .user => ['u', 's', 'e', 'r']

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

variable (f : QwenFmt)

/-- `'<|im_end|>' + '\n'` closing a turn of message `o` (the end of turn is learned in
assistant turns). -/
@[expose] def footer (o : Nat) (l : Bool) : List Item :=
  [ctl f.ids.imEnd o l, txt ['\n'] o false]

/-- The generation prompt: `'<|im_start|>assistant\n'`, then `'<think>\n'` when the template
opens the think block (`'<|im_start|>assistant\n<think>\n'`, Qwen3-Thinking-2507), else
`'<think>\n\n</think>\n\n'` when `enable_thinking is false`. -/
@[expose] def promptItems (o : Nat) : List Item :=
  [ctl f.ids.imStart o false, txt ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n'] o false] ++
    match f.ids.think, f.promptThink, f.enableThinking with
    | some (a, _), true, _ => [ctl a o false, txt ['\n'] o false]
    | some (a, b), false, false =>
        [ctl a o false, txt ['\n', '\n'] o false, ctl b o false, txt ['\n', '\n'] o false]
    | _, _, _ => []

/-- One tool call; `sep` is the `'\n'` written before it (after content or another call). -/
@[expose] def callItems (sep : Bool) (k : Call) (o : Nat) : List Item :=
  (if sep then [txt ['\n'] o true] else []) ++
    [ctl f.ids.callOpen o true, txt (callPre ++ k.name ++ callSep ++ k.args ++ callPost) o true,
      ctl f.ids.callClose o true]

/-- The calls of a message: `'\n'` before the first only when there is content
(`(loop.first and content) or (not loop.first)`). -/
@[expose] def callsItems (first : Bool) (o : Nat) : List Call → List Item
  | [] => []
  | k :: ks => callItems f first k o ++ callsItems true o ks

/-- One tool result. -/
@[expose] def resultItems (r : LPay × Nat) : List Item :=
  match f.ids.toolResponse with
  | some (a, b) =>
      [txt ['\n'] r.2 false, ctl a r.2 false, txt ['\n'] r.2 false, pay r.1 r.2 false,
        txt ['\n'] r.2 false, ctl b r.2 false]
  | none => [txt ['\n'] r.2 false, txt respOpenText r.2 false, pay r.1 r.2 false,
      txt respCloseText r.2 false]

/-- The owner of a tool group: its first result's message. -/
@[expose] def groupOwner : List (LPay × Nat) → Nat
  | [] => 0
  | r :: _ => r.2

/-- Whether the think block of a turn is learned: not when it is the empty block that the
generation prompt already holds (`enable_thinking is false`). -/
@[expose] def thinkLearned (think : LPay) : Bool := f.enableThinking || !think.isEmpty

/-- The items of one turn. -/
@[expose] def turnItems : QTurn → List Item
  | .plain r p o => [ctl f.ids.imStart o false, txt (r.name ++ ['\n']) o false, pay p o false] ++
      footer f o false
  | .toolsSystem sys tools o =>
      [ctl f.ids.imStart o false, txt ['s', 'y', 's', 't', 'e', 'm', '\n'] o false] ++
        (match sys with
          | some p => [pay p o false, txt ['\n', '\n'] o false]
          | none => []) ++
        [txt toolsIntro o false] ++ tools.map (fun j => txt ('\n' :: j) o false) ++
        [txt toolsOutro o false, ctl f.ids.callOpen o false, ctl f.ids.callClose o false,
          txt toolsTags o false, ctl f.ids.callOpen o false, txt toolsExample o false,
          ctl f.ids.callClose o false] ++ footer f o false
  | .assistant think content sep calls o =>
      [ctl f.ids.imStart o false, txt ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n'] o false] ++
        (match think, f.ids.think with
          | some r, some (a, b) =>
              let l := thinkLearned f r
              [ctl a o l, txt ['\n'] o l, pay r o l, txt ['\n'] o l, ctl b o l,
                txt ['\n', '\n'] o l]
          | _, _ => []) ++
        [pay content o true] ++ callsItems f sep o calls ++ footer f o true
  | .toolGroup rs =>
      [ctl f.ids.imStart (groupOwner rs) false, txt ['u', 's', 'e', 'r'] (groupOwner rs) false] ++
        rs.flatMap (resultItems f) ++ footer f (groupOwner rs) false
  | .sampled ts o => promptItems f o ++ [⟨.toks ts, ⟨o, true⟩⟩] ++ footer f o true

/-- The items of a lowered conversation. -/
@[expose] def layout (q : QConv) : List Item :=
  q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => promptItems f o
    | none => []

/-! ## Lowering -/

/-- A user text that the Qwen3 template does not count as a query
(`message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')`). -/
@[expose] def isResponseText (p : LPay) : Bool :=
  match p with
  | .text cs => ['<', 't', 'o', 'o', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '>'].isPrefixOf cs && ['<', '/', 't', 'o', 'o', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '>'].isSuffixOf cs
  | .toks _ => false

/-- `ns.last_query_index`: the last user message that is a query, else the last index. -/
@[expose] def lastQuery (ms : List Message) : Nat :=
  let qs := (List.range ms.length).filter fun i =>
    match ms[i]? with
    | some m => m.role.isUser && (m.content?.map (!isResponseText ·)).getD false
    | none => false
  qs.getLast?.getD (ms.length - 1)

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

/-- `reasoning_content.strip('\n')` -/
@[expose] def stripNl : LPay → LPay
  | .text cs => .text (stripChar '\n' cs)
  | p => p

/-- `content.lstrip('\n')` -/
@[expose] def lstripNl : LPay → LPay
  | .text cs => .text (lstripChar '\n' cs)
  | p => p

/-- A turn before tool results are grouped. -/
inductive Pre where
  | turn (t : QTurn)
  | result (p : LPay) (owner : Nat)

/-- Group consecutive tool results into one turn (`messages[loop.index0 - 1].role != "tool"`
opens the user turn, `messages[loop.index0 + 1].role != "tool"` closes it). -/
@[expose] def group : List Pre → List QTurn
  | [] => []
  | .turn t :: ps => t :: group ps
  | .result p o :: ps =>
      match group ps with
      | .toolGroup rs :: ts => .toolGroup ((p, o) :: rs) :: ts
      | ts => .toolGroup [(p, o)] :: ts

/-- Lower one message (index `i` of `n`; `lastQ` is `ns.last_query_index`). The first
message, when it is a system message, is written by the system turn instead. -/
@[expose] def lowerMsg (n lastQ i : Nat) (m : Message) : Option (List Pre) :=
  match m.role with
  | .user => m.content?.map fun p => [.turn (.plain .user p i)]
  | .system => if i = 0 then some [] else m.content?.map fun p => [.turn (.plain .system p i)]
  | .tool => m.content?.map fun p => [.result p i]
  | .developer => none
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some [.turn (.sampled ts i)]
      | bs => (asstParts bs).bind fun (r, c, ks) =>
          -- the `'\n'` before the first call tests the content before `lstrip`
          let sep := !c.isEmpty && !ks.isEmpty
          let think := some (stripNl (r.getD (.text [])))
          match f.mode with
          | .v25 => if r.isSome then none else some [.turn (.assistant none c sep ks i)]
          | .stable => some [.turn (.assistant think (lstripNl c) sep ks i)]
          | .exact =>
              -- `loop.index0 > ns.last_query_index` and `(loop.last or reasoning_content)`
              if lastQ < i && (i + 1 == n || !(r.getD (.text [])).isEmpty) then
                some [.turn (.assistant think (lstripNl c) sep ks i)]
              else some [.turn (.assistant none c sep ks i)]

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgs (n lastQ : Nat) : Nat → List Message → Option (List Pre)
  | _, [] => some []
  | i, m :: ms => (lowerMsg f n lastQ i m).bind fun a => (lowerMsgs n lastQ (i + 1) ms).map (a ++ ·)

/-- The system turn: with tools, the tool preamble (after the first system message's text, or
the default system text); without tools, the first system message, or the default. -/
@[expose] def systemTurn (ms : List Message) (tools : Option (List Json)) : Option (List QTurn) :=
  let sys : Option (Option LPay) :=
    match ms with
    | m :: _ => if m.role.isSystem then m.content?.map some else some none
    | [] => some none
  sys.map fun given =>
    -- `messages[0]['role'] == 'system'` … `{%- else %}` the default system text, if any
    let s := match given with
      | some p => some p
      | none => f.defaultSystem.map LPay.text
    match tools with
    | some ts => [.toolsSystem s (ts.map Json.compact) 0]
    | none =>
        match s with
        | some p => [.plain .system p 0]
        | none => []

/-! ## Validity: what makes the layout readable back -/

/-- Whether the text of a payload satisfies `P` (token payloads always do). -/
@[expose] def textOk (P : Chars → Bool) : LPay → Bool
  | .text cs => P cs
  | .toks _ => true

/-- A token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def payFree (res : List Token) : LPay → Bool
  | .text _ => true
  | .toks ts => allFree res ts

/-- A Qwen2.5 user text that reads as a group of tool results is refused. -/
@[expose] def looksLikeResults (cs : Chars) : Bool :=
  respOpenText.isPrefixOf cs && respCloseText.isSuffixOf cs

/-- A turn can be read back: tool lines hold no newline, the system text holds no earlier tool
preamble, a call name no earlier argument separator, text tool results no earlier result
separator (Qwen2.5), and no Qwen2.5 user text reads as tool results. -/
@[expose] def turnOk : QTurn → Bool
  | .plain .user p _ =>
      payFree f.ids.reserved p &&
        (f.ids.toolResponse.isSome || textOk (fun cs => !looksLikeResults cs) p)
  | .plain .system p _ => payFree f.ids.reserved p
  | .toolsSystem sys tools _ =>
      tools.all (fun j => !j.contains '\n') &&
        match sys with
        | some p => payFree f.ids.reserved p &&
            textOk (fun cs => clearOf toolsIntro (cs ++ ['\n', '\n'])) p
        | none => true
  | .assistant think c sep calls _ =>
      (match think with
        | some r => f.ids.think.isSome && payFree f.ids.reserved r
        | none => true) &&
        payFree f.ids.reserved c && calls.all (fun k => clearOf callSep k.name) &&
        -- before calls, no separator means no content; the separator only exists before calls
        (calls.isEmpty || sep || c.isEmpty) && (!sep || !calls.isEmpty)
  | .toolGroup rs =>
      rs.all (fun r => payFree f.ids.reserved r.1) &&
        (f.ids.toolResponse.isSome ||
          (rs.dropLast.all fun r => textOk (clearOf respSepText) r.1) &&
            (rs.getLast?.all fun r => textOk (fun cs => (splitFirst respSepText cs).isNone) r.1))
  -- a sampled turn holds no control token but those the model writes in an assistant body
  | .sampled ts _ => ts.all fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t

/-- Lower a conversation. -/
@[expose] def lower (c : Conversation) : Option QConv :=
  let ms := c.messages
  (systemTurn f ms c.tools).bind fun st =>
    (lowerMsgs f ms.length (lastQuery ms) 0 ms).bind fun pre =>
      let ts := st ++ group pre
      if ts.all (turnOk f) then
        some ⟨ts, if c.addGenerationPrompt then some ms.length else none⟩
      else none

/-! ## Reading a layout back -/

/-- The footer symbols `<|im_end|>\n`. -/
@[expose] def footerSyms : List Sym := [.ctrl f.ids.imEnd, .ch '\n']

/-- `'\n{"name": "' + name + '", "arguments": ' + arguments + '}\n'` back to a call. -/
@[expose] def parseCall (cs : Chars) : Option Call :=
  (stripPrefix? callPre cs).bind fun r => (stripSuffix? callPost r).bind fun r =>
    (splitFirst callSep r).map fun x => ⟨x.1, x.2⟩

/-- One call piece (after `<tool_call>`): the call text and `</tool_call>`; returns the rest. -/
@[expose] def callPiece (p : List Sym) : Option (Call × List Sym) :=
  let r := takeText p
  (parseCall r.1).bind fun k =>
    match r.2 with
    | .ctrl t :: rest => if t = f.ids.callClose then some (k, rest) else none
    | _ => none

/-- Content and calls, from the text before the first `<tool_call>` (or the footer) and the
symbols after it. -/
@[expose] def contentCalls (x : Chars) (rest : List Sym) : Option (LPay × Bool × List Call) :=
  if rest = footerSyms f then some (.text x, false, [])
  else
    let r := splitAtCtrl f.ids.callOpen rest
    if r.1 ≠ [] then none else
      (parsePieces (callPiece f) (lit ['\n']) (footerSyms f) r.2).bind fun ks =>
        if x = [] then some (.text [], false, ks)
        else (stripSuffix? ['\n'] x).map fun c => (.text c, true, ks)

/-- An assistant turn after `'assistant\n'`. -/
@[expose] def unlayoutAssistant (x : Chars) (rest : List Sym) : Option QTurn :=
  match f.ids.think, rest with
  | some (a, b), .ctrl t :: rest' =>
      if t = a ∧ x = [] then
        let r := takeText rest'
        match r.2 with
        | .ctrl t' :: rest'' =>
            if t' = b then
              (stripPrefix? ['\n'] r.1).bind fun y => (stripSuffix? ['\n'] y).bind fun think =>
                let r' := takeText rest''
                (stripPrefix? ['\n', '\n'] r'.1).bind fun z =>
                  (contentCalls f z r'.2).map fun (c, sep, ks) =>
                    .assistant (some (.text think)) c sep ks 0
            else none
        | _ => none
      else (contentCalls f x rest).map fun (c, sep, ks) => .assistant none c sep ks 0
  | _, _ => (contentCalls f x rest).map fun (c, sep, ks) => .assistant none c sep ks 0

/-- The tool lines of the preamble: `("\n" + line)*`; `none` when the text between the
intro and the outro is not empty and does not start with `'\n'`. -/
@[expose] def toolLines : Chars → Option (List Chars)
  | [] => some []
  | c :: l => if c = '\n' then some (splitChar '\n' l) else none

/-- The fixed symbols after the preamble text: `<tool_call></tool_call> XML tags:\n<tool_call>
… </tool_call><|im_end|>\n`. -/
@[expose] def toolsTail : List Sym :=
  [.ctrl f.ids.callOpen, .ctrl f.ids.callClose] ++ lit toolsTags ++ [.ctrl f.ids.callOpen] ++
    lit toolsExample ++ [.ctrl f.ids.callClose] ++ footerSyms f

/-- A system turn after `'system\n'`: plain, or the tools turn (whose text between the
intro and the outro must be tool lines, see `toolLines`). -/
@[expose] def unlayoutSystem (x : Chars) (rest : List Sym) : Option QTurn :=
  if rest = footerSyms f then some (.plain .system (.text x) 0)
  else if rest = toolsTail f then
    (stripSuffix? toolsOutro x).bind fun y => (splitFirst toolsIntro y).bind fun r =>
      (toolLines r.2).bind fun ls =>
        if r.1 = [] then some (.toolsSystem none ls 0)
        else (stripSuffix? ['\n', '\n'] r.1).map fun sys =>
          .toolsSystem (some (.text sys)) ls 0
  else none

/-- One tool-result piece (after `<tool_response>`): `'\n' + content + '\n'` and
`</tool_response>`. -/
@[expose] def resultPiece (b : Token) (p : List Sym) : Option ((LPay × Nat) × List Sym) :=
  let r := takeText p
  match r.2 with
  | .ctrl t :: rest =>
      if t = b then
        (stripPrefix? ['\n'] r.1).bind fun y => (stripSuffix? ['\n'] y).map fun c =>
          ((.text c, 0), rest)
      else none
  | _ => none

/-- A user turn after `'user'`: a plain user turn or a group of tool results. -/
@[expose] def unlayoutUser (x : Chars) (rest : List Sym) : Option QTurn :=
  match f.ids.toolResponse with
  | some (a, b) =>
      if rest = footerSyms f then
        (stripPrefix? ['\n'] x).map fun c => .plain .user (.text c) 0
      else if x = ['\n'] then
        let r := splitAtCtrl a rest
        if r.1 ≠ [] then none else
          (parsePieces (resultPiece b) (lit ['\n']) (footerSyms f) r.2).map .toolGroup
      else none
  | none =>
      if rest = footerSyms f then
        (stripPrefix? ['\n'] x).bind fun c =>
          if looksLikeResults c then
            (stripPrefix? respOpenText c).bind fun y => (stripSuffix? respCloseText y).map fun z =>
              .toolGroup ((splitSeq respSepText z).map fun r => (.text r, 0))
          else some (.plain .user (.text c) 0)
      else none

/-- One turn, from the symbols after `<|im_start|>`. -/
@[expose] def unlayoutTurn (s : List Sym) : Option QTurn :=
  let r := takeText s
  match stripPrefix? ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n'] r.1 with
  | some x => unlayoutAssistant f x r.2
  | none =>
      match stripPrefix? ['s', 'y', 's', 't', 'e', 'm', '\n'] r.1 with
      | some x => unlayoutSystem f x r.2
      | none =>
          match stripPrefix? ['u', 's', 'e', 'r'] r.1 with
          | some x => unlayoutUser f x r.2
          | none => none

/-- The turns (and the generation prompt) from the parts after each `<|im_start|>`. -/
@[expose] def unlayoutChunks : List (List Sym) → Option QConv
  | [] => some ⟨[], none⟩
  | [c] =>
      if .ctrl f.ids.imStart :: c = syms (promptItems f 0) then some ⟨[], some 0⟩
      else (unlayoutTurn f c).map fun t => ⟨[t], none⟩
  | c :: cs => (unlayoutTurn f c).bind fun t =>
      (unlayoutChunks cs).map fun q => ⟨t :: q.turns, q.prompt⟩

/-- Read a symbol stream back as a lowered conversation (owners 0). -/
@[expose] def unlayout (s : List Sym) : Option QConv :=
  let r := splitAtCtrl f.ids.imStart s
  if r.1 = [] then unlayoutChunks f r.2 else none

/-! ## Owners -/

/-- Set every owner of a turn to 0. -/
@[expose] def QTurn.erase : QTurn → QTurn
  | .plain r p _ => .plain r p 0
  | .toolsSystem s ts _ => .toolsSystem s ts 0
  | .assistant t c s ks _ => .assistant t c s ks 0
  | .toolGroup rs => .toolGroup (rs.map fun r => (r.1, 0))
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0. -/
@[expose] def QConv.erase (q : QConv) : QConv :=
  ⟨q.turns.map QTurn.erase, q.prompt.map fun _ => 0⟩

/-! ## Reference ids -/

/-- Qwen2.5's tokenizer (`<tool_response>` and `<think>` are text). -/
@[expose] def qwen25Ids : QwenIds :=
  ⟨151644, 151645, 151657, 151658, none, none, [151643]⟩

/-- Qwen3's tokenizer. -/
@[expose] def qwen3Ids : QwenIds :=
  ⟨151644, 151645, 151657, 151658, some (151665, 151666), some (151667, 151668), [151643]⟩

/-! ## Model entries of the structure -/

/-- Qwen2.5 (`Qwen/Qwen2.5-7B-Instruct`). -/
@[expose] def qwen25 : QwenFmt := ⟨qwen25Ids, .v25, true, some defaultSystem, false⟩

/-- Qwen2.5-Math (`Qwen/Qwen2.5-Math-1.5B-Instruct`): Qwen2.5 with its own default system text. -/
@[expose] def qwen25Math : QwenFmt := ⟨qwen25Ids, .v25, true, some mathSystem, false⟩

/-- Qwen3 (`Qwen/Qwen3-0.6B`), exact or stable, with `enable_thinking`. -/
@[expose] def qwen3 (m : Mode) (thinking : Bool) : QwenFmt := ⟨qwen3Ids, m, thinking, none, false⟩

/-- Qwen3-Instruct-2507: Qwen3's tokenizer, no reasoning, no default system text. -/
@[expose] def qwen3Instruct2507 : QwenFmt := ⟨qwen3Ids, .v25, true, none, false⟩

/-- Qwen3-Thinking-2507: Qwen3 exact whose generation prompt opens `<think>\n`. -/
@[expose] def qwen3Thinking2507 (m : Mode) : QwenFmt := ⟨qwen3Ids, m, true, none, true⟩

/-! ## The format -/

/-- The Qwen format as a `Format`. -/
@[expose] def format : Format where
  Lowered := QConv
  reserved := f.ids.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := QConv.erase

end Verified.Qwen

end
