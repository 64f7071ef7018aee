"""ChatEncoder: arrays, mask policy, parse, fingerprint, typed errors."""

from __future__ import annotations

import numpy as np
import pytest

import lvt
from lvt import formats as F
from lvt import spec
from lvt.encoder import ChatEncoder, Encoded
from lvt.errors import CodecLawError, ConversationError, FormatError, ParseError
from lvt.model import (
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Text,
    Tokens,
    ToolCall,
)


@pytest.fixture(scope="module")
def encoders(toy_tok) -> dict[str, ChatEncoder]:
    return {n: ChatEncoder.from_tokenizer(toy_tok, n, strict=True) for n in F.format_names()}


IM_END = -77  # placeholder for the id of <|im_end|> in parametrised token payloads


def conv(*msgs: Message, gen: bool = False) -> Conversation:
    return Conversation(msgs, gen)


def test_backend_reports() -> None:
    assert lvt.backend() in ("native", "reference")
    assert lvt.backend_reason()


@pytest.mark.parametrize("name", F.format_names())
def test_encode_matches_spec_and_parses_back(encoders, name: str) -> None:
    enc = encoders[name]
    roles = [r for r in Role if spec.supports(enc.enc_format, r) and r != Role.TOOL]
    msgs = [Message.text(r, f"hello {r.value} <|im_start|>") for r in roles]
    c = conv(*msgs, gen=True)
    out = enc.encode(c)
    assert isinstance(out, Encoded) and len(out) == out.ids.shape[0]
    assert out.ids.dtype == np.int32 and out.mask.dtype == np.uint8 and out.owner.dtype == np.int32
    cells = spec.render_tok(enc.enc_format, enc.pre_encode(c))
    assert out.ids.tolist() == spec.ids(cells)
    assert out.mask.tolist() == [int(b) for b in spec.mask(cells)]
    assert out.owner.tolist() == spec.owners(cells)
    assert enc.parse(out.ids) == c
    assert enc.generation_prompt(conv(*msgs)).tolist() == out.ids.tolist()


def test_mask_policy_llama3(encoders) -> None:
    enc = encoders["llama3"]
    f = enc.enc_format
    c = conv(Message.text("user", "q"), Message.text("assistant", "a"))
    out = enc.encode(c)
    hdr = len(f.header[Role.ASSISTANT])
    a = enc.codec.encode("a")
    tail_mask = out.mask.tolist()[-(hdr + len(a) + 1):]
    assert tail_mask == [0] * hdr + [1] * len(a) + [1]  # payload and <|eot_id|> learned
    assert out.mask[: len(out) - hdr - len(a) - 1].sum() == 0
    assert out.owner.tolist()[0] == 0 and out.owner.tolist()[-1] == 1


def test_encode_openai_shapes_tool_calls(encoders) -> None:
    msgs = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": "get", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "sunny"},
    ]
    q = encoders["qwen2.5"]
    back = q.parse(q.encode_openai(msgs).ids)
    assert back.messages[1].blocks == (
        ToolCall(Text(""), Text('{"name": "get", "arguments": {"city": "Paris"}}\n')),
    )
    m = encoders["mistral-v7"]
    back = m.parse(m.encode_openai(msgs).ids)
    assert back.messages[1].blocks == (ToolCall(Text("get"), Text('{"city": "Paris"}')),)
    d = encoders["deepseek-r1"]
    back = d.parse(d.encode_openai(msgs).ids)
    assert back.messages[1].blocks == (
        ToolCall(Text(""), Text('get\n```json\n{"city": "Paris"}\n```')),
    )
    ll = encoders["llama3"]
    back = ll.parse(ll.encode_openai(msgs).ids)
    want = '{"name": "get", "parameters": {"city": "Paris"}}'
    assert back.messages[1].blocks[0].args == Text(want)


