"""The byte layout of the FFI, in Python: a line-by-line mirror of ``Verified/Ffi.lean``.

The Lean exports ``lvt_render_bytes`` and ``lvt_parse_bytes`` take and return bytes; this
module builds the requests and reads the answers (and, so that everything round-trips and can
be tested without the library, also the other two directions: reading requests and building
answers, exactly as the Lean side does).

Layout (version 1; every integer a little-endian ``u32``; a *token list* is a count followed by
that many ids):

* format: 19 token lists: ``reserved``, ``bos``, then ``header``/``footer`` for the roles
  system, developer, user, assistant, tool, then ``block_open``/``block_close`` for the kinds
  plain, reasoning, tool call, then ``tool_sep``;
* conversation: one byte ``add_generation_prompt`` (0/1), a message count, and per message a
  role byte (0 system … 4 tool), a block count and per block a kind byte (0 plain, 1 reasoning,
  2 tool call) and its payload token list(s) (name, then arguments, for a tool call);
* render request: the version byte ``1``, a format, a conversation;
  parse request: the version byte, a format, a token list;
* render answer: status ``0``, flags (bit 0 well formed, bit 1 valid), a cell count ``n``, ``n``
  ids, ``n`` mask bytes, ``n`` owners, ``n`` source bytes;
  parse answer: status ``0``, flags (bit 0 well formed), ``1`` and a conversation, or ``0``;
  error answer: status ``1``, a byte length and a UTF-8 message.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lvt.errors import NativeLibraryError
from lvt.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Tokens,
    ToolCall,
)
from lvt.spec import Cell, EncFormat, Src

__all__ = [
    "KIND_ORDER",
    "ROLE_ORDER",
    "SRC_ORDER",
    "WIRE_VERSION",
    "ParseAnswer",
    "RenderAnswer",
    "WireAnswerError",
    "WireDecodeError",
    "decode_conversation",
    "decode_format",
    "decode_parse_answer",
    "decode_parse_request",
    "decode_render_answer",
    "decode_render_request",
    "encode_conversation",
    "encode_error",
    "encode_format",
    "encode_parse_answer",
    "encode_parse_request",
    "encode_render_answer",
    "encode_render_request",
    "encode_tokens",
    "format_lists",
]

WIRE_VERSION = 1
"""``Verified.Ffi.wireVersion``."""

U32_LIMIT = 1 << 32

ROLE_ORDER: tuple[Role, ...] = (
    Role.SYSTEM,
    Role.DEVELOPER,
    Role.USER,
    Role.ASSISTANT,
    Role.TOOL,
)
"""Role bytes 0..4 (``roleByte``)."""

KIND_ORDER: tuple[BlockKind, ...] = (BlockKind.PLAIN, BlockKind.REASONING, BlockKind.TOOL_CALL)
"""Kind bytes 0..2 (``kindByte``) and the order of block delimiters in a format."""

SRC_ORDER: tuple[Src, ...] = (
    Src.BOS,
    Src.HEADER,
    Src.DELIM,
    Src.PAYLOAD,
    Src.EOT,
    Src.FOOTER,
    Src.PROMPT,
)
"""Source bytes 0..6 (``srcByte``)."""

_ROLE_BYTE = {r: i for i, r in enumerate(ROLE_ORDER)}
_KIND_BYTE = {k: i for i, k in enumerate(KIND_ORDER)}
_SRC_BYTE = {s: i for i, s in enumerate(SRC_ORDER)}
_SRC_TABLE = np.array(SRC_ORDER + (None,) * (256 - len(SRC_ORDER)), dtype=object)


class WireDecodeError(NativeLibraryError, ValueError):
    """A request or an answer does not follow the wire layout.

    Attributes:
        kind: for requests, the ``Verified.Ffi.WireError`` case the Lean decoder reports
            (``"empty"``, ``"version"``, ``"format"``, ``"conversation"``, ``"tokens"``,
            ``"trailing"``); ``"answer"`` for a malformed answer.
    """

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind = kind
        super().__init__(f"lvt wire: {kind}" + (f": {detail}" if detail else ""))


class WireAnswerError(NativeLibraryError):
    """The Lean side answered with status 1: it could not decode the request.

    Attributes:
        reason: the message sent by the Lean side.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the native library rejected the request: {reason}")


