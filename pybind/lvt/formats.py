# ruff: noqa: RUF001, RUF002  (DeepSeek control tokens use FULLWIDTH VERTICAL LINE)
"""The shipped chat formats, mirroring ``Verified/Spec/Formats.lean``, and the registry that
instantiates them from a tokenizer.

Each format is a function of the control-token ids of a tokenizer family (``chatml``,
``qwen3``, ``llama3``, ``mistral``, ``harmony``, ``deepseek_r1``, ``gemma``). The registry
:data:`FORMATS` maps a format name to a :class:`FormatSpec` that knows the control-token
*strings* to look up in a tokenizer and how a tool call is laid out in that format.

Tool-call layout per format (:meth:`FormatSpec.shape_tool_call`, applied by
:func:`lvt.encoder.ChatEncoder.encode_openai`; ``ChatEncoder.encode`` renders a
:class:`~lvt.model.ToolCall` exactly as given):

* ``qwen2.5``/``chatml`` and ``qwen3``: the name is not rendered separately (empty name
  payload); the argument text is ``{"name": NAME, "arguments": ARGS}\\n`` as the Qwen
  templates write it between ``<tool_call>\\n`` and ``</tool_call>`` (NAME JSON-quoted,
  ARGS the argument JSON text, verbatim).
* ``llama3``: empty name; argument text ``{"name": NAME, "parameters": ARGS}`` (the
  Llama 3.1 JSON tool-call shape) between ``<|python_tag|>`` and ``<|eom_id|>``.
* ``mistral-v7``: name and arguments separately: ``[TOOL_CALLS]NAME[ARGS]ARGS``.
* ``gpt-oss``: name and arguments separately:
  ``<|channel|>commentary to=functions.NAME<|constrain|>json<|message|>ARGS<|call|>``.
* ``deepseek-r1``: empty name; argument text ``NAME\\n```json\\nARGS\\n``` `` after
  ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>``.
* ``gemma``: no tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from lvt.errors import FormatError
from lvt.model import BlockKind, Role
from lvt.spec import ChatFormat, Ctrl, Lit, Piece

__all__ = [
    "CHAR_BASE",
    "FORMATS",
    "REFERENCE_IDS",
    "CharCodec",
    "ChatMLIds",
    "DeepSeekR1Ids",
    "FormatSpec",
    "GemmaIds",
    "HarmonyIds",
    "Llama3Ids",
    "MistralIds",
    "Qwen3Ids",
    "char_codec",
    "chatml",
    "chatml_role",
    "deepseek_r1",
    "deepseek_r1_reference",
    "format_names",
    "gemma",
    "gemma_reference",
    "get_spec",
    "harmony",
    "harmony_reference",
    "llama3",
    "llama3_reference",
    "llama_role",
    "load_format",
    "mistral",
    "mistral_reference",
    "qwen3",
    "qwen3_reference",
    "qwen25_reference",
]

_R = Role
_K = BlockKind


def chatml_role(r: Role) -> str:
    """``chatmlRole``: the role name used by ChatML-style headers."""
    return {
        Role.SYSTEM: "system",
        Role.DEVELOPER: "developer",
        Role.USER: "user",
        Role.ASSISTANT: "assistant",
        Role.TOOL: "tool",
    }[r]


@dataclass(frozen=True)
class ChatMLIds:
    """Control tokens of the ChatML family (Qwen2.5, Qwen3)."""

    im_start: int
    im_end: int
    end_of_text: int
    tool_call_open: int
    tool_call_close: int


def chatml(ids: ChatMLIds) -> ChatFormat:
    """ChatML as used by Qwen2.5: ``<|im_start|>role\\n … <|im_end|>\\n``; tool calls are
    ``<tool_call>\\n{json}\\n</tool_call>``; no developer role."""
    return ChatFormat(
        reserved=(ids.im_start, ids.im_end, ids.end_of_text, ids.tool_call_open,
                  ids.tool_call_close),
        bos=(),
        header={
            r: (() if r == _R.DEVELOPER else (Ctrl(ids.im_start), Lit(chatml_role(r) + "\n")))
            for r in Role
        },
        footer={r: (() if r == _R.DEVELOPER else (Ctrl(ids.im_end), Lit("\n"))) for r in Role},
        block_open={_K.TOOL_CALL: (Ctrl(ids.tool_call_open), Lit("\n"))},
        block_close={_K.TOOL_CALL: (Ctrl(ids.tool_call_close),)},
        tool_sep=(),
    )


@dataclass(frozen=True)
class Qwen3Ids(ChatMLIds):
    """Control tokens of Qwen3 beyond ChatML."""

    think_open: int
    think_close: int

    def to_chatml_ids(self) -> ChatMLIds:
        """The ChatML part (``toChatMLIds``)."""
        return ChatMLIds(self.im_start, self.im_end, self.end_of_text, self.tool_call_open,
                         self.tool_call_close)


def qwen3(ids: Qwen3Ids) -> ChatFormat:
    """Qwen3 without history rewriting: ChatML plus ``<think>\\n … </think>\\n\\n`` reasoning
    blocks, kept in every assistant turn."""
    base = chatml(ids.to_chatml_ids())
    block_open = dict(base.block_open)
    block_open[_K.REASONING] = (Ctrl(ids.think_open), Lit("\n"))
    block_close = dict(base.block_close)
    block_close[_K.REASONING] = (Ctrl(ids.think_close), Lit("\n\n"))
    return ChatFormat(
        reserved=(*base.reserved, ids.think_open, ids.think_close),
        bos=base.bos,
        header=base.header,
        footer=base.footer,
        block_open=block_open,
        block_close=block_close,
        tool_sep=base.tool_sep,
    )


@dataclass(frozen=True)
class Llama3Ids:
    """Control tokens of Llama 3.x."""

    begin_of_text: int
    end_of_text: int
    start_header: int
    end_header: int
    eom: int
    eot: int
    python_tag: int


def llama_role(r: Role) -> str:
    """``llamaRole``: the role name used by Llama 3 headers (tool results are ``ipython``)."""
    if r == _R.TOOL:
        return "ipython"
    return chatml_role(r)


def llama3(ids: Llama3Ids) -> ChatFormat:
    """Llama 3.x: ``<|begin_of_text|>`` then ``<|start_header_id|>role<|end_header_id|>\\n\\n
    … <|eot_id|>``; a tool call is ``<|python_tag|>call<|eom_id|>``."""
    return ChatFormat(
        reserved=(ids.begin_of_text, ids.end_of_text, ids.start_header, ids.end_header, ids.eom,
                  ids.eot, ids.python_tag),
        bos=(Ctrl(ids.begin_of_text),),
        header={
            r: (
                ()
                if r == _R.DEVELOPER
                else (Ctrl(ids.start_header), Lit(llama_role(r)), Ctrl(ids.end_header),
                      Lit("\n\n"))
            )
            for r in Role
        },
        footer={r: (() if r == _R.DEVELOPER else (Ctrl(ids.eot),)) for r in Role},
        block_open={_K.TOOL_CALL: (Ctrl(ids.python_tag),)},
        block_close={_K.TOOL_CALL: (Ctrl(ids.eom),)},
        tool_sep=(),
    )


@dataclass(frozen=True)
class MistralIds:
    """Control tokens of Mistral v7 (Tekken)."""

    bos: int
    eos: int
    inst: int
    inst_end: int
    system_open: int
    system_close: int
    tool_calls: int
    args: int
    tool_results: int
    tool_results_end: int


def mistral(ids: MistralIds) -> ChatFormat:
    """Mistral v7 / Tekken: ``<s>[SYSTEM_PROMPT]…[/SYSTEM_PROMPT][INST]…[/INST]…</s>``;
    ``[/INST]`` is the assistant header; tool calls are ``[TOOL_CALLS]name[ARGS]arguments``."""
    return ChatFormat(
        reserved=(ids.bos, ids.eos, ids.inst, ids.inst_end, ids.system_open, ids.system_close,
                  ids.tool_calls, ids.args, ids.tool_results, ids.tool_results_end),
        bos=(Ctrl(ids.bos),),
        header={
            _R.SYSTEM: (Ctrl(ids.system_open),),
            _R.DEVELOPER: (),
            _R.USER: (Ctrl(ids.inst),),
            _R.ASSISTANT: (Ctrl(ids.inst_end),),
            _R.TOOL: (Ctrl(ids.tool_results),),
        },
        footer={
            _R.SYSTEM: (Ctrl(ids.system_close),),
            _R.DEVELOPER: (),
            _R.USER: (),
            _R.ASSISTANT: (Ctrl(ids.eos),),
            _R.TOOL: (Ctrl(ids.tool_results_end),),
        },
        block_open={_K.TOOL_CALL: (Ctrl(ids.tool_calls),)},
        block_close={},
        tool_sep=(Ctrl(ids.args),),
    )


@dataclass(frozen=True)
class HarmonyIds:
    """Control tokens of the Harmony format (gpt-oss)."""

    start: int
    end: int
    message: int
    channel: int
    constrain: int
    return_: int
    call: int


def harmony(ids: HarmonyIds) -> ChatFormat:
    """Harmony-style (gpt-oss): ``<|start|>role<|message|>…<|end|>`` for every role but the
    assistant, whose blocks carry channels (``analysis`` for reasoning, ``final`` for
    content, ``commentary to=functions.NAME<|constrain|>json<|message|>ARGS<|call|>`` for
    tool calls). The assistant turn always ends with ``<|end|>``."""

    def header(r: Role) -> tuple[Piece, ...]:
        if r == _R.ASSISTANT:
            return (Ctrl(ids.start), Lit("assistant"))
        if r == _R.TOOL:
            return (Ctrl(ids.start), Lit("functions"), Ctrl(ids.message))
        return (Ctrl(ids.start), Lit(chatml_role(r)), Ctrl(ids.message))

    return ChatFormat(
        reserved=(ids.start, ids.end, ids.message, ids.channel, ids.constrain, ids.return_,
                  ids.call),
        bos=(),
        header={r: header(r) for r in Role},
        footer={r: (Ctrl(ids.end),) for r in Role},
        block_open={
            _K.PLAIN: (Ctrl(ids.channel), Lit("final"), Ctrl(ids.message)),
            _K.REASONING: (Ctrl(ids.channel), Lit("analysis"), Ctrl(ids.message)),
            _K.TOOL_CALL: (Ctrl(ids.channel), Lit("commentary to=functions.")),
        },
        block_close={
            _K.PLAIN: (),
            _K.REASONING: (Ctrl(ids.end), Ctrl(ids.start), Lit("assistant")),
            _K.TOOL_CALL: (Ctrl(ids.call),),
        },
        tool_sep=(Ctrl(ids.constrain), Lit("json"), Ctrl(ids.message)),
    )


@dataclass(frozen=True)
class DeepSeekR1Ids:
    """Control tokens of DeepSeek-R1."""

    bos: int
    eos: int
    user: int
    assistant: int
    think_open: int
    think_close: int
    tool_calls_begin: int
    tool_calls_end: int
    tool_call_begin: int
    tool_call_end: int
    tool_sep: int
    tool_outputs_begin: int
    tool_outputs_end: int
    tool_output_begin: int
    tool_output_end: int


def deepseek_r1(ids: DeepSeekR1Ids) -> ChatFormat:
    """DeepSeek-R1: ``<｜begin▁of▁sentence｜><｜User｜>…<｜Assistant｜><think>\\n…</think>\\n\\n…
    <｜end▁of▁sentence｜>``. No system messages (the R1 template writes them with no
    delimiter, which cannot be parsed back)."""
    return ChatFormat(
        reserved=(ids.bos, ids.eos, ids.user, ids.assistant, ids.think_open, ids.think_close,
                  ids.tool_calls_begin, ids.tool_calls_end, ids.tool_call_begin,
                  ids.tool_call_end, ids.tool_sep, ids.tool_outputs_begin, ids.tool_outputs_end,
                  ids.tool_output_begin, ids.tool_output_end),
        bos=(Ctrl(ids.bos),),
        header={
            _R.USER: (Ctrl(ids.user),),
            _R.ASSISTANT: (Ctrl(ids.assistant),),
            _R.TOOL: (Ctrl(ids.tool_outputs_begin), Ctrl(ids.tool_output_begin)),
        },
        footer={
            _R.ASSISTANT: (Ctrl(ids.eos),),
            _R.TOOL: (Ctrl(ids.tool_output_end), Ctrl(ids.tool_outputs_end)),
        },
        block_open={
            _K.REASONING: (Ctrl(ids.think_open), Lit("\n")),
            _K.TOOL_CALL: (Ctrl(ids.tool_calls_begin), Ctrl(ids.tool_call_begin),
                           Lit("function"), Ctrl(ids.tool_sep)),
            _K.PLAIN: (),
        },
        block_close={
            _K.REASONING: (Ctrl(ids.think_close), Lit("\n\n")),
            _K.TOOL_CALL: (Ctrl(ids.tool_call_end), Ctrl(ids.tool_calls_end)),
            _K.PLAIN: (),
        },
        tool_sep=(),
    )


@dataclass(frozen=True)
class GemmaIds:
    """Control tokens of Gemma."""

    bos: int
    eos: int
    start_of_turn: int
    end_of_turn: int


def gemma(ids: GemmaIds) -> ChatFormat:
    """Gemma: ``<bos><start_of_turn>user\\n…<end_of_turn>\\n<start_of_turn>model\\n…``; only
    user and assistant turns."""
    return ChatFormat(
        reserved=(ids.bos, ids.eos, ids.start_of_turn, ids.end_of_turn),
        bos=(Ctrl(ids.bos),),
        header={
            _R.USER: (Ctrl(ids.start_of_turn), Lit("user\n")),
            _R.ASSISTANT: (Ctrl(ids.start_of_turn), Lit("model\n")),
        },
        footer={
            _R.USER: (Ctrl(ids.end_of_turn), Lit("\n")),
            _R.ASSISTANT: (Ctrl(ids.end_of_turn), Lit("\n")),
        },
        block_open={},
        block_close={},
        tool_sep=(),
    )


#: Qwen2.5 ids.
qwen25_reference = ChatMLIds(151644, 151645, 151643, 151657, 151658)
#: Qwen3 ids.
qwen3_reference = Qwen3Ids(151644, 151645, 151643, 151657, 151658, 151667, 151668)
#: Llama 3.x ids.
llama3_reference = Llama3Ids(128000, 128001, 128006, 128007, 128008, 128009, 128010)
#: Mistral v7 Tekken ids.
mistral_reference = MistralIds(1, 2, 3, 4, 17, 18, 9, 32, 7, 8)
#: gpt-oss (o200k_harmony) ids.
harmony_reference = HarmonyIds(200006, 200007, 200008, 200005, 200003, 200002, 200012)
#: DeepSeek-R1 ids.
deepseek_r1_reference = DeepSeekR1Ids(0, 1, 128803, 128804, 128798, 128799, 128806, 128807,
                                      128808, 128809, 128814, 128810, 128811, 128812, 128813)
#: Gemma ids.
gemma_reference = GemmaIds(2, 1, 106, 107)

#: ``charBase``: the character-level reference codec maps a character to ``CHAR_BASE + code``.
CHAR_BASE = 1000000


class CharCodec:
    """``charCodec``: the character-level reference codec evaluable by the Lean kernel. Each
    character becomes one token ``CHAR_BASE + code point``, far above every control id."""

    def encode(self, text: str) -> list[int]:
        """One token per character."""
        return [CHAR_BASE + ord(c) for c in text]

    def decode_bytes(self, ts: Sequence[int]) -> bytes:
        """``bytes t := (String.singleton (Char.ofNat (t - charBase))).toUTF8`` (``Char.ofNat``
        maps a non-scalar value to ``'\\0'``; ``-`` is truncated subtraction)."""
        out = bytearray()
        for t in ts:
            n = max(t - CHAR_BASE, 0)
            if not (n < 0xD800 or 0xE000 <= n <= 0x10FFFF):
                n = 0
            out += chr(n).encode("utf-8")
        return bytes(out)


char_codec = CharCodec()

# ---------------------------------------------------------------------------------------------
# Registry


def _qwen_shape(name: str, args: str) -> tuple[str, str]:
    return "", '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": ' + args + "}\n"


def _llama_shape(name: str, args: str) -> tuple[str, str]:
    return "", '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "parameters": ' + args + "}"


def _separate_shape(name: str, args: str) -> tuple[str, str]:
    return name, args


def _deepseek_shape(name: str, args: str) -> tuple[str, str]:
    return "", name + "\n```json\n" + args + "\n```"


@dataclass(frozen=True)
class FormatSpec:
    """How to instantiate a shipped format from a tokenizer.

    Attributes:
        name: registry name.
        ids_type: the id dataclass of the family (``ChatMLIds``, ``Llama3Ids``, …).
        build: the format function (``chatml``, ``llama3``, …).
        token_names: for each field of ``ids_type``, the control-token strings to look up in
            the tokenizer, first match wins (later names are aliases, e.g. the Llama 3.0 name
            of a slot that Llama 3.1 renamed).
        shape: lays out a tool call ``(name, arguments JSON text)`` as the ``(name, args)``
            payload texts of a :class:`~lvt.model.ToolCall` for this format.
        tool_needs_call: a tool message must follow an assistant message with a tool call.
        description: one line for humans.
    """

    name: str
    ids_type: type
    build: Callable[[Any], ChatFormat]
    token_names: dict[str, tuple[str, ...]]
    shape: Callable[[str, str], tuple[str, str]]
    tool_needs_call: bool
    description: str = ""
    aliases: tuple[str, ...] = field(default=())

    def control_token_strings(self) -> list[str]:
        """Every control-token string of the family (primary names and aliases)."""
        return [s for names in self.token_names.values() for s in names]

    def shape_tool_call(self, name: str, arguments: str) -> tuple[str, str]:
        """The ``(name, args)`` payload texts of a tool call in this format."""
        return self.shape(name, arguments)

    def lookup_ids(self, tokenizer: Any) -> Any:
        """Look the control tokens up in ``tokenizer`` (anything with ``token_to_id``).

        Raises:
            FormatError: naming the first control token the tokenizer lacks.
        """
        tok = getattr(tokenizer, "backend_tokenizer", tokenizer)
        values: dict[str, int] = {}
        for fld in fields(self.ids_type):
            names = self.token_names[fld.name]
            found = None
            for s in names:
                i = tok.token_to_id(s)
                if i is not None:
                    found = int(i)
                    break
            if found is None:
                raise FormatError(
                    f"format {self.name!r}: the tokenizer has no control token {names[0]!r}"
                    + (f" (nor its aliases {list(names[1:])!r})" if len(names) > 1 else "")
                    + f" needed for {fld.name}"
                )
            values[fld.name] = found
        return self.ids_type(**values)

    def load(self, tokenizer: Any) -> ChatFormat:
        """The format instantiated with the tokenizer's control-token ids."""
        return self.build(self.lookup_ids(tokenizer))


