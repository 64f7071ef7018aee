"""Differential tests: the production path (``lvt.runtime.core`` and ``lvt.families``, what
``ChatEncoder`` runs) against the Lean definitions of ``Verified/Spec``, by kernel evaluation.

For every shipped format (with the control ids of its real tokenizer and each template
option) and every vector conversation — hypothesis-drawn (derandomized, so every run states
the same vectors) and hand-written agent loops of 10+ messages with plain, reasoning,
tool-call, tool-result and sampled blocks — a generated Lean module states, as
`example … := by decide`:

* the layout of the lowered conversation (every item: control id, text, tokens, owner, loss
  bit), or `none` where Python refuses the conversation;
* the token-level render (ids, provenance, owners, loss bits) with a character codec, so that
  span merging and the first-byte annotation rule are compared too;
* the parse of that render and of a corrupted copy of it;
* for one long conversation per family, the render and parse with the real tokenizer's ids
  (a table codec holding exactly the spans the render needs).

Separate modules state corrupted vectors (Python's render changed by default; its layout and
parse too with ``LVT_DIFF_FULL=1``): the checker must reject exactly those, which shows the
comparison is not vacuous.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangen as lg

import lvt
from lvt import zoo
from lvt.errors import ConversationError
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall
from lvt.runtime import core
from strategies import conversations

# Sized for CI (kernel evaluation of a 10-message agent loop takes ~1 min here); raise with
# LVT_DIFF_RANDOM (random conversations per format instance) and LVT_DIFF_FULL=1 (agent loops
# for every option instance, the real-tokenizer vectors of both families).
N_RANDOM = int(os.environ.get("LVT_DIFF_RANDOM", "1"))
N_FILES = int(os.environ.get("LVT_DIFF_FILES", "4"))
FULL = os.environ.get("LVT_DIFF_FULL", "") == "1"
#: Corrupted modules per differential test (each is one more wasm Lean process, and a false
#: `decide` on a large term can run the wasm Lean to its heap limit): by default the render
#: corruption only, which shows the harness can fail; all three (layout, render, parse) with
#: LVT_DIFF_FULL=1 or LVT_DIFF_CORRUPT=3.
N_CORRUPT = 3 if FULL else max(1, min(3, int(os.environ.get("LVT_DIFF_CORRUPT", "1"))))
#: Instances whose agent loop is a vector on every run: one per shipped format.
LOOP_INSTANCES = ("qwen25", "qwen3", "qwen3stable", "llama31", "dsr1", "dsr1stable",
                  "qwen25math", "qwen3think2507", "dsr1distill")
#: Instances whose agent loop is also rendered with the real tokenizer's ids.
REAL_INSTANCES = ("qwen3", "llama31") if FULL else ("qwen3",)

#: (label, format, zoo tokenizer, options)
INSTANCES = [
    ("qwen25", "qwen2.5", "qwen2.5", {}),
    ("qwen3", "qwen3", "qwen3", {}),
    ("qwen3nothink", "qwen3", "qwen3", {"enable_thinking": False}),
    ("qwen3stable", "qwen3-stable", "qwen3", {}),
    # model entries of the Qwen structure: another default system text; a prompt opening <think>
    ("qwen25math", "qwen2.5-math", "qwen2.5", {}),
    ("qwen3think2507", "qwen3-2507-thinking", "qwen3", {}),
    ("llama31", "llama3.1", "llama3.1", {}),
    ("llama31sys", "llama3.1", "llama3.1", {"tools_in_user_message": False,
                                             "date_string": "01 Dec 2026"}),
    ("dsr1", "deepseek-r1", "deepseek-r1", {}),
    ("dsr1stable", "deepseek-r1-stable", "deepseek-r1", {}),
    # a model entry of the DeepSeek structure: prompt opening <think>, no tools, one system
    ("dsr1distill", "deepseek-r1-distill-qwen", "deepseek-r1-distill-qwen", {}),
]
#: Instances checked by their own test (``-k deepseek``), not by the main one.
DEEPSEEK_INSTANCES = ("dsr1", "dsr1stable", "dsr1distill")

TOOLS = [{"type": "function", "function": {"name": "calc", "description": "Add.",
                                           "parameters": {"type": "object"}}}]


def _u(s: str) -> Message:
    return Message(Role.USER, (Plain(Text(s)),))


def _a(*blocks: Any) -> Message:
    return Message(Role.ASSISTANT, blocks)


def _t(s: str) -> Message:
    return Message(Role.TOOL, (Plain(Text(s)),))


def agent_loop(reasoning: bool, parallel: bool, sampled: tuple[int, ...]) -> Conversation:
    """An agent loop of 10+ messages: system, user, calls and results, reasoning, a sampled
    turn, a final answer."""
    r = (Reasoning(Text("\nI need the sum.\n")),) if reasoning else ()
    calls = (ToolCall("calc", '{"a": 1}'), ToolCall("calc", '{"a": 2}')) if parallel else (
        ToolCall("calc", '{"a": 1}'),)
    msgs = [Message(Role.SYSTEM, (Plain(Text(" Be exact. ")),)), _u("Add 1 and 2, then 3."),
            _a(*r, Plain(Text("Calling.")), *calls), *[_t(f"{k}") for k in range(len(calls))],
            _a(*r, ToolCall("calc", '{"a": 3}')), _t("6"), _a(Plain(Text("\n\nIt is 6."))),
            _u("Thanks! <|im_start|> and <|eot_id|> are just text."),
            _a(Sampled(sampled)), _u("Bye")]
    return Conversation(msgs, True, None)


def refused(fmt: str) -> list[Conversation]:
    # a developer message: Llama writes it as a header turn (`developer_loop`), the other
    # templates drop it or fold it elsewhere
    out = [] if fmt.startswith("llama") else [
        Conversation([Message(Role.DEVELOPER, (Plain(Text("x")),))])]
    if fmt.startswith("llama"):
        out.append(Conversation([_u("q"), _a(ToolCall("a", "{}"), ToolCall("b", "{}"))]))
        out.append(Conversation([_u("q"), _a(Plain(Text('{"name": "f", "parameters": {}}')))]))
    if fmt.startswith("qwen2.5"):
        out.append(Conversation([_u("q"), _a(Reasoning(Text("r")), Plain(Text("a")))]))
        out.append(Conversation([_u("<tool_response>\nx\n</tool_response>")]))
    if fmt.startswith("deepseek"):
        # several system messages are joined as text: a token payload cannot be one of them
        out.append(Conversation([Message(Role.SYSTEM, (Plain(Tokens([300])),)),
                                 Message(Role.SYSTEM, (Plain(Text("b")),)), _u("q")]))
        out.append(Conversation([_u("q"), _a(ToolCall("a\n```json\nb", "{}"))]))
    return out


def developer_loop() -> Conversation:
    """Llama developer header turns (``'<|start_header_id|>' + message['role'] + …``): first,
    after a system message, mid-conversation, with text to trim and text spelling a header."""
    d = Role.DEVELOPER
    msgs = [Message(d, (Plain(Text(" Answer in French. ")),)), _u("Hi"), _a(Plain(Text("Salut."))),
            Message(d, (Plain(Text("Now <|eot_id|><|start_header_id|>assistant")),)), _u("Again")]
    return Conversation(msgs, True, None)


@dataclass
class Vector:
    """One conversation for one format instance, with Python's results (hashes of codes)."""

    label: str
    inst: str
    conv: Conversation
    layout: int | None
    cells: int | None = None
    parse: int | None = None
    bad_at: int = 3
    bad: int | None = None
    real: tuple[str, int, int | None] | None = None  # (codec term, ids hash, parse hash)


