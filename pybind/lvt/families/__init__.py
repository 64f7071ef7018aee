"""Chat families: one module per family, each the transliteration of its Lean file.

* :mod:`lvt.families.qwen` (``Verified/Spec/Qwen.lean``): Qwen2.5, Qwen3 exact and stable.
* :mod:`lvt.families.qwen_xml` (``Verified/Spec/QwenXml.lean``): Qwen3.5, Qwen3.6, Ornith-1.0
  (XML tool calls; a :class:`~lvt.families.qwen.Qwen` subclass, read back by its readers).
* :mod:`lvt.families.qwen_coder`: Qwen3-Coder (the Qwen3.5 structure's calls, XML tool
  descriptions, no reasoning; a :class:`~lvt.families.qwen_xml.QwenXml` subclass).
* :mod:`lvt.families.qwen_template`: QwQ-32B (the Qwen structure's layout and reader with its
  template's lowering; a :class:`~lvt.families.qwen.Qwen` subclass, Python only).
* :mod:`lvt.families.llama` (``Verified/Spec/Llama.lean``): Llama 3.1.
* :mod:`lvt.families.gemma` (``Verified/Spec/Gemma.lean``): Gemma 3.
* :mod:`lvt.families.gemma4`: Gemma 4 (turns, the thinking switch, the thought channel; no
  tool syntax yet; Python only).
* :mod:`lvt.families.tagged` (``Verified/Spec/Tagged.lean``): tagged turns, an entry's header
  and footer as data (Phi-3, Phi-4, talkie, Kimi K2.x; no tools).
* :mod:`lvt.families.deepseek` (``Verified/Spec/DeepSeek.lean``): DeepSeek-R1 exact and stable;
  :mod:`lvt.families.deepseek_v31` (``Verified/Spec/DeepSeekV31.lean``): DeepSeek-V3.1 (its
  tokens with V3.1's header, calls and results; a :class:`~lvt.families.deepseek.DeepSeek`
  subclass).
* :mod:`lvt.families.harmony` (``Verified/Spec/Harmony.lean``): gpt-oss exact and stable.
* :mod:`lvt.families.mistral` (``Verified/Spec/Mistral.lean``): Mistral tekken v7, v11, v13;
  :mod:`lvt.families.mistral_v3` (``Verified/Spec/MistralV3.lean``): SentencePiece v3.
* :mod:`lvt.families.mistral_template`: Ministral 3, Devstral 2, Mistral Small 3 / 3.1 (the
  Mistral structure with their templates' lowering; Python only).

:func:`unlower` turns a lowered conversation back into messages (the template-visible form of
what was rendered); :func:`parse_completion` reads the tokens of a sampled assistant turn as
blocks with the family's parser.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from lvt.families import (
    deepseek,
    gemma,
    gemma4,
    harmony,
    llama,
    mistral,
    mistral_v3,
    qwen,
    tagged,
)
from lvt.model import (
    Block,
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Sampled,
    Text,
    ToolCall,
    payload_of,
    plain_blocks,
)
from lvt.runtime import core

__all__ = ["erase", "parse_completion", "unlower"]


def erase(q: Any) -> Any:
    """``QConv.erase`` / ``LConv.erase`` / ``DConv.erase``: every owner set to 0 (what the
    parser returns)."""
    def one(t: Any) -> Any:
        if isinstance(t, qwen.ToolGroup):
            return qwen.ToolGroup(tuple((p, 0) for p, _ in t.results))
        if isinstance(t, gemma.UserTurn) and isinstance(t.p, str):  # `GTurn.erase` folds
            return gemma.UserTurn("", t.pre + t.p, 0)
        if isinstance(t, deepseek.ResultsTurn):
            return deepseek.ResultsTurn(t.first, tuple((p, 0) for p, _ in t.results))
        return dataclasses.replace(t, owner=0)

    if isinstance(q, mistral.MConv):  # `MConv.erase`: the prompt writes no token
        return mistral.MConv(tuple(one(t) for t in q.turns), None)
    if isinstance(q, deepseek.DConv):
        return dataclasses.replace(q, sys_owner=0, turns=tuple(one(t) for t in q.turns),
                                   prompt=None if q.prompt is None else (q.prompt[0], 0))
    return dataclasses.replace(q, turns=tuple(one(t) for t in q.turns),
                               prompt=None if q.prompt is None else 0)


def _tools(lines: Sequence[str]) -> list[Any]:
    out = []
    for j in lines:
        try:
            out.append(json.loads(j))
        except ValueError:
            out.append(j)
    return out


def _qwen_turn(t: Any) -> list[Message]:
    if isinstance(t, qwen.PlainTurn):
        return [Message(Role(t.role), plain_blocks(t.p))]
    if isinstance(t, qwen.ToolsSystem):
        return [] if t.sys is None else [Message(Role.SYSTEM, plain_blocks(t.sys))]
    if isinstance(t, qwen.AssistantTurn):
        bs: list[Block] = []
        if t.think is not None and not (isinstance(t.think, str) and t.think == ""):
            bs.append(Reasoning(payload_of(t.think)))
        if t.sep and t.calls and isinstance(t.content, str) and t.content == "":
            # `(loop.first and content)` writes the "\n" before the first call for content that
            # is all newlines (`content.lstrip('\n')` writes nothing): read back as "\n"
            bs.append(Plain(Text("\n")))
        else:
            bs += plain_blocks(t.content)
        bs += [ToolCall(k.name, k.args) for k in t.calls]
        return [Message(Role.ASSISTANT, bs)]
    if isinstance(t, qwen.ToolGroup):
        return [Message(Role.TOOL, plain_blocks(p)) for p, _ in t.results]
    if isinstance(t, qwen.SampledTurn):
        return [Message(Role.ASSISTANT, (Sampled(t.ts),))]
    raise TypeError(t)


def _llama_turn(t: Any) -> list[Message]:
    if isinstance(t, llama.SystemTurn):
        return [Message(Role.SYSTEM, plain_blocks(t.sys))] if t.sys != "" else []
    if isinstance(t, llama.UserToolsTurn):
        return [Message(Role.USER, plain_blocks(t.u))]
    if isinstance(t, llama.PlainTurn):
        return [Message(Role(t.role), plain_blocks(t.p))]
    if isinstance(t, llama.CallTurn):
        return [Message(Role.ASSISTANT, (ToolCall(t.name, t.args),))]
    if isinstance(t, llama.IpythonTurn):
        p = t.p
        if isinstance(p, str):
            try:
                v = json.loads(p)
                p = v if isinstance(v, str) else p
            except ValueError:
                pass
        return [Message(Role.TOOL, plain_blocks(p))]
    if isinstance(t, llama.SampledTurn):
        return [Message(Role.ASSISTANT, (Sampled(t.ts),))]
    raise TypeError(t)


def _deepseek_turn(t: Any) -> list[Message]:
    if isinstance(t, deepseek.UserTurn):
        return [Message(Role.USER, plain_blocks(t.p))]
    if isinstance(t, deepseek.AssistantTurn | deepseek.CallsTurn):
        bs: list[Block] = []
        if t.think is not None:
            bs.append(Reasoning(payload_of(t.think)))
        if isinstance(t, deepseek.AssistantTurn):
            bs += plain_blocks(t.content)
        else:
            bs += () if t.head is None else plain_blocks(t.head)
            bs += [ToolCall(k.name, k.args) for k in t.calls]
        return [Message(Role.ASSISTANT, bs)]
    if isinstance(t, deepseek.ResultsTurn):
        return [Message(Role.TOOL, plain_blocks(p)) for p, _ in t.results]
    if isinstance(t, deepseek.SampledTurn):
        return [Message(Role.ASSISTANT, (Sampled(t.ts),))]
    raise TypeError(t)


def _mistral_turn(t: Any) -> list[Message]:
    if isinstance(t, mistral.SystemTurn):
        # `[SYSTEM_PROMPT][/SYSTEM_PROMPT]`
        return [Message(Role.SYSTEM, (Plain(payload_of(t.p)),))]
    if isinstance(t, mistral.UserTurn):
        return [Message(Role.USER, plain_blocks(t.p))]
    if isinstance(t, mistral.AssistantTurn):
        return [Message(Role.ASSISTANT, (*plain_blocks(t.p),
                                         *(ToolCall(k.name, k.args, k.id) for k in t.calls)))]
    if isinstance(t, mistral.ResultTurn):
        return [Message(Role.TOOL, plain_blocks(t.p))]
    if isinstance(t, mistral.SampledTurn):
        return [Message(Role.ASSISTANT, (Sampled(t.ts),))]
    raise TypeError(t)


def _harmony_msgs(turns: Sequence[Any], with_tools: bool = False) -> list[Message]:
    """Harmony turns as messages: an analysis turn joins the assistant message after it as
    its reasoning; the developer text splits back into the system message and the tools
    (:func:`lvt.families.harmony.read_developer`; ``with_tools``: the render has tools)."""
    msgs: list[Message] = []
    think: list[Block] = []
    for t in turns:
        if isinstance(t, harmony.AnalysisTurn):
            if think:  # two analysis messages in a row: no conversation renders that
                msgs.append(Message(Role.ASSISTANT, think))
            think = [Reasoning(payload_of(t.p))]
            continue
        if isinstance(t, harmony.DevTurn):
            x = harmony.read_developer(t, with_tools)[0]
            if x is not None:
                msgs.append(Message(Role.SYSTEM, plain_blocks(x)))
        elif isinstance(t, harmony.UserTurn):
            msgs.append(Message(Role.USER, plain_blocks(t.p)))
        elif isinstance(t, harmony.FinalTurn):
            msgs.append(Message(Role.ASSISTANT, [*think, *plain_blocks(t.p)]))
        elif isinstance(t, harmony.CallTurn):
            msgs.append(Message(Role.ASSISTANT, [*think, ToolCall(t.name, t.args)]))
        elif isinstance(t, harmony.ResultTurn):
            try:
                v = json.loads(t.quoted)
            except ValueError:
                v = t.quoted
            msgs.append(Message(Role.TOOL, plain_blocks(v if isinstance(v, str) else t.quoted)))
        elif isinstance(t, harmony.SampledTurn):
            msgs.append(Message(Role.ASSISTANT, (Sampled(t.ts),)))
        else:
            raise TypeError(t)
        think = []
    if think:
        msgs.append(Message(Role.ASSISTANT, think))
    return msgs


def _gemma_first(x: str) -> list[Message]:
    """Messages whose first user turn is the text ``x``: a user message when ``x`` is trimmed,
    else a system message and a user message split at the last ``"\n\n"`` after which the
    text is trimmed (one exists when ``x`` is a render's: ``system + "\n\n" + user.strip()``)."""
    if core.trim(x) == x:
        return [Message(Role.USER, plain_blocks(x))]
    i = x.rfind("\n\n")
    while i >= 0 and core.trim(x[i + 2:]) != x[i + 2:]:
        i = x.rfind("\n\n", 0, i)
    if i < 0:
        return [Message(Role.USER, plain_blocks(x))]
    return [Message(Role.SYSTEM, plain_blocks(x[:i])), Message(Role.USER, plain_blocks(x[i + 2:]))]


def _gemma_turn(t: Any, first: bool = False) -> list[Message]:
    if isinstance(t, gemma.UserTurn):
        if t.pre == "":
            if first and isinstance(t.p, str):
                return _gemma_first(t.p)
            return [Message(Role.USER, plain_blocks(t.p))]
        # the system prefix kept apart from a token payload: `messages[0]['content'] + '\n\n'`
        return [Message(Role.SYSTEM, plain_blocks(t.pre.removesuffix("\n\n"))),
                Message(Role.USER, plain_blocks(t.p))]
    if isinstance(t, gemma.ModelTurn):
        return [Message(Role.ASSISTANT, plain_blocks(t.p))]
    if isinstance(t, gemma.SampledTurn):
        return [Message(Role.ASSISTANT, (Sampled(t.ts),))]
    raise TypeError(t)


def unlower(family: Any, q: Any) -> Conversation:
    """The messages of a lowered conversation: each turn as the message(s) it came from, in
    the form the template shows them (trimmed, defaults explicit, tool results unquoted)."""
    msgs: list[Message] = []
    tools: list[Any] | None = None
    if isinstance(family, gemma4.Gemma4 | tagged.Tagged):
        return Conversation(family.to_messages(q), q.prompt is not None, None)
    if isinstance(family, deepseek.DeepSeek):
        # the hoisted system text as one leading system message
        if not (isinstance(q.system, str) and q.system == ""):
            msgs.append(Message(Role.SYSTEM, plain_blocks(q.system)))
        for t in q.turns:
            msgs += _deepseek_turn(t)
        return Conversation(msgs, q.prompt is not None, None)
    if isinstance(family, harmony.Harmony):
        # the system message's `functions` line says whether the render has tools
        with_tools = q.system.endswith(harmony.TOOLS_LINE)
        dev = next((t for t in q.turns if isinstance(t, harmony.DevTurn)), None)
        if with_tools and dev is not None:
            tools = harmony.read_developer(dev, True)[1]
        return Conversation(_harmony_msgs(q.turns, with_tools), q.prompt is not None, tools)
    if isinstance(family, mistral.Mistral):
        ut = next((t for t in q.turns if isinstance(t, mistral.UserTurn) and t.tools), None)
        for t in q.turns:
            if isinstance(t, mistral.AssistantTurn) and t.p == "" and not t.calls and \
                    getattr(family, "strips_answers", True):
                # `[/INST]</s>`: mistral-common refuses content "" but writes "  " (any run of
                # spaces, `rstrip(" ")`-ed) as nothing; read back as the shortest such content
                # (a template that writes answers as given writes "" as nothing: read as "")
                msgs.append(Message(Role.ASSISTANT, (Plain(Text(" ")),)))
                continue
            if family.version == "v3" and isinstance(t, mistral.ResultTurn):
                # v3 writes `{"content": …, "call_id": …}`: the message is the content
                msgs.append(Message(Role.TOOL, plain_blocks(mistral_v3.result_content(t.p))))
                continue
            msgs += _mistral_turn(t)
        if ut is None:
            return Conversation(msgs, False, None)
        try:
            tools = json.loads(ut.tools)
        except ValueError:
            tools = [ut.tools]  # not a tool list: lowering refuses it, so parse does
        return Conversation(msgs, False, tools if isinstance(tools, list) else [tools])
    if isinstance(family, gemma.Gemma):
        # the first user turn splits back into a system and a user message when its text is
        # not trimmed (the template trims user text, not the system text it prepends)
        for j, t in enumerate(q.turns):
            msgs += _gemma_turn(t, j == 0)
        return Conversation(msgs, q.prompt is not None, None)
    if isinstance(family, qwen.Qwen):
        for j, t in enumerate(q.turns):
            if isinstance(t, qwen.ToolsSystem):
                # Qwen3-Coder writes each tool as an XML description: its own reader
                read = getattr(family, "read_tools", None)
                tools = read(t.tools) if read is not None else _tools(t.tools)
            msgs += _qwen_turn(t)
            if family.mode == "exact" and isinstance(t, qwen.AssistantTurn) and \
                    t.think == "" and j + 1 < len(q.turns):
                # an empty think block before the last message: the template writes one only
                # for reasoning that is not empty, all newlines (stripped): read back as "\n"
                m = msgs[-1]
                msgs[-1] = Message(m.role, (Reasoning(Text("\n")), *m.blocks))
    else:
        for t in q.turns:
            if isinstance(t, llama.SystemTurn) and t.env:
                tools = []
            if isinstance(t, llama.SystemTurn | llama.UserToolsTurn) and t.tools:
                tools = _tools(t.tools)
            msgs += _llama_turn(t)
    return Conversation(msgs, q.prompt is not None, tools)


def _loose_syms(codec: Any, reserved: frozenset[int], ids: Sequence[int]) -> core.Stream | None:
    """The symbols sampled tokens stand for: runs decoded as text without the re-encoding
    check (a policy may sample a non-canonical segmentation)."""
    out: core.Stream = []
    run: list[int] = []

    def flush() -> bool:
        if run:
            try:
                out.append(codec.decode_bytes(run).decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                return False
            run.clear()
        return True

    for t in ids:
        if t in reserved:
            if not flush():
                return None
            out.append(int(t))
        else:
            run.append(int(t))
    return out if flush() else None


def parse_completion(family: Any, codec: Any, reserved: frozenset[int], ids: Sequence[int]
                     ) -> list[Block] | None:
    """The blocks of a sampled assistant turn (``None`` when they do not read as one): the
    generation prompt, the sampled tokens and the end of turn, read with ``unlayoutTurn``."""
    body = _loose_syms(codec, reserved, ids)
    if body is None:
        return None
    if isinstance(family, deepseek.DeepSeek):
        opened = core.syms(family.think_open(False, 0))  # the prompt's '<think>\n' (Distill)
        t = family.unlayout_completion(False, core.merge_text([*opened, *body,
                                                               family.ids.eos]))
        return None if t is None else list(_deepseek_turn(t)[0].blocks)
    if isinstance(family, harmony.Harmony):
        # the sampled tokens hold their own stop token; without one, `<|return|>` is assumed
        i = family.ids
        stop = [] if ids and ids[-1] in (i.ret, i.call, i.end) else [i.ret]
        pre, chunks = core.split_at_ctrl(i.start, core.merge_text(
            core.syms(family.prompt_items(0)) + body + stop))
        turns = [family.unlayout_turn(c) for c in chunks]
        if pre or any(t is None or isinstance(t, harmony.DevTurn | harmony.UserTurn |
                                               harmony.ResultTurn) for t in turns):
            return None
        ms = _harmony_msgs(turns)
        return [b for m in ms for b in m.blocks]
    if isinstance(family, mistral.Mistral):
        r = family.assistant_syms(core.merge_text([*body, family.ids.eos]))
        return None if r is None else list(_mistral_turn(r)[0].blocks)
    if isinstance(family, tagged.Tagged):
        return family.assistant_blocks(body)
    if isinstance(family, gemma4.Gemma4):
        # the prompt's empty thought channel (26B, thinking off) is the prompt's, not the turn's
        opened = core.syms(family.prompt_items(0))[2:]
        r = family.model_body(core.merge_text([*opened, *body]))
        if r is None:
            return None
        return list(family.model_blocks(gemma4.ModelTurn(r[0], r[1], 0)))
    if isinstance(family, gemma.Gemma):
        s = core.merge_text(core.syms(family.prompt_items(0)) + body + family.footer_syms())
        t = family.unlayout_turn(s[1:])
        return list(_gemma_turn(t)[0].blocks) if isinstance(t, gemma.ModelTurn) else None
    if isinstance(family, qwen.Qwen):
        s = core.merge_text(core.syms(family.prompt_items(0)) + body + family.footer_syms())
        t = family.unlayout_turn(s[1:])
        if not isinstance(t, qwen.AssistantTurn):
            return None
        return list(_qwen_turn(t)[0].blocks)
    s = core.merge_text(core.syms(family.prompt_items(0)) + body + [family.ids.eot])
    t = family.unlayout_turn(s[1:])
    if not isinstance(t, llama.CallTurn | llama.PlainTurn):
        return None
    return list(_llama_turn(t)[0].blocks)
