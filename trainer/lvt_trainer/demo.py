"""End-to-end demo: sample with a tiny model, score, and take a few RLVR steps.

Two ways in. With ``encoder`` (an ``lvt.ChatEncoder``) and samples carrying their prompt
``conversation``, the prompts are lvt's generation prompts and the training batch is lvt's
render of prompt + sampled tokens (:func:`lvt_trainer.lvt_batch.build_batch`: loss mask
from lvt's mask and owner, forged control ids masked out, truncated rollouts without an end
of turn). Without it, prompts arrive already encoded (``prompt_ids``) and the batch is
prompt + completion with the loss on the completion (the original behaviour, kept for
callers that only have ids).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from .device import resolve_device
from .gate import FixedGate
from .grpo import RolloutBatch, causal_lm_logprobs, group_advantages, grpo_train_step
from .loss import RLVRLossConfig
from .schedule import ConstantBeta, Schedule
from .tiny import build_tiny_causal_lm

__all__ = ["format_metrics", "print_metrics", "run_training_demo", "sample_completions"]

RewardFn = Callable[[list[int]], float]


def format_metrics(metrics: Mapping[str, float]) -> str:
    """One line ``key=value`` with compact number formatting."""
    parts = []
    for k, v in metrics.items():
        if isinstance(v, float):
            parts.append(f"{k}={v:.4g}")
        else:
            parts.append(f"{k}={v}")
    return " ".join(parts)


def print_metrics(metrics: Mapping[str, float]) -> None:
    """Default per-step callback: prints one line through ``tqdm.write`` (no logger)."""
    tqdm.write(format_metrics(metrics))


def _last_logits(model: nn.Module, ids: Tensor) -> Tensor:
    """Logits at the last position only (``logits_to_keep=1`` where the model supports it)."""
    try:
        return model(input_ids=ids, logits_to_keep=1).logits[:, -1]
    except TypeError:
        return model(input_ids=ids).logits[:, -1]


@torch.no_grad()
def sample_completions(
    model: nn.Module,
    prompt_ids: Sequence[int],
    num_samples: int,
    *,
    eos_id: int,
    max_new_tokens: int = 8,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """Sample ``num_samples`` completions of one prompt with a plain loop (no KV cache).

    Returns the completions (each ending at and including ``eos_id`` if it was sampled)
    and the behaviour log-probs of their tokens, recorded at sampling time under the
    sampling distribution (``softmax(logits / temperature)``).
    """
    dev = next(model.parameters()).device
    ids = torch.tensor([list(prompt_ids)] * num_samples, dtype=torch.long, device=dev)
    done = torch.zeros(num_samples, dtype=torch.bool, device=dev)
    comps: list[list[int]] = [[] for _ in range(num_samples)]
    blps: list[list[float]] = [[] for _ in range(num_samples)]
    was_training = model.training
    model.eval()
    for _ in range(max_new_tokens):
        logits = _last_logits(model, ids).float() / temperature
        logp = torch.log_softmax(logits, dim=-1)
        tok = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        tok_lp = logp.gather(-1, tok[:, None]).squeeze(-1)
        for i in range(num_samples):
            if not done[i]:
                comps[i].append(int(tok[i]))
                blps[i].append(float(tok_lp[i]))
        done |= tok == eos_id
        ids = torch.cat([ids, tok[:, None]], dim=1)
        if bool(done.all()):
            break
    model.train(was_training)
    return comps, blps


def _build_batch(
    prompts: list[list[int]],
    completions: list[list[int]],
    behavior: list[list[float]],
    advantages: Tensor,
    pad_id: int,
    device: torch.device,
) -> RolloutBatch:
    seqs = [p + c for p, c in zip(prompts, completions, strict=True)]
    width = max(len(s) for s in seqs)
    bsz = len(seqs)
    ids = torch.full((bsz, width), pad_id, dtype=torch.long)
    am = torch.zeros((bsz, width), dtype=torch.long)
    lm = torch.zeros((bsz, width), dtype=torch.float32)
    blp = torch.zeros((bsz, width), dtype=torch.float32)
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        n = len(p) + len(c)
        ids[i, :n] = torch.tensor(p + c, dtype=torch.long)
        am[i, :n] = 1
        lm[i, len(p) : n] = 1.0
        blp[i, len(p) : n] = torch.tensor(behavior[i], dtype=torch.float32)
    return RolloutBatch(ids, am, lm, advantages, blp, None).to(device)


def run_training_demo(
    samples: Sequence[Mapping[str, Any]],
    vocab_size: int,
    steps: int = 3,
    *,
    reward_fn: RewardFn | None = None,
    eos_id: int | None = None,
    group_size: int = 4,
    max_new_tokens: int = 8,
    temperature: float = 1.0,
    lr: float = 1e-3,
    beta: float | Schedule = 0.01,
    alpha: float = 1.0,
    ref_smoothing: float | Schedule = 0.0,
    config: RLVRLossConfig | None = None,
    pad_id: int | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
    model: nn.Module | None = None,
    callback: Callable[[dict[str, float]], None] | None = print_metrics,
    progress: bool = True,
    encoder: Any = None,
) -> list[dict[str, float]]:
    """Sample, score and train a tiny causal LM for ``steps`` RLVR steps.

    Args:
        samples: dicts with ``prompt_ids: list[int]`` (encoded prompt including the
            generation prompt); a sample may also carry its own ``reward_fn`` and
            ``eos_id``, overriding the keyword arguments.
        vocab_size: vocabulary of the tiny model (e.g. 128256 for Llama-3 ids).
        steps: optimisation steps, all on the one batch of rollouts (after the first
            step the batch is off-policy and the importance weights/clipping engage).
        reward_fn: ``reward_fn(completion_ids) -> float``.
        eos_id: end-of-turn id that stops sampling (kept in the completion and trained on).
        group_size: completions per prompt (G).
        max_new_tokens: sampling budget per completion.
        beta: KL coefficient or schedule ``step -> beta``.
        alpha: fixed gate ``alpha``.
        ref_smoothing: reference-logit smoothing ``eps`` or schedule ``step -> eps``
            (e.g. ``LinearDecay(1e-3, 0.0, 100)``).
        config: loss configuration (default: proximal clipping, exact KL, TIS cap 2).
        pad_id: padding id (default ``eos_id`` of the first sample; padded positions are
            masked out of attention and loss).
        model: use this causal LM instead of building the tiny one.
        callback: called with each step's metrics (default prints a line); ``None``: quiet.
        encoder: an ``lvt.ChatEncoder``; then each sample gives ``conversation`` (an
            ``lvt.Conversation``, the prompt) instead of ``prompt_ids`` and the batch is
            built from lvt's render (see the module docstring).

    Returns:
        One metrics dict per step (loss metrics plus ``step``, ``reward_mean``,
        ``reward_std``, ``completion_len_mean``, ``grad_norm``).
    """
    if not samples:
        raise ValueError("need at least one sample")
    dev = resolve_device(device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    policy = model if model is not None else build_tiny_causal_lm(vocab_size, seed=seed, device=dev)
    policy.to(dev)
    reference = copy.deepcopy(policy).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    cfg = config if config is not None else RLVRLossConfig(tis_cap=2.0, kl_chunk_size=256)
    beta_fn: Schedule = ConstantBeta(beta) if isinstance(beta, (int, float)) else beta
    eps_fn: Schedule = (
        ConstantBeta(ref_smoothing) if isinstance(ref_smoothing, (int, float)) else ref_smoothing
    )
    gate = FixedGate(alpha)

    # 1. rollouts with behaviour log-probs
    prompts: list[list[int]] = []
    comps: list[list[int]] = []
    behav: list[list[float]] = []
    rewards: list[float] = []
    sample_gen = torch.Generator(device=dev).manual_seed(seed) if dev.type != "cpu" else gen
    trajectories: list[Any] = []
    for s in samples:
        eos = s.get("eos_id", eos_id)
        rfn = s.get("reward_fn", reward_fn)
        if eos is None or rfn is None:
            raise ValueError("each sample needs an eos_id and a reward_fn (argument or key)")
        conv = s.get("conversation") if encoder is not None else None
        if encoder is not None and conv is None:
            raise ValueError("with an encoder each sample needs its prompt `conversation`")
        prompt = (
            [int(t) for t in encoder.generation_prompt(conv)]
            if conv is not None
            else [int(t) for t in s["prompt_ids"]]
        )
        if not prompt:
            raise ValueError("prompt_ids must be non-empty")
        c, b = sample_completions(
            policy,
            prompt,
            group_size,
            eos_id=int(eos),
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            generator=sample_gen,
        )
        for ci, bi in zip(c, b, strict=True):
            prompts.append(prompt)
            comps.append(ci)
            behav.append(bi)
            rewards.append(float(rfn(list(ci))))
            if conv is not None:
                from .lvt_batch import single_turn

                truncated = not ci or ci[-1] != int(eos)
                trajectories.append(single_turn(encoder, conv, ci, reward=rewards[-1],
                                                truncated=truncated, behavior_logp=bi))
    adv = group_advantages(rewards, group_size)
    first_eos = samples[0].get("eos_id", eos_id)
    pad = int(pad_id if pad_id is not None else first_eos if first_eos is not None else 0)
    if encoder is not None:
        from .lvt_batch import build_batch

        batch = build_batch(encoder, trajectories, on_forged="mask", pad_id=pad, device=dev)
        batch.advantages = adv.to(dev)
    else:
        batch = _build_batch(prompts, comps, behav, adv, pad, dev)
    with torch.no_grad():
        batch.old_logp, _ = causal_lm_logprobs(
            policy, batch.input_ids, batch.attention_mask, chunk_size=cfg.kl_chunk_size
        )

    # 2. optimisation steps
    optimizer = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.0)
    r = torch.tensor(rewards)
    extra = {
        "reward_mean": float(r.mean()),
        "reward_std": float(r.std()) if r.numel() > 1 else 0.0,
        "completion_len_mean": sum(len(c) for c in comps) / len(comps),
    }
    if batch.forged is not None:
        extra["forged_frac"] = float(batch.forged.float().mean())
    extra["loss_tokens"] = float(batch.loss_mask.sum())
    history: list[dict[str, float]] = []
    for step in tqdm(range(steps), desc="rlvr", disable=not progress, leave=False):
        m = grpo_train_step(
            policy,
            reference,
            optimizer,
            batch,
            config=cfg,
            beta=beta_fn(step),
            gate=gate,
            ref_smoothing=eps_fn(step),
        )
        row: dict[str, float] = {"step": float(step), **extra, **m}
        if not all(math.isfinite(v) for v in row.values()):
            raise FloatingPointError(f"non-finite metrics at step {step}: {row}")
        history.append(row)
        if callback is not None:
            callback(row)
    return history
