"""The history rewrites ``lvt check`` accepts as ``history_rewrite`` (FORMATS.md, allowed
difference 2): where a stable format's lowering and its exact sibling's differ only in
history the template rewrites (reasoning dropped from earlier turns, Mistral's tool list
moved to the last user message). Used by :class:`lvt.compare.check.Checker`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["history_only", "history_rewrites", "rewrite_detail"]


def history_only(stable: Any, exact: Any) -> tuple[bool, list[int]]:
    """Whether two lowered conversations (a stable format's and its exact sibling's) differ
    only where the template rewrites history (FORMATS.md, allowed difference 2):

    * a think block the stable turn keeps and the exact turn drops (Qwen3, DeepSeek-R1), the
      content being the same up to the leading newlines the template strips after it;
    * an analysis message the stable render keeps and the exact one drops (gpt-oss);
    * the ``[AVAILABLE_TOOLS]`` block written before another user message (Mistral v7/v11).

    Everything else (the other turns, the conversation's other fields) must be equal.
    Returns ``(ok, owners of the rewritten turns)``."""
    found = history_rewrites(stable, exact)
    return found is not None, sorted({o for o, _ in found or ()})


def history_rewrites(stable: Any, exact: Any) -> list[tuple[int, str]] | None:
    """The rewrites :func:`history_only` accepts, as ``(owner, kind)`` with kind
    ``"reasoning"`` (a dropped think block or analysis message) or ``"tools"`` (a moved
    ``[AVAILABLE_TOOLS]`` block); ``None`` when the lowerings differ otherwise."""
    if type(stable) is not type(exact) or not dataclasses.is_dataclass(stable):
        return None
    for f in dataclasses.fields(stable):
        if f.name != "turns" and getattr(stable, f.name) != getattr(exact, f.name):
            return None
    b_turns = list(exact.turns)
    out: list[tuple[int, str]] = []
    j = 0
    for a in stable.turns:
        b = b_turns[j] if j < len(b_turns) else None
        if a == b:
            j += 1
            continue
        owner = int(getattr(a, "owner", -1))
        if type(a).__name__ == "AnalysisTurn" and type(b).__name__ != "AnalysisTurn":
            out.append((owner, "reasoning"))  # kept here, dropped by the template
            continue
        kind = None if b is None else _rewritten_turn(a, b)
        if kind is None:
            return None
        out.append((owner, kind))
        j += 1
    return out if j == len(b_turns) else None


def _rewritten_turn(a: Any, b: Any) -> str | None:
    """One turn of the stable lowering ``a`` against the exact one ``b``: ``"reasoning"``
    (a kept think block), ``"tools"`` (a moved ``[AVAILABLE_TOOLS]`` block), else ``None``."""
    if type(a) is not type(b) or not dataclasses.is_dataclass(a):
        return None
    fa = {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    fb = {f.name: getattr(b, f.name) for f in dataclasses.fields(b)}
    if "think" in fa and fa["think"] is not None and fb["think"] is None:
        if any(fa[k] != fb[k] for k in fa if k not in ("think", "content")):
            return None
        ca, cb = fa.get("content"), fb.get("content")
        ok = ca == cb or (isinstance(cb, str) and ca == cb.lstrip("\n"))
        return "reasoning" if ok else None
    if "tools" in fa and fa["tools"] != fb["tools"]:
        return "tools" if all(fa[k] == fb[k] for k in fa if k != "tools") else None
    return None


def rewrite_detail(found: list[tuple[int, str]], exact: str, stable: str) -> str:
    """The ``history_rewrite`` explanation for the rewrites :func:`history_rewrites` found."""
    parts = []
    for kind, what in (("reasoning", "writes no reasoning in assistant message(s) "),
                       ("tools", "writes [AVAILABLE_TOOLS] before another user message than "
                                 "message(s) ")):
        owners = sorted({o for o, k in found if k == kind})
        if owners:
            parts.append(what + ", ".join(map(str, owners)))
    return (f"the template {' and '.join(parts)} here ({exact} reproduces it); {stable} "
            "keeps history as it was, so it never rewrites an earlier turn")
