"""The learning benchmark at toy size, the PNG writer, and (LVT_TRAINER_LONG=1) a real run."""

from __future__ import annotations

import math
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from lvt_trainer.plot import Panel, line_chart, write_png

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "rl_learning.py"


def _read_png(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, width, height, idat = 8, 0, 0, b""
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])
        assert crc == zlib.crc32(kind + body)
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    rows = [raw[y * (3 * width + 1) + 1 : (y + 1) * (3 * width + 1)] for y in range(height)]
    return width, height, b"".join(rows)


def test_png_writer_round_trips(tmp_path: Path) -> None:
    px = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90])
    write_png(tmp_path / "a.png", 3, 2, px)
    assert _read_png(tmp_path / "a.png") == (3, 2, px)
    line_chart(tmp_path / "c.png", [Panel("reward", {"a": [0, 0.5, 1.0], "b": [1, math.nan]}),
                                     Panel("empty", {"a": []})], cols=2, panel_w=200,
               panel_h=150)
    w, h, pixels = _read_png(tmp_path / "c.png")
    assert (w, h) == (400, 150) and len(set(pixels)) > 2  # something was drawn


def test_learning_run_at_toy_size_same_seeds_for_both_variants() -> None:
    from lvt_trainer.learning import LearningConfig, run_learning, summarize

    cfg = LearningConfig(task="sort", seeds=(0,), sft_steps=3, rl_steps=3, prompts_per_step=2,
                         group_size=2, inner_steps=1)
    res = run_learning(cfg, log=None)
    assert set(res) == {"grpo", "critic"}
    g, c = res["grpo"][0], res["critic"][0]
    assert len(g) == len(c) == 3
    for row in (*g, *c):
        for k in ("reward_mean", "kl_mean", "clip_frac", "entropy_mean", "beta"):
            assert math.isfinite(row[k]), k
    # same seeds: the first rollouts (before any update) are identical for both variants
    assert g[0]["reward_mean"] == c[0]["reward_mean"]
    assert g[0]["entropy_mean"] == c[0]["entropy_mean"]
    assert "critic/qf_loss" in c[0] and "critic/qf_loss" not in g[0]
    assert [r["beta"] for r in g] == [r["beta"] for r in c]
    s = summarize(res, threshold=0.5, last=2, window=1)
    assert set(s["grpo"]) >= {"final_reward", "steps_to_threshold", "kl_mean", "clip_frac"}


def test_benchmark_script_toy_multi_turn_tool_task(tmp_path: Path) -> None:
    out = tmp_path / "curves.png"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--toy", "--tasks", "calc", "--seeds", "0", "--out",
         str(out), "--quiet"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert "llama3 format" in text
    stops = re.search(r"stop ids \[([\d, ]+)\]", text)
    assert stops is not None and "128009" in stops.group(1).split(", "), text  # <|eot_id|>
    assert re.search(r"^step\s+grpo r\s+kl\s+clip\s+ent\s+critic r", text, re.M), text
    assert len(re.findall(r"^\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+", text,
                          re.M)) == 3
    for v in ("grpo", "critic"):
        assert re.search(rf"^calc {v}\s*: mean reward over the last 10 steps [\d.]+", text,
                         re.M), text
    w, h, _ = _read_png(out)
    assert (w, h) == (4 * 340, 230)
    assert out.with_suffix(".json").is_file()


@pytest.mark.skipif(os.environ.get("LVT_TRAINER_LONG") != "1",
                    reason="minutes-long learning run: set LVT_TRAINER_LONG=1")
def test_long_run_learns(tmp_path: Path) -> None:
    """The benchmark's own configuration on one seed: the reward goes up for both tasks."""
    import json

    proc = subprocess.run(
        [sys.executable, str(BENCH), "--seeds", "0", "--out", str(tmp_path / "c.png"),
         "--quiet"], capture_output=True, text=True, timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads((tmp_path / "c.json").read_text())["results"]
    for task in ("sort", "calc"):
        for variant in ("grpo", "critic"):
            r = [h["reward_mean"] for h in res[task][variant]["0"]]
            first, last = sum(r[:10]) / 10, sum(r[-10:]) / 10
            assert last > first + 0.05, (task, variant, first, last)
