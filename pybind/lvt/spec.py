"""The reference backend: a line-by-line transliteration of ``Verified/Spec``.

Every function here has the name of its Lean counterpart in snake_case, the same case
structure, the same order of tries and the same fuel logic; the differential tests compare
this module with the Lean definitions by kernel evaluation. Functions that recurse on a list
in Lean (``isPrefixB``, ``stripPrefix?``, ``takeFree``, ``renderBlocks``, ``renderMsgs``,
``parseBlocks``, ``parseMsgs``) are written as loops with the same meaning, because Python's
recursion limit is far below the length of a long conversation; the fuel counters are kept
and decremented exactly where the Lean recursion consumes them.

Lean ``List Token`` is a Python ``tuple[int, ...]`` here. The conversations this module works
on are :class:`lvt.model.Conversation` objects whose payloads are all
:class:`lvt.model.Tokens` (the pre-encoded form ``Conversation (List Token)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, TypeAlias

from lvt.model import (
    BLOCK_KIND_ALL,
    ROLE_ALL,
    Block,
    BlockKind,
    Conversation,
    Message,
    Payload,
    Plain,
    Reasoning,
    Role,
    Text,
    Tokens,
    ToolCall,
)

__all__ = [
    "Cell",
    "ChatFormat",
    "Codec",
    "Ctrl",
    "EncFormat",
    "Lit",
    "Piece",
    "Src",
    "all_free",
    "apart_from_turns",
    "block_ok",
    "blocks_ok",
    "cells_of",
    "decode_conversation",
    "decode_payload",
    "encode_all",
    "encode_format",
    "guarded",
    "has_kind",
    "ids",
    "incomparable",
    "is_prefix_b",
    "is_reserved",
    "leads_reserved",
    "mask",
    "match_header",
    "match_open",
    "msg_ok",
    "open_end",
    "open_start",
    "owners",
    "parse",
    "parse_blocks",
    "parse_body",
    "parse_msg",
    "parse_msgs",
    "piece_to_tokens",
    "plain_bare",
    "render_block",
    "render_blocks",
    "render_footer",
    "render_msg",
    "render_msgs",
    "render_prompt",
    "render_tok",
    "strip_open",
    "strip_prefix",
    "supports",
    "take_free",
    "valid",
    "wf",
]

TokenList: TypeAlias = tuple[int, ...]

# ---------------------------------------------------------------------------------------------
# Token.lean


def is_reserved(reserved: Sequence[int], t: int) -> bool:
    """``isReserved reserved t``: ``t`` is one of the format's control tokens."""
    return t in reserved


def all_free(reserved: Sequence[int], ts: Sequence[int]) -> bool:
    """``allFree reserved ts``: no token of ``ts`` is reserved."""
    return all(not is_reserved(reserved, t) for t in ts)


class Codec(Protocol):
    """``Verified.Codec``: an abstract text encoder with a byte table."""

    def encode(self, text: str) -> list[int]:
        """Text to tokens (special-token parsing switched off)."""
        ...

    def decode_bytes(self, ts: Sequence[int]) -> bytes:
        """``Codec.decodeBytes``: the bytes a token list decodes to."""
        ...


# ---------------------------------------------------------------------------------------------
# Format.lean


@dataclass(frozen=True, slots=True)
class Ctrl:
    """``Piece.ctrl t``: a control token, by id."""

    id: int


@dataclass(frozen=True, slots=True)
class Lit:
    """``Piece.lit s``: literal text, encoded by the codec."""

    text: str


Piece: TypeAlias = Ctrl | Lit


