"""The Qwen structure (ChatML turns, JSON tool calls in ``<tool_call>``, ``<think>`` blocks):
the transliteration of ``Verified/Spec/Qwen.lean``. Its model entries (Qwen2.5, Qwen2.5-Math,
Qwen3 exact and stable, Qwen3-2507 Instruct and Thinking) are data in :mod:`lvt.models`: a
history mode, ``enable_thinking``, a default system text and ``prompt_think``.

Lowering (:meth:`Qwen.lower`), layout (:meth:`Qwen.layout`) and its inverse
(:meth:`Qwen.unlayout`) mirror the Lean definitions function by function; where Lean returns
``none`` the Python side raises :class:`~lvt.errors.ConversationError` naming the message and
the reason. Templates: ``Qwen/Qwen2.5-7B-Instruct`` and ``Qwen/Qwen3-0.6B`` (current revision);
every quirk reproduced here quotes the template construct it mirrors.

Lowered payloads are ``str`` (text) or ``tuple[int, ...]`` (verbatim tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lvt.errors import ConversationError
from lvt.families.qwen_data import (
    CALL_POST,
    CALL_PRE,
    CALL_SEP,
    DEFAULT_SYSTEM,
    RESP_CLOSE_TEXT,
    RESP_OPEN_TEXT,
    RESP_SEP_TEXT,
    TOOLS_EXAMPLE,
    TOOLS_INTRO,
    TOOLS_OUTRO,
    TOOLS_TAGS,
    AssistantTurn,
    Call,
    PlainTurn,
    QConv,
    QwenIds,
    SampledTurn,
    ToolGroup,
    ToolsSystem,
)
from lvt.jsonfmt import compact
from lvt.model import (
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Sampled,
    ToolCall,
    content_of,
    lower_payload,
    lpay_is_empty,
)
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = [
    "DEFAULT_SYSTEM",
    "AssistantTurn",
    "Call",
    "PlainTurn",
    "QConv",
    "Qwen",
    "QwenIds",
    "SampledTurn",
    "ToolGroup",
    "ToolsSystem",
]

class Qwen:
    """A Qwen format instance (``QwenFmt``): ids, history mode (``"v25"``: no reasoning,
    ``"exact"``, ``"stable"``), ``enable_thinking``, the default system text (``None``: none)
    and whether the generation prompt opens the think block (``prompt_think``). A model
    whose template has no tool syntax (``tools=False``: Qwen2, Qwen2.5-VL) narrows the
    structure's domain: :meth:`entry_check` refuses tools, calls and results."""

    def __init__(self, ids: QwenIds, mode: str, enable_thinking: bool = True,
                 default_system: str | None = None, prompt_think: bool = False,
                 tools: bool = True) -> None:
        if mode not in ("v25", "exact", "stable"):
            raise ValueError(f"unknown Qwen mode {mode!r}")
        self.ids = ids
        self.mode = mode
        self.enable_thinking = bool(enable_thinking)
        self.default_system = default_system
        self.prompt_think = bool(prompt_think)
        self.tools = bool(tools)
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)
        self._prompt_syms = core.syms(self.prompt_items(0))

    # -- layout --------------------------------------------------------------------------

    def footer(self, o: int, learn: bool) -> list[Item]:
        """``footer``: ``'<|im_end|>' + '\\n'``."""
        return [ctrl(self.ids.im_end, o, learn), text("\n", o, False)]

    def prompt_items(self, o: int) -> list[Item]:
        """``promptItems``: ``'<|im_start|>assistant\\n'``, then ``'<think>\\n'`` when the
        template opens the think block, else the empty think block when ``enable_thinking is
        false``."""
        out = [ctrl(self.ids.im_start, o, False), text("assistant\n", o, False)]
        if self.ids.think is not None:
            a, b = self.ids.think
            if self.prompt_think:  # '<|im_start|>assistant\n<think>\n' (Thinking-2507)
                out += [ctrl(a, o, False), text("\n", o, False)]
            elif not self.enable_thinking:
                out += [ctrl(a, o, False), text("\n\n", o, False), ctrl(b, o, False),
                        text("\n\n", o, False)]
        return out

    def calls_items(self, first: bool, o: int, calls: Sequence[Call]) -> list[Item]:
        """``callsItems``: ``'\\n'`` before the first call when ``first``, before every other."""
        out: list[Item] = []
        sep = first
        for k in calls:
            if sep:
                out.append(text("\n", o, True))
            out += [ctrl(self.ids.call_open, o, True),
                    text(CALL_PRE + k.name + CALL_SEP + k.args + CALL_POST, o, True),
                    ctrl(self.ids.call_close, o, True)]
            sep = True
        return out

    def result_items(self, r: tuple[Any, int]) -> list[Item]:
        """``resultItems``."""
        p, o = r
        if self.ids.tool_response is not None:
            a, b = self.ids.tool_response
            return [text("\n", o, False), ctrl(a, o, False), text("\n", o, False),
                    pay(p, o, False), text("\n", o, False), ctrl(b, o, False)]
        return [text("\n", o, False), text(RESP_OPEN_TEXT, o, False), pay(p, o, False),
                text(RESP_CLOSE_TEXT, o, False)]

    def think_learned(self, think: Any) -> bool:
        """``thinkLearned``."""
        return self.enable_thinking or not lpay_is_empty(think)

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``."""
        ids = self.ids
        if isinstance(t, PlainTurn):
            o = t.owner
            return [ctrl(ids.im_start, o, False), text(t.role + "\n", o, False),
                    pay(t.p, o, False), *self.footer(o, False)]
        if isinstance(t, ToolsSystem):
            o = t.owner
            out = [ctrl(ids.im_start, o, False), text("system\n", o, False)]
            if t.sys is not None:
                out += [pay(t.sys, o, False), text("\n\n", o, False)]
            out.append(text(TOOLS_INTRO, o, False))
            out += [text("\n" + j, o, False) for j in t.tools]
            out += [text(TOOLS_OUTRO, o, False), ctrl(ids.call_open, o, False),
                    ctrl(ids.call_close, o, False), text(TOOLS_TAGS, o, False),
                    ctrl(ids.call_open, o, False), text(TOOLS_EXAMPLE, o, False),
                    ctrl(ids.call_close, o, False), *self.footer(o, False)]
            return out
        if isinstance(t, AssistantTurn):
            o = t.owner
            out = [ctrl(ids.im_start, o, False), text("assistant\n", o, False)]
            if t.think is not None and ids.think is not None:
                a, b = ids.think
                learn = self.think_learned(t.think)
                out += [ctrl(a, o, learn), text("\n", o, learn), pay(t.think, o, learn),
                        text("\n", o, learn), ctrl(b, o, learn), text("\n\n", o, learn)]
            out.append(pay(t.content, o, True))
            out += self.calls_items(t.sep, o, t.calls)
            out += self.footer(o, True)
            return out
        if isinstance(t, ToolGroup):
            o = t.results[0][1] if t.results else 0
            out = [ctrl(ids.im_start, o, False), text("user", o, False)]
            for r in t.results:
                out += self.result_items(r)
            out += self.footer(o, False)
            return out
        if isinstance(t, SampledTurn):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True),
                    *self.footer(t.owner, True)]
        raise TypeError(f"not a Qwen turn: {t!r}")

    def layout(self, q: QConv) -> list[Item]:
        """``layout``."""
        out: list[Item] = []
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.prompt_items(q.prompt)
        return out

    # -- lowering ------------------------------------------------------------------------

    @staticmethod
    def is_response_text(p: Any) -> bool:
        """``isResponseText``."""
        return isinstance(p, str) and p.startswith("<tool_response>") and p.endswith(
            "</tool_response>"
        )

    @staticmethod
    def last_query(ms: Sequence[Message]) -> int:
        """``lastQuery``: ``ns.last_query_index``."""
        last = None
        for i, m in enumerate(ms):
            if m.role == Role.USER:
                c = content_of(m)
                if c is not None and not Qwen.is_response_text(c):
                    last = i
        return last if last is not None else max(len(ms) - 1, 0)

    @staticmethod
    def asst_parts(i: int, bs: Sequence[Any]) -> tuple[Any, Any, tuple[Call, ...]]:
        """``asstParts``: reasoning, content, calls (in that order)."""
        j = 0
        r = None
        if j < len(bs) and isinstance(bs[j], Reasoning):
            r = lower_payload(bs[j].payload)
            j += 1
        c: Any = ""
        if j < len(bs) and isinstance(bs[j], Plain):
            c = lower_payload(bs[j].payload)
            j += 1
        calls = []
        for b in bs[j:]:
            if not isinstance(b, ToolCall):
                raise ConversationError(
                    i, "an assistant message is reasoning, then content, then tool calls "
                    f"(got a {type(b).__name__} out of place)"
                )
            calls.append(Call(b.name, b.args))
        return r, c, tuple(calls)

    def lower_msg(self, n: int, last_q: int, i: int, m: Message) -> list[tuple[str, Any]]:
        """``lowerMsg``: ``("turn", t)`` or ``("result", (p, i))`` entries."""
        role = m.role
        if role == Role.DEVELOPER:
            if not self.tools:  # Qwen2.5-VL: `'<|im_start|>' + message['role'] + '\n'`
                raise ConversationError(
                    i, "this Qwen model's template writes a developer message as an "
                    "'<|im_start|>developer' turn, which the Qwen structure does not render "
                    "(lvt refuses it); send it as a system message")
            raise ConversationError(
                i, "the Qwen templates drop a developer message silently (they write no turn "
                "for it, so the model would never see its text); send it as a system message")
        if role == Role.ASSISTANT:
            if len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled):
                return [("turn", SampledTurn(m.blocks[0].ids, i))]
            r, c, ks = self.asst_parts(i, m.blocks)
            # the '\n' before the first call tests the content before lstrip
            sep = not lpay_is_empty(c) and bool(ks)
            think = _strip_nl(r if r is not None else "")
            if self.mode == "v25":
                if r is not None:
                    raise ConversationError(
                        i, "this Qwen model has no reasoning (its template drops it)")
                return [("turn", AssistantTurn(None, c, sep, ks, i))]
            if self.mode == "stable":
                return [("turn", AssistantTurn(think, _lstrip_nl(c), sep, ks, i))]
            # `loop.index0 > ns.last_query_index` and `(loop.last or reasoning_content)`
            if last_q < i and (i + 1 == n or not lpay_is_empty(r if r is not None else "")):
                return [("turn", AssistantTurn(think, _lstrip_nl(c), sep, ks, i))]
            return [("turn", AssistantTurn(None, c, sep, ks, i))]
        p = content_of(m)
        if p is None:
            raise ConversationError(
                i, f"a {role.value} message is at most one plain content block"
            )
        if role == Role.USER:
            return [("turn", PlainTurn("user", p, i))]
        if role == Role.SYSTEM:
            return [] if i == 0 else [("turn", PlainTurn("system", p, i))]
        return [("result", (p, i))]

    @staticmethod
    def group(pre: Sequence[tuple[str, Any]]) -> list[Any]:
        """``group``: consecutive tool results in one turn."""
        out: list[Any] = []
        for kind, x in pre:
            if kind == "result":
                if out and isinstance(out[-1], _OpenGroup):
                    out[-1].results.append(x)
                else:
                    out.append(_OpenGroup([x]))
            else:
                out.append(x)
        return [ToolGroup(tuple(t.results)) if isinstance(t, _OpenGroup) else t for t in out]

    def system_turn(self, ms: Sequence[Message], tools: Any) -> list[Any]:
        """``systemTurn``."""
        given: Any = None
        if ms and ms[0].role == Role.SYSTEM:
            given = content_of(ms[0])
            if given is None:
                raise ConversationError(0, "a system message is at most one plain content block")
        # `messages[0]['role'] == 'system'` … `{%- else %}` the default system text, if any
        s = given if given is not None else self.default_system
        if tools is not None:
            return [ToolsSystem(s, tuple(compact(t) for t in tools), 0)]
        return [PlainTurn("system", s, 0)] if s is not None else []

    def _free(self, p: Any) -> str | None:
        """``payFree``: the reason a token payload is refused, else ``None``."""
        if isinstance(p, tuple):
            res = self._reserved_set
            for j, t in enumerate(p):
                if t in res:
                    return f"token payload holds the control id {t} at position {j}"
        return None

    def turn_ok(self, t: Any) -> str | None:
        """``turnOk``: ``None`` when the turn can be read back, else the reason."""
        for p in _payloads(t):
            why = self._free(p)
            if why is not None:
                return why
        if isinstance(t, SampledTurn):
            res = self._reserved_set
            for j, x in enumerate(t.ts):
                if x in res and not self.ids.body_ctrl(x):
                    return (f"sampled turn holds the control id {x} at position {j}, which "
                            "an assistant turn cannot contain")
            return None
        if isinstance(t, PlainTurn):
            if (t.role == "user" and self.ids.tool_response is None and isinstance(t.p, str)
                    and _looks_like_results(t.p)):
                return ("user text that reads as a group of Qwen2.5 tool results "
                        "('<tool_response>\\n' … '\\n</tool_response>')")
            return None
        if isinstance(t, ToolsSystem):
            for j in t.tools:
                if "\n" in j:
                    return "a tool definition serialises with a newline"
            if isinstance(t.sys, str) and not core.clear_of(TOOLS_INTRO, t.sys + "\n\n"):
                return "the system text contains the tool preamble ('# Tools …')"
            return None
        if isinstance(t, AssistantTurn):
            if t.think is not None and self.ids.think is None:
                return "this tokenizer has no <think> control tokens"
            for k in t.calls:
                if not core.clear_of(CALL_SEP, k.name):
                    return f"tool name {k.name!r} contains {CALL_SEP!r}"
            if (t.calls and not (t.sep or lpay_is_empty(t.content))) or (t.sep and not t.calls):
                return "inconsistent separator"  # unreachable from lower
            return None
        if isinstance(t, ToolGroup):
            if self.ids.tool_response is not None:
                return None
            for p, _ in t.results[:-1]:
                if isinstance(p, str) and not core.clear_of(RESP_SEP_TEXT, p):
                    return "a tool result contains '\\n</tool_response>\\n<tool_response>\\n'"
            if t.results and isinstance(t.results[-1][0], str) and core.split_first(
                RESP_SEP_TEXT, t.results[-1][0]
            ) is not None:
                return "a tool result contains '\\n</tool_response>\\n<tool_response>\\n'"
            return None
        return None

    def lower(self, c: Conversation) -> QConv:
        """``lower``.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        self.entry_check(c)
        ms = c.messages
        st = self.system_turn(ms, c.tools)
        n = len(ms)
        last_q = self.last_query(ms)
        pre: list[tuple[str, Any]] = []
        for i, m in enumerate(ms):
            pre += self.lower_msg(n, last_q, i, m)
        turns = st + self.group(pre)
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(_owner_of(t), why)
        return QConv(tuple(turns), n if c.add_generation_prompt else None)

    def entry_check(self, c: Conversation) -> None:
        """A template without tool syntax writes a tool message as a ``tool`` turn and drops
        tool definitions and calls (``'<|im_start|>' + message['role']``, content only): lvt
        refuses them rather than render what the model never saw.

        Raises:
            ConversationError: tools, a tool call or a tool result for such a model.
        """
        if self.tools:
            return
        why = ("this Qwen model's template has no tool syntax (it drops tool definitions and "
               "calls, and writes a tool result as a 'tool' turn)")
        if c.tools:
            raise ConversationError(None, why)
        for i, m in enumerate(c.messages):
            if m.role == Role.TOOL or any(isinstance(b, ToolCall) for b in m.blocks):
                raise ConversationError(i, why)

    # -- reading back --------------------------------------------------------------------

    def footer_syms(self) -> Stream:
        """``footerSyms``."""
        return [self.ids.im_end, "\n"]

    @staticmethod
    def parse_call(cs: str) -> Call | None:
        """``parseCall``."""
        r = core.strip_prefix(CALL_PRE, cs)
        r = None if r is None else core.strip_suffix(CALL_POST, r)
        x = None if r is None else core.split_first(CALL_SEP, r)
        return None if x is None else Call(x[0], x[1])

    def call_piece(self, p: Stream) -> tuple[Call, Stream] | None:
        """``callPiece``."""
        t, rest = core.take_text(p)
        k = self.parse_call(t)
        if k is None or not rest or rest[0] != self.ids.call_close or isinstance(rest[0], str):
            return None
        return k, rest[1:]

    def content_calls(self, x: str, rest: Stream) -> tuple[Any, bool, tuple[Call, ...]] | None:
        """``contentCalls``."""
        if rest == self.footer_syms():
            return x, False, ()
        pre, pieces = core.split_at_ctrl(self.ids.call_open, rest)
        if pre:
            return None
        ks = core.parse_pieces(self.call_piece, ["\n"], self.footer_syms(), pieces)
        if ks is None:
            return None
        if x == "":
            return "", False, tuple(ks)
        c = core.strip_suffix("\n", x)
        return None if c is None else (c, True, tuple(ks))

    def unlayout_assistant(self, x: str, rest: Stream) -> AssistantTurn | None:
        """``unlayoutAssistant``."""
        th = self.ids.think
        if th is not None and rest and isinstance(rest[0], int) and rest[0] == th[0] and x == "":
            r1, r2 = core.take_text(rest[1:])
            if not r2 or not isinstance(r2[0], int) or r2[0] != th[1]:
                return None
            y = core.strip_prefix("\n", r1)
            think = None if y is None else core.strip_suffix("\n", y)
            if think is None:
                return None
            t3, rest3 = core.take_text(r2[1:])
            z = core.strip_prefix("\n\n", t3)
            cc = None if z is None else self.content_calls(z, rest3)
            return None if cc is None else AssistantTurn(think, cc[0], cc[1], cc[2], 0)
        cc = self.content_calls(x, rest)
        return None if cc is None else AssistantTurn(None, cc[0], cc[1], cc[2], 0)

    def tools_tail(self) -> Stream:
        """``toolsTail``."""
        i = self.ids
        return [i.call_open, i.call_close, TOOLS_TAGS, i.call_open, TOOLS_EXAMPLE, i.call_close,
                *self.footer_syms()]

    def unlayout_system(self, x: str, rest: Stream) -> Any | None:
        """``unlayoutSystem``."""
        if rest == self.footer_syms():
            return PlainTurn("system", x, 0)
        if rest != self.tools_tail():
            return None
        y = core.strip_suffix(TOOLS_OUTRO, x)
        r = None if y is None else core.split_first(TOOLS_INTRO, y)
        if r is None:
            return None
        # ``toolLines``: the tool lines are ``("\n" + line)*``; anything else is not a render.
        if r[1] and r[1][0] != "\n":
            return None
        tools = tuple(r[1][1:].split("\n")) if r[1] else ()
        if r[0] == "":
            return ToolsSystem(None, tools, 0)
        s = core.strip_suffix("\n\n", r[0])
        return None if s is None else ToolsSystem(s, tools, 0)

    def result_piece(self, b: int, p: Stream) -> tuple[tuple[str, int], Stream] | None:
        """``resultPiece``."""
        t, rest = core.take_text(p)
        if not rest or not isinstance(rest[0], int) or rest[0] != b:
            return None
        y = core.strip_prefix("\n", t)
        c = None if y is None else core.strip_suffix("\n", y)
        return None if c is None else ((c, 0), rest[1:])

    def unlayout_user(self, x: str, rest: Stream) -> Any | None:
        """``unlayoutUser``."""
        tr = self.ids.tool_response
        if tr is not None:
            a, b = tr
            if rest == self.footer_syms():
                c = core.strip_prefix("\n", x)
                return None if c is None else PlainTurn("user", c, 0)
            if x == "\n":
                pre, pieces = core.split_at_ctrl(a, rest)
                if pre:
                    return None
                rs = core.parse_pieces(lambda p: self.result_piece(b, p), ["\n"],
                                       self.footer_syms(), pieces)
                return None if rs is None else ToolGroup(tuple(rs))
            return None
        if rest != self.footer_syms():
            return None
        c = core.strip_prefix("\n", x)
        if c is None:
            return None
        if _looks_like_results(c):
            y = core.strip_prefix(RESP_OPEN_TEXT, c)
            z = None if y is None else core.strip_suffix(RESP_CLOSE_TEXT, y)
            return None if z is None else ToolGroup(
                tuple((r, 0) for r in z.split(RESP_SEP_TEXT))
            )
        return PlainTurn("user", c, 0)

    def unlayout_turn(self, s: Stream) -> Any | None:
        """``unlayoutTurn``: one turn, from the symbols after ``<|im_start|>``."""
        t, rest = core.take_text(s)
        x = core.strip_prefix("assistant\n", t)
        if x is not None:
            return self.unlayout_assistant(x, rest)
        x = core.strip_prefix("system\n", t)
        if x is not None:
            return self.unlayout_system(x, rest)
        x = core.strip_prefix("user", t)
        if x is not None:
            return self.unlayout_user(x, rest)
        return None

    def unlayout(self, s: Stream) -> QConv | None:
        """``unlayout``: a symbol stream back to a lowered conversation (owners 0)."""
        return self.unlayout_at(s)[0]

    def unlayout_at(self, s: Stream) -> tuple[QConv, None] | tuple[None, int]:
        """:meth:`unlayout` in the same pass, saying where it failed: ``(q, None)``, or
        ``(None, k)`` with ``k`` the index in ``s`` of the ``<|im_start|>`` of the first
        turn that does not read (0 when ``s`` does not start with one)."""
        pre, chunks = core.split_at_ctrl(self.ids.im_start, s)
        if pre:
            return None, 0
        turns = []
        at = 0
        for j, c in enumerate(chunks):
            if j == len(chunks) - 1 and [self.ids.im_start, *c] == self._prompt_syms:
                return QConv(tuple(turns), 0), None
            t = self.unlayout_turn(c)
            if t is None:
                return None, at
            turns.append(t)
            at += 1 + len(c)
        return QConv(tuple(turns), None), None


