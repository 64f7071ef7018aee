"""The Mistral (tekken) family: the transliteration of ``Verified/Spec/Mistral*.lean``.

Reference: ``mistral-common``'s ``MistralTokenizer.encode_chat_completion`` (1.13.1) with the
instruct tokenizers v7, v11 and v13 (``InstructTokenizerV7/V11/V13``, their request
normalizers and validators). Lowering (:meth:`Mistral.lower`), layout (:meth:`Mistral.layout`)
and its inverse (:meth:`Mistral.unlayout`) mirror the Lean definitions; where Lean returns
``none`` the Python side raises :class:`~lvt.errors.ConversationError`. Every quirk reproduced
here quotes the construct it mirrors.

``<s>``, then one piece per message, no separators:

* system: ``[SYSTEM_PROMPT]`` text ``[/SYSTEM_PROMPT]`` where the message is (v7+
  ``encode_system_message``; a system message is never folded into a user turn);
* user: ``[AVAILABLE_TOOLS]`` + ``json.dumps(tools)`` + ``[/AVAILABLE_TOOLS]`` before the
  ``[INST]`` of the *last* user message (v7, v11: ``UserMessagePosition.last``) or the *first*
  (v13: ``UserMessagePosition.first``), then ``[INST]`` text ``[/INST]``;
* assistant: ``content.rstrip(" ")``, then the calls, then ``</s>``; the answer after tool
  results follows ``[/TOOL_RESULTS]`` directly. v7: ``[TOOL_CALLS]`` and
  ``json.dumps([{"name": …, "arguments": …, "id": …}, …])``; v11: per call
  ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]ARGS``; v13: per call ``[TOOL_CALLS]NAME[ARGS]ARGS``;
* tool: v7/v11 ``[TOOL_RESULTS]ID[TOOL_CONTENT]`` content ``[/TOOL_RESULTS]``, v13
  ``[TOOL_RESULTS]`` content ``[/TOOL_RESULTS]``.

The generation prompt writes nothing (``encode_chat_completion`` ends a prompt at ``[/INST]``
or ``[/TOOL_RESULTS]``). Call ids live on the calls (:attr:`lvt.model.ToolCall.id`): v7 and
v11 need one on every call, ``[a-zA-Z0-9]{9}`` (mistral-common's validator; v11 also refuses
two calls of one message with the same id), and the k-th tool message of a run of results
answers the k-th call of the assistant message before it and writes that call's id (a result
with no call at its position is refused there). v13 writes no id and ignores them.
``stable`` places the tools before the first user message for every version (history is never
rewritten when a user message is appended); for v13 it is the same as the exact mode.
Consecutive user or assistant messages (which ``mistral-common`` merges with ``"\\n\\n"``) are
refused, as the Small 3.x templates require alternation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.jsonfmt import JObj, compact
from lvt.model import Conversation, Message, Plain, Role, Sampled, ToolCall, content_of
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = [
    "VERSIONS", "AssistantTurn", "Call", "MConv", "Mistral", "MistralIds", "ResultTurn",
    "SampledTurn", "SystemTurn", "UserTurn", "tools_json",
]

#: The instruct tokenizer versions (``TokenizerVersion``) the family renders.
VERSIONS: tuple[str, ...] = ("v7", "v11", "v13")


@dataclass(frozen=True)
class MistralIds:
    """``MistralIds``: the control tokens of a tekken tokenizer (``args``/``call_id``:
    ``[ARGS]``/``[CALL_ID]`` when the vocabulary names them; Nemo's does not;
    ``tool_content``: ``[TOOL_CONTENT]``, which v7/v11 results write)."""

    bos: int
    eos: int
    inst: int
    end_inst: int
    tools: int
    end_tools: int
    results: int
    end_results: int
    calls: int
    sys_open: int
    sys_close: int
    args: int | None = None
    call_id: int | None = None
    tool_content: int | None = None
    extra: tuple[int, ...] = ()

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id (``MistralIds.reserved``)."""
        base = [self.bos, self.eos, self.inst, self.end_inst, self.tools, self.end_tools,
                self.results, self.end_results, self.calls, self.sys_open, self.sys_close]
        opt = [t for t in (self.args, self.call_id, self.tool_content) if t is not None]
        return tuple(dict.fromkeys([*base, *opt, *self.extra]))


