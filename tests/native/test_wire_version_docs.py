"""Every text that names the FFI wire version names the one ``ffi/lvt.h`` defines.

Docstrings kept naming an older wire version after the wire moved on (issue 21): this scans
the sources, the C headers and the READMEs for "wire version N" / "wire (version N)" /
"Wire layout (version N)" and compares each N with ``LVT_WIRE_VERSION``.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MENTION = re.compile(r"[Ww]ire(?: layout)?\s*\(?version\s+(\d+)")


def test_every_mention_of_the_wire_version_is_lvt_wire_version() -> None:
    header = (REPO / "ffi/lvt.h").read_text(encoding="utf-8")
    m = re.search(r"#define LVT_WIRE_VERSION (\d+)", header)
    assert m, "ffi/lvt.h defines LVT_WIRE_VERSION"
    version = m.group(1)
    files = [*REPO.glob("pybind/lvt/**/*.py"), *REPO.glob("ffi/**/*.[ch]"),
             *REPO.glob("Verified/**/*.lean"), REPO / "Verified.lean", REPO / "lakefile.lean",
             *REPO.glob("*.md"), *REPO.glob("ffi/*.md"), *REPO.glob("tests/native/*.py")]
    found = []
    for f in files:
        if not f.exists():
            continue
        for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for hit in MENTION.finditer(line):
                found.append((f"{f.relative_to(REPO)}:{lineno}", hit.group(1)))
    assert len(found) >= 5, found  # the scan sees the mentions there are
    wrong = [(where, v) for where, v in found if v != version]
    assert wrong == [], f"these name a wire version other than {version}: {wrong}"
