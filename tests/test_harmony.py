"""gpt-oss (Harmony): the ``gpt-oss`` and ``gpt-oss-stable`` formats against the official
gpt-oss template (through ``transformers``; token for token against ``openai-harmony``, the
reference renderer, in ``tests/test_harmony_reference.py``); the TypeScript
tool layout against the template on schemas that hit every branch of its macro; options,
refusals, loss mask, parse and completions.

The corpus-wide template parity is ``tests/parity/test_parity.py -k gpt``; here the template is
run with a fixed ``strftime_now`` so that the ``current_date`` option is checked too."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import lvt
import lvt.families
from lvt import zoo
from lvt.errors import ConversationError, FormatError
from lvt.families import harmony
from lvt.families.harmony import AnalysisTurn
from lvt.jsonfmt import compact
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens
from lvt.runtime import core
from parity.corpus import Case, conversations

DATE = "2026-12-01"
START, MESSAGE, CHANNEL, END, RETURN, CALL = 200006, 200008, 200005, 200007, 200002, 200012
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


@pytest.fixture(scope="module")
def tok() -> Any:
    return zoo.load_tokenizer("gpt-oss")


_ENC: dict[tuple[Any, ...], lvt.ChatEncoder] = {}


def enc_for(tok: Any, fmt: str = "gpt-oss", **kw: Any) -> lvt.ChatEncoder:
    kw.setdefault("current_date", DATE)
    key = (fmt, tuple(sorted(kw.items())))
    if key not in _ENC:
        _ENC[key] = lvt.ChatEncoder.from_tokenizer(tok, fmt, **kw)
    return _ENC[key]


_NOW = 'strftime_now("%Y-%m-%d")'


@pytest.fixture(scope="module")
def renderer(tok: Any) -> Any:
    """The official template, its one ``strftime_now`` call overridable by the variable
    ``lvt_test_date`` (transformers does not pass callables through as template variables)."""
    from parity.templates import TemplateRenderer

    r = TemplateRenderer("gpt-oss", tokenizer=tok)
    assert r.hf.chat_template.count(_NOW) == 1
    r.hf.chat_template = r.hf.chat_template.replace(
        _NOW, f"(lvt_test_date if lvt_test_date is defined else {_NOW})")
    return r


def dated(case: Case, date: str = DATE) -> Case:
    """The case rendered by the template as on ``date``."""
    return dataclasses.replace(case, template_kwargs={**case.template_kwargs,
                                                      "lvt_test_date": date})


def lvt_ids(tok: Any, case: Case, fmt: str = "gpt-oss", **kw: Any) -> list[int]:
    opts = {k: v for k, v in case.template_kwargs.items() if k != "lvt_test_date"}
    e = enc_for(tok, fmt, **{**opts, **kw})
    return e.encode_openai(case.messages, case.tools, case.add_generation_prompt).ids.tolist()


def _case(msgs: list[dict[str, Any]], tools: Any = None, gen: bool = False, **kw: Any) -> Case:
    return Case("t", msgs, tools, gen, kw)


# ---------------------------------------------------------------------------------------------
# The template


def test_zoo_tokenizer_is_o200k_harmony(tok: Any) -> None:
    assert tok.get_vocab_size(with_added_tokens=True) == 201088
    for s, i in (("<|start|>", START), ("<|message|>", MESSAGE), ("<|channel|>", CHANNEL),
                 ("<|end|>", END), ("<|return|>", RETURN), ("<|call|>", CALL),
                 ("<|constrain|>", 200003), ("<|startoftext|>", 199998)):
        assert tok.token_to_id(s) == i
    # the tokenizer the parity harness builds with transformers' TikTokenConverter
    from parity.templates import family_tokenizer

    ref = family_tokenizer("gpt-oss")
    for s in ("Hello, world!", " 12345 \n\n  x", "naïve café — 東京 🙂", "def f(x):\n\treturn x"):
        assert tok.encode(s).ids == ref.encode(s).ids


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
@pytest.mark.parametrize("date", ["2026-12-01", "1999-01-31"])
def test_options_equal_the_template(tok: Any, renderer: Any, effort: str, date: str) -> None:
    case = _case([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
                 [WEATHER], True, reasoning_effort=effort)
    want = renderer.render(dated(case, date))
    assert lvt_ids(tok, case, current_date=date) == want
    assert f"Current date: {date}" in renderer.decode(want)


def test_model_identity_option(tok: Any, renderer: Any) -> None:
    case = _case([{"role": "user", "content": "Hi"}], None, True, model_identity="You are Bob.")
    assert lvt_ids(tok, case) == renderer.render(dated(case))


def test_default_date_is_today(tok: Any, renderer: Any) -> None:
    e = lvt.ChatEncoder.from_tokenizer(tok, "gpt-oss")
    case = _case([{"role": "user", "content": "Hi"}], None, True)
    assert e.encode_openai(case.messages, None, True).ids.tolist() == renderer.render(case)


#: Schemas that reach every branch of `render_typescript_type` and the parameter defaults.
SCHEMAS: dict[str, Any] = {
    "nested": {"type": "object", "properties": {"x": {"type": "string"},
                                                "y": {"type": "integer"}}, "required": ["x"]},
    "one_of": {"oneOf": [{"type": "string", "description": "s"}, {"type": "number",
                                                                 "default": 3}]},
    "one_of_objects": {"oneOf": [{"type": "object"}, {"type": "string"}], "default": "zz"},
    "type_list": {"type": ["string", "null"]},
    "type_one": {"type": ["boolean"]},
    "arr_obj": {"type": "array", "items": {"type": "object", "properties": {
        "k": {"type": "boolean"}}}},
    "arr_long": {"type": "array", "items": {"type": "object", "properties": {
        "alpha": {"type": "string"}, "beta": {"type": "string"}}}},
    "arr_bare": {"type": "array"},
    "arr_num": {"type": "array", "items": {"type": "integer"}, "nullable": True},
    "arr_arr": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
    "str_null": {"type": "string", "nullable": True},
    "enum_default": {"type": "string", "enum": ["a", "b"], "default": "a"},
    "num_default": {"type": "number", "default": 1.5, "description": "A number."},
    "bool_default": {"type": "boolean", "default": False},
    "obj_bare": {"type": "object"},
    "anything": {},
    "empty_desc": {"type": "string", "description": ""},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_tool_layout_equals_the_template(tok: Any, renderer: Any, name: str) -> None:
    tool = {"type": "function", "function": {
        "name": "t", "description": "D", "parameters": {
            "type": "object", "properties": {"p": SCHEMAS[name], "q": {"type": "string"}},
            "required": ["q"]}}}
    case = _case([{"role": "user", "content": "Hi"}], [tool, WEATHER], True)
    assert lvt_ids(tok, case) == renderer.render(dated(case))


def test_tools_without_parameters_and_empty_tool_list(tok: Any, renderer: Any) -> None:
    bare = {"type": "function", "function": {"name": "now", "description": "Time."}}
    empty = {"type": "function", "function": {"name": "e", "description": "E.",
                                              "parameters": {"type": "object",
                                                             "properties": {}}}}
    for tools in ([bare, empty], []):
        case = _case([{"role": "user", "content": "Hi"}], tools, True)
        assert lvt_ids(tok, case) == renderer.render(dated(case))


@pytest.mark.parametrize("first", ["system", "developer"])
@pytest.mark.parametrize("content", ["", "  padded \n", "x\n\n# Tools\n\nnot a tool"])
def test_developer_message_equals_the_template(tok: Any, renderer: Any, first: str,
                                                content: str) -> None:
    for tools in (None, [WEATHER]):
        case = _case([{"role": first, "content": content}, {"role": "user", "content": "Hi"}],
                     tools, True)
        assert lvt_ids(tok, case) == renderer.render(dated(case))


def test_empty_reasoning_block_is_an_empty_analysis(tok: Any, renderer: Any) -> None:
    """``"thinking": ""`` on the last message: the template writes an empty analysis message
    (`{%- if "thinking" in message %}`); so does lvt, for an explicit empty reasoning block and
    for the OpenAI field (the encoder's ``from_openai`` keeps it for this family only)."""
    msgs = [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello", "thinking": ""}]
    c = Conversation([Message(Role.USER, [Plain(Text("Hi"))]),
                      Message(Role.ASSISTANT, [Reasoning(Text("")), Plain(Text("Hello"))])],
                     False, None)
    want = renderer.render(dated(_case(msgs)))
    assert enc_for(tok).encode(c).ids.tolist() == want
    assert enc_for(tok).encode_openai(msgs).ids.tolist() == want
    assert enc_for(tok).from_openai(msgs) == c
    assert lvt.from_openai(msgs) != c  # other families' templates test the field's truth


# ---------------------------------------------------------------------------------------------
# Exact and stable


def _turns(tok: Any, fmt: str, case: Case) -> tuple[Any, ...]:
    e = enc_for(tok, fmt, **case.template_kwargs)
    return e.lower(lvt.from_openai(case.messages, case.tools, case.add_generation_prompt)).turns


def test_stable_keeps_every_reasoning_block(tok: Any) -> None:
    """Per corpus conversation: stable writes one analysis per assistant message with
    reasoning (or with call content); exact writes a subset; both agree on everything else."""
    n_diff = 0
    for case in conversations("gpt-oss"):
        ex, st = _turns(tok, "gpt-oss", case), _turns(tok, "gpt-oss-stable", case)
        want = sum(1 for m in case.messages if m["role"] == "assistant" and (
            m.get("thinking") or (m.get("tool_calls") and m.get("content"))))
        assert sum(isinstance(t, AnalysisTurn) for t in st) == want
        assert [t for t in st if not isinstance(t, AnalysisTurn)] == [
            t for t in ex if not isinstance(t, AnalysisTurn)]
        assert [t for t in ex if isinstance(t, AnalysisTurn)] == [
            t for t in st if isinstance(t, AnalysisTurn) and t in ex]
        n_diff += len(st) != len(ex)
    assert n_diff >= 10


def test_return_only_on_the_last_training_message(tok: Any) -> None:
    for case in conversations("gpt-oss"):
        ids = lvt_ids(tok, case)
        last = case.messages[-1]
        ends_final = (not case.add_generation_prompt and last["role"] == "assistant"
                      and not last.get("tool_calls"))
        assert ids.count(RETURN) == (1 if ends_final else 0)
        if ends_final:
            assert ids[-1] == RETURN


def test_stable_is_prefix_stable_but_for_return(tok: Any) -> None:
    """Appending messages to a stable render keeps it a prefix once the last ``<|return|>``
    is read as ``<|end|>`` (the exact format also drops history analysis)."""
    e = enc_for(tok, "gpt-oss-stable")
    checked = 0
    for case in conversations("gpt-oss"):
        ms = case.messages
        for k in range(1, len(ms)):
            if ms[k - 1]["role"] == "tool" and ms[k]["role"] == "tool":
                continue
            try:
                a = e.encode_openai(ms[:k], case.tools).ids.tolist()
                b = e.encode_openai(ms, case.tools, case.add_generation_prompt).ids.tolist()
            except ConversationError:
                continue
            if a and a[-1] == RETURN:
                a[-1] = END
            assert b[: len(a)] == a, case.name
            checked += 1
    assert checked > 100


def test_stable_prompt_render_is_a_prefix(tok: Any) -> None:
    """Token for token with o200k_harmony, where ``extension_stable`` states it for layouts:
    the stable render of the messages before an assistant message, with the generation
    prompt, is a prefix of the render of the whole conversation, call messages included (their
    `` to=functions.NAME`` is encoded in one span with the prompt's ``assistant``)."""
    e = enc_for(tok, "gpt-oss-stable")
    checked = calls = 0
    for case in conversations("gpt-oss"):
        ms = case.messages
        b = e.encode_openai(ms, case.tools, case.add_generation_prompt).ids.tolist()
        for k in range(1, len(ms)):
            if ms[k]["role"] != "assistant" or ms[0]["role"] == "assistant":
                continue
            a = e.encode_openai(ms[:k], case.tools, True).ids.tolist()
            assert b[: len(a)] == a, (case.name, k)
            checked += 1
            calls += bool(ms[k].get("tool_calls"))
    assert checked > 100 and calls > 20


# Tool names beyond the corpus: digits, ``_``, ``-``, long names, names that look like words
# of the header or would merge with a neighbour if the pre-tokenizer allowed it.
ODD_TOOL_NAMES = ["", "x", "0", "123", "9lives", "_", "__init__", "_private", "-", "a-b",
                  "get-weather-now", "snake_case_name_2", "CamelCase", "ALLCAPS", "a.b.c",
                  "assistant", "functions", "to", "=x", " x", "x y", "naïve_café", "東京",
                  "a" * 200, "get_weather_" * 30, "v1_2_3-4-5"]


def test_o200k_splits_before_the_call_header(tok: Any) -> None:
    """The hypothesis of ``extension_ids_call`` (``SplitsCallHeader``) for o200k_harmony: the
    span ``assistant to=functions.NAME`` (what a call turn writes between ``<|start|>`` and
    ``<|channel|>``, the prompt's ``assistant`` included) encodes as ``assistant`` followed by
    `` to=functions.NAME``, and every token of ``assistant`` has bytes; checked with the
    render's own codec on every tool name of the parity corpus and on ``ODD_TOOL_NAMES``."""
    codec = enc_for(tok).codec
    corpus: set[str] = set()
    for case in conversations("gpt-oss"):
        corpus |= {t["function"]["name"] for t in case.tools or []}
        corpus |= {c["function"]["name"] for m in case.messages for c in m.get("tool_calls") or []}
    head = codec.encode("assistant")
    assert head and all(codec.token_byte_length(t) > 0 for t in head)
    merged = [n for n in sorted(corpus) + ODD_TOOL_NAMES
              if codec.encode("assistant to=functions." + n)
              != head + codec.encode(" to=functions." + n)]
    print(f"call header split: {len(corpus)} corpus tool names, {len(ODD_TOOL_NAMES)} odd "
          f"names, {len(merged)} merged")
    assert len(corpus) >= 10 and merged == [], merged
    # the comparison does see a merge: without the space, ``assistants`` is not ``assistant``+``s``
    assert codec.encode("assistants") != head + codec.encode("s")


def _is_final(m: dict[str, Any]) -> bool:
    """``isFinalMsg``: an assistant message without tool calls."""
    return m["role"] == "assistant" and not m.get("tool_calls")


def test_exact_prompt_render_is_a_prefix_until_a_final_answer(tok: Any) -> None:
    """Token for token, where ``extension_exact`` states it for layouts: the exact render of
    the messages before an assistant message, with the generation prompt, is a prefix of the
    render of every longer conversation in which no appended message is a final answer (the
    agent loop, calls and results); appending a final answer after a call with reasoning is
    where it stops being one (the template drops that call's analysis)."""
    e = enc_for(tok)
    checked = broken = 0
    for case in conversations("gpt-oss"):
        ms = case.messages
        for k in range(1, len(ms)):
            if ms[k]["role"] != "assistant" or ms[0]["role"] == "assistant":
                continue
            a = e.encode_openai(ms[:k], case.tools, True).ids.tolist()
            for j in range(k + 1, len(ms) + 1):
                b = e.encode_openai(ms[:j], case.tools).ids.tolist()
                if any(_is_final(m) for m in ms[k:j]):
                    broken += b[: len(a)] != a
                    break
                assert b[: len(a)] == a, (case.name, k, j)
                checked += 1
    print(f"exact prompt prefixes: {checked} extensions without a final answer, {broken} "
          "final answers that rewrite history")
    assert checked > 100 and broken > 0, (checked, broken)


def test_loss_mask_learns_assistant_output_only(tok: Any) -> None:
    e = enc_for(tok)
    case = next(c for c in conversations("gpt-oss") if c.name == "reasoning-tool-call")
    r = e.encode_openai(case.messages, case.tools, False)
    ids, mask = r.ids.tolist(), r.mask.tolist()
    text = tok.decode([t for t, m in zip(ids, mask, strict=True) if m],
                      skip_special_tokens=False)
    assert text == (
        # the call's analysis is dropped (a final answer follows); the last message's is kept
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"location": "Paris, '
        'FR"}<|call|><|channel|>analysis<|message|>Partly cloudy, no rain mentioned.<|end|>'
        "<|channel|>final<|message|>No umbrella needed: it's partly cloudy and 18.5 °C."
        "<|return|>")


# ---------------------------------------------------------------------------------------------
# Refusals


@pytest.mark.parametrize(("msgs", "needle"), [
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
        {"function": {"name": "a", "arguments": {}}},
        {"function": {"name": "b", "arguments": {}}}]}], "one tool call per message"),
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": "c", "thinking": "t",
      "tool_calls": [{"function": {"name": "a", "arguments": {}}}]}], "both content and"),
    ([{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}], "no previous"),
    ([{"role": "user", "content": "x"}, {"role": "system", "content": "late"}], "drops"),
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": "a"},
      {"role": "tool", "content": "r"}], "no previous"),
])
def test_refusals(tok: Any, msgs: list[dict[str, Any]], needle: str) -> None:
    with pytest.raises(ConversationError, match=needle) as ei:
        enc_for(tok).encode_openai(msgs, [WEATHER])
    assert ei.value.message_index is not None


