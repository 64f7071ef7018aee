"""The zoo entry ``"mistral-v3"``: Mistral 7B Instruct v0.3's SentencePiece tokenizer (the
instruct tokenizer v3) from the file that the PyPI package ``mistral-common`` ships,
``mistral_common/data/mistral_instruct_tokenizer_240323.model.v3`` (32768 ids), converted to a
``tokenizers.Tokenizer``.

The model is a SentencePiece BPE with byte fallback, identity normalisation, no removal of
extra whitespace and a dummy prefix. Ids 0-750 are ``<unk>`` and the control pieces (``<s>``,
``</s>``, ``[INST]``, ``[/INST]``, ``[TOOL_CALLS]``, ``[AVAILABLE_TOOLS]`` …, ``[control_N]``);
751-770 the user-defined pieces ``[REFERENCE_DOC_N]`` (matched whole in text); 771-1026 the
byte pieces ``<0x00>`` … ``<0xFF>``; the rest normal pieces with scores.

The conversion follows ``transformers``' ``SpmConverter`` for BPE models (reference only; it
is written out here so that building needs no ``transformers``): the vocabulary is the pieces
by id, the merges are every split of a normal piece into two normal pieces, ranked by the
merged piece's score (then id), BPE with ``byte_fallback`` and ``<unk>``; the control pieces
and ``<unk>`` are special added tokens at their ids, the user-defined pieces added tokens that
are not special; the decoder is ``Replace("▁", " ")``, ``ByteFallback``, ``Fuse``. One
deliberate difference: **no dummy prefix**. The normalizer is ``Replace(" ", "▁")`` alone
(SentencePiece escapes spaces so), without ``Prepend("▁")`` and without the decoder's
``Strip``. SentencePiece adds the dummy prefix once per ``encode`` call,
and mistral-common encodes every text piece between control tokens with its own call; lvt's
``mistral`` structure in version ``v3`` writes that prefix as a space in its layout (before
each non-empty text piece, ``Verified/Spec/MistralV3.lean``). So ``encode(" " + s)`` here is
SentencePiece's ``encode(s)`` for every non-empty ``s``, and decoding is a homomorphism (each
token on its own), which the decode law of :class:`lvt.runtime.codec.TokenizerCodec` needs.
The one rewrite decoding makes, ``"▁"`` to a space, is the front-end normalisation (SentencePiece
encodes ``"▁"`` in text as a space too, so the ids are unchanged).

``tests/test_zoo_spm.py`` checks the ids equal ``mistral-common``'s own SentencePiece tokenizer
on more than 2,000 strings.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tokenizers import Tokenizer

from lvt.errors import LvtError

__all__ = ["MISTRAL_V3_ADDED", "MISTRAL_V3_CONTROL", "MISTRAL_V3_FILE", "MISTRAL_V3_N_CONTROL",
           "MISTRAL_V3_SHA256", "MISTRAL_V3_SIZE", "build_mistral_v3"]

#: The file in ``mistral_common/data``.
MISTRAL_V3_FILE = "mistral_instruct_tokenizer_240323.model.v3"

#: SHA-256 of that file in ``mistral-common==1.13.1``.
MISTRAL_V3_SHA256 = "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"

#: Ids in the vocabulary; the added tokens are ids 0 to ``MISTRAL_V3_N_CONTROL - 1``.
MISTRAL_V3_SIZE = 32768
MISTRAL_V3_N_CONTROL = 771
_N_SPECIAL = 751

#: ``<unk>`` and the named control pieces of the v3 vocabulary (ids 0-13).
_NAMED = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
          "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[IMG]", "[PREFIX]",
          "[MIDDLE]", "[SUFFIX]")

#: The first 771 pieces by id: ``<unk>``, the named control pieces, ``[control_12]`` …
#: ``[control_748]`` (ids 14-750), then the user-defined pieces ``[REFERENCE_DOC_19]`` …
#: ``[REFERENCE_DOC_0]`` (751-770).
MISTRAL_V3_CONTROL: tuple[str, ...] = (
    *_NAMED, *(f"[control_{i - 2}]" for i in range(14, 751)),
    *(f"[REFERENCE_DOC_{770 - i}]" for i in range(751, 771)))

#: The added tokens of the entry: ``(id, content, special)``, ids 0-770: ``<unk>`` and the
#: control pieces special (never from text), the 20 user-defined ``[REFERENCE_DOC_N]`` pieces
#: not (SentencePiece matches a user-defined piece in text, so they are text here too).
MISTRAL_V3_ADDED: tuple[tuple[int, str, bool], ...] = tuple(
    (i, s, i < _N_SPECIAL) for i, s in enumerate(MISTRAL_V3_CONTROL))


def _processor(path: Path):  # type: ignore[no-untyped-def]
    try:
        import sentencepiece as spm
    except ImportError:
        from lvt.zoo import ZooUnavailable

        raise ZooUnavailable("zoo tokenizer 'mistral-v3' needs the package 'sentencepiece' "
                             "(pip install sentencepiece; scripts/bootstrap installs it)") from None
    return spm.SentencePieceProcessor(model_file=str(path))


def _pieces(path: Path) -> list[tuple[str, float, str]]:
    """``(piece, score, kind)`` by id; kind ``"unk"``, ``"control"``, ``"user"`` (user-defined:
    matched whole in text), ``"byte"`` or ``"normal"``."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise LvtError(f"cannot read the SentencePiece file {path} ({e})") from None
    got = hashlib.sha256(raw).hexdigest()
    if got != MISTRAL_V3_SHA256:
        raise LvtError(f"{path}: sha256 {got}, expected {MISTRAL_V3_SHA256} (another "
                       "SentencePiece model than Mistral's v3 instruct tokenizer)")
    sp = _processor(path)
    out = []
    for i in range(sp.get_piece_size()):
        kind = ("unk" if sp.is_unknown(i) else "control" if sp.is_control(i)
                else "byte" if sp.is_byte(i) else "normal")
        if kind == "normal" and i < MISTRAL_V3_N_CONTROL and sp.get_score(i) == 0.0:
            kind = "user"  # the API has no is_user_defined: the v3 layout puts them at 751-770
        out.append((sp.id_to_piece(i), float(sp.get_score(i)), kind))
    return out


