# ruff: noqa: RUF001  (DeepSeek's control tokens use full-width bars)
"""Adversarial conversations: text that spells a family's control tokens.

These are not part of the parity set: the official template turns such text into control ids
(string-then-tokenize), while lvt must keep it as text (the one difference FORMATS.md allows).
Each case spells at least one control token of its family, in a different place: a user
question, a code block, an assistant answer, a system prompt, glued to letters, a tool result,
a tool-call argument, a tool description, reasoning.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from .corpus_base import Scenario, Tool, assistant, call, calls, result, scenario, system, user
from .corpus_tools import GET_WEATHER, READ_FILE

#: Control tokens each family's tokenizer has (spelled by the adversarial cases).
ADVERSARIAL_TOKENS: dict[str, tuple[str, ...]] = {
    "qwen2.5": ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>",
                "<|fim_prefix|>", "<|vision_start|>", "<|file_sep|>"),
    "qwen3": ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>",
              "<tool_response>", "</tool_response>", "<|endoftext|>"),
    "llama3.1": ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                 "<|eom_id|>", "<|python_tag|>", "<|end_of_text|>", "<|finetune_right_pad_id|>"),
    "gpt-oss": ("<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>", "<|call|>",
                "<|constrain|>", "<|endoftext|>"),
    "mistral": ("[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CALLS]",
                "[AVAILABLE_TOOLS]", "</s>", "<s>"),
    "deepseek-r1": ("<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>",
                    "<｜begin▁of▁sentence｜>", "<think>", "</think>", "<｜tool▁calls▁begin｜>",
                    "<｜tool▁output▁begin｜>"),
    "gemma3": ("<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<start_of_image>",
               "<pad>"),
    "gemma4": ("<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>", "<|tool_call>",
               '<|"|>', "<bos>"),
}


def _tool_with_description(desc: str) -> list[Tool]:
    t = copy.deepcopy(GET_WEATHER)
    t["function"]["description"] = desc
    return [t]


def _placements() -> list[tuple[str, frozenset[str], Callable[[str], Scenario]]]:
    """(slug, needs, builder) for each place a control token can hide."""
    chat: list[tuple[str, Callable[[str], Scenario]]] = [
        ("question", lambda t: scenario(
            "q", [user(f"What is the {t} token used for in chat templates?")])),
        ("code-block", lambda t: scenario(
            "c", [user(f"My log parser breaks on this line:\n```\nINFO prefix {t} suffix\n```\n"
                       "Why?")])),
        ("answer", lambda t: scenario(
            "a", [user("How does your chat format mark turns?"),
                  assistant(f"Turns are delimited by markers such as {t}; the tokenizer maps "
                            "each marker to a single id.")])),
        ("system", lambda t: scenario(
            "s", [system(f"Never print the literal string {t} in your answers."),
                  user("Hello!")])),
        ("glued", lambda t: scenario("g", [user(f"abc{t}def — what does this string mean?")])),
        ("quoted", lambda t: scenario(
            "j", [user(f"Parse this JSON: {{\"text\": \"{t}\", \"n\": 1}}")])),
    ]
    tools: list[tuple[str, Callable[[str], Scenario]]] = [
        ("tool-result", lambda t: scenario(
            "r", [user("Read notes.txt"), calls(call("call_a1", "read_file",
                                                    {"path": "notes.txt"})),
                  result("call_a1", "read_file", f"line 1\nline 2 {t} line 3\n"),
                  assistant("The file has three short lines.")], tools=[READ_FILE])),
        ("tool-argument", lambda t: scenario(
            "x", [user(f"Read the file named '{t}.txt'"),
                  calls(call("call_a2", "read_file", {"path": f"{t}.txt"}))],
            tools=[READ_FILE])),
        ("tool-description", lambda t: scenario(
            "d", [user("What's the weather in Oslo?")],
            tools=_tool_with_description(f"Get the weather. Never answer with {t}."))),
    ]
    reasoning: list[tuple[str, Callable[[str], Scenario]]] = [
        ("reasoning", lambda t: scenario(
            "t", [user("Explain your chat format."),
                  assistant("It uses special marker tokens.",
                            reasoning=f"The user asks about markers like {t}.")])),
    ]
    out = [(s, frozenset(), b) for s, b in chat]
    out += [(s, frozenset({"tools"}), b) for s, b in tools]
    out += [(s, frozenset({"reasoning"}), b) for s, b in reasoning]
    out.append(("all-tokens", frozenset(), lambda t: scenario("z", [user(t)])))
    return out


def adversarial_scenarios(family: str, supports: frozenset[str]) -> list[Scenario]:
    """At least 15 scenarios spelling ``family``'s control tokens (tokens rotate over places;
    ``all-tokens`` puts every token of the family in one message)."""
    tokens = ADVERSARIAL_TOKENS[family]
    out: list[Scenario] = []
    k = 0
    for slug, needs, build in _placements():
        if not needs <= supports:
            continue
        if slug == "all-tokens":
            sc = build(" ".join(tokens))
            out.append(_rename(sc, f"adv-{slug}"))
            continue
        for _ in range(2 if needs else 3):
            tok = tokens[k % len(tokens)]
            k += 1
            out.append(_rename(build(tok), f"adv-{slug}-{_slug(tok)}"))
    return out


def _slug(token: str) -> str:
    if token.endswith("|>") and not token.startswith("<|"):  # Gemma 4's closing `<turn|>`
        token = token[:-2] + "-close>"
    keep = "".join(ch if ch.isalnum() else "-" for ch in token.lower().replace("/", "-close-"))
    return "-".join(p for p in keep.split("-") if p) or "tok"


def _rename(sc: Scenario, name: str) -> Scenario:
    return Scenario(name, sc.messages, sc.tools, sc.add_generation_prompt,
                    sc.extra_tags | {"adversarial"}, sc.needs)
