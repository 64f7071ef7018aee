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


def test_parse_scaling_reports_both_columns_and_the_ratio() -> None:
    """Toy sizes; the speed target is the benchmark's own verdict, not asserted here
    (``--target`` raised so a loaded machine cannot fail the smoke run)."""
    out = _run("parse_scaling.py", "--sizes", "20,60", "--repeat", "1", "--target", "1e9")
    for fmt in ("qwen3", "llama3.1"):
        assert re.search(rf"^{re.escape(fmt)}: one-time setup: encoder [\d.]+ s, vocabulary "
                         r"tables [\d.]+ s", out, re.M), out
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s+([\d.]+)$",
                      out, re.M)
    assert [int(r[0]) for r in rows] == [20, 60, 20, 60], out
    for _, tokens, enc_s, parse_s, ratio, _ in rows:
        assert int(tokens) > 0 and float(enc_s) >= 0 and float(parse_s) >= 0
        assert float(ratio) > 0
    assert re.search(r"^worst parse/encode ratio: [\d.]+x \(meets the target", out, re.M), out


def test_encode_scaling_reports_every_path_on_equal_output() -> None:
    # Ray's own start costs tens of seconds: its path is tested in tests/test_datasets.py
    out = _run("encode_scaling.py", "--n", "24", "--batch-size", "8", "--no-ray")
    for label in ("baseline encode_batch", "datasets num_proc=1", "datasets num_proc=2",
                  "lvt encode --workers 1", "lvt encode --workers 2"):
        assert re.search(rf"^\s+{re.escape(label)}\s+[\d.]+ s\s+[\d.]+ rows/s$", out, re.M), out
    assert "output identical on all 24 rows" in out, out
    for path in ("datasets", "lvt encode"):
        assert re.search(rf"^\s+{path}\s+2 vs 1 worker:\s+[\d.]+x", out, re.M), out


def test_pickle_cost_reports_every_source_against_the_build() -> None:
    """One zoo tokenizer, one run per figure; the script itself asserts each unpickled
    encoder's fingerprint and render before printing."""
    out = _run("pickle_cost.py", "--zoo", "qwen2.5", "--repeat", "1")
    assert re.search(r"^cores: \d+", out, re.M), out
    assert re.search(r"baseline build in the worker from_tokenizer\(zoo name\) [\d.]+s", out)
    for label in ("zoo name", "path", "tokenizer object"):
        assert re.search(rf"^  {label}\s+[\d,]+ bytes  dumps [\d.]+s  loads [\d.]+s "
                         rf"\([\d.]+x the zoo-name build\)  loads again [\d.]+ms$", out, re.M), out