@dataclass(frozen=True)
class _Format:
    reserved: tuple[int, ...]
    bos: tuple
    header: Mapping[Role, tuple]
    footer: Mapping[Role, tuple]
    block_open: Mapping[BlockKind, tuple]
    block_close: Mapping[BlockKind, tuple]
    tool_sep: tuple

    def __post_init__(self) -> None:
        # Total functions in Lean: fill every role and kind, freeze as tuples.
        object.__setattr__(self, "reserved", tuple(self.reserved))
        object.__setattr__(self, "bos", tuple(self.bos))
        object.__setattr__(self, "tool_sep", tuple(self.tool_sep))
        for name, keys in (
            ("header", ROLE_ALL),
            ("footer", ROLE_ALL),
            ("block_open", BLOCK_KIND_ALL),
            ("block_close", BLOCK_KIND_ALL),
        ):
            m = getattr(self, name)
            object.__setattr__(self, name, {k: tuple(m.get(k, ())) for k in keys})

    def key(self) -> tuple:
        """A canonical, hashable description of the format (used for fingerprints)."""
        return (
            self.reserved,
            self.bos,
            tuple(self.header[r] for r in ROLE_ALL),
            tuple(self.footer[r] for r in ROLE_ALL),
            tuple(self.block_open[k] for k in BLOCK_KIND_ALL),
            tuple(self.block_close[k] for k in BLOCK_KIND_ALL),
            self.tool_sep,
        )

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.key() == other.key()  # type: ignore[attr-defined]


class ChatFormat(_Format):
    """``ChatFormat := Format Piece``: delimiters made of :class:`Ctrl` and :class:`Lit`
    pieces. Fields: ``reserved``, ``bos``, ``header[role]``, ``footer[role]``,
    ``block_open[kind]``, ``block_close[kind]``, ``tool_sep``."""

    bos: tuple[Piece, ...]
    header: Mapping[Role, tuple[Piece, ...]]
    footer: Mapping[Role, tuple[Piece, ...]]
    block_open: Mapping[BlockKind, tuple[Piece, ...]]
    block_close: Mapping[BlockKind, tuple[Piece, ...]]
    tool_sep: tuple[Piece, ...]


class EncFormat(_Format):
    """``EncFormat := Format Token``: a pre-encoded format, every delimiter a token tuple."""

    bos: tuple[int, ...]
    header: Mapping[Role, tuple[int, ...]]
    footer: Mapping[Role, tuple[int, ...]]
    block_open: Mapping[BlockKind, tuple[int, ...]]
    block_close: Mapping[BlockKind, tuple[int, ...]]
    tool_sep: tuple[int, ...]


def piece_to_tokens(encode: Callable[[str], Sequence[int]], p: Piece) -> TokenList:
    """``Piece.toTokens``."""
    if isinstance(p, Ctrl):
        return (p.id,)
    return tuple(encode(p.text))


def encode_all(encode: Callable[[str], Sequence[int]], ps: Sequence[Piece]) -> TokenList:
    """``Piece.encodeAll``: the tokens of a list of pieces."""
    out: list[int] = []
    for p in ps:
        out.extend(piece_to_tokens(encode, p))
    return tuple(out)


def encode_format(fmt: ChatFormat, encode: Callable[[str], Sequence[int]]) -> EncFormat:
    """``ChatFormat.encode``: pre-encode every literal piece of a format with the codec."""
    return EncFormat(
        reserved=fmt.reserved,
        bos=encode_all(encode, fmt.bos),
        header={r: encode_all(encode, fmt.header[r]) for r in ROLE_ALL},
        footer={r: encode_all(encode, fmt.footer[r]) for r in ROLE_ALL},
        block_open={k: encode_all(encode, fmt.block_open[k]) for k in BLOCK_KIND_ALL},
        block_close={k: encode_all(encode, fmt.block_close[k]) for k in BLOCK_KIND_ALL},
        tool_sep=encode_all(encode, fmt.tool_sep),
    )


def is_prefix_b(a: Sequence[int], b: Sequence[int]) -> bool:
    """``isPrefixB a b``: ``a`` is a prefix of ``b``."""
    # | [], _ => true | _ :: _, [] => false | a :: as, b :: bs => a == b && isPrefixB as bs
    if len(a) > len(b):
        return False
    return all(x == y for x, y in zip(a, b, strict=False))


