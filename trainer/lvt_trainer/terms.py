"""The per-token RLVR loss ``policy_t + beta * gamma_t * KL_t - entropy_coef * H_t``.

Elementwise building block shared by :func:`lvt_trainer.loss.rlvr_loss` (whole batch) and
the fused chunked pass (:mod:`lvt_trainer.fused`, one chunk at a time); the formulas are
documented in :mod:`lvt_trainer.loss`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .config import RLVRLossConfig
from .errors import TrainerConfigError
from .gate import Gate
from .kl import sampled_kl, to_compute

__all__ = ["TokenTerms", "expand_advantages", "gate_values", "masked", "token_terms"]


def masked(x: Tensor, keep: Tensor) -> Tensor:
    """``x`` where ``keep`` else 0; the gradient at dropped positions is exactly zero."""
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))


@dataclass(frozen=True)
class TokenTerms:
    """Per-token pieces of the loss (every tensor has the shape of ``logp_new``).

    ``per_token`` is what :func:`lvt_trainer.normalize.normalize_loss` reduces; the rest
    feed the metrics. ``kl`` / ``kl_part`` / ``entropy`` are ``None`` when absent.
    """

    per_token: Tensor
    policy: Tensor
    weight: Tensor
    clipped: Tensor
    tis: Tensor
    tis_clipped: Tensor
    kl: Tensor | None
    kl_part: Tensor | None
    entropy: Tensor | None


def expand_advantages(advantages: Tensor, keep: Tensor, cdt: torch.dtype) -> Tensor:
    """``(B,)`` or ``(B, T)`` advantages as a detached ``(B, T)`` tensor, 0 where masked."""
    adv = advantages.detach().to(device=keep.device, dtype=cdt)
    if adv.dim() == 1:
        adv = adv[:, None].expand(keep.shape)
    return masked(adv, keep)


def gate_values(gate: Gate | None, adv: Tensor) -> Tensor:
    """The detached gate ``gamma = gate(A)`` (1 when there is no gate)."""
    if gate is None:
        return torch.ones_like(adv)
    return gate(adv).detach().to(device=adv.device, dtype=adv.dtype)


def token_terms(
    logp_new: Tensor,
    adv: Tensor,
    keep: Tensor,
    gamma: Tensor,
    *,
    logp_old: Tensor | None,
    logp_behavior: Tensor | None,
    kl: Tensor | None,
    ref_logp: Tensor | None,
    entropy: Tensor | None,
    beta: float,
    config: RLVRLossConfig,
) -> TokenTerms:
    """The per-token loss ``policy_t + beta gamma_t KL_t - entropy_coef H_t`` and its parts.

    Elementwise in every argument (any common shape), so it applies to a whole batch or to
    one chunk of a sequence. ``adv`` is already expanded to that shape and masked, ``gamma``
    is the detached gate value; everything else is as in :func:`rlvr_loss`.
    """
    cfg = config
    cdt = adv.dtype
    bound = float(cfg.log_ratio_bound)
    lp = masked(to_compute(logp_new, cdt), keep)
    old = lp.detach() if logp_old is None else masked(logp_old.detach().to(cdt), keep)
    log_ratio = (lp - old).clamp(-bound, bound)
    w = torch.exp(log_ratio.detach())

    if cfg.tis_cap is not None and logp_behavior is not None:
        beh = masked(logp_behavior.detach().to(cdt), keep)
        rho = torch.exp((old - beh).clamp(-bound, bound))
        tis = rho.clamp(max=float(cfg.tis_cap))
        tis_clipped = rho > float(cfg.tis_cap)
    else:
        tis = torch.ones_like(w)
        tis_clipped = torch.zeros_like(keep)

    if cfg.clip_mode in ("proximal", "none"):
        if cfg.clip_mode == "proximal":
            clipped = (w > cfg.proximal_cap) & (adv < 0)
            w_eff = torch.where(clipped, torch.full_like(w, float(cfg.proximal_cap)), w)
        else:
            clipped = torch.zeros_like(keep)
            w_eff = w
        policy_tok = -(w_eff * tis * adv) * torch.exp(lp - lp.detach())
    elif cfg.clip_mode == "ppo":
        ratio = torch.exp(log_ratio)
        lo, hi = 1.0 - float(cfg.ppo_eps_low), 1.0 + float(cfg.ppo_eps_high)
        surr1 = ratio * adv
        surr2 = ratio.clamp(lo, hi) * adv
        policy_tok = -tis * torch.minimum(surr1, surr2)
        clipped = torch.where(adv > 0, w > hi, torch.where(adv < 0, w < lo, False))
    else:
        raise ValueError(f"unknown clip_mode {cfg.clip_mode!r}")

    kl_tok: Tensor | None = None
    if cfg.kl_mode == "exact":
        if kl is not None:
            kl_tok = masked(to_compute(kl, cdt), keep)
        elif beta != 0.0:
            raise TrainerConfigError("kl_mode='exact' with beta != 0 needs the per-token `kl`")
    elif cfg.kl_mode in ("k1", "k2", "k3"):
        if ref_logp is not None:
            ref = masked(ref_logp.detach().to(cdt), keep)
            kl_tok = sampled_kl(lp, ref, cfg.kl_mode, log_ratio_bound=bound)
        elif beta != 0.0:
            raise TrainerConfigError(f"kl_mode={cfg.kl_mode!r} with beta != 0 needs `ref_logp`")
    elif cfg.kl_mode != "none":
        raise ValueError(f"unknown kl_mode {cfg.kl_mode!r}")

    per_token = policy_tok
    kl_part: Tensor | None = None
    if kl_tok is not None and beta != 0.0:
        kl_part = float(beta) * gamma * kl_tok
        per_token = per_token + kl_part
    ent_tok = None if entropy is None else masked(to_compute(entropy, cdt), keep)
    if ent_tok is not None and cfg.entropy_coef != 0.0:
        per_token = per_token - float(cfg.entropy_coef) * ent_tok
    return TokenTerms(per_token, policy_tok, w, clipped, tis, tis_clipped, kl_tok, kl_part, ent_tok)
