"""Parse time against encode time as conversations grow, on equal output (issue 11, item 1).

For Qwen3 and Llama 3.1 with their real tokenizers (``lvt.zoo``), conversations of 1,000,
8,000 and 20,000 messages (alternating user and assistant turns of a few words each). For
each size, in the same run on the same encoder:

* **encode**: ``ChatEncoder.encode(conv)`` with an empty span cache;
* **parse**: ``ChatEncoder.parse(ids)`` of those ids with an empty span cache (its
  re-encoding check of every text run pays the tokenizer too), which is asserted to give
  the conversation back (``parse(encode c) == c``) before any figure is printed.

Each figure is the best of ``--repeat`` runs. The one-time setup of an encoder (loading the
tokenizer, the vocabulary byte table and the valid-id table that parse needs) is timed once
and printed apart, not folded into either column. Target: parse <= 2x encode at every size;
a ratio that stays flat as the size grows is what a linear parse looks like (the old parse
re-sliced the remaining tokens per message and went quadratic: 58 s at 20,000 messages).

Run: ``.venv/bin/python benchmarks/parse_scaling.py [--sizes 1000,8000,20000]
[--family qwen3,llama3.1] [--repeat 3]``. Exits 1 when a ratio exceeds ``--target``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from typing import Any

import lvt
from lvt import zoo
from lvt.model import Conversation, Message

WORDS = (  # noqa: SIM905
    "the of and to in is you that it he was for on are as with his they at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "integral derivative matrix vector probability theorem café naïve 東京 🙂 42 3.14"
).split()

FAMILIES = {"qwen3": "qwen3", "llama3.1": "llama3.1"}  # format -> zoo tokenizer


def conversation(n: int, rng: random.Random) -> Conversation:
    """``n`` messages: alternating user and assistant turns of 4 to 12 words."""
    return Conversation([
        Message.text("user" if i % 2 == 0 else "assistant",
                     " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))))
        for i in range(n)
    ])


def best_of(repeat: int, enc: lvt.ChatEncoder, f: Callable[[Any], Any], x: Any) -> float:
    """Best wall time of ``f(x)`` over ``repeat`` runs, each with an empty span cache."""
    out = float("inf")
    for _ in range(repeat):
        enc.codec.clear_cache()
        t = time.perf_counter()
        f(x)
        out = min(out, time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,8000,20000",
                    help="message counts, comma-separated (default 1000,8000,20000)")
    ap.add_argument("--family", default=",".join(FAMILIES),
                    help=f"formats, comma-separated (default {','.join(FAMILIES)})")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    ap.add_argument("--target", type=float, default=2.0, help="largest parse/encode ratio")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    fams = args.family.split(",")
    for f in fams:
        if f not in FAMILIES:
            ap.error(f"unknown family {f!r}; expected one of {list(FAMILIES)}")
    worst = 0.0
    print(f"backend: {lvt.backend()}")
    for fmt in fams:
        t = time.perf_counter()
        enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(FAMILIES[fmt]), fmt)
        t_load = time.perf_counter() - t
        t = time.perf_counter()
        enc.codec.decode_bytes([0])  # builds the vocabulary byte table
        enc.codec.valid_ids()
        t_table = time.perf_counter() - t
        print(f"\n{fmt}: one-time setup: encoder {t_load:.2f} s, vocabulary tables "
              f"{t_table:.2f} s (not in the figures below)")
        print(f"{'messages':>9} {'tokens':>9} {'encode s':>9} {'parse s':>9} {'parse/encode':>13}"
              f" {'parse us/token':>15}")
        rng = random.Random(0)
        for n in sizes:
            conv = conversation(n, rng)
            enc.codec.clear_cache()
            ids = enc.encode(conv).ids
            enc.codec.clear_cache()
            if enc.parse(ids) != conv:
                print(f"{fmt} {n}: parse(encode c) != c", file=sys.stderr)
                return 2
            te = best_of(args.repeat, enc, enc.encode, conv)
            tp = best_of(args.repeat, enc, enc.parse, ids)
            ratio = tp / te
            worst = max(worst, ratio)
            print(f"{n:>9} {len(ids):>9} {te:>9.3f} {tp:>9.3f} {ratio:>12.2f}x "
                  f"{1e6 * tp / len(ids):>15.2f}")
    verdict = "meets" if worst <= args.target else "MISSES"
    print(f"\nworst parse/encode ratio: {worst:.2f}x ({verdict} the target "
          f"<= {args.target:g}x)")
    return 0 if worst <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
