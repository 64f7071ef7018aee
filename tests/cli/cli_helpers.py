"""Helpers shared by the CLI tests (a uniquely named module, so that it never clashes with
another directory's conftest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Write rows (objects, or raw strings written verbatim) as JSON lines."""
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


#: A Llama 3 template that renders content verbatim (no trim): what lvt's llama3 format
#: renders, written the string-then-tokenize way.
EXACT_LLAMA3 = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
