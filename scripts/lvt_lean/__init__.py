"""The Lean checker behind ``scripts/lean_check``, one job per module.

* :mod:`.header`: Lean's module-header grammar (``module``, ``prelude``, imports) and the
  staging of a module with ``noncomputable section`` after its header;
* :mod:`.scan`: comment and string stripping, the proof-escape scan, the theorem count;
* :mod:`.graph`: the project modules, their import graph and their cache keys;
* :mod:`.options`: the Lean options of ``lakefile.lean``, as command-line arguments;
* :mod:`.toolchain`: installing and patching the WebAssembly Lean, and its identity;
* :mod:`.store`: the cache of checked modules (markers with artefact digests);
* :mod:`.runner`: running Lean on one module and reading its messages;
* :mod:`.cli`: the command line.
"""