# ---------------------------------------------------------------------------------------------
# Encoding (requests: what Python sends)


def _check_u32(values: Sequence[int], what: str) -> None:
    for v in values:
        if not 0 <= v < U32_LIMIT:
            raise ValueError(f"{what} {v} does not fit in a u32")


def _u32(n: int) -> bytes:
    if not 0 <= n < U32_LIMIT:
        raise ValueError(f"count {n} does not fit in a u32")
    return struct.pack("<I", n)


def encode_tokens(ts: Sequence[int]) -> bytes:
    """``encToks``: a count, then the ids."""
    ts = tuple(int(t) for t in ts)
    _check_u32(ts, "token id")
    return _u32(len(ts)) + struct.pack(f"<{len(ts)}I", *ts)


def format_lists(f: EncFormat) -> list[tuple[int, ...]]:
    """``formatLists``: the 19 token lists of a format, in wire order."""
    lists: list[tuple[int, ...]] = [tuple(f.reserved), tuple(f.bos)]
    for r in ROLE_ORDER:
        lists += [tuple(f.header[r]), tuple(f.footer[r])]
    for k in KIND_ORDER:
        lists += [tuple(f.block_open[k]), tuple(f.block_close[k])]
    lists.append(tuple(f.tool_sep))
    return lists


def encode_format(f: EncFormat) -> bytes:
    """``encFormat``."""
    return b"".join(encode_tokens(ts) for ts in format_lists(f))


def _payload_ids(p: object) -> tuple[int, ...]:
    if isinstance(p, Tokens):
        return p.ids
    raise TypeError(f"the wire carries pre-encoded payloads only (lvt.model.Tokens), got {p!r}")


def _encode_block(b: Block) -> bytes:
    if isinstance(b, Plain):
        return bytes([0]) + encode_tokens(_payload_ids(b.payload))
    if isinstance(b, Reasoning):
        return bytes([1]) + encode_tokens(_payload_ids(b.payload))
    if isinstance(b, ToolCall):
        return (
            bytes([2]) + encode_tokens(_payload_ids(b.name)) + encode_tokens(_payload_ids(b.args))
        )
    raise TypeError(f"not a block: {b!r}")


def _encode_message(m: Message) -> bytes:
    return (
        bytes([_ROLE_BYTE[m.role]])
        + _u32(len(m.blocks))
        + b"".join(_encode_block(b) for b in m.blocks)
    )


def encode_conversation(c: Conversation) -> bytes:
    """``encConv``: payloads must be :class:`lvt.model.Tokens`."""
    return (
        bytes([1 if c.add_generation_prompt else 0])
        + _u32(len(c.messages))
        + b"".join(_encode_message(m) for m in c.messages)
    )


def encode_render_request(f: EncFormat, c: Conversation) -> bytes:
    """``encRenderRequest``: the bytes given to ``lvt_render``."""
    return bytes([WIRE_VERSION]) + encode_format(f) + encode_conversation(c)


def encode_parse_request(f: EncFormat, ids: Sequence[int]) -> bytes:
    """``encParseRequest``: the bytes given to ``lvt_parse``."""
    return bytes([WIRE_VERSION]) + encode_format(f) + encode_tokens(ids)


# ---------------------------------------------------------------------------------------------
# Decoding (requests: what Lean reads; mirrors readFormat / readConv / read…Request)


