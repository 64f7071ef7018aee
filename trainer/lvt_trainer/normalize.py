"""Loss normalisation that is correct across data-parallel ranks and gradient accumulation.

Three modes reduce a per-token loss ``x[b, t]`` under a 0/1 mask ``m[b, t]``:

* ``"token_mean"``: ``sum(x * m) / N`` where ``N`` is the number of unmasked tokens in
  the *whole optimizer step*: every micro-batch on every data-parallel rank.
* ``"seq_mean_token_mean"``: ``sum_b (sum_t x m / sum_t m) / S`` with ``S`` the number of
  sequences having at least one unmasked token, again over the whole step.
* ``"seq_mean_token_sum"``: ``sum_b (sum_t x m) / S``.

verl's ``loss_agg_mode`` spellings (``"token-mean"``, ``"seq-mean-token-mean"``,
``"seq-mean-token-sum"``) are accepted too.

Data parallelism: when ``torch.distributed`` is initialised and no count is passed, the
local count is all-reduced (a collective: every rank must call). Because DDP/FSDP *average*
gradients over ranks, the local loss is multiplied by the world size
(``grad_reduction="mean"``, the default); the average of the returned per-rank losses, and
of their gradients, then equals the single-process loss on the concatenated batch. Use
``grad_reduction="sum"`` if your gradient all-reduce sums.

Gradient accumulation: compute the counts once per optimizer step over all micro-batches
(:func:`global_token_count` / :func:`global_sequence_count` accept a list of masks), pass
them to every micro-batch, and *sum* the micro-batch losses (do not divide by the number
of accumulation steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.distributed as dist
from torch import Tensor

__all__ = [
    "GradReduction",
    "NormMode",
    "dist_world_size",
    "global_sequence_count",
    "global_token_count",
    "normalize_loss",
]

NormMode = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"]
GradReduction = Literal["mean", "sum"]


def _dist_on() -> bool:
    return dist.is_available() and dist.is_initialized()


def dist_world_size(group: dist.ProcessGroup | None = None) -> int:
    """World size of ``group`` when ``torch.distributed`` is initialised, else 1."""
    return dist.get_world_size(group) if _dist_on() else 1


def _as_list(masks: Tensor | Sequence[Tensor]) -> list[Tensor]:
    return [masks] if isinstance(masks, Tensor) else list(masks)


def _all_reduce_sum(value: Tensor, group: dist.ProcessGroup | None, reduce: bool) -> Tensor:
    if reduce and _dist_on():
        dist.all_reduce(value, op=dist.ReduceOp.SUM, group=group)
    return value


def global_token_count(
    masks: Tensor | Sequence[Tensor],
    *,
    group: dist.ProcessGroup | None = None,
    all_reduce: bool = True,
) -> Tensor:
    """Number of unmasked tokens over ``masks`` (one per micro-batch) and over all ranks.

    Returns a 0-dim float64 tensor on the masks' device. Collective when
    ``torch.distributed`` is initialised and ``all_reduce`` is true.
    """
    ms = _as_list(masks)
    total = torch.zeros((), dtype=torch.float64, device=ms[0].device)
    for m in ms:
        total = total + (m != 0).sum().to(torch.float64)
    return _all_reduce_sum(total, group, all_reduce)


def global_sequence_count(
    masks: Tensor | Sequence[Tensor],
    *,
    group: dist.ProcessGroup | None = None,
    all_reduce: bool = True,
) -> Tensor:
    """Number of sequences (rows) with at least one unmasked token, over all ranks."""
    ms = _as_list(masks)
    total = torch.zeros((), dtype=torch.float64, device=ms[0].device)
    for m in ms:
        total = total + ((m != 0).sum(-1) > 0).sum().to(torch.float64)
    return _all_reduce_sum(total, group, all_reduce)


def normalize_loss(
    per_token: Tensor,
    mask: Tensor,
    mode: NormMode = "token_mean",
    *,
    global_token_count: Tensor | float | None = None,
    global_seq_count: Tensor | float | None = None,
    grad_reduction: GradReduction = "mean",
    group: dist.ProcessGroup | None = None,
) -> Tensor:
    """Reduce a ``(B, T)`` per-token loss to a scalar under a 0/1 ``mask``.

    Masked positions are excluded with ``torch.where`` (not multiplication), so they get
    exactly zero gradient even if ``per_token`` is non-finite there.

    Args:
        per_token: ``(B, T)`` loss per token.
        mask: ``(B, T)`` 0/1 (bool, int or float) loss mask.
        mode: see the module docstring.
        global_token_count: tokens in the whole optimizer step on all ranks (token_mean).
            ``None``: this batch's count, all-reduced when distributed.
        global_seq_count: sequences in the whole step on all ranks (seq_mean_* modes).
        grad_reduction: how the data-parallel gradient all-reduce combines ranks.
        group: process group for the implicit all-reduce.
    """
    if per_token.shape != mask.shape:
        raise ValueError(f"shape mismatch: {tuple(per_token.shape)} vs {tuple(mask.shape)}")
    if isinstance(mode, str) and "-" in mode:  # verl's loss_agg_mode spelling
        mode = mode.replace("-", "_")  # type: ignore[assignment]
    keep = mask != 0
    x = torch.where(keep, per_token, torch.zeros((), dtype=per_token.dtype, device=mask.device))
    if mode == "token_mean":
        count = global_token_count
        if count is None:
            count = _global_count_of(keep.sum().to(torch.float64), group)
        numer = x.sum()
    elif mode in ("seq_mean_token_mean", "seq_mean_token_sum"):
        count = global_seq_count
        if count is None:
            count = _global_count_of((keep.sum(-1) > 0).sum().to(torch.float64), group)
        per_seq = x.sum(-1)
        if mode == "seq_mean_token_mean":
            n_tok = keep.sum(-1).to(per_token.dtype).clamp_min(1.0)
            per_seq = per_seq / n_tok
        numer = per_seq.sum()
    else:
        raise ValueError(f"unknown normalisation mode {mode!r}")
    denom = torch.as_tensor(count, dtype=torch.float64, device=per_token.device).clamp_min(1.0)
    loss = numer / denom.to(numer.dtype)
    if grad_reduction == "mean":
        loss = loss * dist_world_size(group)
    elif grad_reduction != "sum":
        raise ValueError(f"unknown grad_reduction {grad_reduction!r}")
    return loss


def _global_count_of(local: Tensor, group: dist.ProcessGroup | None) -> Tensor:
    return _all_reduce_sum(local.clone(), group, True)