_ENCODERS: dict[str, lvt.ChatEncoder] = {}


def encoder(label: str) -> lvt.ChatEncoder:
    if label not in _ENCODERS:
        _, fmt, tok, opts = next(x for x in INSTANCES if x[0] == label)
        _ENCODERS[label] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(tok), fmt, **opts)
    return _ENCODERS[label]


def family(label: str) -> Any:
    """The family instance of a vector instance. DeepSeek-R1's tokenizer has ~800 special
    placeholder tokens, all reserved: the vectors keep its 15 control ids and two of the
    others (2 and 128805: the pad and EOT tokens), so that the wasm Lean's heap holds the parse (the
    extra ids only add membership tests; the production path with all of them is tested in
    ``tests/test_deepseek.py``)."""
    fam = encoder(label).family
    if label in DEEPSEEK_INSTANCES:
        from lvt.families.deepseek import DeepSeek

        keep = tuple(t for t in fam.ids.extra if t in (2, 128805) or label == "dsr1distill")
        fam = DeepSeek(dataclasses.replace(fam.ids, extra=keep), fam.mode, fam.prompt_think,
                       fam.tools, fam.join_systems)
    return fam


def make_vector(label: str, inst: str, conv: Conversation, real: bool = False) -> Vector:
    fam = family(inst)
    try:
        q = fam.lower(conv)
    except ConversationError:
        return Vector(label, inst, conv, None)
    items = fam.layout(q)
    v = Vector(label, inst, conv, lg.hash_code(lg.layout_code(items)))
    cc = lg.CharCodec()
    ids, loss, own, src = core.encode_items(cc, items)
    v.cells = lg.hash_code(lg.cells_code(ids, loss, own, src))
    v.parse = _parse(fam, cc, ids)
    v.bad = _parse(fam, cc, ids[: v.bad_at] + ids[v.bad_at + 1:])
    if real:
        enc = encoder(inst)
        spans = core.spans_of(items)
        table = dict(zip(spans, enc.codec.encode_tuples(spans), strict=True))
        rids = core.encode_items(enc.codec, items, table)[0]
        byte_table = {t: enc.codec.decode_bytes([t]) for t in dict.fromkeys(rids)}
        # The parser re-encodes every decoded run (a span and the sampled tokens beside it
        # form one run): the table must answer those texts as the real tokenizer does.
        rec = _Recording(enc.codec)
        rparse = _parse(fam, rec, rids)
        table.update(zip(rec.texts, enc.codec.encode_tuples(rec.texts), strict=True))
        for t in {t for ts in table.values() for t in ts}:
            byte_table.setdefault(t, enc.codec.decode_bytes([t]))
        v.real = (lg.table_codec_term(table, byte_table), lg.hash_code(rids), rparse)
    return v


