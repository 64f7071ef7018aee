"""Round trip on random conversations, for every shipped format and model entry with its real
tokenizer (issue 26, items 1-2; issue 21, item 1): whatever ``encode`` accepts, ``parse``
reads back as the normalised conversation, or ``encode`` refuses it with a typed lvt error.

Conversations (:func:`strategies.edge_conversation`) take the shapes each format can
express (probed once on its encoder: tools, calls, parallel calls, reasoning, system
messages) and text on the edges of normalisation: combining sequences in and out of canonical
order, supplementary-plane characters, every family's control strings spelled as text,
SentencePiece markers (U+2581, ``<0x41>``), whitespace-only content, empty and edge arguments
(``""``, ``{"q": ""}``, a JSON escape before a combining mark).

The property, for each conversation ``c``:

* ``encode(c)`` either raises an :class:`~lvt.errors.LvtError` (a typed refusal: counted by
  type) or gives ``ids``;
* ``parse_lowered(ids)`` is the lowered form of the *normalised* ``c``, owners erased
  (``parse_render``: ``parse (render c) = some (lower c)``, texts byte-exact after
  :meth:`~lvt.encoder.ChatEncoder.normalize`);
* ``parse(ids)`` accepts and renders back to exactly ``ids``;
* arguments given as JSON read back as JSON whose value is the normalised value (the user's
  strings normalised before escaping; Mistral writes empty arguments as ``{}``).

Two tests per format: ``test_round_trip_seeded`` (``N`` = 2,000 conversations from a seeded
``random.Random``: the bulk, about 20x faster to draw than hypothesis) and
``test_round_trip_hypothesis`` (100 drawn by hypothesis from the same generator, shrunk on a
failure). ``LVT_HYPOTHESIS_EXAMPLES=M`` raises them to ``M`` and ``M / 10`` (100,000 for a long
run); ``LVT_FUZZ_SEED`` changes the seed. The defaults keep the file near a minute and a half
on 2 cores (tokenizer loading included). Each test prints the count it ran and the tally by
outcome, records the count as the ``conversations`` property (junit XML), and asserts it is
the count asked for.
"""

from __future__ import annotations

import json
import os
import random
import unicodedata
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import lvt
from lvt.errors import LvtError
from lvt.families import erase
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, ToolCall
from lvt.runtime.codec import as_tokenizer
from strategies import ALL_CONTROL_STRINGS, Draws, edge_conversation, roundtrip_conversations
from test_fuzz import real_tokenizer

_ENV = int(os.environ.get("LVT_HYPOTHESIS_EXAMPLES", "0"))
#: Seeded conversations per format (``LVT_HYPOTHESIS_EXAMPLES`` raises it).
N = max(2000, _ENV)
#: Hypothesis conversations per format (a tenth of ``LVT_HYPOTHESIS_EXAMPLES`` when set).
N_HYPOTHESIS = max(100, _ENV // 10)
SEED = int(os.environ.get("LVT_FUZZ_SEED", "20261201"))
FORMATS = lvt.format_names()
_TOOL = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                           "parameters": {"type": "object", "properties": {
                                               "q": {"type": "string"}}}}}]


_POOLS: dict[str, Any] = {}


def encoder(fmt: str) -> lvt.ChatEncoder:
    """The format's encoder on its real tokenizer (formats of one tokenizer share it, and
    share the codec where their control ids agree: :class:`lvt.compare.renderers.EncoderPool`,
    whose encoders are those ``ChatEncoder.from_tokenizer`` builds)."""
    from lvt.compare.renderers import EncoderPool
    from lvt.compare.templates import DEFAULT_TOKENIZERS

    key = DEFAULT_TOKENIZERS.get(fmt) or fmt.removesuffix("-stable")
    if key not in _POOLS:
        _POOLS[key] = EncoderPool(real_tokenizer(fmt))
    return _POOLS[key].get(fmt)


def _accepts(enc: lvt.ChatEncoder, msgs: list[Message], tools: Any = None) -> bool:
    try:
        enc.encode(Conversation(msgs, False, tools))
    except LvtError:
        return False
    return True


def capabilities(enc: lvt.ChatEncoder) -> dict[str, bool]:
    """The conversation shapes ``enc`` renders, probed on small conversations."""
    u, a = Message.text(Role.USER, "hi"), Message.text(Role.ASSISTANT, "ok")
    r = Message.text(Role.TOOL, "sunny")

    def call(n: int) -> Message:
        return Message(Role.ASSISTANT, [ToolCall("get_weather", '{"q": "x"}', f"abcdefgh{k}")
                                        for k in range(n)])

    return {
        "tools": _accepts(enc, [u, a], _TOOL),
        "calls": _accepts(enc, [u, call(1), r, a], _TOOL),
        "parallel": _accepts(enc, [u, call(2), r, r, a], _TOOL),
        "reasoning": _accepts(enc, [u, Message(Role.ASSISTANT, (Reasoning(Text("r")),
                                                                 Plain(Text("a"))))]),
        "system": _accepts(enc, [Message.text(Role.SYSTEM, "s"), u, a]),
        "mid_system": _accepts(enc, [u, Message.text(Role.SYSTEM, "s"), a]),
    }


