"""Reading back, refusing and lowering are linear in the number of messages, for every shipped
format, checked by counting instead of timing (issue 26 item 5; the timings are
``benchmarks/parse_scaling.py``'s):

* reading a symbol stream back (``unlayout``: what ``parse`` and a refusal run) copies at most
  twice the stream's length in symbols, on a render and on the render with its first symbol
  appended (refused): a reader that slices off the rest of the stream at every turn copies
  about ``len(s) * turns / 2``;
* lowering (what ``encode`` and ``parse``'s re-render check run) reads the messages' roles and
  blocks a number of times linear in the messages: twice the tool rounds read them at most
  twice as often (a lowering that looks through the later messages at every message, as
  gpt-oss's ``future_final_message`` did, reads them about ``n * n / 4`` times).

The conversations are one long agent loop (a user message, ``m`` tool calls each with its
result, an answer, one more exchange) where the format has tool syntax, else as many
alternating user and assistant messages.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

import lvt
from lvt.errors import ConversationError
from lvt.model import Conversation, Message, Role, Text, ToolCall
from lvt.runtime import core

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


@functools.cache
def family(fmt: str) -> Any:
    """The format instance with its real tokenizer's control ids (tokenizers loaded once)."""
    spec = lvt.formats.get_spec(fmt)
    return spec.load(_tokenizer(spec.tokenizer))


@functools.cache
def _tokenizer(name: str) -> Any:
    from lvt import zoo
    from lvt.runtime.codec import as_tokenizer

    return as_tokenizer(zoo.load_tokenizer(name))


class SpyMessage(Message):
    """A message that counts the reads of its role and blocks (in :data:`READS`)."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("role", "blocks"):
            READS[0] += 1
        return super().__getattribute__(name)


READS = [0]


def conversation(fam: Any, m: int, spy: bool = False) -> Conversation:
    """The agent loop with ``m`` tool rounds (``4 + 2m`` messages), or as many alternating
    user and assistant messages where the format refuses tools."""
    cls = SpyMessage if spy else Message

    def msg(role: str, text: str) -> Message:
        return cls(role, (lvt.Plain(Text(text)),))

    def call(j: int) -> Message:
        return cls(Role.ASSISTANT, (ToolCall("lookup", json.dumps({"q": f"w{j}"}),
                                             f"c{j:08d}"),))

    agent = [msg("user", "look these up"),
             *(x for j in range(m) for x in (call(j), msg("tool", f"result {j}"))),
             msg("assistant", "done"), msg("user", "thanks"), msg("assistant", "welcome")]
    try:
        fam.lower(Conversation(agent, False, TOOLS))
        return Conversation(agent, False, TOOLS)
    except ConversationError:
        return Conversation([msg("user" if i % 2 == 0 else "assistant", f"text {i}")
                             for i in range(len(agent))], False, None)


class CountingStream(list):
    """A symbol stream that counts the symbols copied by slicing it (and its slices)."""

    def __init__(self, s: Any, counter: list[int]) -> None:
        super().__init__(s)
        self.counter = counter

    def __getitem__(self, k: Any) -> Any:
        r = super().__getitem__(k)
        if isinstance(k, slice):
            self.counter[0] += len(r)
            return CountingStream(r, self.counter)
        return r

    def __radd__(self, other: Any) -> CountingStream:
        self.counter[0] += len(other) + len(self)
        return CountingStream([*other, *self], self.counter)


FORMATS = lvt.formats.format_names()


@pytest.mark.parametrize("fmt", FORMATS)
def test_reading_a_stream_back_copies_at_most_twice_its_length(fmt: str) -> None:
    fam = family(fmt)
    s = core.syms(fam.layout(fam.lower(conversation(fam, 150))))
    assert len(s) > 600  # hundreds of turns: a per-turn copy of the rest would show
    counter = [0]
    q = fam.unlayout(CountingStream(s, counter))
    assert q is not None and len(q.turns) >= 150
    assert counter[0] <= 2 * len(s), f"{fmt}: {counter[0]} symbols copied for {len(s)}"
    counter[0] = 0
    assert fam.unlayout(CountingStream([*s, s[0]], counter)) is None  # refused at the end
    assert counter[0] <= 2 * len(s), f"{fmt}: {counter[0]} symbols copied for {len(s)}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_lowering_reads_each_message_a_bounded_number_of_times(fmt: str) -> None:
    fam = family(fmt)
    reads = []
    for m in (100, 200):
        c = conversation(fam, m, spy=True)
        READS[0] = 0
        q = fam.lower(c)
        reads.append(READS[0])
        assert len(q.turns) >= len(c.messages) // 2
    assert reads[0] >= 4 + 2 * 100  # every message was read
    assert reads[1] <= 2 * reads[0], f"{fmt}: {reads} reads for 204 and 404 messages"


def test_the_counters_see_a_quadratic_reader_and_lowering() -> None:
    """The measures can fail: a reader slicing off the rest per symbol, a lowering scanning
    the later messages per message."""
    counter = [0]
    s = CountingStream(list(range(1000)), counter)
    while s:
        s = s[1:]
    assert counter[0] > 2 * 1000

    reads = []
    for n in (100, 200):
        ms = [SpyMessage("user", ()) for _ in range(n)]
        READS[0] = 0
        for k in range(n):
            any(x.role == Role.ASSISTANT for x in ms[k + 1:])
        reads.append(READS[0])
    assert reads[1] > 2 * reads[0]
