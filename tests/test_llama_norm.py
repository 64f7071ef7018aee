"""``Llama.normL`` (``Verified/Spec/LlamaNorm.lean``), the normalisation under which the Lean
proves Llama 3.1's render injective (``lowerInjectiveL``), against the official template
through ``transformers`` on Llama 3.1's vocabulary: conversations equal under it render to the
same ids in lvt and in the template, ``encode_batch`` reports them as a collision, and a change
it does not forget changes the ids."""

from __future__ import annotations

from typing import Any

import pytest

import lvt
from lvt import zoo
from parity.templates import zoo_hf_tokenizer

FMT = "llama3.1"


@pytest.fixture(scope="module")
def hf() -> Any:
    return zoo_hf_tokenizer("llama3.1", lvt.FORMATS[FMT].template)


@pytest.fixture(scope="module")
def enc() -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("llama3.1"), FMT)


def test_what_norm_forgets_renders_alike_and_nothing_else_does(hf: Any,
                                                               enc: lvt.ChatEncoder) -> None:
    """Content ``| trim``; no, empty and blank content alike (a blank leading system message
    is none); a call message's content and call id, which the template does not write."""

    def ids(msgs: list[dict[str, Any]], tools: Any = None) -> list[int]:
        got = enc.encode_openai(msgs, tools, False).ids.tolist()
        want = hf.apply_chat_template(msgs, tools=tools, tokenize=True, return_dict=False,
                                      date_string="26 Jul 2024")
        assert got == list(want), msgs
        return got

    q = {"role": "user", "content": "q"}
    answers = [ids([q, {"role": "assistant", "content": a}]) for a in ("a", " a", "a \n")]
    assert answers[0] == answers[1] == answers[2]
    assert ids([q, {"role": "assistant", "content": "a b"}]) != \
        ids([q, {"role": "assistant", "content": "a  b"}])  # inner whitespace is written
    systems = [ids([{"role": "system", "content": s}, q]) for s in ("", "  ")] + [ids([q])]
    assert systems[0] == systems[1] == systems[2]
    assert ids([{"role": "system", "content": "S"}, q]) != systems[0]
    weather = {"type": "function", "function": {"name": "get", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}
    calls = [ids([q, {"role": "assistant", "content": c, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "get", "arguments": {"city": "Oslo"}}}
    ]}], [weather]) for c, i in (("", "call_1"), ("Checking.", "call_2"))]
    assert calls[0] == calls[1]
    convs = [enc.from_openai(m, None, False) for m in (
        [q, {"role": "assistant", "content": "a"}], [q, {"role": "assistant", "content": " a "}])]
    with pytest.warns(lvt.CollisionWarning):
        enc.encode_batch(convs)
