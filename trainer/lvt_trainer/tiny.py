"""A tiny randomly initialised ``transformers`` causal LM for tests and demos (no downloads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .device import resolve_device

if TYPE_CHECKING:  # transformers is imported lazily: it is slow to import
    from transformers import LlamaConfig, LlamaForCausalLM

__all__ = ["build_tiny_causal_lm", "tiny_llama_config"]


def tiny_llama_config(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    intermediate_size: int = 128,
    max_position_embeddings: int = 512,
    tie_word_embeddings: bool = True,
    **overrides: Any,
) -> LlamaConfig:
    """A small :class:`~transformers.LlamaConfig` (hidden 64, 2 layers, 2 heads by default).

    Embeddings are tied by default so a 128k vocabulary costs one ``V x hidden`` matrix.
    ``bos``/``eos``/``pad`` ids are left unset (the caller owns the vocabulary).
    """
    kwargs: dict[str, Any] = {
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "num_key_value_heads": num_heads,
        "max_position_embeddings": max_position_embeddings,
        "tie_word_embeddings": tie_word_embeddings,
        "bos_token_id": None,
        "eos_token_id": None,
        "pad_token_id": None,
    }
    kwargs.update(overrides)
    from transformers import LlamaConfig

    return LlamaConfig(**kwargs)


def build_tiny_causal_lm(
    vocab_size: int,
    *,
    seed: int = 0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    config: LlamaConfig | None = None,
    **config_overrides: Any,
) -> LlamaForCausalLM:
    """Build a tiny randomly initialised Llama causal LM, deterministically from ``seed``.

    Nothing is downloaded. ``config`` defaults to :func:`tiny_llama_config` with
    ``config_overrides``. The model is returned in train mode on ``device`` (default:
    CUDA when available, else CPU) with parameters in ``dtype``.
    """
    from transformers import LlamaForCausalLM

    cfg = config if config is not None else tiny_llama_config(vocab_size, **config_overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    model.to(device=resolve_device(device), dtype=dtype)
    model.train()
    return model
