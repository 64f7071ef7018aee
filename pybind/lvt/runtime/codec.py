"""The tokenizer codec: a Hugging Face ``tokenizers.Tokenizer`` as the abstract ``Codec`` of
the formal model, with the two codec laws enforced at run time.

* Control tokens never come from text: the codec encodes with a *text* copy of the tokenizer
  from which the reserved added tokens (the format's control tokens and every added token the
  tokenizer flags ``special``) are removed, with ``encode_special_tokens = True`` and
  ``add_special_tokens=False`` (no BOS from a post-processor). So text such as
  ``"<|eot_id|>"`` or ``"<think>"`` encodes to ordinary tokens. Other added tokens (Gemma's
  ``<table>``, Qwen's ``<|fim_prefix|>``) stay part of text encoding, as in the template.
* Each text span is encoded as one string; cache misses are batched through
  ``encode_batch``; results are kept in a bounded, thread-safe LRU cache keyed by the text
  (a lock guards every read and update, so one codec may be shared by threads).
* Law ``encode_free``: every encoding the tokenizer returns is scanned for reserved ids before
  it is cached or returned (:class:`~lvt.errors.CodecLawError` naming the text, the token and
  its position). Cached encodings were scanned when they were produced and are immutable.
* Law ``decode_encode``: with ``strict=True`` every fresh encoding is decoded through the byte
  table and compared with the UTF-8 bytes of the text.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from lvt.errors import CodecLawError, ConversationError, LvtError

__all__ = ["TokenizerCodec", "as_tokenizer", "bytes_to_unicode", "text_only_tokenizer"]


def as_tokenizer(tokenizer: Any) -> Tokenizer:
    """The ``tokenizers.Tokenizer`` behind ``tokenizer`` (itself, or the
    ``backend_tokenizer`` of a ``transformers`` fast tokenizer)."""
    tok = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not isinstance(tok, Tokenizer):
        raise LvtError(
            f"expected a tokenizers.Tokenizer or a transformers fast tokenizer, got "
            f"{type(tokenizer).__name__}"
        )
    return tok


def _top_level_field(js: str, key: str) -> tuple[Any, int, int] | None:
    """Decode the value of a top-level ``key`` of the tokenizer JSON ``js`` without parsing
    the (large) vocabulary: returns ``(value, start, end)`` of the value's text, or ``None``.
    Relies on ``tokenizers`` serialising the small top-level fields before ``model``."""
    model_at = js.find('"model":')
    at = js.find(f'"{key}":')
    if at < 0 or (model_at >= 0 and at > model_at):
        return None
    start = at + len(key) + 3
    while js[start] in " \n\t":
        start += 1
    value, end = json.JSONDecoder().raw_decode(js, start)
    return value, start, end


def text_only_tokenizer(
    tok: Tokenizer, js: str | None = None, reserved: Iterable[int] | None = None
) -> Tokenizer:
    """A copy of ``tok`` that never produces a reserved token from text.

    The added tokens whose id is in ``reserved`` (all of them when ``reserved`` is ``None``)
    are flagged special and special-token parsing is switched off
    (``encode_special_tokens = True``), so they are encoded as ordinary text; every other
    added token keeps being matched in text, as the template's tokenizer matches it. (Added
    tokens are kept in the copy: removing some would renumber the others.)"""
    js = tok.to_str() if js is None else js
    f = _top_level_field(js, "added_tokens")
    if f is not None:
        res = None if reserved is None else set(reserved)
        added = [dict(a, special=True) if res is None or int(a["id"]) in res else a
                 for a in f[0]]
        js = js[: f[1]] + json.dumps(added, ensure_ascii=False) + js[f[2] :]
    out = Tokenizer.from_str(js)
    out.encode_special_tokens = True
    out.no_truncation()
    out.no_padding()
    return out


def bytes_to_unicode() -> dict[int, str]:
    """The GPT-2 byte-to-character table used by byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs), strict=True))


#: The inverse of :func:`bytes_to_unicode` (byte-level BPE characters to bytes).
_BYTE_DECODER: dict[str, int] = {}


