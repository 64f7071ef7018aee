"""Shared hypothesis strategies and small fixtures for lvt tests.

Other test modules import this file (``from tests.strategies import ...`` or, with
``tests/`` on ``sys.path``, ``from strategies import ...``):

* :func:`enc_formats` yields ``(name, EncFormat)``: well-formed pre-encoded formats with small
  ids (control ids < 100, literal text tokens in 100..199): every shipped format instantiated
  with random distinct control ids, and random formats built from scratch (filtered by ``wf``).
* :func:`token_conversations` yields *valid* pre-encoded conversations for an ``EncFormat``
  (all payloads :class:`~lvt.model.Tokens` with ids in 100..199): empty payloads where
  valid, tool calls, reasoning, long turns, the generation prompt.
* :func:`text_conversations` yields text-level conversations (Unicode, control-token strings
  of every family, empty payloads where valid), optionally constrained to a format.
* :func:`token_streams` yields random token lists near the renders of a format (for parser
  soundness).
* :func:`toy_tokenizer` builds (once) a tiny byte-level BPE ``tokenizers.Tokenizer`` whose
  added tokens include the control tokens of every shipped family.
"""

from __future__ import annotations

import functools
import os
import random
from collections.abc import Sequence

from hypothesis import strategies as st

from lvt import formats as F
from lvt import spec
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
    "CONTROL_STRINGS",
    "TEXT_TOKENS",
    "enc_formats",
    "example_count",
    "random_enc_format",
    "shipped_enc_format",
    "text_conversations",
    "token_conversations",
    "token_streams",
    "toy_codec_encode",
    "toy_tokenizer",
]

#: Ids used for payload tokens in token-level strategies.
TEXT_TOKENS = range(100, 200)

#: Every control-token string of every shipped family (for adversarial text).
CONTROL_STRINGS: tuple[str, ...] = tuple(
    sorted({s for fs in F.FORMATS.values() for s in fs.control_token_strings()})
)


def example_count(default: int = 300) -> int:
    """Examples per property: ``LVT_HYPOTHESIS_EXAMPLES`` or ``default``."""
    return int(os.environ.get("LVT_HYPOTHESIS_EXAMPLES", default))


def toy_codec_encode(s: str) -> list[int]:
    """The toy codec used to pre-encode literal pieces of test formats: one token per
    character, ``100 + code % 100`` (always in 100..199, never a control id)."""
    return [100 + ord(c) % 100 for c in s]


def _ids_for(ids_type: type, values: Sequence[int]):
    names = [f.name for f in ids_type.__dataclass_fields__.values()]
    return ids_type(**dict(zip(names, values, strict=False)))


def shipped_enc_format(name: str, control_ids: Sequence[int] | None = None) -> spec.EncFormat:
    """A shipped format with small control ids (``control_ids`` or 1, 2, 3, …) and literal
    pieces pre-encoded with :func:`toy_codec_encode`."""
    fs = F.get_spec(name)
    n = len(fs.ids_type.__dataclass_fields__)
    ids = list(control_ids) if control_ids is not None else list(range(1, n + 1))
    return spec.encode_format(fs.build(_ids_for(fs.ids_type, ids)), toy_codec_encode)


@st.composite
def _shipped(draw: st.DrawFn) -> tuple[str, spec.EncFormat]:
    name = draw(st.sampled_from(F.format_names()))
    n = len(F.get_spec(name).ids_type.__dataclass_fields__)
    seed = draw(st.integers(0, 2**32 - 1))
    return name, _shipped_cached(name, tuple(random.Random(seed).sample(range(100), n)))


@functools.lru_cache(maxsize=4096)
def _shipped_cached(name: str, ids: tuple[int, ...]) -> spec.EncFormat:
    return shipped_enc_format(name, ids)


def random_enc_format(seed: int) -> spec.EncFormat:
    """A well-formed random format (control ids < 100, literal tokens 100..199), built from
    ``seed`` by rejection sampling: any role set containing the assistant, any block kinds,
    delimiters of up to three tokens led by a control token."""
    rng = random.Random(seed)
    while True:
        reserved = rng.sample(range(100), rng.randint(2, 8))

        def delim(may_empty: bool, reserved=reserved) -> tuple[int, ...]:
            if may_empty and rng.random() < 0.35:
                return ()
            tail = [rng.choice(reserved) if rng.random() < 0.3 else rng.randint(100, 199)
                    for _ in range(rng.randint(0, 2))]
            return (rng.choice(reserved), *tail)

        f = spec.EncFormat(
            reserved=tuple(reserved),
            bos=tuple(rng.choice((*reserved, 150)) for _ in range(rng.randint(0, 2))),
            header={r: delim(r != Role.ASSISTANT) for r in ROLE_ALL},
            footer={r: delim(r != Role.ASSISTANT) for r in ROLE_ALL},
            block_open={k: delim(True) for k in BLOCK_KIND_ALL},
            block_close={k: delim(True) for k in BLOCK_KIND_ALL},
            tool_sep=delim(True),
        )
        if spec.wf(f):
            return f


