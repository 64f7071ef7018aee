"""Token-in/token-out agent loops: an engine samples ids, lvt reads the tool calls out of them,
the tools run, and the next prompt is the render of the history with the sampled ids verbatim.

The engine is any callable ``generate(prompt_ids, params) -> sampled_ids``: vLLM's
``LLM.generate({"prompt_token_ids": ids}, SamplingParams(**params))``, SGLang's
``engine.generate(input_ids=ids, sampling_params=params)``, an OpenAI-compatible server asked
for ``return_token_ids``, or a local model. ``params`` carries ``stop_token_ids`` (the format's
:attr:`~lvt.encoder.ChatEncoder.stop_ids`) merged with the caller's sampling parameters.

Every turn is checked at run time: the prompt the engine saw followed by the ids it sampled is
a prefix of the next render (the ``prompt_prefix`` and extension theorems, for the formats and
appends they cover). A break raises :class:`RolloutError` naming the turn and the first differing
token, instead of training on ids the engine never produced.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lvt.errors import LvtError
from lvt.families import harmony, mistral
from lvt.model import Conversation, Message, Role, Sampled
from lvt.sampling.completion import Completion, ReadCall

__all__ = ["Rollout", "RolloutError", "Turn", "arun_agent", "run_agent", "sampled_block"]

Generate = Callable[[list[int], dict[str, Any]], Sequence[int]]
Execute = Callable[[ReadCall], Any]


class RolloutError(LvtError, RuntimeError):
    """The render of the history does not extend what the engine saw and sampled.

    Attributes:
        turn: the index of the sampled turn whose ids are not a prefix of the next render.
        position: the first token where they differ.
    """

    def __init__(self, turn: int, position: int, reason: str) -> None:
        self.turn = turn
        self.position = position
        super().__init__(f"turn {turn}, token {position}: {reason}")


@dataclass(frozen=True)
class Turn:
    """One engine call: the prompt ids it got, the ids it sampled (verbatim), their reading
    and the tool results that followed (in call order)."""

    prompt_ids: list[int]
    sampled_ids: list[int]
    completion: Completion
    tool_results: tuple[Any, ...] = ()


@dataclass
class Rollout:
    """A finished agent loop.

    Attributes:
        conversation: the history, each assistant turn a :class:`~lvt.model.Sampled` block.
        turns: the engine calls, in order.
        stop: ``"answer"`` (a turn without tool calls), ``"length"`` (a turn cut without its
            stop token) or ``"max_turns"``.
        encoded: the training render of ``conversation`` (ids, loss mask, owners): the rows a
            trainer learns from, whose learned tokens are exactly the sampled ids.
    """

    conversation: Conversation
    turns: list[Turn] = field(default_factory=list)
    stop: str = "answer"
    encoded: Any = None


def _result_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _first_diff(a: Sequence[int], b: Sequence[int]) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))


def _check_prefix(turn: int, seen: list[int], render: Sequence[int], tokenizer: Any) -> None:
    if list(render[:len(seen)]) != seen:
        k = _first_diff(seen, render)
        got = list(render[k:k + 3])
        raise RolloutError(turn, k, f"the prompt and the sampled ids are not a prefix of the "
                                    f"next render (the engine saw/sampled {seen[k:k + 3]}, the "
                                    f"render has {got}: "
                                    f"{tokenizer.decode(got, skip_special_tokens=False)!r}); use "
                                    f"the format's -stable variant or a format whose extension "
                                    f"theorem covers this append")


def sampled_block(encoder: Any, ids: Sequence[int]) -> Sampled:
    """The sampled turn as the history holds it: the ids up to the end of turn the render
    writes itself (``prompt_prefix``: prompt + sampled + end of turn = the training render);
    harmony's sampled tokens hold their own ``<|call|>``/``<|return|>``. A completion cut
    by length (no stop id at its end) is kept whole."""
    ids = [int(x) for x in ids]
    own = encoder.stop_ids[0]
    if ids and ids[-1] == own and not isinstance(encoder.family, harmony.Harmony):
        ids = ids[:-1]
    return Sampled(tuple(ids))


def _results_need_calls(fam: Any) -> bool:
    """Whether the format's tool results depend on the call they answer (harmony writes
    ``<|start|>functions.NAME``, Mistral v7/v11 the call id, and every Mistral version lays
    results out only after a typed call), so a result needs the call typed."""
    return isinstance(fam, harmony.Harmony | mistral.Mistral)


def _assistant(encoder: Any, turn: int, ids: list[int], comp: Completion) -> Message:
    """The sampled turn as history: its ids verbatim, or, where the tool results name their
    call, the typed blocks of a canonical sample (which render to exactly these ids, checked
    on the next turn)."""
    if not (comp.tool_calls and _results_need_calls(encoder.family)):
        return Message(Role.ASSISTANT, (sampled_block(encoder, ids),))
    if not comp.canonical:
        raise RolloutError(turn, comp.problems[0].where if comp.problems else 0,
                           f"format {encoder.format_name!r} writes the call in each tool "
                           f"result, so a tool call must be sampled as the render writes it "
                           f"(canonically) to stay verbatim in the history; this one is not")
    return Message(Role.ASSISTANT, tuple(encoder.parse_completion(ids)))


def _agent(encoder: Any, messages: Sequence[Mapping[str, Any]],
           tools: Sequence[Mapping[str, Any]] | None, max_turns: int,
           params: Mapping[str, Any] | None) -> Generator[tuple[str, Any], Any, Rollout]:
    """The loop as a coroutine: it yields ``("generate", (prompt_ids, params))`` and
    ``("execute", call)`` requests and is sent their answers, so one definition serves the
    synchronous and the asynchronous drivers."""
    conv = encoder.from_openai(messages, tools)
    history = list(conv.messages)
    sp = {**dict(params or {}), "stop_token_ids": list(encoder.stop_ids)}
    out = Rollout(conv)
    seen: list[int] | None = None
    for t in range(max_turns):
        prompt = encoder.generation_prompt(Conversation(tuple(history), True, conv.tools))
        prompt_ids = [int(x) for x in prompt]
        if seen is not None:
            _check_prefix(t - 1, seen, prompt_ids, encoder.tokenizer)
        sampled = [int(x) for x in (yield "generate", (list(prompt_ids), dict(sp)))]
        comp = encoder.read_completion(sampled, tools)
        history.append(_assistant(encoder, t, sampled, comp))
        seen = prompt_ids + sampled
        results: list[Any] = []
        if comp.termination.reason != "length" and comp.tool_calls:
            for c in comp.tool_calls:
                results.append((yield "execute", c))
            tool_msgs = [{"role": "tool", "tool_call_id": c.id, "name": c.name,
                          "content": _result_text(v)}
                         for c, v in zip(comp.tool_calls, results, strict=True)]
            history += encoder.from_openai(tool_msgs).messages
        out.turns.append(Turn(prompt_ids, sampled, comp, tuple(results)))
        if comp.termination.reason == "length":
            out.stop = "length"
            break
        if not comp.tool_calls:
            out.stop = "answer"
            break
    else:
        out.stop = "max_turns"
    out.conversation = Conversation(tuple(history), False, conv.tools)
    out.encoded = encoder.encode(out.conversation)
    if seen is not None:
        _check_prefix(len(out.turns) - 1, seen, [int(x) for x in out.encoded.ids],
                      encoder.tokenizer)
    return out


def run_agent(encoder: Any, messages: Sequence[Mapping[str, Any]], generate: Generate,
              execute: Execute, *, tools: Sequence[Mapping[str, Any]] | None = None,
              max_turns: int = 8, params: Mapping[str, Any] | None = None) -> Rollout:
    """Run a multi-turn tool-use loop on an engine.

    ``messages`` (OpenAI style) start the conversation. Each turn renders the history with
    the generation prompt, hands the ids (a ``list[int]``) and ``params`` plus the stop ids to
    ``generate``, keeps the sampled ids verbatim as the assistant turn, reads them
    (:meth:`~lvt.encoder.ChatEncoder.read_completion`) and, when the model called tools, calls
    ``execute(call)`` for each (a string result is the tool message's content, anything else
    is JSON-encoded) and goes on. It stops at a turn without calls, a turn cut by length, or
    after ``max_turns`` engine calls.

    Raises:
        RolloutError: the render does not extend what the engine saw and sampled.
        ConversationError: ``messages`` or a tool result does not fit the format.
    """
    loop = _agent(encoder, messages, tools, max_turns, params)
    try:
        kind, arg = next(loop)
        while True:
            kind, arg = loop.send(generate(*arg) if kind == "generate" else execute(arg))
    except StopIteration as done:
        return done.value


async def arun_agent(encoder: Any, messages: Sequence[Mapping[str, Any]],
                     generate: Callable[..., Any], execute: Callable[..., Any], *,
                     tools: Sequence[Mapping[str, Any]] | None = None, max_turns: int = 8,
                     params: Mapping[str, Any] | None = None) -> Rollout:
    """:func:`run_agent` for asynchronous engines (vLLM's ``AsyncLLM``, SGLang's async
    engine, verl's server manager): ``generate`` and ``execute`` may return awaitables.

    Raises:
        RolloutError, ConversationError: as :func:`run_agent`.
    """
    loop = _agent(encoder, messages, tools, max_turns, params)
    try:
        kind, arg = next(loop)
        while True:
            got = generate(*arg) if kind == "generate" else execute(arg)
            kind, arg = loop.send(await got if inspect.isawaitable(got) else got)
    except StopIteration as done:
        return done.value
