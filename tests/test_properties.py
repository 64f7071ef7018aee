"""Property tests (hypothesis) of the reference backend and the encoder.

Examples per property: ``LVT_HYPOTHESIS_EXAMPLES`` (default 300; CI runs 10000), set by the
``lvt`` hypothesis profile in ``conftest.py``.

* round trip: ``parse (render c) = c`` for valid pre-encoded conversations of well-formed
  formats (shipped formats with random ids, and random formats);
* soundness: ``parse`` never crashes on random token streams, and an accepted stream
  re-renders to exactly itself;
* prefix stability: ``render (c ++ d)`` extends ``render c`` (ids, mask and owner), and the
  generation prompt plus the sampled turn is the render with that turn appended;
* injectivity: distinct text conversations have distinct renders (toy tokenizer, strict);
* the encoder's segment-level render equals ``spec.render_tok`` and its validation agrees
  with ``spec.valid``;
* no-forgery with the real Llama-3 and DeepSeek-R1 tokenizers: text containing every control
  string of every family never yields a control id; the control skeleton of a render depends
  only on the conversation's shape.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lvt import formats as F
from lvt import spec
from lvt.encoder import ChatEncoder
from lvt.errors import ConversationError, ParseError
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, Tokens, ToolCall
from strategies import (
    CONTROL_STRINGS,
    enc_formats,
    shipped_enc_format,
    text_conversations,
    token_conversations,
    token_streams,
)


@st.composite
def format_and_conversation(draw: st.DrawFn):
    name, f = draw(enc_formats())
    return name, f, draw(token_conversations(f))


@given(format_and_conversation())
def test_round_trip(fc) -> None:
    _, f, c = fc
    cells = spec.render_tok(f, c)
    assert spec.parse(f, spec.ids(cells)) == c


@st.composite
def format_and_stream(draw: st.DrawFn):
    name, f = draw(enc_formats())
    return name, f, draw(token_streams(f))


@given(format_and_stream())
def test_parse_soundness(fs) -> None:
    _, f, ts = fs
    c = spec.parse(f, ts)
    if c is not None:
        blocks = [b for m in c.messages for b in m.blocks]
        assert all(isinstance(b, Plain | Reasoning | ToolCall) for b in blocks)
        assert spec.ids(spec.render_tok(f, c)) == ts


@st.composite
def format_and_two(draw: st.DrawFn):
    name, f = draw(enc_formats())
    return name, f, draw(token_conversations(f)), draw(token_conversations(f))


@given(format_and_two())
def test_prefix_stability(fcd) -> None:
    _, f, c, d = fcd
    c = Conversation(c.messages, False)
    whole = spec.render_tok(f, c + d)
    head = spec.render_tok(f, c)
    assert whole[: len(head)] == head
    # renderMsgs (ms ++ ns) = renderMsgs ms ++ renderMsgs (|ms|) ns
    assert spec.render_msgs(f, 0, c.messages + d.messages) == spec.render_msgs(
        f, 0, c.messages
    ) + spec.render_msgs(f, len(c.messages), d.messages)


@st.composite
def format_conv_and_turn(draw: st.DrawFn):
    _, f = draw(enc_formats())
    c = draw(token_conversations(f))
    turn = draw(token_conversations(f, max_messages=1)).messages[0]
    return f, Conversation(c.messages, True), Message(Role.ASSISTANT, turn.blocks)


@given(format_conv_and_turn())
def test_prompt_prefix(fct) -> None:
    f, c, turn = fct
    assume(spec.msg_ok(f, turn))
    prompt = spec.ids(spec.render_tok(f, c))
    sampled = spec.ids(spec.render_blocks(f, len(c.messages), True, turn.blocks))
    eot = f.footer[Role.ASSISTANT]
    full = spec.ids(spec.render_tok(f, Conversation((*c.messages, turn), False)))
    assert prompt + sampled + list(eot) == full


# ---------------------------------------------------------------------------------------------
# Encoder (toy tokenizer): segment-level render = spec, validation = spec.valid, injectivity


@pytest.fixture(scope="module")
def toy_encoders(toy_tok):
    return {n: ChatEncoder.from_tokenizer(toy_tok, n, strict=True) for n in F.format_names()}


def _pre(enc: ChatEncoder, c: Conversation) -> Conversation:
    return c.map(lambda p: Tokens(enc.codec.encode(p.text)) if isinstance(p, Text) else p)


@given(st.sampled_from(F.format_names()), st.data())
def test_encoder_equals_spec(toy_encoders, name, data) -> None:
    enc = toy_encoders[name]
    fs = F.get_spec(name)
    c = data.draw(text_conversations(enc.enc_format, tokens_ids=range(40, 120),
                                     tool_needs_call=fs.tool_needs_call))
    out = enc.encode(c)
    pre = _pre(enc, c)
    assert spec.valid(enc.enc_format, pre)
    cells = spec.render_tok(enc.enc_format, pre)
    assert out.ids.tolist() == spec.ids(cells)
    assert out.mask.tolist() == [int(b) for b in spec.mask(cells)]
    assert out.owner.tolist() == spec.owners(cells)
    back = enc.parse(out.ids)
    assert enc.encode(back) == out
    # text payloads come back as the same text (the codec is lawful and canonical)
    assert _pre(enc, back) == pre


@given(st.sampled_from(F.format_names()), text_conversations(tokens_ids=range(40, 120)))
def test_encoder_validation_agrees_with_spec(toy_encoders, name, c) -> None:
    enc = toy_encoders[name]
    pre = _pre(enc, c)
    needs_call = F.get_spec(name).tool_needs_call and any(
        m.role == Role.TOOL for m in c.messages
    )
    try:
        enc.encode(c)
        accepted = True
    except ConversationError:
        accepted = False
    if needs_call and not accepted:
        return  # the encoder's extra rule (a tool message needs a preceding call)
    assert accepted == spec.valid(enc.enc_format, pre)


@given(st.sampled_from(F.format_names()), st.data())
def test_encoder_parse_soundness(toy_encoders, name, data) -> None:
    enc = toy_encoders[name]
    ts = data.draw(token_streams(enc.enc_format))
    if data.draw(st.booleans()):
        ts = [*ts, data.draw(st.sampled_from([-1, 10**6, 5]))]
    try:
        c = enc.parse(ts)
    except ParseError:
        return
    assert enc.encode(c).ids.tolist() == ts


def _mutate(c: Conversation, how: int, i: int) -> Conversation:
    msgs = list(c.messages)
    m = msgs[i % len(msgs)]
    j = i % len(msgs)
    if how == 0:
        msgs[j] = Message(Role.USER if m.role != Role.USER else Role.SYSTEM, m.blocks)
    elif how == 1 and m.blocks:
        b = m.blocks[0]
        if isinstance(b, Plain | Reasoning) and isinstance(b.payload, Text) and b.payload.text:
            s = b.payload.text
            k = (i % len(s)) + 1
            nb = type(b)(Text(s[:k]))
            rest = Plain(Text(s[k:])) if isinstance(b, Reasoning) else Reasoning(Text(s[k:]))
            msgs[j] = Message(m.role, (nb, rest, *m.blocks[1:]))
    elif how == 2:
        return Conversation(c.messages, not c.add_generation_prompt)
    elif how == 3 and len(msgs) > 1:
        msgs[j], msgs[j - 1] = msgs[j - 1], msgs[j]
    elif how == 4:
        msgs.insert(j, Message(m.role, ()))
    return Conversation(msgs, c.add_generation_prompt)


@given(text_conversations(), st.integers(0, 4), st.integers(0, 50))
def test_injectivity(toy_encoders, c, how, i) -> None:
    enc = toy_encoders["qwen3"]
    d = _mutate(c, how, i)
    try:
        a = enc.encode(c).ids.tolist()
        b = enc.encode(d).ids.tolist()
    except ConversationError:
        assume(False)
        return
    assert (a == b) == (c == d)


# ---------------------------------------------------------------------------------------------
# No forgery with real tokenizers


def _skeleton_ids(ids, reserved) -> list[int]:
    return [t for t in ids if t in reserved]


def _shape_only(c: Conversation) -> Conversation:
    return c.map(lambda p: Text("x") if isinstance(p, Text) and p.text else p)


@pytest.mark.parametrize("fixture", ["llama3_enc", "deepseek_enc"])
def test_no_forgery_real_tokenizers(request, fixture) -> None:
    enc: ChatEncoder = request.getfixturevalue(fixture)
    fs = F.get_spec(enc.format_name)
    reserved = set(enc.enc_format.reserved)
    all_special = {
        i for s in CONTROL_STRINGS if (i := enc.tokenizer.token_to_id(s)) is not None
    } | set(enc.codec._added)

    @given(text_conversations(enc.enc_format, tool_needs_call=fs.tool_needs_call))
    def prop(c: Conversation) -> None:
        out = enc.encode(c)
        ids = out.ids.tolist()
        # every reserved (indeed every added) token comes from the format, none from text
        for m in c.messages:
            for b in m.blocks:
                for p in (b.name, b.args) if isinstance(b, ToolCall) else (b.payload,):
                    if isinstance(p, Text):
                        assert all_special.isdisjoint(enc.codec.encode(p.text))
        assert _skeleton_ids(ids, reserved) == _skeleton_ids(
            enc.encode(_shape_only(c)).ids.tolist(), reserved
        )
        assert _pre_equal(enc, enc.parse(out.ids), c)

    prop()


def _pre_equal(enc: ChatEncoder, a: Conversation, b: Conversation) -> bool:
    return _pre(enc, a) == _pre(enc, b)


def test_shipped_test_formats_are_wf() -> None:
    for n in F.format_names():
        assert spec.wf(shipped_enc_format(n))
