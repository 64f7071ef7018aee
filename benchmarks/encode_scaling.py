"""Dataset encoding beyond one process: rows/s for 1 and 2 workers, on equal output.

The same conversations (``encode_throughput.make_conversations``: GRPO-shaped rollouts with a
tool call and its result, Qwen3's real tokenizer from ``lvt.zoo``) through:

1. **baseline**: ``ChatEncoder.encode_batch`` in this process, one call (no I/O);
2. **datasets**: ``lvt.datasets.encode`` on a ``datasets.Dataset``, ``num_proc`` 1 and 2;
3. **lvt encode**: ``lvt.datasets.files.encode_jsonl`` (what ``lvt encode --workers N`` runs),
   JSONL in, Parquet out, ``workers`` 1 and 2;
4. **Ray local**: ``lvt.datasets.encode_ray`` with 1 and 2 actors on a local Ray instance
   (``ray.init(num_cpus=2)``; the start of Ray itself is reported, not timed in the rows/s;
   each run's actor start and encoder builds are).

Every run starts from a fresh encoder (empty span cache; building it is not timed). Before any
figure is printed, every path's rows (ids, loss mask, owner, in input order) are asserted
equal to the baseline's, and the two ``lvt encode`` Parquet files byte-identical. Ratios are
against the same path's 1-worker run and against the baseline, all from this run.

Run: ``.venv/bin/python benchmarks/encode_scaling.py [--n 4000] [--group 8] [--no-ray]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from encode_throughput import TOOLS, make_conversations


def _rows_of(table: Any) -> list[tuple[list[int], list[int], list[int]]]:
    cols = [table.column(c).to_pylist() for c in ("input_ids", "loss_mask", "owner")]
    return list(zip(*cols, strict=True))


def _args_as_json(conv: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call arguments as JSON strings (Arrow would store a struct with the union of all
    argument names); lvt reads a JSON string as the object it holds."""
    out = []
    for m in conv:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.dumps(
                c["function"]["arguments"], ensure_ascii=False)}} for c in m["tool_calls"]]
        out.append(m)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000, help="number of conversations")
    ap.add_argument("--group", type=int, default=8, help="rollouts per prompt")
    ap.add_argument("--family", default="qwen3", choices=["qwen3", "llama3.1"])
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray Data runs")
    args = ap.parse_args(argv)

    import datasets
    import pyarrow.parquet as pq

    import lvt
    import lvt.datasets as ld
    from lvt import zoo
    from lvt.datasets.files import encode_jsonl
    from lvt.openai import from_openai_batch

    datasets.disable_progress_bars()
    tok = zoo.load_tokenizer(args.family)
    convs = make_conversations(args.n, args.group, reasoning=args.family == "qwen3")
    n = len(convs)
    print(f"{args.family}: {n} conversations (groups of {args.group}, 3 tools), "
          f"{os.cpu_count()} CPUs", flush=True)

    def fresh() -> lvt.ChatEncoder:
        return lvt.ChatEncoder.from_tokenizer(tok, args.family)

    results: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        out = fn()
        results[name] = time.perf_counter() - t0
        print(f"  {name:<26} {results[name]:8.3f} s  {n / results[name]:9.1f} rows/s", flush=True)
        return out

    enc = fresh()
    base = timed("baseline encode_batch", lambda: enc.encode_batch(
        from_openai_batch(convs, tools=TOOLS)))
    want = [(e.ids.tolist(), e.mask.tolist(), e.owner.tolist()) for e in base]
    ntok = sum(len(e) for e in base)

    outputs: dict[str, list[Any]] = {}
    ds = datasets.Dataset.from_list([{"id": f"c{i}", "messages": _args_as_json(c),
                                      "tools": json.dumps(TOOLS)} for i, c in enumerate(convs)])
    for k in (1, 2):
        e = fresh()
        out = timed(f"datasets num_proc={k}", lambda e=e, k=k: ld.encode(
            ds, e, num_proc=k, batch_size=args.batch_size, load_from_cache_file=False))
        outputs[f"datasets num_proc={k}"] = _rows_of(ld.to_arrow(out))

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "convs.jsonl"
        with src.open("w", encoding="utf-8") as f:
            for i, c in enumerate(convs):
                f.write(json.dumps({"id": f"c{i}", "messages": c, "tools": TOOLS},
                                   ensure_ascii=False) + "\n")
        files = {}
        for k in (1, 2):
            e = fresh()
            dst = Path(tmp) / f"w{k}.parquet"
            timed(f"lvt encode --workers {k}", lambda e=e, k=k, dst=dst: encode_jsonl(
                src, dst, e, batch_size=args.batch_size, workers=k, force=True))
            files[k] = dst.read_bytes()
            outputs[f"lvt encode --workers {k}"] = _rows_of(pq.read_table(dst))
        if files[1] != files[2]:
            raise SystemExit("lvt encode: --workers 2 wrote other bytes than --workers 1")

    ray_start = None
    if not args.no_ray:
        import ray
        import ray.data

        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        ray_start = time.perf_counter() - t0
        try:
            ctx = ray.data.DataContext.get_current()
            ctx.execution_options.preserve_order = True
            ctx.enable_progress_bars = False
            rds = ray.data.from_items([{"id": f"c{i}", "messages": _args_as_json(c),
                                        "tools": json.dumps(TOOLS)}
                                       for i, c in enumerate(convs)])
            rds = rds.materialize()
            for k in (1, 2):
                def run(k: int = k) -> Any:
                    out = ld.encode_ray(rds, tokenizer=tok, format=args.family, concurrency=k,
                                        batch_size=args.batch_size)
                    import pyarrow as pa

                    return pa.concat_tables(ray.get(out.to_arrow_refs()))

                outputs[f"Ray local actors={k}"] = _rows_of(timed(f"Ray local actors={k}", run))
        finally:
            ray.shutdown()

    for name, rows in outputs.items():
        if rows != want:
            bad = next((i for i, (a, b) in enumerate(zip(rows, want, strict=False)) if a != b),
                       min(len(rows), len(want)))
            raise SystemExit(f"{name}: row {bad} differs from the baseline (or the row count "
                             f"does: {len(rows)} vs {len(want)}); the figures would not compare")
    print(f"  output identical on all {n} rows ({ntok / n:.1f} tok/row) for every path; "
          "lvt encode files byte-identical for 1 and 2 workers")
    if ray_start is not None:
        print(f"  Ray start (ray.init, not in the figures): {ray_start:.2f} s")
    b = results["baseline encode_batch"]
    for path, one, two in (
        ("datasets", "datasets num_proc=1", "datasets num_proc=2"),
        ("lvt encode", "lvt encode --workers 1", "lvt encode --workers 2"),
        ("Ray local", "Ray local actors=1", "Ray local actors=2"),
    ):
        if one not in results:
            continue
        print(f"  {path:<11} 2 vs 1 worker: {results[one] / results[two]:5.2f}x   "
              f"1 worker vs baseline: {b / results[one]:5.2f}x   "
              f"2 workers vs baseline: {b / results[two]:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
