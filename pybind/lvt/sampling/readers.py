"""Lenient readers of sampled assistant turns, one per family structure: what the serving
engines' parsers accept (vLLM's ``hermes``/``qwen3_xml``/``qwen3_coder``, ``llama3_json``,
``deepseek_v3``/``deepseek_v31``/``deepseek_r1``, ``openai`` (harmony) and ``mistral``), read
from control-token ids and text (see :mod:`lvt.sampling.segments`).

Each reader gets the completion's segments up to its stop token and returns a
:class:`~lvt.sampling.segments.Reading`; it never raises on what a model sampled. Where the
format says where text goes, text elsewhere is kept (in the content) and reported.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lvt.families import deepseek, gemma, gemma4, harmony, llama, mistral, qwen, tagged
from lvt.sampling.completion import Problem
from lvt.sampling.segments import (
    Reading,
    Seg,
    end_of,
    find,
    join,
    json_object,
    json_values,
    name_and_arguments,
    split_think,
    stray,
)

__all__ = ["RawCall", "reader_for"]


@dataclass(frozen=True)
class RawCall:
    """A call before ids are assigned: name, arguments (or ``None``), argument text, the id the
    model wrote (or ``None``) and the token span."""

    name: str
    arguments: dict[str, Any] | None
    raw: str
    id: str | None
    start: int
    end: int


Reader = Callable[[Any, Mapping[str, int], list[Seg], Any], Reading]


def _json_call(text: str, start: int, end: int, r: Reading, what: str) -> RawCall:
    obj = json_object(text.strip())
    if obj is None:
        r.problems.append(Problem(start, f"{what} is not a JSON object"))
        return RawCall("", None, text.strip(), None, start, end)
    name, args, raw = name_and_arguments(obj)
    if not name:
        r.problems.append(Problem(start, f"{what} has no \"name\""))
    elif args is None:
        r.problems.append(Problem(start, f"the arguments of call {name!r} are not a JSON object"))
    return RawCall(name, args, raw, None, start, end)


# -- Qwen: <tool_call> JSON </tool_call> (hermes), or the XML function syntax (Qwen3-Coder) ------

_XML_FN = re.compile(r"<function=([^>\n]*)>(.*?)(?:</function>|$)", re.S)
_XML_PARAM = re.compile(r"<parameter=([^>\n]*)>\n?(.*?)\n?(?:</parameter>|(?=<parameter=)|$)",
                        re.S)


def _param_value(v: str, schema: Mapping[str, Any] | None) -> Any:
    """A Qwen3-Coder parameter value as its tool schema types it (the template writes
    ``value | tojson`` for mappings and sequences, ``value | string`` otherwise): text for a
    string parameter or one the schema does not name (as vLLM's and ``transformers``'
    parsers keep it), else its JSON reading when it has one."""
    if schema is None or schema.get("type") in ("string", None):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


def _xml_call(body: str, start: int, end: int, tools: Any, r: Reading) -> RawCall:
    m = _XML_FN.search(body)
    if m is None:
        r.problems.append(Problem(start, "the tool call is neither JSON nor <function=…>"))
        return RawCall("", None, body.strip(), None, start, end)
    name = m.group(1).strip()
    props = _tool_properties(tools, name)
    args = {k.strip(): _param_value(v, props.get(k.strip()))
            for k, v in _XML_PARAM.findall(m.group(2))}
    return RawCall(name, args, json.dumps(args, ensure_ascii=False), None, start, end)


def _tool_properties(tools: Any, name: str) -> dict[str, Any]:
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if isinstance(fn, Mapping) and fn.get("name") == name:
            props = (fn.get("parameters") or {}).get("properties") or {}
            return props if isinstance(props, dict) else {}
    return {}


def read_qwen(fam: qwen.Qwen, names: Mapping[str, int], segs: list[Seg], tools: Any
              ) -> Reading:
    """``<think>…</think>`` (opened by the prompt on Thinking-2507), content, then
    ``<tool_call>`` blocks holding JSON or Qwen3-Coder's ``<function=…>`` XML."""
    r = Reading()
    i = fam.ids
    r.reasoning, rest = split_think(segs, i.think, fam.prompt_think, r.problems)
    parts: list[str] = []
    k = 0
    while k < len(rest):
        s = rest[k]
        if s.ctrl is None:
            if r.calls and s.text.strip():
                r.problems.append(Problem(s.start, "text after a tool call"))
            parts.append(s.text)
            k += 1
        elif s.ctrl == i.call_open:
            j = find(rest, i.call_close, k + 1)
            inner = rest[k + 1:j] if j is not None else rest[k + 1:]
            body = join(inner, r.problems, "a tool call")
            end = rest[j].end if j is not None else end_of(rest, s.end)
            if j is None:
                r.problems.append(Problem(s.start, "the tool call is not closed"))
            if body.lstrip().startswith("<function="):
                r.calls.append(_xml_call(body, s.start, end, tools, r))
            else:
                r.calls.append(_json_call(body, s.start, end, r, "the tool call"))
            k = j + 1 if j is not None else len(rest)
        else:
            r.problems.append(stray(s, "the turn"))
            k += 1
    r.content = "".join(parts).strip("\n")  # '\n' + '<tool_call>' and `content.lstrip('\n')`
    return r


