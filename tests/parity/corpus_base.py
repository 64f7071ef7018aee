"""Building blocks of the parity corpus: message constructors, the family-independent
:class:`Scenario`, and the tags that are derived from a conversation's shape.

A scenario is written once, in the OpenAI/HF message format with every feature it uses
(tool-call arguments as dicts, reasoning under ``reasoning_content``); ``corpus.py`` filters
and adapts it per family. Tags that follow from the messages (``system``, ``parallel-calls``,
``unicode``, ``whitespace``, ...) are computed here, so they cannot drift from the content.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]
Tool = dict[str, Any]

#: What a scenario may need from a family's template (beyond plain user/assistant chat).
NEEDS: frozenset[str] = frozenset(
    {
        "tools",  # tool definitions, tool calls or tool results
        "parallel",  # several tool calls in one assistant message
        "reasoning",  # reasoning_content on assistant turns
        "mid-system",  # a system message after the first position
        "non-alternating",  # two user messages in a row, or the assistant speaks first
    }
)


def system(text: str) -> Message:
    """A system message."""
    return {"role": "system", "content": text}


def user(text: str) -> Message:
    """A user message."""
    return {"role": "user", "content": text}


def assistant(text: str, reasoning: str | None = None) -> Message:
    """An assistant answer, optionally with reasoning (``reasoning_content``)."""
    m: Message = {"role": "assistant", "content": text}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    return m


def call(call_id: str, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """One tool call in the HF convention (arguments as a dict)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": dict(arguments)},
    }


def calls(
    *tool_calls: dict[str, Any], content: str | None = "", reasoning: str | None = None
) -> Message:
    """An assistant message making ``tool_calls`` (``content`` ``""``, ``None`` or text)."""
    m: Message = {"role": "assistant", "content": content, "tool_calls": list(tool_calls)}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    return m


def result(call_id: str, name: str, content: str) -> Message:
    """A tool result (role ``tool``) answering the call ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


@dataclass(frozen=True)
class Scenario:
    """A family-independent conversation; ``needs`` says what the template must support."""

    name: str
    messages: list[Message]
    tools: list[Tool] | None = None
    add_generation_prompt: bool = False
    extra_tags: frozenset[str] = frozenset()
    needs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = self.needs - NEEDS
        if unknown:
            raise ValueError(f"{self.name}: unknown needs {sorted(unknown)}")

    def copy_messages(self) -> list[Message]:
        """A deep copy of the messages (cases never share mutable data)."""
        return copy.deepcopy(self.messages)


def scenario(
    name: str,
    messages: list[Message],
    *,
    tools: list[Tool] | None = None,
    gen: bool | None = None,
    tags: Iterable[str] = (),
    needs: Iterable[str] = (),
) -> Scenario:
    """Build a :class:`Scenario`; ``gen`` defaults to "the conversation ends with the user or
    a tool result" and ``needs`` is completed from the messages (tools, parallel calls,
    reasoning, a late system message, non-alternating turns)."""
    if gen is None:
        gen = messages[-1]["role"] != "assistant"
    derived = set(needs)
    if tools or any(m.get("tool_calls") or m["role"] == "tool" for m in messages):
        derived.add("tools")
    if any(len(m.get("tool_calls") or []) > 1 for m in messages):
        derived.add("parallel")
    if any("reasoning_content" in m for m in messages):
        derived.add("reasoning")
    if any(m["role"] == "system" for m in messages[1:]):
        derived.add("mid-system")
    if not _alternates(messages):
        derived.add("non-alternating")
    return Scenario(
        name, messages, tools, bool(gen), frozenset(tags), frozenset(derived)
    )


def _alternates(messages: list[Message]) -> bool:
    """Whether the turns are user/assistant/user/... after an optional leading system
    message (tool messages count as a break of alternation)."""
    rest = messages[1:] if messages and messages[0]["role"] == "system" else messages
    return all(m["role"] == ("user" if i % 2 == 0 else "assistant") for i, m in enumerate(rest))


# ---------------------------------------------------------------------------------------------
# Derived tags


def iter_strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (dict keys included), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from iter_strings(k)
            yield from iter_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from iter_strings(v)


def _has(text: str, ranges: Iterable[tuple[int, int]]) -> bool:
    rs = tuple(ranges)
    return any(lo <= ord(ch) <= hi for ch in text for lo, hi in rs)


_CJK = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0x20000, 0x2FFFF))
_RTL = ((0x0590, 0x08FF), (0xFB1D, 0xFDFF), (0xFE70, 0xFEFF))
_EMOJI = ((0x1F000, 0x1FAFF), (0x2600, 0x27BF))
_ACCENTS = ((0x00C0, 0x024F), (0x0300, 0x036F))


def derived_tags(
    messages: list[Message], tools: list[Tool] | None, add_generation_prompt: bool
) -> frozenset[str]:
    """The feature tags that follow from a conversation's shape and text."""
    tags: set[str] = set()
    tags.add("system" if messages[0]["role"] == "system" else "no-system")
    if any(m["role"] == "system" for m in messages[1:]):
        tags.add("mid-system")
    if tools:
        tags.add("tools")
    call_msgs = [m for m in messages if m.get("tool_calls")]
    if any(len(m["tool_calls"]) == 1 for m in call_msgs):
        tags.add("single-call")
    if any(len(m["tool_calls"]) > 1 for m in call_msgs):
        tags.add("parallel-calls")
    if len(call_msgs) > 1:
        tags.add("sequential-calls")
    if any(m.get("content") and m.get("tool_calls") for m in messages):
        tags.add("content-and-calls")
    if any(m["role"] == "tool" for m in messages):
        tags.add("tool-result")
    if any(a["role"] == b["role"] == "tool" for a, b in itertools.pairwise(messages)):
        tags.add("consecutive-tool-results")
    if any(m.get("reasoning_content") is not None or "thinking" in m for m in messages):
        tags.add("reasoning")
    if sum(m["role"] == "user" for m in messages) > 1:
        tags.add("multi-turn")
    if len(call_msgs) >= 4 and len(messages) >= 10:
        tags.add("long-agent-loop")
    tags.add("gen-prompt" if add_generation_prompt else "assistant-last")
    if any(m.get("content") in ("", None) for m in messages):
        tags.add("empty-content")
    texts = [
        s
        for m in messages
        for key in ("content", "reasoning_content", "thinking")
        if isinstance(s := m.get(key), str)
    ]
    if any(s != s.strip() or "\r\n" in s or "\t" in s for s in texts if s):
        tags.add("whitespace")
    every = list(iter_strings(messages)) + list(iter_strings(tools or []))
    if any("```" in s for s in every):
        tags.add("code")
    joined = "".join(every)
    if any(ord(ch) > 127 for ch in joined):
        tags.add("unicode")
    for tag, ranges in (("cjk", _CJK), ("rtl", _RTL), ("emoji", _EMOJI), ("accents", _ACCENTS)):
        if _has(joined, ranges):
            tags.add(tag)
    return frozenset(tags)
