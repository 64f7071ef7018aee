"""The byte layout of the FFI (wire version 4), in Python: a mirror of ``Verified/Ffi.lean``.

The Lean exports ``lvt_layout_bytes`` and ``lvt_unlayout_bytes`` take and return bytes. This
module builds the requests (:func:`encode_layout_request`, :func:`encode_unlayout_request`)
and reads the answers (:func:`decode_layout_answer`, :func:`decode_unlayout_answer`); so that
everything round-trips and can be checked without the library, it also reads requests and
builds answers exactly as the Lean side does.

Layout (every integer a little-endian ``u32``; a *list* is a count and the elements; *text* is
a byte count and UTF-8; an *option* is ``0``, or ``1`` and the value; a *bool* one byte 0/1):

* format: family byte ``0`` Qwen (``im_start im_end call_open call_close``, option of two ids
  ``tool_response``, option of two ids ``think``, tokens ``extra``, mode byte 0 v25 / 1 exact /
  2 stable, bool ``enable_thinking``, option of text ``default_system``, bool
  ``prompt_think``) or ``1`` Llama (``bos start_header end_header eot``,
  tokens ``extra``, text ``date``, bool ``tools_in_user``);
* conversation: bool ``add_generation_prompt``, option of a list of JSON tools (tags 0 null,
  1 false, 2 true, 3 num text, 4 str text, 5 array, 6 object of text keys), list of messages
  (role byte 0 system … 4 tool, list of blocks: 0 plain, 1 reasoning (payload: 0 text,
  1 tokens), 2 tool call (name, args, option of the id text), 3 sampled (tokens)));
* symbols: list of entries 0 control id, 1 run of text, 2 verbatim id;
* requests: version byte ``4``, format, then the conversation (layout) or the symbols
  (unlayout), nothing after;
* layout answer: status 0, then 0 (refused) or 1 and a list of items (piece 0 control id /
  1 text / 2 tokens, ``u32`` owner, bool learn);
* unlayout answer: status 0, then an option of the lowered conversation (list of turns, option
  of the prompt owner; turn tags in ``Verified/Ffi.lean``);
* error answer: status 1 and the error code (:data:`ERROR_NAMES`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lvt.errors import NativeLibraryError
from lvt.families import llama, qwen
from lvt.jsonfmt import JArr, JNum, JObj
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens, ToolCall
from lvt.runtime import core

__all__ = [
    "ERROR_NAMES", "WIRE_VERSION", "WireAnswerError", "WireDecodeError",
    "decode_layout_answer", "decode_layout_request", "decode_unlayout_answer",
    "decode_unlayout_request", "encode_conversation", "encode_error", "encode_family",
    "encode_layout_answer", "encode_layout_request", "encode_syms", "encode_unlayout_answer",
    "encode_unlayout_request", "supports",
]

WIRE_VERSION = 4
"""``Verified.Ffi.wireVersion``."""

U32_LIMIT = 1 << 32

#: ``WireError.code`` → name.
ERROR_NAMES = ("empty", "version", "family", "format", "conversation", "symbols", "trailing")

ROLES: tuple[Role, ...] = (Role.SYSTEM, Role.DEVELOPER, Role.USER, Role.ASSISTANT, Role.TOOL)
MODES = ("v25", "exact", "stable")
QROLES = ("system", "user")
LROLES = ("system", "user", "assistant", "developer")

T = TypeVar("T")


class WireDecodeError(NativeLibraryError, ValueError):
    """Bytes that do not follow the wire layout.

    Attributes:
        kind: for requests, the ``Verified.Ffi.WireError`` case the Lean decoder reports
            (one of :data:`ERROR_NAMES`); ``"answer"`` for a malformed answer.
    """

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind = kind
        super().__init__(f"lvt wire: {kind}" + (f": {detail}" if detail else ""))


class WireAnswerError(NativeLibraryError):
    """The Lean side answered status 1: it could not decode the request.

    Attributes:
        code: the ``WireError`` code; ``reason``: its name.
    """

    def __init__(self, code: int) -> None:
        self.code = code
        self.reason = ERROR_NAMES[code] if code < len(ERROR_NAMES) else f"code {code}"
        super().__init__(f"the native library rejected the request: {self.reason}")


# ---------------------------------------------------------------------------------------------
# Encoders


def u32(n: int) -> bytes:
    """``u32le`` (raises ``ValueError`` outside ``[0, 2**32)``: Lean would wrap)."""
    if not 0 <= n < U32_LIMIT:
        raise ValueError(f"{n} does not fit in a u32")
    return struct.pack("<I", n)


def _bool(b: bool) -> bytes:
    return b"\x01" if b else b"\x00"


def _list(enc: Callable[[Any], bytes], xs: Sequence[Any]) -> bytes:
    return u32(len(xs)) + b"".join(enc(x) for x in xs)


def _opt(enc: Callable[[Any], bytes], x: Any) -> bytes:
    return b"\x00" if x is None else b"\x01" + enc(x)


def _toks(ts: Sequence[int]) -> bytes:
    return _list(u32, [int(t) for t in ts])


def _text(s: str) -> bytes:
    raw = s.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError (a ValueError)
    return u32(len(raw)) + raw


def _pair(p: tuple[int, int]) -> bytes:
    return u32(p[0]) + u32(p[1])


def _json(j: Any) -> bytes:
    if j is None:
        return b"\x00"
    if j is True or j is False:
        return b"\x02" if j else b"\x01"
    if isinstance(j, JNum):
        return b"\x03" + _text(j.text)
    if isinstance(j, str):
        return b"\x04" + _text(j)
    if isinstance(j, JArr):
        return b"\x05" + _list(_json, j.items)
    if isinstance(j, JObj):
        return b"\x06" + _list(lambda kv: _text(kv[0]) + _json(kv[1]), j.members)
    raise TypeError(f"not a frozen JSON value: {j!r}")


def _payload(p: Any) -> bytes:
    if isinstance(p, Text):
        return b"\x00" + _text(p.text)
    if isinstance(p, Tokens):
        return b"\x01" + _toks(p.ids)
    raise TypeError(f"not a payload: {p!r}")


def _block(b: Any) -> bytes:
    if isinstance(b, Plain):
        return b"\x00" + _payload(b.payload)
    if isinstance(b, Reasoning):
        return b"\x01" + _payload(b.payload)
    if isinstance(b, ToolCall):
        return b"\x02" + _text(b.name) + _text(b.args) + _opt(_text, b.id)
    if isinstance(b, Sampled):
        return b"\x03" + _toks(b.ids)
    raise TypeError(f"not a block: {b!r}")


def _message(m: Message) -> bytes:
    return bytes([ROLES.index(m.role)]) + _list(_block, m.blocks)


def encode_conversation(c: Conversation) -> bytes:
    """``encConv``."""
    return (_bool(c.add_generation_prompt) + _opt(lambda ts: _list(_json, ts), c.tools)
            + _list(_message, c.messages))


def supports(fam: Any) -> bool:
    """Whether the wire (and so the native backend) carries this family instance: Qwen and
    Llama 3.1; the other families (Gemma 3, the Qwen3.5 structure of ``qwen_xml``, the
    template variants of ``qwen_template`` and ``llama_template``, ...) run on the reference
    backend."""
    return (isinstance(fam, qwen.Qwen) and fam.mode in MODES) or type(fam) is llama.Llama


def encode_family(fam: Any) -> bytes:
    """``encFam``: the family byte and the parameters of a family instance."""
    if isinstance(fam, qwen.Qwen):
        i = fam.ids
        return (b"\x00" + u32(i.im_start) + u32(i.im_end) + u32(i.call_open)
                + u32(i.call_close) + _opt(_pair, i.tool_response) + _opt(_pair, i.think)
                + _toks(i.extra) + bytes([MODES.index(fam.mode)]) + _bool(fam.enable_thinking)
                + _opt(_text, fam.default_system) + _bool(fam.prompt_think))
    if isinstance(fam, llama.Llama):
        i = fam.ids
        return (b"\x01" + u32(i.bos) + u32(i.start_header) + u32(i.end_header) + u32(i.eot)
                + _toks(i.extra) + _text(fam.date) + _bool(fam.tools_in_user))
    raise TypeError(f"not a family instance: {fam!r}")


def _sym_entry(x: Any) -> bytes:
    if isinstance(x, str):
        return b"\x01" + _text(x)
    return b"\x00" + u32(int(x))


def encode_syms(s: core.Stream) -> bytes:
    """A symbol stream (control ids and text runs, :data:`lvt.runtime.core.Stream`)."""
    return _list(_sym_entry, s)


def encode_layout_request(fam: Any, c: Conversation) -> bytes:
    """``encLayoutRequest``: the bytes given to ``lvt_layout``."""
    return bytes([WIRE_VERSION]) + encode_family(fam) + encode_conversation(c)


def encode_unlayout_request(fam: Any, s: core.Stream) -> bytes:
    """``encUnlayoutRequest``: the bytes given to ``lvt_unlayout``."""
    return bytes([WIRE_VERSION]) + encode_family(fam) + encode_syms(s)


def _item(i: core.Item) -> bytes:
    if i.kind == core.CTRL:
        piece = b"\x00" + u32(i.value)
    elif i.kind == core.TEXT:
        piece = b"\x01" + _text(i.value)
    else:
        piece = b"\x02" + _toks(i.value)
    return piece + u32(i.owner) + _bool(i.learn)


def encode_layout_answer(items: Sequence[core.Item] | None) -> bytes:
    """``encLayoutAnswer`` (what the Lean side sends back)."""
    return b"\x00\x00" if items is None else b"\x00\x01" + _list(_item, items)


def _lpay(p: Any) -> bytes:
    return b"\x00" + _text(p) if isinstance(p, str) else b"\x01" + _toks(p)


def _qturn(t: Any) -> bytes:
    if isinstance(t, qwen.PlainTurn):
        return b"\x00" + bytes([QROLES.index(t.role)]) + _lpay(t.p) + u32(t.owner)
    if isinstance(t, qwen.ToolsSystem):
        return b"\x01" + _opt(_lpay, t.sys) + _list(_text, t.tools) + u32(t.owner)
    if isinstance(t, qwen.AssistantTurn):
        return (b"\x02" + _opt(_lpay, t.think) + _lpay(t.content) + _bool(t.sep)
                + _list(lambda k: _text(k.name) + _text(k.args), t.calls) + u32(t.owner))
    if isinstance(t, qwen.ToolGroup):
        return b"\x03" + _list(lambda r: _lpay(r[0]) + u32(r[1]), t.results)
    if isinstance(t, qwen.SampledTurn):
        return b"\x04" + _toks(t.ts) + u32(t.owner)
    raise TypeError(f"not a Qwen turn: {t!r}")


def _lturn(t: Any) -> bytes:
    if isinstance(t, llama.SystemTurn):
        return b"\x00" + _bool(t.env) + _list(_text, t.tools) + _lpay(t.sys) + u32(t.owner)
    if isinstance(t, llama.UserToolsTurn):
        return b"\x01" + _list(_text, t.tools) + _lpay(t.u) + u32(t.owner)
    if isinstance(t, llama.PlainTurn):
        return b"\x02" + bytes([LROLES.index(t.role)]) + _lpay(t.p) + u32(t.owner)
    if isinstance(t, llama.CallTurn):
        return b"\x03" + _text(t.name) + _text(t.args) + u32(t.owner)
    if isinstance(t, llama.IpythonTurn):
        return b"\x04" + _lpay(t.p) + u32(t.owner)
    if isinstance(t, llama.SampledTurn):
        return b"\x05" + _toks(t.ts) + u32(t.owner)
    raise TypeError(f"not a Llama turn: {t!r}")


def encode_unlayout_answer(fam: Any, q: Any) -> bytes:
    """``unlayoutAnswer``: status 0 and the lowered conversation (``None``: not a render)."""
    turn = _qturn if isinstance(fam, qwen.Qwen) else _lturn
    return b"\x00" + _opt(lambda x: _list(turn, x.turns) + _opt(u32, x.prompt), q)


def encode_error(code: int) -> bytes:
    """``encError``: status 1 and the error code."""
    return bytes([1, code])


# ---------------------------------------------------------------------------------------------
# Decoders


class _Short(Exception):
    """The bytes ran out or a tag is unknown (a ``none`` of the Lean decoders)."""


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise _Short
        self.pos += 1
        return self.data[self.pos - 1]

    def tag(self, n: int) -> int:
        b = self.byte()
        if b >= n:
            raise _Short
        return b

    def boolean(self) -> bool:
        return self.tag(2) == 1

    def u32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise _Short
        (v,) = struct.unpack_from("<I", self.data, self.pos)
        self.pos += 4
        return int(v)

    def many(self, rd: Callable[[], T]) -> list[T]:
        return [rd() for _ in range(self.u32())]

    def opt(self, rd: Callable[[], T]) -> T | None:
        return rd() if self.boolean() else None

    def toks(self) -> tuple[int, ...]:
        n = self.u32()
        if self.pos + 4 * n > len(self.data):
            raise _Short
        out = struct.unpack_from(f"<{n}I", self.data, self.pos)
        self.pos += 4 * n
        return tuple(int(t) for t in out)

    def text(self) -> str:
        n = self.u32()
        if self.pos + n > len(self.data):
            raise _Short
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Short from None

    def pair(self) -> tuple[int, int]:
        return self.u32(), self.u32()

    def json(self) -> Any:
        k = self.tag(7)
        if k <= 2:
            return (None, False, True)[k]
        if k == 3:
            return JNum(self.text())
        if k == 4:
            return self.text()
        if k == 5:
            return JArr(tuple(self.many(self.json)))
        return JObj(tuple(self.many(lambda: (self.text(), self.json()))))

    def payload(self) -> Text | Tokens:
        return Text(self.text()) if self.tag(2) == 0 else Tokens(self.toks())

    def block(self) -> Any:
        k = self.tag(4)
        if k == 0:
            return Plain(self.payload())
        if k == 1:
            return Reasoning(self.payload())
        if k == 2:
            name, args = self.text(), self.text()
            return ToolCall(name, args, self.opt(self.text))
        return Sampled(self.toks())

    def conversation(self) -> Conversation:
        g = self.boolean()
        tools = self.opt(lambda: self.many(self.json))
        msgs = self.many(lambda: Message(ROLES[self.tag(5)], self.many(self.block)))
        return Conversation(msgs, g, tools)

    def lpay(self) -> Any:
        return self.text() if self.tag(2) == 0 else self.toks()

    def family(self) -> Any:
        if self.tag(2) == 0:
            ids = qwen.QwenIds(self.u32(), self.u32(), self.u32(), self.u32(),
                               self.opt(self.pair), self.opt(self.pair), self.toks())
            mode, thinking = MODES[self.tag(3)], self.boolean()
            return qwen.Qwen(ids, mode, thinking, self.opt(self.text), self.boolean())
        lids = llama.LlamaIds(self.u32(), self.u32(), self.u32(), self.u32(), self.toks())
        return llama.Llama(lids, self.text(), self.boolean())

    def qturn(self) -> Any:
        k = self.tag(5)
        if k == 0:
            return qwen.PlainTurn(QROLES[self.tag(2)], self.lpay(), self.u32())
        if k == 1:
            return qwen.ToolsSystem(self.opt(self.lpay), tuple(self.many(self.text)),
                                    self.u32())
        if k == 2:
            return qwen.AssistantTurn(
                self.opt(self.lpay), self.lpay(), self.boolean(),
                tuple(self.many(lambda: qwen.Call(self.text(), self.text()))), self.u32())
        if k == 3:
            return qwen.ToolGroup(tuple(self.many(lambda: (self.lpay(), self.u32()))))
        return qwen.SampledTurn(self.toks(), self.u32())

    def lturn(self) -> Any:
        k = self.tag(6)
        if k == 0:
            return llama.SystemTurn(self.boolean(), tuple(self.many(self.text)), self.lpay(),
                                    self.u32())
        if k == 1:
            return llama.UserToolsTurn(tuple(self.many(self.text)), self.lpay(), self.u32())
        if k == 2:
            return llama.PlainTurn(LROLES[self.tag(4)], self.lpay(), self.u32())
        if k == 3:
            return llama.CallTurn(self.text(), self.text(), self.u32())
        if k == 4:
            return llama.IpythonTurn(self.lpay(), self.u32())
        return llama.SampledTurn(self.toks(), self.u32())

    def item(self) -> core.Item:
        k = self.tag(3)
        value: Any = self.u32() if k == 0 else self.text() if k == 1 else self.toks()
        return core.Item(k, value, self.u32(), self.boolean())

    def at_end(self) -> bool:
        return self.pos == len(self.data)


def _section(r: _Reader, rd: Callable[[], T], kind: str) -> T:
    try:
        return rd()
    except _Short:
        raise WireDecodeError(kind) from None


def _head(data: bytes) -> tuple[_Reader, Any]:
    """``readHead``: the version byte and the format."""
    if not data:
        raise WireDecodeError("empty")
    if data[0] != WIRE_VERSION:
        raise WireDecodeError("version")
    if len(data) < 2 or data[1] > 1:
        raise WireDecodeError("family")
    r = _Reader(data, 1)
    return r, _section(r, r.family, "format")


def _end(r: _Reader) -> None:
    if not r.at_end():
        raise WireDecodeError("trailing")


def decode_layout_request(data: bytes) -> tuple[Any, Conversation]:
    """``readLayoutRequest``: the family instance and the conversation."""
    r, fam = _head(data)
    c = _section(r, r.conversation, "conversation")
    _end(r)
    return fam, c


def decode_unlayout_request(data: bytes) -> tuple[Any, core.Stream]:
    """``readUnlayoutRequest``: the family instance and the symbol stream (runs merged)."""
    r, fam = _head(data)

    def entries() -> list[Any]:
        out: list[Any] = []
        for _ in range(r.u32()):
            k = r.tag(3)
            x: Any = r.text() if k == 1 else r.u32()
            if k == 2:
                raise WireDecodeError("symbols", "verbatim-token symbols are not produced by "
                                      "decode_syms")
            out.append(x)
        return core.merge_text(out)

    s = _section(r, entries, "symbols")
    _end(r)
    return fam, s


def _status(data: bytes) -> _Reader:
    if not data:
        raise WireDecodeError("answer", "empty answer")
    if data[0] == 1:
        if len(data) != 2:
            raise WireDecodeError("answer", "malformed error answer")
        raise WireAnswerError(data[1])
    if data[0] != 0:
        raise WireDecodeError("answer", f"unknown status {data[0]}")
    return _Reader(data, 1)


def decode_layout_answer(data: bytes) -> list[core.Item] | None:
    """``readLayoutAnswer``: the items, or ``None`` when the format refuses the conversation.

    Raises:
        WireAnswerError: status 1 (the request was not decodable).
        WireDecodeError: a malformed answer.
    """
    r = _status(data)
    ok = _section(r, r.boolean, "answer")
    items = _section(r, lambda: r.many(r.item), "answer") if ok else None
    if not r.at_end():
        raise WireDecodeError("answer", "trailing bytes")
    return items


def decode_unlayout_answer(fam: Any, data: bytes) -> Any:
    """An unlayout answer for ``fam``: ``QConv`` / ``LConv`` (owners 0) or ``None``.

    Raises:
        WireAnswerError: status 1.
        WireDecodeError: a malformed answer.
    """
    r = _status(data)
    is_qwen = isinstance(fam, qwen.Qwen)
    turn = r.qturn if is_qwen else r.lturn
    make = qwen.QConv if is_qwen else llama.LConv

    def conv() -> Any:
        return make(tuple(r.many(turn)), r.opt(r.u32))

    q = _section(r, lambda: r.opt(conv), "answer")
    if not r.at_end():
        raise WireDecodeError("answer", "trailing bytes")
    return q
