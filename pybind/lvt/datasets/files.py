"""``lvt encode``: JSONL conversations to a Parquet dataset of token ids, loss mask and owner.

One row per conversation: ``id`` (the record's ``id`` or ``line<N>``), ``line`` (1-based line
number in the input), ``input_ids`` (int32), ``loss_mask`` (uint8), ``owner`` (int32, index of
the message that owns each token), ``num_tokens`` and ``num_loss_tokens``. The file's
key-value metadata carries the encoder fingerprint (format, template options, tokenizer, lvt
version), the format name and its options, the source file and its SHA-256, the run options,
and at the end the row and skip counts; ``lvt.complete`` is written last.

Input lines are those of :mod:`lvt.inputs`, read by :mod:`lvt.datasets.jsonl`. A line's
``add_generation_prompt: true`` renders that line with the generation prompt; a line's
``options`` must agree with the encoder's template options (one encoder, one fingerprint per
file), else the line is bad.

The input is cut into chunks of ``batch_size`` lines; each chunk is encoded on its own (one
``encode_batch`` call) and becomes one Parquet row group, and chunks are written in input
order. With ``workers > 1`` the chunks are encoded by worker processes (an encoder per
worker, :mod:`lvt.datasets.workers`) and reassembled in order: the file, its metadata and the
skipped-line report are byte for byte those of one worker.

Writes are atomic: rows go to a temporary file in the output directory, which is flushed to
disk and replaces the output with :func:`os.replace` only after the writer closed
successfully. A crash, a full disk or a fatal bad line leaves any previous output untouched
and no partial file under the output name; so does ``SIGTERM`` or ``SIGHUP`` (turned into an
interrupt for the run, :mod:`lvt.interrupts`, then delivered again once the temporary file is
removed, unless the caller handles them, as the CLI does); the next run removes stale temporary
files of dead processes (a ``SIGKILL``) and starts again. A run whose output already holds the
same source hash, fingerprint and options is a no-op unless ``force``.

Two lines that differ as conversations but render to the same ids and loss mask (what tells
them apart is something the template does not write: :mod:`lvt.collisions`) are found across
the whole file, whatever the chunking and the workers, from two digests per row; they are
counted in the stats and the metadata (``collisions``, ``collision_lines``), warned about, or
with ``on_collision="error"`` stop the run before anything is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvt.collisions import CollisionTracker, CollisionWarning, check_on_collision
from lvt.datasets.chunks import ChunkResult, encode_chunk, encoder_options
from lvt.datasets.chunks import schema as arrow_schema
from lvt.datasets.jsonl import (
    BadLineError,
    DatasetError,
    InputFileError,
    iter_raw_lines,
    open_input,
)
from lvt.errors import CollisionError
from lvt.interrupts import signals_as_interrupts

__all__ = [
    "BadLine",
    "BadLineError",
    "ChunkResult",
    "DatasetError",
    "EncodeStats",
    "InputFileError",
    "OutputError",
    "OutputIsInputError",
    "check_paths",
    "encode_chunk",
    "encode_jsonl",
    "read_dataset_metadata",
]

META_PREFIX = "lvt."
TMP_SUFFIX = ".lvt-tmp"


class OutputError(DatasetError):
    """The output cannot be written: its directory cannot be created or written, a file is
    in the way, the output is a directory or not a regular file, the disk is full.

    Attributes:
        path: the output as given.
        reason: what failed.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.path, self.reason))


class OutputIsInputError(OutputError, ValueError):
    """The output names the input file (replacing it would destroy the input)."""


@dataclass(frozen=True)
class BadLine:
    """A skipped line."""

    line: int
    reason: str


