"""Differential test of QwQ-32B's loop: ``lvt.families.qwen_template.QwQ`` (what
``ChatEncoder`` runs for ``qwq``) against ``Verified/Spec/QwenQwQ.lean`` (``lowerQ``,
``layoutQ``, ``formatQ``) by kernel evaluation, with the machinery of ``test_differential.py``
(layout, character-codec render, parse and a corrupted parse per vector). The Lean record is
built from the Python instance (``leangen.format_term``), so each vector checks the
transliteration on the registry's own values.

Vectors: the structure's agent loop (reasoning the template never reads, parallel calls,
result groups, a history answer with leading newlines, a sampled turn after the prompt's
``<think>``), a loop with tools and no system message (the empty system text before the
preamble) whose parse is checked too, a last answer that keeps its leading newlines,
derandomized draws (``LVT_DIFF_RANDOM``) and the refusals (a developer message, blocks out of
order, a token payload holding a control id).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangen as lg
import test_differential as td

import lvt
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, Tokens, ToolCall

INST = "qwq"
#: derandomized draws (``LVT_DIFF_RANDOM``)
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "2"))


def _encoder() -> lvt.ChatEncoder:
    # registered in test_differential's encoder cache, so its helpers build this instance
    if INST not in td._ENCODERS:
        td._ENCODERS[INST] = lvt.ChatEncoder.from_tokenizer("qwen3", "qwq")
    return td._ENCODERS[INST]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def tools_loop() -> Conversation:
    """Tools and no system message; reasoning, leading newlines in history and last answers,
    a call after content and one without; text only, so the parse is checked."""
    a = Role.ASSISTANT
    msgs = [_m(Role.USER, "Add 1 and 2."),
            Message(a, (Reasoning(Text("Sum.")), Plain(Text("\n\nCalling.")),
                        ToolCall("calc", '{"a": 1}'))), _m(Role.TOOL, "3"),
            Message(a, (ToolCall("calc", '{"a": 3}'),)), _m(Role.TOOL, "6"), _m(Role.TOOL, "7"),
            _m(a, "\nIt is 6."), _m(Role.USER, "<|im_start|> and <think> are text"),
            Message(a, (Reasoning(Text("x")), Plain(Text("\n\nLast keeps newlines."))))]
    return Conversation(msgs, False, td.TOOLS)


def vectors() -> list[td.Vector]:
    fam = _encoder().family
    body = tuple(t for t in fam.reserved if fam.ids.body_ctrl(t))
    sampled = (*body[:1], 320, 321, *body[1:2], 322)
    vs = [td.make_vector(f"{INST}: agent loop", INST, td.agent_loop(True, True, sampled)),
          td.make_vector(f"{INST}: agent loop (tools, no system)", INST, tools_loop())]
    vs += [td.make_vector(f"{INST}: drawn {k}", INST, c)
           for k, c in enumerate(td.drawn("qwen3", N_DRAWN))]
    u, a = Role.USER, Role.ASSISTANT
    refused = [Conversation([_m(Role.DEVELOPER, "x")]),
               Conversation([_m(u, "q"), Message(a, (ToolCall("f", "{}"), Plain(Text("a"))))]),
               Conversation([Message(u, (Plain(Tokens((5, fam.ids.im_end))),))])]
    vs += [td.make_vector(f"{INST}: refused {k}", INST, c) for k, c in enumerate(refused)]
    return vs


def test_qwq_vectors_cover_the_loop() -> None:
    vs = vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 2 and all(len(v.conv.messages) >= 9 and v.layout is not None
                                   for v in loops)
    assert loops[1].parse is not None  # the text-only loop reads back
    assert [v.layout is None for v in vs if "refused" in v.label] == [True] * 3
    fam = _encoder().family
    assert lg.version_suffix(fam) == "Q" and lg.spec_of(fam) == "QwenQwQ"
    term = lg.format_term(fam)
    assert ", .exact, true, none, true⟩ : Qwen.QwenFmt)" in term, term
    # the entry `qwq_lawful` is about: Qwen3's reference ids (the registry's, by
    # tests/test_real_tokenizers.py) in the record the vectors use
    spec = (Path(__file__).resolve().parents[2] / "Verified/Spec/QwenQwQ.lean").read_text()
    assert "def qwq : QwenFmt := ⟨qwen3Ids, .exact, true, none, true⟩" in spec


@pytest.mark.lean
def test_qwq_agrees_with_lean_kernel() -> None:
    td.check_vectors(vectors(), 1, title="QwQ loop differential vectors",
                     stage="lvt-differential-qwq-")
