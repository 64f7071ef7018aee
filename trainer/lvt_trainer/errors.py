"""Typed errors of ``lvt_trainer`` and the input checks that raise them.

Every error derives from :class:`TrainerError` and from the builtin a caller would catch
(``ValueError``; ``FloatingPointError`` too for non-finite inputs), so ``except ValueError``
keeps working:

* :class:`TrainerValueError`: a tensor value or a per-call hyperparameter out of its range
  (a loss mask holding something other than 0/1, an advantage beyond
  ``max_abs_advantage``, ``ref_smoothing=1``); the message names the argument, the expected
  range, the value and its position.
* :class:`TrainerConfigError` (a :class:`TrainerValueError`): a setting out of range
  (``proximal_cap=-1`` would flip the sign of the loss, ``ppo_eps_low=1.5`` would allow
  negative ratios, unknown mode names).
* :class:`TrainerShapeError`: a tensor of the wrong shape; the message names the argument,
  the expected layout and both shapes.
* :class:`TrainerDtypeError` (a ``TypeError``): a tensor of the wrong dtype (float
  targets, an integer ``logp_new``, a complex mask); the message names the argument, the
  expected and the actual dtype.
* :class:`NonFiniteInputError` (a :class:`TrainerValueError`): NaN or inf where the loss
  reads a value (unmasked positions); masked positions may hold anything.
* :class:`ForgedTokenError`: a sampled rollout contains a control (reserved) id of the chat
  format, which ``lvt`` refuses as a token payload (see :mod:`lvt_trainer.lvt_batch`).
* :class:`PrefixViolationError`: a new prompt does not extend the previous render (the
  run-time form of the extension theorem, see :mod:`lvt_trainer.agent`).
* :class:`RenderMismatchError`: lvt's training render does not contain the sampled tokens
  where the model produced them (the ``prompt_prefix`` property, checked at run time).
* :class:`CompletionParseError`: sampled tokens are not one assistant message of the
  format (see :func:`lvt_trainer.agent.parse_completion`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "CompletionParseError",
    "ForgedTokenError",
    "NonFiniteInputError",
    "PrefixViolationError",
    "RenderMismatchError",
    "TrainerConfigError",
    "TrainerDtypeError",
    "TrainerError",
    "TrainerShapeError",
    "TrainerValueError",
    "check_finite",
    "check_range",
    "check_shape",
]


class TrainerError(Exception):
    """Base class of every error raised by ``lvt_trainer``."""


class TrainerValueError(TrainerError, ValueError):
    """A tensor value or a hyperparameter out of its documented range (the message names
    the argument, the expected range, the value and where it is)."""


class TrainerConfigError(TrainerValueError):
    """A configuration value out of its range, or an unknown mode name."""


class TrainerShapeError(TrainerError, ValueError):
    """A tensor argument has the wrong shape (the message names both shapes)."""


class TrainerDtypeError(TrainerError, TypeError):
    """A tensor argument has the wrong dtype (the message names both dtypes)."""


class NonFiniteInputError(TrainerValueError, FloatingPointError):
    """NaN or inf at a position the loss reads (an unmasked token)."""


class ForgedTokenError(TrainerError, ValueError):
    """A rollout's sampled tokens contain a control id of the chat format.

    Attributes:
        rollout_index: index of the rollout in the batch being built.
        token_id: the offending id; ``position`` its index in the sampled tokens.
    """

    def __init__(self, rollout_index: int, token_id: int, position: int, reason: str) -> None:
        self.rollout_index = rollout_index
        self.token_id = token_id
        self.position = position
        super().__init__(
            f"rollout {rollout_index}: sampled token {position} is the control id {token_id} "
            f"({reason}); lvt refuses it as a token payload (use on_forged='mask' to keep the "
            "rollout with no loss tokens)"
        )


class PrefixViolationError(TrainerError, AssertionError):
    """A prompt does not start with the previous render (prefix stability violated).

    Attributes:
        position: first index where the two token sequences differ.
    """

    def __init__(self, turn: int, position: int, expected: int | None, got: int | None) -> None:
        self.turn = turn
        self.position = position
        super().__init__(
            f"turn {turn}: the new prompt does not extend the previous render: first "
            f"difference at token {position} (previous render has {expected}, new prompt has "
            f"{got}); the rollout would be trained on a sequence the model never saw"
        )


class RenderMismatchError(TrainerError, AssertionError):
    """The training render does not hold the sampled tokens where they were sampled."""


class CompletionParseError(TrainerError, ValueError):
    """Sampled tokens that do not parse as exactly one assistant message of the format."""


def check_range(
    name: str,
    value: float | int | None,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
) -> None:
    """Raise :class:`TrainerConfigError` unless ``low <= value <= high`` (open ends
    exclusive) and ``value`` is finite."""
    if value is None:
        if allow_none:
            return
        raise TrainerConfigError(f"{name} must be set")
    v = float(value)
    if not math.isfinite(v):
        raise TrainerConfigError(f"{name} must be finite, got {value!r}")
    if low is not None and (v <= low if low_open else v < low):
        op = ">" if low_open else ">="
        raise TrainerConfigError(f"{name} must be {op} {low}, got {value!r}")
    if high is not None and (v >= high if high_open else v > high):
        op = "<" if high_open else "<="
        raise TrainerConfigError(f"{name} must be {op} {high}, got {value!r}")


def check_shape(
    name: str, x: Tensor | None, allowed: Sequence[tuple[int, ...]], layout: str
) -> None:
    """Raise :class:`TrainerShapeError` unless ``x`` is ``None`` or has one of ``allowed``."""
    if x is None:
        return
    shape = tuple(x.shape)
    if shape not in [tuple(a) for a in allowed]:
        want = " or ".join(str(tuple(a)) for a in allowed)
        raise TrainerShapeError(f"{name}: expected {layout} = {want}, got {shape}")


def check_finite(name: str, x: Tensor | None, keep: Tensor | None = None) -> None:
    """Raise :class:`NonFiniteInputError` if ``x`` is NaN/inf where ``keep`` is true
    (everywhere when ``keep`` is ``None``). One device sync per call."""
    if x is None or not x.is_floating_point():
        return
    x = x.detach()
    bad = ~torch.isfinite(x)
    if keep is not None:
        bad &= keep.to(device=x.device, dtype=torch.bool)
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0].tolist())
        where = "an unmasked position" if keep is not None else "position"
        raise NonFiniteInputError(
            f"{name} is {float(x[idx])} at {where} {idx}; the loss needs finite values wherever "
            "the loss mask is 1"
        )
