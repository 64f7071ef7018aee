"""The zoo entry ``mistral-v3`` (:mod:`lvt.zoo.spm`: Mistral 7B v0.3's SentencePiece v3 file
from ``mistral-common``, converted without its dummy prefix) against ``mistral-common``'s own
SentencePiece tokenizer: ``encode(" " + s)`` here is its ``encode(s)`` on more than 2,000
strings (every parity-corpus string and seeded random ones over whitespace, newlines, carriage
returns, tabs, accents, CJK, emoji, control-token text and ``"▁"``); control pieces at its ids,
never from text; the file pinned by hash. ``mistral-common`` and ``sentencepiece`` are dev
dependencies: missing, these tests fail."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.errors import LvtError
from lvt.runtime.codec import TokenizerCodec
from lvt.zoo import spm as zoo_spm
from parity.corpus import FAMILIES, adversarial, case_strings, conversations


def _file() -> Path:
    import mistral_common

    return Path(mistral_common.__file__).parent / "data" / zoo_spm.MISTRAL_V3_FILE


@pytest.fixture(scope="module")
def ref() -> Any:
    """mistral-common's SentencePiece tokenizer of the v3 file."""
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_file(str(_file())).instruct_tokenizer.tokenizer


def _strings() -> list[str]:
    out: list[str] = []
    for fam in FAMILIES:
        for case in [*conversations(fam), *adversarial(fam)]:
            out += [s for s in case_strings(case) if isinstance(s, str)]
    rng = random.Random(20261206)
    alpha = list("abcXYZ019 .,;:!?'\"{}[]()<>/\\-_\n\t\r  éüßñ中文日本語한국어😀🎉")
    alpha += ["\u0301", "\u00a0", "\u200b", "\u2581"]
    words = ["[INST]", "</s>", "<s>", "[TOOL_CALLS]", "[REFERENCE_DOC_3]", "[control_9]",
             "<0x0A>", "<unk>", " hello", "  ", "\n\n"]
    for _ in range(1500):
        parts = [rng.choice(words) if rng.random() < 0.1 else rng.choice(alpha)
                 for _ in range(rng.randint(0, 30))]
        out.append("".join(parts))
    return list(dict.fromkeys(out))


def test_ids_equal_sentencepiece(ref: Any) -> None:
    """``encode(" " + s)`` (the v3 layout's dummy prefix; nothing for ``""``) through the
    format's codec is mistral-common's ``encode(s, bos=False, eos=False)``, and decodes back
    to the text after the front-end normalisation ``"▁" -> " "``."""
    codec = lvt.ChatEncoder.from_tokenizer("mistral-v3", "mistral-7b-v0.3").codec
    assert isinstance(codec, TokenizerCodec)
    # <unk> and the control pieces; the ids past the vocabulary that v3 never writes
    assert codec.reserved == frozenset(range(751)) | {32768, 32769}
    strings = _strings()
    assert len(strings) >= 2000, len(strings)
    bad = []
    for s in strings:
        x = codec.normalize(" " + s if s else "")
        if codec.encode(x) != ref.encode(s, bos=False, eos=False):
            bad.append(s)
        assert codec.decode_bytes(codec.encode(x)) == x.encode("utf-8")
    assert not bad, bad[:5]


def test_control_pieces_at_their_ids(ref: Any) -> None:
    """``<s>``, ``</s>``, ``[INST]`` … at mistral-common's ids, special; the user-defined
    ``[REFERENCE_DOC_N]`` pieces are added tokens that text may hold, as SentencePiece."""
    tok = zoo.load_tokenizer("mistral-v3")
    assert tok.get_vocab_size() == 32768 == ref.n_words
    for name in ("<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
                 "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"):
        assert tok.token_to_id(name) == ref.get_special_token(name), name
    dec = tok.get_added_tokens_decoder()
    assert all(dec[i].special for i in range(751))
    assert not any(dec[i].special for i in range(751, 771))
    assert ref.encode("[REFERENCE_DOC_0]", bos=False, eos=False)[1] == 770


def test_pinned_file(tmp_path: Path) -> None:
    """Another file (one byte changed) is refused, naming the hash."""
    bad = tmp_path / zoo_spm.MISTRAL_V3_FILE
    raw = bytearray(_file().read_bytes())
    raw[-1] ^= 1
    bad.write_bytes(bytes(raw))
    with pytest.raises(LvtError, match="sha256"):
        zoo_spm.build_mistral_v3(bad)
