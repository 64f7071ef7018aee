"""Batched sampling from a causal LM with a KV cache, for rollouts on the CPU.

:func:`sample_batch` left-pads the prompts (position ids follow the real tokens, so a row's
positions are those of its unpadded sequence), reads them once, then feeds one token per
step through the model's cache. It records each sampled token's log-prob under the sampling
distribution (``softmax(logits / temperature)``): the behaviour log-probs. At
``temperature = 1`` they equal the trainer's log-probs of the same sequence
(:func:`lvt_trainer.grpo.causal_lm_logprobs`, right padded) up to float rounding.

:class:`PolicySampler` adapts it to the agent loop's :data:`~lvt_trainer.agent.Sampler`:
tokenizer ids in and out, through an :class:`~lvt_trainer.vocab.IdMap` when the model has a
compact vocabulary.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor, nn

from .agent import Sample
from .errors import TrainerConfigError
from .vocab import IdMap

__all__ = ["PolicySampler", "sample_batch"]


def _cache_keyword(model: nn.Module) -> str:
    """``"cache"`` (transformers >= 5.2x) or ``"past_key_values"`` (earlier releases)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


@torch.no_grad()
def sample_batch(
    model: nn.Module,
    prompts: Sequence[Sequence[int]],
    *,
    stop_ids: Iterable[int],
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    pad_id: int = 0,
) -> list[tuple[list[int], list[float], bool]]:
    """Sample a completion for each prompt (model ids); returns ``(ids, logps, truncated)``
    per prompt: ids up to and including the first stop id, ``truncated`` when the budget
    ran out first."""
    if max_new_tokens < 1 or temperature <= 0:
        raise TrainerConfigError("need max_new_tokens >= 1 and temperature > 0")
    if not prompts or any(len(p) == 0 for p in prompts):
        raise TrainerConfigError("every prompt needs at least one token")
    dev = next(model.parameters()).device
    bsz, width = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((bsz, width), int(pad_id), dtype=torch.long, device=dev)
    am = torch.zeros((bsz, width), dtype=torch.long, device=dev)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(list(p), dtype=torch.long, device=dev)
        am[i, width - len(p) :] = 1
    pos = (am.cumsum(-1) - 1).clamp_min(0)
    stops = torch.tensor(sorted({int(s) for s in stop_ids}), dtype=torch.long, device=dev)
    was_training = model.training
    model.eval()
    cache_kw = _cache_keyword(model)
    out = model(input_ids=ids, attention_mask=am, position_ids=pos, use_cache=True)
    past = getattr(out, cache_kw)
    logits: Tensor = out.logits[:, -1]
    last_pos = pos[:, -1:]
    done = torch.zeros(bsz, dtype=torch.bool, device=dev)
    toks: list[Tensor] = []
    lps: list[Tensor] = []
    for _ in range(max_new_tokens):
        logp = torch.log_softmax(logits.float() / temperature, dim=-1)
        tok = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        toks.append(torch.where(done, -1, tok))
        lps.append(logp.gather(-1, tok[:, None]).squeeze(-1))
        done = done | torch.isin(tok, stops)
        if bool(done.all()):
            break
        am = torch.cat([am, torch.ones((bsz, 1), dtype=am.dtype, device=dev)], dim=1)
        last_pos = last_pos + 1
        out = model(input_ids=tok[:, None], attention_mask=am, position_ids=last_pos,
                    use_cache=True, **{cache_kw: past})
        past = getattr(out, cache_kw)
        logits = out.logits[:, -1]
    model.train(was_training)
    t_all = torch.stack(toks, 1).cpu().tolist()
    l_all = torch.stack(lps, 1).cpu().tolist()
    stop_set = {int(s) for s in stop_ids}
    results = []
    for row, lrow in zip(t_all, l_all, strict=True):
        seq, lp = [], []
        for t, v in zip(row, lrow, strict=True):
            if t < 0:
                break
            seq.append(t)
            lp.append(v)
        results.append((seq, lp, not (seq and seq[-1] in stop_set)))
    return results


class PolicySampler:
    """A :data:`~lvt_trainer.agent.Sampler` over a causal LM.

    Args:
        model: the policy (compact vocabulary when ``id_map`` is given).
        stop_ids: tokenizer ids that end a turn (e.g. the end of turn and the tool-call
            closer of the format).
        id_map: tokenizer ids <-> model ids (``None``: the model speaks tokenizer ids).
        max_new_tokens, temperature, generator: sampling settings.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        stop_ids: Iterable[int],
        id_map: IdMap | None = None,
        max_new_tokens: int = 32,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        self.model = model
        self.id_map = id_map
        self.stop_ids = [int(t) for t in stop_ids]
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.generator = generator

    def _to_model(self, ids: Sequence[int]) -> list[int]:
        if self.id_map is None:
            return [int(t) for t in ids]
        return [int(t) for t in self.id_map.to_model(list(ids)).tolist()]

    def _to_real(self, ids: Sequence[int]) -> tuple[int, ...]:
        if self.id_map is None or not ids:
            return tuple(int(t) for t in ids)
        return tuple(int(t) for t in self.id_map.to_real(list(ids)).tolist())

    def __call__(self, prompts: Sequence[Sequence[int]]) -> list[Sample]:
        """Sample one turn per prompt (tokenizer ids in and out)."""
        model_prompts = [self._to_model(p) for p in prompts]
        res = sample_batch(
            self.model,
            model_prompts,
            stop_ids=self._to_model(self.stop_ids),
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            generator=self.generator,
        )
        return [Sample(self._to_real(ids), tuple(lp), trunc) for ids, lp, trunc in res]
