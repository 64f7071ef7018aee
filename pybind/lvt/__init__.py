"""Lean Verified Tokenizers: chat rendering with proven round trip, prefix stability and
no-forgery.

Quick start::

    import lvt
    enc = lvt.ChatEncoder.from_tokenizer(tokenizer, format="qwen2.5")
    out = enc.encode_openai([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    out.ids, out.mask, out.owner          # aligned NumPy arrays

:func:`backend` says whether the Lean-built shared library (``"native"``) or the Python
transliteration of ``Verified/Spec`` (``"reference"``) runs.
"""

from __future__ import annotations

from lvt.codec import TokenizerCodec
from lvt.encoder import ChatEncoder, Encoded
from lvt.errors import (
    CodecLawError,
    ConversationError,
    FormatError,
    LvtError,
    NativeLibraryError,
    ParseError,
)
from lvt.formats import FORMATS, FormatSpec, format_names, load_format
from lvt.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    Payload,
    Plain,
    Reasoning,
    Role,
    Sampled,
    Text,
    Tokens,
    ToolCall,
)
from lvt.openai import from_openai, from_openai_batch

__all__ = [
    "FORMATS",
    "Block",
    "BlockKind",
    "ChatEncoder",
    "CodecLawError",
    "Conversation",
    "ConversationError",
    "Encoded",
    "FormatError",
    "FormatSpec",
    "LvtError",
    "Message",
    "NativeLibraryError",
    "ParseError",
    "Payload",
    "Plain",
    "Reasoning",
    "Role",
    "Sampled",
    "Text",
    "TokenizerCodec",
    "Tokens",
    "ToolCall",
    "__version__",
    "backend",
    "backend_reason",
    "format_names",
    "from_openai",
    "from_openai_batch",
    "load_format",
    "native_backend",
]

try:
    from importlib.metadata import version as _v

    __version__ = _v("lvt")
except Exception:  # pragma: no cover
    __version__ = "0+unknown"

_BACKEND: tuple[str, str] | None = None


def _probe() -> tuple[str, str]:
    import os

    if os.environ.get("LVT_BACKEND", "").lower() == "reference":
        return "reference", "LVT_BACKEND=reference forces the reference backend"
    try:
        from lvt import _native
    except ImportError as e:  # pragma: no cover - _native ships with the package
        return "reference", f"lvt._native is not importable ({e})"
    # NativeLibraryError propagates when $LVT_NATIVE_LIB names a missing or broken library
    # (no silent fallback then).
    nb = _native.load()
    if nb is None:
        return "reference", _native.reason()
    return "native", _native.reason()


def native_backend() -> object | None:
    """The loaded :class:`lvt._native.NativeBackend`, or ``None`` on the reference backend."""
    if backend() != "native":
        return None
    from lvt import _native

    return _native.load()


def backend() -> str:
    """``"native"`` when the Lean-built shared library is loaded, else ``"reference"``
    (``LVT_BACKEND=reference`` forces the reference backend).

    Raises:
        NativeLibraryError: ``$LVT_NATIVE_LIB`` is set but the library cannot be loaded.
    """
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = _probe()
    return _BACKEND[0]


def backend_reason() -> str:
    """Why :func:`backend` chose what it did (library path, or why it was not loaded)."""
    backend()
    assert _BACKEND is not None
    return _BACKEND[1]
