"""Checking one module: reuse its verified cached result, or run the wasm Lean on a staged copy
and read Lean's JSON messages."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import store as cache
from .graph import Module
from .header import staged_text
from .options import LeanOptions
from .toolchain import GLOBAL_SLOTS, STACK_MIB, Toolchain, stack_options

MODULE_TIMEOUT_S = 40 * 60


@dataclass
class Result:
    """Outcome of checking one module."""

    module: str
    ok: bool
    seconds: float
    cached: bool
    messages: list[str] = field(default_factory=list)
    sorry: int = 0


@contextlib.contextmanager
def machine_slot(home: Path) -> Iterator[None]:
    """Hold one of GLOBAL_SLOTS machine-wide slots (file locks) while a Lean process runs."""
    slots = home / "slots"
    slots.mkdir(exist_ok=True)
    while True:
        for i in range(max(1, GLOBAL_SLOTS)):
            fh = open(slots / f"slot{i}", "w")  # noqa: SIM115 - closed in finally below
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            return
        time.sleep(2)


def run_module(m: Module, tc: Toolchain, options: LeanOptions, build: Path, stage: Path,
               store: Path) -> Result:
    """Check ``m`` (its imports already in ``build``), or reuse its verified cached result.

    One checker at a time per module key: a second checker of the same content waits and
    then reuses the first one's result instead of compiling it again.
    """
    with open(store / f"{m.key}.lock", "w") as key_lock:
        fcntl.flock(key_lock, fcntl.LOCK_EX)
        try:
            return _run_module(m, tc, options, build, stage, store)
        finally:
            fcntl.flock(key_lock, fcntl.LOCK_UN)


def _run_module(m: Module, tc: Toolchain, options: LeanOptions, build: Path, stage: Path,
                store: Path) -> Result:
    start = time.monotonic()
    rel = Path(*m.name.split("."))
    reused, rejected = cache.restore(store, m.key, m.name, build, rel)
    if reused:
        return Result(m.name, True, time.monotonic() - start, True)
    notes = ([f"{m.path}: cached result rejected: {rejected}; checked again"]
             if rejected else [])
    text, inserted = staged_text(m.text, str(m.path))
    src_path = stage / (str(rel) + ".lean")
    src_path.parent.mkdir(parents=True, exist_ok=True)
    src_path.write_text(text, encoding="utf-8")
    out = build / (str(rel) + ".olean")
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LEAN_PATH=f"{tc.lib}:{build}", LVT_LEAN_STACK_MIB=str(STACK_MIB))
    cmd = [str(tc.node), *stack_options(store.parent), str(tc.lean_js), "--json",
           *options.argv(), "-R", str(stage), "-o", str(out), str(src_path)]
    try:
        with machine_slot(store.parent):
            proc = subprocess.run(cmd, cwd=stage, env=env, capture_output=True, text=True,
                                  timeout=MODULE_TIMEOUT_S)
        output, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        return Result(m.name, False, time.monotonic() - start, False,
                      [*notes, f"{m.path}: timed out after {MODULE_TIMEOUT_S} s"])
    messages, errors, sorry = parse_messages(output, m.path, inserted)
    ok = code == 0 and errors == 0 and sorry == 0 and out.exists()
    if code != 0 and errors == 0:
        tail = [ln for ln in output.splitlines() if not ln.startswith("[DEBUG")][-15:]
        messages.append(f"{m.path}: lean exited with status {code}\n" + "\n".join(tail))
    if ok:
        cache.save(store, m.key, m.name, build, rel, time.monotonic() - start)
    return Result(m.name, ok, time.monotonic() - start, False, [*notes, *messages], sorry)


def parse_messages(output: str, path: Path, inserted: int | None) -> tuple[list[str], int, int]:
    """Lean's JSON messages: the errors and ``sorry`` warnings as ``path:line:col: ...``
    (lines mapped back across the inserted line), the error count and the sorry count."""
    messages: list[str] = []
    errors = sorry = 0
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(msg, dict) or "severity" not in msg:
            continue
        severity = msg.get("severity")
        data = str(msg.get("data", "")).rstrip()
        pos = msg.get("pos") or {}
        lineno = int(pos.get("line", 0))
        if inserted is not None and lineno >= inserted:
            lineno -= 1
        col = pos.get("column", 0)
        is_sorry = "declaration uses 'sorry'" in data or "declaration uses `sorry`" in data
        if severity == "error":
            errors += 1
        if is_sorry:
            sorry += 1
        if severity == "error" or is_sorry:
            messages.append(f"{path}:{lineno}:{col}: {severity}: {data}")
    return messages, errors, sorry
