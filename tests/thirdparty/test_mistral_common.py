"""Differential test: lvt's ``mistral-v7`` format vs ``mistral-common``'s
``encode_chat_completion`` (the reference renderer of Mistral's models), token for token.

Tokenizer: the Tekken vocabulary shipped in ``mistral-common`` with the v7+ control-token
names (``refdata.tekken_v13_file``), rendered by ``mistral-common``'s v13 instruct tokenizer
(tool calls ``[TOOL_CALLS]name[ARGS]args``, results ``[TOOL_RESULTS]…[/TOOL_RESULTS]``) and
by lvt through a ``tokenizers`` conversion of the same file.

Intended differences, asserted exactly:

1. lvt models ``[/INST]`` as the assistant header, so *every* assistant message starts with
   it; after a tool result ``mistral-common`` writes the answer with no ``[/INST]``. So:
   lvt ids with each ``[/INST]`` that directly follows ``[/TOOL_RESULTS]`` removed ==
   mistral-common ids.
2. Tool definitions: ``mistral-common`` writes ``[AVAILABLE_TOOLS]json[/AVAILABLE_TOOLS]`` right
   before the ``[INST]`` of the first user message (v13); lvt has no slot for them and writes
   them as system-prompt text. So: mistral-common ids with the ``[AVAILABLE_TOOLS]…`` span
   removed == its ids without tools == lvt ids without tools (after difference 1).

Everything else (BOS, system prompt, user text that spells control tokens, multi-turn,
unicode, tool calls with arguments re-serialised as ``json.dumps(..., ensure_ascii=False)``)
is identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import refdata

pytest.importorskip("mistral_common")


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


def _tc(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def u(s: str) -> dict[str, Any]:
    return {"role": "user", "content": s}


def a(s: str) -> dict[str, Any]:
    return {"role": "assistant", "content": s}


CORPUS: list[list[dict[str, Any]]] = [
    [u("Hi"), a("Hello!")],
    [{"role": "system", "content": "Be brief."}, u("Capital of France?"), a("Paris.")],
    [u("One"), a("1"), u("Two"), a("2"), u("Three"), a("3")],
    [u("Text with [INST] and </s> and [TOOL_CALLS] inside"), a("Plain text: [/INST] <s>")],
    [u("请用一句话解释机器学习。"), a("机器学习是从数据中学习规律的方法。 👍")],
    [u("Code?"), a("```python\ndef f(x):\n    return x + 1\n```")],
    [
        {"role": "system", "content": "Use tools."},
        u("Weather in Oslo?"),
        _tc(_call("abcdefghi", "get_weather", {"city": "Oslo"})),
        {"role": "tool", "tool_call_id": "abcdefghi", "content": '{"temp_c": 7}'},
        a("It is 7 °C in Oslo."),
    ],
    [
        u("Paris and Rome?"),
        _tc(
            _call("aaaaaaaaa", "get_weather", {"city": "Paris"}),
            _call("bbbbbbbbb", "get_weather", {"city": "Rome"}),
        ),
        {"role": "tool", "tool_call_id": "aaaaaaaaa", "content": "16"},
        {"role": "tool", "tool_call_id": "bbbbbbbbb", "content": "21"},
        a("Paris 16, Rome 21."),
        u("Thanks"),
        a("You're welcome."),
    ],
    [
        u("München?"),
        _tc(_call("ccccccccc", "get_weather", {"city": "München"})),
        {"role": "tool", "tool_call_id": "ccccccccc", "content": "bewölkt"},
        a("Bewölkt."),
    ],
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.fixture(scope="module")
def mistral(ref_cache: Path) -> Any:
    from mistral_common.protocol.instruct.validator import ValidationMode
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    mt = MistralTokenizer.from_file(
        str(refdata.tekken_v13_file(ref_cache)), mode=ValidationMode.finetuning
    )
    assert type(mt.instruct_tokenizer).__name__ == "InstructTokenizerV13"
    return mt


@pytest.fixture(scope="module")
def lvt_mistral(tekken_tok: Any) -> Any:
    from lvt.encoder import ChatEncoder

    return ChatEncoder.from_tokenizer(tekken_tok, format="mistral-v7")


def _reference(mt: Any, msgs: list[dict[str, Any]], tools: Any = None) -> list[int]:
    from mistral_common.protocol.instruct.request import ChatCompletionRequest

    return list(
        mt.encode_chat_completion(ChatCompletionRequest.from_openai(msgs, tools=tools)).tokens
    )


def _drop_inst_after_tool_results(ids: list[int], tok: Any) -> list[int]:
    end_results, end_inst = tok.token_to_id("[/TOOL_RESULTS]"), tok.token_to_id("[/INST]")
    return [
        t for i, t in enumerate(ids) if not (t == end_inst and i > 0 and ids[i - 1] == end_results)
    ]


def test_same_control_ids(tekken_tok: Any, mistral: Any) -> None:
    inner = mistral.instruct_tokenizer.tokenizer
    for s in (
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
    ):
        assert tekken_tok.token_to_id(s) == inner.get_special_token(s), s


@pytest.mark.parametrize("i", range(len(CORPUS)))
def test_token_for_token(i: int, mistral: Any, lvt_mistral: Any, tekken_tok: Any) -> None:
    msgs = CORPUS[i]
    ref = _reference(mistral, msgs)
    ours = lvt_mistral.encode_openai(msgs).ids.tolist()
    has_tool_result = any(m["role"] == "tool" for m in msgs)
    if has_tool_result:
        # Difference 1, and nothing else.
        assert ours != ref
        assert _drop_inst_after_tool_results(ours, tekken_tok) == ref
    else:
        assert ours == ref


def test_available_tools_block(mistral: Any, lvt_mistral: Any, tekken_tok: Any) -> None:
    msgs = CORPUS[6]
    with_tools = _reference(mistral, msgs, TOOLS)
    begin, end = (
        tekken_tok.token_to_id("[AVAILABLE_TOOLS]"),
        tekken_tok.token_to_id("[/AVAILABLE_TOOLS]"),
    )
    assert with_tools.count(begin) == 1 and with_tools.count(end) == 1
    i, j = with_tools.index(begin), with_tools.index(end)
    # The block sits right before the [INST] of the first user message.
    assert with_tools[j + 1] == tekken_tok.token_to_id("[INST]")
    stripped = with_tools[:i] + with_tools[j + 1 :]
    assert stripped == _reference(mistral, msgs)
    assert stripped == _drop_inst_after_tool_results(
        lvt_mistral.encode_openai(msgs).ids.tolist(), tekken_tok
    )
    # lvt writes the definitions into the system prompt as text instead.
    text = tekken_tok.decode(
        lvt_mistral.encode_openai(msgs, tools=TOOLS).ids.tolist(), skip_special_tokens=False
    )
    assert "get_weather" in text.split("[/SYSTEM_PROMPT]")[0]


def test_lvt_parses_reference_render(mistral: Any, lvt_mistral: Any, tekken_tok: Any) -> None:
    """What mistral-common renders (without tool results) parses back with lvt."""
    for msgs in CORPUS:
        if any(m["role"] == "tool" for m in msgs):
            continue
        conv = lvt_mistral.parse(_reference(mistral, msgs))
        assert lvt_mistral.encode(conv).ids.tolist() == _reference(mistral, msgs)
