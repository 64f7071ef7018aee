"""Peak memory per token of ``encode``, ``encode_batch`` and ``parse`` on long messages
(issue 26 item 4): bytes of peak RSS above the input, divided by the tokens.

For each size (default 1 MB and 10 MB of text; ``--big`` adds 50 MB) and each operation, a
fresh subprocess builds the encoder (Qwen3's real tokenizer from ``lvt.zoo`` unless
``--format``), builds its input and reads ``ru_maxrss`` (the high-water mark so far: the
interpreter, the tokenizer, the input), runs the operation once and reads ``ru_maxrss`` again;
the difference is the operation's peak above its input (on Linux the peak is reset to the
resident size just before the operation through ``/proc/self/clear_refs`` and read as
``VmHWM``: the tokenizer's loading peaks above what a 1 MB operation takes):

* **encode**: ``ChatEncoder.encode`` of one conversation holding one user message of that
  many bytes of text (words, Unicode included);
* **encode_batch**: ``ChatEncoder.encode_batch`` of 8 conversations of an eighth of it each
  (8 different texts);
* **parse**: ``ChatEncoder.parse`` of the ids of the ``encode`` case (an ``int32`` array
  written by the ``encode`` run, loaded before the first reading).

The target of the issue is 64 bytes per token or less; the three output arrays alone take
9 (``int32`` ids, ``uint8`` mask, ``int32`` owners). Printed with the core count, and with
the Python and ``tokenizers`` versions, since the tokenizer's own buffers are most of it.

``--baseline-rev REV`` measures the package at git revision ``REV`` (``git archive`` into a
temporary directory) the same way in the same run, and prints the ratio.

Run: ``.venv/bin/python benchmarks/memory_per_token.py [--sizes 1,10] [--big] [--format
qwen3] [--baseline-rev main]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from parse_scaling import WORDS  # the same deterministic words (a sibling script)

OPS = ("encode", "encode_batch", "parse")


def text_of(nbytes: int, seed: int = 0) -> str:
    """About ``nbytes`` bytes of UTF-8 text (deterministic words; another ``seed``, another
    text)."""
    words = []
    n = 0
    i = 0
    while n < nbytes:
        w = WORDS[(7 * i + i // len(WORDS) + seed * (i // 97)) % len(WORDS)]
        words.append(w)
        n += len(w.encode("utf-8")) + 1
        i += 1
    return " ".join(words)


def maxrss() -> int:
    """The peak resident set size since :func:`reset_peak`, in bytes: ``VmHWM`` where Linux
    lets a process reset it, else ``ru_maxrss`` (the peak since the start; KiB on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss() -> int:
    """The resident set size now, in bytes (``ru_maxrss`` where ``/proc`` is missing)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGESIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak() -> int:
    """Reset the peak to the resident size now (``/proc/self/clear_refs``: the loading of the
    tokenizer peaks above what a small operation takes, and would hide it); the size now."""
    gc.collect()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return rss()


def child(op: str, mb: float, fmt: str, ids_path: str) -> dict[str, Any]:
    """One measurement, in this (fresh) process."""
    import numpy as np

    import lvt
    from lvt import zoo
    from lvt.model import Conversation, Message

    enc = lvt.ChatEncoder.from_tokenizer(
        zoo.load_tokenizer(lvt.formats.get_spec(fmt).tokenizer), fmt)
    enc.encode(Conversation([Message.text("user", "warm up")]))
    nbytes = int(mb * 1_000_000)
    if op == "parse":
        ids = np.load(ids_path)
        enc.codec.decode_bytes([0])  # the vocabulary tables, built before the reading
        enc.codec.valid_ids()
        before = reset_peak()
        conv = enc.parse(ids)
        tokens = len(ids)
        assert len(conv.messages) == 1
    elif op == "encode":
        conv = Conversation([Message.text("user", text_of(nbytes))])
        before = reset_peak()
        e = enc.encode(conv)
        tokens = len(e)
        np.save(ids_path, e.ids)
    else:
        convs = [Conversation([Message.text("user", text_of(nbytes // 8, k + 1))])
                 for k in range(8)]
        before = reset_peak()
        es = enc.encode_batch(convs)
        tokens = sum(len(e) for e in es)
    peak = maxrss()
    return {"op": op, "mb": mb, "tokens": tokens, "base": before, "peak": peak,
            "per_token": (peak - before) / max(tokens, 1)}


def measure(sizes: list[float], fmt: str, pythonpath: str | None, tmp: str) -> list[dict]:
    """Every (size, operation), each in a fresh subprocess; ``pythonpath``: another package."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    rows = []
    for mb in sizes:
        ids_path = str(Path(tmp) / f"ids-{mb:g}.npy")
        for op in OPS:
            proc = subprocess.run([sys.executable, __file__, "--child", op, "--mb", str(mb),
                                   "--format", fmt, "--ids", ids_path],
                                  env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"{op} {mb:g} MB failed ({proc.returncode}):\n{proc.stderr}")
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"  {op:<13} {mb:>6g} MB {r['tokens']:>11,} tokens  peak +"
                  f"{(r['peak'] - r['base']) / 2**20:>8.1f} MiB  {r['per_token']:>7.1f} B/token",
                  flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,10", help="message sizes in MB (default 1,10)")
    ap.add_argument("--big", action="store_true", help="add 50 MB (several GB of RSS)")
    ap.add_argument("--format", default="qwen3", help="registry format (default qwen3)")
    ap.add_argument("--baseline-rev", help="also measure the package at this git revision")
    ap.add_argument("--child", choices=OPS, help=argparse.SUPPRESS)
    ap.add_argument("--mb", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--ids", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.mb, args.format, args.ids)))
        return 0
    sizes = [float(x) for x in args.sizes.split(",")] + ([50.0] if args.big else [])
    import tokenizers

    print(f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}; tokenizers "
          f"{tokenizers.__version__}; format {args.format}; peak RSS above the input, per token")
    with tempfile.TemporaryDirectory() as tmp:
        base: list[dict] = []
        if args.baseline_rev:
            root = Path(__file__).resolve().parent.parent
            arc = subprocess.run(["git", "-C", str(root), "archive", args.baseline_rev,
                                  "pybind"], capture_output=True, check=False)
            if arc.returncode != 0:
                raise SystemExit(f"git archive {args.baseline_rev}: {arc.stderr.decode()}")
            old = Path(tmp) / "old"
            old.mkdir()
            subprocess.run(["tar", "-x", "-C", str(old)], input=arc.stdout, check=True)
            print(f"baseline: the package at {args.baseline_rev}")
            base = measure(sizes, args.format, str(old / "pybind"), tmp)
        print("this tree:")
        rows = measure(sizes, args.format, None, tmp)
    worst = max(r["per_token"] for r in rows)
    print(f"largest: {worst:.1f} bytes per token above the input (target <= 64)")
    if base:
        for b, r in zip(base, rows, strict=True):
            print(f"  {r['op']:<13} {r['mb']:>6g} MB  before {b['per_token']:7.1f}  after "
                  f"{r['per_token']:7.1f} B/token  ({b['per_token'] / r['per_token']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
