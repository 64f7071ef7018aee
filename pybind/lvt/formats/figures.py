"""The parity figures recorded for each shipped format (:attr:`lvt.formats.FormatSpec.parity`).

Each is :meth:`lvt.compare.parity.ParityFigure.summary` as measured on the test corpus
(``tests/parity``) with the format's real tokenizer and official template, then optionally
``"; note: "`` and prose on what lies outside the allowed differences;
``tests/test_formats_registry.py`` measures every figure again and fails when it differs, and
checks what each note says. Data only: the registry (:mod:`lvt.formats`) attaches them.
"""

from __future__ import annotations

__all__ = ["PARITY"]

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

#: What the note of the Mistral v3 entries says of the conversations outside the allowed
#: differences (``tests/test_formats_registry.py`` counts them again).
_V3_NOTE = (
    "mistral-common is the reference; the HF template differs from it on training renders with "
    "a system message ({n_sys} benign: it writes the system prompt only when the last message is "
    "a user message, 'loop.last and system_message is defined', so it drops it once an answer "
    "follows) and on assistant text with whitespace at its ends ({n_ws} benign: {ws}; "
    "mistral-common strips trailing spaces only); lvt refuses with a typed error the role "
    "sequences mistral-common merges or rejects; mistral-common itself is matched token for "
    "token in tests/test_mistral_v3.py")

#: What the notes of the DeepSeek-V3.1 entries say of the one conversation outside.
_V31_NOTE = (
    "the 1 outside is an assistant message before any user message, which lvt refuses with a "
    "typed error (the template writes it without a header, so its text runs into the system "
    "prompt)")

#: Entries of one structure that render the same corpus identically share one figure.
_QWEN25_PARITY = (
    "benign 127/127 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
    "25/25 within the allowed differences; causes: control_token_text 19")
_QWEN3_PARITY = (
    "benign 144/144 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
    "27/27 within the allowed differences; causes: control_token_text 27")
_LLAMA_PARITY = (
    "benign 121/121 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
    "25/25 within the allowed differences; causes: control_token_text 25")

#: The Qwen3.5-structure entries, each against its own template on the Qwen3 corpus.
_XML_PARITY = (
    "benign 142/144 identical, 2 differ only in allowed ways, 0 outside them; adversarial "
    "27/27 within the allowed differences; causes: control_token_text 27; note: the 2 are "
    "refused by both (a system message after the first: the template raises 'System message "
    "must be at the beginning.'); argument values and content as parts are compared in "
    "tests/parity/test_qwen_xml.py")

#: The Qwen3-Coder entries, each against its own template on the Qwen2.5 corpus (no reasoning).
_CODER_PARITY = (
    "benign 127/127 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
    "25/25 within the allowed differences; causes: control_token_text 19; note: XML tool "
    "descriptions (nested schemas, enums, defaults, extra keys), argument values, system "
    "messages anywhere and result groups are compared in tests/parity/test_qwen_coder.py")

#: Why the tagged-turns entries refuse conversations with tools (their parity notes).
_PHI_TOOLS = "the template never reads tools nor tool calls, so its render would drop them"
_KIMI_TOOLS = ("lvt's tagged turns have no tool syntax yet, while Kimi's template writes tool "
               "declarations, call sections and results")