@dataclass(frozen=True)
class SystemTurn:
    """``MTurn.system``."""

    p: Any
    owner: int


@dataclass(frozen=True)
class UserTurn:
    """``MTurn.user``: ``tools`` is the ``json.dumps`` text of the tool list written before
    the ``[INST]`` (``None``: no ``[AVAILABLE_TOOLS]`` block)."""

    tools: str | None
    p: Any
    owner: int


@dataclass(frozen=True)
class Call:
    """``MCall``: name, arguments and id (``None`` in v13, which writes no id)."""

    name: str
    args: str
    id: str | None = None


@dataclass(frozen=True)
class AssistantTurn:
    """``MTurn.assistant``: content (``rstrip(" ")``-ed text or tokens) and calls."""

    p: Any
    calls: tuple[Call, ...]
    owner: int


@dataclass(frozen=True)
class ResultTurn:
    """``MTurn.result``: ``id`` is the id of the call answered (v7/v11; ``None`` in v13)."""

    p: Any
    owner: int
    id: str | None = None


@dataclass(frozen=True)
class SampledTurn:
    """``MTurn.sampled``."""

    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class MConv:
    """``MConv``: turns, and the owner of the generation prompt (it writes no token)."""

    turns: tuple[Any, ...]
    prompt: int | None


def _get(j: Any, key: str) -> Any:
    if isinstance(j, JObj):
        for k, v in j.members:
            if k == key:
                return v
    return _MISSING


_MISSING = object()


def tool_json(t: Any) -> JObj | None:
    """``toolJson``: a tool definition as ``Tool.model_dump(exclude={"function": {"strict"}})``
    writes it, ``{"type": "function", "function": {"name", "description", "parameters"}}``
    (description default ``""``, parameters default ``{}``); ``None`` when it is not one."""
    if _get(t, "type") not in ("function", _MISSING):
        return None
    fn = _get(t, "function")
    name = _get(fn, "name")
    if not isinstance(name, str):
        return None
    desc = _get(fn, "description")
    desc = "" if desc is _MISSING else desc
    params = _get(fn, "parameters")
    params = JObj(()) if params is _MISSING else params
    if not isinstance(desc, str) or not isinstance(params, JObj):
        return None
    return JObj((("type", "function"), ("function", JObj((
        ("name", name), ("description", desc), ("parameters", params))))))


def tools_json(tools: Sequence[Any]) -> str | None:
    """``toolsJson``: ``json.dumps(tools, ensure_ascii=False)`` of the normalised list."""
    out = []
    for t in tools:
        j = tool_json(t)
        if j is None:
            return None
        out.append(compact(j))
    return "[" + ", ".join(out) + "]"


def rstrip_space(p: Any) -> Any:
    """``message.content.rstrip(" ")`` (``_encode_normal_content_assistant_message``) on
    text; token payloads are kept."""
    return p.rstrip(" ") if isinstance(p, str) else p


def _allowed(prev: Role, cur: Role) -> bool:
    """``_validate_message_order``, less the same-role pairs the normalizer merges
    (user/user, assistant/assistant: refused here)."""
    return cur in {
        Role.SYSTEM: (Role.USER, Role.ASSISTANT, Role.SYSTEM),
        Role.USER: (Role.ASSISTANT, Role.SYSTEM),
        Role.ASSISTANT: (Role.USER, Role.TOOL),
        Role.TOOL: (Role.ASSISTANT, Role.TOOL, Role.USER),
    }.get(prev, ())


def id_ok(i: str) -> bool:
    """``idOk``: ``^[a-zA-Z0-9]{9}$`` (``_TOOL_CALL_ID_REGEX``)."""
    return len(i) == 9 and all(c.isascii() and c.isalnum() for c in i)