def test_token_payloads_are_kept(encoders) -> None:
    enc = encoders["qwen3"]
    # "h", "e" as two byte tokens: the BPE would merge them, so it is not a canonical encoding
    sampled = (*enc.codec.encode("x"), 104, 101)
    assert enc.codec.encode("xhe") != list(sampled)
    c = conv(Message.text("user", "q"), Message(Role.ASSISTANT, [Plain(Tokens(sampled))]))
    out = enc.encode(c)
    assert out.ids.tolist()[-len(sampled) - 2: -2] == list(sampled)
    back = enc.parse(out.ids)
    assert back.messages[1].blocks == (Plain(Tokens(sampled)),)  # does not re-encode exactly
    assert enc.encode(back) == out


def test_fingerprint(toy_tok, encoders) -> None:
    a = encoders["qwen3"].fingerprint()
    assert a == ChatEncoder.from_tokenizer(toy_tok, "qwen3").fingerprint()
    assert a != encoders["qwen2.5"].fingerprint()
    assert len(a) == 64


def test_format_errors(toy_tok) -> None:
    with pytest.raises(FormatError, match="unknown format"):
        ChatEncoder.from_tokenizer(toy_tok, "nope")
    from tokenizers import Tokenizer, models

    bare = Tokenizer(models.WordLevel({"a": 0, "<|im_start|>": 1}, unk_token="a"))
    with pytest.raises(FormatError, match=r"<\|im_end\|>"):
        ChatEncoder.from_tokenizer(bare, "qwen2.5")
    # a custom format that is not well-formed
    f = F.chatml(F.ChatMLIds(*[toy_tok.token_to_id(s) for s in
                               ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>",
                                "</tool_call>"]]))
    broken = spec.ChatFormat(reserved=f.reserved, bos=f.bos, header=f.header,
                             footer={**f.footer, Role.ASSISTANT: ()}, block_open=f.block_open,
                             block_close=f.block_close, tool_sep=f.tool_sep)
    with pytest.raises(FormatError, match="well-formed"):
        ChatEncoder(toy_tok, broken)
    assert ChatEncoder(toy_tok, f).format_name == "custom"


@pytest.mark.parametrize(
    ("name", "c", "index", "match"),
    [
        ("qwen2.5", conv(), None, "empty"),
        ("llama3", conv(Message.text("user", "a"), Message(Role.ASSISTANT, [Reasoning(Text("r"))])),
         1, "reasoning"),
        ("gemma", conv(Message.text("system", "s")), 0, "not supported"),
        ("deepseek-r1", conv(Message.text("user", "u"), Message.text("system", "s")), 1,
         "not supported"),
        ("qwen2.5", conv(Message.text("developer", "d")), 0, "not supported"),
        ("mistral-v7", conv(Message.text("user", "u"), Message.text("tool", "t")), 1,
         "preceding assistant tool call"),
        ("qwen2.5", conv(Message(Role.USER, [Plain(Text(3))])), 0, "str"),  # type: ignore[arg-type]
        ("qwen2.5", conv(Message.text("user", "ok"), Message.text("user", "a\udc00")), 1,
         "surrogate"),
        ("qwen2.5", conv(Message(Role.USER, [Plain(Tokens([97, 10**9]))])), 0, "vocabulary"),
        ("qwen2.5", conv(Message(Role.USER, [Plain(Tokens([-1]))])), 0, "vocabulary"),
        ("qwen3", conv(Message.text("user", "x"),
                       Message(Role.ASSISTANT, [Plain(Tokens([97, IM_END]))])), 1, "reserved"),
        ("qwen2.5", conv(Message(Role.USER, [Plain(Text(""))])), 0, "empty plain"),
        ("qwen2.5", conv(Message(Role.USER, [Plain(Text("a")), Plain(Text("b"))])), 0, "merge"),
        ("qwen2.5", conv(Message(Role.ASSISTANT, [ToolCall(Text("f"), Text("{}"))])), 0,
         "name must be empty"),
        ("gemma", conv(Message(Role.ASSISTANT, [ToolCall(Text(""), Text("{}"))])), 0,
         "tool_call blocks are not supported"),
    ],
)
def test_bad_input(encoders, toy_tok, name, c, index, match) -> None:
    enc = encoders[name]
    # resolve control-token names used as placeholders in token payloads
    im_end = toy_tok.token_to_id("<|im_end|>")
    c = c.map(lambda p: Tokens([im_end if t == IM_END else t for t in p.ids])
              if isinstance(p, Tokens) else p)
    with pytest.raises(ConversationError, match=match) as ei:
        enc.encode(c)
    assert ei.value.message_index == index


