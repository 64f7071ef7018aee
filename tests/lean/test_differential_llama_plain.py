"""Differential test of Llama 3's loop: ``lvt.families.llama_template.Llama3`` (what
``ChatEncoder`` runs for ``llama3.0``) against ``Verified/Spec/LlamaPlain.lean`` (``lower0``,
``layout0``, ``format0``) by kernel evaluation, with the machinery of ``test_differential.py``
(layout, character-codec render, parse and a corrupted parse per vector). The Lean record is
built from the Python instance (``leangen.format_term``), so each vector checks the
transliteration on the registry's own values.

Vectors: a 12-message loop (system prompts first and late, whitespace the template trims, a
JSON answer that must stay an answer, spelled control tokens, a token payload, a developer
message, a sampled turn, an empty answer, the generation prompt), a 9-message text chat whose
parse is checked too, derandomized draws (``LVT_DIFF_RANDOM``), and the refusals (tools, an
empty tool list, a tool message, a call, reasoning, no messages, a token payload or a sample
holding a control id).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangen as lg
import test_differential as td

import lvt
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall

INST = "llama30"
#: derandomized draws (``LVT_DIFF_RANDOM``)
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "2"))


def _encoder() -> lvt.ChatEncoder:
    # registered in test_differential's encoder cache, so its helpers build this instance
    if INST not in td._ENCODERS:
        td._ENCODERS[INST] = lvt.ChatEncoder.from_tokenizer("llama3", "llama3.0")
    return td._ENCODERS[INST]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def agent_loop() -> Conversation:
    """12 messages and the generation prompt."""
    eot = _encoder().family.ids.eot
    msgs = [_m(Role.SYSTEM, " Be exact.\n"), _m(Role.USER, "  Add 1 and 2.  "),
            _m(Role.ASSISTANT, '{"name": "add", "parameters": {"a": 1}}'),
            _m(Role.USER, "Is <|eot_id|> or <|start_header_id|> text?"),
            Message(Role.ASSISTANT, (Plain(Tokens((300, 301))),)),
            _m(Role.DEVELOPER, "Prefer tables."), _m(Role.USER, "Again"),
            Message(Role.ASSISTANT, (Sampled((302, 303)),)), _m(Role.SYSTEM, "\tLate system."),
            _m(Role.ASSISTANT, ""), _m(Role.USER, "Bye\n\n"), _m(Role.ASSISTANT, f"id {eot}")]
    return Conversation(msgs, True, None)


def long_chat() -> Conversation:
    """9 text-only messages (so the kernel checks their parse too), no generation prompt."""
    msgs = [_m(Role.USER, "2+2?"), _m(Role.ASSISTANT, " 4 "), _m(Role.SYSTEM, "Be terse.\n\nOk."),
            _m(Role.USER, "<b>bold</b>?"), _m(Role.USER, "é 東京 🎉"),
            _m(Role.ASSISTANT, "a tag"), _m(Role.DEVELOPER, "x"), _m(Role.ASSISTANT, ""),
            _m(Role.USER, "end")]
    return Conversation(msgs, False, None)


def drawn(n: int) -> list[Conversation]:
    """``n`` derandomized draws of text conversations (any order of the four roles)."""
    out: list[Conversation] = []
    text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
    role = st.sampled_from((Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.DEVELOPER))

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.lists(st.builds(_m, role, text), min_size=1, max_size=5), st.booleans())
    def collect(ms: list[Message], prompt: bool) -> None:
        out.append(Conversation(ms, prompt, None))

    collect()
    return out[:n]


def refused() -> list[Conversation]:
    u, a = Role.USER, Role.ASSISTANT
    eot = _encoder().family.ids.eot
    return [Conversation([_m(u, "q")], False, [{"type": "function"}]),  # tools
            Conversation([_m(u, "q")], False, ()),  # an empty tool list: `tools` is given
            Conversation([_m(u, "a"), _m(Role.TOOL, "r")]),  # a tool message
            Conversation([_m(u, "q"), Message(a, (ToolCall("f", "{}"),))]),  # a call
            Conversation([_m(u, "q"), Message(a, (Reasoning(Text("r")), Plain(Text("x"))))]),
            Conversation([], True, None),  # no messages: no <|begin_of_text|>
            Conversation([Message(u, (Plain(Tokens((5, eot))),))]),  # a control id
            Conversation([_m(u, "q"), Message(a, (Sampled((7, eot)),))])]  # in a sample


def vectors() -> list[td.Vector]:
    _encoder()
    vs = [td.make_vector(f"{INST}: agent loop", INST, agent_loop()),
          td.make_vector(f"{INST}: agent loop (text only)", INST, long_chat())]
    vs += [td.make_vector(f"{INST}: drawn {k}", INST, c) for k, c in enumerate(drawn(N_DRAWN))]
    vs += [td.make_vector(f"{INST}: refused {k}", INST, c) for k, c in enumerate(refused())]
    return vs


def test_llama30_vectors_cover_the_loop() -> None:
    vs = vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 2 and all(len(v.conv.messages) >= 9 and v.layout is not None
                                   for v in loops)
    assert [v.layout is None for v in vs if "refused" in v.label] == [True] * len(refused())
    assert sum(v.layout is None for v in vs) == len(refused())
    assert all(v.parse is not None for v in loops[1:])  # the text chat reads back
    fam = _encoder().family
    assert lg.version_suffix(fam) == "0" and lg.spec_of(fam) == "LlamaPlain"
    assert lg.format_term(fam).endswith(": Llama.LlamaFmt)")
    # the entry `llama30_lawful` is about: the reference ids, which the real tokenizer's are
    # (tests/test_real_tokenizers.py); the vectors above use the full reserved list
    spec = (Path(__file__).resolve().parents[2] / "Verified/Spec/LlamaPlain.lean").read_text()
    assert "def llama30 : LlamaFmt := ⟨llama31Ids, [], true⟩" in spec


@pytest.mark.lean
def test_llama30_agrees_with_lean_kernel() -> None:
    td.check_vectors(vectors(), 1, title="Llama 3 loop differential vectors",
                     stage="lvt-differential-llama30-")
