"""The parity corpus: benign conversations per model family, and adversarial ones.

``conversations(family)`` returns the benign cases: conversations a real user sends, in the
OpenAI/HF message format, that the family's official chat template renders without raising
and whose text never spells a control token of the family. lvt must give the same token ids
as the template on every one of them (FORMATS.md lists the allowed differences).
``adversarial(family)`` returns conversations whose text does spell the family's control
tokens, to check that lvt keeps them as text.

Everything is built by code from fixed data (no randomness), so the corpus is the same on
every run. One family-independent scenario pool (``corpus_chat``, ``corpus_tools``) is
filtered by what each template supports and adapted to its conventions:

* ``deepseek-r1``: tool-call arguments as JSON strings (its template concatenates them) and
  ``content: ""`` instead of ``None`` (transformers drops ``None`` keys, and the template then
  concatenates an undefined value);
* ``gpt-oss``: reasoning under ``thinking`` (the field its template reads);
* template keyword arguments vary over the cases: ``enable_thinking`` (qwen3), ``date_string``
  and ``tools_in_user_message`` (llama3.1), ``reasoning_effort`` (gpt-oss).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from .corpus_adversarial import ADVERSARIAL_TOKENS, adversarial_scenarios
from .corpus_base import Message, Scenario, Tool, derived_tags, iter_strings
from .corpus_chat import chat_scenarios, reasoning_scenarios
from .corpus_tools import tool_scenarios

__all__ = [
    "ADVERSARIAL_TOKENS",
    "FAMILIES",
    "FEATURE_TAGS",
    "NOT_APPLICABLE",
    "REQUIRED_FAMILIES",
    "SUPPORTS",
    "Case",
    "adversarial",
    "case_strings",
    "conversations",
    "required_tags",
]

#: The families with a corpus; the first three are required (>= 70 benign cases each).
FAMILIES: tuple[str, ...] = (
    "qwen2.5", "qwen3", "llama3.1", "gpt-oss", "mistral", "deepseek-r1", "gemma3", "gemma4",
)
REQUIRED_FAMILIES: tuple[str, ...] = ("qwen2.5", "qwen3", "llama3.1")

#: Feature tags every family's corpus must cover, except those in :data:`NOT_APPLICABLE`.
FEATURE_TAGS: frozenset[str] = frozenset({
    "system", "no-system", "tools", "single-call", "parallel-calls", "sequential-calls",
    "tool-result", "consecutive-tool-results", "content-and-calls", "reasoning", "unicode",
    "cjk", "emoji", "accents", "rtl", "code", "numbers", "long-text", "long-agent-loop",
    "multi-turn", "gen-prompt", "assistant-last", "empty-content", "whitespace",
})

#: What each family's official template cannot express, with the reason (those scenarios are
#: dropped for the family, and the tags are not required).
_NO_TOOLS = "the template has no tool role and no tool-call rendering"
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "qwen2.5": {"reasoning": "not a reasoning model: the template reads no reasoning field"},
    "qwen3": {},
    "llama3.1": {
        "parallel-calls": "the template raises 'This model only supports single tool-calls "
                          "at once!'",
        "consecutive-tool-results": "follows from single calls only",
        "reasoning": "not a reasoning model: the template reads no reasoning field",
    },
    "gpt-oss": {
        "parallel-calls": "the template renders only tool_calls[0] and drops the others",
        "consecutive-tool-results": "follows from single calls only",
    },
    "mistral": {
        **dict.fromkeys(("tools", "single-call", "parallel-calls", "sequential-calls",
                         "tool-result", "consecutive-tool-results", "content-and-calls",
                         "long-agent-loop"), "Mistral-Small-3.1 template: " + _NO_TOOLS),
        "reasoning": "the template reads no reasoning field",
        "empty-content": "empty content only occurs with tool calls",
    },
    "deepseek-r1": {},
    "gemma3": {
        **dict.fromkeys(("tools", "single-call", "parallel-calls", "sequential-calls",
                         "tool-result", "consecutive-tool-results", "content-and-calls",
                         "long-agent-loop"), "Gemma 3 template: " + _NO_TOOLS),
        "reasoning": "the template reads no reasoning field",
        "empty-content": "empty content only occurs with tool calls",
    },
    # Gemma 4's template writes tools; lvt refuses them (no tool structure yet), and the parity
    # figure counts those cases as refused, so they stay in the corpus.
    "gemma4": {},
}

#: What each template supports (see ``corpus_base.NEEDS``).
SUPPORTS: dict[str, frozenset[str]] = {
    "qwen2.5": frozenset({"tools", "parallel", "mid-system", "non-alternating"}),
    "qwen3": frozenset({"tools", "parallel", "reasoning", "mid-system", "non-alternating"}),
    "llama3.1": frozenset({"tools", "mid-system", "non-alternating"}),
    # gpt-oss silently drops a system message after the first position.
    "gpt-oss": frozenset({"tools", "reasoning", "non-alternating"}),
    "mistral": frozenset({"mid-system", "non-alternating"}),
    "deepseek-r1": frozenset({"tools", "parallel", "reasoning", "mid-system",
                              "non-alternating"}),
    # Gemma 3 raises unless roles alternate user/assistant after one leading system message.
    "gemma3": frozenset(),
    # Gemma 4 writes a later system message as a system turn and any role sequence (it joins
    # consecutive assistant messages into one model turn, which lvt refuses).
    "gemma4": frozenset({"tools", "parallel", "reasoning", "mid-system", "non-alternating"}),
}


@dataclass(frozen=True)
class Case:
    """One conversation to render, in the OpenAI/HF message format.

    ``tools`` is a list of ``{"type": "function", "function": {...}}`` or ``None``;
    ``template_kwargs`` go to ``apply_chat_template`` as extra template variables; ``tags``
    name the features the case exercises (see :data:`FEATURE_TAGS`).
    """

    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = False
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    tags: frozenset[str] = frozenset()


def required_tags(family: str) -> frozenset[str]:
    """The feature tags ``family``'s benign corpus must cover."""
    return FEATURE_TAGS - NOT_APPLICABLE[_check(family)].keys()


