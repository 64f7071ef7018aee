"""Bad input at every public entry point gets one of lvt's typed errors (issue 11, item 3).

Each row of the table is a call a user could plausibly make by mistake; the test asserts the
exact error class (not merely a subclass of ``LvtError``) and that the message names the
argument, the message index or position, and the problem. Rows are grouped by entry point:
``from_openai`` / ``from_openai_batch``, the model constructors (``Conversation``,
``Message``, ``Tokens``, ...), ``ChatEncoder.encode`` / ``encode_batch`` /
``generation_prompt``, ``parse`` / ``parse_completion`` and ``ChatEncoder.from_tokenizer``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lvt
from lvt import zoo
from lvt.errors import (
    ArgumentError,
    ConversationError,
    FormatError,
    InputError,
    LvtError,
    ParseError,
)
from lvt.model import (
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Sampled,
    Text,
    Tokens,
    ToolCall,
)

HI = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def _circular() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["a"] = d
    return d


def _deep_list(n: int) -> list[Any]:
    root: list[Any] = []
    x = root
    for _ in range(n):
        y: list[Any] = []
        x.append(y)
        x = y
    return root


def _deep_json(n: int) -> str:
    return "[" * n + "]" * n


@pytest.fixture(scope="module")
def qwen3() -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3"), "qwen3")


@pytest.fixture(scope="module")
def llama() -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("llama3.1"), "llama3.1")


def _raises(f: Callable[[], Any], cls: type[Exception], *needles: str) -> Exception:
    with pytest.raises(LvtError) as info:
        f()
    e = info.value
    assert type(e) is cls, f"{type(e).__name__} raised, {cls.__name__} expected: {e}"
    for n in needles:
        assert re.search(n, str(e)), f"{n!r} not in {str(e)!r}"
    return e


# -- from_openai / from_openai_batch ---------------------------------------------------------

OPENAI_CASES: list[tuple[str, Callable[[], Any], type[Exception], tuple[str, ...]]] = [
    ("tools a set", lambda: lvt.from_openai(HI, tools={1, 2}), ConversationError,
     ("tools must be a list", "set")),
    ("tools an int", lambda: lvt.from_openai(HI, tools=3), ConversationError,
     ("tools must be a list", "int")),
    ("tools a str", lambda: lvt.from_openai(HI, tools="abc"), ConversationError,
     ("tools must be a list", "str")),
    ("tools a dict", lambda: lvt.from_openai(HI, tools=TOOL), ConversationError,
     ("tools must be a list", "dict")),
    ("tool not an object", lambda: lvt.from_openai(HI, tools=[TOOL, 3]), ConversationError,
     ("tool 1 must be a JSON object", "int")),
    ("tool circular", lambda: lvt.from_openai(HI, tools=[{"a": _circular()}]),
     ConversationError, ("tool 0", "nested deeper than 64")),
    ("tool nested 10^5", lambda: lvt.from_openai(HI, tools=[{"a": _deep_list(100_000)}]),
     ConversationError, ("tool 0", "nested deeper than 64")),
    ("tool holds a set", lambda: lvt.from_openai(HI, tools=[{"a": {1}}]), ConversationError,
     ("tool 0", "set is not JSON data")),
    ("tool NaN", lambda: lvt.from_openai(HI, tools=[{"a": float("nan")}]), ConversationError,
     ("tool 0", "not a JSON number")),
    ("args object nested 10^5", lambda: lvt.from_openai([{
        "role": "assistant", "tool_calls": [{"function": {
            "name": "f", "arguments": {"a": _deep_list(100_000)}}}]}]),
     ConversationError, ("message 0", "tool call 0 arguments", "nested deeper than 64")),
    ("args JSON string nested 10^5", lambda: lvt.from_openai([{
        "role": "assistant", "tool_calls": [{"function": {
            "name": "f", "arguments": _deep_json(100_000)}}]}]),
     ConversationError, ("message 0", "tool call 0 arguments", "nested deeper than 64")),
    ("args JSON string nested 100", lambda: lvt.from_openai([{
        "role": "assistant", "tool_calls": [{"function": {
            "name": "f", "arguments": _deep_json(100)}}]}]),
     ConversationError, ("message 0", "nested deeper than 64")),
    ("args circular", lambda: lvt.from_openai([{
        "role": "assistant", "tool_calls": [{"function": {"name": "f",
                                                          "arguments": _circular()}}]}]),
     ConversationError, ("message 0", "nested deeper than 64")),
    ("messages a str", lambda: lvt.from_openai("hi"), ConversationError,
     ("messages must be a list",)),
    ("messages None", lambda: lvt.from_openai(None), ConversationError,
     ("messages must be a list",)),
    ("messages empty", lambda: lvt.from_openai([]), ConversationError,
     ("empty conversation",)),
    ("message a str", lambda: lvt.from_openai([*HI, "hello"]), ConversationError,
     ("message 1", "must be a dict", "str")),
    ("message an lvt.Message", lambda: lvt.from_openai([Message.text("user", "hi")]),
     ConversationError, ("message 0", "must be a dict", "lvt.Conversation")),
    ("unknown role", lambda: lvt.from_openai([{"role": "robot", "content": "x"}]),
     ConversationError, ("message 0", "unknown role 'robot'")),
    ("role missing", lambda: lvt.from_openai([{"content": "x"}]), ConversationError,
     ("message 0", "unknown role None")),
    ("role a list", lambda: lvt.from_openai([{"role": ["user"], "content": "x"}]),
     ConversationError, ("message 0", "unknown role")),
    ("content an int", lambda: lvt.from_openai([{"role": "user", "content": 3}]),
     ConversationError, ("message 0", "content must be a string", "int")),
    ("content part an image", lambda: lvt.from_openai([{"role": "user", "content": [
        {"type": "image_url", "image_url": "x"}]}]), ConversationError,
     ("message 0", "content part 0", "unsupported type 'image_url'")),
    ("content part a list", lambda: lvt.from_openai([{"role": "user", "content": [
        "a", _deep_list(10)]}]), ConversationError,
     ("message 0", "content part 1 must be a dict", "list")),
    ("lone surrogate", lambda: lvt.from_openai([{"role": "user", "content": "a\ud800"}]),
     ConversationError, ("message 0", "lone surrogate U\\+D800")),
    ("reasoning an int", lambda: lvt.from_openai([{"role": "assistant",
                                                   "reasoning_content": 5}]),
     ConversationError, ("message 0", "reasoning must be a string")),
    ("tool calls on a user", lambda: lvt.from_openai([{"role": "user", "tool_calls": [
        {"function": {"name": "f"}}]}]), ConversationError,
     ("message 0", "only assistant messages carry tool calls")),
    ("tool_calls a dict", lambda: lvt.from_openai([{"role": "assistant", "tool_calls": {
        "function": {"name": "f"}}}]), ConversationError,
     ("message 0", "tool_calls must be a list")),
    ("call name missing", lambda: lvt.from_openai([{"role": "assistant", "tool_calls": [
        {"function": {"arguments": {}}}]}]), ConversationError,
     ("message 0", "tool call 0 name must be a string", "NoneType")),
    ("add_generation_prompt 'no'", lambda: lvt.from_openai(HI, add_generation_prompt="no"),
     ArgumentError, ("add_generation_prompt", "expected True or False", "'no'")),
    ("add_generation_prompt 1", lambda: lvt.from_openai(HI, add_generation_prompt=1),
     ArgumentError, ("add_generation_prompt", "expected True or False")),
    ("add_generation_prompt None", lambda: lvt.from_openai(HI, add_generation_prompt=None),
     ArgumentError, ("add_generation_prompt", "expected True or False")),
    ("batch an int", lambda: lvt.from_openai_batch(3), ArgumentError,
     ("'conversations'", "expected a list of message lists", "int")),
    ("batch a str", lambda: lvt.from_openai_batch("abc"), ArgumentError,
     ("'conversations'", "str")),
    ("batch of messages", lambda: lvt.from_openai_batch(HI), ConversationError,
     ("conversation 0", "messages must be a list")),
    ("batch member bad", lambda: lvt.from_openai_batch([HI, [{"role": "x"}]]),
     ConversationError, ("message 0", "conversation 1", "unknown role 'x'")),
    ("batch add_generation_prompt 'no'",
     lambda: lvt.from_openai_batch([HI], add_generation_prompt="no"), ArgumentError,
     ("add_generation_prompt", "'no'")),
    ("batch tools a str", lambda: lvt.from_openai_batch([HI], tools="abc"), ConversationError,
     ("tools must be a list",)),
]


@pytest.mark.parametrize(("case", "call", "cls", "needles"), OPENAI_CASES,
                         ids=[c[0] for c in OPENAI_CASES])
def test_from_openai_rejects(case: str, call: Any, cls: type[Exception],
                             needles: tuple[str, ...]) -> None:
    _raises(call, cls, *needles)


def test_conversation_error_carries_the_message_index() -> None:
    e = _raises(lambda: lvt.from_openai([*HI, {"role": "user", "content": 3}]),
                ConversationError)
    assert e.message_index == 1


# -- the model constructors ------------------------------------------------------------------

MSG = Message.text("user", "hi")
MODEL_CASES: list[tuple[str, Callable[[], Any], type[Exception], tuple[str, ...]]] = [
    ("Conversation of dicts", lambda: Conversation(HI), ArgumentError,
     ("'messages'", "message 0", "got dict", "lvt.from_openai")),
    ("Conversation of a dict", lambda: Conversation(HI[0]), ArgumentError,
     ("'messages'", "got dict", "from_openai")),
    ("Conversation of str", lambda: Conversation("hi"), ArgumentError,
     ("'messages'", "got str")),
    ("Conversation of None", lambda: Conversation(None), ArgumentError,
     ("'messages'", "NoneType")),
    ("Conversation, 2nd not a Message", lambda: Conversation([MSG, "hi"]), ArgumentError,
     ("'messages'", "message 1", "got str")),
    ("Conversation agp 'no'", lambda: Conversation([MSG], add_generation_prompt="no"),
     ArgumentError, ("'add_generation_prompt'", "'no'")),
    ("Conversation agp 0", lambda: Conversation([MSG], 0), ArgumentError,
     ("'add_generation_prompt'", "expected True or False")),
    ("Conversation tools a str", lambda: Conversation([MSG], tools="abc"), ArgumentError,
     ("'tools'", "str")),
    ("Conversation tools a dict", lambda: Conversation([MSG], tools=TOOL), ArgumentError,
     ("'tools'", "dict")),
    ("Conversation tools an int", lambda: Conversation([MSG], tools=3), ArgumentError,
     ("'tools'", "int")),
    ("Conversation tools circular", lambda: Conversation([MSG], tools=[_circular()]),
     ConversationError, ("tool 0", "nested deeper than 64")),
    ("Conversation tools nested 10^5",
     lambda: Conversation([MSG], tools=[{"a": _deep_list(100_000)}]), ConversationError,
     ("tool 0", "nested deeper than 64")),
    ("Message unknown role", lambda: Message("robot"), ArgumentError,
     ("'role'", "unknown role 'robot'")),
    ("Message role None", lambda: Message(None), ArgumentError, ("'role'", "None")),
    ("Message blocks a str", lambda: Message("user", "hi"), ArgumentError,
     ("'blocks'", "got str", "Message.text")),
    ("Message blocks an int", lambda: Message("user", 3), ArgumentError,
     ("'blocks'", "int")),
    ("Message block a Text", lambda: Message("user", [Text("hi")]), ArgumentError,
     ("'blocks'", "position 0", "got Text", "Plain")),
    ("Message block a dict", lambda: Message("user", [Plain(Text("a")), {"type": "text"}]),
     ArgumentError, ("'blocks'", "position 1", "got dict")),
    ("Text of an int", lambda: Text(3), ArgumentError, ("'text'", "expected a str", "int")),
    ("Plain of a str", lambda: Plain("hi"), ArgumentError,
     ("'payload'", "got str", "lvt.Text")),
    ("Reasoning of None", lambda: Reasoning(None), ArgumentError,
     ("'payload'", "NoneType")),
    ("ToolCall args a dict", lambda: ToolCall("f", {"a": 1}), ArgumentError,
     ("'args'", "got dict", "tool_arguments")),
    ("ToolCall name None", lambda: ToolCall(None, "{}"), ArgumentError,
     ("'name'", "NoneType")),
    ("Tokens 2**64", lambda: Tokens([2**64]), ArgumentError,
     ("'ids'", "position 0", "18446744073709551616", r"outside \[0, 2\*\*32\)")),
    ("Tokens 2**32", lambda: Tokens([5, 2**32]), ArgumentError,
     ("'ids'", "position 1", "outside")),
    ("Tokens negative", lambda: Tokens([1, 2, -1]), ArgumentError,
     ("'ids'", "position 2", "-1", "outside")),
    ("Tokens 1.9", lambda: Tokens([1.9]), ArgumentError,
     ("'ids'", "position 0", "1.9", "float", "expected an integer")),
    ("Tokens 2.0", lambda: Tokens([1, 2.0]), ArgumentError,
     ("'ids'", "position 1", "float")),
    ("Tokens True", lambda: Tokens([True]), ArgumentError,
     ("'ids'", "position 0", "bool")),
    ("Tokens np.bool_", lambda: Tokens([np.bool_(True)]), ArgumentError,
     ("'ids'", "bool")),
    ("Tokens a str", lambda: Tokens("123"), ArgumentError, ("'ids'", "got str")),
    ("Tokens an int", lambda: Tokens(5), ArgumentError, ("'ids'", "got int")),
    ("Tokens None", lambda: Tokens(None), ArgumentError, ("'ids'", "NoneType")),
    ("Tokens nested", lambda: Tokens([[1, 2]]), ArgumentError,
     ("'ids'", "position 0", "nested list")),
    ("Tokens float array", lambda: Tokens(np.array([1.0, 2.0])), ArgumentError,
     ("'ids'", "dtype float64")),
    ("Tokens 2-D array", lambda: Tokens(np.zeros((2, 2), dtype=np.int64)), ArgumentError,
     ("'ids'", r"1-D", r"\(2, 2\)")),
    ("Tokens uint64 2**63", lambda: Tokens(np.array([2**63], dtype=np.uint64)),
     ArgumentError, ("'ids'", "position 0", "outside")),
    ("Tokens int64 negative", lambda: Tokens(np.array([3, -4])), ArgumentError,
     ("'ids'", "position 1", "-4")),
    ("Sampled 0.5", lambda: Sampled([0.5]), ArgumentError, ("'ids'", "float")),
    ("Sampled a str", lambda: Sampled("abc"), ArgumentError, ("'ids'", "str")),
]


@pytest.mark.parametrize(("case", "call", "cls", "needles"), MODEL_CASES,
                         ids=[c[0] for c in MODEL_CASES])
def test_model_constructors_reject(case: str, call: Any, cls: type[Exception],
                                   needles: tuple[str, ...]) -> None:
    _raises(call, cls, *needles)


def test_argument_error_is_a_type_and_a_value_error() -> None:
    """Code written against the raw exceptions Python raised before keeps catching them."""
    e = _raises(lambda: Tokens([1.5]), ArgumentError)
    assert isinstance(e, TypeError) and isinstance(e, ValueError) and isinstance(e, LvtError)
    assert (e.argument, e.position, e.message_index) == ("ids", 0, None)
    e = _raises(lambda: Conversation([MSG, {"role": "user"}]), ArgumentError)
    assert (e.argument, e.message_index) == ("messages", 1)


def test_valid_ids_of_every_integer_kind_are_accepted() -> None:
    """The checks refuse floats and bools, not NumPy or Python integers of any width."""
    want = (0, 7, 2**32 - 1)
    for ids in ([0, 7, 2**32 - 1], (0, 7, 2**32 - 1), np.array(want, dtype=np.uint32),
                np.array(want, dtype=np.int64), [np.int64(0), np.uint16(7), 2**32 - 1],
                iter(want), np.array(want, dtype=object)):
        assert Tokens(ids).ids == want
        assert all(type(t) is int for t in Tokens(ids).ids)
    assert Tokens(range(3)).ids == (0, 1, 2)
    assert Tokens([]).ids == ()
    assert Conversation([MSG], np.bool_(True)).add_generation_prompt is True


# -- encode / encode_batch / generation_prompt -----------------------------------------------


def test_encode_rejects_what_is_not_a_conversation(qwen3: lvt.ChatEncoder) -> None:
    _raises(lambda: qwen3.encode(None), ConversationError, "expected a Conversation",
            "NoneType")
    _raises(lambda: qwen3.encode(HI), ConversationError, "expected a Conversation", "list")
    _raises(lambda: qwen3.generation_prompt(HI[0]), ConversationError,
            "expected a Conversation", "dict")


def test_encode_batch_rejects_what_is_not_a_batch(qwen3: lvt.ChatEncoder) -> None:
    conv = lvt.from_openai(HI)
    _raises(lambda: qwen3.encode_batch(3), ArgumentError, "'convs'", "int")
    _raises(lambda: qwen3.encode_batch(None), ArgumentError, "'convs'", "NoneType")
    _raises(lambda: qwen3.encode_batch("abc"), ArgumentError, "'convs'", "str")
    _raises(lambda: qwen3.encode_batch(conv), ArgumentError, "'convs'", "one Conversation",
            r"encode\(conv\)")
    e = _raises(lambda: qwen3.encode_batch([conv, HI]), ConversationError,
                "conversation 1 of the batch", "expected a Conversation")
    assert e.conversation_index == 1  # type: ignore[attr-defined]
    assert qwen3.encode_batch([]) == []


def test_encode_checks_token_payloads_against_the_vocabulary(
    qwen3: lvt.ChatEncoder, llama: lvt.ChatEncoder
) -> None:
    for enc in (qwen3, llama):
        n = enc.codec.vocab_size
        conv = Conversation([MSG, Message(Role.ASSISTANT, (Plain(Tokens([9, n + 5])),))])
        e = _raises(lambda conv=conv, enc=enc: enc.encode(conv), ConversationError,
                    "message 1", f"id {n + 5}", "position 1", "not in the vocabulary")
        assert e.message_index == 1


# -- parse / parse_completion ----------------------------------------------------------------


def _render(enc: lvt.ChatEncoder) -> np.ndarray:
    return enc.encode(lvt.from_openai([*HI, {"role": "assistant", "content": "yo"}])).ids


PARSE_CASES: list[tuple[str, Callable[[np.ndarray], Any], type[Exception], tuple[str, ...]]] = [
    ("None", lambda ids: None, ArgumentError, ("'ids'", "NoneType")),
    ("a str", lambda ids: "abc", ArgumentError, ("'ids'", "got str")),
    ("bytes", lambda ids: b"\x01\x02", ArgumentError, ("'ids'", "got bytes")),
    ("an int", lambda ids: 5, ArgumentError, ("'ids'", "got int")),
    ("a dict", lambda ids: {"ids": [1]}, ArgumentError, ("'ids'", "got dict")),
    ("ragged", lambda ids: [[1, 2], [3]], ArgumentError,
     ("'ids'", "position 0", "flat sequence", "nested list")),
    ("nested at the end", lambda ids: [*ids.tolist(), [1]], ArgumentError,
     ("'ids'", "position {n}", "nested list")),
    ("2-D array", lambda ids: ids.reshape(1, -1), ArgumentError,
     ("'ids'", "1-D", r"\(1, {n}\)")),
    ("0-D array", lambda ids: np.int64(3), ArgumentError, ("'ids'", "1-D", r"\(\)")),
    ("float array (ids + 0.5)", lambda ids: ids + 0.5, ArgumentError,
     ("'ids'", "dtype float64")),
    ("integral float array", lambda ids: ids.astype(np.float32), ArgumentError,
     ("'ids'", "dtype float32")),
    ("floats in a list", lambda ids: [*ids.tolist()[:3], 1.0], ArgumentError,
     ("'ids'", "position 3", "float")),
    ("bools", lambda ids: [True, True, True], ArgumentError,
     ("'ids'", "position 0", "bool")),
    ("bool array", lambda ids: np.ones(3, dtype=bool), ArgumentError, ("'ids'", "dtype bool")),
    ("str in a list", lambda ids: [1, "2"], ArgumentError, ("'ids'", "position 1", "str")),
    ("None in a list", lambda ids: [1, None], ArgumentError,
     ("'ids'", "position 1", "NoneType")),
    ("2**64 in a list", lambda ids: [*ids.tolist()[:2], 2**64], ParseError,
     ("at token 2", "18446744073709551616", "not in the vocabulary")),
    ("negative id", lambda ids: [*ids.tolist()[:1], -1], ParseError,
     ("at token 1", "-1", "not in the vocabulary")),
    ("id past the vocabulary", lambda ids: np.append(ids, 10**6), ParseError,
     ("at token {n}", "1000000", "not in the vocabulary")),
]


@pytest.mark.parametrize("fmt", ["qwen3", "llama3.1"])
@pytest.mark.parametrize(("case", "make", "cls", "needles"), PARSE_CASES,
                         ids=[c[0] for c in PARSE_CASES])
def test_parse_rejects(request: Any, fmt: str, case: str, make: Any, cls: type[Exception],
                       needles: tuple[str, ...]) -> None:
    enc = request.getfixturevalue("qwen3" if fmt == "qwen3" else "llama")
    ids = _render(enc)
    bad = make(ids)
    needles = tuple(n.replace("{n}", str(len(ids))) for n in needles)  # the render's length
    _raises(lambda: enc.parse(bad), cls, *needles)
    _raises(lambda: enc.parse_lowered(bad), cls, *needles)
    _raises(lambda: enc.parse_completion(bad), cls, *needles)


def test_parse_accepts_integer_ids_of_every_kind(qwen3: lvt.ChatEncoder) -> None:
    ids = _render(qwen3)
    want = qwen3.parse(ids)
    for form in (ids.tolist(), tuple(ids.tolist()), ids.astype(np.int64),
                 ids.astype(np.uint32), [np.int32(t) for t in ids], iter(ids.tolist())):
        assert qwen3.parse(form) == want


def test_parse_names_the_run_that_is_not_an_encoding(qwen3: lvt.ChatEncoder) -> None:
    """A text run that decodes but is not the canonical encoding of its text: the error
    gives the index of the run's first token."""
    ids = _render(qwen3).tolist()
    a, b = qwen3.codec.encode("hi"), qwen3.codec.encode("h") + qwen3.codec.encode("i")
    assert a != b  # "hi" is one token; "h","i" spells the same text non-canonically
    j = next(k for k in range(len(ids)) if ids[k:k + len(a)] == a)
    start = max(k for k in range(j + 1) if k == 0 or ids[k - 1] in qwen3.reserved)
    bad = ids[:j] + b + ids[j + len(a):]
    e = _raises(lambda: qwen3.parse(bad), ParseError, "not the encoding of its text",
                f"at token {start}")
    assert e.position == start


