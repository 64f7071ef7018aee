import Lake
open Lake DSL

/-! Lake package `lvt`: the verified library, the oracle executable and the shared library
that the Python package `lvt` loads through cffi. -/

package lvt where
  leanOptions := #[⟨`autoImplicit, false⟩, ⟨`relaxedAutoImplicit, false⟩]

@[default_target]
lean_lib Verified where
  roots := #[`Verified]
