module

public import Verified.Spec.Format

public section

/-!
# The Mistral (tekken) family

What `mistral-common`'s `MistralTokenizer.encode_chat_completion` (1.13.1) writes with the
instruct tokenizers v7, v11 and v13 (`InstructTokenizerV7/V11/V13`, their request normalizers
and validators), as lowering, layout and its inverse. Every quirk reproduced here quotes the
construct it mirrors.

`<s>` (`self.start()`), then one piece per message with no separator. Turns (`MTurn`):
* `system p`: `[SYSTEM_PROMPT]` text `[/SYSTEM_PROMPT]` where the message is (v7+
  `encode_system_message`);
* `user tools p`: `[AVAILABLE_TOOLS]` + `json.dumps(tools)` + `[/AVAILABLE_TOOLS]` when this is
  the user message that receives the tools (`UserMessagePosition.last` for v7 and v11,
  `.first` for v13; the stable mode always takes the first), then `[INST]` text `[/INST]`;
* `assistant p calls`: `content.rstrip(" ")`, then the calls, then `</s>` (`eos_id`). v7:
  `[TOOL_CALLS]` + `json.dumps([{"name": …, "arguments": …, "id": …}, …])` (V2's
  `_encode_tool_calls_in_assistant_message` with V3's `_prepare_function_call`); v11: per call
  `[TOOL_CALLS]` name `[CALL_ID]` id `[ARGS]` arguments; v13: per call `[TOOL_CALLS]` name
  `[ARGS]` arguments (no id);
* `result id p`: v7 and v11 `[TOOL_RESULTS]` id `[TOOL_CONTENT]` content `[/TOOL_RESULTS]`
  (V7 `encode_tool_message`), v13 `[TOOL_RESULTS]` content `[/TOOL_RESULTS]`; the answer
  follows it directly;
* `sampled ts`: an assistant turn kept as the tokens the policy sampled, then `</s>`.

The generation prompt writes nothing: a prompt ends at `[/INST]` or `[/TOOL_RESULTS]`. Call ids
live on the calls (`Block.toolCall`'s id); v7 and v11 need one on every call, of the form
`^[a-zA-Z0-9]{9}$` (`MistralRequestValidatorV3._validate_tool_call_id`; v11 also refuses two
calls of one message with the same id), and the k-th tool message of a run of results answers
the k-th call of the assistant message before the run and writes that call's id (a result
with no call at its position is refused in v7/v11). v13 writes no id. Consecutive user or
assistant messages, which the normalizer merges with `"\n\n"`, are refused (alternation).
-/

namespace Verified.Mistral

open Verified

/-- The control tokens of a tekken tokenizer (`args`, `callId`: `[ARGS]`, `[CALL_ID]` when the
vocabulary names them; Nemo's `tekken_240718.json` does not; `toolContent`: `[TOOL_CONTENT]`,
which v7/v11 results write). -/
structure MistralIds where
  /-- `<s>` -/
  bos : Token
  /-- `</s>` -/
  eos : Token
  /-- `[INST]` -/
  inst : Token
  /-- `[/INST]` -/
  endInst : Token
  /-- `[AVAILABLE_TOOLS]` -/
  tools : Token
  /-- `[/AVAILABLE_TOOLS]` -/
  endTools : Token
  /-- `[TOOL_RESULTS]` -/
  results : Token
  /-- `[/TOOL_RESULTS]` -/
  endResults : Token
  /-- `[TOOL_CALLS]` -/
  calls : Token
  /-- `[SYSTEM_PROMPT]` -/
  sysOpen : Token
  /-- `[/SYSTEM_PROMPT]` -/
  sysClose : Token
  /-- `[ARGS]` -/
  args : Option Token
  /-- `[CALL_ID]` -/
  callId : Option Token
  /-- `[TOOL_CONTENT]` -/
  toolContent : Option Token
  /-- Every other reserved id (`[THINK]`, every special added token). -/
  extra : List Token
  deriving DecidableEq, Repr

/-- The instruct tokenizer version (`TokenizerVersion`). -/
inductive Version where
  | v7
  | v11
  | v13
  deriving DecidableEq, Repr

/-- The named control tokens. -/
@[expose] def MistralIds.named (i : MistralIds) : List Token :=
  [i.bos, i.eos, i.inst, i.endInst, i.tools, i.endTools, i.results, i.endResults, i.calls,
    i.sysOpen, i.sysClose] ++ i.args.toList ++ i.callId.toList ++ i.toolContent.toList

/-- Every reserved id. -/
@[expose] def MistralIds.reserved (i : MistralIds) : List Token := i.named ++ i.extra

/-- The ids the proofs need: the named control tokens are pairwise distinct, and the version
has the tokens it writes (`[ARGS]` for v11 and v13, `[CALL_ID]` for v11, `[TOOL_CONTENT]` for
v7 and v11). -/
@[expose] def MistralIds.wf (i : MistralIds) (v : Version) : Bool :=
  nodupB i.named &&
    match v with
    | .v7 => i.toolContent.isSome
    | .v11 => i.args.isSome && i.callId.isSome && i.toolContent.isSome
    | .v13 => i.args.isSome

/-- A Mistral format instance: ids, version and mode (`stable`: the tools before the first
user message whatever the version). -/
structure MistralFmt where
  /-- Control tokens. -/
  ids : MistralIds
  /-- `version` -/
  version : Version
  /-- The stable mode. -/
  stable : Bool
  deriving DecidableEq, Repr

/-- A call as a turn holds it: name, arguments, id (`none` in v13, which writes no id). -/
abbrev MCall := Chars × Chars × Option Chars

/-- A turn as mistral-common writes it (owners: index of the source message; a result's `id`
is the id of the call it answers, `none` in v13). -/
inductive MTurn where
  | system (p : LPay) (owner : Nat)
  | user (tools : Option Chars) (p : LPay) (owner : Nat)
  | assistant (p : LPay) (calls : List MCall) (owner : Nat)
  | result (id : Option Chars) (p : LPay) (owner : Nat)
  | sampled (ts : List Token) (owner : Nat)
  deriving DecidableEq, Repr

/-- A lowered conversation: the turns, and the owner of the generation prompt (no token). -/
structure MConv where
  turns : List MTurn
  prompt : Option Nat
  deriving DecidableEq, Repr

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

variable (f : MistralFmt)

/-- One call: `[self.TOOL_CALLS, *encode(name), self.ARGS, *encode(json.dumps(arguments))]`
(v13), with `self.CALL_ID, *encode(id)` before `self.ARGS` when the call has an id (v11
`_encode_tool_calls_in_assistant_message`; v13 lowers calls without ids). -/
@[expose] def callItems (o : Nat) (k : MCall) : List Item :=
  match f.ids.args with
  | some a =>
      [ctl f.ids.calls o true, txt k.1 o true] ++
        (match f.ids.callId, k.2.2 with
          | some c, some i => [ctl c o true, txt i o true]
          | _, _ => []) ++
        [ctl a o true, txt k.2.1 o true]
  | none => []

/-- `"s"`: `json.dumps` of a string with nothing to escape (names are `[a-zA-Z0-9_-]`, ids
`[a-zA-Z0-9]`). -/
@[expose] def quoted (s : Chars) : Chars := '"' :: s ++ ['"']

/-- `{"name": ` -/
@[expose] def jName : Chars := ['{', '"', 'n', 'a', 'm', 'e', '"', ':', ' ']
/-- `, "arguments": ` -/
@[expose] def jArgs : Chars :=
  [',', ' ', '"', 'a', 'r', 'g', 'u', 'm', 'e', 'n', 't', 's', '"', ':', ' ']
/-- `, "id": ` -/
@[expose] def jId : Chars := [',', ' ', '"', 'i', 'd', '"', ':', ' ']

/-- One call object as `json.dumps` writes V3's `_prepare_function_call`:
`{"name": …, "arguments": …, "id": …}` (the id only when there is one). -/
@[expose] def callJson (k : MCall) : Chars :=
  jName ++ quoted k.1 ++ jArgs ++ k.2.1 ++
    (match k.2.2 with
      | some i => jId ++ quoted i
      | none => []) ++ ['}']

/-- The objects, separated by `", "`. -/
@[expose] def joinObjs : List Chars → Chars
  | [] => []
  | [x] => x
  | x :: xs => x ++ [',', ' '] ++ joinObjs xs

/-- `json.dumps(prepared_tool_calls, ensure_ascii=False)` (v7). -/
@[expose] def callsJson (cs : List MCall) : Chars := '[' :: joinObjs (cs.map callJson) ++ [']']

/-- The calls of an assistant turn: v7 `[self.TOOL_CALLS, *encode(json.dumps(calls))]` (V2's
`_encode_tool_calls_in_assistant_message`), v11 and v13 one `callItems` per call. -/
@[expose] def callsItems (o : Nat) (cs : List MCall) : List Item :=
  match f.version, cs with
  | _, [] => []
  | .v7, cs => [ctl f.ids.calls o true, txt (callsJson cs) o true]
  | _, cs => cs.flatMap (callItems f o)

/-- The items of one turn. -/
@[expose] def turnItems : MTurn → List Item
  -- `tokens = [self.BEGIN_SYSTEM]` … `tokens.append(self.END_SYSTEM)`
  | .system p o => [ctl f.ids.sysOpen o false, pay p o false, ctl f.ids.sysClose o false]
  -- `[self.BEGIN_AVAILABLE_TOOLS, *tools_json_tokens, self.END_AVAILABLE_TOOLS]` then
  -- `prefix_tokens = [*tools_settings_tokens, self.BEGIN_INST]`, `suffix_tokens = [self.END_INST]`
  | .user tools p o =>
      (match tools with
        | some j => [ctl f.ids.tools o false, txt j o false, ctl f.ids.endTools o false]
        | none => []) ++
      [ctl f.ids.inst o false, pay p o false, ctl f.ids.endInst o false]
  -- content tokens, `curr_tokens += self._encode_tool_calls_in_assistant_message(message)`,
  -- `curr_tokens.append(self.tokenizer.eos_id)`
  | .assistant p calls o =>
      [pay p o true] ++ callsItems f o calls ++ [ctl f.ids.eos o true]
  -- v7/v11: `[self.BEGIN_TOOL_RESULTS, *tool_call_id_tokens, self.BEGIN_TOOL_CONTENT, *tokens,
  -- self.END_TOOL_RESULTS]`; v13: `[self.BEGIN_TOOL_RESULTS, *content_tokens,
  -- self.END_TOOL_RESULTS]`
  | .result i p o =>
      [ctl f.ids.results o false] ++
        (match i, f.ids.toolContent with
          | some x, some tc => [txt x o false, ctl tc o false]
          | _, _ => []) ++
        [pay p o false, ctl f.ids.endResults o false]
  | .sampled ts o => [⟨.toks ts, ⟨o, true⟩⟩, ctl f.ids.eos o true]

/-- The items of a lowered conversation: `self.start()` (`[self.tokenizer.bos_id]`) and the
turns; the generation prompt writes nothing. -/
@[expose] def layout (q : MConv) : List Item :=
  [ctl f.ids.bos 0 false] ++ q.turns.flatMap (turnItems f)

/-! ## Tool definitions -/

/-- `"type"` -/
@[expose] def typeKey : Chars := ['t', 'y', 'p', 'e']
/-- `"function"` -/
@[expose] def functionKey : Chars := ['f', 'u', 'n', 'c', 't', 'i', 'o', 'n']
/-- `"name"` -/
@[expose] def nameKey : Chars := ['n', 'a', 'm', 'e']
/-- `"description"` -/
@[expose] def descKey : Chars := ['d', 'e', 's', 'c', 'r', 'i', 'p', 't', 'i', 'o', 'n']
/-- `"parameters"` -/
@[expose] def paramsKey : Chars := ['p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', 's']

/-- The first member named `k`. -/
@[expose] def lookup (k : Chars) : List (Chars × Json) → Option Json
  | [] => none
  | (k', v) :: kvs => if k' = k then some v else lookup k kvs

/-- A tool as `tool.model_dump(exclude={"function": {"strict": True}})` writes it:
`{"type": "function", "function": {"name", "description" (default ""), "parameters" (default
{})}}`; `none` when it is not a function tool. -/
@[expose] def toolJson : Json → Option Json
  | .obj kvs =>
      let tyOk : Bool := match lookup typeKey kvs with
        | none => true
        | some (.str s) => s = functionKey
        | some _ => false
      match lookup functionKey kvs with
      | some (.obj fs) =>
          match lookup nameKey fs, (lookup descKey fs).getD (.str []),
              (lookup paramsKey fs).getD (.obj []) with
          | some (.str n), .str d, .obj ps =>
              if tyOk then
                some (.obj [(typeKey, .str functionKey), (functionKey,
                  .obj [(nameKey, .str n), (descKey, .str d), (paramsKey, .obj ps)])])
              else none
          | _, _, _ => none
      | _ => none
  | _ => none

/-- `json.dumps(tools, ensure_ascii=False)` of the normalised tool list. -/
@[expose] def toolsJson (ts : List Json) : Option Chars :=
  (ts.mapM toolJson).map fun js => Json.compact (.arr js)

/-! ## Lowering -/

/-- `message.content.rstrip(" ")` (`_encode_normal_content_assistant_message`) on text. -/
@[expose] def rstripSpace : LPay → LPay
  | .text cs => .text ((cs.reverse.dropWhile (·.toNat == 32)).reverse)
  | p => p

/-- The payload is empty text (`not message.content` for text). -/
@[expose] def isEmptyText : LPay → Bool
  | .text [] => true
  | _ => false

/-- `"{}"`: `_normalize_json_content` writes empty arguments so. -/
@[expose] def emptyObj : Chars := ['{', '}']

/-- The calls of an assistant body. -/
@[expose] def callsOf : List Block → Option (List MCall)
  | [] => some []
  | .toolCall n a i :: bs => (callsOf bs).map ((n, if a.isEmpty then emptyObj else a, i) :: ·)
  | _ => none

/-- Content and calls of an assistant body: an optional plain block, then calls. -/
@[expose] def bodyOf : List Block → Option (LPay × List MCall)
  | .plain p :: bs => (callsOf bs).map fun cs => (p.lower, cs)
  | bs => (callsOf bs).map fun cs => (.text [], cs)

/-- `_validate_message_order`, less the same-role pairs the normalizer merges. -/
@[expose] def allowed : Role → Role → Bool
  | .system, .user | .system, .assistant | .system, .system => true
  | .user, .assistant | .user, .system => true
  | .assistant, .user | .assistant, .tool => true
  | .tool, .assistant | .tool, .tool | .tool, .user => true
  | _, _ => false

/-- A call id v7/v11 accept: `^[a-zA-Z0-9]{9}$` (`_TOOL_CALL_ID_REGEX`). -/
@[expose] def idOk (i : Chars) : Bool := i.length == 9 && i.all Char.isAlphanum

/-- No two elements are equal. -/
@[expose] def distinct : List (Option Chars) → Bool
  | [] => true
  | x :: xs => !xs.contains x && distinct xs

/-- The calls' ids as the version needs them: v13 drops them (it writes none); v7 and v11 need
a valid id on every call (`_validate_tool_call_id`), pairwise distinct in v11 (`Duplicate tool
call id … in assistant message`). -/
@[expose] def callIds (cs : List MCall) : Option (List MCall) :=
  match f.version with
  | .v13 => some (cs.map fun k => (k.1, k.2.1, none))
  | v =>
      if cs.all (fun k => match k.2.2 with
          | some i => idOk i
          | none => false) &&
          (v != .v11 || distinct (cs.map (·.2.2)))
      then some cs else none

/-- Lower one message (`tools`: the `[AVAILABLE_TOOLS]` text when it goes here; `rid`: the id
of the call a tool message answers, if there is one at its position). -/
@[expose] def lowerMsg (tools : Option Chars) (rid : Option (Option Chars)) (i : Nat)
    (m : Message) : Option MTurn :=
  match m.role with
  | .system => m.content?.map fun p => .system p i
  | .user => m.content?.map fun p => .user tools p i
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some (.sampled ts i)
      | bs => (bodyOf bs).bind fun (p, cs) => (callIds f cs).bind fun cs =>
          -- `raise TokenizerException(f"Invalid assistant message: {message}")`
          if isEmptyText p && cs.isEmpty then none
          else some (.assistant (rstripSpace p) cs i)
  | .tool =>
      match f.version, rid with
      | .v13, _ => m.content?.map fun p => .result none p i
      -- v7/v11 write the id of the call answered (`[TOOL_RESULTS]ID[TOOL_CONTENT]`)
      | _, some (some x) => m.content?.map fun p => .result (some x) p i
      | _, _ => none
  | .developer => none

/-- A result follows a call or a result (the validator pairs results with calls). -/
@[expose] def afterCall : Option MTurn → Bool
  | some (.result _ _ _) => true
  | some (.assistant _ (_ :: _) _) => true
  | _ => false

/-- A turn's own kind is a result. -/
@[expose] def MTurn.isResult : MTurn → Bool
  | .result _ _ _ => true
  | _ => false

/-- The ids of the calls not yet answered after turn `t` (`pend`: before it): a call's, all its
calls; a result's, the rest; any other, none. -/
@[expose] def MTurn.pending (pend : List (Option Chars)) : MTurn → List (Option Chars)
  | .assistant _ cs _ => cs.map (·.2.2)
  | .result _ _ _ => pend.tail
  | _ => []

/-- Lower the messages from index `i` (`prev`: the previous role and turn; `pend`: the ids of
the calls not yet answered; `pos`: the index of the user message that receives the tools). -/
@[expose] def lowerMsgs (tools : Option Chars) (pos : Option Nat) :
    Option Role → Option MTurn → List (Option Chars) → Nat → List Message →
      Option (List MTurn)
  | _, _, _, _, [] => some []
  | prev, prevT, pend, i, m :: ms =>
      let ok : Bool := match prev with
        -- "Conversation must start with a user message or system message"
        | none => m.role = .user || m.role = .system
        | some r => allowed r m.role
      if !ok then none else
        (lowerMsg f (if pos = some i then tools else none) pend.head? i m).bind fun t =>
          if t.isResult && !afterCall prevT then none else
            (lowerMsgs tools pos (some m.role) (some t) (t.pending pend) (i + 1) ms).map
              (t :: ·)

/-- The indices of the user messages from index `i`. -/
@[expose] def userIdxs : Nat → List Message → List Nat
  | _, [] => []
  | i, m :: ms => if m.role = .user then i :: userIdxs (i + 1) ms else userIdxs (i + 1) ms

/-- The user message that receives `[AVAILABLE_TOOLS]`: `is_last` (v7, v11) or `is_first`
(v13, stable). -/
@[expose] def toolsAt (ms : List Message) : Option Nat :=
  if f.stable || f.version = .v13 then (userIdxs 0 ms).head? else (userIdxs 0 ms).getLast?

/-- A tool name mistral-common accepts: `^[a-zA-Z0-9_-]{1,64}$`. -/
@[expose] def nameOk (n : Chars) : Bool :=
  !n.isEmpty && n.length ≤ 64 && n.all fun c => c.isAlphanum || c.toNat == 95 || c.toNat == 45

/-- A token payload holds no reserved id (text is checked by the codec law). -/
@[expose] def payFree (res : List Token) : LPay → Bool
  | .text _ => true
  | .toks ts => allFree res ts

/-- The text of a JSON value at the head of `cs` and what follows it: up to the first `,`, `}`
or `]` outside strings and brackets (depth `d`; `str`, `esc`: inside a string, after a
backslash). Text that is not JSON may be cut anywhere: what is read back is then checked to
lay out as the text again. -/
@[expose] def scanVal : Nat → Bool → Bool → Chars → Chars × Chars
  | _, _, _, [] => ([], [])
  | d, true, esc, c :: cs =>
      let r := if esc then scanVal d true false cs
        else if c == '\\' then scanVal d true true cs
        else if c == '"' then scanVal d false false cs
        else scanVal d true false cs
      (c :: r.1, r.2)
  | d, false, _, c :: cs =>
      if d == 0 && (c == ',' || c == '}' || c == ']') then ([], c :: cs)
      else
        let d' := if c == '{' || c == '[' then d + 1
          else if c == '}' || c == ']' then d - 1 else d
        let r := scanVal d' (c == '"') false cs
        (c :: r.1, r.2)

/-- The arguments of a v7 call scan to exactly themselves before the `, "id"` that follows them:
`scanVal` stops at the `,` after them and nowhere inside. Every JSON value satisfies it (lvt
passes compact JSON, `openai.py` `tool_arguments`); text that does not (`a, "id": "x"`) would
be read back from the call list as other calls, so v7 refuses it. -/
@[expose] def scanOk (a : Chars) : Bool := scanVal 0 false false (a ++ [',']) == (a, [','])

/-- A turn's names are valid, its v7 call arguments scan (`scanOk`) and its token payloads
hold no control token. -/
@[expose] def turnOk : MTurn → Bool
  | .system p _ | .user _ p _ | .result _ p _ => payFree f.ids.reserved p
  | .assistant p cs _ => payFree f.ids.reserved p &&
      cs.all fun k => nameOk k.1 && (f.version != .v7 || scanOk k.2.1)
  | .sampled ts _ => allFree f.ids.reserved ts

/-- The last message is not a system message (unless it is the only one). -/
@[expose] def lastOk : List Message → Bool
  | [] | [_] => true
  | _ :: ms => match ms.getLast? with
    | some m => !m.role.isSystem
    | none => true

/-- Lower a conversation. -/
@[expose] def lower (c : Conversation) : Option MConv :=
  let tj : Option (Option Chars) := match c.tools with
    | some (t :: ts) => (toolsJson (t :: ts)).map some
    | _ => some none
  tj.bind fun tools =>
    (lowerMsgs f tools (if tools.isSome then toolsAt f c.messages else none) none none [] 0
        c.messages).bind fun ts =>
      if lastOk c.messages && ts.all (turnOk f) then
        some ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩
      else none

/-! ## Reading a layout back -/

/-- The text before the control `close`, and the symbols after it. -/
@[expose] def untilCtrl (close : Token) (s : List Sym) : Option (Chars × List Sym) :=
  match takeText s with
  | (x, .ctrl t :: rest) => if t = close then some (x, rest) else none
  | _ => none

/-- The calls of an assistant turn (`[TOOL_CALLS]` name `[ARGS]` arguments, v13;
`[TOOL_CALLS]` name `[CALL_ID]` id `[ARGS]` arguments, v11). -/
@[expose] def unlayoutCalls : Nat → List Sym → Option (List MCall × List Sym)
  | 0, s => some ([], s)
  | n + 1, .ctrl t :: s =>
      if t = f.ids.calls && f.version != .v7 then
        match f.ids.args, f.version, f.ids.callId with
        | some a, .v11, some c =>
            (untilCtrl c s).bind fun (name, s2) =>
              (untilCtrl a s2).bind fun (i, s3) =>
                let r := takeText s3
                if name.isEmpty || i.isEmpty || r.1.isEmpty then none else
                  (unlayoutCalls n r.2).map fun (cs, s4) => ((name, r.1, some i) :: cs, s4)
        | some a, .v13, _ =>
            (untilCtrl a s).bind fun (name, s2) =>
              let r := takeText s2
              if name.isEmpty || r.1.isEmpty then none else
                (unlayoutCalls n r.2).map fun (cs, s3) => ((name, r.1, none) :: cs, s3)
        | _, _, _ => some ([], .ctrl t :: s)
      else some ([], .ctrl t :: s)
  | _ + 1, s => some ([], s)

/-- `cs` less the prefix `p`. -/
@[expose] def dropPre : Chars → Chars → Option Chars
  | [], cs => some cs
  | _ :: _, [] => none
  | p :: ps, c :: cs => if p = c then dropPre ps cs else none

/-- One v7 call object `{"name": "N", "arguments": A, "id": "I"}` and the text after it. -/
@[expose] def unCallJson (cs : Chars) : Option (MCall × Chars) :=
  (dropPre (jName ++ ['"']) cs).bind fun r1 =>
    let n := r1.takeWhile (· != '"')
    (dropPre ('"' :: jArgs) (r1.drop n.length)).bind fun r2 =>
      let a := scanVal 0 false false r2
      (dropPre (jId ++ ['"']) a.2).bind fun r4 =>
        let i := r4.takeWhile (· != '"')
        (dropPre ['"', '}'] (r4.drop i.length)).bind fun r5 =>
          if n.isEmpty || a.1.isEmpty || i.isEmpty then none else some ((n, a.1, some i), r5)

/-- The objects of a v7 call list after its `[`, through the closing `]` (`fuel`: at least the
number of objects). -/
@[expose] def unCallsJson : Nat → Chars → Option (List MCall)
  | 0, _ => none
  | n + 1, cs => (unCallJson cs).bind fun (k, r) =>
      match r with
      | [']'] => some [k]
      | ',' :: ' ' :: r' => (unCallsJson n r').map (k :: ·)
      | _ => none

/-- The calls of a v7 assistant turn: `[TOOL_CALLS]` and the JSON list, read back only when it
lays out as that text again. -/
@[expose] def unlayoutCallsV7 : List Sym → Option (List MCall × List Sym)
  | .ctrl t :: s =>
      if t = f.ids.calls then
        match takeText s with
        | ('[' :: body, rest) =>
            (unCallsJson body.length body).bind fun cs =>
              if callsJson cs = '[' :: body then some (cs, rest) else none
        | _ => none
      else some ([], .ctrl t :: s)
  | s => some ([], s)

/-- An assistant turn: content, calls, `</s>`. -/
@[expose] def unlayoutAssistant (s : List Sym) : Option (MTurn × List Sym) :=
  let r := takeText s
  (if f.version = .v7 then unlayoutCallsV7 f r.2 else unlayoutCalls f r.2.length r.2).bind
    fun (cs, s2) =>
      match s2 with
      | .ctrl e :: rest =>
          if e = f.ids.eos then some (.assistant (.text r.1) cs 0, rest) else none
      | _ => none

/-- The turns (`fuel`: at least the number of symbols). -/
@[expose] def unlayoutTurns : Nat → List Sym → Option (List MTurn)
  | _, [] => some []
  | 0, _ :: _ => none
  | n + 1, .ctrl t :: s =>
      if t = f.ids.sysOpen then
        (untilCtrl f.ids.sysClose s).bind fun (x, r) =>
          (unlayoutTurns n r).map (.system (.text x) 0 :: ·)
      else if t = f.ids.tools then
        (untilCtrl f.ids.endTools s).bind fun (j, r) =>
          match r with
          | .ctrl i :: r2 =>
              if i = f.ids.inst then
                (untilCtrl f.ids.endInst r2).bind fun (x, r3) =>
                  (unlayoutTurns n r3).map (.user (some j) (.text x) 0 :: ·)
              else none
          | _ => none
      else if t = f.ids.inst then
        (untilCtrl f.ids.endInst s).bind fun (x, r) =>
          (unlayoutTurns n r).map (.user none (.text x) 0 :: ·)
      else if t = f.ids.results then
        match f.version, f.ids.toolContent with
        | .v13, _ =>
            (untilCtrl f.ids.endResults s).bind fun (x, r) =>
              (unlayoutTurns n r).map (.result none (.text x) 0 :: ·)
        | _, some tc =>
            (untilCtrl tc s).bind fun (i, r) =>
              (untilCtrl f.ids.endResults r).bind fun (x, r2) =>
                if i.isEmpty then none else
                  (unlayoutTurns n r2).map (.result (some i) (.text x) 0 :: ·)
        | _, none => none
      else
        (unlayoutAssistant f (.ctrl t :: s)).bind fun (a, r) =>
          (unlayoutTurns n r).map (a :: ·)
  | n + 1, s =>
      (unlayoutAssistant f s).bind fun (a, r) => (unlayoutTurns n r).map (a :: ·)

/-- Read a symbol stream back as a lowered conversation (owners 0, no prompt). -/
@[expose] def unlayout (s : List Sym) : Option MConv :=
  match s with
  | .ctrl b :: rest =>
      if b = f.ids.bos then (unlayoutTurns f rest.length rest).map fun ts => ⟨ts, none⟩
      else none
  | _ => none

/-! ## Owners -/

/-- Set the owner of a turn to 0. -/
@[expose] def MTurn.erase : MTurn → MTurn
  | .system p _ => .system p 0
  | .user j p _ => .user j p 0
  | .assistant p cs _ => .assistant p cs 0
  | .result i p _ => .result i p 0
  | .sampled ts _ => .sampled ts 0

/-- Set every owner to 0 and forget the prompt (it writes no token). -/
@[expose] def MConv.erase (q : MConv) : MConv :=
  ⟨q.turns.map MTurn.erase, none⟩

/-! ## Reference ids -/

/-- The named ids of every tekken file (ranks 0-19 of `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`). -/
@[expose] def tekkenBase : List Token := [1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 18]

/-- The v7+ tekken vocabularies (Mistral Small 3.x, Devstral, Magistral): `[ARGS]` 32,
`[CALL_ID]` 33, `[TOOL_CONTENT]` 19; every other of the 1000 control ranks reserved. -/
@[expose] def tekkenIds : MistralIds :=
  ⟨1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 18, some 32, some 33, some 19,
    (List.range 1000).filter fun t => !(tekkenBase ++ [19, 32, 33]).elem t⟩

/-- Nemo's `tekken_240718.json` (and `tekken_240911.json`): no `[ARGS]`, no `[CALL_ID]`;
`[TOOL_CONTENT]` 19. -/
@[expose] def nemoIds : MistralIds :=
  ⟨1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 18, none, none, some 19,
    (List.range 1000).filter fun t => !(tekkenBase ++ [19]).elem t⟩

/-! ## The format -/

/-- The Mistral format as a `Format`. -/
@[expose] def format : Format where
  Lowered := MConv
  reserved := f.ids.reserved
  lower := lower f
  layout := layout f
  unlayout := unlayout f
  erase := MConv.erase

end Verified.Mistral

end
