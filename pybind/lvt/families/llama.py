"""The Llama 3.1 family: the transliteration of ``Verified/Spec/Llama.lean``.

Template: ``meta-llama/Llama-3.1-8B-Instruct``. Lowering (:meth:`Llama.lower`), layout
(:meth:`Llama.layout`) and its inverse (:meth:`Llama.unlayout`) mirror the Lean definitions;
where Lean returns ``none`` the Python side raises :class:`~lvt.errors.ConversationError`.
Every quirk reproduced here quotes the template construct it mirrors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.jsonfmt import pretty, quote
from lvt.model import Conversation, Message, Plain, Role, Sampled, ToolCall, content_of
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = [
    "DEFAULT_DATE",
    "CallTurn",
    "IpythonTurn",
    "LConv",
    "Llama",
    "LlamaIds",
    "PlainTurn",
    "SampledTurn",
    "SystemTurn",
    "UserToolsTurn",
]

#: ``date_string``'s default in the template.
DEFAULT_DATE = "26 Jul 2024"
ENV_LINE = "Environment: ipython\n"
RESPOND_LINE = (
    'Respond in the format {"name": function name, "parameters": dictionary of argument '
    "name and its value}.Do not use variables.\n\n"
)
SYSTEM_TOOLS_INTRO = (
    "You have access to the following functions. To call a function, please respond with "
    "JSON for a function call." + RESPOND_LINE
)
USER_TOOLS_INTRO = (
    "Given the following functions, please respond with a JSON for a function call with its "
    "proper arguments that best answers the given prompt.\n\n" + RESPOND_LINE
)
CALL_PRE = '{"name": "'
CALL_SEP = '", "parameters": '
NL2 = "\n\n"


def date_lines(date: str) -> str:
    """``dateLines``."""
    return "Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n"


@dataclass(frozen=True)
class LlamaIds:
    """``LlamaIds``."""

    bos: int
    start_header: int
    end_header: int
    eot: int
    extra: tuple[int, ...] = ()

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id."""
        return tuple(dict.fromkeys(
            [self.bos, self.start_header, self.end_header, self.eot, *self.extra]
        ))


@dataclass(frozen=True)
class SystemTurn:
    """``LTurn.system``."""

    env: bool
    tools: tuple[str, ...]
    sys: Any
    owner: int


@dataclass(frozen=True)
class UserToolsTurn:
    """``LTurn.userTools``."""

    tools: tuple[str, ...]
    u: Any
    owner: int


@dataclass(frozen=True)
class PlainTurn:
    """``LTurn.plain``: role ``"system"``, ``"user"``, ``"assistant"`` or ``"developer"``
    (the template's header is ``message['role']``; only ``"assistant"`` is learned)."""

    role: str
    p: Any
    owner: int


@dataclass(frozen=True)
class CallTurn:
    """``LTurn.call``."""

    name: str
    args: str
    owner: int


@dataclass(frozen=True)
class IpythonTurn:
    """``LTurn.ipython``."""

    p: Any
    owner: int


@dataclass(frozen=True)
class SampledTurn:
    """``LTurn.sampled``."""

    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class LConv:
    """``LConv``."""

    turns: tuple[Any, ...]
    prompt: int | None


def tool_blocks(tools: Sequence[str]) -> str:
    """``toolBlocks``: ``tojson(indent=4) + "\\n\\n"`` per tool."""
    return "".join(j + NL2 for j in tools)


def _trim(p: Any) -> Any:
    """``trimPay``: ``| trim`` on text."""
    return p.strip() if isinstance(p, str) else p


def _quote(p: Any) -> Any:
    """``quotePay``: ``message.content | tojson`` on text."""
    return quote(p) if isinstance(p, str) else p


def parse_call(cs: str) -> tuple[str, str] | None:
    """``parseCall``: ``'{"name": "' + name + '", "parameters": ' + arguments + '}'``."""
    r = core.strip_prefix(CALL_PRE, cs)
    x = None if r is None else core.split_first(CALL_SEP, r)
    a = None if x is None else core.strip_suffix("}", x[1])
    return None if a is None else (x[0], a)  # type: ignore[index]


