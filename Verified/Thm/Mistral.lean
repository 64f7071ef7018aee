module

public import Verified.Spec.Mistral

public section

/-!
# The Mistral family: well-formedness and kernel-checked behaviour

`wf` for each shipped vocabulary and version (by `decide`): the tekken v7+ vocabulary for v7,
v11 and v13; Nemo's (no `[ARGS]`, no `[CALL_ID]`) for v7 only, and not for v11/v13 (the format
refuses to build there). Concrete lowerings evaluated in the kernel: where each version puts
`[AVAILABLE_TOOLS]`, the stable mode's placement, `rstrip(" ")` of assistant content, v7/v11
refusing a call without an id or with a bad one, v13 calls and results, v7 (`[TOOL_CALLS]` JSON
list with `"id"`) and v11 (`[CALL_ID]`) calls with their results
(`[TOOL_RESULTS]ID[TOOL_CONTENT]`) and their read-back, v13 ignoring the id, and refusals of
non-alternating conversations.
-/

namespace Verified.Mistral

open Verified

theorem tekkenIds_wf_v7 : tekkenIds.wf .v7 = true := by decide
theorem tekkenIds_wf_v11 : tekkenIds.wf .v11 = true := by decide
theorem tekkenIds_wf_v13 : tekkenIds.wf .v13 = true := by decide
theorem nemoIds_wf_v7 : nemoIds.wf .v7 = true := by decide
theorem nemoIds_not_wf_v11 : nemoIds.wf .v11 = false := by decide
theorem nemoIds_not_wf_v13 : nemoIds.wf .v13 = false := by decide

/-- A user message. -/
@[expose] def u (s : Chars) : Message := ⟨.user, [.plain (.text s)]⟩
/-- An assistant message. -/
@[expose] def a (s : Chars) : Message := ⟨.assistant, [.plain (.text s)]⟩

/-- Two user turns. -/
@[expose] def twoUsers : List Message := [u ['x'], a ['y'], u ['z']]

/-- v7 and v11 give the tools to the last user message, v13 to the first. -/
theorem tools_last_v7 : toolsAt ⟨tekkenIds, .v7, false⟩ twoUsers = some 2 := by decide
theorem tools_last_v11 : toolsAt ⟨tekkenIds, .v11, false⟩ twoUsers = some 2 := by decide
theorem tools_first_v13 : toolsAt ⟨tekkenIds, .v13, false⟩ twoUsers = some 0 := by decide
/-- The stable mode gives them to the first user message in every version. -/
theorem tools_first_stable (v : Version) : toolsAt ⟨tekkenIds, v, true⟩ twoUsers = some 0 := by
  cases v <;> decide

/-- `content.rstrip(" ")`: trailing spaces of assistant text are dropped, leading kept. -/
theorem lower_rstrip :
    (lower ⟨nemoIds, .v7, false⟩ ⟨[u ['x'], a [' ', 'y', ' ', ' ']], none, false⟩).map
        (fun q => syms (layout ⟨nemoIds, .v7, false⟩ q)) =
      some [.ctrl 1, .ctrl 3, .ch 'x', .ctrl 4, .ch ' ', .ch 'y', .ctrl 2] := by
  decide

/-- A call. -/
@[expose] def callMsg : Message := ⟨.assistant, [.toolCall ['f'] [] none]⟩

/-- v7 and v11 refuse a call without an id (they write one with every call); v13 writes
`[TOOL_CALLS]f[ARGS]{}`. -/
theorem lower_call_v7 :
    (lower ⟨tekkenIds, .v7, false⟩ ⟨[u ['x'], callMsg], none, false⟩).isNone = true := by
  decide
theorem lower_call_v11 :
    (lower ⟨tekkenIds, .v11, false⟩ ⟨[u ['x'], callMsg], none, false⟩).isNone = true := by
  decide

/-- A v13 agent loop: the call, its result, the answer, then a generation prompt. -/
@[expose] def loop : Conversation :=
  ⟨[u ['x'], callMsg, ⟨.tool, [.plain (.text ['r'])]⟩, a ['y']], none, true⟩

/-- Its symbols: `[TOOL_CALLS]f[ARGS]{}</s>`, the result, the answer right after
`[/TOOL_RESULTS]` (no `[/INST]`), and no token for the generation prompt. -/
@[expose] def loopSyms : List Sym :=
  [.ctrl 1, .ctrl 3, .ch 'x', .ctrl 4, .ctrl 9, .ch 'f', .ctrl 32, .ch '{', .ch '}',
    .ctrl 2, .ctrl 7, .ch 'r', .ctrl 8, .ch 'y', .ctrl 2]

theorem lower_call_v13 :
    (lower ⟨tekkenIds, .v13, false⟩ loop).map (fun q => syms (layout ⟨tekkenIds, .v13, false⟩ q))
      = some loopSyms := by
  decide
theorem lower_call_v13_prompt :
    (lower ⟨tekkenIds, .v13, false⟩ loop).map (·.prompt) = some (some 4) := by
  decide

