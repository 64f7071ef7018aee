"""Static settings of the RLVR loss, validated on construction.

Names follow verl / TRL / OpenRLHF where they agree: the normalisation accepts the
``loss_agg_mode`` spellings ``"token-mean"``, ``"seq-mean-token-sum"`` and
``"seq-mean-token-mean"`` (and the field ``loss_agg_mode=`` itself) besides the underscore
names used internally.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .errors import TrainerConfigError, check_range
from .kl import DEFAULT_LOG_RATIO_BOUND
from .normalize import GradReduction, NormMode

__all__ = [
    "DEFAULT_MAX_ABS_ADVANTAGE",
    "LOSS_AGG_MODES",
    "POLICY_TERM_LIMIT",
    "ClipMode",
    "KLMode",
    "RLVRLossConfig",
    "canonical_norm_mode",
]

ClipMode = Literal["proximal", "ppo", "none"]
KLMode = Literal["exact", "k1", "k2", "k3", "none"]

#: ``loss_agg_mode`` names (verl/OpenRLHF spelling) -> internal normalisation mode.
LOSS_AGG_MODES: dict[str, NormMode] = {
    "token-mean": "token_mean",
    "seq-mean-token-sum": "seq_mean_token_sum",
    "seq-mean-token-mean": "seq_mean_token_mean",
    "token_mean": "token_mean",
    "seq_mean_token_sum": "seq_mean_token_sum",
    "seq_mean_token_mean": "seq_mean_token_mean",
}

#: Default bound on ``|advantage|`` at unmasked positions (``max_abs_advantage``).
DEFAULT_MAX_ABS_ADVANTAGE: float = 1e6

#: Largest allowed bound on one token's policy term, ``exp(log_ratio_bound) *
#: max(tis_cap, 1) * max_abs_advantage``: a sum of 1e8 such terms stays below the fp32
#: maximum (3.4e38), so the loss is finite whatever the inputs within the bounds.
POLICY_TERM_LIMIT: float = 1e30

_CLIP_MODES = ("proximal", "ppo", "none")
_KL_MODES = ("exact", "k1", "k2", "k3", "none")


def canonical_norm_mode(name: str) -> NormMode:
    """The internal normalisation name for ``name`` (either spelling).

    Raises:
        TrainerConfigError: unknown name.
    """
    try:
        return LOSS_AGG_MODES[name]
    except (KeyError, TypeError):
        raise TrainerConfigError(
            f"unknown normalisation / loss_agg_mode {name!r}; known: "
            f"{sorted(k for k in LOSS_AGG_MODES if '-' in k)}"
        ) from None


@dataclass(frozen=True)
class RLVRLossConfig:
    """Static settings of the RLVR loss (``beta``, the gate and smoothing are per call).

    Attributes:
        clip_mode: ``"proximal"`` (default), ``"ppo"`` or ``"none"``.
        proximal_cap: ``C`` of proximal clipping (applied to ``A < 0`` tokens only); > 0.
        ppo_eps_low, ppo_eps_high: PPO ratio clip range ``[1 - low, 1 + high]``
            (``0 <= low < 1``, ``high >= 0``).
        tis_cap: truncated-IS cap against behaviour log-probs (> 0); ``None`` disables TIS.
        log_ratio_bound: clamp of every log-probability difference before ``exp`` (> 0).
        max_abs_advantage: bound on ``|A|`` at unmasked positions (default 1e6; > 0); a
            larger advantage (1e38 in fp32, 1e300 in fp64) is refused with
            :class:`lvt_trainer.errors.TrainerValueError` instead of giving a loss of
            ``-inf``. One token's policy term is at most ``exp(log_ratio_bound) *
            max(tis_cap, 1) * max_abs_advantage``, which must not exceed
            :data:`POLICY_TERM_LIMIT` (1e30), so the loss stays finite.
        kl_mode: ``"exact"``, ``"k1"``, ``"k2"``, ``"k3"`` or ``"none"``.
        kl_chunk_size: sequence chunk for the logits-based computations (``None``: whole
            sequence; else >= 1).
        entropy_coef: optional entropy bonus (0 disables it).
        normalization: see :mod:`lvt_trainer.normalize`; ``"token-mean"``,
            ``"seq-mean-token-sum"``, ``"seq-mean-token-mean"`` are accepted too.
        grad_reduction: how data-parallel gradients are combined (``"mean"`` for DDP).
        validate_inputs: check the values of every input: loss masks hold only 0/1,
            advantages are finite and within ``max_abs_advantage``, target ids lie in the
            vocabulary and every float input is finite (at unmasked positions); one fused
            check and one device sync per tensor. On by default; ``False`` skips these
            value checks (shapes and dtypes, which cost no sync, are always checked).
        loss_agg_mode: alias of ``normalization`` (verl's name); when given it wins and is
            folded into ``normalization`` (the field then reads ``None``).

    Raises:
        TrainerConfigError: a value out of range or an unknown mode.
    """

    clip_mode: ClipMode = "proximal"
    proximal_cap: float = 5.0
    ppo_eps_low: float = 0.2
    ppo_eps_high: float = 0.2
    tis_cap: float | None = None
    log_ratio_bound: float = DEFAULT_LOG_RATIO_BOUND
    max_abs_advantage: float = DEFAULT_MAX_ABS_ADVANTAGE
    kl_mode: KLMode = "exact"
    kl_chunk_size: int | None = 512
    entropy_coef: float = 0.0
    normalization: NormMode = "token_mean"
    grad_reduction: GradReduction = "mean"
    validate_inputs: bool = True
    loss_agg_mode: str | None = None

    def __post_init__(self) -> None:
        norm = self.normalization if self.loss_agg_mode is None else self.loss_agg_mode
        object.__setattr__(self, "normalization", canonical_norm_mode(norm))
        object.__setattr__(self, "loss_agg_mode", None)
        if self.clip_mode not in _CLIP_MODES:
            raise TrainerConfigError(f"unknown clip_mode {self.clip_mode!r}; known {_CLIP_MODES}")
        if self.kl_mode not in _KL_MODES:
            raise TrainerConfigError(f"unknown kl_mode {self.kl_mode!r}; known {_KL_MODES}")
        if self.grad_reduction not in ("mean", "sum"):
            raise TrainerConfigError(f"unknown grad_reduction {self.grad_reduction!r}")
        check_range("proximal_cap", self.proximal_cap, low=0.0, low_open=True)
        check_range("ppo_eps_low", self.ppo_eps_low, low=0.0, high=1.0, high_open=True)
        check_range("ppo_eps_high", self.ppo_eps_high, low=0.0)
        check_range("tis_cap", self.tis_cap, low=0.0, low_open=True, allow_none=True)
        check_range("log_ratio_bound", self.log_ratio_bound, low=0.0, low_open=True)
        check_range("max_abs_advantage", self.max_abs_advantage, low=0.0, low_open=True)
        check_range("entropy_coef", self.entropy_coef)
        worst = math.exp(min(float(self.log_ratio_bound), 700.0)) * max(
            float(self.tis_cap or 1.0), 1.0) * float(self.max_abs_advantage)
        if worst > POLICY_TERM_LIMIT:
            raise TrainerConfigError(
                f"exp(log_ratio_bound) * max(tis_cap, 1) * max_abs_advantage = {worst:.3g} "
                f"exceeds {POLICY_TERM_LIMIT:g}: the loss could overflow; lower "
                "log_ratio_bound, tis_cap or max_abs_advantage"
            )
        cs = self.kl_chunk_size
        if cs is not None and (isinstance(cs, bool) or not isinstance(cs, int) or cs < 1):
            raise TrainerConfigError(f"kl_chunk_size must be None or an int >= 1, got {cs!r}")
