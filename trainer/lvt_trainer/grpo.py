"""GRPO-style pieces: group-normalised advantages and a minimal training step.

Token layout used throughout: ``input_ids`` ``(B, T)`` hold prompt + response (right
padded), ``loss_mask[b, t] = 1`` when token ``t`` is a response token to learn, and
per-token log-prob tensors are aligned with ``input_ids``: ``logp[b, t]`` is the log-prob
of token ``input_ids[b, t]`` given the tokens before it (``logp[:, 0] = 0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .gate import FixedGate, Gate
from .kl import token_stats
from .loss import RLVRLossConfig, rlvr_loss_from_logits

__all__ = [
    "RolloutBatch",
    "broadcast_advantages",
    "causal_lm_logprobs",
    "group_advantages",
    "grpo_train_step",
]


def group_advantages(
    rewards: Tensor | Sequence[float],
    group_size: int,
    *,
    normalize_std: bool = True,
    unbiased_std: bool = True,
    eps: float = 1e-6,
) -> Tensor:
    """Group-normalised advantages ``(r - mean_group) / (std_group + eps)``.

    ``rewards`` is flat ``(N,)`` with consecutive groups of ``group_size`` rollouts of the
    same prompt. A group whose rewards are all equal (zero std, or ``group_size == 1``)
    gets advantage exactly 0. With ``normalize_std=False`` only the mean is removed
    (Dr. GRPO). Returns float32 ``(N,)``.
    """
    r = torch.as_tensor(rewards, dtype=torch.float64)
    if r.dim() != 1 or group_size <= 0 or r.numel() % group_size:
        raise ValueError(f"rewards must be (N,) with N divisible by group_size={group_size}")
    g = r.view(-1, group_size)
    centred = g - g.mean(dim=1, keepdim=True)
    if normalize_std:
        if group_size > 1:
            std = g.std(dim=1, unbiased=unbiased_std, keepdim=True)
        else:
            std = torch.zeros_like(g)
        degenerate = std <= eps
        adv = torch.where(degenerate, torch.zeros_like(centred), centred / (std + eps))
    else:
        adv = centred
    return adv.reshape(-1).to(torch.float32)


def broadcast_advantages(advantages: Tensor, loss_mask: Tensor) -> Tensor:
    """Per-sample advantages ``(B,)`` broadcast over response tokens: ``A[b] * mask[b, t]``."""
    return advantages.to(torch.float32)[:, None] * (loss_mask != 0).to(torch.float32)


@dataclass
class RolloutBatch:
    """A padded batch of rollouts (see the module docstring for the alignment).

    Attributes:
        input_ids: ``(B, T)`` int64 prompt + response ids, right padded.
        attention_mask: ``(B, T)`` 1 on real tokens.
        loss_mask: ``(B, T)`` 1 on response tokens to learn.
        advantages: ``(B,)`` per-sample advantages.
        behavior_logp: ``(B, T)`` inference-time log-probs (for TIS), or ``None``.
        old_logp: ``(B, T)`` trainer log-probs under the policy that produced the batch,
            or ``None`` for a purely on-policy step.
    """

    input_ids: Tensor
    attention_mask: Tensor
    loss_mask: Tensor
    advantages: Tensor
    behavior_logp: Tensor | None = None
    old_logp: Tensor | None = None

    def to(self, device: torch.device | str) -> RolloutBatch:
        """A copy with every tensor moved to ``device``."""

        def mv(x: Tensor | None) -> Tensor | None:
            return None if x is None else x.to(device)

        return RolloutBatch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.loss_mask.to(device),
            self.advantages.to(device),
            mv(self.behavior_logp),
            mv(self.old_logp),
        )


def _hidden_and_head(
    model: nn.Module, input_ids: Tensor, attention_mask: Tensor
) -> tuple[Tensor, Tensor | None]:
    """Final hidden states and LM-head weight when logits are a plain ``h @ W.T``.

    Falls back to ``(logits, None)`` for models with logit soft-capping, scaling or a
    head bias, which the chunked hidden-state path does not model.
    """
    cfg = getattr(model, "config", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    plain = (
        isinstance(head, nn.Linear)
        and head.bias is None
        and getattr(cfg, "final_logit_softcapping", None) is None
        and getattr(cfg, "logit_scale", None) is None
        and hasattr(model, "get_decoder")
    )
    if plain:
        assert isinstance(head, nn.Linear)
        out = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, head.weight
    out = model(input_ids=input_ids, attention_mask=attention_mask)
    return out.logits, None


def causal_lm_logprobs(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    *,
    chunk_size: int | None = 512,
    compute_entropy: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Per-token log-probs (and entropy) of ``input_ids`` under a causal LM, chunked.

    Returns ``(logp, entropy)`` ``(B, T)`` fp32 aligned with ``input_ids``
    (``logp[:, 0] = 0``); ``entropy[b, t]`` is that of the distribution that scored token
    ``t``. Differentiable unless called under ``torch.no_grad()``.
    """
    src, weight = _hidden_and_head(model, input_ids, attention_mask)
    lp, ent, _ = token_stats(
        src[:, :-1],
        input_ids[:, 1:],
        None,
        weight=weight,
        chunk_size=chunk_size,
        compute_entropy=compute_entropy,
    )
    assert lp is not None
    lp = torch.nn.functional.pad(lp, (1, 0))
    if ent is not None:
        ent = torch.nn.functional.pad(ent, (1, 0))
    return lp, ent


