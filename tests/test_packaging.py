"""The wheel holds every package: ``pyproject.toml`` lists each package directory of ``lvt`` and
``lvt_trainer`` (an editable install would import a forgotten one anyway, a wheel would not),
and both ship ``py.typed``."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_and_typed() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(cfg["packages"])
    for name, where in cfg["package-dir"].items():
        base = ROOT / where
        found = {".".join((name, *p.parent.relative_to(base).parts))
                 for p in base.rglob("__init__.py") if "__pycache__" not in p.parts}
        assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"
        assert (base / "py.typed").is_file() and "py.typed" in cfg["package-data"][name], name