# -- from_tokenizer --------------------------------------------------------------------------


def test_from_tokenizer_missing_path_names_it(tmp_path: Any) -> None:
    missing = str(tmp_path / "nope" / "tokenizer.json")
    e = _raises(lambda: lvt.ChatEncoder.from_tokenizer(missing), InputError,
                re.escape(missing), "no such tokenizer file", "not a zoo name")
    assert e.path == missing
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tmp_path), InputError,
            "no such tokenizer file", re.escape(str(tmp_path / "tokenizer.json")))
    garbage = tmp_path / "tokenizer.json"
    garbage.write_text("{not json", encoding="utf-8")
    e = _raises(lambda: lvt.ChatEncoder.from_tokenizer(str(garbage)), InputError,
                re.escape(str(garbage)), "cannot load tokenizer")


def test_from_tokenizer_rejects_bad_arguments() -> None:
    tok = zoo.load_tokenizer("qwen3")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(3), ArgumentError, "'tok'", "int")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(None), ArgumentError, "'tok'", "NoneType")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, "qwen9"), FormatError, "qwen9")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, 3), FormatError, "int")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, "qwen3", strict="yes"), ArgumentError,
            "'strict'", "'yes'")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, "qwen3", cache_size=-1),
            ArgumentError, "'cache_size'", "-1")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, "qwen3", cache_size=1.5),
            ArgumentError, "'cache_size'", "1.5")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, "qwen3", backend="gpu"),
            ArgumentError, "'backend'", "'gpu'")
    _raises(lambda: lvt.ChatEncoder.from_tokenizer(tok, "qwen3", enable_thinking="no"),
            FormatError, "enable_thinking")


