"""Encode, parse and refusal time against the number of messages, for every shipped format
(issue 11 item 1, issue 26 item 5): linear is a growth of ~4x per 4x messages, quadratic ~16x.

Every format and model entry of the registry (:func:`lvt.formats.format_names`) with its zoo
tokenizer, on conversations of N messages of a few words each: an agent loop (user, assistant
tool call, tool result, assistant answer, repeated; tool definitions given) where the format
accepts one, else alternating user and assistant turns (Gemma 3, Qwen2.5-VL: no tool syntax).
For each size, on the same encoder:

* **encode**: ``ChatEncoder.encode(conv)`` with an empty span cache;
* **parse**: ``ChatEncoder.parse(ids)`` of those ids with an empty span cache (its re-encoding
  check of every text run and the re-render check included);
* **refused**: ``ChatEncoder.parse`` of the same ids with their first token appended (every
  format refuses it, and only after reading the whole stream), asserted to raise
  :class:`~lvt.errors.ParseError`.

At the first size, ``encode(parse(ids)).ids == ids`` is asserted before any figure is printed.
Each figure is the best of ``--repeat`` runs. The growth column is the time ratio to the
previous size, scaled to a 4x step (``(t2/t1) ** (log 4 / log(n2/n1))``). A size is skipped
(and said so) when the previous ones predict, at their measured growth, more than ``--budget``
seconds for one run of one operation.

``--baseline-rev REV`` runs the same measurement in a subprocess on the package as it was at
git revision ``REV`` (``git archive``, into a temporary directory) before this run, on the same
machine, and prints both with the speed-up. ``--cores N`` pins the process (and the baseline's)
to N cores (the tokenizer's thread pool follows the affinity); the core count is printed.

Run: ``.venv/bin/python benchmarks/parse_scaling.py`` (quick: 500 and 2,000 messages, about a
minute on an idle 2-core machine, mostly building the 16 encoders); ``--full`` (1k, 4k, 16k,
64k); ``--huge`` (1k ... 200k); ``--sizes 1000,4000``; ``--formats deepseek-r1,gpt-oss``;
``--baseline-rev main``; ``--cores 1``. Exits 1 when a growth per 4x exceeds ``--max-growth``
(default 8, between linear and quadratic).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUICK = (500, 2000)
FULL = (1000, 4000, 16000, 64000)
HUGE = (*FULL, 200000)
OPS = ("encode", "parse", "refused")
WORDS = (  # noqa: SIM905
    "the of and to in is you that it he was for on are as with his they at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "integral derivative matrix vector probability theorem café naïve 東京 🙂 42 3.14"
).split()
TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                   "required": ["q"]}}}]


def conversation(n: int, agent: bool) -> Any:
    """``n`` messages of 3 to 8 words (deterministic): the agent loop (user, call, result,
    answer) when ``agent``, else alternating user and assistant turns."""
    from lvt.model import Conversation, Message, Role, ToolCall

    msgs = []
    for i in range(n):
        words = " ".join(WORDS[(7 * i + 3 * j) % len(WORDS)] for j in range(3 + i % 6))
        step = i % 4 if agent else i % 2
        if step == 0:
            msgs.append(Message.text("user", words))
        elif agent and step == 1:
            msgs.append(Message(Role.ASSISTANT, (ToolCall(
                "lookup", json.dumps({"q": words}, ensure_ascii=False), f"c{i:08d}"),)))
        elif agent and step == 2:
            msgs.append(Message.text("tool", words))
        else:
            msgs.append(Message.text("assistant", words))
    return Conversation(msgs, False, TOOLS if agent else None)


def best_of(repeat: int, enc: Any, f: Callable[[], Any]) -> float:
    """Best wall time of ``f()`` over ``repeat`` runs, each with an empty span cache."""
    out = float("inf")
    for _ in range(repeat):
        enc.codec.clear_cache()
        t = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - t)
    return out


def growth(n1: int, t1: float, n2: int, t2: float) -> float:
    """The time ratio from ``n1`` to ``n2`` messages, scaled to a 4x step."""
    return (t2 / max(t1, 1e-9)) ** (math.log(4) / math.log(n2 / n1))


@functools.cache
def tokenizer(name: str) -> Any:
    """A zoo tokenizer, loaded once for the formats that share it."""
    from lvt import zoo

    return zoo.load_tokenizer(name)


def measure(fmt: str, sizes: list[int], repeat: int, budget: float, log: Any) -> list[dict]:
    """The rows of one format (printed as they come)."""
    import lvt
    from lvt.errors import ConversationError, ParseError

    spec = lvt.formats.get_spec(fmt)
    t = time.perf_counter()
    enc = lvt.ChatEncoder.from_tokenizer(tokenizer(spec.tokenizer), fmt)
    enc.codec.decode_bytes([0])  # the vocabulary byte table
    enc.codec.valid_ids()
    setup = time.perf_counter() - t  # not in the figures
    try:
        enc.encode(conversation(8, True))
        agent = True
    except ConversationError:
        agent = False
    shape = "agent" if agent else "plain"
    rows: list[dict] = []
    for n in sizes:
        if len(rows) >= 2:
            a, b = rows[-2], rows[-1]
            pred = max(b[op] * (n / b["messages"]) ** max(1.0, math.log(
                max(b[op], 1e-9) / max(a[op], 1e-9)) / math.log(b["messages"] / a["messages"]))
                for op in OPS)
            if pred > budget:
                print(f"{fmt:<20} {shape:<5} {n:>8}  skipped: ~{pred:.0f} s predicted for one "
                      f"run at the measured growth (--budget {budget:g})", file=log, flush=True)
                continue
        conv = conversation(n, agent)
        enc.codec.clear_cache()
        ids = enc.encode(conv).ids.tolist()
        bad = [*ids, ids[0]]
        if not rows:
            enc.codec.clear_cache()
            if enc.encode(enc.parse(ids)).ids.tolist() != ids:
                raise SystemExit(f"{fmt} {n}: encode(parse(ids)) != ids; figures would not "
                                 "compare")

        def refused(bad: list[int] = bad) -> None:
            try:
                enc.parse(bad)
            except ParseError:
                return
            raise SystemExit(f"{fmt}: the stream with its first token appended was accepted")

        row = {"format": fmt, "shape": shape, "messages": n, "tokens": len(ids),
               "setup": setup,
               "encode": best_of(repeat, enc, lambda conv=conv: enc.encode(conv)),
               "parse": best_of(repeat, enc, lambda ids=ids: enc.parse(ids)),
               "refused": best_of(repeat, enc, refused)}
        prev = rows[-1] if rows else None
        rows.append(row)
        gs = ["" if prev is None else f"{growth(prev['messages'], prev[op], n, row[op]):.1f}x"
              for op in OPS]
        print(f"{fmt:<20} {shape:<5} {n:>8} {len(ids):>9} "
              + " ".join(f"{row[op]:>9.3f}" for op in OPS) + " "
              + " ".join(f"{g:>9}" for g in gs), file=log, flush=True)
    return rows


def run_baseline(rev: str, argv: list[str]) -> list[dict]:
    """The same measurement on the package at git revision ``rev``, in a subprocess."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        arc = subprocess.run(["git", "-C", str(root), "archive", rev, "pybind"],
                             capture_output=True, check=False)
        if arc.returncode != 0:
            raise SystemExit(f"git archive {rev}: {arc.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tmp], input=arc.stdout, check=True)
        out = Path(tmp) / "rows.json"
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "pybind")}
        print(f"baseline: the package at {rev} (git archive), same machine, before this run",
              flush=True)
        proc = subprocess.run([sys.executable, __file__, *argv, "--json", str(out),
                               "--max-growth", "1e9"], env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"the baseline run exited {proc.returncode}")
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", help="message counts, comma-separated (default: 500,2000)")
    ap.add_argument("--full", action="store_true", help="1k, 4k, 16k, 64k messages")
    ap.add_argument("--huge", action="store_true", help="1k, 4k, 16k, 64k, 200k messages")
    ap.add_argument("--formats", help="registry names, comma-separated (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure (best kept)")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="skip a size predicted to take longer (s, one run of one operation)")
    ap.add_argument("--max-growth", type=float, default=8.0,
                    help="exit 1 when a growth per 4x exceeds this")
    ap.add_argument("--cores", type=int, help="pin to this many cores (default: all)")
    ap.add_argument("--baseline-rev", help="also measure the package at this git revision")
    ap.add_argument("--json", help=argparse.SUPPRESS)  # the rows, for the baseline run
    args = ap.parse_args(argv)
    sizes = ([int(x) for x in args.sizes.split(",")] if args.sizes else
             list(HUGE if args.huge else FULL if args.full else QUICK))
    if sorted(set(sizes)) != sizes or sizes[0] < 4:
        ap.error("--sizes must be increasing, each at least 4")
    if args.cores is not None:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cores])
    base: list[dict] = []
    if args.baseline_rev:
        i = argv.index("--baseline-rev")
        base = run_baseline(args.baseline_rev, argv[:i] + argv[i + 2:])

    import lvt

    names = args.formats.split(",") if args.formats else lvt.formats.format_names()
    for f in names:
        if f not in lvt.formats.format_names():
            ap.error(f"unknown format {f!r}; expected some of {lvt.formats.format_names()}")
    log = sys.stderr if args.json else sys.stdout
    print(f"cores: {len(os.sched_getaffinity(0))} used of {os.cpu_count()}; backend "
          f"{lvt.backend()}; best of {args.repeat}; lvt from {Path(lvt.__file__).parent}",
          file=log)
    print(f"{'format':<20} {'shape':<5} {'messages':>8} {'tokens':>9} {'encode s':>9} "
          f"{'parse s':>9} {'refused s':>9} {'encode/4x':>9} {'parse/4x':>9} "
          f"{'refuse/4x':>9}", file=log, flush=True)
    rows = [r for f in names for r in measure(f, sizes, args.repeat, args.budget, log)]
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
        return 0
    worst = {op: (0.0, "") for op in OPS}
    for a, b in itertools.pairwise(rows):
        if a["format"] == b["format"]:
            for op in OPS:
                g = growth(a["messages"], a[op], b["messages"], b[op])
                if g > worst[op][0]:
                    worst[op] = (g, f"{b['format']} at {b['messages']}")
    print("worst growth per 4x messages: " + ", ".join(
        f"{op} {g:.1f}x ({where})" for op, (g, where) in worst.items()))
    if base:
        old = {(r["format"], r["messages"]): r for r in base}
        print(f"\nagainst the baseline ({args.baseline_rev}), seconds and speed-up:")
        print(f"{'format':<20} {'messages':>8} " + " ".join(
            f"{op + ' before':>15} {'after':>8} {'x':>6}" for op in OPS))
        for r in rows:
            o = old.get((r["format"], r["messages"]))
            cells = [f"{'skipped':>15} {r[op]:>8.3f} {'':>6}" if o is None else
                     f"{o[op]:>15.3f} {r[op]:>8.3f} {o[op] / max(r[op], 1e-9):>5.1f}x"
                     for op in OPS]
            print(f"{r['format']:<20} {r['messages']:>8} " + " ".join(cells))
    top = max(g for g, _ in worst.values())
    verdict = "linear" if top <= args.max_growth else "NOT linear"
    print(f"verdict: {verdict} (largest growth {top:.1f}x per 4x; limit {args.max_growth:g}x)")
    return 0 if top <= args.max_growth else 1


if __name__ == "__main__":
    sys.exit(main())
