"""Family structures: from a tokenizer's control tokens, a model entry's parameters and the
user's template options to a family instance (``Verified/Spec/*.lean``'s format records).

A structure is code and proofs (``lvt.families``, ``Verified/``); a model entry
(:class:`lvt.formats.FormatSpec`) is data over one: :data:`STRUCTURES` maps each family name
to its builder ``(tokenizer, entry name, params, options) -> family instance``. Control tokens
are found by name in the tokenizer, so one structure serves every tokenizer that names them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from lvt.errors import FormatError
from lvt.families.deepseek import DeepSeek, DsIds
from lvt.families.deepseek_v31 import DeepSeekV31
from lvt.families.gemma import Gemma, GemmaIds
from lvt.families.gemma4 import Gemma4, Gemma4Ids
from lvt.families.harmony import Harmony, HarmonyIds
from lvt.families.llama import Llama, LlamaIds
from lvt.families.llama_template import Llama3
from lvt.families.mistral import VERSIONS as MISTRAL_VERSIONS
from lvt.families.mistral import Mistral, MistralIds
from lvt.families.mistral_template import MistralSmall3, MistralTemplate
from lvt.families.mistral_v3 import MistralV3
from lvt.families.qwen import Qwen, QwenIds
from lvt.families.qwen_coder import QwenCoder
from lvt.families.qwen_template import QwQ
from lvt.families.qwen_xml import QwenXml
from lvt.families.tagged import Sym, Tagged
from lvt.formats.prompts import DATE
from lvt.runtime.codec import as_tokenizer

__all__ = ["STRUCTURES", "llama_today"]


def _added(tok: Any) -> dict[str, tuple[int, bool]]:
    """Added tokens of a tokenizer: content -> (id, special)."""
    return {a.content: (int(i), bool(a.special))
            for i, a in as_tokenizer(tok).get_added_tokens_decoder().items()}


def _need(added: Mapping[str, tuple[int, bool]], fmt: str, name: str) -> int:
    if name not in added:
        raise FormatError(f"format {fmt!r}: the tokenizer has no control token {name!r}")
    return added[name][0]


def _pair(added: Mapping[str, tuple[int, bool]], a: str, b: str) -> tuple[int, int] | None:
    if a in added and b in added:
        return added[a][0], added[b][0]
    return None


def _extra(added: Mapping[str, tuple[int, bool]], known: set[int], names: tuple[str, ...]
           ) -> tuple[int, ...]:
    """The other reserved ids: named family tokens present, then every special added token."""
    out = [added[n][0] for n in names if n in added]
    out += sorted(i for i, special in added.values() if special)
    return tuple(i for i in dict.fromkeys(out) if i not in known)


def _past_vocab(tok: Any) -> int:
    """The first id past the tokenizer's vocabulary (added tokens included): where an entry
    puts the control ids its vocabulary lacks and it never places."""
    return max(as_tokenizer(tok).get_vocab(with_added_tokens=True).values()) + 1


def _qwen_ids(tok: Any, fmt: str, need_v3: bool, tools: bool = True) -> QwenIds:
    """The ids by name. An entry without tool syntax (``tools=False``) whose vocabulary lacks
    ``<tool_call>``/``</tool_call>`` (SmolLM2's) gets the two ids past the vocabulary
    (``Spec/QwenEntries.lean``'s ``smollm2Ids``): no text encodes to them and the entry
    never places them."""
    added = _added(tok)
    im_start = _need(added, fmt, "<|im_start|>")
    im_end = _need(added, fmt, "<|im_end|>")
    if not tools and "<tool_call>" not in added and "</tool_call>" not in added:
        past = _past_vocab(tok)
        call_open, call_close = past, past + 1
    else:
        call_open = _need(added, fmt, "<tool_call>")
        call_close = _need(added, fmt, "</tool_call>")
    tr = _pair(added, "<tool_response>", "</tool_response>")
    think = _pair(added, "<think>", "</think>")
    if need_v3 and (tr is None or think is None):
        raise FormatError(f"format {fmt!r} needs the Qwen3 control tokens <think>, </think>, "
                          "<tool_response>, </tool_response>")
    known = {im_start, im_end, call_open, call_close, *(tr or ()), *(think or ())}
    return QwenIds(im_start, im_end, call_open, call_close, tr, think,
                   _extra(added, known, ("<|endoftext|>",)))


def _llama_ids(tok: Any, fmt: str) -> LlamaIds:
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in
           ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")]
    return LlamaIds(*ids, extra=_extra(added, set(ids), (
        "<|end_of_text|>", "<|eom_id|>", "<|python_tag|>")))


#: DeepSeek-R1's control tokens, in ``DsIds`` order (``think`` last, as a pair).
_DS_NAMES = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",  # noqa: RUF001
             "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",  # noqa: RUF001
             "<｜tool▁call▁end｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>",  # noqa: RUF001
             "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>", "<｜tool▁sep｜>",  # noqa: RUF001
             "<think>", "</think>")


#: The tool control tokens (``DsIds`` fields 5-13), which R1-Distill's vocabulary lacks.
_DS_TOOL_NAMES = frozenset(_DS_NAMES[4:13])


def _ds_ids(tok: Any, fmt: str, tools: bool = True) -> DsIds:
    """The ids by name. An entry without tool syntax (``tools=False``) whose vocabulary lacks
    the tool tokens gets ids past the vocabulary for them (``Spec/DeepSeek.lean``'s
    ``distillIds``): no text encodes to them and the entry never places them."""
    added = _added(tok)
    past = None
    ids = []
    for n in _DS_NAMES:
        if n not in added and not tools and n in _DS_TOOL_NAMES:
            if past is None:
                past = _past_vocab(tok)
            ids.append(past)
            past += 1
        else:
            ids.append(_need(added, fmt, n))
    return DsIds(*ids[:13], think=(ids[13], ids[14]), extra=_extra(added, set(ids), ()))


def _gemma_ids(tok: Any, fmt: str) -> GemmaIds:
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in ("<bos>", "<start_of_turn>", "<end_of_turn>")]
    # every special added token (<eos>, <pad>, the image tokens) is reserved; the other added
    # tokens (<table>, "\n", runs of spaces and tabs, <unusedN>) are ordinary text for Gemma
    return GemmaIds(*ids, extra=_extra(added, set(ids), ("<eos>",)))


#: Gemma 4's control tokens, in ``Gemma4Ids`` order, and its other markup (tools, ``<|"|>``).
GEMMA4_NAMES = ("<bos>", "<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>")
GEMMA4_MARKUP = ("<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                 "<tool_response|>", '<|"|>', "<eos>")


def _gemma4(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Gemma4:
    """Params: ``empty_thought`` (the non-thinking prompt writes an empty thought channel) and
    ``history_reasoning`` (``False``: reasoning is never written); option ``enable_thinking``."""
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in GEMMA4_NAMES]
    return Gemma4(Gemma4Ids(*ids, extra=_extra(added, set(ids), GEMMA4_MARKUP)),
                  o["enable_thinking"], p["empty_thought"], p.get("history_reasoning", True))


def _tagged_part(added: Mapping[str, tuple[int, bool]], fmt: str, part: str) -> Sym:
    """A part of a tagged entry: ``<|…|>`` names a control token the vocabulary must have,
    anything else is literal text."""
    if part.startswith("<|") and part.endswith("|>"):
        return _need(added, fmt, part)
    return part


def _tagged(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Tagged:
    """Params: ``header`` and ``footer`` (parts, ``{role}`` replaced by the role), ``roles``
    (those the template writes), ``eos`` (``eos_token``'s name when the render without a
    generation prompt ends in it, else ``None``); for a think block on assistant turns
    ``think`` (its two tokens' names) and ``keep_reasoning``; ``default_system``,
    ``default_tail`` and ``default_if_empty`` for a template that inserts a system turn. How
    much of the block the prompt writes: the entry's ``prompt_think``, else the option
    ``thinking`` (``True``: it opens the block; ``False``: it writes it empty)."""
    added = _added(tok)
    headers = {r: tuple(_tagged_part(added, fmt, x.replace("{role}", r)) for x in p["header"])
               for r in p["roles"]}
    footer = tuple(_tagged_part(added, fmt, x) for x in p["footer"])
    eos = _need(added, fmt, p["eos"]) if p.get("eos") else None
    think = (_need(added, fmt, p["think"][0]), _need(added, fmt, p["think"][1])) \
        if p.get("think") else None
    known = {x for h in (*headers.values(), footer) for x in h if isinstance(x, int)}
    known |= {x for x in (eos, *(think or ())) if x is not None}
    prompt_think = 0 if think is None else p.get(
        "prompt_think", 1 if o.get("thinking", True) else 2)
    return Tagged(headers, footer, eos, (*sorted(known), *_extra(added, known, ())),
                  think=think, keep_reasoning=p.get("keep_reasoning", True),
                  prompt_think=prompt_think, default_system=p.get("default_system"),
                  default_tail=p.get("default_tail", ""),
                  default_if_empty=p.get("default_if_empty", False))


#: Mistral's control tokens, in ``MistralIds`` order (tekken names; every tekken file has them,
#: Nemo's ``tekken_240718.json`` included).
_MISTRAL_NAMES = ("<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                  "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[SYSTEM_PROMPT]",
                  "[/SYSTEM_PROMPT]")


def _mistral(tok: Any, fmt: str, version: Any, stable: bool) -> Mistral:
    """A Mistral format from the tokenizer's control tokens by name: v11 and v13 also need
    ``[ARGS]`` (v11 ``[CALL_ID]`` too), which Nemo's tekken vocabulary lacks."""
    if version not in MISTRAL_VERSIONS:
        raise FormatError(f"format {fmt!r}: option 'version' must be one of "
                          f"{list(MISTRAL_VERSIONS)}, got {version!r}")
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in _MISTRAL_NAMES]
    args = added["[ARGS]"][0] if "[ARGS]" in added else None
    call_id = added["[CALL_ID]"][0] if "[CALL_ID]" in added else None
    tool_content = added["[TOOL_CONTENT]"][0] if "[TOOL_CONTENT]" in added else None
    for name in ("[ARGS]", "[CALL_ID]")[: {"v7": 0, "v11": 2, "v13": 1}[version]]:
        if name not in added:
            raise FormatError(f"format {fmt!r} version {version!r} needs the control token "
                              f"{name!r}, which this tokenizer lacks (Nemo's tekken has none: "
                              "use version 'v7')")
    if version != "v13" and tool_content is None:
        raise FormatError(f"format {fmt!r} version {version!r} needs the control token "
                          "'[TOOL_CONTENT]', which this tokenizer lacks")
    known = {*ids, *(t for t in (args, call_id, tool_content) if t is not None)}
    return Mistral(MistralIds(*ids, args=args, call_id=call_id, tool_content=tool_content,
                              extra=_extra(added, known, ("[THINK]", "[/THINK]"))),
                   version, stable)


#: o200k_harmony's control tokens, in ``HarmonyIds`` order.
_HARMONY_NAMES = ("<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>", "<|call|>")


def _harmony(tok: Any, fmt: str, mode: str, o: Mapping[str, Any]) -> Harmony:
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in _HARMONY_NAMES]
    hids = HarmonyIds(*ids, extra=_extra(added, set(ids), ("<|constrain|>",)))
    return Harmony(hids, mode, current_date=o["current_date"],
                   reasoning_effort=o["reasoning_effort"], model_identity=o["model_identity"])


def llama_today() -> str:
    """``strftime_now("%d %b %Y")``: today's date as Llama 3.2's template stamps it."""
    return datetime.datetime.now().strftime("%d %b %Y")


def _qwen(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Qwen:
    """Params: ``mode``, ``default_system``, ``prompt_think``, ``v3`` (needs the Qwen3 ids),
    ``tools`` (``False``: the template has no tool syntax), ``loop`` (``"qwq"``:
    :class:`~lvt.families.qwen_template.QwQ`, whose values are its own)."""
    tools = p.get("tools", True)
    if p.get("loop") == "qwq":
        return QwQ(_qwen_ids(tok, fmt, True))
    return Qwen(_qwen_ids(tok, fmt, p["v3"], tools), p["mode"], o.get("enable_thinking", True),
                p.get("default_system"), p.get("prompt_think", False), tools)


def _qwen_xml(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> QwenXml:
    """The Qwen3.5 structure. Params: ``scalars`` (``"string"`` or ``"tojson"``), ``history``
    (``"last_query"`` or ``"all"``); options ``enable_thinking`` (its default is the entry's)
    and ``preserve_thinking`` (Qwen3.6). With ``coder`` (Qwen3-Coder: XML tool descriptions,
    no reasoning) the params are ``scalars`` and ``result_nl`` and there is no option."""
    if p.get("coder"):
        return QwenCoder(_qwen_ids(tok, fmt, True), p["scalars"], p["result_nl"])
    return QwenXml(_qwen_ids(tok, fmt, True), p["scalars"], p["history"],
                   o["enable_thinking"], o.get("preserve_thinking", False))


def _llama(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Llama:
    """Options ``date_string`` (``""``: today, as ``strftime_now``) and
    ``tools_in_user_message``; param ``loop`` (``"llama3.0"``:
    :class:`~lvt.families.llama_template.Llama3`, which reads no option)."""
    if p.get("loop") == "llama3.0":
        return Llama3(_llama_ids(tok, fmt))
    return Llama(_llama_ids(tok, fmt), o["date_string"] or llama_today(),
                 o["tools_in_user_message"])


def _gemma(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Gemma:
    return Gemma(_gemma_ids(tok, fmt))


def _deepseek(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> DeepSeek:
    """Params: ``mode``, ``prompt_think`` (the prompt opens ``<think>\\n``), ``tools``
    (``False``: no tool syntax) and ``join_systems`` (``False``: one system message);
    ``syntax`` ``"v3.1"``: :class:`DeepSeekV31` with the params ``open_think`` and
    ``verbatim`` and the option ``thinking`` (and ``enable_thinking`` where the template
    reads it when ``thinking`` is undefined: lvt thinks when either is true)."""
    if p.get("syntax") == "v3.1":
        return DeepSeekV31(_ds_ids(tok, fmt), o["thinking"] or o.get("enable_thinking", False),
                           p.get("open_think", False), p.get("verbatim", True))
    tools = p.get("tools", True)
    return DeepSeek(_ds_ids(tok, fmt, tools), p["mode"], p.get("prompt_think", False), tools,
                    p.get("join_systems", True))


#: The SentencePiece v3 vocabulary's control tokens, in ``MistralIds`` order up to
#: ``[TOOL_CALLS]`` (it has no ``[SYSTEM_PROMPT]``).
_MISTRAL_V3_NAMES = _MISTRAL_NAMES[:9]


def _mistral_v3(tok: Any, fmt: str, dummy: bool) -> MistralV3:
    """Version v3 (``Spec/MistralV3.lean``'s ``V3Fmt``; ``dummy``: the layout writes
    SentencePiece's dummy prefix, and the tokenizer must have none of its own,
    :mod:`lvt.zoo.spm`); ``sys_open``/``sys_close``, which v3 never writes, are the
    vocabulary's ``[SYSTEM_PROMPT]`` pair (Nemo's tekken, ``nemoIds``), else ids past it
    (``v3Ids``)."""
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in _MISTRAL_V3_NAMES]
    norm = as_tokenizer(tok).normalizer
    if dummy and norm is not None and "Prepend" in repr(norm.__getstate__()):
        raise FormatError(f"format {fmt!r} writes SentencePiece's dummy prefix itself (a space "
                          "before each text piece); this tokenizer's normalizer prepends one "
                          "too: use the zoo tokenizer 'mistral-v3' (lvt.zoo.spm)")
    past = _past_vocab(tok)
    sys_ids = _pair(added, "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]") or (past, past + 1)
    tool_content = added["[TOOL_CONTENT]"][0] if "[TOOL_CONTENT]" in added else None
    known = {*ids, *sys_ids, *(() if tool_content is None else (tool_content,))}
    return MistralV3(MistralIds(*ids, *sys_ids, tool_content=tool_content,
                                extra=_extra(added, known, ())), dummy)


def _mistral_entry(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Mistral:
    """Params: ``stable``, ``version`` (``"v3"``: :class:`MistralV3`, with ``dummy_prefix``;
    a tekken version fixed by the entry; else the option ``version``), ``default_system``
    (the template's own system prompt: :class:`MistralTemplate`; its ``{date}`` is the option
    ``date_string``) and ``loop`` (``"small3"``: :class:`MistralSmall3`)."""
    if p.get("version") == "v3":
        return _mistral_v3(tok, fmt, p.get("dummy_prefix", True))
    fam = _mistral(tok, fmt, p.get("version") or o["version"], p["stable"])
    if p.get("default_system"):  # the template's own system prompt (Ministral 3, Devstral 2)
        text = p["default_system"].replace(DATE, o.get("date_string", ""))
        cls = MistralSmall3 if p.get("loop") == "small3" else MistralTemplate
        return cls(fam.ids, fam.version, fam.stable, text)
    return fam


def _harmony_entry(tok: Any, fmt: str, p: Mapping[str, Any], o: Mapping[str, Any]) -> Harmony:
    """Params: ``mode``."""
    return _harmony(tok, fmt, p["mode"], o)


#: family name -> builder ``(tokenizer, entry name, params, options) -> family instance``.
STRUCTURES: dict[str, Callable[[Any, str, Mapping[str, Any], Mapping[str, Any]], Any]] = {
    "qwen": _qwen,
    "qwen-xml": _qwen_xml,
    "llama": _llama,
    "gemma": _gemma,
    "gemma4": _gemma4,
    "tagged": _tagged,
    "deepseek": _deepseek,
    "mistral": _mistral_entry,
    "harmony": _harmony_entry,
}
