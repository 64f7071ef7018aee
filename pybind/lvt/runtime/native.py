"""cffi (ABI mode) binding of the Lean-built shared library (wire version 4: ``LVT_WIRE_VERSION``
of ``ffi/lvt.h``, :data:`lvt.runtime.wire.WIRE_VERSION`).

The library is built by ``lake build`` (the shared-library facet of the Lean library
``Verified``, with the C shim ``ffi/lvt_shim.c`` linked in). Python sees only the plain C API of
``ffi/lvt.h``: bytes in (:mod:`lvt.runtime.wire` requests), bytes out (answers); no ``lean_object*``
ever crosses into Python. ``lvt_layout`` runs ``Format.lower`` and ``Format.layout`` of
``Verified/Spec`` (the Python side then encodes the spans, ``core.encode_items``);
``lvt_unlayout`` runs ``Format.unlayout`` on the symbols ``core.decode_syms`` read.

Discovery order (first hit wins):

1. ``$LVT_NATIVE_LIB``: a path to the library. If it is set and the file is missing or cannot
   be loaded, :func:`load` raises :class:`lvt.errors.NativeLibraryError` (no silent fallback);
   set it to the empty string to mean "unset";
2. package data: ``lvt/_lib/`` (wheels built on a machine with a toolchain ship it there);
3. the checkout: ``.lake/build/lib/`` next to ``pybind/`` (what ``lake build`` produces);
4. otherwise :func:`load` returns ``None`` and :func:`reason` says why; ``lvt`` then uses the
   reference backend.

``LVT_BACKEND=reference`` skips discovery: :func:`load` returns ``None`` (reason given).

The library depends on the Lean runtime libraries of the toolchain. They are preloaded from
``$LVT_LEAN_LIBDIR`` or from ``lean --print-libdir`` when ``lean`` is on ``PATH`` (or from the
elan toolchain pinned by ``lean-toolchain``), so no ``LD_LIBRARY_PATH`` is needed.

Threads: cffi releases the GIL around every call; the shim initialises the Lean runtime once
(``pthread_once``) and registers each calling thread with it on first use, so a
:class:`NativeBackend` may be used from several Python threads at once.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lvt.errors import NativeLibraryError
from lvt.model import Conversation
from lvt.runtime import core, wire

__all__ = [
    "CDEF",
    "ENV_BACKEND",
    "ENV_LEAN_LIBDIR",
    "ENV_NATIVE_LIB",
    "NativeBackend",
    "candidate_paths",
    "load",
    "load_path",
    "reason",
    "reset",
]

ENV_NATIVE_LIB = "LVT_NATIVE_LIB"
ENV_LEAN_LIBDIR = "LVT_LEAN_LIBDIR"
ENV_BACKEND = "LVT_BACKEND"

CDEF = """
int lvt_abi_version(void);
int lvt_init(void);
int lvt_layout(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n);
int lvt_unlayout(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n);
void lvt_free(uint8_t *p);
"""
"""The C declarations of ``ffi/lvt.h`` that the binding uses (kept in sync by a test)."""

ABI_VERSION = 2
"""``LVT_ABI_VERSION`` this binding speaks."""

RC_NAMES = {
    0: "LVT_OK",
    1: "LVT_ERR_INIT (Lean runtime or module initialisation failed)",
    2: "LVT_ERR_ARG (bad arguments)",
    3: "LVT_ERR_NOMEM (out of memory)",
    4: "LVT_ERR_THREAD (could not start the large-input worker thread)",
}

_PACKAGE_LIB_DIR = Path(__file__).resolve().parents[1] / "_lib"
_CHECKOUT = Path(__file__).resolve().parents[3]
_SUFFIXES = (".so", ".dylib", ".dll")


class NativeBackend:
    """The proven lowering, layout and unlayout, run natively through the Lean-built library.

    :meth:`layout` has the result of ``family.layout(family.lower(c))`` (``None`` where
    ``lower`` refuses); :meth:`unlayout` that of ``family.unlayout(s)``.
    """

    name = "native"

    def __init__(self, ffi: Any, lib: Any, path: Path) -> None:
        self._ffi = ffi
        self._lib = lib
        self.path = path

    def _call(self, fn: Any, what: str, request: bytes) -> bytes:
        ffi = self._ffi
        out = ffi.new("uint8_t **")
        out_n = ffi.new("size_t *")
        buf = ffi.from_buffer("uint8_t[]", request)
        rc = fn(buf, len(request), out, out_n)
        if rc != 0:
            raise NativeLibraryError(f"{what} failed: {RC_NAMES.get(rc, f'code {rc}')}")
        try:
            return bytes(ffi.buffer(out[0], out_n[0]))
        finally:
            self._lib.lvt_free(out[0])

    def layout_bytes(self, request: bytes) -> bytes:
        """Raw call of ``lvt_layout`` (wire bytes in, wire bytes out)."""
        return self._call(self._lib.lvt_layout, "lvt_layout", request)

    def unlayout_bytes(self, request: bytes) -> bytes:
        """Raw call of ``lvt_unlayout`` (wire bytes in, wire bytes out)."""
        return self._call(self._lib.lvt_unlayout, "lvt_unlayout", request)

    def layout(self, family: Any, conversation: Conversation) -> list[core.Item] | None:
        """``(lower c).map layout`` run by Lean: the items, or ``None`` when the format
        cannot express the conversation."""
        answer = self.layout_bytes(wire.encode_layout_request(family, conversation))
        return wire.decode_layout_answer(answer)

    def unlayout(self, family: Any, s: core.Stream) -> Any:
        """``unlayout s`` run by Lean: the lowered conversation (owners 0) or ``None``."""
        answer = self.unlayout_bytes(wire.encode_unlayout_request(family, s))
        return wire.decode_unlayout_answer(family, answer)

    def __repr__(self) -> str:
        return f"NativeBackend({str(self.path)!r})"


# ---------------------------------------------------------------------------------------------
# Discovery


def _is_shared_lib(p: Path) -> bool:
    return p.is_file() and any(p.name.endswith(s) or f"{s}." in p.name for s in _SUFFIXES)


def _rank(p: Path) -> tuple[int, str]:
    # Prefer the library facet of `Verified` (libVerified.so, or a package-prefixed spelling)
    # over anything else that happens to match.
    stem = p.name.split(".")[0].removeprefix("lib")
    exact = stem in ("Verified", "lvt_Verified", "lvt")
    return (0 if exact else 1, p.name)


def candidate_paths() -> list[tuple[str, Path]]:
    """Library files to try, in discovery order, each with where it was found."""
    out: list[tuple[str, Path]] = []
    if _PACKAGE_LIB_DIR.is_dir():
        found = [p for p in _PACKAGE_LIB_DIR.iterdir() if _is_shared_lib(p)]
        out += [("package data", p) for p in sorted(found, key=_rank)]
    lake_lib = _CHECKOUT / ".lake" / "build" / "lib"
    if lake_lib.is_dir():
        found = [p for p in lake_lib.rglob("*") if _is_shared_lib(p) and "Verified" in p.name]
        out += [("checkout .lake/build/lib", p) for p in sorted(found, key=_rank)]
    return out


def _lean_libdir() -> Path | None:
    env = os.environ.get(ENV_LEAN_LIBDIR)
    if env:
        return Path(env)
    lean = shutil.which("lean")
    if lean:
        try:
            proc = subprocess.run(
                [lean, "--print-libdir"], capture_output=True, text=True, timeout=30, check=False
            )
            if proc.returncode == 0 and proc.stdout.strip():
                return Path(proc.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    pin = _CHECKOUT / "lean-toolchain"
    if pin.exists():
        name = pin.read_text().strip().replace("/", "--").replace(":", "---")
        guess = Path.home() / ".elan" / "toolchains" / name / "lib" / "lean"
        if guess.is_dir():
            return guess
    return None


_preloaded: list[Any] = []


def _preload_lean_runtime() -> str:
    """Load the toolchain's shared runtime libraries globally; return a note for `reason`."""
    libdir = _lean_libdir()
    if libdir is None or not libdir.is_dir():
        return "Lean runtime directory not found (set LVT_LEAN_LIBDIR or put `lean` on PATH)"
    pending = sorted(
        p for p in libdir.iterdir() if _is_shared_lib(p) and "shared" in p.name.lower()
    )
    # Load in dependency order by retrying until no progress is made.
    for _ in range(len(pending) + 1):
        if not pending:
            break
        failed = []
        for p in pending:
            try:
                _preloaded.append(ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL))
            except OSError:
                failed.append(p)
        if len(failed) == len(pending):
            break
        pending = failed
    return f"Lean runtime from {libdir}"


