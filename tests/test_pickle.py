"""``ChatEncoder`` pickles as its recipe (:mod:`lvt.runtime.recipe`) and unpickles to an encoder
with the same renders (ids, loss mask, owner) and fingerprint, for every way of building one:
a zoo name, a ``tokenizer.json`` path or directory, a ``tokenizers.Tokenizer`` object,
``ChatEncoder.from_hf`` and a direct ``ChatEncoder(tokenizer, family)``; and in a spawn-context
process pool, which pickles it, the results are the serial ones."""

from __future__ import annotations

import json
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import lvt
from lvt import zoo
from lvt.runtime import recipe
from lvt.runtime.recipe import EncoderPickleError, EncoderUnpickleError, TokenizerSource

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}}}}}]

#: Conversations covering text, a system message, a tool call and its result, a generation prompt.
CONVS: list[tuple[list[dict[str, Any]], Any, bool]] = [
    ([{"role": "user", "content": "Hello there, how are you?"}], None, True),
    ([{"role": "system", "content": "Be terse."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "",
       "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "18°C"},
      {"role": "assistant", "content": "It is 18°C in Paris — nice."}], TOOLS, False),
]


def _renders(enc: Any) -> list[tuple[list[int], list[int], list[int]]]:
    out = []
    for msgs, tools, agp in CONVS:
        e = enc.encode_openai(msgs, tools, agp)
        out.append((e.ids.tolist(), e.mask.tolist(), e.owner.tolist()))
    return out


def _fresh_roundtrip(enc: Any) -> Any:
    """Pickle and unpickle, the process's cache of rebuilt encoders emptied first (so the
    encoder is really rebuilt from its recipe)."""
    data = pickle.dumps(enc)
    recipe._REBUILT.clear()
    back = pickle.loads(data)
    assert back is not enc and type(back) is type(enc)
    return back


def _assert_same(a: Any, b: Any) -> None:
    assert b.fingerprint() == a.fingerprint()
    assert b.format_name == a.format_name
    assert b.codec.strict == a.codec.strict and b.codec.cache_size == a.codec.cache_size
    assert _renders(b) == _renders(a)


@pytest.fixture(scope="module")
def toy_json(tmp_path_factory: pytest.TempPathFactory, toy_tok: Any) -> Path:
    d = tmp_path_factory.mktemp("toy")
    toy_tok.save(str(d / "tokenizer.json"))
    return d / "tokenizer.json"


def test_zoo_name_pickles_as_its_name() -> None:
    enc = lvt.ChatEncoder.from_tokenizer("qwen3", enable_thinking=False, cache_size=100)
    data = pickle.dumps(enc)
    assert len(data) < 2000  # the name, not the 7 MB vocabulary
    r = recipe.recipe_of(enc)
    assert r.source == TokenizerSource("zoo", "qwen3") and r.format == "qwen3"
    assert r.options == {"enable_thinking": False}
    back = _fresh_roundtrip(enc)
    _assert_same(enc, back)
    assert back.codec.cache_size == 100
    # pickled again, the rebuilt encoder keeps its recipe (no tokenizer serialisation)
    assert len(pickle.dumps(back)) == len(data)


def test_path_and_directory(toy_json: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(toy_json.parent)
    for arg in ("tokenizer.json", toy_json.parent):  # a relative path is made absolute
        enc = lvt.ChatEncoder.from_tokenizer(arg, "qwen2.5", strict=True)
        src = recipe.recipe_of(enc).source
        assert src.kind == "path" and Path(src.value).is_absolute()
        assert Path(src.value).resolve() in (toy_json.resolve(), toy_json.parent.resolve())
        _assert_same(enc, _fresh_roundtrip(enc))


def test_tokenizer_object_travels_as_json(toy_tok: Any) -> None:
    enc = lvt.ChatEncoder.from_tokenizer(toy_tok, "llama3.1", date_string="01 Jan 2030")
    src = recipe.recipe_of(enc).source
    assert src.kind == "json" and json.loads(src.value)["model"]["type"] == "BPE"
    back = _fresh_roundtrip(enc)
    _assert_same(enc, back)
    assert "01 Jan 2030" in back.tokenizer.decode(_renders(back)[0][0])


def test_a_date_left_to_today_is_pickled_resolved(toy_tok: Any) -> None:
    """``llama3.2``'s ``date_string=""`` means today: the recipe carries the date the
    encoder renders, so an encoder unpickled on another day renders the same ids."""
    enc = lvt.ChatEncoder.from_tokenizer(toy_tok, "llama3.2")
    r = recipe.recipe_of(enc)
    assert r.options["date_string"] != "" and r.options == enc._options
    _assert_same(enc, _fresh_roundtrip(enc))


def test_from_hf() -> None:
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(zoo.tokenizer_dir("qwen3")))
    enc = lvt.ChatEncoder.from_hf(hf, enable_thinking=False)
    assert enc.format_name == "qwen3"
    r = recipe.recipe_of(enc)
    assert r.source.kind == "json" and r.options == {"enable_thinking": False}
    _assert_same(enc, _fresh_roundtrip(enc))


def test_direct_construction_with_a_family_object(toy_tok: Any) -> None:
    fam = lvt.load_format("qwen2.5", toy_tok)
    enc = lvt.ChatEncoder(toy_tok, fam, format_name="my-qwen")
    assert recipe.recipe_of(enc).family is not None
    back = _fresh_roundtrip(enc)
    _assert_same(enc, back)
    assert back.format_spec is None


class _Unpicklable:
    """A family wrapper holding a lock (which cannot be pickled)."""

    def __init__(self, inner: Any) -> None:
        import threading

        self.inner = inner
        self.lock = threading.Lock()
        self.reserved = inner.reserved

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_an_unpicklable_encoder_names_why(toy_tok: Any) -> None:
    enc = lvt.ChatEncoder(toy_tok, _Unpicklable(lvt.load_format("qwen2.5", toy_tok)),
                          format_name="odd", backend="reference")
    with pytest.raises(EncoderPickleError, match=r"_Unpicklable family object.*lock") as ei:
        pickle.dumps(enc)
    assert isinstance(ei.value, lvt.LvtError) and isinstance(ei.value, pickle.PicklingError)


def test_a_changed_tokenizer_file_is_refused(tmp_path: Path, toy_tok: Any) -> None:
    """The path is read again where the encoder is unpickled: a file changed since (here
    one more added token) gives another fingerprint, refused with the path named; a file
    gone is refused too."""
    from tokenizers import AddedToken, Tokenizer

    path = tmp_path / "tokenizer.json"
    toy_tok.save(str(path))
    data = pickle.dumps(lvt.ChatEncoder.from_tokenizer(str(path), "qwen2.5"))
    changed = Tokenizer.from_str(toy_tok.to_str())
    changed.add_tokens([AddedToken("<extra>", special=False, normalized=False)])
    changed.save(str(path))
    recipe._REBUILT.clear()
    with pytest.raises(EncoderUnpickleError, match="another fingerprint") as ei:
        pickle.loads(data)
    assert str(path) in str(ei.value) and isinstance(ei.value, pickle.UnpicklingError)
    path.unlink()
    with pytest.raises(EncoderUnpickleError, match="no such tokenizer file") as ei:
        pickle.loads(data)
    assert str(path) in str(ei.value)


def test_repeated_unpickling_rebuilds_once(toy_tok: Any) -> None:
    enc = lvt.ChatEncoder.from_tokenizer(toy_tok, "qwen2.5")
    data = pickle.dumps(enc)
    recipe._REBUILT.clear()
    a, b = pickle.loads(data), pickle.loads(data)
    assert a is b and a is not enc
    assert a.codec.strict  # the default: the decode law checked
    other = pickle.loads(pickle.dumps(lvt.ChatEncoder.from_tokenizer(toy_tok, "qwen2.5",
                                                                     strict=False)))
    assert other is not a and not other.codec.strict  # strict is part of what is rebuilt


def test_spawn_pool_gives_the_serial_results() -> None:
    """Spawned workers (fresh interpreters, nothing inherited) receive the encoder pickled
    with every task (a bound method pickles its encoder) and give the results of this
    process."""
    enc = lvt.ChatEncoder.from_tokenizer("llama3.1", date_string="05 May 2026")
    serial = [enc.encode_openai(*c) for c in CONVS]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as ex:
        futs = [ex.submit(enc.encode_openai, *c) for c in CONVS]
        prints = [ex.submit(enc.fingerprint) for _ in range(2)]
        got = [f.result(timeout=300) for f in futs]
        assert [f.result(timeout=300) for f in prints] == [enc.fingerprint()] * 2
    assert got == serial and all(len(g) > 20 for g in got)


def test_copy_shares_and_deepcopy_rebuilds(toy_tok: Any) -> None:
    """``copy.copy`` stays a cheap copy sharing the codec (``lvt check``'s encoder pool
    relies on it); ``copy.deepcopy`` goes through the recipe (an independent encoder)."""
    import copy

    enc = lvt.ChatEncoder.from_tokenizer(toy_tok, "qwen2.5")
    shallow = copy.copy(enc)
    assert shallow is not enc and shallow.codec is enc.codec
    recipe._REBUILT.clear()
    deep = copy.deepcopy(enc)
    assert deep.codec is not enc.codec
    _assert_same(enc, deep)