def test_unknown_role_via_openai(encoders) -> None:
    with pytest.raises(ConversationError, match="unknown role") as ei:
        encoders["qwen2.5"].encode_openai([{"role": "narrator", "content": "x"}])
    assert ei.value.message_index == 0


def test_batch_errors_name_the_conversation(encoders) -> None:
    enc = encoders["gemma"]
    good = conv(Message.text("user", "a"))
    with pytest.raises(ConversationError, match="conversation 1 of the batch") as ei:
        enc.encode_batch([good, conv(Message.text("tool", "x"))])
    assert ei.value.message_index == 0


def test_parse_errors(encoders) -> None:
    enc = encoders["llama3"]
    out = enc.encode(conv(Message.text("user", "a"), Message.text("assistant", "b")))
    with pytest.raises(ParseError) as ei:
        enc.parse(out.ids[:-1])
    assert ei.value.position is not None
    with pytest.raises(ParseError):
        enc.parse([5, 6])


def test_codec_law_error_carries_message_index(toy_tok) -> None:
    # a format that reserves an ordinary byte token: text containing it breaks the law
    f = F.get_spec("qwen2.5").load(toy_tok)
    x = toy_tok.token_to_id("x")
    bad = spec.ChatFormat(reserved=(*f.reserved, x), bos=f.bos, header=f.header, footer=f.footer,
                          block_open=f.block_open, block_close=f.block_close, tool_sep=f.tool_sep)
    enc = ChatEncoder(toy_tok, bad)
    with pytest.raises(CodecLawError) as ei:
        enc.encode(conv(Message.text("user", "ok"), Message.text("assistant", "xyz")))
    assert ei.value.message_index == 1 and ei.value.token_id == x and ei.value.position == 0


def test_batch_equals_single(encoders) -> None:
    enc = encoders["gpt-oss"]
    cs = [
        conv(Message.text("system", "S"), Message.text("user", f"u{i}"),
             Message(Role.ASSISTANT, [Reasoning(Text("r")), Plain(Text(f"a{i}"))]),
             gen=i % 2 == 0)
        for i in range(5)
    ]
    assert enc.encode_batch(cs) == [enc.encode(c) for c in cs]


class _FakeNative:
    """Stands in for lvt._native.NativeBackend (same method names), computed by lvt.spec."""

    def __init__(self) -> None:
        self.calls = 0

    def render_answer(self, f, c):
        self.calls += 1
        cells = spec.render_tok(f, c)

        class Ans:
            wf = spec.wf(f)
            valid = spec.valid(f, c)
            ids = np.array(spec.ids(cells))
            mask = np.array(spec.mask(cells))
            owner = np.array(spec.owners(cells))

        return Ans

    def parse(self, f, ids):
        self.calls += 1
        return spec.parse(f, ids)


def test_native_glue(toy_tok, encoders, monkeypatch) -> None:
    fake = _FakeNative()
    monkeypatch.setattr(lvt, "native_backend", lambda: fake)
    enc = ChatEncoder.from_tokenizer(toy_tok, "qwen3")
    c = conv(Message.text("user", "q"),
             Message(Role.ASSISTANT, [Reasoning(Text("r")), Plain(Text("a"))]), gen=True)
    out = enc.encode(c)
    assert out == encoders["qwen3"].encode(c)
    assert out.mask.dtype == np.uint8
    assert enc.parse(out.ids) == c
    assert fake.calls == 2
