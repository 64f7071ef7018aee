"""lvt_trainer: the token-wise RLVR loss and a minimal GRPO-style training step.

Public API:

* :func:`rlvr_loss`, :func:`rlvr_loss_from_logits`, :class:`RLVRLossConfig`: the loss
  (log-space importance weights, proximal clipping that caps only negative-advantage
  tokens, PPO clipping, truncated IS against behaviour log-probs, gated per-token KL);
  :func:`token_terms` / :class:`TokenTerms`: its per-token form.
* :class:`FusedRLVR`: the loss fused with the chunked log-softmax, gradients formed in
  forward (what :func:`rlvr_loss_from_logits` uses when a gradient is wanted).
* :func:`token_stats`, :func:`exact_kl`, :func:`token_logprobs_entropy`,
  :func:`sampled_kl`, :class:`ChunkedTokenStats`: chunked exact KL / log-probs / entropy
  with recompute in backward, and the k1/k2/k3 estimators.
* :func:`normalize_loss`, :func:`global_token_count`, :func:`global_sequence_count`:
  token/sequence normalisation correct across data-parallel ranks and accumulation.
* :class:`FixedGate`, :class:`LearnableAlphaGate`: the gate ``sigmoid(alpha * A)``.
* :class:`ConstantBeta`, :class:`WarmupDecayPerturbBeta`, :class:`LinearDecay`: schedules.
* :func:`group_advantages`, :func:`broadcast_advantages`, :class:`RolloutBatch`,
  :func:`causal_lm_logprobs`, :func:`grpo_train_step`: GRPO pieces.
* :func:`build_tiny_causal_lm`, :func:`tiny_llama_config`: a tiny random Llama.
* :func:`default_device`, :func:`default_dtype`: CUDA when available, else CPU.
* :func:`lvt_trainer.demo.run_training_demo`: sample, score and train end to end.
"""

from __future__ import annotations

from .demo import run_training_demo
from .device import default_device, default_dtype, resolve_device
from .fused import FusedRLVR
from .gate import FixedGate, Gate, LearnableAlphaGate
from .grpo import (
    RolloutBatch,
    broadcast_advantages,
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
from .loss import RLVRLossConfig, TokenTerms, rlvr_loss, rlvr_loss_from_logits, token_terms
from .normalize import global_sequence_count, global_token_count, normalize_loss
from .schedule import ConstantBeta, LinearDecay, Schedule, WarmupDecayPerturbBeta
from .tiny import build_tiny_causal_lm, tiny_llama_config

__all__ = [
    "ChunkedTokenStats",
    "ConstantBeta",
    "FixedGate",
    "FusedRLVR",
    "Gate",
    "LearnableAlphaGate",
    "LinearDecay",
    "RLVRLossConfig",
    "RolloutBatch",
    "Schedule",
    "TokenTerms",
    "WarmupDecayPerturbBeta",
    "broadcast_advantages",
    "build_tiny_causal_lm",
    "causal_lm_logprobs",
    "default_device",
    "default_dtype",
    "exact_kl",
    "global_sequence_count",
    "global_token_count",
    "group_advantages",
    "grpo_train_step",
    "naive_token_stats",
    "normalize_loss",
    "resolve_device",
    "rlvr_loss",
    "rlvr_loss_from_logits",
    "run_training_demo",
    "sampled_kl",
    "smoothed_log_softmax",
    "tiny_llama_config",
    "token_logprobs_entropy",
    "token_stats",
    "token_terms",
]
