"""Reading conversation JSONL files line by line, every failure typed and located.

Shared by ``lvt encode`` (:mod:`lvt.datasets.files`) and ``lvt check``: a file that cannot be opened
or read is an :class:`InputFileError` (the CLI's usage error); a line that cannot be used is
a :class:`BadLineError` naming the line: invalid UTF-8, invalid JSON, JSON nested deeper than
the parser's limit, or a record of the wrong shape (:func:`lvt.inputs.parse_conversation_record`).
Nothing here lets a raw ``UnicodeDecodeError``, ``RecursionError`` or ``OSError`` out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from lvt.errors import LvtError
from lvt.inputs import ConversationInput, InputError, parse_conversation_record

__all__ = [
    "BadLineError",
    "DatasetError",
    "InputFileError",
    "LineError",
    "iter_raw_lines",
    "parse_line",
    "read_jsonl",
]


class DatasetError(LvtError):
    """An encode run failed (I/O, or a bad input line in fatal mode)."""


class BadLineError(DatasetError, ValueError):
    """A line of the input could not be used (fatal unless ``skip_bad``).

    Attributes:
        path: the input file.
        line: 1-based line number.
        reason: what was wrong (JSON error, message index and reason, codec law, ...).
    """

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, int, str]]:
        return (type(self), (self.path, self.line, self.reason))


class InputFileError(InputError, DatasetError):
    """The input file cannot be opened or read (missing, a directory, unreadable, an I/O
    error while reading); both an :class:`lvt.inputs.InputError` and a :class:`DatasetError`.
    """

    def __reduce__(self) -> tuple[type, tuple[str, int | None, str]]:
        return (type(self), (self.path, self.line, self.reason))


class LineError(ValueError):
    """Why one line cannot be used (the caller adds the file and the line number)."""


def _reason(e: OSError) -> str:
    return e.strerror or str(e) or type(e).__name__


def open_input(path: str | os.PathLike[str]) -> Path:
    """The input file, checked: it exists, is not a directory and can be opened for reading.

    Raises:
        InputFileError: it cannot be read (the reason named).
    """
    p = Path(path)
    if p.is_dir():
        raise InputFileError(str(p), None, "is a directory, not a JSONL file")
    try:
        with p.open("rb"):
            pass
    except FileNotFoundError:
        raise InputFileError(str(p), None, "no such input file") from None
    except OSError as e:
        raise InputFileError(str(p), None, f"cannot open: {_reason(e)}") from None
    return p


def iter_raw_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw bytes)`` of every line of the file (1-based, newline kept).

    Raises:
        InputFileError: the file cannot be opened, or a read fails part way.
    """
    p = open_input(path)
    try:
        with p.open("rb") as f:
            yield from enumerate(f, start=1)
    except OSError as e:
        raise InputFileError(str(p), None, f"read failed: {_reason(e)}") from None


def parse_line(line: int, raw: bytes) -> ConversationInput | None:
    """One line as a conversation record; ``None`` for a blank line.

    Raises:
        LineError: invalid UTF-8 (the byte offset named), invalid JSON (message and column),
            nesting deeper than the JSON parser's limit, or a record of the wrong shape.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LineError(f"invalid UTF-8 at byte {e.start}") from None
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise LineError(f"invalid JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise LineError("JSON nested too deeply (over the parser's depth limit)") from None
    try:
        return parse_conversation_record(obj, f"line{line}", line)
    except RecursionError:
        raise LineError("record nested too deeply") from None
    except (ValueError, TypeError) as e:
        raise LineError(str(e)) from None


def read_jsonl(
    path: str | os.PathLike[str], limit: int | None = None
) -> list[ConversationInput]:
    """The conversations of a JSONL file (blank lines ignored), at most ``limit`` of them.

    Raises:
        InputFileError: the file cannot be opened or read.
        BadLineError: the first line that cannot be used (file and line named).
    """
    out: list[ConversationInput] = []
    if limit is not None and limit <= 0:
        return out
    for n, raw in iter_raw_lines(path):
        try:
            rec = parse_line(n, raw)
        except LineError as e:
            raise BadLineError(str(path), n, str(e)) from None
        if rec is not None:
            out.append(rec)
            if limit is not None and len(out) >= limit:
                break
    return out
