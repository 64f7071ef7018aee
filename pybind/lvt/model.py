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
from typing import Any, TypeAlias

__all__ = [
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
    SAMPLED = "sampled"


#: Block kinds in the order the parser tries their openers (``BlockKind.all``).
BLOCK_KIND_ALL: tuple[BlockKind, ...] = (
    BlockKind.REASONING, BlockKind.TOOL_CALL, BlockKind.PLAIN, BlockKind.SAMPLED
)


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
    """A tool call: the tool name and the argument text the template writes
    (``Block.toolCall``). :func:`lvt.openai.from_openai` serialises argument objects with the
    family's ``tojson``."""

    name: str
    args: str

    def __init__(self, name: str | Text, args: str | Text) -> None:
        object.__setattr__(self, "name", name.text if isinstance(name, Text) else name)
        object.__setattr__(self, "args", args.text if isinstance(args, Text) else args)

    @property
    def kind(self) -> BlockKind:
        """The block kind."""
        return BlockKind.TOOL_CALL


@dataclass(frozen=True, slots=True)
class Sampled:
    """A sampled assistant turn (``Block.sampled``): every token the policy produced after the
    generation prompt, up to (not including) the end of turn, kept verbatim, including the
    format's in-body control tokens (``<think>``, ``<tool_call>``). Only as the single block
    of an assistant message."""

    ids: tuple[int, ...]

    def __init__(self, ids: Iterable[int]) -> None:
        object.__setattr__(self, "ids", tuple(int(t) for t in ids))

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
    """A conversation (``Verified.Conversation``): messages, the tool definitions (``None``:
    no tools were given; JSON objects as passed to ``apply_chat_template(tools=...)``, frozen
    with :func:`lvt.jsonfmt.freeze`) and whether a generation prompt follows."""

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

        object.__setattr__(self, "messages", tuple(messages))
        object.__setattr__(self, "add_generation_prompt", bool(add_generation_prompt))
        object.__setattr__(
            self, "tools", None if tools is None else tuple(freeze(t) for t in tools)
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
        tools from ``self``."""
        return Conversation(
            self.messages + other.messages, other.add_generation_prompt, self.tools
        )