#: The parity figure of each format on the test corpus (see :attr:`FormatSpec.parity`).
PARITY: dict[str, str] = {  # measured by tests/test_formats_registry.py
    "qwen2.5": _QWEN25_PARITY,
    "qwen3": _QWEN3_PARITY,
    "qwen2.5-math": _QWEN25_PARITY,
    "qwen2.5-vl": (
        "benign 91/127 identical, 0 differ only in allowed ways, 36 outside them; adversarial "
        "19/25 within the allowed differences; causes: control_token_text 15; note: the 36 "
        "benign and 6 adversarial conversations outside are those with tools, which lvt "
        "refuses with a typed error: the template has no tool syntax (it drops tool "
        "definitions and calls and writes a result as a 'tool' turn)"),
    **{n: (
        "benign 87/91 identical, 2 differ only in allowed ways, 2 outside them; adversarial "
        "19/19 within the allowed differences; causes: control_token_text 19; note: the 2 "
        "allowed are a system message after an answer, which both refuse; the 2 outside are "
        "two consecutive user messages, which the template merges into one turn and lvt "
        "refuses with a typed error (the render could not tell the messages apart); tools and "
        "calls are compared in tests/parity/test_mistral_entries.py")
       for n in ("ministral-3-3b", "ministral-3-8b", "ministral-3-14b", "devstral-small-2",
                 "devstral-2")},
    **{n: (
        "benign 91/91 identical, 0 differ only in allowed ways, 0 outside them; adversarial "
        "19/19 within the allowed differences; causes: control_token_text 19; note: tools, "
        "calls and results (which the template ignores, drops or raises on) are refused with "
        "a typed error: tests/parity/test_mistral_entries.py")
       for n in ("mistral-small-3.1", "mistral-small-3")},
    "smollm2": (
        "benign 91/127 identical, 1 differ only in allowed ways, 35 outside them; adversarial "
        "19/25 within the allowed differences; causes: control_token_text 9; note: the 35 "
        "benign and 6 adversarial conversations outside are those with tools, which lvt "
        "refuses with a typed error: the template has no tool syntax (it drops tool "
        "definitions and calls and writes a result as a 'tool' turn); the 1 allowed is a call "
        "message without content, on which the template raises"),
    "deepseek-r1-distill-qwen": (
        "benign 101/144 identical, 0 differ only in allowed ways, 43 outside them; adversarial "
        "21/27 within the allowed differences; causes: control_token_text 15; note: the 43 "
        "benign and 6 adversarial conversations outside are those lvt refuses with a typed "
        "error: 41 and 6 with tools (the vocabulary has no tool control tokens; the template "
        "drops the calls of a message with content and leaves a single call's block open) and "
        "2 with several system messages (the template keeps only the last)"),
    "deepseek-v3.1": (
        "benign 143/144 identical, 0 differ only in allowed ways, 1 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 23; note: " + _V31_NOTE),
    "deepseek-v3.1-llama.cpp": (
        "benign 143/144 identical, 0 differ only in allowed ways, 1 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 7; note: " + _V31_NOTE
        + "; the template gets call arguments as objects, as vLLM hands them over (given as a "
        "string, its 'arguments | tojson' quotes them a second time)"),
    "qwen3-2507-instruct": _QWEN25_PARITY,
    "qwen3-2507-thinking": _QWEN3_PARITY,
    "qwq": (
        "benign 143/144 identical, 0 differ only in allowed ways, 1 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 25, template_error "
        "1; note: the 1 outside is a call message without content before the last message, "
        "on which the template raises (message.content.split on None); lvt renders it as the "
        "template renders an empty content, and tests/parity/test_entries.py compares it with "
        "that"),
    "llama3.2": _LLAMA_PARITY,
    "llama3.0": (
        "benign 91/121 identical, 0 differ only in allowed ways, 30 outside them; adversarial "
        "19/25 within the allowed differences; causes: control_token_text 13; note: the 30 "
        "benign and 6 adversarial conversations outside are those lvt refuses with a typed "
        "error: they have tools, tool calls or tool results, and the template has no tool "
        "syntax (it never reads tools and writes only a message's content)"),
    **{n: (
        "benign 103/144 identical, 0 differ only in allowed ways, 41 outside them; adversarial "
        f"21/27 within the allowed differences; causes: control_token_text {k}; note: "
        "text-level (Gemma 3's vocabulary with Gemma 4's markers: no registry ships Gemma 4's "
        "tokenizer); the 41 benign and 6 adversarial conversations outside are those with "
        "tools, which lvt refuses with a typed error: lvt's Gemma 4 structure has no tool "
        "syntax yet, while the template writes tool declarations, calls and results")
        for n, k in (("gemma4", 21), ("gemma4-31b", 19), ("gemma4-e4b", 21),
                     ("otel-llm-e4b", 19))},
    **{n: (
        f"benign 91/127 identical, {a} differ only in allowed ways, {b} outside them; "
        f"adversarial 19/25 within the allowed differences; causes: control_token_text {k}; "
        "note: text-level (the model's control tokens on a registry vocabulary: no registry "
        f"ships its tokenizer); the {b} benign and 6 adversarial conversations outside are "
        f"those with tools, which lvt refuses with a typed error: {why}")
        for n, a, b, k, why in (
            ("phi3", 1, 35, 3, _PHI_TOOLS), ("phi4", 1, 35, 11, _PHI_TOOLS),
            ("talkie", 0, 36, 3, _PHI_TOOLS), ("kimi-k2.5", 0, 36, 8, _KIMI_TOOLS),
            ("kimi-k2.7-code", 0, 36, 8, _KIMI_TOOLS), ("kimi-k2", 0, 36, 8, _KIMI_TOOLS),
            ("kimi-k2-thinking", 0, 36, 8, _KIMI_TOOLS))},
    "qwen3.6": _XML_PARITY,
    "qwen3.5": _XML_PARITY,
    "ornith-1.0": _XML_PARITY,
    "ornith-1.0-9b": _XML_PARITY,
    "qwen3-coder": _CODER_PARITY,
    "qwen3-coder-next": _CODER_PARITY,
    "qwen3-stable": (
        "benign 93/144 identical, 51 differ only in allowed ways, 0 outside them; adversarial "
        "27/27 within the allowed differences; causes: control_token_text 27, history_rewrite "
        "53"
    ),
    "llama3.1": _LLAMA_PARITY,
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
    "mistral-7b-v0.3": (
        "benign 66/91 identical, 5 differ only in allowed ways, 20 outside them; adversarial "
        "19/19 within the allowed differences; causes: control_token_text 15, other 20; note: "
        + _V3_NOTE.format(n_sys=19, n_ws=1, ws="'|trim'")),
    "mistral-nemo-2407": (
        "benign 66/91 identical, 5 differ only in allowed ways, 20 outside them; adversarial "
        "19/19 within the allowed differences; causes: control_token_text 19, other 20; note: "
        + _V3_NOTE.format(n_sys=19, n_ws=1, ws="it writes the content as given")),
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
