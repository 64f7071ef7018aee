"""Encoding Hugging Face ``datasets`` and Ray Data datasets of conversations with lvt.

:func:`encode` maps a ``datasets.Dataset`` (or a ``pyarrow.Table``) of conversations to the
rows ``lvt encode`` writes to Parquet (the schema of :func:`lvt.datasets.chunks.schema`): ``id``,
``line`` (the row's index in the input), ``input_ids`` (int32), ``loss_mask`` (uint8),
``owner`` (int32), ``num_tokens`` and ``num_loss_tokens``. It runs ``Dataset.map`` in
Arrow batches, over ``num_proc`` processes, each with an encoder of the same fingerprint;
the rows and their order do not depend on ``num_proc`` or ``batch_size``.

Metadata: the ``lvt.*`` keys of an ``lvt encode`` file (``fingerprint``, ``format``,
``format_options``, ``tokenizer``, ``version``, ``options``, ``columns``, ``rows``,
``tokens``, ``loss_tokens``, ``source_fingerprint``, ``complete``). A ``pyarrow.Table`` comes
back with them in its schema metadata. ``datasets`` rewrites the Arrow schema metadata of a
``Dataset`` to its own ``huggingface`` key, so a ``Dataset`` carries them in
``info.description`` (JSON, kept by ``save_to_disk``); :func:`to_arrow` gives its table with
them in the schema metadata (read back by :func:`lvt.datasets.files.read_dataset_metadata`
once written with ``pyarrow.parquet``), and :func:`read_metadata` reads either.

:func:`encode_ray` is the Ray Data path for data beyond one machine: ``map_batches`` with a
callable class, so each Ray worker builds its encoder once (from a picklable factory) and
checks its fingerprint against the driver's.

Input columns: ``messages`` (OpenAI/HF chat messages), optional ``tools`` (a list of JSON
tool schemas, or that list as a JSON string), ``id`` and ``add_generation_prompt``; the same
record shape as an ``lvt encode`` line (:func:`lvt.inputs.parse_conversation_record`). Arrow
stores a list of structs with the union of their keys, so keys whose value is ``None`` are
dropped from messages (as ``transformers`` drops them); tool-call arguments are best stored
as JSON strings (a struct column would give every call every argument name). Every other
column (an ``answer``, reward metadata) is carried to the output rows (``keep_columns``).
Collisions (:mod:`lvt.collisions`) are not looked for: a map batch sees only its own rows
(``lvt encode`` looks across a whole file).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from lvt.datasets.chunks import encoder_options, schema
from lvt.datasets.jsonl import DatasetError
from lvt.errors import FormatError, LvtError
from lvt.inputs import parse_conversation_record
from lvt.openai import from_openai_batch

__all__ = [
    "DatasetRowError",
    "encode",
    "encode_ray",
    "metadata",
    "read_metadata",
    "to_arrow",
]

META_PREFIX = "lvt."
_DESCRIPTION_KEY = "lvt"


class DatasetRowError(DatasetError, ValueError):
    """A row could not be encoded (``skip_bad=False``).

    Attributes:
        row: the row's index in the input (``None`` on the Ray path, which has no global
            index; ``row_id`` then names it).
        row_id: the row's ``id``.
        reason: what was wrong.
    """

    def __init__(self, row: int | None, row_id: str, reason: str) -> None:
        self.row = row
        self.row_id = row_id
        self.reason = reason
        where = f"row {row}" if row is not None else "row"
        super().__init__(f"{where} (id {row_id!r}): {reason}")

    def __reduce__(self) -> Any:
        return (type(self), (self.row, self.row_id, self.reason))


# ---------------------------------------------------------------------------------------------
# encoders in worker processes

#: Encoders by fingerprint: the one being mapped (registered by :func:`encode` for the
#: duration of the call, so forked ``datasets`` workers inherit it) and, in a worker that had
#: to rebuild one, that one.
_ENCODERS: dict[str, Any] = {}


class _Recipe:
    """A picklable stand-in for an encoder: the encoder itself in this process, the inherited
    one in forked children (:data:`_ENCODERS`), else rebuilt from the tokenizer's JSON, format
    and options with its fingerprint checked. The tokenizer travels as its JSON text and is
    parsed only where the encoder must be rebuilt."""

    _STATE = ("fingerprint", "tokenizer_json", "format", "options", "backend")

    def __init__(self, encoder: Any) -> None:
        self.fingerprint = encoder.fingerprint()
        self.format = encoder.format_name
        self.options = dict(getattr(encoder, "_options", {}) or {})
        self.backend = getattr(encoder, "backend", None)
        self._encoder = encoder
        self._json: str | None = None

    @property
    def tokenizer_json(self) -> str:
        if self._json is None:
            self._json = self._encoder.tokenizer.to_str()
        return self._json

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._STATE}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.fingerprint = state["fingerprint"]
        self.format = state["format"]
        self.options = state["options"]
        self.backend = state["backend"]
        self._json = state["tokenizer_json"]
        self._encoder = None

    def get(self) -> Any:
        if self._encoder is not None:
            return self._encoder
        enc = _ENCODERS.get(self.fingerprint)
        if enc is None:
            from tokenizers import Tokenizer

            from lvt.encoder import ChatEncoder

            enc = ChatEncoder.from_tokenizer(Tokenizer.from_str(self.tokenizer_json),
                                             self.format, backend=self.backend, **self.options)
            if enc.fingerprint() != self.fingerprint:
                raise DatasetError("a worker rebuilt an encoder with another fingerprint "
                                   f"({enc.fingerprint()[:12]} != {self.fingerprint[:12]})")
            _ENCODERS[self.fingerprint] = enc
        self._encoder = enc
        return enc


# ---------------------------------------------------------------------------------------------
# rows


def _drop_none(m: Any) -> Any:
    return {k: v for k, v in m.items() if v is not None} if isinstance(m, Mapping) else m


def _record(row: Mapping[str, Any], cols: _Columns, default_id: str,
            parsed: dict[str, Any]) -> Any:
    """The row as an ``lvt encode`` record (a tools string is parsed once per batch)."""
    tools = row.get(cols.tools) if cols.tools else None
    if isinstance(tools, str):
        if tools not in parsed:
            try:
                parsed[tools] = json.loads(tools)
            except ValueError as e:
                raise ValueError(f"column {cols.tools!r} is not JSON: {e}") from None
        tools = parsed[tools]
    msgs = row.get(cols.messages)
    obj = {
        "messages": [_drop_none(m) for m in msgs] if isinstance(msgs, list) else msgs,
        "tools": tools,
        "add_generation_prompt": bool(row.get(cols.generation_prompt) or False)
        if cols.generation_prompt else False,
    }
    rid = row.get(cols.id) if cols.id else None
    if rid is not None:
        obj["id"] = str(rid)
    return parse_conversation_record(obj, default_id)


class _Columns:
    def __init__(self, names: Sequence[str], messages: str, tools: str, id: str,
                 generation_prompt: str) -> None:
        if messages not in names:
            raise DatasetError(f"the dataset has no {messages!r} column (columns: "
                               f"{list(names)})")
        self.messages = messages
        self.tools = tools if tools in names else None
        self.id = id if id in names else None
        self.generation_prompt = generation_prompt if generation_prompt in names else None
        self.keep: tuple[str, ...] = ()

    def keep_others(self, names: Sequence[str], keep: Sequence[str] | None) -> None:
        """Carry columns to the output: ``keep``, or (``None``) every column the record does
        not read (an ``answer``, reward metadata). A kept column may not shadow an output
        column.

        Raises:
            DatasetError: a kept column is missing or has an output column's name.
        """
        import pyarrow as pa

        read = {self.messages, self.tools, self.id, self.generation_prompt}
        want = [n for n in names if n not in read] if keep is None else list(keep)
        for n in want:
            if n not in names:
                raise DatasetError(f"keep_columns names {n!r}, which the dataset does not have "
                                   f"(columns: {list(names)})")
            if n in schema(pa).names:
                raise DatasetError(f"column {n!r} has the name of an output column: rename it, "
                                   f"or leave it out with keep_columns")
        self.keep = tuple(want)


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _encode_rows(
    encoder: Any,
    batch: Any,
    indices: Sequence[int | None],
    cols: _Columns,
    add_generation_prompt: bool,
    skip_bad: bool,
) -> Any:
    """Encode a batch (an Arrow table) into an Arrow table of :func:`lvt.datasets.chunks.schema` and
    the kept columns; rows that cannot be encoded raise :class:`DatasetRowError`, or are left
    out with ``skip_bad``."""
    import pyarrow as pa

    rows = batch.select([c for c in batch.column_names if c not in cols.keep]).to_pylist()
    good: list[tuple[int | None, str, Any, int]] = []

    def bad(i: int | None, rid: str, reason: str) -> None:
        if not skip_bad:
            raise DatasetRowError(i, rid, reason)

    # rows sharing a tool list (the same tools string) and generation prompt are converted
    # with one from_openai_batch call: the tools are described once, not once per row
    parsed: dict[str, Any] = {}
    recs: list[tuple[int | None, Any]] = []
    where: list[int] = []  # each record's row in the batch
    groups: dict[tuple[Any, bool], list[int]] = {}
    for pos, (row, i) in enumerate(zip(rows, indices, strict=True)):
        default = f"row{i}" if i is not None else "row"
        try:
            rec = _record(row, cols, default, parsed)
        except (LvtError, ValueError, TypeError) as e:
            rid = row.get(cols.id) if cols.id else None
            bad(i, str(rid if rid is not None else default), _why(e))
            continue
        raw = row.get(cols.tools) if cols.tools else None
        key = (raw if isinstance(raw, str) or raw is None else ("row", len(recs)),
               add_generation_prompt or rec.add_generation_prompt)
        groups.setdefault(key, []).append(len(recs))
        recs.append((i, rec))
        where.append(pos)
    convs: dict[int, Any] = {}
    failed: list[tuple[int, int | None, str, str]] = []
    keep = bool(getattr(encoder.family, "keeps_empty_reasoning", False))
    raw = bool(getattr(encoder.family, "keeps_argument_text", False))
    for (_, agp), members in groups.items():
        try:
            got = from_openai_batch([recs[k][1].messages for k in members],
                                    recs[members[0]][1].tools, agp, keep_empty_reasoning=keep,
                                    verbatim_arguments=raw)
            convs.update(zip(members, got, strict=True))
            continue
        except FormatError:
            raise
        except (LvtError, ValueError, TypeError):
            pass
        for k in members:  # name the bad rows
            i, rec = recs[k]
            try:
                convs[k] = encoder.from_openai(rec.messages, rec.tools, agp)
            except FormatError:
                raise
            except (LvtError, ValueError, TypeError) as e:
                failed.append((k, i, rec.id, _why(e)))
    for _, i, rid, why in sorted(failed, key=lambda f: f[0]):  # the first bad row first
        bad(i, rid, why)
    good = [(recs[k][0], recs[k][1].id, convs[k], where[k]) for k in range(len(recs))
            if k in convs]
    try:
        encs = encoder.encode_batch([g[2] for g in good], on_collision="ignore")
    except FormatError:
        raise
    except LvtError:
        encs = []
        kept = []
        for g in good:
            try:
                encs.append(encoder.encode(g[2]))
                kept.append(g)
            except FormatError:
                raise
            except LvtError as e:
                bad(g[0], g[1], _why(e))
        good = kept
    ids = [e.ids.astype("int32", copy=False) for e in encs]
    mask = [e.mask.astype("uint8", copy=False) for e in encs]
    table = pa.table(
        {
            "id": pa.array([g[1] for g in good], pa.string()),
            "line": pa.array([-1 if g[0] is None else g[0] for g in good], pa.int64()),
            "input_ids": pa.array(ids, pa.list_(pa.int32())),
            "loss_mask": pa.array(mask, pa.list_(pa.uint8())),
            "owner": pa.array([e.owner.astype("int32", copy=False) for e in encs],
                              pa.list_(pa.int32())),
            "num_tokens": pa.array([len(x) for x in ids], pa.int32()),
            "num_loss_tokens": pa.array([int(m.sum()) for m in mask], pa.int32()),
        },
        schema=schema(pa),
    )
    take = pa.array([g[3] for g in good], pa.int64())
    for name in cols.keep:
        table = table.append_column(batch.schema.field(name), batch.column(name).take(take))
    return table


class _MapFn:
    """The batched ``Dataset.map`` function (picklable: it carries an encoder recipe)."""

    def __init__(self, recipe: _Recipe, cols: _Columns, agp: bool, skip_bad: bool) -> None:
        self.recipe, self.cols, self.agp, self.skip_bad = recipe, cols, agp, skip_bad

    def __call__(self, batch: Any, indices: list[int]) -> Any:
        return _encode_rows(self.recipe.get(), batch, indices, self.cols, self.agp,
                            self.skip_bad)


# ---------------------------------------------------------------------------------------------
# metadata


def metadata(encoder: Any, *, add_generation_prompt: bool = False, skip_bad: bool = False,
             tokenizer_label: str = "", source: str = "", table: Any = None) -> dict[str, str]:
    """The ``lvt.*`` metadata (prefix stripped) of data encoded by ``encoder``; with
    ``table``, its row and token counts too."""
    import lvt

    out = {
        "fingerprint": encoder.fingerprint(),
        "format": str(getattr(encoder, "format_name", "")),
        "format_options": json.dumps(encoder_options(encoder), sort_keys=True),
        "tokenizer": tokenizer_label,
        "version": getattr(lvt, "__version__", ""),
        "options": json.dumps({"add_generation_prompt": bool(add_generation_prompt),
                               "skip_bad": bool(skip_bad)}, sort_keys=True),
        "columns": "input_ids:int32,loss_mask:uint8,owner:int32",
        "source_fingerprint": source,
    }
    if table is not None:
        import pyarrow.compute as pc

        out["rows"] = str(table.num_rows)
        out["tokens"] = str(pc.sum(table.column("num_tokens")).as_py() or 0)
        out["loss_tokens"] = str(pc.sum(table.column("num_loss_tokens")).as_py() or 0)
        out["complete"] = "1"
    return out


def _with_meta(table: Any, meta: Mapping[str, str]) -> Any:
    """``table`` with exactly the ``lvt.*`` keys as its schema metadata (the metadata of an
    ``lvt encode`` file; ``datasets``' own key, which holds its cache fingerprint, dropped)."""
    return table.replace_schema_metadata(
        {(META_PREFIX + k).encode(): v.encode() for k, v in meta.items()})


def read_metadata(data: Any) -> dict[str, str]:
    """The ``lvt.*`` metadata of an encoded ``pyarrow.Table`` or ``datasets.Dataset`` (prefix
    stripped; ``{}`` when it has none)."""
    info = getattr(data, "info", None)
    if info is not None and hasattr(data, "data"):
        try:
            d = json.loads(info.description or "{}")
        except ValueError:
            return {}
        got = d.get(_DESCRIPTION_KEY) if isinstance(d, dict) else None
        return dict(got) if isinstance(got, dict) else {}
    md = getattr(getattr(data, "schema", None), "metadata", None) or {}
    out = {}
    for k, v in md.items():
        ks = k.decode("utf-8", "replace")
        if ks.startswith(META_PREFIX):
            out[ks[len(META_PREFIX):]] = v.decode("utf-8", "replace")
    return out


def to_arrow(ds: Any) -> Any:
    """The Arrow table of an encoded ``datasets.Dataset`` with the ``lvt.*`` keys in its
    schema metadata."""
    table = ds.with_format("arrow")[:]
    return _with_meta(table, read_metadata(ds))


# ---------------------------------------------------------------------------------------------
# datasets


def _fingerprint(*parts: str) -> str:
    h = hashlib.sha256(b"lvt.datasets.encode-v1\0")
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def encode(
    ds: Any,
    encoder: Any,
    *,
    num_proc: int | None = None,
    batch_size: int = 256,
    add_generation_prompt: bool = False,
    skip_bad: bool = False,
    messages_column: str = "messages",
    tools_column: str = "tools",
    id_column: str = "id",
    generation_prompt_column: str = "add_generation_prompt",
    keep_columns: Sequence[str] | None = None,
    tokenizer_label: str = "",
    load_from_cache_file: bool | None = None,
) -> Any:
    """Encode a ``datasets.Dataset`` (or a ``pyarrow.Table``) of conversations.

    Args:
        ds: the conversations (module docstring for the columns).
        encoder: a :class:`lvt.ChatEncoder`.
        num_proc: processes for ``Dataset.map`` (``None``/1: this process). Each worker has
            an encoder with ``encoder``'s fingerprint (forked workers reuse it).
        batch_size: rows per ``encode_batch`` call.
        add_generation_prompt: render every row with the generation prompt.
        skip_bad: leave out rows that cannot be encoded (``line`` says which rows remain)
            instead of raising.
        keep_columns: input columns carried to each output row, with their type (``None``:
            every column the record does not read, e.g. ``answer`` or reward metadata;
            ``[]``: none).
        tokenizer_label: recorded in the metadata.
        load_from_cache_file: as ``Dataset.map`` (the cache key is the input's fingerprint,
            the encoder's fingerprint and the options, so a cached result is the same).

    Returns:
        A ``datasets.Dataset`` (metadata in ``info.description``) for a ``Dataset``; a
        ``pyarrow.Table`` (metadata in its schema) for a ``pyarrow.Table``.

    Raises:
        DatasetRowError: a row cannot be encoded (its index, id and reason).
        DatasetError: no messages column; a worker's encoder has another fingerprint.
        FormatError: the encoder cannot encode at all.
    """
    import datasets
    import pyarrow as pa

    arrow_in = isinstance(ds, pa.Table)
    if arrow_in:  # a content hash: the same table gives the same metadata and cache key
        from datasets.fingerprint import Hasher

        ds = datasets.Dataset(datasets.table.InMemoryTable(ds),
                              fingerprint=Hasher.hash(ds.replace_schema_metadata(None)))
    if not isinstance(ds, datasets.Dataset):
        raise DatasetError(f"expected a datasets.Dataset or a pyarrow.Table, got "
                           f"{type(ds).__name__}")
    if batch_size < 1:
        raise DatasetError(f"batch_size must be at least 1, got {batch_size}")
    if num_proc is not None and num_proc < 1:
        raise DatasetError(f"num_proc must be at least 1, got {num_proc}")
    cols = _Columns(ds.column_names, messages_column, tools_column, id_column,
                    generation_prompt_column)
    cols.keep_others(ds.column_names, keep_columns)
    fn = _MapFn(_Recipe(encoder), cols, add_generation_prompt, skip_bad)
    source = str(getattr(ds, "_fingerprint", "") or "")
    opts = json.dumps([add_generation_prompt, skip_bad, cols.messages, cols.tools, cols.id,
                       cols.generation_prompt, cols.keep])
    fp = encoder.fingerprint()
    registered = fp not in _ENCODERS
    if registered:
        _ENCODERS[fp] = encoder  # forked workers inherit it (no rebuild, no tokenizer parse)
    try:
        out = ds.with_format("arrow").map(
            fn,
            batched=True,
            batch_size=batch_size,
            with_indices=True,
            num_proc=num_proc if num_proc and num_proc > 1 else None,
            remove_columns=ds.column_names,
            features=datasets.Features({**datasets.Features.from_arrow_schema(schema(pa)),
                                        **{k: ds.features[k] for k in cols.keep}}),
            new_fingerprint=_fingerprint(source, fp, opts),
            load_from_cache_file=load_from_cache_file,
            desc="lvt encode",
        ).with_format(None)
    finally:
        if registered:
            _ENCODERS.pop(fp, None)
    table = out.with_format("arrow")[:]
    meta = metadata(encoder, add_generation_prompt=add_generation_prompt, skip_bad=skip_bad,
                    tokenizer_label=tokenizer_label, source=source, table=table)
    if arrow_in:
        return _with_meta(table, meta)
    info = copy.deepcopy(out.info)
    info.description = json.dumps({_DESCRIPTION_KEY: meta}, sort_keys=True)
    out._info = info
    return out


from lvt.datasets.raydata import encode_ray  # noqa: E402  (it builds on the functions above)
