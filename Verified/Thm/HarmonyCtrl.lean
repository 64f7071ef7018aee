module

public import Verified.Thm.Harmony
public import Verified.Thm.QwenLayout

public section

/-!
# gpt-oss: every control token a layout places is reserved

`ctrl_reserved`: the `ctrl_reserved` field of `Format.Lawful` for the Harmony format (the
layout places only `<|start|>`, `<|message|>`, `<|channel|>`, `<|end|>`, `<|return|>` and
`<|call|>`; text and token payloads place none).
-/

namespace Verified.Harmony

open Verified

/-- The control tokens a layout may place. -/
@[expose] def HarmonyIds.ctrls (i : HarmonyIds) : List Token :=
  [i.start, i.message, i.channel, i.endT, i.ret, i.call]

theorem ctrls_pay (p : LPay) (o : Nat) (l : Bool) : ctrls (pay p o l).piece.syms = [] := by
  cases p with
  | text cs => exact Qwen.ctrls_map_ch cs
  | toks ts => exact Qwen.ctrls_map_tok ts

theorem ctrls_ctl (t : Token) (o : Nat) (l : Bool) : ctrls (ctl t o l).piece.syms = [t] := rfl

theorem ctrls_txt (cs : Chars) (o : Nat) (l : Bool) : ctrls (txt cs o l).piece.syms = [] :=
  Qwen.ctrls_map_ch cs

theorem ctrls_toks (ts : List Token) (a : Ann) : ctrls (Item.piece ⟨.toks ts, a⟩).syms = [] :=
  Qwen.ctrls_map_tok ts

theorem ctrls_piece_toks (ts : List Token) : ctrls (Piece.toks ts).syms = [] :=
  Qwen.ctrls_map_tok ts

theorem ctrls_turnItems (f : HarmonyFmt) (t : HTurn) :
    ∀ it ∈ turnItems f t, ∀ x ∈ ctrls it.piece.syms, x ∈ f.ids.ctrls := by
  cases t with
  | final p r o =>
    cases r <;> simp [turnItems, head, body, chan, promptItems, ctrls_ctl, ctrls_txt, ctrls_pay,
      ctrls_toks, ctrls_piece_toks, HarmonyIds.ctrls]
  | _ =>
    simp [turnItems, head, body, chan, promptItems, ctrls_ctl, ctrls_txt, ctrls_pay,
      ctrls_toks, ctrls_piece_toks, HarmonyIds.ctrls]

theorem ctrls_layout (f : HarmonyFmt) (l : HConv) :
    ∀ x ∈ ctrls (syms (layout f l)), x ∈ f.ids.ctrls := by
  intro x hx
  obtain ⟨it, hit, h⟩ := Qwen.mem_ctrls_syms hx
  unfold layout at hit
  rcases List.mem_append.mp hit with hit | hit
  · rcases List.mem_append.mp hit with hit | hit
    · simp only [head, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at hit
      rcases hit with (rfl | rfl) | rfl | rfl | rfl <;>
        simp_all [ctrls_ctl, ctrls_txt, HarmonyIds.ctrls]
    · obtain ⟨t, -, ht⟩ := List.mem_flatMap.mp hit
      exact ctrls_turnItems f t it ht x h
  · split at hit
    · simp only [promptItems, head, List.mem_cons, List.not_mem_nil, or_false] at hit
      rcases hit with rfl | rfl <;> simp_all [ctrls_ctl, ctrls_txt, HarmonyIds.ctrls]
    · cases hit

/-- Every control token of a layout is reserved. -/
theorem ctrl_reserved (f : HarmonyFmt) (l : HConv) :
    ∀ t ∈ ctrls (syms ((format f).layout l)), isReserved (format f).reserved t = true := by
  intro t ht
  have h := ctrls_layout f l t ht
  simp only [HarmonyIds.ctrls, List.mem_cons, List.not_mem_nil, or_false] at h
  simp only [format, isReserved, HarmonyIds.reserved, List.elem_eq_mem, decide_eq_true_eq,
    List.mem_append, List.mem_cons, List.not_mem_nil, or_false]
  exact Or.inl h

end Verified.Harmony

end
