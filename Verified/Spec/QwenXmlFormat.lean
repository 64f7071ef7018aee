module

public import Verified.Spec.QwenXml

public section

/-!
# The Qwen3.5 structure as a format: lowering and the checked reader

What the Qwen3.5 / Qwen3.6 / Ornith-1.0 templates do to a conversation before writing it
(`lvt.families.qwen_xml.QwenXml.lower`), and how a symbol stream is read back, over the
layout of `Spec/QwenXml.lean`:

* user, result and system texts `| trim`; a system message only first; no developer role;
  a tool result never first; no conversation without a real user query
  (`'No user query found in messages.'`);
* an assistant message's content `| trim`, its reasoning `| trim` in a think block when the
  entry's history policy keeps it (`loop.index0 > ns.last_query_index`, `preserve_thinking`,
  or every turn for Ornith), each call as its XML parameters;
* with a non-empty tool list, the tools turn with the trimmed first system text after the
  instructions when it is not empty.

How a call's JSON arguments become parameter texts (`args_value | string` or `| tojson`, the
member order, which values read back as themselves) is the entry's value typing,
`lvt.families.qwen_xml.lower_call`; it is a parameter here (`ArgsParams`), so everything
proven holds for every value writer. The reader is the parse of `unlayoutCands` confirmed by
laying the result out again (`unlayout`): what it returns lays out to its input by
construction, and `Thm/QwenXmlRead.lean` proves that it reads every lowered conversation back.
-/

namespace Verified.QwenXml

open Verified Verified.Qwen

/-- The value typing of an entry: a call's argument text to its parameters' names and written
values (`none`: the arguments are refused). -/
abbrev ArgsParams := Chars → Option (List (Chars × Chars))

/-! ## Lowering -/

/-- `| trim` on text (token payloads are kept). -/
@[expose] def trimPay : LPay → LPay
  | .text cs => .text (trim cs)
  | p => p

/-- A user message that `ns.last_query_index` counts: its trimmed content is not wrapped in
`<tool_response>` … `</tool_response>`. -/
@[expose] def isQuery (m : Message) : Bool :=
  m.role.isUser && (m.content?.map fun p => !isResponseText (trimPay p)).getD true

/-- The last query from index `i` on (`none`: none there). -/
@[expose] def lastQueryFrom : Nat → List Message → Option Nat
  | _, [] => none
  | i, m :: ms =>
      match lastQueryFrom (i + 1) ms with
      | some j => some j
      | none => if isQuery m then some i else none

/-- Each call's parameters through the value typing. -/
@[expose] def callsX (ap : ArgsParams) : List Call → Option (List XCall)
  | [] => some []
  | k :: ks => (ap k.args).bind fun ps => (callsX ap ks).map (⟨k.name, ps⟩ :: ·)

/-- A turn before tool results are grouped. -/
inductive XPre where
  | turn (t : XTurn)
  | result (p : LPay) (owner : Nat)

/-- Group consecutive tool results into one user turn. -/
@[expose] def groupX : List XPre → List XTurn
  | [] => []
  | .turn t :: ps => t :: groupX ps
  | .result p o :: ps =>
      match groupX ps with
      | .toolGroup rs :: ts => .toolGroup ((p, o) :: rs) :: ts
      | ts => .toolGroup [(p, o)] :: ts

variable (f : XmlFmt) (ap : ArgsParams)

/-- Whether an assistant turn carries its think block: `(preserve_thinking is true) or
(loop.index0 > ns.last_query_index)`; Ornith writes it in every turn. -/
@[expose] def keepsThink (lastQ i : Nat) : Bool :=
  f.history == .all || f.preserveThinking || decide (lastQ < i)

/-- Lower one message (index `i`; `lastQ` is `ns.last_query_index`). -/
@[expose] def lowerMsgX (lastQ i : Nat) (m : Message) : Option (List XPre) :=
  match m.role with
  | .developer => none
  -- `'System message must be at the beginning.'`: the first is the system turn's
  | .system => if i = 0 then some [] else none
  | .user => m.content?.map fun p => [.turn (.plain .user (trimPay p) i)]
  | .tool => if i = 0 then none else m.content?.map fun p => [.result (trimPay p) i]
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some [.turn (.sampled ts i)]
      | bs => (asstParts bs).bind fun (r, c, ks) => (callsX ap ks).map fun xs =>
          -- `content|trim`; the `'\n\n'` before the first call tests it
          let c' := trimPay c
          let think := if keepsThink f lastQ i then some (trimPay (r.getD (.text []))) else none
          [.turn (.assistant think c' (!c'.isEmpty && !xs.isEmpty) xs i)]