@functools.lru_cache(maxsize=4096)
def _random_cached(seed: int) -> spec.EncFormat:
    return random_enc_format(seed)


def _random_format() -> st.SearchStrategy[tuple[str, spec.EncFormat]]:
    return st.integers(0, 2**32 - 1).map(lambda seed: ("random", _random_cached(seed)))


def enc_formats(shipped_only: bool = False) -> st.SearchStrategy[tuple[str, spec.EncFormat]]:
    """``(name, EncFormat)`` pairs of well-formed formats with small ids: shipped formats
    with random distinct control ids (2/3 of the draws) and random formats (name
    ``"random"``)."""
    s = _shipped() if shipped_only else st.one_of(_shipped(), _shipped(), _random_format())
    return s.filter(lambda p: spec.wf(p[1]))


def _payload_tokens(max_size: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.binary(max_size=max_size).map(lambda raw: tuple(100 + b % 100 for b in raw))


@st.composite
def _skeleton(
    draw: st.DrawFn,
    f: spec.EncFormat,
    max_messages: int,
    max_blocks: int,
    tool_needs_call: bool = False,
):
    """Roles and block kinds of a valid conversation, with flags saying which payloads must
    be non-empty: a list of ``(role, [(kind, nonempty_first, name_allowed)])``. With
    ``tool_needs_call`` a tool message only follows an assistant message with a tool call
    (or another tool message)."""
    roles = [r for r in ROLE_ALL if spec.supports(f, r)]
    kinds = [k for k in BLOCK_KIND_ALL if spec.has_kind(f, k)]
    bare = spec.plain_bare(f)
    out = []
    for _ in range(draw(st.integers(1, max_messages))):
        role = draw(st.sampled_from(roles))
        blocks = []
        after_open = False
        for _ in range(draw(st.integers(0, max_blocks))):
            k = draw(st.sampled_from(kinds))
            if k == BlockKind.PLAIN and bare and after_open:
                continue  # would merge with the previous payload
            blocks.append((k, k == BlockKind.PLAIN and bare, len(f.tool_sep) > 0))
            after_open = len(f.block_close[k]) == 0
        out.append((role, blocks))
    if tool_needs_call:
        fixed = []
        open_call = False
        for role, blocks in out:
            if role == Role.TOOL and not open_call:
                role = Role.USER if Role.USER in roles else roles[0]
            if role != Role.TOOL:
                open_call = role == Role.ASSISTANT and any(
                    k == BlockKind.TOOL_CALL for k, _, _ in blocks
                )
            fixed.append((role, blocks))
        out = fixed
    return out


def _build(skel, payload) -> list[Message]:
    msgs = []
    for role, blocks in skel:
        bs: list[Block] = []
        for k, nonempty, name_ok in blocks:
            if k == BlockKind.PLAIN:
                bs.append(Plain(payload(nonempty)))
            elif k == BlockKind.REASONING:
                bs.append(Reasoning(payload(False)))
            else:
                bs.append(ToolCall(payload(False) if name_ok else None, payload(False)))
        msgs.append(Message(role, tuple(bs)))
    return msgs


@st.composite
def token_conversations(
    draw: st.DrawFn,
    f: spec.EncFormat,
    max_messages: int = 6,
    max_blocks: int = 3,
    max_payload: int = 12,
) -> Conversation:
    """A valid pre-encoded conversation for ``f``; payload ids in 100..199 (occasionally a
    long turn of up to 300 tokens)."""
    skel = draw(_skeleton(f, max_messages, max_blocks))
    long_turn = draw(st.integers(0, 9)) == 0

    def payload(nonempty: bool) -> Tokens:
        size = 300 if long_turn and draw(st.booleans()) else max_payload
        raw = draw(st.binary(min_size=1 if nonempty else 0, max_size=size))
        return Tokens([100 + b % 100 for b in raw])

    msgs = _build(skel, payload)
    msgs = [
        Message(m.role, tuple(
            ToolCall(Tokens(()), b.args) if isinstance(b, ToolCall) and b.name is None else b
            for b in m.blocks
        ))
        for m in msgs
    ]
    c = Conversation(msgs, draw(st.booleans()))
    assert spec.valid(f, c), c
    return c


@functools.lru_cache(maxsize=16)
def unicode_text(min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Text mixing Unicode (no lone surrogates), whitespace and control-token strings."""
    piece = st.one_of(
        st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
        st.sampled_from(CONTROL_STRINGS),
        st.sampled_from(["\n", "\n\n", " ", "  ", "\t", "```json\n", '{"a": 1}', "é", "日本語",
                         "🙂", "\r\n", "<think>", "</think>", "<tool_call>"]),
    )
    return st.lists(piece, max_size=4).map("".join).filter(
        lambda s: min_size <= len(s) <= max_size * 4
    )


@functools.lru_cache(maxsize=1)
def _qwen3_test_format() -> spec.EncFormat:
    return shipped_enc_format("qwen3")


@st.composite
def text_conversations(
    draw: st.DrawFn,
    f: spec.EncFormat | None = None,
    max_messages: int = 4,
    max_blocks: int = 3,
    tokens_ids: Sequence[int] | None = None,
    tool_needs_call: bool = False,
) -> Conversation:
    """A text-level conversation (payloads :class:`Text`; with ``tokens_ids`` some payloads
    are :class:`Tokens` drawn from those ids). With ``f`` the conversation is valid for ``f``
    (roles, block kinds, non-empty bare plain blocks, tool names only where the format has a
    separator; with ``tool_needs_call`` tool messages follow tool calls); without ``f``, it
    is valid for the reference Qwen3 format."""
    if f is None:
        f = _qwen3_test_format()
    skel = draw(_skeleton(f, max_messages, max_blocks, tool_needs_call))
    ids_s = st.sampled_from(tuple(tokens_ids)) if tokens_ids is not None else None

    def payload(nonempty: bool) -> Payload:
        if ids_s is not None and draw(st.integers(0, 4)) == 0:
            return Tokens(draw(st.lists(ids_s, min_size=1 if nonempty else 0, max_size=8)))
        return Text(draw(unicode_text(min_size=1 if nonempty else 0)))

    msgs = _build(skel, payload)
    msgs = [
        Message(m.role, tuple(
            ToolCall(Text(""), b.args) if isinstance(b, ToolCall) and b.name is None else b
            for b in m.blocks
        ))
        for m in msgs
    ]
    return Conversation(msgs, draw(st.booleans()))


@st.composite
def token_streams(draw: st.DrawFn, f: spec.EncFormat, max_pieces: int = 20) -> list[int]:
    """Random token lists made of the format's delimiters, reserved ids and payload runs,
    sometimes starting from a real render and mutating it."""
    delims = [f.bos, f.tool_sep, *f.header.values(), *f.footer.values(),
              *f.block_open.values(), *f.block_close.values()]
    delims = [d for d in delims if d]
    piece = st.one_of(
        st.sampled_from(delims) if delims else st.just(()),
        _payload_tokens(4),
        st.sampled_from(f.reserved).map(lambda t: (t,)),
    )
    if draw(st.booleans()):
        c = draw(token_conversations(f, max_messages=3, max_payload=4))
        ts = spec.ids(spec.render_tok(f, c))
        if ts and draw(st.booleans()):
            i = draw(st.integers(0, len(ts) - 1))
            op = draw(st.sampled_from(["drop", "insert", "replace", "cut"]))
            p = list(draw(piece))
            if op == "drop":
                ts = ts[:i] + ts[i + 1 :]
            elif op == "insert":
                ts = ts[:i] + p + ts[i:]
            elif op == "replace":
                ts = ts[:i] + p + ts[i + 1 :]
            else:
                ts = ts[:i]
        return ts
    out = list(f.bos) if draw(st.booleans()) else []
    for p in draw(st.lists(piece, max_size=max_pieces)):
        out.extend(p)
    return out


@functools.lru_cache(maxsize=1)
def toy_tokenizer():
    """A tiny byte-level BPE tokenizer (256 byte tokens and a few merges) whose added tokens
    are the control tokens of every shipped family, special or not (like DeepSeek's
    ``<think>``). Built in memory once."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from lvt.codec import bytes_to_unicode

    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ċ", "Ċ")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    non_special = {"<think>", "</think>", "<tool_call>", "</tool_call>"}
    tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in CONTROL_STRINGS
                    if s in non_special])
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False)
                            for s in CONTROL_STRINGS if s not in non_special])
    return tok
