"""The proof-escape scan and the theorem count, on Lean source with comments and strings
removed."""

from __future__ import annotations

import re
from pathlib import Path

FORBIDDEN = ("sorry", "admit", "axiom", "native_decide", "implemented_by", "extern")
THEOREM_RE = re.compile(r"^\s*(?:@\[[^\]]*\]\s*)?(?:(?:private|protected)\s+)?theorem\s+\S+", re.M)

_IDENT_CHAR = re.compile(r"[\w'.!?]")
_CHAR_LITERAL = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'")


def strip_comments_and_strings(text: str) -> str:
    """Remove Lean comments (nested block comments too), string and char literals, keeping
    line structure."""
    out: list[str] = []
    i, n, depth = 0, len(text), 0
    while i < n:
        if depth:
            if text.startswith("/-", i):
                depth += 1
                i += 2
            elif text.startswith("-/", i):
                depth -= 1
                i += 2
            else:
                if text[i] == "\n":
                    out.append("\n")
                i += 1
        elif text.startswith("/-", i):
            depth = 1
            i += 2
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            # keep the newlines of a multi-line string so later line numbers stay right
            out.append('""' + "\n" * text.count("\n", i, min(j, n)))
            i = j + 1
        elif text[i] == "'" and (i == 0 or not _IDENT_CHAR.match(text[i - 1])):
            m = _CHAR_LITERAL.match(text, i)
            if m:
                out.append("' '")
                i = m.end()
            else:
                out.append(text[i])
                i += 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def forbidden_hits(root: Path, files: list[Path]) -> list[str]:
    """Every forbidden proof escape in ``files`` outside comments and strings, as
    ``path:line: forbidden `word```."""
    hits = []
    pattern = re.compile(r"(?<![\w.'])(" + "|".join(FORBIDDEN) + r")(?![\w'])")
    for f in files:
        code = strip_comments_and_strings(f.read_text(encoding="utf-8"))
        for lineno, line in enumerate(code.splitlines(), 1):
            for m in pattern.finditer(line):
                hits.append(f"{f.relative_to(root)}:{lineno}: forbidden `{m.group(1)}`")
    return hits


def count_theorems(files: list[Path]) -> int:
    """How many `theorem` declarations ``files`` hold (outside comments)."""
    return sum(len(THEOREM_RE.findall(strip_comments_and_strings(f.read_text(encoding="utf-8"))))
               for f in files)
