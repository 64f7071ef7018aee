"""Schedules for the KL coefficient beta and the reference-smoothing epsilon.

A schedule is any callable ``step -> float`` (``step`` counts optimizer steps from 0).
:func:`beta_schedule` builds one by name; ``"method"`` is the article's beta schedule
(:class:`MethodBeta`): 0.05 up to step 500, linear down to 0.01 at step 1500, then
``0.005 + 0.005 * sin(2 pi step / 1000)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import TrainerConfigError

__all__ = [
    "BETA_SCHEDULES",
    "ConstantBeta",
    "LinearDecay",
    "MethodBeta",
    "Schedule",
    "WarmupDecayPerturbBeta",
    "beta_schedule",
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
            raise TrainerConfigError("warmup_steps/decay_steps must be >= 0 and period > 0")
        if self.beta_min < 0 or self.beta_max < 0 or not 0 <= self.perturb <= 1:
            raise TrainerConfigError("betas must be >= 0 and perturb in [0, 1]")

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


@dataclass(frozen=True)
class MethodBeta:
    """The article's beta schedule (all numbers configurable, defaults are the article's):

    * ``step < hold_steps`` (500): ``beta_start`` (0.05);
    * ``hold_steps <= step < decay_end`` (1500): linear from ``beta_start`` to
      ``beta_end`` (0.01), reaching it at ``decay_end``;
    * ``step >= decay_end``: ``offset + amplitude * sin(2 pi step / period)`` with
      ``offset = amplitude = 0.005`` and ``period = 1000`` (so in ``[0, 0.01]``).

    The article's formula is kept as written: at ``decay_end`` the value drops from
    ``beta_end`` (0.01) to ``offset + amplitude * sin(2 pi decay_end / period)`` (0.005 for
    the defaults), a step down, not a continuous join.
    """

    beta_start: float = 0.05
    beta_end: float = 0.01
    hold_steps: int = 500
    decay_end: int = 1500
    offset: float = 0.005
    amplitude: float = 0.005
    period: int = 1000

    def __post_init__(self) -> None:
        if not 0 <= self.hold_steps <= self.decay_end or self.period <= 0:
            raise TrainerConfigError("need 0 <= hold_steps <= decay_end and period > 0")
        if min(self.beta_start, self.beta_end, self.offset - abs(self.amplitude)) < 0:
            raise TrainerConfigError("every beta of the schedule must be >= 0")

    def __call__(self, step: int) -> float:
        step = max(int(step), 0)
        if step < self.hold_steps:
            return float(self.beta_start)
        if step < self.decay_end:
            frac = (step - self.hold_steps) / (self.decay_end - self.hold_steps)
            return self.beta_start + (self.beta_end - self.beta_start) * frac
        return self.offset + self.amplitude * math.sin(2 * math.pi * step / self.period)


#: Beta schedules by name (:func:`beta_schedule`).
BETA_SCHEDULES: dict[str, type] = {
    "method": MethodBeta,
    "constant": ConstantBeta,
    "warmup-decay-perturb": WarmupDecayPerturbBeta,
    "linear": LinearDecay,
}


def beta_schedule(name: str, **overrides: Any) -> Schedule:
    """A beta schedule by name (``"method"``, ``"constant"``, ``"warmup-decay-perturb"``,
    ``"linear"``), its parameters overridden by keyword (e.g. scaled-down step counts).

    Raises:
        TrainerConfigError: unknown name or parameter.
    """
    try:
        cls = BETA_SCHEDULES[name]
    except KeyError:
        raise TrainerConfigError(
            f"unknown beta schedule {name!r}; known: {sorted(BETA_SCHEDULES)}"
        ) from None
    try:
        return cls(**overrides)  # type: ignore[no-any-return]
    except TypeError as e:
        raise TrainerConfigError(f"beta schedule {name!r}: {e}") from None
