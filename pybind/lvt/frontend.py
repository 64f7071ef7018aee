"""The front end of ``encode``: what users write, normalised as the tokenizer would read it,
and a codec-law failure traced back to the message and the text it came from.

The decode law the theorems assume (decoding the encoding of a text gives the text back) holds
for the codec of :class:`~lvt.runtime.codec.TokenizerCodec` only on text the tokenizer does not
rewrite. The front end therefore applies the tokenizer's rewrites to every text a user writes
(:meth:`~lvt.runtime.codec.TokenizerCodec.normalize`: Qwen's NFC, Gemma's ``"\\u2581"`` to a
space), on the user's own strings: payloads, tool-call names, ids and argument *values*, and
the strings of tool definitions, always *before* any JSON escaping (:func:`normalize_args`).
What the render then holds is exactly what ``parse`` returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from lvt.errors import CodecLawError
from lvt.jsonfmt import map_strings
from lvt.model import Conversation, Message, Plain, Reasoning, Text, ToolCall
from lvt.runtime import core

__all__ = ["locate_codec_error", "normalize_args", "normalize_text"]


def _map_plain(v: Any, f: Callable[[str], str]) -> Any:
    """``f`` on every string (keys included) of plain JSON data (``json.loads`` output)."""
    if isinstance(v, str):
        return f(v)
    if isinstance(v, list):
        return [_map_plain(x, f) for x in v]
    if isinstance(v, dict):
        return {f(k): _map_plain(x, f) for k, x in v.items()}
    return v


def normalize_args(args: str, f: Callable[[str], str]) -> str:
    """Tool-call arguments as the tokenizer reads them, with ``f`` never applied across a
    JSON escape.

    Arguments ``f`` leaves alone are kept as written (the template writes them verbatim, and
    its tokenizer leaves them alone: ASCII escapes such as ``\\u0065\\u0301`` included).
    Otherwise text that is not JSON is the user's text: ``f(args)``. JSON text is read and
    ``f`` applied to its strings (keys and values); ``f(args)``, the template's text as its
    tokenizer reads it, is kept when it is JSON of that normalised value; when it is not (an
    escape followed by a combining mark: ``"x\\n"`` then U+0301 would become ``"x\\ń"``, not
    JSON) the normalised value is written again with ``json.dumps(..., ensure_ascii=False)``.
    Idempotent."""
    g = f(args)
    if g == args:
        return args
    try:
        v = json.loads(args)
    except (ValueError, RecursionError):
        return g
    w = _map_plain(v, f)
    try:
        if json.loads(g) == w:
            return g
    except (ValueError, RecursionError):
        pass
    return json.dumps(w, ensure_ascii=False)


def normalize_text(conv: Conversation, f: Callable[[str], str], tools: Any = ...) -> Conversation:
    """Apply ``f`` to every text of a conversation: payloads, tool-call names, ids and argument
    strings (:func:`normalize_args`), and the strings of the tool definitions (or use
    ``tools``, already normalised)."""
    def block(b: Any) -> Any:
        if isinstance(b, Plain | Reasoning) and isinstance(b.payload, Text):
            return type(b)(Text(f(b.payload.text)))
        if isinstance(b, ToolCall):
            return ToolCall(f(b.name), normalize_args(b.args, f),
                            None if b.id is None else f(b.id))
        return b

    return Conversation(
        [Message(m.role, [block(b) for b in m.blocks]) for m in conv.messages],
        conv.add_generation_prompt,
        tools if tools is not ... else
        None if conv.tools is None else [map_strings(t, f) for t in conv.tools],
    )


def locate_codec_error(e: CodecLawError, layouts: Sequence[Sequence[core.Item]], codec: Any
                       ) -> CodecLawError:
    """``e`` (raised while encoding the spans of ``layouts``) with the message it belongs to:
    the owner of the item of the first span equal to ``e.text`` in which the failure lies
    (the first differing byte, or the first byte of the offending token), and that item's
    text named in the reason. With several layouts (a batch), ``conversation_index`` is set
    and named too."""
    for n, items in enumerate(layouts):
        for run in _runs(items):
            if "".join(i.value for i in run) != e.text:
                continue
            byte = e.position if e.token_id < 0 else _token_byte(codec, e.text, e.position)
            item, acc = run[-1], 0
            for i in run:
                acc += len(i.value.encode("utf-8"))
                if byte < acc:
                    item = i
                    break
            shown = item.value if len(item.value) <= 60 else item.value[:57] + "..."
            where = f" (conversation {n} of the batch)" if len(layouts) > 1 else ""
            err = CodecLawError(e.text, e.token_id, e.position,
                                f"{e.reason}; in the text {shown!r} of message {item.owner}"
                                f"{where}", message_index=item.owner)
            err.conversation_index = n if len(layouts) > 1 else None
            return err
    return e


def _runs(items: Sequence[core.Item]) -> list[list[core.Item]]:
    """The non-empty text items of each span of a layout (what ``spans_of`` joins)."""
    out: list[list[core.Item]] = []
    cur: list[core.Item] = []
    for i in items:
        if i.kind == core.TEXT:
            if i.value:
                cur.append(i)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _token_byte(codec: Any, text: str, k: int) -> int:
    """The byte offset of token ``k`` of the encoding of ``text`` (unchecked: the encoding
    that broke the reserved-id law)."""
    try:
        ids = codec.raw_encode(text)
        return sum(codec.token_byte_length(t) for t in ids[:k])
    except Exception:  # the attribution is best effort; the error is raised either way
        return 0