def load_path(path: Path) -> NativeBackend:
    """Load the library at ``path`` and initialise it; raise NativeLibraryError on failure."""
    try:
        import cffi
    except ImportError as e:  # pragma: no cover - cffi is a dependency
        raise NativeLibraryError(f"cffi is not installed: {e}") from e
    if not path.is_file():
        raise NativeLibraryError(f"native library {path} does not exist")
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    try:
        lib = ffi.dlopen(str(path))
    except OSError:
        note = _preload_lean_runtime()
        try:
            lib = ffi.dlopen(str(path))
        except OSError as e:
            raise NativeLibraryError(f"cannot load {path}: {e} ({note})") from e
    try:
        version = lib.lvt_abi_version()
    except AttributeError as e:
        raise NativeLibraryError(f"{path} does not export the lvt C API: {e}") from e
    if version != ABI_VERSION:
        raise NativeLibraryError(f"{path} has C API version {version}, expected {ABI_VERSION}")
    rc = lib.lvt_init()
    if rc != 0:
        raise NativeLibraryError(f"lvt_init failed in {path}: {RC_NAMES.get(rc, rc)}")
    return NativeBackend(ffi, lib, path)


_lock = threading.Lock()
_state: dict[str, Any] = {}


def reset() -> None:
    """Forget the cached discovery result (tests use this after changing the environment)."""
    with _lock:
        _state.clear()


