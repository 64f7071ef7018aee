# ruff: noqa: RUF001  (DeepSeek's control tokens use full-width bars)
"""Differential test of DeepSeek-V3.1: ``lvt.families.deepseek_v31`` (what ``ChatEncoder`` runs
for ``deepseek-v3.1`` and ``deepseek-v3.1-llama.cpp``) against ``Verified/Spec/DeepSeekV31.lean``
(``lower``, ``layout``, the checked reader ``unlayout``, ``format``) by kernel evaluation, with
the machinery of ``test_differential.py``: per vector, the layout of the Lean lowering, its
character-codec render, the parse of that render and of a corrupted one, each equal to
Python's.

Vectors: an agent loop per entry and thinking mode (systems before and between turns, hoisted
after BOS; a headed call message with content; results one per tool message; an answer and a
call message right after results, written without a header; an assistant message after an
assistant message; control-token text; the generation prompt after a user message), a chat
with a sampled turn and the prompt, the loop also with the real tokenizer's ids (a table
codec of the real encodings of the render's spans, so tokens that span two items are compared
too), derandomized draws (``LVT_DIFF_RANDOM``) and the refusals (a developer message, an
assistant message first, a token payload holding a control id). As in ``test_differential``,
the vectors keep DeepSeek's 15 control ids and two of its ~800 other reserved ids, so that the
wasm Lean's heap holds the parse.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangen as lg
import test_differential as td

import lvt
from lvt import zoo
from lvt.families.deepseek_v31 import DeepSeekV31
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

#: instance -> (entry, options)
INSTANCES = {"v31": ("deepseek-v3.1", {}), "v31think": ("deepseek-v3.1", {"thinking": True}),
             "v31cpp": ("deepseek-v3.1-llama.cpp", {}),
             "v31cppthink": ("deepseek-v3.1-llama.cpp", {"thinking": True})}
#: derandomized draws per instance (``LVT_DIFF_RANDOM``)
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "1"))


def family(inst: str) -> DeepSeekV31:
    """The instance, with DeepSeek's control ids and two other reserved ids, registered in
    ``test_differential``'s encoder cache (its helpers build vectors from it)."""
    if inst not in td._ENCODERS:
        fmt, opts = INSTANCES[inst]
        enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("deepseek-r1"), fmt, **opts)
        fam = enc.family
        assert isinstance(fam, DeepSeekV31)
        keep = tuple(t for t in fam.ids.extra if t in (2, 128805))
        small = DeepSeekV31(dataclasses.replace(fam.ids, extra=keep), fam.thinking,
                            fam.open_think, fam.keeps_argument_text)
        td._ENCODERS[inst] = SimpleNamespace(family=small, codec=enc.codec)  # type: ignore[assignment]
    fam = td._ENCODERS[inst].family
    assert isinstance(fam, DeepSeekV31)
    return fam


def format_term(fam: DeepSeekV31) -> str:
    """The ``V31Fmt`` record of a Python instance."""
    ids = lg.format_term(fam).split(", .exact")[0].removeprefix("(⟨")
    return (f"(⟨{ids}, {str(fam.thinking).lower()}, {str(fam.open_think).lower()}⟩ "
            ": DeepSeekV31.V31Fmt)")


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def agent_loop() -> Conversation:
    """14 messages: every turn shape and header rule of the format."""
    u, a, t, s = Role.USER, Role.ASSISTANT, Role.TOOL, Role.SYSTEM
    r = Reasoning(Text("never written"))
    return Conversation([
        _m(s, "Be exact."), _m(u, "Add 1 and 2, then 3."),
        Message(a, (r, Plain(Text("Calling.")), ToolCall("calc", '{"a": 1}'),
                    ToolCall("calc", '{"a": 2}'))), _m(t, "1"), _m(t, "2"),
        _m(s, "Late rule."),
        Message(a, (ToolCall("calc", '{"a": 3}'),)), _m(t, "6"),
        Message(a, (r, Plain(Text("It is 6.")))), _m(a, "Anything else?"),
        _m(u, "Again <｜User｜> text </think>"),
        Message(a, (Plain(Text("Sure.")),)), _m(u, "Thanks")], True, None)


def chat() -> Conversation:
    u, a = Role.USER, Role.ASSISTANT
    return Conversation([_m(u, "Hi"), Message(a, (Reasoning(Text("r")), Plain(Text("Hello")))),
                         _m(u, "Again"), Message(a, (Sampled((300, 128799, 301)),)),
                         _m(u, "Bye")], True)


def refused(fam: DeepSeekV31) -> list[Conversation]:
    u, a = Role.USER, Role.ASSISTANT
    return [Conversation([_m(Role.DEVELOPER, "x"), _m(u, "q")]),
            Conversation([_m(Role.SYSTEM, "s"), _m(a, "first")]),
            Conversation([Message(u, (Plain(Tokens((5, fam.ids.eos))),))])]


def vectors() -> list[td.Vector]:
    for inst in INSTANCES:
        family(inst)
    vs = [td.make_vector(f"{inst}: agent loop", inst, agent_loop(), real=inst == "v31")
          for inst in INSTANCES]
    vs.append(td.make_vector("v31think: chat", "v31think", chat()))
    vs += [td.make_vector(f"v31: refused {k}", "v31", c)
           for k, c in enumerate(refused(family("v31")))]
    vs += [td.make_vector(f"{inst}: drawn {k}", inst, c)
           for inst in ("v31", "v31cppthink")
           for k, c in enumerate(td.drawn(INSTANCES[inst][0], N_DRAWN))]
    return vs


def module(vs: list[td.Vector], doc: str, bump: bool = False) -> str:
    """The vectors as a module; ``bump``: the first vector's layout hash changed."""
    decls: list[str] = []
    done: set[str] = set()
    for j, v in enumerate(vs):
        if v.inst not in done:
            done.add(v.inst)
            decls.append(f"def fmt_{v.inst} : DeepSeekV31.V31Fmt := "
                         f"{format_term(family(v.inst))}\n")
        decls.append(f"def conv{j} : Conversation :=\n  {lg.conversation_term(v.conv)}")
        f = f"fmt_{v.inst}"
        terms = (f"DeepSeekV31.lower {f}", f"DeepSeekV31.layout {f}", f"(DeepSeekV31.format {f})")
        if bump and j == 0:
            assert v.layout is not None
            v = td.Vector(v.label, v.inst, v.conv, v.layout + 1)
        decls += td.vector_examples(v, f, f"conv{j}", terms)[: 2 if bump else None]
        decls.append("")
    return lg.module_text(doc, decls, ["DeepSeekV31"])


def test_vectors_cover_the_format() -> None:
    vs = vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == len(INSTANCES) and all(len(v.conv.messages) >= 12 for v in loops)
    # every loop lowers, renders and reads back; the refusals are Python's too
    assert all(v.layout is not None and v.parse is not None for v in loops)
    assert [v.layout is None for v in vs if "refused" in v.label] == [True] * 3
    # the two headers and two prompts give four different renders of the same loop
    assert len({v.layout for v in loops}) == 4
    real = [v for v in vs if v.real is not None]
    assert [v.label for v in real] == ["v31: agent loop"] and real[0].real[2] is not None
    text = module(vs, "coverage")
    assert text.count("DeepSeekV31.lower fmt_") >= 3 * len(loops)


@pytest.mark.lean
def test_deepseek_v31_agrees_with_lean_kernel() -> None:
    td.check_module_vectors(vectors(), module, stage="lvt-differential-dsv31-", stem="V31",
                            title="DeepSeek-V3.1 vectors")
