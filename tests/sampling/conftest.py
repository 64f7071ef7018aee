"""Encoders of the shipped formats on their real zoo tokenizers, and ``ids(enc, text)``: the ids
of a completion written as text, control tokens spelled by name (the tokenizer maps an added
token's spelling to its id, as a model samples it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture(scope="session")
def enc() -> Callable[..., Any]:
    """``enc(format, tokenizer=None, **options)``: a cached encoder."""
    from lvt import zoo
    from lvt.encoder import ChatEncoder
    from lvt.formats import get_spec

    cache: dict[Any, Any] = {}

    def get(fmt: str, tokenizer: str | None = None, **options: Any) -> Any:
        key = (fmt, tokenizer, tuple(sorted(options.items())))
        if key not in cache:
            tok = zoo.load_tokenizer(tokenizer or get_spec(fmt).tokenizer)
            cache[key] = ChatEncoder.from_tokenizer(tok, format=fmt, **options)
        return cache[key]

    return get


@pytest.fixture(scope="session")
def ids() -> Callable[..., list[int]]:
    """``ids(enc, *parts)``: a string part is encoded (added tokens by name), a list part is
    taken as ids (to spell a control token's text as ordinary tokens, encode it in halves)."""

    def get(e: Any, *parts: str | list[int]) -> list[int]:
        out: list[int] = []
        for p in parts:
            out += p if isinstance(p, list) else e.tokenizer.encode(
                p, add_special_tokens=False).ids
        return out

    return get
