"""A run that learns on the CPU: a tiny causal LM, a verifiable task in a real chat format,
a few supervised steps, then RL with sequence (GRPO) or token-wise (critic) advantages.

Everything the loss sees is lvt's render: prompts from ``ChatEncoder.generation_prompt``,
episodes through :func:`lvt_trainer.agent.run_episodes` (tool calls parsed by lvt,
prefix extension checked every turn), batches from
:func:`lvt_trainer.lvt_batch.build_batch` (ids, mask and owner of the render). The model
has a compact vocabulary: an :class:`~lvt_trainer.vocab.IdMap` over every id that occurs in
lvt's renders of the task's demonstrations (a few hundred Llama-3 ids instead of 128,256),
so a 2-layer model trains in seconds; the map is a bijection on those ids, so the
sequences are lvt's renders relabelled.

:func:`run_learning` runs the supervised warm start once per seed and then every variant
from a copy of that model, with the same problems and the same sampling seed, so the
variants differ only in how advantages are formed.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import nn

import lvt

from .agent import calculator, run_episodes
from .config import RLVRLossConfig
from .critic import CriticConfig, TokenCritic
from .gate import FixedGate
from .grpo import causal_lm_forward, causal_lm_logprobs, grpo_train_step
from .lvt_batch import _refusal, build_batch, end_of_turn_ids
from .sampling import PolicySampler
from .schedule import beta_schedule
from .tasks import CalcToolTask, SortTask, make_task
from .tiny import build_tiny_causal_lm
from .vocab import IdMap

__all__ = ["LearningConfig", "Setup", "run_learning", "setup_task", "summarize"]

VARIANTS = ("grpo", "critic")


@dataclass(frozen=True)
class LearningConfig:
    """Settings of :func:`run_learning` (defaults: the benchmark's minutes-scale run)."""

    task: str = "sort"
    seeds: tuple[int, ...] = (0, 1)
    variants: tuple[str, ...] = VARIANTS
    sft_steps: int = 12
    sft_batch: int = 16
    sft_lr: float = 3e-3
    rl_steps: int = 60
    prompts_per_step: int = 8
    group_size: int = 4
    lr: float = 5e-4
    inner_steps: int = 2
    hidden_size: int = 64
    num_layers: int = 2
    temperature: float = 1.0
    threshold: float = 0.8
    on_forged: str = "mask"
    loss: RLVRLossConfig = field(default_factory=lambda: RLVRLossConfig(kl_chunk_size=256))
    critic: CriticConfig | None = None

    def critic_config(self) -> CriticConfig:
        """The critic variant's settings: the method's schedule scaled to ``rl_steps``
        (V frozen for the first 1/6 of the run, KL-to-baseline until 1/2; Q every 2
        steps, V every 4), 4 optimizer steps per critic update, advantages not whitened
        (whitening turned the critic's small, noisy advantages into unit-size updates and
        the toy run collapsed)."""
        if self.critic is not None:
            return self.critic
        return CriticConfig(
            advantage="q_minus_v",
            v_warmup_steps=max(1, self.rl_steps // 6),
            v_kl_until=max(1, self.rl_steps // 2),
            whiten=False,
            critic_epochs=4,
            lr=3e-3,
        )

    def beta(self) -> Callable[[int], float]:
        """The article's beta schedule with its step counts scaled to ``rl_steps``."""
        n = max(self.rl_steps, 4)
        return beta_schedule("method", hold_steps=n // 4, decay_end=(3 * n) // 4,
                             period=max(n // 2, 1))


@dataclass
class Setup:
    """The encoder, the task, the id map and the sampler's stop ids."""

    encoder: lvt.ChatEncoder
    task: SortTask | CalcToolTask
    id_map: IdMap
    stop_ids: tuple[int, ...]


def setup_task(name: str, tokenizer: Any = None, format: str = "llama3") -> Setup:
    """Encoder (Llama-3 tokenizer from :mod:`lvt.zoo`, ``llama3`` format by default), task,
    the id map over every id of lvt's renders of the task's demonstrations and of the texts
    its environment can return (``tokenizer`` is a ``tokenizers.Tokenizer``), and the stop
    ids (the end of turn, and for tool tasks the control token that closes a call, if the
    format has one, e.g. Llama-3's ``<|eom_id|>``)."""
    if tokenizer is None:
        from lvt import zoo

        tokenizer = zoo.load_tokenizer("llama3")
    encoder = lvt.ChatEncoder.from_tokenizer(tokenizer, format=format)
    task = make_task(name, encoder)
    demos = [task.demonstration(p) for p in task.every_problem()]
    encs = encoder.encode_batch(demos)
    env = [tokenizer.encode(t, add_special_tokens=False).ids for t in task.environment_texts()]
    id_map = IdMap.from_sequences([*(e.ids for e in encs), *env])
    eot = end_of_turn_ids(encoder, task.every_problem()[0].prompt)
    stops = {eot[0]}
    if task.multi_turn:  # a control token closing the tool call just before its footer
        e = encs[0]
        owned = np.nonzero(e.owner == 1)[0]
        closer = int(e.ids[owned[-1] - len(eot)])
        if _refusal(encoder, closer) is not None:  # lvt refuses it as text: a control id
            stops.add(closer)
    return Setup(encoder, task, id_map, tuple(sorted(stops)))


def _sft(model: nn.Module, st: Setup, cfg: LearningConfig, rng: random.Random) -> list[float]:
    """Teacher-forced steps on lvt's render of demonstrations (loss on lvt's mask)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.sft_lr, weight_decay=0.0)
    losses = []
    for _ in range(cfg.sft_steps):
        demos = [st.task.demonstration(st.task.sample(rng)) for _ in range(cfg.sft_batch)]
        encs = st.encoder.encode_batch(demos)
        width = max(len(e) for e in encs)
        ids = torch.zeros((len(encs), width), dtype=torch.long)
        am = torch.zeros_like(ids)
        mask = torch.zeros((len(encs), width))
        for i, e in enumerate(encs):
            ids[i, : len(e)] = st.id_map.to_model(e.ids)
            am[i, : len(e)] = 1
            mask[i, : len(e)] = torch.from_numpy(e.mask.astype(np.float32))
        lp, _ = causal_lm_logprobs(model, ids, am)
        loss = -(lp * mask).sum() / mask.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def _reward_of(st: Setup, problems: Sequence[Any], group: int) -> Callable[[int, Any], float]:
    return lambda i, ep: st.task.reward(problems[i // group], ep)


def _rl(
    model: nn.Module, variant: str, seed: int, st: Setup, cfg: LearningConfig,
    log: Callable[[str], None] | None,
) -> list[dict[str, float]]:
    """The RL phase of one variant from ``model`` (modified in place)."""
    reference = copy.deepcopy(model).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    ccfg = (CriticConfig(advantage="grpo", group_size=cfg.group_size) if variant == "grpo"
            else cfg.critic_config())
    critic = TokenCritic(ccfg, hidden_size=cfg.hidden_size, vocab_size=st.id_map.size,
                         seed=seed)
    gen = torch.Generator().manual_seed(10_000 + seed)
    sampler = PolicySampler(model, stop_ids=st.stop_ids, id_map=st.id_map,
                            max_new_tokens=st.task.max_new_tokens,
                            temperature=cfg.temperature, generator=gen)
    rng = random.Random(20_000 + seed)
    beta_fn = cfg.beta()
    gate = FixedGate(1.0)
    history: list[dict[str, float]] = []
    for step in range(cfg.rl_steps):
        t0 = time.perf_counter()
        problems = [st.task.sample(rng) for _ in range(cfg.prompts_per_step)]
        prompts = [p.prompt for p in problems for _ in range(cfg.group_size)]
        episodes = run_episodes(
            st.encoder, prompts, sampler, tools={"calc": calculator},
            reward_fn=_reward_of(st, problems, cfg.group_size),
            max_turns=st.task.max_turns,
        )
        batch = build_batch(st.encoder, [e.trajectory for e in episodes], id_map=st.id_map,
                            on_forged=cfg.on_forged)  # type: ignore[arg-type]
        old_lp, _, hidden = causal_lm_forward(model, batch.input_ids, batch.attention_mask,
                                              chunk_size=cfg.loss.kl_chunk_size)
        batch.old_logp = old_lp
        credit = critic.assign(batch, hidden)
        batch.advantages = credit.advantages
        beta = beta_fn(step)
        inner = [grpo_train_step(model, reference, opt, batch, config=cfg.loss, beta=beta,
                                 gate=gate) for _ in range(cfg.inner_steps)]
        m = inner[-1]
        assert batch.rewards is not None
        row = {
            "step": float(step),
            "reward_mean": float(batch.rewards.mean()),
            "kl_mean": inner[0]["kl_mean"],
            "clip_frac": m["clip_frac"],
            "entropy_mean": inner[0]["entropy_mean"],
            "beta": beta,
            "loss": m["loss"],
            "grad_norm": m.get("grad_norm", math.nan),
            "forged_frac": float(batch.forged.float().mean()) if batch.forged is not None else 0.0,
            "truncated_frac": float(batch.truncated.float().mean())
            if batch.truncated is not None else 0.0,
            "tool_calls": float(sum(len(e.tool_calls) for e in episodes)) / len(episodes),
            "seconds": time.perf_counter() - t0,
            **{k: v for k, v in credit.metrics.items()},
        }
        history.append(row)
        if log is not None:
            log(f"{st.task.name} {variant:6s} seed {seed} step {step:3d} "
                f"reward {row['reward_mean']:.3f} kl {row['kl_mean']:.4f} "
                f"clip {row['clip_frac']:.3f} entropy {row['entropy_mean']:.3f} "
                f"beta {beta:.4f} ({row['seconds']:.2f}s)")
    return history


def run_learning(
    cfg: LearningConfig, *, log: Callable[[str], None] | None = print, setup: Setup | None = None
) -> dict[str, dict[int, list[dict[str, float]]]]:
    """Supervised warm start per seed, then every variant of ``cfg.variants`` from a copy of
    it on the same problems and sampling seed; returns ``{variant: {seed: history}}``."""
    st = setup if setup is not None else setup_task(cfg.task)
    out: dict[str, dict[int, list[dict[str, float]]]] = {v: {} for v in cfg.variants}
    for seed in cfg.seeds:
        torch.manual_seed(seed)
        base = build_tiny_causal_lm(st.id_map.size, seed=seed, device="cpu",
                                    hidden_size=cfg.hidden_size, num_layers=cfg.num_layers,
                                    intermediate_size=2 * cfg.hidden_size)
        sft = _sft(base, st, cfg, random.Random(seed))
        if log is not None:
            log(f"{st.task.name} seed {seed}: {cfg.sft_steps} supervised steps, loss "
                f"{sft[0]:.3f} -> {sft[-1]:.3f}" if sft else f"seed {seed}: no SFT")
        for variant in cfg.variants:
            torch.manual_seed(seed)
            out[variant][seed] = _rl(copy.deepcopy(base), variant, seed, st, cfg, log)
    return out


def _steps_to(curve: Sequence[float], threshold: float, window: int) -> int | None:
    for i in range(len(curve)):
        lo = max(0, i - window + 1)
        if i + 1 >= window and sum(curve[lo : i + 1]) / (i + 1 - lo) >= threshold:
            return i
    return None


def summarize(
    results: dict[str, dict[int, list[dict[str, float]]]], *, threshold: float,
    last: int = 10, window: int = 5,
) -> dict[str, dict[str, Any]]:
    """Per variant: mean reward over the last ``last`` steps (mean and per seed), the first
    step whose ``window``-step moving average reaches ``threshold`` (per seed, ``None`` if
    never), and the mean KL / clip fraction / entropy over the run."""
    out: dict[str, dict[str, Any]] = {}
    for variant, per_seed in results.items():
        finals, steps = [], []
        kl, clip, ent = [], [], []
        for hist in per_seed.values():
            r = [h["reward_mean"] for h in hist]
            finals.append(float(np.mean(r[-last:])))
            steps.append(_steps_to(r, threshold, window))
            kl.append(float(np.mean([h["kl_mean"] for h in hist])))
            clip.append(float(np.mean([h["clip_frac"] for h in hist])))
            ent.append(float(np.mean([h["entropy_mean"] for h in hist])))
        out[variant] = {
            "final_reward": float(np.mean(finals)), "final_reward_per_seed": finals,
            "steps_to_threshold": steps, "kl_mean": float(np.mean(kl)),
            "clip_frac": float(np.mean(clip)), "entropy_mean": float(np.mean(ent)),
        }
    return out


def with_overrides(cfg: LearningConfig, **kw: Any) -> LearningConfig:
    """``dataclasses.replace`` for the CLI."""
    return replace(cfg, **kw)
