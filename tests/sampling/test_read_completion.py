"""``ChatEncoder.read_completion`` on what models really sample, per family, with the real
tokenizers: canonical turns, the non-canonical shapes serving engines' parsers accept (compact
JSON, XML calls, ``<|python_tag|>`` and ``;``-separated calls, a missing ``<think>``, harmony's
``<|constrain|>`` and preambles, ``[THINK]`` and every Mistral call syntax), malformed and
truncated output. Expected values are written by hand from the formats' documented syntax.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from lvt.errors import ArgumentError
from lvt.sampling import call_id

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


def _calls(c: Any) -> list[tuple[str, Any]]:
    return [(k.name, k.arguments) for k in c.tool_calls]


# -- Qwen ------------------------------------------------------------------------------------

def test_qwen3_canonical_reasoning_and_call(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    c = e.read_completion(ids(e, "<think>\nLook it up.\n</think>\n\n" + CALL + "<|im_end|>"))
    assert c.reasoning == "Look it up."
    assert c.content == ""
    assert _calls(c) == [("get_weather", {"city": "Oslo"})]
    assert c.termination.reason == "stop" and c.termination.stop_id == e.stop_ids[0]
    assert c.canonical and c.ok and c.problems == ()


def test_qwen3_compact_json_is_read_but_not_canonical(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    c = e.read_completion(ids(e, '<tool_call>{"name":"f","arguments":{}}</tool_call>'
                                 '<tool_call>{"name": "g", "arguments": "{\\"n\\": 2}"}'
                                 "</tool_call><|im_end|>"))
    assert _calls(c) == [("f", {}), ("g", {"n": 2})]  # arguments given as a JSON string too
    assert c.tool_calls[1].raw == '{"n": 2}'
    assert c.termination.reason == "stop" and not c.canonical and c.problems == ()
    assert [k.id for k in c.tool_calls] == [call_id(0), call_id(1)]


def test_qwen_xml_function_calls(enc: Any, ids: Any) -> None:
    """Qwen3-Coder / Qwen3.5 syntax: parameters typed by the tool schema when given."""
    e = enc("qwen3")
    xml = ("<tool_call>\n<function=search>\n<parameter=query>\n42\n</parameter>\n"
           "<parameter=limit>\n5\n</parameter>\n<parameter=opts>\n{\"a\": [1]}\n</parameter>\n"
           "</function>\n</tool_call><|im_end|>")
    c = e.read_completion(ids(e, xml))  # without a schema every value is text
    assert _calls(c) == [("search", {"query": "42", "limit": "5", "opts": '{"a": [1]}'})]
    tools = [{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"},
                                         "limit": {"type": "integer"},
                                         "opts": {"type": "object"}}}}}]
    c = e.read_completion(ids(e, xml), tools)
    assert _calls(c) == [("search", {"query": "42", "limit": 5, "opts": {"a": [1]}})]
    assert c.termination.reason == "stop" and c.problems == ()


def test_qwen_malformed_call_keeps_raw_and_says_where(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    sample = ids(e, "Sure.\n<tool_call>\n{name: get_weather}\n</tool_call><|im_end|>")
    at = sample.index(e.tokenizer.token_to_id("<tool_call>"))
    c = e.read_completion(sample)
    assert c.content == "Sure."
    (k,) = c.tool_calls
    assert not k.valid and k.arguments is None and k.raw == "{name: get_weather}"
    assert c.termination.reason == "malformed" and c.termination.where == at
    assert "not a JSON object" in (c.termination.why or "")
    assert not c.ok and not c.canonical


def test_qwen_truncated_by_length(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    c = e.read_completion(ids(e, '<think>\nStep 1\n</think>\n\n<tool_call>\n{"name": "f", "argu'))
    assert c.termination.reason == "length" and c.termination.stop_id is None
    assert c.reasoning == "Step 1"
    assert [p.why for p in c.problems] == ["the tool call is not closed",
                                           "the tool call is not a JSON object"]
    c = e.read_completion(ids(e, "<think>\nStill thinking"))
    assert c.reasoning == "Still thinking" and c.content == "" and not c.tool_calls
    assert c.termination.reason == "length"


def test_qwen_text_spelling_a_control_token_is_text(enc: Any, ids: Any) -> None:
    """``<tool_call>`` sampled as ordinary tokens is text, as the render of that text is."""
    e = enc("qwen3")
    sample = ids(e, "<tool", '_call>{"name": "f", "arguments": {}}</tool', "_call>",
                 "<|im_end|>")
    assert e.tokenizer.token_to_id("<tool_call>") not in sample
    c = e.read_completion(sample)
    assert c.tool_calls == ()
    assert c.content == '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert c.termination.reason == "stop" and c.problems == ()


def test_qwen_stops_and_what_follows(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    eot = e.tokenizer.token_to_id("<|endoftext|>")
    assert e.stop_ids == (e.tokenizer.token_to_id("<|im_end|>"), eot)
    c = e.read_completion(ids(e, "Hi<|endoftext|>"))
    assert c.termination.reason == "stop" and c.termination.stop_id == eot
    assert c.content == "Hi" and not c.canonical  # the render writes <|im_end|>
    sample = ids(e, "Hi<|im_end|>more text")
    c = e.read_completion(sample)
    assert c.content == "Hi"
    assert c.termination.reason == "malformed" and c.termination.where == 2
    assert c.ids == tuple(sample)  # the ids are kept as given


def test_qwen3_thinking_2507_prompt_opens_the_block(enc: Any, ids: Any) -> None:
    e = enc("qwen3-2507-thinking")
    c = e.read_completion(ids(e, "Let me see.\n</think>\n\nIt is 3.<|im_end|>"))
    assert (c.reasoning, c.content) == ("Let me see.", "It is 3.")
    assert c.canonical and c.ok
    # the same output from Qwen3 (whose prompt opens nothing) is read the same way
    c = enc("qwen3").read_completion(ids(e, "Let me see.\n</think>\n\nIt is 3.<|im_end|>"))
    assert (c.reasoning, c.content) == ("Let me see.", "It is 3.") and not c.canonical


def test_qwen_stray_control_token_is_reported(enc: Any, ids: Any) -> None:
    e = enc("qwen2.5")
    c = e.read_completion(ids(e, "A<|im_start|>B<|im_end|>"))
    assert c.content == "AB"
    assert c.termination.reason == "malformed" and c.termination.where == 1
    assert "<|im_start|>" in (c.termination.why or "")


# -- Llama -----------------------------------------------------------------------------------

def test_llama_json_call_and_text(enc: Any, ids: Any) -> None:
    e = enc("llama3.1")
    c = e.read_completion(ids(e, '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
                                 "<|eot_id|>"))
    assert _calls(c) == [("get_weather", {"city": "Oslo"})] and c.content == ""
    assert c.canonical and c.ok
    c = e.read_completion(ids(e, "Hello there.<|eot_id|>"))
    assert c.content == "Hello there." and not c.tool_calls and c.canonical
    # compact JSON is a call to vLLM and to lvt's reader, but the template writes ", " and
    # ": ": lvt's strict reading is text, so it is not canonical
    c = e.read_completion(ids(e, '{"name":"f","parameters":{}}<|eot_id|>'))
    assert _calls(c) == [("f", {})] and c.ok and not c.canonical


def test_llama_python_tag_and_semicolon_separated_calls(enc: Any, ids: Any) -> None:
    """Two ``;``-separated calls are two calls (not one call with broken arguments)."""
    e = enc("llama3.1")
    eom = e.tokenizer.token_to_id("<|eom_id|>")
    c = e.read_completion(ids(e, '<|python_tag|>{"name": "get_weather", "arguments": '
                                 '{"city": "Oslo"}}; {"name": "get_weather", "arguments": '
                                 '{"city": "Bergen"}}<|eom_id|>'))
    assert _calls(c) == [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Bergen"})]
    assert c.termination.reason == "stop" and c.termination.stop_id == eom
    assert eom in e.stop_ids and c.problems == ()


def test_llama_builtin_tool_call(enc: Any, ids: Any) -> None:
    e = enc("llama3.1")
    c = e.read_completion(ids(e, '<|python_tag|>brave_search.call(query="weather in Oslo", '
                                 "n=3)<|eom_id|>"))
    assert _calls(c) == [("brave_search", {"query": "weather in Oslo", "n": 3})]
    c = e.read_completion(ids(e, "<|python_tag|>print(1 +<|eom_id|>"))
    assert not c.tool_calls[0].valid and c.termination.reason == "malformed"


def test_llama_cut_json_call(enc: Any, ids: Any) -> None:
    e = enc("llama3.1")
    c = e.read_completion(ids(e, '{"name": "get_weather", "parameters": {"city": "Os'))
    assert c.termination.reason == "length" and not c.tool_calls
    assert c.problems[0].why.startswith("text that begins as a JSON call")


# -- DeepSeek --------------------------------------------------------------------------------

DS_V3 = ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"  # noqa: RUF001
         '```json\n{"city": "Oslo"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>')  # noqa: RUF001


def test_deepseek_without_opening_think(enc: Any, ids: Any) -> None:
    e = enc("deepseek-r1")
    c = e.read_completion(ids(e, "Thinking.\n</think>\n\nThe answer is 4.<｜end▁of▁sentence｜>"))  # noqa: RUF001
    assert (c.reasoning, c.content) == ("Thinking.", "The answer is 4.")
    assert c.termination.reason == "stop" and c.problems == () and not c.canonical
    c = e.read_completion(ids(e, "<think>\nThinking.\n</think>\n\nThe answer is 4."
                                 "<｜end▁of▁sentence｜>"))  # noqa: RUF001
    assert (c.reasoning, c.content) == ("Thinking.", "The answer is 4.")
    assert c.ok and not c.canonical  # the training render drops reasoning: verbatim only
    c = e.read_completion(ids(e, "The answer is 4.<｜end▁of▁sentence｜>"))  # noqa: RUF001
    assert c.reasoning is None and c.canonical


def test_deepseek_v3_and_v31_call_syntax(enc: Any, ids: Any) -> None:
    e = enc("deepseek-r1")
    c = e.read_completion(ids(e, "<think>\nx\n</think>\n\n" + DS_V3 + "<｜end▁of▁sentence｜>"))  # noqa: RUF001
    assert _calls(c) == [("get_weather", {"city": "Oslo"})] and c.reasoning == "x" and c.ok
    c = e.read_completion(ids(e, DS_V3 + "<｜end▁of▁sentence｜>"))  # noqa: RUF001
    assert _calls(c) == [("get_weather", {"city": "Oslo"})] and c.canonical
    v31 = ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\":\"Oslo\"}"  # noqa: RUF001
           "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>"  # noqa: RUF001
           "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>")  # noqa: RUF001
    c = e.read_completion(ids(e, v31))
    assert _calls(c) == [("get_weather", {"city": "Oslo"}), ("get_time", {})]
    assert c.reasoning is None and c.problems == () and not c.canonical


def test_deepseek_bad_arguments(enc: Any, ids: Any) -> None:
    e = enc("deepseek-r1")
    c = e.read_completion(ids(e, DS_V3.replace('{"city": "Oslo"}', '{"city": Oslo}')
                              + "<｜end▁of▁sentence｜>"))  # noqa: RUF001
    (k,) = c.tool_calls
    assert k.name == "get_weather" and k.raw == '{"city": Oslo}' and not k.valid
    assert c.termination.reason == "malformed"


# -- gpt-oss (harmony) -----------------------------------------------------------------------

def test_harmony_analysis_and_final(enc: Any, ids: Any) -> None:
    e = enc("gpt-oss")
    c = e.read_completion(ids(e, "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant"
                                 "<|channel|>final<|message|>4<|return|>"))
    assert (c.reasoning, c.content, c.tool_calls) == ("Easy.", "4", ())
    assert c.termination.stop_id == e.tokenizer.token_to_id("<|return|>")
    assert c.canonical and c.ok


@pytest.mark.parametrize("header", [
    "<|channel|>commentary to=functions.get_weather <|constrain|>json",  # vLLM's canonical
    " to=functions.get_weather<|channel|>commentary json",  # the template's
])
def test_harmony_call_headers(enc: Any, ids: Any, header: str) -> None:
    e = enc("gpt-oss")
    c = e.read_completion(ids(e, "<|channel|>analysis<|message|>Need weather.<|end|>"
                                 "<|start|>assistant" + header
                                 + '<|message|>{"city": "Oslo"}<|call|>'))
    assert c.reasoning == "Need weather." and c.content == ""
    assert _calls(c) == [("get_weather", {"city": "Oslo"})]
    assert c.termination.stop_id == e.tokenizer.token_to_id("<|call|>")
    assert c.canonical == header.startswith(" to=") and c.problems == ()


def test_harmony_preamble_and_truncation(enc: Any, ids: Any) -> None:
    e = enc("gpt-oss")
    c = e.read_completion(ids(e, "<|channel|>commentary<|message|>Checking the weather.<|end|>"
                                 "<|start|>assistant to=functions.f<|channel|>commentary json"
                                 "<|message|>{}<|call|>"))
    assert c.content == "Checking the weather." and _calls(c) == [("f", {})]
    c = e.read_completion(ids(e, "<|channel|>analysis<|message|>I am still"))
    assert c.reasoning == "I am still" and c.termination.reason == "length"


# -- Mistral ---------------------------------------------------------------------------------

def test_mistral_think_and_v13_calls(enc: Any, ids: Any) -> None:
    e = enc("mistral")
    c = e.read_completion(ids(e, '[THINK]Two lookups.[/THINK]Sure.[TOOL_CALLS]get[ARGS]{"a": 1}'
                                 '[TOOL_CALLS]put[ARGS]{"b": 2}</s>'))
    assert (c.reasoning, c.content) == ("Two lookups.", "Sure.")
    assert _calls(c) == [("get", {"a": 1}), ("put", {"b": 2})]
    ids9 = [k.id for k in c.tool_calls]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids9) and len(set(ids9)) == 2
    assert c.termination.reason == "stop" and c.problems == ()


def test_mistral_v7_list_and_v11_call_id(enc: Any, ids: Any) -> None:
    e = enc("mistral")
    c = e.read_completion(ids(e, '[TOOL_CALLS][{"name": "get", "arguments": {"a": 1}, '
                                 '"id": "abcDEF123"}]</s>'))
    assert _calls(c) == [("get", {"a": 1})] and c.tool_calls[0].id == "abcDEF123"
    assert c.canonical  # the default version is v7: this is what it writes
    c = e.read_completion(ids(e, '[TOOL_CALLS]get[CALL_ID]xyz987ABC[ARGS]{"a": 1}</s>'))
    assert _calls(c) == [("get", {"a": 1})] and c.tool_calls[0].id == "xyz987ABC"
    c = e.read_completion(ids(e, "[TOOL_CALLS]not json</s>"))
    assert c.termination.reason == "malformed" and not c.tool_calls[0].valid


# -- Gemma, arguments, the OpenAI view -------------------------------------------------------

def test_gemma_text(enc: Any, ids: Any) -> None:
    e = enc("gemma3")
    c = e.read_completion(ids(e, "Hello!<end_of_turn>"))
    assert c.content == "Hello!" and c.canonical and c.reasoning is None


def test_bad_arguments_raise_typed_errors(enc: Any) -> None:
    e = enc("qwen3")
    with pytest.raises(ArgumentError, match="position 1"):
        e.read_completion([1, 10**9])
    with pytest.raises(ArgumentError):
        e.read_completion([1.5])
    assert e.read_completion([]).termination.reason == "length"


def test_to_openai(enc: Any, ids: Any) -> None:
    e = enc("qwen3")
    c = e.read_completion(ids(e, "<think>\nr\n</think>\n\nOK.\n<tool_call>\n{\"name\": \"f\", "
                                 "\"arguments\": {\"x\": \"é\"}}\n</tool_call>\n<tool_call>\n"
                                 "{\"name\": \"g\", \"arguments\": [1]}\n</tool_call><|im_end|>"))
    assert c.to_openai() == {
        "role": "assistant", "content": "OK.", "reasoning_content": "r",
        "tool_calls": [
            {"id": call_id(0), "type": "function",
             "function": {"name": "f", "arguments": '{"x": "é"}'}},
            {"id": call_id(1), "type": "function", "function": {"name": "g", "arguments": "[1]"}},
        ]}
    json.dumps(c.to_openai())


def test_call_ids_are_nine_alphanumerics_by_position() -> None:
    got = [call_id(i) for i in range(50)]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", g) for g in got)
    assert len(set(got)) == 50 and got == [call_id(i) for i in range(50)]


def test_parse_completion_accepts_the_stop_token(enc: Any, ids: Any) -> None:
    for fmt, tail in (("qwen3", "<|im_end|>"), ("llama3.1", "<|eot_id|>"),
                      ("deepseek-r1", "<｜end▁of▁sentence｜>"), ("mistral", "</s>"),  # noqa: RUF001
                      ("gemma3", "<end_of_turn>")):
        e = enc(fmt)
        with_stop = e.parse_completion(ids(e, "Hello.", tail))
        assert with_stop == e.parse_completion(ids(e, "Hello.")), fmt


def test_prompt_ids_are_python_ints_of_the_generation_prompt(enc: Any) -> None:
    from lvt.sampling import prompt_ids

    e = enc("qwen3")
    msgs = [{"role": "user", "content": "Hi"}]
    got = prompt_ids(e, msgs)
    assert type(got) is list and all(type(t) is int for t in got)
    assert e.tokenizer.decode(got, skip_special_tokens=False) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
