"""Encoding the chunks of an ``lvt encode`` run in worker processes, results in input order.

:func:`encode_parallel` hands each chunk of raw input lines to a pool of processes, each with
its own encoder, and yields the :class:`~lvt.datasets.chunks.ChunkResult` of every chunk in the
order of the chunks, so that the file written from them is the one a single process writes. At most
``2 * workers`` chunks are in flight: memory stays bounded on any input size.

Start methods: with ``fork`` (the default where the platform has it) a worker inherits the
parent's encoder as it is; with ``spawn`` or ``forkserver`` the encoder travels pickled (a
:class:`~lvt.encoder.ChatEncoder` pickles as its recipe, :mod:`lvt.runtime.recipe`, and is
rebuilt with its fingerprint checked) and the worker refuses to run unless it has the parent's
fingerprint.

Signals and the parent's death: workers ignore ``SIGINT`` (Ctrl-C reaches the whole process
group; the parent stops the pool) and take ``SIGTERM``/``SIGHUP`` with the default action. A
worker never outlives its parent: on Linux the kernel kills it when the parent dies
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``, even for a ``SIGKILL``-ed parent), and on every platform a
thread of the worker watches its parent (its parent pid changes when the parent dies) and ends
the worker within :data:`WATCH_INTERVAL` seconds. When the parent stops early (an interrupt, a
fatal bad line, an error) it kills the workers and shuts the pool down without waiting for the
chunks in flight, so an interrupt never hangs on a slow chunk. A worker that dies (killed, out
of memory) is a :class:`~lvt.datasets.jsonl.DatasetError`, never a hang.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait as mp_wait
from typing import Any

from lvt.datasets.chunks import ChunkResult, encode_chunk
from lvt.datasets.jsonl import DatasetError

__all__ = ["default_start_method", "encode_parallel"]

# The encoder of this worker process (set by the pool's initializer).
_ENCODER: Any = None
_GENERATION_PROMPT = False

#: Seconds between two looks of a worker's watcher thread at its parent.
WATCH_INTERVAL = 0.5
#: Seconds the parent waits for killed workers to be gone before shutting the pool down.
KILL_WAIT = 10.0
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def default_start_method() -> str:
    """``fork`` where the platform has it, else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    return "fork" if "fork" in methods else "spawn"


def _die_with_parent(parent: int | None) -> None:
    """End this worker when its parent dies: ``PR_SET_PDEATHSIG`` where Linux has it, and a
    watcher thread everywhere. ``parent``: the pid the worker's parent must have (``None``
    under ``forkserver``, whose workers are children of the fork server, which itself ends
    with the parent)."""
    # the kernel sends it when the *thread* that forked the worker ends: encode_parallel's pool
    # is made and used by the one thread that runs the whole encode
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # no libc, no prctl: the watcher remains
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    watched = os.getppid()
    if parent is not None and watched != parent:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(watched,), name="lvt-parent-watcher",
                     daemon=True).start()


def _watch(parent: int) -> None:
    """Poll the parent pid; once it changes (the parent died, this process was reparented)
    end the process at once, without running Python's exit handlers."""
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)


def _init(encoder: Any, fingerprint: str | None, add_generation_prompt: bool,
          parent: int | None) -> None:
    global _ENCODER, _GENERATION_PROMPT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):  # a forked worker inherits the parent's handlers
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    _die_with_parent(parent)
    _GENERATION_PROMPT = add_generation_prompt
    if fingerprint is not None and encoder.fingerprint() != fingerprint:
        raise DatasetError("a spawned worker rebuilt an encoder with another fingerprint; "
                           "use the fork start method")
    _ENCODER = encoder


def _work(lines: list[tuple[int, bytes]]) -> ChunkResult:
    return encode_chunk(_ENCODER, lines, _GENERATION_PROMPT)


def encode_parallel(
    encoder: Any,
    chunks: Iterable[list[tuple[int, bytes]]],
    add_generation_prompt: bool,
    workers: int,
    mp_context: str | None = None,
) -> Iterator[ChunkResult]:
    """The results of :func:`~lvt.datasets.chunks.encode_chunk` on every chunk, in chunk order,
    computed by ``workers`` processes. Closing the generator early (the caller stopped at a
    bad line, or was interrupted) cancels the chunks not started and waits for the others.

    Raises:
        DatasetError: ``workers`` below 2 or an unknown start method; a worker died or
            could not build its encoder.
        FormatError: the encoder cannot encode at all (raised in a worker).
    """
    if workers < 2:
        raise DatasetError(f"encode_parallel needs at least 2 workers, got {workers}")
    method = mp_context or default_start_method()
    try:
        ctx = multiprocessing.get_context(method)
    except ValueError:
        raise DatasetError(f"unknown start method {method!r} (known: "
                           f"{multiprocessing.get_all_start_methods()})") from None
    fingerprint = encoder.fingerprint() if method != "fork" else None
    parent = None if method == "forkserver" else os.getpid()
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init,
                             initargs=(encoder, fingerprint, add_generation_prompt, parent))
    pending: deque[Future[ChunkResult]] = deque()
    finished = False
    try:
        for chunk in chunks:
            pending.append(ex.submit(_work, chunk))
            if len(pending) >= 2 * workers:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
        finished = True
    finally:
        if not finished:  # stopped early: the chunks in flight are not wanted
            _kill_workers(ex)
        ex.shutdown(wait=True, cancel_futures=True)


def _kill_workers(ex: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes and wait (bounded) until they are gone, so that
    ``shutdown`` finds a broken pool to clean up instead of chunks to wait for. The parent's
    copy of the result pipe's write end is closed then: a worker killed while sending a
    result leaves a partial message, which the pool's reader then ends at EOF instead of
    waiting for its missing bytes forever."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
    deadline = time.monotonic() + KILL_WAIT
    sentinels = []
    for p in procs:
        with contextlib.suppress(Exception):
            sentinels.append(p.sentinel)
    while sentinels and time.monotonic() < deadline:
        ready = mp_wait(sentinels, timeout=max(0.0, deadline - time.monotonic()))
        sentinels = [s for s in sentinels if s not in ready]
    writer = getattr(getattr(ex, "_result_queue", None), "_writer", None)
    if writer is not None and not sentinels:
        with contextlib.suppress(Exception):
            writer.close()


def _result(fut: Future[ChunkResult]) -> ChunkResult:
    try:
        return fut.result()
    except BrokenProcessPool as e:
        raise DatasetError(f"a worker process died or could not start ({e}); nothing "
                           "written") from None
