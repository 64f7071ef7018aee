"""Where :meth:`lvt.ChatEncoder.from_tokenizer` gets its tokenizer and format from: a
``tokenizers.Tokenizer``, a transformers fast tokenizer, a zoo name (which also implies the
format) or a path to a ``tokenizer.json``."""

from __future__ import annotations

from typing import Any

from lvt import formats as _formats
from lvt.errors import ArgumentError, FormatError, InputError

__all__ = ["default_format", "load_tokenizer", "tokenizer_class"]


def tokenizer_class() -> type:
    """``tokenizers.Tokenizer`` (imported on first use)."""
    from tokenizers import Tokenizer

    return Tokenizer


def default_format(tok: Any, fmt: Any) -> Any:
    """The format :meth:`lvt.ChatEncoder.from_tokenizer` uses: ``fmt`` when given, else the one a
    zoo name implies, else ``"qwen2.5"``."""
    if fmt is not None:
        return fmt
    if isinstance(tok, str):
        from lvt.compare.templates import ZOO_FORMATS

        if tok in ZOO_FORMATS:
            return ZOO_FORMATS[tok]
        from lvt import zoo

        if tok in zoo.available():
            raise FormatError(f"zoo tokenizer {tok!r} implies no lvt format; pass format= "
                              f"(one of {_formats.format_names()})")
    return "qwen2.5"


def load_tokenizer(tok: Any) -> Any:
    """The tokenizer ``tok`` names: itself, a zoo entry, or a ``tokenizer.json`` (a file, or
    a directory holding one)."""
    import os
    from pathlib import Path

    if isinstance(tok, str):
        from lvt import zoo
        from lvt.compare.templates import ZOO_FORMATS

        if tok in ZOO_FORMATS or tok in zoo.available():
            return zoo.load_tokenizer(tok)  # LvtError naming a missing package
    elif not isinstance(tok, os.PathLike):
        if not isinstance(getattr(tok, "backend_tokenizer", tok), tokenizer_class()):
            raise ArgumentError("tok", "expected a tokenizers.Tokenizer, a transformers fast "
                                "tokenizer, a zoo name or a path to a tokenizer.json, got "
                                f"{type(tok).__name__}")
        return tok
    p = Path(tok)
    if p.is_dir():
        p = p / "tokenizer.json"
    if not p.is_file():
        from lvt import zoo

        raise InputError(str(tok), None, f"no such tokenizer file {str(p)!r}, and not a zoo "
                         f"name (available: {', '.join(zoo.available())})")
    try:
        return tokenizer_class().from_file(str(p))
    except Exception as e:  # tokenizers raises a bare Exception on a malformed file
        raise InputError(str(p), None, f"cannot load tokenizer: {e}") from None
