"""The results of ``lvt check``: per-conversation records, the report with its counts and JSON
form (schema ``lvt.check/2``), and the terminal table.

Cause categories (:data:`CAUSES`); the first two are the differences FORMATS.md allows
(:data:`ALLOWED_CAUSES`), the others are not:

``control_token_text`` (allowed)
    text of the conversation spells a control token (``<|im_end|>`` in a question): the
    template's string-then-tokenize pipeline turns it into the control id, lvt keeps it as
    text. Detected by tokenizing lvt's own text spans the way the template's pipeline does;
    lvt's format control tokens (``<tool_call>`` in Qwen's tool preamble) are control tokens
    on both sides and are never counted.
``history_rewrite`` (allowed; a stable format against its template)
    the template writes an assistant turn differently depending on where it is in the
    conversation (Qwen3 drops think blocks before the last user query and after it unless
    the turn is last or has reasoning); the stable format keeps a think block in every
    assistant turn, and its exact sibling (which reproduces the template) differs from it
    only in those blocks.
``template_error``
    the template raised on a conversation lvt renders.
``double_bos``
    the template side starts with two BOS tokens.
``boundary_merge``
    same text, different tokens: lvt's encoding of a text span is not how the template's
    tokenizer splits that text.
``other``
    the texts differ (a default system prompt, whitespace, a different layout, …).

A conversation lvt cannot render (status ``lvt_error``) while the template can is a
difference outside the allowed categories too; one both refuse has status ``refused``. One
whose template render was stopped by a limit (``--template-timeout``,
``--template-max-output``; :mod:`lvt.compare.bounds`) has status ``template_limit``: it
could not be compared, which ``--strict`` counts as a failure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "ALLOWED_CAUSES",
    "CAUSES",
    "CheckReport",
    "ConversationResult",
    "Divergence",
    "PrefixBreak",
    "format_report",
]

#: Cause categories, allowed ones first.
CAUSES: tuple[str, ...] = (
    "control_token_text",
    "history_rewrite",
    "template_error",
    "double_bos",
    "boundary_merge",
    "other",
)
#: The differences FORMATS.md allows ("lvt may differ from the template only here").
ALLOWED_CAUSES: frozenset[str] = frozenset({"control_token_text", "history_rewrite"})
#: Statuses of a conversation.
STATUSES: tuple[str, ...] = ("identical", "differs", "lvt_error", "refused", "template_limit")


@dataclass
class Divergence:
    """One kind of difference in a conversation, at its first position.

    ``position`` indexes the token lists shown as ``lvt_*`` and ``template_*``: lvt's render
    and the template's (for ``history_rewrite`` the template side is the exact format's
    render, which reproduces the template; for ``control_token_text`` it is lvt's text
    tokenized by the template's pipeline).
    """

    position: int
    cause: str
    detail: str
    message_index: int | None
    lvt_token: int | None
    template_token: int | None
    lvt_before: str
    lvt_after: str
    template_before: str
    template_after: str

    @property
    def allowed(self) -> bool:
        """Whether FORMATS.md allows this difference."""
        return self.cause in ALLOWED_CAUSES


@dataclass
class PrefixBreak:
    """Where a renderer is not prefix-stable on one conversation.

    ``kind`` is ``turn`` (the render of ``messages[:turn]`` is not a prefix of the render of
    ``messages[:turn+1]``; ``turn == len(messages)`` means the probe user message) or
    ``prompt`` (the generation prompt after ``messages[:turn]`` is not a prefix of the render
    once message ``turn``, the assistant's, is added). ``expected``: for lvt, the break is
    outside what the format's extension property states (not a violation); for the
    template always ``True`` (templates state nothing).
    """

    renderer: str
    kind: str
    turn: int
    position: int
    before: str
    after: str
    detail: str = ""
    expected: bool = True


@dataclass
class ConversationResult:
    """The check of one conversation."""

    id: str
    status: str  # identical | differs | lvt_error | refused | template_limit
    messages: int
    lvt_tokens: int | None
    template_tokens: int | None
    divergences: list[Divergence] = field(default_factory=list)
    error: str | None = None
    prefix_breaks: list[PrefixBreak] = field(default_factory=list)
    lvt_prefix_checked: int = 0

    @property
    def causes(self) -> list[str]:
        """Every cause found, in :data:`CAUSES` order."""
        found = {d.cause for d in self.divergences}
        return [c for c in CAUSES if c in found]

    @property
    def divergence(self) -> Divergence | None:
        """The difference to look at first: the first not allowed one, else the first."""
        bad = [d for d in self.divergences if not d.allowed]
        return (bad or self.divergences or [None])[0]

    @property
    def cause(self) -> str | None:
        """The cause of :attr:`divergence`."""
        d = self.divergence
        return d.cause if d else None

    @property
    def allowed(self) -> bool:
        """No difference outside the allowed categories (what ``--strict`` checks)."""
        if self.status in ("lvt_error", "template_limit"):
            return False
        return all(d.allowed for d in self.divergences)

    @property
    def lvt_violations(self) -> list[PrefixBreak]:
        """lvt prefix breaks the format's extension property rules out."""
        return [b for b in self.prefix_breaks if b.renderer == "lvt" and not b.expected]


@dataclass
class CheckReport:
    """The check of a set of conversations against one template."""

    tokenizer: str
    format: str
    template: str
    fingerprint: str | None
    results: list[ConversationResult]
    prefix_audit: bool = False
    notes: list[str] = field(default_factory=list)
    extension: str = ""

    def summary(self) -> dict[str, Any]:
        """Counts by status and cause, allowed / not allowed, and the prefix audit."""
        st = Counter(r.status for r in self.results)
        causes = Counter(c for r in self.results for c in r.causes)
        tpl = [b for r in self.results for b in r.prefix_breaks if b.renderer == "template"]
        lvt = [b for r in self.results for b in r.prefix_breaks if b.renderer == "lvt"]
        return {
            "conversations": len(self.results),
            **{s: st[s] for s in STATUSES},
            "allowed_only": sum(r.status == "differs" and r.allowed for r in self.results),
            "not_allowed": sum(not r.allowed for r in self.results),
            "by_cause": {c: causes[c] for c in CAUSES if causes[c]},
            "prefix_audit": self.prefix_audit,
            "template_prefix_breaks": len(tpl),
            "template_prefix_unstable_conversations": len(
                {r.id for r in self.results if any(b.renderer == "template"
                                                   for b in r.prefix_breaks)}),
            "lvt_prefix_breaks": len(lvt),
            "lvt_prefix_violations": sum(not b.expected for b in lvt),
            "lvt_prefix_checks": sum(r.lvt_prefix_checked for r in self.results),
        }

    def failed(self, strict_all: bool = False) -> bool:
        """``--strict``: a difference outside the allowed categories, a conversation lvt
        cannot render or whose template render hit a limit, or an lvt prefix break its
        format's extension property rules out. ``--strict-all``: also any allowed
        difference."""
        if any(not r.allowed or r.lvt_violations for r in self.results):
            return True
        return strict_all and any(r.status == "differs" for r in self.results)

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (schema ``lvt.check/2``)."""
        return {
            "schema": "lvt.check/2",
            "tokenizer": self.tokenizer,
            "format": self.format,
            "template": self.template,
            "extension": self.extension,
            "fingerprint": self.fingerprint,
            "allowed_causes": sorted(ALLOWED_CAUSES),
            "notes": list(self.notes),
            "summary": self.summary(),
            "results": [
                {
                    "id": r.id,
                    "status": r.status,
                    "allowed": r.allowed,
                    "messages": r.messages,
                    "lvt_tokens": r.lvt_tokens,
                    "template_tokens": r.template_tokens,
                    "cause": r.cause,
                    "causes": r.causes,
                    "divergence": asdict(r.divergence) if r.divergence else None,
                    "divergences": [asdict(d) for d in r.divergences],
                    "error": r.error,
                    "prefix_breaks": [asdict(b) for b in r.prefix_breaks],
                    "lvt_prefix_checked": r.lvt_prefix_checked,
                }
                for r in self.results
            ],
        }


def _clip(s: str, n: int) -> str:
    r = repr(s)[1:-1]
    return r if len(r) <= n else r[: n - 1] + "…"


def _row_cause(r: ConversationResult) -> str:
    if r.status in ("lvt_error", "refused", "template_limit"):
        return r.status
    cs = r.causes
    if not cs:
        return ""
    head = r.cause or cs[0]
    rest = [c for c in cs if c != head]
    out = head + (f" (+{','.join(rest)})" if rest else "")
    return out + ("" if r.allowed else "  !")


def format_report(report: CheckReport, *, verbose: bool = True, width: int = 28) -> str:
    """A readable table (one row per conversation; ``!`` marks a difference outside the
    allowed categories), the divergences, the prefix audit and the counts per category."""
    lines = [
        f"lvt check  tokenizer={report.tokenizer}  format={report.format}",
        f"template   {report.template}",
    ]
    if report.fingerprint:
        lines.append(f"fingerprint {report.fingerprint[:16]}…")
    idw = max([4, *(len(r.id) for r in report.results)])
    hdr = f"{'id':<{idw}}  {'msgs':>4}  {'lvt':>5}  {'tmpl':>5}  {'status':<10}  {'pos':>5}  cause"
    lines += ["", hdr, "-" * len(hdr)]
    for r in report.results:
        d = r.divergence
        pos = "" if d is None else str(d.position)
        lt = "" if r.lvt_tokens is None else str(r.lvt_tokens)
        tt = "" if r.template_tokens is None else str(r.template_tokens)
        lines.append(f"{r.id:<{idw}}  {r.messages:>4}  {lt:>5}  {tt:>5}  {r.status:<10}  "
                     f"{pos:>5}  {_row_cause(r)}")
    if verbose:
        diffs = [r for r in report.results if r.divergences or r.error]
        if diffs:
            lines += ["", "differences per conversation (… before | after …):"]
        for r in diffs:
            if r.error:
                lines.append(f"* {r.id}: {r.status}: {r.error}")
            for d in r.divergences:
                tag = "allowed" if d.allowed else "NOT ALLOWED"
                lines.append(f"* {r.id} @ token {d.position} (message {d.message_index}): "
                             f"{d.cause} [{tag}]: {d.detail}")
                if d.cause != "template_error":
                    lines.append(f"    lvt      …{_clip(d.lvt_before, width):>{width}} | "
                                 f"{_clip(d.lvt_after, width)}")
                    lines.append(f"    template …{_clip(d.template_before, width):>{width}} | "
                                 f"{_clip(d.template_after, width)}")
    s = report.summary()
    if report.prefix_audit:
        lines += ["", "prefix audit (turn t must be a prefix of turn t+1):"]
        for r in report.results:
            for b in r.prefix_breaks if verbose else r.lvt_violations:
                note = "" if b.renderer == "template" else (
                    "  (outside the extension property)" if b.expected else "  VIOLATION")
                lines.append(f"* {b.renderer:<8} {r.id} {b.kind} {b.turn} @ token {b.position}: "
                             f"{_clip(b.before, width)} -> {_clip(b.after, width)}{note}")
        lines.append(
            f"  template: {s['template_prefix_breaks']} break(s) in "
            f"{s['template_prefix_unstable_conversations']} conversation(s); "
            f"lvt: {s['lvt_prefix_breaks']} break(s) in {s['lvt_prefix_checks']} checked prefix "
            f"relations, {s['lvt_prefix_violations']} violating the extension property "
            f"({report.extension or 'unknown'})"
        )
    for n in report.notes:
        lines.append(f"note: {n}")
    counts = "  ".join(f"{c}={s['by_cause'].get(c, 0)}" for c in CAUSES)
    lines += [
        "",
        f"summary: {s['conversations']} conversations: {s['identical']} identical, "
        f"{s['differs']} differ ({s['allowed_only']} only in allowed ways), "
        f"{s['lvt_error']} not renderable by lvt, {s['refused']} refused by both"
        + (f", {s['template_limit']} stopped by a template limit" if s["template_limit"] else ""),
        f"causes:  {counts}",
        f"allowed: {', '.join(c for c in CAUSES if c in ALLOWED_CAUSES)}; "
        f"{s['not_allowed']} conversation(s) with a difference outside them",
    ]
    return "\n".join(lines)
