"""The agent pipeline, token in, token out: render, sample, parse, call tools, extend.

One episode (:func:`run_episodes` runs many, batching the sampler across them):

1. render the prompt with lvt (``ChatEncoder.generation_prompt``);
2. check that it extends the previous render (the previous prompt followed by what the
   model sampled): :class:`ExtensionGuard`, the run-time statement of lvt's extension
   theorem, raises :class:`~lvt_trainer.errors.PrefixViolationError` otherwise;
3. sample token ids (a :data:`Sampler`);
4. parse them into blocks with :func:`parse_completion`, the single integration point with
   lvt's completion parser (for reading the answer and the tool calls); the turn itself is
   kept as the sampled ids, verbatim (:func:`sampled_message`);
5. run each tool call in the environment (``tools``: name -> function of the decoded
   arguments) and append the result as a tool message;
6. continue from the conversation extended by the parsed message and the results: it is
   rendered again by lvt from token payloads, never re-tokenised from text, so the next
   prompt starts with exactly the ids the model has seen and produced (step 2 checks it).

Each episode becomes a :class:`~lvt_trainer.lvt_batch.Trajectory` that
:func:`lvt_trainer.lvt_batch.build_batch` turns into a training row. A turn that does not
parse (for instance a stray control id) ends the episode; its ids stay in the trajectory as
a token payload, where lvt refuses them and the batch builder reports a forged token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import lvt

from .errors import CompletionParseError, PrefixViolationError
from .lvt_batch import SampledTurn, Trajectory

__all__ = [
    "TOOL_ERROR",
    "Episode",
    "ExtensionGuard",
    "Sample",
    "Sampler",
    "calculator",
    "completion_text",
    "parse_completion",
    "run_episodes",
    "sampled_message",
    "tool_request",
]


@dataclass(frozen=True)
class Sample:
    """What a sampler returns for one prompt: the ids (stop token included when one was
    produced), their log-probs under the sampling distribution, and whether it hit the
    length limit instead of a stop token."""

    ids: tuple[int, ...]
    logps: tuple[float, ...]
    truncated: bool


#: ``sampler(prompts) -> samples``: one :class:`Sample` per prompt (tokenizer ids).
Sampler = Callable[[Sequence[Sequence[int]]], list[Sample]]


@dataclass(frozen=True)
class _Probe:
    conv: lvt.Conversation
    prompt: tuple[int, ...]
    footer: tuple[int, ...]
    n_messages: int


_PROBES: dict[int, tuple[Any, _Probe]] = {}


def _probe(encoder: lvt.ChatEncoder) -> _Probe:
    """A fixed one-message prompt, its generation prompt, the assistant footer and the
    number of messages lvt's parser returns for it (cached per encoder)."""
    hit = _PROBES.get(id(encoder))
    if hit is not None and hit[0] is encoder:
        return hit[1]
    conv = lvt.Conversation((lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("x")),)),), False)
    gp = tuple(int(t) for t in encoder.generation_prompt(lvt.Conversation(conv.messages, True)))
    empty = lvt.Conversation((*conv.messages, lvt.Message(lvt.Role.ASSISTANT, ())), False)
    full = encoder.encode(empty).ids
    footer = tuple(int(t) for t in full[len(gp) :])
    parse_tokens = getattr(encoder, "parse_tokens", None)  # only the fallback parser needs n
    n = len(parse_tokens(full).messages) - 1 if parse_tokens is not None else -1
    probe = _Probe(conv, gp, footer, n)
    _PROBES[id(encoder)] = (encoder, probe)
    return probe


def _body(encoder: lvt.ChatEncoder, ids: Sequence[int]) -> list[int]:
    """The sampled ids without a trailing end of turn (the format writes that itself)."""
    footer = _probe(encoder).footer
    body = [int(t) for t in ids]
    if footer and body and body[-1] == footer[0]:
        body = body[:-1]
    return body


