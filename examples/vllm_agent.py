"""A token-in/token-out tool-use rollout on vLLM with lvt (needs a GPU and ``pip install vllm``;
not run in CI, where ``tests/sampling/test_rollout.py`` drives the same loop with a scripted
engine).

    python examples/vllm_agent.py Qwen/Qwen3-0.6B --format qwen3

vLLM samples from the ids lvt renders (``prompt_token_ids``, never a Jinja template) and stops
on the format's stop ids; lvt reads the tool calls out of the sampled ids, runs the tools, keeps
the sampled ids verbatim in the history and checks, turn by turn, that what vLLM saw and sampled
is a prefix of the next render. The result's ``encoded`` row is what a trainer learns from.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import lvt
from lvt.sampling import ReadCall, run_agent

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current temperature in a city, in °C",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def get_weather(call: ReadCall) -> Any:
    """The tool: a fixed answer, or the reason the call could not run."""
    if not call.valid:
        return {"error": f"could not read the arguments: {call.raw!r}"}
    return {"city": call.arguments.get("city"), "temp_c": 3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a Hugging Face model id or directory vLLM can load")
    ap.add_argument("--format", default=None, help="lvt format (default: detected)")
    ap.add_argument("--max-tokens", type=int, default=512)
    args = ap.parse_args()

    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams

    hf_tok = AutoTokenizer.from_pretrained(args.model)
    enc = (lvt.ChatEncoder.from_tokenizer(hf_tok, format=args.format) if args.format
           else lvt.ChatEncoder.from_hf(hf_tok))
    llm = LLM(model=args.model)

    def generate(prompt_ids: list[int], params: dict[str, Any]) -> list[int]:
        out = llm.generate({"prompt_token_ids": prompt_ids}, SamplingParams(**params),
                           use_tqdm=False)
        return list(out[0].outputs[0].token_ids)  # vLLM keeps the stop token in token_ids

    r = run_agent(enc, [{"role": "user", "content": "What is the weather in Oslo?"}],
                  generate, get_weather, tools=TOOLS,
                  params={"max_tokens": args.max_tokens, "temperature": 0.7})
    for k, t in enumerate(r.turns):
        print(f"turn {k}: {t.completion.termination.reason}, canonical={t.completion.canonical}")
        print(json.dumps(t.completion.to_openai(), ensure_ascii=False, indent=2))
    print(f"stop: {r.stop}; trainer row: {len(r.encoded.ids)} tokens, "
          f"{int(r.encoded.mask.sum())} learned (exactly the sampled ids)")


if __name__ == "__main__":
    main()