class _OpenGroup:
    """A tool group still collecting results (used by :meth:`Qwen.group`)."""

    def __init__(self, results: list[tuple[Any, int]]) -> None:
        self.results = results


def _strip_nl(p: Any) -> Any:
    """``stripNl``: ``reasoning_content.strip('\\n')``."""
    return p.strip("\n") if isinstance(p, str) else p


def _lstrip_nl(p: Any) -> Any:
    """``lstripNl``: ``content.lstrip('\\n')``."""
    return p.lstrip("\n") if isinstance(p, str) else p


def _looks_like_results(cs: str) -> bool:
    """``looksLikeResults``."""
    return cs.startswith(RESP_OPEN_TEXT) and cs.endswith(RESP_CLOSE_TEXT)


def _payloads(t: Any) -> list[Any]:
    """The payloads of a turn (for the token checks of ``turnOk``)."""
    if isinstance(t, PlainTurn):
        return [t.p]
    if isinstance(t, ToolsSystem):
        return [] if t.sys is None else [t.sys]
    if isinstance(t, AssistantTurn):
        return ([] if t.think is None else [t.think]) + [t.content]
    if isinstance(t, ToolGroup):
        return [p for p, _ in t.results]
    return []


def _owner_of(t: Any) -> int | None:
    if isinstance(t, ToolGroup):
        return t.results[0][1] if t.results else None
    return getattr(t, "owner", None)
