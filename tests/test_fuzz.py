"""Bounded-time fuzzing of the parser and the round trip, for every shipped format with its
real tokenizer (the zoo's, else the parity suite's reference file; issue 11, item 5).

* **Random streams**: control ids and runs of random vocabulary ids, into ``parse``.
* **Mutated renders**: renders of the bundled sample conversations, each mutated one to three
  times (drop, insert, replace, swap, duplicate a slice, splice a control id, splice a slice
  of another render, truncate), into ``parse``.

  For both: nothing but an :class:`~lvt.errors.LvtError` may escape (no crash, no raw
  exception), a rejection's position lies in the stream, and every stream the parser
  accepts re-renders to exactly the same ids through the lowered form (``layout
  (parse_lowered ts)``, the ``render_parse`` theorem); ``parse`` either refuses it with a
  ``ParseError`` (a layout no conversation lowers to) or returns a conversation that
  encodes to exactly the same ids.
* **Random conversations** (:func:`strategies.conversations`): encode, parse, encode again:
  the same ids (``parse_render`` on the public API).

Each test prints the counts it ran and asserts they are the counts asked for. Defaults are
small (the whole module takes about 35 s of CPU, tokenizer loading included);
``LVT_FUZZ_N`` multiplies them (``LVT_FUZZ_N=100`` runs 100x as many), ``LVT_FUZZ_SEED``
changes the seed.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import lvt
from lvt import zoo
from lvt.compare.templates import DEFAULT_TOKENIZERS
from lvt.errors import CodecLawError, ConversationError, LvtError, ParseError
from lvt.inputs import read_conversations
from lvt.runtime import core
from strategies import conversations

SCALE = max(1, int(os.environ.get("LVT_FUZZ_N", "1")))
SEED = int(os.environ.get("LVT_FUZZ_SEED", "20261201"))
#: Per format and scale unit: random streams, mutated renders, random conversations.
N_RANDOM, N_MUTATED, N_CONVERSATIONS = 150 * SCALE, 300 * SCALE, 15 * SCALE

FORMATS = lvt.format_names()
_ENCODERS: dict[str, lvt.ChatEncoder] = {}
_RENDERS: dict[str, list[tuple[list[int], bool]]] = {}


def real_tokenizer(fmt: str) -> Any:
    """The format's real tokenizer: its zoo entry, else the reference tokenizer the parity
    suite uses (``parity.templates.family_tokenizer``: Mistral's tekken file, ...)."""
    name = DEFAULT_TOKENIZERS.get(fmt)
    if name is not None:
        return zoo.load_tokenizer(name)
    from parity.templates import family_tokenizer

    try:
        return family_tokenizer(fmt.removesuffix("-stable"))
    except Exception as e:
        pytest.fail(f"format {fmt!r} has no real tokenizer to fuzz it with: {e}")


def encoder(fmt: str) -> lvt.ChatEncoder:
    if fmt not in _ENCODERS:
        _ENCODERS[fmt] = lvt.ChatEncoder.from_tokenizer(real_tokenizer(fmt), fmt)
    return _ENCODERS[fmt]


def renders(fmt: str) -> list[tuple[list[int], bool]]:
    """Renders of the bundled samples the format can express, and whether each has tools."""
    if fmt not in _RENDERS:
        enc = encoder(fmt)
        out = []
        for rec in read_conversations():
            for agp in (False, True):
                try:
                    c = lvt.from_openai(rec.messages, rec.tools, agp)
                    out.append((enc.encode(c).ids.tolist(), c.tools is not None))
                except (ConversationError, CodecLawError):
                    # the format cannot express this sample, or its vocabulary rewrites a text
                    # (a "\u2581" on a SentencePiece whose decoder strips the dummy prefix)
                    continue
        assert len(out) >= 4, f"{fmt}: only {len(out)} samples render"
        _RENDERS[fmt] = out
    return _RENDERS[fmt]


def _reserved(enc: lvt.ChatEncoder) -> list[int]:
    return sorted(enc.reserved)


def _text_ids(enc: lvt.ChatEncoder, rng: random.Random, k: int) -> list[int]:
    """``k`` random ids of the vocabulary that are not control tokens."""
    valid = enc.codec.valid_ids()
    out: list[int] = []
    while len(out) < k:
        t = rng.randrange(len(valid))
        if valid[t] and t not in enc.reserved:
            out.append(t)
    return out


def random_stream(enc: lvt.ChatEncoder, rng: random.Random) -> list[int]:
    """Control ids and runs of vocabulary ids (small ids are common text tokens)."""
    ctrl = _reserved(enc)
    ts: list[int] = []
    for _ in range(rng.randrange(0, 24)):
        r = rng.random()
        if r < 0.4:
            ts.append(rng.choice(ctrl))
        elif r < 0.7:
            ts += [rng.randrange(0, 2000) for _ in range(rng.randrange(1, 5))]
        else:
            ts += _text_ids(enc, rng, rng.randrange(1, 5))
    return ts


def mutate(enc: lvt.ChatEncoder, rng: random.Random, base: list[int],
           others: list[list[int]]) -> tuple[list[int], str]:
    """One to three mutations of ``base``; returns the stream and the operations done."""
    ctrl = _reserved(enc)
    ts = list(base)
    ops = []
    for _ in range(rng.randrange(1, 4)):
        op = rng.choice(("drop", "insert", "replace", "swap", "duplicate", "ctrl", "splice",
                         "truncate"))
        ops.append(op)
        n = len(ts)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randrange(1, 8))
        if op == "drop" and n:
            del ts[min(i, n - 1)]
        elif op == "insert":
            ts[i:i] = _text_ids(enc, rng, 1) if rng.random() < 0.5 else [rng.randrange(2000)]
        elif op == "replace" and n:
            ts[min(i, n - 1)] = rng.choice(ctrl) if rng.random() < 0.5 else rng.randrange(2000)
        elif op == "swap" and i + 1 < n:
            ts[i], ts[i + 1] = ts[i + 1], ts[i]
        elif op == "duplicate":
            ts[j:j] = ts[i:j]
        elif op == "ctrl":
            ts[i:i] = [rng.choice(ctrl)]
        elif op == "splice":
            o = rng.choice(others)
            a = rng.randrange(len(o) + 1)
            ts[i:j] = o[a:a + rng.randrange(1, 16)]
        elif op == "truncate":
            ts = ts[:i]
    return ts, "+".join(ops)


