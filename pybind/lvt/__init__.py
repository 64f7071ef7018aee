"""Lean Verified Tokenizers: chat rendering with proven round trip, prefix stability and
no-forgery.

Quick start::

    import lvt
    enc = lvt.ChatEncoder.from_tokenizer(tokenizer, format="qwen2.5")
    out = enc.encode_openai([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    out.ids, out.mask, out.owner          # aligned NumPy arrays

The encoder runs the Python transliteration of the Lean definitions in ``Verified/Spec``
(``lvt.runtime.core``, ``lvt.families``), differential-tested against the Lean kernel's evaluation.
Where the Lean-built shared library is found (``lake build``; see :mod:`lvt.runtime.native`),
lowering, layout and unlayout run natively in Lean instead; :func:`backend` says which.
"""

from __future__ import annotations

from lvt.collisions import CollisionWarning
from lvt.encoder import ChatEncoder, Encoded
from lvt.errors import (
    ArgumentError,
    CallHeaderSplitError,
    CodecLawError,
    CollisionError,
    ConversationError,
    FormatError,
    InputError,
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
from lvt.runtime.codec import TokenizerCodec

__all__ = [
    "FORMATS",
    "ArgumentError",
    "Block",
    "BlockKind",
    "CallHeaderSplitError",
    "ChatEncoder",
    "CodecLawError",
    "CollisionError",
    "CollisionWarning",
    "Conversation",
    "ConversationError",
    "Encoded",
    "FormatError",
    "FormatSpec",
    "InputError",
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



def native_backend() -> object | None:
    """The loaded :class:`lvt.runtime.native.NativeBackend`, or ``None`` on the reference backend.

    Raises:
        NativeLibraryError: ``$LVT_NATIVE_LIB`` is set but the library cannot be loaded.
    """
    from lvt.runtime import native as _native

    return _native.load()


def backend() -> str:
    """``"native"`` when the Lean-built shared library is loaded (lowering, layout and unlayout
    then run in Lean), else ``"reference"`` (the Python transliteration;
    ``LVT_BACKEND=reference`` forces it).

    Raises:
        NativeLibraryError: ``$LVT_NATIVE_LIB`` is set but the library cannot be loaded.
    """
    return "native" if native_backend() is not None else "reference"


def backend_reason() -> str:
    """Why :func:`backend` chose what it did (the library path, or why none was loaded)."""
    from lvt.runtime import native as _native

    return _native.reason()
