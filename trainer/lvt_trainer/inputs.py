"""Input validation of the loss entry points (shapes, dtypes, values, ranges, aliases).

Shape and dtype errors name the argument, the expected and the actual layout; the loss mask
must be bool or hold only 0/1; advantages must be finite and within
``config.max_abs_advantage``; finiteness is checked only where the loss mask is 1 (masked
positions may hold anything). Value checks are one fused reduction and one device sync per
tensor, skipped with ``config.validate_inputs=False``. See :mod:`lvt_trainer.errors` for the
error types and :mod:`lvt_trainer.checks` for the checks.
"""

from __future__ import annotations

from torch import Tensor

from .checks import (
    check_bounded,
    check_float,
    check_logits_layout,
    check_mask,
    check_numeric,
    check_smoothing,
)
from .config import RLVRLossConfig
from .errors import TrainerConfigError, TrainerShapeError, check_finite, check_range, check_shape

__all__ = ["alias", "validate_logits_inputs", "validate_terms"]


def alias(
    name: str, value: Tensor | None, alias: str, alias_value: Tensor | None
) -> Tensor | None:
    """``value`` or its alias (verl/TRL spelling); both at once is an error."""
    if alias_value is None:
        return value
    if value is not None:
        raise TrainerConfigError(f"give {name}= or its alias {alias}=, not both")
    return alias_value


def validate_terms(
    logp_new: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    keep: Tensor,
    tensors: dict[str, Tensor | None],
    beta: float,
    cfg: RLVRLossConfig,
    inputs_checked: bool = False,
) -> None:
    """Shapes, dtypes, the mask's 0/1 values, bounded advantages, finiteness at unmasked
    positions and ``beta`` (see the module docstring). ``inputs_checked``: the mask, the
    advantages and the old/behaviour log-probs were already checked by the caller (the
    logits path), so only the computed statistics are."""
    check_float("logp_new", logp_new)
    check_numeric("advantages", advantages)
    check_mask("loss_mask", loss_mask, validate=False)
    for name, x in tensors.items():
        check_float(name, x)
    check_shape("logp_new", logp_new, [tuple(loss_mask.shape)], "(B, T) like loss_mask")
    if logp_new.dim() != 2:
        raise TrainerShapeError(
            f"logp_new and loss_mask must be (B, T), got {tuple(logp_new.shape)}"
        )
    bsz, seq = logp_new.shape
    check_shape(
        "advantages", advantages, [(bsz,), (bsz, seq)], "(B,) per sequence or (B, T) per token"
    )
    for name, x in tensors.items():
        check_shape(name, x, [(bsz, seq)], "(B, T) like logp_new")
    check_range("beta", beta, low=0.0)
    if not cfg.validate_inputs:
        return
    if not inputs_checked:
        _check_common_values(advantages, loss_mask, keep, tensors, cfg)
    check_finite("logp_new", logp_new, keep)
    if beta != 0.0 and cfg.kl_mode == "exact":
        check_finite("kl", tensors.get("kl"), keep)
    if beta != 0.0 and cfg.kl_mode in ("k1", "k2", "k3"):
        check_finite("ref_logp", tensors.get("ref_logp"), keep)
    check_finite("entropy", tensors.get("entropy"), keep)


def validate_logits_inputs(
    logits: Tensor,
    targets: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    weight: Tensor | None,
    keep: Tensor,
    tensors: dict[str, Tensor | None],
    beta: float,
    cfg: RLVRLossConfig,
    *,
    ref_logits: Tensor | None = None,
    ref_weight: Tensor | None = None,
    ref_smoothing: float = 0.0,
) -> None:
    """Shapes and dtypes of the logits-path inputs (reference logits included), the mask's
    0/1 values, target ids in range, bounded advantages and finite inputs where unmasked
    (the statistics themselves are checked after the chunked pass)."""
    vocab = check_logits_layout(logits, targets, ref_logits, weight, ref_weight)
    check_mask("loss_mask", loss_mask, validate=False)
    check_shape("loss_mask", loss_mask, [tuple(targets.shape)], "(B, T) like targets")
    bsz, seq = targets.shape
    check_numeric("advantages", advantages)
    check_shape(
        "advantages", advantages, [(bsz,), (bsz, seq)], "(B,) per sequence or (B, T) per token"
    )
    for name, x in tensors.items():
        check_float(name, x)
        check_shape(name, x, [(bsz, seq)], "(B, T) like targets")
    check_range("beta", beta, low=0.0)
    check_smoothing("ref_smoothing", ref_smoothing)
    if not cfg.validate_inputs:
        return
    _check_common_values(advantages, loss_mask, keep, tensors, cfg)
    bad = keep & ((targets < 0) | (targets >= vocab))
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0].tolist())
        raise TrainerShapeError(
            f"targets: id {int(targets[idx])} at unmasked position {idx} is outside [0, {vocab})"
        )


def _check_common_values(
    advantages: Tensor,
    loss_mask: Tensor,
    keep: Tensor,
    tensors: dict[str, Tensor | None],
    cfg: RLVRLossConfig,
) -> None:
    """The mask's 0/1 values, bounded advantages and finite old/behaviour log-probs."""
    check_mask("loss_mask", loss_mask)
    check_bounded(
        "advantages", advantages, float(cfg.max_abs_advantage),
        keep if advantages.dim() == 2 else keep.any(-1),
        "RLVRLossConfig.max_abs_advantage",
    )
    check_finite("logp_old", tensors.get("logp_old"), keep)
    if cfg.tis_cap is not None:
        check_finite("logp_behavior", tensors.get("logp_behavior"), keep)
