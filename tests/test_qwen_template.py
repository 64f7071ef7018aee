"""QwQ-32B (``qwq``): the Qwen structure's lowering as QwQ's template writes it
(``lvt.families.qwen_template``), compared with that template through ``transformers`` on the
Qwen3 vocabulary (QwQ's: the same ids for ``<think>``, ``<tool_response>`` and the rest).

The parity corpus (``tests/parity/test_entries.py``) covers the common conversations; here,
one case per quirk of the template, each against the template itself: history answers lose
their leading newlines and the last message keeps them, reasoning is never written, the tool
preamble opens with an empty system text, the ``'\\n'`` before a call tests the content
before ``lstrip``, and the generation prompt opens ``<think>``. Then what lvt adds: round trip,
the sampled turn after the prompt, detection, and the backend (the native library carries the
Lean modes only).
"""

from __future__ import annotations

from typing import Any

import pytest

import lvt
from lvt.runtime import wire
from parity.templates import zoo_hf_tokenizer

TEMPLATE = "Qwen-QwQ-32B@16488a"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def _call(name: str, args: dict[str, Any], cid: str = "c1") -> dict[str, Any]:
    """A call with its arguments as an object (the template writes ``arguments | tojson``)."""
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


@pytest.fixture(scope="module")
def hf() -> Any:
    """QwQ's template over the Qwen3 vocabulary, as a user's tokenizer carries it."""
    return zoo_hf_tokenizer("qwen3", TEMPLATE)


@pytest.fixture(scope="module")
def enc(hf: Any) -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(hf, "qwq")


def _template(hf: Any, messages: list[dict[str, Any]], tools: Any = None,
              prompt: bool = False) -> list[int]:
    out = hf.apply_chat_template(messages, tools=tools, tokenize=True,
                                 add_generation_prompt=prompt, return_dict=False)
    return list(out)


CASES = {
    "history-answer-leading-newlines": (
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "\n\nHello."},
         {"role": "user", "content": "Again"}, {"role": "assistant", "content": "\nStill."}],
        None, False),
    "reasoning-never-written": (
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "Add."},
         {"role": "user", "content": "3+3?"},
         {"role": "assistant", "content": "6", "reasoning_content": "Add again."}],
        None, False),
    "tools-without-system": (
        [{"role": "user", "content": "Weather in Paris?"}], [WEATHER], True),
    "tools-with-system": (
        [{"role": "system", "content": "Be brief."},
         {"role": "user", "content": "Weather in Paris?"}], [WEATHER], True),
    "call-after-newline-content": (
        [{"role": "user", "content": "Weather in Paris?"},
         {"role": "assistant", "content": "\n", "tool_calls": [_call("get_weather",
                                                                     {"city": "Paris"})]},
         {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
         {"role": "assistant", "content": "Sunny."}], [WEATHER], False),
    "system-later-and-results-grouped": (
        [{"role": "user", "content": "Two cities?"},
         {"role": "assistant", "content": "", "tool_calls": [
             _call("get_weather", {"city": "Paris"}),
             _call("get_weather", {"city": "Rome"}, "c2")]},
         {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
         {"role": "tool", "tool_call_id": "c2", "content": "rain"},
         {"role": "system", "content": "Answer in one line."}], [WEATHER], True),
    "generation-prompt": ([{"role": "user", "content": "Hi"}], None, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ids_equal_the_template(hf: Any, enc: lvt.ChatEncoder, name: str) -> None:
    messages, tools, prompt = CASES[name]
    got = enc.encode_openai(messages, tools, prompt).ids.tolist()
    assert got == _template(hf, messages, tools, prompt)


def test_the_quirks_are_what_the_render_shows(hf: Any, enc: lvt.ChatEncoder) -> None:
    """The cases above exercise what they name (so a template change that removed the quirk
    would not leave them passing by accident)."""
    def text(name: str) -> str:
        messages, tools, prompt = CASES[name]
        return hf.decode(enc.encode_openai(messages, tools, prompt).ids.tolist())

    assert "<|im_start|>assistant\nHello.<|im_end|>" in text("history-answer-leading-newlines")
    assert text("history-answer-leading-newlines").endswith("assistant\n\nStill.<|im_end|>\n")
    assert "Add" not in text("reasoning-never-written")
    assert text("tools-without-system").startswith("<|im_start|>system\n\n\n# Tools\n\n")
    assert text("tools-with-system").startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert "<|im_start|>assistant\n\n<tool_call>" in text("call-after-newline-content")
    assert text("generation-prompt").endswith("<|im_start|>assistant\n<think>\n")


@pytest.mark.parametrize("name", sorted(CASES))
def test_renders_read_back(enc: lvt.ChatEncoder, name: str) -> None:
    """``parse`` reads a render back to a conversation that renders to the same ids."""
    messages, tools, prompt = CASES[name]
    out = enc.encode_openai(messages, tools, prompt)
    back = enc.parse(out.ids.tolist())
    assert enc.encode(back).ids.tolist() == out.ids.tolist()


def test_read_back_normalises_what_the_template_drops(enc: lvt.ChatEncoder) -> None:
    """History answers come back without their leading newlines and without reasoning; a tool
    preamble with no system message comes back with the empty system text written out."""
    messages, tools, prompt = CASES["history-answer-leading-newlines"]
    back = enc.parse(enc.encode_openai(messages, tools, prompt).ids.tolist())
    assert [m.blocks for m in back.messages if m.role == lvt.Role.ASSISTANT] == [
        (lvt.Plain(lvt.Text("Hello.")),), (lvt.Plain(lvt.Text("\nStill.")),)]
    messages, tools, prompt = CASES["reasoning-never-written"]
    back = enc.parse(enc.encode_openai(messages, tools, prompt).ids.tolist())
    assert not any(isinstance(b, lvt.Reasoning) for m in back.messages for b in m.blocks)
    messages, tools, prompt = CASES["tools-without-system"]
    back = enc.parse(enc.encode_openai(messages, tools, prompt).ids.tolist())
    assert back.messages[0].role == lvt.Role.SYSTEM
    assert back.messages[0].blocks == ()  # the empty system text
    assert len(back.messages) == len(messages) + 1


def test_sampled_turn_follows_the_prompt(enc: lvt.ChatEncoder) -> None:
    """The policy samples after ``<think>\\n``: prompt + sampled ids + ``<|im_end|>`` is the
    training render, the sampled ids verbatim and learned, the prompt not."""
    tok = enc.tokenizer
    prompt = enc.encode_openai([{"role": "user", "content": "2+2?"}],
                               add_generation_prompt=True).ids.tolist()
    sampled = tok.encode("Add.\n</think>\n\n4", add_special_tokens=False).ids
    conv = lvt.Conversation([lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("2+2?")),)),
                             lvt.Message(lvt.Role.ASSISTANT, (lvt.Sampled(tuple(sampled)),))])
    out = enc.encode(conv)
    n = len(prompt)
    end = tok.token_to_id("<|im_end|>")
    assert out.ids.tolist()[:n + len(sampled) + 1] == [*prompt, *sampled, end]
    assert out.mask.tolist()[:n] == [0] * n
    assert out.mask.tolist()[n:n + len(sampled) + 1] == [1] * (len(sampled) + 1)


