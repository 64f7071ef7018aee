"""The two renderers ``lvt check`` compares.

* :class:`JinjaRenderer`: the model's own pipeline, ``transformers``'
  ``apply_chat_template(tokenize=True)`` with the official template and the real tokenizer
  (a copy inside ``transformers``, so nothing set on the lvt side leaks into it). Every
  render runs under a time and an output limit (:mod:`lvt.compare.bounds`): a template is
  code, and a user-given one may loop for hours or write gigabytes.
* :class:`EncoderPool`: lvt's :class:`~lvt.encoder.ChatEncoder` per (format, options) for one
  tokenizer. Encoders whose control ids agree share one law-checked codec (building a codec
  copies the vocabulary, seconds for a 150k vocabulary), so checking a file whose lines set
  different template options costs one codec per tokenizer.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from lvt.compare.bounds import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    TemplateLimits,
    bounded,
    install_counter,
)

__all__ = ["EncoderPool", "JinjaRenderer", "build_jinja"]

_JINJA_CACHE: dict[tuple[Any, ...], JinjaRenderer] = {}


def _plain(x: Any) -> Any:
    """A deep copy of JSON-like data (templates must not see or change the caller's)."""
    return json.loads(json.dumps(x, ensure_ascii=False))


class JinjaRenderer:
    """``transformers.apply_chat_template(tokenize=True)`` with one template and tokenizer.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (``transformers`` copies it).
        template: the Jinja chat template.
        bos_token, eos_token: strings given to the template (ignored when not in the vocab).
        template_kwargs: extra template variables for every render.
        tokenizer_file: load the tokenizer from this ``tokenizer.json`` instead of copying
            ``tokenizer`` (faster for large vocabularies).
        template_timeout: seconds one render may take (default 10; ``None``: no limit).
        template_max_output: characters one render may write (default 16 Mi; ``None``: no
            limit). A render past either limit raises
            :class:`~lvt.compare.bounds.TemplateLimitError`.

    Raises:
        ArgumentError: a limit out of range.
    """

    def __init__(
        self,
        tokenizer: Any,
        template: str,
        *,
        bos_token: str | None = None,
        eos_token: str | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
        tokenizer_file: str | os.PathLike[str] | None = None,
        template_timeout: float | None = DEFAULT_TIMEOUT,
        template_max_output: int | None = DEFAULT_MAX_OUTPUT,
    ) -> None:
        from transformers import PreTrainedTokenizerFast

        #: The limits every render of this template runs under.
        self.limits = TemplateLimits(template_timeout, template_max_output)

        base = getattr(tokenizer, "backend_tokenizer", tokenizer)
        kw: dict[str, Any] = {}
        if bos_token is not None and base.token_to_id(bos_token) is not None:
            kw["bos_token"] = bos_token
        if eos_token is not None and base.token_to_id(eos_token) is not None:
            kw["eos_token"] = eos_token
        if tokenizer_file is not None:
            kw["tokenizer_file"] = str(tokenizer_file)
        else:
            kw["tokenizer_object"] = base
        self.hf = PreTrainedTokenizerFast(chat_template=template, **kw)
        backend = self.hf.backend_tokenizer
        if hasattr(backend, "encode_special_tokens"):
            backend.encode_special_tokens = False  # the template's text is parsed for them
        self.template = template
        self.template_kwargs = dict(template_kwargs or {})
        self.bos_id: int | None = backend.token_to_id(bos_token) if bos_token else None
        added = backend.get_added_tokens_decoder()
        #: Added tokens: id -> content (what text spelling them becomes in the template).
        self.added: dict[int, str] = {int(i): t.content for i, t in added.items()}
        #: Ids of the added tokens flagged special.
        self.special_ids: frozenset[int] = frozenset(
            int(i) for i, t in added.items() if t.special
        )

    @property
    def tokenizer(self) -> Any:
        """The ``tokenizers.Tokenizer`` the template's text is tokenized with."""
        return self.hf.backend_tokenizer

    def _apply(self, messages: Sequence[Mapping[str, Any]], tools: Any,
               add_generation_prompt: bool, options: Mapping[str, Any] | None,
               tokenize: bool) -> Any:
        def run() -> Any:
            return self.hf.apply_chat_template(
                _plain(list(messages)),
                tools=_plain(list(tools)) if tools else None,
                add_generation_prompt=add_generation_prompt,
                tokenize=tokenize,
                return_dict=False,
                **{**self.template_kwargs, **dict(options or {})},
            )

        if self.limits.unbounded:
            return run()
        install_counter(self.template)  # cheap when done: transformers caches the compile
        return bounded(run, self.limits)

    def render_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        options: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """Token ids of the template's render; ``options`` are template variables of this
        render (exceptions of the template propagate; a limit reached raises
        :class:`~lvt.compare.bounds.TemplateLimitError`)."""
        out = self._apply(messages, tools, add_generation_prompt, options, True)
        if isinstance(out, Mapping):
            out = out["input_ids"]
        return [int(t) for t in out]

    def render_text(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """The template's rendered string."""
        return str(self._apply(messages, tools, add_generation_prompt, options, False))

    def encode_texts(self, texts: Sequence[str]) -> list[list[int]]:
        """How the template's pipeline tokenizes each text (added tokens spelled in it
        become their ids, no BOS/EOS added)."""
        if not texts:
            return []
        out = self.hf(list(texts), add_special_tokens=False)["input_ids"]
        return [[int(t) for t in ids] for ids in out]

    def string_pipeline_adds_bos(self) -> bool:
        """Whether tokenizing a rendered string the default way (``add_special_tokens=True``,
        as a server's completion endpoint does) prepends a BOS of its own."""
        if self.bos_id is None:
            return False
        ids = self.tokenizer.encode("x", add_special_tokens=True).ids
        return bool(ids) and ids[0] == self.bos_id

    def decode(self, ids: Sequence[int]) -> str:
        """Decode with special tokens kept."""
        return str(self.tokenizer.decode([int(t) for t in ids], skip_special_tokens=False))

    def token_str(self, i: int | None) -> str | None:
        """The vocabulary string of one id."""
        return None if i is None else self.tokenizer.id_to_token(int(i))


def build_jinja(
    tokenizer: Any,
    template: str,
    *,
    bos_token: str | None = None,
    eos_token: str | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
    tokenizer_file: str | None = None,
    template_timeout: float | None = DEFAULT_TIMEOUT,
    template_max_output: int | None = DEFAULT_MAX_OUTPUT,
) -> JinjaRenderer:
    """A :class:`JinjaRenderer`, reused within a process for the same arguments."""
    key = (
        tokenizer_file or id(tokenizer),
        template,
        bos_token,
        eos_token,
        json.dumps(dict(template_kwargs or {}), sort_keys=True, default=str),
        template_timeout,
        template_max_output,
    )
    hit = _JINJA_CACHE.get(key)
    if hit is None:
        hit = JinjaRenderer(tokenizer, template, bos_token=bos_token, eos_token=eos_token,
                            template_kwargs=template_kwargs, tokenizer_file=tokenizer_file,
                            template_timeout=template_timeout,
                            template_max_output=template_max_output)
        if len(_JINJA_CACHE) >= 8:
            _JINJA_CACHE.pop(next(iter(_JINJA_CACHE)))
        _JINJA_CACHE[key] = hit
    return hit


def _options_key(options: Mapping[str, Any]) -> str:
    return json.dumps(dict(options), sort_keys=True, default=repr)


#: The attributes of ``ChatEncoder`` that :meth:`EncoderPool.get` sets on a copy that shares
#: its codec (everything else of an encoder is the codec and its caches).
_REBIND = ("_family", "_format_name", "_spec", "_options", "_reserved", "_fingerprint",
           "_split_names")
#: The attributes a copy shares (any other attribute: the pool builds a fresh encoder): the
#: codec, the backend, the memo of normalised tool lists (it depends on the codec alone), and
#: where the tokenizer came from with the backend asked for (the pickle recipe's ``_origin``).
_SHARED = ("_tokenizer", "_codec", "_native", "_tools_memo", "_memo_lock", "_origin")


class EncoderPool:
    """lvt encoders for one tokenizer, per format and template options.

    Encoders built here are the ones :meth:`lvt.encoder.ChatEncoder.from_tokenizer` builds
    (same family, options and fingerprint); those whose control ids agree share one codec.
    """

    def __init__(self, tokenizer: Any, *, strict: bool = True) -> None:
        self.tokenizer = tokenizer
        self.strict = strict
        self._encoders: dict[tuple[str, str], Any] = {}
        self._by_reserved: dict[tuple[int, ...], Any] = {}

    def get(self, fmt: str, options: Mapping[str, Any] | None = None) -> Any:
        """The encoder of format ``fmt`` with template ``options``.

        Raises:
            FormatError: unknown format or option, or a control token missing.
        """
        from lvt import formats
        from lvt.encoder import ChatEncoder
        from lvt.runtime.codec import as_tokenizer

        spec = formats.get_spec(fmt)
        opts = dict(options or {})
        key = (spec.name, _options_key(opts))
        hit = self._encoders.get(key)
        if hit is not None:
            return hit
        family = spec.load(as_tokenizer(self.tokenizer), **opts)
        reserved = tuple(family.reserved)
        base = self._by_reserved.get(reserved)
        if base is not None and set(vars(base)) == {*_REBIND, *_SHARED}:
            enc = copy.copy(base)  # shares the codec; the rebound fields are per format
            enc._family = family
            enc._format_name = spec.name
            enc._spec = spec
            enc._options = spec.resolve(opts)
            enc._reserved = frozenset(reserved)
            enc._fingerprint = None
            enc._split_names = set()  # the tool names checked for this format's call headers
        else:
            enc = ChatEncoder(self.tokenizer, family, format_name=spec.name, format_spec=spec,
                              options=opts, strict=self.strict)
            self._by_reserved[reserved] = enc
        self._encoders[key] = enc
        return enc
