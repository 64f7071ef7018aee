"""The message AST, mirroring ``Verified/Spec/Message.lean``.

A :class:`Conversation` is a tuple of :class:`Message` objects, each with a :class:`Role` and
a body of blocks (:class:`Plain`, :class:`Reasoning`, :class:`ToolCall`). Every payload is
either :class:`Text` (encoded by the codec) or :class:`Tokens` (kept verbatim, e.g. tokens
sampled at inference time). All classes are frozen, hashable dataclasses.

Constructors check their arguments and raise :class:`~lvt.errors.ArgumentError` (a
``TypeError`` and a ``ValueError``) naming the argument, the message and the position:
token ids must be Python or NumPy integers (never ``bool``, never a float, even an integral
one) in ``[0, 2**32)`` (:data:`ID_LIMIT`; the vocabulary bound is checked where the
vocabulary is known, by :meth:`lvt.encoder.ChatEncoder.encode` and ``parse``); text must be
``str``; a message is a :class:`Message` (OpenAI-style dicts go through
:func:`lvt.openai.from_openai`); ``add_generation_prompt`` is a ``bool``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, TypeAlias

import numpy as np

from lvt.errors import ArgumentError

__all__ = [
    "ID_LIMIT",
    "Block",
    "BlockKind",
    "Conversation",
    "Message",
    "Payload",
    "Plain",
    "Reasoning",
    "Role",
    "Sampled",
    "Text",
    "Tokens",
    "ToolCall",
    "block_kind",
    "check_bool",
    "check_token_ids",
    "content_of",
    "lower_payload",
    "lpay_is_empty",
    "map_block",
    "payload_of",
    "plain_blocks",
]

#: Token ids are below this bound (they travel as ``u32`` on the FFI wire and as ``int32``
#: in :class:`lvt.encoder.Encoded`; every shipped vocabulary is far smaller).
ID_LIMIT = 2**32


def _type_name(x: Any) -> str:
    return type(x).__name__


def _bad_id(argument: str, j: int, t: Any, message_index: int | None) -> ArgumentError:
    if isinstance(t, bool | np.bool_):
        why = f"token id {t!r} is a bool, expected an integer"
    elif isinstance(t, int | np.integer):
        why = f"token id {int(t)} is outside [0, 2**32)"
    elif isinstance(t, list | tuple | np.ndarray):
        why = f"expected a flat sequence of token ids, found a nested {_type_name(t)}"
    else:
        why = f"token id {t!r} is a {_type_name(t)}, expected an integer"
    return ArgumentError(argument, why, message_index=message_index, position=j)


def check_token_ids(
    ids: Any,
    argument: str = "ids",
    *,
    limit: int | None = ID_LIMIT,
    message_index: int | None = None,
) -> tuple[int, ...]:
    """``ids`` as a tuple of Python ints, checked: a 1-D sequence (list, tuple, ``range``, a
    NumPy integer array, anything with ``__array__`` such as a CPU tensor, or another
    iterable) of Python/NumPy integers, none a ``bool`` or a float, each in ``[0, limit)``
    (``limit=None``: any integer; the caller checks the range).

    Raises:
        ArgumentError: naming ``argument`` and the position of the first bad element.
    """
    if ids is None or isinstance(ids, str | bytes | bytearray | Mapping | set | frozenset):
        raise ArgumentError(argument, f"expected a sequence of token ids, got {_type_name(ids)}",
                            message_index=message_index)
    if isinstance(ids, np.ndarray) or (
        hasattr(ids, "__array__") and not isinstance(ids, list | tuple)
    ):
        try:
            a = np.asarray(ids)
        except Exception as e:  # a tensor on a device, an object refusing conversion
            raise ArgumentError(argument, f"cannot read {_type_name(ids)} as an array: {e}",
                                message_index=message_index) from None
        if a.ndim != 1:
            raise ArgumentError(argument, f"expected a 1-D array of token ids, got shape "
                                f"{tuple(a.shape)}", message_index=message_index)
        if a.dtype.kind not in "iu":
            if a.dtype.kind == "O":
                return check_token_ids(a.tolist(), argument, limit=limit,
                                       message_index=message_index)
            raise ArgumentError(argument, f"expected an integer array of token ids, got dtype "
                                f"{a.dtype}", message_index=message_index)
        if limit is not None and a.size:
            bad = np.flatnonzero((a < 0) | (a >= limit)) if a.dtype.kind == "i" else (
                np.flatnonzero(a >= limit))
            if bad.size:
                j = int(bad[0])
                raise _bad_id(argument, j, a[j], message_index)
        return tuple(a.tolist())
    if not isinstance(ids, list | tuple):
        if not isinstance(ids, Iterable):
            raise ArgumentError(argument, f"expected a sequence of token ids, got "
                                f"{_type_name(ids)}", message_index=message_index)
        ids = tuple(ids)
    # fast path: plain Python ints (``type is int`` rules out bool)
    if all(type(t) is int for t in ids):
        ts = tuple(ids)
        if limit is not None and ts and (min(ts) < 0 or max(ts) >= limit):
            j = next(j for j, t in enumerate(ts) if not 0 <= t < limit)
            raise _bad_id(argument, j, ts[j], message_index)
        return ts
    out = []
    for j, t in enumerate(ids):
        if type(t) is int or (isinstance(t, int | np.integer) and not isinstance(t, bool)):
            t = int(t)
            if limit is None or 0 <= t < limit:
                out.append(t)
                continue
        raise _bad_id(argument, j, t, message_index)
    return tuple(out)


def _check_text(argument: str, s: Any) -> None:
    if not isinstance(s, str):
        raise ArgumentError(argument, f"expected a str, got {_type_name(s)}")


def _check_payload(argument: str, p: Any) -> None:
    if not isinstance(p, Text | Tokens):
        hint = " (wrap text in lvt.Text)" if isinstance(p, str) else ""
        raise ArgumentError(argument, f"expected lvt.Text or lvt.Tokens, got "
                            f"{_type_name(p)}{hint}")


class Role(StrEnum):
    """The speaker of a message (``Verified.Role``)."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


