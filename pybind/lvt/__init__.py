"""Lean Verified Tokenizers: chat rendering with proven round trip, prefix stability and
no-forgery.

Quick start::

    import lvt
    enc = lvt.ChatEncoder.from_tokenizer(tokenizer, format="qwen2.5")
    out = enc.encode_openai([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    out.ids, out.mask, out.owner          # aligned NumPy arrays

The encoder runs the Python transliteration of the Lean definitions in ``Verified/Spec``
(``lvt.core``, ``lvt.families``), differential-tested against the Lean kernel's evaluation.
"""

from __future__ import annotations

from lvt.codec import TokenizerCodec
from lvt.encoder import ChatEncoder, Encoded
from lvt.errors import (
    CodecLawError,
    ConversationError,
    FormatError,
    LvtError,
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
    "format_names",
    "from_openai",
    "from_openai_batch",
    "load_format",
]

try:
    from importlib.metadata import version as _v

    __version__ = _v("lvt")
except Exception:  # pragma: no cover
    __version__ = "0+unknown"

