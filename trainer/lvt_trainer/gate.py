"""Advantage-aware gate on the per-token KL term: ``gamma_t = sigmoid(alpha * A_t)``.

With ``alpha > 0`` tokens with positive advantage are held closer to the reference
(``gamma > 1/2``) and tokens with negative advantage are freer to move (``gamma < 1/2``);
``A_t = 0`` gives ``1/2``. The gate never carries gradient into the policy (advantages are
constants).

Two modes:

* :class:`FixedGate` (default ``alpha = 1.0``).

Both evaluate ``alpha * A`` and the sigmoid in float64 by default (the method's double
precision), and the loss rounds ``gamma`` once to its dtype; ``dtype=torch.float32`` evaluates
in single precision.
* :class:`LearnableAlphaGate`: ``alpha`` is learnt, but **not** from the main loss. If it
  were, gradient descent on ``beta * sum(gamma * KL)`` (``KL >= 0``) would simply lower
  ``gamma`` on every token that has KL, i.e. switch the KL penalty off (``gamma -> 0``).
  Instead ``alpha`` is a buffer (never a parameter, never in an optimizer), the main loss
  sees ``gamma`` as a constant (:func:`lvt_trainer.loss.rlvr_loss` also detaches any
  gate's output), and ``alpha`` follows its own objective: keep the mean gated KL at a
  target, by a proportional controller with negative feedback (see the class). ``alpha``
  is clamped to ``[alpha_min, alpha_max]``, so for bounded advantages (group-normalised
  ones satisfy ``|A| <= sqrt(G - 1)``) ``gamma >= sigmoid(-alpha_max * max|A|) > 0``.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
import torch.distributed as dist
from torch import Tensor, nn

from .errors import TrainerConfigError

__all__ = ["FixedGate", "Gate", "LearnableAlphaGate"]


class Gate(Protocol):
    """Maps advantages (any shape) to gate values in (0, 1) of the same shape."""

    def __call__(self, advantages: Tensor) -> Tensor: ...


_GATE_DTYPES = (torch.float64, torch.float32)


def _gate_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype not in _GATE_DTYPES:
        raise TrainerConfigError(f"gate dtype: expected torch.float64 (the method's double "
                                 f"precision) or torch.float32, got {dtype!r}")
    return dtype


class FixedGate:
    """``gamma = sigmoid(alpha * A)`` with a constant ``alpha`` (default 1.0).

    ``alpha * A`` and the sigmoid are evaluated in ``dtype``: ``torch.float64`` by default,
    the method's double precision (its failure case is a low-precision sigmoid, fp16's
    ``sigmoid(10) == 1.0``); the loss rounds ``gamma`` once to its own dtype.
    ``dtype=torch.float32`` evaluates in single precision (``alpha * A`` rounded before the
    sigmoid), as lvt did before.
    """

    def __init__(self, alpha: float = 1.0, dtype: torch.dtype = torch.float64) -> None:
        self.alpha = float(alpha)
        self.dtype = _gate_dtype(dtype)

    def __call__(self, advantages: Tensor) -> Tensor:
        a = advantages.detach().to(torch.promote_types(advantages.dtype, self.dtype))
        return torch.sigmoid(self.alpha * a)

    def __repr__(self) -> str:
        return f"FixedGate(alpha={self.alpha}, dtype={self.dtype})"


class LearnableAlphaGate(nn.Module):
    """Gate whose ``alpha`` is adapted by its own objective, never by the main loss.

    Objective: keep the mean gated KL per unmasked token,
    ``G(alpha) = sum(sigmoid(alpha * A) * KL * m) / sum(m)``, at ``target_gated_kl``
    (tracking error ``e = log(G / target)``).

    Update (:meth:`update`, once per optimizer step, after the main backward): a
    proportional controller, as PPO's adaptive KL controller does for ``beta``,
    ``alpha <- clamp(alpha + lr * sign(s) * clip(e, -max_error, max_error))`` with
    ``s = dG/dalpha`` at fixed KL (``mean(gamma (1 - gamma) A KL)``). When the gated KL is
    above target the penalty is raised, when below it is lowered; the policy's response
    closes the loop. (Plain gradient descent on ``e**2`` at fixed KL would do the
    opposite, lowering the penalty whenever KL is high: a positive feedback loop that
    collapses the gate just like descending the main loss would.)

    ``alpha`` is a *buffer*, not a parameter: it cannot end up in an optimizer, the main
    loss gets ``sigmoid(alpha * A)`` as a constant, and ``alpha`` stays within
    ``[alpha_min, alpha_max]``, so ``gamma >= sigmoid(-alpha_max * max|A|) > 0``.

    Use: pass the gate to :func:`lvt_trainer.loss.rlvr_loss` as ``gate=``; after the
    optimizer step call ``gate.update(advantages, kl, mask)`` with the detached per-token
    KL of the batch (e.g. the ``kl`` output of :func:`lvt_trainer.kl.token_stats`).

    Args:
        target_gated_kl: the target mean gated KL per unmasked token.
        alpha_init, alpha_min, alpha_max: initial value and bounds of ``alpha``.
        lr: controller gain (change of ``alpha`` per unit of clipped log error).
        max_error: clip of the log tracking error per update.
        group: process group; under data parallelism the controller's statistics are
            all-reduced so every rank takes the same step (``alpha`` stays identical).
        dtype: the precision of ``alpha * A`` and the sigmoid in :meth:`forward` (as
            :class:`FixedGate`: ``torch.float64`` by default).

    :func:`lvt_trainer.grpo.grpo_train_step` calls :meth:`update` itself after each
    optimizer step.
    """

    alpha: Tensor

    def __init__(
        self,
        target_gated_kl: float = 0.01,
        alpha_init: float = 1.0,
        alpha_min: float = 0.0,
        alpha_max: float = 5.0,
        lr: float = 0.5,
        max_error: float = 0.2,
        group: dist.ProcessGroup | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        self.dtype = _gate_dtype(dtype)
        if not alpha_min <= alpha_init <= alpha_max:
            raise TrainerConfigError("need alpha_min <= alpha_init <= alpha_max")
        if target_gated_kl <= 0 or lr <= 0 or max_error <= 0:
            raise TrainerConfigError("target_gated_kl, lr and max_error must be > 0")
        self.target_gated_kl = float(target_gated_kl)
        self.alpha_min = float(alpha_min)
        self.alpha_max = float(alpha_max)
        self.lr = float(lr)
        self.max_error = float(max_error)
        self.group = group
        self.register_buffer("alpha", torch.tensor(float(alpha_init), dtype=torch.float64))

    def forward(self, advantages: Tensor) -> Tensor:
        """Gate values for the main loss (a constant with respect to everything)."""
        a = advantages.detach().to(torch.promote_types(advantages.dtype, self.dtype))
        return torch.sigmoid(self.alpha.to(a.device, a.dtype) * a)

    def _stats(self, advantages: Tensor, kl: Tensor, mask: Tensor) -> tuple[float, float]:
        a = advantages.detach().double()
        k = kl.detach().double()
        if a.dim() == 1 and k.dim() == 2:  # per-sample advantages, per-token KL
            a = a[:, None]
        keep = mask != 0
        m = keep.double()
        zero = torch.zeros((), dtype=torch.float64, device=a.device)
        gamma = torch.sigmoid(self.alpha.to(a.device) * a)
        sums = torch.stack([
            torch.where(keep, gamma * k, zero).sum(),
            torch.where(keep, gamma * (1 - gamma) * a * k, zero).sum(),
            m.sum(),
        ])
        if dist.is_available() and dist.is_initialized():
            # every rank must take the same controller step: global means
            dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=self.group)
        g_sum, s_sum, n = sums.cpu().tolist()
        n = max(n, 1.0)
        return g_sum / n, s_sum / n

    def tracking_error(self, advantages: Tensor, kl: Tensor, mask: Tensor) -> float:
        """``log(mean gated KL / target)`` (the quantity the controller drives to 0)."""
        gated, _ = self._stats(advantages, kl, mask)
        return math.log(max(gated, 1e-30) / self.target_gated_kl)

    @torch.no_grad()
    def update(self, advantages: Tensor, kl: Tensor, mask: Tensor) -> float:
        """One controller step from this batch; returns the new ``alpha``.

        ``advantages`` is ``(B,)`` or ``(B, T)``; ``kl`` and ``mask`` are ``(B, T)``.
        """
        gated, slope = self._stats(advantages, kl, mask)
        err = math.log(max(gated, 1e-30) / self.target_gated_kl)
        err = max(-self.max_error, min(self.max_error, err))
        if slope != 0.0:
            new = float(self.alpha) + self.lr * math.copysign(1.0, slope) * err
            self.alpha.fill_(max(self.alpha_min, min(self.alpha_max, new)))
        return float(self.alpha)
