"""Every ``python`` snippet of README.md runs as written, each in a fresh interpreter (the
snippets define what they use: tiny random models stand in for a user's policy)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SNIPPETS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def test_readme_has_the_snippets() -> None:
    assert len(SNIPPETS) >= 5
    assert any("read_completion" in s and "run_agent" in s for s in SNIPPETS)


@pytest.mark.parametrize("k", range(len(SNIPPETS)))
def test_readme_snippet_runs(k: int, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SNIPPETS[k]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"README snippet {k}:\n{SNIPPETS[k]}\n{proc.stderr[-3000:]}"