class _Recording:
    """A codec that records the texts the parser asks it to encode."""

    def __init__(self, codec: Any) -> None:
        self.codec = codec
        self.texts: list[str] = []

    def encode_tuples(self, texts: list[str]) -> list[tuple[int, ...]]:
        self.texts += texts
        return self.codec.encode_tuples(texts)

    def decode_bytes(self, ids: Any) -> bytes:
        return self.codec.decode_bytes(ids)

    def token_byte_length(self, t: int) -> int:
        return self.codec.token_byte_length(t)


def _parse(fam: Any, codec: Any, ids: list[int]) -> int | None:
    s = core.decode_syms(codec, frozenset(fam.reserved), ids)
    q = None if s is None else fam.unlayout(s)
    return None if q is None else lg.hash_code(lg.layout_code(fam.layout(q)))


def _opt(h: int | None) -> str:
    return "none" if h is None else f"some {h}"


def vector_examples(v: Vector, fname: str, cname: str,
                    terms: tuple[str, str, str] | None = None) -> list[str]:
    """The examples of one vector: its lowering's layout, render and parse (and its corrupted
    parse). ``terms``: the Lean lowering (applied to the conversation), layout and format
    when they are not the family's ``lower``/``layout``/``format`` of ``fname``."""
    ns = lg.family_ns(family(v.inst))
    sfx = lg.version_suffix(family(v.inst))
    low = f"({lg.lower_name(family(v.inst))} {fname} {cname})"
    lay = f"{ns}.layout{sfx} {fname}"
    fmt = f"({ns}.format{sfx} {fname})"
    if terms is not None:
        low, lay, fmt = f"({terms[0]} {cname})", terms[1], terms[2]
    dec = " := by decide +kernel"
    out = [f"-- {v.label}",
           f"example : ({low}.map fun q => hashCode (layoutCode ({lay} q))) = {_opt(v.layout)}"
           + dec]
    if v.layout is None:
        return out
    render = f"ids (encodeItems charCodec ({lay} q))"
    out.append(
        f"example : ({low}.map fun q => hashCode (cellsCode (encodeItems charCodec ({lay} q)))) ="
        f"\n    {_opt(v.cells)}" + dec)
    if not parse_in_kernel(v):
        return out
    out += [
        f"example : ({low}.bind fun q => (Format.parse {fmt} charCodec ({render})).map\n"
        f"    fun p => hashCode (layoutCode ({lay} p))) = {_opt(v.parse)}" + dec,
        f"example : ({low}.bind fun q => (Format.parse {fmt} charCodec (dropAt {v.bad_at} "
        f"({render}))).map\n    fun p => hashCode (layoutCode ({lay} p))) = {_opt(v.bad)}" + dec,
    ]
    if v.real is not None:
        codec, rids, rparse = v.real
        out.append(f"def codec_{cname} : Codec := {codec}")
        rrender = f"ids (encodeItems codec_{cname} ({lay} q))"
        out += [
            f"example : ({low}.map fun q => hashCode ({rrender})) = some {rids}" + dec,
            f"example : ({low}.bind fun q => (Format.parse {fmt} codec_{cname} ({rrender})).map\n"
            f"    fun p => hashCode (layoutCode ({lay} p))) = {_opt(rparse)}" + dec,
        ]
    return out


