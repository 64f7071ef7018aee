"""Layouts, symbol streams and span encoding: the transliteration of ``Verified/Spec/Sym.lean``
and ``Verified/Spec/Span.lean``.

A family lays a lowered conversation out as :class:`Item` s (a control token, text, or
verbatim tokens, each with its owner message and loss bit). :func:`encode_items` encodes every
maximal run of text between two non-text items as *one* string (a span), as the template's
tokenizer does, and gives each token of a span the annotation of the item its first byte lies
in (``assign``). :func:`decode_syms` reads tokens back: it splits at reserved ids, decodes each
run and keeps it only when re-encoding gives the same tokens (``Codec.decodeRun``).

Representation: Lean's symbol stream (``List Sym``, one symbol per character) is a list here
whose elements are ``int`` (a control token) or ``str`` (a maximal, non-empty run of text);
``take_text`` and the other helpers work on that compressed form with the same meaning. The
differential tests compare these functions with the Lean definitions by kernel evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeAlias

from lvt.errors import CodecLawError

__all__ = [
    "CTRL",
    "TEXT",
    "TOKS",
    "Item",
    "Stream",
    "clear_of",
    "ctrl",
    "decode_syms",
    "decode_syms_at",
    "encode_items",
    "is_py_space",
    "join_with",
    "lstrip_char",
    "merge_text",
    "pay",
    "split_at_ctrl",
    "split_first",
    "strip_char",
    "strip_prefix",
    "strip_suffix",
    "syms",
    "take_text",
    "take_text_at",
    "text",
    "text_only",
    "token_index",
    "toks",
    "trim",
]

#: Item kinds (``Piece.ctrl``, ``Piece.text``, ``Piece.toks``).
CTRL, TEXT, TOKS = 0, 1, 2


class Item(NamedTuple):
    """``Verified.Item``: content (``kind``, ``value``) and annotation (``owner``, ``learn``)."""

    kind: int
    value: Any
    owner: int
    learn: bool


#: A symbol stream: control tokens (``int``) and maximal non-empty text runs (``str``).
Stream: TypeAlias = list


def ctrl(t: int, o: int, learn: bool) -> Item:
    """A control item (``ctl``)."""
    return Item(CTRL, t, o, learn)


def text(s: str, o: int, learn: bool) -> Item:
    """A text item (``txt``)."""
    return Item(TEXT, s, o, learn)


def toks(ts: Sequence[int], o: int, learn: bool) -> Item:
    """A verbatim-token item."""
    return Item(TOKS, tuple(ts), o, learn)


def pay(p: str | tuple[int, ...], o: int, learn: bool) -> Item:
    """``pay``: a lowered payload (``str`` text or a token tuple) as an item."""
    if isinstance(p, str):
        return Item(TEXT, p, o, learn)
    return Item(TOKS, p, o, learn)


def text_only(items: Iterable[Item]) -> bool:
    """``textOnly``: the layout has no verbatim-token item (an empty one counts)."""
    return all(i.kind != TOKS for i in items)


def syms(items: Iterable[Item]) -> Stream:
    """``syms``: the symbol stream of a text-only layout (adjacent text merged)."""
    out: Stream = []
    for i in items:
        if i.kind == CTRL:
            out.append(i.value)
        elif i.kind == TEXT:
            if i.value:
                if out and isinstance(out[-1], str):
                    out[-1] += i.value
                else:
                    out.append(i.value)
        else:
            raise ValueError("syms of a layout with verbatim tokens")
    return out


# ---------------------------------------------------------------------------------------------
# Text helpers (Spec/Sym.lean)


def merge_text(s: Iterable[str | int]) -> Stream:
    """A symbol stream with adjacent text runs joined and empty runs dropped (the form
    :func:`syms` and :func:`decode_syms` produce)."""
    out: Stream = []
    for x in s:
        if isinstance(x, str):
            if not x:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += x
                continue
        out.append(x)
    return out


def take_text(s: Stream) -> tuple[str, Stream]:
    """``takeText``: the maximal text prefix and the rest."""
    if s and isinstance(s[0], str):
        return s[0], s[1:]
    return "", s


def take_text_at(s: Stream, k: int) -> tuple[str, int]:
    """``takeText`` of ``s[k:]`` without copying it: the maximal text prefix there and the
    index of the rest (a reader that walks a stream with an index stays linear in its
    length, where one that slices off the rest at every step is quadratic)."""
    if k < len(s) and isinstance(s[k], str):
        return s[k], k + 1
    return "", k


def split_at_ctrl(t: int, s: Stream) -> tuple[Stream, list[Stream]]:
    """``splitAtCtrl``: the part before the first control ``t``, then the part after each."""
    parts: list[Stream] = [[]]
    for x in s:
        if x == t and isinstance(x, int):
            parts.append([])
        else:
            parts[-1].append(x)
    return parts[0], parts[1:]


def strip_prefix(p: str, s: str) -> str | None:
    """``stripPrefix?``: ``r`` when ``s = p + r``."""
    return s[len(p):] if s.startswith(p) else None


def strip_suffix(p: str, s: str) -> str | None:
    """``stripSuffix?``: ``r`` when ``s = r + p``."""
    if not s.endswith(p):
        return None
    return s[: len(s) - len(p)]


def split_first(sep: str, s: str) -> tuple[str, str] | None:
    """``splitFirst``: split at the first occurrence of ``sep``."""
    i = s.find(sep)
    if i < 0:
        return None
    return s[:i], s[i + len(sep):]


def clear_of(sep: str, a: str) -> bool:
    """``clearOf``: ``sep`` occurs in ``a + sep`` only at the end."""
    return (a + sep).find(sep) == len(a)


def join_with(sep: str, parts: Sequence[str]) -> str:
    """``joinWith``."""
    return sep.join(parts)


def is_py_space(c: str) -> bool:
    """``isPySpace``: Python's ``str.isspace`` for one character."""
    n = ord(c)
    return (
        9 <= n <= 13 or 28 <= n <= 32 or n in (0x85, 0xA0, 0x1680)
        or 0x2000 <= n <= 0x200A or n in (0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
    )


def trim(s: str) -> str:
    """``trim``: Jinja's ``| trim`` (Python ``str.strip()``)."""
    return s.strip()


def lstrip_char(c: str, s: str) -> str:
    """``lstripChar``."""
    return s.lstrip(c)


def strip_char(c: str, s: str) -> str:
    """``stripChar``."""
    return s.strip(c)


def parse_pieces(
    one: Callable[[Stream], tuple[Any, Stream] | None],
    between: Stream,
    final: Stream,
    pieces: Sequence[Stream],
) -> list[Any] | None:
    """``parsePieces``: parse each piece; the rest must be ``between`` (``final`` for the
    last)."""
    if not pieces:
        return None
    out = []
    for j, p in enumerate(pieces):
        r = one(p)
        if r is None:
            return None
        if r[1] != (final if j == len(pieces) - 1 else between):
            return None
        out.append(r[0])
    return out


# ---------------------------------------------------------------------------------------------
# Spans (Spec/Span.lean)


class SpanCodec:
    """What :func:`encode_items` and :func:`decode_syms` need from a codec: ``encode_tuples``
    (cached, law-checked encoding of many texts), ``token_byte_length`` and
    ``decode_bytes``. :class:`lvt.runtime.codec.TokenizerCodec` is one."""

    def encode_tuples(self, texts: Sequence[str]) -> list[tuple[int, ...]]:  # pragma: no cover
        raise NotImplementedError

    def token_byte_length(self, t: int) -> int:  # pragma: no cover
        raise NotImplementedError

    def decode_bytes(self, ids: Sequence[int]) -> bytes:  # pragma: no cover
        raise NotImplementedError


def spans_of(items: Sequence[Item]) -> list[str]:
    """The texts of the spans of a layout, in order (what :func:`encode_items` encodes)."""
    out: list[str] = []
    cur: list[str] = []
    for i in items:
        if i.kind == TEXT:
            if i.value:
                cur.append(i.value)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def encode_items(
    codec: Any, items: Sequence[Item], table: dict[str, tuple[int, ...]] | None = None
) -> tuple[list[int], list[int], list[int], list[int]]:
    """``encodeItems``: token ids, loss bits, owners and provenance (0 ctrl, 1 text, 2 toks).

    ``table`` maps span texts to their encodings (for batches: see
    :meth:`lvt.encoder.ChatEncoder.encode_batch`); missing spans are encoded with the codec.
    """
    if table is None:
        table = dict(zip(sp := spans_of(items), codec.encode_tuples(sp), strict=True))
    ids: list[int] = []
    loss: list[int] = []
    own: list[int] = []
    src: list[int] = []
    run: list[Item] = []

    def flush() -> None:
        s = "".join(i.value for i in run)
        ts = table[s]
        n = len(ts)
        ids.extend(ts)
        src.extend([1] * n)
        last = run[-1]
        if all(i.owner == last.owner and i.learn == last.learn for i in run):
            loss.extend([int(last.learn)] * n)
            own.extend([last.owner] * n)
            run.clear()
            return
        # assign: each token takes the annotation of the item its first byte lies in; walk
        # the tokens only up to the start of the last item, the rest take its annotation
        ends = []
        acc = 0
        for i in run:
            acc += len(i.value.encode("utf-8"))
            ends.append(acc)
        last_start = ends[-2]
        off = part = j = 0
        while j < n and off < last_start:
            while off >= ends[part]:
                part += 1
            loss.append(int(run[part].learn))
            own.append(run[part].owner)
            off += codec.token_byte_length(ts[j])
            j += 1
        loss.extend([int(last.learn)] * (n - j))
        own.extend([last.owner] * (n - j))
        run.clear()

    for i in items:
        if i.kind == TEXT:
            if i.value:
                run.append(i)
            continue
        if run:
            flush()
        if i.kind == CTRL:
            ids.append(i.value)
            loss.append(int(i.learn))
            own.append(i.owner)
            src.append(0)
        else:
            n = len(i.value)
            ids.extend(i.value)
            loss.extend([int(i.learn)] * n)
            own.extend([i.owner] * n)
            src.extend([2] * n)
    if run:
        flush()
    return ids, loss, own, src


def decode_syms(codec: Any, reserved: frozenset[int], ids: Sequence[int]) -> Stream | None:
    """``decodeSyms``: the symbol stream of a token list, or ``None`` when a run between
    reserved ids is not the exact encoding of its text."""
    return decode_syms_at(codec, reserved, ids)[0]


def decode_syms_at(
    codec: Any, reserved: frozenset[int], ids: Sequence[int]
) -> tuple[Stream, None] | tuple[None, int]:
    """:func:`decode_syms` in one pass that also says where it failed: ``(stream, None)``,
    or ``(None, start)`` with the index of the first token of the first run that is not the
    exact encoding of its text.

    The runs are split and decoded in one pass (up to the first that does not decode to
    non-empty UTF-8), then re-encoded in one batch (one tokenizer call, not one per run);
    the first run whose re-encoding differs, or else the first that did not decode, is the
    failure.
    """
    out: Stream = []
    runs: list[tuple[int, int, str]] = []  # (start, end, text) of each non-empty run
    bad: int | None = None  # start of the first run that does not decode
    start = 0
    n = len(ids)

    def decode(a: int, b: int) -> str | None:
        try:
            s = codec.decode_bytes(tuple(ids[a:b])).decode("utf-8")
        except (UnicodeDecodeError, ValueError):
            return None
        # ``encodeRun``: empty text encodes to nothing, so a run never decodes to ""
        return s or None

    for j in range(n + 1):
        if j < n and ids[j] not in reserved:
            continue
        if j > start:
            s = decode(start, j)
            if s is None:
                bad = start
                break
            runs.append((start, j, s))
            out.append(s)
        if j < n:
            out.append(int(ids[j]))
        start = j + 1
    try:
        encoded = codec.encode_tuples([s for _, _, s in runs])
    except CodecLawError as e:  # a decoded text that does not encode lawfully: no render
        return None, next((a for a, _, s in runs if s == e.text), runs[0][0])
    for (a, b, _), e in zip(runs, encoded, strict=True):
        if e != tuple(ids[a:b]):
            return None, a
    if bad is not None:
        return None, bad
    return out, None


def token_index(s: Stream, k: int, ts: Sequence[int], reserved: frozenset[int]) -> int:
    """The index in ``ts`` of the first token of symbol ``k`` of its stream ``s`` (a control
    symbol is one token; a text symbol the run of tokens up to the next reserved id)."""
    pos, n = 0, len(ts)
    for x in s[:k]:
        if isinstance(x, int):
            pos += 1
        else:
            while pos < n and ts[pos] not in reserved:
                pos += 1
    return pos