def _after_blocks_ok(p: Any) -> bool:
    """``afterBlocksOk``."""
    return not (isinstance(p, str) and p.startswith("{"))


def _blocks_ok(tools: Sequence[str]) -> bool:
    """``blocksOk``."""
    return all(j.startswith("{") and core.clear_of(NL2, j) for j in tools)


class Llama:
    """A Llama 3.1 format instance (``LlamaFmt``): ids, ``date_string`` and
    ``tools_in_user_message``."""

    #: The template writes and reads tool calls (Llama 3.1's JSON calls), as ``tools`` of the
    #: Qwen and DeepSeek structures; the completion reader reads calls only then.
    tools = True

    def __init__(self, ids: LlamaIds, date: str = DEFAULT_DATE, tools_in_user: bool = True
                 ) -> None:
        self.ids = ids
        self.date = date
        self.tools_in_user = bool(tools_in_user)
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)
        self._prompt_syms = core.syms(self.prompt_items(0))

    # -- layout --------------------------------------------------------------------------

    def header(self, role: str, o: int) -> list[Item]:
        """``header``."""
        return [ctrl(self.ids.start_header, o, False), text(role, o, False),
                ctrl(self.ids.end_header, o, False), text(NL2, o, False)]

    def prompt_items(self, o: int) -> list[Item]:
        """``promptItems``."""
        return self.header("assistant", o)

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``."""
        eot = self.ids.eot
        if isinstance(t, SystemTurn):
            o = t.owner
            head = (ENV_LINE if t.env else "") + date_lines(self.date)
            if t.env and not self.tools_in_user:
                head += SYSTEM_TOOLS_INTRO + tool_blocks(t.tools)
            return [*self.header("system", o), text(head, o, False), pay(t.sys, o, False),
                    ctrl(eot, o, False)]
        if isinstance(t, UserToolsTurn):
            o = t.owner
            return [*self.header("user", o), text(USER_TOOLS_INTRO + tool_blocks(t.tools), o,
                                                  False), pay(t.u, o, False), ctrl(eot, o, False)]
        if isinstance(t, PlainTurn):
            o = t.owner
            learn = t.role == "assistant"
            return [*self.header(t.role, o), pay(t.p, o, learn), ctrl(eot, o, learn)]
        if isinstance(t, CallTurn):
            o = t.owner
            return [*self.header("assistant", o),
                    text(CALL_PRE + t.name + CALL_SEP + t.args + "}", o, True),
                    ctrl(eot, o, True)]
        if isinstance(t, IpythonTurn):
            o = t.owner
            return [*self.header("ipython", o), pay(t.p, o, False), ctrl(eot, o, False)]
        if isinstance(t, SampledTurn):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True),
                    ctrl(eot, t.owner, True)]
        raise TypeError(f"not a Llama turn: {t!r}")

    def layout(self, q: LConv) -> list[Item]:
        """``layout``: ``bos_token``, the turns, the generation prompt."""
        out = [ctrl(self.ids.bos, 0, False)]
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.prompt_items(q.prompt)
        return out

    # -- lowering ------------------------------------------------------------------------

    def lower_msg(self, i: int, m: Message) -> Any:
        """``lowerMsg``."""
        role = m.role
        if role == Role.ASSISTANT:
            bs = m.blocks
            if len(bs) == 1 and isinstance(bs[0], Sampled):
                return SampledTurn(bs[0].ids, i)
            # `'tool_calls' in message`: one call; the template does not write the content
            if len(bs) == 1 and isinstance(bs[0], ToolCall):
                return CallTurn(bs[0].name, bs[0].args, i)
            if len(bs) == 2 and isinstance(bs[0], Plain) and isinstance(bs[1], ToolCall):
                return CallTurn(bs[1].name, bs[1].args, i)
            if any(isinstance(b, ToolCall) for b in bs):
                raise ConversationError(
                    i, "Llama 3.1 writes one tool call per message (`This model only supports "
                    "single tool-calls at once!`)"
                )
        p = content_of(m)
        if p is None:
            raise ConversationError(
                i, f"Llama 3.1 writes a {role.value} message as one plain content block "
                "(no reasoning)"
            )
        if role == Role.USER:
            return PlainTurn("user", _trim(p), i)
        if role == Role.SYSTEM:
            return PlainTurn("system", _trim(p), i)
        if role == Role.DEVELOPER:
            # `'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'`: any role
            # is a header
            return PlainTurn("developer", _trim(p), i)
        if role == Role.TOOL:
            return IpythonTurn(_quote(p), i)
        return PlainTurn("assistant", _trim(p), i)

    def payload_ok(self, t: Any) -> str | None:
        """The part of ``turnOk`` every turn has: ``None`` when its token payload (or sampled
        ids) holds no control id, else the reason."""
        p = getattr(t, "sys", getattr(t, "u", getattr(t, "p", getattr(t, "ts", None))))
        if isinstance(p, tuple):
            for j, x in enumerate(p):
                if x in self._reserved_set:
                    what = "sampled turn" if isinstance(t, SampledTurn) else "token payload"
                    return f"{what} holds the control id {x} at position {j}"
        return None

    def turn_ok(self, t: Any) -> str | None:
        """``turnOk``: ``None`` when the turn can be read back, else the reason."""
        why = self.payload_ok(t)
        if why is not None:
            return why
        if isinstance(t, SystemTurn):
            if not (t.env or not t.tools) or (self.tools_in_user and t.tools):
                return "inconsistent tool placement"  # unreachable from lower
            if t.env and not self.tools_in_user:
                if not _blocks_ok(t.tools):
                    return "a tool definition holds a blank line"
                if not _after_blocks_ok(t.sys):
                    return "the system text after the tool blocks starts with '{'"
            return None
        if isinstance(t, UserToolsTurn):
            if not _blocks_ok(t.tools):
                return "a tool definition holds a blank line"
            if not _after_blocks_ok(t.u):
                return ("the first user text starts with '{', which the template cannot tell "
                        "from one more tool definition")
            return None
        if isinstance(t, PlainTurn) and t.role == "assistant" and isinstance(t.p, str):
            if parse_call(t.p) is not None:
                return "assistant text that reads as a Llama 3.1 tool call; send a tool call"
            return None
        if isinstance(t, CallTurn) and not core.clear_of(CALL_SEP, t.name):
            return f"tool name {t.name!r} contains {CALL_SEP!r}"
        return None

    def lower(self, c: Conversation) -> LConv:
        """``lower``.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        env = c.tools is not None
        tools = tuple(pretty(t) for t in (c.tools or ()))
        ms = c.messages
        if ms and ms[0].role == Role.SYSTEM:
            p = content_of(ms[0])
            if p is None:
                raise ConversationError(0, "a system message is one plain content block")
            sys, rest, i = _trim(p), ms[1:], 1
        else:
            sys, rest, i = "", ms, 0
        head: list[Any] = [SystemTurn(env, () if self.tools_in_user else tools, sys, 0)]
        if env and self.tools_in_user:
            if not rest or rest[0].role != Role.USER:
                raise ConversationError(
                    i if rest else None,
                    "with tools in the user message, the first message after the system "
                    "message must be a user message",
                )
            u = content_of(rest[0])
            if u is None:
                raise ConversationError(i, "a user message is one plain content block")
            head.append(UserToolsTurn(tools, _trim(u), i))
            rest, i = rest[1:], i + 1
        return self.checked(head + [self.lower_msg(i + k, m) for k, m in enumerate(rest)], c)

    def checked(self, turns: list[Any], c: Conversation) -> LConv:
        """The end of ``lower``: the lowered conversation when every turn reads back
        (``turnOk``), else the error naming the first turn's message that does not."""
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(getattr(t, "owner", None), why)
        return LConv(tuple(turns), len(c.messages) if c.add_generation_prompt else None)

    # -- reading back --------------------------------------------------------------------

    @staticmethod
    def parse_blocks(cs: str) -> tuple[tuple[str, ...], str] | None:
        """``parseBlocks``: the tool blocks and the text after them."""
        ps = cs.split(NL2)
        k = 0
        while k < len(ps) and ps[k].startswith("{"):
            k += 1
        if k == len(ps):
            return None
        return tuple(ps[:k]), NL2.join(ps[k:])

    def turn_body(self, s: Stream) -> tuple[str, str] | None:
        """``turnBody``: role and the text between ``<|end_header_id|>`` and ``<|eot_id|>``."""
        role, rest = core.take_text(s)
        if not rest or not isinstance(rest[0], int) or rest[0] != self.ids.end_header:
            return None
        body, tail = core.take_text(rest[1:])
        x = core.strip_prefix(NL2, body)
        if x is None or tail != [self.ids.eot]:
            return None
        return role, x

    def unlayout_system(self, s: Stream) -> SystemTurn | None:
        """``unlayoutSystem``."""
        b = self.turn_body(s)
        if b is None or b[0] != "system":
            return None
        x = b[1]
        y = core.strip_prefix(ENV_LINE, x)
        env = y is not None
        if y is None:
            y = x
        z = core.strip_prefix(date_lines(self.date), y)
        if z is None:
            return None
        if env and not self.tools_in_user:
            w = core.strip_prefix(SYSTEM_TOOLS_INTRO, z)
            r = None if w is None else self.parse_blocks(w)
            return None if r is None else SystemTurn(True, r[0], r[1], 0)
        return SystemTurn(env, (), z, 0)

    def unlayout_user_tools(self, s: Stream) -> UserToolsTurn | None:
        """``unlayoutUserTools``."""
        b = self.turn_body(s)
        if b is None or b[0] != "user":
            return None
        w = core.strip_prefix(USER_TOOLS_INTRO, b[1])
        r = None if w is None else self.parse_blocks(w)
        return None if r is None else UserToolsTurn(r[0], r[1], 0)

    def unlayout_turn(self, s: Stream) -> Any | None:
        """``unlayoutTurn``."""
        b = self.turn_body(s)
        if b is None:
            return None
        role, x = b
        if role == "user":
            return PlainTurn("user", x, 0)
        if role == "system":
            return PlainTurn("system", x, 0)
        if role == "ipython":
            return IpythonTurn(x, 0)
        if role == "developer":
            return PlainTurn("developer", x, 0)
        if role == "assistant":
            k = parse_call(x)
            return CallTurn(k[0], k[1], 0) if k is not None else PlainTurn("assistant", x, 0)
        return None

    def unlayout(self, s: Stream) -> LConv | None:
        """``unlayout``: a symbol stream back to a lowered conversation (owners 0)."""
        return self.unlayout_at(s)[0]

    def unlayout_at(self, s: Stream) -> tuple[LConv, None] | tuple[None, int]:
        """:meth:`unlayout` in the same pass, saying where it failed: ``(q, None)``, or
        ``(None, k)`` with ``k`` the index in ``s`` of the ``<|start_header_id|>`` of the
        first turn that does not read (0 when ``s`` does not start with ``<|begin_of_text|>``
        and a header; ``len(s)`` when a turn is missing at the end)."""
        pre, chunks = core.split_at_ctrl(self.ids.start_header, s)
        if pre != [self.ids.bos] or not chunks:
            return None, 0
        st = self.unlayout_system(chunks[0])
        if st is None:
            return None, 1
        turns: list[Any] = [st]
        rest = chunks[1:]
        at = 2 + len(chunks[0])
        if st.env and self.tools_in_user:
            if not rest:
                return None, len(s)
            ut = self.unlayout_user_tools(rest[0])
            if ut is None:
                return None, at
            turns.append(ut)
            at += 1 + len(rest[0])
            rest = rest[1:]
        return self.read_turns(turns, rest, at)

    def read_turns(self, turns: list[Any], rest: Sequence[Stream], at: int
                   ) -> tuple[LConv, None] | tuple[None, int]:
        """The end of ``unlayout``: the header turns ``rest`` after the ones read (``turns``),
        the last of them the generation prompt or a turn; ``at`` is the index of the first
        one's ``<|start_header_id|>`` in the stream (for the error position)."""
        for j, c in enumerate(rest):
            if j == len(rest) - 1 and [self.ids.start_header, *c] == self._prompt_syms:
                return LConv(tuple(turns), 0), None
            t = self.unlayout_turn(c)
            if t is None:
                return None, at
            turns.append(t)
            at += 1 + len(c)
        return LConv(tuple(turns), None), None
