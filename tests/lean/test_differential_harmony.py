"""Differential test of the gpt-oss (Harmony) family: ``lvt.families.harmony`` (what
``ChatEncoder`` runs) against ``Verified/Spec/Harmony.lean`` by kernel evaluation, with the
machinery of ``test_differential.py`` (layout, character-codec render, parse and a corrupted
parse per vector), for ``gpt-oss`` (exact) and ``gpt-oss-stable``, and one instance with other
system-message options (low effort, another date, another identity).

Vectors, in both modes: a 12-message agent loop (system instructions, two tools whose
TypeScript layout takes the enum, default, optional, array and nested-object branches, a call
from reasoning, a call with content (its analysis), results (``tojson``-quoted), an answer
with reasoning after them, spelled control tokens, a token payload, a sampled turn holding its
own channel header and ``<|return|>``, the generation prompt); a 10-message text-only loop that
opens with a developer message and ends with a training answer (``<|return|>``, the kept
analysis), whose parse with tools is checked too; two parity-corpus conversations; the
refusals (several calls in a message, content and reasoning on a call message, a result with
no call before it or right after a sampled turn, a late system or developer message, a token
tool result, a tool without ``function``, blocks out of order); a token payload. Corrupted
copies of one vector (``td.N_CORRUPT``) must be rejected. With ``LVT_DIFF_FULL=1`` the
text-only loop is also rendered and parsed with the real o200k_harmony ids (a table codec).
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
import leangen as lg
import test_differential as td

import lvt
import lvt.families
from lvt import zoo
from lvt.families import harmony
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall
from parity.corpus import conversations

DATE = "2026-12-01"
START, MESSAGE, CHANNEL, END, RETURN, CALL = 200006, 200008, 200005, 200007, 200002, 200012
#: (instance, format, options)
INSTANCES = [
    ("gptoss", "gpt-oss", {"current_date": DATE}),
    ("gptossstable", "gpt-oss-stable", {"current_date": DATE}),
    ("gptosslow", "gpt-oss", {"current_date": "2025-01-31", "reasoning_effort": "low",
                              "model_identity": "You are Z."}),
]
#: The corpus conversations checked in both modes (tool calls, results, reasoning history).
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "2"))
CORPUS = ("agent-loop-reasoning-mid", "thread-fractions")

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather now.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City, e.g. \"Paris\""},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"type": "integer", "default": 1}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {
        "q": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "filter": {"type": "object", "properties": {"site": {"type": "string"}},
                   "required": ["site"]}}}}}
TOOLS = [WEATHER, SEARCH]


def _encoder(inst: str) -> Any:
    """The instance's family with the o200k_harmony control ids and, as other reserved ids,
    ``Harmony.gptOssIds``' four named ones (the real tokenizer also reserves the ~1000
    reserved slots: as many membership tests in the kernel, which the transliteration treats
    alike). Registered in test_differential's encoder cache (its helpers read ``.family``);
    the ids are checked against the real tokenizer's."""
    if inst not in td._ENCODERS:
        _, fmt, opts = next(x for x in INSTANCES if x[0] == inst)
        real = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("gpt-oss"), fmt, **opts)
        fam = real.family
        keep = (200003, 199998, 199999, 200018)
        assert set(keep) <= set(fam.ids.extra)
        small = harmony.Harmony(dataclasses.replace(fam.ids, extra=keep), fam.mode,
                                current_date=fam.date, reasoning_effort=fam.effort,
                                model_identity=fam.identity)
        assert (fam.ids.start, fam.ids.message, fam.ids.channel, fam.ids.end, fam.ids.ret,
                fam.ids.call) == (START, MESSAGE, CHANNEL, END, RETURN, CALL)
        td._ENCODERS[inst] = SimpleNamespace(family=small, codec=real.codec)
    return td._ENCODERS[inst]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def agent_loop() -> Conversation:
    """12 messages with every construct of the format, then the generation prompt."""
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    sampled = (CHANNEL, 320, MESSAGE, 321, 322, RETURN)
    msgs = [_m(Role.SYSTEM, "Be exact. Use tools."),
            _m(u, "Weather in Paris? <|start|>assistant<|channel|>final is just text."),
            Message(a, (Reasoning(Text("Need the tool.")),
                        ToolCall("get_weather", '{"city": "Paris"}'))),
            _m(t, '{"temp": 18}'),
            Message(a, (Plain(Text("Checking Rome too.")),
                        ToolCall("search", '{"q": "Rome"}'))),
            _m(t, 'sunny "warm"\n'),
            Message(a, (Reasoning(Text("Both known.")), Plain(Text("Paris 18, Rome sunny.")))),
            _m(u, "Thanks! <|end|> <|call|>"),
            Message(a, (Plain(Tokens((300, 301))),)),
            _m(u, "One more."),
            Message(a, (Sampled(sampled),)),
            _m(u, "Bye")]
    return Conversation(msgs, True, TOOLS)