def incomparable(a: Sequence[int], b: Sequence[int]) -> bool:
    """``incomparable``: neither list is a prefix of the other."""
    return not is_prefix_b(a, b) and not is_prefix_b(b, a)


def leads_reserved(reserved: Sequence[int], d: Sequence[int]) -> bool:
    """``leadsReserved``: the list is non-empty and its first token is reserved."""
    if not d:
        return False
    return is_reserved(reserved, d[0])


def supports(f: EncFormat, r: Role) -> bool:
    """``Format.supports``: a role is supported when its header is non-empty."""
    return len(f.header[r]) != 0


def guarded(f: EncFormat, d: Sequence[int]) -> bool:
    """``Format.guarded``: empty, or led by a reserved token."""
    return len(d) == 0 or leads_reserved(f.reserved, d)


def apart_from_turns(f: EncFormat, d: Sequence[int]) -> bool:
    """``Format.apartFromTurns``: ``d`` cannot be confused with any non-empty footer or any
    supported header."""
    return all(
        (len(f.footer[r]) == 0 or incomparable(d, f.footer[r]))
        and (len(f.header[r]) == 0 or incomparable(d, f.header[r]))
        for r in ROLE_ALL
    )


def wf(f: EncFormat) -> bool:
    """``Format.wf``: the decidable well-formedness check the round-trip theorems assume."""
    return (
        # every header and footer is empty or led by a reserved token
        all(guarded(f, f.header[r]) and guarded(f, f.footer[r]) for r in ROLE_ALL)
        # the assistant is supported and has a non-empty end of turn
        and supports(f, Role.ASSISTANT)
        and len(f.footer[Role.ASSISTANT]) != 0
        # headers of distinct supported roles are prefix-incomparable
        and all(
            all(
                r == r2
                or len(f.header[r]) == 0
                or len(f.header[r2]) == 0
                or incomparable(f.header[r], f.header[r2])
                for r2 in ROLE_ALL
            )
            for r in ROLE_ALL
        )
        # every block delimiter and the tool separator is empty or led by a reserved token
        and all(
            guarded(f, f.block_open[k]) and guarded(f, f.block_close[k]) for k in BLOCK_KIND_ALL
        )
        and guarded(f, f.tool_sep)
        # non-empty openers are pairwise incomparable and apart from footers and headers
        and all(
            all(
                k == k2
                or len(f.block_open[k]) == 0
                or len(f.block_open[k2]) == 0
                or incomparable(f.block_open[k], f.block_open[k2])
                for k2 in BLOCK_KIND_ALL
            )
            for k in BLOCK_KIND_ALL
        )
        and all(
            len(f.block_open[k]) == 0 or apart_from_turns(f, f.block_open[k])
            for k in BLOCK_KIND_ALL
        )
    )


def has_kind(f: EncFormat, k: BlockKind) -> bool:
    """``Format.hasKind``: a block kind is usable when it has an opener, or it is plain."""
    return len(f.block_open[k]) != 0 or k == BlockKind.PLAIN


def plain_bare(f: EncFormat) -> bool:
    """``Format.plainBare``: plain blocks are rendered without any opener."""
    return len(f.block_open[BlockKind.PLAIN]) == 0


def _ts(p: Payload) -> TokenList:
    """The token list of a pre-encoded payload."""
    if isinstance(p, Tokens):
        return p.ids
    raise TypeError(f"the reference backend works on pre-encoded payloads, got {p!r}")


def block_ok(f: EncFormat, b: Block) -> bool:
    """``Format.blockOk``: a block is valid on its own."""
    if isinstance(b, Plain):
        p = _ts(b.payload)
        return (
            has_kind(f, BlockKind.PLAIN)
            and all_free(f.reserved, p)
            and (not plain_bare(f) or len(p) != 0)
        )
    if isinstance(b, Reasoning):
        p = _ts(b.payload)
        return has_kind(f, BlockKind.REASONING) and all_free(f.reserved, p)
    n, a = _ts(b.name), _ts(b.args)
    return (
        has_kind(f, BlockKind.TOOL_CALL)
        and all_free(f.reserved, n)
        and all_free(f.reserved, a)
        and (len(f.tool_sep) != 0 or len(n) == 0)
    )


