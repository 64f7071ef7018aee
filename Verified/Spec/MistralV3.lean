module

public import Verified.Spec.Mistral

public section

/-!
# The Mistral structure, version v3 (Mistral 7B Instruct v0.3, Mistral Nemo)

What `mistral-common`'s `MistralTokenizer.encode_chat_completion` (1.13.1) writes with the
instruct tokenizer v3 (`InstructTokenizerV3`, its `InstructRequestNormalizer` and
`MistralRequestValidatorV3`), as a `Format` over the ids and turns of
`Spec/MistralLayout.lean` (`MistralIds`, `MTurn`, `MConv`). `<s>`, then one piece per message
with no separator:

* system messages (and developer messages, which `from_openai` reads as system ones) write no
  turn: their non-empty texts joined with `"\n\n"` are folded into the last user message
  (`system_prompt + "\n\n" + content`);
* user: `[AVAILABLE_TOOLS]` + `json.dumps(tools)` + `[/AVAILABLE_TOOLS]` before the last user
  message's `[INST]` (`UserMessagePosition.last`), then `[INST]` text `[/INST]`;
* assistant: `content.rstrip(" ")` or `[TOOL_CALLS]` and the JSON call list (never both), then
  `</s>`;
* tool: `[TOOL_RESULTS]` + `{"content": C, "call_id": "ID"}` + `[/TOOL_RESULTS]`.

Each text piece is encoded by its own `self.tokenizer.encode(…)` call. With a SentencePiece
vocabulary (`dummy`: Mistral 7B v0.3's `.model.v3`) that call writes the dummy prefix: here a
space before each non-empty text piece (`sp`), and the codec (the zoo tokenizer `mistral-v3`)
has no dummy prefix of its own. Nemo's tekken vocabulary has none (`dummy = false`).

The content `C` of a tool result is the message text parsed as JSON when it is JSON (else the
text as a JSON string, `{}` when empty: `_normalize_json_content`, `_parse_json_content`).
This model has no JSON parser: the front end (`lvt.families.mistral_v3.content_json`) writes
the message text as that JSON before lowering, and `lowerV3` takes it as given.

This file defines the format; `Verified/Thm/MistralV3.lean` checks its entries' ids by
`decide`, `Thm/MistralV3Sound.lean` and `Thm/MistralV3Round.lean` prove it lawful
(`lawfulV3`: round trip, parse soundness, injectivity of the lowered form, no forgery) for
every `V3Fmt` with distinct named ids, and `Thm/MistralV3Mask.lean` its loss mask; its
extension property is tested, not proven.
-/

namespace Verified.Mistral

open Verified

/-- A v3 format instance: the ids (`sysOpen`/`sysClose` are never written) and whether each
text piece carries SentencePiece's dummy prefix. -/
structure V3Fmt where
  /-- Control tokens. -/
  ids : MistralIds
  /-- SentencePiece's dummy prefix (Mistral 7B v0.3: `true`; Nemo's tekken: `false`). -/
  dummy : Bool
  deriving DecidableEq, Repr

variable (g : V3Fmt)

/-! ## Layout -/

/-- A text piece as `self.tokenizer.encode` sees it: with a SentencePiece vocabulary its dummy
prefix, written as a space (`""` encodes to no token and gets none). -/
@[expose] def sp : Chars → Chars
  | [] => []
  | c :: cs => if g.dummy then ' ' :: c :: cs else c :: cs

/-- The inverse of `sp`. -/
@[expose] def unsp (x : Chars) : Option Chars :=
  if g.dummy then
    match x with
    | [] => some []
    | ' ' :: c :: cs => some (c :: cs)
    | _ => none
  else some x

/-- `sp` on a text payload (token payloads are written as they are). -/
@[expose] def spPay : LPay → LPay
  | .text cs => .text (sp g cs)
  | p => p

