"""Mistral (tekken): the ``mistral`` / ``mistral-stable`` formats against ``mistral-common``'s
own encoder (``MistralTokenizer.encode_chat_completion``, the reference renderer) for v7, v11
and v13, token for token on the parity scenario pool; against the Mistral-Small-3.1 HF
template where it agrees with mistral-common; built from the real tekken vocabularies that
``mistral-common`` ships (Nemo's ``tekken_240718.json`` and ``tekken_240911.json``, which lack
``[ARGS]``/``[CALL_ID]``); and the family's own laws (round trip, generation prompt, loss
mask, stable placement of ``[AVAILABLE_TOOLS]``, no control token from text, typed refusals).

Reference tokenizers: the tekken file with the v7+ control names (``refdata.tekken_v13_file``)
with its ``config.version`` set to each version, loaded by ``MistralTokenizer.from_file`` in
``finetuning`` validation mode when the conversation ends with an assistant message and
``test`` mode otherwise (the modes mistral-common has for a training and a prompt render).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import lvt
from lvt.errors import ConversationError, FormatError, LvtError
from lvt.families import mistral, parse_completion
from lvt.model import Conversation, Message, Plain, Role, Sampled, Text, Tokens, ToolCall
from lvt.runtime import core
from parity.corpus import adversarial, conversations
from parity.corpus_base import Scenario
from parity.corpus_chat import chat_scenarios, reasoning_scenarios
from parity.corpus_tools import tool_scenarios
from parity.templates import TemplateRenderer, _refdata, default_cache_dir, family_tokenizer

pytest.importorskip("mistral_common")

VERSIONS = ("v7", "v11", "v13")
BOS, EOS, INST, END_INST, TOOLS, END_TOOLS = 1, 2, 3, 4, 5, 6
RESULTS, END_RESULTS, CALLS, SYS, END_SYS, ARGS = 7, 8, 9, 17, 18, 32


@pytest.fixture(scope="module")
def tok() -> Any:
    return family_tokenizer("mistral")


@pytest.fixture(scope="module")
def encs(tok: Any) -> dict[tuple[str, bool], lvt.ChatEncoder]:
    return {(v, s): lvt.ChatEncoder.from_tokenizer(
        tok, "mistral-stable" if s else "mistral", version=v, strict=True)
        for v in VERSIONS for s in (False, True)}


def _tekken_as(src: Path, version: str, cache: Path) -> Path:
    """``src`` with ``config.version`` set to ``version`` (cached)."""
    dest = cache / f"{src.stem}.{version}.json"
    if not dest.is_file():
        j = json.loads(src.read_text(encoding="utf-8"))
        j["config"]["version"] = version
        cache.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        tmp.write_text(json.dumps(j), encoding="utf-8")
        tmp.replace(dest)
    return dest


class Reference:
    """``mistral-common``'s renderer for one version of one tekken file."""

    def __init__(self, src: Path, version: str) -> None:
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self.path = str(_tekken_as(src, version, default_cache_dir()))
        self.load = MistralTokenizer.from_file
        self.by_mode: dict[Any, Any] = {}
        self.finetuning = ValidationMode.finetuning
        self.test = ValidationMode.test

    def render(self, messages: list[dict[str, Any]], tools: Any = None) -> list[int]:
        from mistral_common.protocol.instruct.request import ChatCompletionRequest

        mode = self.finetuning if messages[-1]["role"] == "assistant" else self.test
        req = ChatCompletionRequest(messages=messages, tools=tools)
        if mode not in self.by_mode:  # loading a tekken file takes seconds: once, on demand
            self.by_mode[mode] = self.load(self.path, mode=mode)
        return list(self.by_mode[mode].encode_chat_completion(req).tokens)


@pytest.fixture(scope="module")
def refs() -> dict[str, Reference]:
    src = _refdata().tekken_v13_file(default_cache_dir())
    return {v: Reference(src, v) for v in VERSIONS}


def _pool() -> list[Any]:
    return [*chat_scenarios(), *tool_scenarios(), *reasoning_scenarios()]