@dataclass
class EncodeStats:
    """What an encode run did."""

    output: str
    rows: int = 0
    skipped: int = 0
    tokens: int = 0
    loss_tokens: int = 0
    seconds: float = 0.0
    up_to_date: bool = False
    bad_lines: list[BadLine] = field(default_factory=list)
    workers: int = 1
    #: Pairs of input lines that differ but render to the same ids and loss mask
    #: (:mod:`lvt.collisions`): their number, and the first 100 pairs.
    collisions: int = 0
    collision_lines: list[tuple[int, int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable summary."""
        return {
            "output": self.output,
            "rows": self.rows,
            "skipped": self.skipped,
            "tokens": self.tokens,
            "loss_tokens": self.loss_tokens,
            "seconds": round(self.seconds, 3),
            "up_to_date": self.up_to_date,
            "workers": self.workers,
            "bad_lines": [{"line": b.line, "reason": b.reason} for b in self.bad_lines],
            "collisions": self.collisions,
            "collision_lines": [list(p) for p in self.collision_lines],
        }


def _os_reason(e: OSError) -> str:
    """The reason of an OS error in words (Arrow's errors carry only ``[errno N]`` text)."""
    m = re.search(r"\[errno (\d+)\]", str(e))
    if m:
        return os.strerror(int(m.group(1)))
    return e.strerror or str(e) or type(e).__name__


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise InputFileError(str(path), None, f"read failed: {_os_reason(e)}") from None
    return h.hexdigest()


def read_dataset_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``lvt.*`` key-value metadata of an encoded Parquet file (prefix stripped)."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(str(path)).metadata.metadata or {}
    out = {}
    for k, v in md.items():
        ks = k.decode("utf-8", "replace")
        if ks.startswith(META_PREFIX):
            out[ks[len(META_PREFIX) :]] = v.decode("utf-8", "replace")
    return out


# ---------------------------------------------------------------------------------------------
# Paths


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_paths(input_path: str | os.PathLike[str], output_path: str | os.PathLike[str]) -> None:
    """Check, before any work, that the input can be read and the output can be written
    there: it is not the input, not a directory or another non-regular file (a device, a
    FIFO), and no file stands where its directory should be.

    Raises:
        InputFileError: the input cannot be read.
        OutputIsInputError: the output is the input file.
        OutputError: the output cannot be written there (the reason named).
    """
    src = open_input(input_path)
    out = Path(output_path)
    if _same_file(src, out):
        raise OutputIsInputError(str(out), "is the input file; refusing to replace it")
    try:
        st = out.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None
    except OSError as e:
        raise OutputError(str(out), f"cannot inspect: {_os_reason(e)}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(str(out), "is a directory (give a file name, e.g. DIR/data.parquet)")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(str(out), "exists and is not a regular file (a device, a FIFO or a "
                          "socket); refusing to replace it")
    for parent in [*reversed(out.parent.parents), out.parent]:
        if parent.exists() and not parent.is_dir():
            raise OutputError(str(out), f"cannot create its directory: {parent} is a file")


def _make_dir(out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(str(out), f"cannot create its directory {out.parent}: a file is in "
                          "the way") from None
    except OSError as e:
        raise OutputError(str(out), f"cannot create its directory {out.parent}: "
                          f"{_os_reason(e)}") from None


def _tmp_prefix(out: Path) -> str:
    return f".{out.name}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale_temps(out: Path) -> list[Path]:
    """Remove temporary files of earlier runs for ``out`` whose process is gone. Names are
    compared as strings, never as glob patterns (an output called ``a[1].parquet`` or
    ``*.parquet`` is matched literally)."""
    removed: list[Path] = []
    prefix = _tmp_prefix(out)
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return removed
    for ent in entries:
        name = ent.name
        if not (name.startswith(prefix) and name.endswith(TMP_SUFFIX)):
            continue
        pid_s = name[len(prefix) : -len(TMP_SUFFIX)]
        if not pid_s.isdigit():
            continue
        pid = int(pid_s)
        if pid != os.getpid() and not _pid_alive(pid):
            with contextlib.suppress(OSError):
                os.unlink(ent.path)
                removed.append(Path(ent.path))
    return removed


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _chunks(src: Path, size: int) -> Iterator[list[tuple[int, bytes]]]:
    chunk: list[tuple[int, bytes]] = []
    for n, raw in iter_raw_lines(src):
        chunk.append((n, raw))
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# ---------------------------------------------------------------------------------------------
# The run


def _version() -> str:
    try:
        import lvt

        return str(getattr(lvt, "__version__", ""))
    except Exception:  # pragma: no cover
        return ""


def _up_to_date(out: Path, meta: dict[str, str], stats: EncodeStats) -> bool:
    try:
        old = read_dataset_metadata(out)
    except Exception:
        return False
    if old.get("complete") != "1" or not all(
        old.get(k) == meta[k] for k in ("fingerprint", "source_sha256", "options")
    ):
        return False
    stats.up_to_date = True
    with contextlib.suppress(ValueError, TypeError):
        stats.rows = int(old.get("rows", "0"))
        stats.skipped = int(old.get("skipped", "0"))
        stats.tokens = int(old.get("tokens", "0"))
        stats.loss_tokens = int(old.get("loss_tokens", "0"))
        stats.bad_lines = [
            BadLine(int(a), str(b)) for a, b in json.loads(old.get("bad_lines", "[]"))
        ]
        stats.collisions = int(old.get("collisions", "0"))
        stats.collision_lines = [
            (int(a), int(b)) for a, b in json.loads(old.get("collision_lines", "[]"))
        ]
    return True


def encode_jsonl(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    encoder: Any,
    *,
    tokenizer_label: str = "",
    add_generation_prompt: bool = False,
    skip_bad: bool = False,
    batch_size: int = 512,
    force: bool = False,
    progress: bool | None = None,
    on_bad_line: Callable[[BadLine], None] | None = None,
    workers: int = 1,
    mp_context: str | None = None,
    on_collision: str = "warn",
    on_collision_found: Callable[[int, int], None] | None = None,
) -> EncodeStats:
    """Encode a JSONL file of conversations (OpenAI/HF chat shape) into Parquet.

    Args:
        input_path: JSONL, one conversation per line (``{"messages": [...], "tools": [...],
            "id": ...}`` or a bare message list); blank lines are ignored.
        output_path: the Parquet file to (atomically) create or replace.
        encoder: a :class:`lvt.encoder.ChatEncoder`.
        add_generation_prompt: render each conversation with the generation prompt.
        skip_bad: skip lines that cannot be encoded (counted, reported) instead of failing.
        batch_size: input lines per chunk; a chunk's rows are one Parquet row group.
        force: rewrite even when the output is up to date.
        progress: show a tqdm bar on stderr (default: when stderr is a terminal).
        on_bad_line: called for each skipped line, in line order.
        workers: processes that encode chunks (1: this process). The output, its metadata
            and the ``on_bad_line`` calls are the same for every value.
        mp_context: ``multiprocessing`` start method for ``workers > 1`` (default ``fork``
            where the platform has it, else ``spawn``; a spawned worker rebuilds the encoder
            from its tokenizer, format and options and checks its fingerprint).
        on_collision: two lines that differ as conversations but render to the same ids and
            loss mask (:mod:`lvt.collisions`): ``"warn"`` counts them in the stats and calls
            ``on_collision_found(earlier line, line)`` for each (a
            :class:`~lvt.collisions.CollisionWarning` without one), ``"error"`` raises,
            ``"ignore"`` does not look.

    Raises:
        BadLineError: the first bad line when not ``skip_bad`` (no output file is left behind).
        CollisionError: ``on_collision="error"`` and two lines collide (the first pair; no
            output file is left behind).
        InputFileError: the input cannot be read.
        OutputIsInputError: the output is the input file.
        OutputError: the output cannot be written (directory, permissions, disk full).
        DatasetError: ``workers`` or ``batch_size`` below 1, or a worker process died.
        KeyboardInterrupt: ``SIGINT``, and ``SIGTERM``/``SIGHUP`` inside the caller's
            :func:`lvt.interrupts.signals_as_interrupts` (the CLI's), as
            :class:`lvt.interrupts.Interrupted`; where their action is the default they end
            the process after the cleanup, as they would have without it (a handler of the
            caller's own is left in place).
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise DatasetError(f"workers must be an integer of at least 1, got {workers!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise DatasetError(f"batch_size must be an integer of at least 1, got {batch_size!r}")
    src = Path(input_path)
    out = Path(output_path)
    check_paths(src, out)
    t0 = time.perf_counter()
    check_on_collision(on_collision)
    options = {"add_generation_prompt": bool(add_generation_prompt), "skip_bad": bool(skip_bad),
               "on_collision": on_collision}
    meta = {
        "fingerprint": encoder.fingerprint(),
        "format": str(getattr(encoder, "format_name", "")),
        "format_options": json.dumps(encoder_options(encoder), sort_keys=True),
        "tokenizer": tokenizer_label,
        "version": _version(),
        "source": str(src),
        "source_sha256": _sha256(src),
        "options": json.dumps(options, sort_keys=True),
        "columns": "input_ids:int32,loss_mask:uint8,owner:int32",
    }
    stats = EncodeStats(output=str(out), workers=workers)
    if out.exists() and not force and _up_to_date(out, meta, stats):
        stats.seconds = time.perf_counter() - t0
        return stats
    _make_dir(out)
    _clean_stale_temps(out)
    # SIGTERM/SIGHUP (where their action is the default) stop the run as SIGINT does: the
    # temporary file is removed and the workers stopped, then the signal ends the process
    with signals_as_interrupts(redeliver=True):
        _write(src, out, encoder, meta, stats, add_generation_prompt=add_generation_prompt,
               skip_bad=skip_bad, batch_size=batch_size, progress=progress,
               on_bad_line=on_bad_line, workers=workers, mp_context=mp_context,
               on_collision=on_collision, on_collision_found=on_collision_found)
    stats.seconds = time.perf_counter() - t0
    return stats


def _write(src: Path, out: Path, encoder: Any, meta: dict[str, str], stats: EncodeStats, *,
           add_generation_prompt: bool, skip_bad: bool, batch_size: int,
           progress: bool | None, on_bad_line: Callable[[BadLine], None] | None,
           workers: int, mp_context: str | None, on_collision: str,
           on_collision_found: Callable[[int, int], None] | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm.auto import tqdm

    schema = arrow_schema(pa).with_metadata(
        {(META_PREFIX + k).encode(): v.encode() for k, v in meta.items()}
    )
    tmp = out.parent / f"{_tmp_prefix(out)}{os.getpid()}{TMP_SUFFIX}"
    if progress is None:
        progress = sys.stderr.isatty()
    bar = tqdm(total=src.stat().st_size, unit="B", unit_scale=True, desc=f"encode {src.name}",
               disable=not progress, file=sys.stderr, leave=False)
    writer = None
    ok = False
    results: Any = None
    tracker = CollisionTracker()
    try:
        try:
            writer = pq.ParquetWriter(str(tmp), schema)
        except OSError as e:
            raise OutputError(str(out), f"cannot create a file in {out.parent}: "
                              f"{_os_reason(e)}") from None
        chunks = _chunks(src, batch_size)
        if workers == 1:
            results = (encode_chunk(encoder, c, add_generation_prompt) for c in chunks)
        else:
            from lvt.datasets.workers import encode_parallel

            results = encode_parallel(encoder, chunks, add_generation_prompt, workers,
                                      mp_context)
        for res in results:
            bar.update(res.nbytes)
            for line, reason in res.bad:
                if not skip_bad:
                    raise BadLineError(str(src), line, reason)
                b = BadLine(line, reason)
                stats.skipped += 1
                if len(stats.bad_lines) < 1000:
                    stats.bad_lines.append(b)
                if on_bad_line is not None:
                    on_bad_line(b)
            if res.table is not None:
                try:
                    writer.write_table(res.table)
                except OSError as e:
                    raise OutputError(str(out), f"write failed: {_os_reason(e)}; nothing "
                                      "written (any previous output is untouched)") from None
                stats.rows += res.rows
                stats.tokens += res.tokens
                stats.loss_tokens += res.loss_tokens
            for render, inp, line in res.digests if on_collision != "ignore" else ():
                pair = tracker.add(render, inp, line, keep=100)
                if pair is None:
                    continue
                what = (f"input lines {pair[0]} and {pair[1]} of {src} differ but render to the "
                        "same ids and loss mask: the template does not write the difference")
                if on_collision == "error":
                    raise CollisionError(pair[0], pair[1], what)
                if on_collision_found is not None:
                    on_collision_found(*pair)
                else:
                    warnings.warn(what, CollisionWarning, stacklevel=3)
        stats.collisions, stats.collision_lines = tracker.count, tracker.examples
        final = {
            "rows": str(stats.rows),
            "skipped": str(stats.skipped),
            "tokens": str(stats.tokens),
            "loss_tokens": str(stats.loss_tokens),
            "bad_lines": json.dumps(
                [[b.line, b.reason] for b in stats.bad_lines[:100]], ensure_ascii=False
            ),
            "collisions": str(stats.collisions),
            "collision_lines": json.dumps([list(p) for p in stats.collision_lines]),
            "complete": "1",
        }
        try:
            writer.add_key_value_metadata({META_PREFIX + k: v for k, v in final.items()})
            writer.close()
            _fsync(tmp)
            os.replace(tmp, out)
        except OSError as e:
            raise OutputError(str(out), f"write failed: {_os_reason(e)}; nothing written "
                              "(any previous output is untouched)") from None
        with contextlib.suppress(OSError):
            _fsync(out.parent, directory=True)
        ok = True
    finally:
        if results is not None and hasattr(results, "close"):
            results.close()  # stops the workers of a failed run
        bar.close()
        if not ok:
            if writer is not None:
                with contextlib.suppress(Exception):
                    writer.close()
            with contextlib.suppress(OSError):
                tmp.unlink()
