module

public import Verified.Spec.Harmony
public import Verified.Thm.Items

public section

/-!
# Theorems of the gpt-oss (Harmony) family

* `gptOssIds_wf`: the reference control ids are pairwise distinct (`wellFormed`), by `decide`.
* `exact_drops_history_analysis`, `stable_keeps_history_analysis`: on a concrete conversation
  whose first answer carries reasoning, the exact format writes no analysis message for it
  (the template's "CoT is dropped during all previous turns") and the stable one writes it;
  both write the last message's analysis and end it with `<|return|>`.
* `unlayout_layout_example`: `unlayout` reads a concrete render (system, developer, user,
  call, result, analysis, final) back as a lowered conversation that lays out to the same
  symbols, with its six turns and no prompt (stated on symbols: the derived equality of
  `HConv` is not exposed to the kernel across modules).

* `syms_erase`: erasing owners keeps a layout's symbols
  (the `syms_erase` field of `Format.Lawful`).

`ctrl_reserved` is in `Thm/HarmonyCtrl.lean`; the other fields of `Format.Lawful`
(`unlayout_layout`, `layout_unlayout`) in `Thm/HarmonyRead.lean` and `Thm/HarmonyRound.lean`,
which assembles `lawful`.
-/

namespace Verified.Harmony

open Verified

theorem gptOssIds_wf : gptOssIds.wf = true := by
  set_option maxRecDepth 100000 in decide

/-- The exact format on 2026-12-01, medium effort. -/
@[expose] def fExact : HarmonyFmt := ⟨gptOssIds, .exact, ['2', '0', '2', '6', '-', '1', '2', '-', '0', '1'], .medium, defaultIdentity⟩

/-- The stable format with the same options. -/
@[expose] def fStable : HarmonyFmt := { fExact with mode := .stable }

/-- user, assistant (reasoning + answer), user, assistant (reasoning + answer). -/
@[expose] def twoTurns : Conversation :=
  ⟨[⟨.user, [.plain (.text ['a'])]⟩, ⟨.assistant, [.reasoning (.text ['r']), .plain (.text ['b'])]⟩,
    ⟨.user, [.plain (.text ['c'])]⟩, ⟨.assistant, [.reasoning (.text ['s']), .plain (.text ['d'])]⟩],
    none, false⟩

/-- The symbols of a lowered conversation of `twoTurns` (its system message has no tools). -/
@[expose] def twoSyms (f : HarmonyFmt) (ts : List HTurn) : List Sym :=
  syms (layout f ⟨systemText f false, ts, none⟩)

theorem exact_drops_history_analysis :
    (lower fExact twoTurns).map (fun q => syms (layout fExact q)) =
      some (twoSyms fExact [.user (.text ['a']) 0, .final (.text ['b']) false 1, .user (.text ['c']) 2,
        .analysis (.text ['s']) 3, .final (.text ['d']) true 3]) := by
  set_option maxRecDepth 100000 in decide

theorem stable_keeps_history_analysis :
    (lower fStable twoTurns).map (fun q => syms (layout fStable q)) =
      some (twoSyms fStable [.user (.text ['a']) 0, .analysis (.text ['r']) 1,
        .final (.text ['b']) false 1, .user (.text ['c']) 2, .analysis (.text ['s']) 3,
        .final (.text ['d']) true 3]) := by
  set_option maxRecDepth 100000 in decide

/-- A lowered conversation with every kind of text turn. -/
@[expose] def example1 : HConv :=
  ⟨systemText fExact true,
    [.dev [] (.text ['#', ' ', 'I', 'n', 's', 't', 'r', 'u', 'c', 't', 'i', 'o', 'n', 's',
    '\n', '\n', 'B', 'e', ' ', 'b', 'r', 'i', 'e', 'f', '.', '\n', '\n', '#',
    ' ', 'T', 'o', 'o', 'l', 's', '\n', '\n', 'x']) [] 0, .user (.text ['H', 'i']) 1, .call ['f'] ['{', '}'] 2, .result ['f'] ['"', 'o', 'k', '"'] 3,
      .analysis (.text ['r']) 4, .final (.text ['d', 'o', 'n', 'e']) true 4], none⟩

theorem unlayout_layout_example :
    (unlayout fExact (syms (layout fExact example1))).map (fun q => syms (layout fExact q)) =
      some (syms (layout fExact example1)) := by
  set_option maxRecDepth 100000 in decide

theorem unlayout_layout_example_shape :
    (unlayout fExact (syms (layout fExact example1))).map (fun q => (q.turns.length, q.prompt)) =
      some (6, none) := by
  set_option maxRecDepth 100000 in decide

theorem syms_turnItems_erase (f : HarmonyFmt) (t : HTurn) :
    syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t with
  | dev pre p post o => cases p <;> rfl
  | user p o => cases p <;> rfl
  | analysis p o => cases p <;> rfl
  | final p r o => cases p <;> rfl
  | call n a o => rfl
  | result n q o => rfl
  | sampled ts o => rfl

/-- Erasing owners does not change the symbols of a layout. -/
theorem syms_erase (f : HarmonyFmt) (l : HConv) :
    syms ((format f).layout ((format f).erase l)) = syms ((format f).layout l) := by
  obtain ⟨sys, turns, p⟩ := l
  cases p <;>
    simp only [format, HConv.erase, layout, syms_append, syms_flatMap, List.flatMap_map,
      syms_turnItems_erase, Option.map] <;> rfl

end Verified.Harmony

end