#: Every role, in the order the parser tries them (``Role.all``).
ROLE_ALL: tuple[Role, ...] = (
    Role.SYSTEM,
    Role.DEVELOPER,
    Role.USER,
    Role.ASSISTANT,
    Role.TOOL,
)


@dataclass(frozen=True, slots=True)
class Text:
    """A text payload, encoded by the codec (``Payload.text``).

    Raises:
        ArgumentError: ``text`` is not a ``str``.
    """

    text: str

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            _check_text("text", self.text)


@dataclass(frozen=True, slots=True)
class Tokens:
    """A token payload, kept verbatim (``Payload.tokens``).

    Raises:
        ArgumentError: ``ids`` is not a flat sequence of integers in ``[0, 2**32)`` (see
            :func:`check_token_ids`; the vocabulary bound is checked by ``encode``).
    """

    ids: tuple[int, ...]

    def __init__(self, ids: Iterable[int]) -> None:
        object.__setattr__(self, "ids", check_token_ids(ids, "ids"))


Payload: TypeAlias = Text | Tokens


class BlockKind(Enum):
    """The kind of a block (``Verified.BlockKind``)."""

    PLAIN = "plain"
    REASONING = "reasoning"
    TOOL_CALL = "tool_call"
    SAMPLED = "sampled"


#: Block kinds in the order the parser tries their openers (``BlockKind.all``).
BLOCK_KIND_ALL: tuple[BlockKind, ...] = (
    BlockKind.REASONING, BlockKind.TOOL_CALL, BlockKind.PLAIN, BlockKind.SAMPLED
)