_CHATML_NAMES = {
    "im_start": ("<|im_start|>",),
    "im_end": ("<|im_end|>",),
    "end_of_text": ("<|endoftext|>",),
    "tool_call_open": ("<tool_call>",),
    "tool_call_close": ("</tool_call>",),
}

FORMATS: dict[str, FormatSpec] = {}


def _register(spec: FormatSpec) -> None:
    FORMATS[spec.name] = spec
    for a in spec.aliases:
        FORMATS[a] = spec


_register(FormatSpec(
    "qwen2.5", ChatMLIds, chatml, _CHATML_NAMES, _qwen_shape, tool_needs_call=False,
    description="ChatML as used by Qwen2.5", aliases=("chatml",)))
_register(FormatSpec(
    "qwen3", Qwen3Ids, qwen3,
    {**_CHATML_NAMES, "think_open": ("<think>",), "think_close": ("</think>",)},
    _qwen_shape, tool_needs_call=False,
    description="Qwen3 (ChatML + <think>) without history rewriting"))
_register(FormatSpec(
    "llama3", Llama3Ids, llama3,
    {
        "begin_of_text": ("<|begin_of_text|>",),
        "end_of_text": ("<|end_of_text|>",),
        "start_header": ("<|start_header_id|>",),
        "end_header": ("<|end_header_id|>",),
        # Llama 3.0 tokenizers still call the slots that 3.1 renamed by their reserved names.
        "eom": ("<|eom_id|>", "<|reserved_special_token_4|>"),
        "eot": ("<|eot_id|>",),
        "python_tag": ("<|python_tag|>", "<|reserved_special_token_5|>"),
    },
    _llama_shape, tool_needs_call=True, description="Llama 3.x"))