/-- The items of one turn. -/
@[expose] def turnItemsV3 : MTurn → List Item
  -- no turn: `_aggregate_system_messages` returns `[]` (lowering folds the text)
  | .system _ _ => []
  -- `[self.BEGIN_AVAILABLE_TOOLS, *tools_json_tokens, self.END_AVAILABLE_TOOLS]` then
  -- `prefix_tokens = [*tools_settings_tokens, self.BEGIN_INST]`, `suffix_tokens = [self.END_INST]`
  | .user tools p o =>
      (match tools with
        | some j => [ctl g.ids.tools o false, txt (sp g j) o false, ctl g.ids.endTools o false]
        | none => []) ++
      [ctl g.ids.inst o false, pay (spPay g p) o false, ctl g.ids.endInst o false]
  -- `[self.TOOL_CALLS, *self.tokenizer.encode(tool_call_str, bos=False, eos=False)]` or the
  -- content's tokens, then `curr_tokens.append(self.tokenizer.eos_id)`
  | .assistant p calls o =>
      [pay (spPay g p) o true] ++
        (match calls with
          | [] => []
          | cs => [ctl g.ids.calls o true, txt (sp g (callsJson cs)) o true]) ++
        [ctl g.ids.eos o true]
  -- `[self.BEGIN_TOOL_RESULTS, *self.tokenizer.encode(tool_result_str), self.END_TOOL_RESULTS]`
  | .result _ p o => [ctl g.ids.results o false, pay (spPay g p) o false,
      ctl g.ids.endResults o false]
  | .sampled ts o => [⟨.toks ts, ⟨o, true⟩⟩, ctl g.ids.eos o true]

/-- The items of a lowered conversation: `self.start()` and the turns; the generation prompt
writes nothing. -/
@[expose] def layoutV3 (q : MConv) : List Item :=
  [ctl g.ids.bos 0 false] ++ q.turns.flatMap (turnItemsV3 g)

/-! ## Lowering -/

/-- A system message, or a developer message (`from_openai`: `elif message_role in ("system",
"developer")`). -/
@[expose] def isSys (r : Role) : Bool := r = .system || r = .developer

/-- The texts of the system messages that have one (`if message.role == Roles.system and
message.content`); `none` when one is not a single text block. -/
@[expose] def systemTexts : List Message → Option (List Chars)
  | [] => some []
  | m :: ms =>
      if isSys m.role then
        match m.content? with
        | some (.text []) => systemTexts ms
        | some (.text x) => (systemTexts ms).map (x :: ·)
        | _ => none
      else systemTexts ms

/-- `self._msg_join_str.join(system_prompt)` (`"\n\n"`). -/
@[expose] def joinNN : List Chars → Chars
  | [] => []
  | [x] => x
  | x :: xs => x ++ ['\n', '\n'] ++ joinNN xs

/-- `if is_last and system_prompt: content = system_prompt + "\n\n" + content`. -/
@[expose] def foldSys (sys : Option Chars) (isLast : Bool) (p : LPay) : Option LPay :=
  match sys, isLast, p with
  | some s, true, .text x => some (.text (s ++ ['\n', '\n'] ++ x))
  | some _, true, .toks _ => none
  | _, _, p => some p

/-- `{"content": ` -/
@[expose] def jContent : Chars :=
  ['{', '"', 'c', 'o', 'n', 't', 'e', 'n', 't', '"', ':', ' ']
/-- `, "call_id": ` -/
@[expose] def jCallId : Chars :=
  [',', ' ', '"', 'c', 'a', 'l', 'l', '_', 'i', 'd', '"', ':', ' ']

/-- `json.dumps({"content": …, "call_id": …})` of V3's `_prepare_tool_result`, the content
`c` being its JSON text (written by the front end). -/
@[expose] def resultJson (c i : Chars) : Chars := jContent ++ c ++ jCallId ++ quoted i ++ ['}']

/-- v3 keeps no two consecutive user or assistant messages (mistral-common merges them). -/
@[expose] def v3Allowed (prev cur : Role) : Bool :=
  !(prev = cur && (cur = .user || cur = .assistant))