@dataclass(frozen=True, slots=True)
class Plain:
    """Plain content (``Block.plain``).

    Raises:
        ArgumentError: ``payload`` is not a :class:`Text` or :class:`Tokens`.
    """

    payload: Payload

    def __post_init__(self) -> None:
        tp = type(self.payload)
        if tp is not Text and tp is not Tokens:
            _check_payload("payload", self.payload)

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.PLAIN


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning ("thinking") content (``Block.reasoning``).

    Raises:
        ArgumentError: ``payload`` is not a :class:`Text` or :class:`Tokens`.
    """

    payload: Payload

    def __post_init__(self) -> None:
        tp = type(self.payload)
        if tp is not Text and tp is not Tokens:
            _check_payload("payload", self.payload)

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.REASONING


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call: the tool name, the argument text the template writes and the call id
    (``Block.toolCall``). :func:`lvt.openai.from_openai` serialises argument objects with the
    family's ``tojson`` and reads ``tool_calls[].id`` into ``id``.

    ``id`` is the OpenAI ``tool_calls[].id`` (``None``: the call has none). Families whose
    templates ignore ids ignore it (their ``parse`` returns ``id=None``); Mistral v7 and v11
    write it, and a tool result answers the call at its position (results carry no id).

    Raises:
        ArgumentError: ``name`` or ``args`` is not a ``str`` (or a :class:`Text`), or ``id``
            is neither ``None`` nor a ``str``.
    """

    name: str
    args: str
    id: str | None

    def __init__(self, name: str | Text, args: str | Text, id: str | None = None) -> None:
        name = name.text if isinstance(name, Text) else name
        args = args.text if isinstance(args, Text) else args
        _check_text("name", name)
        if not isinstance(args, str):
            hint = " (serialise objects with lvt.openai.tool_arguments)" if isinstance(
                args, Mapping) else ""
            raise ArgumentError("args", f"expected a str, got {_type_name(args)}{hint}")
        if id is not None and not isinstance(id, str):
            raise ArgumentError("id", f"expected a str or None, got {_type_name(id)}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "id", id)

    def without_id(self) -> ToolCall:
        """The same call with ``id=None`` (what the parse of a family that ignores ids
        returns)."""
        return self if self.id is None else ToolCall(self.name, self.args)

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.TOOL_CALL


@dataclass(frozen=True, slots=True)
class Sampled:
    """A sampled assistant turn (``Block.sampled``): every token the policy produced after the
    generation prompt, up to (not including) the end of turn, kept verbatim, including the
    format's in-body control tokens (``<think>``, ``<tool_call>``). Only as the single block
    of an assistant message.

    Raises:
        ArgumentError: ``ids`` is not a flat sequence of integers in ``[0, 2**32)``.
    """

    ids: tuple[int, ...]

    def __init__(self, ids: Iterable[int]) -> None:
        object.__setattr__(self, "ids", check_token_ids(ids, "ids"))

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.SAMPLED


Block: TypeAlias = Plain | Reasoning | ToolCall | Sampled


def block_kind(b: Block) -> BlockKind:
    """The kind of a block."""
    return b.kind


def map_block(f: Callable[[Payload], Payload], b: Block) -> Block:
    """Apply ``f`` to every payload of a block (``Plain`` and ``Reasoning``)."""
    if isinstance(b, Plain):
        return Plain(f(b.payload))
    if isinstance(b, Reasoning):
        return Reasoning(f(b.payload))
    return b


_BLOCK_TYPES = (Plain, Reasoning, ToolCall, Sampled)
_BLOCK_SET = frozenset(_BLOCK_TYPES)


def _role(role: Any) -> Role:
    if type(role) is Role:
        return role
    try:
        return Role(role)
    except (ValueError, TypeError):
        raise ArgumentError(
            "role", f"unknown role {role!r} (expected one of {[r.value for r in Role]})"
        ) from None


def _blocks(blocks: Any) -> tuple[Block, ...]:
    tb = type(blocks)
    if tb is tuple or tb is list:  # the common case, without the ABC checks
        bs = tuple(blocks)
        types = _BLOCK_SET
        if all(type(b) in types for b in bs):
            return bs
    elif isinstance(blocks, str | bytes | Mapping) or not isinstance(blocks, Iterable):
        hint = "; use Message.text(role, s) for one text block" if isinstance(
            blocks, str) else ""
        raise ArgumentError("blocks", f"expected an iterable of blocks, got "
                            f"{_type_name(blocks)}{hint}")
    else:
        bs = tuple(blocks)
    for j, b in enumerate(bs):
        if not isinstance(b, _BLOCK_TYPES):
            hint = " (wrap it as Plain(Text(...)))" if isinstance(b, str | Text) else ""
            raise ArgumentError("blocks", f"expected Plain, Reasoning, ToolCall or Sampled, "
                                f"got {_type_name(b)}{hint}", position=j)
    return bs


@dataclass(frozen=True, slots=True)
class Message:
    """A message: a role and a body of blocks (``Verified.Message``).

    Raises:
        ArgumentError: ``role`` is not a :class:`Role` name, or ``blocks`` is not an
            iterable of blocks (a ``str`` is refused: use :meth:`Message.text`).
    """

    role: Role
    blocks: tuple[Block, ...] = field(default=())

    def __init__(self, role: Role | str, blocks: Iterable[Block] = ()) -> None:
        object.__setattr__(self, "role", _role(role))
        object.__setattr__(self, "blocks", _blocks(blocks))

    @staticmethod
    def text(role: Role | str, s: str) -> Message:
        """A message with one plain text block (no block at all when ``s`` is empty)."""
        return Message(role, (Plain(Text(s)),) if s else ())

    def map(self, f: Callable[[Payload], Payload]) -> Message:
        """Apply ``f`` to every payload (``Message.map``)."""
        return Message(self.role, tuple(map_block(f, b) for b in self.blocks))


def lower_payload(p: Payload) -> str | tuple[int, ...]:
    """``Payload.lower``: a text payload as its ``str``, a token payload as its ids."""
    if isinstance(p, Text):
        return p.text
    if isinstance(p, Tokens):
        return p.ids
    raise TypeError(f"not a payload: {p!r}")


def payload_of(p: str | tuple[int, ...]) -> Payload:
    """The payload a lowered payload came from (the inverse of :func:`lower_payload`)."""
    return Text(p) if isinstance(p, str) else Tokens(p)


def plain_blocks(p: str | tuple[int, ...]) -> tuple[Block, ...]:
    """A lowered content as a message's blocks: none for empty text, else one plain block."""
    return () if isinstance(p, str) and p == "" else (Plain(payload_of(p)),)


def lpay_is_empty(p: str | tuple[int, ...]) -> bool:
    """``LPay.isEmpty``: the template's ``if content`` is false."""
    return len(p) == 0


def content_of(m: Message) -> str | tuple[int, ...] | None:
    """``Message.content?``: the lowered payload of the only plain block (``''`` for no
    block), or ``None`` for any other body."""
    if not m.blocks:
        return ""
    if len(m.blocks) == 1 and isinstance(m.blocks[0], Plain):
        return lower_payload(m.blocks[0].payload)
    return None


def check_bool(argument: str, v: Any) -> bool:
    """``v`` when it is a ``bool`` (or a NumPy bool); no truthiness coercion.

    Raises:
        ArgumentError: anything else (``"no"``, ``0``, ``None``).
    """
    if type(v) is bool:
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    raise ArgumentError(argument, f"expected True or False, got {v!r} ({_type_name(v)})")


def _messages(messages: Any) -> tuple[Message, ...]:
    tm = type(messages)
    if tm is tuple or tm is list:  # the common case, without the ABC checks
        ms = tuple(messages)
        if all(type(m) is Message for m in ms):
            return ms
    elif isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        hint = "; convert OpenAI-style messages with lvt.from_openai" if isinstance(
            messages, Mapping) else ""
        raise ArgumentError("messages", f"expected an iterable of lvt.Message, got "
                            f"{_type_name(messages)}{hint}")
    else:
        ms = tuple(messages)
    for i, m in enumerate(ms):
        if not isinstance(m, Message):
            hint = ("; convert OpenAI-style dicts with lvt.from_openai(messages)"
                    if isinstance(m, Mapping) else "")
            raise ArgumentError("messages", f"expected an lvt.Message, got "
                                f"{_type_name(m)}{hint}", message_index=i)
    return ms


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation (``Verified.Conversation``): messages, the tool definitions (``None``:
    no tools were given; JSON objects as passed to ``apply_chat_template(tools=...)``, frozen
    with :func:`lvt.jsonfmt.freeze`) and whether a generation prompt follows.

    Raises:
        ArgumentError: ``messages`` is not an iterable of :class:`Message` (a dict is refused:
            convert OpenAI-style messages with :func:`lvt.openai.from_openai`),
            ``add_generation_prompt`` is not a ``bool``, or ``tools`` is a string, a mapping
            or not iterable.
        ConversationError: a tool definition is not JSON data or is nested deeper than 64
            levels (from :func:`lvt.jsonfmt.freeze`).
    """

    messages: tuple[Message, ...]
    add_generation_prompt: bool = False
    tools: tuple[Any, ...] | None = None

    def __init__(
        self,
        messages: Iterable[Message],
        add_generation_prompt: bool = False,
        tools: Iterable[Any] | None = None,
    ) -> None:
        from lvt.jsonfmt import freeze

        object.__setattr__(self, "messages", _messages(messages))
        object.__setattr__(self, "add_generation_prompt",
                           check_bool("add_generation_prompt", add_generation_prompt))
        if tools is not None and (
            isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable)
        ):
            raise ArgumentError("tools", f"expected a list of JSON tool definitions, got "
                                f"{_type_name(tools)}")
        object.__setattr__(
            self, "tools", None if tools is None else tuple(
                freeze(t, where=f"tool {k}") for k, t in enumerate(tools))
        )

    def map(self, f: Callable[[Payload], Payload]) -> Conversation:
        """Apply ``f`` to every payload."""
        return Conversation(
            tuple(m.map(f) for m in self.messages), self.add_generation_prompt, self.tools
        )

    def __len__(self) -> int:
        return len(self.messages)

    def __add__(self, other: Conversation) -> Conversation:
        """Concatenate message lists; the generation-prompt flag is taken from ``other``, the
        tools from ``self`` (``TypeError`` for anything but a :class:`Conversation`)."""
        if not isinstance(other, Conversation):
            return NotImplemented
        return Conversation(
            self.messages + other.messages, other.add_generation_prompt, self.tools
        )