def _ref_input(msgs: list[dict[str, Any]], nine_char_ids: bool) -> list[dict[str, Any]]:
    """The messages as mistral-common takes them: an empty ``reasoning_content`` dropped (its
    request model forbids the field; lvt writes no block for empty reasoning) and, for v7/v11,
    call ids made ``[a-zA-Z0-9]{9}`` (its validator's rule; the corpus ids are ``call_xx00``).
    lvt is given the same messages."""
    out = json.loads(json.dumps(msgs))
    for m in out:
        if m.get("reasoning_content") == "":
            del m["reasoning_content"]
        if nine_char_ids:
            for c in m.get("tool_calls") or []:
                c["id"] = (c["id"].replace("_", "") + "000000000")[:9]
            if "tool_call_id" in m:
                m["tool_call_id"] = (m["tool_call_id"].replace("_", "") + "000000000")[:9]
    return out


def _lvt(enc: lvt.ChatEncoder, msgs: Any, tools: Any, gen: bool) -> list[int] | LvtError:
    try:
        return enc.encode_openai(msgs, tools, gen).ids.tolist()
    except LvtError as e:
        return e


def _allowed_refusal(version: str, msgs: list[dict[str, Any]], e: LvtError) -> str | None:
    """Why lvt may refuse a conversation mistral-common renders (``None``: it may not)."""
    roles = [m["role"] for m in msgs]
    if any(a == b and a in ("user", "assistant") for a, b in itertools.pairwise(roles)):
        return "merge"  # mistral-common joins same-role runs with "\n\n"; lvt needs alternation
    ids = [c.get("id") for m in msgs for c in m.get("tool_calls") or []]
    if version != "v13" and any(not (isinstance(i, str) and i.isascii() and i.isalnum()
                                     and len(i) == 9) for i in ids):
        assert "call id" in str(e)
        return "call ids"  # v7/v11 need [a-zA-Z0-9]{9} call ids, as mistral-common's validator
    return None


@pytest.mark.parametrize("version", VERSIONS)
def test_ids_equal_mistral_common(encs: Any, refs: Any, version: str) -> None:
    """Token for token with encode_chat_completion on every conversation both render; every
    refusal of lvt is one of the stated kinds, and mistral-common refuses nothing lvt renders
    except what its request model cannot hold (reasoning fields)."""
    enc, ref = encs[version, False], refs[version]
    tally: Counter[str] = Counter()
    for sc in _pool():
        msgs = _ref_input(sc.copy_messages(), version != "v13")
        got = _lvt(enc, msgs, sc.tools, sc.add_generation_prompt)
        try:
            want: list[int] | Exception = ref.render(msgs, sc.tools)
        except Exception as e:  # pydantic and mistral-common errors
            want = e
        if isinstance(want, Exception):
            if isinstance(got, LvtError):
                tally["both refuse"] += 1
                continue
            # mistral-common's AssistantMessage forbids reasoning_content; lvt refuses
            # reasoning too, so only an empty one (no block) reaches here
            pytest.fail(f"{sc.name}: mistral-common refuses ({want}) what lvt renders")
        if isinstance(got, LvtError):
            why = _allowed_refusal(version, msgs, got)
            assert why is not None, f"{sc.name}: lvt refuses ({got}) what mistral-common renders"
            tally["lvt refuses: " + why] += 1
            continue
        assert got == want, f"{sc.name}: lvt differs from mistral-common {version}"
        tally["identical"] += 1
        tally["identical with tools"] += any(
            m["role"] == "tool" or m.get("tool_calls") for m in msgs)
    # same figures for every version (pool of 144: 124 identical, 31 of them with tool calls or
    # results; 2 merges refused by lvt; 18 refused by both, reasoning fields)
    assert tally["identical"] >= 120, tally
    assert tally["identical with tools"] >= 30, tally
    assert tally["lvt refuses: merge"] == 2, tally
    assert not any(k.startswith("lvt refuses: call ids") for k in tally), tally


