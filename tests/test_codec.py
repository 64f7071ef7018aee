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


def test_decode_law_is_checked_by_default() -> None:
    """Strict is the default: a normalizer that rewrites text (here: lowercasing) is caught on
    the first text it changes, with the normaliser named; nothing is cached for it."""
    b2u = bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={b2u[b]: b for b in range(256)}, merges=[]))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    c = TokenizerCodec(tok, [])
    assert c.strict and c.encode("ab") == [97, 98]
    with pytest.raises(CodecLawError) as ei:
        c.encode("aB")
    assert ei.value.position == 1 and "Lowercase" in ei.value.reason
    assert "aB" not in c._cache and c.cache_info()["size"] == 1


def _nfc_tokenizer() -> Tokenizer:
    b2u = bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={b2u[b]: b for b in range(256)}, merges=[]))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def test_unicode_form_moves_to_the_front_end() -> None:
    """A normalizer that is a Unicode normal form and nothing else is applied by the front end
    (``normalize``) and left out of the codec: text that is not NFC across a boundary (a JSON
    escape then a combining mark) encodes as written and decodes back; NFC text encodes as
    the tokenizer encodes it."""
    tok = _nfc_tokenizer()
    c = TokenizerCodec(tok, [])
    assert c.unicode_form == "NFC" and c.normalization_text() == "NFC"
    assert c.normalize("e\u0301") == "\u00e9" and c.normalize("\u212b") == "\u00c5"
    s = '"\\n\u0301"'
    assert c.decode_bytes(c.encode(s)) == s.encode()
    assert tok.encode(s).ids != c.encode(s)  # the tokenizer would compose n + U+0301
    for t in ["caf\u00e9", "\U0001f642 \u4e2d", "\u00e9\u0301"]:
        assert c.encode(t) == tok.encode(t, add_special_tokens=False).ids


def test_normalizer_with_more_than_a_form_stays_in_the_codec() -> None:
    tok = _nfc_tokenizer()
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    c = TokenizerCodec(tok, [])
    assert c.unicode_form == "NFC"
    with pytest.raises(CodecLawError, match="NFC then Lowercase"):
        c.encode("A")


def test_sentencepiece_decoder_rewrite_is_the_front_ends() -> None:
    """A SentencePiece decoder (``Replace``, ``ByteFallback``, ``Fuse``) rewrites U+2581 as a
    space: the front end applies the same rewrite, and the codec refuses the marker itself."""
    vocab = {"<unk>": 0, "\u2581": 1, "a": 2, "b": 3, **{f"<0x{b:02X}>": 4 + b for b in range(256)}}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    c = TokenizerCodec(tok, [])
    assert c.rewrites == (("\u2581", " "),)
    assert c.normalize("a\u2581b") == "a b" and c.normalization_text() == "'\u2581' -> ' '"
    assert c.encode("a b") == [2, 1, 3] and c.decode_bytes([2, 1, 3]) == b"a b"
    with pytest.raises(CodecLawError, match="Replace"):
        c.encode("a\u2581b")
    assert TokenizerCodec(tok, [], strict=False).encode("a\u2581b") == [2, 1, 3]


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


def test_codecs_of_one_tokenizer_share_the_text_copy(toy_tok) -> None:
    """Codecs of one tokenizer with the same reserved ids (encoders with other options) share
    one text-only copy; other reserved ids get their own (they encode differently); the copy
    is freed with the last codec that uses it."""
    import gc

    from lvt.runtime import codec as codec_mod

    think = toy_tok.token_to_id("<think>")
    a, b = TokenizerCodec(toy_tok, [think]), TokenizerCodec(toy_tok, [think])
    assert a._text is b._text
    # a tokenizer with the same JSON (another object) shares it too; other reserved ids do not
    same = Tokenizer.from_str(toy_tok.to_str())
    assert TokenizerCodec(same, [think])._text is a._text
    c = TokenizerCodec(toy_tok, [])
    assert c._text is not a._text
    assert c.encode("<think>") == [think] and a.encode("<think>") != [think]
    key = (a._digest, frozenset([think]))
    assert key in codec_mod._TEXT_COPIES
    del a, b
    gc.collect()
    assert key not in codec_mod._TEXT_COPIES
