"""The zoo entries ``"mistral"`` and ``"mistral-nemo"``: Mistral's tekken tokenizers from the
vocabularies that the PyPI package ``mistral-common`` ships (``mistral_common/data``).

Both files, ``tekken_240718.json`` (Mistral Nemo) and ``tekken_240911.json``, hold the same
130072 byte-level BPE ranks (tiktoken style, ids = rank + 1000) behind 1000 control slots, but
name only the first 20 of those slots (``mistral-common``'s ``DEPRECATED_SPECIAL_TOKENS``:
``<unk>``, ``<s>``, ``</s>``, ``[INST]`` … ``[TOOL_CONTENT]``; the rest are ``<SPECIAL_i>``).

* ``"mistral-nemo"``: ``tekken_240718.json`` as shipped (the Nemo v3 vocabulary: the
  ``mistral`` format builds from it in version ``v7`` only, it has no ``[ARGS]``).
* ``"mistral"``: ``tekken_240911.json`` with the control slots named as the Tekken v7+
  releases name them (Mistral Small 3.x, Devstral, Magistral): slot 32 ``[ARGS]``, 33
  ``[CALL_ID]``, 34 ``[THINK]``, 35 ``[/THINK]`` (:data:`TEKKEN_V7_SPECIALS`). The BPE ranks
  are those releases' ranks, so this is the tokenizer the ``mistral`` format renders with in
  every version (``v7``, ``v11``, ``v13``).

The conversion is ``transformers``' ``MistralConverter`` (``convert_tekken_tokenizer``),
written out here so that building needs no ``transformers``: merges derived from the ranks
(:func:`lvt.zoo.build.vocab_merges`), ``ignore_merges`` (tiktoken's rule: a token in the
vocabulary is one id), the file's pre-tokenizer pattern, ByteLevel pre-tokenizer, decoder and
post-processor (no BOS added), and the 1000 control tokens as special added tokens at ids
0-999. ``tests/test_zoo.py`` checks the result equal to ``convert_tekken_tokenizer``'s and its
ids equal to ``mistral-common``'s own tekkenizer.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from lvt.errors import LvtError
from lvt.zoo.build import vocab_merges

__all__ = [
    "TEKKEN_DEPRECATED_SPECIALS",
    "TEKKEN_FILES",
    "TEKKEN_N_RANKS",
    "TEKKEN_N_SPECIAL",
    "TEKKEN_RANKS_SHA256",
    "TEKKEN_V7_SPECIALS",
    "build_tekken",
    "tekken_added_tokens",
]

#: Control slots of every tekken file, and the BPE ranks used (``default_vocab_size`` 131072).
TEKKEN_N_SPECIAL = 1000
TEKKEN_N_RANKS = 131072 - TEKKEN_N_SPECIAL

#: SHA-256 of the first :data:`TEKKEN_N_RANKS` ranks' ``token_bytes`` (base64, one a line) of
#: both ``mistral-common==1.13.1`` files (they hold the same ranks).
TEKKEN_RANKS_SHA256 = "6e8394d108f7035db0317efdb7d8c57e2d44290b9b8bde909249d3ff0ab8269d"

#: The 20 control names ``mistral-common`` gives files that name none (``tekken_240718.json``,
#: ``tekken_240911.json``): ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``.
TEKKEN_DEPRECATED_SPECIALS: tuple[str, ...] = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip

#: The named control slots of the Tekken v7+ releases: the 20 above, ``<SPECIAL_20>`` …
#: ``<SPECIAL_31>``, then the tool-call and reasoning tokens at 32-35.
TEKKEN_V7_SPECIALS: tuple[str, ...] = (
    *TEKKEN_DEPRECATED_SPECIALS, *(f"<SPECIAL_{i}>" for i in range(20, 32)),
    "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]",
)

#: zoo name -> (the ``mistral-common`` data file, the named control slots).
TEKKEN_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "mistral": ("tekken_240911.json", TEKKEN_V7_SPECIALS),
    "mistral-nemo": ("tekken_240718.json", TEKKEN_DEPRECATED_SPECIALS),
}


def _all_specials(named: tuple[str, ...]) -> list[str]:
    """The 1000 control-token strings: the named ones, then ``<SPECIAL_i>`` fillers."""
    return [*named, *(f"<SPECIAL_{i}>" for i in range(len(named), TEKKEN_N_SPECIAL))]


def tekken_added_tokens(name: str) -> tuple[tuple[int, str, bool], ...]:
    """The added tokens of the zoo entry ``name``: ``(id, content, special)``, ids 0-999."""
    return tuple((i, s, True) for i, s in enumerate(_all_specials(TEKKEN_FILES[name][1])))


def _read(path: Path) -> dict[str, Any]:
    try:
        j = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LvtError(f"cannot read the tekken file {path} ({e})") from None
    cfg = j.get("config") if isinstance(j, dict) else None
    if not isinstance(cfg, dict) or not isinstance(j.get("vocab"), list):
        raise LvtError(f"{path}: not a tekken file (no 'config' and 'vocab')")
    want = {"default_vocab_size": TEKKEN_N_RANKS + TEKKEN_N_SPECIAL,
            "default_num_special_tokens": TEKKEN_N_SPECIAL}
    got = {k: cfg.get(k) for k in want}
    if got != want or len(j["vocab"]) < TEKKEN_N_RANKS or j.get("special_tokens"):
        raise LvtError(f"{path}: not the tekken layout this entry expects ({got}, "
                       f"{len(j['vocab'])} ranks, special_tokens {bool(j.get('special_tokens'))})")
    return j


def build_tekken(data_dir: Path, name: str) -> Tokenizer:
    """Build the zoo entry ``name`` (``"mistral"`` or ``"mistral-nemo"``) from the tekken
    file in ``data_dir`` (seconds; the zoo caches it).

    Raises:
        LvtError: the file is missing or not the expected tekken layout.
    """
    from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
    from tokenizers import processors as procs

    fname, named = TEKKEN_FILES[name]
    path = data_dir / fname
    j = _read(path)
    entries = j["vocab"][:TEKKEN_N_RANKS]
    try:
        b64 = [e["token_bytes"] for e in entries]
        raw = [base64.b64decode(b) for b in b64]
        got = hashlib.sha256("\n".join(b64).encode()).hexdigest()
    except (KeyError, TypeError, ValueError, AttributeError):
        raise LvtError(f"{path}: a vocabulary entry has no valid token_bytes") from None
    if got != TEKKEN_RANKS_SHA256:
        raise LvtError(f"{path}: the BPE ranks have sha256 {got}, expected "
                       f"{TEKKEN_RANKS_SHA256} (another tekken vocabulary)")
    if [e.get("rank") for e in entries] != list(range(TEKKEN_N_RANKS)):
        raise LvtError(f"{path}: ranks are not 0..{TEKKEN_N_RANKS - 1} in order")
    ranks = {b: r for r, b in enumerate(raw)}
    if len(ranks) != TEKKEN_N_RANKS:
        raise LvtError(f"{path}: duplicate tokens among the first {TEKKEN_N_RANKS} ranks")
    vocab, merges = vocab_merges(ranks)
    vocab = {k: v + TEKKEN_N_SPECIAL for k, v in vocab.items()}
    specials = _all_specials(named)
    for i, s in enumerate(specials):
        if s in vocab:
            raise LvtError(f"{path}: control token {s!r} is also a BPE token")
        vocab[s] = i
    tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(j["config"]["pattern"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True) for s in specials])
    tok.post_processor = procs.ByteLevel(trim_offsets=False)
    for i, s in enumerate(specials):
        if tok.token_to_id(s) != i:
            raise LvtError(f"control token {s!r} landed on {tok.token_to_id(s)}, not {i}")
    return tok
