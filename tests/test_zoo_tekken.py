"""The zoo's tekken entries (``mistral``, ``mistral-nemo``, built by :mod:`lvt.zoo.tekken`)
against independent references: ``mistral-common``'s own tekkenizer (ids of every parity
corpus text, control tokens at its ids) and ``transformers``' ``convert_tekken_tokenizer`` of
the same files (the same ``tokenizer.json``). ``mistral-common`` and ``transformers`` are dev
dependencies: missing, these tests fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lvt import formats, zoo
from lvt.zoo import tekken as zoo_tekken
from parity.corpus import FAMILIES, adversarial, case_strings, conversations
from parity.templates import _refdata, default_cache_dir


def _mc_data() -> Path:
    import mistral_common

    return Path(mistral_common.__file__).parent / "data"


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    """zoo name -> the tekken file mistral-common reads for it."""
    return {"mistral": _refdata().tekken_v13_file(default_cache_dir()),
            "mistral-nemo": _mc_data() / "tekken_240718.json"}


@pytest.fixture(scope="module")
def tekkenizers(files: dict[str, Path]) -> dict[str, Any]:
    """zoo name -> mistral-common's tekkenizer of that file."""
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return {n: MistralTokenizer.from_file(str(p)).instruct_tokenizer.tokenizer
            for n, p in files.items()}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Every string of the parity corpus (every family's benign and adversarial cases: chat,
    code, tool calls and results, every family's control-token spellings) plus edge cases."""
    out: list[str] = []
    for fam in FAMILIES:
        for case in (*conversations(fam), *adversarial(fam)):
            out += case_strings(case)
    out += ["", " ", "\n\n", "  leading", "trailing  ", "a\r\nb", "日本語のテキスト", "🙂👍🏽",
            "x" * 300, "1234567890", "e\u0301", "\t\tcode()\n    return 0"]
    return list(dict.fromkeys(out))


NAMES = ("mistral", "mistral-nemo")


def test_corpus_texts_are_many(texts: list[str]) -> None:
    assert len(texts) > 500
    assert any("[INST]" in t for t in texts)  # the adversarial texts spell control tokens


@pytest.mark.parametrize("name", NAMES)
def test_ids_equal_mistral_commons_tekkenizer(name: str, tekkenizers: dict[str, Any],
                                              texts: list[str]) -> None:
    """Text encoding (control-token spellings as text, as mistral-common encodes them)."""
    tok = zoo.load_tokenizer(name)
    tok.encode_special_tokens = True  # added tokens spelled in the text stay text
    ref = tekkenizers[name]
    got = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    want = [ref.encode(t, bos=False, eos=False) for t in texts]
    bad = [(t[:60], g[:12], w[:12]) for t, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not bad, bad[:5]
    assert tok.decode_batch(got, skip_special_tokens=False) == texts


@pytest.mark.parametrize("name", NAMES)
def test_control_tokens_at_mistral_commons_ids(name: str, tekkenizers: dict[str, Any]) -> None:
    tok = zoo.load_tokenizer(name)
    ref = tekkenizers[name]
    assert ref.num_special_tokens == zoo_tekken.TEKKEN_N_SPECIAL
    assert tok.get_vocab_size(with_added_tokens=True) == ref.n_words == 131072
    added = {i: t for i, t in tok.get_added_tokens_decoder().items()}
    assert sorted(added) == list(range(1000))
    for i in range(1000):
        assert added[i].special and added[i].content == ref.id_to_piece(i), i
    for s in ("<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
              "[TOOL_CALLS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]"):
        assert tok.token_to_id(s) == ref.get_special_token(s), s
    if name == "mistral":  # the v7+ names
        for s, i in (("[ARGS]", 32), ("[CALL_ID]", 33), ("[THINK]", 34), ("[/THINK]", 35)):
            assert tok.token_to_id(s) == i == ref.get_special_token(s)
    else:
        assert tok.token_to_id("[ARGS]") is None
    assert (ref.bos_id, ref.eos_id) == (tok.token_to_id("<s>"), tok.token_to_id("</s>"))
    # a control token spelled in text is that id by default (as the HF templates' pipeline)
    assert tok.encode("[INST]hi", add_special_tokens=False).ids[0] == ref.get_special_token(
        "[INST]")


def test_same_tokenizer_json_as_transformers_converter(files: dict[str, Path]) -> None:
    """``mistral`` is transformers' conversion of the v7+ file, byte for byte as JSON, and
    ``mistral-nemo`` is the same tokenizer with Nemo's control names (the control ids
    themselves are checked against mistral-common above)."""
    from tokenizers import Tokenizer
    from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer

    fast = convert_tekken_tokenizer(str(files["mistral"]), chat_template="")
    ref = json.loads(fast.backend_tokenizer.to_str())
    got = json.loads(zoo.load_tokenizer("mistral").to_str())
    assert got == ref
    # the cached file is that tokenizer too
    cached = Tokenizer.from_file(str(zoo.tokenizer_dir("mistral") / "tokenizer.json"))
    assert json.loads(cached.to_str()) == ref
    nemo = json.loads(zoo.load_tokenizer("mistral-nemo").to_str())
    names = dict(enumerate(t for t in zoo_tekken.TEKKEN_V7_SPECIALS))
    for t in ref["added_tokens"]:  # Nemo's file leaves 20-999 unnamed
        if t["id"] >= 20:
            t["content"] = f"<SPECIAL_{t['id']}>"
            ref["model"]["vocab"][t["content"]] = ref["model"]["vocab"].pop(
                names.get(t["id"], t["content"]))
    assert nemo == ref


def test_entries_template_and_specials() -> None:
    assert zoo.template_name("mistral") == "mistralai-Mistral-Small-3.1-24B-Instruct-2503"
    assert zoo.template_name("mistral-nemo") == "mistralai-Mistral-Nemo-Instruct-2407"
    assert zoo.template_name("mistral") == formats.get_spec("mistral").template
    for n in NAMES:
        assert zoo.special_tokens(n) == {"bos_token": "<s>", "eos_token": "</s>"}
        assert "[INST]" in (zoo.chat_template(n) or "")
        cfg = json.loads((zoo.tokenizer_dir(n) / "tokenizer_config.json").read_text("utf-8"))
        assert cfg["bos_token"] == "<s>" and cfg["chat_template"] == zoo.chat_template(n)
    assert {"mistral", "mistral-nemo"} <= set(zoo.available())


def test_the_mistral_format_builds_from_both() -> None:
    """v7/v11/v13 from the v7+ names; Nemo's vocabulary: v7 only (no [ARGS])."""
    from lvt.errors import FormatError

    tok = zoo.load_tokenizer("mistral")
    for v in ("v7", "v11", "v13"):
        formats.load_format("mistral", tok, version=v)
    nemo = zoo.load_tokenizer("mistral-nemo")
    formats.load_format("mistral", nemo, version="v7")
    with pytest.raises(FormatError, match=r"\[ARGS\]"):
        formats.load_format("mistral", nemo, version="v13")


def test_missing_package_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *a: Any, **k: Any) -> Any:
        return None if name == "mistral_common" else real(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(zoo, "_MEMORY", {})
    with pytest.raises(zoo.ZooUnavailable, match="mistral-common"):
        zoo.load_tokenizer("mistral")
    assert "mistral" not in zoo.available()


def test_a_garbled_tekken_file_is_refused(tmp_path: Path) -> None:
    from lvt.errors import LvtError

    (tmp_path / "tekken_240911.json").write_text('{"config": {}, "vocab": []}', "utf-8")
    with pytest.raises(LvtError, match="not the tekken layout"):
        zoo_tekken.build_tekken(tmp_path, "mistral")


def test_other_ranks_are_refused(tmp_path: Path) -> None:
    """A tekken file of the right shape whose ranks are not the pinned ones is refused."""
    from lvt.errors import LvtError

    j = json.loads((_mc_data() / "tekken_240911.json").read_text("utf-8"))
    j["vocab"][500]["token_bytes"], j["vocab"][501]["token_bytes"] = (
        j["vocab"][501]["token_bytes"], j["vocab"][500]["token_bytes"])
    (tmp_path / "tekken_240911.json").write_text(json.dumps(j), "utf-8")
    with pytest.raises(LvtError, match="sha256"):
        zoo_tekken.build_tekken(tmp_path, "mistral")