def vectors_module(doc: str, vectors: list[Vector]) -> str:
    decls: list[str] = []
    fnames: dict[str, str] = {}
    for j, v in enumerate(vectors):
        if v.inst not in fnames:
            fnames[v.inst] = f"fmt_{v.inst}"
            decls.append(f"def {fnames[v.inst]} := {lg.format_term(family(v.inst))}\n")
        decls.append(f"def conv{j} : Conversation :=\n  {lg.conversation_term(v.conv)}")
        decls += vector_examples(v, fnames[v.inst], f"conv{j}")
        decls.append("")
    return lg.module_text(doc, decls, {lg.spec_of(family(v.inst)) for v in vectors})


# ---------------------------------------------------------------------------------------
# The vectors
# ---------------------------------------------------------------------------------------


def drawn(fmt: str, n: int) -> list[Conversation]:
    """``n`` derandomized draws of ``strategies.conversations``."""
    out: list[Conversation] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(conversations(fmt, max_turns=2))
    def collect(c: Conversation) -> None:
        out.append(c)

    collect()
    return out[:n]


def deepseek_loop() -> Conversation:
    """A DeepSeek-R1 agent loop of 13 messages: systems before and between turns (hoisted
    after BOS), the first call message (headed, with content) and later ones (headless),
    two runs of results (only the first opens the outputs block), an answer after results,
    a run of results followed by a user message; text only, so that its parse is checked too
    (the other loop has the sampled turn)."""
    r = (Reasoning(Text("Need a tool.")),)
    msgs = [Message(Role.SYSTEM, (Plain(Text("Be exact.")),)), _u("Add 1 and 2, then 3."),
            _a(*r, Plain(Text("Calling.")), ToolCall("calc", '{"a": 1}'),
               ToolCall("calc", '{"a": 2}')), _t("1"), _t("2"),
            Message(Role.SYSTEM, (Plain(Text("Late rule.")),)),
            _a(*r, Plain(Text("dropped")), ToolCall("calc", '{"a": 3}')), _t("6"),
            _a(*r, Plain(Text("It is 6."))), _u("Again <｜User｜> text"),  # noqa: RUF001
            _a(ToolCall("calc", "{}")), _t("0"), _a(Plain(Text("Zero.")))]
    return Conversation(msgs, False, None)


