"""Conversation files for ``lvt check`` and ``lvt encode``: JSONL, one conversation a line.

A line is a JSON object ::

    {"id": "...",                       # optional (default: line<N>)
     "messages": [...],                 # OpenAI/HF chat messages (required, non-empty)
     "tools": [...],                    # optional JSON tool schemas
     "add_generation_prompt": false,    # optional: render the generation prompt after it
     "options": {"enable_thinking": false}}   # optional template options of this line

or a bare list of messages. Blank lines are ignored. ``options`` are the format's template
options (:attr:`lvt.formats.FormatSpec.options`); they override the command-line options for
that line and go to both lvt and the template.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from lvt.errors import InputError

__all__ = [
    "ConversationInput",
    "InputError",
    "parse_conversation_record",
    "read_conversations",
    "sample_path",
]


@dataclass(frozen=True)
class ConversationInput:
    """One conversation in OpenAI/HF chat shape, as read from JSONL.

    Attributes:
        id: the record's ``id`` (or ``line<N>``).
        messages: the messages, as given.
        tools: the tool schemas (``None``: no tools).
        line: 1-based line number in the file (``None`` when built in code).
        add_generation_prompt: render the generation prompt after the messages.
        options: template options of this conversation (override the command line's).
    """

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    line: int | None = None
    add_generation_prompt: bool = False
    options: dict[str, Any] = field(default_factory=dict)


def sample_path() -> Path:
    """Path of the bundled sample set (chat, reasoning and tool-use conversations)."""
    return Path(str(resources.files("lvt") / "data" / "samples.jsonl"))


def parse_conversation_record(
    obj: Any, default_id: str, line: int | None = None
) -> ConversationInput:
    """Accept ``{"messages": [...], "tools": [...], "id": ..., "add_generation_prompt": ...,
    "options": {...}}`` or a bare message list.

    Raises:
        ValueError: the record has neither shape, or a field has the wrong type.
    """
    if isinstance(obj, list):
        obj = {"messages": obj}
    if not isinstance(obj, dict):
        raise ValueError(
            f"expected an object with 'messages' or a list of messages, got {type(obj).__name__}"
        )
    msgs = obj.get("messages")
    if not isinstance(msgs, list) or not all(isinstance(m, dict) for m in msgs):
        raise ValueError("'messages' must be a list of objects")
    if not msgs:
        raise ValueError("'messages' is empty")
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise ValueError("'tools' must be a list")
    agp = obj.get("add_generation_prompt", False)
    if not isinstance(agp, bool):
        raise ValueError("'add_generation_prompt' must be true or false")
    opts = obj.get("options", {})
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise ValueError("'options' must be an object")
    rid = obj.get("id", default_id)
    return ConversationInput(str(rid), msgs, tools or None, line, agp, dict(opts))


def read_conversations(
    path: str | os.PathLike[str] | None = None, limit: int | None = None
) -> list[ConversationInput]:
    """Read a JSONL file of conversations (``None``: the bundled samples).

    Raises:
        InputError: the file cannot be opened, or names the first bad line.
    """
    p = Path(path) if path is not None else sample_path()
    out: list[ConversationInput] = []
    try:
        fh = p.open(encoding="utf-8")
    except OSError as e:
        raise InputError(str(p), None, f"cannot open: {e.strerror or e}") from None
    with fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except json.JSONDecodeError as e:
                    raise InputError(
                        str(p), lineno, f"invalid JSON: {e.msg} (column {e.colno})"
                    ) from None
                try:
                    out.append(parse_conversation_record(obj, f"line{lineno}", lineno))
                except ValueError as e:
                    raise InputError(str(p), lineno, str(e)) from None
                if limit is not None and len(out) >= limit:
                    break
        except UnicodeDecodeError as e:
            raise InputError(str(p), None, f"not UTF-8 text ({e.reason})") from None
    return out