def _unicode_form(n: Any) -> str | None:
    """The Unicode normal form a tokenizer normalizer applies (``None`` when it applies none,
    or something else than a normal form)."""
    if not isinstance(n, dict):
        return None
    if n.get("type") in ("NFC", "NFD", "NFKC", "NFKD"):
        return str(n["type"])
    if n.get("type") == "Sequence":
        forms = [f for f in (_unicode_form(x) for x in n.get("normalizers", [])) if f]
        return forms[-1] if forms else None
    return None


def _fill_byte_decoder() -> None:
    _BYTE_DECODER.update({c: b for b, c in bytes_to_unicode().items()})


def _byte_fallback_steps(d: Any) -> list[tuple[str, str]] | None:
    """The ``Replace`` steps of a SentencePiece-style decoder (Gemma's ``Sequence`` of
    ``Replace("▁", " ")``, ``ByteFallback``, ``Fuse``), or ``None`` for any other decoder.
    Such a decoder maps each token on its own (``<0xNN>`` to the byte NN, other tokens through
    the replacements), so a byte table decodes exactly as it does."""
    if not isinstance(d, dict) or d.get("type") != "Sequence":
        return None
    steps: list[tuple[str, str]] = []
    fallback = False
    for x in d.get("decoders", []):
        kind = x.get("type") if isinstance(x, dict) else None
        pat = x.get("pattern", {}).get("String") if kind == "Replace" else None
        if kind == "Replace" and isinstance(pat, str) and pat and not fallback:
            steps.append((pat, str(x.get("content", ""))))
        elif kind == "ByteFallback":
            fallback = True
        elif kind != "Fuse":
            return None
    return steps if fallback else None


_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _is_byte_level_decoder(d: Any) -> bool:
    if not isinstance(d, dict):
        return False
    if d.get("type") == "ByteLevel":
        return True
    if d.get("type") == "Sequence":
        return any(_is_byte_level_decoder(x) for x in d.get("decoders", []))
    return False


