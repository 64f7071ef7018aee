"""An explicit id map between a real tokenizer's ids and a compact model vocabulary.

A tiny causal LM whose embedding and head cover the whole Llama-3 vocabulary (128,256 ids)
is too slow for a CPU learning run, while a task only ever uses a few hundred distinct
ids. :class:`IdMap` is the bijection between those tokenizer ids (sorted) and
``0 .. size - 1``: the model reads and writes compact ids, ``lvt`` renders and parses
tokenizer ids, and every crossing goes through :meth:`IdMap.to_model` /
:meth:`IdMap.to_real`. Because the map is a bijection on the ids that occur, the sequence
the loss sees is lvt's render relabelled, token for token (``to_real(to_model(x)) == x``,
checked in the batch builder); an id outside the map is an error, never silently mapped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch
from torch import Tensor

from .errors import TrainerConfigError

__all__ = ["IdMap"]


class IdMap:
    """Bijection between the tokenizer ids in ``real_ids`` and compact ids ``0..n-1``.

    Compact id ``i`` is the ``i``-th smallest tokenizer id, so the map is determined by the
    set of ids alone (documented, reproducible).
    """

    def __init__(self, real_ids: Iterable[int]) -> None:
        ids = sorted({int(t) for t in real_ids})
        if not ids:
            raise TrainerConfigError("an IdMap needs at least one id")
        if ids[0] < 0:
            raise TrainerConfigError(f"token ids must be >= 0, got {ids[0]}")
        self._real = torch.tensor(ids, dtype=torch.long)
        table = torch.full((ids[-1] + 1,), -1, dtype=torch.long)
        table[self._real] = torch.arange(len(ids), dtype=torch.long)
        self._table = table

    @classmethod
    def from_sequences(cls, seqs: Iterable[Sequence[int] | np.ndarray]) -> IdMap:
        """The map of every id occurring in ``seqs`` (e.g. renders of all task data)."""
        found: set[int] = set()
        for s in seqs:
            found.update(int(t) for t in np.asarray(s).reshape(-1).tolist())
        return cls(found)

    @property
    def size(self) -> int:
        """Number of ids (the model's vocabulary size)."""
        return int(self._real.numel())

    @property
    def real_ids(self) -> list[int]:
        """The tokenizer ids, in compact-id order."""
        return [int(t) for t in self._real.tolist()]

    def __len__(self) -> int:
        return self.size

    def __contains__(self, real_id: object) -> bool:
        if not isinstance(real_id, int | np.integer):
            return False
        r = int(real_id)
        return 0 <= r < self._table.numel() and int(self._table[r]) >= 0

    def to_model(self, ids: Tensor | Sequence[int] | np.ndarray) -> Tensor:
        """Tokenizer ids -> compact ids (int64 tensor, same shape).

        Raises:
            TrainerConfigError: an id outside the map (named).
        """
        t = torch.as_tensor(np.asarray(ids) if not isinstance(ids, Tensor) else ids)
        t = t.to(torch.long)
        table = self._table.to(t.device)
        inside = (t >= 0) & (t < table.numel())
        out = torch.where(inside, table[t.clamp(0, table.numel() - 1)], -1)
        if bool((out < 0).any()):
            bad = sorted({int(x) for x in t[out < 0].reshape(-1).tolist()})[:8]
            raise TrainerConfigError(f"token ids {bad} are not in the id map ({self.size} ids)")
        return out

    def to_real(self, ids: Tensor | Sequence[int] | np.ndarray) -> Tensor:
        """Compact ids -> tokenizer ids (int64 tensor, same shape).

        Raises:
            TrainerConfigError: an id outside ``0..size-1``.
        """
        t = torch.as_tensor(np.asarray(ids) if not isinstance(ids, Tensor) else ids)
        t = t.to(torch.long)
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= self.size):
            raise TrainerConfigError(f"compact ids must lie in [0, {self.size})")
        return self._real.to(t.device)[t]
