"""The parity corpus and its harness: sizes, names, tag coverage, that every benign case
renders through its family's official template (and keeps its content), that no benign case
spells a control token, and that every adversarial case does."""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any

import pytest

from parity import corpus
from parity.corpus import FAMILIES, REQUIRED_FAMILIES, Case
from parity.templates import (
    TEMPLATES,
    TemplateRenderer,
    control_tokens,
    spelled_tokens,
)

MIN_BENIGN = {f: 70 if f in REQUIRED_FAMILIES else 60 for f in FAMILIES}
MIN_ADVERSARIAL = 15
ROLES = {"system", "user", "assistant", "tool"}


def _family_tokens(renderers: Any, family: str) -> frozenset[str]:
    r: TemplateRenderer = renderers(family)
    return control_tokens(family, r.tokenizer)


@pytest.mark.parametrize("family", FAMILIES)
def test_sizes_and_unique_names(family: str) -> None:
    benign, adv = corpus.conversations(family), corpus.adversarial(family)
    assert len(benign) >= MIN_BENIGN[family], len(benign)
    assert len(adv) >= MIN_ADVERSARIAL, len(adv)
    names = [c.name for c in benign + adv]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, dupes
    assert all(isinstance(c, Case) for c in benign + adv)
    with pytest.raises(dataclasses.FrozenInstanceError):
        benign[0].name = "x"  # type: ignore[misc]


@pytest.mark.parametrize("family", FAMILIES)
def test_tags_cover_every_feature(family: str) -> None:
    seen = set().union(*(c.tags for c in corpus.conversations(family)))
    missing = corpus.required_tags(family) - seen
    assert not missing, sorted(missing)
    if family in REQUIRED_FAMILIES:
        assert corpus.required_tags(family) >= corpus.FEATURE_TAGS - {
            "parallel-calls", "consecutive-tool-results", "reasoning"}


def test_family_specific_variants_present() -> None:
    q3 = corpus.conversations("qwen3")
    assert {False, True} <= {c.template_kwargs.get("enable_thinking") for c in q3}
    ll = corpus.conversations("llama3.1")
    assert any(c.template_kwargs.get("date_string") for c in ll)
    assert any(c.template_kwargs.get("tools_in_user_message") is False for c in ll)
    assert not any("parallel-calls" in c.tags for c in ll)
    assert any("reasoning_content" in m for c in q3 for m in c.messages)


def test_deterministic_and_fresh() -> None:
    for family in FAMILIES:
        a, b = corpus.conversations(family), corpus.conversations(family)
        assert a == b
        a[0].messages.append({"role": "user", "content": "mutated"})
        assert corpus.conversations(family)[0] == b[0]


def test_unknown_family() -> None:
    with pytest.raises(ValueError, match="unknown family"):
        corpus.conversations("llama2")


@pytest.mark.parametrize("family", FAMILIES)
def test_case_shapes(family: str) -> None:
    """Messages are in the OpenAI/HF shape; tool results answer an earlier call by id."""
    for c in corpus.conversations(family):
        assert c.messages and all(m["role"] in ROLES for m in c.messages), c.name
        last = c.messages[-1]["role"]
        if last == "assistant":
            assert not c.add_generation_prompt, c.name
        if last == "user":
            assert c.add_generation_prompt, c.name
        ids: dict[str, str] = {}
        for m in c.messages:
            for tc in m.get("tool_calls") or []:
                assert tc["type"] == "function" and tc["id"], c.name
                args = tc["function"]["arguments"]
                assert isinstance(args, str if family == "deepseek-r1" else dict), c.name
                ids[tc["id"]] = tc["function"]["name"]
            if m["role"] == "tool":
                assert ids.get(m["tool_call_id"]) == m["name"], c.name
        for t in c.tools or []:
            fn = t["function"]
            assert t["type"] == "function" and fn["name"] and fn["description"], c.name
            assert fn["parameters"]["type"] == "object", c.name


@pytest.mark.parametrize("family", FAMILIES)
def test_benign_renders_and_keeps_content(renderers: Any, family: str) -> None:
    r: TemplateRenderer = renderers(family)
    failures = []
    for c in corpus.conversations(family):
        try:
            text = r.render_text(c)
        except Exception as e:  # the template refused a benign case: a corpus bug
            failures.append(f"{c.name}: raised {e!r}")
            continue
        for frag in r.expected_fragments(c):
            if frag not in text:
                failures.append(f"{c.name}: render lacks {frag[:60]!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("family", FAMILIES)
def test_benign_render_ids(renderers: Any, family: str) -> None:
    """Ids from the real tokenizer decode back to the rendered text (up to NFC)."""
    r: TemplateRenderer = renderers(family)
    if not r.has_tokenizer:
        pytest.skip(r.unavailable_reason or family)
    bad = []
    for c in corpus.conversations(family):
        ids = r.render(c)
        assert ids and all(isinstance(i, int) for i in ids), c.name
        nfc = unicodedata.normalize
        if nfc("NFC", r.decode(ids)) != nfc("NFC", r.render_text(c)):
            bad.append(c.name)
    assert not bad, bad


@pytest.mark.parametrize("family", FAMILIES)
def test_benign_spells_no_control_token(renderers: Any, family: str) -> None:
    tokens = _family_tokens(renderers, family)
    assert tokens
    hits = {c.name: sorted(s) for c in corpus.conversations(family)
            if (s := spelled_tokens(c, tokens))}
    assert not hits, hits


def test_benign_spells_no_known_control_token_of_any_family() -> None:
    """Without tokenizers: no benign case of any family spells a listed control token."""
    every = set().union(*corpus.ADVERSARIAL_TOKENS.values())
    hits = {(f, c.name): sorted(s) for f in FAMILIES for c in corpus.conversations(f)
            if (s := spelled_tokens(c, every))}
    assert not hits, hits


@pytest.mark.parametrize("family", FAMILIES)
def test_adversarial_spells_control_tokens(renderers: Any, family: str) -> None:
    r: TemplateRenderer = renderers(family)
    tokens = _family_tokens(renderers, family)
    cases = corpus.adversarial(family)
    assert all(spelled_tokens(c, tokens) for c in cases), [
        c.name for c in cases if not spelled_tokens(c, tokens)]
    assert all("adversarial" in c.tags for c in cases)
    for c in cases:  # they are still conversations the template renders
        r.render_text(c)
    if r.has_tokenizer:  # the listed tokens really are added tokens of the tokenizer
        assert set(corpus.ADVERSARIAL_TOKENS[family]) <= tokens


def test_llama_template_refuses_parallel_calls(renderers: Any) -> None:
    """Why llama3.1 has no parallel-call case: its template raises on them."""
    from jinja2.exceptions import TemplateError

    par = next(c for c in corpus.conversations("qwen2.5") if "parallel-calls" in c.tags)
    with pytest.raises(TemplateError, match="single tool-calls"):
        renderers("llama3.1").render_text(par)


@pytest.mark.parametrize("family", FAMILIES)
def test_template_provenance(renderers: Any, family: str) -> None:
    r: TemplateRenderer = renderers(family)
    assert r.spec is TEMPLATES[family]
    assert r.template.strip() and r.provenance
