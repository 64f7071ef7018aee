"""Token-level credit assignment: a critic giving ``A_t = Q(s_t, a_t) - V(s_t)`` per token.

:class:`TokenCritic` turns a batch of rollouts (rewards, learned-token mask, and either the
policy's hidden states or the ids for a separate small critic model) into per-token
advantages in the ``input_ids`` layout, and trains its value functions on the way. Modes
(``CriticConfig.advantage``):

* ``"q_minus_v"`` (the method): ``A_t = Q(s_t, a_t) - V(s_t)``. The Q head reads the
  hidden state *at* token ``t`` (it has seen ``a_t``), the V head the hidden state before
  it. ``Q(s_t, a_t)`` in the advantage is the lambda-return of the rollout's rewards
  bootstrapped by the Q head, ``Q_t = r_t + gamma ((1 - lam) Q(s_{t+1}, a_{t+1}) + lam
  Q_{t+1})`` (``q_estimate="return"``, GAE(gamma, lam) with Q in place of V), or the Q
  head itself (``q_estimate="head"``); both heads regress ``Q_t``.
* ``"gae"``: ``A_t = A^GAE_t`` with ``V`` (PPO-style); both heads regress
  ``A^GAE_t + V(s_t)``.
* ``"grpo"``: no critic; group-normalised sequence rewards on every learned token.

The method's schedule (all step counts configurable, defaults are the article's):

* warm-up: for the first ``v_warmup_steps`` (500) steps ``V`` is frozen and replaced by a
  moving-average reward-to-go baseline ``b`` (:class:`~lvt_trainer.advantages.
  MovingAverageBaseline`); ``Q`` is trained from step 0;
* then ``V`` is trained with a KL-to-baseline term until ``v_kl_until`` (2000): reading
  ``V`` as the mean of a unit-variance Gaussian, ``KL(N(V, 1) || N(b, 1)) = (V - b)^2 / 2``,
  weighted by ``v_kl_coef``; at the switch ``V``'s output bias is re-centred on the
  baseline (``v_warm_start``) so the advantages do not jump;
* delayed updates: ``Q`` is updated every ``q_every`` (2) steps and ``V`` every
  ``v_every`` (4) steps, each time on the data of the steps since its previous update
  (``critic_epochs`` optimizer steps), and the advantages of a step always come from the
  ``Q``/``V`` *before* that step's update (the previous ``Q``/``V``).

:class:`CriticSchedule` answers the schedule questions step by step.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor, nn

from .advantages import MovingAverageBaseline, gae, masked_whiten, place_rewards, reward_to_go
from .errors import TrainerConfigError, check_range
from .grpo import RolloutBatch, group_advantages

__all__ = [
    "AdvantageMode",
    "CreditResult",
    "CriticConfig",
    "CriticSchedule",
    "TokenCritic",
    "ValueHead",
    "ValueModel",
    "grpo_token_advantages",
]

AdvantageMode = Literal["q_minus_v", "gae", "grpo"]
CriticSource = Literal["policy_hidden", "separate"]


@dataclass(frozen=True)
class CriticConfig:
    """Settings of :class:`TokenCritic` (defaults: the article's numbers).

    Attributes:
        advantage: ``"q_minus_v"``, ``"gae"`` or ``"grpo"`` (see the module docstring).
        source: ``"policy_hidden"`` (value heads on the policy's detached final hidden
            states) or ``"separate"`` (each value function has its own small causal trunk
            over the token ids).
        gamma, lam: GAE discount and lambda.
        v_warmup_steps: steps during which ``V`` is frozen and the baseline stands in.
        v_kl_until: ``V`` is regularised towards the baseline while
            ``v_warmup_steps <= step < v_kl_until``.
        v_kl_coef: weight of that KL term.
        q_every, v_every: optimizer-step cadence of ``Q`` and ``V``.
        baseline_decay: EMA decay of the warm-up baseline.
        whiten: normalise the advantages over the batch's learned tokens (not for grpo).
        group_size: rollouts per prompt for ``"grpo"``.
        head_width: hidden width of the value heads; lr / max_grad_norm: their optimizer.
        v_warm_start: re-centre ``V`` on the baseline when it starts training.
        bootstrap_truncated: bootstrap a truncated rollout's return with the value of the
            state where it was cut (time-limit truncation, the episode would go on). Off by
            default: a verifiable reward scores the truncated answer as final (usually 0),
            and bootstrapping it with ``V`` teaches the policy that not stopping is worth
            ``V`` (measured here: the toy run collapses into never ending its turn).
        q_warmup_steps: for ``"q_minus_v"``, steps during which ``Q``'s own target (the
            lambda-return) stands in for the untrained ``Q`` in the advantage (so
            ``A = A^GAE``); 0 (the article) uses the learned ``Q`` from the first step.
        q_estimate: how ``Q(s_t, a_t)`` enters the advantage in ``"q_minus_v"``:
            ``"return"`` (default), the rollout's rewards bootstrapped by the Q head,
            ``Q_t = r_t + gamma ((1 - lam) Q(s_{t+1}, a_{t+1}) + lam Q_{t+1})`` (so the
            advantage carries this rollout's outcome); ``"head"``, the Q head's own output
            (the pure learned form; it ignores the rollout's reward except through what the
            head has learned, which on a small critic is mostly noise, see the README).
        critic_epochs: optimizer steps per scheduled update, each on all the steps queued
            since the previous update.
        trunk_hidden, trunk_layers: size of the separate trunks (``source="separate"``).
    """

    advantage: AdvantageMode = "q_minus_v"
    source: CriticSource = "policy_hidden"
    gamma: float = 1.0
    lam: float = 0.95
    v_warmup_steps: int = 500
    v_kl_until: int = 2000
    v_kl_coef: float = 1.0
    q_every: int = 2
    v_every: int = 4
    baseline_decay: float = 0.9
    whiten: bool = True
    group_size: int | None = None
    head_width: int = 64
    lr: float = 1e-3
    max_grad_norm: float | None = 1.0
    v_warm_start: bool = True
    bootstrap_truncated: bool = False
    q_warmup_steps: int = 0
    q_estimate: Literal["return", "head"] = "return"
    critic_epochs: int = 1
    trunk_hidden: int = 64
    trunk_layers: int = 1

    def __post_init__(self) -> None:
        if self.advantage not in ("q_minus_v", "gae", "grpo"):
            raise TrainerConfigError(f"unknown advantage mode {self.advantage!r}")
        if self.source not in ("policy_hidden", "separate"):
            raise TrainerConfigError(f"unknown critic source {self.source!r}")
        check_range("gamma", self.gamma, low=0.0, high=1.0)
        check_range("lam", self.lam, low=0.0, high=1.0)
        check_range("v_kl_coef", self.v_kl_coef, low=0.0)
        check_range("baseline_decay", self.baseline_decay, low=0.0, high=1.0, high_open=True)
        check_range("lr", self.lr, low=0.0, low_open=True)
        if not 0 <= self.v_warmup_steps <= self.v_kl_until:
            raise TrainerConfigError("need 0 <= v_warmup_steps <= v_kl_until")
        if self.q_every < 1 or self.v_every < 1 or self.critic_epochs < 1:
            raise TrainerConfigError("q_every, v_every and critic_epochs must be >= 1")
        if self.q_warmup_steps < 0:
            raise TrainerConfigError("q_warmup_steps must be >= 0")
        if self.advantage == "grpo" and (self.group_size is None or self.group_size < 1):
            raise TrainerConfigError("advantage='grpo' needs group_size >= 1")


@dataclass(frozen=True)
class CriticSchedule:
    """Which parts of the critic act at a given (0-based) step."""

    config: CriticConfig

    def v_frozen(self, step: int) -> bool:
        """``V`` is neither used nor trained; the moving-average baseline stands in."""
        return step < self.config.v_warmup_steps

    def v_kl_active(self, step: int) -> bool:
        """``V``'s loss carries the KL-to-baseline term."""
        return self.config.v_warmup_steps <= step < self.config.v_kl_until

    def q_update(self, step: int) -> bool:
        """``Q``'s optimizer steps at the end of this step."""
        return (step + 1) % self.config.q_every == 0

    def v_update(self, step: int) -> bool:
        """``V``'s optimizer steps at the end of this step."""
        return not self.v_frozen(step) and (step + 1) % self.config.v_every == 0

    def phase(self, step: int) -> str:
        """``"warmup"``, ``"kl_to_baseline"`` or ``"free"``."""
        if self.v_frozen(step):
            return "warmup"
        return "kl_to_baseline" if self.v_kl_active(step) else "free"


class ValueHead(nn.Module):
    """``LayerNorm -> Linear -> GELU -> Linear(1)`` per position; the last layer starts at
    zero, so a fresh head predicts exactly 0."""

    def __init__(self, in_features: int, width: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(in_features),
            nn.Linear(in_features, width),
            nn.GELU(),
            nn.Linear(width, 1),
        )
        out = self.net[-1]
        assert isinstance(out, nn.Linear)
        nn.init.zeros_(out.weight)
        nn.init.zeros_(out.bias)

    @property
    def bias(self) -> Tensor:
        """The output bias (shifted by the warm start)."""
        out = self.net[-1]
        assert isinstance(out, nn.Linear)
        return out.bias

    def forward(self, h: Tensor) -> Tensor:
        """``(B, T, H) -> (B, T)`` in fp32."""
        return self.net(h.float()).squeeze(-1)


class ValueModel(nn.Module):
    """A value head on given features (the policy's hidden states) or on its own trunk."""

    def __init__(self, head: ValueHead, trunk: nn.Module | None = None) -> None:
        super().__init__()
        self.head = head
        self.trunk = trunk

    def forward(self, batch: RolloutBatch, hidden: Tensor | None) -> Tensor:
        """Per-position outputs ``(B, T)``: the head at every position's features."""
        if self.trunk is None:
            if hidden is None:
                raise TrainerConfigError("a value head on the policy needs its hidden states")
            return self.head(hidden.detach())
        out = self.trunk(input_ids=batch.input_ids, attention_mask=batch.attention_mask)
        return self.head(out.last_hidden_state)


@dataclass
class CreditResult:
    """What :meth:`TokenCritic.assign` returns (every tensor ``(B, T)``, ``input_ids``
    layout, float32, 0 at unlearned positions)."""

    advantages: Tensor
    returns: Tensor
    values: Tensor
    q_values: Tensor
    metrics: dict[str, float] = field(default_factory=dict)


def grpo_token_advantages(rewards: Tensor, mask: Tensor, group_size: int) -> Tensor:
    """Group-normalised sequence advantages (:func:`lvt_trainer.grpo.group_advantages`) on
    every learned token: ``(B, T)`` float32 in the ``input_ids`` layout."""
    adv = group_advantages(rewards.detach().cpu(), group_size).to(mask.device)
    return torch.where(mask != 0, adv[:, None], torch.zeros((), device=mask.device))


def _masked_mean(x: Tensor, keep: Tensor) -> Tensor:
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    return torch.where(keep, x, zero).sum() / keep.sum().clamp_min(1).to(x.dtype)


class TokenCritic:
    """Per-token advantages and the critic that produces them (see the module docstring).

    Args:
        config: the settings.
        hidden_size: width of the policy's hidden states (``source="policy_hidden"``).
        vocab_size: the model vocabulary (``source="separate"``: the trunks embed ids).
        device: where the value functions live.
        seed: initialisation seed.

    Use: once per RL step, ``result = critic.assign(batch, hidden)`` with ``hidden`` the
    policy's final hidden states of the batch before the policy update
    (:func:`lvt_trainer.grpo.causal_lm_forward`); put ``result.advantages`` into the batch.
    """

    def __init__(
        self,
        config: CriticConfig,
        *,
        hidden_size: int | None = None,
        vocab_size: int | None = None,
        device: torch.device | str = "cpu",
        seed: int = 0,
    ) -> None:
        self.config = config
        self.schedule = CriticSchedule(config)
        self.baseline = MovingAverageBaseline(config.baseline_decay)
        self.step = 0
        self.device = torch.device(device)
        self.q: ValueModel | None = None
        self.v: ValueModel | None = None
        if config.advantage == "grpo":
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.q = self._build(hidden_size, vocab_size)
            self.v = self._build(hidden_size, vocab_size)
        self.q.to(self.device)
        self.v.to(self.device)
        self.q_opt = torch.optim.Adam(self.q.parameters(), lr=config.lr)
        self.v_opt = torch.optim.Adam(self.v.parameters(), lr=config.lr)
        self._queue_q: list[_Item] = []
        self._queue_v: list[_Item] = []

    def _build(self, hidden_size: int | None, vocab_size: int | None) -> ValueModel:
        cfg = self.config
        if cfg.source == "policy_hidden":
            if hidden_size is None:
                raise TrainerConfigError("source='policy_hidden' needs hidden_size")
            return ValueModel(ValueHead(hidden_size, cfg.head_width))
        if vocab_size is None:
            raise TrainerConfigError("source='separate' needs vocab_size")
        from transformers import LlamaModel

        from .tiny import tiny_llama_config

        tcfg = tiny_llama_config(
            vocab_size, hidden_size=cfg.trunk_hidden, num_layers=cfg.trunk_layers,
            intermediate_size=2 * cfg.trunk_hidden,
        )
        return ValueModel(ValueHead(cfg.trunk_hidden, cfg.head_width), LlamaModel(tcfg))

    def snapshot(self) -> TokenCritic:
        """A deep copy (e.g. to check that advantages come from the pre-update critic)."""
        return copy.deepcopy(self)

    def state_dict(self) -> dict[str, Any]:
        """Weights, optimizer states, the baseline and the step counter."""
        out: dict[str, Any] = {"step": self.step, "baseline": copy.deepcopy(self.baseline)}
        if self.q is not None and self.v is not None:
            out |= {"q": self.q.state_dict(), "v": self.v.state_dict(),
                    "q_opt": self.q_opt.state_dict(), "v_opt": self.v_opt.state_dict()}
        return out

    def _outputs(self, batch: RolloutBatch, hidden: Tensor | None) -> tuple[Tensor, Tensor]:
        """``(q, v_all)``: ``q[:, t] = Q(s_t, a_t)`` and ``v_all[:, t] =
        V(s_{t+1})`` (the head on the features at ``t``)."""
        assert self.q is not None and self.v is not None
        return self.q(batch, hidden), self.v(batch, hidden)

    def assign(self, batch: RolloutBatch, hidden: Tensor | None = None) -> CreditResult:
        """Advantages for ``batch`` from the current (pre-update) critic, then the critic's
        own scheduled updates; advances the step counter."""
        cfg = self.config
        step = self.step
        mask = batch.loss_mask
        keep = mask != 0
        dev = mask.device
        if batch.rewards is None:
            raise TrainerConfigError("the batch needs rewards to assign credit")
        rewards = place_rewards(mask, batch.rewards, batch.token_rewards)
        self.baseline.update(reward_to_go(rewards, mask, gamma=cfg.gamma), mask)
        base = self.baseline.values(mask)
        if cfg.advantage == "grpo":
            assert cfg.group_size is not None
            adv = grpo_token_advantages(batch.rewards, mask, cfg.group_size)
            self.step += 1
            zeros = torch.zeros_like(adv)
            return CreditResult(adv, zeros, zeros, zeros, {
                "critic/advantages/mean": float(_masked_mean(adv.double(), keep)),
                "critic/baseline_mean": self.baseline.mean(),
            })
        assert self.v is not None
        frozen = self.schedule.v_frozen(step)
        if not frozen and step == cfg.v_warmup_steps and cfg.v_warm_start:
            self._warm_start_v(batch, hidden, base, keep)
        with torch.no_grad():
            q_out, v_all = self._outputs(batch, hidden)
        v_pred = torch.nn.functional.pad(v_all[:, :-1], (1, 0))  # V(s_t) = head(h_{t-1})
        with torch.no_grad():
            if frozen:
                v_hat = base
                boot = self.baseline.next_value(mask)
            else:
                v_hat = v_pred.detach().double()
                boot = _last_learned(v_all.detach().double(), keep)
            truncated = (
                batch.truncated.to(dev)
                if batch.truncated is not None and cfg.bootstrap_truncated
                else torch.zeros(keep.shape[0], dtype=torch.bool, device=dev)
            )
            boot = torch.where(truncated, boot, torch.zeros_like(boot))
            q_hat = q_out.detach().double()
            use_q = cfg.advantage == "q_minus_v" and step >= cfg.q_warmup_steps
            lam_kw = {"gamma": cfg.gamma, "lam": cfg.lam, "bootstrap": boot}
            if use_q and cfg.q_estimate == "return":
                # Q(s_t, a_t): this rollout's rewards, bootstrapped by the (previous) Q head
                _, returns = gae(rewards, q_hat, mask, **lam_kw)
                raw = torch.where(keep, returns - v_hat, 0.0)
            else:
                a_gae, returns = gae(rewards, v_hat, mask, **lam_kw)
                raw = torch.where(keep, q_hat - v_hat, 0.0) if use_q else a_gae
            adv = masked_whiten(raw, mask) if cfg.whiten else raw
        metrics = self._update(step, batch, hidden, q_out, v_pred, returns, base, keep)
        metrics |= {
            "critic/advantages/mean": float(_masked_mean(raw, keep)),
            "critic/advantages/abs_mean": float(_masked_mean(raw.abs(), keep)),
            "critic/returns/mean": float(_masked_mean(returns, keep)),
            "critic/vpred_mean": float(_masked_mean(v_hat, keep)),
            "critic/qpred_mean": float(_masked_mean(q_hat, keep)),
            "critic/baseline_mean": self.baseline.mean(),
            "critic/phase": float(("warmup", "kl_to_baseline", "free").index(
                self.schedule.phase(step))),
        }
        self.step += 1
        f32 = torch.float32
        zero = torch.zeros((), dtype=f32, device=dev)
        return CreditResult(
            torch.where(keep, adv.to(f32), zero),
            torch.where(keep, returns.to(f32), zero),
            torch.where(keep, v_hat.to(f32), zero),
            torch.where(keep, q_hat.to(f32), zero),
            metrics,
        )

    @torch.no_grad()
    def _warm_start_v(
        self, batch: RolloutBatch, hidden: Tensor | None, base: Tensor, keep: Tensor
    ) -> None:
        """Shift ``V``'s output bias so its mean on this batch equals the baseline's."""
        assert self.v is not None
        v_all = self.v(batch, hidden)
        v_pred = torch.nn.functional.pad(v_all[:, :-1], (1, 0)).double()
        shift = _masked_mean(base - v_pred, keep)
        self.v.head.bias.add_(shift.to(self.v.head.bias.dtype))

    def _update(
        self,
        step: int,
        batch: RolloutBatch,
        hidden: Tensor | None,
        q_out: Tensor,
        v_pred: Tensor,
        returns: Tensor,
        base: Tensor,
        keep: Tensor,
    ) -> dict[str, float]:
        """Queue this step's regression data; fit ``Q`` / ``V`` on the queued steps when the
        schedule says so (``critic_epochs`` optimizer steps), then clear their queue."""
        assert self.q is not None and self.v is not None
        target = returns.float().detach()
        item = _Item(batch, None if hidden is None else hidden.detach(), target,
                     base.float().detach(), keep, self.schedule.v_kl_active(step))
        metrics = {"critic/qf_loss": float(_masked_mean(0.5 * (q_out.detach() - target) ** 2,
                                                        keep)),
                   "critic/q_updated": 0.0, "critic/v_updated": 0.0, "critic/vf_loss": 0.0,
                   "critic/v_kl": 0.0}
        self._queue_q.append(item)
        if self.schedule.q_update(step):
            self._fit(self.q, self.q_opt, self._queue_q, value=False)
            self._queue_q = []
            metrics["critic/q_updated"] = 1.0
        if not self.schedule.v_frozen(step):
            vd = v_pred.detach()
            metrics["critic/vf_loss"] = float(_masked_mean(0.5 * (vd - target) ** 2, keep))
            if item.kl:
                metrics["critic/v_kl"] = float(_masked_mean(0.5 * (vd - item.base) ** 2, keep))
            self._queue_v.append(item)
            if self.schedule.v_update(step):
                self._fit(self.v, self.v_opt, self._queue_v, value=True)
                self._queue_v = []
                metrics["critic/v_updated"] = 1.0
        return metrics

    def _fit(
        self, model: ValueModel, opt: torch.optim.Optimizer, items: list[_Item], value: bool
    ) -> None:
        """``critic_epochs`` optimizer steps on the mean loss of the queued steps: squared
        error to the lambda-returns, plus the KL-to-baseline term for ``V`` where active."""
        cfg = self.config
        for _ in range(cfg.critic_epochs):
            opt.zero_grad(set_to_none=True)
            losses = []
            for it in items:
                out = model(it.batch, it.hidden)
                pred = torch.nn.functional.pad(out[:, :-1], (1, 0)) if value else out
                loss = _masked_mean(0.5 * (pred - it.target) ** 2, it.keep)
                if value and it.kl:
                    loss = loss + cfg.v_kl_coef * _masked_mean(0.5 * (pred - it.base) ** 2,
                                                               it.keep)
                losses.append(loss)
            (torch.stack(losses).sum() / len(losses)).backward()
            if cfg.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
        opt.zero_grad(set_to_none=True)


@dataclass
class _Item:
    """One step's critic regression data, queued until the next scheduled update."""

    batch: RolloutBatch
    hidden: Tensor | None
    target: Tensor
    base: Tensor
    keep: Tensor
    kl: bool


def _last_learned(x: Tensor, keep: Tensor) -> Tensor:
    """``(B,)``: ``x`` at the last learned position of each row (0 for empty rows)."""
    bsz, seq = keep.shape
    pos = torch.arange(seq, device=keep.device).expand(bsz, seq)
    last = torch.where(keep, pos, torch.full_like(pos, -1)).max(dim=1).values
    picked = x.gather(1, last.clamp_min(0)[:, None]).squeeze(1)
    return torch.where(last >= 0, picked, torch.zeros_like(picked))
