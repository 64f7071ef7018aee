"""Typed exceptions raised by :mod:`lvt`.

Every error that user input can cause is an :class:`LvtError`, so callers can catch the
whole family with one ``except`` clause and still tell the cases apart.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "CallHeaderSplitError",
    "CodecLawError",
    "CollisionError",
    "ConversationError",
    "FormatError",
    "InputError",
    "LvtError",
    "NativeLibraryError",
    "ParseError",
]


class LvtError(Exception):
    """Base class of every error raised by lvt."""


class ArgumentError(LvtError, TypeError, ValueError):
    """An argument of a public entry point has the wrong type or an impossible value: a float
    or a bool where a token id is expected, a dict where a :class:`~lvt.model.Message` is, a
    string for ``add_generation_prompt``, a 2-D array of ids.

    It is both a :class:`TypeError` and a :class:`ValueError`, so code written against the
    raw exceptions Python would raise keeps working.

    Attributes:
        argument: the name of the offending argument (``"ids"``, ``"messages"``, ...).
        reason: a human-readable explanation.
        message_index: index of the message it concerns, when there is one.
        position: index of the offending element (a token id, a block), when there is one.
    """

    def __init__(
        self,
        argument: str,
        reason: str,
        *,
        message_index: int | None = None,
        position: int | None = None,
    ) -> None:
        self.argument = argument
        self.reason = reason
        self.message_index = message_index
        self.position = position
        where = [f"argument {argument!r}"]
        if message_index is not None:
            where.append(f"message {message_index}")
        if position is not None:
            where.append(f"position {position}")
        super().__init__(f"{', '.join(where)}: {reason}")


class InputError(LvtError, ValueError):
    """A file (a conversations file, a template, a tokenizer) could not be read; names the
    path and, for line-oriented files, the line (also importable as
    :class:`lvt.inputs.InputError`).

    Attributes:
        path: the file as given.
        line: 1-based line number, or ``None`` when the problem is the whole file.
        reason: a human-readable explanation.
    """

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {reason}")


class ConversationError(LvtError, ValueError):
    """A conversation is not acceptable for the chosen format.

    Attributes:
        message_index: index of the offending message, or ``None`` when the problem is not
            tied to one message (an empty conversation, say).
        reason: a human-readable explanation.
    """

    def __init__(self, message_index: int | None, reason: str) -> None:
        self.message_index = message_index
        self.reason = reason
        where = "conversation" if message_index is None else f"message {message_index}"
        super().__init__(f"{where}: {reason}")


class CodecLawError(LvtError):
    """The tokenizer broke one of the two codec laws of the formal model.

    Either a text encoded to a reserved (control) token, or decoding the encoding of a text
    did not give the text back after the front-end normalisation (checked by default; a codec
    built with ``strict=False`` skips this check). ``ChatEncoder.encode``/``encode_batch``
    name the message (and, in a batch, the conversation) the text came from.

    Attributes:
        text: the text that was encoded (a whole span: literals and message text).
        token_id: the offending token id (``-1`` for a round-trip failure with no single
            token to blame).
        position: index of the offending token in the encoding of ``text`` (for a
            round-trip failure, the first differing byte of the decoded text).
        message_index: index of the message the text came from, when known.
        conversation_index: index of the conversation in an ``encode_batch`` of several,
            else ``None``.
    """

    def __init__(
        self,
        text: str,
        token_id: int,
        position: int,
        reason: str,
        message_index: int | None = None,
    ) -> None:
        self.text = text
        self.token_id = token_id
        self.position = position
        self.message_index = message_index
        self.conversation_index: int | None = None
        self.reason = reason
        shown = text if len(text) <= 80 else text[:77] + "..."
        where = "" if message_index is None else f" (message {message_index})"
        super().__init__(
            f"codec law broken{where}: {reason}; text={shown!r}, token={token_id}, "
            f"position={position}"
        )


class CallHeaderSplitError(CodecLawError):
    """gpt-oss: the tokenizer does not split ``assistant`` from `` to=functions.NAME`` for a
    tool name the conversation calls.

    The token-level extension theorem of gpt-oss (``extension_ids_call``,
    ``Verified/Thm/HarmonyPromptIds.lean``) assumes it (``SplitsCallHeader``): the generation
    prompt ends with the tokens of ``assistant``, and a call turn's header
    ``assistant to=functions.NAME`` must encode as those tokens followed by the tokens of
    `` to=functions.NAME``, or the prompt's ids are not a prefix of the call's render.
    Checked once per tool name and encoder.

    Attributes:
        tool_name: the tool name whose call header merges (also ``text``: the header span).
    """

    def __init__(self, tool_name: str, reason: str, message_index: int | None = None) -> None:
        self.tool_name = tool_name
        super().__init__("assistant to=functions." + tool_name, -1, 0,
                         f"tool name {tool_name!r}: {reason}", message_index)


class CollisionError(LvtError, ValueError):
    """Two different inputs of one batch render to the same ids and loss mask, and
    ``on_collision="error"`` was asked for (:mod:`lvt.collisions`).

    Attributes:
        first: the index (or input line) of the earlier input.
        second: the index (or input line) of the later one.
    """

    def __init__(self, first: int, second: int, reason: str) -> None:
        self.first = first
        self.second = second
        self.reason = reason
        super().__init__(reason)

    def __reduce__(self) -> tuple[type, tuple[int, int, str]]:
        return (type(self), (self.first, self.second, self.reason))


class FormatError(LvtError, ValueError):
    """A chat format is unknown, cannot be instantiated from a tokenizer (a control token is
    missing) or is not well-formed."""


class ParseError(LvtError, ValueError):
    """A token sequence is not the render of any valid conversation.

    Attributes:
        position: index of the first token that could not be parsed, when known.
    """

    def __init__(self, reason: str, position: int | None = None) -> None:
        self.position = position
        self.reason = reason
        where = "" if position is None else f" at token {position}"
        super().__init__(f"not a render{where}: {reason}")


class NativeLibraryError(LvtError):
    """The Lean-built shared library could not be loaded or returned an error."""