def calls_json(cs: Sequence[Call]) -> str:
    """``callsJson``: ``json.dumps(prepared_tool_calls, ensure_ascii=False)`` of V3's
    ``_prepare_function_call`` objects (v7)."""
    def one(k: Call) -> str:
        tail = "" if k.id is None else f', "id": "{k.id}"'
        return f'{{"name": "{k.name}", "arguments": {k.args}{tail}}}'
    return "[" + ", ".join(one(k) for k in cs) + "]"


def scan_val(x: str, k: int) -> int:
    """``scanVal``: the end of the JSON value text at ``x[k]``: the first ``,``, ``}`` or ``]``
    outside strings and brackets (or the end of ``x``)."""
    d, in_str, esc = 0, False, False
    while k < len(x):
        c = x[k]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        else:
            if d == 0 and c in ",}]":
                return k
            if c in "{[":
                d += 1
            elif c in "}]":
                d = max(d - 1, 0)
            elif c == '"':
                in_str = True
        k += 1
    return k


def un_calls_json(x: str) -> tuple[Call, ...] | None:
    """``unCallsJson`` after ``[`` and the check of ``unlayoutCallsV7``: a v7 call list read
    back only when it lays out as ``x`` again."""
    if not x.startswith("["):
        return None
    k, out = 1, []
    while True:
        pre = '{"name": "'
        if not x.startswith(pre, k):
            return None
        e = x.find('"', k + len(pre))
        e = len(x) if e < 0 else e
        name = x[k + len(pre):e]
        k = e
        if not x.startswith('", "arguments": ', k):
            return None
        k += 16
        e = scan_val(x, k)
        args = x[k:e]
        k = e
        if not x.startswith(', "id": "', k):
            return None
        k += 9
        e = x.find('"', k)
        e = len(x) if e < 0 else e
        ident = x[k:e]
        k = e
        if not x.startswith('"}', k) or not name or not args or not ident:
            return None
        k += 2
        out.append(Call(name, args, ident))
        if x[k:] == "]":
            break
        if not x.startswith(", ", k):
            return None
        k += 2
    calls = tuple(out)
    return calls if calls_json(calls) == x else None


