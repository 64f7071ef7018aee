"""``lvt check --strict`` on every benign and adversarial parity-corpus conversation of the
shipped formats, with each format's real tokenizer and official template: no difference
outside the allowed categories, benign conversations identical for the exact formats; and
``lvt formats --parity`` reports the same figures, measured live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import FORMATS, run_json

from lvt.cli import EXIT_DIVERGED, EXIT_OK, EXIT_USAGE, main
from lvt.compare import parity
from lvt.compare.report import ALLOWED_CAUSES

#: Exact formats reproduce their template on every benign conversation.
EXACT = ("qwen2.5", "qwen3", "llama3.1")


@pytest.fixture(scope="module")
def reports(setups: Callable[[str], Any], corpus: Callable[[str], Any]) -> dict[str, Any]:
    """(benign report, adversarial report) per format, checked in-process."""
    out = {}
    for fmt in FORMATS:
        benign, adv = corpus(fmt)
        ck = setups(fmt).checker
        out[fmt] = (ck.check_all(benign), ck.check_all(adv))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_corpus_strict(fmt: str, reports: dict[str, Any]) -> None:
    benign, adv = reports[fmt]
    for rep in (benign, adv):
        bad = [(r.id, r.status, r.causes, r.error) for r in rep.results if not r.allowed]
        assert not bad, bad
        assert not rep.failed()  # what --strict exits 1 on
    assert len(benign.results) >= 70 and len(adv.results) >= 15
    causes = Counter(c for rep in (benign, adv) for r in rep.results for c in r.causes)
    assert set(causes) <= ALLOWED_CAUSES, causes
    # every adversarial case spells a control token of its family: either the template turns
    # it into the control id (control_token_text), or (Qwen2.5 has no <think> tokens) it is
    # ordinary text on both sides
    for r in adv.results:
        assert r.status == "identical" or "control_token_text" in r.causes, r.id
    if fmt in EXACT:
        assert all(r.status == "identical" for r in benign.results), [
            (r.id, r.causes) for r in benign.results if r.status != "identical"]
        assert "history_rewrite" not in causes
    else:  # qwen3-stable keeps the think blocks the Qwen3 template drops
        hist = [r for r in benign.results if r.status == "differs"]
        assert hist and all(r.causes == ["history_rewrite"] for r in hist)
        assert sum(r.status == "identical" for r in benign.results) > len(benign.results) // 2


def test_control_tokens_of_the_format_are_not_text(reports: dict[str, Any]) -> None:
    """Qwen's tool preamble writes <tool_call> as a control token, as the template does: a
    benign tool conversation is identical, and a control_token_text divergence only ever
    names tokens the conversation's own text spells."""
    benign, adv = reports["qwen3"]
    tools = [r for r in benign.results if r.id.startswith("single-call")]
    assert tools and all(r.status == "identical" for r in tools)
    for r in adv.results:
        for d in r.divergences:
            assert d.cause == "control_token_text" and "conversation text spells" in d.detail


def test_corpus_file_strict_subprocess(tmp_path: Path, corpus: Callable[[str], Any]) -> None:
    """One ``lvt check --strict`` process over the whole qwen3-stable corpus as JSONL (the
    lines carry their template options and generation-prompt flags)."""
    f = tmp_path / "corpus.jsonl"
    n = parity.write_corpus_jsonl("qwen3-stable", f)
    benign, adv = corpus("qwen3-stable")
    assert n == len(benign) + len(adv)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-m", "lvt.cli", "check", str(f), "-f", "qwen3-stable", "--strict",
         "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == EXIT_OK, r.stderr[-2000:]
    js = json.loads(r.stdout)
    s = js["summary"]
    assert s["conversations"] == n and s["not_allowed"] == 0 and s["lvt_error"] == 0
    assert set(s["by_cause"]) == {"control_token_text", "history_rewrite"}
    assert s["by_cause"]["control_token_text"] == len(adv)
    assert js["format"] == "qwen3-stable" and js["tokenizer"] == "zoo:qwen3"
    assert "Qwen-Qwen3-0.6B@a55ee1" in js["template"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_strict_on_corpus_file(fmt: str, tmp_path: Path, reports: dict[str, Any],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``lvt check FILE --strict`` (in-process) on the format's corpus exits 0 and prints
    the per-category counts of the in-process check."""
    f = tmp_path / "corpus.jsonl"
    parity.write_corpus_jsonl(fmt, f)
    assert main(["check", str(f), "-f", fmt, "--strict", "-q"]) == EXIT_OK
    out = capsys.readouterr().out
    n = Counter(c for rep in reports[fmt] for r in rep.results for c in r.causes)
    assert (f"causes:  control_token_text={n['control_token_text']}  "
            f"history_rewrite={n['history_rewrite']}  template_error=0  double_bos=0  "
            "boundary_merge=0  other=0") in out
    assert "0 conversation(s) with a difference outside them" in out
    if fmt == "qwen2.5":  # the allowed differences are differences: --strict-all fails
        assert main(["check", str(f), "-f", fmt, "--strict-all", "-q"]) == EXIT_DIVERGED
        capsys.readouterr()


def test_formats_parity_is_measured_live(reports: dict[str, Any],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    rc, js = run_json(capsys, ["formats", "--parity", "qwen2.5", "llama3"])
    assert rc == EXIT_OK
    assert [r["name"] for r in js] == ["qwen2.5", "llama3.1"]
    for row in js:
        benign, adv = reports[row["name"]]
        p = row["parity"]
        assert p["benign_total"] == len(benign.results)
        assert p["benign_identical"] == sum(r.status == "identical" for r in benign.results)
        assert p["benign_identical"] == p["benign_total"]
        assert p["adversarial_total"] == len(adv.results)
        assert p["adversarial_not_allowed"] == [] and p["benign_not_allowed"] == []
        assert p["corpus"].endswith(str(Path("tests") / "parity"))
    assert main(["formats", "--parity", "qwen3-stable"]) == EXIT_OK
    out = capsys.readouterr().out
    fig = parity.measure("qwen3-stable")
    assert f"parity     {fig.line()}" in out
    assert "history_rewrite" in fig.line() and "measured now on" in out
    assert main(["formats", "--parity", "--corpus", str(Path("/nonexistent"))]) == EXIT_USAGE
    assert "parity corpus" in capsys.readouterr().err
