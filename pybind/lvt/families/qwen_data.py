"""The Qwen structure's data: the templates' literal text (``Verified/Spec/QwenText.lean``),
the control ids and the lowered turns (the types of ``Verified/Spec/Qwen.lean``).

:mod:`lvt.families.qwen` lays these out and reads them back; model entries
(:mod:`lvt.models`) pick the values that tell one Qwen model from another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "CALL_POST",
    "CALL_PRE",
    "CALL_SEP",
    "DEFAULT_SYSTEM",
    "HELPFUL_SYSTEM",
    "MATH_SYSTEM",
    "RESP_CLOSE_TEXT",
    "RESP_OPEN_TEXT",
    "RESP_SEP_TEXT",
    "SMOLLM2_SYSTEM",
    "TOOLS_EXAMPLE",
    "TOOLS_INTRO",
    "TOOLS_OUTRO",
    "TOOLS_TAGS",
    "AssistantTurn",
    "Call",
    "PlainTurn",
    "QConv",
    "QwenIds",
    "SampledTurn",
    "ToolGroup",
    "ToolsSystem",
]

LPay: TypeAlias = "str | tuple[int, ...]"

#: ``defaultSystem`` (Qwen2.5).
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#: ``mathSystem`` (Qwen2.5-Math).
MATH_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
#: Qwen2 / Qwen2-VL / Qwen2.5-VL: ``{% if loop.first and message['role'] != 'system' %}
#: <|im_start|>system\nYou are a helpful assistant.<|im_end|>``.
HELPFUL_SYSTEM = "You are a helpful assistant."
#: SmolLM2: ``{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
#: \nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}``.
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within "
)
TOOLS_TAGS = " XML tags:\n"
TOOLS_EXAMPLE = '\n{"name": <function-name>, "arguments": <args-json-object>}\n'
CALL_PRE = '\n{"name": "'
CALL_SEP = '", "arguments": '
CALL_POST = "}\n"
RESP_OPEN_TEXT = "<tool_response>\n"
RESP_CLOSE_TEXT = "\n</tool_response>"
RESP_SEP_TEXT = "\n</tool_response>\n<tool_response>\n"


@dataclass(frozen=True)
class QwenIds:
    """``QwenIds``: the control tokens of a Qwen tokenizer."""

    im_start: int
    im_end: int
    call_open: int
    call_close: int
    tool_response: tuple[int, int] | None
    think: tuple[int, int] | None
    extra: tuple[int, ...] = ()

    def body_ctrl(self, t: int) -> bool:
        """``bodyCtrl``: a control token a sampled assistant turn may hold."""
        return t in (self.call_open, self.call_close) or (
            self.think is not None and t in self.think
        )

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id (the format's control tokens first)."""
        out = [self.im_start, self.im_end, self.call_open, self.call_close]
        for pair in (self.tool_response, self.think):
            if pair is not None:
                out.extend(pair)
        return tuple(dict.fromkeys([*out, *self.extra]))


@dataclass(frozen=True)
class Call:
    """``Call``: name and argument text."""

    name: str
    args: str


@dataclass(frozen=True)
class PlainTurn:
    """``QTurn.plain``: a user turn, or a system turn that is not first."""

    role: str  # "system" | "user"
    p: Any
    owner: int


@dataclass(frozen=True)
class ToolsSystem:
    """``QTurn.toolsSystem``."""

    sys: Any  # LPay | None
    tools: tuple[str, ...]
    owner: int


@dataclass(frozen=True)
class AssistantTurn:
    """``QTurn.assistant``."""

    think: Any  # LPay | None
    content: Any
    sep: bool
    calls: tuple[Call, ...]
    owner: int


@dataclass(frozen=True)
class ToolGroup:
    """``QTurn.toolGroup``: ``(payload, owner)`` per result."""

    results: tuple[tuple[Any, int], ...]


@dataclass(frozen=True)
class SampledTurn:
    """``QTurn.sampled``."""

    ts: tuple[int, ...]
    owner: int


QTurn: TypeAlias = "PlainTurn | ToolsSystem | AssistantTurn | ToolGroup | SampledTurn"


@dataclass(frozen=True)
class QConv:
    """``QConv``: turns, and the owner of the generation prompt (``None``: no prompt)."""

    turns: tuple[Any, ...]
    prompt: int | None