@pytest.mark.parametrize("version", VERSIONS)
def test_tool_conversations_covered(encs: Any, refs: Any, version: str) -> None:
    """Every version renders the tool scenarios (single, parallel, sequential calls, results,
    content and calls, agent loops) identically to mistral-common: v7 with the ids in the
    ``[TOOL_CALLS]`` JSON list, v11 with ``[CALL_ID]``, both with
    ``[TOOL_RESULTS]ID[TOOL_CONTENT]``; v13 without ids."""
    n = calls = 0
    for sc in tool_scenarios():
        msgs = _ref_input(sc.copy_messages(), version != "v13")
        got = _lvt(encs[version, False], msgs, sc.tools, sc.add_generation_prompt)
        if isinstance(got, LvtError):
            assert any(m.get("reasoning_content") for m in msgs), (sc.name, got)
            continue
        assert got == refs[version].render(msgs, sc.tools), sc.name
        n += any(m["role"] == "tool" for m in msgs)
        calls += sum(len(m.get("tool_calls") or []) for m in msgs)
        ids = [c["id"] for m in msgs for c in m.get("tool_calls") or []]
        if version != "v13":  # every id written, once per call and once per result
            dec = encs[version, False].tokenizer.decode(got)
            for i in ids:
                assert dec.count(i) == 1 + sum(m.get("tool_call_id") == i for m in msgs), i
    assert n >= 25 and calls >= 40, (n, calls)


def test_tools_placement_per_version(encs: Any, refs: Any) -> None:
    """[AVAILABLE_TOOLS] before the last user message (v7, v11) or the first (v13, and every
    stable format); the answer follows [/TOOL_RESULTS] with no [/INST]."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}]
    msgs = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a"},
            {"role": "user", "content": "two"}, {"role": "assistant", "content": "b"}]
    for v in VERSIONS:
        ids = encs[v, False].encode_openai(msgs, tools).ids.tolist()
        assert ids == refs[v].render(msgs, tools)
        first = ids.index(TOOLS) < ids.index(INST)
        assert first == (v == "v13")
        stable = encs[v, True].encode_openai(msgs, tools).ids.tolist()
        assert stable.index(TOOLS) < stable.index(INST)
        assert stable == refs["v13"].render(msgs, tools)  # v13's placement, same vocabulary
    loop = [{"role": "user", "content": "w?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "abcdefghi", "type": "function",
                 "function": {"name": "f", "arguments": {"x": 1}}}]},
            {"role": "tool", "tool_call_id": "abcdefghi", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."}]
    ids = encs["v13", False].encode_openai(loop, tools).ids.tolist()
    assert ids == refs["v13"].render(loop, tools)
    k = ids.index(END_RESULTS)
    assert ids[k + 1] not in (INST, END_INST)
    assert ids[ids.index(CALLS):].count(ARGS) == 1


def test_exact_rewrites_history_stable_does_not(encs: Any) -> None:
    """v7 exact moves [AVAILABLE_TOOLS] when a user message is appended (not a prefix); the
    stable format and v13 keep the earlier render as a prefix."""
    tools = [{"type": "function", "function": {"name": "f", "description": "d",
                                               "parameters": {}}}]
    a = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a"}]
    b = [*a, {"role": "user", "content": "two"}]
    for (v, s), enc in encs.items():
        ra, rb = (enc.encode_openai(m, tools).ids.tolist() for m in (a, b))
        assert (rb[:len(ra)] == ra) == (s or v == "v13"), (v, s)


def test_ids_equal_the_small_31_template(encs: Any, tok: Any) -> None:
    """The Mistral-Small-3.1 HF template (v7 vocabulary names): identical ids when the
    conversation starts with a system message; otherwise the one difference is the template's
    default [SYSTEM_PROMPT] with today's date, which mistral-common does not write (lvt with
    that text as a system message equals the template). Where the two references disagree
    (trailing spaces of assistant content, which mistral-common strips) lvt follows
    mistral-common."""
    r = TemplateRenderer("mistral", tokenizer=tok)
    enc = encs["v7", False]
    same = default = 0
    for case in conversations("mistral"):
        got = _lvt(enc, case.messages, case.tools, case.add_generation_prompt)
        if isinstance(got, LvtError):
            assert _allowed_refusal("v7", case.messages, got) or any(
                m["role"] == "system" for m in case.messages[1:]), case.name
            continue
        want = r.render(case)
        if any(m["role"] == "assistant" and str(m.get("content") or "").endswith(" ")
               for m in case.messages):
            # mistral-common writes `content.rstrip(" ")`, the template the content as is:
            # they disagree here, and lvt follows mistral-common (test_ids_equal_mistral_common)
            assert got != want, case.name
            continue
        if case.messages[0]["role"] == "system":
            assert got == want, case.name
            same += 1
            continue
        text = r.render_text(case)
        sys_text = text[text.index("[SYSTEM_PROMPT]") + 15:text.index("[/SYSTEM_PROMPT]")]
        assert "The current date is" in sys_text
        with_sys = [{"role": "system", "content": sys_text}, *case.messages]
        assert got != want
        assert enc.encode_openai(with_sys, None, case.add_generation_prompt).ids.tolist() == want
        default += 1
    assert same >= 40 and default >= 40, (same, default)


@pytest.fixture(scope="module")
def nemo() -> dict[str, Any]:
    """Nemo's tekken vocabularies from mistral-common, converted by transformers (cached)."""
    import mistral_common
    from tokenizers import Tokenizer
    from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer

    out = {}
    for name in ("tekken_240718", "tekken_240911"):
        src = Path(mistral_common.__file__).parent / "data" / f"{name}.json"
        cached = default_cache_dir() / f"{name}.tokenizer.json"
        if not cached.is_file():
            cached.parent.mkdir(parents=True, exist_ok=True)
            fast = convert_tekken_tokenizer(str(src), chat_template="")
            tmp = cached.with_suffix(".tmp")
            fast.backend_tokenizer.save(str(tmp))
            tmp.replace(cached)
        out[name] = (src, Tokenizer.from_file(str(cached)))
    return out