_register(FormatSpec(
    "mistral-v7", MistralIds, mistral,
    {
        "bos": ("<s>",), "eos": ("</s>",), "inst": ("[INST]",), "inst_end": ("[/INST]",),
        "system_open": ("[SYSTEM_PROMPT]",), "system_close": ("[/SYSTEM_PROMPT]",),
        "tool_calls": ("[TOOL_CALLS]",), "args": ("[ARGS]",),
        "tool_results": ("[TOOL_RESULTS]",), "tool_results_end": ("[/TOOL_RESULTS]",),
    },
    _separate_shape, tool_needs_call=True, description="Mistral v7 / Tekken",
    aliases=("mistral",)))
_register(FormatSpec(
    "gpt-oss", HarmonyIds, harmony,
    {
        "start": ("<|start|>",), "end": ("<|end|>",), "message": ("<|message|>",),
        "channel": ("<|channel|>",), "constrain": ("<|constrain|>",),
        "return_": ("<|return|>",), "call": ("<|call|>",),
    },
    _separate_shape, tool_needs_call=True, description="Harmony-style (gpt-oss)",
    aliases=("harmony",)))
_register(FormatSpec(
    "deepseek-r1", DeepSeekR1Ids, deepseek_r1,
    {
        "bos": ("<｜begin▁of▁sentence｜>",),
        "eos": ("<｜end▁of▁sentence｜>",),
        "user": ("<｜User｜>",),
        "assistant": ("<｜Assistant｜>",),
        "think_open": ("<think>",),
        "think_close": ("</think>",),
        "tool_calls_begin": ("<｜tool▁calls▁begin｜>",),
        "tool_calls_end": ("<｜tool▁calls▁end｜>",),
        "tool_call_begin": ("<｜tool▁call▁begin｜>",),
        "tool_call_end": ("<｜tool▁call▁end｜>",),
        "tool_sep": ("<｜tool▁sep｜>",),
        "tool_outputs_begin": ("<｜tool▁outputs▁begin｜>",),
        "tool_outputs_end": ("<｜tool▁outputs▁end｜>",),
        "tool_output_begin": ("<｜tool▁output▁begin｜>",),
        "tool_output_end": ("<｜tool▁output▁end｜>",),
    },
    _deepseek_shape, tool_needs_call=True, description="DeepSeek-R1"))