class _Reader:
    """A cursor over bytes; every read returns ``None`` when the bytes run out (like the
    ``Option`` results of the Lean decoders)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int | None:
        if self.pos >= len(self.data):
            return None
        self.pos += 1
        return self.data[self.pos - 1]

    def u32(self) -> int | None:
        if self.pos + 4 > len(self.data):
            return None
        (v,) = struct.unpack_from("<I", self.data, self.pos)
        self.pos += 4
        return int(v)

    def toks(self) -> tuple[int, ...] | None:
        n = self.u32()
        if n is None or self.pos + 4 * n > len(self.data):
            return None
        out = struct.unpack_from(f"<{n}I", self.data, self.pos)
        self.pos += 4 * n
        return tuple(int(t) for t in out)

    def at_end(self) -> bool:
        return self.pos == len(self.data)


def _format_of_lists(ls: Sequence[tuple[int, ...]]) -> EncFormat:
    header = {r: ls[2 + 2 * i] for i, r in enumerate(ROLE_ORDER)}
    footer = {r: ls[3 + 2 * i] for i, r in enumerate(ROLE_ORDER)}
    block_open = {k: ls[12 + 2 * i] for i, k in enumerate(KIND_ORDER)}
    block_close = {k: ls[13 + 2 * i] for i, k in enumerate(KIND_ORDER)}
    return EncFormat(
        reserved=ls[0],
        bos=ls[1],
        header=header,
        footer=footer,
        block_open=block_open,
        block_close=block_close,
        tool_sep=ls[18],
    )


def _read_format(r: _Reader) -> EncFormat | None:
    lists: list[tuple[int, ...]] = []
    for _ in range(19):
        ts = r.toks()
        if ts is None:
            return None
        lists.append(ts)
    return _format_of_lists(lists)


def _read_block(r: _Reader) -> Block | None:
    k = r.byte()
    if k == 0 or k == 1:
        p = r.toks()
        if p is None:
            return None
        return Plain(Tokens(p)) if k == 0 else Reasoning(Tokens(p))
    if k == 2:
        n = r.toks()
        if n is None:
            return None
        a = r.toks()
        if a is None:
            return None
        return ToolCall(Tokens(n), Tokens(a))
    return None


def _read_message(r: _Reader) -> Message | None:
    rb = r.byte()
    if rb is None or rb >= len(ROLE_ORDER):
        return None
    n = r.u32()
    if n is None:
        return None
    blocks: list[Block] = []
    for _ in range(n):
        b = _read_block(r)
        if b is None:
            return None
        blocks.append(b)
    return Message(ROLE_ORDER[rb], blocks)


def _read_conversation(r: _Reader) -> Conversation | None:
    g = r.byte()
    if g is None or g >= 2:
        return None
    n = r.u32()
    if n is None:
        return None
    msgs: list[Message] = []
    for _ in range(n):
        m = _read_message(r)
        if m is None:
            return None
        msgs.append(m)
    return Conversation(msgs, g == 1)


def decode_format(data: bytes) -> EncFormat:
    """Read a format that makes up all of ``data``."""
    r = _Reader(data)
    f = _read_format(r)
    if f is None:
        raise WireDecodeError("format")
    if not r.at_end():
        raise WireDecodeError("trailing")
    return f


def decode_conversation(data: bytes) -> Conversation:
    """Read a conversation that makes up all of ``data``."""
    r = _Reader(data)
    c = _read_conversation(r)
    if c is None:
        raise WireDecodeError("conversation")
    if not r.at_end():
        raise WireDecodeError("trailing")
    return c


def _read_header(data: bytes) -> tuple[_Reader, EncFormat]:
    if not data:
        raise WireDecodeError("empty")
    if data[0] != WIRE_VERSION:
        raise WireDecodeError("version")
    r = _Reader(data)
    r.pos = 1
    f = _read_format(r)
    if f is None:
        raise WireDecodeError("format")
    return r, f


def decode_render_request(data: bytes) -> tuple[EncFormat, Conversation]:
    """``readRenderRequest``; raises :class:`WireDecodeError` with the Lean error case."""
    r, f = _read_header(data)
    c = _read_conversation(r)
    if c is None:
        raise WireDecodeError("conversation")
    if not r.at_end():
        raise WireDecodeError("trailing")
    return f, c


def decode_parse_request(data: bytes) -> tuple[EncFormat, tuple[int, ...]]:
    """``readParseRequest``; raises :class:`WireDecodeError` with the Lean error case."""
    r, f = _read_header(data)
    ts = r.toks()
    if ts is None:
        raise WireDecodeError("tokens")
    if not r.at_end():
        raise WireDecodeError("trailing")
    return f, ts


# ---------------------------------------------------------------------------------------------
# Answers


@dataclass(frozen=True)
class RenderAnswer:
    """A decoded render answer: the flags and the four aligned columns."""

    wf: bool
    valid: bool
    ids: np.ndarray
    mask: np.ndarray
    owner: np.ndarray
    src: np.ndarray

    def cells(self) -> list[Cell]:
        """The answer as :class:`lvt.spec.Cell` objects (the type of ``spec.render_tok``)."""
        srcs = _SRC_TABLE[self.src]
        return [
            Cell(int(t), s, int(o), bool(m))
            for t, s, o, m in zip(
                self.ids.tolist(), srcs, self.owner.tolist(), self.mask.tolist(), strict=True
            )
        ]


@dataclass(frozen=True)
class ParseAnswer:
    """A decoded parse answer."""

    wf: bool
    conversation: Conversation | None


def encode_render_answer(wf: bool, valid: bool, cells: Sequence[Cell]) -> bytes:
    """``encRenderAnswer`` (what the Lean side sends back)."""
    ids = [c.tok for c in cells]
    owners = [c.owner for c in cells]
    _check_u32(ids, "token id")
    _check_u32(owners, "owner")
    n = len(cells)
    return (
        bytes([0, (1 if wf else 0) + (2 if valid else 0)])
        + _u32(n)
        + struct.pack(f"<{n}I", *ids)
        + bytes(1 if c.loss else 0 for c in cells)
        + struct.pack(f"<{n}I", *owners)
        + bytes(_SRC_BYTE[c.src] for c in cells)
    )


def encode_parse_answer(wf: bool, conversation: Conversation | None) -> bytes:
    """``encParseAnswer``."""
    if conversation is None:
        return bytes([0, 1 if wf else 0, 0])
    return bytes([0, 1 if wf else 0, 1]) + encode_conversation(conversation)


def encode_error(message: str) -> bytes:
    """``encError``: status 1 and the UTF-8 message."""
    raw = message.encode("utf-8")
    return bytes([1]) + _u32(len(raw)) + raw


def _check_status(data: bytes) -> None:
    if not data:
        raise WireDecodeError("answer", "empty answer")
    if data[0] == 1:
        if len(data) < 5:
            raise WireDecodeError("answer", "truncated error answer")
        (n,) = struct.unpack_from("<I", data, 1)
        if len(data) != 5 + n:
            raise WireDecodeError("answer", "bad error answer length")
        raise WireAnswerError(data[5:].decode("utf-8", errors="replace"))
    if data[0] != 0:
        raise WireDecodeError("answer", f"unknown status {data[0]}")


def decode_render_answer(data: bytes) -> RenderAnswer:
    """Read a render answer; raises :class:`WireAnswerError` for status 1."""
    _check_status(data)
    if len(data) < 6:
        raise WireDecodeError("answer", "truncated render answer")
    flags = data[1]
    (n,) = struct.unpack_from("<I", data, 2)
    if len(data) != 6 + 10 * n:
        raise WireDecodeError("answer", f"render answer of {len(data)} bytes for {n} cells")
    buf = memoryview(data)
    off = 6
    ids = np.frombuffer(buf, dtype="<u4", count=n, offset=off).astype(np.int64)
    off += 4 * n
    mask = np.frombuffer(buf, dtype=np.uint8, count=n, offset=off).copy()
    off += n
    owner = np.frombuffer(buf, dtype="<u4", count=n, offset=off).astype(np.int64)
    off += 4 * n
    src = np.frombuffer(buf, dtype=np.uint8, count=n, offset=off).copy()
    if n and (int(mask.max()) > 1 or int(src.max()) >= len(SRC_ORDER)):
        raise WireDecodeError("answer", "mask or source byte out of range")
    return RenderAnswer(bool(flags & 1), bool(flags & 2), ids, mask, owner, src)


def decode_parse_answer(data: bytes) -> ParseAnswer:
    """Read a parse answer; raises :class:`WireAnswerError` for status 1."""
    _check_status(data)
    if len(data) < 3:
        raise WireDecodeError("answer", "truncated parse answer")
    wf = bool(data[1] & 1)
    if data[2] == 0:
        if len(data) != 3:
            raise WireDecodeError("answer", "trailing bytes after an empty parse answer")
        return ParseAnswer(wf, None)
    if data[2] != 1:
        raise WireDecodeError("answer", f"bad presence byte {data[2]}")
    try:
        conv = decode_conversation(data[3:])
    except WireDecodeError as e:
        raise WireDecodeError("answer", f"bad conversation ({e.kind})") from None
    return ParseAnswer(wf, conv)
