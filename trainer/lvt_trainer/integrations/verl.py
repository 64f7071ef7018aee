"""lvt's token-wise policy loss in verl's policy-loss registry.

Importing this module registers, through verl's own ``register_policy_loss``:

* ``"lvt_token_rlvr"``: proximal clipping (:class:`RLVRLossConfig` defaults: the importance
  weight of a negative-advantage token capped at ``proximal_cap = 5``, positive-advantage
  tokens keep theirs, weights detached);
* ``"lvt_token_rlvr_ppo"``: lvt's PPO clipping, with the clip range read from verl's
  ``actor.clip_ratio_low`` / ``clip_ratio_high`` (``clip_ratio`` when unset).

``import verl`` loads this module itself (through :mod:`lvt_trainer.integrations.verl_plugin`,
the ``verl.plugins`` entry point of the ``lvt`` distribution, which reports a failure to load
instead of leaving verl's "Unsupported loss mode"), so every verl worker has the names;
select one with ``actor_rollout_ref.actor.policy_loss.loss_mode=lvt_token_rlvr``. For other
settings call :func:`register` (e.g. from a module named in ``VERL_USE_EXTERNAL_MODULES``).

verl calls ``fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
rollout_is_weights)`` with ``(B, T)`` tensors in the response layout and reads
``config.global_batch_info`` (``dp_size``, ``batch_num_tokens``, ``global_batch_size``,
``loss_scale_factor``). The value is :func:`lvt_trainer.rlvr_loss`'s: the per-token terms
(:func:`lvt_trainer.token_terms`) reduced by :func:`lvt_trainer.normalize_loss` with verl's
global counts, times ``dp_size`` as verl's ``agg_loss`` does, so micro-batches and ranks add
up to the mini-batch loss. ``loss_agg_mode``: ``"token-mean"``, ``"seq-mean-token-mean"``,
``"seq-mean-token-sum"`` and ``"seq-mean-token-sum-norm"`` (the last divided by
``loss_scale_factor``, or the response length when unset, as in verl); ``"token-sum"`` is
refused with a :class:`~lvt_trainer.errors.TrainerConfigError`. Unlike
:func:`~lvt_trainer.rlvr_loss` nothing here is a collective (verl may call the loss on a
subset of ranks, e.g. the last pipeline stage); the returned metrics are this micro-batch's,
and verl averages them.

verl's rollout importance weights (``rollout_is_weights``, detached and ``>= 0``) multiply
the per-token advantage: every policy term of lvt is ``sg(c) * A * g`` with ``c >= 0`` and
the clip decisions depend only on the sign of ``A``, so this equals weighting each token's
policy term. The KL and entropy terms stay verl's (``use_kl_loss``, ``entropy_coeff``): the
policy-loss interface carries no reference log-probs, so lvt's advantage-gated KL is not
available through it, and a config with ``entropy_coef`` or ``tis_cap`` (lvt's TIS needs
behaviour log-probs) is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor
from verl.trainer.ppo.core_algos import register_policy_loss

from ..config import RLVRLossConfig, canonical_norm_mode
from ..errors import TrainerConfigError, TrainerShapeError
from ..inputs import validate_terms
from ..normalize import normalize_loss
from ..terms import expand_advantages, token_terms

__all__ = ["DEFAULT_NAME", "PPO_NAME", "SUPPORTED_AGG_MODES", "make_policy_loss", "register"]

DEFAULT_NAME = "lvt_token_rlvr"
PPO_NAME = "lvt_token_rlvr_ppo"

#: verl ``loss_agg_mode`` -> lvt normalisation.
SUPPORTED_AGG_MODES: dict[str, str] = {
    "token-mean": "token_mean",
    "seq-mean-token-mean": "seq_mean_token_mean",
    "seq-mean-token-sum": "seq_mean_token_sum",
    "seq-mean-token-sum-norm": "seq_mean_token_sum",
}

PolicyLoss = Callable[..., tuple[Tensor, dict[str, Any]]]


def make_policy_loss(
    config: RLVRLossConfig | None = None, *, eps_from_verl: bool = False
) -> PolicyLoss:
    """A verl policy-loss function computing lvt's policy term with ``config``.

    Args:
        config: lvt's settings (``clip_mode``, ``proximal_cap``, ``ppo_eps_*``,
            ``log_ratio_bound``, ``validate_inputs``); its ``normalization`` is replaced by
            verl's ``loss_agg_mode`` on every call.
        eps_from_verl: take the PPO clip range from verl's actor config
            (``clip_ratio_low`` / ``clip_ratio_high``, else ``clip_ratio``).

    Raises:
        TrainerConfigError: ``entropy_coef`` or ``tis_cap`` set (see the module doc).
    """
    cfg = RLVRLossConfig() if config is None else config
    if cfg.entropy_coef != 0.0:
        raise TrainerConfigError(
            "verl adds the entropy bonus itself (actor.entropy_coeff); use entropy_coef=0"
        )
    if cfg.tis_cap is not None:
        raise TrainerConfigError(
            "verl's policy loss gets no behaviour log-probs; use verl's rollout correction "
            "(rollout_is_weights) instead of tis_cap"
        )

    def lvt_policy_loss(
        old_log_prob: Tensor,
        log_prob: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        """lvt's token-wise policy loss in verl's policy-loss signature."""
        return _policy_loss(
            cfg, eps_from_verl, old_log_prob, log_prob, advantages, response_mask,
            loss_agg_mode, config, rollout_is_weights,
        )

    return lvt_policy_loss


def register(
    name: str = DEFAULT_NAME, config: RLVRLossConfig | None = None, *, eps_from_verl: bool = False
) -> PolicyLoss:
    """Register :func:`make_policy_loss` ``(config)`` in verl's registry as ``name``."""
    return register_policy_loss(name)(make_policy_loss(config, eps_from_verl=eps_from_verl))


