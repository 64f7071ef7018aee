"""Per-token rewards, returns and advantages in the ``input_ids`` layout.

Layout (as in :class:`lvt_trainer.grpo.RolloutBatch`): index ``t`` refers to the token
``a_t = input_ids[b, t]``; ``mask[b, t] = 1`` on the tokens the policy sampled (the learned
positions). The learned positions of a row are the agent's time steps, in order; anything
between them (tool results, the next user turn) is part of the environment's transition.
``V(s_t)`` is the value of the state *before* ``a_t`` and ``Q(s_t, a_t)`` that of taking
``a_t`` there.

* :func:`place_rewards`: the terminal (verifiable) reward on the last learned token of each
  row, plus optional per-token rewards.
* :func:`gae`: generalised advantage estimation ``A_t = sum_l (gamma lam)^l delta_{t+l}``,
  ``delta_t = r_t + gamma V(s_{t+1}) - V(s_t)``, over the learned positions of each row,
  with ``V(s_end) = 0`` after a finished rollout and a bootstrap value after a truncated
  one; also the lambda-returns ``A_t + V(s_t)`` (the ``Q`` targets).
* :func:`reward_to_go`: ``G_t = sum_l gamma^l r_{t+l}`` (GAE with ``V = 0``, ``lam = 1``).
* :func:`masked_whiten`: advantages normalised over the learned tokens of the batch.
* :class:`MovingAverageBaseline`: the warm-up baseline, an exponential moving average of the
  reward-to-go at each offset (0, 1, 2, ... learned tokens into the rollout).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .errors import TrainerConfigError, TrainerShapeError, check_range

__all__ = [
    "MovingAverageBaseline",
    "gae",
    "learned_offsets",
    "masked_whiten",
    "place_rewards",
    "reward_to_go",
]


def _keep(mask: Tensor) -> Tensor:
    if mask.dim() != 2:
        raise TrainerShapeError(f"mask: expected (B, T), got {tuple(mask.shape)}")
    return mask != 0


def place_rewards(
    mask: Tensor, rewards: Tensor | None, token_rewards: Tensor | None = None
) -> Tensor:
    """``(B, T)`` float64 rewards: ``rewards[b]`` on the last learned token of row ``b``
    plus ``token_rewards`` (``(B, T)``) at learned positions (0 elsewhere).

    A row without learned tokens gets no reward (there is no action to credit).
    """
    keep = _keep(mask)
    bsz, seq = keep.shape
    out = torch.zeros((bsz, seq), dtype=torch.float64, device=mask.device)
    if rewards is not None:
        r = torch.as_tensor(rewards, dtype=torch.float64, device=mask.device)
        if tuple(r.shape) != (bsz,):
            raise TrainerShapeError(f"rewards: expected (B,) = {(bsz,)}, got {tuple(r.shape)}")
        pos = torch.arange(seq, device=mask.device).expand(bsz, seq)
        last = torch.where(keep, pos, torch.full_like(pos, -1)).max(dim=1).values
        has = last >= 0
        rows = torch.arange(bsz, device=mask.device)[has]
        out[rows, last[has]] += r[has]
    if token_rewards is not None:
        if tuple(token_rewards.shape) != (bsz, seq):
            raise TrainerShapeError(
                f"token_rewards: expected (B, T) = {(bsz, seq)}, got {tuple(token_rewards.shape)}"
            )
        tr = token_rewards.to(device=mask.device, dtype=torch.float64)
        out += torch.where(keep, tr, torch.zeros((), dtype=torch.float64, device=mask.device))
    return out


def gae(
    rewards: Tensor,
    values: Tensor,
    mask: Tensor,
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
    bootstrap: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """GAE(gamma, lam) over the learned positions of each row.

    Args:
        rewards: ``(B, T)`` reward of each learned token (see :func:`place_rewards`).
        values: ``(B, T)`` ``V(s_t)`` at learned positions (other entries ignored).
        mask: ``(B, T)`` learned positions.
        gamma, lam: discount and GAE parameter, both in ``[0, 1]``.
        bootstrap: ``(B,)`` value of the state after the last learned token (``V(s_end)``):
            0 for a finished rollout (the default), an estimate for a truncated one.

    Returns:
        ``(advantages, returns)``, ``(B, T)`` float64, 0 at unlearned positions;
        ``returns = advantages + values`` (the lambda-return, the ``Q(s_t, a_t)`` target).
    """
    check_range("gamma", gamma, low=0.0, high=1.0)
    check_range("lam", lam, low=0.0, high=1.0)
    keep = _keep(mask)
    if rewards.shape != keep.shape or values.shape != keep.shape:
        raise TrainerShapeError(
            f"rewards/values/mask must share (B, T): {tuple(rewards.shape)}, "
            f"{tuple(values.shape)}, {tuple(keep.shape)}"
        )
    bsz, seq = keep.shape
    f64 = torch.float64
    r = rewards.to(f64)
    v = torch.where(keep, values.to(f64), torch.zeros((), dtype=f64, device=values.device))
    nxt = (
        torch.zeros(bsz, dtype=f64, device=values.device)
        if bootstrap is None
        else bootstrap.to(device=values.device, dtype=f64)
    )
    running = torch.zeros(bsz, dtype=f64, device=values.device)
    adv = torch.zeros((bsz, seq), dtype=f64, device=values.device)
    for t in range(seq - 1, -1, -1):
        k = keep[:, t]
        delta = r[:, t] + gamma * nxt - v[:, t]
        cur = delta + gamma * lam * running
        adv[:, t] = torch.where(k, cur, torch.zeros_like(cur))
        running = torch.where(k, cur, running)
        nxt = torch.where(k, v[:, t], nxt)
    returns = torch.where(keep, adv + v, torch.zeros_like(adv))
    return adv, returns


def reward_to_go(rewards: Tensor, mask: Tensor, *, gamma: float = 1.0) -> Tensor:
    """``G_t = sum_l gamma^l r_{t+l}`` over the learned positions (float64, 0 elsewhere)."""
    zeros = torch.zeros(rewards.shape, dtype=torch.float64, device=rewards.device)
    _, ret = gae(rewards, zeros, mask, gamma=gamma, lam=1.0)
    return ret


def learned_offsets(mask: Tensor) -> Tensor:
    """``(B, T)`` int64: ``k`` at the ``k``-th learned token of its row (0-based), -1 else."""
    keep = _keep(mask)
    k = keep.long().cumsum(dim=1) - 1
    return torch.where(keep, k, torch.full_like(k, -1))


def masked_whiten(x: Tensor, mask: Tensor, *, eps: float = 1e-8, shift_mean: bool = True) -> Tensor:
    """``(x - mean) / (std + eps)`` over the learned tokens of the batch (0 elsewhere).

    With fewer than two learned tokens (or zero spread) ``x`` is only centred.
    """
    keep = _keep(mask)
    f64 = torch.float64
    xs = x.to(f64)
    n = keep.sum()
    if int(n) == 0:
        return torch.zeros_like(xs)
    zero = torch.zeros((), dtype=f64, device=x.device)
    mean = torch.where(keep, xs, zero).sum() / n
    var = torch.where(keep, (xs - mean) ** 2, zero).sum() / (n - 1).clamp_min(1)
    std = var.sqrt()
    centred = xs - mean if shift_mean else xs
    out = centred / (std + eps) if bool(std > eps) else centred
    return torch.where(keep, out, zero)


class MovingAverageBaseline:
    """The warm-up baseline: an EMA of the reward-to-go at each learned-token offset.

    ``update(G, mask)`` folds in the batch mean of ``G`` at each offset ``k`` seen in the
    batch (``b_k <- decay * b_k + (1 - decay) * mean``; the first observation of an offset
    sets it), and the batch-wide mean into a global EMA used for offsets not seen yet.
    ``values(mask)`` returns ``b`` at every learned position. The baseline lives on the CPU
    in float64; it is a constant (no gradient).

    Args:
        decay: EMA decay in ``[0, 1)``.
        max_offset: offsets at or past this share the last slot.
    """

    def __init__(self, decay: float = 0.9, max_offset: int = 4096) -> None:
        check_range("baseline decay", decay, low=0.0, high=1.0, high_open=True)
        if max_offset < 1:
            raise TrainerConfigError(f"max_offset must be >= 1, got {max_offset}")
        self.decay = float(decay)
        self.max_offset = int(max_offset)
        self.per_offset = torch.zeros(self.max_offset, dtype=torch.float64)
        self.seen = torch.zeros(self.max_offset, dtype=torch.bool)
        self.global_mean: float | None = None

    def _slots(self, mask: Tensor) -> tuple[Tensor, Tensor]:
        off = learned_offsets(mask).cpu()
        keep = off >= 0
        return off.clamp(min=0, max=self.max_offset - 1), keep

    @torch.no_grad()
    def update(self, returns: Tensor, mask: Tensor) -> None:
        """Fold one batch of reward-to-go values (``(B, T)``, at learned positions) in."""
        slots, keep = self._slots(mask)
        g = returns.detach().to(device="cpu", dtype=torch.float64)
        if not bool(keep.any()):
            return
        sums = torch.zeros(self.max_offset, dtype=torch.float64)
        cnts = torch.zeros(self.max_offset, dtype=torch.float64)
        sums.index_add_(0, slots[keep], g[keep])
        cnts.index_add_(0, slots[keep], torch.ones_like(g[keep]))
        present = cnts > 0
        means = sums[present] / cnts[present]
        old = self.per_offset[present]
        fresh = ~self.seen[present]
        self.per_offset[present] = torch.where(
            fresh, means, self.decay * old + (1 - self.decay) * means
        )
        self.seen |= present
        batch_mean = float(g[keep].mean())
        self.global_mean = (
            batch_mean
            if self.global_mean is None
            else self.decay * self.global_mean + (1 - self.decay) * batch_mean
        )

    def values(self, mask: Tensor) -> Tensor:
        """``(B, T)`` float64 baseline at the learned positions of ``mask`` (0 elsewhere),
        on ``mask``'s device."""
        slots, keep = self._slots(mask)
        fallback = 0.0 if self.global_mean is None else self.global_mean
        table = torch.where(self.seen, self.per_offset, torch.full_like(self.per_offset, fallback))
        out = torch.where(keep, table[slots], torch.zeros((), dtype=torch.float64))
        return out.to(mask.device)

    def next_value(self, mask: Tensor) -> Tensor:
        """``(B,)`` baseline at the offset just past each row's last learned token (the
        bootstrap value of a truncated rollout during warm-up)."""
        n = (mask != 0).sum(dim=1).cpu().clamp(max=self.max_offset - 1)
        fallback = 0.0 if self.global_mean is None else self.global_mean
        table = torch.where(self.seen, self.per_offset, torch.full_like(self.per_offset, fallback))
        return table[n].to(mask.device)

    def mean(self) -> float:
        """The global EMA of the reward-to-go (0 before any update)."""
        return 0.0 if self.global_mean is None else float(self.global_mean)