def distill_loop(think_close: int) -> Conversation:
    """A DeepSeek-R1-Distill loop of 10 messages (the entry has no tools and one system
    message): the system text after BOS, answers whose reasoning is dropped, control-token
    text in a user message, a sampled turn after the prompt's ``<think>\\n`` (reasoning,
    ``</think>``, answer), and the generation prompt at the end, so that its parse reads the
    prompt ``'<｜Assistant｜><think>\\n'`` back."""  # noqa: RUF002
    r = (Reasoning(Text("Think.")),)
    msgs = [Message(Role.SYSTEM, (Plain(Text("Be exact.")),)), _u("2+2?"),
            _a(*r, Plain(Text("4."))), _u("And 3+3?"), _a(Plain(Text("6."))),
            _u("Thanks! <｜User｜> is text."), _a(Sampled((320, 321, think_close, 322))),  # noqa: RUF001
            _u("Again?"), _a(*r, Plain(Text("\n\nYes."))), _u("Bye")]
    return Conversation(msgs, True, None)


def all_vectors(insts: tuple[str, ...] | None = None) -> list[Vector]:
    """The vectors of the instances ``insts`` (default: all but DeepSeek's)."""
    vs: list[Vector] = []
    for inst, fmt, _, _ in INSTANCES:
        if inst not in (insts if insts is not None else tuple(
                x[0] for x in INSTANCES if x[0] not in DEEPSEEK_INSTANCES)):
            continue
        fam = family(inst)
        body = tuple(t for t in fam.reserved if hasattr(fam.ids, "body_ctrl")
                     and fam.ids.body_ctrl(t))
        sampled = (*body[:1], 320, 321, *body[1:2], 322)
        reasoning = fmt.startswith(("qwen3", "deepseek"))
        if FULL or inst in LOOP_INSTANCES:
            long_ = (distill_loop(fam.ids.think[1]) if inst == "dsr1distill" else
                     agent_loop(reasoning, not fmt.startswith("llama"), sampled))
            vs.append(make_vector(f"{inst}: agent loop", inst, long_,
                                  real=inst in REAL_INSTANCES))
        if inst == "dsr1distill":  # text only: the parse reads the prompt (with <think>) back
            vs.append(make_vector(f"{inst}: prompt", inst, Conversation(
                [Message(Role.SYSTEM, (Plain(Text("S")),)), _u("q"),
                 _a(Reasoning(Text("r")), Plain(Text("a"))), _u("q2")], True, None)))
        if fmt.startswith("deepseek") and inst != "dsr1distill":
            vs.append(make_vector(f"{inst}: agent loop (template flags)", inst,
                                  deepseek_loop()))
        for k, c in enumerate(drawn(fmt, N_RANDOM)):
            vs.append(make_vector(f"{inst}: drawn {k}", inst, c))
        vs.append(make_vector(f"{inst}: tools", inst, Conversation(
            [_u(" Sum 2 and 3 "), _a(ToolCall("calc", '{"a": 2}'))], False, TOOLS)))
        for k, c in enumerate(refused(fmt)):
            vs.append(make_vector(f"{inst}: refused {k}", inst, c))
        if fmt.startswith("llama"):
            vs.append(make_vector(f"{inst}: developer", inst, developer_loop()))
        vs.append(make_vector(f"{inst}: tokens", inst, Conversation(
            [_u("a"), _a(Plain(Tokens([300, 301]))), _u("b")], True)))
    return vs


def test_vectors_cover_the_model() -> None:
    vs = all_vectors()
    assert sum(v.layout is None for v in vs) >= 10  # refusals are compared too
    assert all(v.layout is not None for v in vs if "agent loop" in v.label)
    longs = [v for v in vs if "agent loop" in v.label]
    # every shipped format has a long loop (plain, reasoning, calls, results, sampled tokens)
    assert {encoder(v.inst).format_name for v in longs} == {
        x[1] for x in INSTANCES if x[0] not in DEEPSEEK_INSTANCES}
    assert all(len(v.conv.messages) >= 10 for v in longs)
    assert sum(v.real is not None for v in vs) == len(REAL_INSTANCES)
    # the corrupted parse inputs are rejected or parse differently somewhere
    assert any(v.bad is None for v in vs if v.layout is not None)


