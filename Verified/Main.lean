module

public import Verified.Ffi
public import Lean.Data.Json

public section

/-!
# `lvt-oracle`: the proven render and parse as a JSON-lines process

A second, process-level way to run the proven definitions (the first is the shared library).
Each input line is one JSON request; each answer is one JSON line, flushed at once, so a test
driver can talk to the process interactively.

Requests (token lists are arrays of natural numbers; missing roles or kinds mean `[]`):

```
{"op": "render", "format": F, "conversation": C}
{"op": "parse",  "format": F, "ids": [..]}
F = {"reserved": [..], "bos": [..], "header": {"system": [..], ...}, "footer": {...},
     "block_open": {"plain": [..], "reasoning": [..], "tool_call": [..]},
     "block_close": {...}, "tool_sep": [..]}
C = {"messages": [{"role": "user", "blocks": [B, ..]}, ..], "add_generation_prompt": false}
B = {"kind": "plain" | "reasoning", "payload": [..]}
  | {"kind": "tool_call", "name": [..], "args": [..]}
```

Answers: `{"ok": true, "wf": b, "valid": b, "ids": [..], "mask": [0|1, ..], "owner": [..],
"src": ["bos" | "header" | "delim" | "payload" | "eot" | "footer" | "prompt", ..]}` for a render,
`{"ok": true, "wf": b, "conversation": C | null}` for a parse, `{"ok": false, "error": "…"}`
for a malformed request. The format is built with `Ffi.formatOfLists`, the same constructor the
FFI decoder uses, and the answers come from `Format.renderTok` and `Format.parse`.
-/

namespace Verified
namespace Oracle

open Lean

/-- JSON name of a role. -/
@[expose] def roleName : Role → String
  | .system => "system"
  | .developer => "developer"
  | .user => "user"
  | .assistant => "assistant"
  | .tool => "tool"

/-- JSON name of a block kind. -/
@[expose] def kindName : BlockKind → String
  | .plain => "plain"
  | .reasoning => "reasoning"
  | .toolCall => "tool_call"

/-- JSON name of a token source. -/
@[expose] def srcName : Src → String
  | .bos => "bos"
  | .header => "header"
  | .delim => "delim"
  | .payload => "payload"
  | .eot => "eot"
  | .footer => "footer"
  | .prompt => "prompt"

/-- A token list from a JSON array of natural numbers. -/
def toksOf (j : Json) : Except String (List Token) := do
  let arr ← j.getArr?
  arr.toList.mapM fun x => x.getNat?

/-- The token list under `key` of a JSON object, `[]` when the key is missing. -/
def optToks (j : Json) (key : String) : Except String (List Token) :=
  match j.getObjVal? key with
  | .ok v => toksOf v
  | .error _ => .ok []

/-- A pre-encoded format from its JSON form. -/
def formatOfJson (j : Json) : Except String EncFormat := do
  let hdr ← j.getObjVal? "header"
  let ftr ← j.getObjVal? "footer"
  let bo ← j.getObjVal? "block_open"
  let bc ← j.getObjVal? "block_close"
  let perRole ← [Role.system, .developer, .user, .assistant, .tool].mapM fun r => do
    return [← optToks hdr (roleName r), ← optToks ftr (roleName r)]
  let perKind ← [BlockKind.plain, .reasoning, .toolCall].mapM fun k => do
    return [← optToks bo (kindName k), ← optToks bc (kindName k)]
  let lists := [← optToks j "reserved", ← optToks j "bos"] ++ perRole.flatten ++
    perKind.flatten ++ [← optToks j "tool_sep"]
  match Ffi.formatOfLists lists with
  | some f => return f
  | none => throw "internal error: format lists have the wrong length"

/-- A block from its JSON form. -/
def blockOfJson (j : Json) : Except String (Block (List Token)) := do
  let kind ← (← j.getObjVal? "kind").getStr?
  if kind == "plain" then return .plain (← optToks j "payload")
  else if kind == "reasoning" then return .reasoning (← optToks j "payload")
  else if kind == "tool_call" then return .toolCall (← optToks j "name") (← optToks j "args")
  else throw s!"unknown block kind {kind}"