def test_detected_from_the_tokenizer(hf: Any) -> None:
    """A user's tokenizer carrying QwQ's template gives the ``qwq`` encoder."""
    assert lvt.ChatEncoder.from_hf(hf).format_name == "qwq"


def test_the_native_wire_does_not_carry_it(enc: lvt.ChatEncoder) -> None:
    """QwQ's lowering is not a mode of the Lean spec the native library is built from: the
    wire (the native library's input) refuses the family, so the encoder runs the reference
    backend even where a native library is loaded, and a Qwen mode the wire does carry is
    still accepted."""
    assert not wire.supports(enc.family)
    assert enc.backend == "reference"
    qwen3 = lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "qwen3")
    assert wire.supports(qwen3.family)


def test_the_stated_extension_property(enc: lvt.ChatEncoder) -> None:
    """What the registry states: after a message that is not an assistant message the render
    is a prefix of every extension's; after an assistant message whose answer starts with a
    newline it is not (history drops the newline), and the generation prompt's ``<think>\\n``
    is not a prefix of a text answer's render."""
    for name, (messages, tools, _prompt) in CASES.items():
        for k in range(1, len(messages)):
            if messages[k - 1]["role"] == "assistant" or (
                    messages[k - 1]["role"] == messages[k]["role"] == "tool"):
                continue
            short = enc.encode_openai(messages[:k], tools).ids.tolist()
            long = enc.encode_openai(messages, tools).ids.tolist()
            assert long[:len(short)] == short, (name, k)
    hist = CASES["history-answer-leading-newlines"][0]
    short = enc.encode_openai(hist[:2]).ids.tolist()
    assert enc.encode_openai(hist).ids.tolist()[:len(short)] != short
    prompt = enc.encode_openai(hist[:1], add_generation_prompt=True).ids.tolist()
    assert enc.encode_openai(hist[:2]).ids.tolist()[:len(prompt)] != prompt
