"""The token-wise RLVR loss.

For every response token ``t`` (``m_t = 1``) with advantage ``A_t``:

``loss_t = policy_t + beta * gamma_t * KL_t - entropy_coef * H_t``

reduced by :func:`lvt_trainer.normalize.normalize_loss`.

Importance weights are formed in log space and in fp32 (whatever the input dtype):
``w_t = exp(clamp(logp_new - logp_old, -B, B))`` with ``B = log_ratio_bound`` (default 20,
so ``w`` lies in ``[2e-9, 4.9e8]`` and every result stays finite; the gradient of the
clamped log difference is zero beyond the bound). ``logp_old`` are the trainer's
log-probs under the policy that produced the batch (the "proximal" policy); ``None`` means
a purely on-policy step (``logp_old = logp_new.detach()``, so ``w = 1``).

Policy term by ``clip_mode`` (``sg`` = stop-gradient/detached):

* ``"proximal"`` (default): ``w~ = min(w, C)`` if ``A_t < 0`` else ``w`` (cap ``C`` =
  ``proximal_cap``, default 5), and ``policy_t = -sg(w~ * tis_t) * A_t *
  exp(logp_new - sg(logp_new))``: the value is ``-w~ tis A``, the gradient is
  ``-w~ tis A grad(logp_new)``. The weight ``w~`` and the TIS factor are **detached**; the
  gradient flows only through ``logp_new``. Tokens with ``A >= 0`` keep their weight; a
  capped negative-advantage token still gets a gradient, bounded by ``C |A|``.
* ``"ppo"``: ``policy_t = -sg(tis_t) * min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)`` with
  ``r = w`` **not** detached (gradient through ``r = exp(logp_new - logp_old)``); the TIS
  factor is detached; clipped tokens get zero gradient, as in PPO.
* ``"none"``: like proximal without the cap (plain token-level importance sampling).

Truncated importance sampling (``tis_cap`` set, combinable with every mode) corrects for
the mismatch between the trainer and the inference engine that sampled the rollout:
``tis_t = min(exp(clamp(logp_old - logp_behavior, -B, B)), tis_cap)``, always detached.

KL term: ``gamma_t = gate(A_t)`` (default ``sigmoid(1.0 * A_t)``, never differentiated) and
``KL_t`` is either the exact ``KL(pi_new || pi_ref)`` over the vocabulary
(``kl_mode="exact"``, computed from logits by :mod:`lvt_trainer.kl`, gradient through the
policy logits) or a sampled-token estimator ``k1``/``k2``/``k3`` of ``logp_new`` against
``ref_logp`` (gradient through ``logp_new``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from .fused import FusedRLVR
from .gate import FixedGate, Gate
from .kl import DEFAULT_LOG_RATIO_BOUND, sampled_kl, token_stats
from .normalize import (
    GradReduction,
    NormMode,
    normalize_loss,
)
from .normalize import global_sequence_count as _count_seqs
from .normalize import global_token_count as _count_tokens

__all__ = [
    "ClipMode",
    "KLMode",
    "RLVRLossConfig",
    "TokenTerms",
    "rlvr_loss",
    "rlvr_loss_from_logits",
    "token_terms",
]

ClipMode = Literal["proximal", "ppo", "none"]
KLMode = Literal["exact", "k1", "k2", "k3", "none"]


@dataclass(frozen=True)
class RLVRLossConfig:
    """Static settings of the RLVR loss (``beta``, the gate and smoothing are per call).

    Attributes:
        clip_mode: ``"proximal"`` (default), ``"ppo"`` or ``"none"``.
        proximal_cap: ``C`` of proximal clipping (applied to ``A < 0`` tokens only).
        ppo_eps_low, ppo_eps_high: PPO ratio clip range ``[1 - low, 1 + high]``.
        tis_cap: truncated-IS cap against behaviour log-probs; ``None`` disables TIS.
        log_ratio_bound: clamp of every log-probability difference before ``exp``.
        kl_mode: ``"exact"``, ``"k1"``, ``"k2"``, ``"k3"`` or ``"none"``.
        kl_chunk_size: sequence chunk for the logits-based computations.
        entropy_coef: optional entropy bonus (0 disables it).
        normalization: see :mod:`lvt_trainer.normalize`.
        grad_reduction: how data-parallel gradients are combined (``"mean"`` for DDP).
    """

    clip_mode: ClipMode = "proximal"
    proximal_cap: float = 5.0
    ppo_eps_low: float = 0.2
    ppo_eps_high: float = 0.2
    tis_cap: float | None = None
    log_ratio_bound: float = DEFAULT_LOG_RATIO_BOUND
    kl_mode: KLMode = "exact"
    kl_chunk_size: int | None = 512
    entropy_coef: float = 0.0
    normalization: NormMode = "token_mean"
    grad_reduction: GradReduction = "mean"


def _masked(x: Tensor, keep: Tensor) -> Tensor:
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


def _expand_advantages(advantages: Tensor, keep: Tensor, cdt: torch.dtype) -> Tensor:
    adv = advantages.detach().to(device=keep.device, dtype=cdt)
    if adv.dim() == 1:
        adv = adv[:, None].expand(keep.shape)
    return _masked(adv, keep)


def _gamma(gate: Gate | None, adv: Tensor) -> Tensor:
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
    lp = _masked(logp_new.to(cdt), keep)
    old = lp.detach() if logp_old is None else _masked(logp_old.detach().to(cdt), keep)
    log_ratio = (lp - old).clamp(-bound, bound)
    w = torch.exp(log_ratio.detach())

    if cfg.tis_cap is not None and logp_behavior is not None:
        beh = _masked(logp_behavior.detach().to(cdt), keep)
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
            kl_tok = _masked(kl.to(cdt), keep)
        elif beta != 0.0:
            raise ValueError("kl_mode='exact' with beta != 0 needs the per-token `kl`")
    elif cfg.kl_mode in ("k1", "k2", "k3"):
        if ref_logp is not None:
            ref = _masked(ref_logp.detach().to(cdt), keep)
            kl_tok = sampled_kl(lp, ref, cfg.kl_mode, log_ratio_bound=bound)
        elif beta != 0.0:
            raise ValueError(f"kl_mode={cfg.kl_mode!r} with beta != 0 needs `ref_logp`")
    elif cfg.kl_mode != "none":
        raise ValueError(f"unknown kl_mode {cfg.kl_mode!r}")

    per_token = policy_tok
    kl_part: Tensor | None = None
    if kl_tok is not None and beta != 0.0:
        kl_part = float(beta) * gamma * kl_tok
        per_token = per_token + kl_part
    ent_tok = None if entropy is None else _masked(entropy.to(cdt), keep)
    if ent_tok is not None and cfg.entropy_coef != 0.0:
        per_token = per_token - float(cfg.entropy_coef) * ent_tok
    return TokenTerms(per_token, policy_tok, w, clipped, tis, tis_clipped, kl_tok, kl_part, ent_tok)


def rlvr_loss(
    logp_new: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    *,
    logp_old: Tensor | None = None,
    logp_behavior: Tensor | None = None,
    kl: Tensor | None = None,
    ref_logp: Tensor | None = None,
    entropy: Tensor | None = None,
    beta: float = 0.0,
    gate: Gate | None = FixedGate(1.0),  # noqa: B008 - immutable in practice
    config: RLVRLossConfig = RLVRLossConfig(),
    global_token_count: Tensor | float | None = None,
    global_seq_count: Tensor | float | None = None,
    group: torch.distributed.ProcessGroup | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """Token-wise RLVR loss from per-token log-probs (see the module docstring).

    Args:
        logp_new: ``(B, T)`` log-probs of the taken tokens under the current policy (with
            gradient; any float dtype).
        advantages: ``(B,)`` per-sample or ``(B, T)`` per-token advantages.
        loss_mask: ``(B, T)`` 0/1 mask, 1 on the tokens to learn.
        logp_old: ``(B, T)`` proximal-policy log-probs (``None``: on-policy).
        logp_behavior: ``(B, T)`` inference-engine log-probs, used when ``tis_cap`` is set.
        kl: ``(B, T)`` exact per-token KL (for ``kl_mode="exact"``), e.g. from
            :func:`lvt_trainer.kl.token_stats`; gradients flow through it.
        ref_logp: ``(B, T)`` reference log-probs of the taken tokens (sampled estimators).
        entropy: ``(B, T)`` policy entropy (metrics, and the loss if ``entropy_coef``).
        beta: KL coefficient for this step (from a schedule).
        gate: maps advantages to ``gamma``; ``None`` means ``gamma = 1``.
        config: static settings.
        global_token_count / global_seq_count: counts over the whole optimizer step on all
            ranks (see :mod:`lvt_trainer.normalize`); ``None`` computes them from this batch
            (all-reduced when ``torch.distributed`` is initialised).
        group: process group for those all-reduces.

    Returns:
        ``(loss, metrics)``. Metrics are Python floats computed from detached tensors, as
        means over this batch's unmasked tokens (rank-local): ``loss``, ``policy_loss``,
        ``kl_loss``, ``weight_mean``, ``weight_max``, ``clip_frac``, ``clip_frac_pos_adv``,
        ``clip_frac_neg_adv``, ``tis_mean``, ``tis_clip_frac``, ``kl_mean``,
        ``gated_kl_mean``, ``gate_mean``, ``entropy_mean`` (if given), ``beta``,
        ``num_tokens``.
    """
    if logp_new.dim() != 2 or loss_mask.shape != logp_new.shape:
        raise ValueError("logp_new and loss_mask must both be (B, T)")
    cfg = config
    keep = loss_mask != 0
    cdt = torch.promote_types(logp_new.dtype, torch.float32)
    dev = logp_new.device
    adv = _expand_advantages(advantages, keep, cdt)
    gamma = _gamma(gate, adv)
    t = token_terms(
        logp_new,
        adv,
        keep,
        gamma,
        logp_old=logp_old,
        logp_behavior=logp_behavior,
        kl=kl,
        ref_logp=ref_logp,
        entropy=entropy,
        beta=beta,
        config=cfg,
    )
    w, tis, tis_clipped, clipped = t.weight, t.tis, t.tis_clipped, t.clipped
    policy_tok, kl_tok, kl_part, ent_tok = t.policy, t.kl, t.kl_part, t.entropy
    per_token = t.per_token

    global_token_count, global_seq_count = _resolve_counts(
        loss_mask, cfg, global_token_count, global_seq_count, group
    )
    norm_kw = {
        "global_token_count": global_token_count,
        "global_seq_count": global_seq_count,
        "grad_reduction": cfg.grad_reduction,
        "group": group,
    }
    loss = normalize_loss(per_token, loss_mask, cfg.normalization, **norm_kw)  # type: ignore[arg-type]

    with torch.no_grad():
        n = keep.sum()
        pos = keep & (adv > 0)
        neg = keep & (adv < 0)

        def mmean(x: Tensor, sel: Tensor = keep) -> Tensor:
            return (x.to(cdt) * sel).sum() / sel.sum().to(cdt).clamp_min(1.0)

        zero = torch.zeros((), dtype=cdt, device=dev)
        vals: dict[str, Tensor] = {
            "loss": loss.detach().to(cdt),
            "policy_loss": normalize_loss(
                policy_tok.detach(), loss_mask, cfg.normalization, **norm_kw
            ).to(cdt),  # type: ignore[arg-type]
            "kl_loss": zero
            if kl_part is None
            else normalize_loss(
                kl_part.detach(),
                loss_mask,
                cfg.normalization,
                **norm_kw,  # type: ignore[arg-type]
            ).to(cdt),
            "weight_mean": mmean(w),
            "weight_max": torch.where(keep, w, zero).max() if w.numel() else zero,
            "clip_frac": mmean(clipped),
            "clip_frac_pos_adv": mmean(clipped, pos),
            "clip_frac_neg_adv": mmean(clipped, neg),
            "tis_mean": mmean(tis),
            "tis_clip_frac": mmean(tis_clipped),
            "gate_mean": mmean(gamma),
            "kl_mean": zero if kl_tok is None else mmean(kl_tok.detach()),
            "gated_kl_mean": zero if kl_tok is None else mmean(gamma * kl_tok.detach()),
            "beta": torch.tensor(float(beta), dtype=cdt, device=dev),
            "num_tokens": n.to(cdt),
        }
        if ent_tok is not None:
            vals["entropy_mean"] = mmean(ent_tok.detach())
        keys = list(vals)
        floats = torch.stack([vals[k].reshape(()) for k in keys]).double().cpu().tolist()
    return loss, dict(zip(keys, floats, strict=True))


def rlvr_loss_from_logits(
    logits: Tensor,
    targets: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    *,
    ref_logits: Tensor | None = None,
    weight: Tensor | None = None,
    ref_weight: Tensor | None = None,
    ref_smoothing: float = 0.0,
    compute_entropy: bool = True,
    logp_old: Tensor | None = None,
    logp_behavior: Tensor | None = None,
    beta: float = 0.0,
    gate: Gate | None = FixedGate(1.0),  # noqa: B008
    config: RLVRLossConfig = RLVRLossConfig(),
    global_token_count: Tensor | float | None = None,
    global_seq_count: Tensor | float | None = None,
    group: torch.distributed.ProcessGroup | None = None,
    fused: bool = True,
) -> tuple[Tensor, dict[str, float]]:
    """RLVR loss straight from policy/reference logits (or hidden states), chunked.

    ``logits[b, t]`` (``(B, T, V)``; or hidden states ``(B, T, H)`` with the LM-head
    ``weight``) is the distribution that scored ``targets[b, t]``: shift before calling.
    ``ref_logits`` (or reference hidden states with ``ref_weight``) is needed for every
    ``kl_mode`` except ``"none"``. One chunked pass (:func:`lvt_trainer.kl.token_stats`)
    yields the target log-probs, the entropy and, for ``kl_mode="exact"``, the exact KL
    (with ``ref_smoothing``), so peak memory is bounded by ``config.kl_chunk_size``.

    When a gradient is wanted and ``fused`` is true (the default), the loss is fused with
    that pass (:mod:`lvt_trainer.fused`): the input gradients are formed chunk by chunk in
    forward, so backward does not recompute the logits; one backward per call. With
    ``fused=False`` the statistics come from :func:`lvt_trainer.kl.token_stats` (recompute
    in backward) and any autograd use is allowed. Values and gradients agree.
    Other arguments as in :func:`rlvr_loss`.
    """
    wants_grad = torch.is_grad_enabled() and (
        logits.requires_grad or (weight is not None and weight.requires_grad)
    )
    if wants_grad and fused:
        return _fused_loss_from_logits(
            logits,
            targets,
            advantages,
            loss_mask,
            ref_logits=ref_logits,
            weight=weight,
            ref_weight=ref_weight,
            ref_smoothing=ref_smoothing,
            compute_entropy=compute_entropy,
            logp_old=logp_old,
            logp_behavior=logp_behavior,
            beta=beta,
            gate=gate,
            config=config,
            global_token_count=global_token_count,
            global_seq_count=global_seq_count,
            group=group,
        )
    exact = config.kl_mode == "exact" and ref_logits is not None
    lp, ent, kl = token_stats(
        logits,
        targets,
        ref_logits if exact else None,
        weight=weight,
        ref_weight=ref_weight if exact else None,
        chunk_size=config.kl_chunk_size,
        ref_smoothing=ref_smoothing,
        compute_entropy=compute_entropy,
    )
    assert lp is not None
    ref_lp: Tensor | None = None
    if config.kl_mode in ("k1", "k2", "k3") and ref_logits is not None:
        with torch.no_grad():
            ref_lp, _, _ = token_stats(
                ref_logits.detach(),
                targets,
                None,
                weight=None if ref_weight is None else ref_weight.detach(),
                chunk_size=config.kl_chunk_size,
                compute_entropy=False,
            )
    return rlvr_loss(
        lp,
        advantages,
        loss_mask,
        logp_old=logp_old,
        logp_behavior=logp_behavior,
        kl=kl,
        ref_logp=ref_lp,
        entropy=ent,
        beta=beta,
        gate=gate,
        config=config,
        global_token_count=global_token_count,
        global_seq_count=global_seq_count,
        group=group,
    )


def _resolve_counts(
    loss_mask: Tensor,
    config: RLVRLossConfig,
    global_token_count: Tensor | float | None,
    global_seq_count: Tensor | float | None,
    group: torch.distributed.ProcessGroup | None,
) -> tuple[Tensor | float | None, Tensor | float | None]:
    """The count the normalisation needs, from this batch (all-reduced) when not given."""
    if config.normalization == "token_mean":
        if global_token_count is None:
            global_token_count = _count_tokens(loss_mask, group=group)
    elif global_seq_count is None:
        global_seq_count = _count_seqs(loss_mask, group=group)
    return global_token_count, global_seq_count


def _loss_coefficients(
    loss_mask: Tensor,
    cdt: torch.dtype,
    config: RLVRLossConfig,
    global_token_count: Tensor | float | None,
    global_seq_count: Tensor | float | None,
    group: torch.distributed.ProcessGroup | None,
) -> tuple[Tensor, Tensor | float | None, Tensor | float | None]:
    """``d loss / d per_token`` (the reduction is linear) and the resolved global counts."""
    global_token_count, global_seq_count = _resolve_counts(
        loss_mask, config, global_token_count, global_seq_count, group
    )
    probe = torch.zeros(loss_mask.shape, dtype=cdt, device=loss_mask.device, requires_grad=True)
    with torch.enable_grad():
        reduced = normalize_loss(
            probe,
            loss_mask,
            config.normalization,
            global_token_count=global_token_count,
            global_seq_count=global_seq_count,
            grad_reduction=config.grad_reduction,
            group=group,
        )
        (coef,) = torch.autograd.grad(reduced, probe)
    return coef, global_token_count, global_seq_count


def _fused_loss_from_logits(
    logits: Tensor,
    targets: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    *,
    ref_logits: Tensor | None,
    weight: Tensor | None,
    ref_weight: Tensor | None,
    ref_smoothing: float,
    compute_entropy: bool,
    logp_old: Tensor | None,
    logp_behavior: Tensor | None,
    beta: float,
    gate: Gate | None,
    config: RLVRLossConfig,
    global_token_count: Tensor | float | None,
    global_seq_count: Tensor | float | None,
    group: torch.distributed.ProcessGroup | None,
) -> tuple[Tensor, dict[str, float]]:
    if logits.dim() != 3 or targets.shape != logits.shape[:2] or loss_mask.shape != targets.shape:
        raise ValueError(
            "logits must be (B, T, V or H) with targets and loss_mask (B, T); got "
            f"{tuple(logits.shape)}, {tuple(targets.shape)}, {tuple(loss_mask.shape)}"
        )
    cfg = config
    exact = cfg.kl_mode == "exact" and ref_logits is not None
    sampled = cfg.kl_mode in ("k1", "k2", "k3") and ref_logits is not None
    keep = loss_mask != 0
    cdt = torch.promote_types(logits.dtype if weight is None else weight.dtype, torch.float32)
    adv = _expand_advantages(advantages, keep, cdt)
    gamma = _gamma(gate, adv)
    coef, n_tok, n_seq = _loss_coefficients(
        loss_mask, cdt, cfg, global_token_count, global_seq_count, group
    )

    def tail(
        b: int,
        s: int,
        e: int,
        lp: Tensor,
        ent: Tensor | None,
        kl: Tensor | None,
        ref_lp: Tensor | None,
    ) -> Tensor:
        k = keep[b, s:e]
        terms = token_terms(
            lp,
            adv[b, s:e],
            k,
            gamma[b, s:e],
            logp_old=None if logp_old is None else logp_old[b, s:e],
            logp_behavior=None if logp_behavior is None else logp_behavior[b, s:e],
            kl=kl,
            ref_logp=ref_lp,
            entropy=ent,
            beta=beta,
            config=cfg,
        )
        return _masked(terms.per_token * coef[b, s:e], k).sum()

    loss, lp, ent, kl, ref_lp = FusedRLVR.apply(
        logits,
        weight,
        None if ref_logits is None else ref_logits.detach(),
        None if ref_weight is None else ref_weight.detach(),
        targets,
        tail,
        cfg.kl_chunk_size,
        float(ref_smoothing),
        compute_entropy,
        exact,
        sampled,
    )
    with torch.no_grad():
        _, metrics = rlvr_loss(
            lp,
            advantages,
            loss_mask,
            logp_old=logp_old,
            logp_behavior=logp_behavior,
            kl=kl if exact else None,
            ref_logp=ref_lp if sampled else None,
            entropy=ent if compute_entropy else None,
            beta=beta,
            gate=gate,
            config=cfg,
            global_token_count=n_tok,
            global_seq_count=n_seq,
            group=group,
        )
    metrics["loss"] = float(loss.detach())
    return loss, metrics
