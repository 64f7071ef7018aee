"""Cheap tensor checks of the loss entry points: dtypes, logits layouts, 0/1 masks, bounds.

Dtype and layout checks read only metadata (no device sync). Value checks reduce each tensor
to one boolean on the device and synchronise once per tensor; only when that boolean says
something is wrong is the first offending position looked up to build the message. Every
error names the argument, what was expected and what was given (see
:mod:`lvt_trainer.errors` for the types).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .errors import (
    NonFiniteInputError,
    TrainerDtypeError,
    TrainerShapeError,
    TrainerValueError,
    check_range,
)

__all__ = [
    "check_bounded",
    "check_float",
    "check_index",
    "check_logits_layout",
    "check_mask",
    "check_numeric",
    "check_smoothing",
]


def _first(bad: Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in bad.nonzero()[0].tolist())


def check_float(name: str, x: Tensor | None) -> None:
    """Raise :class:`TrainerDtypeError` unless ``x`` is ``None`` or a real floating tensor."""
    if x is None:
        return
    if not isinstance(x, Tensor):
        raise TrainerDtypeError(f"{name}: expected a floating-point tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TrainerDtypeError(
            f"{name}: expected a floating-point dtype (float16/bfloat16/float32/float64), "
            f"got {x.dtype}"
        )


def check_numeric(name: str, x: Tensor) -> None:
    """Raise :class:`TrainerDtypeError` unless ``x`` is a real float or integer tensor
    (not bool, not complex)."""
    if not isinstance(x, Tensor):
        raise TrainerDtypeError(f"{name}: expected a tensor, got {type(x).__name__}")
    if x.dtype == torch.bool or x.is_complex():
        raise TrainerDtypeError(f"{name}: expected a real float or integer dtype, got {x.dtype}")


def check_index(name: str, x: Tensor) -> None:
    """Raise :class:`TrainerDtypeError` unless ``x`` holds integer token ids."""
    if not isinstance(x, Tensor):
        raise TrainerDtypeError(f"{name}: expected an integer tensor, got {type(x).__name__}")
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TrainerDtypeError(
            f"{name}: expected integer token ids (torch.int64 or another integer dtype), "
            f"got {x.dtype}"
        )


def check_mask(name: str, mask: Tensor, validate: bool = True) -> None:
    """``mask`` is bool, or a real tensor holding only 0 and 1 (values checked when
    ``validate``; one device sync). Raises :class:`TrainerDtypeError` or
    :class:`TrainerValueError` naming the first other value and its position."""
    if not isinstance(mask, Tensor) or mask.is_complex():
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TrainerDtypeError(f"{name}: expected a bool or 0/1 tensor, got {got}")
    if mask.dtype == torch.bool or not validate:
        return
    bad = (mask != 0) & (mask != 1)
    if bool(bad.any()):
        idx = _first(bad)
        raise TrainerValueError(
            f"{name}: expected 0/1 values (or a bool tensor), got {mask[idx].item()!r} at "
            f"position {idx}; a weighted mask is not a loss mask"
        )


def check_bounded(
    name: str, x: Tensor, bound: float, keep: Tensor | None, setting: str
) -> None:
    """Raise unless ``|x| <= bound`` wherever ``keep`` (everywhere when ``None``): NaN/inf
    give :class:`NonFiniteInputError`, a finite value beyond the bound
    :class:`TrainerValueError` naming ``setting`` (the knob that moves the bound). One
    device sync."""
    xd = x.detach()
    bad = ~(xd.abs() <= bound)  # NaN compares false, so it is caught here too
    if keep is not None:
        bad &= keep.to(device=xd.device, dtype=torch.bool)
    if not bool(bad.any()):
        return
    idx = _first(bad)
    value = xd[idx].item()
    where = "an unmasked position" if keep is not None else "position"
    if not math.isfinite(float(value)):
        raise NonFiniteInputError(
            f"{name} is {value} at {where} {idx}; the loss needs finite values wherever the "
            "loss mask is 1"
        )
    raise TrainerValueError(
        f"{name}: expected |value| <= {bound:g} ({setting}), got {value:g} at {where} {idx}; "
        "beyond the bound the loss can overflow to inf"
    )


def check_smoothing(name: str, eps: float) -> None:
    """``0 <= eps < 1`` (the reference smoothing); :class:`TrainerConfigError` otherwise."""
    check_range(name, eps, low=0.0, high=1.0, high_open=True)


def check_logits_layout(
    policy: Tensor,
    targets: Tensor | None,
    ref: Tensor | None,
    weight: Tensor | None,
    ref_weight: Tensor | None,
) -> int:
    """Dtypes and shapes of a logits (or hidden states + LM head) call; returns the vocab size.

    ``policy`` is ``(B, T, V)`` logits or ``(B, T, H)`` hidden states with ``weight``
    ``(V, H)``; ``targets`` ``(B, T)`` integer ids; ``ref`` ``(B, T, V)`` logits or
    ``(B, T, H')`` hidden states with ``ref_weight`` ``(V, H')``: the same positions and the
    same vocabulary as the policy. Metadata only (no device sync).
    """
    check_float("logits", policy)
    check_float("weight", weight)
    check_float("ref_logits", ref)
    check_float("ref_weight", ref_weight)
    if policy.dim() != 3:
        raise TrainerShapeError(
            f"logits: expected (B, T, V) logits or (B, T, H) hidden states, got "
            f"{tuple(policy.shape)}"
        )
    bsz, seq = int(policy.shape[0]), int(policy.shape[1])
    if weight is not None and (weight.dim() != 2 or weight.shape[1] != policy.shape[-1]):
        raise TrainerShapeError(
            f"weight: expected (V, H) with H = {policy.shape[-1]} (the hidden size of logits), "
            f"got {tuple(weight.shape)}"
        )
    vocab = int(weight.shape[0] if weight is not None else policy.shape[-1])
    if targets is not None:
        check_index("targets", targets)
        if tuple(targets.shape) != (bsz, seq):
            raise TrainerShapeError(
                f"targets: expected (B, T) = {(bsz, seq)} like logits, got {tuple(targets.shape)}"
            )
    if ref_weight is not None and ref is None:
        raise TrainerShapeError("ref_weight given without ref_logits (reference hidden states)")
    if ref is None:
        return vocab
    if ref_weight is None:
        if tuple(ref.shape) != (bsz, seq, vocab):
            raise TrainerShapeError(
                f"ref_logits: expected (B, T, V) = {(bsz, seq, vocab)} like the policy logits, "
                f"got {tuple(ref.shape)}"
            )
        return vocab
    if ref.dim() != 3 or tuple(ref.shape[:2]) != (bsz, seq):
        raise TrainerShapeError(
            f"ref_logits: expected (B, T, H) reference hidden states with (B, T) = {(bsz, seq)}, "
            f"got {tuple(ref.shape)}"
        )
    if ref_weight.dim() != 2 or tuple(ref_weight.shape) != (vocab, ref.shape[-1]):
        raise TrainerShapeError(
            f"ref_weight: expected (V, H) = {(vocab, int(ref.shape[-1]))} (the policy's "
            f"vocabulary, the reference hidden size), got {tuple(ref_weight.shape)}"
        )
    return vocab
