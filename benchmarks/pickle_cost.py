"""What pickling a ``ChatEncoder`` costs: size, ``dumps``, ``loads`` (a rebuild from the recipe)
and a repeated ``loads`` in the same process (the rebuilt encoder reused), per tokenizer source.

Sources (:mod:`lvt.runtime.recipe`): a zoo name (``from_tokenizer("qwen3")``), a path to the
zoo's ``tokenizer.json``, a ``tokenizers.Tokenizer`` object (pickled as its JSON). The
**baseline** is what a worker without pickling does: build the encoder itself with
``ChatEncoder.from_tokenizer`` (zoo name, then from the JSON text it would have to be sent),
timed in the same run, after a warm-up build (imports excluded from every figure). Every
unpickled encoder is checked to have the original's fingerprint and render before any figure
is printed. Figures are the median of ``--repeat`` runs.

Run: ``.venv/bin/python benchmarks/pickle_cost.py [--zoo qwen3 llama3.1] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any


def _median(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", nargs="+", default=["qwen3", "llama3.1"], help="zoo tokenizers")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = ap.parse_args(argv)

    from tokenizers import Tokenizer

    import lvt
    from lvt import zoo
    from lvt.runtime import recipe

    print(f"cores: {os.cpu_count()}  lvt backend: {lvt.backend()}  repeat: {args.repeat}")
    msgs = [{"role": "user", "content": "Weather in Oslo? Answer in one line, please."}]
    for name in args.zoo:
        lvt.ChatEncoder.from_tokenizer(name)  # warm-up: imports, zoo files in the page cache
        t_zoo, ref = _median(lambda n=name: lvt.ChatEncoder.from_tokenizer(n), args.repeat)
        js = ref.tokenizer.to_str()
        t_json, _ = _median(lambda j=js, e=ref: lvt.ChatEncoder.from_tokenizer(
            Tokenizer.from_str(j), e.format_name), args.repeat)
        ids = ref.encode_openai(msgs, add_generation_prompt=True)
        print(f"\n{name} (format {ref.format_name}): baseline build in the worker "
              f"from_tokenizer(zoo name) {t_zoo:.3f}s, from the JSON text {t_json:.3f}s")
        path = str(zoo.tokenizer_dir(name) / "tokenizer.json")
        cases = {
            "zoo name": lambda n=name: lvt.ChatEncoder.from_tokenizer(n),
            "path": lambda p=path, e=ref: lvt.ChatEncoder.from_tokenizer(p, e.format_name),
            "tokenizer object": lambda e=ref, j=js: lvt.ChatEncoder.from_tokenizer(
                Tokenizer.from_str(j), e.format_name),
        }
        for label, build in cases.items():
            enc = build()
            t_dump, data = _median(lambda e=enc: (recipe._RECIPES.pop(e, None),
                                                  pickle.dumps(e))[1], args.repeat)

            def fresh(d: bytes = data) -> Any:
                recipe._REBUILT.clear()
                return pickle.loads(d)

            t_load, back = _median(fresh, args.repeat)
            t_again, again = _median(lambda d=data: pickle.loads(d), args.repeat)
            assert again is back and back.fingerprint() == ref.fingerprint()
            assert back.encode_openai(msgs, add_generation_prompt=True) == ids
            print(f"  {label:17s} {len(data):>10,d} bytes  dumps {t_dump:.3f}s  "
                  f"loads {t_load:.3f}s ({t_load / t_zoo:.2f}x the zoo-name build)  "
                  f"loads again {t_again * 1000:.1f}ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
