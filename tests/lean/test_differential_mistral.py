"""Differential test of the Mistral family: ``lvt.families.mistral`` (what ``ChatEncoder`` runs)
against ``Verified/Spec/Mistral.lean`` by kernel evaluation, with the machinery of
``test_differential.py`` (layout, character-codec render, parse and a corrupted parse per
vector), for v13 (tools, calls, results), v7 and v11 (calls and results with ids), v7 exact
(tools before the last user message) and v7 stable (before the first), with the tekken v7+
vocabulary's ids.

Vectors: a 12-message v13 agent loop (system prompt, tools, a call with content, parallel
calls, results, answers after them, spelled control tokens, a token payload, a sampled turn,
the generation prompt); a 9-message v13 text-only loop with tools whose parse is checked too;
the same 10-message text-only agent loop with call ids for v7 (the ``[TOOL_CALLS]`` JSON list
with ``"id"``, one call's arguments holding the list's own separators) and v11
(``[CALL_ID]``), both with ``[TOOL_RESULTS]ID[TOOL_CONTENT]`` results, parses checked too;
the same 8-message chat with tools for v7 exact and v7 stable; the refusals (a v7/v11 call
without an id or with an id mistral-common refuses, a v11 message with one id on two calls, a
v7 result with no call at its position, a v7 result after an answer, consecutive users, a
result with no call, a first assistant message, a last system message, a developer message,
an empty assistant message, a bad tool name). Corrupted copies of one vector
(``td.N_CORRUPT``) must be rejected.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import test_differential as td

import lvt
from lvt.families import mistral
from lvt.model import Conversation, Message, Plain, Role, Sampled, Text, Tokens, ToolCall
from parity.templates import family_tokenizer

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


#: The tekken v7+ control ids the vectors use: the named ones as in the real vocabulary, and
#: as other reserved ids only the rest of the first 36 ranks (the real vocabulary reserves all
#: 1000 control ranks; a 1000-element reserved list takes the wasm Lean's kernel past its
#: limits, and the transliteration treats every reserved id alike).
IDS = mistral.MistralIds(1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 18, args=32, call_id=33, tool_content=19,
                         extra=(0, *range(10, 17), *range(20, 32), 34, 35))


def _encoder(inst: str) -> Any:
    """``mistralv13``, ``mistralv11``, ``mistralv7``, ``mistralv7stable``, registered in
    test_differential's encoder cache (its helpers read only ``.family`` of these instances).
    The ids are checked against the real tokenizer's: same named ids, the extras a subset of
    its reserved ones."""
    if inst not in td._ENCODERS:
        version = next(v for v in ("v13", "v11", "v7") if v in inst)
        fmt = "mistral-stable" if inst.endswith("stable") else "mistral"
        real = lvt.ChatEncoder.from_tokenizer(family_tokenizer("mistral"), fmt,
                                              version=version).family
        fam = mistral.Mistral(IDS, version, real.stable)
        assert set(IDS.reserved) <= set(real.reserved)
        assert dataclasses.replace(real.ids, extra=()) == dataclasses.replace(IDS, extra=())
        td._ENCODERS[inst] = SimpleNamespace(family=fam)
    return td._ENCODERS[inst]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def agent_loop() -> Conversation:
    """12 messages with every v13 construct, then the generation prompt."""
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    msgs = [_m(Role.SYSTEM, "Be exact."), _m(u, "Weather in Paris and Rome? [INST]"),
            Message(a, (Plain(Text("Checking. ")), ToolCall("get_weather", '{"city": "Paris"}'),
                        ToolCall("get_weather", '{"city": "Rome"}'))),
            _m(t, '{"temp": 18}'), _m(t, "sunny [/TOOL_RESULTS]"),
            _m(a, "Paris 18, Rome sunny."), _m(u, "And Oslo?"),
            Message(a, (ToolCall("get_weather", '{"city": "Oslo"}'),)),
            Message(t, (Plain(Tokens((1200, 1201))),)), _m(a, "Cold."), _m(u, "Thanks"),
            Message(a, (Sampled((1300, 1301, 1302)),))]
    return Conversation(msgs, True, TOOLS)


def text_loop() -> Conversation:
    """9 text-only v13 messages with tools (the kernel checks their parse too)."""
    u, a = Role.USER, Role.ASSISTANT
    msgs = [_m(u, "Weather?"), Message(a, (ToolCall("get_weather", '{"city": "Nice"}'),)),
            _m(Role.TOOL, "warm"), _m(a, "Warm. "), _m(u, "é 東京 🎉"),
            _m(Role.SYSTEM, "Now be brief."), _m(a, "ok"), _m(u, "Bye"), _m(a, "Bye!")]
    return Conversation(msgs, False, TOOLS)


def id_loop() -> Conversation:
    """10 text-only messages with call ids: content and two calls (the second's arguments
    spell the v7 list's separators), two results (one spelling a control token), the answer
    right after them, a second call and result, then the generation prompt."""
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    tricky = '{"city": "Rome", "note": "}, {\\"name\\": \\"x\\", \\"id\\": \\"y"}'
    msgs = [_m(u, "Weather in Paris and Rome?"),
            Message(a, (Plain(Text("Checking. ")),
                        ToolCall("get_weather", '{"city": "Paris"}', "callPar01"),
                        ToolCall("get_weather", tricky, "callRom02"))),
            _m(t, '{"temp": 18}'), _m(t, "sunny [/TOOL_RESULTS]"),
            _m(a, "Paris 18, Rome sunny."), _m(u, "And Oslo?"),
            Message(a, (ToolCall("get_weather", '{"city": "Oslo"}', "callOsl03"),)),
            _m(t, "cold"), _m(a, "Cold."), _m(u, "Thanks")]
    return Conversation(msgs, True, TOOLS)


def chat() -> Conversation:
    """8 messages with tools: v7 puts [AVAILABLE_TOOLS] before the last user message, the
    stable format before the first."""
    u, a = Role.USER, Role.ASSISTANT
    msgs = [_m(Role.SYSTEM, "S"), _m(u, "one"), _m(a, "1"), _m(u, "two"), _m(a, "2 "),
            _m(u, "three"), _m(a, "3"), _m(u, "four")]
    return Conversation(msgs, True, TOOLS)


def refused() -> list[tuple[str, Conversation]]:
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    call = Message(a, (ToolCall("f", "{}"),))
    bad_id = Message(a, (ToolCall("f", "{}", "call_1"),))
    dup = Message(a, (ToolCall("f", "{}", "abcdefghi"), ToolCall("g", "{}", "abcdefghi")))
    one = Message(a, (ToolCall("f", "{}", "abcdefghi"),))
    return [
        ("mistralv7", Conversation([_m(u, "q"), call])),  # v7 writes a call id: none here
        ("mistralv11", Conversation([_m(u, "q"), call])),
        ("mistralv7", Conversation([_m(u, "q"), bad_id])),  # not [a-zA-Z0-9]{9}
        ("mistralv11", Conversation([_m(u, "q"), dup])),  # one id on two calls (v11 only)
        ("mistralv7", Conversation([_m(u, "q"), one, _m(t, "r"), _m(t, "s")])),  # no 2nd call
        ("mistralv7", Conversation([_m(u, "q"), _m(a, "b"), _m(t, "r")])),
        ("mistralv13", Conversation([_m(u, "a"), _m(u, "b")])),  # merged by mistral-common
        ("mistralv13", Conversation([_m(u, "a"), _m(a, "b"), _m(t, "r")])),  # no call before
        ("mistralv13", Conversation([_m(a, "a")])),
        ("mistralv13", Conversation([_m(u, "a"), _m(a, "b"), _m(Role.SYSTEM, "late")])),
        ("mistralv13", Conversation([_m(Role.DEVELOPER, "x")])),
        ("mistralv13", Conversation([_m(u, "q"), Message(a, ())])),
        ("mistralv13", Conversation([_m(u, "q"), Message(a, (ToolCall("a b", "{}"),))])),
    ]


def mistral_vectors() -> list[td.Vector]:
    for inst in ("mistralv13", "mistralv11", "mistralv7", "mistralv7stable"):
        _encoder(inst)
    vs = [td.make_vector("mistralv13: agent loop", "mistralv13", agent_loop()),
          td.make_vector("mistralv13: agent loop (text only)", "mistralv13", text_loop()),
          td.make_vector("mistralv7: agent loop (chat, tools last)", "mistralv7", chat()),
          td.make_vector("mistralv7stable: drawn chat (tools first)", "mistralv7stable",
                         chat()),
          td.make_vector("mistralv7: agent loop (call ids)", "mistralv7", id_loop()),
          td.make_vector("mistralv11: agent loop (call ids)", "mistralv11", id_loop())]
    vs += [td.make_vector(f"{inst}: refused {k}", inst, c)
           for k, (inst, c) in enumerate(refused())]
    return vs


def test_mistral_vectors_cover_the_model() -> None:
    vs = mistral_vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 5 and all(len(v.conv.messages) >= 8 and v.layout is not None
                                   for v in loops)
    assert sum(v.layout is None for v in vs) == len(refused())
    # the exact and the stable v7 renders of the same chat differ (the tools block moved)
    v7, st = vs[2], vs[3]
    assert v7.layout != st.layout
    # the v7 and v11 loops write their ids (v7 in the JSON list, v11 after [CALL_ID]) and the
    # Python parse reads them back; the kernel checks the parse of both (text only)
    for v in vs[4:6]:
        assert td.parse_in_kernel(v) and v.parse is not None
        enc = _encoder(v.inst).family
        q = enc.lower(v.conv)
        assert [k.id for t in q.turns if isinstance(t, mistral.AssistantTurn)
                for k in t.calls] == ["callPar01", "callRom02", "callOsl03"]
        assert [t.id for t in q.turns if isinstance(t, mistral.ResultTurn)] == [
            "callPar01", "callRom02", "callOsl03"]


@pytest.mark.lean
def test_mistral_agrees_with_lean_kernel() -> None:
    td.check_vectors(mistral_vectors(), int(os.environ.get("LVT_DIFF_MISTRAL_FILES", "2")),
                     title="Mistral differential vectors", stage="lvt-differential-mistral-",
                     jobs=int(os.environ.get("LVT_DIFF_JOBS", "2")))
