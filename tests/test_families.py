"""Properties of the shipped formats with the real tokenizers, on random conversations.

Each test is the executable form of a theorem of ``Verified/Thm`` (named in its docstring),
run on what the production path computes (``lvt.families`` with the real Qwen2.5, Qwen3 and
Llama 3.1 tokenizers from the zoo):

* round trip (``parse_render``) and soundness (``render_parse``) of the parser;
* no forgery: reserved ids sit exactly where the layout placed control tokens;
* extension: prefix stability of the stable formats, Qwen3's extension at generation prompts,
  and ``prompt_prefix`` for sampled turns (ids, mask and owners);
* the loss mask: only assistant messages are learned; sampled turns are learned exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import lvt
from lvt.families import erase
from lvt.model import Conversation, Message, Role, Sampled
from lvt.runtime import core
from strategies import conversations, example_count, token_streams

FORMATS = {"qwen2.5": "qwen2.5", "qwen3": "qwen3", "qwen3-stable": "qwen3",
           "llama3.1": "llama3.1"}
N = example_count(120)
#: Properties take real tokenizers from module fixtures and are slow per example.
SLOW_FIXTURE = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


_ENCODERS: dict[str, lvt.ChatEncoder] = {}


def encoder(fmt: str) -> lvt.ChatEncoder:
    """One encoder per format, with its real tokenizer."""
    from lvt import zoo

    if fmt not in _ENCODERS:
        _ENCODERS[fmt] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(FORMATS[fmt]), fmt)
    return _ENCODERS[fmt]


@pytest.fixture(params=list(FORMATS))
def enc(request):
    return encoder(request.param)


@pytest.fixture(params=["qwen2.5", "qwen3-stable", "llama3.1"])
def stable_enc(request):
    return encoder(request.param)


@pytest.fixture(params=["qwen3", "qwen3-stable"])
def qwen3_enc(request):
    return encoder(request.param)


def _render(enc, c):
    items = enc.family.layout(enc.lower(c))
    return items, core.encode_items(enc.codec, items)


def _lower_or_skip(enc, c):
    try:
        return enc.lower(c)
    except lvt.ConversationError:
        assume(False)


def _sample_ids(enc):
    """Ids a policy could sample: text ids and the format's in-body control ids."""
    body = [t for t in enc.reserved if _body_ctrl(enc, t)]
    return tuple(range(200, 260)) + tuple(body)


def _body_ctrl(enc, t):
    ids = enc.family.ids
    return hasattr(ids, "body_ctrl") and ids.body_ctrl(t)


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW_FIXTURE)
@given(data=st.data())
def test_parse_render(enc, data) -> None:
    """``parse_render``: parsing a render gives back the lowered conversation."""
    c = data.draw(conversations(enc.format_name))
    q = _lower_or_skip(enc, c)
    ids = enc.encode(c).ids
    assert enc.parse_lowered(ids) == erase(q)


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW_FIXTURE)
@given(data=st.data())
def test_render_parse_on_mutated_streams(enc, data) -> None:
    """``render_parse``: whatever the parser accepts re-renders to exactly its input."""
    c = data.draw(conversations(enc.format_name, max_turns=2))
    q = _lower_or_skip(enc, c)
    base = core.encode_items(enc.codec, enc.family.layout(q))[0]
    ts = data.draw(token_streams(enc, base))
    try:
        back = enc.parse_lowered(ts)
    except lvt.ParseError:
        return
    assert core.encode_items(enc.codec, enc.family.layout(back))[0] == ts


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW_FIXTURE)
@given(data=st.data())
def test_no_forgery(enc, data) -> None:
    """``no_forgery``: the reserved ids of a render are exactly the layout's control tokens,
    in order, whatever the text spells."""
    c = data.draw(conversations(enc.format_name))
    _lower_or_skip(enc, c)
    items, (ids, _, _, src) = _render(enc, c)
    res = enc.reserved
    assert [t for t in ids if t in res] == [i.value for i in items if i.kind == core.CTRL]
    assert all(s == 0 for t, s in zip(ids, src, strict=True) if t in res)


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW_FIXTURE)
@given(data=st.data())
def test_prefix_stability(stable_enc, data) -> None:
    """``prefix_stable``: for the stable formats the render of a conversation is a prefix of
    the render of every extension (ids, mask and owners), unless a tool result follows a tool
    result. Exact Qwen3 rewrites history (``test_exact_history_rewrite_is_real``)."""
    enc = stable_enc
    c = data.draw(conversations(enc.format_name))
    _lower_or_skip(enc, c)
    full = enc.encode(c)
    for k in range(1, len(c.messages)):
        if c.messages[k - 1].role == Role.TOOL and c.messages[k].role == Role.TOOL:
            continue
        head = Conversation(c.messages[:k], False, c.tools)
        try:
            part = enc.encode(head)
        except lvt.ConversationError:
            continue  # e.g. Llama with tools needs the first user message
        n = len(part)
        assert np.array_equal(full.ids[:n], part.ids)
        assert np.array_equal(full.mask[:n], part.mask)
        assert np.array_equal(full.owner[:n], part.owner)


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW_FIXTURE)
@given(data=st.data())
def test_prompt_prefix_and_extension(enc, data) -> None:
    """``prompt_prefix`` and (Qwen3) ``extension_exact``: the generation prompt, the sampled
    tokens and the end of turn are the training render; later appends without a user
    message keep extending it."""
    c = data.draw(conversations(enc.format_name))
    ms = list(c.messages)
    while ms and ms[-1].role == Role.ASSISTANT:
        ms.pop()
    assume(ms)
    prompt_conv = Conversation(ms, True, c.tools)
    try:
        prompt = enc.encode(prompt_conv)
    except lvt.ConversationError:
        assume(False)
    ts = data.draw(st.lists(st.sampled_from(_sample_ids(enc)), max_size=16))
    train = enc.encode(Conversation([*ms, Message(Role.ASSISTANT, (Sampled(ts),))], False,
                                    c.tools))
    footer = core.encode_items(enc.codec, _footer(enc, len(ms)))
    n, k = len(prompt), len(ts)
    assert train.ids.tolist() == prompt.ids.tolist() + list(ts) + footer[0]
    assert train.mask.tolist() == prompt.mask.tolist() + [1] * k + footer[1]
    assert train.owner.tolist() == prompt.owner.tolist() + [len(ms)] * k + footer[2]
    # appending tool results and more sampled turns (no user message) keeps extending
    more = [Message(Role.TOOL, ()), Message(Role.ASSISTANT, (Sampled(ts[:3]),))]
    try:
        later = enc.encode(Conversation([*ms, Message(Role.ASSISTANT, (Sampled(ts),)), *more],
                                        False, c.tools))
    except lvt.ConversationError:
        return
    assert later.ids[:n].tolist() == prompt.ids.tolist()