# ---------------------------------------------------------------------------------------
# The Lean check
# ---------------------------------------------------------------------------------------


def corrupted_modules(vectors: list[Vector], layout_first: bool = False) -> list[tuple[str, str]]:
    """One vector with Python's result changed (layout, render, parse), one module per change
    (a module stops reporting after its first failing `decide` here): Lean must reject each.
    With fewer than three (``N_CORRUPT``), the render corruption goes first, or the layout's
    when ``layout_first`` (a false `decide` on a long character-codec render can run the wasm
    Lean for over ten minutes)."""
    v = next(x for x in vectors if x.layout is not None and "drawn" in x.label
             and parse_in_kernel(x))
    assert v.cells is not None and v.parse is not None
    fname = f"fmt_{v.inst}"
    fam = family(v.inst)
    decls = [f"def {fname} := {lg.format_term(fam)}\n",
             f"def conv0 : Conversation :=\n  {lg.conversation_term(v.conv)}"]
    bad = Vector(v.label, v.inst, v.conv, v.layout + 1, v.cells + 1, v.parse + 1, v.bad_at, v.bad)
    ex = vector_examples(bad, fname, "conv0")
    labels = ["corrupt layout", "corrupt render", "corrupt parse"]
    out = [(lg.module_text(label, [*decls, f"-- {label}", e], [lg.spec_of(fam)]), label)
           for label, e in zip(labels, ex[1:4], strict=True)]
    if N_CORRUPT == 3 or layout_first:
        return out[:N_CORRUPT]
    return [out[1], out[0], out[2]][:N_CORRUPT]


def partition(vectors: list[Vector], n: int) -> list[list[Vector]]:
    """Split the vectors into ``n`` modules, the agent loops (the heavy ones) dealt out first."""
    order = sorted(vectors, key=lambda v: "agent loop" not in v.label)  # stable
    return [order[i::n] for i in range(n)]


def parse_in_kernel(v: Vector) -> bool:
    """Whether the kernel checks the parse of this vector. Not for Llama with tools: parsing
    the JSON tool preamble back (`parseBlocks` over the pretty-printed schemas) takes the wasm
    Lean past its heap limit (it dies instead of answering), though its layout and render are
    checked; `tests/test_families.py` checks that parse in Python."""
    return not (v.inst.startswith("llama") and v.conv.tools is not None)


@pytest.mark.lean
def test_production_path_agrees_with_lean_kernel() -> None:
    check_vectors(all_vectors(), N_FILES)


@pytest.mark.lean
def test_llama_developer_agrees_with_lean_kernel() -> None:
    """The Llama developer vectors alone (one module, one Lean process): the header turn's
    layout, render and parse (it reads back as a developer message) as Lean states them."""
    vs = [make_vector(f"{inst}: developer", inst, developer_loop())
          for inst in ("llama31", "llama31sys")]
    assert all(v.layout is not None and v.parse is not None for v in vs)
    vs.append(make_vector("llama31: drawn", "llama31", drawn("llama3.1", 1)[0]))
    check_vectors(vs, 1, title="Llama developer vectors", jobs=1)


@pytest.mark.lean
def test_deepseek_agrees_with_lean_kernel() -> None:
    """The DeepSeek-R1 instances (exact and stable) and the R1-Distill entry, with their own
    corrupted vectors."""
    vs = all_vectors(DEEPSEEK_INSTANCES)
    assert all(len(v.conv.messages) >= 8 and v.layout is not None
               for v in vs if "agent loop" in v.label)
    assert sum("agent loop" in v.label for v in vs) == 5
    assert sum(v.layout is None for v in vs) >= 9
    # the entry's refusals (tools, calls, a second system message) are compared with Lean's
    assert sum(v.layout is None for v in vs if v.inst == "dsr1distill") >= 3
    check_vectors(vs, 2)


