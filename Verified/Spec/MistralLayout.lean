module

public import Verified.Spec.Format

public section

/-!
# The Mistral (tekken) family: ids, turns and layout


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

This file holds the ids, the lowered turns, their layout, owner erasure and the reference
ids; the lowering is in `Spec/MistralLower.lean`, the reading back and the `Format` in
`Spec/Mistral.lean`.
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

end Verified.Mistral

end
