module

public import Verified.Spec.MistralV3

public section

/-!
# The Mistral structure, version v3: the dummy prefix, ids and kernel-checked behaviour

* `unsp_sp`, `sp_unsp`: the layout's dummy prefix (`sp`) and its inverse (`unsp`) undo each
  other, for any `V3Fmt` (the reading back of every text piece rests on them);
* `v3Ids_nodup`, `nemoIds_nodup`: the named control tokens of both entries are distinct (by
  `decide`);
* concrete lowerings evaluated in the kernel, each a behaviour of `mistral-common` v3: the
  system prompt folded into the last user message (`system_prompt + "\n\n" + content`),
  empty system messages skipped, `[AVAILABLE_TOOLS]` before the last user message, the call
  list and the result object with the call's id, their read-back, and the refusals (content
  and calls together, a system message after an answer, an assistant message first, a
  system prompt with no user message); a developer message read as a system message.

The round trip, mask, no-forgery and extension theorems of v7, v11 and v13
(`Thm/MistralRound.lean`, `Thm/MistralMask.lean`, `Thm/MistralPrefix.lean`) are stated over
`MistralFmt`; they are not proven for `V3Fmt`.
-/

namespace Verified.Mistral

open Verified

variable (g : V3Fmt)

/-- Reading the dummy prefix back gives the text. -/
theorem unsp_sp (x : Chars) : unsp g (sp g x) = some x := by
  cases x with
  | nil => cases h : g.dummy <;> simp [sp, unsp, h]
  | cons c cs => cases h : g.dummy <;> simp [sp, unsp, h]

/-- What `unsp` reads back lays out as the text it read. -/
theorem sp_unsp (x y : Chars) (h : unsp g x = some y) : sp g y = x := by
  cases hd : g.dummy with
  | false =>
      simp only [unsp, hd, Bool.false_eq_true, ↓reduceIte, Option.some.injEq] at h
      subst h
      cases x with
      | nil => rfl
      | cons c cs => simp [sp, hd]
  | true =>
      simp only [unsp, hd, ↓reduceIte] at h
      split at h
      · simp only [Option.some.injEq] at h
        subst h
        rfl
      · simp only [Option.some.injEq] at h
        subst h
        simp [sp, hd]
      · simp at h

/-- The named control tokens of the v3 vocabulary are distinct. -/
theorem v3Ids_nodup : nodupB v3Ids.named = true := by decide

/-- Those of Nemo's tekken vocabulary, which Nemo's v3 entry uses, too. -/
theorem nemoIds_nodup : nodupB nemoIds.named = true := by decide

/-- A message with one text block. -/
@[expose] def msg (r : Role) (s : Chars) : Message := ⟨r, [.plain (.text s)]⟩

/-- A small tool list: `{"type": "function", "function": {"name": "f"}}`. -/
@[expose] def fTool : Json :=
  .obj [(typeKey, .str functionKey), (functionKey, .obj [(nameKey, .str ['f'])])]

/-- Its `json.dumps` after V3's normalisation (description `""`, parameters `{}`). -/
@[expose] def fToolsJson : Option Chars := toolsJson [fTool]

/-- System prompts before and between the turns, one empty. -/
@[expose] def sysChat : Conversation :=
  ⟨[msg .system ['S'], msg .user ['a'], msg .assistant ['b'], msg .user ['c'],
    msg .system [], msg .system ['T']], none, true⟩

/-- The system texts `S` and `T` are joined with `"\n\n"` and folded into the last user
message, the empty one skipped; `b` is written with its dummy prefix. -/
theorem lower_sys_folded :
    (lowerV3 mistral7bV03 sysChat).map (fun q => syms (layoutV3 mistral7bV03 q)) =
      some [.ctrl 1, .ctrl 3, .ch ' ', .ch 'a', .ctrl 4, .ch ' ', .ch 'b', .ctrl 2, .ctrl 3,
        .ch ' ', .ch 'S', .ch '\n', .ch '\n', .ch 'T', .ch '\n', .ch '\n', .ch 'c',
        .ctrl 4] := by
  decide

/-- Over Nemo's tekken vocabulary the same chat has no dummy prefix. -/
theorem lower_sys_folded_nemo :
    (lowerV3 nemoV3 sysChat).map (fun q => syms (layoutV3 nemoV3 q)) =
      some [.ctrl 1, .ctrl 3, .ch 'a', .ctrl 4, .ch 'b', .ctrl 2, .ctrl 3, .ch 'S', .ch '\n',
        .ch '\n', .ch 'T', .ch '\n', .ch '\n', .ch 'c', .ctrl 4] := by
  decide