def test_builds_from_the_nemo_vocabularies(nemo: Any) -> None:
    """v7 builds from both shipped tekken files and renders as mistral-common's v7 on that
    vocabulary; v11/v13 need [ARGS] (and v11 [CALL_ID]), which the files lack: FormatError."""
    cases = [c for c in conversations("mistral") if c.messages[-1]["role"] == "assistant"][:12]
    for name, (src, tok) in nemo.items():
        enc = lvt.ChatEncoder.from_tokenizer(tok, "mistral", version="v7")
        ref = Reference(src, "v7")
        n = 0
        for case in cases:
            got = _lvt(enc, case.messages, None, False)
            if isinstance(got, LvtError):
                continue
            assert got == ref.render(case.messages), (name, case.name)
            n += 1
        assert n >= 10
        for v, missing in (("v11", "[ARGS]"), ("v13", "[ARGS]")):
            with pytest.raises(FormatError, match=r"needs the control token '\[ARGS\]'"):
                lvt.ChatEncoder.from_tokenizer(tok, "mistral", version=v)
            assert missing == "[ARGS]"


def test_version_is_a_typed_option(tok: Any) -> None:
    with pytest.raises(FormatError, match="must be one of"):
        lvt.ChatEncoder.from_tokenizer(tok, "mistral", version="v8")
    with pytest.raises(FormatError, match="must be a str"):
        lvt.ChatEncoder.from_tokenizer(tok, "mistral", version=13)
    with pytest.raises(FormatError, match="no option"):
        lvt.ChatEncoder.from_tokenizer(tok, "mistral", date_string="x")
    assert lvt.ChatEncoder.from_tokenizer(tok, "mistral").family.version == "v7"


def _call_msgs(*ids: str | None, results: int = 0) -> list[dict[str, Any]]:
    calls = [{"type": "function", "function": {"name": "f", "arguments": {}}} for _ in ids]
    for c, i in zip(calls, ids, strict=True):
        if i is not None:
            c["id"] = i
    res = [{"role": "tool", "content": "r", **({} if i is None else {"tool_call_id": i})}
           for i in ([*ids] + [None] * results)[:results]]
    return [{"role": "user", "content": "w?"},
            {"role": "assistant", "content": "", "tool_calls": calls}, *res]


