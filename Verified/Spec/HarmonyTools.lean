module

public import Verified.Spec.Format

public section

/-!
# The gpt-oss template's TypeScript tool layout

`render_tool_namespace` and `render_typescript_type` of the official gpt-oss chat template
(`openai/gpt-oss-120b`): the function tools as the `functions` TypeScript namespace of the
developer message (`Spec/Harmony.lean` places it). `pybind/lvt/families/harmony_tools.py` is
the Python transliteration.
-/

namespace Verified.Harmony

open Verified

/-! ## The TypeScript tool layout (`render_tool_namespace`, `render_typescript_type`)

Jinja semantics on JSON: `x.key` is missing on anything but an object (`Option Json`),
truthiness as Jinja's. Recursion is bounded by fuel (the front end bounds nesting at 64). -/

/-- The first member named `k`. -/
@[expose] def lookup (k : Chars) : List (Chars × Json) → Option Json
  | [] => none
  | (k', v) :: kvs => if k' = k then some v else lookup k kvs

/-- `j.k` -/
@[expose] def get (k : Chars) : Option Json → Option Json
  | some (.obj kvs) => lookup k kvs
  | _ => none

/-- `j == s` for a string `s`. -/
@[expose] def isStr (s : Chars) : Option Json → Bool
  | some (.str x) => x = s
  | _ => false

/-- A number is true when its mantissa has a non-zero digit (its text is Python's). -/
@[expose] def numTruthy (s : Chars) : Bool :=
  (s.takeWhile fun c => c ≠ 'e' ∧ c ≠ 'E').any fun c => '1' ≤ c ∧ c ≤ '9'

/-- Jinja's truth value. -/
@[expose] def truthy : Option Json → Bool
  | none => false
  | some .null => false
  | some (.bool b) => b
  | some (.num s) => numTruthy s
  | some (.str s) => !s.isEmpty
  | some (.arr xs) => !xs.isEmpty
  | some (.obj kvs) => !kvs.isEmpty

/-- Jinja's string of a scalar (`join`); `none` for arrays and objects. -/
@[expose] def jstr : Json → Option Chars
  | .str s => some s
  | .bool true => some ['T', 'r', 'u', 'e']
  | .bool false => some ['F', 'a', 'l', 's', 'e']
  | .null => some ['N', 'o', 'n', 'e']
  | .num s => some s
  | _ => none

/-- `"…" + j`: a string, else the template raises. -/
@[expose] def cat : Option Json → Option Chars
  | some (.str s) => some s
  | _ => none

/-- `j|tojson` of a present value. -/
@[expose] def tojson : Option Json → Chars
  | some j => Json.compact j
  | none => []

/-- `s` occurs in `l`. -/
@[expose] def infixB (s : Chars) : Chars → Bool
  | [] => s.isEmpty
  | c :: cs => (s.isPrefixOf (c :: cs)) || infixB s cs

/-- `param_spec.required or []` -/
@[expose] def requiredOf (spec : Option Json) : Option Json :=
  let r := get ['r', 'e', 'q', 'u', 'i', 'r', 'e', 'd'] spec
  if truthy r then r else some (.arr [])

/-- `name in required` (Jinja's `in` on a list, a string or an object). -/
@[expose] def isRequired (name : Chars) : Option Json → Bool
  | some (.arr xs) => xs.any fun x => match x with
    | .str s => s = name
    | _ => false
  | some (.str s) => infixB name s
  | some (.obj kvs) => kvs.any fun kv => kv.1 = name
  | _ => false

/-- `"?"` after an optional property. -/
@[expose] def opt (name : Chars) (req : Option Json) : Chars :=
  if isRequired name req then [] else ['?']

/-- `{{- ": " }}` then the new line and 16 spaces before `{{ render_typescript_type(…) }}`. -/
@[expose] def propGap : Chars := ':' :: ' ' :: '\n' :: List.replicate 16 ' '

/-- The 20 spaces before `{{ "// default: " + variant.default|tojson }}`. -/
@[expose] def defaultGap : Chars := List.replicate 20 ' ' ++ ['/', '/', ' ', 'd', 'e', 'f', 'a', 'u', 'l', 't', ':', ' ']

/-- `" | null"` when `param_spec.nullable`. -/
@[expose] def nullable (spec : Option Json) : Chars :=
  if truthy (get ['n', 'u', 'l', 'l', 'a', 'b', 'l', 'e'] spec) then [' ', '|', ' ', 'n', 'u', 'l', 'l'] else []

/-- `render_typescript_type(param_spec, required_params)` (`required_params` is never read). -/
@[expose] def tsType : Nat → Option Json → Option Chars
  | 0, _ => none
  | n + 1, spec =>
    let ty := get ['t', 'y', 'p', 'e'] spec
    if isStr ['a', 'r', 'r', 'a', 'y'] ty then
      let items := get ['i', 't', 'e', 'm', 's'] spec
      let base : Option Chars :=
        if truthy items then
          let it := get ['t', 'y', 'p', 'e'] items
          if isStr ['s', 't', 'r', 'i', 'n', 'g'] it then some ['s', 't', 'r', 'i', 'n', 'g', '[', ']']
          else if isStr ['n', 'u', 'm', 'b', 'e', 'r'] it || isStr ['i', 'n', 't', 'e', 'g', 'e', 'r'] it then some ['n', 'u', 'm', 'b', 'e', 'r', '[', ']']
          else if isStr ['b', 'o', 'o', 'l', 'e', 'a', 'n'] it then some ['b', 'o', 'o', 'l', 'e', 'a', 'n', '[', ']']
          else (tsType n items).map fun inner =>
            -- `inner_type == "object | object" or inner_type|length > 50`
            if inner = ['o', 'b', 'j', 'e', 'c', 't', ' ', '|', ' ', 'o', 'b', 'j', 'e', 'c',
    't'] || decide (inner.length > 50) then ['a', 'n', 'y', '[', ']']
            else inner ++ ['[', ']']
        else some ['a', 'n', 'y', '[', ']']
      base.map (· ++ nullable spec)
    else match ty with
    | some (.arr (x :: xs)) =>
      -- `param_spec.type | join(" | ")`, or `param_spec.type[0]`
      ((x :: xs).mapM jstr).map (joinWith [' ', '|', ' '])
    | _ =>
      let one := get ['o', 'n', 'e', 'O', 'f'] spec
      if truthy one then
        -- `has_object_variants` is set inside the loop and never reaches the test
        match one with
        | some (.arr vs) =>
          (vs.mapM fun v =>
            (tsType n (some v)).bind fun s =>
              let d := get ['d', 'e', 's', 'c', 'r', 'i', 'p', 't', 'i', 'o', 'n'] (some v)
              let dv := get ['d', 'e', 'f', 'a', 'u', 'l', 't'] (some v)
              (if truthy d then (cat d).map (['/', '/', ' '] ++ ·) else some []).map fun dd =>
                s ++ dd ++ (match dv with | some j => defaultGap ++ Json.compact j | none => []))
            |>.map (joinWith [' ', '|', ' ', '\n'])
        | _ => none
      else if isStr ['s', 't', 'r', 'i', 'n', 'g'] ty then
        let e := get ['e', 'n', 'u', 'm'] spec
        if truthy e then
          match e with
          | some (.arr xs) => (xs.mapM jstr).map fun ss => '"' :: joinWith ['"', ' ', '|', ' ', '"'] ss ++ ['"']
          | _ => none
        else some (['s', 't', 'r', 'i', 'n', 'g'] ++ nullable spec)
      else if isStr ['n', 'u', 'm', 'b', 'e', 'r'] ty || isStr ['i', 'n', 't', 'e', 'g', 'e', 'r'] ty then some ['n', 'u', 'm', 'b', 'e', 'r']
      else if isStr ['b', 'o', 'o', 'l', 'e', 'a', 'n'] ty then some ['b', 'o', 'o', 'l', 'e', 'a', 'n']
      else if isStr ['o', 'b', 'j', 'e', 'c', 't'] ty then
        let props := get ['p', 'r', 'o', 'p', 'e', 'r', 't', 'i', 'e', 's'] spec
        if truthy props then
          match props with
          | some (.obj kvs) =>
            let req := requiredOf spec
            (kvs.mapM fun kv => (tsType n (some kv.2)).map fun t => kv.1 ++ opt kv.1 req ++
              propGap ++ t).map fun ps => '{' :: '\n' :: joinWith [',', ' '] ps ++ ['}']
          | _ => none
        else some ['o', 'b', 'j', 'e', 'c', 't']
      else some ['a', 'n', 'y']

/-- Fuel for `tsType`: the front end bounds nesting at 64 levels. -/
@[expose] def fuel : Nat := 66

/-- One parameter of `render_tool_namespace`. -/
@[expose] def paramText (req : Option Json) (name : Chars) (spec : Json) : Option Chars :=
  let s := some spec
  let d := get ['d', 'e', 's', 'c', 'r', 'i', 'p', 't', 'i', 'o', 'n'] s
  (if truthy d then (cat d).map fun x => ['/', '/', ' '] ++ x ++ ['\n'] else some []).bind fun dd =>
    (tsType fuel s).bind fun t =>
      let dv := get ['d', 'e', 'f', 'a', 'u', 'l', 't'] s
      let dflt : Option Chars :=
        match dv with
        | none => some []
        | some j =>
          if truthy (get ['e', 'n', 'u', 'm'] s) then (cat dv).map ([',', ' ', '/', '/', ' ', 'd', 'e', 'f', 'a', 'u', 'l', 't', ':', ' '] ++ ·)
          else if truthy (get ['o', 'n', 'e', 'O', 'f'] s) then (cat dv).map (['/', '/', ' ', 'd', 'e', 'f', 'a', 'u', 'l', 't', ':', ' '] ++ ·)
          else some ([',', ' ', '/', '/', ' ', 'd', 'e', 'f', 'a', 'u', 'l', 't', ':', ' '] ++ Json.compact j)
      dflt.map fun x => dd ++ name ++ opt name req ++ [':', ' '] ++ t ++ x ++ [',', '\n']

/-- One tool: `// DESC`, `type NAME = …;` and a blank line (`tool = tool.function`). -/
@[expose] def toolText (t : Json) : Option Chars :=
  let fn := get ['f', 'u', 'n', 'c', 't', 'i', 'o', 'n'] (some t)
  match fn with
  | some (.obj _) =>
    (cat (get ['d', 'e', 's', 'c', 'r', 'i', 'p', 't', 'i', 'o', 'n'] fn)).bind fun desc => (cat (get ['n', 'a', 'm', 'e'] fn)).bind fun name =>
      let params := get ['p', 'a', 'r', 'a', 'm', 'e', 't', 'e', 'r', 's'] fn
      let props := get ['p', 'r', 'o', 'p', 'e', 'r', 't', 'i', 'e', 's'] params
      let head := ['/', '/', ' '] ++ desc ++ ['\n'] ++ ['t', 'y', 'p', 'e', ' '] ++ name ++ [' ', '=', ' ']
      if truthy params && truthy props then
        match props with
        | some (.obj kvs) =>
          (kvs.mapM fun kv => paramText (requiredOf params) kv.1 kv.2).map fun ps =>
            head ++ ['(', '_', ':', ' ', '{', '\n'] ++ ps.flatten ++ ['}', ')', ' ', '=', '>', ' ', 'a', 'n', 'y', ';', '\n', '\n']
        | _ => none
      else some (head ++ ['(', ')', ' ', '=', '>', ' ', 'a', 'n', 'y', ';', '\n', '\n'])
  | _ => none

/-- `render_tool_namespace("functions", tools)` -/
@[expose] def toolsText (tools : List Json) : Option Chars :=
  (tools.mapM toolText).map fun ts => ['#', '#', ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's', '\n', '\n',
    'n', 'a', 'm', 'e', 's', 'p', 'a', 'c', 'e', ' ', 'f', 'u', 'n', 'c',
    't', 'i', 'o', 'n', 's', ' ', '{', '\n', '\n'] ++ ts.flatten ++ ['}', ' ', '/', '/', ' ', 'n', 'a', 'm', 'e', 's', 'p', 'a', 'c', 'e',
    ' ', 'f', 'u', 'n', 'c', 't', 'i', 'o', 'n', 's']

end Verified.Harmony

end
