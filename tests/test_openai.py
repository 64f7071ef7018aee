"""from_openai: the OpenAI/HF chat dict shape to the typed AST, without normalising text."""

from __future__ import annotations

import json

import pytest

import lvt
from lvt.errors import ConversationError
from lvt.jsonfmt import freeze
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, ToolCall
from lvt.openai import from_openai, from_openai_batch, tool_arguments


def test_plain_messages_are_not_normalised() -> None:
    c = from_openai([{"role": "user", "content": "  hi\r\n\u00e9 "}], add_generation_prompt=True)
    assert c == Conversation([Message(Role.USER, [Plain(Text("  hi\r\n\u00e9 "))])], True)


def test_empty_and_none_content_give_no_block() -> None:
    c = from_openai([{"role": "user", "content": ""}, {"role": "assistant", "content": None}])
    assert c.messages == (Message(Role.USER, ()), Message(Role.ASSISTANT, ()))


def test_list_of_parts() -> None:
    c = from_openai([{"role": "user", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}])
    assert c.messages[0].blocks == (Plain(Text("ab")),)
    with pytest.raises(ConversationError) as ei:
        from_openai([{"role": "user", "content": "x"},
                     {"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
    assert ei.value.message_index == 1


def test_reasoning_and_tool_calls() -> None:
    msgs = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "reasoning_content": "think",
            "content": "let me see",
            "tool_calls": [
                {"id": "1", "type": "function",
                 "function": {"name": "get", "arguments": {"city": "Zürich"}}},
                {"type": "function", "function": {"name": "f", "arguments": '{"x":1}'}},
                {"name": "flat", "arguments": None},
                {"name": "raw", "arguments": "not json"},
            ],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "1"},
    ]
    c = from_openai(msgs)
    assert c.messages[1].blocks == (
        Reasoning(Text("think")),
        Plain(Text("let me see")),
        ToolCall("get", json.dumps({"city": "Zürich"}, ensure_ascii=False), "1"),
        ToolCall("f", '{"x": 1}'),  # JSON text is written as tojson writes it (as vLLM does)
        ToolCall("flat", "{}"),
        ToolCall("raw", "not json"),
    )
    assert "Zürich" in c.messages[1].blocks[2].args
    assert c.messages[2] == Message(Role.TOOL, [Plain(Text("sunny"))])


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning", "thinking"])
def test_reasoning_keys(key: str) -> None:
    c = from_openai([{"role": "assistant", key: "r"}])
    assert c.messages[0].blocks == (Reasoning(Text("r")),)


def test_tools_are_a_typed_part_of_the_conversation() -> None:
    tools = [{"type": "function", "function": {"name": "get", "parameters": {}}}]
    c = from_openai([{"role": "user", "content": "hi"}], tools=tools)
    assert c.tools == (freeze(tools[0]),) and len(c.messages) == 1
    assert from_openai([{"role": "user", "content": "hi"}]).tools is None
    assert from_openai([{"role": "user", "content": "hi"}], tools=[]).tools == ()
    for bad in ("abc", {"a": 1}, [1], [{"f": {1, 2}}]):
        with pytest.raises(ConversationError, match="tool"):
            from_openai([{"role": "user", "content": "hi"}], tools=bad)  # type: ignore[arg-type]


def test_tool_arguments() -> None:
    assert tool_arguments({"b": [1, 2], "a": "é"}) == '{"b": [1, 2], "a": "é"}'
    assert tool_arguments('{"a":1.0,"b":null}') == '{"a": 1.0, "b": null}'
    assert tool_arguments(None) == "{}"
    assert tool_arguments("{broken") == "{broken"


@pytest.mark.parametrize(
    ("messages", "index", "match"),
    [
        ([], None, "empty"),
        ([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}], 1, "unknown role"),
        ([{"role": "user", "content": 3}], 0, "content"),
        ([{"role": "user", "content": "a\ud800"}], 0, "surrogate"),
        ([{"role": "user", "content": [{"type": "text", "text": 5}]}], 0, "string"),
        ([{"role": "assistant", "tool_calls": [{"function": {"name": 1}}]}], 0, "name"),
        ([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {3}}}]}],
         0, "arguments"),
        ([{"role": "user", "tool_calls": [{"function": {"name": "f"}}]}], 0, "tool calls"),
        (["hello"], 0, "dict"),
        ([{"role": "assistant", "reasoning_content": 7}], 0, "reasoning"),
        ([{"role": "assistant", "tool_calls": [{"id": 7, "function": {"name": "f"}}]}], 0,
         "tool call 0 id"),
        ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
          {"role": "tool", "content": "r", "tool_call_id": 3}], 1, "tool_call_id"),
    ],
)
def test_bad_input(messages, index, match) -> None:
    with pytest.raises(ConversationError, match=match) as ei:
        from_openai(messages)
    assert ei.value.message_index == index
    assert ei.value.reason


