"""How a :class:`~lvt.encoder.ChatEncoder` pickles: as a small recipe, rebuilt on unpickling.

An encoder holds a Rust tokenizer, a lock-guarded cache and, on the native backend, a handle
on a shared library: none of it travels. What travels is how to build it again
(:class:`Recipe`): the registered format and its resolved options (a date left to "today"
already fixed), ``strict``, ``cache_size``, the backend asked for, the fingerprint, and where
the tokenizer comes from (:class:`TokenizerSource`):

- a zoo name (``ChatEncoder.from_tokenizer("qwen3")``): the name, a few bytes;
- a path (a ``tokenizer.json`` or a directory holding one): the absolute path, read again
  where the encoder is unpickled;
- a tokenizer object (``tokenizers.Tokenizer``, a transformers fast tokenizer,
  ``ChatEncoder.from_hf``, a direct ``ChatEncoder(tokenizer, family)``): its JSON
  serialisation (megabytes: about 7 MB for Qwen's), made once per encoder.

Unpickling rebuilds the encoder (:func:`rebuild`) and checks its fingerprint: a zoo package of
another version, a tokenizer file changed since, another lvt version give another fingerprint,
which is an :class:`EncoderUnpickleError` naming the source, never an encoder rendering other
ids. Rebuilt encoders are kept (weakly) by fingerprint, so a process that unpickles the same
encoder again (one task after another of a spawn pool) rebuilds it once.

An encoder of a custom family (``ChatEncoder(tokenizer, family)`` without a registered
``format_spec``) travels with its family object when that pickles; when it does not, pickling
raises :class:`EncoderPickleError` saying why.
"""

from __future__ import annotations

import os
import pickle
import weakref
from dataclasses import dataclass, field
from typing import Any

from lvt.errors import LvtError

__all__ = [
    "EncoderPickleError",
    "EncoderUnpickleError",
    "Recipe",
    "TokenizerSource",
    "rebuild",
    "recipe_of",
    "reduce",
    "shallow_copy",
    "source_of",
]


class EncoderPickleError(LvtError, pickle.PicklingError):
    """An encoder cannot be pickled (the reason named)."""


class EncoderUnpickleError(LvtError, pickle.UnpicklingError):
    """A pickled encoder cannot be rebuilt here: its tokenizer cannot be loaded, or the
    rebuilt encoder has another fingerprint (another zoo package, tokenizer file or lvt
    version); the source is named."""


@dataclass(frozen=True)
class TokenizerSource:
    """Where an encoder's tokenizer comes from.

    Attributes:
        kind: ``"zoo"`` (``value`` is the zoo name), ``"path"`` (an absolute path to a
            ``tokenizer.json`` or a directory holding one) or ``"json"`` (``value`` is the
            tokenizer's JSON serialisation).
        value: the name, the path or the JSON text.
    """

    kind: str
    value: str = field(repr=False)

    def describe(self) -> str:
        """The source in words (the JSON text is not repeated)."""
        if self.kind == "json":
            return f"the tokenizer's JSON serialisation ({len(self.value)} characters)"
        return f"{'zoo tokenizer' if self.kind == 'zoo' else 'tokenizer file'} {self.value!r}"


@dataclass(frozen=True)
class Recipe:
    """What it takes to build an encoder again (see the module docstring).

    Attributes:
        cls: the encoder class (:class:`~lvt.encoder.ChatEncoder` or a subclass).
        format: the registered format name (the encoder's ``format_name``).
        options: every template option's value, resolved.
        source: where the tokenizer comes from.
        strict: the codec's ``strict``.
        cache_size: the codec's ``cache_size``.
        backend: the backend asked for (``None``: the native one when found).
        fingerprint: the encoder's fingerprint, checked after rebuilding.
        family: the family object of an encoder without a registered format, else ``None``.
    """

    cls: type
    format: str
    options: dict[str, Any]
    source: TokenizerSource
    strict: bool
    cache_size: int
    backend: str | None
    fingerprint: str
    family: Any = None


def source_of(tok: Any) -> TokenizerSource | None:
    """The source a ``from_tokenizer`` argument names: a zoo name or a path (made absolute,
    as the unpickling process may run elsewhere); ``None`` for a tokenizer object (serialised
    when the encoder is pickled) and for anything else (``from_tokenizer`` refuses it). Never
    raises."""
    try:
        if isinstance(tok, str):
            from lvt import zoo
            from lvt.compare.templates import ZOO_FORMATS

            if tok in ZOO_FORMATS or tok in zoo.available():
                return TokenizerSource("zoo", tok)
        if isinstance(tok, str | os.PathLike):
            return TokenizerSource("path", os.path.abspath(os.fspath(tok)))
    except Exception:  # an odd path (bytes, embedded NUL): the object path serialises it
        return None
    return None