def open_end(f: EncFormat, b: Block) -> bool:
    """``Format.openEnd``: the render of the block ends with its payload."""
    return len(f.block_close[b.kind]) == 0


def open_start(f: EncFormat, b: Block) -> bool:
    """``Format.openStart``: the block starts with its payload (a bare plain block)."""
    if isinstance(b, Plain):
        return plain_bare(f)
    return False


def blocks_ok(f: EncFormat, after_open: bool, bs: Sequence[Block]) -> bool:
    """``Format.blocksOk``: blocks are valid in sequence."""
    for b in bs:
        if not (block_ok(f, b) and not (after_open and open_start(f, b))):
            return False
        after_open = open_end(f, b)
    return True


def msg_ok(f: EncFormat, m: Message) -> bool:
    """``Format.msgOk``: the role is supported and the blocks are valid."""
    return supports(f, m.role) and blocks_ok(f, False, m.blocks)


def valid(f: EncFormat, c: Conversation) -> bool:
    """``Format.valid``: a pre-encoded conversation is valid for the format."""
    return all(msg_ok(f, m) for m in c.messages)


# ---------------------------------------------------------------------------------------------
# Render.lean


class Src(Enum):
    """Where a rendered token comes from (``Verified.Src``)."""

    BOS = "bos"
    HEADER = "header"
    DELIM = "delim"
    PAYLOAD = "payload"
    EOT = "eot"
    FOOTER = "footer"
    PROMPT = "prompt"

    @property
    def learned(self) -> bool:
        """``Src.learned``: tokens the model itself produces in an assistant turn."""
        return self in (Src.DELIM, Src.PAYLOAD, Src.EOT)


@dataclass(frozen=True, slots=True)
class Cell:
    """One rendered token with its provenance, owner message index and loss-mask bit."""

    tok: int
    src: Src
    owner: int
    loss: bool


def cells_of(src: Src, owner: int, learn: bool, ts: Sequence[int]) -> list[Cell]:
    """``cellsOf``: cells for a token list from one source."""
    loss = learn and src.learned
    return [Cell(t, src, owner, loss) for t in ts]


def render_block(f: EncFormat, i: int, learn: bool, b: Block) -> list[Cell]:
    """``Format.renderBlock``: render one block of message ``i``."""
    if isinstance(b, Plain):
        return (
            cells_of(Src.DELIM, i, learn, f.block_open[BlockKind.PLAIN])
            + cells_of(Src.PAYLOAD, i, learn, _ts(b.payload))
            + cells_of(Src.DELIM, i, learn, f.block_close[BlockKind.PLAIN])
        )
    if isinstance(b, Reasoning):
        return (
            cells_of(Src.DELIM, i, learn, f.block_open[BlockKind.REASONING])
            + cells_of(Src.PAYLOAD, i, learn, _ts(b.payload))
            + cells_of(Src.DELIM, i, learn, f.block_close[BlockKind.REASONING])
        )
    return (
        cells_of(Src.DELIM, i, learn, f.block_open[BlockKind.TOOL_CALL])
        + cells_of(Src.PAYLOAD, i, learn, _ts(b.name))
        + cells_of(Src.DELIM, i, learn, f.tool_sep)
        + cells_of(Src.PAYLOAD, i, learn, _ts(b.args))
        + cells_of(Src.DELIM, i, learn, f.block_close[BlockKind.TOOL_CALL])
    )


def render_blocks(f: EncFormat, i: int, learn: bool, bs: Sequence[Block]) -> list[Cell]:
    """``Format.renderBlocks``: render a list of blocks."""
    out: list[Cell] = []
    for b in bs:
        out += render_block(f, i, learn, b)
    return out


def render_footer(i: int, learn: bool, ts: Sequence[int]) -> list[Cell]:
    """``Format.renderFooter``: the first footer token is the end of turn."""
    if not ts:
        return []
    return [Cell(ts[0], Src.EOT, i, learn), *cells_of(Src.FOOTER, i, learn, ts[1:])]


