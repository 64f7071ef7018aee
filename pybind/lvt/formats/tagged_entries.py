"""The model entries of the tagged-turns structure (:mod:`lvt.families.tagged`,
``Verified/Spec/Tagged.lean``; the Lean records in ``Verified/Spec/TaggedEntries.lean``):
Phi-3, Phi-4, talkie and Kimi K2.x, each a record of data over the structure."""

from __future__ import annotations

from lvt.formats.entry_texts import (
    KIMI_PARAMS,
    KIMI_SYSTEM,
    TAGGED_DESC,
    TAGGED_EXT,
    tagged_default_lawful,
    tagged_lawful,
)
from lvt.formats.spec import FormatSpec, register

__all__ = ["register_entries"]

#: The extension property of the entries that write nothing after the last turn.
_PREFIX_EXT = ("prefix: an appended message keeps the render as a prefix (the structure never "
               "rewrites history), and a render with the generation prompt is a prefix of its "
               "extension by a sampled turn")
#: Phi-3's: its training render ends in eos_token.
_PHI3_EXT = ("at generation prompts: the render with the generation prompt, then a sampled turn, "
             "its footer and eos_token, is the render of the extension by that turn; a training "
             "render ends in eos_token, so an appended message does not extend it")
#: Kimi K2.5's, in either thinking mode.
_KIMI_EXT = ("prefix in either thinking mode: an appended message keeps the history (reasoning "
             "is never written: every assistant turn writes <think></think>), and a render "
             "with the generation prompt is a prefix of its extension by a sampled turn")


def _prefix(entry: str) -> str:
    """The Lean theorem that proves an entry's ``prefix`` property."""
    return f"Verified/Thm/TaggedEntries.lean: {entry}_prefix_stable"


def register_entries() -> None:
    """Register the tagged-turns entries (:func:`lvt.formats.spec.register`)."""
    register(FormatSpec(
        "phi3", "tagged", "Phi-3 / Phi-3.5 mini and Phi-tiny-MoE ('<|' + role + '|>\\n' + content "
        "+ '<|end|>\\n', the prompt '<|assistant|>\\n', eos_token after a render without it; "
        + TAGGED_DESC + ")", "microsoft-Phi-3-mini-4k-instruct", _PHI3_EXT, {},
        {"header": ("<|{role}|>", "\n"), "footer": ("<|end|>", "\n"),
         "roles": ("system", "user", "assistant"), "eos": "<|endoftext|>", "tools": False},
        aliases=("phi-3", "phi-3-mini", "phi-tiny-moe"), lawful=tagged_lawful("phi3"),
        proven="Verified/Thm/TaggedPrefix.lean: prompt_prefix", tokenizer="phi3-text",
        corpus="qwen2.5"))
    register(FormatSpec(
        "phi4", "tagged", "Phi-4 ('<|im_start|>' + role + '<|im_sep|>' + content + '<|im_end|>', "
        "the prompt '<|im_start|>assistant<|im_sep|>'; " + TAGGED_DESC + ")", "microsoft-phi-4",
        _PREFIX_EXT, {},
        {"header": ("<|im_start|>", "{role}", "<|im_sep|>"), "footer": ("<|im_end|>",),
         "roles": ("system", "user", "assistant"), "eos": None, "tools": False},
        aliases=("phi-4",), lawful=tagged_lawful("phi4"), proven=_prefix("phi4"),
        tokenizer="phi4-text", corpus="qwen2.5"))
    register(FormatSpec(
        "talkie", "tagged", "talkie-1930-13b-it (Phi-3's tags without newlines: '<|' + role + '|>' "
        "+ content + '<|end|>', the prompt '<|assistant|>', nothing after the last turn; "
        + TAGGED_DESC + ")", "lewtun-talkie-1930-13b-it-hf", _PREFIX_EXT, {},
        {"header": ("<|{role}|>",), "footer": ("<|end|>",),
         "roles": ("system", "user", "assistant"), "eos": None, "tools": False},
        lawful=tagged_lawful("talkie"), proven=_prefix("talkie"), tokenizer="phi3-text",
        corpus="qwen2.5"))

    register(FormatSpec(
        "kimi-k2.5", "tagged", "Kimi K2.5 and K2.6 ('<|im_' + role + '|>' + role + '<|im_middle|>' "
        "+ content + '<|im_end|>'; every assistant turn '<think></think>' + content: without tools "
        "every assistant message is in hist_msgs, whose reasoning the template drops; the prompt "
        "opens <think>, or writes <think></think> with thinking=False; text-level: Kimi's markers "
        "on cl100k_base; tools refused: Kimi's tool sections are not built)",
        "moonshotai-Kimi-K2.5", _KIMI_EXT, {"thinking": True},
        {**KIMI_PARAMS, "keep_reasoning": False}, aliases=("kimi-k2.6",),
        lawful=tagged_lawful("kimiK25"), proven=_prefix("kimiK25"), tokenizer="kimi-text",
        corpus="qwen2.5"))
    register(FormatSpec(
        "kimi-k2.7-code", "tagged", "Kimi K2.7-Code (Kimi K2.5's turns with '<think>' + rc + "
        "'</think>' on every assistant turn, reasoning kept; the prompt always opens <think>; "
        "text-level: Kimi's markers on cl100k_base; tools refused: Kimi's tool sections are not "
        "built)", "moonshotai-Kimi-K2.7-Code", _PREFIX_EXT, {},
        {**KIMI_PARAMS, "keep_reasoning": True}, lawful=tagged_lawful("kimiK27Code"),
        proven=_prefix("kimiK27Code"), tokenizer="kimi-text", corpus="qwen2.5"))

    register(FormatSpec(
        "kimi-k2", "tagged", "Kimi K2-Instruct and K2-Instruct-0905 (Kimi K2.5's turns without a "
        "think block; before a first message that is not a system message the template inserts "
        "'<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot "
        "AI.<|im_end|>' and a newline; text-level: Kimi's markers on cl100k_base; tools and "
        "reasoning refused: Kimi's tool sections are not built, the template writes no reasoning)",
        "moonshotai-Kimi-K2-Instruct", TAGGED_EXT, {},
        {**KIMI_PARAMS, "think": None,
         "default_system": KIMI_SYSTEM,
         "default_tail": "\n"},
        aliases=("kimi-k2-instruct", "kimi-k2-0905"), lawful=tagged_default_lawful("kimiK2"),
        tokenizer="kimi-text", corpus="qwen2.5"))
    register(FormatSpec(
        "kimi-k2-thinking", "tagged", "Kimi K2-Thinking (Kimi K2.5's think blocks with a prompt "
        "that writes none of the block (the model opens <think>), and K2-Instruct's default "
        "system turn without the newline, also before an empty conversation; text-level and "
        "tools refused as kimi-k2.5)",
        "moonshotai-Kimi-K2-Thinking", TAGGED_EXT, {},
        {**KIMI_PARAMS, "keep_reasoning": False, "default_system": KIMI_SYSTEM,
         "default_if_empty": True, "prompt_think": 0},
        lawful=tagged_default_lawful("kimiK2Thinking"), tokenizer="kimi-text",
        corpus="qwen2.5"))