@pytest.mark.parametrize(("tool", "needle"), [
    ({"type": "function", "name": "x"}, "tool.function"),
    ({"function": {"name": "x"}}, "description must be a string"),
    ({"function": {"name": "x", "description": 3}}, "description must be a string"),
    ({"function": {"name": "x", "description": "d", "parameters": {"properties": {
        "e": {"type": "string", "enum": ["a"], "default": 1}}}}}, "enum parameter 'e'"),
])
def test_bad_tools_are_refused(tok: Any, tool: Any, needle: str) -> None:
    with pytest.raises(ConversationError, match=needle):
        enc_for(tok).encode_openai([{"role": "user", "content": "x"}], [tool])


def test_token_tool_result_is_refused(tok: Any) -> None:
    c = Conversation([Message(Role.USER, [Plain(Text("x"))]),
                      Message(Role.ASSISTANT, [lvt.ToolCall("a", "{}")]),
                      Message(Role.TOOL, [Plain(Tokens([1, 2]))])], False, None)
    with pytest.raises(ConversationError, match="tojson") as ei:
        enc_for(tok).encode(c)
    assert ei.value.message_index == 2


@pytest.mark.parametrize(("opts", "needle"), [
    ({"reasoning_effort": "max"}, "reasoning_effort"),
    ({"current_date": "01 Dec 2026"}, "YYYY-MM-DD"),
    ({"current_date": 20261201}, "must be a str"),
    ({"effort": "low"}, "no option"),
])
def test_bad_options(tok: Any, opts: dict[str, Any], needle: str) -> None:
    with pytest.raises(FormatError, match=needle):
        lvt.ChatEncoder.from_tokenizer(tok, "gpt-oss", **opts)


