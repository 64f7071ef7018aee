"""lvt_trainer: token-wise RLVR on lvt's renders, with per-token credit assignment.

Public API (the loss core imports only ``torch``; the names marked *lvt* load ``lvt`` on
first use):

* Loss: :func:`rlvr_loss`, :func:`rlvr_loss_from_logits`, :class:`RLVRLossConfig`
  (log-space importance weights, proximal clipping that caps only negative-advantage
  tokens, PPO clipping, truncated IS, gated per-token KL; verl/TRL spellings accepted),
  :func:`token_terms` / :class:`TokenTerms` (per-token form), :class:`FusedRLVR` (fused
  chunked pass), :data:`VERL_ALIASES` (metric names).
* KL and statistics: :func:`token_stats`, :func:`exact_kl`, :func:`token_logprobs_entropy`,
  :func:`sampled_kl`, :class:`ChunkedTokenStats`, :func:`smoothed_log_softmax`.
* Normalisation across DP ranks: :func:`normalize_loss`, :func:`global_token_count`,
  :func:`global_sequence_count`.
* Gate and schedules: :class:`FixedGate`, :class:`LearnableAlphaGate`, :class:`ConstantBeta`,
  :class:`WarmupDecayPerturbBeta`, :class:`LinearDecay`, :class:`MethodBeta`,
  :func:`beta_schedule` (``"method"``: the article's beta schedule).
* Credit: :class:`TokenCritic`, :class:`CriticConfig`, :class:`CriticSchedule`,
  :class:`CreditResult`, :class:`ValueHead`, :func:`gae`, :func:`place_rewards`,
  :func:`reward_to_go`, :func:`masked_whiten`, :class:`MovingAverageBaseline`,
  :func:`group_advantages`, :func:`broadcast_advantages`, :func:`grpo_token_advantages`.
* Train step: :class:`RolloutBatch`, :func:`grpo_train_step` (per-sequence or per-token
  advantages in the ``input_ids`` layout; steps a learnable gate's controller),
  :func:`causal_lm_logprobs`, :func:`causal_lm_forward`.
* *lvt* batches: :func:`build_batch`, :func:`single_turn`, :class:`Trajectory`,
  :class:`SampledTurn`, :func:`end_of_turn_ids`; :class:`IdMap` (compact vocabularies).
* *lvt* agent loop: :func:`run_episodes`, :func:`parse_completion` (the integration point
  with lvt's completion parser), :class:`ExtensionGuard`, :class:`Sample`,
  :class:`Episode`, :func:`sampled_message`, :func:`calculator`, :func:`tool_request`,
  :func:`completion_text`,
  :class:`PolicySampler`, :func:`sample_batch`.
* *lvt* learning run: :func:`run_learning`, :class:`LearningConfig`, :func:`summarize`.
* Errors: :class:`TrainerError` and its subclasses (:mod:`lvt_trainer.errors`):
  :class:`TrainerShapeError`, :class:`TrainerDtypeError` (a ``TypeError``),
  :class:`TrainerValueError` (masks not 0/1, advantages beyond ``max_abs_advantage``,
  hyperparameters out of range), :class:`NonFiniteInputError`, :class:`TrainerConfigError`.
* Misc: :func:`build_tiny_causal_lm`, :func:`tiny_llama_config`, :func:`default_device`,
  :func:`default_dtype`, :func:`lvt_trainer.demo.run_training_demo`, :func:`line_chart`.
"""

from __future__ import annotations

import importlib
from typing import Any

