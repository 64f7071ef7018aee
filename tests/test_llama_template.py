"""Meta-Llama-3-Instruct (``llama3.0``): the Llama structure's header turns as Llama 3's
template writes them (``lvt.families.llama_template``), compared with that template through
``transformers`` on Meta's Llama 3 vocabulary (``lvt.zoo``'s ``llama3``).

The parity corpus (``tests/parity/test_entries.py``) covers the common conversations; here,
one case per quirk of the template, each against the template itself: no system preamble (no
date lines, nothing written without a system message), a system message written where it
stands, every content trimmed, any role a header, ``<|begin_of_text|>`` with the first
message. Then what lvt adds: refusals (no tool syntax), round trip, the sampled turn after
the prompt, the completion reader (a JSON answer stays an answer), detection, the backend
(the native library carries Llama 3.1's lowering only) and the stated extension property.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import lvt
from lvt.runtime import wire
from parity.templates import zoo_hf_tokenizer

TEMPLATE = "NousResearch-Meta-Llama-3-8B-Instruct"


@pytest.fixture(scope="module")
def hf() -> Any:
    """Llama 3's template over Meta's Llama 3 vocabulary, as a user's tokenizer carries it:
    with the BOS and EOS of Meta-Llama-3-8B-Instruct's ``tokenizer_config.json``, which the
    zoo's ``llama3`` package does not ship (:func:`lvt.zoo.special_tokens` gives none)."""
    base = zoo_hf_tokenizer("llama3", TEMPLATE)
    assert base.bos_token is None
    base.add_special_tokens({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})
    return base


@pytest.fixture(scope="module")
def enc(hf: Any) -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(hf, "llama3.0")


def _template(hf: Any, messages: list[dict[str, Any]], prompt: bool = False) -> list[int]:
    out = hf.apply_chat_template(messages, tokenize=True, add_generation_prompt=prompt,
                                 return_dict=False)
    return list(out)


CASES = {
    "no-system": (
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
         {"role": "user", "content": "Again"}], True),
    "system-first-and-later": (
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4"},
         {"role": "system", "content": "Now in French."}, {"role": "user", "content": "3+3?"}],
        True),
    "contents-trimmed": (
        [{"role": "system", "content": "  Be exact.\n"}, {"role": "user", "content": "\n Hi \t"},
         {"role": "assistant", "content": "\n\nHello.\n\n"}], False),
    "developer-header": (
        [{"role": "developer", "content": "Answer in one word."},
         {"role": "user", "content": "Colour of the sky?"}], True),
    "assistant-last": (
        [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "7"}],
        False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ids_equal_the_template(hf: Any, enc: lvt.ChatEncoder, name: str) -> None:
    messages, prompt = CASES[name]
    got = enc.encode_openai(messages, None, prompt).ids.tolist()
    assert got == _template(hf, messages, prompt)


def test_the_quirks_are_what_the_render_shows(hf: Any, enc: lvt.ChatEncoder) -> None:
    """The cases above exercise what they name (so a template change that removed the quirk
    would not leave them passing by accident); Llama 3.1's render of the same has the
    preamble this template lacks."""
    def text(name: str, fmt: str = "llama3.0") -> str:
        messages, prompt = CASES[name]
        e = enc if fmt == "llama3.0" else lvt.ChatEncoder.from_tokenizer(enc.tokenizer, fmt)
        return hf.decode(e.encode_openai(messages, None, prompt).ids.tolist())

    assert text("no-system").startswith("<|begin_of_text|><|start_header_id|>user")
    assert "Cutting Knowledge Date" not in text("system-first-and-later")
    assert "Cutting Knowledge Date" in text("no-system", "llama3.1")
    assert ("<|eot_id|><|start_header_id|>system<|end_header_id|>\n\nNow in French.<|eot_id|>"
            in text("system-first-and-later"))
    assert text("contents-trimmed").endswith(
        "system<|end_header_id|>\n\nBe exact.<|eot_id|><|start_header_id|>user<|end_header_id|>"
        "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>")
    assert "<|start_header_id|>developer<|end_header_id|>" in text("developer-header")
    assert text("no-system").endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_control_text_stays_text_where_the_template_makes_control_tokens(
        hf: Any, enc: lvt.ChatEncoder) -> None:
    """A user text spelling ``<|eot_id|>``: the template's tokenizer makes it the control id
    (the user forges the end of their turn); lvt keeps it text, and the two decode alike."""
    messages = [{"role": "user", "content": "a<|eot_id|>b"}]
    eot = enc.tokenizer.token_to_id("<|eot_id|>")
    got = enc.encode_openai(messages).ids.tolist()
    want = _template(hf, messages)
    assert want.count(eot) == 2 and got.count(eot) == 1
    assert hf.decode(got) == hf.decode(want)


