module

public import Verified.Spec.Token

public section

/-!
# JSON values and the layouts templates write them in

Tool definitions are JSON objects, and templates write them with Jinja's `tojson` filter as
`transformers` defines it: Python's `json.dumps(x, ensure_ascii=False)` with the default
separators (`", "` and `": "`), or with `indent=4` (separators `","` and `": "`, one member per
line). Keys keep their order (`sort_keys=False`).

Numbers are kept as the text Python writes for them (`num "1.5"`), so no floating-point
printing is modelled; text is `Chars`, like every text of the model. Strings are escaped as
`json.dumps` does with `ensure_ascii=False`:
`"` and `\` with a backslash, the control characters `\b \f \n \r \t` by their short forms,
every other character below U+0020 as `\u00XX` (lowercase hex), everything else verbatim.
-/

namespace Verified

/-- A JSON value. -/
inductive Json where
  | null
  | bool (b : Bool)
  /-- A number, as the text Python's `json.dumps` writes for it. -/
  | num (s : Chars)
  | str (s : Chars)
  | arr (xs : List Json)
  /-- An object; members in order. -/
  | obj (kvs : List (Chars × Json))
  deriving Repr

namespace Json

/-- A lowercase hexadecimal digit. -/
@[expose] def hexDigit (n : Nat) : Char :=
  if n < 10 then Char.ofNat (48 + n) else Char.ofNat (87 + n)

/-- The escaped form of one character inside a JSON string. -/
@[expose] def escapeChar (c : Char) : Chars :=
  if c = '"' then ['\\', '"']
  else if c = '\\' then ['\\', '\\']
  else if c = '\n' then ['\\', 'n']
  else if c = '\r' then ['\\', 'r']
  else if c = '\t' then ['\\', 't']
  else if c.toNat = 8 then ['\\', 'b']
  else if c.toNat = 12 then ['\\', 'f']
  else if c.toNat < 32 then
    ['\\', 'u', '0', '0', hexDigit (c.toNat / 16), hexDigit (c.toNat % 16)]
  else [c]

/-- A string as a JSON string literal (quotes included). -/
@[expose] def quote (cs : Chars) : Chars :=
  '"' :: cs.flatMap escapeChar ++ ['"']

/-- Four spaces per level. -/
@[expose] def indentOf (level : Nat) : Chars :=
  (List.replicate (4 * level) ' ')

mutual
/-- `json.dumps(x, ensure_ascii=False)`. -/
@[expose] def compact : Json → Chars
  | .null => ['n', 'u', 'l', 'l']
  | .bool true => ['t', 'r', 'u', 'e']
  | .bool false => ['f', 'a', 'l', 's', 'e']
  | .num s => s
  | .str s => quote s
  | .arr xs => '[' :: compactItems xs ++ [']']
  | .obj kvs => '{' :: compactMembers kvs ++ ['}']

/-- The items of a compact array, separated by `", "`. -/
@[expose] def compactItems : List Json → Chars
  | [] => []
  | [x] => compact x
  | x :: xs => compact x ++ [',', ' '] ++ compactItems xs

/-- The members of a compact object, separated by `", "`. -/
@[expose] def compactMembers : List (Chars × Json) → Chars
  | [] => []
  | [(k, v)] => quote k ++ [':', ' '] ++ compact v
  | (k, v) :: kvs => quote k ++ [':', ' '] ++ compact v ++ [',', ' '] ++
      compactMembers kvs
end

mutual
/-- `json.dumps(x, ensure_ascii=False, indent=4)` for a value at nesting `level`. -/
@[expose] def pretty (level : Nat) : Json → Chars
  | .null => ['n', 'u', 'l', 'l']
  | .bool true => ['t', 'r', 'u', 'e']
  | .bool false => ['f', 'a', 'l', 's', 'e']
  | .num s => s
  | .str s => quote s
  | .arr [] => ['[', ']']
  | .arr xs => '[' :: '\n' :: prettyItems (level + 1) xs ++ '\n' :: indentOf level ++ [']']
  | .obj [] => ['{', '}']
  | .obj kvs => '{' :: '\n' :: prettyMembers (level + 1) kvs ++ '\n' :: indentOf level ++ ['}']

/-- The items of an indented array, one per line at `level`. -/
@[expose] def prettyItems (level : Nat) : List Json → Chars
  | [] => []
  | [x] => indentOf level ++ pretty level x
  | x :: xs => indentOf level ++ pretty level x ++ [',', '\n'] ++ prettyItems level xs

/-- The members of an indented object, one per line at `level`. -/
@[expose] def prettyMembers (level : Nat) : List (Chars × Json) → Chars
  | [] => []
  | [(k, v)] => indentOf level ++ quote k ++ [':', ' '] ++ pretty level v
  | (k, v) :: kvs => indentOf level ++ quote k ++ [':', ' '] ++ pretty level v ++
      [',', '\n'] ++ prettyMembers level kvs
end

end Json

end Verified

end
