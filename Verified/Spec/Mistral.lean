module

public import Verified.Spec.MistralLower

public section

/-!
# The Mistral (tekken) family

What `mistral-common`'s `MistralTokenizer.encode_chat_completion` (1.13.1) writes with the
instruct tokenizers v7, v11 and v13, as a `Format`: ids, turns and layout in
`Spec/MistralLayout.lean` (what each turn writes, quoting the constructs it mirrors), lowering in
`Spec/MistralLower.lean`; here the inverse of the layout (`unlayout`: a symbol stream read back
as turns, owners 0) and the format itself.
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

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
