"""``lvt encode --workers N``: the Parquet file (bytes, hence rows, row groups and fingerprint
metadata) and the skipped-line report are those of one worker, with fork and with spawn, in
fatal and in ``--skip-bad`` mode (the Llama 3.1 format with the zoo's Llama 3.1 tokenizer)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cli_helpers import TOOL_CONV, assert_clean_failure, run_lvt, write_jsonl

from lvt.cli import EXIT_OK, EXIT_USAGE
from lvt.datasets.files import (
    BadLine,
    BadLineError,
    DatasetError,
    encode_jsonl,
    read_dataset_metadata,
)

WORDS = ("alpha", "beta", "gamma", "delta", "Oslo", "weather", "42", "é", "日本", "tool")


def _rows(n: int, seed: int = 0) -> list[Any]:
    """``n`` lines: varied conversations (tool use included) and, every so often, a bad
    line of each kind (invalid JSON, wrong shape, a role lvt rejects, a blank line)."""
    rng = random.Random(seed)
    bad = ['{"messages": [', {"messages": []}, {"messages": [{"role": "wizard", "content": "x"}]},
           "", '{"messages": ' + "[" * 5000 + "]" * 5000 + "}"]
    out: list[Any] = []
    for i in range(n):
        if i % 17 == 5:
            out.append(bad[(i // 17) % len(bad)])
        elif i % 11 == 0:
            out.append({**TOOL_CONV, "id": f"t{i}"})
        else:
            turns = []
            for _ in range(rng.randint(1, 3)):
                turns.append({"role": "user", "content": " ".join(rng.choices(WORDS, k=9))})
                turns.append({"role": "assistant",
                              "content": " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))})
            out.append({"id": f"c{i}", "messages": turns})
    return out


def _encode(src: Path, out: Path, enc: Any, **kw: Any) -> tuple[Any, list[BadLine]]:
    seen: list[BadLine] = []
    st = encode_jsonl(src, out, enc, tokenizer_label="zoo:llama3.1", progress=False,
                      on_bad_line=seen.append, **kw)
    return st, seen


def test_two_workers_byte_identical(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", _rows(240))
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    st1, bad1 = _encode(src, one, llama_encoder, skip_bad=True, batch_size=16)
    st2, bad2 = _encode(src, two, llama_encoder, skip_bad=True, batch_size=16, workers=2)
    assert one.read_bytes() == two.read_bytes()
    assert read_dataset_metadata(one) == read_dataset_metadata(two)
    assert bad1 == bad2 == st1.bad_lines == st2.bad_lines and len(bad1) == 11
    assert [b.line for b in bad1] == sorted(b.line for b in bad1)
    assert (st1.rows, st1.skipped, st1.tokens) == (st2.rows, st2.skipped, st2.tokens)
    t = pq.read_table(two)
    assert t.num_rows == st1.rows == 240 - 11 - 3  # 3 blank lines are neither
    assert t.column("line").to_pylist() == sorted(t.column("line").to_pylist())
    assert pq.ParquetFile(two).metadata.num_row_groups == 15  # one per chunk of 16 lines
    # three workers, another chunk size: again the bytes of one worker with that chunk size
    _, bad3 = _encode(src, tmp_path / "w3.parquet", llama_encoder, skip_bad=True,
                      batch_size=50, workers=3)
    _encode(src, tmp_path / "w1.parquet", llama_encoder, skip_bad=True, batch_size=50)
    assert (tmp_path / "w3.parquet").read_bytes() == (tmp_path / "w1.parquet").read_bytes()
    assert bad3 == bad1


def test_workers_fatal_bad_line_is_the_first(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", _rows(120))
    errs = []
    for w in (1, 2):
        with pytest.raises(BadLineError) as ei:
            _encode(src, tmp_path / "o.parquet", llama_encoder, batch_size=8, workers=w)
        errs.append((ei.value.line, ei.value.reason))
    assert errs[0] == errs[1] and errs[0][0] == 6 and "invalid JSON" in errs[0][1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_spawn_workers_rebuild_the_encoder(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", _rows(40, seed=3))
    one, two = tmp_path / "one.parquet", tmp_path / "spawn.parquet"
    _, bad1 = _encode(src, one, llama_encoder, skip_bad=True, batch_size=8)
    _, bad2 = _encode(src, two, llama_encoder, skip_bad=True, batch_size=8, workers=2,
                      mp_context="spawn")
    assert one.read_bytes() == two.read_bytes() and bad1 == bad2


def test_workers_validated(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", _rows(3))
    for w in (0, -1, True, 1.5):
        with pytest.raises(DatasetError, match="workers must be an integer of at least 1"):
            _encode(src, tmp_path / "o.parquet", llama_encoder, workers=w)
    with pytest.raises(DatasetError, match="unknown start method"):
        _encode(src, tmp_path / "o.parquet", llama_encoder, workers=2, mp_context="nope")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_cli_workers_same_file_and_report(tmp_path: Path, llama_encoder: Any) -> None:
    """``lvt encode --workers 2 --skip-bad`` in a fresh process writes the bytes one
    in-process worker writes, and reports the same skipped lines in the same order."""
    src = write_jsonl(tmp_path / "in.jsonl", _rows(150, seed=7))
    ref = tmp_path / "ref.parquet"
    _, bad = _encode(src, ref, llama_encoder, skip_bad=True, batch_size=32)
    out = tmp_path / "cli.parquet"
    r = run_lvt(["encode", str(src), "-o", str(out), "-t", "llama3.1", "--skip-bad",
                 "--workers", "2", "--batch-size", "32", "--no-progress", "--json"])
    assert r.returncode == EXIT_OK and "Traceback" not in r.stderr, r.stderr
    assert out.read_bytes() == ref.read_bytes()
    skipped = [ln for ln in r.stderr.splitlines() if ln.startswith("lvt: skipped ")]
    assert skipped == [f"lvt: skipped {src}:{b.line}: {b.reason}" for b in bad]
    js = json.loads(r.stdout)
    assert js["workers"] == 2 and js["skipped"] == len(bad) > 0
    assert_clean_failure(run_lvt(["encode", str(src), "-o", str(out), "--workers", "0"]),
                         EXIT_USAGE, "--workers: must be at least 1")


class _DyingEncoder:
    """An encoder whose ``encode_batch`` kills the (worker) process it runs in."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def encode_batch(self, convs: Any, on_collision: str = "warn") -> Any:
        import os

        os._exit(9)


def test_dead_worker_is_an_error_not_a_hang(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", _rows(40))
    out = tmp_path / "o.parquet"
    out.write_bytes(b"previous output")
    with pytest.raises(DatasetError, match="a worker process died"):
        _encode(src, out, _DyingEncoder(llama_encoder), skip_bad=True, batch_size=8,
                workers=2, mp_context="fork")
    assert out.read_bytes() == b"previous output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "o.parquet"]
