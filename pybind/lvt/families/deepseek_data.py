# ruff: noqa: RUF002  (DeepSeek's control tokens use full-width bars)
"""The DeepSeek structure's data: the template's literal text, the control ids and the lowered
turns (the types of ``Verified/Spec/DeepSeek.lean``).

:mod:`lvt.families.deepseek` lays these out and reads them back; model entries
(:mod:`lvt.formats`) pick the values that tell one DeepSeek model from another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CALL_TYPE",
    "JSON_CLOSE",
    "JSON_OPEN",
    "AssistantTurn",
    "Call",
    "CallsTurn",
    "DConv",
    "DsIds",
    "ResultsTurn",
    "SampledTurn",
    "UserTurn",
]

#: ``'\n```json\n'`` between a call's name and its arguments.
JSON_OPEN = "\n```json\n"
#: ``'\n```'`` after the arguments.
JSON_CLOSE = "\n```"
#: ``tool['type']`` (every call the front end builds is a function call).
CALL_TYPE = "function"


@dataclass(frozen=True)
class DsIds:
    """``DsIds``: the control tokens of the DeepSeek-R1 tokenizer."""

    bos: int
    eos: int
    user: int
    assistant: int
    calls_begin: int
    calls_end: int
    call_begin: int
    call_end: int
    outputs_begin: int
    outputs_end: int
    output_begin: int
    output_end: int
    sep: int
    think: tuple[int, int]
    extra: tuple[int, ...] = ()

    def controls(self) -> tuple[int, ...]:
        """The format's control tokens (``DsIds.ctrls``)."""
        return (self.bos, self.eos, self.user, self.assistant, self.calls_begin,
                self.calls_end, self.call_begin, self.call_end, self.outputs_begin,
                self.outputs_end, self.output_begin, self.output_end, self.sep, *self.think)

    def body_ctrl(self, t: int) -> bool:
        """``bodyCtrl``: a control token a sampled assistant turn may hold (the model writes
        think blocks and call blocks itself)."""
        return t in (self.calls_begin, self.calls_end, self.call_begin, self.call_end,
                     self.sep, *self.think)

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id (the format's control tokens first)."""
        return tuple(dict.fromkeys([*self.controls(), *self.extra]))


@dataclass(frozen=True)
class Call:
    """``Call``: name and argument text."""

    name: str
    args: str


@dataclass(frozen=True)
class UserTurn:
    """``DTurn.user``: ``'<｜User｜>' + content``."""

    p: Any
    owner: int


@dataclass(frozen=True)
class AssistantTurn:
    """``DTurn.assistant``: header (``<｜tool▁outputs▁end｜>`` when ``after_tools``, else
    ``<｜Assistant｜>``), think block (stable), content, ``<｜end▁of▁sentence｜>``."""

    after_tools: bool
    think: Any  # LPay | None
    content: Any
    owner: int


@dataclass(frozen=True)
class CallsTurn:
    """``DTurn.calls``: ``head`` is the content of the first call message of the conversation
    (written after ``<｜Assistant｜>``), ``None`` for every later one."""

    head: Any  # LPay | None
    think: Any  # LPay | None
    calls: tuple[Call, ...]
    owner: int


@dataclass(frozen=True)
class ResultsTurn:
    """``DTurn.results``: a run of tool results, ``(payload, owner)`` each; ``first``: the
    first run of the conversation (opened by ``<｜tool▁outputs▁begin｜>``)."""

    first: bool
    results: tuple[tuple[Any, int], ...]


@dataclass(frozen=True)
class SampledTurn:
    """``DTurn.sampled``: header, the sampled tokens, ``<｜end▁of▁sentence｜>``."""

    after_tools: bool
    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class DConv:
    """``DConv``: the system text and its owner, the turns, and the generation prompt
    (``(after_tools, owner)``, ``None``: no prompt)."""

    system: Any
    sys_owner: int
    turns: tuple[Any, ...]
    prompt: tuple[bool, int] | None
