"""Device and dtype selection: CUDA when available, otherwise CPU."""

from __future__ import annotations

import torch

__all__ = ["default_device", "default_dtype", "resolve_device"]


def default_device() -> torch.device:
    """``cuda`` (current device) when CUDA is available, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def resolve_device(device: torch.device | str | None = None) -> torch.device:
    """``device`` as a ``torch.device``; ``None`` means :func:`default_device`."""
    return default_device() if device is None else torch.device(device)


def default_dtype(device: torch.device | str | None = None) -> torch.dtype:
    """Model dtype for ``device``: bf16 on CUDA GPUs that support it, else fp32.

    Losses are always computed in fp32 regardless of this choice.
    """
    dev = resolve_device(device)
    if dev.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32