# ---------------------------------------------------------------------------------------------
# Parse, completions, sampled turns


def test_parse_round_trips_tool_free_renders(tok: Any) -> None:
    n = 0
    for case in conversations("gpt-oss"):
        if case.tools:
            continue
        e = enc_for(tok, **case.template_kwargs)  # the effort is in the system message
        ids = lvt_ids(tok, case)
        assert e.encode(e.parse(ids)).ids.tolist() == ids, case.name
        n += 1
    assert n >= 60


def _norm_type(spec: Any) -> Any:
    """What the TypeScript layout keeps of a parameter's type (``integer`` is ``number``)."""
    t = spec.get("type")
    return "number" if t == "integer" else t


def test_parse_round_trips_tool_renders(tok: Any) -> None:
    """Every corpus conversation with tools: the parse renders back to the same ids, and reads
    back the tools' names, descriptions, parameter names, required sets and (up to
    ``integer`` = ``number``) parameter types, the instructions and the messages."""
    n = 0
    for case in conversations("gpt-oss"):
        if not case.tools:
            continue
        e = enc_for(tok, **case.template_kwargs)
        ids = lvt_ids(tok, case)
        conv = e.parse(ids)
        assert e.encode(conv).ids.tolist() == ids, case.name
        assert conv.tools is not None and len(conv.tools) == len(case.tools), case.name
        for got, want in zip(conv.tools, case.tools, strict=True):
            g, w = json.loads(compact(got))["function"], want["function"]
            assert (g["name"], g["description"]) == (w["name"], w["description"]), case.name
            gp, wp = g["parameters"], w.get("parameters") or {}
            assert list(gp["properties"]) == list(wp.get("properties", {})), case.name
            assert set(gp.get("required", [])) == set(wp.get("required", [])), case.name
            for k, spec in wp.get("properties", {}).items():
                assert _norm_type(gp["properties"][k]) == _norm_type(spec), (case.name, k)
        orig = lvt.from_openai(case.messages, case.tools, case.add_generation_prompt)
        assert conv.messages == tuple(lvt.families.unlower(e.family, e.family.lower(
            orig)).messages), case.name
        n += 1
    assert n >= 30


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_parse_reads_every_schema_branch_back(tok: Any, name: str) -> None:
    """A tool with each schema of the layout tests (verbatim type text where the layout
    forgets the schema), beside a plain one, with and without instructions: the parse renders
    back to the same ids."""
    tool = {"type": "function", "function": {
        "name": "t", "description": "D", "parameters": {
            "type": "object", "properties": {"p": SCHEMAS[name], "q": {"type": "string"}},
            "required": ["q"]}}}
    e = enc_for(tok)
    for first in ([], [{"role": "system", "content": "Be brief."}]):
        ids = lvt_ids(tok, _case([*first, {"role": "user", "content": "Hi"}], [tool, WEATHER],
                                 True))
        conv = e.parse(ids)
        assert e.encode(conv).ids.tolist() == ids
        assert [json.loads(compact(t))["function"]["name"] for t in conv.tools] == [
            "t", "get_weather"]