def test_typed_refusals(encs: Any, refs: Any) -> None:
    """v7/v11 refuse a call without an id and ids mistral-common's validator refuses (not
    ``[a-zA-Z0-9]{9}``; in v11 two calls of one message with one id); a result with no call
    at its position has no id to write (mistral-common takes the message's own
    ``tool_call_id``; lvt pairs results with calls by position). v13 ignores ids."""
    no_id = Conversation([Message(Role.USER, (Plain(Text("w?")),)),
                          Message(Role.ASSISTANT, (ToolCall("f", "{}"),))])
    for v in ("v7", "v11"):
        with pytest.raises(ConversationError, match="call 0 has none"):
            encs[v, False].encode(no_id)
        for bad in ("call_1", "abcdefgh", "abcdefghij", "abcdéfghi", "abcd-fghi"):
            with pytest.raises(ConversationError, match="must be a-z, A-Z, 0-9"):
                encs[v, False].encode_openai(_call_msgs(bad))
            with pytest.raises(Exception, match=r"[Tt]ool call id"):  # mistral-common agrees
                refs[v].render(_call_msgs(bad))
        # mistral-common reads the id "null" as no id (allowed on the last assistant message
        # of a training render, then written without one); lvt needs an id on every call
        with pytest.raises(ConversationError, match="must be a-z, A-Z, 0-9"):
            encs[v, False].encode_openai(_call_msgs("null"))
        # a second result for a single call: no call id at its position
        two = [*_call_msgs("abcdefghi", results=1), {"role": "tool", "content": "s"}]
        with pytest.raises(ConversationError, match="no call is at this result's position"):
            encs[v, False].encode_openai(two)
    dup = _call_msgs("abcdefghi", "abcdefghi", results=2)
    with pytest.raises(ConversationError, match="same id"):
        encs["v11", False].encode_openai(dup)
    with pytest.raises(Exception, match="Duplicate tool call id"):
        refs["v11"].render(dup)
    # v7's validator only counts results: one id on two calls renders, as mistral-common's
    assert encs["v7", False].encode_openai(dup).ids.tolist() == refs["v7"].render(dup)
    encs["v13", False].encode(no_id)  # v13 writes no id
    ok = _call_msgs("abcdefghi", "ABCDEFGH9", results=2)
    for v in VERSIONS:
        assert encs[v, False].encode_openai(ok).ids.tolist() == refs[v].render(ok), v
    bad = [
        ([{"role": "assistant", "content": "a"}], "start with a user message"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "alternation"),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}],
         "neither content nor tool calls"),
        ([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}],
         "ends with a system message"),
        ([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}], "Unexpected role"),
    ]
    for msgs, why in bad:
        with pytest.raises(ConversationError, match=why):
            encs["v13", False].encode_openai(msgs)
    with pytest.raises(ConversationError, match="tool definition"):
        encs["v13", False].encode_openai([{"role": "user", "content": "a"}], [{"name": 3}])


@pytest.mark.parametrize("version", VERSIONS)
def test_round_trip_mask_and_prompt(encs: Any, version: str) -> None:
    """parse(render) gives the conversation back (it re-renders to the same ids); only
    assistant content, calls and </s> are learned; the generation prompt writes nothing, and
    prompt + sampled tokens + </s> is the render with the sampled turn."""
    enc = encs[version, False]
    n = tools_n = 0
    for case in [*conversations("mistral"), *tool_scenarios()]:
        msgs = getattr(case, "messages", None) or case.copy_messages()
        if isinstance(case, Scenario):
            msgs = _ref_input(msgs, version != "v13")
        tools = case.tools
        gen = case.add_generation_prompt
        try:
            out = enc.encode_openai(msgs, tools, gen)
        except LvtError:
            continue
        back = enc.parse(out.ids)
        assert enc.encode(back).ids.tolist() == out.ids.tolist()
        calls = [b for m in back.messages for b in m.blocks if isinstance(b, ToolCall)]
        want_ids = [c.get("id") if version != "v13" else None
                    for m in msgs for c in m.get("tool_calls") or []]
        assert [b.id for b in calls] == want_ids, case.name  # v7/v11 ids read back
        tools_n += any(m["role"] == "tool" for m in msgs)
        learned = [t for t, m in zip(out.ids.tolist(), out.mask.tolist(), strict=True) if m]
        if msgs[-1]["role"] == "assistant":
            assert learned[-1] == EOS
        assert not any(m for t, m in zip(out.ids.tolist(), out.mask.tolist(), strict=True)
                       if t in (INST, END_INST, SYS, END_SYS, RESULTS, END_RESULTS, BOS))
        n += 1
    assert n >= 60 and tools_n >= 25, (n, tools_n)
    conv = lvt.from_openai([{"role": "user", "content": "Hi"}], None, True)
    prompt = enc.encode(conv).ids.tolist()
    assert prompt == enc.encode(lvt.from_openai([{"role": "user", "content": "Hi"}])).ids.tolist()
    sampled = enc.encode_openai([{"role": "user", "content": "x"},
                                 {"role": "assistant", "content": "Hello there"}]).ids.tolist()
    body = sampled[sampled.index(END_INST) + 1:-1]
    full = Conversation([*conv.messages, Message(Role.ASSISTANT, (Sampled(body),))])
    r = enc.encode(full)
    assert r.ids.tolist() == prompt + body + [EOS]
    assert r.mask.tolist() == [0] * len(prompt) + [1] * (len(body) + 1)
    blocks = parse_completion(enc.family, enc.codec, frozenset(enc.reserved), body)
    assert blocks == [Plain(Text("Hello there"))]


