"""``lvt.sampling.run_agent`` with a scripted engine: the engine gets ``list[int]`` prompts and
the format's stop ids, returns what models really sample (canonical and not), lvt reads the
calls, the tools run, and the trainer row learns exactly the sampled ids. The run-time extension
check fails loudly where the format's history is not append-only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lvt.errors import ConversationError
from lvt.sampling import ReadCall
from lvt.sampling.rollout import RolloutError, run_agent

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
ASK = [{"role": "user", "content": "Weather in Oslo?"}]


class Engine:
    """Returns the scripted samples in order and records what it was asked."""

    def __init__(self, samples: list[list[int]]) -> None:
        self.samples = samples
        self.prompts: list[list[int]] = []
        self.params: list[dict[str, Any]] = []

    def __call__(self, prompt_ids: list[int], params: dict[str, Any]) -> list[int]:
        assert type(prompt_ids) is list and all(type(t) is int for t in prompt_ids)
        self.prompts.append(prompt_ids)
        self.params.append(params)
        return self.samples[len(self.prompts) - 1]


def _tool(calls: list[ReadCall]) -> Any:
    def run(c: ReadCall) -> Any:
        calls.append(c)
        return {"temp_c": 3} if c.valid else f"error: bad arguments {c.raw!r}"
    return run


def _learned(r: Any) -> list[int]:
    e = r.encoded
    return [int(t) for t in np.asarray(e.ids)[np.asarray(e.mask) == 1]]


CASES = {
    "qwen3": ["<think>\nNeed data.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
              "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>",
              "<think>\nGot it.\n</think>\n\nIt is 3 °C.<|im_end|>"],
    # compact JSON: not what the template writes, kept verbatim all the same
    "qwen2.5": ['<tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>'
                "<|im_end|>", "It is 3 °C.<|im_end|>"],
    "qwen3-2507-thinking": ["Need data.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
                            "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>",
                            "Got it.\n</think>\n\nIt is 3 °C.<|im_end|>"],
    # QwQ: sampled after '<think>\n' as Thinking-2507, but its text render drops reasoning
    "qwq": ["Need data.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
            "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>",
            "Got it.\n</think>\n\nIt is 3 °C.<|im_end|>"],
    "llama3.1": ['{"name":"get_weather","parameters":{"city":"Oslo"}}<|eot_id|>',
                 "It is 3 °C.<|eot_id|>"],
    "deepseek-r1": ["Need data.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather"  # noqa: RUF001
                    '<｜tool▁sep｜>{"city": "Oslo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'  # noqa: RUF001
                    "<｜end▁of▁sentence｜>", "It is 3 °C.<｜end▁of▁sentence｜>"],  # noqa: RUF001
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_agent_loop_trains_on_exactly_the_sampled_ids(enc: Any, ids: Any, fmt: str) -> None:
    e = enc(fmt)
    samples = [ids(e, s) for s in CASES[fmt]]
    engine, ran = Engine(samples), []
    r = run_agent(e, ASK, engine, _tool(ran), tools=TOOLS, params={"max_tokens": 64})
    assert r.stop == "answer" and len(r.turns) == 2
    assert [(c.name, c.arguments) for c in ran] == [("get_weather", {"city": "Oslo"})]
    assert engine.params[0] == {"max_tokens": 64, "stop_token_ids": list(e.stop_ids)}
    # what the engine saw and sampled is a prefix of the next prompt and of the trainer row
    assert engine.prompts[1][:len(engine.prompts[0]) + len(samples[0])] == (engine.prompts[0]
                                                                           + samples[0])
    row = [int(t) for t in r.encoded.ids]
    for p, s in zip(engine.prompts, samples, strict=True):
        assert row[:len(p) + len(s)] == p + s
    # the learned tokens are the sampled ids, stop tokens included, and nothing else
    assert r.turns[0].completion.canonical == (fmt not in ("qwen2.5", "llama3.1",
                                                           "deepseek-r1", "qwq"))
    assert _learned(r) == samples[0] + samples[1]
    assert r.turns[1].completion.content == "It is 3 °C."


def test_llama_python_tag_sample_cannot_be_history(enc: Any, ids: Any) -> None:
    """Llama 3.1's format has no ``<|python_tag|>``/``<|eom_id|>`` turn: such a sample is read
    (the tool runs) but cannot stay verbatim in the history, and the next render says why."""
    e = enc("llama3.1")
    sample = ids(e, '<|python_tag|>{"name": "get_weather", "arguments": {"city": "Oslo"}}'
                    "<|eom_id|>")
    ran: list[ReadCall] = []
    with pytest.raises(ConversationError, match="control id 128010"):
        run_agent(e, ASK, Engine([sample]), _tool(ran), tools=TOOLS)
    assert [(c.name, c.arguments) for c in ran] == [("get_weather", {"city": "Oslo"})]


def test_results_that_name_their_call_need_a_canonical_call(enc: Any, ids: Any) -> None:
    """Mistral and harmony write the call in its results: a canonical call turn is typed (same
    ids, checked), a non-canonical one is refused with the turn and the reason."""
    e = enc("mistral")
    good = ids(e, '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}, '
                  '"id": "abcDEF123"}]</s>')
    r = run_agent(e, ASK, Engine([good, ids(e, "3 °C.</s>")]), _tool([]), tools=TOOLS)
    assert r.stop == "answer" and [int(t) for t in r.encoded.ids][
        len(r.turns[0].prompt_ids):][:len(good)] == good
    bad = ids(e, '[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Oslo"}}]</s>')
    with pytest.raises(RolloutError, match=r"turn 0.*canonically"):
        run_agent(e, ASK, Engine([bad]), _tool([]), tools=TOOLS)


CALL_OSS = ('<|channel|>analysis<|message|>Need data.<|end|><|start|>assistant to=functions.'
            'get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}<|call|>')


def test_gpt_oss_exact_history_rewrite_is_caught(enc: Any, ids: Any) -> None:
    """gpt-oss drops a call's analysis once a final answer follows: the exact format's last
    render does not extend what the engine sampled, and the loop says so; the stable format
    keeps it."""
    final = "<|channel|>final<|message|>3 °C.<|return|>"
    e = enc("gpt-oss")
    with pytest.raises(RolloutError, match=r"turn 1.*-stable"):
        run_agent(e, ASK, Engine([ids(e, CALL_OSS), ids(e, final)]), _tool([]), tools=TOOLS)
    s = enc("gpt-oss-stable")
    samples = [ids(s, CALL_OSS), ids(s, final)]
    r = run_agent(s, ASK, Engine(samples), _tool([]), tools=TOOLS)
    row = [int(t) for t in r.encoded.ids]
    assert row[:len(r.turns[1].prompt_ids) + len(samples[1])] == (r.turns[1].prompt_ids
                                                                   + samples[1])
    assert r.turns[0].completion.reasoning == "Need data."


def test_length_and_max_turns(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    r = run_agent(e, ASK, Engine([ids(e, "<think>\nHmm, let me")]), _tool([]), tools=TOOLS)
    assert r.stop == "length" and len(r.turns) == 1
    assert _learned(r) == [*ids(e, "<think>\nHmm, let me"), e.stop_ids[0]]
    loop = ids(e, CASES["qwen3"][0])
    engine = Engine([loop] * 3)
    r = run_agent(e, ASK, engine, _tool([]), tools=TOOLS, max_turns=3)
    assert r.stop == "max_turns" and len(engine.prompts) == 3
    assert _learned(r) == loop * 3


def test_vllm_example_loads_and_its_tool_reads_calls(enc: Any, ids: Any) -> None:
    """``examples/vllm_agent.py`` imports without vLLM (it is run on a GPU machine), and its
    tool answers a valid and an invalid call."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "vllm_agent.py"
    spec = importlib.util.spec_from_file_location("vllm_agent", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    e = enc("qwen3")
    good, bad = e.read_completion(ids(e, CASES["qwen3"][0])).tool_calls[0], ReadCall(
        "get_weather", None, "{city", "abcdefghi", 0, 1)
    assert mod.get_weather(good) == {"city": "Oslo", "temp_c": 3}
    assert "error" in mod.get_weather(bad)


def test_async_driver_is_the_same_loop(enc: Any, ids: Any) -> None:
    """``arun_agent`` awaits an async engine and tool, and gives the rollout ``run_agent``
    gives on the same samples."""
    import asyncio

    e = enc("qwen3")
    samples = [ids(e, s) for s in CASES["qwen3"]]

    async def agenerate(prompt_ids: list[int], params: dict[str, Any]) -> list[int]:
        await asyncio.sleep(0)
        return samples[0] if "<tool_response>" not in e.tokenizer.decode(
            prompt_ids, skip_special_tokens=False) else samples[1]

    async def aexecute(c: ReadCall) -> Any:
        return {"temp_c": 3}

    from lvt.sampling import arun_agent

    r = asyncio.run(arun_agent(e, ASK, agenerate, aexecute, tools=TOOLS))
    s = run_agent(e, ASK, Engine(samples), _tool([]), tools=TOOLS)
    assert r.stop == s.stop == "answer" and r.turns[1].tool_results == ()
    assert r.encoded.ids.tolist() == s.encoded.ids.tolist()
    assert r.turns[0].tool_results == ({"temp_c": 3},)
