"""Differential test of the tagged-turns structure: ``lvt.families.tagged`` (what
``ChatEncoder`` runs) against ``Verified/Spec/Tagged.lean`` by kernel evaluation, with the
machinery of ``test_differential.py`` (layout, character-codec render, parse and a corrupted
parse per vector), for the entries the Lean states: Phi-3 (header text, footer text,
``eos_token``), Phi-4 (the role as text between two control tokens), Kimi K2.5 in both
thinking modes (a think block that drops the reasoning, a prompt writing one or both of its
tokens), Kimi K2.7-Code (reasoning kept), and Kimi K2-Instruct and K2-Thinking with the
default system turn their templates insert (``Spec/TaggedDefault.lean``). The Lean records
are built from the Python instances (``leangen.tagged_format_term``), so each vector checks
the transliteration on the registry's own values.

Vectors per entry: a 12-message agent loop (system prompt, spelled control tokens, HTML,
whitespace kept verbatim, a token payload, reasoning, a sampled turn that closes its own think
block, the generation prompt), a 9-message text chat whose parse is checked too, and the
refusals (tools, a tool message, a call, reasoning where no block is written, a developer
message, a token payload holding a control id), and derandomized draws of text conversations
(``LVT_DIFF_RANDOM`` per entry), and an empty tool list (rendered as no tools).
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
import test_differential as td

import lvt
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

#: vector instance -> (entry, zoo vocabulary, options)
INSTANCES = {"phi3": ("phi3", "phi3-text", {}), "phi4": ("phi4", "phi4-text", {}),
             "kimi25": ("kimi-k2.5", "kimi-text", {}),
             "kimi25nothink": ("kimi-k2.5", "kimi-text", {"thinking": False}),
             "kimi27code": ("kimi-k2.7-code", "kimi-text", {}),
             "kimi2": ("kimi-k2", "kimi-text", {}),
             "kimi2thinking": ("kimi-k2-thinking", "kimi-text", {})}
#: the instances whose entries write a think block
THINK = ("kimi25", "kimi25nothink", "kimi27code", "kimi2thinking")
#: the instances whose template inserts a default system turn (`Spec/TaggedDefault.lean`)
DEFAULT = ("kimi2", "kimi2thinking")
#: derandomized draws per instance (``LVT_DIFF_RANDOM``)
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "1"))


def _encoder(inst: str) -> lvt.ChatEncoder:
    # registered in test_differential's encoder cache, so its helpers build this instance
    if inst not in td._ENCODERS:
        fmt, vocab, opts = INSTANCES[inst]
        td._ENCODERS[inst] = lvt.ChatEncoder.from_tokenizer(vocab, fmt, **opts)
    return td._ENCODERS[inst]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def agent_loop(inst: str) -> Conversation:
    """12 messages and the generation prompt."""
    fam = _encoder(inst).family
    think = fam.think is not None
    # a sampled turn: on a think entry it closes the block the prompt opened
    sampled = ((fam.think[1],) if think and fam.prompt_think == 1 else ()) + (300, 301)
    answer = (Message(Role.ASSISTANT, (Reasoning(Text("Add them.")), Plain(Text("It is 3."))))
              if think else _m(Role.ASSISTANT, "It is 3."))
    msgs = [_m(Role.SYSTEM, " Be exact.\n"), _m(Role.USER, "  Add 1 and 2.  "), answer,
            _m(Role.USER, "Show a <table><tr><td>3</td>"),
            _m(Role.ASSISTANT, "<table>\n  <tr><td>3</td></tr>\n</table>"),
            _m(Role.USER, "Is <|im_end|> or <|end|> or <think> text?"),
            Message(Role.ASSISTANT, (Plain(Tokens((300, 301))),)), _m(Role.USER, "Again"),
            Message(Role.ASSISTANT, (Sampled(sampled),)), _m(Role.SYSTEM, "\tLate system."),
            _m(Role.ASSISTANT, ""), _m(Role.USER, "Bye")]
    return Conversation(msgs, True, None)


def long_chat() -> Conversation:
    """9 text-only messages (so the kernel checks their parse too), no generation prompt."""
    msgs = [_m(Role.SYSTEM, "You are terse.\n\nAnswer in one line."), _m(Role.USER, "2+2?"),
            _m(Role.ASSISTANT, "4"), _m(Role.USER, "3+3?"), _m(Role.ASSISTANT, " 6 "),
            _m(Role.USER, "<b>bold</b>?"), _m(Role.USER, "é 東京 🎉"),
            _m(Role.ASSISTANT, "a tag"), _m(Role.ASSISTANT, "")]
    return Conversation(msgs, False, None)


def _messages() -> st.SearchStrategy[list[Message]]:
    text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
    role = st.sampled_from((Role.SYSTEM, Role.USER, Role.ASSISTANT))
    return st.lists(st.builds(_m, role, text), min_size=1, max_size=5)


def drawn(n: int) -> list[Conversation]:
    """``n`` derandomized draws of text conversations (any order of the three roles)."""
    out: list[Conversation] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(_messages(), st.booleans())
    def collect(ms: list[Message], prompt: bool) -> None:
        out.append(Conversation(ms, prompt, None))

    collect()
    return out[:n]


def refused(inst: str) -> list[Conversation]:
    u, a = Role.USER, Role.ASSISTANT
    ctrl = _encoder(inst).family.footer[0]
    out = [Conversation([_m(u, "q")], False, [{"type": "function"}]),  # tools
           Conversation([_m(u, "a"), _m(Role.TOOL, "r")]),  # a tool message
           Conversation([_m(u, "q"), Message(a, (ToolCall("f", "{}"),))]),  # a call
           Conversation([_m(Role.DEVELOPER, "x")]),  # no developer header
           Conversation([Message(u, (Plain(Tokens((5, ctrl))),))])]  # a control id
    if inst not in THINK:  # reasoning where no block is written
        out.append(Conversation([_m(u, "q"), Message(a, (Reasoning(Text("r")),))]))
    return out


def tagged_vectors() -> list[td.Vector]:
    vs: list[td.Vector] = []
    for inst in INSTANCES:
        _encoder(inst)
        vs.append(td.make_vector(f"{inst}: agent loop", inst, agent_loop(inst)))
        vs.append(td.make_vector(f"{inst}: agent loop (text only)", inst, long_chat()))
        vs += [td.make_vector(f"{inst}: drawn {k}", inst, c) for k, c in enumerate(drawn(N_DRAWN))]
        # an empty tool list is no tools (the templates' `{% if tools %}`), in both
        vs.append(td.make_vector(f"{inst}: empty tool list", inst,
                                 Conversation([_m(Role.USER, "q")], True, ())))
        if inst in DEFAULT:  # the inserted turn: before a user message, before nothing,
            # and a user's system message with the default text (K2-Thinking: that turn)
            text = _encoder(inst).family.default_system
            vs += [td.make_vector(f"{inst}: default turn {k}", inst, c) for k, c in enumerate((
                Conversation([_m(Role.USER, "q"), _m(Role.ASSISTANT, "a")], False, None),
                Conversation([], True, None),
                Conversation([_m(Role.SYSTEM, text), _m(Role.USER, "q")], True, None),
                Conversation([_m(Role.SYSTEM, text + "!"), _m(Role.USER, "q")], False, None)))]
        vs += [td.make_vector(f"{inst}: refused {k}", inst, c)
               for k, c in enumerate(refused(inst))]
    return vs


def test_tagged_vectors_cover_the_entries() -> None:
    vs = tagged_vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 2 * len(INSTANCES)
    assert all(len(v.conv.messages) >= 8 and v.layout is not None for v in loops)
    assert sum(v.layout is None for v in vs) == sum(len(refused(i)) for i in INSTANCES)
    assert all(v.layout is not None for v in vs if "empty tool list" in v.label)
    assert any(v.bad is None for v in vs if v.layout is not None)
    assert sum("drawn" in v.label and v.layout is not None for v in vs) == N_DRAWN * len(INSTANCES)
    # the Lean record of every instance is the registry's, term for term
    import leangen as lg

    for inst in INSTANCES:
        term = lg.format_term(_encoder(inst).family)
        kind = "Tagged.DfltFmt)" if inst in DEFAULT else "Tagged.TaggedFmt)"
        assert term.startswith("(⟨") and term.endswith(kind), term


@pytest.mark.lean
def test_tagged_agrees_with_lean_kernel() -> None:
    td.check_vectors(tagged_vectors(), 2, title="Tagged-turns differential vectors",
                     stage="lvt-differential-tagged-")
