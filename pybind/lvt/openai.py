"""Conversion from the OpenAI / Hugging Face chat message shape to :mod:`lvt.model`.

Accepted message shape (a ``dict`` per message)::

    {"role": "system" | "developer" | "user" | "assistant" | "tool",
     "content": str | None | [{"type": "text", "text": str}, ...],
     "reasoning_content": str,            # also accepted as "reasoning" or "thinking"
     "tool_calls": [{"id": str, "type": "function",
                     "function": {"name": str, "arguments": dict | str}}, ...],
     "tool_call_id": str}                 # tool messages

Rules (text is never normalised here: the family's lowering trims where its template trims):

* The body is, in order: a :class:`~lvt.model.Reasoning` block (when reasoning is non-empty;
  with ``keep_empty_reasoning``, whenever a reasoning field is present, for the formats whose
  template tests the field's presence rather than its truth: gpt-oss writes an empty analysis
  message for ``"thinking": ""`` on the final training turn), a :class:`~lvt.model.Plain`
  block (when the content is non-empty), then one :class:`~lvt.model.ToolCall` per call.
* Empty-string content (and ``None``) maps to *no* plain block.
* List-of-parts content: the texts of the ``"text"`` parts are concatenated; any other part
  type is an error.
* Tool-call arguments are written as ``tojson`` writes them (``json.dumps(x,
  ensure_ascii=False)``): an object as is; a string holding JSON is parsed first, as vLLM does
  before it applies a chat template; any other string is kept verbatim. With
  ``verbatim_arguments`` (the formats whose template writes the argument string as given:
  DeepSeek-R1's ``'\\n```json\\n' + tool['function']['arguments']``), every argument string
  is kept exactly as written (compact, spaced, pretty-printed or ``\\u``-escaped JSON alike),
  and an object, on which that template raises, is written as ``tojson`` writes it.
* ``tools`` (JSON tool schemas) are a typed part of the conversation; each family places and
  lays them out as its template does.
* A call's ``id`` becomes :attr:`~lvt.model.ToolCall.id` (families whose templates ignore ids
  ignore it). Tool results carry no id of their own: lvt pairs results with calls *by
  position* (the k-th tool message of a run of results answers the k-th call of the assistant
  message before the run), so a tool message's ``tool_call_id``, when given, must equal the id
  of the call at its position (when that call has an id); a tool message with no call at its
  position is accepted here and left to the family's lowering.

Every problem with the messages or the tools raises :class:`~lvt.errors.ConversationError`
with the message index (tool definitions and call arguments nested deeper than 64 levels
included, whether given as objects or as JSON strings); an ``add_generation_prompt`` that is
not a ``bool`` and a batch that is not a list of conversations raise
:class:`~lvt.errors.ArgumentError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lvt.errors import ArgumentError, ConversationError
from lvt.jsonfmt import compact, freeze
from lvt.model import (
    Block,
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Text,
    ToolCall,
    check_bool,
)

__all__ = ["from_openai", "from_openai_batch", "tool_arguments"]

_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def tool_arguments(args: Any, where: str = "arguments", *, verbatim: bool = False) -> str:
    """The argument text of a call as ``tojson`` writes it: objects serialised, strings that
    hold JSON parsed and serialised, other strings verbatim, ``None`` as ``{}``. With
    ``verbatim``, every string is kept exactly as written (objects are still serialised).

    Raises:
        ConversationError: the arguments are not JSON data or are nested deeper than 64
            levels (a JSON string too, unless ``verbatim``).
    """
    if args is None:
        return "{}"
    if isinstance(args, str) and verbatim:
        return args
    if isinstance(args, str):
        try:
            value = json.loads(args)
        except ValueError:
            return args
        except RecursionError:  # JSON nested far beyond the bound freeze enforces
            raise ConversationError(None, f"{where}: nested deeper than 64 levels") from None
        return compact(freeze(value, where=where))
    return compact(freeze(args, where=where))


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


def _tool_call(i: int, j: int, call: Any, verbatim: bool = False) -> ToolCall:
    if not isinstance(call, Mapping):
        raise ConversationError(i, f"tool call {j} must be a dict, got {type(call).__name__}")
    fn = call.get("function", call)
    if not isinstance(fn, Mapping):
        raise ConversationError(i, f"tool call {j}: 'function' must be a dict")
    name = _check_str(i, f"tool call {j} name", fn.get("name"))
    raw = fn.get("arguments", fn.get("parameters"))
    if isinstance(raw, str):
        _check_str(i, f"tool call {j} arguments", raw)
    try:
        args = tool_arguments(raw, where=f"tool call {j} arguments", verbatim=verbatim)
    except ConversationError as e:
        raise ConversationError(i, e.reason) from None
    ident = call.get("id")
    if ident is not None:
        _check_str(i, f"tool call {j} id", ident)
    return ToolCall(name, args, ident)


def _check_result_id(i: int, tool_call_id: Any, call: ToolCall | None) -> None:
    """A tool message's ``tool_call_id`` names the call at its position (results are paired
    with calls by position)."""
    if tool_call_id is None:
        return
    _check_str(i, "tool_call_id", tool_call_id)
    if call is not None and call.id is not None and call.id != tool_call_id:
        raise ConversationError(
            i, f"tool_call_id {tool_call_id!r} is not the id {call.id!r} of the call at this "
            "result's position (lvt pairs the k-th tool message of a run of results with the "
            "k-th call of the assistant message before it)")


def from_openai(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    *,
    keep_empty_reasoning: bool = False,
    verbatim_arguments: bool = False,
) -> Conversation:
    """Convert OpenAI/HF chat messages to a :class:`~lvt.model.Conversation` (see the module
    docstring for the exact rules). ``keep_empty_reasoning``: an empty reasoning field becomes
    an empty :class:`~lvt.model.Reasoning` block instead of none; ``verbatim_arguments``:
    argument strings are kept exactly as written instead of parsed and serialised again
    (:meth:`lvt.ChatEncoder.from_openai` sets both from the format).

    Raises:
        ConversationError: with the message index and the reason.
        ArgumentError: ``add_generation_prompt``, ``keep_empty_reasoning`` or
            ``verbatim_arguments`` is not a ``bool``.
    """
    agp = check_bool("add_generation_prompt", add_generation_prompt)
    keep = check_bool("keep_empty_reasoning", keep_empty_reasoning)
    raw = check_bool("verbatim_arguments", verbatim_arguments)
    return _convert(messages, _freeze_tools(tools), agp, keep, raw)


def from_openai_batch(
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    *,
    keep_empty_reasoning: bool = False,
    verbatim_arguments: bool = False,
) -> list[Conversation]:
    """:func:`from_openai` on every conversation of a batch that shares one tool list (a GRPO
    group, a rollout batch), describing the tools once instead of once per conversation.

    Raises:
        ConversationError: naming the conversation and the message index, and the reason.
        ArgumentError: ``conversations`` is not a list of message lists, or
            ``add_generation_prompt`` is not a ``bool``.
    """
    if isinstance(conversations, str | bytes | Mapping) or not isinstance(
        conversations, Sequence
    ):
        raise ArgumentError("conversations", f"expected a list of message lists, got "
                            f"{type(conversations).__name__}")
    agp = check_bool("add_generation_prompt", add_generation_prompt)
    keep = check_bool("keep_empty_reasoning", keep_empty_reasoning)
    raw = check_bool("verbatim_arguments", verbatim_arguments)
    desc = _freeze_tools(tools)
    out: list[Conversation] = []
    for k, messages in enumerate(conversations):
        try:
            out.append(_convert(messages, desc, agp, keep, raw))
        except ConversationError as e:
            raise ConversationError(e.message_index, f"conversation {k}: {e.reason}") from None
    return out


def _freeze_tools(tools: Any) -> tuple[Any, ...] | None:
    """The tool list as frozen JSON (``None``: no tools given)."""
    if tools is None:
        return None
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise ConversationError(None, f"tools must be a list of JSON objects, got "
                                f"{type(tools).__name__}")
    out = []
    for k, t in enumerate(tools):
        if not isinstance(t, Mapping):
            raise ConversationError(None, f"tool {k} must be a JSON object, got "
                                    f"{type(t).__name__}")
        out.append(freeze(dict(t), where=f"tool {k}"))
    return tuple(out)


def _convert(
    messages: Sequence[Mapping[str, Any]], tools: tuple[Any, ...] | None,
    add_generation_prompt: bool, keep_empty_reasoning: bool, verbatim_arguments: bool = False,
) -> Conversation:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ConversationError(None, "messages must be a list of dicts")
    if len(messages) == 0:
        raise ConversationError(None, "empty conversation")
    out: list[Message] = []
    pending: list[ToolCall] = []  # the calls the next tool messages answer, in order
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            hint = " (an lvt.Message goes straight into lvt.Conversation)" if isinstance(
                msg, Message) else ""
            raise ConversationError(i, f"message must be a dict, got {type(msg).__name__}{hint}")
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
            # empty reasoning is no reasoning where the template tests its truth
            if r or keep_empty_reasoning:
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
            blocks.extend(_tool_call(i, j, c, verbatim_arguments) for j, c in enumerate(calls))
        if role == Role.TOOL:
            _check_result_id(i, msg.get("tool_call_id"), pending[0] if pending else None)
            pending = pending[1:]
        else:
            pending = [b for b in blocks if isinstance(b, ToolCall)]
        out.append(Message(role, tuple(blocks)))
    return Conversation(tuple(out), add_generation_prompt, tools)