@pytest.mark.parametrize("version", VERSIONS)
def test_sampled_calls_read_back(encs: Any, version: str) -> None:
    """A sampled completion with content and calls reads back as those blocks, ids included
    (v7 from the JSON list, v11 from [CALL_ID]; v13 has none), also when the arguments hold
    the text the v7 list separates objects with."""
    enc = encs[version, False]
    ident = (lambda i: None) if version == "v13" else (lambda i: i)
    tricky = '{"a": "}, {\\"name\\": \\"x", "id": "abcdefghi", "b": [1, {"c": "]"}]}'
    want = [Plain(Text("Checking.")), ToolCall("get_weather", '{"a": 1}', ident("abcdefghi")),
            ToolCall("f", "{}", ident("X1y2Z3w4V")), ToolCall("g", tricky, ident("q00000000"))]
    ids = enc.encode(Conversation([Message(Role.USER, (Plain(Text("w?")),)),
                                   Message(Role.ASSISTANT, tuple(want))])).ids.tolist()
    body = ids[ids.index(END_INST) + 1:-1]
    blocks = parse_completion(enc.family, enc.codec, frozenset(enc.reserved), body)
    assert blocks == want
    if version == "v7":
        assert enc.tokenizer.decode(body, skip_special_tokens=False).startswith(
            'Checking.[TOOL_CALLS][{"name": "get_weather", "arguments": {"a": 1}, "id": '
            '"abcdefghi"}, {"name": "f"')
    with pytest.raises(ConversationError, match="control id"):
        enc.encode(Conversation([Message(Role.USER, (Plain(Tokens([5, INST])),))]))


@pytest.mark.parametrize("version", VERSIONS)
def test_no_control_token_from_text(encs: Any, version: str) -> None:
    """Adversarial text spelling [INST], [TOOL_CALLS], </s>, ...: reserved ids only where the
    layout placed control items, and the text reads back."""
    enc = encs[version, False]
    n = 0
    for case in adversarial("mistral"):
        try:
            conv = lvt.from_openai(case.messages, case.tools, case.add_generation_prompt)
            items = enc.layout(conv)
        except LvtError:
            continue
        ids = core.encode_items(enc.codec, items)[0]
        assert [t for t in ids if t in enc.reserved] == [i.value for i in items if i.kind == 0]
        assert enc.encode(enc.parse(ids)).ids.tolist() == ids
        n += 1
    assert n >= 15


def test_tool_json_normalised_as_mistral_common() -> None:
    from lvt.jsonfmt import freeze

    t = freeze({"function": {"parameters": {"b": 1}, "name": "g", "strict": True},
                "type": "function"})
    assert mistral.tools_json([t]) == ('[{"type": "function", "function": {"name": "g", '
                                       '"description": "", "parameters": {"b": 1}}}]')
    assert mistral.tools_json([freeze({"type": "function", "function": {"x": 1}})]) is None