class TokenizerCodec:
    """A lawful codec over a ``tokenizers.Tokenizer``.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` or a ``transformers`` fast tokenizer.
        reserved: the control-token ids of the format (text must never encode to them).
        strict: also check that decoding each fresh encoding gives the text back.
        cache_size: maximum number of texts kept in the LRU cache (0 disables the cache).
    """

    def __init__(
        self,
        tokenizer: Any,
        reserved: Iterable[int],
        strict: bool = False,
        cache_size: int = 65536,
    ) -> None:
        self._tokenizer = as_tokenizer(tokenizer)
        js = self._tokenizer.to_str()
        reserved = frozenset(int(t) for t in reserved)
        self._text = text_only_tokenizer(self._tokenizer, js, reserved)
        self._digest = hashlib.sha256(js.encode("utf-8")).hexdigest()
        norm = _top_level_field(js, "normalizer")
        #: The Unicode normal form the tokenizer applies to text ("NFC", "NFKC", ...), or None.
        self.unicode_form: str | None = _unicode_form(norm[0]) if norm is not None else None
        dec = _top_level_field(js, "decoder")
        self._byte_level = dec is not None and _is_byte_level_decoder(dec[0])
        self._fallback_steps = None if dec is None else _byte_fallback_steps(dec[0])
        added = _top_level_field(js, "added_tokens")
        self._added_list: list[dict[str, Any]] = list(added[0]) if added is not None else []
        self._added: dict[int, str] = {int(a["id"]): a["content"] for a in self._added_list}
        special = {i for i, a in self._added_special().items() if a}
        self.reserved: frozenset[int] = reserved | frozenset(special)
        self.strict = bool(strict)
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._lengths: dict[int, int] = {}
        self._byte_table: list[bytes | None] | None = None
        self._valid: np.ndarray | None = None
        self.hits = 0
        self.misses = 0

    def _added_special(self) -> dict[int, bool]:
        return {int(a["id"]): bool(a.get("special")) for a in self._added_list}

    # -- properties -------------------------------------------------------------------------

    @property
    def tokenizer(self) -> Tokenizer:
        """The wrapped tokenizer (with its added tokens; used for decoding)."""
        return self._tokenizer

    @property
    def vocab_size(self) -> int:
        """Number of ids, added tokens included."""
        return int(self._tokenizer.get_vocab_size(with_added_tokens=True))

    def cache_info(self) -> dict[str, int]:
        """Cache statistics: ``size``, ``max``, ``hits``, ``misses``."""
        return {"size": len(self._cache), "max": self.cache_size, "hits": self.hits,
                "misses": self.misses}

    def clear_cache(self) -> None:
        """Empty the cache."""
        with self._lock:
            self._cache.clear()

    # -- encoding ---------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Encode one text payload (law-checked)."""
        return list(self.encode_tuples([text])[0])

    def encode_many(self, texts: Sequence[str]) -> list[list[int]]:
        """Encode several text payloads; cache misses go through one ``encode_batch``."""
        return [list(t) for t in self.encode_tuples(texts)]

    def encode_tuples(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """Like :meth:`encode_many` but returns the cached tuples themselves (no copy)."""
        out: list[tuple[int, ...] | None] = []
        misses: dict[str, None] = {}
        with self._lock:
            cache = self._cache
            for s in texts:
                r = cache.get(s)
                if r is None:
                    if type(s) is not str:
                        raise ConversationError(
                            None, f"text payload must be a str, got {type(s).__name__}"
                        )
                    misses[s] = None
                else:
                    cache.move_to_end(s)
                    self.hits += 1
                out.append(r)
        if not misses:
            return out  # type: ignore[return-value]
        fresh = self._encode_fresh(list(misses))
        with self._lock:
            self.misses += len(fresh)
            cache = self._cache
            for s, ids in fresh.items():
                cache[s] = ids
            while len(cache) > self.cache_size:
                cache.popitem(last=False)
        return [r if r is not None else fresh[s] for r, s in zip(out, texts, strict=True)]

    def _encode_fresh(self, texts: list[str]) -> dict[str, tuple[int, ...]]:
        for s in texts:
            _check_scalar_values(s)
        # encode_batch_fast (tokenizers >= 0.21) skips character offsets, which lvt never
        # reads: same ids, about 30% less time
        batch = getattr(self._text, "encode_batch_fast", None) or self._text.encode_batch
        encs = batch(texts, add_special_tokens=False)
        reserved = self.reserved
        fresh: dict[str, tuple[int, ...]] = {}
        for s, e in zip(texts, encs, strict=True):
            ids = tuple(e.ids)
            if not reserved.isdisjoint(ids):
                pos = next(j for j, t in enumerate(ids) if t in reserved)
                raise CodecLawError(s, ids[pos], pos, "text encoded to a reserved token")
            if self.strict:
                self._check_round_trip(s, ids)
            fresh[s] = ids
        return fresh

    def _check_round_trip(self, s: str, ids: Sequence[int]) -> None:
        got = self.decode_bytes(ids)
        want = s.encode("utf-8")
        if got != want:
            pos = next(
                (j for j, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            raise CodecLawError(
                s, -1, pos, f"decoding the encoding does not give the text back "
                f"(first differing byte {pos})"
            )

    # -- decoding ---------------------------------------------------------------------------

    def _fallback_table(self, steps: list[tuple[str, str]]) -> list[bytes | None]:
        """Byte table of a SentencePiece-style decoder: ``<0xNN>`` is the byte NN, any other
        token (added tokens too, as the decoder treats them) its string after the replacements
        (``▁`` to a space)."""
        table: list[bytes | None] = [None] * self.vocab_size
        for tok, i in self._tokenizer.get_vocab(with_added_tokens=True).items():
            if i >= len(table):
                table.extend([None] * (i + 1 - len(table)))
            m = _BYTE_TOKEN.fullmatch(tok) if i not in self._added else None
            if m is not None:
                table[i] = bytes([int(m.group(1), 16)])
                continue
            for pat, rep in steps:
                tok = tok.replace(pat, rep)
            table[i] = tok.encode("utf-8")
        return table

    def _table(self) -> list[bytes | None] | None:
        if not self._byte_level:
            if self._fallback_steps is None:
                return None
            if self._byte_table is None:
                self._byte_table = self._fallback_table(self._fallback_steps)
            return self._byte_table
        if self._byte_table is None:
            dec = {c: b for b, c in bytes_to_unicode().items()}
            table: list[bytes | None] = [None] * self.vocab_size
            added = self._added
            for tok, i in self._tokenizer.get_vocab(with_added_tokens=True).items():
                if i >= len(table):
                    table.extend([None] * (i + 1 - len(table)))
                if i in added:
                    table[i] = added[i].encode("utf-8")
                else:
                    try:
                        table[i] = bytes(dec[c] for c in tok)
                    except KeyError:
                        table[i] = tok.encode("utf-8")
            self._byte_table = table
        return self._byte_table

    def decode_bytes(self, ts: Sequence[int]) -> bytes:
        """``Codec.decodeBytes``: the bytes a token list stands for (byte table for
        byte-level BPE and for SentencePiece-style byte-fallback decoders such as Gemma's;
        otherwise the UTF-8 of the tokenizer's decode)."""
        table = self._table()
        if table is None:
            return self._tokenizer.decode(list(ts), skip_special_tokens=False).encode(
                "utf-8", "surrogatepass"
            )
        out = []
        n = len(table)
        for t in ts:
            b = table[t] if 0 <= t < n else None
            if b is None:
                raise LvtError(f"token id {t} is not in the vocabulary")
            out.append(b)
        return b"".join(out)

    def token_byte_length(self, t: int) -> int:
        """The number of bytes token ``t`` decodes to (memoised per id)."""
        n = self._lengths.get(t)
        if n is None:
            if self._byte_level:
                tok = self._tokenizer.id_to_token(int(t))
                if tok is None:
                    raise LvtError(f"token id {t} is not in the vocabulary")
                if int(t) in self._added:
                    n = len(self._added[int(t)].encode("utf-8"))
                else:
                    dec = _BYTE_DECODER
                    n = sum(1 if c in dec else len(c.encode("utf-8")) for c in tok)
            else:
                n = len(self.decode_bytes([t]))
            self._lengths[t] = n
        return n

    def decode(self, ts: Sequence[int]) -> str:
        """Decode tokens to text with the wrapped tokenizer (special tokens kept)."""
        return self._tokenizer.decode(list(ts), skip_special_tokens=False)

    # -- vocabulary -------------------------------------------------------------------------

    def valid_ids(self) -> np.ndarray:
        """Boolean array: ``valid_ids()[t]`` when ``t`` is a token of the vocabulary."""
        if self._valid is None:
            vocab = self._tokenizer.get_vocab(with_added_tokens=True)
            ids = np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))
            valid = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
            valid[ids] = True
            self._valid = valid
        return self._valid

    def first_invalid_id(self, ts: Sequence[int]) -> int | None:
        """Index of the first id of ``ts`` outside the vocabulary, or ``None``."""
        if not ts:
            return None
        valid = self.valid_ids()
        a = np.asarray(ts, dtype=np.int64)
        ok = (a >= 0) & (a < len(valid))
        ok[ok] = valid[a[ok]]
        if ok.all():
            return None
        return int(np.argmin(ok))

    def digest(self) -> str:
        """sha256 of the tokenizer's JSON serialisation (vocabulary, merges, added tokens,
        normalizer, pre-tokenizer, decoder) as ``tokenizers`` writes it."""
        return self._digest


def _check_scalar_values(s: str) -> None:
    """Raise on a lone surrogate (text that has no UTF-8 encoding)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ConversationError(
            None, f"text contains a lone surrogate U+{ord(s[e.start]):04X} at offset {e.start}"
        ) from None


_fill_byte_decoder()
