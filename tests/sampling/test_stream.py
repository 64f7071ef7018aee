"""``CompletionStream``: fed one token at a time, the deltas never take text back, calls come
once complete, and everything streamed adds up to ``read_completion`` of all the ids."""

from __future__ import annotations

from typing import Any

import pytest

from lvt.errors import ArgumentError
from lvt.sampling import CompletionStream

SAMPLES = {
    "qwen3": "<think>\nLet me see.\n</think>\n\nSure.\n<tool_call>\n{\"name\": \"f\", \"arguments\""
             ": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n"
             "</tool_call><|im_end|>",
    "llama3.1": '{"name": "f", "parameters": {"x": 1}}<|eot_id|>',
    "deepseek-r1": "Thinking first.\n</think>\n\nThe answer is 4.<｜end▁of▁sentence｜>",  # noqa: RUF001
    "gpt-oss": "<|channel|>analysis<|message|>Need data.<|end|><|start|>assistant<|channel|>"
               "commentary<|message|>Checking.<|end|><|start|>assistant to=functions.f"
               "<|channel|>commentary json<|message|>{\"x\": 1}<|call|>",
    "mistral": "[THINK]Two steps.[/THINK]Sure.[TOOL_CALLS]f[ARGS]{\"x\": 1}[TOOL_CALLS]g[ARGS]{}"
               "</s>",
    "gemma3": "Hello there,\nfriend.<end_of_turn>",
}


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_token_by_token_adds_up_to_the_final_reading(enc: Any, ids: Any, fmt: str) -> None:
    e = enc(fmt)
    sample = ids(e, SAMPLES[fmt])
    s = CompletionStream(e)
    content = reasoning = ""
    calls: list[Any] = []
    seen: list[tuple[int, str]] = []  # (token index, what arrived)
    for k, t in enumerate(sample):
        d = s.feed([t])
        content, reasoning = content + d.content, reasoning + d.reasoning
        calls += d.tool_calls
        for kind, new in (("content", d.content), ("reasoning", d.reasoning)):
            if new:
                seen.append((k, kind))
        seen += [(k, "call")] * len(d.tool_calls)
    final, last = s.finish()
    assert final == e.read_completion(sample)
    content, reasoning = content + last.content, reasoning + last.reasoning
    calls += last.tool_calls
    assert (content, reasoning or None, tuple(calls)) == (final.content, final.reasoning,
                                                          final.tool_calls)
    # text streams before the turn ends, where the format allows (not Llama's JSON call)
    if fmt != "llama3.1":
        assert any(k < len(sample) - 1 for k, _ in seen), seen


def test_llama_json_is_held_until_it_is_a_call(enc: Any, ids: Any) -> None:
    """Text that starts with ``{`` may still become a JSON call: nothing streams as content,
    and the call comes with the stop token, which closes it."""
    e = enc("llama3.1")
    s = CompletionStream(e)
    sample = ids(e, SAMPLES["llama3.1"])
    deltas = [s.feed([t]) for t in sample]
    assert all(d.content == "" and not d.tool_calls for d in deltas[:-1])
    assert [(c.name, c.arguments) for c in deltas[-1].tool_calls] == [("f", {"x": 1})]
    final, last = s.finish()
    assert last.tool_calls == () and final.content == ""


def test_feed_rejects_what_is_not_ids(enc: Any) -> None:
    s = CompletionStream(enc("qwen3"))
    with pytest.raises(ArgumentError):
        s.feed([1.5])