def check_stream(enc: lvt.ChatEncoder, ts: list[int], what: str, tally: Counter) -> None:
    """Parse ``ts``: only lvt errors may escape, and an accepted stream re-renders to ``ts``
    through the lowered form and through the public API."""
    try:
        q = enc.parse_lowered(ts)
    except LvtError as e:
        tally[f"rejected ({type(e).__name__})"] += 1
        pos = getattr(e, "position", None)
        assert pos is None or 0 <= pos <= len(ts), f"{what}: position {pos} of {len(ts)}: {e}"
        return
    except Exception as e:  # a crash: report the stream that caused it
        raise AssertionError(f"{enc.format_name}: {what}: {type(e).__name__}: {e}\n"
                             f"stream={ts}") from e
    again = core.encode_items(enc.codec, enc.family.layout(q))[0]
    assert again == ts, f"{enc.format_name}: {what}: accepted but re-renders differently\n{ts}"
    try:
        conv = enc.parse(ts)
    except ParseError:  # a layout no conversation lowers to: parse must refuse it
        tally["layout only, parse refuses"] += 1
        return
    except Exception as e:
        raise AssertionError(f"{enc.format_name}: {what}: parse: {type(e).__name__}: {e}\n"
                             f"stream={ts}") from e
    tally["accepted"] += 1
    assert enc.encode(conv).ids.tolist() == ts, (
        f"{enc.format_name}: {what}: parse then encode differs\n{ts}\n{conv}")


def _report(fmt: str, kind: str, tally: Counter, want: int) -> None:
    total = sum(tally.values())
    print(f"fuzz {fmt} {kind}: {total} streams ({dict(sorted(tally.items()))})")
    assert total == want, f"{fmt} {kind}: ran {total} of {want}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_streams(fmt: str) -> None:
    enc = encoder(fmt)
    rng = random.Random(f"{SEED}:{fmt}:random")
    tally: Counter = Counter()
    for k in range(N_RANDOM):
        check_stream(enc, random_stream(enc, rng), f"random stream {k}", tally)
    _report(fmt, "random", tally, N_RANDOM)


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutated_renders(fmt: str) -> None:
    enc = encoder(fmt)
    samples = renders(fmt)
    for ts, _ in samples:  # the unmutated renders (with tools too) parse, and re-render exactly
        tally0: Counter = Counter()
        check_stream(enc, ts, "a sample render", tally0)
        assert tally0["accepted"] == 1, (fmt, "a sample render does not parse", ts)
    base = [ts for ts, _ in samples]
    rng = random.Random(f"{SEED}:{fmt}:mutate")
    tally: Counter = Counter()
    for k in range(N_MUTATED):
        ts, ops = mutate(enc, rng, rng.choice(base), base)
        check_stream(enc, ts, f"mutation {k} ({ops})", tally)
    _report(fmt, "mutated", tally, N_MUTATED)


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_conversations_round_trip(fmt: str) -> None:
    """``encode (parse (encode c)) = encode c`` on random conversations."""
    enc = encoder(fmt)
    tally: Counter = Counter()

    @settings(max_examples=N_CONVERSATIONS, phases=[Phase.generate], database=None,
              deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(conversations(fmt))
    def prop(c: lvt.Conversation) -> None:
        try:
            ids = enc.encode(c).ids
        except ConversationError:
            tally["not expressible"] += 1
            return
        back = enc.parse(ids)
        assert np.array_equal(enc.encode(back).ids, ids), (fmt, c, back)
        tally["round trips"] += 1

    prop()
    _report(fmt, "conversations", tally, N_CONVERSATIONS)
    assert tally["round trips"] > 0
