"""The public API (``lvt.ChatEncoder``) with the real tokenizers: batches and the span cache,
parsing back, sampled turns, the loss mask, errors, fingerprints, threads."""

from __future__ import annotations

import json
import sys
import threading
import unicodedata
from typing import Any

import numpy as np
import pytest

import lvt
from lvt import zoo
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def qwen3():
    return lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3"), "qwen3")


@pytest.fixture(scope="module")
def llama():
    return lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("llama3.1"), "llama3.1")


def _user(s: str) -> Message:
    return Message(Role.USER, (Plain(Text(s)),))


def test_batch_equals_single_and_shares_spans(qwen3) -> None:
    """A GRPO group: the prompt's spans are encoded once for the whole group."""
    prompt = [Message(Role.SYSTEM, (Plain(Text("You are terse.")),)), _user("2+2?")]
    group = [Conversation([*prompt, Message(Role.ASSISTANT, (Plain(Text(f"It is {k}.")),))],
                          tools=TOOLS) for k in range(8)]
    qwen3.codec.clear_cache()
    batch = qwen3.encode_batch(group)
    misses = qwen3.codec.cache_info()["misses"]
    assert misses < 2 * 8  # shared spans once, one answer span per member
    assert all(b == qwen3.encode(c) for b, c in zip(batch, group, strict=True))


def test_parse_gives_the_conversation_back(qwen3, llama) -> None:
    c = lvt.from_openai([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "reasoning_content": "Call the tool.", "content": "",
         "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "18°C"},
        {"role": "assistant", "content": "18°C in Paris."},
    ], TOOLS)
    back = qwen3.parse(qwen3.encode(c).ids)
    assert back == c  # after the last user message Qwen3 keeps the reasoning
    later = Conversation([*c.messages, _user("And Rome?")], tools=TOOLS)
    back = qwen3.parse(qwen3.encode(later).ids)
    # now the template drops it (history): the parse shows what was rendered
    assert back.messages[1].blocks == (ToolCall("get_weather", '{"city": "Paris"}'),)
    assert back.messages[3:] == later.messages[3:] and back.tools == c.tools
    lc = lvt.from_openai([{"role": "user", "content": "  hi  "},
                          {"role": "assistant", "content": "hello"}])
    lb = llama.parse(llama.encode(lc).ids)
    assert lb.messages == (Message(Role.USER, (Plain(Text("hi")),)), lc.messages[1])  # trimmed


def test_sampled_turn_and_its_typed_view(qwen3) -> None:
    """``Sampled`` keeps the policy's tokens verbatim (think and tool-call control tokens
    included); ``parse_completion`` reads them as blocks."""
    tok = qwen3.tokenizer
    sampled = tok.encode('<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n'
                         '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
                         add_special_tokens=False).ids
    blocks = qwen3.parse_completion(sampled)
    assert blocks == [Reasoning(Text("The user wants weather.")),
                      ToolCall("get_weather", '{"city": "Paris"}')]
    prompt = Conversation([_user("Weather in Paris?")], True, TOOLS)
    conv = Conversation([_user("Weather in Paris?"), Message(Role.ASSISTANT, (Sampled(sampled),))],
                        False, TOOLS)
    p, t = qwen3.encode(prompt), qwen3.encode(conv)
    im_end = tok.token_to_id("<|im_end|>")
    assert t.ids.tolist()[: len(p)] == p.ids.tolist()
    assert t.ids.tolist()[len(p):] == [*sampled, im_end, tok.token_to_id("\u010a")]
    assert t.mask.tolist() == [0] * len(p) + [1] * (len(sampled) + 1) + [0]
    assert set(t.owner.tolist()[len(p):]) == {1}
    # the stop token that ended the sample may come with it (engines return it); a second one
    # is not an assistant turn
    assert qwen3.parse_completion([*sampled, im_end]) == blocks
    assert qwen3.parse_completion([im_end]) == qwen3.parse_completion([]) == []
    with pytest.raises(lvt.ParseError):
        qwen3.parse_completion([im_end, im_end])


def test_enable_thinking_false_prompt_is_not_learned() -> None:
    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3"), "qwen3",
                                         enable_thinking=False)
    c = Conversation([_user("hi"), Message(Role.ASSISTANT, (Plain(Text("hello")),))])
    out = enc.encode(c)
    text = enc.tokenizer.decode(out.ids[out.mask == 1].tolist(), skip_special_tokens=False)
    assert text == "hello<|im_end|>"
    gen = enc.generation_prompt(Conversation([_user("hi")]))
    assert enc.tokenizer.decode(gen.tolist()[-6:], skip_special_tokens=False).endswith(
        "<think>\n\n</think>\n\n")


def test_llama_mask_and_owner(llama) -> None:
    c = Conversation([Message(Role.SYSTEM, (Plain(Text("S")),)), _user("U"),
                      Message(Role.ASSISTANT, (Plain(Text("A")),))], True)
    out = llama.encode(c)
    learned = llama.tokenizer.decode(out.ids[out.mask == 1].tolist(), skip_special_tokens=False)
    assert learned == "A<|eot_id|>"
    assert out.owner[-1] == 3 and out.owner[0] == 0