@pytest.mark.parametrize("text", [
    "x\n\n# Tools\n\nnot a tool",  # the tools header in the instructions
    "a\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n} // namespace functions",
    "",
])
def test_parse_splits_instructions_from_tools(tok: Any, text: str) -> None:
    """Instructions that hold the tools header (or a whole empty namespace) and a tool whose
    description holds ``\\ntype X = () => any;``: the parse renders back to the same ids."""
    odd = {"type": "function", "function": {
        "name": "o", "description": "d\ntype X = () => any;\n\n// e", "parameters": {
            "type": "object", "properties": {"a: b": {"type": "string"}}}}}
    e = enc_for(tok)
    for tools in ([WEATHER], [odd, WEATHER], [odd]):
        msgs = [{"role": "developer", "content": text}, {"role": "user", "content": "Hi"}]
        ids = lvt_ids(tok, _case(msgs, tools, True))
        conv = e.parse(ids)
        assert e.encode(conv).ids.tolist() == ids
        assert conv.tools is not None
        if text:
            assert conv.messages[0].blocks == (Plain(Text(text)),)


def test_read_namespace_refuses_what_no_tools_write() -> None:
    from lvt.families.harmony_tools import read_namespace

    head = "## functions\n\nnamespace functions {\n\n"
    assert read_namespace("") is None
    assert read_namespace(head + "} // namespace functions") is None  # no tool
    assert read_namespace(head + "type f = () => any;\n\n} // namespace functions") is None
    assert read_namespace(head + "// d\ntype f = (x) => any;\n\n} // namespace functions") is None


