"""The public batch API: :class:`ChatEncoder` renders conversations to NumPy arrays.

``ChatEncoder.encode`` validates a conversation for the format (typed errors with the message
index), encodes its text payloads through the law-checked :class:`~lvt.codec.TokenizerCodec`
(one payload at a time, cached), and renders the pre-encoded conversation. Rendering runs a
segment-level form of ``Format.renderTok`` (whole header, body and footer runs instead of one
``Cell`` per token) on the reference backend; the property tests check that it equals
:func:`lvt.spec.render_tok` token for token, mask bit for mask bit and owner for owner. When the
Lean-built library is loaded (:func:`lvt.backend` is ``"native"``) rendering and parsing run
through it instead. In an assistant message the
block delimiters, payloads and the end-of-turn token are learned (``Src.learned``); headers,
BOS, the rest of a footer and the generation prompt are not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lvt import formats as _formats
from lvt import spec
from lvt.codec import TokenizerCodec, as_tokenizer
from lvt.errors import ConversationError, FormatError, LvtError, ParseError
from lvt.model import (
    BlockKind,
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Text,
    Tokens,
    ToolCall,
)
from lvt.openai import from_openai

__all__ = ["ChatEncoder", "Encoded"]

_ASSISTANT = Role.ASSISTANT
_PLAIN, _REASONING, _TOOL = BlockKind.PLAIN, BlockKind.REASONING, BlockKind.TOOL_CALL


@dataclass(frozen=True, eq=False)
class Encoded:
    """A rendered conversation: three aligned arrays.

    Attributes:
        ids: token ids (``int32``).
        mask: loss mask (``uint8``, 1 on tokens the trainer should learn).
        owner: index of the message that owns each token (``int32``; the BOS belongs to
            message 0, the generation prompt to the message about to be generated).
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
    """Render conversations for one chat format and one tokenizer.

    Build it with :meth:`from_tokenizer`. The format's literal pieces are encoded with the
    codec and the result must pass :func:`lvt.spec.wf` (else :class:`FormatError`).
    """

    def __init__(
        self,
        tokenizer: Any,
        chat_format: spec.ChatFormat,
        *,
        format_name: str = "custom",
        format_spec: _formats.FormatSpec | None = None,
        strict: bool = False,
        cache_size: int = 65536,
    ) -> None:
        self._tokenizer = as_tokenizer(tokenizer)
        self._format_name = format_name
        self._spec = format_spec
        self._chat_format = chat_format
        self._codec = TokenizerCodec(self._tokenizer, chat_format.reserved, strict, cache_size)
        try:
            f = spec.encode_format(chat_format, self._codec.encode)
        except LvtError as e:
            raise FormatError(
                f"format {format_name!r}: a literal piece broke the codec: {e}"
            ) from e
        if not spec.wf(f):
            raise FormatError(f"format {format_name!r} is not well-formed for this tokenizer")
        self._f = f
        self._reserved = frozenset(f.reserved)
        self._learned_eot = {r: len(f.footer[r]) > 0 for r in Role}
        self._plain_bare = spec.plain_bare(f)
        self._fingerprint: str | None = None
        from lvt import native_backend

        self._native: Any = native_backend()

    @classmethod
    def from_tokenizer(
        cls,
        tok: Any,
        format: str | spec.ChatFormat = "qwen2.5",
        strict: bool = False,
        cache_size: int = 65536,
    ) -> ChatEncoder:
        """An encoder for ``format`` (a registry name, or a :class:`~lvt.spec.ChatFormat`).

        ``tok`` is a ``tokenizers.Tokenizer``, a ``transformers`` fast tokenizer, a zoo name
        (:func:`lvt.zoo.available`) or a path to a ``tokenizer.json``.

        Raises:
            FormatError: unknown format, missing control token (named), or a format that is
                not well-formed for this tokenizer.
        """
        if isinstance(tok, str):
            from lvt import zoo

            if tok in zoo.available():
                tok = zoo.load_tokenizer(tok)
            else:
                from tokenizers import Tokenizer

                tok = Tokenizer.from_file(tok)
        if isinstance(format, str):
            fs = _formats.get_spec(format)
            return cls(tok, fs.load(as_tokenizer(tok)), format_name=fs.name, format_spec=fs,
                       strict=strict, cache_size=cache_size)
        return cls(tok, format, strict=strict, cache_size=cache_size)

    # -- properties -------------------------------------------------------------------------

    @property
    def format_name(self) -> str:
        """The registry name of the format (``"custom"`` for a user-built format)."""
        return self._format_name

    @property
    def format_spec(self) -> _formats.FormatSpec | None:
        """The registry entry of the format, if any."""
        return self._spec

    @property
    def chat_format(self) -> spec.ChatFormat:
        """The format with literal pieces."""
        return self._chat_format

    @property
    def enc_format(self) -> spec.EncFormat:
        """The pre-encoded format that render and parse run on."""
        return self._f

    @property
    def tokenizer(self) -> Any:
        """The wrapped ``tokenizers.Tokenizer``."""
        return self._tokenizer

    @property
    def codec(self) -> TokenizerCodec:
        """The law-checked codec."""
        return self._codec

    # -- validation and pre-encoding --------------------------------------------------------

    def _collect(self, conv: Conversation, texts: dict[str, int]) -> None:
        """Check the shape of ``conv`` (everything that does not need token ids) and record
        its text payloads with the index of the first message that uses each."""
        if not isinstance(conv, Conversation):
            raise ConversationError(None, f"expected a Conversation, got {type(conv).__name__}")
        if len(conv.messages) == 0:
            raise ConversationError(None, "empty conversation")
        f = self._f
        fs = self._spec
        needs_call = fs is not None and fs.tool_needs_call
        open_call = False
        for i, m in enumerate(conv.messages):
            role = m.role
            if not isinstance(role, Role):
                raise ConversationError(i, f"unknown role {role!r}")
            if not f.header[role]:
                raise ConversationError(
                    i, f"role {role.value!r} is not supported by format {self._format_name!r}"
                )
            if role == Role.TOOL:
                if needs_call and not open_call:
                    raise ConversationError(
                        i, f"tool message without a preceding assistant tool call (format "
                        f"{self._format_name!r} needs one)"
                    )
            else:
                open_call = role == _ASSISTANT and any(isinstance(b, ToolCall) for b in m.blocks)
            for b in m.blocks:
                if isinstance(b, Plain | Reasoning):
                    payloads: tuple[Any, ...] = (b.payload,)
                elif isinstance(b, ToolCall):
                    payloads = (b.name, b.args)
                else:
                    raise ConversationError(i, f"not a block: {b!r}")
                k = b.kind
                if not spec.has_kind(f, k):
                    raise ConversationError(
                        i, f"{k.value} blocks are not supported by format {self._format_name!r}"
                    )
                for p in payloads:
                    if isinstance(p, Text):
                        s = p.text
                        if type(s) is not str:
                            raise ConversationError(
                                i, f"text payload must be a str, got {type(s).__name__}"
                            )
                        if s not in texts:
                            texts[s] = i
                    elif not isinstance(p, Tokens):
                        raise ConversationError(i, f"not a payload: {p!r}")

    def _encode_texts(self, texts: dict[str, int]) -> dict[str, tuple[int, ...]]:
        keys = list(texts)
        try:
            encs = self._codec.encode_tuples(keys)
        except LvtError as e:
            text = getattr(e, "text", None)
            if text is None and isinstance(e, ConversationError):
                # lone surrogate: find the offending text
                text = next((s for s in keys if not _utf8_ok(s)), None)
                if text is not None:
                    raise ConversationError(texts[text], e.reason) from None
            if text is not None and text in texts and hasattr(e, "message_index"):
                e.message_index = texts[text]
            raise
        return dict(zip(keys, encs, strict=True))

    def _payload(self, i: int, p: Any, table: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
        if isinstance(p, Text):
            return table[p.text]
        ts = p.ids
        if ts:
            if not self._reserved.isdisjoint(ts):
                j = next(j for j, t in enumerate(ts) if t in self._reserved)
                raise ConversationError(
                    i, f"token payload contains the reserved id {ts[j]} at position {j}"
                )
            j = self._codec.first_invalid_id(ts)
            if j is not None:
                raise ConversationError(
                    i, f"token payload contains the id {ts[j]} at position {j}, which is not "
                    f"in the vocabulary"
                )
        return ts

    def _render(
        self, conv: Conversation, table: Mapping[str, tuple[int, ...]]
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        """Segment-level ``renderTok``: returns ids and run-length (lengths, loss, owner)."""
        f = self._f
        ids: list[int] = list(f.bos)
        lens: list[int] = [len(f.bos)]
        loss: list[int] = [0]
        own: list[int] = [0]
        bo, bc, sep = f.block_open, f.block_close, f.tool_sep
        plain_bare = self._plain_bare
        for i, m in enumerate(conv.messages):
            role = m.role
            header = f.header[role]
            footer = f.footer[role]
            learn = 1 if role == _ASSISTANT else 0
            ids.extend(header)
            start = len(ids)
            after_open = False
            for b in m.blocks:
                if isinstance(b, ToolCall):
                    n = self._payload(i, b.name, table)
                    a = self._payload(i, b.args, table)
                    if n and not sep:
                        raise ConversationError(
                            i, f"tool call name must be empty in format {self._format_name!r} "
                            "(it writes the name inside the argument text; use encode_openai "
                            "or FormatSpec.shape_tool_call)"
                        )
                    ids.extend(bo[_TOOL])
                    ids.extend(n)
                    ids.extend(sep)
                    ids.extend(a)
                    ids.extend(bc[_TOOL])
                    after_open = not bc[_TOOL]
                    continue
                p = self._payload(i, b.payload, table)
                if isinstance(b, Plain):
                    if plain_bare:
                        if not p:
                            raise ConversationError(
                                i, f"empty plain block (format {self._format_name!r} renders "
                                "plain blocks bare, so an empty one cannot be parsed back)"
                            )
                        if after_open:
                            raise ConversationError(
                                i, "a plain block cannot follow a block that ends with its "
                                "payload (the two payloads would merge)"
                            )
                    k = _PLAIN
                else:
                    k = _REASONING
                ids.extend(bo[k])
                ids.extend(p)
                ids.extend(bc[k])
                after_open = not bc[k]
            body = len(ids) - start
            ids.extend(footer)
            if footer:
                lens += (len(header), body + 1, len(footer) - 1)
            else:
                lens += (len(header), body, 0)
            loss += (0, learn, 0)
            own += (i, i, i)
        if conv.add_generation_prompt:
            h = f.header[_ASSISTANT]
            ids.extend(h)
            lens.append(len(h))
            loss.append(0)
            own.append(len(conv.messages))
        return ids, lens, loss, own

    @staticmethod
    def _arrays(r: tuple[list[int], list[int], list[int], list[int]]) -> Encoded:
        ids, lens, loss, own = r
        lens_a = np.array(lens, dtype=np.int64)
        return Encoded(
            np.array(ids, dtype=np.int32),
            np.repeat(np.array(loss, dtype=np.uint8), lens_a),
            np.repeat(np.array(own, dtype=np.int32), lens_a),
        )

    # -- public API ---------------------------------------------------------------------------

    def pre_encode(self, conv: Conversation) -> Conversation:
        """The pre-encoded form (``Conversation.toTokens``): every payload as
        :class:`~lvt.model.Tokens`, after the same validation as :meth:`encode`."""
        texts: dict[str, int] = {}
        self._collect(conv, texts)
        table = self._encode_texts(texts)
        self._render(conv, table)  # validation
        return Conversation(
            tuple(
                m.map(lambda p, i=i: Tokens(self._payload(i, p, table)))
                for i, m in enumerate(conv.messages)
            ),
            conv.add_generation_prompt,
        )

    def encode(self, conv: Conversation) -> Encoded:
        """Render one conversation to ids, loss mask and owner arrays.

        Raises:
            ConversationError: the conversation is not valid for the format (with the message
                index and the reason).
            CodecLawError: the tokenizer broke a codec law on one of the texts.
        """
        return self.encode_batch([conv])[0]

    def encode_batch(self, convs: Iterable[Conversation]) -> list[Encoded]:
        """Render many conversations; their distinct text payloads are encoded once, cache
        misses in a single ``encode_batch`` call."""
        convs = list(convs)
        texts: dict[str, int] = {}
        for n, c in enumerate(convs):
            try:
                self._collect(c, texts)
            except ConversationError as e:
                raise _in_batch(e, n, len(convs)) from None
        table = self._encode_texts(texts)
        out: list[Encoded] = []
        for n, c in enumerate(convs):
            try:
                r = self._render(c, table)
            except ConversationError as e:
                raise _in_batch(e, n, len(convs)) from None
            if self._native is not None:  # pragma: no cover - depends on the Lean build
                out.append(self._render_native(c, table))
            else:
                out.append(self._arrays(r))
        return out

    def _render_native(self, c: Conversation, table: Mapping[str, tuple[int, ...]]) -> Encoded:
        """Render with the Lean-built library (the proven ``renderTok`` itself)."""
        pre = Conversation(
            tuple(
                m.map(lambda p, i=i: Tokens(self._payload(i, p, table)))
                for i, m in enumerate(c.messages)
            ),
            c.add_generation_prompt,
        )
        ans = self._native.render_answer(self._f, pre)
        if not (ans.wf and ans.valid):
            raise LvtError("the native render refused a conversation the encoder accepted")
        return Encoded(
            np.asarray(ans.ids, dtype=np.int32),
            np.asarray(ans.mask, dtype=np.uint8),
            np.asarray(ans.owner, dtype=np.int32),
        )

    def generation_prompt(self, conv: Conversation) -> np.ndarray:
        """Ids of the render of ``conv`` followed by the generation prompt (the assistant
        header), ready to be sent to an inference engine."""
        c = Conversation(conv.messages, True)
        return self.encode(c).ids

    def shape(self, conv: Conversation) -> Conversation:
        """Lay out every tool call whose name and arguments are text with the format's
        :meth:`~lvt.formats.FormatSpec.shape_tool_call` (neutral ``(name, arguments)`` to the
        payloads the format renders). Identity for user-built formats."""
        fs = self._spec
        if fs is None:
            return conv
        msgs = []
        for m in conv.messages:
            blocks = []
            for b in m.blocks:
                if isinstance(b, ToolCall) and isinstance(b.name, Text) and isinstance(
                    b.args, Text
                ):
                    n, a = fs.shape_tool_call(b.name.text, b.args.text)
                    b = ToolCall(Text(n), Text(a))
                blocks.append(b)
            msgs.append(Message(m.role, tuple(blocks)))
        return Conversation(tuple(msgs), conv.add_generation_prompt)

    def encode_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
    ) -> Encoded:
        """:func:`lvt.openai.from_openai`, tool calls shaped for the format, then
        :meth:`encode`."""
        return self.encode(self.shape(from_openai(messages, tools, add_generation_prompt)))

    def parse_tokens(self, ids: Sequence[int] | np.ndarray) -> Conversation:
        """``Format.parse``: the pre-encoded conversation (all payloads
        :class:`~lvt.model.Tokens`) whose render is ``ids``.

        Raises:
            ParseError: ``ids`` is not the render of any conversation that :meth:`encode`
                accepts (in particular an empty conversation is refused).
        """
        ts = tuple(int(t) for t in np.asarray(ids).reshape(-1).tolist())
        bad = self._codec.first_invalid_id(ts)
        if bad is not None:
            raise ParseError(f"token id {ts[bad]} is not in the vocabulary", bad)
        native = self._native
        c = native.parse(self._f, ts) if native is not None else spec.parse(self._f, ts)
        if c is None:
            raise ParseError(f"the tokens are not a render in format {self._format_name!r}",
                             _parse_position(self._f, ts))
        try:
            # the encoder's own rules: no empty conversation, a tool message needs a call
            self._collect(c, {})
        except ConversationError as e:
            raise ParseError(str(e)) from None
        return c

    def parse(self, ids: Sequence[int] | np.ndarray) -> Conversation:
        """Parse ids back to a conversation; each payload is decoded to :class:`Text` when the
        text re-encodes to exactly the same tokens, else kept as :class:`Tokens`
        (``decodePayload``).

        Raises:
            ParseError: ``ids`` is not the render of any conversation.
        """
        return spec.decode_conversation(self._codec, self.parse_tokens(ids))

    def fingerprint(self) -> str:
        """sha256 of the format definition (pre-encoded delimiters and reserved ids), the
        tokenizer (its serialisation) and the lvt version: equal fingerprints mean equal
        renders."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update(b"lvt-fingerprint-v1\0")
            h.update(_version().encode())
            h.update(b"\0")
            h.update(self._format_name.encode())
            h.update(b"\0")
            h.update(repr(self._f.key()).encode())
            h.update(b"\0")
            h.update(self._codec.digest().encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def __repr__(self) -> str:
        return f"ChatEncoder(format={self._format_name!r}, vocab={self._codec.vocab_size})"


def _utf8_ok(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _in_batch(e: ConversationError, n: int, total: int) -> ConversationError:
    if total == 1:
        return e
    err = ConversationError(e.message_index, f"{e.reason} (conversation {n} of the batch)")
    err.conversation_index = n  # type: ignore[attr-defined]
    return err


def _parse_position(f: spec.EncFormat, ts: tuple[int, ...]) -> int | None:
    """The length of the longest prefix of ``ts`` made of whole messages that parse (a hint
    for the error message)."""
    rest = spec.strip_prefix(f.bos, ts)
    if rest is None:
        return 0
    pos = len(f.bos)
    while rest:
        r = spec.parse_msg(f, rest)
        if r is None:
            return pos
        pos += len(rest) - len(r[1])
        rest = r[1]
    return pos