# -- Llama 3.x: JSON calls, `;`-separated, optionally after <|python_tag|> ----------------------

_BUILTIN = re.compile(r"\s*([A-Za-z_]\w*)\.call\((.*)\)\s*$", re.S)


def _builtin_call(text: str, start: int, end: int, r: Reading) -> RawCall | None:
    """``<|python_tag|>brave_search.call(query="…")``: a built-in tool's keyword arguments."""
    m = _BUILTIN.match(text)
    if m is None:
        return None
    try:
        node = ast.parse(f"f({m.group(2)})", mode="eval").body
        assert isinstance(node, ast.Call) and not node.args
        args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except (SyntaxError, ValueError, AssertionError):
        r.problems.append(Problem(start, "the built-in tool call's arguments do not parse"))
        return RawCall(m.group(1), None, m.group(2), None, start, end)
    return RawCall(m.group(1), args, json.dumps(args, ensure_ascii=False), None, start, end)


def _json_calls(text: str, start: int, end: int, r: Reading) -> list[RawCall] | None:
    vals = json_values(text)
    if vals is None or not all(isinstance(v, dict) and "name" in v for v, _ in vals):
        return None
    out = []
    for v, src in vals:
        name, args, raw = name_and_arguments(v)
        if args is None:
            r.problems.append(Problem(start, f"the arguments of call {name!r} are not a JSON "
                                             f"object: {src[:60]!r}"))
        out.append(RawCall(name, args, raw, None, start, end))
    return out


def read_llama(fam: llama.Llama, names: Mapping[str, int], segs: list[Seg], tools: Any
               ) -> Reading:
    """Text, or calls: ``{"name": …, "parameters"|"arguments": …}`` objects separated by
    ``;``, after ``<|python_tag|>`` or alone; a built-in ``name.call(…)`` after the tag. Text
    only for a template without call syntax (``fam.tools`` false: Llama 3's)."""
    if not fam.tools:
        return read_text(fam, names, segs, tools)
    r = Reading()
    tag = find(segs, names.get("<|python_tag|>"))
    head = segs if tag is None else segs[:tag]
    text = join(head, r.problems, "the turn")
    if tag is not None:
        tail = segs[tag + 1:]
        body = join(tail, r.problems, "a tool call")
        start, end = segs[tag].start, end_of(tail, segs[tag].end)
        calls = _json_calls(body, start, end, r)
        if calls is None:
            b = _builtin_call(body, start, end, r)
            if b is None:
                r.problems.append(Problem(start, "the text after <|python_tag|> is neither JSON "
                                                 "calls nor a built-in call"))
                calls = [RawCall("", None, body.strip(), None, start, end)]
            else:
                calls = [b]
        r.calls, r.content = calls, text
        return r
    if text.lstrip().startswith("{"):
        calls = _json_calls(text, segs[0].start, end_of(segs, 0), r)
        if calls is not None:
            r.calls = calls
            return r
        if re.match(r'\s*\{\s*"name"', text):
            r.problems.append(Problem(segs[0].start, "text that begins as a JSON call does not "
                                                     "parse as one (kept as content)"))
    r.content = text
    return r


# -- DeepSeek: <think>, then the tool-calls block in the V3 or the V3.1 syntax ------------------

def _ds_call(head: str, tail: str, start: int, end: int, r: Reading) -> RawCall:
    """V3: ``function`` SEP ``NAME\\n```json\\nARGS\\n```````; V3.1: ``NAME`` SEP ``ARGS``
    (SEP: the tool-separator control token)."""
    m = re.match(r"([^\n]*)\n```(?:json)?\n(.*?)\n?```\s*$", tail, re.S)
    if m is not None and head.strip() in ("function", ""):
        name, raw = m.group(1).strip(), m.group(2)
    else:
        name, raw = head.strip(), tail.strip()
    args = json_object(raw.strip())
    if args is None:
        r.problems.append(Problem(start, f"the arguments of call {name!r} are not a JSON object"))
    return RawCall(name, args, raw.strip(), None, start, end)


