"""Version ``v3`` of the Mistral structure (SentencePiece; Mistral 7B Instruct v0.3): the
transliteration of ``Verified/Spec/MistralV3.lean``.

Reference: ``mistral-common``'s ``MistralTokenizer.encode_chat_completion`` (1.13.1) with
``InstructTokenizerV3``, its ``InstructRequestNormalizer`` and ``MistralRequestValidatorV3``.
``<s>``, then one piece per message with no separator; every text piece between control
tokens is encoded by its own ``self.tokenizer.encode(…)`` call, which writes SentencePiece's
dummy prefix: here a space before each non-empty text piece (:meth:`MistralV3.sp`; the zoo
tokenizer ``mistral-v3`` has no dummy prefix of its own, :mod:`lvt.zoo.spm`). Over Nemo's
tekken vocabulary (``dummy=False``) there is no dummy prefix.

* system (and ``developer``: ``from_openai`` reads it as system) messages write no turn: their
  texts (the non-empty ones) joined with ``"\\n\\n"``
  (``_aggregate_system_prompts``) are folded into the *last* user message,
  ``system_prompt + "\\n\\n" + content`` (V1 ``encode_user_content``: ``if is_last and
  system_prompt``);
* user: ``[AVAILABLE_TOOLS]`` + ``json.dumps(tools)`` + ``[/AVAILABLE_TOOLS]`` before the
  ``[INST]`` of the last user message (``UserMessagePosition.last``), then ``[INST]`` text
  ``[/INST]``;
* assistant: ``content.rstrip(" ")`` *or* (never both: ``Cannot have tool calls and content
  defined in the same assistant message``) ``[TOOL_CALLS]`` and ``json.dumps([{"name": …,
  "arguments": …, "id": …}, …])`` (V3's ``_prepare_function_call``, as v7), then ``</s>``;
* tool: ``[TOOL_RESULTS]`` + ``json.dumps({"content": …, "call_id": …})`` +
  ``[/TOOL_RESULTS]`` (V3 ``encode_tool_message``); the content is the message text parsed
  as JSON when it is JSON, else the text as a JSON string, and ``{}`` when empty
  (``_normalize_json_content`` then ``_parse_json_content``): :func:`content_json`, applied
  by the front end (:meth:`MistralV3.front`; the Lean lowering takes the JSON text as given).

Refused with a :class:`~lvt.errors.ConversationError` naming the message and the reason: a
conversation whose first non-system message is not a user message
(mistral-common inserts an empty ``[INST][/INST]``), system messages and no user message,
consecutive user or assistant messages (mistral-common merges them with ``"\\n\\n"``), a
system message after an assistant or tool message (``Unexpected role``), an assistant
message with both content and calls, call ids not ``[a-zA-Z0-9]{9}``, a result with no call
at its position, and token payloads where v3 writes JSON or folds a system prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lvt.errors import ConversationError
from lvt.families.mistral import (
    AssistantTurn,
    Call,
    MConv,
    Mistral,
    MistralIds,
    ResultTurn,
    SampledTurn,
    SystemTurn,
    UserTurn,
    calls_json,
    rstrip_space,
    scan_val,
    tools_json,
    un_calls_json,
)
from lvt.model import Conversation, Message, Plain, Role, Sampled, Text, ToolCall, content_of
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = ["MistralV3", "content_json", "result_content", "result_json"]


def content_json(content: str) -> str:
    """The front end's JSON text of a tool message's content, as V3 writes it: the content
    normalised (``_normalize_json_content``: ``"{}"`` when empty, else re-dumped when it is
    JSON), then parsed when it is JSON (``_parse_json_content``) and dumped with the result.
    The Lean lowering (``lowerV3``) takes this text as given (it has no JSON parser)."""
    val: Any
    try:
        val = json.loads(content) if content else {}
    except ValueError:
        val = content
    return json.dumps(val, ensure_ascii=False)


def result_json(c: str, call_id: str) -> str:
    """``resultJson``: ``json.dumps({"content": …, "call_id": …})`` of V3's
    ``_prepare_tool_result``, ``c`` being the content's JSON text (:func:`content_json`)."""
    return '{"content": ' + c + ', "call_id": "' + call_id + '"}'


