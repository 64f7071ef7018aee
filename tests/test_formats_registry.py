"""The format registry's claims about proofs point at real theorems.

``FormatSpec.proven`` (printed by ``lvt formats``) names the Lean file and theorems that prove
a format's extension property; every named theorem must exist in that file, and the proof
check (``scripts/lean_check``) is what keeps it free of ``sorry``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import lvt

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("fmt", lvt.format_names())
def test_proven_names_existing_theorems(fmt: str) -> None:
    spec = lvt.FORMATS[fmt]
    if spec.proven is None:
        assert "not yet proven" in spec.extension or "not proven" in spec.extension \
            or "tested" in spec.extension, (fmt, spec.extension)
        return
    path, _, names = spec.proven.partition(": ")
    src = (ROOT / path).read_text(encoding="utf-8")
    for name in names.split(", "):
        assert re.search(rf"^theorem {re.escape(name)}\b", src, re.M), (fmt, path, name)


#: The formats whose `Format.Lawful` is not proven (tested only): a claim that appears or
#: disappears must be made on purpose.
_NOT_LAWFUL = {"gemma4", "gemma4-31b", "gemma4-e4b", "otel-llm-e4b"}


def test_the_unproven_formats_are_the_ones_listed() -> None:
    said = {n for n in lvt.format_names()
            if (lvt.FORMATS[n].lawful or "").startswith("not proven")}
    assert said == _NOT_LAWFUL


@pytest.mark.parametrize("fmt", lvt.format_names())
def test_lawful_names_existing_theorems(fmt: str) -> None:
    """Every format names the Lean theorems that make it `Format.Lawful` (round trip, parse
    soundness, injectivity, no forgery), and they are theorems of the files named."""
    spec = lvt.FORMATS[fmt]
    if spec.params.get("coder"):  # Qwen3-Coder: not yet proven, the registry claims nothing
        assert spec.lawful is None and spec.proven is None and "tested" in spec.extension
        return
    assert spec.lawful, fmt
    if spec.lawful.startswith("not proven"):  # said so, with the tests that check it instead
        tests = re.findall(r"tests/[\w/]+\.py", spec.lawful)
        assert tests and all((ROOT / t).is_file() for t in tests), spec.lawful
        assert fmt in _NOT_LAWFUL, fmt
        return
    for part in spec.lawful.split("; "):
        path, _, names = part.partition(": ")
        src = (ROOT / path).read_text(encoding="utf-8")
        for name in names.split(", "):
            assert re.search(rf"^theorem {re.escape(name)}\b", src, re.M), (fmt, path, name)


def test_which_formats_have_their_extension_property_proven() -> None:
    """The formats whose registry names a Lean theorem for their extension property (the
    others say "tested"): a claim that appears or disappears must be made on purpose."""
    proven = {n for n in lvt.format_names() if lvt.FORMATS[n].proven}
    assert proven == {"qwen2.5", "qwen2.5-math", "qwen2.5-vl", "smollm2", "qwen3",
                      "qwen3-stable",
                      "qwen3-2507-instruct", "qwen3-2507-thinking", "llama3.1", "llama3.2",
                      "gemma3", "gpt-oss", "gpt-oss-stable", "mistral", "mistral-stable",
                      "deepseek-r1", "deepseek-r1-stable", "deepseek-r1-distill-qwen",
                      "phi3", "phi4", "talkie", "kimi-k2.5", "kimi-k2.7-code", "llama3.0",
                      "deepseek-v3.1", "deepseek-v3.1-llama.cpp", "qwen3.6", "qwen3.5",
                      "ornith-1.0", "ornith-1.0-9b"}
    for n in set(lvt.format_names()) - proven:  # an unproven property says it is tested
        assert "tested" in lvt.FORMATS[n].extension, n


# ---------------------------------------------------------------------------------------------
# The parity figures `lvt formats` prints (FormatSpec.parity) are the corpus's, measured now.

#: Separator between the measured figure and the prose note after it.
NOTE = "; note: "


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    """``figure(fmt)``: lvt.compare.parity.measure on the parity corpus with the format's real zoo
    tokenizer and official template (a missing tokenizer fails, it does not skip)."""
    from lvt.compare import parity

    d = parity.find_corpus(ROOT / "tests")
    cache: dict[str, Any] = {}

    def get(fmt: str) -> Any:
        if fmt not in cache:
            cache[fmt] = parity.measure(fmt, d)
        return cache[fmt]

    return get  # type: ignore[return-value]


@pytest.mark.parametrize("fmt", lvt.format_names())
def test_recorded_parity_figure_is_the_measured_one(fmt: str, figures: Any) -> None:
    spec = lvt.FORMATS[fmt]
    fig = figures(fmt)
    assert spec.parity is not None, (fmt, fig.summary())
    recorded = spec.parity.split(NOTE, 1)[0]
    assert recorded == fig.summary(), f"update formats.PARITY[{fmt!r}] to {fig.summary()!r}"
    assert fig.benign_total >= 60 and fig.adversarial_total >= 15
    no_tools = not spec.params.get("tools", True)
    assert fig.adversarial_not_allowed == [] or spec.family == "mistral" or no_tools
    if spec.family == "mistral":
        _check_mistral_note(fmt, fig)
    if no_tools:
        _check_no_tools_note(fmt, fig)
    if spec.params.get("syntax") == "v3.1":
        _check_v31_note(fmt, fig)


def _check_v31_note(fmt: str, fig: Any) -> None:
    """DeepSeek-V3.1: every conversation outside the allowed differences opens with an
    assistant message (after system messages), which lvt refuses with the typed error that
    says why."""
    from lvt.compare import parity
    from lvt.compare.check import make_checker

    d = parity.find_corpus(ROOT / "tests")
    benign, _ = parity.load_corpus(fig.family, d)
    checker = make_checker(None, fmt).checker
    n = 0
    for c in benign:
        if c.id in fig.benign_not_allowed:
            r = checker.check(c)
            assert r.status == "lvt_error" and "before any user" in (r.error or ""), c.id
            assert next(m["role"] for m in c.messages if m["role"] != "system") == "assistant"
            n += 1
    spec = lvt.FORMATS[fmt]
    assert spec.parity is not None and f"the {n} outside is an assistant message" in spec.parity


def _check_no_tools_note(fmt: str, fig: Any) -> None:
    """A model without tool syntax (Qwen2.5-VL, R1-Distill): every conversation outside the
    allowed differences has tools (or, where the template keeps only the last system message,
    several system messages) and is refused by lvt with the typed error that says so."""
    from lvt.compare import parity
    from lvt.compare.check import make_checker

    d = parity.find_corpus(ROOT / "tests")
    benign, adv = parity.load_corpus(fig.family, d)
    checker = make_checker(None, fmt).checker
    joins = lvt.FORMATS[fmt].params.get("join_systems", True)
    counts, systems = [0, 0], [0, 0]
    for k, (convs, bad) in enumerate(((benign, fig.benign_not_allowed),
                                      (adv, fig.adversarial_not_allowed))):
        for c in convs:
            if c.id in bad:
                r = checker.check(c)
                assert r.status == "lvt_error", c.id
                if "no tool syntax" in (r.error or ""):
                    assert c.tools or any(m.get("role") == "tool" or m.get("tool_calls")
                                          for m in c.messages), c.id
                    counts[k] += 1
                else:
                    assert not joins and "only the last system message" in (r.error or ""), c.id
                    assert sum(m.get("role") == "system" for m in c.messages) > 1, c.id
                    systems[k] += 1
    spec = lvt.FORMATS[fmt]
    assert spec.parity is not None
    assert (f"the {counts[0] + systems[0]} benign and {counts[1] + systems[1]} adversarial "
            "conversations") in spec.parity
    if not joins:
        assert f"{counts[0]} and {counts[1]} with tools" in spec.parity
        assert f"{systems[0] + systems[1]} with several system messages" in spec.parity


def _check_mistral_v3_note(fmt: str, fig: Any) -> None:
    """Mistral 7B v0.3: every conversation outside the allowed differences is one where the HF
    template leaves mistral-common (the reference): a training render with a system message
    (the template drops it), or an answer with whitespace at its ends (the template trims it,
    or keeps it where mistral-common strips trailing spaces)."""
    from lvt.compare import parity
    from lvt.compare.check import make_checker

    d = parity.find_corpus(ROOT / "tests")
    benign, _ = parity.load_corpus(fig.family, d)
    checker = make_checker(None, fmt).checker
    kinds = [0, 0]
    assert fig.adversarial_not_allowed == []
    for c in benign:
        if c.id not in fig.benign_not_allowed:
            continue
        r = checker.check(c)
        assert r.status == "differs" and c.messages[-1]["role"] == "assistant", c.id
        if any(m["role"] == "system" for m in c.messages):
            kinds[0] += 1
        else:
            assert c.messages[-1]["content"] != c.messages[-1]["content"].strip(), c.id
            kinds[1] += 1
    spec = lvt.FORMATS[fmt]
    assert spec.parity is not None
    assert f"({kinds[0]} benign: it writes the system prompt only when" in spec.parity, kinds
    assert f"whitespace at its ends ({kinds[1]} benign: " in spec.parity, kinds


def _check_mistral_template_note(fmt: str, fig: Any) -> None:
    """Ministral 3 / Devstral 2 (their template's default prompt is the entry's): every
    conversation outside the allowed differences has consecutive user messages, which the
    template merges and lvt refuses with a typed error saying so; Mistral Small 3 / 3.1's
    template writes them (none outside)."""
    from lvt.compare import parity
    from lvt.compare.check import make_checker

    d = parity.find_corpus(ROOT / "tests")
    benign, _ = parity.load_corpus(fig.family, d)
    checker = make_checker(None, fmt).checker
    assert fig.adversarial_not_allowed == []
    n = 0
    for c in benign:
        if c.id in fig.benign_not_allowed:
            r = checker.check(c)
            assert r.status == "lvt_error" and "user after user" in (r.error or ""), c.id
            assert any(a["role"] == b["role"] == "user"
                       for a, b in zip(c.messages, c.messages[1:], strict=False)), c.id
            n += 1
    spec = lvt.FORMATS[fmt]
    assert spec.parity is not None
    assert (n == 0 and spec.params.get("loop") == "small3") or (
        f"the {n} outside are two consecutive user" in spec.parity)


def _check_mistral_note(fmt: str, fig: Any) -> None:
    """What the note says of Mistral's conversations outside the allowed differences: the
    Small 3.1 template's default [SYSTEM_PROMPT] (no system message), or a role sequence
    mistral-common merges or rejects, which lvt refuses with a typed error."""
    from lvt.compare import parity
    from lvt.compare.check import make_checker

    if lvt.FORMATS[fmt].params.get("version") == "v3":
        _check_mistral_v3_note(fmt, fig)
        return
    if lvt.FORMATS[fmt].params.get("default_system"):
        _check_mistral_template_note(fmt, fig)
        return

    d = parity.find_corpus(ROOT / "tests")
    benign, adv = parity.load_corpus(fig.family, d)
    bad = set(fig.benign_not_allowed + fig.adversarial_not_allowed)
    checker = make_checker(None, fmt).checker
    kinds = {"default_system": [0, 0], "roles": [0, 0]}
    for k, convs in enumerate((benign, adv)):
        for c in convs:
            if c.id not in bad:
                continue
            r = checker.check(c)
            if r.status == "lvt_error":
                assert "ConversationError" in (r.error or "") and "mistral-common" in r.error
                kinds["roles"][k] += 1
            else:
                assert c.messages[0]["role"] != "system", c.id
                other = [x for x in r.divergences if x.cause == "other"]
                assert len(other) == 1 and other[0].position == 1, c.id  # right after <s>
                tail = other[0].template_after
                assert tail.startswith("[SYSTEM_PROMPT]You are Mistral Small"), c.id
                kinds["default_system"][k] += 1
    spec = lvt.FORMATS[fmt]
    assert spec.parity is not None and NOTE in spec.parity
    ds, ro = kinds["default_system"], kinds["roles"]
    assert f"({ds[0]} benign, {ds[1]} adversarial)" in spec.parity, kinds
    assert ro[1] == 0 and f"a later system message: {ro[0]} benign)" in spec.parity, kinds


def test_lvt_formats_prints_the_recorded_figure(capsys: pytest.CaptureFixture[str]) -> None:
    from lvt.cli import main

    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    for fmt in lvt.format_names():
        assert f"  parity     {lvt.FORMATS[fmt].parity} (tests/parity corpus" in out, fmt
    for fmt in lvt.format_names():
        lawful = lvt.FORMATS[fmt].lawful
        if lawful is None:  # Qwen3-Coder: says so, names nothing
            continue
        assert f"  round trip {lawful}" + (
            "\n" if lawful.startswith("not proven") else " (parse_render") in out, fmt
    unproven = [n for n in lvt.format_names() if lvt.FORMATS[n].lawful is None]
    assert out.count("  round trip not yet proven in Lean") == len(unproven) == 2
    assert {lvt.FORMATS[n].family for n in unproven} == {"qwen-xml"}
    assert all(lvt.FORMATS[n].params.get("coder") for n in unproven)
    assert "round trip None" not in out
    # every format has its real tokenizer in the zoo (lvt check's default)
    from lvt.compare.templates import DEFAULT_TOKENIZERS

    assert set(DEFAULT_TOKENIZERS) == set(lvt.format_names())
    assert "none in the zoo" not in out
    assert main(["formats", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"]: r["tokenizer"] for r in rows} == DEFAULT_TOKENIZERS
    assert all(r["parity_recorded"] == lvt.FORMATS[r["name"]].parity for r in rows)
    assert all(r["lawful"] == lvt.FORMATS[r["name"]].lawful for r in rows)
