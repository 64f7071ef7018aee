"""Lean's module header, read as Lean reads it, and the staged copy of a module.

The grammar is the one of ``Lean.Parser.Module.header`` (Lean 4.28)::

    header := ("module")? ("prelude")? import*
    import := atomic(("public")? ("meta")? "import") ("all")? ident

with Lean's whitespace between tokens: blanks and newlines, ``--`` line comments and nested
``/- … -/`` block comments. A doc comment (``/--``, ``/-!``) is a token, not whitespace, so it
ends the header, as does any token that does not continue it (``public section`` backtracks
out of the ``import`` rule, as Lean's ``atomic`` does). One module per ``import``: in
``import A B`` the header ends before ``B`` (Lean then fails on ``B`` as a command). A tab or a
lone carriage return in the header is an error, as in Lean, and so is a missing or partial
module name after ``import``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CheckError

KEYWORDS = frozenset({"module", "prelude", "public", "meta", "import", "all"})
# Keyword tokens of Lean's command and term syntax: never a module name (Lean's tokenizer
# reads them as atoms, so `import` followed by one of them is a parse error).
RESERVED = KEYWORDS | frozenset({
    "abbrev", "attribute", "axiom", "by", "class", "def", "deriving", "do", "else", "end",
    "example", "export", "fun", "have", "if", "in", "include", "inductive", "instance",
    "let", "local", "macro", "match", "mutual", "namespace", "noncomputable", "notation",
    "omit", "opaque", "open", "partial", "private", "protected", "scoped", "section",
    "set_option", "show", "structure", "syntax", "then", "theorem", "universe", "unsafe",
    "variable", "where", "with"})


class HeaderError(CheckError):
    """A module header Lean would reject; the message names the file and line."""


@dataclass(frozen=True)
class Import:
    """One ``import`` of a header."""

    module: str
    line: int
    """1-based line where the import command starts (``public``, ``meta`` or ``import``)."""
    public: bool = False
    meta: bool = False
    all: bool = False


@dataclass(frozen=True)
class Header:
    """A parsed header: its parts and where it ends."""

    is_module: bool
    prelude: bool
    imports: tuple[Import, ...]
    last_token_end: int
    """Offset just past the header's last token (0 when the header is empty)."""
    end: int
    """Offset of the first token after the header (whitespace and comments skipped)."""


def _is_id_first(c: str) -> bool:
    o = ord(c)
    return c.isalpha() or c == "_" or 0x2100 <= o <= 0x214F or 0x1D49C <= o <= 0x1D59F


def _is_id_rest(c: str) -> bool:
    o = ord(c)
    return (_is_id_first(c) or c.isdigit() or c in "'!?" or 0x2080 <= o <= 0x208C
            or 0x2090 <= o <= 0x209C or 0x1D62 <= o <= 0x1D6A)


class _Reader:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where

    def line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def fail(self, pos: int, why: str) -> HeaderError:
        return HeaderError(f"{self.where}:{self.line(pos)}: module header: {why}")

    def skip(self, pos: int) -> int:
        """Lean's ``whitespace``: blanks, newlines, line and (nested) block comments."""
        text, n = self.text, len(self.text)
        while pos < n:
            c = text[pos]
            if c == "\t":
                raise self.fail(pos, "tabs are not allowed")
            if c == "\r":
                if not text.startswith("\r\n", pos):
                    raise self.fail(pos, "isolated carriage returns are not allowed")
                pos += 2
            elif c in " \n":
                pos += 1
            elif text.startswith("--", pos):
                j = text.find("\n", pos)
                pos = n if j < 0 else j
            elif text.startswith("/-", pos) and text[pos + 2:pos + 3] not in ("-", "!"):
                start, depth, pos = pos, 1, pos + 2
                while depth:
                    if pos >= n:
                        raise self.fail(start, "unterminated comment")
                    if text.startswith("/-", pos):
                        depth, pos = depth + 1, pos + 2
                    elif text.startswith("-/", pos):
                        depth, pos = depth - 1, pos + 2
                    else:
                        pos += 1
            else:
                break
        return pos

    def ident(self, pos: int) -> tuple[str, int, bool] | None:
        """A dotted identifier at ``pos``: (name, end, whether a part was «escaped»)."""
        text, n = self.text, len(self.text)
        parts: list[str] = []
        escaped = False
        while True:
            if pos < n and text[pos] == "«":
                j = text.find("»", pos + 1)
                if j < 0:
                    raise self.fail(pos, "unterminated «identifier»")
                parts.append(text[pos + 1:j])
                escaped, pos = True, j + 1
            elif pos < n and _is_id_first(text[pos]):
                j = pos + 1
                while j < n and _is_id_rest(text[j]):
                    j += 1
                parts.append(text[pos:j])
                pos = j
            else:
                return None if not parts else (".".join(parts), pos, escaped)
            if pos + 1 < n and text[pos] == "." and (text[pos + 1] == "«"
                                                     or _is_id_first(text[pos + 1])):
                pos += 1
                continue
            return ".".join(parts), pos, escaped

    def keyword(self, pos: int) -> tuple[str, int] | None:
        got = self.ident(pos)
        if got is None or got[2] or got[0] not in KEYWORDS:
            return None
        return got[0], got[1]