def check_module_vectors(vectors: list[Vector], module: Any, *, stage: str, stem: str,
                         title: str) -> None:
    """The kernel comparison of a family whose vectors a module builder of its own writes
    (``module(vectors, doc, bump=False)``: the Qwen3.5 format, DeepSeek-V3.1): the vectors in
    two modules, each of which must check, and the smallest vector with a layout, its layout
    hash changed, in a third, which must be rejected (a false `decide` on a large term can run
    the wasm Lean out of heap: still a rejection, but a slow one)."""
    root = lg.stage_library(stage)
    try:
        d = root / "Verified/LvtVectors"
        d.mkdir(parents=True, exist_ok=True)
        targets = []
        for k, part in enumerate(partition(vectors, 2)):
            p = d / f"{stem}Part{k + 1}.lean"
            p.write_text(module(part, f"{title}, part {k + 1}"), encoding="utf-8")
            targets.append(p)
        small = min((v for v in vectors if v.layout is not None),
                    key=lambda v: len(lg.conversation_term(v.conv)))
        bad = d / f"{stem}Corrupt.lean"
        bad.write_text(module([small], "corrupt layout", bump=True), encoding="utf-8")
        run = lg.run_checker(root, [*targets, bad], jobs=3)
        print("\n".join(line for line in run.output.splitlines()
                        if line.lstrip().startswith(("ok ", "FAILED ", "lean:"))))
        for p in targets:
            name = f"Verified.LvtVectors.{p.stem}"
            assert run.status.get(name) == "ok", run.messages_for(name)
        assert run.status.get(f"Verified.LvtVectors.{stem}Corrupt") == "FAILED", run.output
    finally:
        shutil.rmtree(root, ignore_errors=True)


def check_vectors(vectors: list[Vector], n_files: int, *, title: str = "differential vectors",
                  stage: str = "lvt-differential-", layout_first: bool = False,
                  jobs: int | None = None) -> None:
    """Write ``vectors`` as ``n_files`` modules titled ``title`` plus the corrupted ones
    (:func:`corrupted_modules`) in a copy of the library staged under the prefix ``stage``,
    and check them: every vector module must pass, and each corrupted one must be rejected at
    its example (or by the wasm Lean dying on the false `decide`, a rejection without a line).
    ``jobs``: parallel Lean processes (default: one per module)."""
    parts = partition(vectors, n_files)
    root = lg.stage_library(stage)
    try:
        targets = []
        n_examples = 0
        for i, part in enumerate(parts):
            text = vectors_module(f"{title}, part {i + 1} of {len(parts)}", part)
            n_examples += lg.count_examples(text)
            p = root / f"Verified/LvtVectors/Part{i + 1}.lean"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
            targets.append(p)
        bads = []
        for k, (text, label) in enumerate(corrupted_modules(vectors, layout_first)):
            bad = root / f"Verified/LvtVectors/Corrupt{k + 1}.lean"
            bad.write_text(text, encoding="utf-8")
            targets.append(bad)
            bads.append((f"Verified.LvtVectors.Corrupt{k + 1}", text, label))
        print(f"{title}: {len(vectors)} vectors, {n_examples} Lean examples in "
              f"{len(parts)} files, + {len(bads)} corrupted")
        run = lg.run_checker(root, targets, jobs=jobs or len(targets))
        print(run.output)
        print(f"lean_check wall time: {run.seconds:.0f} s")
        for i in range(len(parts)):
            name = f"Verified.LvtVectors.Part{i + 1}"
            assert run.status.get(name) == "ok", (
                f"{name}: Lean disagrees with lvt\n{run.messages_for(name)}")
        assert len(bads) == N_CORRUPT
        for name, text, label in bads:
            assert run.status.get(name) == "FAILED", (label, run.output)
            msgs = run.messages_for(name)
            lines = text.splitlines()
            start = lines.index(f"-- {label}") + 1
            end = next(j for j in range(start, len(lines)) if ":= by" in lines[j])
            spans = [f"{name.rsplit('.', 1)[1]}.lean:{n}:" for n in range(start + 1, end + 2)]
            assert any(sp in msgs for sp in spans) or "lean exited with status" in msgs, (
                label, start + 1, end + 1, msgs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
