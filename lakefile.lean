import Lake
open System Lake DSL

/-! Lake package `lvt`: the verified library, the oracle executable and the shared library
that the Python package `lvt` loads through cffi.

`lake build` builds the proofs (`.olean`s), the shared library of `Verified` with the C shim
`ffi/lvt_shim.c` linked in (under `.lake/build/lib/`), and the executable `lvt-oracle`
(`.lake/build/bin/lvt-oracle`).

Loader path: the shared library depends on the Lean runtime libraries of the toolchain
(`libleanshared` and friends, in `lean --print-libdir`). The Python loader
(`pybind/lvt/runtime/native.py`) preloads them from there (or from `$LVT_LEAN_LIBDIR`); other
callers put that directory on `LD_LIBRARY_PATH` (`DYLD_LIBRARY_PATH` on macOS), e.g.
`LD_LIBRARY_PATH=$(lean --print-libdir) python …`.

The Python package `lvt` runs the transliteration of `Verified/Spec`
(`pybind/lvt/runtime/core.py`, `pybind/lvt/families/`) where the library is not built,
differential-tested against the Lean kernel's evaluation of the same definitions
(`tests/lean/test_differential.py`); the FFI wire (version 4) is kernel-checked against `pybind/lvt/runtime/wire.py` (`tests/native/`). -/

package lvt where
  leanOptions := #[⟨`autoImplicit, false⟩, ⟨`relaxedAutoImplicit, false⟩]

/-- The C shim: plain C entry points (`lvt_init`, `lvt_layout`, `lvt_unlayout`, `lvt_free`)
around the `@[export]` functions of `Verified/Ffi.lean`. -/
input_file lvt_shim.c where
  path := "ffi" / "lvt_shim.c"
  text := true

/-- The shim compiled to a position-independent object (C compiler: `$CC`, default `cc`). -/
target lvt_shim.o pkg : FilePath := do
  let srcJob ← lvt_shim.c.fetch
  let oFile := pkg.buildDir / "ffi" / "lvt_shim.o"
  let cc := (← IO.getEnv "CC").getD "cc"
  let weakArgs := #["-I", (← getLeanIncludeDir).toString, "-I", (pkg.dir / "ffi").toString]
  buildO oFile srcJob weakArgs #["-fPIC", "-O2", "-std=gnu11", "-pthread"] cc getLeanTrace

/-- The verified library: the specification (`Verified/Spec`), its theorems (`Verified/Thm`)
and the FFI (`Verified/Ffi.lean`). Its shared-library facet (`lake build Verified:shared`, part
of the default build) is what `lvt` loads: the modules of `Verified` (including `Verified.Ffi`
and its exports `lvt_layout_bytes` / `lvt_unlayout_bytes`) plus the shim. -/
@[default_target]
lean_lib Verified where
  roots := #[`Verified]
  globs := #[.one `Verified, .one `Verified.Ffi]
  moreLinkObjs := #[lvt_shim.o]
  -- The shim references the module initializer weakly under two spellings; macOS's linker
  -- needs to be told that the one which is not produced may stay undefined.
  moreLinkArgs := if System.Platform.isOSX then
      #["-Wl,-U,_initialize_Verified_Ffi", "-Wl,-U,_initialize_lvt_Verified_Ffi"]
    else #[]
  defaultFacets := #[LeanLib.leanArtsFacet, LeanLib.sharedFacet]

/-- The oracle: the two FFI services as a line-oriented process (`Verified/Main.lean`). -/
@[default_target]
lean_exe «lvt-oracle» where
  root := `Verified.Main