/-- `[AVAILABLE_TOOLS]` goes before the last user message. -/
theorem lower_tools_last :
    (lowerV3 mistral7bV03 ⟨[msg .user ['a'], msg .assistant ['b'], msg .user ['c']],
        some [fTool], true⟩).map (fun q => q.turns.map fun t => match t with
          | .user j _ _ => j.isSome
          | _ => false) =
      some [false, false, true] := by
  decide

/-- A call with a valid id. -/
@[expose] def callMsgV3 : Message :=
  ⟨.assistant, [.toolCall ['f'] ['{', '}'] (some ['a', 'b', 'c', '1', '2', '3', 'd', 'e', 'f'])]⟩

/-- A loop: the call, its result (the content's JSON text `1`), the answer. -/
@[expose] def loopV3 : Conversation :=
  ⟨[msg .user ['x'], callMsgV3, msg .tool ['1'], msg .assistant ['y']], none, false⟩

/-- Its lowering reads back from its layout (as the same symbols). -/
theorem loop_reads_back :
    ((lowerV3 mistral7bV03 loopV3).bind fun q =>
        (unlayoutV3 mistral7bV03 (syms (layoutV3 mistral7bV03 q))).map
          fun p => syms (layoutV3 mistral7bV03 p)) =
      (lowerV3 mistral7bV03 loopV3).map (fun q => syms (layoutV3 mistral7bV03 q)) := by
  decide

/-- The result is written as ` {"content": 1, "call_id": "abc123def"}` (dummy prefix first). -/
theorem loop_result :
    (lowerV3 mistral7bV03 loopV3).map (fun q =>
        syms (layoutV3 mistral7bV03 ⟨q.turns.filter MTurn.isResult, none⟩)) =
      some ([.ctrl 1, .ctrl 8] ++ (sp mistral7bV03 (resultJson ['1']
        ['a', 'b', 'c', '1', '2', '3', 'd', 'e', 'f'])).map Sym.ch ++ [.ctrl 9]) := by
  decide

/-- Content and calls in one assistant message are refused (`Cannot have tool calls and
content defined in the same assistant message`). -/
theorem refuses_content_and_calls :
    (lowerV3 mistral7bV03 ⟨[msg .user ['x'], ⟨.assistant, [.plain (.text ['c']),
        .toolCall ['f'] [] (some ['a', 'b', 'c', '1', '2', '3', 'd', 'e', 'f'])]⟩], none,
        false⟩).isNone = true := by
  decide

/-- A system message after an answer is refused (`Unexpected role 'system' after role
'assistant'`). -/
theorem refuses_system_after_answer :
    (lowerV3 mistral7bV03 ⟨[msg .user ['x'], msg .assistant ['y'], msg .system ['s'],
        msg .user ['z']], none, true⟩).isNone = true := by
  decide

/-- The first message that is not a system message must be a user message. -/
theorem refuses_answer_first :
    (lowerV3 mistral7bV03 ⟨[msg .system ['s'], msg .assistant ['y']], none,
        false⟩).isNone = true := by
  decide

/-- A system prompt needs a user message to be folded into. -/
theorem refuses_system_alone :
    (lowerV3 mistral7bV03 ⟨[msg .system ['s']], none, true⟩).isNone = true := by
  decide

/-- A developer message is a system message (`from_openai`): folded into the last user
message. -/
theorem lower_developer :
    (lowerV3 mistral7bV03 ⟨[msg .developer ['d'], msg .user ['x']], none, true⟩).map
        (fun q => syms (layoutV3 mistral7bV03 q)) =
      some [.ctrl 1, .ctrl 3, .ch ' ', .ch 'd', .ch '\n', .ch '\n', .ch 'x', .ctrl 4] := by
  decide

/-- Two user messages in a row are refused (mistral-common merges them). -/
theorem refuses_two_users :
    (lowerV3 mistral7bV03 ⟨[msg .user ['x'], msg .user ['y']], none, true⟩).isNone = true := by
  decide

/-- A result with no call before it is refused. -/
theorem refuses_result_without_call :
    (lowerV3 mistral7bV03 ⟨[msg .user ['x'], msg .assistant ['y'], msg .tool ['1']], none,
        true⟩).isNone = true := by
  decide

end Verified.Mistral

end