def test_qwen_text_is_nfc_normalised(qwen3) -> None:
    d = unicodedata.normalize("NFD", "café")
    a = qwen3.encode(Conversation([_user(d)]))
    b = qwen3.encode(Conversation([_user("café")]))
    assert a == b
    assert qwen3.parse(a.ids).messages[0].blocks[0].payload.text == "café"


def test_qwen_normalises_before_json_escaping(qwen3) -> None:
    """NFC applies to the user's strings, never to their JSON escapes: a ``\\n`` followed by
    U+0301 stays an escape and a combining mark (the tokenizer's NFC on the rendered JSON
    would make it ``\\ń``, which is not JSON), in a tool description and in argument values
    given as a JSON string; both encode and parse back to JSON equal to the normalised input.
    (ASCII escapes of text that is not NFC are what the template writes and its tokenizer
    reads: kept as written.)"""
    tools = [{"type": "function", "function": {
        "name": "f", "description": "\n\u0301", "parameters": {
            "type": "object", "properties": {"v": {"type": "string",
                                                  "description": "e\u0301\n\u0301"}}}}}]
    c = Conversation([_user("hi")], True, tools)
    back = qwen3.parse(qwen3.encode(c).ids)
    fn = dict(dict(back.tools[0].members)["function"].members)
    assert fn["description"] == "\n\u0301"
    v = dict(dict(dict(fn["parameters"].members)["properties"].members)["v"].members)
    assert v["description"] == "\u00e9\n\u0301"  # NFC of the string, before escaping
    assert qwen3.encode(back) == qwen3.encode(c)

    for args, want in [('{"v": "x\\n\u0301y"}', {"v": "x\n\u0301y"}),
                       ('{"v": "e\u0301", "w": "\\n\u0301"}', {"v": "\u00e9", "w": "\n\u0301"}),
                       ('{"v": "\\u0065\\u0301"}', {"v": "e\u0301"})]:  # kept as written
        c = Conversation([_user("hi"), Message(Role.ASSISTANT, (ToolCall("f", args),))])
        out = qwen3.encode(c)
        got = qwen3.parse(out.ids).messages[1].blocks[0].args
        assert json.loads(got) == want, (args, got)
        assert qwen3.encode(qwen3.parse(out.ids)) == out
    # text arguments (not JSON) are the user's text: NFC as text
    c = Conversation([_user("hi"), Message(Role.ASSISTANT, (ToolCall("f", "e\u0301"),))])
    assert qwen3.parse(qwen3.encode(c).ids).messages[1].blocks[0].args == "\u00e9"


def test_qwen_json_arguments_keep_the_templates_text_when_nfc_is_harmless(qwen3) -> None:
    """Arguments whose NFC text is JSON of the normalised value keep the template's text (NFC
    of what was written): same ids as the tokenizer applied to the written text."""
    args = '{"city":  "Zu\u0308rich"}'
    c = Conversation([_user("hi"), Message(Role.ASSISTANT, (ToolCall("f", args),))])
    norm = qwen3.normalize(c).messages[1].blocks[0].args
    assert norm == unicodedata.normalize("NFC", args)


def test_decode_law_is_checked_by_default(qwen3) -> None:
    assert qwen3.codec.strict
    unchecked = lvt.ChatEncoder.from_tokenizer(qwen3.tokenizer, "qwen3", strict=False)
    assert not unchecked.codec.strict
    c = Conversation([_user("hi \U0001f642 e\u0301")])
    assert unchecked.encode(c) == qwen3.encode(c)


@pytest.mark.parametrize(("fmt", "tok", "msgs", "match"), [
    ("qwen3", "qwen3", [{"role": "developer", "content": "x"}], "developer"),
    ("qwen2.5", "qwen2.5", [{"role": "user", "content": "q"},
                            {"role": "assistant", "reasoning_content": "r", "content": "a"}],
     "no reasoning"),
    ("llama3.1", "llama3.1", [{"role": "user", "content": "q"}, {"role": "assistant",
     "tool_calls": [{"function": {"name": "a", "arguments": {}}},
                    {"function": {"name": "b", "arguments": {}}}]}], "one tool call"),
    ("llama3.1", "llama3.1", [{"role": "user", "content": "q"},
                              {"role": "assistant", "content": '{"name": "f", "parameters": {}}'}],
     "reads as a Llama 3.1 tool call"),
])
def test_what_a_format_cannot_express_is_refused(fmt, tok, msgs, match) -> None:
    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(tok), fmt)
    with pytest.raises(lvt.ConversationError, match=match):
        enc.encode_openai(msgs)


