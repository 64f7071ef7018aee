"""The format registry's claims about proofs point at real theorems.

``FormatSpec.proven`` (printed by ``lvt formats``) names the Lean file and theorems that prove
a format's extension property; every named theorem must exist in that file, and the proof
check (``scripts/lean_check``) is what keeps it free of ``sorry``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lvt

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("fmt", lvt.format_names())
def test_proven_names_existing_theorems(fmt: str) -> None:
    spec = lvt.FORMATS[fmt]
    if spec.proven is None:
        assert "not yet proven" in spec.extension or "not proven" in spec.extension \
            or "tested" in spec.extension, (fmt, spec.extension)
        return
    path, _, names = spec.proven.partition(": ")
    src = (ROOT / path).read_text(encoding="utf-8")
    for name in names.split(", "):
        assert re.search(rf"^theorem {re.escape(name)}\b", src, re.M), (fmt, path, name)


def test_the_part_one_families_and_gemma_are_proven() -> None:
    proven = {n for n in lvt.format_names() if lvt.FORMATS[n].proven}
    assert proven == {"qwen2.5", "qwen3", "qwen3-stable", "llama3.1", "gemma3"}
