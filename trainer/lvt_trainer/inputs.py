"""Input validation of the loss entry points (shapes, finiteness, ranges, aliases).

Shape errors name the argument, the expected layout and both shapes; finiteness is checked
only where the loss mask is 1 (masked positions may hold anything). See
:mod:`lvt_trainer.errors` for the error types.
"""

from __future__ import annotations

from torch import Tensor

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
) -> None:
    """Shapes, finiteness at unmasked positions and ``beta`` (see the module docstring)."""
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
    check_finite("logp_new", logp_new, keep)
    check_finite("advantages", advantages, keep if advantages.dim() == 2 else keep.any(-1))
    check_finite("logp_old", tensors.get("logp_old"), keep)
    if cfg.tis_cap is not None:
        check_finite("logp_behavior", tensors.get("logp_behavior"), keep)
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
) -> None:
    """Shapes of the logits-path inputs, target ids in range and finite inputs where
    unmasked (the statistics themselves are checked after the chunked pass)."""
    if logits.dim() != 3 or targets.shape != logits.shape[:2] or loss_mask.shape != targets.shape:
        raise TrainerShapeError(
            "logits must be (B, T, V or H) with targets and loss_mask (B, T); got "
            f"{tuple(logits.shape)}, {tuple(targets.shape)}, {tuple(loss_mask.shape)}"
        )
    bsz, seq = targets.shape
    check_shape(
        "advantages", advantages, [(bsz,), (bsz, seq)], "(B,) per sequence or (B, T) per token"
    )
    for name, x in tensors.items():
        check_shape(name, x, [(bsz, seq)], "(B, T) like targets")
    if weight is not None and (weight.dim() != 2 or weight.shape[1] != logits.shape[-1]):
        raise TrainerShapeError(
            f"weight: expected (V, H) with H = {logits.shape[-1]}, got {tuple(weight.shape)}"
        )
    check_range("beta", beta, low=0.0)
    if not cfg.validate_inputs:
        return
    vocab = weight.shape[0] if weight is not None else logits.shape[-1]
    bad = keep & ((targets < 0) | (targets >= vocab))
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0].tolist())
        raise TrainerShapeError(
            f"targets: id {int(targets[idx])} at unmasked position {idx} is outside [0, {vocab})"
        )
    check_finite("advantages", advantages, keep if advantages.dim() == 2 else keep.any(-1))
    check_finite("logp_old", tensors.get("logp_old"), keep)
    if cfg.tis_cap is not None:
        check_finite("logp_behavior", tensors.get("logp_behavior"), keep)
