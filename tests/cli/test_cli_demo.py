"""``lvt demo`` end to end with the smallest settings (one RLVR step)."""

from __future__ import annotations

import math
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from lvt.cli import EXIT_OK, main


def test_demo_one_step(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["demo", "--steps", "1", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "3"]
    )
    out = capsys.readouterr().out
    assert rc == EXIT_OK, out
    assert "[1/4] tokenizer zoo:llama3: 128256 ids" in out
    assert "round trip parse(render(c)) == c: 20/20" in out
    assert "metadata fingerprint matches: True" in out
    assert "summary: 20 conversations:" in out
    assert "lvt: 0 break(s)" in out
    m = re.search(r"step=0 loss=(\S+)", out)
    assert m is not None, out
    assert math.isfinite(float(m.group(1)))
    assert "1 step(s) in" in out


def test_demo_no_train(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-train"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "[4/4] rlvr: skipped" in out
