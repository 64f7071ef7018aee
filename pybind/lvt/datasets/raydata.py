"""The Ray Data path of :mod:`lvt.datasets`: :func:`encode_ray` runs ``map_batches`` with a
callable class, so each Ray worker builds its encoder once (from a picklable factory) and
checks its fingerprint against the driver's; the rows are those of :func:`lvt.datasets.encode`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lvt.datasets import _Columns, _encode_rows, _with_meta, metadata
from lvt.datasets.jsonl import DatasetError

__all__ = ["encode_ray"]


class _RayEncode:
    """``map_batches`` callable class: one encoder per Ray worker."""

    def __init__(self, factory: Callable[[], Any], fingerprint: str, cols: _Columns,
                 agp: bool, skip_bad: bool, meta: dict[str, str]) -> None:
        self.encoder = factory()
        if self.encoder.fingerprint() != fingerprint:
            raise DatasetError("a Ray worker's encoder has another fingerprint than the "
                               "driver's (the factory must build the same encoder everywhere)")
        self.cols, self.agp, self.skip_bad, self.meta = cols, agp, skip_bad, meta

    def __call__(self, batch: Any) -> Any:
        table = _encode_rows(self.encoder, batch, [None] * batch.num_rows, self.cols,
                             self.agp, self.skip_bad)
        return _with_meta(table, self.meta)


def encode_ray(
    ray_ds: Any,
    *,
    tokenizer: Any = None,
    format: str | None = None,
    options: Mapping[str, Any] | None = None,
    encoder_factory: Callable[[], Any] | None = None,
    concurrency: int = 1,
    batch_size: int = 256,
    add_generation_prompt: bool = False,
    skip_bad: bool = False,
    messages_column: str = "messages",
    tools_column: str = "tools",
    id_column: str = "id",
    generation_prompt_column: str = "add_generation_prompt",
    keep_columns: Sequence[str] | None = None,
    num_cpus: float = 1,
) -> Any:
    """Encode a Ray Data dataset of conversations (lazily, as Ray does).

    Give either ``tokenizer`` (an object, a ``tokenizer.json`` path or a zoo name, as the
    CLI takes) and ``format`` (implied by a zoo name) and template ``options``, or an
    ``encoder_factory`` (a picklable zero-argument callable returning a
    :class:`lvt.ChatEncoder`). Each of the ``concurrency`` workers builds one encoder and
    refuses to run if its fingerprint differs from the one the driver builds. Blocks come
    back with the ``lvt.*`` keys in their schema metadata (:func:`metadata`, without counts);
    ``line`` is -1 (Ray Data has no global row index: ``id`` names the rows). Row order is
    Ray's: set ``DataContext.get_current().execution_options.preserve_order = True`` for
    the input order.

    Raises:
        DatasetError: neither or both of ``tokenizer``/``format`` and ``encoder_factory``;
            no messages column.
        DatasetRowError: (when the data is computed) a row cannot be encoded.
    """
    if encoder_factory is None:
        from lvt.compare.templates import ZOO_FORMATS

        if tokenizer is None or (format is None and not (isinstance(tokenizer, str)
                                                         and tokenizer in ZOO_FORMATS)):
            raise DatasetError("encode_ray needs tokenizer and format (or a zoo name that "
                               "implies the format, as the CLI), or encoder_factory")
        from lvt.runtime.codec import as_tokenizer
        from lvt.zoo.source import default_format, load_tokenizer

        encoder_factory = _Factory(as_tokenizer(load_tokenizer(tokenizer)),
                                   default_format(tokenizer, format), dict(options or {}))
    elif tokenizer is not None or format is not None or options:
        raise DatasetError("give either encoder_factory or tokenizer/format/options, not both")
    if concurrency < 1 or batch_size < 1:
        raise DatasetError("concurrency and batch_size must be at least 1")
    from ray.data import ActorPoolStrategy

    enc = encoder_factory()
    names = ray_ds.schema().names
    cols = _Columns(names, messages_column, tools_column, id_column, generation_prompt_column)
    cols.keep_others(names, keep_columns)
    meta = metadata(enc, add_generation_prompt=add_generation_prompt, skip_bad=skip_bad)
    return ray_ds.map_batches(
        _RayEncode,
        fn_constructor_kwargs={"factory": encoder_factory, "fingerprint": enc.fingerprint(),
                               "cols": cols, "agp": add_generation_prompt,
                               "skip_bad": skip_bad, "meta": meta},
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=ActorPoolStrategy(size=concurrency),
        num_cpus=num_cpus,
    )


class _Factory:
    """``ChatEncoder.from_tokenizer(tokenizer, format, **options)`` as a picklable callable."""

    def __init__(self, tokenizer: Any, fmt: str, options: dict[str, Any]) -> None:
        self.tokenizer, self.format, self.options = tokenizer, fmt, options

    def __call__(self) -> Any:
        from lvt.encoder import ChatEncoder

        return ChatEncoder.from_tokenizer(self.tokenizer, self.format, **self.options)