#: Recipes made so far, by encoder (made once per encoder: the JSON text is megabytes).
_RECIPES: weakref.WeakKeyDictionary[Any, Recipe] = weakref.WeakKeyDictionary()
#: Encoders rebuilt in this process, by what they were rebuilt from.
_REBUILT: weakref.WeakValueDictionary[tuple[Any, ...], Any] = weakref.WeakValueDictionary()


def recipe_of(encoder: Any) -> Recipe:
    """The recipe of ``encoder`` (made once, then reused).

    Raises:
        EncoderPickleError: the encoder has no registered format and its family object
            cannot be pickled, or its tokenizer cannot be serialised.
    """
    got = _RECIPES.get(encoder)
    if got is not None:
        return got
    source, backend = getattr(encoder, "_origin", (None, None))
    spec = encoder.format_spec
    family = None
    if spec is None:
        family = encoder.family
        try:
            pickle.dumps(family)
        except Exception as e:
            raise EncoderPickleError(
                f"cannot pickle a ChatEncoder of format {encoder.format_name!r}: it was built "
                f"from a {type(family).__name__} family object, not a registered format, and "
                f"that object cannot be pickled ({type(e).__name__}: {e}); build it with "
                "ChatEncoder.from_tokenizer(tokenizer, format=...) instead") from None
    if source is None:
        try:
            source = TokenizerSource("json", encoder.tokenizer.to_str())
        except Exception as e:
            raise EncoderPickleError(
                f"cannot pickle a ChatEncoder of format {encoder.format_name!r}: its tokenizer "
                f"cannot be serialised ({type(e).__name__}: {e})") from None
    codec = encoder.codec
    got = Recipe(type(encoder), encoder.format_name if spec is None else spec.name,
                 dict(encoder._options), source, codec.strict, codec.cache_size, backend,
                 encoder.fingerprint(), family)
    _RECIPES[encoder] = got
    return got


def reduce(encoder: Any) -> tuple[Any, tuple[Recipe]]:
    """``ChatEncoder.__reduce__``: the encoder pickles as its :class:`Recipe` and is rebuilt
    by :func:`rebuild` on unpickling.

    Raises:
        EncoderPickleError: as :func:`recipe_of`.
    """
    return (rebuild, (recipe_of(encoder),))


def shallow_copy(encoder: Any) -> Any:
    """``ChatEncoder.__copy__``: a new encoder object sharing every field (the tokenizer, the
    codec and its cache), as ``copy.copy`` made before encoders pickled as recipes (without
    it, ``copy.copy`` would go through :func:`reduce` and rebuild the encoder)."""
    new = object.__new__(type(encoder))
    new.__dict__.update(encoder.__dict__)
    return new


def rebuild(recipe: Recipe) -> Any:
    """The encoder a :class:`Recipe` describes, its fingerprint checked (an encoder rebuilt
    earlier in this process from the same recipe, while it is alive, is returned again).

    Raises:
        EncoderUnpickleError: the tokenizer cannot be loaded or the format built here, or
            the rebuilt encoder has another fingerprint (the source named).
    """
    key = (recipe.cls, recipe.fingerprint, recipe.strict, recipe.cache_size, recipe.backend)
    enc = _REBUILT.get(key)
    if enc is not None:
        return enc
    src = recipe.source
    try:
        enc = _build(recipe)
    except LvtError as e:
        raise EncoderUnpickleError(f"cannot rebuild the pickled {recipe.format!r} encoder from "
                                   f"{src.describe()}: {e}") from None
    if enc.fingerprint() != recipe.fingerprint:
        raise EncoderUnpickleError(
            f"the pickled {recipe.format!r} encoder rebuilt from {src.describe()} has another "
            f"fingerprint ({enc.fingerprint()[:12]}, pickled {recipe.fingerprint[:12]}): the "
            "tokenizer or the lvt version differs where it was unpickled")
    enc._origin = (None if src.kind == "json" else src, recipe.backend)
    _RECIPES[enc] = recipe
    _REBUILT[key] = enc
    return enc


def _build(recipe: Recipe) -> Any:
    cls, src = recipe.cls, recipe.source
    if src.kind == "json":
        from tokenizers import Tokenizer

        try:
            tok: Any = Tokenizer.from_str(src.value)
        except Exception as e:  # tokenizers raises a bare Exception
            raise LvtError(f"the tokenizer JSON does not load ({e})") from None
    elif src.kind in ("zoo", "path"):
        tok = src.value
    else:
        raise LvtError(f"unknown tokenizer source kind {src.kind!r}")
    kw: dict[str, Any] = {"strict": recipe.strict, "cache_size": recipe.cache_size,
                          "backend": recipe.backend}
    if recipe.family is None:
        return cls.from_tokenizer(tok, recipe.format, **kw, **recipe.options)
    from lvt.zoo.source import load_tokenizer

    return cls(load_tokenizer(tok), recipe.family, format_name=recipe.format,
               options=recipe.options, **kw)