def read_deepseek(fam: deepseek.DeepSeek, names: Mapping[str, int], segs: list[Seg],
                  tools: Any) -> Reading:
    """``<think>…</think>`` (the opening tag optional), content, then the calls."""
    r = Reading()
    i = fam.ids
    r.reasoning, rest = split_think(segs, i.think, fam.prompt_think, r.problems)
    k = find(rest, i.calls_begin)
    # '\n</think>\n\n' + content: the newlines around the content are the template's
    r.content = join(rest if k is None else rest[:k], r.problems, "the turn").strip("\n")
    if k is None:
        return r
    j = k + 1
    while j < len(rest):
        s = rest[j]
        if s.ctrl == i.call_begin:
            e = find(rest, i.call_end, j + 1)
            inner = rest[j + 1:e] if e is not None else rest[j + 1:]
            sep = find(inner, i.sep)
            head = join(inner if sep is None else inner[:sep], r.problems, "a tool call")
            tail = "" if sep is None else join(inner[sep + 1:], r.problems, "a tool call")
            end = rest[e].end if e is not None else end_of(rest, s.end)
            if e is None:
                r.problems.append(Problem(s.start, "the tool call is not closed"))
            r.calls.append(_ds_call(head, tail, s.start, end, r))
            j = e + 1 if e is not None else len(rest)
        elif s.ctrl == i.calls_end:
            j += 1
        elif s.ctrl is None:
            if s.text.strip():
                r.problems.append(Problem(s.start, "text between tool calls"))
            j += 1
        else:
            r.problems.append(stray(s, "the tool calls"))
            j += 1
    return r


# -- Harmony (gpt-oss): channel messages ------------------------------------------------------

_RECIPIENT = re.compile(r"to=([^\s<]+)")


def read_harmony(fam: harmony.Harmony, names: Mapping[str, int], segs: list[Seg],
                 tools: Any) -> Reading:
    """Messages ``[<|start|>assistant]<|channel|>C [to=R] [<|constrain|>json]<|message|>…``
    ended by ``<|end|>``/``<|call|>``/``<|return|>``: ``analysis`` is reasoning, a recipient
    makes a call (``functions.NAME`` → ``NAME``), ``final`` is the content and a
    ``commentary`` message without a recipient (a preamble) is content too."""
    r = Reading()
    i = fam.ids
    reasoning: list[str] = []
    content: list[str] = []
    header: list[Seg] = []
    body: list[Seg] | None = None

    def close(end: int) -> None:
        nonlocal header, body
        if body is None:
            if any(s.ctrl is not None or s.text.strip() for s in header):
                r.problems.append(Problem(header[0].start, "a message header without "
                                                           "<|message|>"))
            header, body = [], None
            return
        htext = "".join(s.text if s.ctrl is None else " " for s in header)
        ch = find(header, i.channel)
        channel = ("".join(s.text for s in header[ch + 1:] if s.ctrl is None).split() or [""]
                   )[0] if ch is not None else ""
        to = _RECIPIENT.search(htext)
        text = join(body, r.problems, "a message")
        start = header[0].start if header else (body[0].start if body else end)
        if to is not None:
            name = to.group(1).removeprefix("functions.")
            args = json_object(text.strip())
            if args is None:
                r.problems.append(Problem(start, f"the arguments of call {name!r} are not a "
                                                 "JSON object"))
            r.calls.append(RawCall(name, args, text.strip(), None, start, end))
        elif channel == "analysis":
            reasoning.append(text)
        else:
            if channel not in ("final", "commentary"):
                r.problems.append(Problem(start, f"a message on channel {channel!r}"))
            content.append(text)
        header, body = [], None

    for s in segs:
        if s.ctrl in (i.end, i.call, i.ret):
            close(s.end)
        elif s.ctrl == i.start:
            if header or body is not None:
                close(s.start)
        elif s.ctrl == i.message and body is None:
            body = []
        elif body is None:
            header.append(s)
        else:
            body.append(s)
    if header or body is not None:
        close(end_of(segs, 0))
    r.reasoning = "\n\n".join(reasoning) if reasoning else None
    r.content = "\n\n".join(content)
    return r


# -- Mistral: [THINK]…[/THINK], content, [TOOL_CALLS] in the version's syntax ------------------

