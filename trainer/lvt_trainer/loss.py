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

Inputs are validated: shapes and dtypes always (the error names the argument, the expected
and the actual shape or dtype; reference logits must match the policy's positions and
vocabulary, targets must be integer ids), ``beta >= 0`` and ``0 <= ref_smoothing < 1``; and,
with ``config.validate_inputs`` (the default; one fused check and one device sync per
tensor), the values: the loss mask holds only 0/1 (or is bool), advantages are finite and
``|A| <= config.max_abs_advantage`` (default 1e6, so the loss stays finite), target ids lie
in the vocabulary, and every float input is finite wherever the loss mask is 1 (masked
positions may hold NaN/inf/padding and get exactly zero gradient). The config validates its
own ranges (:class:`lvt_trainer.config.RLVRLossConfig`). Errors are the typed ones of
:mod:`lvt_trainer.errors` (:class:`TrainerShapeError`, :class:`TrainerDtypeError`,
:class:`TrainerValueError`, :class:`NonFiniteInputError`, :class:`TrainerConfigError`).
verl/TRL spellings are accepted: ``response_mask=`` for
``loss_mask``, ``old_log_probs=`` for ``logp_old``, ``loss_agg_mode`` names in the config.
Metrics are global over data-parallel ranks (:mod:`lvt_trainer.metrics`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .config import ClipMode, KLMode, RLVRLossConfig
from .errors import TrainerConfigError, check_finite
from .fused import FusedRLVR
from .gate import FixedGate, Gate
from .inputs import alias as _alias
from .inputs import validate_logits_inputs, validate_terms
from .kl import token_stats
from .metrics import loss_metrics
from .normalize import global_sequence_count as _count_seqs
from .normalize import global_token_count as _count_tokens
from .normalize import normalize_loss
from .terms import TokenTerms, token_terms
from .terms import expand_advantages as _expand_advantages
from .terms import gate_values as _gamma
from .terms import masked as _masked

__all__ = [
    "ClipMode",
    "KLMode",
    "RLVRLossConfig",
    "TokenTerms",
    "rlvr_loss",
    "rlvr_loss_from_logits",
    "token_terms",
]


def rlvr_loss(
    logp_new: Tensor,
    advantages: Tensor | None = None,
    loss_mask: Tensor | None = None,
    *,
    logp_old: Tensor | None = None,
    logp_behavior: Tensor | None = None,
    kl: Tensor | None = None,
    ref_logp: Tensor | None = None,
    entropy: Tensor | None = None,
    beta: float = 0.0,
    gate: Gate | None = FixedGate(1.0),  # noqa: B008 - immutable in practice
    config: RLVRLossConfig = RLVRLossConfig(),  # noqa: B008 - frozen dataclass
    global_token_count: Tensor | float | None = None,
    global_seq_count: Tensor | float | None = None,
    group: torch.distributed.ProcessGroup | None = None,
    response_mask: Tensor | None = None,
    old_log_probs: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """Token-wise RLVR loss from per-token log-probs (see the module docstring).

    Args:
        logp_new: ``(B, T)`` log-probs of the taken tokens under the current policy (with
            gradient; any float dtype).
        advantages: ``(B,)`` per-sample or ``(B, T)`` per-token advantages.
        loss_mask: ``(B, T)`` 0/1 mask, 1 on the tokens to learn (alias ``response_mask``).
        logp_old: ``(B, T)`` proximal-policy log-probs (``None``: on-policy; alias
            ``old_log_probs``).
        logp_behavior: ``(B, T)`` inference-engine log-probs, used when ``tis_cap`` is set.
        kl: ``(B, T)`` exact per-token KL (for ``kl_mode="exact"``), e.g. from
            :func:`lvt_trainer.kl.token_stats`; gradients flow through it.
        ref_logp: ``(B, T)`` reference log-probs of the taken tokens (sampled estimators).
        entropy: ``(B, T)`` policy entropy (metrics, and the loss if ``entropy_coef``).
        beta: KL coefficient for this step (from a schedule); ``>= 0``.
        gate: maps advantages to ``gamma``; ``None`` means ``gamma = 1``.
        config: static settings.
        global_token_count / global_seq_count: counts over the whole optimizer step on all
            ranks (see :mod:`lvt_trainer.normalize`); ``None`` computes them from this batch
            (all-reduced when ``torch.distributed`` is initialised).
        group: process group for those all-reduces (and the metrics').

    Returns:
        ``(loss, metrics)``. Metrics are Python floats, means over the unmasked tokens of
        the whole step (all-reduced over data-parallel ranks, see
        :mod:`lvt_trainer.metrics`): ``loss``, ``policy_loss``, ``kl_loss``,
        ``weight_mean``, ``weight_max``, ``clip_frac``, ``clip_frac_pos_adv``,
        ``clip_frac_neg_adv``, ``tis_mean``, ``tis_clip_frac``, ``kl_mean``,
        ``gated_kl_mean``, ``gate_mean``, ``ppo_kl`` (``mean(logp_old - logp_new)``),
        ``advantage_mean``, ``entropy_mean`` (if given), ``beta``, ``num_tokens``, and the
        verl names ``actor/pg_loss``, ``actor/pg_clipfrac``, ``actor/ppo_kl``,
        ``actor/entropy``, ``actor/kl_loss``, ``actor/kl_coef``.

    Raises:
        TrainerShapeError, TrainerDtypeError, TrainerValueError, NonFiniteInputError,
        TrainerConfigError: invalid inputs (see the module docstring).
    """
    loss_mask = _alias("loss_mask", loss_mask, "response_mask", response_mask)
    logp_old = _alias("logp_old", logp_old, "old_log_probs", old_log_probs)
    if advantages is None or loss_mask is None:
        raise TrainerConfigError("rlvr_loss needs advantages and loss_mask (or response_mask)")
    return _rlvr_loss(
        logp_new, advantages, loss_mask, logp_old=logp_old, logp_behavior=logp_behavior,
        kl=kl, ref_logp=ref_logp, entropy=entropy, beta=beta, gate=gate, config=config,
        global_token_count=global_token_count, global_seq_count=global_seq_count,
        group=group, validate=True, loss_value=None,
    )


def _rlvr_loss(
    logp_new: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    *,
    logp_old: Tensor | None,
    logp_behavior: Tensor | None,
    kl: Tensor | None,
    ref_logp: Tensor | None,
    entropy: Tensor | None,
    beta: float,
    gate: Gate | None,
    config: RLVRLossConfig,
    global_token_count: Tensor | float | None,
    global_seq_count: Tensor | float | None,
    group: torch.distributed.ProcessGroup | None,
    validate: bool,
    loss_value: Tensor | None,
    inputs_checked: bool = False,
) -> tuple[Tensor, dict[str, float]]:
    cfg = config
    keep = loss_mask != 0
    if validate:
        tensors = {"logp_old": logp_old, "logp_behavior": logp_behavior, "kl": kl,
                   "ref_logp": ref_logp, "entropy": entropy}
        validate_terms(logp_new, advantages, loss_mask, keep, tensors, beta, cfg,
                       inputs_checked=inputs_checked)
    cdt = torch.promote_types(logp_new.dtype, torch.float32)
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
    global_token_count, global_seq_count = _resolve_counts(
        loss_mask, cfg, global_token_count, global_seq_count, group
    )
    norm_kw = {
        "global_token_count": global_token_count,
        "global_seq_count": global_seq_count,
        "grad_reduction": cfg.grad_reduction,
        "group": group,
    }
    loss = normalize_loss(t.per_token, loss_mask, cfg.normalization, **norm_kw)  # type: ignore[arg-type]
    with torch.no_grad():
        metrics = loss_metrics(
            t, adv, gamma, keep, loss_mask, logp_new, logp_old, beta, cfg, norm_kw,
            loss if loss_value is None else loss_value,
        )
    return loss, metrics


def rlvr_loss_from_logits(
    logits: Tensor,
    targets: Tensor,
    advantages: Tensor | None = None,
    loss_mask: Tensor | None = None,
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
    config: RLVRLossConfig = RLVRLossConfig(),  # noqa: B008
    global_token_count: Tensor | float | None = None,
    global_seq_count: Tensor | float | None = None,
    group: torch.distributed.ProcessGroup | None = None,
    fused: bool = True,
    response_mask: Tensor | None = None,
    old_log_probs: Tensor | None = None,
    stats_out: dict[str, Tensor | None] | None = None,
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

    Targets at masked positions are never read (padding such as ``-100`` is fine); logits
    there may be NaN (exactly zero gradient). Under ``torch.autocast`` the statistics are
    computed in fp32 all the same. ``stats_out``, if given, receives the detached per-token
    ``logp``, ``entropy``, ``kl`` and ``ref_logp`` (``None`` where not computed), e.g. for
    the alpha controller. Other arguments as in :func:`rlvr_loss`.
    """
    loss_mask = _alias("loss_mask", loss_mask, "response_mask", response_mask)
    logp_old = _alias("logp_old", logp_old, "old_log_probs", old_log_probs)
    if advantages is None or loss_mask is None:
        raise TrainerConfigError(
            "rlvr_loss_from_logits needs advantages and loss_mask (or response_mask)"
        )
    keep = loss_mask != 0
    validate_logits_inputs(
        logits, targets, advantages, loss_mask, weight, keep,
        {"logp_old": logp_old, "logp_behavior": logp_behavior}, beta, config,
        ref_logits=ref_logits, ref_weight=ref_weight, ref_smoothing=ref_smoothing,
    )
    targets = torch.where(keep, targets.long(), torch.zeros((), dtype=torch.long,
                                                            device=targets.device))
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
            stats_out=stats_out,
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
    if stats_out is not None:
        stats_out.update({
            "logp": lp.detach(),
            "entropy": None if ent is None else ent.detach(),
            "kl": None if kl is None else kl.detach(),
            "ref_logp": ref_lp,
        })
    return _rlvr_loss(
        lp, advantages, loss_mask, logp_old=logp_old, logp_behavior=logp_behavior, kl=kl,
        ref_logp=ref_lp, entropy=ent, beta=beta, gate=gate, config=config,
        global_token_count=global_token_count, global_seq_count=global_seq_count,
        group=group, validate=True, loss_value=None, inputs_checked=True,
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
    stats_out: dict[str, Tensor | None] | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """The fused path; ``stats_out`` (if given) receives the detached per-token ``logp``,
    ``entropy``, ``kl`` and ``ref_logp`` (for callers such as the train step)."""
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
    if cfg.validate_inputs:
        check_finite("log-prob of the targets (from the policy logits)", lp, keep)
        if exact and beta != 0.0:
            check_finite("exact KL (the reference gives zero mass where the policy has some; "
                         "ref_smoothing > 0 keeps it finite)", kl, keep)
        if sampled and beta != 0.0:
            check_finite("reference log-prob of the targets", ref_lp, keep)
        if compute_entropy:
            check_finite("entropy (from the policy logits)", ent, keep)
    if stats_out is not None:
        stats_out.update({
            "logp": lp,
            "entropy": ent if compute_entropy else None,
            "kl": kl if exact else None,
            "ref_logp": ref_lp if sampled else None,
        })
    with torch.no_grad():
        _, metrics = _rlvr_loss(
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
            validate=False,
            loss_value=loss.detach(),
        )
    return loss, metrics
