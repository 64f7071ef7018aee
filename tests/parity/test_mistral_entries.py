"""Ministral 3 (3B, 8B, 14B Instruct 2512), Devstral Small 2 and Devstral 2 against their own
templates.

The entries are the Mistral structure's v13 with the model's default system prompt and
assistant text as written (``lvt.families.mistral_template``). The chat corpus is compared
case by case in ``tests/parity/test_entries.py``; here the tool and reasoning scenarios (tool
definitions, single and parallel calls, results, agent loops), without a system message so that
the template's default applies, and what the two template differences mean for a user: the
default prompt read back as a system message, owned by message 0 and never learned, and
trailing spaces kept. Each is compared with the template through ``transformers`` on the
``mistral`` zoo vocabulary (tekken 240911 with the v7+ control names, which holds every
control token these templates write; Ministral 3's own tokenizer file is on no registry).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.compare.check import make_checker
from parity.corpus_chat import reasoning_scenarios
from parity.corpus_tools import tool_scenarios
from parity.templates import zoo_hf_tokenizer

pytest.importorskip("transformers")

ENTRIES = ("ministral-3-3b", "ministral-3-8b", "ministral-3-14b", "devstral-small-2",
           "devstral-2")
_SETUPS: dict[str, Any] = {}


def _setup(fmt: str) -> Any:
    if fmt not in _SETUPS:
        _SETUPS[fmt] = make_checker(None, fmt)
    return _SETUPS[fmt]


def _encoder(fmt: str) -> lvt.ChatEncoder:
    return _setup(fmt).checker.encoder({})


def _template_ids(fmt: str, msgs: Any, tools: Any, gen: bool) -> list[int]:
    return _setup(fmt).checker.jinja.render_ids(msgs, tools, gen, {})


def _scenarios() -> list[Any]:
    return [*tool_scenarios(), *reasoning_scenarios()]


@pytest.mark.parametrize("fmt", ENTRIES)
def test_tool_and_reasoning_scenarios_equal_the_template(fmt: str) -> None:
    """Every tool scenario lvt renders is the template's ids; what lvt refuses is reasoning,
    which the template drops without a trace (``reasoning_content`` is never read)."""
    enc = _encoder(fmt)
    same = refused = 0
    for s in _scenarios():
        msgs = [m for m in s.copy_messages() if m.get("role") != "system"] or s.copy_messages()
        try:
            got = enc.encode_openai(msgs, s.tools, s.add_generation_prompt).ids.tolist()
        except lvt.ConversationError as e:
            assert any(m.get("reasoning_content") for m in msgs), (s.name, str(e))
            assert "no reasoning" in str(e), s.name
            bare = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in msgs]
            assert _template_ids(fmt, bare, s.tools, s.add_generation_prompt) == \
                _template_ids(fmt, msgs, s.tools, s.add_generation_prompt), s.name
            refused += 1
            continue
        assert got == _template_ids(fmt, msgs, s.tools, s.add_generation_prompt), s.name
        same += 1
    assert same >= 30 and refused <= 16, (same, refused)


@pytest.mark.parametrize("fmt", ENTRIES)
def test_default_prompt_is_the_models_and_reads_back_as_a_system_message(fmt: str) -> None:
    enc = _encoder(fmt)
    msgs = [{"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"}]
    out = enc.encode_openai(msgs, None, False)
    assert out.ids.tolist() == _template_ids(fmt, msgs, None, False)
    text = zoo.load_tokenizer("mistral").decode(out.ids.tolist(), skip_special_tokens=False)
    model = "Mistral Vibe" if fmt.startswith("devstral") else fmt.split("-")[2].upper()
    assert text.startswith("<s>[SYSTEM_PROMPT]You are ") and model in text.split("[/SYST")[0]
    assert "The current date is {today}." in text or fmt.startswith("devstral")  # literal
    back = enc.parse(out.ids)
    assert back.messages[0].role is lvt.Role.SYSTEM
    assert back.messages[1:] == enc.from_openai(msgs, None, False).messages
    # the default belongs to message 0 and is never learned; the answer is
    learned = [t for t, m in zip(out.ids.tolist(), out.mask.tolist(), strict=True) if m]
    four = zoo.load_tokenizer("mistral").encode("4", add_special_tokens=False).ids
    assert learned == [*four, enc.family.ids.eos]
    assert set(out.owner.tolist()[:10]) == {0}
    # a conversation that opens with a system message gets no default
    own = [{"role": "system", "content": "Be brief."}, *msgs]
    assert enc.encode_openai(own, None, False).ids.tolist() == _template_ids(fmt, own, None,
                                                                             False)
    assert "You are " not in zoo.load_tokenizer("mistral").decode(
        enc.encode_openai(own, None, False).ids.tolist())


def test_assistant_text_is_written_as_given_not_stripped() -> None:
    """mistral-common strips trailing spaces of an answer (the ``mistral`` format follows it);
    these templates write ``{{- content -}}`` as given, and so do the entries."""
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello   "}]
    got = _encoder("ministral-3-3b").encode_openai(msgs, None, False)
    assert got.ids.tolist() == _template_ids("ministral-3-3b", msgs, None, False)
    assert _encoder("ministral-3-3b").parse(got.ids).messages[-1].blocks == (
        lvt.Plain(lvt.Text("Hello   ")),)
    base = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("mistral"), "mistral",
                                          version="v13")
    assert base.encode_openai(msgs, None, False).ids.tolist() != got.ids.tolist()


def test_refusals_are_typed_and_name_the_message() -> None:
    enc = _encoder("devstral-small-2")
    with pytest.raises(lvt.ConversationError, match="empty conversation"):
        enc.encode_openai([], None, True)
    two = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(lvt.ConversationError, match=r"message 1: user after user") as e:
        enc.encode_openai(two, None, True)
    assert e.value.message_index == 1  # the user's index, not shifted by the default system turn


def test_entries_are_data_over_the_mistral_structure() -> None:
    """Five records, one class: the version is fixed at v13 (no option), the default prompt is
    the only value that differs (Devstral 2 and Small 2 share theirs), and it names the
    model."""
    specs = [lvt.FORMATS[n] for n in ENTRIES]
    assert {s.family for s in specs} == {"mistral"} and all(s.options == {} for s in specs)
    assert {s.params["version"] for s in specs} == {"v13"}
    assert len({s.params["default_system"] for s in specs}) == 4
    assert len({s.template for s in specs}) == 5
    assert {type(_encoder(n).family).__name__ for n in ENTRIES} == {"MistralTemplate"}
    assert json.dumps(lvt.FORMATS["ministral-3-8b"].params["default_system"]).count(
        "Ministral-3-8B-Instruct-2512") == 1


@pytest.mark.parametrize("fmt", ENTRIES)
def test_detected_from_its_template(fmt: str) -> None:
    """A user's tokenizer carrying the model's template finds the entry (by the template's
    hash, confirmed on the probes)."""
    from lvt.formats.detect import detect

    d = detect(zoo_hf_tokenizer("mistral", lvt.FORMATS[fmt].template))
    assert d.format == fmt and d.by_hash and d.compared >= 3


SMALL3 = ("mistral-small-3.1", "mistral-small-3")


@pytest.mark.parametrize("fmt", SMALL3)
def test_small3_tool_scenarios_are_refused_as_the_template_loses_them(fmt: str) -> None:
    """Mistral Small 3 / 3.1's template has no tool syntax: it ignores ``tools``, writes an
    assistant message's content without its calls and raises on a ``tool`` message. lvt
    refuses each with a typed error instead of training on a history without the calls."""
    enc = _encoder(fmt)
    n = 0
    for s in _scenarios():
        msgs = s.copy_messages()
        if not (s.tools or any(m.get("tool_calls") or m.get("role") == "tool" for m in msgs)):
            continue
        with pytest.raises(lvt.ConversationError, match=r"no tool syntax|no tool role|drops "
                           r"tool calls"):
            enc.encode_openai(msgs, s.tools, s.add_generation_prompt)
        n += 1
    assert n >= 30


@pytest.mark.parametrize("fmt", SMALL3)
def test_small3_dated_default_any_order_and_read_back(fmt: str) -> None:
    import datetime

    enc = _encoder(fmt)
    msgs = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c  "}, {"role": "system", "content": "Later."},
            {"role": "user", "content": "d"}]
    out = enc.encode_openai(msgs, None, True)
    assert out.ids.tolist() == _template_ids(fmt, msgs, None, True)
    text = zoo.load_tokenizer("mistral").decode(out.ids.tolist(), skip_special_tokens=False)
    assert f"The current date is {datetime.date.today().isoformat()}." in text
    back = enc.parse(out.ids).messages
    assert back[0].role is lvt.Role.SYSTEM and back[1:] == enc.from_openai(msgs, None,
                                                                          True).messages
    # the date is an option, named by the fingerprint: trainer and server can pin it
    pinned = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("mistral"), fmt,
                                            date_string="2025-03-17")
    assert "The current date is 2025-03-17." in zoo.load_tokenizer("mistral").decode(
        pinned.encode_openai(msgs, None, True).ids.tolist())
    assert pinned.fingerprint != enc.fingerprint


@pytest.mark.parametrize("fmt", SMALL3)
def test_small3_template_is_detected_as_its_entry_not_as_mistral(fmt: str) -> None:
    """The Small 3.1 template is also the ``mistral`` format's declared template (whose
    reference is mistral-common, which writes no default prompt): detection finds the entry
    whose render is the template's."""
    from lvt.formats.detect import detect

    d = detect(zoo_hf_tokenizer("mistral", lvt.FORMATS[fmt].template))
    assert d.format == fmt and d.by_hash and d.compared >= 3