/-- Lower the messages from index `i`. -/
@[expose] def lowerMsgsX (lastQ : Nat) : Nat → List Message → Option (List XPre)
  | _, [] => some []
  | i, m :: ms =>
      (lowerMsgX f ap lastQ i m).bind fun a => (lowerMsgsX lastQ (i + 1) ms).map (a ++ ·)

/-- The system turn: with a non-empty tool list (`{%- if tools and tools is iterable … %}`)
the tools turn, holding the trimmed first system text when it is not empty text; else the
first system message, trimmed. -/
@[expose] def systemTurnX (ms : List Message) (tools : Option (List Json)) :
    Option (List XTurn) :=
  let given : Option (Option LPay) :=
    match ms with
    | m :: _ => if m.role.isSystem then m.content?.map fun p => some (trimPay p) else some none
    | [] => some none
  given.bind fun g =>
    match tools with
    | some (j :: js) =>
        let ls := (j :: js).map Json.compact
        match g with
        | some (.toks _) => none
        | some (.text []) => some [.toolsSystem none ls 0]
        | some p => some [.toolsSystem (some p) ls 0]
        | none => some [.toolsSystem none ls 0]
    | _ =>
        match g with
        | some p => some [.plain .system p 0]
        | none => some []

/-- A turn can be read back: Qwen's conditions on plain turns, results and sampled turns; a
tools turn's lines hold no newline and its system text is not empty; an assistant turn's
payloads are free of control ids, its calls readable, and the `'\n\n'` before the calls is
written exactly when there are calls after non-empty content. -/
@[expose] def turnOkX : XTurn → Bool
  | .plain r p o => turnOk f.base (.plain r p o)
  | .toolsSystem sys tools _ =>
      !tools.isEmpty && tools.all (fun j => !j.contains '\n') &&
        sys.all fun p => !p.isEmpty && payFree f.ids.reserved p
  | .assistant think c sep calls _ =>
      (think.all fun r => f.ids.think.isSome && payFree f.ids.reserved r) &&
        payFree f.ids.reserved c && calls.all XCall.readable &&
        sep == (!c.isEmpty && !calls.isEmpty)
  | .toolGroup rs => !rs.isEmpty && turnOk f.base (.toolGroup rs)
  | .sampled ts o => turnOk f.base (.sampled ts o)

/-- Lower a conversation (`'No messages provided.'` for none). -/
@[expose] def lowerX (c : Conversation) : Option XConv :=
  let ms := c.messages
  if ms.isEmpty then none else
  (lastQueryFrom 0 ms).bind fun lastQ =>
    (systemTurnX ms c.tools).bind fun st =>
      (lowerMsgsX f ap lastQ 0 ms).bind fun pre =>
        let ts := st ++ groupX pre
        if ts.all (turnOkX f) then
          some ⟨ts, if c.addGenerationPrompt then some ms.length else none⟩
        else none

/-! ## Reading back -/

/-- One call piece (after `<tool_call>`): the call's text and `</tool_call>`. -/
@[expose] def callPieceX (p : List Sym) : Option (XCall × List Sym) :=
  let r := takeText p
  (parseCall r.1).bind fun k =>
    match r.2 with
    | .ctrl t :: rest => if t = f.ids.callClose then some (k, rest) else none
    | _ => none

/-- Content and calls: the text before the first `<tool_call>` ends `'\n\n'` after non-empty
content, and is empty when no content precedes the calls. -/
@[expose] def contentCallsX (x : Chars) (rest : List Sym) : Option (LPay × Bool × List XCall) :=
  if rest = footerSyms f.base then some (.text x, false, [])
  else
    let r := splitAtCtrl f.ids.callOpen rest
    if r.1 ≠ [] then none else
      (parsePieces (callPieceX f) (lit ['\n']) (footerSyms f.base) r.2).bind fun ks =>
        if x = [] then some (.text [], false, ks)
        else (stripSuffix? ['\n', '\n'] x).bind fun c =>
          if c = [] then none else some (.text c, true, ks)