from .advantages import MovingAverageBaseline, gae, masked_whiten, place_rewards, reward_to_go
from .config import LOSS_AGG_MODES, RLVRLossConfig
from .critic import (
    CreditResult,
    CriticConfig,
    CriticSchedule,
    TokenCritic,
    ValueHead,
    grpo_token_advantages,
)
from .demo import run_training_demo
from .device import default_device, default_dtype, resolve_device
from .errors import (
    CompletionParseError,
    ForgedTokenError,
    NonFiniteInputError,
    PrefixViolationError,
    RenderMismatchError,
    TrainerConfigError,
    TrainerDtypeError,
    TrainerError,
    TrainerShapeError,
    TrainerValueError,
)
from .fused import FusedRLVR
from .gate import FixedGate, Gate, LearnableAlphaGate
from .grpo import (
    RolloutBatch,
    broadcast_advantages,
    causal_lm_forward,
    causal_lm_logprobs,
    group_advantages,
    grpo_train_step,
)
from .kl import (
    ChunkedTokenStats,
    exact_kl,
    naive_token_stats,
    sampled_kl,
    smoothed_log_softmax,
    token_logprobs_entropy,
    token_stats,
)
from .loss import TokenTerms, rlvr_loss, rlvr_loss_from_logits, token_terms
from .metrics import VERL_ALIASES
from .normalize import global_sequence_count, global_token_count, normalize_loss
from .plot import line_chart
from .schedule import (
    ConstantBeta,
    LinearDecay,
    MethodBeta,
    Schedule,
    WarmupDecayPerturbBeta,
    beta_schedule,
)
from .tiny import build_tiny_causal_lm, tiny_llama_config
from .vocab import IdMap

#: names that need ``lvt`` (imported on first access): name -> module
_LAZY = {
    "SampledTurn": "lvt_batch",
    "Trajectory": "lvt_batch",
    "build_batch": "lvt_batch",
    "end_of_turn_ids": "lvt_batch",
    "single_turn": "lvt_batch",
    "Episode": "agent",
    "ExtensionGuard": "agent",
    "Sample": "agent",
    "calculator": "agent",
    "completion_text": "agent",
    "parse_completion": "agent",
    "run_episodes": "agent",
    "sampled_message": "agent",
    "tool_request": "agent",
    "PolicySampler": "sampling",
    "sample_batch": "sampling",
    "LearningConfig": "learning",
    "run_learning": "learning",
    "summarize": "learning",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'lvt_trainer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "LOSS_AGG_MODES",
    "VERL_ALIASES",
    "ChunkedTokenStats",
    "CompletionParseError",
    "ConstantBeta",
    "CreditResult",
    "CriticConfig",
    "CriticSchedule",
    "Episode",
    "ExtensionGuard",
    "FixedGate",
    "ForgedTokenError",
    "FusedRLVR",
    "Gate",
    "IdMap",
    "LearnableAlphaGate",
    "LearningConfig",
    "LinearDecay",
    "MethodBeta",
    "MovingAverageBaseline",
    "NonFiniteInputError",
    "PolicySampler",
    "PrefixViolationError",
    "RLVRLossConfig",
    "RenderMismatchError",
    "RolloutBatch",
    "Sample",
    "SampledTurn",
    "Schedule",
    "TokenCritic",
    "TokenTerms",
    "TrainerConfigError",
    "TrainerDtypeError",
    "TrainerError",
    "TrainerShapeError",
    "TrainerValueError",
    "Trajectory",
    "ValueHead",
    "WarmupDecayPerturbBeta",
    "beta_schedule",
    "broadcast_advantages",
    "build_batch",
    "build_tiny_causal_lm",
    "calculator",
    "causal_lm_forward",
    "causal_lm_logprobs",
    "completion_text",
    "default_device",
    "default_dtype",
    "end_of_turn_ids",
    "exact_kl",
    "gae",
    "global_sequence_count",
    "global_token_count",
    "group_advantages",
    "grpo_token_advantages",
    "grpo_train_step",
    "line_chart",
    "masked_whiten",
    "naive_token_stats",
    "normalize_loss",
    "parse_completion",
    "place_rewards",
    "resolve_device",
    "reward_to_go",
    "rlvr_loss",
    "rlvr_loss_from_logits",
    "run_episodes",
    "run_learning",
    "run_training_demo",
    "sample_batch",
    "sampled_kl",
    "sampled_message",
    "single_turn",
    "smoothed_log_softmax",
    "summarize",
    "tiny_llama_config",
    "token_logprobs_entropy",
    "token_stats",
    "token_terms",
    "tool_request",
]
