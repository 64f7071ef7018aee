"""The public API: :class:`ChatEncoder` renders conversations to NumPy arrays and parses
token ids back.

``encode`` lowers a conversation with the format's family (``lower``), lays it out
(``layout``) and encodes every text span as one string with the law-checked
:class:`~lvt.runtime.codec.TokenizerCodec` (``encodeItems``): the transliterated definitions of
``Verified/Spec`` are the production path. ``parse`` runs ``decodeSyms`` then ``unlayout``.
Spans are cached by text, so the prompt shared by a GRPO group is encoded once.

Backends: where the Lean-built shared library is loaded (:func:`lvt.backend` is
``"native"``), ``lower`` + ``layout`` and ``unlayout`` run in Lean through
:mod:`lvt.runtime.native` (wire version 4, :mod:`lvt.runtime.wire`); span encoding and
``decodeSyms`` stay here, since the Lean side has no tokenizer. Otherwise the transliteration runs.

One ``ChatEncoder`` may be shared by threads: the codec's cache is guarded by a lock and
everything else is read-only after construction.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lvt import formats as _formats
from lvt.collisions import check_batch, check_on_collision
from lvt.errors import (
    ArgumentError,
    CodecLawError,
    ConversationError,
    NativeLibraryError,
    ParseError,
)
from lvt.families import unlower
from lvt.frontend import locate_codec_error, normalize_text
from lvt.jsonfmt import map_strings
from lvt.model import (
    Block,
    Conversation,
    check_bool,
    check_token_ids,
)
from lvt.openai import from_openai
from lvt.runtime import core, recipe
from lvt.runtime.codec import TokenizerCodec, as_tokenizer
from lvt.zoo.source import default_format, load_tokenizer, tokenizer_class

__all__ = ["ChatEncoder", "Encoded", "normalize_text"]


@dataclass(frozen=True, eq=False)
class Encoded:
    """A rendered conversation: three aligned arrays.

    Attributes:
        ids: token ids (``int32``).
        mask: loss mask (``uint8``, 1 on tokens the trainer should learn).
        owner: index of the message that owns each token (``int32``; the generation prompt
            belongs to the message about to be generated, ``len(messages)``).
    """

    ids: np.ndarray
    mask: np.ndarray
    owner: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Encoded)
            and np.array_equal(self.ids, other.ids)
            and np.array_equal(self.mask, other.mask)
            and np.array_equal(self.owner, other.owner)
        )

    __hash__ = None  # type: ignore[assignment]


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("lvt")
    except Exception:
        return "0+unknown"


class ChatEncoder:
    """Render conversations for one chat format and one tokenizer. Build it with
    :meth:`from_tokenizer`; it pickles as its recipe (:mod:`lvt.runtime.recipe`)."""

    def __init__(
        self,
        tokenizer: Any,
        family: Any,
        *,
        format_name: str = "custom",
        format_spec: _formats.FormatSpec | None = None,
        options: Mapping[str, Any] | None = None,
        strict: bool = True,
        cache_size: int = 65536,
        backend: str | None = None,
    ) -> None:
        """``backend``: ``None`` (the native library when it is found, else the reference),
        ``"reference"`` or ``"native"`` (raises :class:`NativeLibraryError` without one).
        ``strict`` (default ``True``): check the decode law on every distinct text span
        (:class:`~lvt.runtime.codec.TokenizerCodec`); ``strict=False`` is unsafe (a text the
        tokenizer rewrites renders as another conversation and nothing notices).

        Raises:
            ArgumentError: ``strict`` is not a bool, ``cache_size`` not a non-negative int,
                ``backend`` unknown, or ``tokenizer`` not a tokenizer.
        """
        strict = check_bool("strict", strict)
        if type(cache_size) is not int or cache_size < 0:
            raise ArgumentError("cache_size", f"expected a non-negative int, got {cache_size!r}")
        if not isinstance(getattr(tokenizer, "backend_tokenizer", tokenizer), tokenizer_class()):
            raise ArgumentError("tokenizer", "expected a tokenizers.Tokenizer or a transformers "
                                f"fast tokenizer, got {type(tokenizer).__name__}")
        self._native = _select_native(backend)
        if self._native is not None:
            from lvt.runtime import wire

            if not wire.supports(family):  # the FFI wire carries the Qwen and Llama families
                if backend == "native":
                    raise NativeLibraryError(
                        f"the native backend has no {type(family).__name__} family (FFI wire "
                        f"version {wire.WIRE_VERSION}); use backend='reference'")
                self._native = None
        self._tokenizer = as_tokenizer(tokenizer)
        self._family = family
        self._format_name = format_name
        self._spec = format_spec
        # every option's value, a date left to "today" fixed: the fingerprint names the render
        self._options = (format_spec.resolve(options or {}) if format_spec is not None
                         else dict(options or {}))
        self._codec = TokenizerCodec(self._tokenizer, family.reserved, strict, cache_size)
        # the parser splits at the family's reserved ids (`Format.reserved`); the codec keeps
        # every one of them, and every special added token, out of text
        self._reserved = frozenset(family.reserved)
        self._split_names: set[str] = set()  # tool names whose call header splits (gpt-oss)
        self._fingerprint: str | None = None
        # normalised tool lists (a batch shares one; frozen tool lists are hashable)
        self._tools_memo: dict[Any, list[Any]] = {}
        self._memo_lock = threading.Lock()
        self._origin: tuple[Any, str | None] = (None, backend)  # for recipe: source, backend

    @classmethod
    def from_tokenizer(
        cls,
        tok: Any,
        format: str | None = None,
        strict: bool = True,
        cache_size: int = 65536,
        backend: str | None = None,
        **options: Any,
    ) -> ChatEncoder:
        """An encoder for the registered ``format`` (see :mod:`lvt.formats`) with template
        ``options`` (``enable_thinking``, ``date_string``, ``tools_in_user_message``).

        ``backend`` chooses where lower, layout and unlayout run (see :meth:`__init__`).
        ``tok`` is a ``tokenizers.Tokenizer``, a ``transformers`` fast tokenizer, a zoo name
        (:func:`lvt.zoo.available`), a path to a ``tokenizer.json`` or a directory holding one.
        ``format=None`` (the default): the format a zoo name implies
        (:data:`lvt.compare.templates.ZOO_FORMATS`: ``"llama3.1"`` and ``"llama3"`` give
        ``"llama3.1"``), else ``"qwen2.5"``.

        Raises:
            FormatError: unknown format or option, a control token missing (named), or a zoo
                name that implies no format while ``format`` is not given.
            InputError: ``tok`` is a path that does not exist or is not a tokenizer file
                (names the path).
            ArgumentError: ``tok`` is neither a tokenizer, a string nor a path; ``strict``,
                ``cache_size`` or ``backend`` is invalid.
            LvtError: a zoo name whose package is missing.
        """
        fmt, source = default_format(tok, format), recipe.source_of(tok)
        tok = load_tokenizer(tok)
        fs = _formats.get_spec(fmt)
        enc = cls(tok, fs.load(as_tokenizer(tok), **options), format_name=fs.name, format_spec=fs,
                  options=options, strict=strict, cache_size=cache_size, backend=backend)
        enc._origin = (source, backend)
        return enc

    @classmethod
    def from_hf(cls, tokenizer: Any, strict: bool = True, cache_size: int = 65536,
                backend: str | None = None, **options: Any) -> ChatEncoder:
        """An encoder for the model entry that reproduces ``tokenizer``'s own chat template
        (:func:`lvt.formats.detect.detect`: by the template's hash, confirmed on a probe corpus
        rendered both ways), with template ``options`` on top of the entry's defaults.

        Raises:
            FormatError: the tokenizer has no chat template, or no entry reproduces it (the
                message names the closest entry and the first differing tokens).
        """
        from lvt.formats.detect import detect

        d = detect(tokenizer)
        return cls.from_tokenizer(tokenizer, d.format, strict=strict, cache_size=cache_size,
                                  backend=backend, **options)

    # -- properties -------------------------------------------------------------------------

    @property
    def format_name(self) -> str:
        """The registry name of the format."""
        return self._format_name

    @property
    def format_spec(self) -> _formats.FormatSpec | None:
        """The registry entry of the format."""
        return self._spec

    @property
    def family(self) -> Any:
        """The family instance (:class:`lvt.families.qwen.Qwen`, ...)."""
        return self._family

    @property
    def tokenizer(self) -> Any:
        """The wrapped ``tokenizers.Tokenizer``."""
        return self._tokenizer

    @property
    def backend(self) -> str:
        """``"native"`` (lower, layout and unlayout run in Lean) or ``"reference"``."""
        return "reference" if self._native is None else "native"

    @property
    def codec(self) -> TokenizerCodec:
        """The law-checked codec."""
        return self._codec

    @property
    def reserved(self) -> frozenset[int]:
        """The control-token ids (text never encodes to them)."""
        return self._reserved

    # -- rendering --------------------------------------------------------------------------

    def lower(self, conv: Conversation) -> Any:
        """The turns the template writes for ``conv`` (``lower``).

        Raises:
            ConversationError: the format cannot express the conversation (message index and
                reason).
        """
        if not isinstance(conv, Conversation):
            raise ConversationError(None, f"expected a Conversation, got {type(conv).__name__}")
        return self._family.lower(self.normalize(conv))

    def normalize(self, conv: Conversation) -> Conversation:
        """The conversation as the tokenizer reads it: every text a user writes (payloads,
        tool-call names, ids and argument strings, tool-definition strings) through
        :meth:`TokenizerCodec.normalize <lvt.runtime.codec.TokenizerCodec.normalize>` (Qwen:
        NFC; Gemma: ``"\u2581"`` to a space), before any JSON escaping
        (:func:`lvt.frontend.normalize_args`), so that decoding the render gives the text back
        (the decode law) and ``parse`` returns this conversation's texts. Identity for
        tokenizers without a normalisation."""
        codec = self._codec
        if codec.unicode_form is None and not codec.rewrites:
            return conv
        f = codec.normalize
        tools = conv.tools
        if tools is not None:
            with self._memo_lock:
                normal = self._tools_memo.get(tools)
            if normal is None:
                normal = [map_strings(t, f) for t in tools]
                with self._memo_lock:
                    if len(self._tools_memo) >= 64:
                        self._tools_memo.clear()
                    self._tools_memo[tools] = normal
            tools = normal
        return normalize_text(conv, f, tools)

    def _check_ids(self, items: list[core.Item]) -> list[core.Item]:
        """Token payloads must be ids of the vocabulary; gpt-oss call headers must split
        (``SplitsCallHeader``, once per tool name: :class:`~lvt.errors.CallHeaderSplitError`)."""
        hook = getattr(self._family, "check_call_headers", None)
        if hook is not None:
            hook(self._codec, items, self._split_names)
        for it in items:
            if it.kind == core.TOKS and it.value:
                j = self._codec.first_invalid_id(it.value)
                if j is not None:
                    raise ConversationError(
                        it.owner, f"token payload holds the id {it.value[j]} at position {j}, "
                        "which is not in the vocabulary"
                    )
        return items

    def layout(self, conv: Conversation) -> list[core.Item]:
        """The items of the render of ``conv`` (``layout (lower c)``; run in Lean on the
        native backend)."""
        if self._native is None:
            return self._check_ids(self._family.layout(self.lower(conv)))
        if not isinstance(conv, Conversation):
            raise ConversationError(None, f"expected a Conversation, got {type(conv).__name__}")
        norm = self.normalize(conv)
        check = getattr(self._family, "entry_check", None)
        if check is not None:  # a model entry narrower than its structure's Lean lowering
            check(norm)
        try:
            items = self._native.layout(self._family, norm)
        except NativeLibraryError:
            raise
        except ValueError as e:  # an id or a count beyond u32, a lone surrogate
            raise ConversationError(None, f"not representable on the FFI wire: {e}") from None
        if items is None:
            self._family.lower(norm)  # raises with the message and the reason
            raise ConversationError(None, "the format cannot express this conversation "
                                    "(refused by the Lean lowering)")
        return self._check_ids(items)

    def encode(self, conv: Conversation) -> Encoded:
        """Render one conversation to ids, loss mask and owner arrays.

        Raises:
            ConversationError: ``conv`` is not a :class:`~lvt.model.Conversation`, or is not
                valid for the format (message index and reason; a token payload with an id
                outside the vocabulary included).
            CodecLawError: the tokenizer broke a codec law on one of the texts (a text
                encodes to a control token, or does not decode back to itself after the
                front-end normalisation): ``message_index`` and the reason name the message
                and its text, and the normalisation involved.
        """
        return self.encode_batch([conv])[0]

    def encode_batch(self, convs: Iterable[Conversation],
                     on_collision: str = "warn") -> list[Encoded]:
        """Render many conversations; their distinct spans are encoded once (cache misses in
        one ``encode_batch`` call of the tokenizer). Two different conversations rendered to
        the same ids and loss mask (the template does not write what tells them apart) are
        a :class:`~lvt.collisions.CollisionWarning` (``on_collision="warn"``), a
        :class:`~lvt.errors.CollisionError` (``"error"``) or not looked for (``"ignore"``).

        Raises:
            ArgumentError: ``convs`` is not an iterable of conversations (one
                :class:`~lvt.model.Conversation` on its own is refused: use :meth:`encode`).
            ConversationError: as :meth:`encode`, naming the conversation of the batch.
            CodecLawError: as :meth:`encode`, naming the conversation of the batch
                (``conversation_index``).
            CollisionError: ``on_collision="error"`` and two conversations collide.
        """
        check_on_collision(on_collision)
        if isinstance(convs, Conversation):
            raise ArgumentError("convs", "expected an iterable of Conversation, got one "
                                "Conversation (use encode(conv) or encode_batch([conv]))")
        if isinstance(convs, str | bytes | Mapping) or not isinstance(convs, Iterable):
            raise ArgumentError("convs", f"expected an iterable of Conversation, got "
                                f"{type(convs).__name__}")
        convs = list(convs)
        layouts: list[list[core.Item]] = []
        for n, c in enumerate(convs):
            try:
                layouts.append(self.layout(c))
            except ConversationError as e:
                raise _in_batch(e, n, len(convs)) from None
            except CodecLawError as e:
                e.conversation_index = n if len(convs) > 1 else None
                raise
        spans = list(dict.fromkeys(s for items in layouts for s in core.spans_of(items)))
        try:
            table = dict(zip(spans, self._codec.encode_tuples(spans), strict=True))
        except CodecLawError as e:  # name the message (and conversation) the text is in
            raise locate_codec_error(e, layouts, self._codec) from None
        out = []
        for items in layouts:
            ids, loss, own, _ = core.encode_items(self._codec, items, table)
            out.append(Encoded(np.array(ids, dtype=np.int32), np.array(loss, dtype=np.uint8),
                               np.array(own, dtype=np.int32)))
        check_batch(convs, out, on_collision)
        return out

    def encode_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
    ) -> Encoded:
        """:meth:`from_openai` then :meth:`encode`."""
        return self.encode(self.from_openai(messages, tools, add_generation_prompt))

    def from_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
    ) -> Conversation:
        """OpenAI/HF messages as this format reads them: :func:`lvt.openai.from_openai`, with an
        empty reasoning field kept as an empty block where the template tests the field's
        presence (gpt-oss: ``{%- if "thinking" in message %}``), dropped elsewhere, and
        tool-call argument strings kept exactly as written where the template writes them as
        given (DeepSeek-R1), parsed and serialised with ``tojson`` elsewhere.

        Raises:
            ConversationError: with the message index and the reason.
        """
        keep = bool(getattr(self._family, "keeps_empty_reasoning", False))
        raw = bool(getattr(self._family, "keeps_argument_text", False))
        return from_openai(messages, tools, add_generation_prompt, keep_empty_reasoning=keep,
                           verbatim_arguments=raw)

    def generation_prompt(self, conv: Conversation) -> np.ndarray:
        """Ids of the render of ``conv`` followed by the generation prompt, ready for an
        inference engine.

        Raises:
            ConversationError: as :meth:`encode`.
        """
        if not isinstance(conv, Conversation):
            raise ConversationError(None, f"expected a Conversation, got {type(conv).__name__}")
        return self.encode(Conversation(conv.messages, True, conv.tools)).ids

    # -- parsing ----------------------------------------------------------------------------

    def _ids(self, ids: Sequence[int] | np.ndarray) -> tuple[int, ...]:
        """``ids`` checked: integers (:func:`lvt.model.check_token_ids`), each in the
        vocabulary."""
        ts = check_token_ids(ids, "ids", limit=None)
        try:
            bad = self._codec.first_invalid_id(ts)
        except OverflowError:  # an id beyond int64: find the first bad one by hand
            valid = self._codec.valid_ids()
            bad = next(j for j, t in enumerate(ts) if not (0 <= t < len(valid) and valid[t]))
        if bad is not None:
            raise ParseError(f"token id {ts[bad]} is not in the vocabulary", bad)
        return ts

    def parse_lowered(self, ids: Sequence[int] | np.ndarray) -> Any:
        """``parse``: the lowered conversation (owners 0) whose layout is ``ids`` (the
        ``render_parse`` theorem: its layout encodes to exactly ``ids``). Not every lowered
        conversation is the lowering of a conversation (an untrimmed Llama body, a Qwen tool
        line that is not JSON): :meth:`parse` also checks that.

        ``ids``: a 1-D sequence of Python or NumPy integers (a list, a tuple, an integer
        array); floats, bools, nested lists and 2-D arrays are refused.

        Raises:
            ArgumentError: ``ids`` is not a flat sequence of integers (names the position).
            ParseError: ``ids`` is not the render of any conversation in this format (an id
                outside the vocabulary, a text run that is not the encoding of its text, with
                the position of the run; or a layout the format does not produce).
        """
        return self._parse_syms(self._ids(ids))[2]

    def _parse_syms(self, ts: tuple[int, ...]) -> tuple[tuple[int, ...], core.Stream, Any]:
        """One pass: ids, their symbol stream, the lowered conversation."""
        s, bad = core.decode_syms_at(self._codec, self._reserved, ts)
        if s is None:
            raise ParseError("a run of text tokens is not the encoding of its text", bad)
        at: int | None = None
        if self._native is not None:
            q = self._native.unlayout(self._family, s)
        elif hasattr(self._family, "unlayout_at"):  # the position in the same pass
            q, at = self._family.unlayout_at(s)
        else:
            q = self._family.unlayout(s)
        if q is None:
            raise ParseError(f"the tokens are not a render in format {self._format_name!r}",
                             None if at is None else core.token_index(s, at, ts, self._reserved))
        return ts, s, q

    def parse(self, ids: Sequence[int] | np.ndarray) -> Conversation:
        """Parse ids back to a conversation: the lowered form (:meth:`parse_lowered`) as
        messages (defaults the template inserted appear as messages; tools as JSON).

        The result renders back to exactly ``ids`` (``encode(parse(ids)).ids == ids``): a
        stream the format's layout reads but no conversation renders to (an untrimmed Llama
        body, a Qwen tool line that is not JSON, Gemma turns that do not alternate, the empty
        stream where the template inserts a default system prompt) is refused. The check
        lowers and lays out the result again (no tokenizer call), so parse stays linear.

        Raises:
            ArgumentError: ``ids`` is not a flat sequence of integers (names the position).
            ParseError: ``ids`` is not the render of any conversation in this format (with
                the position of the first token that differs, where there is one).
        """
        ts, s, q = self._parse_syms(self._ids(ids))
        conv = unlower(self._family, q)
        try:  # the reference lowering and layout (on the native backend too: no FFI call)
            items = self._family.layout(self.lower(conv))
        except ConversationError as e:
            raise ParseError(f"a layout of format {self._format_name!r}, but not the render of "
                             f"any conversation: {e}") from None
        if not core.text_only(items):  # not from a parse today; compare the ids then
            again_ids = core.encode_items(self._codec, items)[0]
            if again_ids != list(ts):
                raise ParseError(f"a layout of format {self._format_name!r}, but not the "
                                 "render of any conversation")
            return conv
        again = core.syms(items)
        if again != s:
            k = next((k for k, (a, b) in enumerate(zip(again, s, strict=False)) if a != b),
                     min(len(again), len(s)))
            raise ParseError(f"a layout of format {self._format_name!r}, but not the render of "
                             "any conversation (the conversation it reads as renders "
                             "differently)", core.token_index(s, k, ts, self._reserved))
        return conv

    def parse_completion(self, ids: Sequence[int] | np.ndarray) -> list[Block]:
        """The typed view of a sampled assistant turn, read strictly (as the render writes
        it): ``ids`` are the tokens the policy produced after the generation prompt, with or
        without the stop token that ended it. The tokens stay verbatim for training
        (:class:`lvt.model.Sampled`); :meth:`read_completion` reads any sample leniently.

        Raises:
            ArgumentError: ``ids`` is not a flat sequence of integers (names the position).
            ParseError: the tokens do not read as an assistant turn of this format.
        """
        from lvt.families import harmony, parse_completion

        ts = self._ids(ids)
        if ts and ts[-1] in self.stop_ids and not isinstance(self._family, harmony.Harmony):
            ts = ts[:-1]  # harmony's reader tells <|call|> from <|return|> itself
        blocks = parse_completion(self._family, self._codec, self._reserved, ts)
        if blocks is None:
            raise ParseError(f"the tokens do not read as an assistant turn of format "
                             f"{self._format_name!r}")
        return blocks

    @property
    def stop_ids(self) -> tuple[int, ...]:
        """The ids that end a sampled assistant turn, the render's own first: the engine's
        ``stop_token_ids`` (:func:`lvt.sampling.stop_ids`)."""
        from lvt.sampling import stop_ids

        return stop_ids(self)

    def read_completion(self, ids: Sequence[int] | np.ndarray, tools: Any = None) -> Any:
        """What a sampled assistant turn means, read leniently (content, reasoning, tool calls,
        termination, canonicity: :func:`lvt.sampling.read_completion`); never raises on what a
        model sampled. ``ids`` are the engine's output, stop token included.

        Raises:
            ArgumentError: ``ids`` is not a flat sequence of vocabulary ids.
        """
        from lvt.sampling import read_completion

        return read_completion(self, ids, tools)

    # -- identity -----------------------------------------------------------------------------

    def fingerprint(self) -> str:
        """sha256 of the format (name, options, control ids), the tokenizer (its
        serialisation) and the lvt version: equal fingerprints mean equal renders."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update(b"lvt-fingerprint-v2\0")
            h.update(_version().encode())
            h.update(b"\0")
            h.update(self._format_name.encode())
            h.update(b"\0")
            h.update(repr(sorted(self._options.items())).encode())
            h.update(b"\0")
            h.update(repr(sorted(self._reserved)).encode())
            h.update(b"\0")
            h.update(self._codec.digest().encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    __reduce__, __copy__ = recipe.reduce, recipe.shallow_copy  # pickled as its recipe, rebuilt

    def __repr__(self) -> str:
        return f"ChatEncoder(format={self._format_name!r}, vocab={self._codec.vocab_size})"


def _select_native(backend: str | None) -> Any:
    """The native backend to dispatch to (``None``: the reference transliteration)."""
    from lvt.runtime import native as _native

    if backend not in (None, "native", "reference"):
        raise ArgumentError("backend", f"unknown backend {backend!r}; expected None, 'native' "
                            "or 'reference'")
    if backend == "reference":
        return None
    nb = _native.load()
    if backend == "native" and nb is None:
        raise NativeLibraryError(f"the native backend was asked for: {_native.reason()}")
    return nb


def _in_batch(e: ConversationError, n: int, total: int) -> ConversationError:
    if total == 1:
        return e
    err = ConversationError(e.message_index, f"{e.reason} (conversation {n} of the batch)")
    err.conversation_index = n  # type: ignore[attr-defined]
    return err
