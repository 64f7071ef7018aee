"""Metrics of the RLVR loss: global over data-parallel ranks, named like verl's too.

Every metric is a mean over the unmasked tokens of the *whole* step: each rank contributes
sums and counts, and when ``torch.distributed`` is initialised they are all-reduced (one
``SUM`` all-reduce of a small vector and one ``MAX`` for ``weight_max``; a collective:
every rank must call). The loss values (``loss``, ``policy_loss``, ``kl_loss``) are the
loss of the whole step, i.e. the mean over ranks of the per-rank losses under DDP gradient
averaging (``grad_reduction="mean"``) or their sum (``"sum"``). So the numbers a rank
reports equal the single-process numbers on the concatenated batch.

Names: the internal keys (``policy_loss``, ``clip_frac``, ``kl_mean``, ...) plus the verl
spellings (:data:`VERL_ALIASES`: ``actor/pg_loss``, ``actor/pg_clipfrac``,
``actor/ppo_kl``, ``actor/entropy``, ``actor/kl_loss``, ``actor/kl_coef``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from .config import RLVRLossConfig
from .normalize import normalize_loss
from .terms import TokenTerms, masked

__all__ = ["VERL_ALIASES", "add_aliases", "global_metrics", "loss_metrics"]

#: verl metric name -> internal name (both are reported).
VERL_ALIASES: dict[str, str] = {
    "actor/pg_loss": "policy_loss",
    "actor/pg_clipfrac": "clip_frac",
    "actor/ppo_kl": "ppo_kl",
    "actor/entropy": "entropy_mean",
    "actor/kl_loss": "kl_mean",
    "actor/kl_coef": "beta",
}


def _dist_on() -> bool:
    return dist.is_available() and dist.is_initialized()


def add_aliases(metrics: dict[str, float]) -> dict[str, float]:
    """Add the :data:`VERL_ALIASES` keys for the internal keys present; returns ``metrics``."""
    for alias, key in VERL_ALIASES.items():
        if key in metrics:
            metrics[alias] = metrics[key]
    return metrics


def global_metrics(
    means: Mapping[str, tuple[Tensor, Tensor]],
    sums: Mapping[str, Tensor],
    losses: Mapping[str, Tensor],
    maxima: Mapping[str, Tensor],
    constants: Mapping[str, float],
    *,
    grad_reduction: str = "mean",
    group: dist.ProcessGroup | None = None,
) -> dict[str, float]:
    """Reduce per-rank pieces to global metrics (one host sync).

    Args:
        means: name -> ``(sum, count)`` over this rank's selected tokens; the metric is
            ``global sum / max(global count, 1)``.
        sums: name -> this rank's part of a global sum (``num_tokens``).
        losses: name -> this rank's (already globally normalised) loss value.
        maxima: name -> this rank's maximum.
        constants: values that are the same on every rank (``beta``).
        grad_reduction: ``"mean"`` (DDP averaging: the step loss is the mean over ranks of
            the per-rank losses) or ``"sum"``.
        group: process group of the all-reduces.
    """
    names = list(means)
    snames = list(sums)
    lnames = list(losses)
    parts = [means[k][0].reshape(()).double() for k in names]
    parts += [means[k][1].reshape(()).double() for k in names]
    parts += [sums[k].detach().reshape(()).double() for k in snames]
    parts += [losses[k].detach().reshape(()).double() for k in lnames]
    dev = parts[0].device if parts else torch.device("cpu")
    vec = torch.stack(parts) if parts else torch.zeros(0, dtype=torch.float64)
    mx_names = list(maxima)
    mx = (
        torch.stack([maxima[k].detach().reshape(()).double() for k in mx_names])
        if mx_names
        else torch.zeros(0, dtype=torch.float64, device=dev)
    )
    world = 1
    if _dist_on():
        dist.all_reduce(vec, op=dist.ReduceOp.SUM, group=group)
        if mx.numel():
            dist.all_reduce(mx, op=dist.ReduceOp.MAX, group=group)
        world = dist.get_world_size(group)
    vals = vec.cpu().tolist()
    mvals = mx.cpu().tolist()
    n = len(names)
    out: dict[str, float] = {}
    for i, k in enumerate(names):
        out[k] = vals[i] / max(vals[n + i], 1.0)
    for j, k in enumerate(snames):
        out[k] = vals[2 * n + j]
    for j, k in enumerate(lnames):
        v = vals[2 * n + len(snames) + j]
        out[k] = v / world if grad_reduction == "mean" else v
    for k, v in zip(mx_names, mvals, strict=True):
        out[k] = v
    out.update({k: float(v) for k, v in constants.items()})
    return out


def loss_metrics(
    t: TokenTerms,
    adv: Tensor,
    gamma: Tensor,
    keep: Tensor,
    loss_mask: Tensor,
    logp_new: Tensor,
    logp_old: Tensor | None,
    beta: float,
    cfg: RLVRLossConfig,
    norm_kw: dict[str, Any],
    loss: Tensor,
) -> dict[str, float]:
    """Sums and counts of this rank, reduced by :func:`lvt_trainer.metrics.global_metrics`."""
    cdt = adv.dtype
    n = keep.sum().to(cdt)
    pos = keep & (adv > 0)
    neg = keep & (adv < 0)
    zero = torch.zeros((), dtype=cdt, device=adv.device)

    def part(x: Tensor, sel: Tensor = keep) -> tuple[Tensor, Tensor]:
        return torch.where(sel, x.detach().to(cdt), zero).sum(), sel.sum().to(cdt)

    def norm(x: Tensor | None) -> Tensor:
        if x is None:
            return zero
        return normalize_loss(x.detach(), loss_mask, cfg.normalization, **norm_kw).to(cdt)

    lp = masked(logp_new.detach().to(cdt), keep)
    old = lp if logp_old is None else masked(logp_old.detach().to(cdt), keep)
    means = {
        "weight_mean": part(t.weight),
        "clip_frac": part(t.clipped),
        "clip_frac_pos_adv": part(t.clipped, pos),
        "clip_frac_neg_adv": part(t.clipped, neg),
        "tis_mean": part(t.tis),
        "tis_clip_frac": part(t.tis_clipped),
        "gate_mean": part(gamma),
        "kl_mean": (zero, n) if t.kl is None else part(t.kl),
        "gated_kl_mean": (zero, n) if t.kl is None else part(gamma * t.kl.detach()),
        "ppo_kl": part(old - lp),
        "advantage_mean": part(adv),
    }
    if t.entropy is not None:
        means["entropy_mean"] = part(t.entropy)
    losses = {"loss": loss, "policy_loss": norm(t.policy), "kl_loss": norm(t.kl_part)}
    wmax = torch.where(keep, t.weight, zero).max() if t.weight.numel() else zero
    out = global_metrics(
        means, {"num_tokens": n}, losses, {"weight_max": wmax}, {"beta": float(beta)},
        grad_reduction=cfg.grad_reduction, group=norm_kw["group"],
    )
    return add_aliases(out)