@pytest.mark.parametrize(("messages", "tools", "why"), [
    ([{"role": "user", "content": "Weather?"}],
     [{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}],
     "no tool syntax"),
    ([{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]}],
     None, "no tool syntax: a tool call is refused"),
    ([{"role": "user", "content": "Weather?"},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}], None,
     "no tool syntax: a tool result is refused"),
    ([{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "4", "reasoning_content": "Add."}], None,
     "one plain content block"),
    ([], None, "empty conversation"),
])
def test_what_the_template_cannot_write_is_refused(enc: lvt.ChatEncoder, messages: Any,
                                                   tools: Any, why: str) -> None:
    with pytest.raises(lvt.ConversationError, match=why):
        enc.encode_openai(messages, tools, True)


def test_the_lowering_itself_refuses_no_messages(enc: lvt.ChatEncoder) -> None:
    """The front end refuses an empty conversation for every format; the lowering says why
    this template cannot write one (no ``<|begin_of_text|>`` without a first message)."""
    with pytest.raises(lvt.ConversationError,
                       match=re.escape("writes <|begin_of_text|> with the first message")):
        enc.family.lower(lvt.Conversation([], True))


@pytest.mark.parametrize("name", sorted(CASES))
def test_renders_read_back(enc: lvt.ChatEncoder, name: str) -> None:
    """``parse`` reads a render back to a conversation that renders to the same ids, with the
    contents trimmed (what the template writes) and the roles and order of the messages."""
    messages, prompt = CASES[name]
    out = enc.encode_openai(messages, None, prompt)
    back = enc.parse(out.ids.tolist())
    assert enc.encode(back).ids.tolist() == out.ids.tolist()
    assert back.add_generation_prompt == prompt
    assert [(m.role.value, m.blocks) for m in back.messages] == [
        (m["role"], (lvt.Plain(lvt.Text(m["content"].strip())),)) for m in messages]


def test_a_render_that_is_not_this_templates_is_refused(enc: lvt.ChatEncoder) -> None:
    """Llama 3.1's render (the same header turns after its dated system preamble, whose body
    ends with a blank line that this template's ``| trim`` never writes), a stream without
    ``<|begin_of_text|>`` and a header of a role the template does not write back
    (``ipython``) are not renders of this format."""
    msgs = [{"role": "user", "content": "Hi"}]
    ids = lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "llama3.1").encode_openai(msgs).ids
    with pytest.raises(lvt.ParseError, match="renders differently"):
        enc.parse(ids.tolist())
    own = enc.encode_openai(msgs).ids.tolist()
    with pytest.raises(lvt.ParseError):
        enc.parse(own[1:])
    tok = enc.tokenizer
    ipython = tok.encode("ipython", add_special_tokens=False).ids
    bad = [own[0], own[1], *ipython, *own[3:]]
    with pytest.raises(lvt.ParseError):
        enc.parse(bad)


def test_sampled_turn_follows_the_prompt(enc: lvt.ChatEncoder) -> None:
    """The policy samples after the assistant header: prompt + sampled ids + ``<|eot_id|>`` is
    the training render, the sampled ids verbatim and learned, the prompt not."""
    tok = enc.tokenizer
    prompt = enc.encode_openai([{"role": "user", "content": "2+2?"}],
                               add_generation_prompt=True).ids.tolist()
    sampled = tok.encode(" 4 ", add_special_tokens=False).ids  # not what a trim would keep
    conv = lvt.Conversation([lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("2+2?")),)),
                             lvt.Message(lvt.Role.ASSISTANT, (lvt.Sampled(tuple(sampled)),))])
    out = enc.encode(conv)
    n = len(prompt)
    eot = tok.token_to_id("<|eot_id|>")
    assert out.ids.tolist() == [*prompt, *sampled, eot]
    assert out.mask.tolist() == [0] * n + [1] * (len(sampled) + 1)
    assert enc.stop_ids[0] == eot