def test_from_tokenizer_zoo_name_implies_its_format() -> None:
    enc = lvt.ChatEncoder.from_tokenizer("llama3.1")
    assert enc.format_name == "llama3.1"
    assert lvt.ChatEncoder.from_tokenizer("llama3.1", format=None).format_name == "llama3.1"
    assert lvt.ChatEncoder.from_tokenizer("qwen3").format_name == "qwen3"
    # an explicit format still wins
    assert lvt.ChatEncoder.from_tokenizer("qwen3", format="qwen3-stable").format_name == (
        "qwen3-stable")
    # and it renders Llama: the BOS and the header control tokens
    ids = enc.encode(lvt.from_openai(HI)).ids
    assert ids[0] == enc.family.ids.bos


def test_parse_refuses_a_layout_no_conversation_renders_to(
    llama: lvt.ChatEncoder, qwen3: lvt.ChatEncoder
) -> None:
    """The format's layout reads an untrimmed Llama body, but the template trims every body:
    ``parse_lowered`` accepts it (the layout round-trips), ``parse`` refuses it and names the
    first token of the body, since no conversation renders to it."""
    ids = _render(llama).tolist()
    fam = llama.family.ids
    heads = [k for k, t in enumerate(ids) if t == fam.end_header]
    a = heads[1] + 1  # the user turn's body: "\n\nhi" up to <|eot_id|>
    b = ids.index(fam.eot, a)
    bad = ids[:a] + llama.codec.encode("\n\n hi ") + ids[b:]
    q = llama.parse_lowered(bad)
    assert core_encode(llama, q) == bad
    e = _raises(lambda: llama.parse(bad), ParseError, "not the render of any conversation",
                f"at token {a}")
    assert e.position == a
    # the empty stream is the layout of no turns; in Qwen3 the empty conversation renders to
    # it (no default system prompt), so there it parses (Qwen2.5 refuses it: its template
    # inserts a default system prompt; see tests/test_fuzz.py)
    assert qwen3.parse([]) == Conversation([])


