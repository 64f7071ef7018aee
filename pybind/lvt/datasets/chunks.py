"""Encoding one chunk of input lines into an Arrow table (a Parquet row group of ``lvt encode``).

:func:`encode_chunk` depends only on the chunk and the encoder, so the chunks of a file can be
encoded in this process or in worker processes (:mod:`lvt.datasets.workers`) and give the same
table either way. A line that cannot be used (:mod:`lvt.datasets.jsonl`), whose ``options`` disagree
with the encoder's, or that lvt cannot encode is returned as a bad line with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lvt.collisions import input_digest, render_digest
from lvt.datasets.jsonl import LineError, parse_line
from lvt.errors import FormatError
from lvt.inputs import ConversationInput

__all__ = ["ChunkResult", "encode_chunk", "encoder_options", "schema"]


def encoder_options(encoder: Any) -> dict[str, Any]:
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


def _why(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return "nested too deeply to encode"
    return f"{type(e).__name__}: {e}"


def _encode_records(
    encoder: Any, batch: list[ConversationInput], add_generation_prompt: bool,
    bad: list[tuple[int, str]],
) -> list[tuple[int, str, Any, bytes]]:
    """Encode records in one ``encode_batch`` call (text shared across rows is encoded
    once); when some row is invalid, fall back to row by row to name the bad lines. A
    conversation lvt rejects, or one that makes lvt fail in any other way, is a bad line;
    a :class:`FormatError` (the encoder itself is unusable) stops the run."""

    effective = encoder_options(encoder)
    good: list[tuple[ConversationInput, Any]] = []
    for rec in batch:
        line = rec.line or 0
        why = _options_problem(rec, effective)
        if why is not None:
            bad.append((line, why))
            continue
        try:
            good.append((rec, encoder.from_openai(rec.messages, rec.tools,
                                          add_generation_prompt or rec.add_generation_prompt)))
        except FormatError:
            raise
        except Exception as e:  # the line is bad, whatever lvt raised for it
            bad.append((line, _why(e)))
    try:  # collisions are looked for across the whole file, by the caller (CollisionTracker)
        encs = encoder.encode_batch([c for _, c in good], on_collision="ignore")
        return [(b.line or 0, b.id, e, input_digest(c))
                for (b, c), e in zip(good, encs, strict=True)]
    except FormatError:
        raise
    except Exception:
        pass
    out = []
    for b, c in good:
        try:
            out.append((b.line or 0, b.id, encoder.encode(c), input_digest(c)))
        except FormatError:
            raise
        except Exception as e:
            bad.append((b.line or 0, _why(e)))
    return out


def schema(pa: Any) -> Any:
    """The Arrow schema of an encoded dataset (without its metadata)."""
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


@dataclass
class ChunkResult:
    """One encoded chunk: its rows as an Arrow table (``None`` when no line gave a row), its
    bad lines in line order, its totals, the input bytes it covered, and per row the digests
    of its render and of its input with its line (:class:`lvt.collisions.CollisionTracker`)."""

    table: Any
    bad: list[tuple[int, str]]
    rows: int
    tokens: int
    loss_tokens: int
    nbytes: int
    digests: list[tuple[bytes, bytes, int]] = field(default_factory=list)


def encode_chunk(
    encoder: Any, lines: list[tuple[int, bytes]], add_generation_prompt: bool = False
) -> ChunkResult:
    """Encode a chunk of raw input lines (``(line number, bytes)``) into one Arrow table.

    Every line that cannot be used is returned in ``bad`` with its reason (sorted by line);
    nothing here depends on anything but the chunk and the encoder, so the chunks of a file
    can be encoded in any process and in any order.

    Raises:
        FormatError: the encoder cannot encode at all.
    """
    import pyarrow as pa

    bad: list[tuple[int, str]] = []
    recs: list[ConversationInput] = []
    nbytes = 0
    for n, raw in lines:
        nbytes += len(raw)
        try:
            rec = parse_line(n, raw)
        except LineError as e:
            bad.append((n, str(e)))
            continue
        if rec is not None:
            recs.append(rec)
    rows = _encode_records(encoder, recs, add_generation_prompt, bad) if recs else []
    bad.sort(key=lambda b: b[0])
    if not rows:
        return ChunkResult(None, bad, 0, 0, 0, nbytes)
    ids = [e.ids.astype("int32", copy=False) for _, _, e, _ in rows]
    mask = [e.mask.astype("uint8", copy=False) for _, _, e, _ in rows]
    owner = [e.owner.astype("int32", copy=False) for _, _, e, _ in rows]
    ntok = [len(x) for x in ids]
    nloss = [int(m.sum()) for m in mask]
    table = pa.table(
        {
            "id": pa.array([rid for _, rid, _, _ in rows], pa.string()),
            "line": pa.array([line for line, _, _, _ in rows], pa.int64()),
            "input_ids": pa.array(ids, pa.list_(pa.int32())),
            "loss_mask": pa.array(mask, pa.list_(pa.uint8())),
            "owner": pa.array(owner, pa.list_(pa.int32())),
            "num_tokens": pa.array(ntok, pa.int32()),
            "num_loss_tokens": pa.array(nloss, pa.int32()),
        },
        schema=schema(pa),
    )
    digests = [(render_digest(i, m), d, line) for i, m, (line, _, _, d) in zip(ids, mask, rows,
                                                                            strict=True)]
    return ChunkResult(table, bad, len(rows), sum(ntok), sum(nloss), nbytes, digests)