def _policy_loss(
    cfg: RLVRLossConfig,
    eps_from_verl: bool,
    old_log_prob: Tensor,
    log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    loss_agg_mode: str,
    verl_config: Any,
    rollout_is_weights: Tensor | None,
) -> tuple[Tensor, dict[str, Any]]:
    norm = SUPPORTED_AGG_MODES.get(loss_agg_mode)
    if norm is None:
        raise TrainerConfigError(
            f"loss_agg_mode {loss_agg_mode!r} is not supported by lvt's loss; supported: "
            f"{sorted(SUPPORTED_AGG_MODES)}"
        )
    info: Mapping[str, Any] = dict(_get(verl_config, "global_batch_info", None) or {})
    over: dict[str, Any] = {"normalization": canonical_norm_mode(norm), "grad_reduction": "sum"}
    if eps_from_verl:
        ratio = _get(verl_config, "clip_ratio", 0.2)
        low = _get(verl_config, "clip_ratio_low", None)
        high = _get(verl_config, "clip_ratio_high", None)
        over["ppo_eps_low"] = float(ratio if low is None else low)
        over["ppo_eps_high"] = float(ratio if high is None else high)
    cfg = replace(cfg, **over)

    keep = response_mask != 0
    adv = advantages
    if rollout_is_weights is not None:
        if rollout_is_weights.shape != log_prob.shape:
            raise TrainerShapeError(
                f"rollout_is_weights: expected (B, T) = {tuple(log_prob.shape)}, got "
                f"{tuple(rollout_is_weights.shape)}"
            )
        adv = adv * rollout_is_weights.detach()
    validate_terms(log_prob, adv, response_mask, keep, {"logp_old": old_log_prob}, 0.0, cfg)
    cdt = torch.promote_types(log_prob.dtype, torch.float32)
    a = expand_advantages(adv, keep, cdt)
    t = token_terms(
        log_prob, a, keep, torch.ones_like(a), logp_old=old_log_prob, logp_behavior=None,
        kl=None, ref_logp=None, entropy=None, beta=0.0, config=cfg,
    )
    dp = int(info.get("dp_size") or 1)
    tokens = info.get("batch_num_tokens")
    seqs = info.get("global_batch_size")
    if dp > 1 and (tokens if norm == "token_mean" else seqs) is None:
        raise TrainerConfigError(
            f"dp_size={dp} needs the global count in config.global_batch_info "
            "(batch_num_tokens / global_batch_size)"
        )
    # explicit counts: no all-reduce inside verl's loss
    if tokens is None:
        tokens = keep.sum().to(torch.float64)
    if seqs is None:
        seqs = (keep.sum(-1) > 0).sum().to(torch.float64)
    loss = normalize_loss(
        t.per_token, response_mask, cfg.normalization, global_token_count=tokens,
        global_seq_count=seqs, grad_reduction="sum",
    ) * dp
    if loss_agg_mode == "seq-mean-token-sum-norm":
        factor = info.get("loss_scale_factor")
        loss = loss / float(response_mask.shape[-1] if factor is None else factor)
    return loss, _metrics(t, keep, a, log_prob, old_log_prob)


def _metrics(t: Any, keep: Tensor, adv: Tensor, lp: Tensor, old: Tensor) -> dict[str, float]:
    """Means over this micro-batch's response tokens (verl averages micro-batches)."""
    with torch.no_grad():
        n = keep.sum().clamp_min(1).to(adv.dtype)
        zero = torch.zeros((), dtype=adv.dtype, device=adv.device)

        def mean(x: Tensor, sel: Tensor = keep) -> float:
            d = sel.sum().clamp_min(1).to(adv.dtype) if sel is not keep else n
            return float(torch.where(sel, x.detach().to(adv.dtype), zero).sum() / d)

        neg = keep & (adv < 0)
        diff = old.detach().to(adv.dtype) - lp.detach().to(adv.dtype)
        return {
            "actor/pg_clipfrac": mean(t.clipped),
            "actor/ppo_kl": mean(diff),
            "actor/lvt_clipfrac_neg_adv": mean(t.clipped, neg),
            "actor/lvt_weight_mean": mean(t.weight),
            "actor/lvt_weight_max": float(torch.where(keep, t.weight, zero).max())
            if t.weight.numel() else 0.0,
        }


def _get(cfg: Any, key: str, default: Any) -> Any:
    if cfg is None:
        return default
    if isinstance(cfg, Mapping):
        return cfg.get(key, default)
    return getattr(cfg, key, default)


register(DEFAULT_NAME)
register(PPO_NAME, RLVRLossConfig(clip_mode="ppo"), eps_from_verl=True)
