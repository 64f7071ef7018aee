"""``read_completion``: what a sampled assistant turn means, and the stop ids a sampler needs.

The ids are never changed: they are what the trainer learns from (:class:`lvt.model.Sampled`).
Reading them is lenient (what serving engines' parsers accept), never raises on model output,
and says how the turn ended and whether it is exactly what the format's render would write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lvt import families
from lvt.errors import ArgumentError, LvtError
from lvt.families import deepseek, gemma, gemma4, harmony, llama, mistral, qwen, tagged
from lvt.model import Conversation, Message, Reasoning, Role, ToolCall, check_token_ids
from lvt.runtime.codec import as_tokenizer
from lvt.sampling.completion import Completion, Problem, ReadCall, Termination, call_id
from lvt.sampling.readers import reader_for
from lvt.sampling.segments import segments

__all__ = ["prompt_ids", "read_completion", "stop_ids"]

#: Per tokenizer object (kept alive with its entry): added-token content -> id.
_NAMES: dict[int, tuple[Any, dict[str, int]]] = {}


def token_names(tokenizer: Any) -> dict[str, int]:
    """The tokenizer's added tokens by content."""
    hit = _NAMES.get(id(tokenizer))
    if hit is None or hit[0] is not tokenizer:
        if len(_NAMES) >= 8:
            _NAMES.pop(next(iter(_NAMES)))
        names = {a.content: int(i)
                 for i, a in as_tokenizer(tokenizer).get_added_tokens_decoder().items()}
        hit = (tokenizer, names)
        _NAMES[id(tokenizer)] = hit
    return hit[1]


def _stops(fam: Any, names: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(every stop id, the stop ids the render itself writes), render's first."""
    def named(*ns: str) -> list[int]:
        return [names[n] for n in ns if n in names]

    if isinstance(fam, qwen.Qwen):  # '<|im_end|>'; generation_config adds '<|endoftext|>'
        own = [fam.ids.im_end]
        every = own + named("<|endoftext|>")
    elif isinstance(fam, llama.Llama):  # '<|eot_id|>'; '<|eom_id|>' after a built-in call
        own = [fam.ids.eot]
        every = own + named("<|eom_id|>", "<|end_of_text|>")
    elif isinstance(fam, harmony.Harmony):  # '<|return|>' ends the turn, '<|call|>' a call
        own = [fam.ids.ret, fam.ids.call]
        every = own
    elif isinstance(fam, tagged.Tagged):  # the footer's token ('<|end|>', '<|im_end|>')
        own = [fam.footer[0]]  # type: ignore[list-item]
        every = own + ([fam.eos] if fam.eos is not None else [])
    elif isinstance(fam, gemma4.Gemma4):  # '<turn|>'; generation_config adds '<eos>'
        own = [fam.ids.turn_end]
        every = own + named("<eos>")
    elif isinstance(fam, gemma.Gemma):
        own = [fam.ids.end_turn]
        every = own + named("<eos>")
    elif isinstance(fam, deepseek.DeepSeek | mistral.Mistral):
        own = [fam.ids.eos]
        every = own
    else:
        raise TypeError(f"no stop ids for {type(fam).__name__}")
    return tuple(dict.fromkeys(every)), tuple(own)


def stop_ids(encoder: Any) -> tuple[int, ...]:
    """The ids that end a sampled assistant turn of the encoder's format (hand them to the
    engine as ``stop_token_ids``): the one the render writes first."""
    return _stops(encoder.family, token_names(encoder.tokenizer))[0]


def prompt_ids(encoder: Any, messages: Sequence[Mapping[str, Any]],
               tools: Sequence[Mapping[str, Any]] | None = None) -> list[int]:
    """The render of OpenAI-style ``messages`` with the generation prompt, as the ``list`` of
    Python ints engines take (vLLM's ``prompt_token_ids``, SGLang's ``input_ids``).

    Raises:
        ConversationError: the format cannot express the conversation.
    """
    conv = encoder.from_openai(messages, tools, True)
    return [int(t) for t in encoder.encode(conv).ids]


def _canonical(encoder: Any, ts: tuple[int, ...], k: int, stop: int | None,
               own: tuple[int, ...], n_calls: int, reasoning: bool) -> bool:
    """The ids are what the format's render writes for the turn they read as: the strict
    reader reads as many calls and the same reasoning presence as the lenient one, and its
    blocks, rendered as the answer to a one-message conversation, give the prompt followed
    by exactly these ids, the stop token included. (A format whose training render drops
    reasoning, DeepSeek-R1's, never renders a sample with reasoning back.)"""
    if stop is None or stop not in own or k != len(ts) - 1:
        return False
    fam = encoder.family
    body = ts if isinstance(fam, harmony.Harmony) else ts[:k]
    blocks = families.parse_completion(fam, encoder.codec, encoder.reserved, body)
    if blocks is None or (sum(isinstance(b, ToolCall) for b in blocks) != n_calls
                          or any(isinstance(b, Reasoning) for b in blocks) != reasoning):
        return False
    user = Message.text(Role.USER, "x")
    try:
        prompt = encoder.generation_prompt(Conversation((user,), True, None))
        full = encoder.encode(Conversation((user, Message(Role.ASSISTANT, blocks)), False,
                                           None)).ids
    except LvtError:
        return False
    return [int(t) for t in full[len(prompt):len(prompt) + len(ts)]] == list(ts)


def read_completion(encoder: Any, ids: Sequence[int] | np.ndarray, tools: Any = None
                    ) -> Completion:
    """What the sampled ids of an assistant turn mean.

    ``ids`` are the tokens the engine returned after the generation prompt, with the stop
    token when it stopped on one (as vLLM and SGLang return them). ``tools`` (OpenAI tool
    schemas, optional) types the parameters of XML calls.

    Raises:
        ArgumentError: ``ids`` is not a flat sequence of integers, or holds an id outside the
            vocabulary (names the position). Nothing a model can sample raises.
    """
    ts = check_token_ids(ids, "ids", limit=None)
    bad = encoder.codec.first_invalid_id(ts) if ts else None
    if bad is not None:
        raise ArgumentError("ids", f"token id {ts[bad]} is not in the vocabulary",
                            position=bad)
    fam = encoder.family
    names = token_names(encoder.tokenizer)
    every, own = _stops(fam, names)
    k = next((j for j, t in enumerate(ts) if t in every), None)
    stop = ts[k] if k is not None else None
    segs, problems = segments(encoder.codec, encoder.reserved, ts if k is None else ts[:k])
    r = reader_for(fam)(fam, names, segs, tools)
    problems = sorted([*problems, *r.problems], key=lambda p: p.where)
    if k is not None and k < len(ts) - 1:
        problems.append(Problem(k + 1, f"{len(ts) - k - 1} token(s) after the stop token "
                                       "(not read)"))
    calls = tuple(ReadCall(c.name, c.arguments, c.raw, c.id or call_id(n), c.start, c.end)
                  for n, c in enumerate(r.calls))
    if stop is None:
        term = Termination("length")
    elif problems:
        term = Termination("malformed", stop, problems[0].where, problems[0].why)
    else:
        term = Termination("stop", stop)
    canonical = not problems and _canonical(encoder, ts, k if k is not None else -1, stop,
                                            own, len(calls), r.reasoning is not None)
    return Completion(ts, r.content, r.reasoning, calls, term, canonical, tuple(problems))
