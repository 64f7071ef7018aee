"""Encoding the chunks of an ``lvt encode`` run in worker processes, results in input order.

:func:`encode_parallel` hands each chunk of raw input lines to a pool of processes, each with
its own encoder, and yields the :class:`~lvt.datasets.chunks.ChunkResult` of every chunk in the
order of the chunks, so that the file written from them is the one a single process writes. At most
``2 * workers`` chunks are in flight: memory stays bounded on any input size.

Start methods: with ``fork`` (the default where the platform has it) a worker inherits the
parent's encoder as it is; with ``spawn`` or ``forkserver`` it rebuilds the encoder from its
tokenizer, format, options and backend (:meth:`lvt.encoder.ChatEncoder.from_tokenizer`) and
refuses to run unless the rebuilt encoder has the parent's fingerprint. Workers ignore
``SIGINT``: an interrupt reaches the parent, which stops the pool. A worker that dies (killed,
out of memory) is a :class:`~lvt.datasets.jsonl.DatasetError`, never a hang.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from lvt.datasets.chunks import ChunkResult, encode_chunk
from lvt.datasets.jsonl import DatasetError

__all__ = ["default_start_method", "encode_parallel"]

# The encoder of this worker process (set by the pool's initializer).
_ENCODER: Any = None
_GENERATION_PROMPT = False


def default_start_method() -> str:
    """``fork`` where the platform has it, else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    return "fork" if "fork" in methods else "spawn"


def _recipe(encoder: Any) -> dict[str, Any]:
    """What a spawned worker needs to rebuild ``encoder`` (all picklable)."""
    return {
        "tokenizer": encoder.tokenizer,
        "format": encoder.format_name,
        "options": dict(getattr(encoder, "_options", {}) or {}),
        "backend": getattr(encoder, "backend", None),
        "fingerprint": encoder.fingerprint(),
    }


def _init(payload: Any, rebuild: bool, add_generation_prompt: bool) -> None:
    global _ENCODER, _GENERATION_PROMPT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _GENERATION_PROMPT = add_generation_prompt
    if not rebuild:
        _ENCODER = payload
        return
    from lvt.encoder import ChatEncoder

    enc = ChatEncoder.from_tokenizer(payload["tokenizer"], format=payload["format"],
                                     backend=payload["backend"], **payload["options"])
    if enc.fingerprint() != payload["fingerprint"]:
        raise DatasetError("a spawned worker rebuilt an encoder with another fingerprint; "
                           "use the fork start method")
    _ENCODER = enc


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
    rebuild = method != "fork"
    payload = _recipe(encoder) if rebuild else encoder
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init,
                             initargs=(payload, rebuild, add_generation_prompt))
    pending: deque[Future[ChunkResult]] = deque()
    try:
        for chunk in chunks:
            pending.append(ex.submit(_work, chunk))
            if len(pending) >= 2 * workers:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _result(fut: Future[ChunkResult]) -> ChunkResult:
    try:
        return fut.result()
    except BrokenProcessPool as e:
        raise DatasetError(f"a worker process died or could not start ({e}); nothing "
                           "written") from None
