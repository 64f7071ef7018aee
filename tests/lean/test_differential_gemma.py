"""Differential test of the Gemma 3 family: ``lvt.families.gemma`` (what ``ChatEncoder`` runs)
against ``Verified/Spec/Gemma.lean`` by kernel evaluation, with the machinery of
``test_differential.py`` (layout, character-codec render, parse and a corrupted parse per
vector).

Vectors: two long conversations (a 12-message loop with a system prompt, spelled control
tokens, HTML tags, a token payload and a sampled turn; a 9-message text-only chat whose parse is
checked too), derandomized draws of ``test_gemma.gemma_conversations``, the refusals (tools,
non-alternating roles, a late system or tool message, a system message alone), and a token
payload. Corrupted copies of one drawn vector (``td.N_CORRUPT``) must be rejected. With
``LVT_DIFF_FULL=1`` the agent loop is also rendered and parsed with the real tokenizer's ids
(a table codec): about 10 minutes more of kernel evaluation here, so not on every run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import test_differential as td

import lvt
from lvt import zoo
from lvt.model import Conversation, Message, Plain, Role, Sampled, Text, Tokens, ToolCall
from test_gemma import gemma_conversations

INST = "gemma3"
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "2"))


def _encoder() -> lvt.ChatEncoder:
    # registered in test_differential's encoder cache, so its helpers build this instance
    if INST not in td._ENCODERS:
        td._ENCODERS[INST] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("gemma3"),
                                                            "gemma3")
    return td._ENCODERS[INST]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def drawn(n: int) -> list[Conversation]:
    out: list[Conversation] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(gemma_conversations(max_pairs=2))
    def collect(c: Conversation) -> None:
        out.append(c)

    collect()
    return out[:n]


def agent_loop(sampled: tuple[int, ...]) -> Conversation:
    """12 messages: system, five user/model exchanges (spelled control tokens, HTML tags,
    whitespace to trim, a token payload, a sampled turn), a final user message, the prompt."""
    msgs = [_m(Role.SYSTEM, " Be exact.\n"), _m(Role.USER, "  Add 1 and 2.  "),
            _m(Role.ASSISTANT, "\n\nIt is 3.\n"), _m(Role.USER, "Show a <table><tr><td>3</td>"),
            _m(Role.ASSISTANT, "<table>\n  <tr><td>3</td></tr>\n</table>"),
            _m(Role.USER, "Is <start_of_turn> or <end_of_turn> text?"),
            Message(Role.ASSISTANT, (Plain(Tokens((300, 301))),)), _m(Role.USER, "Again"),
            Message(Role.ASSISTANT, (Sampled(sampled),)), _m(Role.USER, "\tWhy?"),
            _m(Role.ASSISTANT, "Because."), _m(Role.USER, "Bye")]
    return Conversation(msgs, True, None)


def long_chat() -> Conversation:
    """9 text-only messages (so the kernel checks their parse too)."""
    msgs = [_m(Role.SYSTEM, "You are terse.\n\nAnswer in one line."), _m(Role.USER, "2+2?"),
            _m(Role.ASSISTANT, "4"), _m(Role.USER, "3+3?"), _m(Role.ASSISTANT, " 6 "),
            _m(Role.USER, "<b>bold</b>?"), _m(Role.ASSISTANT, "a tag"), _m(Role.USER, "é 東京 🎉"),
            _m(Role.ASSISTANT, "")]
    return Conversation(msgs, False, None)


def refused() -> list[Conversation]:
    u, a = Role.USER, Role.ASSISTANT
    return [
        Conversation([_m(u, "q")], False, []),  # tools: the template writes none
        Conversation([_m(u, "a"), _m(u, "b")]),  # roles must alternate
        Conversation([_m(a, "a")]),  # the first loop message must be a user message
        Conversation([_m(u, "a"), _m(Role.TOOL, "r")]),  # a tool turn
        Conversation([_m(u, "a"), _m(a, "b"), _m(Role.SYSTEM, "late")]),  # a late system turn
        Conversation([_m(Role.SYSTEM, "alone")]),  # no user message takes the system text
        Conversation([_m(Role.DEVELOPER, "x")]),
        Conversation([_m(u, "q"), Message(a, (ToolCall("f", "{}"),))]),
    ]


def gemma_vectors() -> list[td.Vector]:
    _encoder()
    vs = [td.make_vector(f"{INST}: agent loop", INST, agent_loop((320, 321, 322)), real=td.FULL),
          td.make_vector(f"{INST}: agent loop (text only)", INST, long_chat())]
    vs += [td.make_vector(f"{INST}: drawn {k}", INST, c) for k, c in enumerate(drawn(N_DRAWN))]
    vs += [td.make_vector(f"{INST}: refused {k}", INST, c) for k, c in enumerate(refused())]
    vs.append(td.make_vector(f"{INST}: tokens", INST, Conversation(
        [Message(Role.USER, (Plain(Tokens((300,))),)), _m(Role.ASSISTANT, "b")], False)))
    vs.append(td.make_vector(f"{INST}: system prefix with tokens", INST, Conversation(
        [_m(Role.SYSTEM, "S"), Message(Role.USER, (Plain(Tokens((300, 301))),))], True)))
    return vs


def test_gemma_vectors_cover_the_model() -> None:
    vs = gemma_vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 2 and all(len(v.conv.messages) >= 8 and v.layout is not None
                                   for v in loops)
    assert sum(v.layout is None for v in vs) == len(refused())
    assert sum(v.real is not None for v in vs) == (1 if td.FULL else 0)
    assert any(v.layout is not None and "drawn" in v.label for v in vs)
    assert any(v.bad is None for v in vs if v.layout is not None)


@pytest.mark.lean
def test_gemma_agrees_with_lean_kernel() -> None:
    td.check_vectors(gemma_vectors(), 2, title="Gemma 3 differential vectors",
                     stage="lvt-differential-gemma-")