def read_mistral(fam: mistral.Mistral, names: Mapping[str, int], segs: list[Seg],
                 tools: Any) -> Reading:
    """Reasoning in ``[THINK]…[/THINK]``; calls after ``[TOOL_CALLS]`` as a JSON list (v7),
    ``NAME[CALL_ID]ID[ARGS]JSON`` (v11) or ``NAME[ARGS]JSON`` (v13), whichever the model
    wrote."""
    r = Reading()
    i = fam.ids
    a, b = names.get("[THINK]"), names.get("[/THINK]")
    think = (a, b) if a is not None and b is not None else None
    r.reasoning, rest = split_think(segs, think, False, r.problems)
    k = find(rest, i.calls)
    r.content = join(rest if k is None else rest[:k], r.problems, "the turn")
    while k is not None:
        nxt = find(rest, i.calls, k + 1)
        group = rest[k + 1:nxt] if nxt is not None else rest[k + 1:]
        start, end = rest[k].start, end_of(group, rest[k].end)
        ar = find(group, i.args)
        if ar is None:  # v7: a JSON list of {"name", "arguments", "id"}
            text = join(group, r.problems, "the tool calls")
            vals = json_values(text)
            objs = (vals[0][0] if vals and len(vals) == 1 and isinstance(vals[0][0], list)
                    else [v for v, _ in vals or ()])
            if not objs or not all(isinstance(o, dict) for o in objs):
                r.problems.append(Problem(start, "the tool calls are not a JSON list of calls"))
                r.calls.append(RawCall("", None, text.strip(), None, start, end))
            for o in objs if all(isinstance(o, dict) for o in objs) else ():
                name, args, raw = name_and_arguments(o)
                if args is None:
                    r.problems.append(Problem(start, f"the arguments of call {name!r} are not "
                                                     "a JSON object"))
                cid = o.get("id")
                r.calls.append(RawCall(name, args, raw, cid if isinstance(cid, str) else None,
                                       start, end))
        else:
            ci = find(group[:ar], i.call_id)
            name = join(group[:ci if ci is not None else ar], r.problems, "a tool call")
            cid = join(group[ci + 1:ar], r.problems, "a tool call") if ci is not None else None
            raw = join(group[ar + 1:], r.problems, "a tool call")
            args = json_object(raw.strip())
            if args is None:
                r.problems.append(Problem(start, f"the arguments of call {name.strip()!r} are "
                                                 "not a JSON object"))
            r.calls.append(RawCall(name.strip(), args, raw.strip(),
                                   cid.strip() if cid else None, start, end))
        k = nxt
    return r


def read_text(fam: Any, names: Mapping[str, int], segs: list[Seg], tools: Any) -> Reading:
    """Text only: formats with no tools and no reasoning (Gemma 3; Llama 3, whose template has
    no call syntax, so a JSON answer stays an answer)."""
    r = Reading()
    r.content = join(segs, r.problems, "the turn")
    return r


def read_tagged(fam: tagged.Tagged, names: Mapping[str, int], segs: list[Seg], tools: Any
                ) -> Reading:
    """Tagged turns: the think block where the entry writes one (opened by the prompt when
    the prompt writes ``<think>`` alone), then the content as sampled (these templates write
    content verbatim)."""
    r = Reading()
    r.reasoning, rest = split_think(segs, fam.think, fam.prompt_think == 1, r.problems)
    r.content = join(rest, r.problems, "the turn")
    return r


def read_gemma4(fam: gemma4.Gemma4, names: Mapping[str, int], segs: list[Seg], tools: Any
                ) -> Reading:
    """``<|channel>thought\n…<channel|>`` (the thought channel), then the content, trimmed as
    the template's ``strip_thinking(…) | trim`` writes it. Gemma 4's tool calls are not read
    (no structure of lvt writes them yet): a ``<|tool_call>`` stays in the content, reported."""
    r = Reading()
    i = fam.ids
    think, rest = split_think(segs, (i.channel, i.channel_end), False, r.problems)
    if think is not None:
        label = gemma4.THOUGHT.strip("\n")
        r.reasoning = think.removeprefix(label).strip("\n") if think.startswith(label) \
            else think
    r.content = join(rest, r.problems, "the turn").strip()
    return r


def reader_for(fam: Any) -> Reader:
    """The lenient reader of a family instance."""
    for cls, fn in ((gemma4.Gemma4, read_gemma4), (qwen.Qwen, read_qwen), (llama.Llama, read_llama),
                    (deepseek.DeepSeek, read_deepseek), (harmony.Harmony, read_harmony),
                    (mistral.Mistral, read_mistral), (gemma.Gemma, read_text),
                    (tagged.Tagged, read_tagged)):
        if isinstance(fam, cls):
            return fn  # type: ignore[return-value]
    raise TypeError(f"no completion reader for {type(fam).__name__}")