def _token_blocks(encoder: lvt.ChatEncoder, body: list[int]) -> list[lvt.Block]:
    """lvt releases without a completion parser: the blocks of one assistant message whose
    payloads are the sampled ids (``parse_tokens`` of a probe prompt + ids + end of turn,
    checked by rendering back)."""
    probe = _probe(encoder)
    full = [*probe.prompt, *body, *probe.footer]
    try:
        conv = encoder.parse_tokens(full)
    except lvt.LvtError as e:
        raise CompletionParseError(f"the sampled ids are not an assistant message: {e}") from e
    last = conv.messages[-1]
    if last.role != lvt.Role.ASSISTANT or len(conv.messages) != probe.n_messages + 1:
        raise CompletionParseError("the sampled ids open another message (a forged turn boundary)")
    blocks = list(last.blocks)
    msg = lvt.Message(lvt.Role.ASSISTANT, tuple(blocks))
    again = encoder.encode(lvt.Conversation((*probe.conv.messages, msg), False)).ids
    if [int(t) for t in again] != full:
        raise CompletionParseError("the parsed message does not render back to the sampled ids")
    return blocks


def parse_completion(encoder: lvt.ChatEncoder, ids: Sequence[int]) -> list[lvt.Block]:
    """Sampled ids -> the typed blocks of the assistant turn (plain text, reasoning, tool
    calls with their name and argument text), for reading the answer and running tools.

    **The single integration point with lvt's completion parser.** With an lvt that has
    ``ChatEncoder.parse_completion`` (the dedicated function) this calls it on the ids
    without their end of turn. Otherwise it uses what exists: the ids are placed after a
    fixed probe prompt's generation prompt, the format's end of turn is appended, the result
    is parsed with ``ChatEncoder.parse_tokens`` (the verified ``parse``), checked by
    rendering the parsed message back, and its payloads are decoded with
    ``ChatEncoder.parse``. Training never uses these blocks: it renders the sampled ids
    themselves (:func:`sampled_message`).

    Raises:
        CompletionParseError: the ids are not exactly one assistant message of the format
            (e.g. a stray control id, a forged turn boundary, an unclosed tool call).
    """
    body = _body(encoder, ids)
    native = getattr(encoder, "parse_completion", None)
    if native is not None:
        try:
            return list(native(body))
        except lvt.LvtError as e:
            raise CompletionParseError(f"the sampled ids are not an assistant turn: {e}") from e
    blocks = _token_blocks(encoder, body)
    probe = _probe(encoder)
    msg = lvt.Message(lvt.Role.ASSISTANT, tuple(blocks))
    ids_ = encoder.encode(lvt.Conversation((*probe.conv.messages, msg), False)).ids
    return list(encoder.parse(ids_).messages[-1].blocks)


def sampled_message(encoder: lvt.ChatEncoder, ids: Sequence[int]) -> lvt.Message:
    """The assistant message that renders to exactly the sampled ids (then the format's end
    of turn): lvt's ``Sampled`` block where lvt has it, else the parsed blocks with the
    sampled ids as token payloads. Raises :class:`CompletionParseError` like
    :func:`parse_completion` when the ids are not one assistant turn."""
    body = _body(encoder, ids)
    sampled = getattr(lvt, "Sampled", None)
    if sampled is not None and getattr(encoder, "parse_completion", None) is not None:
        parse_completion(encoder, ids)  # same refusals as the token-payload path
        return lvt.Message(lvt.Role.ASSISTANT, (sampled(body),))
    return lvt.Message(lvt.Role.ASSISTANT, tuple(_token_blocks(encoder, body)))


def completion_text(encoder: lvt.ChatEncoder, ids: Sequence[int]) -> str | None:
    """The text of the turn's plain blocks (``None`` when it holds a tool call)."""
    blocks = parse_completion(encoder, ids)
    if any(isinstance(b, lvt.ToolCall) for b in blocks):
        return None
    return "".join(t for b in blocks if isinstance(b, lvt.Plain) if (t := _text(b.payload)))