def test_token_payload_errors(qwen3) -> None:
    im_end = qwen3.tokenizer.token_to_id("<|im_end|>")
    with pytest.raises(lvt.ConversationError, match="control id"):
        qwen3.encode(Conversation([Message(Role.USER, (Plain(Tokens([9, im_end])),))]))
    with pytest.raises(lvt.ConversationError, match="not in the vocabulary"):
        qwen3.encode(Conversation([Message(Role.USER, (Plain(Tokens([10**7])),))]))
    with pytest.raises(lvt.ConversationError, match="conversation 1 of the batch"):
        qwen3.encode_batch([Conversation([_user("a")]),
                            Conversation([Message(Role.DEVELOPER, ())])])


def test_format_errors() -> None:
    tok = zoo.load_tokenizer("qwen2.5")
    with pytest.raises(lvt.FormatError, match="unknown format"):
        lvt.ChatEncoder.from_tokenizer(tok, "qwen9")
    with pytest.raises(lvt.FormatError, match="<think>"):
        lvt.ChatEncoder.from_tokenizer(tok, "qwen3")  # Qwen2.5 has no <think> token
    with pytest.raises(lvt.FormatError, match="no option"):
        lvt.ChatEncoder.from_tokenizer(tok, "qwen2.5", enable_thinking=False)
    with pytest.raises(lvt.FormatError, match="must be a bool"):
        lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3"), "qwen3", enable_thinking=1)
    with pytest.raises(lvt.FormatError, match="no control token '<\\|begin_of_text\\|>'"):
        lvt.ChatEncoder.from_tokenizer(tok, "llama3.1")


def test_parse_errors(qwen3) -> None:
    ids = qwen3.encode(Conversation([_user("hello there")])).ids.tolist()
    with pytest.raises(lvt.ParseError, match="vocabulary"):
        qwen3.parse([10**7])
    with pytest.raises(lvt.ParseError):
        qwen3.parse(ids[:-3])
    t = qwen3.tokenizer
    split = ids[:2] + t.encode("user\nhel", add_special_tokens=False).ids + t.encode(
        "lo there", add_special_tokens=False).ids + ids[-2:]
    with pytest.raises(lvt.ParseError, match="not the encoding of its text"):
        qwen3.parse(ids[:1] + split[1:])


def test_fingerprints_tell_formats_and_options_apart() -> None:
    tok = zoo.load_tokenizer("qwen3")
    a = lvt.ChatEncoder.from_tokenizer(tok, "qwen3").fingerprint()
    b = lvt.ChatEncoder.from_tokenizer(tok, "qwen3-stable").fingerprint()
    c = lvt.ChatEncoder.from_tokenizer(tok, "qwen3", enable_thinking=False).fingerprint()
    assert len({a, b, c}) == 3
    assert a == lvt.ChatEncoder.from_tokenizer(tok, "qwen3").fingerprint()


def test_shared_encoder_is_thread_safe(llama) -> None:
    """One encoder shared by threads (tiny switch interval, small cache so that evictions
    race with lookups) gives the serial results."""
    enc = lvt.ChatEncoder.from_tokenizer(llama.tokenizer, "llama3.1", cache_size=8)
    convs = [Conversation([_user(f"question {i % 23}"),
                           Message(Role.ASSISTANT, (Plain(Text(f"answer {i}")),))])
             for i in range(300)]
    want = [e.ids.tolist() for e in enc.encode_batch(convs)]
    errors: list[BaseException] = []
    got: dict[int, list[int]] = {}

    def work(k: int) -> None:
        try:
            for i in range(k, len(convs), 4):
                got[i] = enc.encode(convs[i]).ids.tolist()
        except BaseException as e:
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors
    assert [got[i] for i in range(len(convs))] == want


def test_arrays(llama) -> None:
    out = llama.encode(Conversation([_user("hi")], True))
    assert out.ids.dtype == np.int32 and out.mask.dtype == np.uint8
    assert out.owner.dtype == np.int32 and len(out) == len(out.ids)


def test_entry_without_tool_syntax_refuses_before_either_backend() -> None:
    """``qwen2.5-vl`` narrows the Qwen structure (whose Lean lowering renders tools): tools,
    calls and results are refused with the typed error on the reference path and before a
    native library would be called; other conversations get its default system prompt."""
    from lvt import zoo

    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen2.5"), "qwen2.5-vl")
    text = enc.tokenizer.decode(enc.encode_openai([{"role": "user", "content": "Hi"}]).ids
                                .tolist(), skip_special_tokens=False)
    assert text == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                    "<|im_start|>user\nHi<|im_end|>\n")
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {}}}]}
    cases = [([{"role": "user", "content": "Hi"}], TOOLS, None),
             ([{"role": "user", "content": "Hi"}, call], None, 1),
             ([{"role": "user", "content": "Hi"}, {"role": "tool", "content": "3"}], None, 1)]

    class Unreachable:
        def layout(self, *a: Any) -> Any:
            raise AssertionError("the native library was called")

    for msgs, tools, at in cases:
        conv = lvt.from_openai(msgs, tools)
        for native in (None, Unreachable()):
            enc._native = native
            with pytest.raises(lvt.ConversationError, match="no tool syntax") as e:
                enc.layout(conv)
            assert e.value.message_index == at
    enc._native = None