def parse_header(text: str, where: str = "<module>") -> Header:
    """Parse the header of a Lean source ``text`` (``where`` names it in errors)."""
    r = _Reader(text, where)
    pos = r.skip(0)
    last = 0
    is_module = prelude = False
    kw = r.keyword(pos)
    if kw and kw[0] == "module":
        is_module, last = True, kw[1]
        pos = r.skip(last)
        kw = r.keyword(pos)
    if kw and kw[0] == "prelude":
        prelude, last = True, kw[1]
        pos = r.skip(last)
    imports: list[Import] = []
    while True:
        p, public, meta = pos, False, False
        kw = r.keyword(p)
        if kw and kw[0] == "public":
            public, p = True, r.skip(kw[1])
            kw = r.keyword(p)
        if kw and kw[0] == "meta":
            meta, p = True, r.skip(kw[1])
            kw = r.keyword(p)
        if not kw or kw[0] != "import":
            break  # `atomic`: nothing of this attempt is consumed
        at = pos
        p = r.skip(kw[1])
        kw = r.keyword(p)
        imp_all = bool(kw and kw[0] == "all")
        if kw and kw[0] == "all":
            p = r.skip(kw[1])
        got = r.ident(p)
        if got is None or (not got[2] and got[0] in RESERVED):
            raise r.fail(p, "expected a module name after `import`")
        name, last, _ = got
        if text[last:last + 1] == ".":
            raise r.fail(last, f"partial module name `{name}.`")
        imports.append(Import(name, r.line(at), public, meta, imp_all))
        pos = r.skip(last)
    return Header(is_module, prelude, tuple(imports), last, pos)


def header_imports(text: str, where: str = "<module>") -> list[str]:
    """The module names a header imports, in order."""
    return [i.module for i in parse_header(text, where).imports]


STAGED_LINE = "noncomputable section"


def staged_text(text: str, where: str = "<module>") -> tuple[str, int | None]:
    """Insert ``noncomputable section`` right after the header.

    Returns the staged text and the 1-based line of the inserted line, or ``None`` when the
    command had to go inline (the header ends mid-line before code or a block comment that
    starts on that line), which shifts no line. Lines after an inserted line are one lower in
    the staged copy; :func:`.runner.parse_messages` maps them back.
    """
    h = parse_header(text, where)
    e = h.last_token_end
    eol = text.find("\n", e)
    rest = text[e:] if eol < 0 else text[e:eol]
    if not rest.strip() or rest.lstrip().startswith("--"):
        line = text.count("\n", 0, e) + 2
        if eol < 0:
            return text + "\n" + STAGED_LINE + "\n", line
        return text[:eol + 1] + STAGED_LINE + "\n" + text[eol + 1:], line
    p = h.end
    bol = text.rfind("\n", 0, p) + 1
    if not text[bol:p].strip():
        return text[:bol] + STAGED_LINE + "\n" + text[bol:], text.count("\n", 0, p) + 1
    return text[:p] + STAGED_LINE + " " + text[p:], None