def _discover() -> tuple[NativeBackend | None, str]:
    if os.environ.get(ENV_BACKEND, "").strip().lower() == "reference":
        return None, f"reference backend forced by ${ENV_BACKEND}=reference"
    env = os.environ.get(ENV_NATIVE_LIB)
    if env:
        path = Path(env)
        if not path.is_file():
            raise NativeLibraryError(f"{ENV_NATIVE_LIB}={env}: no such file")
        backend = load_path(path)
        return backend, f"native library from ${ENV_NATIVE_LIB}: {path}"
    errors: list[str] = []
    for where, path in candidate_paths():
        try:
            backend = load_path(path)
        except NativeLibraryError as e:
            errors.append(f"{where}: {e}")
            continue
        return backend, f"native library from {where}: {path}"
    if errors:
        return None, "native library found but not loadable: " + "; ".join(errors)
    return None, (
        "no native library: $LVT_NATIVE_LIB unset, nothing in lvt/_lib/, and no "
        f"{_CHECKOUT / '.lake/build/lib'} (build it with `lake build`)"
    )


def load() -> NativeBackend | None:
    """The native backend, or ``None`` (then :func:`reason` says why).

    Raises:
        NativeLibraryError: ``$LVT_NATIVE_LIB`` is set but the library is missing or broken.
    """
    with _lock:
        if "backend" not in _state:
            backend, why = _discover()
            _state["backend"] = backend
            _state["reason"] = why
        return _state["backend"]


def reason() -> str:
    """Why :func:`load` returned what it returned (runs discovery if needed)."""
    try:
        load()
    except NativeLibraryError as e:
        return str(e)
    return str(_state.get("reason", ""))


if __name__ == "__main__":  # pragma: no cover - manual diagnostics
    b = load()
    print(b if b is not None else "reference backend", "-", reason(), file=sys.stderr)