def test_runs_on_the_reference_backend(encs: Any, tok: Any) -> None:
    """The FFI wire carries Qwen and Llama only: a Mistral encoder uses the reference
    transliteration whatever library is found, and asking for the native one is refused."""
    from lvt.errors import NativeLibraryError
    from lvt.runtime import wire

    assert not wire.supports(encs["v13", False].family)
    assert encs["v13", False].backend == "reference"
    with pytest.raises(NativeLibraryError):
        lvt.ChatEncoder.from_tokenizer(tok, "mistral", backend="native")


def test_registry() -> None:
    from lvt import formats

    for name, ext in (("mistral", "v13: prefix"), ("mistral-stable", "prefix")):
        spec = formats.get_spec(name)
        assert spec.family == "mistral" and spec.options == {"version": "v7"}
        assert spec.template == "mistralai-Mistral-Small-3.1-24B-Instruct-2503"
        assert spec.extension.startswith(ext)


@pytest.mark.parametrize("version", VERSIONS)
def test_extension_property(encs: Any, version: str) -> None:
    """The stated extension property on every corpus conversation and each cut at a message:
    stable (and v13 exact) renders are prefixes of the longer conversation's render; v7/v11
    exact ones are when the appended messages hold no user message."""
    checked = 0
    moved = 0
    tools = [{"type": "function", "function": {"name": "f", "description": "d",
                                               "parameters": {}}}]
    runs = [(c.name, c.messages, c.tools) for c in conversations("mistral")]
    runs += [(c.name + "+tools", c.messages, tools) for c in conversations("mistral")]
    runs += [(sc.name, _ref_input(sc.copy_messages(), version != "v13"), sc.tools)
             for sc in tool_scenarios()]
    for name, msgs, case_tools in runs:
        for stable in (False, True):
            enc = encs[version, stable]
            full = _lvt(enc, msgs, case_tools, False)
            if isinstance(full, LvtError):
                continue
            for k in range(1, len(msgs)):
                part = _lvt(enc, msgs[:k], case_tools, False)
                if isinstance(part, LvtError):
                    continue  # e.g. a cut that ends with a system message
                # exact v7/v11 move the tools block to a later user message
                moves = not (stable or version == "v13") and bool(case_tools) and any(
                    m["role"] == "user" for m in msgs[k:]) and any(
                    m["role"] == "user" for m in msgs[:k])
                assert (full[:len(part)] == part) == (not moves), (name, k, stable)
                checked += 1
                moved += moves
    assert checked >= 150
    assert moved >= (0 if version == "v13" else 3)


def test_non_json_arguments_are_written_verbatim(encs: Any, refs: Any) -> None:
    """A difference kept on purpose: call arguments that are not JSON are written as given
    (lvt's front end passes JSON arguments through ``json.dumps``, as mistral-common's
    normalizer does); mistral-common writes ``json.dumps`` of the string, quoted. JSON
    arguments, strings of JSON included, are identical."""
    def msgs(args: Any) -> list[dict[str, Any]]:
        call = {"id": "abcdefghi", "type": "function",
                "function": {"name": "f", "arguments": args}}
        return [{"role": "user", "content": "w"},
                {"role": "assistant", "content": "", "tool_calls": [call]}]

    enc, ref = encs["v13", False], refs["v13"]
    for args in ({"a": [1, 2.5]}, '{"a": [1, 2.5]}', '{ "a" : [1,2.5] }', ""):
        assert enc.encode_openai(msgs(args)).ids.tolist() == ref.render(msgs(args)), args
    # no arguments at all: lvt writes "{}", as mistral-common does for empty arguments
    assert enc.encode_openai(msgs(None)).ids.tolist() == ref.render(msgs(""))
    got = enc.encode_openai(msgs("not json")).ids.tolist()
    want = ref.render(msgs("not json"))
    assert got != want
    dec = enc.tokenizer.decode
    assert dec(got[got.index(ARGS) + 1:-1]) == "not json"
    assert dec(want[want.index(ARGS) + 1:-1]) == '"not json"'