_register(FormatSpec(
    "gemma", GemmaIds, gemma,
    {"bos": ("<bos>",), "eos": ("<eos>",), "start_of_turn": ("<start_of_turn>",),
     "end_of_turn": ("<end_of_turn>",)},
    _separate_shape, tool_needs_call=False, description="Gemma (user and assistant only)"))


#: Reference ids of every shipped format (the ids `Verified/Spec/Formats.lean` proves
#: well-formed), by registry name.
REFERENCE_IDS: dict[str, Any] = {
    "qwen2.5": qwen25_reference,
    "qwen3": qwen3_reference,
    "llama3": llama3_reference,
    "mistral-v7": mistral_reference,
    "gpt-oss": harmony_reference,
    "deepseek-r1": deepseek_r1_reference,
    "gemma": gemma_reference,
}


def format_names() -> list[str]:
    """Canonical names of the shipped formats (aliases excluded)."""
    return list(REFERENCE_IDS)


def get_spec(name: str) -> FormatSpec:
    """The :class:`FormatSpec` registered under ``name`` (or an alias).

    Raises:
        FormatError: for an unknown name.
    """
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(
            f"unknown format {name!r}; known: {sorted(FORMATS)}"
        ) from None


def load_format(name: str, tokenizer: Any) -> ChatFormat:
    """Instantiate the format ``name`` with the control-token ids of ``tokenizer``.

    Raises:
        FormatError: unknown format, or a control token missing from the tokenizer (named).
    """
    return get_spec(name).load(tokenizer)
