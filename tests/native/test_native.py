"""Tests of the native path (wire version 4): the Lean exports, the C shim, the cffi binding,
the wire codec and the encoder's dispatch.

Where a Lean toolchain is installed (``lake`` on ``PATH``), ``lake build`` runs and the native
backend is compared with the reference backend on hypothesis conversations, and the
``lvt-oracle`` executable against both. Where it is not (these machines), those tests are
*skipped with the reason*, and these run instead:

* the shim compiles with ``gcc -Wall -Wextra -Werror`` against a stub of ``lean.h`` and, linked
  with a mock of the Lean runtime, is driven from Python through :mod:`lvt.runtime.native` (loading,
  one-time initialisation, per-thread registration from many Python threads, the large-input
  worker thread, error answers);
* every function the shim declares as a Lean export exists in ``Verified/Ffi.lean`` with the
  same arity, and vice versa; the cffi declarations match ``ffi/lvt.h``;
* the wire codec round-trips on hypothesis data and rejects every truncation;
* :class:`lvt.ChatEncoder` dispatches lower + layout and unlayout to a native backend (here a
  loopback one that goes through the wire both ways) and gets the reference results;
* (``lean`` marker, ``test_wire_kernel.py``) the Lean kernel evaluates the exported services
  on requests built by :mod:`lvt.runtime.wire` for real conversations (Qwen3 and Llama 3.1 with
  tools, a tool call, a tool result and reasoning) and gets exactly the answer
  :mod:`lvt.runtime.wire` builds from the reference.

``lakefile.lean`` itself cannot be elaborated by the WebAssembly Lean (importing ``Lake`` fails
there: the shipped Lake ``.olean`` files carry no code for Lake's own elaborators), so only its
text is checked here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lvt
from lvt.errors import ConversationError, NativeLibraryError, ParseError
from lvt.model import Conversation, Message, Plain, Role, Tokens
from lvt.runtime import core, wire
from lvt.runtime import native as _native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from strategies import conversations

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nativecases import FORMATS, encoder, kernel_cases

REPO = Path(__file__).resolve().parents[2]
FFI_LEAN = REPO / "Verified" / "Ffi.lean"
# The wire encoders (with `wireVersion`) and decoders that `Verified/Ffi.lean` imports.
FFI_ENCODE = REPO / "Verified" / "Ffi" / "Encode.lean"
FFI_DECODE = REPO / "Verified" / "Ffi" / "Decode.lean"
SHIM = REPO / "ffi" / "lvt_shim.c"
HEADER = REPO / "ffi" / "lvt.h"
MOCK = REPO / "ffi" / "test" / "mock_lean.c"

LAKE = shutil.which("lake")
NO_LAKE = "no Lean toolchain here (`lake` is not on PATH): native build and differential skipped"
CC = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")

WIRE = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def cases(draw: st.DrawFn) -> tuple[lvt.ChatEncoder, Conversation]:
    k = draw(st.integers(0, len(FORMATS) - 1))
    return encoder(k), draw(conversations(FORMATS[k][0], max_turns=2))


# ---------------------------------------------------------------------------------------------
# Wire codec (pure Python, always runs)


@WIRE
@given(cases())
def test_layout_request_and_answer_round_trip(case: tuple[lvt.ChatEncoder, Conversation]) -> None:
    enc, c = case
    c = enc.normalize(c)
    req = wire.encode_layout_request(enc.family, c)
    fam, c2 = wire.decode_layout_request(req)
    assert c2 == c
    assert wire.encode_family(fam) == wire.encode_family(enc.family)
    assert (fam.reserved, type(fam)) == (enc.family.reserved, type(enc.family))
    try:
        items: list[core.Item] | None = enc.family.layout(enc.family.lower(c))
    except ConversationError:
        items = None
    assert wire.decode_layout_answer(wire.encode_layout_answer(items)) == items


@WIRE
@given(cases())
def test_unlayout_request_and_answer_round_trip(
    case: tuple[lvt.ChatEncoder, Conversation]
) -> None:
    enc, c = case
    try:
        ids = enc.encode(c).ids.tolist()
    except ConversationError:
        return
    s = core.decode_syms(enc.codec, enc.reserved, ids)
    assert s is not None
    req = wire.encode_unlayout_request(enc.family, s)
    fam, s2 = wire.decode_unlayout_request(req)
    assert s2 == s
    q = enc.family.unlayout(s)
    assert q is not None
    assert wire.decode_unlayout_answer(fam, wire.encode_unlayout_answer(fam, q)) == q
    assert wire.decode_unlayout_answer(fam, wire.encode_unlayout_answer(fam, None)) is None


@WIRE
@given(st.lists(st.one_of(st.integers(0, 2**32 - 1), st.text(max_size=5)), max_size=12))
def test_symbol_streams_merge_runs(s: list[Any]) -> None:
    fam = encoder(1).family
    _, got = wire.decode_unlayout_request(wire.encode_unlayout_request(fam, s))
    want: list[Any] = []
    for x in s:
        if isinstance(x, str) and want and isinstance(want[-1], str):
            want[-1] += x
        elif x != "":
            want.append(x)
    assert got == want


@WIRE
@given(cases(), st.data())
def test_truncations_are_rejected(case: tuple[lvt.ChatEncoder, Conversation],
                                  data: st.DataObject) -> None:
    enc, c = case
    full = wire.encode_layout_request(enc.family, c)
    cut = data.draw(st.integers(0, len(full) - 1))
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_layout_request(full[:cut])
    assert info.value.kind in ("empty", "family", "format", "conversation")
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_layout_request(full + b"\x00")
    assert info.value.kind == "trailing"
    try:
        items = enc.family.layout(enc.family.lower(c))
    except ConversationError:
        return
    ans = wire.encode_layout_answer(items)
    cut = data.draw(st.integers(0, len(ans) - 1))
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_layout_answer(ans[:cut])
    assert info.value.kind == "answer"
    with pytest.raises(wire.WireDecodeError):
        wire.decode_layout_answer(ans + b"\x00")


def test_error_answers_and_bad_requests() -> None:
    for code, name in enumerate(wire.ERROR_NAMES):
        with pytest.raises(wire.WireAnswerError) as info:
            wire.decode_layout_answer(wire.encode_error(code))
        assert info.value.reason == name and info.value.code == code
    assert isinstance(wire.WireAnswerError(0), NativeLibraryError)
    fam = encoder(1).family
    with pytest.raises(wire.WireDecodeError) as e:
        wire.decode_unlayout_request(b"\x01" + wire.encode_family(fam) + wire.encode_syms([]))
    assert e.value.kind == "version"
    with pytest.raises(wire.WireDecodeError) as e:
        wire.decode_unlayout_request(bytes([wire.WIRE_VERSION, 5]))
    assert e.value.kind == "family"
    with pytest.raises(ValueError):
        big = Conversation([Message(Role.USER, [Plain(Tokens([2**32]))])])
        wire.encode_layout_request(fam, big)
    with pytest.raises(ValueError):
        wire.encode_layout_request(fam, Conversation([Message.text(Role.USER, "\ud800")]))


# ---------------------------------------------------------------------------------------------
# The encoder's dispatch, through a loopback backend (the wire both ways, reference inside)


class Loopback:
    """A native backend whose "Lean" side is the Python reference behind the wire: requests
    are decoded and answers encoded exactly as the Lean exports do."""

    def __init__(self) -> None:
        self.calls = 0

    def layout(self, family: Any, c: Conversation) -> list[core.Item] | None:
        self.calls += 1
        fam, c2 = wire.decode_layout_request(wire.encode_layout_request(family, c))
        try:
            items = fam.layout(fam.lower(c2))
        except ConversationError:
            items = None
        return wire.decode_layout_answer(wire.encode_layout_answer(items))

    def unlayout(self, family: Any, s: core.Stream) -> Any:
        self.calls += 1
        fam, s2 = wire.decode_unlayout_request(wire.encode_unlayout_request(family, s))
        return wire.decode_unlayout_answer(fam, wire.encode_unlayout_answer(fam, fam.unlayout(s2)))


_NAT: dict[int, lvt.ChatEncoder] = {}


@WIRE
@given(cases())
def test_encoder_dispatches_to_the_native_backend(
    case: tuple[lvt.ChatEncoder, Conversation]
) -> None:
    ref, c = case
    if id(ref) not in _NAT:  # one encoder per format: building a codec takes a while
        _NAT[id(ref)] = lvt.ChatEncoder(ref.tokenizer, ref.family, format_name=ref.format_name,
                                        backend="reference")
    nat = _NAT[id(ref)]
    lb = Loopback()
    nat._native = lb
    assert nat.backend == "native"
    try:
        want = ref.encode(c)
    except ConversationError as e:
        with pytest.raises(ConversationError) as info:
            nat.encode(c)
        assert info.value.message_index == e.message_index
        return
    got = nat.encode(c)
    assert got == want
    assert nat.parse(got.ids) == ref.parse(want.ids)
    assert lb.calls == 2
    with pytest.raises(ParseError):
        nat.parse(got.ids[1:])


def test_backend_api_without_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_native.ENV_NATIVE_LIB, raising=False)
    monkeypatch.setattr(_native, "candidate_paths", lambda: [])
    _native.reset()
    assert lvt.backend() == "reference"
    assert "no native library" in lvt.backend_reason()
    assert lvt.native_backend() is None
    with pytest.raises(NativeLibraryError):
        lvt.ChatEncoder(encoder(1).tokenizer, encoder(1).family, backend="native")
    monkeypatch.setenv(_native.ENV_BACKEND, "reference")
    _native.reset()
    assert lvt.backend() == "reference" and "LVT_BACKEND" in lvt.backend_reason()
    _native.reset()


# ---------------------------------------------------------------------------------------------
# Declarations: shim ↔ Ffi.lean ↔ lvt.h ↔ cffi


def _strip_c_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def lean_exports() -> dict[str, int]:
    """`@[… export sym …] def f (x : T) … : R` in Ffi.lean → {sym: number of explicit binders}."""
    text = FFI_LEAN.read_text(encoding="utf-8")
    out: dict[str, int] = {}
    pat = re.compile(r"@\[[^\]]*\bexport\s+(\w+)[^\]]*\]\s*def\s+\S+((?:\s*\([^()]*\))*)\s*:")
    for m in pat.finditer(text):
        binders = re.findall(r"\(([^()]*)\)", m.group(2))
        out[m.group(1)] = sum(len(b.split(":")[0].split()) for b in binders)
    return out


def shim_lean_imports() -> dict[str, int]:
    """`lean_object *sym(lean_object *…)` declarations of Lean exports in the shim."""
    text = _strip_c_comments(SHIM.read_text(encoding="utf-8"))
    out: dict[str, int] = {}
    for m in re.finditer(r"^lean_object\s*\*\s*(lvt_\w+)\s*\(([^)]*)\)\s*;", text, re.M):
        args = [a for a in m.group(2).split(",") if a.strip() and a.strip() != "void"]
        out[m.group(1)] = len(args)
    return out


def c_prototypes(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in re.finditer(r"^\s*(?:int|void)\s+(lvt_\w+)\s*\(([^)]*)\)\s*;", text, re.M):
        args = [a for a in m.group(2).split(",") if a.strip() and a.strip() != "void"]
        out[m.group(1)] = len(args)
    return out


def test_shim_and_lean_exports_agree() -> None:
    lean = lean_exports()
    assert lean == {"lvt_layout_bytes": 1, "lvt_unlayout_bytes": 1}
    assert shim_lean_imports() == lean
    assert "ByteArray → ByteArray" in FFI_LEAN.read_text(encoding="utf-8")
    mock = _strip_c_comments(MOCK.read_text(encoding="utf-8"))
    assert all(f"lean_object *{k}(lean_object *req)" in mock for k in lean)


def test_cffi_declarations_match_header() -> None:
    header = c_prototypes(_strip_c_comments(HEADER.read_text(encoding="utf-8")))
    cdef = c_prototypes(_native.CDEF)
    assert cdef == header
    text = HEADER.read_text(encoding="utf-8")
    assert f"#define LVT_ABI_VERSION {_native.ABI_VERSION}" in text
    assert f"#define LVT_WIRE_VERSION {wire.WIRE_VERSION}" in text
    assert f"wireVersion : UInt8 := {wire.WIRE_VERSION}" in FFI_ENCODE.read_text(encoding="utf-8")


def test_lean_sources_have_no_escape_hatches() -> None:
    for p in (FFI_LEAN, FFI_ENCODE, FFI_DECODE, REPO / "Verified/Thm/Ffi.lean",
              REPO / "Verified/Thm/FfiJson.lean", REPO / "Verified/Main.lean"):
        text = re.sub(r"/-.*?-/|--[^\n]*", "", p.read_text(encoding="utf-8"), flags=re.S)
        for bad in ("sorry", "partial ", "implemented_by", "extern", "native_decide", "axiom"):
            assert bad not in text, (p.name, bad)
    umbrella = (REPO / "Verified.lean").read_text(encoding="utf-8")
    assert "public import Verified.Thm.Ffi" in umbrella and "Verified.Main" not in umbrella


def test_lakefile_links_the_shim_into_the_shared_library() -> None:
    text = (REPO / "lakefile.lean").read_text(encoding="utf-8")
    assert 'path := "ffi" / "lvt_shim.c"' in text
    assert "moreLinkObjs := #[lvt_shim.o]" in text
    assert "LeanLib.sharedFacet" in text
    assert "lean_exe «lvt-oracle»" in text and "root := `Verified.Main" in text
    assert ".one `Verified.Ffi" in text and "lean_lib Verified" in text
    assert re.search(r"^package lvt\b", text, re.M)
    assert "initialize_lvt_Verified_Ffi" in SHIM.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# The shim, compiled here


@pytest.mark.skipif(CC is None, reason="no C compiler on PATH")
def test_shim_compiles_against_stub_header() -> None:
    proc = subprocess.run(
        [CC, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-DLVT_STUB_LEAN",
         f"-I{REPO / 'ffi'}", str(SHIM)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="session")
def mock_lib() -> Iterator[Path]:
    """The shim linked with the mock Lean runtime (ffi/test/mock_lean.c)."""
    if CC is None:
        pytest.skip("no C compiler on PATH")
    tmp = Path(tempfile.mkdtemp(prefix="lvt-mock-"))
    out = tmp / "liblvt_mock.so"
    proc = subprocess.run(
        [CC, "-shared", "-fPIC", "-pthread", "-O1", "-Wall", "-Wextra", "-Werror",
         "-std=gnu11", "-DLVT_STUB_LEAN", f"-I{REPO / 'ffi'}", str(SHIM), str(MOCK),
         "-o", str(out)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    yield out
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def mock_backend(mock_lib: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv(_native.ENV_NATIVE_LIB, str(mock_lib))
    monkeypatch.delenv(_native.ENV_BACKEND, raising=False)
    _native.reset()
    backend = _native.load()
    assert backend is not None
    yield backend
    _native.reset()


def _mock_counts(backend: Any) -> list[int]:
    import cffi

    extra = cffi.FFI()
    extra.cdef("void lvt_mock_counts(int *out5);")
    lib = extra.dlopen(str(backend.path))
    buf = extra.new("int[5]")
    lib.lvt_mock_counts(buf)
    return list(buf)


def _echo_ok(backend: Any, payload: bytes) -> None:
    items = wire.decode_layout_answer(backend.layout_bytes(payload))
    assert items is not None
    assert [i.value for i in items] == list(payload)
    assert [i.owner for i in items] == list(range(len(payload)))


def test_mock_library_loads_and_initialises_once(mock_backend: Any) -> None:
    assert "LVT_NATIVE_LIB" in _native.reason()
    assert lvt.backend() == "native"
    for _ in range(3):
        _echo_ok(mock_backend, bytes([wire.WIRE_VERSION]) + b"abc")
    runtime, module, *_ = _mock_counts(mock_backend)
    assert (runtime, module) == (1, 1)
    # the high-level calls go through the same wire
    fam = encoder(1).family
    assert mock_backend.unlayout(fam, [fam.ids.im_start, "user\nhi"]) is None
    items = mock_backend.layout(fam, Conversation([Message.text(Role.USER, "hi")]))
    assert items == [core.Item(core.CTRL, b, i, False) for i, b in enumerate(
        wire.encode_layout_request(fam, Conversation([Message.text(Role.USER, "hi")])))]


@pytest.mark.parametrize("size", [1, 1000, 32 * 1024 + 1, 300_000])
def test_mock_bytes_cross_the_shim_intact(mock_backend: Any, size: int) -> None:
    payload = bytes([wire.WIRE_VERSION]) + bytes((7 * i) % 256 for i in range(size - 1))
    _echo_ok(mock_backend, payload)  # sizes above 32 KiB run on the big-stack worker thread


def test_mock_from_many_python_threads(mock_backend: Any) -> None:
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(40):
                _echo_ok(mock_backend, bytes([wire.WIRE_VERSION, seed, i]) * (1 + i % 5))
                assert mock_backend.unlayout_bytes(bytes([wire.WIRE_VERSION])) == b"\x00\x00"
        except BaseException as e:  # collected and re-raised in the main thread
            errors.append(e)

    before = _mock_counts(mock_backend)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    after = _mock_counts(mock_backend)
    assert after[2] - before[2] >= 8  # every new thread registered itself
    # Thread.join() returns before the OS thread runs its pthread key destructors.
    deadline = time.monotonic() + 10.0
    while after[3] - before[3] < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
        after = _mock_counts(mock_backend)
    assert after[3] - before[3] >= 8  # and was finalised when it exited
    assert after[4] == before[4]  # no Lean object leaked


def test_mock_error_answer_becomes_typed_exception(mock_backend: Any) -> None:
    with pytest.raises(wire.WireAnswerError, match="version"):
        wire.decode_layout_answer(mock_backend.layout_bytes(b"\x07"))
    with pytest.raises(wire.WireAnswerError, match="version"):
        wire.decode_unlayout_answer(encoder(1).family, mock_backend.unlayout_bytes(b""))


def test_missing_native_lib_is_a_hard_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_native.ENV_NATIVE_LIB, "/nonexistent/liblvt.so")
    monkeypatch.delenv(_native.ENV_BACKEND, raising=False)
    _native.reset()
    with pytest.raises(NativeLibraryError):
        _native.load()
    assert "no such file" in _native.reason()
    _native.reset()


# ---------------------------------------------------------------------------------------------
# With a Lean toolchain: build, then native vs reference, and the oracle


@pytest.fixture(scope="session")
def native_backend() -> Any:
    if LAKE is None:
        pytest.skip(NO_LAKE)
    proc = subprocess.run([LAKE, "build"], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _native.reset()
    backend = _native.load()
    assert backend is not None, _native.reason()
    return backend


@settings(max_examples=int(os.environ.get("LVT_NATIVE_EXAMPLES", "2000")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(cases())
def _differential(backend: Any, case: tuple[lvt.ChatEncoder, Conversation]) -> None:
    ref, c = case
    c = ref.normalize(c)
    try:
        want: list[core.Item] | None = ref.family.layout(ref.family.lower(c))
    except ConversationError:
        want = None
    assert backend.layout(ref.family, c) == want
    if want is not None and core.text_only(want):
        ids = core.encode_items(ref.codec, want)[0]
        s = core.decode_syms(ref.codec, ref.reserved, ids)
        assert backend.unlayout(ref.family, s) == ref.family.unlayout(s)


def test_native_matches_reference(native_backend: Any) -> None:
    """Hypothesis conversations (LVT_NATIVE_EXAMPLES) through the native library."""
    _differential(native_backend)


def test_oracle_matches_reference(native_backend: Any) -> None:
    exe = REPO / ".lake" / "build" / "bin" / "lvt-oracle"
    assert exe.exists()
    enc = encoder(1)
    convs = [kernel_cases()[0][1], Conversation([Message.text(Role.USER, "hi")], True)]
    lines = [f"layout {wire.encode_layout_request(enc.family, c).hex()}" for c in convs]
    proc = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, check=True, timeout=600)
    answers = proc.stdout.splitlines()
    assert len(answers) == len(convs)
    for a, c in zip(answers, convs, strict=True):
        want = enc.family.layout(enc.family.lower(c))
        assert wire.decode_layout_answer(bytes.fromhex(a)) == want


