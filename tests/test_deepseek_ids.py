# ruff: noqa: RUF001  (DeepSeek's control tokens use full-width bars)
"""DeepSeek's reserved ids against the loaded zoo tokenizers.

The Lean entries (``r1Ids``, ``distillIds`` in ``Verified/Spec/DeepSeek.lean``) name ids by
number; the encoder finds them by name in the tokenizer. Here every one of those ids is looked
up in the tokenizer the zoo loads and must be an added token with the content DeepSeek's
template writes (the names below are the template's, written out by hand), and every id the
encoder reserves must be an added special token of that tokenizer: a renumbered or renamed
token fails here, not only in a parity run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lvt
from lvt import zoo

SPEC = Path(__file__).resolve().parents[1] / "Verified/Spec/DeepSeek.lean"

# `DsIds` field order: bos, eos, user, assistant, calls begin/end, call begin/end, outputs
# begin/end, output begin/end, sep, (think open, think close).
FIELD_NAMES = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>",
               "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
               "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁outputs▁begin｜>",
               "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>",
               "<｜tool▁sep｜>", "<think>", "</think>"]


def lean_ids(name: str) -> tuple[list[int], list[int]]:
    """The fields (15 ids, think pair flattened) and the extra ids of a Lean `DsIds`."""
    text = SPEC.read_text(encoding="utf-8")
    m = re.search(r"def " + name + r" : DsIds :=\s*⟨([^⟩]*)⟩", text)
    assert m, f"{name} not found in {SPEC}"
    body = m.group(1)
    extra = re.search(r"\[([\d,\s]*)\]\s*$", body)
    assert extra, body
    fields = [int(x) for x in re.findall(r"\d+", body[:extra.start()])]
    return fields, [int(x) for x in re.findall(r"\d+", extra.group(1))]


@pytest.fixture(scope="module")
def r1_tok():
    return zoo.load_tokenizer("deepseek-r1")


@pytest.fixture(scope="module")
def distill_tok():
    return zoo.load_tokenizer("deepseek-r1-distill-qwen")


def test_r1_lean_ids_are_the_tokenizers_added_tokens(r1_tok) -> None:
    fields, extra = lean_ids("r1Ids")
    added = r1_tok.get_added_tokens_decoder()
    assert len(fields) == len(FIELD_NAMES)
    for tid, want in zip(fields, FIELD_NAMES, strict=True):
        assert tid in added, f"id {tid} ({want}) is not an added token"
        assert added[tid].content == want, (tid, added[tid].content, want)
        assert r1_tok.token_to_id(want) == tid
    assert [added[t].content for t in extra] == ["<｜▁pad▁｜>", "<|EOT|>"]
    assert all(added[t].special for t in extra)


def test_r1_encoder_reserves_only_added_special_tokens(r1_tok) -> None:
    enc = lvt.ChatEncoder.from_tokenizer(r1_tok, format="deepseek-r1")
    fields, extra = lean_ids("r1Ids")
    reserved = list(enc.family.reserved)
    added = r1_tok.get_added_tokens_decoder()
    assert reserved[:len(fields)] == fields, "the format's controls are the Lean entry's"
    assert set(extra) <= set(reserved)
    for tid in reserved[len(fields):]:
        assert tid in added and added[tid].special, tid
        if 128000 <= tid <= 128797:
            assert added[tid].content == f"<｜place▁holder▁no▁{tid - 128000}｜>"
    # every special added token of the tokenizer is reserved: none can come from text
    assert {t for t, a in added.items() if a.special} <= set(reserved)


def test_distill_lean_ids_against_its_tokenizer(distill_tok) -> None:
    fields, extra = lean_ids("distillIds")
    added = distill_tok.get_added_tokens_decoder()
    size = distill_tok.get_vocab_size(with_added_tokens=True)
    for tid, want in zip(fields, FIELD_NAMES, strict=True):
        if "tool" in want:
            # no tool tokens in this vocabulary: ids past it, which no text encodes to
            assert tid >= size and distill_tok.id_to_token(tid) is None, (tid, want)
        else:
            assert added[tid].content == want, (tid, added[tid].content, want)
    assert [added[t].content for t in extra] == [
        "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
        "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
    enc = lvt.ChatEncoder.from_tokenizer(distill_tok, format="deepseek-r1-distill-qwen")
    assert list(enc.family.reserved)[:len(fields)] == fields