def test_a_json_answer_stays_an_answer(enc: lvt.ChatEncoder) -> None:
    """The template has no call syntax: a sampled answer that is a JSON object (which Llama
    3.1's reader takes for a call) is read as content, and the sample is canonical."""
    tok = enc.tokenizer
    text = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
    ids = [*tok.encode(text, add_special_tokens=False).ids, tok.token_to_id("<|eot_id|>")]
    c = enc.read_completion(ids)
    assert c.content == text and not c.tool_calls and c.termination.reason == "stop"
    llama31 = lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "llama3.1")
    assert [k.name for k in llama31.read_completion(ids).tool_calls] == ["get_weather"]


def test_detected_from_the_tokenizer(hf: Any) -> None:
    """A user's tokenizer carrying Llama 3's template gives the ``llama3.0`` encoder."""
    assert lvt.ChatEncoder.from_hf(hf).format_name == "llama3.0"


def test_the_native_wire_does_not_carry_it(enc: lvt.ChatEncoder) -> None:
    """Llama 3's lowering is not the Lean spec's (`LlamaFmt` always writes the dated system
    turn): the wire refuses the family, so the encoder runs the reference backend, and Llama
    3.1 is still carried."""
    assert not wire.supports(enc.family)
    assert enc.backend == "reference"
    assert wire.supports(lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "llama3.1").family)


def test_the_stated_extension_property(enc: lvt.ChatEncoder) -> None:
    """What the registry states (prefix): the render of the first ``k`` messages is a prefix
    of the render of all of them, and the generation prompt's render a prefix of the render
    with the answer."""
    for name, (messages, _prompt) in CASES.items():
        long = enc.encode_openai(messages).ids.tolist()
        for k in range(1, len(messages)):
            short = enc.encode_openai(messages[:k]).ids.tolist()
            assert long[:len(short)] == short, (name, k)
            if messages[k]["role"] == "assistant":
                p = enc.encode_openai(messages[:k], add_generation_prompt=True).ids.tolist()
                assert enc.encode_openai(messages[:k + 1]).ids.tolist()[:len(p)] == p, (name, k)


def test_what_norm0_forgets_renders_alike_and_nothing_else_does(hf: Any,
                                                                enc: lvt.ChatEncoder) -> None:
    """``Llama.norm0`` (``Verified/Spec/LlamaPlain.lean``), the normalisation under which the
    Lean proves Llama 3's render injective (``lowerInjective0``): conversations equal under it
    render to the same ids, in lvt and in the template (content ``| trim``; no content, empty
    and blank content alike), ``encode_batch`` reports them as a collision, and a change it
    does not forget changes the ids."""
    q = {"role": "user", "content": "q"}

    def both(*answers: Any) -> list[list[int]]:
        out = []
        for a in answers:
            msgs = [q, {"role": "assistant", "content": a}, q]
            ids = enc.encode_openai(msgs, None, True).ids.tolist()
            assert ids == _template(hf, [q, {"role": "assistant", "content": a or ""}, q],
                                    True)
            out.append(ids)
        return out

    trimmed = both("a", " a", "a \n\t")
    assert trimmed[0] == trimmed[1] == trimmed[2]
    blank = both("", "  ", None)
    assert blank[0] == blank[1] == blank[2] != trimmed[0]
    kept = both("a b", "a  b", "a\nb")  # inner whitespace is written: not forgotten
    assert len({tuple(x) for x in kept}) == 3
    convs = [enc.from_openai([q, {"role": "assistant", "content": a}, q], None, True)
             for a in ("a", " a ")]
    with pytest.warns(lvt.CollisionWarning, match=r"Plain\.payload\.text 'a' vs ' a '"):
        enc.encode_batch(convs)