def controls(enc: lvt.ChatEncoder) -> tuple[str, ...]:
    """Every family's control strings, and this tokenizer's own reserved names."""
    tok = as_tokenizer(enc.tokenizer)
    own = [tok.id_to_token(i) for i in sorted(enc.reserved)]
    return ALL_CONTROL_STRINGS + tuple(x for x in own if x and "reserved" not in x)[:48]


def normal(enc: lvt.ChatEncoder, s: str) -> str:
    """The documented normalisation of a user's string, written out here: Gemma's decoder
    turns U+2581 into a space (Gemma 4's entries run on Gemma 3's vocabulary), and so does
    Mistral 7B v0.3's SentencePiece decoder; Qwen's
    tokenizer applies NFC (also QwQ's, which is Qwen3's vocabulary, and
    DeepSeek-R1-Distill-Qwen's, which is Qwen's vocabulary with DeepSeek's control tokens)."""
    if enc.format_name in ("gemma3", "mistral-7b-v0.3", "gemma4", "gemma4-31b", "gemma4-e4b",
                           "otel-llm-e4b", "phi3", "talkie"):
        s = s.replace("\u2581", " ")
    if enc.format_name.startswith(("qwen", "qwq", "ornith", "deepseek-r1-distill")):
        s = unicodedata.normalize("NFC", s)
    return s


def _map_json(v: Any, f: Any) -> Any:
    if isinstance(v, str):
        return f(v)
    if isinstance(v, list):
        return [_map_json(x, f) for x in v]
    if isinstance(v, dict):
        return {f(k): _map_json(x, f) for k, x in v.items()}
    return v


def _json_args(conv: Conversation) -> list[tuple[str, str]]:
    """``(name, args)`` of every tool call, in order."""
    return [(b.name, b.args) for m in conv.messages for b in m.blocks
            if isinstance(b, ToolCall)]


def check_round_trip(enc: lvt.ChatEncoder, c: Conversation, tally: Counter) -> None:
    """The property on one conversation (see the module docstring)."""
    try:
        ids = enc.encode(c).ids.tolist()
    except LvtError as e:
        tally[f"refused ({type(e).__name__})"] += 1
        return
    norm = enc.normalize(c)
    for m, n in zip(c.messages, norm.messages, strict=True):  # the documented normalisation
        for a, b in zip(m.blocks, n.blocks, strict=True):
            if isinstance(a, Plain | Reasoning) and isinstance(a.payload, Text):
                assert b.payload.text == normal(enc, a.payload.text), (a, b)
    want = erase(enc.family.lower(norm))
    try:
        got = enc.parse_lowered(ids)
        back = enc.parse(ids)
    except LvtError as e:
        raise AssertionError(f"{enc.format_name}: encode accepts, parse refuses: {e}\n"
                             f"conversation={c!r}") from e
    assert got == want, (f"{enc.format_name}: parse reads another conversation\n"
                         f"wrote={want!r}\nread={got!r}\nconversation={c!r}")
    assert enc.encode(back).ids.tolist() == ids, (enc.format_name, c, back)
    read = _json_args(back)
    if len(read) == len(wrote := _json_args(c)):
        for (_, a), (_, b) in zip(wrote, read, strict=True):
            if a == "" and enc.format_name.startswith("mistral"):
                assert b == "{}", b  # mistral-common's `_normalize_json_content`
                continue
            try:
                va = json.loads(a)
            except ValueError:
                continue  # text arguments: compared as text by the lowered form
            # the tokenizer would change it: its strings normalised (the XML calls of the
            # Qwen3.5 structure write every string raw, so NFC reaches escaped ones too)
            if normal(enc, a) != a or lvt.FORMATS[enc.format_name].family == "qwen-xml":
                va = _map_json(va, lambda s: normal(enc, s))
            assert json.loads(b) == va, f"{enc.format_name}: arguments {a!r} read back as {b!r}"
    tally["round trips"] += 1


def _report(fmt: str, kind: str, tally: Counter, want: int, caps: dict[str, bool],
            record_property: Any) -> None:
    total = sum(tally.values())
    print(f"roundtrip {fmt} ({kind}): {total} conversations ({dict(sorted(tally.items()))}; "
          f"shapes {sorted(k for k, v in caps.items() if v)})")
    record_property("conversations", total)
    assert total == want, f"{fmt}: ran {total} of {want}"
    assert tally["round trips"] >= want // 4, (fmt, dict(tally))


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_seeded(fmt: str, record_property: Any) -> None:
    """``N`` seeded conversations per format (fast: the bulk of the count)."""
    enc = encoder(fmt)
    caps, ctl = capabilities(enc), controls(enc)
    rng = random.Random(f"{SEED}:{fmt}")
    tally: Counter = Counter()
    for _ in range(N):
        check_round_trip(enc, edge_conversation(Draws.seeded(rng), caps, ctl), tally)
    _report(fmt, "seeded", tally, N, caps, record_property)


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_hypothesis(fmt: str, record_property: Any) -> None:
    """``N_HYPOTHESIS`` conversations per format drawn by hypothesis: a failure shrinks to a
    small conversation."""
    enc = encoder(fmt)
    caps = capabilities(enc)
    tally: Counter = Counter()

    @settings(max_examples=N_HYPOTHESIS, phases=[Phase.generate, Phase.shrink],
              database=None, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(roundtrip_conversations(caps, controls(enc)))
    def prop(c: Conversation) -> None:
        check_round_trip(enc, c, tally)

    prop()
    _report(fmt, "hypothesis", tally, N_HYPOTHESIS, caps, record_property)
