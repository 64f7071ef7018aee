"""Conversion from the OpenAI / Hugging Face chat message shape to :mod:`lvt.model`.

Accepted message shape (a ``dict`` per message)::

    {"role": "system" | "developer" | "user" | "assistant" | "tool",
     "content": str | None | [{"type": "text", "text": str}, ...],
     "reasoning_content": str,            # also accepted as "reasoning" or "thinking"
     "tool_calls": [{"type": "function",
                     "function": {"name": str, "arguments": str | dict}}, ...]}

Rules (text is never normalised: no stripping, no Unicode normalisation):

* The body is, in order: a :class:`~lvt.model.Reasoning` block (when reasoning text is
  present and non-empty), a :class:`~lvt.model.Plain` block (when the content is non-empty),
  then one neutral :class:`~lvt.model.ToolCall` per tool call (``name`` and ``arguments``
  text; :meth:`lvt.formats.FormatSpec.shape_tool_call` lays it out for a format).
* Empty-string content (and ``None``) maps to *no* plain block; likewise empty reasoning.
* List-of-parts content: the texts of the ``"text"`` parts are concatenated with nothing in
  between; any other part type is an error.
* Tool-call arguments given as a ``dict`` are serialised with
  ``json.dumps(arguments, ensure_ascii=False)``; string arguments are kept verbatim; ``None``
  is ``"{}"``.
* ``tools`` (a list of JSON tool schemas) becomes text of the *first system message*
  (appended after a blank line, or a new system message at the start), in the layout of the
  Qwen templates: ``# Tools`` …, one ``json.dumps(tool, ensure_ascii=False)`` per line between
  ``<tools>`` and ``</tools>``. Formats without a system role then refuse the conversation.

Every problem raises :class:`~lvt.errors.ConversationError` with the message index.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lvt.errors import ConversationError
from lvt.model import Block, Conversation, Message, Plain, Reasoning, Role, Text, ToolCall

__all__ = ["from_openai", "from_openai_batch", "tools_text"]

_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def tools_text(tools: Sequence[Mapping[str, Any]]) -> str:
    """The system-prompt text that describes ``tools`` (Qwen-template layout)."""
    lines = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
        + lines
        + "\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def _check_str(i: int, what: str, s: Any) -> str:
    if not isinstance(s, str):
        raise ConversationError(i, f"{what} must be a string, got {type(s).__name__}")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ConversationError(
            i, f"{what} contains a lone surrogate U+{ord(s[e.start]):04X} at offset {e.start}"
        ) from None
    return s


def _content_text(i: int, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return _check_str(i, "content", content)
    if isinstance(content, list | tuple):
        parts: list[str] = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                parts.append(_check_str(i, f"content part {j}", part))
                continue
            if not isinstance(part, Mapping):
                raise ConversationError(
                    i, f"content part {j} must be a dict, got {type(part).__name__}"
                )
            kind = part.get("type", "text")
            if kind != "text":
                raise ConversationError(i, f"content part {j} has unsupported type {kind!r}")
            parts.append(_check_str(i, f"content part {j} text", part.get("text")))
        return "".join(parts)
    raise ConversationError(
        i, f"content must be a string, a list of text parts or None, got {type(content).__name__}"
    )


def _tool_call(i: int, j: int, call: Any) -> ToolCall:
    if not isinstance(call, Mapping):
        raise ConversationError(i, f"tool call {j} must be a dict, got {type(call).__name__}")
    fn = call.get("function", call)
    if not isinstance(fn, Mapping):
        raise ConversationError(i, f"tool call {j}: 'function' must be a dict")
    name = _check_str(i, f"tool call {j} name", fn.get("name"))
    args = fn.get("arguments", fn.get("parameters"))
    if args is None:
        args = "{}"
    elif isinstance(args, Mapping):
        try:
            args = json.dumps(args, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            raise ConversationError(i, f"tool call {j}: arguments are not JSON: {e}") from None
    args = _check_str(i, f"tool call {j} arguments", args)
    return ToolCall(Text(name), Text(args))


def from_openai(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
) -> Conversation:
    """Convert OpenAI/HF chat messages to a :class:`~lvt.model.Conversation` (see the module
    docstring for the exact rules).

    Raises:
        ConversationError: with the message index and the reason.
    """
    return _convert(messages, tools_text(tools) if tools else None, add_generation_prompt)


def from_openai_batch(
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
) -> list[Conversation]:
    """:func:`from_openai` on every conversation of a batch that shares one tool list (a GRPO
    group, a rollout batch), describing the tools once instead of once per conversation.

    Raises:
        ConversationError: naming the conversation and the message index, and the reason.
    """
    desc = tools_text(tools) if tools else None
    out: list[Conversation] = []
    for k, messages in enumerate(conversations):
        try:
            out.append(_convert(messages, desc, add_generation_prompt))
        except ConversationError as e:
            raise ConversationError(e.message_index, f"conversation {k}: {e.reason}") from None
    return out


def _convert(
    messages: Sequence[Mapping[str, Any]], desc: str | None, add_generation_prompt: bool
) -> Conversation:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ConversationError(None, "messages must be a list of dicts")
    if len(messages) == 0:
        raise ConversationError(None, "empty conversation")
    out: list[Message] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise ConversationError(i, f"message must be a dict, got {type(msg).__name__}")
        role_s = msg.get("role")
        try:
            role = Role(role_s)
        except ValueError:
            raise ConversationError(
                i, f"unknown role {role_s!r} (expected one of {[r.value for r in Role]})"
            ) from None
        blocks: list[Block] = []
        reasoning = next((msg[k] for k in _REASONING_KEYS if msg.get(k) is not None), None)
        if reasoning is not None:
            r = _check_str(i, "reasoning", reasoning)
            if r:
                blocks.append(Reasoning(Text(r)))
        text = _content_text(i, msg.get("content"))
        if text:
            blocks.append(Plain(Text(text)))
        calls = msg.get("tool_calls")
        if calls:
            if role != Role.ASSISTANT:
                raise ConversationError(i, f"only assistant messages carry tool calls, not {role}")
            if not isinstance(calls, list | tuple):
                raise ConversationError(i, "tool_calls must be a list")
            blocks.extend(_tool_call(i, j, c) for j, c in enumerate(calls))
        out.append(Message(role, tuple(blocks)))
    if desc is not None:
        first = out[0]
        if first.role == Role.SYSTEM:
            prev = "".join(
                b.payload.text for b in first.blocks
                if isinstance(b, Plain) and isinstance(b.payload, Text)
            )
            out[0] = Message(Role.SYSTEM, (Plain(Text(prev + "\n\n" + desc if prev else desc)),))
        else:
            out.insert(0, Message(Role.SYSTEM, (Plain(Text(desc)),)))
    return Conversation(tuple(out), add_generation_prompt)
