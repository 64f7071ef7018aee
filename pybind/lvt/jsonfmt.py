"""JSON values and the two layouts templates write them in (``Verified/Spec/Json.lean``).

Templates write tool definitions with Jinja's ``tojson`` as ``transformers`` defines it:
``json.dumps(x, ensure_ascii=False)`` (:func:`compact`) or with ``indent=4``
(:func:`pretty`); keys keep their order. Values are first frozen into an immutable tree
(:func:`freeze`): numbers keep the text Python writes for them, so nothing about number
formatting is modelled. ``tests/test_jsonfmt.py`` checks both layouts against ``json.dumps``.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any, TypeAlias

from lvt.errors import ConversationError

__all__ = [
    "JArr", "JNum", "JObj", "Json", "compact", "escape_char", "freeze", "map_strings", "pretty",
    "quote", "quote_spec",
]


@dataclass(frozen=True, slots=True)
class JNum:
    """``Json.num``: a number as the text ``json.dumps`` writes for it."""

    text: str


@dataclass(frozen=True, slots=True)
class JArr:
    """``Json.arr``."""

    items: tuple[Json, ...]


@dataclass(frozen=True, slots=True)
class JObj:
    """``Json.obj``: members in order."""

    members: tuple[tuple[str, Json], ...]


#: ``Verified.Json``: ``None`` (null), ``bool``, :class:`JNum`, ``str``, :class:`JArr`,
#: :class:`JObj`.
Json: TypeAlias = "bool | JNum | str | JArr | JObj | None"

_MAX_DEPTH = 64


def freeze(value: Any, *, where: str = "tool definition", _depth: int = 0) -> Json:
    """An immutable JSON tree from plain Python data (dict, list, tuple, str, int, float,
    bool, None).

    Raises:
        ConversationError: a value that JSON cannot hold, a non-string key, or nesting deeper
            than 64 levels.
    """
    if _depth > _MAX_DEPTH:
        raise ConversationError(None, f"{where}: nested deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, JNum | JArr | JObj):
        return value
    if isinstance(value, int):
        return JNum(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConversationError(None, f"{where}: {value!r} is not a JSON number")
        return JNum(json.dumps(value))
    if isinstance(value, list | tuple):
        return JArr(tuple(freeze(v, where=where, _depth=_depth + 1) for v in value))
    if isinstance(value, dict):
        members = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConversationError(None, f"{where}: object key {k!r} is not a string")
            members.append((k, freeze(v, where=where, _depth=_depth + 1)))
        return JObj(tuple(members))
    raise ConversationError(None, f"{where}: {type(value).__name__} is not JSON data")


def map_strings(j: Json, f: Any) -> Json:
    """Apply ``f`` to every string (keys included) of a JSON tree."""
    if isinstance(j, str):
        return f(j)
    if isinstance(j, JArr):
        return JArr(tuple(map_strings(x, f) for x in j.items))
    if isinstance(j, JObj):
        return JObj(tuple((f(k), map_strings(v, f)) for k, v in j.members))
    return j


def _hex(n: int) -> str:
    """``Json.hexDigit``."""
    return chr(48 + n) if n < 10 else chr(87 + n)


def escape_char(c: str) -> str:
    """``Json.escapeChar``: one character inside a JSON string."""
    if c == '"':
        return '\\"'
    if c == "\\":
        return "\\\\"
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    if c == "\t":
        return "\\t"
    n = ord(c)
    if n == 8:
        return "\\b"
    if n == 12:
        return "\\f"
    if n < 32:
        return "\\u00" + _hex(n // 16) + _hex(n % 16)
    return c


def quote_spec(s: str) -> str:
    """``Json.quote``, character by character (the transliteration)."""
    return '"' + "".join(escape_char(c) for c in s) + '"'


#: ``escapeChar`` as a translation table: every character it changes.
_ESCAPES = {n: escape_char(chr(n)) for n in [*range(32), ord('"'), ord("\\")]}


def quote(s: str) -> str:
    """``Json.quote``: ``s`` as a JSON string literal (``escapeChar`` applied through a
    translation table; equal to :func:`quote_spec`, which the tests check)."""
    return '"' + s.translate(_ESCAPES) + '"'


@functools.lru_cache(maxsize=4096)
def compact(j: Json) -> str:
    """``Json.compact``: ``json.dumps(x, ensure_ascii=False)`` (memoised: tool definitions
    are frozen and shared by every conversation of a batch)."""
    if j is None:
        return "null"
    if j is True:
        return "true"
    if j is False:
        return "false"
    if isinstance(j, JNum):
        return j.text
    if isinstance(j, str):
        return quote(j)
    if isinstance(j, JArr):
        return "[" + ", ".join(compact(x) for x in j.items) + "]"
    return "{" + ", ".join(quote(k) + ": " + compact(v) for k, v in j.members) + "}"


@functools.lru_cache(maxsize=4096)
def pretty(j: Json, level: int = 0) -> str:
    """``Json.pretty``: ``json.dumps(x, ensure_ascii=False, indent=4)`` at nesting ``level``
    (memoised like :func:`compact`)."""
    if isinstance(j, JArr):
        if not j.items:
            return "[]"
        ind = " " * (4 * (level + 1))
        body = ",\n".join(ind + pretty(x, level + 1) for x in j.items)
        return "[\n" + body + "\n" + " " * (4 * level) + "]"
    if isinstance(j, JObj):
        if not j.members:
            return "{}"
        ind = " " * (4 * (level + 1))
        body = ",\n".join(ind + quote(k) + ": " + pretty(v, level + 1) for k, v in j.members)
        return "{\n" + body + "\n" + " " * (4 * level) + "}"
    return compact(j)