def render_msg(f: EncFormat, i: int, m: Message) -> list[Cell]:
    """``Format.renderMsg``: render message number ``i``."""
    learn = m.role == Role.ASSISTANT
    return (
        cells_of(Src.HEADER, i, learn, f.header[m.role])
        + render_blocks(f, i, learn, m.blocks)
        + render_footer(i, learn, f.footer[m.role])
    )


def render_msgs(f: EncFormat, i: int, ms: Sequence[Message]) -> list[Cell]:
    """``Format.renderMsgs``: render messages numbered from ``i``."""
    out: list[Cell] = []
    for m in ms:
        out += render_msg(f, i, m)
        i = i + 1
    return out


def render_prompt(f: EncFormat, n: int) -> list[Cell]:
    """``Format.renderPrompt``: the generation prompt, the assistant header."""
    return cells_of(Src.PROMPT, n, False, f.header[Role.ASSISTANT])


def render_tok(f: EncFormat, c: Conversation) -> list[Cell]:
    """``Format.renderTok``: render a pre-encoded conversation."""
    return (
        cells_of(Src.BOS, 0, False, f.bos)
        + render_msgs(f, 0, c.messages)
        + (render_prompt(f, len(c.messages)) if c.add_generation_prompt else [])
    )


def ids(cs: Sequence[Cell]) -> list[int]:
    """Token ids of a render."""
    return [c.tok for c in cs]


def mask(cs: Sequence[Cell]) -> list[bool]:
    """Loss mask of a render."""
    return [c.loss for c in cs]


def owners(cs: Sequence[Cell]) -> list[int]:
    """Owner message indices of a render."""
    return [c.owner for c in cs]


# ---------------------------------------------------------------------------------------------
# Parse.lean


def strip_prefix(p: Sequence[int], ts: TokenList) -> TokenList | None:
    """``stripPrefix? p ts``: ``rest`` when ``ts = p ++ rest``."""
    # | [], ts => some ts | _ :: _, [] => none | p :: ps, t :: ts => if p == t then ... else none
    if is_prefix_b(p, ts):
        return ts[len(p) :]
    return None


def take_free(reserved: Sequence[int], ts: TokenList) -> tuple[TokenList, TokenList]:
    """``takeFree``: split off the maximal prefix of non-reserved tokens."""
    for j, t in enumerate(ts):
        if is_reserved(reserved, t):
            return ts[:j], ts[j:]
    return ts, ()


def strip_open(d: Sequence[int], ts: TokenList) -> TokenList | None:
    """``Format.stripOpen``: strip a non-empty delimiter; an empty one never matches."""
    if len(d) == 0:
        return None
    return strip_prefix(d, ts)


def match_header(f: EncFormat, ts: TokenList) -> tuple[Role, TokenList] | None:
    """``Format.matchHeader``: the role whose (non-empty) header starts ``ts``."""
    for r in ROLE_ALL:
        rest = strip_open(f.header[r], ts)
        if rest is not None:
            return (r, rest)
    return None


def match_open(f: EncFormat, ts: TokenList) -> tuple[BlockKind, TokenList] | None:
    """``Format.matchOpen``: the block kind whose (non-empty) opener starts ``ts``."""
    for k in BLOCK_KIND_ALL:
        rest = strip_open(f.block_open[k], ts)
        if rest is not None:
            return (k, rest)
    return None