def test_call_ids_and_positional_results() -> None:
    """Call ids are read into ToolCall.id; results are paired with calls by position, so a
    tool_call_id must name the call at its position (when both are given)."""
    def conv(*result_ids: str | None) -> list[dict]:
        calls = [{"id": i, "function": {"name": "f", "arguments": {}}} for i in ("a1", "b2")]
        return [{"role": "user", "content": "q"},
                {"role": "assistant", "content": "", "tool_calls": calls},
                *({"role": "tool", "content": "r", **({} if i is None else {"tool_call_id": i})}
                  for i in result_ids),
                {"role": "assistant", "content": "done"}]

    c = from_openai(conv("a1", "b2"))
    assert [b.id for b in c.messages[1].blocks] == ["a1", "b2"]
    assert c.messages[2] == c.messages[3] == Message(Role.TOOL, [Plain(Text("r"))])
    from_openai(conv(None, "b2"))  # tool_call_id is optional
    from_openai(conv("a1", "b2", "zz"))  # no call at the third result's position
    with pytest.raises(ConversationError, match="not the id 'a1' of the call") as ei:
        from_openai(conv("b2", "a1"))  # results in another order than the calls
    assert ei.value.message_index == 2
    with pytest.raises(ConversationError, match="k-th call of the assistant message") as ei:
        from_openai(conv("a1", "a1"))
    assert ei.value.message_index == 3
    # a call without an id pairs with any result
    no_id = [{"role": "user", "content": "q"},
             {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]},
             {"role": "tool", "content": "r", "tool_call_id": "x"}]
    assert from_openai(no_id).messages[1].blocks == (ToolCall("f", "{}"),)


def test_messages_must_be_a_list() -> None:
    with pytest.raises(ConversationError):
        from_openai("hello")  # type: ignore[arg-type]


def test_batch_equals_one_at_a_time_with_shared_tools() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}},
             {"type": "function", "function": {"name": "g\u00e9"}}]
    convs = [
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "q1"}],
        [{"role": "user", "content": "q2"},
         {"role": "assistant", "content": None,
          "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
         {"role": "tool", "content": "42"}],
        [{"role": "user", "content": ""}],
    ]
    for tl in (tools, None, []):
        for gen in (False, True):
            want = [from_openai(m, tools=tl, add_generation_prompt=gen) for m in convs]
            assert from_openai_batch(convs, tools=tl, add_generation_prompt=gen) == want
    assert from_openai_batch(convs, tools=tools)[0].tools == tuple(freeze(t) for t in tools)
    assert from_openai_batch([], tools=tools) == []


def test_batch_error_names_the_conversation_and_the_message() -> None:
    convs = [[{"role": "user", "content": "ok"}], [{"role": "user", "content": "ok"},
                                                   {"role": "wizard", "content": "x"}]]
    with pytest.raises(ConversationError, match=r"message 1: conversation 1: unknown role") as ei:
        from_openai_batch(convs)
    assert ei.value.message_index == 1


def test_keep_empty_reasoning() -> None:
    """An empty reasoning field is no block by default (the templates test its truth) and an
    empty block with ``keep_empty_reasoning`` (gpt-oss tests its presence); it must be a bool."""
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "reasoning_content": ""}]
    assert lvt.from_openai(msgs).messages[1].blocks == (Plain(Text("a")),)
    kept = lvt.from_openai(msgs, keep_empty_reasoning=True).messages[1].blocks
    assert kept == (Reasoning(Text("")), Plain(Text("a")))
    assert lvt.from_openai_batch([msgs], keep_empty_reasoning=True)[0].messages[1].blocks == kept
    with pytest.raises(lvt.ArgumentError, match="keep_empty_reasoning"):
        lvt.from_openai(msgs, keep_empty_reasoning=1)


def test_verbatim_arguments() -> None:
    """``verbatim_arguments`` (DeepSeek-R1's template writes the string as given) keeps every
    argument string exactly as written, JSON or not, deep nesting included; objects are still
    written as ``tojson`` writes them; the batch form agrees; the flag must be a bool."""
    strings = ['{"city":"Paris"}', '{"city": "Z\\u00fcrich"}', '{\n  "a": [1,\n 2]\n}',
               "not json", "", "[" * 100 + "]" * 100]
    for s in strings:
        msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [
            {"function": {"name": "f", "arguments": s}}]}]
        got = from_openai(msgs, verbatim_arguments=True).messages[1].blocks
        assert got == (ToolCall("f", s),)
        assert from_openai_batch([msgs], verbatim_arguments=True)[0].messages[1].blocks == got
    obj = {"city": "Zürich", "days": [1, 2]}
    msgs = [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": obj}}]}]
    assert from_openai(msgs, verbatim_arguments=True).messages[0].blocks == (
        ToolCall("f", json.dumps(obj, ensure_ascii=False)),)
    bad = [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
                                                               "arguments": "a\ud800"}}]}]
    with pytest.raises(ConversationError, match="surrogate"):
        from_openai(bad, verbatim_arguments=True)
    with pytest.raises(lvt.ArgumentError, match="verbatim_arguments"):
        from_openai_batch([msgs], verbatim_arguments="yes")  # type: ignore[arg-type]