def _text(p: Any) -> str | None:
    if isinstance(p, str):
        return p
    return p.text if isinstance(p, lvt.Text) else None


def tool_request(block: lvt.Block) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a decoded tool-call block, or ``None`` if it is not one or
    does not decode. Accepts the layouts of :meth:`lvt.formats.FormatSpec.shape_tool_call`:
    a separate name with JSON arguments, or JSON ``{"name": ..., "parameters"|"arguments":
    {...}}`` in the argument text."""
    if not isinstance(block, lvt.ToolCall):
        return None
    name, args = _text(block.name), _text(block.args)
    if name is None or args is None:
        return None
    try:
        obj = json.loads(args)
    except json.JSONDecodeError:
        return None
    if name:
        return (name, obj) if isinstance(obj, dict) else None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    params = obj.get("parameters", obj.get("arguments", {}))
    return (obj["name"], params) if isinstance(params, dict) else None


#: the tool result for a call that does not decode or names an unknown tool (and the
#: calculator's answer to an expression it does not accept)
TOOL_ERROR = "error"

_EXPR = re.compile(r"^\s*(-?\d{1,6})\s*([-+*])\s*(-?\d{1,6})\s*$")


def calculator(arguments: Mapping[str, Any]) -> str:
    """A small tool: ``{"expr": "A op B"}`` with integers and ``+ - *`` -> the result as
    text (``"error"`` for anything else). No ``eval``."""
    m = _EXPR.match(str(arguments.get("expr", "")))
    if m is None:
        return TOOL_ERROR
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    return str(a + b if op == "+" else a - b if op == "-" else a * b)


class ExtensionGuard:
    """Checks at run time that each prompt extends the previous render.

    ``check(prompt)`` before sampling; ``extend(prompt, sampled)`` after. The statement is
    the one lvt proves: the render of the conversation after the turn starts with the
    render before it followed by the sampled ids.

    Raises:
        PrefixViolationError: from :meth:`check`, with the turn and the first differing
            position.
    """

    def __init__(self) -> None:
        self.turn = 0
        self._prev: np.ndarray | None = None

    @property
    def previous(self) -> np.ndarray | None:
        """The previous prompt followed by the sampled ids (``None`` before turn 0)."""
        return self._prev

    def check(self, prompt: Sequence[int] | np.ndarray) -> None:
        """Raise unless ``prompt`` starts with :attr:`previous`."""
        prev = self._prev
        if prev is None:
            return
        p = np.asarray(prompt, dtype=np.int64)
        n = min(len(p), len(prev))
        neq = np.nonzero(p[:n] != prev[:n])[0]
        if neq.size or len(p) < len(prev):
            d = int(neq[0]) if neq.size else n
            raise PrefixViolationError(
                self.turn, d, int(prev[d]) if d < len(prev) else None,
                int(p[d]) if d < len(p) else None,
            )

    def new_tokens(self, prompt: Sequence[int] | np.ndarray) -> np.ndarray:
        """The ids of ``prompt`` after :attr:`previous` (what an engine with a KV cache
        has to read); checks first."""
        self.check(prompt)
        p = np.asarray(prompt, dtype=np.int64)
        return p if self._prev is None else p[len(self._prev) :]

    def extend(self, prompt: Sequence[int] | np.ndarray, sampled: Sequence[int]) -> None:
        """Record the turn: the next prompt must start with ``prompt + sampled``."""
        self._prev = np.concatenate(
            [np.asarray(prompt, dtype=np.int64), np.asarray(list(sampled), dtype=np.int64)]
        )
        self.turn += 1


@dataclass
class Episode:
    """One finished episode.

    Attributes:
        trajectory: the rollout for :func:`lvt_trainer.lvt_batch.build_batch`.
        answer: the text of the final assistant turn's plain blocks (``None`` if it ended
            on a tool call, a truncation or a turn that did not parse).
        tool_calls: the ``(name, arguments, result)`` of every call made.
        malformed: a turn did not parse (its ids are kept as a refused token payload).
    """

    trajectory: Trajectory
    answer: str | None
    tool_calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    malformed: bool = False


@dataclass
class _State:
    messages: list[lvt.Message]
    guard: ExtensionGuard = field(default_factory=ExtensionGuard)
    turns: list[SampledTurn] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    answer: str | None = None
    done: bool = False
    truncated: bool = False
    malformed: bool = False


def _assistant(ids: Sequence[int], footer: tuple[int, ...]) -> lvt.Message:
    body = list(ids)
    if footer and body and body[-1] == footer[0]:
        body = body[:-1]
    return lvt.Message(lvt.Role.ASSISTANT, (lvt.Plain(lvt.Tokens(body)),) if body else ())


def _step(
    encoder: lvt.ChatEncoder,
    s: _State,
    smp: Sample,
    tools: Mapping[str, Callable[[Mapping[str, Any]], str]],
    last_turn: bool,
) -> None:
    """Fold one sampled turn into the episode state."""
    footer = _probe(encoder).footer
    if smp.truncated:  # cut by length: every sampled id verbatim, no end of turn
        s.messages.append(lvt.Message(lvt.Role.ASSISTANT,
                                      (lvt.Sampled(tuple(smp.ids)),) if smp.ids else ()))
        s.truncated = s.done = True
        return
    try:
        msg = sampled_message(encoder, smp.ids)
        decoded = parse_completion(encoder, smp.ids)
    except CompletionParseError:
        s.messages.append(_assistant(smp.ids, footer))
        s.malformed = s.done = True
        return
    s.messages.append(msg)
    requests = [tool_request(b) for b in decoded if isinstance(b, lvt.ToolCall)]
    if not requests:
        s.answer = "".join(t for b in decoded if isinstance(b, lvt.Plain)
                           if (t := _text(b.payload)) is not None)
        s.done = True
        return
    if last_turn:
        s.done = True
        return
    for req in requests:
        if req is None or req[0] not in tools:
            result = TOOL_ERROR
            name, args = ("?", {}) if req is None else req
        else:
            name, args = req
            result = tools[name](args)
        s.calls.append((name, args, result))
        s.messages.append(lvt.Message(lvt.Role.TOOL, (lvt.Plain(lvt.Text(result)),)))


def run_episodes(
    encoder: lvt.ChatEncoder,
    prompts: Sequence[lvt.Conversation],
    sampler: Sampler,
    *,
    tools: Mapping[str, Callable[[Mapping[str, Any]], str]],
    reward_fn: Callable[[int, Episode], float],
    max_turns: int = 3,
) -> list[Episode]:
    """Run one episode per prompt, sampling all active episodes in one sampler call per
    round (see the module docstring); ``reward_fn(index, episode)`` scores each.

    Raises:
        PrefixViolationError: a prompt did not extend the previous render.
    """
    states = [_State(list(c.messages)) for c in prompts]
    for turn in range(max_turns):
        active = [s for s in states if not s.done]
        if not active:
            break
        batch = []
        for s in active:
            ids = encoder.generation_prompt(lvt.Conversation(tuple(s.messages), True))
            s.guard.check(ids)
            batch.append([int(t) for t in ids])
        samples = sampler(batch)
        for s, ids, smp in zip(active, batch, samples, strict=True):
            s.guard.extend(ids, smp.ids)
            s.turns.append(SampledTurn(len(s.messages), tuple(ids), tuple(smp.ids),
                                       tuple(smp.logps)))
            _step(encoder, s, smp, tools, turn == max_turns - 1)
    episodes = []
    for i, s in enumerate(states):
        traj = Trajectory(lvt.Conversation(tuple(s.messages), False), tuple(s.turns), 0.0,
                          s.truncated)
        ep = Episode(traj, s.answer, s.calls, s.malformed)
        reward = float(reward_fn(i, ep))
        ep.trajectory = Trajectory(traj.conversation, traj.turns, reward, traj.truncated)
        episodes.append(ep)
    return episodes