/-- Consecutive user messages (merged by mistral-common's normalizer) and a result with no
call before it are refused. -/
theorem lower_two_users :
    (lower ⟨tekkenIds, .v13, false⟩ ⟨[u ['x'], u ['y']], none, false⟩).isNone = true := by
  decide
theorem lower_result_without_call :
    (lower ⟨tekkenIds, .v13, false⟩ ⟨[u ['x'], a ['y'], ⟨.tool, [.plain (.text ['r'])]⟩],
      none, false⟩).isNone = true := by
  decide

/-- Reading the loop's symbols back gives turns whose layout is those symbols again. -/
theorem unlayout_loop :
    (unlayout ⟨tekkenIds, .v13, false⟩ loopSyms).map
        (fun q => syms (layout ⟨tekkenIds, .v13, false⟩ q)) = some loopSyms := by
  decide

/-- v7 does not read `[TOOL_RESULTS]` (it never writes a v13 result). -/
theorem unlayout_loop_v7 : (unlayout ⟨tekkenIds, .v7, false⟩ loopSyms).isNone = true := by
  decide

/-! ## Call ids (v7, v11) -/

/-- A call with the id `abcdefghi`. -/
@[expose] def idCallMsg : Message :=
  ⟨.assistant, [.toolCall ['f'] [] (some ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'])]⟩

/-- The agent loop with that call. -/
@[expose] def idLoop : Conversation :=
  ⟨[u ['x'], idCallMsg, ⟨.tool, [.plain (.text ['r'])]⟩, a ['y']], none, true⟩

/-- v11: `[TOOL_CALLS]f[CALL_ID]abcdefghi[ARGS]{}</s>`, then the result
`[TOOL_RESULTS]abcdefghi[TOOL_CONTENT]r[/TOOL_RESULTS]` (the id of the call at its position),
the answer. -/
@[expose] def idLoopSymsV11 : List Sym :=
  [.ctrl 1, .ctrl 3, .ch 'x', .ctrl 4, .ctrl 9, .ch 'f', .ctrl 33,
    .ch 'a', .ch 'b', .ch 'c', .ch 'd', .ch 'e', .ch 'f', .ch 'g', .ch 'h', .ch 'i',
    .ctrl 32, .ch '{', .ch '}', .ctrl 2, .ctrl 7,
    .ch 'a', .ch 'b', .ch 'c', .ch 'd', .ch 'e', .ch 'f', .ch 'g', .ch 'h', .ch 'i',
    .ctrl 19, .ch 'r', .ctrl 8, .ch 'y', .ctrl 2]

/-- v7: `[TOOL_CALLS]` and the JSON list with `"id"`, the result as in v11. -/
@[expose] def idLoopSymsV7 : List Sym :=
  [.ctrl 1, .ctrl 3, .ch 'x', .ctrl 4, .ctrl 9,
    .ch '[', .ch '{', .ch '"', .ch 'n', .ch 'a', .ch 'm', .ch 'e', .ch '"', .ch ':', .ch ' ',
    .ch '"', .ch 'f', .ch '"', .ch ',', .ch ' ', .ch '"', .ch 'a', .ch 'r', .ch 'g', .ch 'u',
    .ch 'm', .ch 'e', .ch 'n', .ch 't', .ch 's', .ch '"', .ch ':', .ch ' ', .ch '{', .ch '}',
    .ch ',', .ch ' ', .ch '"', .ch 'i', .ch 'd', .ch '"', .ch ':', .ch ' ', .ch '"', .ch 'a',
    .ch 'b', .ch 'c', .ch 'd', .ch 'e', .ch 'f', .ch 'g', .ch 'h', .ch 'i', .ch '"', .ch '}',
    .ch ']',
    .ctrl 2, .ctrl 7,
    .ch 'a', .ch 'b', .ch 'c', .ch 'd', .ch 'e', .ch 'f', .ch 'g', .ch 'h', .ch 'i',
    .ctrl 19, .ch 'r', .ctrl 8, .ch 'y', .ctrl 2]

theorem lower_id_call_v11 :
    (lower ⟨tekkenIds, .v11, false⟩ idLoop).map
        (fun q => syms (layout ⟨tekkenIds, .v11, false⟩ q)) = some idLoopSymsV11 := by
  decide
theorem lower_id_call_v7 :
    (lower ⟨tekkenIds, .v7, false⟩ idLoop).map
        (fun q => syms (layout ⟨tekkenIds, .v7, false⟩ q)) = some idLoopSymsV7 := by
  decide

/-- v13 ignores the id: the same loop renders as the one without it. -/
theorem lower_id_call_v13 :
    (lower ⟨tekkenIds, .v13, false⟩ idLoop).map
        (fun q => syms (layout ⟨tekkenIds, .v13, false⟩ q)) = some loopSyms := by
  decide

/-- Reading the v7 and v11 symbols back gives turns that lay out as them again (the v7 JSON
list and the result ids are read back). -/
theorem unlayout_id_loop_v11 :
    (unlayout ⟨tekkenIds, .v11, false⟩ idLoopSymsV11).map
        (fun q => syms (layout ⟨tekkenIds, .v11, false⟩ q)) = some idLoopSymsV11 := by
  decide
theorem unlayout_id_loop_v7 :
    (unlayout ⟨tekkenIds, .v7, false⟩ idLoopSymsV7).map
        (fun q => syms (layout ⟨tekkenIds, .v7, false⟩ q)) = some idLoopSymsV7 := by
  decide

/-- An id that is not `[a-zA-Z0-9]{9}` is refused (mistral-common's validator). -/
theorem lower_bad_id_v7 :
    (lower ⟨tekkenIds, .v7, false⟩
      ⟨[u ['x'], ⟨.assistant, [.toolCall ['f'] [] (some ['c', '_', '1'])]⟩], none,
        false⟩).isNone = true := by
  decide

end Verified.Mistral

end