def test_v7_refuses_arguments_that_do_not_read_back(encs: Any, refs: Any) -> None:
    """v7 writes the arguments inside its ``[TOOL_CALLS]`` JSON list, which is read back by
    scanning each value to the ``,`` after it (``scanOk``): arguments that end the value early
    (``a, "id": "x"`` would read back as a call with the arguments ``a`` and the id ``x``) are
    refused, in both modes; JSON arguments (what lvt's front end passes) render as
    mistral-common does and read back; v11 and v13 delimit arguments with control tokens and
    write them."""
    def msgs(args: str) -> list[dict[str, Any]]:
        call = {"id": "abcdefghi", "type": "function",
                "function": {"name": "f", "arguments": args}}
        return [{"role": "user", "content": "w"},
                {"role": "assistant", "content": "", "tool_calls": [call]}]

    for bad in ('a, "id": "x"', '{"a": 1}, {"b": 2}', '1]', '{"a": 1}}'):
        for stable in (False, True):
            with pytest.raises(ConversationError, match="would not read back from the v7"):
                encs["v7", stable].encode_openai(msgs(bad))
        for v in ("v11", "v13"):
            encs[v, False].encode_openai(msgs(bad))
    for good in ('{"a": [1, 2.5], "b": "x, \\"y\\"}"}', '"s,]}"', "[1, 2]", "3", "{}"):
        out = encs["v7", False].encode_openai(msgs(good))
        assert out.ids.tolist() == refs["v7"].render(msgs(good)), good
        back = encs["v7", False].parse(out.ids)
        calls = [b for m in back.messages for b in m.blocks if isinstance(b, ToolCall)]
        assert [(b.name, b.args, b.id) for b in calls] == [("f", good, "abcdefghi")]


def test_v7_refuses_only_what_does_not_read_back_not_non_json(encs: Any) -> None:
    """The README's claim, pinned: v7 refuses arguments with a ``,``, ``}`` or ``]`` outside
    strings and brackets or with a string or bracket left open, and nothing else: ``f(x=1)``
    and ``1 2`` are not JSON, yet they are accepted and written raw into the call list, then
    read back as given."""
    def msgs(args: str) -> list[dict[str, Any]]:
        call = {"id": "abcdefghi", "type": "function",
                "function": {"name": "f", "arguments": args}}
        return [{"role": "user", "content": "w"},
                {"role": "assistant", "content": "", "tool_calls": [call]}]

    enc = encs["v7", False]
    for raw in ("f(x=1)", "1 2", "not json"):
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)
        out = enc.encode_openai(msgs(raw))
        text = enc.tokenizer.decode(out.ids.tolist())
        assert f'"arguments": {raw}, "id": "abcdefghi"' in text
        back = enc.parse(out.ids)
        calls = [b for m in back.messages for b in m.blocks if isinstance(b, ToolCall)]
        assert [b.args for b in calls] == [raw]
    for bad in ("a, b", "x]", "}", '"abc', '{"a": 1', "[1"):
        with pytest.raises(ConversationError, match="would not read back from the v7"):
            enc.encode_openai(msgs(bad))


@pytest.mark.parametrize("version", VERSIONS)
def test_whitespace_content_and_empty_arguments_round_trip(encs: Any, refs: Any,
                                                           version: str) -> None:
    """Encode and parse share one rule, mistral-common's: assistant content of spaces only is
    rendered (as nothing: ``rstrip(" ")``) and ``""`` is refused, by both; the render of
    spaces reads back as content ``" "``, which renders the same ids. Empty arguments are
    written as ``{}``, as mistral-common writes them, and read back as ``"{}"``."""
    enc = encs[version, False]
    for content in (" ", "   "):
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": content}]
        out = enc.encode_openai(msgs)
        assert out.ids.tolist() == refs[version].render(msgs)
        back = enc.parse(out.ids)
        assert back.messages[1].blocks == (Plain(Text(" ")),)
        assert enc.encode(back) == out
    for content in ("", None):
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": content}]
        with pytest.raises(ConversationError, match="neither content nor tool calls"):
            enc.encode_openai(msgs)
        with pytest.raises(Exception, match="Invalid assistant message"):
            refs[version].render(msgs)
    for args in ("", "{}"):
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None,
                "tool_calls": [{"id": "abcdefghi", "type": "function",
                                "function": {"name": "f", "arguments": args}}]}]
        out = enc.encode_openai(msgs)
        assert out.ids.tolist() == refs[version].render(msgs)
        back = enc.parse(out.ids)
        assert [b.args for b in back.messages[1].blocks] == ["{}"]
        assert enc.encode(back) == out
