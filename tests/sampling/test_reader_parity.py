"""Reader parity: ``read_completion`` against ``transformers``' ``parse_response`` with the
response templates TRL ships for the official chat templates (Qwen3's hermes calls, Qwen3.6's
XML calls, Llama 3.1's JSON calls, gpt-oss's harmony channels), on 40+ sampled-style
completions per family: valid, compact, pretty, parallel, with and without reasoning,
malformed and truncated.

vLLM's own parsers cannot be imported here (its wheel's parser modules import its serving
runtime: pyzmq, openai, ...); ``transformers``' parser is the one TRL runs on completions, and
the one lvt replaces in ``LvtGRPOTrainer``. Every disagreement is one of the deliberate
differences below, each checked by its own predicate; anything else fails.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from transformers import AutoTokenizer
from trl import chat_template_utils as ctu

import lvt
from lvt import zoo

#: Deliberate differences: name -> why lvt reads the completion otherwise.
DIFFERENCES = {
    "malformed": "transformers raises on a call it cannot parse (TRL then keeps the whole "
                 "text as content); lvt keeps every call it can read, the bad one raw and "
                 "flagged, and says where",
    "no_open_think": "a turn that closes </think> without opening it (the prompt opened it, "
                     "or the model skipped the tag): lvt reads the reasoning; transformers "
                     "keeps the tags in the content",
    "string_arguments": "the same call, its arguments given by transformers as JSON text "
                        "(always for gpt-oss; for a string the model sampled elsewhere) and "
                        "by lvt as the object that text holds",
    "arguments_key": "a Llama JSON call with an \"arguments\" key (vLLM's llama3_json "
                     "accepts it; the template writes \"parameters\"): transformers' schema "
                     "reads only \"parameters\" and keeps the text as content",
    "truncated": "cut by the length limit inside a block: lvt reads what is there and says "
                 "it is cut; transformers raises or keeps raw text",
    "recipient_after_channel": "gpt-oss's '<|channel|>commentary to=functions.X "
                               "<|constrain|>json' header (openai-harmony's and vLLM's form): "
                               "transformers' response template reads a recipient only before "
                               "<|channel|>; lvt reads it wherever the header has it",
    "preamble": "a gpt-oss commentary message without a recipient (a preamble the user sees "
                "before a call): lvt keeps it as content, transformers drops it",
}

#: The tool schemas the prompt offers (they type Qwen3.6's XML parameters on both sides).
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"},
                                         "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"},
                                         "filters": {"type": "object"}}}}},
]
CALL = {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}
NESTED = {"name": "search", "arguments": {"q": "café 東京", "filters": {"tags": ["a", "b"],
                                                                        "n": None}}}


def _hermes(call: dict[str, Any], compact: bool) -> str:
    body = json.dumps(call, separators=(",", ":") if compact else None, ensure_ascii=False)
    return f"<tool_call>{body}</tool_call>" if compact else f"<tool_call>\n{body}\n</tool_call>"


def _xml(call: dict[str, Any]) -> str:
    ps = "".join(f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
                 for k, v in call["arguments"].items())
    return f"<tool_call>\n<function={call['name']}>\n{ps}</function>\n</tool_call>"


def qwen_cases(xml: bool) -> list[str]:
    """Qwen3 (hermes JSON calls, the prompt opens nothing) or Qwen3.6 (XML calls, the prompt
    opens ``<think>``, so every turn closes it)."""
    call = (lambda c, compact: _xml(c)) if xml else _hermes
    thinks = (["\n</think>\n\n", "Let me check the weather.\n</think>\n\n",
               "The user wants Oslo.\n</think>\n\n"] if xml else
              ["", "<think>\nLet me check the weather.\n</think>\n\n", "<think>\n\n</think>\n\n"])
    contents = ["", "Sure, checking.\n", "Résumé: 東京 🙂\n"]
    calls = [[], [(CALL, False)], [(CALL, True)], [(CALL, False), (NESTED, False)],
             [(NESTED, True)]]
    out = [t + c + "".join(call(k, compact) for k, compact in cs) + "<|im_end|>"
           for t, c, cs in itertools.product(thinks, contents, calls)
           if c or cs]
    if xml:
        return [*out, "Fine.\n</think>\n\nIt is 3 degrees.<|im_end|>", "Step one, then",
                "\n</think>\n\nA plain answer with <b>tags</b>.<|im_end|>",
                "\n</think>\n\nLine one.\nLine two.<|im_end|>"]
    return [*out, "It is 3 degrees in Oslo.<|im_end|>",
            "A plain answer with <b>tags</b>.<|im_end|>",
            "Still thinking.\n</think>\n\nThe answer.<|im_end|>",  # the prompt opened <think>
            '<tool_call>\n{"name": "f", "arguments": {bad}}\n</tool_call><|im_end|>',
            "<think>\nStep one", '<tool_call>\n{"name": "get_weather", "argu',
            '<tool_call>\n{"name": "f", "arguments": "{\\"a\\": 1}"}\n</tool_call><|im_end|>']


def llama_cases() -> list[str]:
    out = []
    for c in (CALL, NESTED, {"name": "noop", "parameters": {}}):
        args = c.get("arguments", c.get("parameters"))
        for key in ("parameters", "arguments"):
            for sep in (None, (",", ":")):
                out.append(json.dumps({"name": c["name"], key: args}, separators=sep,
                                      ensure_ascii=False) + "<|eot_id|>")
    out += [f"{t}<|eot_id|>" for t in (
        "Hello!", "The answer is 42.", "Résumé 東京 🙂", "Use {braces} freely.", "  spaced  ",
        "Line one.\nLine two.", "```python\nprint(1)\n```", "a" * 200, "Done.",
        "I cannot do that.", "Sure: 1, 2, 3.", "Quote: \"x\"", "Tab\there", "Tools? No.",
        "Maybe {not json", "[1, 2, 3]", "true", "null", "ok", "Yes.", "No.", "Fine.",
        "Numbers 3.14 2.71", "Emoji 🎉", "End.", "Two words.", "Last one.")]
    out += ['{"name": "get_weather", "parameters": {"city": "Os']  # cut by length
    return out


def harmony_cases() -> list[str]:
    analysis = ["", "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"]
    finals = ["Hello.", "It is 3 °C in Oslo.", "Résumé 東京 🙂", "Line 1\nLine 2", "42",
              "Use {braces}.", "```\ncode\n```", "Yes.", "Tab\there", "Done."]
    out = [a + f"<|channel|>final<|message|>{f}<|return|>" for a in analysis for f in finals]
    for a in analysis:
        for c in (CALL, NESTED, {"name": "noop", "arguments": {}}):
            for compact in (False, True):
                args = json.dumps(c["arguments"], separators=(",", ":") if compact else None,
                                  ensure_ascii=False)
                out.append(a + f" to=functions.{c['name']}<|channel|>commentary json"
                           f"<|message|>{args}<|call|>")
                out.append(a + f"<|channel|>commentary to=functions.{c['name']} "
                           f"<|constrain|>json<|message|>{args}<|call|>")
    out += [f"<|channel|>commentary<|message|>Checking {c}.<|end|><|start|>assistant to=functions."
            f'get_weather<|channel|>commentary json<|message|>{{"city": "{c}"}}<|call|>'
            for c in ("Oslo", "Bergen", "東京")]
    out += ["<|channel|>analysis<|message|>Still thinking about"]
    return out


FAMILIES: dict[str, tuple[str, str, Callable[[], list[str]]]] = {
    # name: (lvt format, the official template as TRL names it, the completions)
    "qwen3": ("qwen3", "qwen3_chat_template", lambda: qwen_cases(False)),
    "qwen3.6-xml": ("qwen3-2507-thinking", "qwen3_6_chat_template", lambda: qwen_cases(True)),
    "llama3.1": ("llama3.1", "llama3_1_chat_template", llama_cases),
    "gpt-oss": ("gpt-oss", "gptoss_chat_template", harmony_cases),
}


def _hf(fmt: str, template: str) -> Any:
    tok = AutoTokenizer.from_pretrained(zoo.tokenizer_dir(lvt.FORMATS[fmt].tokenizer or fmt))
    tok.chat_template = getattr(ctu, template)
    return ctu.add_response_schema(tok)


def _norm_hf(msg: dict[str, Any]) -> tuple[str, str | None, list[tuple[str, Any]]]:
    calls = [(c["function"]["name"], c["function"]["arguments"])
             for c in msg.get("tool_calls") or []]
    reasoning = msg.get("reasoning_content", msg.get("thinking"))  # gpt-oss: "thinking"
    return (msg.get("content") or "").strip(), reasoning, calls


def _norm_lvt(c: Any) -> tuple[str, str | None, list[tuple[str, Any]]]:
    return (c.content.strip(), c.reasoning or None,
            [(k.name, k.arguments if k.valid else k.raw) for k in c.tool_calls])


def _json(v: Any) -> Any:
    """``v`` read as JSON when it is a string that holds JSON, else ``None``."""
    try:
        return json.loads(v) if isinstance(v, str) else None
    except ValueError:
        return None


def _classify(text: str, got: Any, want: Any, err: Exception | None, c: Any) -> str | None:
    """The deliberate difference this disagreement is, checked by its predicate."""
    if c.termination.reason == "length":
        return "truncated"
    if err is not None:
        return "malformed" if any(not k.valid for k in c.tool_calls) else None
    g, w = got, want
    if "<|channel|>commentary to=" in text and g[2] and not w[2]:
        return "recipient_after_channel"
    if ("<|channel|>commentary<|message|>" in text and g[1:] == w[1:] and g[0]
            and not w[0]):
        return "preamble"
    if '"arguments"' in text and g[2] and not w[2] and "<|eot_id|>" in text:
        return "arguments_key"
    if "</think>" in w[0] and "<think>" not in text and g[1] is not None:
        return "no_open_think"
    if g[:2] == w[:2] and g[2] and len(g[2]) == len(w[2]) and all(
            (gn, ga) in ((wn, wa), (wn, _json(wa)))
            for (gn, ga), (wn, wa) in zip(g[2], w[2], strict=True)):
        return "string_arguments"
    return None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_reader_agrees_with_transformers_parse_response(family: str) -> None:
    fmt, template, cases = FAMILIES[family]
    tok = _hf(fmt, template)
    enc = lvt.ChatEncoder.from_tokenizer(tok, fmt)
    prefix = tok.apply_chat_template([{"role": "user", "content": "Weather in Oslo?"}],
                                     add_generation_prompt=True, tokenize=True,
                                     return_dict=False)
    texts = cases()
    assert len(texts) >= 40
    kinds: dict[str, int] = {"equal": 0, **dict.fromkeys(DIFFERENCES, 0)}
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        c = enc.read_completion(ids, TOOLS)
        err: Exception | None = None
        want = None
        try:
            want = _norm_hf(tok.parse_response(ids, prefix=prefix, tools=TOOLS))
        except (ValueError, TypeError) as e:
            err = e
        got = _norm_lvt(c)
        if err is None and got == want:
            kinds["equal"] += 1
            continue
        kind = _classify(text, got, want, err, c)
        assert kind is not None, (family, text, got, want, err)
        kinds[kind] += 1
    # most completions are read alike (identically, or the same call with its arguments as
    # text on one side); every other one is a documented difference
    assert kinds["equal"] + kinds["string_arguments"] >= 0.6 * len(texts), (family, kinds)
