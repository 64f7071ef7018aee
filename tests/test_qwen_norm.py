"""``Qwen.normQ`` (``Verified/Spec/QwenNorm.lean``), the normalisation under which the Lean
proves the Qwen structure's render injective for every entry (``lowerInjectiveQ``), against
the official templates through ``transformers`` on their real vocabularies: conversations
equal under it render to the same ids in lvt and in the template, ``encode_batch`` reports
them as a collision, and a change it does not forget changes the ids."""

from __future__ import annotations

from typing import Any

import pytest

import lvt
from lvt import zoo
from parity.templates import zoo_hf_tokenizer

_HF: dict[str, Any] = {}
_ENC: dict[str, lvt.ChatEncoder] = {}


def ids(fmt: str, msgs: list[dict[str, Any]], gen: bool = False, tools: Any = None,
        **kw: Any) -> list[int]:
    """lvt's ids, asserted equal to the entry's own template's."""
    spec = lvt.FORMATS[fmt]
    if fmt not in _ENC:
        _HF[fmt] = zoo_hf_tokenizer(spec.tokenizer, spec.template)
        _ENC[fmt] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(spec.tokenizer), fmt)
    got = _ENC[fmt].encode_openai(msgs, tools, gen).ids.tolist()
    # transformers drops a None key, which the template then reads: give it ""
    shown = [m if m.get("content", "") is not None else {**m, "content": ""} for m in msgs]
    want = _HF[fmt].apply_chat_template(shown, tools=tools, add_generation_prompt=gen,
                                        tokenize=True, return_dict=False, **kw)
    assert got == list(want), (fmt, msgs)
    return got


Q = {"role": "user", "content": "q"}


def test_the_default_system_prompt_is_made_explicit() -> None:
    """Qwen2.5 writes its default system text without a system message: no system message and
    that text as the system message are one conversation; another text is not."""
    default = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    none = ids("qwen2.5", [Q])
    assert ids("qwen2.5", [{"role": "system", "content": default}, Q]) == none
    assert ids("qwen2.5", [{"role": "system", "content": default + " "}, Q]) != none
    # Qwen3 has no default: an empty system message writes an empty system turn
    assert ids("qwen3", [{"role": "system", "content": ""}, Q]) != ids("qwen3", [Q])


def test_no_and_empty_content_and_call_ids_alike() -> None:
    blank = [ids("qwen2.5", [Q, {"role": "assistant", "content": c}, Q]) for c in ("", None)]
    assert blank[0] == blank[1]
    assert ids("qwen2.5", [Q, {"role": "assistant", "content": " "}, Q]) != blank[0]
    calls = [ids("qwen2.5", [Q, {"role": "assistant", "content": "", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]}])
        for i in ("call_1", "call_2")]
    assert calls[0] == calls[1]


def test_reasoning_as_the_history_policy_writes_it() -> None:
    """Qwen3 exact: reasoning before the last query is dropped (two conversations alike), after
    it kept with its newlines stripped (``strip('\\n')``)."""
    r = {"role": "assistant", "content": "a", "reasoning_content": "r"}
    early = [ids("qwen3", [Q, m, Q]) for m in (r, {"role": "assistant", "content": "a"})]
    assert early[0] == early[1]
    late = [ids("qwen3", [Q, {**r, "reasoning_content": x}]) for x in ("r", "\nr\n", "s")]
    assert late[0] == late[1] != late[2]


def test_a_batch_reports_what_normq_identifies() -> None:
    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen2.5"), "qwen2.5")
    default = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    convs = [enc.from_openai(m, None, False) for m in ([Q], [{"role": "system",
                                                              "content": default}, Q])]
    with pytest.warns(lvt.CollisionWarning):
        enc.encode_batch(convs)


def test_qwq_keeps_what_its_loop_writes() -> None:
    """``Qwen.normQwQ``: QwQ never writes reasoning, strips an answer's leading newlines but in
    the last message, and writes an empty system text before the tool preamble when there is
    no system message."""
    r = {"role": "assistant", "content": "a", "reasoning_content": "r"}
    assert ids("qwq", [Q, r, Q]) == ids("qwq", [Q, {"role": "assistant", "content": "a"}, Q])
    early = [ids("qwq", [Q, {"role": "assistant", "content": c}, Q]) for c in ("a", "\n\na")]
    assert early[0] == early[1]
    last = [ids("qwq", [Q, {"role": "assistant", "content": c}]) for c in ("a", "\n\na")]
    assert last[0] != last[1]
    tool = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert ids("qwq", [Q], tools=tool) == ids("qwq", [{"role": "system", "content": ""}, Q],
                                              tools=tool)
