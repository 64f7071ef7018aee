module

public import Verified.Spec.MistralLayout

public section

/-!
# The Mistral (tekken) family: lowering

From the conversation a user writes to the turns mistral-common renders (`MTurn`,
`Spec/MistralLayout.lean`): the tool list as `json.dumps` writes V3's normalised tools
(`toolsJson`), the turns with their call ids (`callIds`: v7/v11 need `^[a-zA-Z0-9]{9}$` ids,
v13 drops them), the `[AVAILABLE_TOOLS]` position (`toolsAt`), the message order
`_validate_message_order` accepts (`allowed`) and the checks that make the layout readable back
(`turnOk`: valid names, v7 arguments that scan as one JSON value, token payloads free of
control tokens).
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

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

end Verified.Mistral

end
