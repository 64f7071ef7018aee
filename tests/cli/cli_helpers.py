"""Helpers shared by the CLI tests (a uniquely named module, so that it never clashes with
another directory's conftest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: The shipped formats whose whole parity corpus goes through the CLI (test_cli_corpus.py);
#: every format gets ``lvt check --strict`` on a subset in test_cli_corpus_families.py and its
#: whole-corpus figure in tests/test_formats_registry.py.
FORMATS = ("qwen2.5", "qwen3", "qwen3-stable", "llama3.1")


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Write rows (objects, or raw strings written verbatim) as JSON lines."""
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    """Run ``lvt`` in-process with ``--json``; the exit code and the parsed output."""
    from lvt.cli import main

    rc = main([*argv, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def user(text: str) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": text}


def assistant(text: str | None, **extra: Any) -> dict[str, Any]:
    """An assistant message (``reasoning_content=``, ``tool_calls=`` in ``extra``)."""
    return {"role": "assistant", "content": text, **extra}


def call(name: str, args: Any, cid: str = "call_1") -> dict[str, Any]:
    """A tool call with the given arguments (an object, or a string)."""
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}

#: A tool-use exchange every format renders (one call, object arguments).
TOOL_CONV = {
    "id": "tool",
    "tools": [WEATHER_TOOL],
    "messages": [
        user("Weather in Oslo?"),
        assistant(None, tool_calls=[call("get_weather", {"city": "Oslo"})]),
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "7 C"},
        assistant("It is 7 C."),
    ],
}


def run_lvt(args: list[str], *, cwd: Path | None = None, code: str | None = None,
            timeout: float = 300) -> Any:
    """Run ``lvt ARGS`` in a fresh interpreter (``code``: a Python prelude run first, e.g. to
    set a resource limit; it must end by calling ``lvt.cli.main``); the completed process."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "lvt.cli",
                                                             *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=cwd)


def assert_clean_failure(r: Any, rc: int, *needles: str) -> str:
    """The process exited ``rc`` with a one-line ``lvt: error:`` message (argparse's
    ``lvt CMD: error:`` for usage errors) holding every needle, and no traceback; returns
    that line."""
    err = r.stderr
    assert r.returncode == rc, (r.returncode, err)
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("lvt"), err
    assert ": error: " in last, err
    for n in needles:
        assert n in last, (n, err)
    return last