def _footer(enc, o):
    fam = enc.family
    if hasattr(fam, "footer"):
        return fam.footer(o, True)
    return [core.ctrl(fam.ids.eot, o, True)]


def test_exact_history_rewrite_is_real(qwen3_enc) -> None:
    """``exact_not_prefix``: Qwen3 (exact) drops a think block once a user message follows,
    so the earlier render is not a prefix; Qwen3-stable keeps it."""
    enc = qwen3_enc
    from lvt.model import Plain, Reasoning, Text

    a = Message(Role.ASSISTANT, (Reasoning(Text("think")), Plain(Text("answer"))))
    ms = [Message(Role.USER, (Plain(Text("q1")),)), a]
    r1 = enc.encode(Conversation(ms)).ids.tolist()
    r2 = enc.encode(Conversation([*ms, Message(Role.USER, (Plain(Text("q2")),))])).ids.tolist()
    assert (r2[: len(r1)] == r1) == (enc.format_name == "qwen3-stable")


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW_FIXTURE)
@given(data=st.data())
def test_mask_owner_and_sampled(enc, data) -> None:
    """``mask_owner``: a learned token belongs to an assistant message. ``mask_sampled``:
    when every assistant turn is sampled, the learned tokens are exactly each turn's tokens
    followed by its end of turn, owned by its message."""
    c = data.draw(conversations(enc.format_name, sampled=True, sample_ids=_sample_ids(enc)))
    _lower_or_skip(enc, c)
    out = enc.encode(c)
    for t, m, o in zip(out.ids, out.mask, out.owner, strict=True):
        if m:
            assert c.messages[o].role == Role.ASSISTANT, (t, o)
    if all(m.role != Role.ASSISTANT or isinstance(m.blocks[0], Sampled) for m in c.messages
           if m.role != Role.ASSISTANT or m.blocks):
        if any(m.role == Role.ASSISTANT and not m.blocks for m in c.messages):
            return
        eot = enc.family.ids.im_end if hasattr(enc.family.ids, "im_end") else enc.family.ids.eot
        want = [(t, i) for i, m in enumerate(c.messages) if m.role == Role.ASSISTANT
                for t in (*m.blocks[0].ids, eot)]
        got = [(int(t), int(o)) for t, m, o in zip(out.ids, out.mask, out.owner, strict=True)
               if m]
        assert got == want


def test_sampled_turn_refuses_turn_level_control_ids(enc) -> None:
    """A sampled turn may hold the in-body control tokens the model writes, never a
    turn-level one (a forged end of turn)."""
    ids = enc.family.ids
    turn = ids.im_start if hasattr(ids, "im_start") else ids.start_header
    c = Conversation([Message(Role.USER, ()), Message(Role.ASSISTANT, (Sampled([5, turn]),))])
    with pytest.raises(lvt.ConversationError, match="control id"):
        enc.encode(c)