def core_encode(enc: lvt.ChatEncoder, q: Any) -> list[int]:
    from lvt.runtime import core

    return core.encode_items(enc.codec, enc.family.layout(q))[0]


@pytest.mark.parametrize("fmt", ["qwen3", "llama3.1"])
def test_parse_names_the_turn_that_does_not_read(request: Any, fmt: str) -> None:
    """A turn broken in the middle of a render: the error gives the index of the control
    token that opens that turn (found in the same pass, no second parse)."""
    enc = request.getfixturevalue("qwen3" if fmt == "qwen3" else "llama")
    conv = lvt.from_openai([*HI, {"role": "assistant", "content": "yo"},
                            {"role": "user", "content": "more"}])
    ids = enc.encode(conv).ids.tolist()
    fam = enc.family.ids
    opener, closer = ((fam.im_start, fam.im_end) if fmt == "qwen3"
                      else (fam.start_header, fam.eot))
    starts = [k for k, t in enumerate(ids) if t == opener]
    k = starts[-2]  # the assistant turn
    bad = [*ids[:k + 1], closer, *ids[k + 1:]]
    e = _raises(lambda: enc.parse(bad), ParseError, f"at token {k}",
                f"not a render in format '{fmt}'")
    assert e.position == k
    _raises(lambda: enc.parse_lowered(bad), ParseError, f"at token {k}")
    # a stream that does not open with a turn at all: position 0
    _raises(lambda: enc.parse([closer, *ids]), ParseError, "at token 0")