def parse_body(f: EncFormat, k: BlockKind, ts: TokenList) -> tuple[Block, TokenList] | None:
    """``Format.parseBody``: the body of a block of kind ``k`` (after its opener), up to and
    including its closer."""
    if k == BlockKind.PLAIN:
        r = take_free(f.reserved, ts)
        rest = strip_prefix(f.block_close[BlockKind.PLAIN], r[1])
        return None if rest is None else (Plain(Tokens(r[0])), rest)
    if k == BlockKind.REASONING:
        r = take_free(f.reserved, ts)
        rest = strip_prefix(f.block_close[BlockKind.REASONING], r[1])
        return None if rest is None else (Reasoning(Tokens(r[0])), rest)
    # .toolCall
    if len(f.tool_sep) == 0:
        r = take_free(f.reserved, ts)
        rest = strip_prefix(f.block_close[BlockKind.TOOL_CALL], r[1])
        return None if rest is None else (ToolCall(Tokens(()), Tokens(r[0])), rest)
    n = take_free(f.reserved, ts)
    ts1 = strip_prefix(f.tool_sep, n[1])
    if ts1 is None:
        return None
    a = take_free(f.reserved, ts1)
    rest = strip_prefix(f.block_close[BlockKind.TOOL_CALL], a[1])
    return None if rest is None else (ToolCall(Tokens(n[0]), Tokens(a[0])), rest)


def parse_blocks(f: EncFormat, n: int, ts: TokenList) -> tuple[list[Block], TokenList] | None:
    """``Format.parseBlocks``: parse blocks until none starts (fuel ``n``)."""
    acc: list[Block] = []
    while True:
        # | 0, _ => none
        if n == 0:
            return None
        n = n - 1
        m = match_open(f, ts)
        if m is not None:
            k, ts1 = m
            r = parse_body(f, k, ts1)
            if r is None:
                return None
            b, ts = r
            acc.append(b)
            continue  # parseBlocks n ts₂
        if len(ts) == 0:
            return (acc, ())
        t = ts[0]
        if plain_bare(f) and not is_reserved(f.reserved, t):
            r = parse_body(f, BlockKind.PLAIN, ts)
            if r is None:
                return None
            b, ts = r
            acc.append(b)
            continue  # parseBlocks n ts₂
        return (acc, ts)


def parse_msg(f: EncFormat, ts: TokenList) -> tuple[Message, TokenList] | None:
    """``Format.parseMsg``: header, blocks, footer."""
    h = match_header(f, ts)
    if h is None:
        return None
    r, ts1 = h
    pb = parse_blocks(f, len(ts1) + 1, ts1)
    if pb is None:
        return None
    bs, ts2 = pb
    rest = strip_prefix(f.footer[r], ts2)
    return None if rest is None else (Message(r, tuple(bs)), rest)


def parse_msgs(f: EncFormat, n: int, ts: TokenList) -> tuple[list[Message], bool] | None:
    """``Format.parseMsgs``: messages until the input ends or only the generation prompt is
    left (fuel ``n``)."""
    acc: list[Message] = []
    while True:
        if n == 0:
            return None
        n = n - 1
        if len(ts) == 0:
            return (acc, False)
        if ts == f.header[Role.ASSISTANT]:
            return (acc, True)
        r = parse_msg(f, ts)
        if r is None:
            return None
        m, ts = r
        acc.append(m)


def parse(f: EncFormat, ts: Sequence[int]) -> Conversation | None:
    """``Format.parse``: a token list as a pre-encoded conversation, or ``None``."""
    ts1 = strip_prefix(f.bos, tuple(ts))
    if ts1 is None:
        return None
    r = parse_msgs(f, len(ts1) + 1, ts1)
    return None if r is None else Conversation(tuple(r[0]), r[1])


def decode_payload(codec: Codec, ts: Sequence[int]) -> Payload:
    """``decodePayload``: ``Text(s)`` when the bytes are valid UTF-8 and ``s`` re-encodes to
    exactly the same tokens, otherwise the tokens themselves."""
    try:
        s = codec.decode_bytes(ts).decode("utf-8")
    except UnicodeDecodeError:
        return Tokens(ts)
    if list(codec.encode(s)) == list(ts):
        return Text(s)
    return Tokens(ts)


def decode_conversation(codec: Codec, c: Conversation) -> Conversation:
    """``Conversation.decode``: decode every payload of a parsed conversation."""
    return c.map(lambda p: decode_payload(codec, _ts(p)))