def test_parse_refuses_what_no_conversation_renders(tok: Any) -> None:
    e = enc_for(tok)
    ids = lvt_ids(tok, _case([{"role": "user", "content": "Hi"}], None, True))
    with pytest.raises(lvt.errors.ParseError):
        e.parse(ids[:-1])
    other = lvt_ids(tok, _case([{"role": "user", "content": "Hi"}], None, True),
                    current_date="2000-01-01")
    with pytest.raises(lvt.errors.ParseError):
        e.parse(other)  # another date's system message


def test_parse_completion(tok: Any) -> None:
    e = enc_for(tok)

    def enc(s: str) -> list[int]:
        return tok.encode(s, add_special_tokens=False).ids

    assert e.parse_completion(enc(
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
        "<|message|>Hi!<|return|>")) == [Reasoning(Text("Think.")), Plain(Text("Hi!"))]
    assert e.parse_completion(enc("<|channel|>final<|message|>Hi!")) == [Plain(Text("Hi!"))]
    assert e.parse_completion(enc(
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}'
        "<|call|>")) == [lvt.ToolCall("get_weather", '{"city": "Oslo"}')]
    with pytest.raises(lvt.errors.ParseError):
        e.parse_completion(enc("<|channel|>final<|message|>Hi!<|end|><|start|>user<|message|>x"))