def grpo_train_step(
    policy: nn.Module,
    reference: nn.Module | None,
    optimizer: torch.optim.Optimizer,
    batch: RolloutBatch,
    *,
    config: RLVRLossConfig = RLVRLossConfig(),  # noqa: B008 - frozen dataclass
    beta: float = 0.0,
    gate: Gate | None = FixedGate(1.0),  # noqa: B008
    ref_smoothing: float = 0.0,
    max_grad_norm: float | None = 1.0,
    global_token_count: Tensor | float | None = None,
    global_seq_count: Tensor | float | None = None,
) -> dict[str, float]:
    """One optimizer step of the RLVR loss on ``batch``; returns the metrics.

    Computes the policy's hidden states (with gradient) and the reference's (no
    gradient), then the target log-probs, entropy and KL in one chunked pass from hidden
    states and LM-head weights (full ``(B, T, V)`` logits are never built for plain
    heads), the loss, backward, gradient clipping and ``optimizer.step()``. Behaviour and
    old log-probs come from the batch. ``reference=None`` disables the KL term.
    """
    policy.train()
    optimizer.zero_grad(set_to_none=True)
    ids, am = batch.input_ids, batch.attention_mask
    src, weight = _hidden_and_head(policy, ids, am)
    ref_src: Tensor | None = None
    ref_weight: Tensor | None = None
    if reference is not None and config.kl_mode != "none":
        with torch.no_grad():
            ref_src, ref_weight = _hidden_and_head(reference, ids, am)
            if (ref_weight is None) != (weight is None):
                # mixed heads: fall back to logits for both
                ref_src = reference(input_ids=ids, attention_mask=am).logits
                ref_weight = None
        if (ref_weight is None) != (weight is None):
            src, weight = policy(input_ids=ids, attention_mask=am).logits, None

    def shift(x: Tensor | None) -> Tensor | None:
        return None if x is None else x[:, 1:]

    loss, metrics = rlvr_loss_from_logits(
        src[:, :-1],
        ids[:, 1:],
        batch.advantages,
        batch.loss_mask[:, 1:],
        ref_logits=None if ref_src is None else ref_src[:, :-1],
        weight=weight,
        ref_weight=ref_weight,
        ref_smoothing=ref_smoothing,
        compute_entropy=True,
        logp_old=shift(batch.old_logp),
        logp_behavior=shift(batch.behavior_logp),
        beta=beta,
        gate=gate,
        config=config,
        global_token_count=global_token_count,
        global_seq_count=global_seq_count,
    )
    loss.backward()
    if max_grad_norm is not None:
        gn = torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
        metrics["grad_norm"] = float(gn)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return metrics
