"""Differential test of Mistral v3 (``lvt.families.mistral_v3``, what ``ChatEncoder`` runs for
``mistral-7b-v0.3``) against ``Verified/Spec/MistralV3.lean`` by kernel evaluation, with the
machinery of ``test_differential.py`` (layout, character-codec render, parse and a corrupted
parse per vector), for the SentencePiece entry (dummy prefix, the v3 vocabulary's ids) and for
v3 over Nemo's tekken ids (no dummy prefix).

Vectors: a 10-message agent loop (system prompts before and between the turns, folded into
the last user message; tools before it; parallel calls with ids; results whose content is
JSON; an answer after them; spelled control tokens; the generation prompt) for both; a drawn
chat with a token payload and a sampled turn; the refusals (content and calls together, a
system message after an answer, an assistant message first, a system prompt with no user
message, a developer message (a system message) after an answer, two user messages, a result
with no call, a call id mistral-common refuses, a token payload in a result). The tool
contents are already the JSON text the front end writes (``content_json``), so Python's
lowering is the Lean one's input.
Corrupted copies of one vector (``td.N_CORRUPT``) must be rejected.
"""

from __future__ import annotations

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
from lvt.families.mistral_v3 import MistralV3, content_json
from lvt.model import Conversation, Message, Plain, Role, Sampled, Text, Tokens, ToolCall

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]

#: The v3 vocabulary's named ids (``[SYSTEM_PROMPT]`` past the vocabulary) and, as other
#: reserved ids, ``<unk>`` and 10-35 only (the real vocabulary reserves 0-750; a long reserved
#: list takes the wasm Lean's kernel past its limits, and every reserved id is treated alike).
IDS = mistral.MistralIds(1, 2, 3, 4, 6, 7, 8, 9, 5, 32768, 32769, extra=(0, *range(10, 36)))
#: Nemo's tekken ids (``Mistral.nemoIds``' named ones), extras cut likewise.
NEMO = mistral.MistralIds(1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 18, tool_content=19,
                          extra=(0, *range(10, 17), *range(20, 36)))


def _encoder(inst: str) -> Any:
    """``mistralv3`` (checked against the real entry's ids: same named ids, the extras a
    subset of its reserved ones) and ``nemov3``, registered in test_differential's cache."""
    if inst not in td._ENCODERS:
        if inst == "mistralv3":
            real = lvt.ChatEncoder.from_tokenizer("mistral-v3", "mistral-7b-v0.3").family
            assert isinstance(real, MistralV3) and real.dummy
            assert set(IDS.reserved) <= set(real.reserved)
            named = [getattr(real.ids, f) for f in ("bos", "eos", "inst", "end_inst", "tools",
                                                    "end_tools", "results", "end_results",
                                                    "calls", "sys_open", "sys_close")]
            assert named == [1, 2, 3, 4, 6, 7, 8, 9, 5, 32768, 32769]
            fam = MistralV3(IDS, True)
        else:
            fam = MistralV3(NEMO, False)
        td._ENCODERS[inst] = SimpleNamespace(family=fam)
    return td._ENCODERS[inst]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def agent_loop() -> Conversation:
    """10 messages with every v3 construct (a developer message is a system one), then the
    generation prompt."""
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    msgs = [_m(Role.DEVELOPER, "Be exact."), _m(u, "Weather in Paris and Rome? [INST]"),
            Message(a, (ToolCall("get_weather", '{"city": "Paris"}', "callPar01"),
                        ToolCall("get_weather", '{"city": "Rome"}', "callRom02"))),
            _m(t, '{"temp": 18}'), _m(t, '"sunny [/TOOL_RESULTS]"'),
            _m(a, "Paris 18, Rome sunny.  "), _m(u, "And Oslo?"),
            _m(Role.SYSTEM, "Now be brief."), _m(a, " ok"), _m(u, "é 東京 🎉")]
    return Conversation(msgs, True, TOOLS)


#: Character-codec tokens (``leangen.CharCodec``: code point + 1000000) of " ok" and " 4": a
#: token payload or sampled turn reads back only when it decodes with the dummy prefix.
OK, FOUR = (1000032, 1000111, 1000107), (1000032, 1000052)


def drawn() -> Conversation:
    """A drawn chat with a token payload and a sampled turn (no tools)."""
    u, a = Role.USER, Role.ASSISTANT
    msgs = [_m(u, "hi"), Message(a, (Plain(Tokens(OK)),)), _m(u, "again"),
            Message(a, (Sampled(FOUR),)), _m(u, "")]
    return Conversation(msgs, False, None)


def refused() -> list[Conversation]:
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    one = Message(a, (ToolCall("f", "{}", "abcdefghi"),))
    return [
        Conversation([_m(u, "q"), Message(a, (Plain(Text("c")),
                                              ToolCall("f", "{}", "abcdefghi")))]),
        Conversation([_m(u, "q"), _m(a, "b"), _m(Role.SYSTEM, "s"), _m(u, "z")]),
        Conversation([_m(Role.SYSTEM, "s"), _m(a, "b")]),
        Conversation([_m(Role.SYSTEM, "s")]),
        Conversation([_m(u, "q"), _m(a, "b"), _m(Role.DEVELOPER, "d"), _m(u, "c")]),
        Conversation([_m(u, "a"), _m(u, "b")]),
        Conversation([_m(u, "a"), _m(a, "b"), _m(t, "1")]),
        Conversation([_m(u, "q"), Message(a, (ToolCall("f", "{}", "call_1"),))]),
        Conversation([_m(u, "q"), one, Message(t, (Plain(Tokens((1200,))),))]),
    ]


def v3_vectors() -> list[td.Vector]:
    for inst in ("mistralv3", "nemov3"):
        _encoder(inst)
    vs = [td.make_vector("mistralv3: agent loop", "mistralv3", agent_loop()),
          td.make_vector("nemov3: agent loop", "nemov3", agent_loop()),
          td.make_vector("mistralv3: drawn chat (tokens, sampled)", "mistralv3", drawn())]
    vs += [td.make_vector(f"mistralv3: refused {k}", "mistralv3", c)
           for k, c in enumerate(refused())]
    return vs


def test_v3_vectors_cover_the_model() -> None:
    """The loops render (both entries, differently: the dummy prefix), every refusal is one,
    and the tool contents are the front end's JSON already (Python's lowering input is Lean's)."""
    vs = v3_vectors()
    assert [v.layout is None for v in vs] == [False] * 3 + [True] * len(refused())
    assert vs[0].layout != vs[1].layout
    assert all(v.parse is not None for v in vs[:3])
    for c in (agent_loop(), drawn()):
        assert MistralV3.front(c) == c
        assert all(content_json(m.blocks[0].payload.text) == m.blocks[0].payload.text
                   for m in c.messages if m.role == Role.TOOL)
    fam = _encoder("mistralv3").family
    q = fam.lower(agent_loop())
    user = [t for t in q.turns if isinstance(t, mistral.UserTurn)]
    assert user[-1].p == "Be exact.\n\nNow be brief.\n\né 東京 🎉" and user[-1].tools


@pytest.mark.lean
def test_mistral_v3_agrees_with_lean_kernel() -> None:
    td.check_vectors(v3_vectors(), int(os.environ.get("LVT_DIFF_MISTRAL_FILES", "2")),
                     title="Mistral v3 differential vectors",
                     stage="lvt-differential-mistralv3-",
                     jobs=int(os.environ.get("LVT_DIFF_JOBS", "1")))