@pytest.mark.parametrize("fmt", SMALL3)
def test_small3_what_normS_forgets_renders_alike_and_nothing_else_does(fmt: str) -> None:
    """``Mistral.normS`` (``Verified/Spec/MistralTemplate.lean``), the normalisation under
    which the Lean proves Small 3's render injective (``lowerInjectiveS``), against the
    template: the default system prompt written out, no content as empty content, an empty
    tool list as none and the generation prompt (the markup writes nothing for it) render
    alike; ``encode_batch`` reports such a pair; a change ``normS`` does not forget (a space
    the template writes) changes the ids."""
    enc = _encoder(fmt)
    q = {"role": "user", "content": "q"}
    default = enc.family.default_system

    def ids(msgs: Any, tools: Any = None, gen: bool = False, template: bool = True) -> list[int]:
        got = enc.encode_openai(msgs, tools, gen).ids.tolist()
        if template:
            assert got == _template_ids(fmt, msgs, tools, gen)
        return got

    base = ids([q, {"role": "assistant", "content": ""}])
    assert ids([{"role": "system", "content": default}, q,
                {"role": "assistant", "content": ""}]) == base
    # the template raises on `None` content (`message['content'] + eos_token`): lvt only
    assert ids([q, {"role": "assistant", "content": None}], template=False) == base
    assert ids([q, {"role": "assistant", "content": ""}], [], True) == base
    assert ids([q, {"role": "assistant", "content": " "}]) != base
    convs = [enc.from_openai([q], None, False),
             enc.from_openai([{"role": "system", "content": default}, q], None, False)]
    with pytest.warns(lvt.CollisionWarning, match="conversations 0 and 1 differ"):
        enc.encode_batch(convs)
