import Lake
open System Lake DSL

/-! Lake package `lvt`: the verified library (`lake build` checks every proof).

The Python package `lvt` runs the transliteration of `Verified/Spec` (`pybind/lvt/core.py`,
`pybind/lvt/families/`), differential-tested against the Lean kernel's evaluation of the same
definitions (`tests/lean/test_differential.py`). -/

package lvt where
  leanOptions := #[⟨`autoImplicit, false⟩, ⟨`relaxedAutoImplicit, false⟩]

/-- The verified library: the specification (`Verified/Spec`) and its theorems
(`Verified/Thm`). -/
@[default_target]
lean_lib Verified where
  roots := #[`Verified]
