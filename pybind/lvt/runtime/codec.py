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
* Law ``decode_encode``: by default (``strict=True``) every fresh encoding is decoded through
  the byte table and compared with the UTF-8 bytes of the text (once per distinct text: the
  cache keeps only checked encodings). A failure is a :class:`~lvt.errors.CodecLawError`
  whose reason names the tokenizer's normalisation. ``strict=False`` skips this check: unsafe,
  since a text the tokenizer rewrites (Gemma's ``"a\u2581b"`` encodes as ``"a b"``) then
  renders as another conversation and nothing notices.
* The tokenizer's own normalisation moves to the front end (:meth:`TokenizerCodec.normalize`,
  which :meth:`lvt.encoder.ChatEncoder.normalize` applies to every text a user writes):
  a Unicode normal form (Qwen's NFC) is applied to each user text, *before* any JSON escaping,
  and the codec encodes without it (so an escape such as ``\\n`` followed by U+0301 is not
  composed into ``\\ń`` inside the rendered JSON); a SentencePiece decoder's deterministic
  rewrites (Gemma's ``Replace("\u2581", " ")``) are applied to user text too, so the text the
  render holds is what decoding gives back.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from operator import itemgetter
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


#: The text-only copies in use, keyed by (SHA-256 of the tokenizer's JSON, reserved ids): the
#: codecs of one tokenizer (encoders with other options, other formats over one vocabulary)
#: share one copy instead of parsing the multi-megabyte JSON again. Weak: a copy lives as long
#: as a codec uses it. ``tokenizers`` encodes through a shared reference, so sharing is safe
#: across threads; the copy's settings are fixed when it is made and never changed after.
_TEXT_COPIES: weakref.WeakValueDictionary[tuple[str, frozenset[int]], Tokenizer] = (
    weakref.WeakValueDictionary())
_TEXT_COPIES_LOCK = threading.Lock()


def text_only_tokenizer(
    tok: Tokenizer,
    js: str | None = None,
    reserved: Iterable[int] | None = None,
    drop_unicode_form: bool = False,
) -> Tokenizer:
    """A copy of ``tok`` that never produces a reserved token from text.

    The added tokens whose id is in ``reserved`` (all of them when ``reserved`` is ``None``)
    are flagged special and special-token parsing is switched off
    (``encode_special_tokens = True``), so they are encoded as ordinary text; every other
    added token keeps being matched in text, as the template's tokenizer matches it. (Added
    tokens are kept in the copy: removing some would renumber the others.)

    ``drop_unicode_form``: when the normalizer is a Unicode normal form and nothing else
    (:func:`pure_unicode_form`), the copy has no normalizer: the caller applies the form to
    the text it writes (before escaping it), and the copy encodes exactly what it is given."""
    js = tok.to_str() if js is None else js
    f = _top_level_field(js, "added_tokens")
    if f is not None:
        res = None if reserved is None else set(reserved)
        added = [dict(a, special=True) if res is None or int(a["id"]) in res else a
                 for a in f[0]]
        js = js[: f[1]] + json.dumps(added, ensure_ascii=False) + js[f[2] :]
    if drop_unicode_form:
        n = _top_level_field(js, "normalizer")
        if n is not None and pure_unicode_form(n[0]) is not None:
            js = js[: n[1]] + "null" + js[n[2] :]
    out = Tokenizer.from_str(js)
    out.encode_special_tokens = True
    out.no_truncation()
    out.no_padding()
    return out


def _shared_text_copy(tok: Tokenizer, js: str, digest: str, reserved: frozenset[int]) -> Tokenizer:
    """The codec's text-only copy (:func:`text_only_tokenizer` with the Unicode form dropped)
    of the tokenizer whose JSON is ``js`` (SHA-256 ``digest``): the copy another live codec of
    the same tokenizer and reserved ids already made, else a new one."""
    key = (digest, reserved)
    with _TEXT_COPIES_LOCK:
        got = _TEXT_COPIES.get(key)
    if got is not None:
        return got
    made = text_only_tokenizer(tok, js, reserved, drop_unicode_form=True)
    with _TEXT_COPIES_LOCK:
        return _TEXT_COPIES.setdefault(key, made)


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


def pure_unicode_form(n: Any) -> str | None:
    """The normal form of a normalizer that applies a Unicode normal form and nothing else
    (``{"type": "NFC"}``, or a ``Sequence`` of that form alone), else ``None``."""
    if not isinstance(n, dict):
        return None
    if n.get("type") in ("NFC", "NFD", "NFKC", "NFKD"):
        return str(n["type"])
    if n.get("type") == "Sequence":
        forms = {pure_unicode_form(x) for x in n.get("normalizers", [])}
        if len(forms) == 1 and None not in forms:
            return forms.pop()
    return None


def _describe_normalizer(n: Any) -> str:
    """A normalizer as a short phrase (``NFC``, ``Replace(' ' -> '\u2581')``, ...)."""
    if not isinstance(n, dict):
        return "none"
    kind = str(n.get("type"))
    if kind == "Sequence":
        parts = [_describe_normalizer(x) for x in n.get("normalizers", [])]
        return " then ".join(parts) if parts else "none"
    if kind == "Replace":
        pat = n.get("pattern", {})
        pat = pat.get("String", pat.get("Regex")) if isinstance(pat, dict) else pat
        return f"Replace({pat!r} -> {n.get('content', '')!r})"
    return kind


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
        strict: check the decode law on every fresh encoding (the default): decoding the ids
            gives the text back, byte for byte, else :class:`~lvt.errors.CodecLawError`.
            ``strict=False`` is unsafe: a text the tokenizer rewrites renders as another
            conversation, silently.
        cache_size: maximum number of texts kept in the LRU cache (0 disables the cache).
    """

    def __init__(
        self,
        tokenizer: Any,
        reserved: Iterable[int],
        strict: bool = True,
        cache_size: int = 65536,
    ) -> None:
        self._tokenizer = as_tokenizer(tokenizer)
        js = self._tokenizer.to_str()
        reserved = frozenset(int(t) for t in reserved)
        self._digest = hashlib.sha256(js.encode("utf-8")).hexdigest()
        self._text = _shared_text_copy(self._tokenizer, js, self._digest, reserved)
        norm = _top_level_field(js, "normalizer")
        #: The Unicode normal form the tokenizer applies to text ("NFC", "NFKC", ...), or None.
        self.unicode_form: str | None = _unicode_form(norm[0]) if norm is not None else None
        #: The tokenizer's normalizer in words (for error messages).
        self.normalizer_text = _describe_normalizer(norm[0] if norm is not None else None)
        dec = _top_level_field(js, "decoder")
        self._byte_level = dec is not None and _is_byte_level_decoder(dec[0])
        self._fallback_steps = None if dec is None else _byte_fallback_steps(dec[0])
        #: The decoder's deterministic rewrites ``(pattern, replacement)`` that the front end
        #: applies to text (Gemma: ``("\u2581", " ")``); empty for byte-level decoders.
        self.rewrites: tuple[tuple[str, str], ...] = tuple(self._fallback_steps or ())
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

    def normalize(self, s: str) -> str:
        """The front-end normalisation of one text a user writes: what the tokenizer would
        make of it, applied before the text is escaped or laid out, so that decoding the
        render gives exactly this text back (the decode law).

        * the decoder's rewrites (:attr:`rewrites`: Gemma's SentencePiece decoder turns
          ``"\u2581"`` into a space, so ``"a\u2581b"`` becomes ``"a b"``, which Gemma's
          tokenizer encodes to the same ids);
        * then the tokenizer's Unicode normal form (:attr:`unicode_form`: Qwen's NFC).

        Identity for tokenizers with neither (Llama 3, DeepSeek, gpt-oss, Mistral tekken)."""
        for pat, rep in self.rewrites:
            if pat in s:
                s = s.replace(pat, rep)
        form = self.unicode_form
        if form is not None and not unicodedata.is_normalized(form, s):  # type: ignore[arg-type]
            s = unicodedata.normalize(form, s)  # type: ignore[arg-type]
        return s

    def normalization_text(self) -> str:
        """What :meth:`normalize` applies, in words (``"NFC"``, ``"'\u2581' -> ' '"``,
        ``"none"``)."""
        parts = [f"{p!r} -> {r!r}" for p, r in self.rewrites]
        if self.unicode_form is not None:
            parts.append(self.unicode_form)
        return ", then ".join(parts) if parts else "none"

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

    def raw_encode(self, text: str) -> list[int]:
        """The encoding of ``text`` by the text copy of the tokenizer, with no law checked
        and no cache (for diagnostics)."""
        return list(self._text.encode(text, add_special_tokens=False).ids)

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
                self.check_decode_law(s, ids)
            fresh[s] = ids
        return fresh

    def check_decode_law(self, s: str, ids: Sequence[int]) -> None:
        """The decode law on one encoding: ``decode_bytes(ids)`` is the UTF-8 of ``s``.

        Raises:
            CodecLawError: it is not (``position``: the first differing byte; the reason
                names the tokenizer's normalisation and what the front end applies).
        """
        want = s.encode("utf-8")
        got = self._decode_valid(ids)
        if got == want:
            return
        pos = next((j for j, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                   min(len(got), len(want)))
        at = len(want[:pos].decode("utf-8", "ignore"))
        raise CodecLawError(
            s, -1, pos,
            f"decoding the encoding does not give the text back (first differing byte {pos}, "
            f"character {at}: {s[at:at + 8]!r} reads back as "
            f"{got[pos:pos + 8].decode('utf-8', 'replace')!r}); the tokenizer's normalizer is "
            f"{self.normalizer_text}, lvt's front end applies {self.normalization_text()} "
            "(text a tokenizer rewrites otherwise cannot be rendered faithfully)")

    def _decode_valid(self, ids: Sequence[int]) -> bytes:
        """:meth:`decode_bytes` of ids the tokenizer produced (no range check: one C-level
        gather through the byte table)."""
        table = self._table()
        if table is None or not ids:
            return self.decode_bytes(ids)
        if len(ids) == 1:
            b = table[ids[0]]
            return b if b is not None else self.decode_bytes(ids)
        try:
            return b"".join(itemgetter(*ids)(table))
        except (TypeError, IndexError):  # an id without bytes: the checked path says which
            return self.decode_bytes(ids)

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