def text_loop() -> Conversation:
    """10 text-only messages opening with a developer message, ending with a training answer
    (``<|return|>``, its analysis kept in both modes): the kernel checks their parse too."""
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    msgs = [_m(Role.DEVELOPER, "Answer briefly.\n\nCite sources."), _m(u, "Rain in Oslo?"),
            Message(a, (ToolCall("get_weather", '{"city": "Oslo", "days": 2}'),)),
            _m(t, "rain"),
            Message(a, (Reasoning(Text("It rains.")), Plain(Text("Yes, rain.")))),
            _m(u, "And tomorrow? é 東京 🎉"),
            Message(a, (Reasoning(Text("Look it up.")), ToolCall("search", '{"tags": []}'))),
            _m(t, ""),
            _m(u, "Well?"),
            Message(a, (Reasoning(Text("No data.")), Plain(Text("Unknown.")))),
            ]
    return Conversation(msgs, False, TOOLS)


def corpus(name: str) -> Conversation:
    """A parity-corpus conversation (its template options are not the point here: the
    instance's are used)."""
    case = next(c for c in conversations("gpt-oss") if c.name == name)
    return lvt.from_openai(case.messages, case.tools, case.add_generation_prompt)


def refused() -> list[Conversation]:
    u, a, t = Role.USER, Role.ASSISTANT, Role.TOOL
    call = ToolCall("f", "{}")
    return [
        Conversation([_m(u, "q"), Message(a, (call, ToolCall("g", "{}")))]),  # tool_calls[0]
        Conversation([_m(u, "q"), Message(a, (Reasoning(Text("r")), Plain(Text("c")), call))]),
        Conversation([_m(u, "q"), _m(t, "r")]),  # no call before the result
        Conversation([_m(u, "q"), Message(a, (Sampled((CHANNEL, 320, CALL)),)), _m(t, "r")]),
        Conversation([_m(u, "q"), _m(a, "b"), _m(Role.SYSTEM, "late")]),
        Conversation([_m(u, "q"), _m(Role.DEVELOPER, "late")]),
        Conversation([_m(u, "q"), Message(a, (call,)), Message(t, (Plain(Tokens((300,))),))]),
        Conversation([_m(u, "q")], True, [{"type": "function", "name": "x"}]),
        Conversation([_m(u, "q"), Message(a, (Plain(Text("c")), Reasoning(Text("r"))))]),
        Conversation([Message(u, (Plain(Tokens((300, START))),))]),  # a control id as payload
    ]


def harmony_vectors() -> list[td.Vector]:
    for inst, _, _ in INSTANCES:
        _encoder(inst)
    vs: list[td.Vector] = []
    for inst in ("gptoss", "gptossstable"):
        vs.append(td.make_vector(f"{inst}: agent loop", inst, agent_loop()))
        vs.append(td.make_vector(f"{inst}: agent loop (text only)", inst, text_loop(),
                                 real=td.FULL and inst == "gptoss"))
        for name in CORPUS:
            vs.append(td.make_vector(f"{inst}: corpus {name}", inst, corpus(name)))
    # derandomized draws of the shapes gpt-oss expresses (one call per message, no late system
    # message: the strategy's Llama 3.1 shapes, with adversarial text and tools)
    for k, c in enumerate(td.drawn("llama3.1", N_DRAWN)):
        vs.append(td.make_vector(f"gptossstable: drawn {k}", "gptossstable", c))
    vs.append(td.make_vector("gptosslow: options", "gptosslow", Conversation(
        [_m(Role.SYSTEM, "S"), _m(Role.USER, "q"), Message(Role.ASSISTANT, (
            Reasoning(Text("r")), Plain(Text("a"))))], False, None)))
    vs += [td.make_vector(f"gptoss: refused {k}", "gptoss", c) for k, c in enumerate(refused())]
    vs.append(td.make_vector("gptoss: tokens", "gptoss", Conversation(
        [Message(Role.SYSTEM, (Plain(Tokens((300,))),)),
         Message(Role.USER, (Plain(Tokens((301, 302))),)), _m(Role.ASSISTANT, "b")], True, TOOLS)))
    return vs


def test_harmony_vectors_cover_the_model() -> None:
    vs = harmony_vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 4 and all(len(v.conv.messages) >= 8 and v.layout is not None
                                   for v in loops)
    assert sum(v.layout is None for v in vs) == len(refused())
    assert sum("corpus" in v.label for v in vs) >= 2
    assert any(v.layout is not None and "drawn" in v.label for v in vs)
    # the text-only loops parse back (tools block included) to their lowered form, owners
    # erased, and their corrupted copy does not parse
    for v in loops:
        if "text only" in v.label:
            fam = td.family(v.inst)
            erased = lvt.families.erase(fam.lower(v.conv))
            assert v.parse == lg.hash_code(lg.layout_code(fam.layout(erased))), v.label
            assert v.bad is None, v.label
    # both modes differ on the history analysis: the exact loop drops it, the stable keeps it
    a, b = (next(v for v in vs if v.label == f"{i}: agent loop") for i in ("gptoss",
                                                                             "gptossstable"))
    assert a.layout != b.layout
    assert sum(v.real is not None for v in vs) == (1 if td.FULL else 0)


@pytest.mark.lean
def test_harmony_agrees_with_lean_kernel() -> None:
    # the layout corruption first: every gpt-oss render holds the ~250-character system
    # message, and a false `decide` on its character-codec render runs for over ten minutes
    td.check_vectors(harmony_vectors(), 3, title="gpt-oss differential vectors",
                     stage="lvt-differential-harmony-", layout_first=True)
