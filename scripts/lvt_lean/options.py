"""The Lean options of ``lakefile.lean``, passed to every check.

Lake hands ``leanOptions`` to ``lean`` as ``-D name=value`` and ``moreLeanArgs`` /
``weakLeanArgs`` verbatim; the checker does the same for every module it checks. Only literal
values are understood (``#[⟨`name, true⟩, …]``, ``#["-Dx=y", …]``); anything else under one
of those fields (a conditional, a variable, a value of another shape), or two blocks giving
one option different values, is a :class:`LakefileError` naming the line: an option the
checker silently dropped would check a library other than the one ``lake build`` checks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import CheckError

OPTION_FIELDS = ("leanOptions",)
ARG_FIELDS = ("moreLeanArgs", "weakLeanArgs")
_FIELD_RE = re.compile(r"(?<![\w.])(" + "|".join(OPTION_FIELDS + ARG_FIELDS) + r")\s*:=")
_STRING = r'"(?:[^"\\]|\\.)*"'
_VALUE_RE = re.compile(
    r"^(?:\.(?:ofBool|ofNat|ofString)\s+)?(true|false|\d+|" + _STRING + r")$")
_OPTION_RE = re.compile(r"^⟨\s*`([\w.]+)\s*,\s*(.+?)\s*⟩$", re.S)


class LakefileError(CheckError):
    """A Lean option of the lakefile the checker cannot pass on."""


@dataclass(frozen=True)
class LeanOptions:
    """Options (``-D``) and extra arguments for every ``lean`` run, and where they came from."""

    options: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()
    source: str = "(none)"

    def argv(self) -> list[str]:
        """The command-line arguments: ``-Dname=value`` for each option, then the args."""
        return [f"-D{k}={v}" for k, v in self.options] + list(self.args)

    def digest(self) -> str:
        """What the cache keys cover: the arguments, in order."""
        return hashlib.sha256("\0".join(self.argv()).encode()).hexdigest()


def _strip_comments(text: str) -> str:
    """Blank out Lean comments (nested block comments too), keeping strings and offsets."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out[i:j] = ["\n" if c == "\n" else " " for c in text[i:j]]
            i = j
        else:
            i += 1
    return "".join(out)


def _array_items(text: str, start: int, where: str) -> tuple[list[str], int]:
    """The top-level comma-separated items of the ``#[...]`` at ``start``."""
    if not text.startswith("#[", start):
        raise LakefileError(f"{where}: expected a literal array `#[...]`")
    depth, i, item_start, items = 0, start + 1, start + 2, []
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j
        elif c in "[(⟨{":
            depth += 1
        elif c in "])⟩}":
            depth -= 1
            if depth == 0:
                last = text[item_start:i].strip()
                if last:
                    items.append(last)
                return items, i + 1
        elif c == "," and depth == 1:
            items.append(text[item_start:i].strip())
            item_start = i + 1
        i += 1
    raise LakefileError(f"{where}: unterminated array")


def _lean_string(lit: str) -> str:
    body = lit[1:-1]
    if "\\" in body:
        body = body.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")
    return body


def parse_lakefile(path: Path) -> LeanOptions:
    """The Lean options and arguments ``path`` gives its Lean modules."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LakefileError(f"{path}: cannot read: {e}") from e
    text = _strip_comments(raw)
    options: dict[str, str] = {}
    args: list[str] = []
    for m in _FIELD_RE.finditer(text):
        field = m.group(1)
        where = f"{path}:{text.count(chr(10), 0, m.start()) + 1}: `{field}`"
        value_at = m.end() + len(text[m.end():]) - len(text[m.end():].lstrip())
        items, _ = _array_items(text, value_at, where)
        for item in items:
            if field in OPTION_FIELDS:
                om = _OPTION_RE.match(item)
                vm = _VALUE_RE.match(om.group(2)) if om else None
                if not om or not vm:
                    raise LakefileError(f"{where}: cannot pass the option `{item}` to lean "
                                        "(only ⟨`name, literal⟩ is understood)")
                name, value = om.group(1), vm.group(1)
                if value.startswith('"'):
                    value = _lean_string(value)
                if options.get(name, value) != value:
                    raise LakefileError(f"{where}: option `{name}` set to both "
                                        f"{options[name]} and {value}")
                options[name] = value
            else:
                if not re.fullmatch(_STRING, item):
                    raise LakefileError(f"{where}: cannot pass `{item}` to lean "
                                        "(only string literals are understood)")
                args.append(_lean_string(item))
    return LeanOptions(tuple(sorted(options.items())), tuple(args), str(path))