/-- A message from its JSON form. -/
def msgOfJson (j : Json) : Except String (Message (List Token)) := do
  let name ← (← j.getObjVal? "role").getStr?
  let some role := Role.all.find? (roleName · == name)
    | throw s!"unknown role {name}"
  let blocks ← (← j.getObjVal? "blocks").getArr?
  return ⟨role, ← blocks.toList.mapM blockOfJson⟩

/-- A conversation from its JSON form. -/
def convOfJson (j : Json) : Except String (Conversation (List Token)) := do
  let msgs ← (← j.getObjVal? "messages").getArr?
  let gen := match j.getObjVal? "add_generation_prompt" with
    | .ok v => (v.getBool?).toOption.getD false
    | .error _ => false
  return ⟨← msgs.toList.mapM msgOfJson, gen⟩

/-- A token list as a JSON array. -/
def toksJson (ts : List Token) : Json := Json.arr (ts.map fun t => toJson t).toArray

/-- A block as JSON. -/
def blockJson : Block (List Token) → Json
  | .plain p => Json.mkObj [("kind", Json.str "plain"), ("payload", toksJson p)]
  | .reasoning p => Json.mkObj [("kind", Json.str "reasoning"), ("payload", toksJson p)]
  | .toolCall n a =>
      Json.mkObj [("kind", Json.str "tool_call"), ("name", toksJson n), ("args", toksJson a)]

/-- A conversation as JSON. -/
def convJson (c : Conversation (List Token)) : Json :=
  Json.mkObj [
    ("messages", Json.arr (c.messages.map fun m =>
      Json.mkObj [("role", Json.str (roleName m.role)),
        ("blocks", Json.arr (m.blocks.map blockJson).toArray)]).toArray),
    ("add_generation_prompt", Json.bool c.addGenerationPrompt)]

/-- The answer to a render request: the proven `Format.renderTok`, column by column. -/
def renderJson (f : EncFormat) (c : Conversation (List Token)) : Json :=
  let cs := f.renderTok c
  Json.mkObj [
    ("ok", Json.bool true), ("wf", Json.bool f.wf), ("valid", Json.bool (f.valid c)),
    ("ids", toksJson (ids cs)),
    ("mask", Json.arr (cs.map fun x => toJson (if x.loss then 1 else 0 : Nat)).toArray),
    ("owner", toksJson (owners cs)),
    ("src", Json.arr (cs.map fun x => Json.str (srcName x.src)).toArray)]

/-- The answer to a parse request: the proven `Format.parse`. -/
def parseJson (f : EncFormat) (ts : List Token) : Json :=
  Json.mkObj [
    ("ok", Json.bool true), ("wf", Json.bool f.wf),
    ("conversation", match f.parse ts with
      | some c => convJson c
      | none => Json.null)]

/-- Answer one decoded request. -/
def respond (j : Json) : Except String Json := do
  let op ← (← j.getObjVal? "op").getStr?
  let f ← formatOfJson (← j.getObjVal? "format")
  if op == "render" then return renderJson f (← convOfJson (← j.getObjVal? "conversation"))
  else if op == "parse" then return parseJson f (← toksOf (← j.getObjVal? "ids"))
  else throw s!"unknown op {op}"

/-- Answer one input line. -/
def handle (line : String) : Json :=
  let err := fun (e : String) => Json.mkObj [("ok", Json.bool false), ("error", Json.str e)]
  match Json.parse line with
  | .error e => err s!"invalid JSON: {e}"
  | .ok j =>
      match respond j with
      | .ok r => r
      | .error e => err e

end Oracle
end Verified

/-- Read JSON requests line by line until end of input; answer each on its own line. -/
def main : IO Unit := do
  let stdin ← IO.getStdin
  let stdout ← IO.getStdout
  repeat
    let line ← stdin.getLine
    if line.isEmpty then break
    if line.all Char.isWhitespace then continue
    stdout.putStrLn (Verified.Oracle.handle line).compress
    stdout.flush

end
