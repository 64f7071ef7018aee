"""The tokenizer codec (lvt.runtime.codec): special tokens off, laws enforced, cache."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from lvt.errors import CodecLawError, ConversationError, LvtError
from lvt.runtime.codec import TokenizerCodec, bytes_to_unicode, text_only_tokenizer


def test_reserved_and_special_tokens_are_not_parsed(toy_tok) -> None:
    for s in ["<|im_start|>", "<think>", "<tool_call>", "<|eot_id|>"]:
        assert toy_tok.encode(s, add_special_tokens=False).ids == [toy_tok.token_to_id(s)]
    reserved = [toy_tok.token_to_id(s) for s in ["<think>"]]
    c = TokenizerCodec(toy_tok, reserved, strict=True)
    # <think> is reserved by the format, <|im_start|> and <|eot_id|> are special added tokens
    assert toy_tok.token_to_id("<|im_start|>") in c.reserved
    ids = c.encode("a<|im_start|>b<think><|eot_id|>")
    assert all(t < 256 + 7 for t in ids)
    assert c.decode_bytes(ids) == b"a<|im_start|>b<think><|eot_id|>"


def test_other_added_tokens_stay_part_of_text(toy_tok) -> None:
    """An added token that is neither special nor reserved (Gemma's <table>, Qwen's
    <|fim_prefix|>) is matched in text, as the template's tokenizer matches it; the ids of
    the other added tokens are kept."""
    table = toy_tok.token_to_id("<table>")
    think = toy_tok.token_to_id("<think>")
    c = TokenizerCodec(toy_tok, [think], strict=True)
    assert c.encode("x<table>y") == toy_tok.encode("x<table>y", add_special_tokens=False).ids
    assert table in c.encode("x<table>y")
    # <tool_call> is not reserved here: it stays a token of text too
    call = toy_tok.token_to_id("<tool_call>")
    assert c.encode("<tool_call>") == [call]


def test_text_only_copy_leaves_the_original_alone(toy_tok) -> None:
    before = toy_tok.encode("<think>", add_special_tokens=False).ids
    t = text_only_tokenizer(toy_tok)
    assert t.encode("<think>", add_special_tokens=False).ids != before
    assert toy_tok.encode("<think>", add_special_tokens=False).ids == before
    assert not toy_tok.encode_special_tokens


def test_reserved_scan_names_text_token_position(toy_tok) -> None:
    a = toy_tok.token_to_id(bytes_to_unicode()[ord("a")])
    c = TokenizerCodec(toy_tok, [a])
    with pytest.raises(CodecLawError) as ei:
        c.encode("xya")
    e = ei.value
    assert (e.text, e.token_id, e.position) == ("xya", a, 2)
    assert "reserved" in str(e)
    # the offending text is not cached
    assert c.cache_info()["size"] == 0


def test_strict_round_trip_check() -> None:
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    assert TokenizerCodec(tok, [], strict=False).encode("AB") == [ord("a"), ord("b")]
    with pytest.raises(CodecLawError) as ei:
        TokenizerCodec(tok, [], strict=True).encode("xAB")
    assert ei.value.position == 1 and ei.value.text == "xAB"


def test_cache_is_bounded_lru_and_batches_misses(toy_tok) -> None:
    c = TokenizerCodec(toy_tok, [], cache_size=2)
    assert c.encode_many(["a", "b", "a"]) == [[97], [98], [97]]
    assert c.cache_info() == {"size": 2, "max": 2, "hits": 0, "misses": 2}
    c.encode("a")  # hit: "a" becomes most recent
    c.encode("c")  # evicts "b"
    assert list(c._cache) == ["a", "c"]
    assert c.encode_tuples(["c"])[0] is c.encode_tuples(["c"])[0]
    c.clear_cache()
    assert c.cache_info()["size"] == 0


def test_bad_text(toy_tok) -> None:
    c = TokenizerCodec(toy_tok, [])
    with pytest.raises(ConversationError, match="surrogate"):
        c.encode("a\ud800")
    with pytest.raises(ConversationError, match="str"):
        c.encode_many([3])  # type: ignore[list-item]
    assert c.encode("") == []


def test_vocabulary_checks(toy_tok) -> None:
    c = TokenizerCodec(toy_tok, [])
    n = c.vocab_size
    assert c.first_invalid_id([0, 1, n - 1]) is None
    assert c.first_invalid_id([0, n]) == 1
    assert c.first_invalid_id([-1]) == 0
    with pytest.raises(LvtError):
        c.decode_bytes([n + 5])
    assert len(c.digest()) == 64


def test_transformers_fast_tokenizer_is_accepted(toy_tok) -> None:
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=toy_tok)
    c = TokenizerCodec(fast, [])
    assert c.encode("the") == TokenizerCodec(toy_tok, []).encode("the")
    with pytest.raises(LvtError):
        TokenizerCodec(object(), [])
