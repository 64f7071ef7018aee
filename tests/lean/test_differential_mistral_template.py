"""Differential test of the Mistral templates' loops: ``lvt.families.mistral_template``
(``MistralTemplate`` for Ministral 3 / Devstral 2, ``MistralSmall3`` for Mistral Small 3 / 3.1:
what ``ChatEncoder`` runs for those entries) against ``Verified/Spec/MistralTemplate.lean``
(``lowerT``/``layoutT``/``formatT``, ``lowerS``/``layoutS``/``formatS``) by kernel evaluation,
with the machinery of ``test_differential.py`` (layout, character-codec render, parse and a
corrupted parse per vector).

Each instance is the registry entry's own class, version and mode, the first
``DEFAULT_CHARS`` characters of its default system text (the date Small 3 stamps fixed), over
the control ids of ``test_differential_mistral.IDS`` (the real vocabulary's named ids and a
subset of its 1000 reserved ranks, which the kernel cannot hold; the transliteration treats
every reserved id alike). The whole default texts are compared with the templates by the
parity tests (``tests/parity/test_mistral_entries.py``).

Vectors: per loop an agent loop of 10+ messages (the 2512 loop: v13 calls, results, trailing
spaces kept, the default turn absent after a system message; Small 3: system messages and
consecutive user messages anywhere, an empty answer, a sampled turn), a text-only loop whose
parse is checked (the default turn inserted), derandomized draws (``LVT_DIFF_RANDOM``) and the
refusals of each loop.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangen as lg
import test_differential as td
import test_differential_mistral as tdm

import lvt
from lvt.families.mistral_template import MistralSmall3, MistralTemplate
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall
from parity.templates import family_tokenizer

#: vector instance -> (entry, options)
INSTANCES = {"ministral3": ("ministral-3-3b", {}),
             "small31": ("mistral-small-3.1", {"date_string": "2026-01-01"})}
#: The first characters of the entry's default text the vectors use: the whole text (2,361
#: characters for Ministral 3) read back by the kernel's parse takes the wasm Lean past its
#: heap, and the loop treats the text as one opaque payload (the theorems hold for any text)
DEFAULT_CHARS = 48
#: derandomized draws per instance (``LVT_DIFF_RANDOM``)
N_DRAWN = int(os.environ.get("LVT_DIFF_RANDOM", "2"))


def _encoder(inst: str) -> Any:
    """The entry's family rebuilt over the vectors' ids, registered in test_differential's
    encoder cache (its helpers read only ``.family``)."""
    if inst not in td._ENCODERS:
        entry, opts = INSTANCES[inst]
        real = lvt.ChatEncoder.from_tokenizer(family_tokenizer("mistral"), entry, **opts).family
        assert set(tdm.IDS.reserved) <= set(real.reserved)
        cls = type(real)
        fam = cls(tdm.IDS, real.version, real.stable, real.default_system[:DEFAULT_CHARS])
        td._ENCODERS[inst] = SimpleNamespace(family=fam)
    return td._ENCODERS[inst]


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


def small3_loop() -> Conversation:
    """11 messages in an order only this template writes, then the generation prompt."""
    u, a, s = Role.USER, Role.ASSISTANT, Role.SYSTEM
    msgs = [_m(u, "Hi [INST] there"), _m(u, "Again"), _m(a, "Hello. "), _m(s, "Be brief."),
            _m(a, ""), Message(a, ()), _m(u, "é 東京"), Message(u, (Plain(Tokens((1200,))),)),
            _m(s, "Late"), _m(u, "Go"), Message(a, (Sampled((1300, 1301)),))]
    return Conversation(msgs, True, None)


def small3_text() -> Conversation:
    """9 text-only messages opening with a system message (no default turn): parse checked."""
    u, a, s = Role.USER, Role.ASSISTANT, Role.SYSTEM
    msgs = [_m(s, "Rules."), _m(u, "q1"), _m(a, "a1 "), _m(u, "q2"), _m(u, "q3"),
            _m(s, "More."), _m(a, "a2"), _m(u, "[/INST] text"), _m(a, "done")]
    return Conversation(msgs, False, ())


def drawn(inst: str, n: int) -> list[Conversation]:
    """``n`` derandomized draws of text chats (user and assistant alternating for the 2512
    loop, whose message order mistral-common's validator constrains; any order for Small 3)."""
    out: list[Conversation] = []
    text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                   max_size=10)
    roles = st.lists(st.sampled_from((Role.SYSTEM, Role.USER, Role.ASSISTANT)), min_size=1,
                     max_size=5)

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(roles, st.lists(text, min_size=5, max_size=5), st.booleans())
    def collect(rs: list[Role], ts: list[str], prompt: bool) -> None:
        if inst == "ministral3":
            rs = [Role.USER if k % 2 == 0 else Role.ASSISTANT for k in range(len(rs))]
        out.append(Conversation([_m(r, t) for r, t in zip(rs, ts, strict=False)], prompt, None))

    collect()
    return out[:n]


