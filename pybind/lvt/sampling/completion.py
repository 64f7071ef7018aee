"""What a sampled completion means: the result type of :func:`lvt.sampling.read_completion`.

Two readings of a completion are kept apart. The ids the engine sampled are the history and the
training target, verbatim (:class:`lvt.model.Sampled`); nothing here changes them. A
:class:`Completion` is the other reading: what the model *meant* (content, reasoning, tool
calls), read leniently, the way serving engines' parsers read it, with where and why the
sample departs from the format (:class:`Problem`) and how it ended (:class:`Termination`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Completion", "Problem", "ReadCall", "Termination", "call_id"]

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def call_id(index: int) -> str:
    """The tool-call id lvt gives the ``index``-th call of a completion when the model wrote
    none: 9 alphanumerics (the shape Mistral's formats require), a function of the position
    only, so a rollout and its replay agree."""
    digest = hashlib.sha256(f"lvt-call-{index}".encode()).digest()
    return "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:9])


@dataclass(frozen=True)
class Problem:
    """Where (a token index into the completion) and why the sample departs from the format."""

    where: int
    why: str


@dataclass(frozen=True)
class Termination:
    """How the completion ended.

    ``reason`` is ``"stop"`` (it ends with one of the format's stop ids, ``stop_id``),
    ``"length"`` (no stop id: the engine cut it, e.g. at ``max_tokens``) or ``"malformed"``
    (a stop id ends it but the turn does not read cleanly; ``where``/``why`` name the first
    problem).
    """

    reason: Literal["stop", "length", "malformed"]
    stop_id: int | None = None
    where: int | None = None
    why: str | None = None


@dataclass(frozen=True)
class ReadCall:
    """One tool call as the model wrote it.

    ``arguments`` is the parsed JSON object, or ``None`` when ``raw`` (the argument text as
    sampled) is not a JSON object (``valid`` is then false). ``id`` is the id the model wrote
    (Mistral's ``[CALL_ID]``) or :func:`call_id` of the call's position. ``start``/``end``
    are the call's token span in the completion.
    """

    name: str
    arguments: dict[str, Any] | None
    raw: str
    id: str
    start: int
    end: int

    @property
    def valid(self) -> bool:
        """Whether the arguments parsed as a JSON object (and the name is not empty)."""
        return self.arguments is not None and bool(self.name)

    def arguments_json(self) -> str:
        """The arguments as an OpenAI ``function.arguments`` string: the parsed object in
        compact JSON, else the raw text."""
        if self.arguments is None:
            return self.raw
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class Completion:
    """What a sampled assistant turn means.

    Attributes:
        ids: the completion's ids, as given (the training target; never rewritten).
        content: the visible answer text ("" when none).
        reasoning: the reasoning text, or ``None`` when the turn has no reasoning block.
        tool_calls: the calls, in order (valid or not).
        termination: how it ended.
        canonical: whether the ids are exactly what the format's render writes for what they
            read as (the strict reader accepts them and every text run is the tokenizer's
            own segmentation of its text).
        problems: every departure from the format, in token order.
    """

    ids: tuple[int, ...]
    content: str
    reasoning: str | None
    tool_calls: tuple[ReadCall, ...]
    termination: Termination
    canonical: bool
    problems: tuple[Problem, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Stopped by a stop id, nothing malformed, every call valid."""
        return (self.termination.reason == "stop" and not self.problems
                and all(c.valid for c in self.tool_calls))

    def to_openai(self) -> dict[str, Any]:
        """The completion as an OpenAI chat message (``reasoning_content`` when there is
        reasoning, ``tool_calls`` when there are calls; invalid arguments stay raw text)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            msg["reasoning_content"] = self.reasoning
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments_json()}}
                for c in self.tool_calls
            ]
        return msg