class Mistral:
    """A Mistral format instance (``MistralFmt``): ids, version (``"v7"``, ``"v11"``,
    ``"v13"``) and mode (``stable``: tools before the first user message)."""

    def __init__(self, ids: MistralIds, version: str, stable: bool = False) -> None:
        if version not in VERSIONS:
            raise ValueError(f"unknown Mistral version {version!r}")
        self.ids = ids
        self.version = version
        self.stable = bool(stable)
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)

    # -- layout --------------------------------------------------------------------------

    def prompt_items(self, o: int) -> list[Item]:
        """``promptItems``: nothing (a prompt ends at ``[/INST]`` or ``[/TOOL_RESULTS]``)."""
        return []

    def footer_syms(self) -> Stream:
        """``footerSyms``: ``</s>``."""
        return [self.ids.eos]

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``."""
        i = self.ids
        if isinstance(t, SystemTurn):
            o = t.owner
            return [ctrl(i.sys_open, o, False), pay(t.p, o, False), ctrl(i.sys_close, o, False)]
        if isinstance(t, UserTurn):
            o = t.owner
            head = [] if t.tools is None else [
                ctrl(i.tools, o, False), text(t.tools, o, False), ctrl(i.end_tools, o, False)]
            return [*head, ctrl(i.inst, o, False), pay(t.p, o, False),
                    ctrl(i.end_inst, o, False)]
        if isinstance(t, AssistantTurn):
            o = t.owner
            out = [pay(t.p, o, True)]
            if self.version == "v7":
                if t.calls:
                    out += [ctrl(i.calls, o, True), text(calls_json(t.calls), o, True)]
            else:
                for k in t.calls:
                    out += [ctrl(i.calls, o, True), text(k.name, o, True)]
                    if i.call_id is not None and k.id is not None:
                        out += [ctrl(i.call_id, o, True), text(k.id, o, True)]
                    out += [ctrl(self._args(), o, True), text(k.args, o, True)]
            return [*out, ctrl(i.eos, o, True)]
        if isinstance(t, ResultTurn):
            o = t.owner
            mid = [] if t.id is None or i.tool_content is None else [
                text(t.id, o, False), ctrl(i.tool_content, o, False)]
            return [ctrl(i.results, o, False), *mid, pay(t.p, o, False),
                    ctrl(i.end_results, o, False)]
        if isinstance(t, SampledTurn):
            return [core.toks(t.ts, t.owner, True), ctrl(i.eos, t.owner, True)]
        raise TypeError(f"not a Mistral turn: {t!r}")

    def _args(self) -> int:
        if self.ids.args is None:  # lower never builds calls then
            raise ValueError("this tokenizer has no [ARGS] control token")
        return self.ids.args

    def layout(self, q: MConv) -> list[Item]:
        """``layout``: ``<s>`` and the turns (the generation prompt writes nothing)."""
        out = [ctrl(self.ids.bos, 0, False)]
        for t in q.turns:
            out += self.turn_items(t)
        return out

    # -- lowering ------------------------------------------------------------------------

    def tools_at(self, c: Conversation) -> int | None:
        """``toolsAt``: the index of the user message that receives ``[AVAILABLE_TOOLS]``:
        the last (v7, v11 exact) or the first (v13, stable) user message."""
        us = [k for k, m in enumerate(c.messages) if m.role == Role.USER]
        if not us or not c.tools:  # `if do_encode_tools_settings and available_tools`
            return None
        return us[0] if self.stable or self.version == "v13" else us[-1]

    def _calls(self, i: int, bs: Sequence[Any]) -> tuple[Any, tuple[Call, ...]]:
        """Content and calls of an assistant body: an optional plain block, then calls."""
        p: Any = ""
        rest = list(bs)
        if rest and isinstance(rest[0], Plain):
            p = content_of(Message(Role.ASSISTANT, (rest.pop(0),)))
        calls = []
        for b in rest:
            if not isinstance(b, ToolCall):
                raise ConversationError(i, "Mistral writes an assistant message as content "
                                        "then tool calls (no reasoning in v7/v11/v13 here)")
            # `_normalize_json_content`: empty arguments are written as "{}"
            calls.append(Call(b.name, b.args or "{}", b.id))
        return p, self._call_ids(i, calls)

    def _call_ids(self, i: int, calls: list[Call]) -> tuple[Call, ...]:
        """``callIds``: v13 drops the ids; v7/v11 need a valid id on every call, distinct
        in v11."""
        if self.version == "v13":
            return tuple(Call(k.name, k.args) for k in calls)
        for j, k in enumerate(calls):
            if k.id is None:
                raise ConversationError(
                    i, f"Mistral {self.version} writes a call id with every tool call "
                    f"([TOOL_CALLS] JSON 'id' in v7, [CALL_ID] in v11): call {j} has none")
            if not id_ok(k.id):
                raise ConversationError(
                    i, f"call {j}: tool call id {k.id!r} must be a-z, A-Z, 0-9, with a length "
                    "of 9 (mistral-common's validator)")
        ids = [k.id for k in calls]
        if self.version == "v11" and len(set(ids)) != len(ids):
            raise ConversationError(i, "mistral-common v11 refuses two calls of one message "
                                    "with the same id")
        return tuple(calls)

    def lower_msg(self, i: int, m: Message, tools: str | None,
                  rid: str | None = None) -> Any:
        """``lowerMsg``."""
        if m.role == Role.SYSTEM:
            p = content_of(m)
            if p is None:
                raise ConversationError(i, "Mistral writes a system message as one plain block")
            return SystemTurn(p, i)
        if m.role == Role.USER:
            p = content_of(m)
            if p is None:
                raise ConversationError(i, "Mistral writes a user message as one plain block")
            return UserTurn(tools, p, i)
        if m.role == Role.ASSISTANT:
            bs = m.blocks
            if len(bs) == 1 and isinstance(bs[0], Sampled):
                return SampledTurn(bs[0].ids, i)
            p, calls = self._calls(i, bs)
            if isinstance(p, str) and p == "" and not calls:
                raise ConversationError(i, "mistral-common refuses an assistant message with "
                                        "neither content nor tool calls")
            return AssistantTurn(rstrip_space(p), calls, i)
        if m.role == Role.TOOL:
            if self.version != "v13" and rid is None:
                raise ConversationError(
                    i, f"Mistral {self.version} writes the id of the call answered in every "
                    "tool result ([TOOL_RESULTS]ID[TOOL_CONTENT]…), and no call is at this "
                    "result's position (the k-th result of a run answers the k-th call)")
            p = content_of(m)
            if p is None:
                raise ConversationError(i, "Mistral writes a tool result as one plain block")
            return ResultTurn(p, i, None if self.version == "v13" else rid)
        raise ConversationError(i, f"lvt's Mistral v7+ has no {m.role.value} role (mistral-"
                                "common's from_openai renders one as a system message)")

    def turn_ok(self, t: Any) -> str | None:
        """``turnOk``: ``None`` when the turn can be read back and its token payloads hold no
        control id, else the reason."""
        if isinstance(t, AssistantTurn):
            for k in t.calls:
                if not k.name or not all(ch.isascii() and (ch.isalnum() or ch in "_-")
                                         for ch in k.name):
                    return (f"tool name {k.name!r} is not [a-zA-Z0-9_-]{{1,64}} (mistral-common "
                            "refuses it)")
                if len(k.name) > 64:
                    return f"tool name {k.name!r} is longer than 64 characters"
                if self.version == "v7" and scan_val(k.args + ",", 0) != len(k.args):  # scanOk
                    return (f"tool call arguments {k.args!r} would not read back from the v7 "
                            "JSON call list (a ',', '}' or ']' outside strings and brackets, or "
                            "a string or bracket left open)")
        ps = [t.ts] if isinstance(t, SampledTurn) else [t.p]
        for p in ps:
            if isinstance(p, tuple):
                for j, x in enumerate(p):
                    if x in self._reserved_set:
                        return f"token payload holds the control id {x} at position {j}"
        return None

    def lower(self, c: Conversation) -> MConv:
        """``lower``.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        ms = c.messages
        tools: str | None = None
        if c.tools:
            tools = tools_json(c.tools)
            if tools is None:
                raise ConversationError(None, "a Mistral tool definition must be "
                                        '{"type": "function", "function": {"name": str, '
                                        '"description": str, "parameters": object}}')
        at = self.tools_at(c)
        turns: list[Any] = []
        pend: list[str | None] = []  # `pending` is pend[done:]: the calls not yet answered
        done = 0  # an index (not pend[1:] at every result: a run of results stays linear)
        for i, m in enumerate(ms):
            if i == 0 and m.role not in (Role.USER, Role.SYSTEM):
                raise ConversationError(0, "mistral-common: 'Conversation must start with a "
                                        "user message or system message'")
            if i > 0 and not _allowed(ms[i - 1].role, m.role):
                why = ("mistral-common merges consecutive messages of one role; lvt requires "
                       "alternation" if ms[i - 1].role == m.role else
                       "mistral-common raises 'Unexpected role'")
                raise ConversationError(i, f"{m.role.value} after {ms[i - 1].role.value}: {why}")
            t = self.lower_msg(i, m, tools if i == at else None,
                               pend[done] if done < len(pend) else None)
            if isinstance(t, ResultTurn) and not (
                    isinstance(turns[-1], ResultTurn)
                    or (isinstance(turns[-1], AssistantTurn) and turns[-1].calls)):
                raise ConversationError(i, "a tool result must follow a tool call or a result")
            pend, done = (([k.id for k in t.calls], 0) if isinstance(t, AssistantTurn) else
                          (pend, done + 1) if isinstance(t, ResultTurn) else ([], 0))
            turns.append(t)
        if len(ms) > 1 and ms[-1].role == Role.SYSTEM:
            raise ConversationError(len(ms) - 1, "mistral-common refuses a conversation that "
                                    "ends with a system message")
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(t.owner, why)
        return MConv(tuple(turns), len(ms) if c.add_generation_prompt else None)

    # -- reading back --------------------------------------------------------------------

    def _until(self, s: Stream, k: int, close: int) -> tuple[str, int] | None:
        """The text at ``s[k]`` (maybe empty) and the index after the ``close`` after it."""
        x, k = core.take_text_at(s, k)
        if k < len(s) and s[k] == close and isinstance(s[k], int):
            return x, k + 1
        return None

    def unlayout(self, s: Stream) -> MConv | None:
        """``unlayout``: a symbol stream back to a lowered conversation (owners 0)."""
        i = self.ids
        if not s or s[0] != i.bos or not isinstance(s[0], int):
            return None
        k, turns = 1, []
        while k < len(s):
            x = s[k]
            if x == i.sys_open and isinstance(x, int):
                r = self._until(s, k + 1, i.sys_close)
                if r is None:
                    return None
                turns.append(SystemTurn(r[0], 0))
                k = r[1]
            elif isinstance(x, int) and x in (i.tools, i.inst):
                tools = None
                if x == i.tools:
                    r = self._until(s, k + 1, i.end_tools)
                    if r is None or r[1] >= len(s) or s[r[1]] != i.inst:
                        return None
                    tools, k = r[0], r[1]
                r = self._until(s, k + 1, i.end_inst)
                if r is None:
                    return None
                turns.append(UserTurn(tools, r[0], 0))
                k = r[1]
            elif x == i.results and isinstance(x, int):
                rid = None
                if self.version != "v13":
                    if i.tool_content is None:
                        return None
                    r = self._until(s, k + 1, i.tool_content)
                    if r is None or not r[0]:
                        return None
                    rid, k = r[0], r[1] - 1
                r = self._until(s, k + 1, i.end_results)
                if r is None:
                    return None
                turns.append(ResultTurn(r[0], 0, rid))
                k = r[1]
            else:
                r2 = self._assistant(s, k)
                if r2 is None:
                    return None
                turns.append(r2[0])
                k = r2[1]
        return MConv(tuple(turns), None)

    def assistant_syms(self, s: Stream) -> AssistantTurn | None:
        """``unlayoutAssistant`` on a whole stream: one assistant turn and nothing after."""
        r = self._assistant(s, 0)
        return r[0] if r is not None and r[1] == len(s) else None

    def _assistant(self, s: Stream, k: int) -> tuple[AssistantTurn, int] | None:
        i = self.ids
        p, k = core.take_text_at(s, k)
        calls: list[Call] = []
        if self.version == "v7":
            if k < len(s) and s[k] == i.calls and isinstance(s[k], int):
                x = s[k + 1] if k + 1 < len(s) and isinstance(s[k + 1], str) else ""
                cs = un_calls_json(x)
                if cs is None:
                    return None
                calls, k = list(cs), k + 2
        elif self.version == "v11":
            while k < len(s) and s[k] == i.calls and isinstance(s[k], int) and \
                    i.args is not None and i.call_id is not None:
                parts = s[k + 1:k + 6]
                if len(parts) < 5 or not isinstance(parts[0], str) or \
                        parts[1] != i.call_id or not isinstance(parts[2], str) or \
                        parts[3] != i.args or not isinstance(parts[4], str) or \
                        not isinstance(parts[1], int) or not isinstance(parts[3], int):
                    return None
                calls.append(Call(parts[0], parts[4], parts[2]))
                k += 6
        else:
            while k < len(s) and s[k] == i.calls and isinstance(s[k], int) and \
                    i.args is not None:
                if k + 3 >= len(s) or not isinstance(s[k + 1], str) or s[k + 2] != i.args \
                        or not isinstance(s[k + 3], str):
                    return None
                calls.append(Call(s[k + 1], s[k + 3]))
                k += 4
        if k < len(s) and s[k] == i.eos and isinstance(s[k], int):
            return AssistantTurn(p, tuple(calls), 0), k + 1
        return None