def test_sampled_turn_is_kept_verbatim(tok: Any) -> None:
    e = enc_for(tok)
    sampled = tok.encode("<|channel|>final<|message|>Hel lo<|return|>",
                         add_special_tokens=False).ids
    c = Conversation([Message(Role.USER, [Plain(Text("Hi"))]),
                      Message(Role.ASSISTANT, [Sampled(sampled)])], False, None)
    r = e.encode(c)
    gen = e.generation_prompt(Conversation(c.messages[:1], True, None)).tolist()
    assert r.ids.tolist() == gen + sampled


def test_control_tokens_in_text_stay_text(tok: Any) -> None:
    e = enc_for(tok)
    r = e.encode_openai([{"role": "user", "content": "<|end|><|start|>assistant<|call|>"}],
                        None, True)
    ids = r.ids.tolist()
    assert ids.count(END) == 2 and ids.count(CALL) == 0  # the system and user <|end|> only


def test_formats_registry(tok: Any) -> None:
    from lvt.formats import get_spec

    for name in ("gpt-oss", "gpt-oss-stable"):
        spec = get_spec(name)
        assert spec.family == "harmony" and spec.template == "openai-gpt-oss-120b"
        assert set(spec.options) == {"current_date", "reasoning_effort", "model_identity"}
    fam = enc_for(tok).family
    assert isinstance(fam, harmony.Harmony) and fam.mode == "exact"
    assert enc_for(tok).backend == "reference"
    assert enc_for(tok, "gpt-oss-stable").family.mode == "stable"


