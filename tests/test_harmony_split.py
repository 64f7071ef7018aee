"""``SplitsCallHeader`` checked at run time by the gpt-oss encoder.

``extension_ids_call`` (``Verified/Thm/HarmonyPromptIds.lean``) proves the generation prompt's
ids a prefix of the render of a call turn for a codec that encodes ``assistant to=functions.
NAME`` as ``assistant`` followed by `` to=functions.NAME``. The encoder checks that for every
tool name it renders a call header for, once per name, and refuses a name whose header merges
with :class:`lvt.CallHeaderSplitError`. The real o200k_harmony tokenizer splits; the same
tokenizer with an added token across the seam merges.
"""

from __future__ import annotations

from typing import Any

import pytest
from tokenizers import AddedToken, Tokenizer

import lvt
from lvt import zoo
from lvt.families import harmony

DATE = "2026-12-01"


def call(name: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Go."},
            {"role": "assistant", "tool_calls": [
                {"type": "function", "function": {"name": name, "arguments": "{\"x\": 1}"}}]},
            {"role": "tool", "content": "done"}]


@pytest.fixture(scope="module")
def o200k() -> Tokenizer:
    return zoo.load_tokenizer("gpt-oss")


def test_the_real_tokenizer_splits_and_each_name_is_checked_once(
        o200k: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = harmony.call_header_split

    def counting(codec: Any, name: str) -> str | None:
        seen.append(name)
        return real(codec, name)

    monkeypatch.setattr(harmony, "call_header_split", counting)
    enc = lvt.ChatEncoder.from_tokenizer(o200k, format="gpt-oss", current_date=DATE)
    out = enc.encode_openai(call("get_current_weather"))
    assert len(out.ids) > 0
    enc.encode_openai(call("get_current_weather"))
    enc.encode_batch([enc.from_openai(call("get_current_weather")),
                      enc.from_openai(call("lookup-1"))])
    assert seen == ["get_current_weather", "lookup-1"]
    # what the check compares, on the real tokenizer, by hand
    codec = enc.codec
    head = codec.encode("assistant")
    assert codec.encode("assistant to=functions.lookup-1") == \
        head + codec.encode(" to=functions.lookup-1")
    # a conversation without a call renders no call header: nothing checked
    enc.encode_openai([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    assert seen == ["get_current_weather", "lookup-1"]


def test_a_codec_that_merges_is_refused_naming_the_tool(o200k: Tokenizer) -> None:
    merging = Tokenizer.from_str(o200k.to_str())
    merging.add_tokens([AddedToken("t to=functions.merge_me", normalized=False, special=False)])
    enc = lvt.ChatEncoder.from_tokenizer(merging, format="gpt-oss", current_date=DATE)
    assert enc.codec.encode("assistant to=functions.merge_me") != (
        enc.codec.encode("assistant") + enc.codec.encode(" to=functions.merge_me"))
    # another name still splits with this tokenizer
    assert len(enc.encode_openai(call("get_current_weather")).ids) > 0
    with pytest.raises(lvt.CallHeaderSplitError) as e:
        enc.encode_openai(call("merge_me"))
    assert e.value.tool_name == "merge_me"
    assert e.value.message_index == 1
    assert "merge_me" in str(e.value) and "merges across the seam" in str(e.value)
    assert isinstance(e.value, lvt.CodecLawError)
    with pytest.raises(lvt.CallHeaderSplitError) as e2:
        enc.encode_batch([enc.from_openai(call("get_current_weather")),
                          enc.from_openai(call("merge_me"))])
    assert e2.value.conversation_index == 1
    # a refused name is refused again (only passing names are cached)
    with pytest.raises(lvt.CallHeaderSplitError):
        enc.encode_openai(call("merge_me"))
