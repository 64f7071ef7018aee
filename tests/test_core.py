"""Spans and symbol streams (``lvt.runtime.core``, ``Verified/Spec/Span.lean`` and ``Sym.lean``):
what the differential tests cannot show by themselves (Python's own string functions agree
with the Lean definitions they stand for) and the behaviour of spans on a tokenizer that
merges across item boundaries."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from lvt.runtime import core
from lvt.runtime.codec import TokenizerCodec
from strategies import example_count


def test_is_py_space_is_str_isspace() -> None:
    """``isPySpace`` (what ``trim`` strips) is Python's ``str.isspace`` on every code point."""
    for n in range(sys.maxunicode + 1):
        c = chr(n)
        assert core.is_py_space(c) == c.isspace(), hex(n)


def _split_first(sep: str, s: str) -> tuple[str, str] | None:
    """``splitFirst`` by its definition: the first position where ``sep`` matches."""
    for i in range(len(s) + 1):
        if s[i:].startswith(sep):
            return s[:i], s[i + len(sep):]
    return None


@settings(max_examples=example_count(500), deadline=None)
@given(st.text("ab\n", max_size=4), st.text("ab\n", max_size=12))
def test_string_helpers_follow_their_definitions(sep, s) -> None:
    assert core.split_first(sep, s) == _split_first(sep, s)
    assert core.clear_of(sep, s) == (_split_first(sep, s + sep) == (s, ""))
    assert core.strip_prefix(sep, s) == (s[len(sep):] if s[: len(sep)] == sep else None)
    r = core.strip_suffix(sep, s)
    assert r is None or r + sep == s
    assert (r is None) == (not s.endswith(sep))
    if sep:
        parts = s.split(sep)
        assert core.join_with(sep, parts) == s
        # splitSeq: repeated splitFirst
        rest, want = s, []
        while (x := _split_first(sep, rest)) is not None:
            want.append(x[0])
            rest = x[1]
        assert parts == [*want, rest]


def test_split_at_ctrl_and_take_text() -> None:
    s = ["ab", 5, "c", 5, 7, "d"]
    assert core.split_at_ctrl(5, s) == (["ab"], [["c"], [7, "d"]])
    assert core.split_at_ctrl(9, s) == (s, [])
    assert core.take_text(s) == ("ab", [5, "c", 5, 7, "d"])
    assert core.take_text([5]) == ("", [5])


def test_spans_merge_and_tokens_take_the_annotation_of_their_first_byte(toy_tok) -> None:
    """A text span is encoded as one string, so the tokenizer may merge across two items
    (here ``"t"`` + ``"\\n"``); the merged token takes the annotation of the item its first
    byte lies in."""
    c = TokenizerCodec(toy_tok, [])
    eot = toy_tok.token_to_id("<|eot_id|>")
    items = [core.text("at", 0, False), core.text("\nx", 1, True), core.ctrl(eot, 1, True),
             core.text("y", 2, False)]
    ids, loss, own, src = core.encode_items(c, items)
    assert ids == [*c.encode("at\nx"), eot, *c.encode("y")]
    merged = toy_tok.token_to_id("t\u010a")
    assert merged in ids  # the seam merged
    j = ids.index(merged)
    assert (loss[j], own[j]) == (0, 0)
    assert (loss[j + 1], own[j + 1]) == (1, 1)  # "x"
    assert src == [1] * (len(ids) - 2) + [0, 1]
    # encoding the items one by one would not have merged
    assert merged not in c.encode("at") + c.encode("\nx")


def test_verbatim_tokens_split_spans(toy_tok) -> None:
    c = TokenizerCodec(toy_tok, [])
    items = [core.text("at", 0, False), core.toks([300, 301], 0, True), core.text("\nx", 0, True)]
    ids, loss, _, src = core.encode_items(c, items)
    assert ids == [*c.encode("at"), 300, 301, *c.encode("\nx")]
    assert src[len(c.encode("at")):][:2] == [2, 2]
    assert loss == [0] * len(c.encode("at")) + [1, 1] + [1] * len(c.encode("\nx"))


def test_decode_syms_accepts_exactly_the_canonical_encodings(toy_tok) -> None:
    c = TokenizerCodec(toy_tok, [])
    eot = toy_tok.token_to_id("<|eot_id|>")
    res = frozenset([eot])
    ids = [*c.encode("at\nx"), eot]
    assert core.decode_syms(c, res, ids) == ["at\nx", eot]
    # the same text, segmented differently: not a render
    t, nl = toy_tok.token_to_id("t"), toy_tok.token_to_id("\u010a")
    other = [toy_tok.token_to_id("a"), t, nl, toy_tok.token_to_id("x"), eot]
    assert c.decode_bytes(other[:-1]) == b"at\nx"
    assert core.decode_syms(c, res, other) is None
    # a run that is not UTF-8
    assert core.decode_syms(c, res, [toy_tok.token_to_id("\u00c3")]) is None
