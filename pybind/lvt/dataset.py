"""``lvt encode``: JSONL conversations to a Parquet dataset of token ids, loss mask and owner.

One row per conversation: ``id`` (the record's ``id`` or ``line<N>``), ``line`` (1-based line
number in the input), ``input_ids`` (int32), ``loss_mask`` (uint8), ``owner`` (int32, index of
the message that owns each token), ``num_tokens`` and ``num_loss_tokens``. The file's
key-value metadata carries the encoder fingerprint (format, template options, tokenizer, lvt
version), the format name and its options, the source file and its SHA-256, the run options,
and at the end the row and skip counts; ``lvt.complete`` is written last.

Input lines are those of :mod:`lvt.inputs`. A line's ``add_generation_prompt: true`` renders
that line with the generation prompt; a line's ``options`` must agree with the encoder's
template options (one encoder, one fingerprint per file), else the line is bad.

Writes are atomic: rows go to a temporary file in the output directory, which replaces the
output with :func:`os.replace` only after the writer closed successfully. A crash (or a fatal
bad line) leaves any previous output untouched and no partial file under the output name;
the next run removes stale temporary files of dead processes and starts again. A run whose
output already holds the same source hash, fingerprint and options is a no-op unless
``force``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvt.errors import FormatError, LvtError
from lvt.inputs import ConversationInput, parse_conversation_record

__all__ = [
    "BadLine",
    "BadLineError",
    "DatasetError",
    "EncodeStats",
    "encode_jsonl",
    "read_dataset_metadata",
]

META_PREFIX = "lvt."


class DatasetError(LvtError):
    """An encode run failed (I/O, or a bad input line in fatal mode)."""


class BadLineError(DatasetError, ValueError):
    """A line of the input could not be encoded (fatal unless ``skip_bad``).

    Attributes:
        path: the input file.
        line: 1-based line number.
        reason: what was wrong (JSON error, message index and reason, codec law, ...).
    """

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}")


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
            "bad_lines": [{"line": b.line, "reason": b.reason} for b in self.bad_lines],
        }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
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
    """Remove temporary files of earlier runs for ``out`` whose process is gone."""
    removed = []
    for p in out.parent.glob(_tmp_prefix(out) + "*.lvt-tmp"):
        try:
            pid = int(p.name[len(_tmp_prefix(out)) :].split(".", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed


def _iter_lines(path: Path) -> Iterator[tuple[int, str, int]]:
    """(line number, text, bytes consumed) for every line, decoding UTF-8 per line."""
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                text = f"\x00invalid UTF-8 at byte {e.start}"
            yield n, text, len(raw)


def _record(line: int, text: str) -> ConversationInput:
    if text.startswith("\x00"):
        raise ValueError(text[1:])
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg} (column {e.colno})") from None
    return parse_conversation_record(obj, f"line{line}", line)


def _encoder_options(encoder: Any) -> dict[str, Any]:
    """The template options of an encoder, defaults included."""
    spec = getattr(encoder, "format_spec", None)
    given = getattr(encoder, "options", None)
    if not isinstance(given, dict):
        given = getattr(encoder, "_options", {})
    return {**dict(getattr(spec, "options", {}) or {}), **dict(given or {})}


def _options_problem(conv: ConversationInput, effective: dict[str, Any]) -> str | None:
    for k, v in conv.options.items():
        if k not in effective:
            return f"option {k!r} is not an option of the format (options: {sorted(effective)})"
        if effective[k] != v:
            return (f"option {k}={v!r} differs from the run's {k}={effective[k]!r} (one file "
                    "has one encoder: pass --option)")
    return None


def _encode_batch(
    encoder: Any,
    batch: list[ConversationInput],
    add_generation_prompt: bool,
    bad: Callable[[int, str], None],
) -> list[tuple[int, str, Any]]:
    """Encode a batch in one ``encode_batch`` call (text shared across rows is encoded
    once); when some row is invalid, fall back to row by row to name the bad lines."""
    from lvt.openai import from_openai

    effective = _encoder_options(encoder)
    convs = []
    for rec in batch:
        line = rec.line or 0
        why = _options_problem(rec, effective)
        if why is not None:
            bad(line, why)
            convs.append(None)
            continue
        try:
            convs.append(from_openai(rec.messages, rec.tools,
                                     add_generation_prompt or rec.add_generation_prompt))
        except FormatError:
            raise
        except LvtError as e:
            bad(line, f"{type(e).__name__}: {e}")
            convs.append(None)
    good = [(b, c) for b, c in zip(batch, convs, strict=True) if c is not None]
    try:
        encs = encoder.encode_batch([c for _, c in good])
        return [(b.line or 0, b.id, e) for (b, _), e in zip(good, encs, strict=True)]
    except FormatError:
        raise
    except LvtError:
        pass
    out = []
    for b, c in good:
        try:
            out.append((b.line or 0, b.id, encoder.encode(c)))
        except FormatError:
            raise
        except LvtError as e:
            bad(b.line or 0, f"{type(e).__name__}: {e}")
    return out


def _schema(pa: Any) -> Any:
    return pa.schema(
        [
            ("id", pa.string()),
            ("line", pa.int64()),
            ("input_ids", pa.list_(pa.int32())),
            ("loss_mask", pa.list_(pa.uint8())),
            ("owner", pa.list_(pa.int32())),
            ("num_tokens", pa.int32()),
            ("num_loss_tokens", pa.int32()),
        ]
    )


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
) -> EncodeStats:
    """Encode a JSONL file of conversations (OpenAI/HF chat shape) into Parquet.

    Args:
        input_path: JSONL, one conversation per line (``{"messages": [...], "tools": [...],
            "id": ...}`` or a bare message list); blank lines are ignored.
        output_path: the Parquet file to (atomically) create or replace.
        encoder: a :class:`lvt.encoder.ChatEncoder`.
        add_generation_prompt: render each conversation with the generation prompt.
        skip_bad: skip lines that cannot be encoded (counted, reported) instead of failing.
        batch_size: rows per batch and per Parquet row group.
        force: rewrite even when the output is up to date.
        progress: show a tqdm bar on stderr (default: when stderr is a terminal).
        on_bad_line: called for each skipped line.

    Raises:
        BadLineError: a bad line when not ``skip_bad`` (no output file is left behind).
        DatasetError: the input cannot be read.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = Path(input_path)
    out = Path(output_path)
    if not src.is_file():
        raise DatasetError(f"{src}: no such input file")
    out.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale_temps(out)
    t0 = time.perf_counter()
    try:
        import lvt

        version = getattr(lvt, "__version__", "")
    except Exception:  # pragma: no cover
        version = ""
    fingerprint = encoder.fingerprint()
    options = {"add_generation_prompt": bool(add_generation_prompt), "skip_bad": bool(skip_bad)}
    source_sha = _sha256(src)
    meta = {
        "fingerprint": fingerprint,
        "format": str(getattr(encoder, "format_name", "")),
        "format_options": json.dumps(_encoder_options(encoder), sort_keys=True),
        "tokenizer": tokenizer_label,
        "version": version,
        "source": str(src),
        "source_sha256": source_sha,
        "options": json.dumps(options, sort_keys=True),
        "columns": "input_ids:int32,loss_mask:uint8,owner:int32",
    }
    stats = EncodeStats(output=str(out))
    if out.exists() and not force:
        try:
            old = read_dataset_metadata(out)
        except Exception:
            old = {}
        if old.get("complete") == "1" and all(
            old.get(k) == meta[k] for k in ("fingerprint", "source_sha256", "options")
        ):
            stats.up_to_date = True
            stats.rows = int(old.get("rows", "0"))
            stats.skipped = int(old.get("skipped", "0"))
            stats.tokens = int(old.get("tokens", "0"))
            stats.loss_tokens = int(old.get("loss_tokens", "0"))
            with contextlib.suppress(ValueError, TypeError):
                stats.bad_lines = [
                    BadLine(int(a), str(b)) for a, b in json.loads(old.get("bad_lines", "[]"))
                ]
            stats.seconds = time.perf_counter() - t0
            return stats

    schema = _schema(pa).with_metadata(
        {(META_PREFIX + k).encode(): v.encode() for k, v in meta.items()}
    )
    tmp = out.parent / f"{_tmp_prefix(out)}{os.getpid()}.lvt-tmp"
    if progress is None:
        progress = sys.stderr.isatty()
    from tqdm.auto import tqdm

    bar = tqdm(
        total=src.stat().st_size,
        unit="B",
        unit_scale=True,
        desc=f"encode {src.name}",
        disable=not progress,
        file=sys.stderr,
        leave=False,
    )
    writer = pq.ParquetWriter(str(tmp), schema)
    ok = False
    try:
        batch: list[ConversationInput] = []

        def bad(line: int, reason: str) -> None:
            if not skip_bad:
                raise BadLineError(str(src), line, reason)
            b = BadLine(line, reason)
            stats.skipped += 1
            if len(stats.bad_lines) < 1000:
                stats.bad_lines.append(b)
            if on_bad_line is not None:
                on_bad_line(b)

        def flush() -> None:
            if not batch:
                return
            cols: dict[str, list[Any]] = {k: [] for k in _schema(pa).names}
            for line, rid, enc in _encode_batch(encoder, batch, add_generation_prompt, bad):
                ids = enc.ids.astype("int32", copy=False)
                mask = enc.mask.astype("uint8", copy=False)
                owner = enc.owner.astype("int32", copy=False)
                cols["id"].append(rid)
                cols["line"].append(line)
                cols["input_ids"].append(ids)
                cols["loss_mask"].append(mask)
                cols["owner"].append(owner)
                cols["num_tokens"].append(len(ids))
                nl = int(mask.sum())
                cols["num_loss_tokens"].append(nl)
                stats.rows += 1
                stats.tokens += len(ids)
                stats.loss_tokens += nl
            batch.clear()
            if cols["id"]:
                table = pa.table(
                    {
                        "id": pa.array(cols["id"], pa.string()),
                        "line": pa.array(cols["line"], pa.int64()),
                        "input_ids": pa.array(cols["input_ids"], pa.list_(pa.int32())),
                        "loss_mask": pa.array(cols["loss_mask"], pa.list_(pa.uint8())),
                        "owner": pa.array(cols["owner"], pa.list_(pa.int32())),
                        "num_tokens": pa.array(cols["num_tokens"], pa.int32()),
                        "num_loss_tokens": pa.array(cols["num_loss_tokens"], pa.int32()),
                    },
                    schema=schema,
                )
                writer.write_table(table)

        for line, text, nbytes in _iter_lines(src):
            bar.update(nbytes)
            if not text.strip():
                continue
            try:
                rec = _record(line, text)
            except ValueError as e:
                bad(line, str(e))
                continue
            batch.append(rec)
            if len(batch) >= batch_size:
                flush()
        flush()
        stats.bad_lines.sort(key=lambda b: b.line)
        final = {
            "rows": str(stats.rows),
            "skipped": str(stats.skipped),
            "tokens": str(stats.tokens),
            "loss_tokens": str(stats.loss_tokens),
            "bad_lines": json.dumps(
                [[b.line, b.reason] for b in stats.bad_lines[:100]], ensure_ascii=False
            ),
            "complete": "1",
        }
        writer.add_key_value_metadata({META_PREFIX + k: v for k, v in final.items()})
        writer.close()
        os.replace(tmp, out)
        ok = True
    finally:
        bar.close()
        if not ok:
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(OSError):
                tmp.unlink()
    stats.seconds = time.perf_counter() - t0
    return stats