/-- An assistant turn after `'assistant\n'`: an optional think block, then content and calls. -/
@[expose] def unlayoutAssistantX (x : Chars) (rest : List Sym) : Option XTurn :=
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
                  (contentCallsX f z r'.2).map fun (c, sep, ks) =>
                    .assistant (some (.text think)) c sep ks 0
            else none
        | _ => none
      else (contentCallsX f x rest).map fun (c, sep, ks) => .assistant none c sep ks 0
  | _, _ => (contentCallsX f x rest).map fun (c, sep, ks) => .assistant none c sep ks 0

/-- The fixed symbols of the instructions after the tool lines: the example call and the
reminder, each `<tool_call>` a control token. -/
@[expose] def toolsFixed : List Sym :=
  [.ctrl f.ids.callOpen] ++ lit xmlExample ++ [.ctrl f.ids.callClose] ++ lit xmlReminder ++
    [.ctrl f.ids.callOpen, .ctrl f.ids.callClose]

/-- The tool lines `("\n" + line)+` (at least one: the turn exists only with tools). -/
@[expose] def toolLinesX : Chars → Option (List Chars)
  | '\n' :: l => some (splitChar '\n' l)
  | _ => none

/-- A system turn after `'system\n'`: plain, or the tools turn and its system text. -/
@[expose] def unlayoutSystemX (x : Chars) (rest : List Sym) : Option XTurn :=
  if rest = footerSyms f.base then some (.plain .system (.text x) 0)
  else (stripPrefix? (toolsFixed f) rest).bind fun r =>
    let t := takeText r
    if t.2 = footerSyms f.base then
      (stripPrefix? xmlToolsIntro x).bind fun y => (stripSuffix? xmlToolsClose y).bind fun ls =>
        (toolLinesX ls).bind fun tools => (stripPrefix? xmlReminderEnd t.1).bind fun z =>
          if z = [] then some (.toolsSystem none tools 0)
          else (stripPrefix? ['\n', '\n'] z).bind fun s =>
            if s = [] then none else some (.toolsSystem (some (.text s)) tools 0)
    else none

/-- A plain user turn or a tool group read by the Qwen structure, as a turn of this one. -/
@[expose] def ofQ : QTurn → Option XTurn
  | .plain r p o => some (.plain r p o)
  | .toolGroup rs => some (.toolGroup rs)
  | _ => none

/-- One turn, from the symbols after `<|im_start|>`. -/
@[expose] def unlayoutTurnX (s : List Sym) : Option XTurn :=
  let r := takeText s
  match stripPrefix? ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n'] r.1 with
  | some x => unlayoutAssistantX f x r.2
  | none =>
      match stripPrefix? ['s', 'y', 's', 't', 'e', 'm', '\n'] r.1 with
      | some x => unlayoutSystemX f x r.2
      | none =>
          match stripPrefix? ['u', 's', 'e', 'r'] r.1 with
          | some x => (unlayoutUser f.base x r.2).bind ofQ
          | none => none

/-- The turns (and the generation prompt) from the parts after each `<|im_start|>`. -/
@[expose] def unlayoutChunksX : List (List Sym) → Option XConv
  | [] => some ⟨[], none⟩
  | [c] =>
      if .ctrl f.ids.imStart :: c = syms (promptItems f.base 0) then some ⟨[], some 0⟩
      else (unlayoutTurnX f c).map fun t => ⟨[t], none⟩
  | c :: cs => (unlayoutTurnX f c).bind fun t =>
      (unlayoutChunksX cs).map fun q => ⟨t :: q.turns, q.prompt⟩

/-- The parse of a symbol stream (owners 0), before it is confirmed. -/
@[expose] def unlayoutCands (s : List Sym) : Option XConv :=
  let r := splitAtCtrl f.ids.imStart s
  if r.1 = [] then unlayoutChunksX f r.2 else none

/-- Read a symbol stream back: the parse, kept only when it lays out to the stream. -/
@[expose] def unlayout (s : List Sym) : Option XConv :=
  (unlayoutCands f s).bind fun q => if syms (layout f q) = s then some q else none

/-! ## Owners and the format -/

/-- Set every owner of a turn to 0. -/
@[expose] def XTurn.erase : XTurn → XTurn
  | .plain r p _ => .plain r p 0
  | .toolsSystem s ts _ => .toolsSystem s ts 0
  | .assistant t c s ks _ => .assistant t c s ks 0
  | .toolGroup rs => .toolGroup (rs.map fun r => (r.1, 0))
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0. -/
@[expose] def XConv.erase (q : XConv) : XConv :=
  ⟨q.turns.map XTurn.erase, q.prompt.map fun _ => 0⟩

/-- The Qwen3.5 structure as a `Format`, for an entry and its value typing. -/
@[expose] def formatX : Format where
  Lowered := XConv
  reserved := f.ids.reserved
  lower := lowerX f ap
  layout := layout f
  unlayout := unlayout f
  erase := XConv.erase

end Verified.QwenXml

end
