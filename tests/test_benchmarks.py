"""The benchmark scripts run end to end at toy sizes and report what they promise.

Speed and memory targets are not asserted here (they are figures the benchmarks print); what
is asserted is that every variant runs, that the variants agree with each other numerically,
and that the CUDA check script's checks pass when pointed at the CPU.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _run(script: str, *args: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_loss_memory_runs_every_variant_and_they_agree() -> None:
    out = _run("loss_memory.py", "--vocab", "257", "--seq", "40", "--hidden", "16",
               "--chunk", "8", "--device", "cpu")
    for variant in ("naive", "chunked", "naive_hidden", "chunked_hidden"):
        assert re.search(rf"^\s*{variant}: peak\s+[\d.]+ MiB", out, re.M), out
    assert re.search(r"chunked: .* time [\d.]+x of naive$", out, re.M), out
    pairs = re.findall(r"^(\w+) vs (\w+): \|dloss\|=([\d.e+-]+)\s+rel d\|grad\|=([\d.e+-]+)$",
                       out, re.M)
    assert {(a, b) for a, b, _, _ in pairs} == {("chunked", "naive"),
                                               ("chunked_hidden", "naive_hidden")}
    for _, _, dloss, dgrad in pairs:
        assert float(dloss) < 1e-5 and float(dgrad) < 1e-4, out


def test_cuda_check_script_passes_on_cpu() -> None:
    out = _run("cuda_loss_check.py", "--device", "cpu", "--skip-bench")
    m = re.search(r"^(\d+)/(\d+) checks passed$", out, re.M)
    assert m is not None, out
    assert m.group(1) == m.group(2) and int(m.group(2)) >= 5, out
    assert "[FAIL]" not in out


def test_encode_throughput_reports_all_three_columns() -> None:
    out = _run("encode_throughput.py", "--n", "16")
    for label in ("HF apply_chat_template", "BPE floor", "lvt encode_batch"):
        assert re.search(rf"{re.escape(label)}.*\s[\d.]+ conv/s", out), out
    assert re.search(r"lvt speed-up over HF:\s+[\d.]+x", out), out


def test_parse_scaling_reports_every_format_with_growth_and_the_core_count() -> None:
    """Toy sizes for every registry format; the linearity verdict is the benchmark's own
    (``--max-growth`` raised so a loaded machine cannot fail the smoke run)."""
    import lvt

    out = _run("parse_scaling.py", "--sizes", "8,32", "--max-growth", "1e9")
    assert re.search(r"^cores: \d+ used of \d+; backend \w+", out, re.M), out
    rows = re.findall(r"^(\S+)\s+(agent|plain)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                      r"([\d.]+)(?:\s+([\d.]+)x\s+([\d.]+)x\s+([\d.]+)x)?\s*$", out, re.M)
    names = lvt.formats.format_names()
    assert [(r[0], int(r[2])) for r in rows] == [(f, n) for f in names for n in (8, 32)], out
    for r in rows:
        assert int(r[3]) > 0 and all(float(x) >= 0 for x in r[4:7])
        assert (r[7] == "") == (r[2] == "8"), out  # growth from the second size on
    shapes = {r[0]: r[1] for r in rows}
    assert shapes["gemma3"] == "plain" and shapes["deepseek-r1"] == "agent", shapes
    assert re.search(r"^worst growth per 4x messages: encode [\d.]+x .*refused [\d.]+x",
                     out, re.M), out
    assert re.search(r"^verdict: linear \(largest growth [\d.]+x per 4x", out, re.M), out


def test_encode_scaling_reports_every_path_on_equal_output() -> None:
    # Ray's own start costs tens of seconds: its path is tested in tests/test_datasets.py
    out = _run("encode_scaling.py", "--n", "24", "--batch-size", "8", "--no-ray")
    for label in ("baseline encode_batch", "datasets num_proc=1", "datasets num_proc=2",
                  "lvt encode --workers 1", "lvt encode --workers 2"):
        assert re.search(rf"^\s+{re.escape(label)}\s+[\d.]+ s\s+[\d.]+ rows/s$", out, re.M), out
    assert "output identical on all 24 rows" in out, out
    for path in ("datasets", "lvt encode"):
        assert re.search(rf"^\s+{path}\s+2 vs 1 worker:\s+[\d.]+x", out, re.M), out


def test_memory_per_token_reports_each_operation_in_bytes_per_token() -> None:
    out = _run("memory_per_token.py", "--sizes", "0.02")
    for op in ("encode", "encode_batch", "parse"):
        m = re.search(rf"^\s+{op}\s+0\.02 MB\s+([\d,]+) tokens\s+peak \+\s+-?[\d.]+ MiB\s+"
                      r"(-?[\d.]+) B/token$", out, re.M)
        assert m is not None, out
        assert int(m.group(1).replace(",", "")) > 1000, out
    assert re.search(r"^largest: -?[\d.]+ bytes per token above the input", out, re.M), out