/-- Lower one message that is not a system message (`rid`: the id of the call at a tool
message's position). -/
@[expose] def lowerMsgV3 (tools sys : Option Chars) (isLast : Bool)
    (rid : Option (Option Chars)) (i : Nat) (m : Message) : Option MTurn :=
  match m.role with
  | .user => m.content?.bind fun p => (foldSys sys isLast p).map fun p' => .user tools p' i
  | .assistant =>
      match m.blocks with
      | [.sampled ts] => some (.sampled ts i)
      | bs => (bodyOf bs).bind fun (p, cs) => (callIds ⟨g.ids, .v7, false⟩ cs).bind fun cs =>
          -- `Cannot have tool calls and content defined in the same assistant message`
          if !isEmptyText p && !cs.isEmpty then none
          -- `raise TokenizerException(f"Invalid assistant message: {message.content}")`
          else if isEmptyText p && cs.isEmpty then none
          else some (.assistant (rstripSpace p) cs i)
  | .tool =>
      match rid, m.content? with
      | some (some x), some (.text c) => some (.result none (.text (resultJson c x)) i)
      | _, _ => none
  | _ => none

/-- Lower the messages from index `i` (`prev`: the previous role that is not system, `prevT`
its turn; `pend`: the ids of the calls not yet answered; `pos`: the user message that receives
the tools; `last`: the last user message). -/
@[expose] def lowerMsgsV3 (tools : Option Chars) (pos : Option Nat) (sys : Option Chars)
    (last : Option Nat) :
    Option Role → Option MTurn → List (Option Chars) → Nat → List Message →
      Option (List MTurn)
  | _, _, _, _, [] => some []
  | prev, prevT, pend, i, m :: ms =>
      if isSys m.role then
        -- `Unexpected role 'system' after role 'assistant'` (and `'tool'`)
        if prev = some .assistant || prev = some .tool then none
        else lowerMsgsV3 tools pos sys last prev prevT pend (i + 1) ms
      else
        let ok : Bool := match prev with
          | none => m.role = .user
          | some r => v3Allowed r m.role
        if !ok then none else
          (lowerMsgV3 g (if pos = some i then tools else none) sys (last = some i)
              pend.head? i m).bind fun t =>
            if t.isResult && !afterCall prevT then none else
              (lowerMsgsV3 tools pos sys last (some m.role) (some t) (t.pending pend) (i + 1)
                ms).map (t :: ·)

/-- A turn's names are valid, its call arguments scan (`scanOk`) and its token payloads hold
no control token. -/
@[expose] def turnOkV3 : MTurn → Bool
  | .system p _ | .user _ p _ | .result _ p _ => payFree g.ids.reserved p
  | .assistant p cs _ => payFree g.ids.reserved p &&
      cs.all fun k => nameOk k.1 && scanOk k.2.1
  | .sampled ts _ => allFree g.ids.reserved ts

/-- Lower a conversation. -/
@[expose] def lowerV3 (c : Conversation) : Option MConv :=
  let tj : Option (Option Chars) := match c.tools with
    | some (t :: ts) => (toolsJson (t :: ts)).map some
    | _ => some none
  tj.bind fun tools =>
    (systemTexts c.messages).bind fun sysTs =>
      let sys : Option Chars := if sysTs.isEmpty then none else some (joinNN sysTs)
      let last := (userIdxs 0 c.messages).getLast?
      if sys.isSome && last.isNone then none else
        (lowerMsgsV3 g tools (if tools.isSome then last else none) sys last none none [] 0
            c.messages).bind fun ts =>
          if ts.all (turnOkV3 g) then
            some ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩
          else none

/-! ## Reading back -/

/-- The text before the control `close`, less its `sp`, and the symbols after `close`. -/
@[expose] def untilSp (close : Token) (s : List Sym) : Option (Chars × List Sym) :=
  (untilCtrl close s).bind fun (x, r) => (unsp g x).map fun y => (y, r)

/-- The calls after an assistant's content `p` (empty when there are calls): `[TOOL_CALLS]`
and the JSON list, read back only when it lays out as that text again. -/
@[expose] def unlayoutCallsV3 (p : Chars) : List Sym → Option (List MCall × List Sym)
  | .ctrl t :: s =>
      if t = g.ids.calls then
        let r := takeText s
        (unsp g r.1).bind fun body =>
          match body with
          | '[' :: b =>
              if p.isEmpty then
                (unCallsJson b.length b).bind fun cs =>
                  if callsJson cs = '[' :: b then some (cs, r.2) else none
              else none
          | _ => none
      else some ([], .ctrl t :: s)
  | s => some ([], s)

/-- An assistant turn: content or calls, then `</s>`. -/
@[expose] def unlayoutAssistantV3 (s : List Sym) : Option (MTurn × List Sym) :=
  let r := takeText s
  (unsp g r.1).bind fun p =>
    (unlayoutCallsV3 g p r.2).bind fun (cs, s2) =>
      match s2 with
      | .ctrl e :: rest =>
          if e = g.ids.eos then some (.assistant (.text p) cs 0, rest) else none
      | _ => none

/-- The turns (`fuel`: at least the number of symbols). -/
@[expose] def unlayoutTurnsV3 : Nat → List Sym → Option (List MTurn)
  | _, [] => some []
  | 0, _ :: _ => none
  | n + 1, .ctrl t :: s =>
      if t = g.ids.tools then
        (untilSp g g.ids.endTools s).bind fun (j, r) =>
          match r with
          | .ctrl i :: r2 =>
              if i = g.ids.inst then
                (untilSp g g.ids.endInst r2).bind fun (x, r3) =>
                  (unlayoutTurnsV3 n r3).map (.user (some j) (.text x) 0 :: ·)
              else none
          | _ => none
      else if t = g.ids.inst then
        (untilSp g g.ids.endInst s).bind fun (x, r) =>
          (unlayoutTurnsV3 n r).map (.user none (.text x) 0 :: ·)
      else if t = g.ids.results then
        (untilSp g g.ids.endResults s).bind fun (x, r) =>
          (unlayoutTurnsV3 n r).map (.result none (.text x) 0 :: ·)
      else
        (unlayoutAssistantV3 g (.ctrl t :: s)).bind fun (a, r) =>
          (unlayoutTurnsV3 n r).map (a :: ·)
  | n + 1, s =>
      (unlayoutAssistantV3 g s).bind fun (a, r) => (unlayoutTurnsV3 n r).map (a :: ·)

/-- Read a symbol stream back as a lowered conversation (owners 0, no prompt). -/
@[expose] def unlayoutV3 (s : List Sym) : Option MConv :=
  match s with
  | .ctrl b :: rest =>
      if b = g.ids.bos then (unlayoutTurnsV3 g rest.length rest).map fun ts => ⟨ts, none⟩
      else none
  | _ => none

/-! ## The format and its entries -/

/-- Version v3 of the Mistral structure as a `Format`. -/
@[expose] def formatV3 : Format where
  Lowered := MConv
  reserved := g.ids.reserved
  lower := lowerV3 g
  layout := layoutV3 g
  unlayout := unlayoutV3 g
  erase := MConv.erase

/-- `mistral_instruct_tokenizer_240323.model.v3` (32768 ids): `<s>` 1, `</s>` 2, `[INST]` 3,
`[/INST]` 4, `[TOOL_CALLS]` 5, `[AVAILABLE_TOOLS]` 6, `[/AVAILABLE_TOOLS]` 7,
`[TOOL_RESULTS]` 8, `[/TOOL_RESULTS]` 9; no `[SYSTEM_PROMPT]`: ids past the vocabulary (32768,
32769), never written; `<unk>` and the other control pieces (10-750) reserved. -/
@[expose] def v3Ids : MistralIds :=
  ⟨1, 2, 3, 4, 6, 7, 8, 9, 5, 32768, 32769, none, none, none,
    0 :: (List.range 741).map (· + 10)⟩

/-- The entry `mistral-7b-v0.3`: the SentencePiece v3 vocabulary, with its dummy prefix. -/
@[expose] def mistral7bV03 : V3Fmt := ⟨v3Ids, true⟩

/-- Mistral Nemo: v3 over Nemo's tekken vocabulary (no dummy prefix). -/
@[expose] def nemoV3 : V3Fmt := ⟨nemoIds, false⟩

end Verified.Mistral

end