def refused(inst: str) -> list[Conversation]:
    u, a = Role.USER, Role.ASSISTANT
    out = [Conversation([], True, None),  # only the default prompt would be written
           Conversation([_m(Role.DEVELOPER, "x")])]
    if inst == "ministral3":
        out.append(Conversation([_m(u, "a"), _m(u, "b")]))  # merged by the template
        out.append(Conversation([_m(u, "q"), _m(a, ""), _m(u, "r")]))  # an empty answer
    else:
        out += [Conversation([_m(u, "q")], False, tdm.TOOLS),  # tools: ignored by the template
                Conversation([_m(u, "q"), _m(Role.TOOL, "r")]),  # a tool message: it raises
                Conversation([_m(u, "q"), Message(a, (ToolCall("f", "{}"),))]),  # a call
                Conversation([_m(u, "q"), Message(a, (Reasoning(Text("r")),
                                                      Plain(Text("a"))))])]
    return out


def vectors() -> list[td.Vector]:
    vs: list[td.Vector] = []
    for inst in INSTANCES:
        _encoder(inst)
        if inst == "ministral3":
            loops = [tdm.agent_loop(), tdm.text_loop()]
        else:
            loops = [small3_loop(), small3_text()]
        vs.append(td.make_vector(f"{inst}: agent loop", inst, loops[0]))
        vs.append(td.make_vector(f"{inst}: agent loop (text only)", inst, loops[1]))
        vs += [td.make_vector(f"{inst}: drawn {k}", inst, c)
               for k, c in enumerate(drawn(inst, N_DRAWN))]
        vs += [td.make_vector(f"{inst}: refused {k}", inst, c)
               for k, c in enumerate(refused(inst))]
    return vs


def test_mistral_template_vectors_cover_the_loops() -> None:
    vs = vectors()
    loops = [v for v in vs if "agent loop" in v.label]
    assert len(loops) == 4 and all(len(v.conv.messages) >= 9 and v.layout is not None
                                   for v in loops)
    assert all(v.parse is not None for v in loops if "text only" in v.label)
    assert sum(v.layout is None for v in vs) == sum(len(refused(i)) for i in INSTANCES)
    assert all(any(v.layout is not None for v in vs if v.inst == i and "drawn" in v.label)
               for i in INSTANCES)
    fams = {i: _encoder(i).family for i in INSTANCES}
    assert type(fams["ministral3"]) is MistralTemplate and type(fams["small31"]) is MistralSmall3
    assert [lg.version_suffix(f) for f in fams.values()] == ["T", "S"]
    assert {lg.spec_of(f) for f in fams.values()} == {"MistralTemplate"}
    for f in fams.values():
        term = lg.format_term(f)
        assert term.endswith(": Mistral.MistralTFmt)") and lg.lean_string(f.default_system) in term
        assert len(f.default_system) == DEFAULT_CHARS


@pytest.mark.lean
def test_mistral_templates_agree_with_lean_kernel() -> None:
    td.check_vectors(vectors(), 2, title="Mistral template loops differential vectors",
                     stage="lvt-differential-mistral-template-")