def build_mistral_v3(path: Path) -> Tokenizer:
    """Build the zoo entry ``"mistral-v3"`` from ``mistral_instruct_tokenizer_240323.model.v3``
    (under a second; the zoo caches it).

    Raises:
        LvtError: the file is missing or not the pinned model.
        ZooUnavailable: ``sentencepiece`` is not installed.
    """
    from tokenizers import AddedToken, decoders, models, normalizers

    pieces = _pieces(path)
    kinds = ["unk", *["control"] * (_N_SPECIAL - 1),
             *["user"] * (MISTRAL_V3_N_CONTROL - _N_SPECIAL)]
    head = pieces[:MISTRAL_V3_N_CONTROL]
    if len(pieces) != MISTRAL_V3_SIZE or tuple(p for p, _, _ in head) != MISTRAL_V3_CONTROL or \
            [k for _, _, k in head] != kinds:
        raise LvtError(f"{path}: not the v3 vocabulary layout ({len(pieces)} pieces)")
    vocab = {p: i for i, (p, _, _) in enumerate(pieces)}
    normal = {p: (s, i) for i, (p, s, k) in enumerate(pieces) if k == "normal"}
    ranked = []
    for tok, (score, i) in normal.items():
        for k in range(1, len(tok)):
            left, right = tok[:k], tok[k:]
            if left in normal and right in normal:
                ranked.append((-score, i, left, right))
    merges = [(a, b) for _, _, a, b in sorted(ranked)]
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    # SentencePiece's whitespace escaping; the dummy prefix is the v3 layout's (module doc)
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    tok.add_special_tokens([AddedToken(p, special=True, normalized=False)
                            for _, p, sp in MISTRAL_V3_ADDED if sp])
    tok.add_tokens([AddedToken(p, special=False, normalized=False)
                    for _, p, sp in MISTRAL_V3_ADDED if not sp])
    for i, p, _ in MISTRAL_V3_ADDED:
        if tok.token_to_id(p) != i:
            raise LvtError(f"control piece {p!r} landed on {tok.token_to_id(p)}, not {i}")
    return tok
