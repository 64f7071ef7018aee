"""GRPO-style pieces: group-normalised advantages and a minimal training step.

Token layout used throughout: ``input_ids`` ``(B, T)`` hold prompt + response (right
padded), ``loss_mask[b, t] = 1`` when token ``t`` is a response token to learn, and
per-token log-prob tensors are aligned with ``input_ids``: ``logp[b, t]`` is the log-prob
of token ``input_ids[b, t]`` given the tokens before it (``logp[:, 0] = 0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from .errors import TrainerShapeError, check_shape
from .gate import FixedGate, Gate
from .kl import sampled_kl, token_stats
from .loss import RLVRLossConfig, rlvr_loss_from_logits

__all__ = [
    "RolloutBatch",
    "broadcast_advantages",
    "causal_lm_forward",
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

    Every per-token tensor is laid out like ``input_ids``: index ``t`` refers to the token
    ``input_ids[b, t]`` (its log-prob, its advantage, whether it is learned).

    Attributes:
        input_ids: ``(B, T)`` int64 prompt + response ids (in the model's vocabulary),
            right padded.
        attention_mask: ``(B, T)`` 1 on real tokens.
        loss_mask: ``(B, T)`` 1 on response tokens to learn.
        advantages: ``(B,)`` per-sample or ``(B, T)`` per-token advantages (``input_ids``
            layout; column 0 is never learned).
        behavior_logp: ``(B, T)`` inference-time log-probs (for TIS), or ``None``.
        old_logp: ``(B, T)`` trainer log-probs under the policy that produced the batch,
            or ``None`` for a purely on-policy step.
        rewards: ``(B,)`` terminal (verifiable) rewards, or ``None``.
        token_rewards: ``(B, T)`` optional per-token rewards (added to the terminal one).
        truncated: ``(B,)`` bool, rollouts cut at the length limit (no end of turn).
        owner: ``(B, T)`` the lvt owner of each token (message index), ``-1`` on padding.
        render_ids: ``(B, T)`` lvt's render (tokenizer ids) when ``input_ids`` went through
            an id map (:class:`lvt_trainer.vocab.IdMap`), else ``None``.
        forged: ``(B,)`` bool, rollouts kept without loss tokens because they contained a
            control id (:func:`lvt_trainer.lvt_batch.build_batch` with ``on_forged="mask"``).
    """

    input_ids: Tensor
    attention_mask: Tensor
    loss_mask: Tensor
    advantages: Tensor
    behavior_logp: Tensor | None = None
    old_logp: Tensor | None = None
    rewards: Tensor | None = None
    token_rewards: Tensor | None = None
    truncated: Tensor | None = None
    owner: Tensor | None = None
    render_ids: Tensor | None = None
    forged: Tensor | None = None

    def to(self, device: torch.device | str) -> RolloutBatch:
        """A copy with every tensor moved to ``device``."""
        moved = {
            f.name: (None if (x := getattr(self, f.name)) is None else x.to(device))
            for f in fields(self)
        }
        return RolloutBatch(**moved)

    def check(self) -> None:
        """Raise :class:`~lvt_trainer.errors.TrainerShapeError` unless every tensor has
        the layout documented above."""
        bsz, seq = self.input_ids.shape
        ids_like = [(bsz, seq)]
        for name in ("attention_mask", "loss_mask", "behavior_logp", "old_logp",
                     "token_rewards", "owner", "render_ids"):
            check_shape(name, getattr(self, name), ids_like, "(B, T) like input_ids")
        for name in ("rewards", "truncated", "forged"):
            check_shape(name, getattr(self, name), [(bsz,)], "(B,)")
        adv = self.advantages
        if adv.dim() == 2 and tuple(adv.shape) == (bsz, seq - 1):
            raise TrainerShapeError(
                f"advantages: per-token advantages are laid out like input_ids {(bsz, seq)}; "
                f"got {tuple(adv.shape)} (the shifted target layout): prepend a zero column"
            )
        check_shape("advantages", adv, [(bsz,), (bsz, seq)],
                    "(B,) per sequence or (B, T) per token like input_ids")


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


@torch.no_grad()
def causal_lm_forward(
    model: nn.Module,
    input_ids: Tensor,
    attention_mask: Tensor,
    *,
    chunk_size: int | None = 512,
) -> tuple[Tensor, Tensor, Tensor]:
    """No-grad pass: ``(logp, entropy, hidden)`` aligned with ``input_ids``.

    ``logp``/``entropy`` as in :func:`causal_lm_logprobs` (``(B, T)`` fp32, column 0 is
    0); ``hidden`` is the final hidden state ``(B, T, H)`` at every position (what a value
    head on the policy reads), or the logits for models without a plain LM head.
    """
    src, weight = _hidden_and_head(model, input_ids, attention_mask)
    lp, ent, _ = token_stats(
        src[:, :-1], input_ids[:, 1:], None, weight=weight, chunk_size=chunk_size,
        compute_entropy=True,
    )
    assert lp is not None and ent is not None
    pad = torch.nn.functional.pad
    return pad(lp, (1, 0)), pad(ent, (1, 0)), src.detach()


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

    ``batch.advantages`` is ``(B,)`` (per sequence) or ``(B, T)`` per token in the
    ``input_ids`` layout (see :class:`RolloutBatch`); other layouts raise
    :class:`~lvt_trainer.errors.TrainerShapeError`. When ``gate`` has an ``update`` method
    (:class:`~lvt_trainer.gate.LearnableAlphaGate`) its controller is stepped after the
    optimizer step with this batch's per-token KL (exact, or the sampled estimator of
    ``config.kl_mode``); metrics then carry the new ``alpha``.
    """
    batch.check()
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

    adv = batch.advantages if batch.advantages.dim() == 1 else batch.advantages[:, 1:]
    mask = batch.loss_mask[:, 1:]
    stats: dict[str, Tensor | None] = {}
    loss, metrics = rlvr_loss_from_logits(
        src[:, :-1],
        ids[:, 1:],
        adv,
        mask,
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
        stats_out=stats,
    )
    loss.backward()
    if max_grad_norm is not None:
        gn = torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
        metrics["grad_norm"] = metrics["actor/grad_norm"] = float(gn)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    _update_gate(gate, adv, mask, stats, config)
    return metrics | _gate_metrics(gate)


def _update_gate(
    gate: Gate | None,
    adv: Tensor,
    mask: Tensor,
    stats: dict[str, Tensor | None],
    config: RLVRLossConfig,
) -> None:
    """Step a learnable gate's controller with the batch's per-token KL."""
    update = getattr(gate, "update", None)
    if update is None or not callable(update):
        return
    kl = stats.get("kl")
    if kl is None and config.kl_mode in ("k1", "k2", "k3"):
        lp, ref = stats.get("logp"), stats.get("ref_logp")
        if lp is not None and ref is not None:
            kl = sampled_kl(lp, ref, config.kl_mode, log_ratio_bound=config.log_ratio_bound)
    if kl is None:
        return
    keep = mask != 0
    kl = torch.where(keep, kl, torch.zeros((), dtype=kl.dtype, device=kl.device))
    update(adv.detach(), kl.detach(), mask)


def _gate_metrics(gate: Gate | None) -> dict[str, float]:
    alpha = getattr(gate, "alpha", None)
    if alpha is None:
        return {}
    return {"alpha": float(alpha)}
