"""The message AST, mirroring ``Verified/Spec/Message.lean``.

A :class:`Conversation` is a tuple of :class:`Message` objects, each with a :class:`Role` and
a body of blocks (:class:`Plain`, :class:`Reasoning`, :class:`ToolCall`). Every payload is
either :class:`Text` (encoded by the codec) or :class:`Tokens` (kept verbatim, e.g. tokens
sampled at inference time). All classes are frozen, hashable dataclasses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import TypeAlias

__all__ = [
    "Block",
    "BlockKind",
    "Conversation",
    "Message",
    "Payload",
    "Plain",
    "Reasoning",
    "Role",
    "Text",
    "Tokens",
    "ToolCall",
    "block_kind",
    "map_block",
]


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
    """A text payload, encoded by the codec (``Payload.text``)."""

    text: str


@dataclass(frozen=True, slots=True)
class Tokens:
    """A token payload, kept verbatim (``Payload.tokens``)."""

    ids: tuple[int, ...]

    def __init__(self, ids: Iterable[int]) -> None:
        object.__setattr__(self, "ids", tuple(int(t) for t in ids))


Payload: TypeAlias = Text | Tokens


class BlockKind(Enum):
    """The kind of a block (``Verified.BlockKind``)."""

    PLAIN = "plain"
    REASONING = "reasoning"
    TOOL_CALL = "tool_call"


#: Block kinds in the order the parser tries their openers (``BlockKind.all``).
BLOCK_KIND_ALL: tuple[BlockKind, ...] = (BlockKind.REASONING, BlockKind.TOOL_CALL, BlockKind.PLAIN)


@dataclass(frozen=True, slots=True)
class Plain:
    """Plain content (``Block.plain``)."""

    payload: Payload

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.PLAIN


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning ("thinking") content (``Block.reasoning``)."""

    payload: Payload

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.REASONING


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call: the tool name and the argument text (``Block.toolCall``).

    How a call is laid out is a property of the format: some formats render the name and the
    arguments separately, others expect both inside the argument text (and an empty name).
    :meth:`lvt.formats.FormatSpec.shape_tool_call` does that layout.
    """

    name: Payload
    args: Payload

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.TOOL_CALL


Block: TypeAlias = Plain | Reasoning | ToolCall


def block_kind(b: Block) -> BlockKind:
    """The kind of a block (``Block.kind``)."""
    return b.kind


def map_block(f: Callable[[Payload], Payload], b: Block) -> Block:
    """Apply ``f`` to every payload of a block (``Block.map``)."""
    if isinstance(b, Plain):
        return Plain(f(b.payload))
    if isinstance(b, Reasoning):
        return Reasoning(f(b.payload))
    return ToolCall(f(b.name), f(b.args))


@dataclass(frozen=True, slots=True)
class Message:
    """A message: a role and a body of blocks (``Verified.Message``)."""

    role: Role
    blocks: tuple[Block, ...] = field(default=())

    def __init__(self, role: Role | str, blocks: Iterable[Block] = ()) -> None:
        object.__setattr__(self, "role", Role(role))
        object.__setattr__(self, "blocks", tuple(blocks))

    @staticmethod
    def text(role: Role | str, s: str) -> Message:
        """A message with one plain text block (no block at all when ``s`` is empty)."""
        return Message(role, (Plain(Text(s)),) if s else ())

    def map(self, f: Callable[[Payload], Payload]) -> Message:
        """Apply ``f`` to every payload (``Message.map``)."""
        return Message(self.role, tuple(map_block(f, b) for b in self.blocks))


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation: messages and whether a generation prompt follows
    (``Verified.Conversation``)."""

    messages: tuple[Message, ...]
    add_generation_prompt: bool = False

    def __init__(self, messages: Iterable[Message], add_generation_prompt: bool = False) -> None:
        object.__setattr__(self, "messages", tuple(messages))
        object.__setattr__(self, "add_generation_prompt", bool(add_generation_prompt))

    def map(self, f: Callable[[Payload], Payload]) -> Conversation:
        """Apply ``f`` to every payload (``Conversation.map``)."""
        return Conversation(tuple(m.map(f) for m in self.messages), self.add_generation_prompt)

    def __len__(self) -> int:
        return len(self.messages)

    def __add__(self, other: Conversation) -> Conversation:
        """Concatenate message lists; the generation-prompt flag is taken from ``other``."""
        return Conversation(self.messages + other.messages, other.add_generation_prompt)
