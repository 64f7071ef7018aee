"""``lvt check --strict`` with no ``--tokenizer``/``--template`` on every shipped format: each
format's real zoo tokenizer and official template, on a few parity-corpus conversations per
scenario kind (the whole corpus of every format is measured by
``tests/test_formats_registry.py``; ``test_cli_corpus.py`` runs the whole corpus through the
CLI for the part-1 formats).

Exact formats are identical on every benign conversation (a model entry without tool syntax,
Qwen2.5-VL or R1-Distill, on those without tools, which it refuses; R1-Distill also on those
with one system message at most); stable formats differ only by
``history_rewrite`` (FORMATS.md, allowed difference 2); adversarial conversations are identical
or differ only by ``control_token_text``. Mistral's official template (Small 3.1) agrees with
mistral-common, the format's reference, on system-first conversations; without a system
message it writes its default ``[SYSTEM_PROMPT]``, asserted as the one difference.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_json, write_jsonl

import lvt
from lvt.cli import EXIT_DIVERGED, EXIT_OK
from lvt.compare.templates import DEFAULT_TOKENIZERS

#: Per scenario kind (the id up to its first '-'), how many benign conversations are checked.
PER_KIND = 2

def _record(c: Any) -> dict[str, Any]:
    return {"id": c.id, "messages": c.messages, "tools": c.tools,
            "add_generation_prompt": c.add_generation_prompt, "options": c.options}


def _uses_tools(c: Any) -> bool:
    return bool(c.tools) or any(m.get("role") == "tool" or m.get("tool_calls")
                                for m in c.messages)


def _subset(fmt: str, benign: list[Any], adv: list[Any]) -> tuple[list[Any], list[Any]]:
    """A few benign conversations per kind (every reasoning/agent one for stable formats,
    where history is rewritten) and a few adversarial ones."""
    if lvt.FORMATS[fmt].family == "mistral":  # where the template agrees with mistral-common
        benign = [c for c in benign if c.messages[0]["role"] == "system"]
        adv = [c for c in adv if c.messages[0]["role"] == "system"]
    if lvt.FORMATS[fmt].params.get("version") == "v3":  # the HF v3 templates write the system
        # prompt only when the last message is a user message (`loop.last and system_message`)
        benign = [c for c in benign if c.messages[-1]["role"] == "user"]
        adv = [c for c in adv if c.messages[-1]["role"] == "user"]
    if not lvt.FORMATS[fmt].params.get("tools", True):  # a model without tool syntax
        benign = [c for c in benign if not _uses_tools(c)]
        adv = [c for c in adv if not _uses_tools(c)]
    if not lvt.FORMATS[fmt].params.get("join_systems", True):  # one system message (Distill)
        benign = [c for c in benign if sum(m["role"] == "system" for m in c.messages) <= 1]
        adv = [c for c in adv if sum(m["role"] == "system" for m in c.messages) <= 1]
    if lvt.FORMATS[fmt].params.get("loop") == "qwq":  # QwQ's template raises on an answer
        # with no content before the last message (compared in tests/parity/test_entries.py)
        benign = [c for c in benign if not any(
            m["role"] == "assistant" and m.get("content") is None
            for m in c.messages[:-1])]
    seen: dict[str, int] = {}
    out = []
    for c in benign:
        kind = c.id.split("-", 1)[0]
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= PER_KIND or (fmt.endswith("-stable") and kind in ("reasoning", "agent")):
            out.append(c)
    return out, adv[:3]


@pytest.mark.parametrize("fmt", lvt.format_names())
def test_check_strict_defaults_on_corpus(fmt: str, tmp_path: Path,
                                         corpus: Callable[[str], Any],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    benign, adv = _subset(fmt, *corpus(fmt))
    assert len(benign) >= 4 and adv
    f = write_jsonl(tmp_path / "c.jsonl", [_record(c) for c in (*benign, *adv)])
    rc, rep = run_json(capsys, ["check", str(f), "-f", fmt, "--strict"])
    assert rc == EXIT_OK, [(r["id"], r["causes"], r.get("error")) for r in rep["results"]
                           if not r["allowed"]]
    spec = lvt.FORMATS[fmt]
    assert rep["format"] == fmt
    assert rep["tokenizer"] == f"zoo:{DEFAULT_TOKENIZERS[fmt]}"
    assert spec.template.removeprefix("zoo:") in rep["template"]
    by_id = {r["id"]: r for r in rep["results"]}
    rows = [by_id[c.id] for c in benign]
    if fmt.endswith("-stable"):
        assert all(r["status"] == "identical" or r["causes"] == ["history_rewrite"]
                   for r in rows), [(r["id"], r["causes"]) for r in rows]
        if spec.family != "mistral":  # no corpus conversation moves Mistral's tool list
            assert any(r["causes"] == ["history_rewrite"] for r in rows)
    else:
        assert all(r["status"] == "identical" for r in rows), [
            (r["id"], r["causes"]) for r in rows if r["status"] != "identical"]
    for c in adv:
        r = by_id[c.id]
        assert r["status"] == "identical" or r["causes"] == ["control_token_text"], r


@pytest.mark.parametrize("fmt", ["mistral", "mistral-stable"])
def test_mistral_template_default_system_prompt(fmt: str, tmp_path: Path,
                                                corpus: Callable[[str], Any],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Without a system message the Small 3.1 template writes its default [SYSTEM_PROMPT]
    (mistral-common, the format's reference, writes none): --strict reports it."""
    benign, _ = corpus(fmt)
    c = next(c for c in benign if c.messages[0]["role"] != "system")
    f = write_jsonl(tmp_path / "c.jsonl", [_record(c)])
    rc, rep = run_json(capsys, ["check", str(f), "-f", fmt, "--strict"])
    assert rc == EXIT_DIVERGED
    (r,) = rep["results"]
    (d,) = r["divergences"]
    assert d["cause"] == "other" and d["position"] == 1  # right after <s>
    assert d["template_after"].startswith("[SYSTEM_PROMPT]You are Mistral Small")