def case_strings(case: Case) -> list[str]:
    """Every string of a case: message fields (keys too), tool definitions, template kwargs."""
    return [
        *iter_strings(case.messages),
        *iter_strings(case.tools or []),
        *iter_strings(case.template_kwargs),
    ]


def conversations(family: str) -> list[Case]:
    """The benign cases of ``family`` (fresh objects on every call).

    Raises:
        ValueError: unknown family.
    """
    _check(family)
    pool = [*chat_scenarios(), *tool_scenarios(), *reasoning_scenarios()]
    return _cases(family, pool)


def adversarial(family: str) -> list[Case]:
    """Conversations whose text spells ``family``'s control tokens (>= 15).

    Raises:
        ValueError: unknown family.
    """
    _check(family)
    return _cases(family, adversarial_scenarios(family, SUPPORTS[family]))


# ---------------------------------------------------------------------------------------------


def _check(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return family


def _cases(family: str, pool: list[Scenario]) -> list[Case]:
    out: list[Case] = []
    variants = _Variants(family)
    for sc in pool:
        if not sc.needs <= SUPPORTS[family]:
            continue
        msgs = _adapt_messages(family, sc.copy_messages())
        tools: list[Tool] | None = json.loads(json.dumps(sc.tools)) if sc.tools else None
        suffix, kwargs, vtags = variants.next(sc)
        tags = derived_tags(msgs, tools, sc.add_generation_prompt) | sc.extra_tags | vtags
        out.append(Case(sc.name + suffix, msgs, tools, sc.add_generation_prompt, kwargs, tags))
    return out


def _adapt_messages(family: str, msgs: list[Message]) -> list[Message]:
    for m in msgs:
        if family == "deepseek-r1":
            if m.get("tool_calls") and m.get("content") is None:
                m["content"] = ""
            for c in m.get("tool_calls") or []:
                args = c["function"]["arguments"]
                if not isinstance(args, str):
                    c["function"]["arguments"] = json.dumps(args, ensure_ascii=False)
        if family == "gpt-oss" and "reasoning_content" in m:
            m["thinking"] = m.pop("reasoning_content")
    return msgs


class _Variants:
    """Deterministic round-robin of template keyword arguments over a family's cases."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.gen = count()
        self.tool = count()
        self.all = count()

    def next(self, sc: Scenario) -> tuple[str, dict[str, Any], frozenset[str]]:
        """(name suffix, template kwargs, extra tags) for the next scenario."""
        n = next(self.all)
        if self.family in ("qwen3", "gemma4") and sc.add_generation_prompt:
            k = next(self.gen) % 3
            if k == 1:
                return "@think-off", {"enable_thinking": False}, frozenset({"thinking-off"})
            if k == 2:
                return "@think-on", {"enable_thinking": True}, frozenset({"thinking-on"})
        if self.family == "llama3.1":
            kwargs: dict[str, Any] = {}
            suffix = ""
            tags: set[str] = set()
            if sc.tools and next(self.tool) % 2 == 1:
                kwargs["tools_in_user_message"] = False
                suffix += "@tools-in-system"
                tags.add("tools-in-system")
            if n % 3 == 2:
                kwargs["date_string"] = "01 Dec 2026"
                suffix += "@date"
                tags.add("date-string")
            return suffix, kwargs, frozenset(tags)
        if self.family == "gpt-oss" and n % 4 == 3:
            effort = ("low", "high")[(n // 4) % 2]
            return f"@effort-{effort}", {"reasoning_effort": effort}, frozenset(
                {"reasoning-effort"})
        return "", {}, frozenset()