def result_content(j: str) -> str:
    """The message text a :func:`result_json` text came from: its ``content`` as written when
    it is a string, else its JSON (the text itself when it is not such an object)."""
    try:
        val = json.loads(j)
    except ValueError:
        return j
    if not isinstance(val, dict) or "content" not in val:
        return j
    c = val["content"]
    return c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)


#: The roles whose text joins the system prompt: mistral-common's ``from_openai`` reads a
#: ``developer`` message as a system message.
_SYSTEM = (Role.SYSTEM, Role.DEVELOPER)


class MistralV3(Mistral):
    """``V3Fmt``: ids (the SentencePiece v3 vocabulary has no ``[SYSTEM_PROMPT]``:
    ``sys_open``/``sys_close`` are never written) and ``dummy``, whether each text piece
    carries SentencePiece's dummy prefix (Mistral 7B v0.3; not Nemo's tekken)."""

    def __init__(self, ids: MistralIds, dummy: bool = True) -> None:
        super().__init__(ids, "v7")
        self.version = "v3"
        self.dummy = bool(dummy)

    def sp(self, x: str) -> str:
        """``sp``: a text piece as ``self.tokenizer.encode`` sees it: with a SentencePiece
        vocabulary (``dummy``) its dummy prefix, written as a space (``""`` gets none)."""
        return " " + x if self.dummy and x else x

    def unsp(self, x: str) -> str | None:
        """``unsp``: the inverse of :meth:`sp` (``None``: ``x`` is not one of its values)."""
        if not self.dummy or not x:
            return x
        return x[1:] if len(x) >= 2 and x[0] == " " else None

    # -- layout --------------------------------------------------------------------------

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItemsV3``: v7's items with every text piece :func:`sp`-prefixed."""
        i = self.ids
        if isinstance(t, UserTurn):
            o = t.owner
            head = [] if t.tools is None else [ctrl(i.tools, o, False),
                                               text(self.sp(t.tools), o, False),
                                               ctrl(i.end_tools, o, False)]
            return [*head, ctrl(i.inst, o, False), self._pay(t.p, o, False),
                    ctrl(i.end_inst, o, False)]
        if isinstance(t, AssistantTurn):
            o = t.owner
            out = [self._pay(t.p, o, True)]
            if t.calls:
                out += [ctrl(i.calls, o, True), text(self.sp(calls_json(t.calls)), o, True)]
            return [*out, ctrl(i.eos, o, True)]
        if isinstance(t, ResultTurn):
            o = t.owner
            return [ctrl(i.results, o, False), self._pay(t.p, o, False),
                    ctrl(i.end_results, o, False)]
        if isinstance(t, SampledTurn):
            return [core.toks(t.ts, t.owner, True), ctrl(i.eos, t.owner, True)]
        if isinstance(t, SystemTurn):
            return []  # lowering folds system text into the last user turn
        raise TypeError(f"not a Mistral v3 turn: {t!r}")

    def _pay(self, p: Any, o: int, learn: bool) -> Item:
        """``pay (spPay p)``."""
        return text(self.sp(p), o, learn) if isinstance(p, str) else pay(p, o, learn)

    # -- lowering ------------------------------------------------------------------------

    def tools_at(self, c: Conversation) -> int | None:
        """``toolsAt``: the last user message (``UserMessagePosition.last``)."""
        us = [k for k, m in enumerate(c.messages) if m.role == Role.USER]
        return us[-1] if us and c.tools else None

    def _text(self, i: int, m: Message, what: str) -> Any:
        p = content_of(m)
        if p is None:
            raise ConversationError(i, f"Mistral v3 writes a {what} as one plain block")
        return p

    def _asst(self, i: int, m: Message) -> Any:
        bs = m.blocks
        if len(bs) == 1 and isinstance(bs[0], Sampled):
            return SampledTurn(bs[0].ids, i)
        rest = list(bs)
        p: Any = ""
        if rest and isinstance(rest[0], Plain):
            p = content_of(Message(Role.ASSISTANT, (rest.pop(0),)))
        if not all(isinstance(b, ToolCall) for b in rest):
            raise ConversationError(i, "Mistral v3 writes an assistant message as content or "
                                    "tool calls (no reasoning)")
        if rest and not (isinstance(p, str) and p == ""):
            raise ConversationError(i, "mistral-common v3 refuses an assistant message with "
                                    "both content and tool calls ('Cannot have tool calls and "
                                    "content defined in the same assistant message')")
        calls = self._call_ids(i, [Call(b.name, b.args or "{}", b.id) for b in rest])
        if isinstance(p, str) and p == "" and not calls:
            raise ConversationError(i, "mistral-common refuses an assistant message with "
                                    "neither content nor tool calls")
        return AssistantTurn(rstrip_space(p), calls, i)

    def lower(self, c: Conversation) -> MConv:
        """:meth:`front` then ``lowerV3`` (:meth:`lower_core`).

        Raises:
            ConversationError: the conversation cannot be expressed in v3.
        """
        return self.lower_core(self.front(c))

    @staticmethod
    def front(c: Conversation) -> Conversation:
        """The front end's step before lowering: each tool message's text replaced by its
        JSON as V3 writes it (:func:`content_json`)."""
        def one(m: Message) -> Message:
            p = content_of(m) if m.role == Role.TOOL else None
            if not isinstance(p, str):
                return m
            return Message(m.role, (Plain(Text(content_json(p))),))
        return Conversation([one(m) for m in c.messages], c.add_generation_prompt, c.tools)

    def lower_core(self, c: Conversation) -> MConv:
        """``lowerV3``: the conversation after :meth:`front`."""
        ms = c.messages
        tools = None
        if c.tools:
            tools = tools_json(c.tools)
            if tools is None:
                raise ConversationError(None, "a Mistral tool definition must be "
                                        '{"type": "function", "function": {"name": str, '
                                        '"description": str, "parameters": object}}')
        users = [k for k, m in enumerate(ms) if m.role == Role.USER]
        systems = []
        for k, m in enumerate(ms):
            if m.role in _SYSTEM:
                p = self._text(k, m, f"{m.role.value} message")
                if not isinstance(p, str):
                    raise ConversationError(k, "Mistral v3 folds a system message into the last "
                                            "user message's text: it must be text, not tokens")
                if p:  # `if message.role == Roles.system and message.content`
                    systems.append(p)
        system = "\n\n".join(systems) if systems else None
        if system is not None and not users:
            raise ConversationError(None, "Mistral v3 folds the system prompt into the last user "
                                    "message, and there is none (mistral-common inserts an "
                                    "empty one; lvt refuses)")
        at = users[-1] if users and tools is not None else None
        turns: list[Any] = []
        pend: list[str | None] = []
        done = 0
        prev: Role | None = None
        for i, m in enumerate(ms):
            if m.role in _SYSTEM:  # `from_openai` reads a developer message as a system one
                if prev in (Role.ASSISTANT, Role.TOOL):
                    raise ConversationError(i, f"mistral-common raises 'Unexpected role "
                                            f"'system' after role '{prev.value}'' (a "
                                            f"{m.role.value} message is a system message)")
                continue
            if prev is None and m.role != Role.USER:
                raise ConversationError(i, "Mistral v3: the first message after the system "
                                        "messages must be a user message (mistral-common "
                                        "inserts an empty [INST][/INST]; lvt refuses)")
            if prev is not None and m.role == prev and m.role in (Role.USER, Role.ASSISTANT):
                raise ConversationError(i, f"{m.role.value} after {prev.value}: mistral-common "
                                        "merges consecutive messages of one role; lvt requires "
                                        "alternation")
            if m.role == Role.USER:
                p = self._text(i, m, "user message")
                if system is not None and i == users[-1]:
                    if not isinstance(p, str):
                        raise ConversationError(i, "Mistral v3 folds the system prompt into the "
                                                "last user message: it must be text, not tokens")
                    p = system + "\n\n" + p  # `system_prompt + "\n\n" + content`
                t: Any = UserTurn(tools if i == at else None, p, i)
            elif m.role == Role.ASSISTANT:
                t = self._asst(i, m)
            elif m.role == Role.TOOL:
                rid = pend[done] if done < len(pend) else None
                if rid is None or not (isinstance(turns[-1], ResultTurn) or (
                        isinstance(turns[-1], AssistantTurn) and turns[-1].calls)):
                    raise ConversationError(i, "Mistral v3 writes the id of the call answered in "
                                            "every tool result ({\"content\": …, \"call_id\": "
                                            "…}), and no call is at this result's position (the "
                                            "k-th result of a run answers the k-th call)")
                p = self._text(i, m, "tool result")
                if not isinstance(p, str):
                    raise ConversationError(i, "Mistral v3 writes a tool result inside JSON: it "
                                            "must be text, not tokens")
                t = ResultTurn(result_json(p, rid), i)  # `resultJson c x`
            else:
                raise ConversationError(i, f"Mistral v3 has no {m.role.value} role (system, "
                                        "user, assistant and tool only)")
            pend, done = (([k.id for k in t.calls], 0) if isinstance(t, AssistantTurn) else
                          (pend, done + 1) if isinstance(t, ResultTurn) else ([], 0))
            turns.append(t)
            prev = m.role
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(t.owner, why)
        return MConv(tuple(turns), len(ms) if c.add_generation_prompt else None)

    def turn_ok(self, t: Any) -> str | None:
        """``turnOk``: v7's checks, call arguments that scan (``scanOk``) included."""
        if isinstance(t, AssistantTurn):
            for k in t.calls:
                if scan_val(k.args + ",", 0) != len(k.args):
                    return (f"tool call arguments {k.args!r} would not read back from the v3 "
                            "JSON call list (a ',', '}' or ']' outside strings and brackets, or "
                            "a string or bracket left open)")
        return super().turn_ok(t)

    # -- reading back --------------------------------------------------------------------

    def _until_sp(self, s: Stream, k: int, close: int) -> tuple[str, int] | None:
        r = self._until(s, k, close)
        if r is None:
            return None
        x = self.unsp(r[0])
        return None if x is None else (x, r[1])

    def unlayout(self, s: Stream) -> MConv | None:
        """``unlayoutV3``: a symbol stream back to a lowered conversation (owners 0)."""
        i = self.ids
        if not s or s[0] != i.bos or not isinstance(s[0], int):
            return None
        k, turns = 1, []
        while k < len(s):
            x = s[k]
            if isinstance(x, int) and x in (i.tools, i.inst):
                tools = None
                if x == i.tools:
                    r = self._until_sp(s, k + 1, i.end_tools)
                    if r is None or r[1] >= len(s) or s[r[1]] != i.inst:
                        return None
                    tools, k = r[0], r[1]
                r = self._until_sp(s, k + 1, i.end_inst)
                if r is None:
                    return None
                turns.append(UserTurn(tools, r[0], 0))
                k = r[1]
            elif x == i.results and isinstance(x, int):
                r = self._until_sp(s, k + 1, i.end_results)
                if r is None:
                    return None
                turns.append(ResultTurn(r[0], 0))
                k = r[1]
            else:
                r2 = self._assistant(s, k)
                if r2 is None:
                    return None
                turns.append(r2[0])
                k = r2[1]
        return MConv(tuple(turns), None)

    def _assistant(self, s: Stream, k: int) -> tuple[AssistantTurn, int] | None:
        i = self.ids
        raw, k = core.take_text_at(s, k)
        p = self.unsp(raw)
        if p is None:
            return None
        calls: Sequence[Call] = ()
        if k < len(s) and s[k] == i.calls and isinstance(s[k], int):
            x = s[k + 1] if k + 1 < len(s) and isinstance(s[k + 1], str) else ""
            body = self.unsp(x)
            cs = None if body is None or p else un_calls_json(body)
            if cs is None:
                return None
            calls, k = cs, k + 2
        if k < len(s) and s[k] == i.eos and isinstance(s[k], int):
            return AssistantTurn(p, tuple(calls), 0), k + 1
        return None
