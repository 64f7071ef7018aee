"""Verifiable toy tasks for the CPU learning run, written as lvt conversations.

* :class:`SortTask` (single turn): ``"sort 3 1 2"`` -> ``"1 2 3"``; reward: the share of
  the ``k`` positions that hold the right digit (0 if the answer is not ``k`` digits).
* :class:`CalcToolTask` (multi-turn tool use): ``"What is 7*8?"``; the assistant calls
  the ``calc`` tool (``{"expr": "7*8"}``), reads the result and answers it; reward 0.5 for
  a call with the right expression plus 0.5 for the right final number. Runs on
  :func:`lvt_trainer.agent.run_episodes`.

Each task gives prompts, full demonstrations (for a few supervised steps) and the reward of
an :class:`~lvt_trainer.agent.Episode`. Demonstrations come from ``lvt.from_openai``, so
lvt lays the tool call out for the format.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Protocol

import lvt

from .agent import TOOL_ERROR, Episode, calculator

__all__ = ["TASKS", "CalcToolTask", "Problem", "SortTask", "Task", "make_task"]


@dataclass(frozen=True)
class Problem:
    """One task instance: the prompt conversation and what a right answer carries."""

    prompt: lvt.Conversation
    answer: str
    data: tuple[int, ...]


class Task(Protocol):
    """What the learning run needs from a task."""

    name: str
    multi_turn: bool
    max_turns: int
    max_new_tokens: int

    def sample(self, rng: random.Random) -> Problem: ...

    def every_problem(self) -> list[Problem]: ...

    def demonstration(self, problem: Problem) -> lvt.Conversation: ...

    def environment_texts(self) -> list[str]: ...

    def reward(self, problem: Problem, episode: Episode) -> float: ...


def _user(text: str) -> lvt.Message:
    return lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text(text)),))


def _assistant(text: str) -> lvt.Message:
    return lvt.Message(lvt.Role.ASSISTANT, (lvt.Plain(lvt.Text(text)),))


class SortTask:
    """Sort ``k`` distinct digits (single turn)."""

    name = "sort"
    multi_turn = False
    max_turns = 1

    def __init__(self, k: int = 3) -> None:
        self.k = k
        self.max_new_tokens = 2 * k + 2

    def _problem(self, digits: tuple[int, ...]) -> Problem:
        prompt = lvt.Conversation((_user("sort " + " ".join(map(str, digits))),), False)
        return Problem(prompt, " ".join(map(str, sorted(digits))), digits)

    def sample(self, rng: random.Random) -> Problem:
        """A random instance."""
        return self._problem(tuple(rng.sample(range(10), self.k)))

    def every_problem(self) -> list[Problem]:
        """A set of instances covering every id the task uses (for the id map)."""
        rng = random.Random(0)
        return [self.sample(rng) for _ in range(200)]

    def environment_texts(self) -> list[str]:
        """Texts the environment can answer with (none: single turn)."""
        return []

    def demonstration(self, problem: Problem) -> lvt.Conversation:
        """The prompt followed by the right answer."""
        return lvt.Conversation((*problem.prompt.messages, _assistant(problem.answer)), False)

    def reward(self, problem: Problem, episode: Episode) -> float:
        """Share of positions right; 0 unless the answer is ``k`` single digits."""
        if episode.answer is None:
            return 0.0
        got = episode.answer.split(" ")
        want = problem.answer.split(" ")
        if len(got) != len(want) or not all(len(g) == 1 and g.isdigit() for g in got):
            return 0.0
        return sum(g == w for g, w in zip(got, want, strict=True)) / len(want)


class CalcToolTask:
    """Multiply two numbers with the ``calc`` tool, then answer (two turns)."""

    name = "calc"
    multi_turn = True
    max_turns = 2
    max_new_tokens = 24

    def __init__(self, low: int = 2, high: int = 10, encoder: Any = None) -> None:
        self.low, self.high = low, high
        self.encoder = encoder

    def _problem(self, a: int, b: int) -> Problem:
        prompt = lvt.Conversation((_user(f"What is {a}*{b}?"),), False)
        return Problem(prompt, str(a * b), (a, b))

    def sample(self, rng: random.Random) -> Problem:
        """A random instance."""
        return self._problem(rng.randrange(self.low, self.high), rng.randrange(self.low, self.high))

    def every_problem(self) -> list[Problem]:
        """Every instance."""
        return [self._problem(a, b) for a in range(self.low, self.high)
                for b in range(self.low, self.high)]

    def environment_texts(self) -> list[str]:
        """Everything the calculator can answer: numbers are tokenised in groups of up to
        three digits, so every 1-3 digit string, a minus sign and the error answer."""
        groups = [str(i) for i in range(10)] + [f"{i:02d}" for i in range(100)]
        groups += [f"{i:03d}" for i in range(1000)]
        return [*groups, "-1", TOOL_ERROR]

    def demonstration(self, problem: Problem) -> lvt.Conversation:
        """Prompt, the tool call, its result, the answer; the call laid out for the format."""
        if self.encoder is None:
            raise ValueError("CalcToolTask needs the encoder to lay out tool calls")
        a, b = problem.data
        args = json.dumps({"expr": f"{a}*{b}"})
        result = calculator({"expr": f"{a}*{b}"})
        msgs = [
            {"role": "user", "content": f"What is {a}*{b}?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "calc", "arguments": args}}
            ]},
            {"role": "tool", "tool_call_id": "c0", "content": result},
            {"role": "assistant", "content": result},
        ]
        conv = lvt.from_openai(msgs, None, False)
        shape = getattr(self.encoder, "shape", None)  # lvt releases that lay out calls apart
        return shape(conv) if shape is not None else conv  # type: ignore[no-any-return]

    def reward(self, problem: Problem, episode: Episode) -> float:
        """0.5 for a first call with the right expression, 0.5 for the right final answer."""
        a, b = problem.data
        call = 0.5 if episode.tool_calls and episode.tool_calls[0][:2] == (
            "calc", {"expr": f"{a}*{b}"}) else 0.0
        answer = 0.5 if episode.answer is not None and episode.answer.strip() == problem.answer \
            else 0.0
        return call + answer


TASKS = ("sort", "calc")


def make_task(name: str, encoder: Any = None) -> SortTask | CalcToolTask:
    """A task by name (``"sort"`` or ``"calc"``)."""
    if name == "sort":
        return SortTask()
    if name == "calc":
        return CalcToolTask(encoder=encoder)
    raise ValueError(f"unknown task {name!r}; known: {TASKS}")
