module

public import Verified.Ffi

public section

/-!
# `lvt-oracle`: the two FFI services as a line-oriented process

A second, process-level way to run the proven definitions (the first is the shared library):
each input line is `layout HEX` or `unlayout HEX`, where `HEX` is a wire-version-4 request
(`Verified/Ffi.lean`, built by `pybind/lvt/runtime/wire.py`) in hexadecimal; each answer is one
line, the hexadecimal answer bytes of `layoutService` / `unlayoutService` (exactly what
`lvt_layout_bytes` / `lvt_unlayout_bytes` return), or `error …` for a malformed line. Answers
are flushed at once, so a driver can talk to the process interactively.

Not imported by `Verified.lean`: `lake build` builds it as the executable `lvt-oracle`.
-/

namespace Verified
namespace Oracle

open Verified.Ffi

/-- The value of a hexadecimal digit. -/
def hexVal (c : Char) : Option Nat :=
  if '0' ≤ c ∧ c ≤ '9' then some (c.toNat - 48)
  else if 'a' ≤ c ∧ c ≤ 'f' then some (c.toNat - 87)
  else if 'A' ≤ c ∧ c ≤ 'F' then some (c.toNat - 55)
  else none

/-- Bytes from hexadecimal digits (`none` on an odd count or a non-digit). -/
def unhex : List Char → Option Bytes
  | [] => some []
  | a :: b :: rest =>
      match hexVal a, hexVal b with
      | some x, some y => (unhex rest).map ((x * 16 + y).toUInt8 :: ·)
      | _, _ => none
  | [_] => none

/-- Bytes as lowercase hexadecimal. -/
def hex (bs : Bytes) : String :=
  String.join (bs.map fun b => String.singleton (Json.hexDigit (b.toNat / 16)) ++
    String.singleton (Json.hexDigit (b.toNat % 16)))

/-- The words of a line (separated by spaces; line ends dropped). -/
def words (line : String) : List (List Char) :=
  (splitChar ' ' (line.toList.filter fun c => c ≠ '\n' ∧ c ≠ '\r')).filter (· ≠ [])

/-- Answer one input line. -/
def handle (line : String) : String :=
  match words line with
  | [op, h] =>
      match unhex h with
      | none => "error bad hex"
      | some bs =>
          if op = ['l', 'a', 'y', 'o', 'u', 't'] then hex (layoutService bs)
          else if op = ['u', 'n', 'l', 'a', 'y', 'o', 'u', 't'] then hex (unlayoutService bs)
          else "error unknown op (expected layout or unlayout)"
  | _ => "error expected: OP HEX"

end Oracle
end Verified

/-- Read requests line by line until end of input; answer each on its own line. -/
def main : IO Unit := do
  let stdin ← IO.getStdin
  let stdout ← IO.getStdout
  repeat
    let line ← stdin.getLine
    if line.isEmpty then break
    if line.all Char.isWhitespace then continue
    stdout.putStrLn (Verified.Oracle.handle line)
    stdout.flush

end
