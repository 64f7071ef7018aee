"""Schedules for the KL coefficient beta and the reference-smoothing epsilon.

A schedule is any callable ``step -> float`` (``step`` counts optimizer steps from 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ConstantBeta",
    "LinearDecay",
    "Schedule",
    "WarmupDecayPerturbBeta",
]


class Schedule(Protocol):
    """A value as a function of the optimizer step."""

    def __call__(self, step: int) -> float: ...


@dataclass(frozen=True)
class ConstantBeta:
    """``beta(step) = beta`` for every step."""

    beta: float = 0.01

    def __call__(self, step: int) -> float:
        return float(self.beta)


@dataclass(frozen=True)
class WarmupDecayPerturbBeta:
    """Linear warm-up, then linear decay, then a small periodic perturbation.

    * ``0 <= step < warmup_steps``: linear from ``beta_start`` to ``beta_max``;
    * next ``decay_steps`` steps: linear from ``beta_max`` down to ``beta_min``;
    * afterwards: ``beta_min * (1 + perturb * sin(2 pi k / period))`` with ``k`` the steps
      since the end of the decay (``perturb`` is relative, e.g. 0.1 for +-10%).

    The value is never negative.
    """

    beta_max: float = 0.05
    beta_min: float = 0.005
    warmup_steps: int = 50
    decay_steps: int = 500
    perturb: float = 0.1
    period: int = 100
    beta_start: float = 0.0

    def __post_init__(self) -> None:
        if self.warmup_steps < 0 or self.decay_steps < 0 or self.period <= 0:
            raise ValueError("warmup_steps/decay_steps must be >= 0 and period > 0")
        if self.beta_min < 0 or self.beta_max < 0 or not 0 <= self.perturb <= 1:
            raise ValueError("betas must be >= 0 and perturb in [0, 1]")

    def __call__(self, step: int) -> float:
        step = max(int(step), 0)
        if step < self.warmup_steps:
            frac = step / self.warmup_steps
            return self.beta_start + (self.beta_max - self.beta_start) * frac
        k = step - self.warmup_steps
        if k < self.decay_steps:
            frac = k / self.decay_steps
            return self.beta_max + (self.beta_min - self.beta_max) * frac
        k -= self.decay_steps
        return max(
            0.0, self.beta_min * (1.0 + self.perturb * math.sin(2 * math.pi * k / self.period))
        )


@dataclass(frozen=True)
class LinearDecay:
    """Linear from ``start`` to ``end`` over ``steps`` steps, then constant ``end``.

    Used for the reference-smoothing ``eps`` (e.g. ``LinearDecay(1e-3, 0.0, 200)``).
    """

    start: float = 1e-3
    end: float = 0.0
    steps: int = 200

    def __call__(self, step: int) -> float:
        if self.steps <= 0 or step >= self.steps:
            return float(self.end)
        step = max(int(step), 0)
        return self.start + (self.end - self.start) * step / self.steps
