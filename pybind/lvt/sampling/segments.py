"""The pieces a sampled completion is read from: runs of text between control tokens, each with
its token span, and the lenient JSON and reasoning helpers the family readers share.

A control token is recognised only as its id, never as text that spells it: a model that
samples the characters ``<tool_call>`` as ordinary tokens wrote text, as the render of that text
would (the no-forgery property of the formats). Text is decoded without the re-encoding check (a
policy may sample a non-canonical segmentation) and with replacement characters where the bytes
are not UTF-8 (a cut in the middle of a character), which is reported, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lvt.sampling.completion import Problem

__all__ = ["Reading", "Seg", "end_of", "find", "join", "json_object", "json_values",
           "name_and_arguments", "segments", "split_think", "stray"]


@dataclass(frozen=True)
class Seg:
    """A control token (``ctrl`` is its id, ``text`` its spelling) or a run of text tokens,
    covering tokens ``[start, end)`` of the completion."""

    ctrl: int | None
    text: str
    start: int
    end: int


@dataclass
class Reading:
    """What a family reader found (before termination and canonicity are decided)."""

    content: str = ""
    reasoning: str | None = None
    calls: list[Any] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def segments(codec: Any, reserved: frozenset[int], ids: Sequence[int]
             ) -> tuple[list[Seg], list[Problem]]:
    """The completion as control tokens and decoded text runs, and where a run is not UTF-8."""
    out: list[Seg] = []
    problems: list[Problem] = []
    start = 0

    def flush(end: int) -> None:
        if end > start:
            raw = codec.decode_bytes(ids[start:end])
            try:
                s = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                s = raw.decode("utf-8", errors="replace")
                problems.append(Problem(start, f"the text tokens from here are not valid UTF-8 "
                                               f"({e.reason} at byte {e.start})"))
            out.append(Seg(None, s, start, end))

    for k, t in enumerate(ids):
        if t in reserved:
            flush(k)
            out.append(Seg(t, codec.decode_bytes([t]).decode("utf-8", errors="replace"),
                           k, k + 1))
            start = k + 1
    flush(len(ids))
    return out, problems


def join(segs: Sequence[Seg], problems: list[Problem], what: str) -> str:
    """The text of ``segs``; a control token among them is reported (as out of place in
    ``what``) and left out."""
    parts = []
    for s in segs:
        if s.ctrl is None:
            parts.append(s.text)
        else:
            problems.append(stray(s, what))
    return "".join(parts)


def stray(s: Seg, what: str) -> Problem:
    """The problem of a control token where the format has none."""
    return Problem(s.start, f"control token {s.text!r} inside {what}")


def find(segs: Sequence[Seg], ctrl: int | None, start: int = 0) -> int | None:
    """The index of the first segment at or after ``start`` that is control token ``ctrl``."""
    if ctrl is None:
        return None
    return next((k for k in range(start, len(segs)) if segs[k].ctrl == ctrl), None)


def end_of(segs: Sequence[Seg], default: int) -> int:
    """The token index just after ``segs`` (``default`` when empty)."""
    return segs[-1].end if segs else default


def split_think(segs: list[Seg], think: tuple[int, int] | None, opened: bool,
                problems: list[Problem]) -> tuple[str | None, list[Seg]]:
    """The reasoning block and what follows it.

    The block opens with the opening token at the start of the turn (after whitespace) or in
    the generation prompt (``opened``), and closes at the first closing token. A closing token
    without an opening one closes a block that began with the turn (models whose prompt opens
    the block often do not repeat it). A block never closed holds the rest of the turn.
    Newlines around the reasoning are dropped (``reasoning_content.strip('\\n')``).
    """
    if think is None:
        return None, segs
    a, b = think
    k = 0
    while k < len(segs) and segs[k].ctrl is None and not segs[k].text.strip():
        k += 1
    here = k < len(segs) and segs[k].ctrl == a
    body_from = k + 1 if here else 0
    close = find(segs, b, body_from)
    if not (here or opened or close is not None):
        return None, segs
    body = segs[body_from:close] if close is not None else segs[body_from:]
    reasoning = join(body, problems, "the reasoning").strip("\n")
    if close is None:
        problems.append(Problem(end_of(segs, 0), "the reasoning block is not closed"))
        return reasoning, []
    return reasoning, segs[close + 1:]


def json_object(raw: str) -> dict[str, Any] | None:
    """``raw`` parsed as a JSON object, else ``None``."""
    try:
        v = json.loads(raw)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def name_and_arguments(obj: dict[str, Any]) -> tuple[str, dict[str, Any] | None, str]:
    """A ``{"name": …, "arguments"|"parameters": …}`` call object's name, arguments (an object,
    or a JSON string holding one) and argument text."""
    name = obj.get("name")
    args = obj.get("arguments", obj.get("parameters"))
    if isinstance(args, str):
        return (name if isinstance(name, str) else ""), json_object(args), args
    raw = json.dumps(args, ensure_ascii=False) if args is not None else ""
    return (name if isinstance(name, str) else ""), (args if isinstance(args, dict) else None), raw


def json_values(text: str) -> list[tuple[Any, str]] | None:
    """Consecutive JSON values separated by whitespace and ``;`` (Llama's parallel calls),
    each with its source text; ``None`` when ``text`` is not such a sequence."""
    dec = json.JSONDecoder()
    out: list[tuple[Any, str]] = []
    k = 0
    n = len(text)
    while True:
        while k < n and (text[k].isspace() or text[k] == ";"):
            k += 1
        if k >= n:
            return out or None
        try:
            v, e = dec.raw_decode(text, k)
        except ValueError:
            return None
        out.append((v, text[k:e]))
        k = e