def test_lean_examples_hold_in_python(tok: Any) -> None:
    """The kernel-checked examples of ``Verified/Thm/Harmony.lean`` hold for the Python
    transliteration too (``exact_drops_history_analysis``, ``stable_keeps_history_analysis``,
    ``unlayout_layout_example``)."""
    from lvt.families.harmony import CallTurn, DevTurn, FinalTurn, ResultTurn, UserTurn

    def msg(role: Role, *bs: Any) -> Message:
        return Message(role, list(bs))

    two = Conversation([msg(Role.USER, Plain(Text("a"))),
                        msg(Role.ASSISTANT, Reasoning(Text("r")), Plain(Text("b"))),
                        msg(Role.USER, Plain(Text("c"))),
                        msg(Role.ASSISTANT, Reasoning(Text("s")), Plain(Text("d")))], False, None)
    tail = [UserTurn("c", 2), AnalysisTurn("s", 3), FinalTurn("d", True, 3)]
    assert list(enc_for(tok).family.lower(two).turns) == [
        UserTurn("a", 0), FinalTurn("b", False, 1), *tail]
    assert list(enc_for(tok, "gpt-oss-stable").family.lower(two).turns) == [
        UserTurn("a", 0), AnalysisTurn("r", 1), FinalTurn("b", False, 1), *tail]
    fam = enc_for(tok).family
    q = harmony.HConv(harmony.system_text(harmony.DEFAULT_IDENTITY, DATE, "medium", True), (
        DevTurn("", "# Instructions\n\nBe brief.\n\n# Tools\n\nx", "", 0), UserTurn("Hi", 1),
        CallTurn("f", "{}", 2), ResultTurn("f", '"ok"', 3), AnalysisTurn("r", 4),
        FinalTurn("done", True, 4)), None)
    back = fam.unlayout(core.syms(fam.layout(q)))
    assert back == lvt.families.erase(q)
