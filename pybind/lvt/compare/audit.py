"""The prefix audit of ``lvt check --prefix-audit``: where a render changes as the
conversation grows.

Each conversation is rendered turn by turn (with a probe user message after a final
assistant answer, so the audit also sees how that answer is written once the conversation
goes on). Two relations are audited:

``turn``
    the render of ``messages[:t]`` is a prefix of the render of ``messages[:t+1]``.
``prompt``
    the generation prompt after ``messages[:t]`` (message ``t`` being an assistant answer) is
    a prefix of what follows. For the template: of its render of ``messages[:t+1]``. For lvt
    this is the ``prompt_prefix`` theorem: the render of ``messages[:t]`` plus a sampled
    assistant turn (the answer's text, as the tokens a policy would sample) starts with the
    generation-prompt render followed by exactly those tokens, learned and owned by
    message ``t``.

lvt breaks are judged against the format's stated extension property
(:attr:`lvt.formats.FormatSpec.extension`): a break the property rules out is a violation
(``expected=False``; ``--strict`` fails); one outside it (Qwen2.5 and Qwen3-stable merging a
tool result appended after a tool result into one turn; Qwen3 exact dropping think blocks,
which is why its property holds only at generation prompts) is reported as expected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lvt.compare.report import PrefixBreak
from lvt.errors import LvtError
from lvt.inputs import ConversationInput

__all__ = [
    "CONTEXT_TOKENS",
    "PROBE_MESSAGE",
    "audit_messages",
    "first_difference",
    "is_prefix",
    "prefix_audit_ids",
    "prefix_audit_lvt",
    "prefix_audit_template",
    "prompt_break_expected",
    "turn_break_expected",
]

#: The user message appended after a conversation that ends with the assistant.
PROBE_MESSAGE: dict[str, Any] = {"role": "user", "content": "Thanks. One more question."}

#: Tokens of context shown on each side of a difference.
CONTEXT_TOKENS = 6


def first_difference(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    """Index of the first position where ``a`` and ``b`` differ (``None`` if equal)."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def is_prefix(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """``a`` is a prefix of ``b``."""
    return len(a) <= len(b) and list(b[: len(a)]) == list(a)


def audit_messages(conv: ConversationInput) -> list[dict[str, Any]]:
    """The messages audited: the conversation, plus :data:`PROBE_MESSAGE` after a final
    assistant answer."""
    msgs = list(conv.messages)
    if msgs and msgs[-1].get("role") == "assistant":
        msgs.append(dict(PROBE_MESSAGE))
    return msgs


def _role(m: Mapping[str, Any]) -> Any:
    return m.get("role")


def turn_break_expected(extension: str, msgs: Sequence[Mapping[str, Any]], t: int,
                        options: Mapping[str, Any] | None = None) -> bool:
    """Whether a ``turn`` break when message ``t`` is appended is outside the extension
    property ``extension`` (so not a violation); ``options`` are the format's (Mistral's
    ``version`` decides which property applies)."""
    ext = extension.lower()
    prev = _role(msgs[t - 1]) if t > 0 else None
    if ext.startswith("v13: prefix; v7/v11: prefix for appends with no user message"):
        return (options or {}).get("version", "v7") != "v13" and _role(msgs[t]) == "user"
    if ext.startswith("prefix"):
        if "tool result appended after a tool result" in ext:
            return _role(msgs[t]) == "tool" and prev == "tool"
        if "turns the last answer's <|return|> into <|end|>" in ext:  # gpt-oss
            # the exact format also drops the analysis of the calls since the last answer when
            # a final answer follows them (the last assistant message before it is a call)
            m = msgs[t]
            final = _role(m) == "assistant" and not m.get("tool_calls")
            last = next((n for n in reversed(msgs[:t]) if _role(n) == "assistant"), None)
            after_call = last is not None and bool(last.get("tool_calls"))
            return prev == "assistant" or (
                "final answer drops the analysis" in ext and final and after_call)
        if "across an appended system message" in ext:  # DeepSeek-R1
            m = msgs[t]
            answer = _role(m) == "assistant" and not m.get("tool_calls")
            later_call = (_role(m) == "assistant" and bool(m.get("tool_calls"))
                          and prev == "user" and any(n.get("tool_calls") for n in msgs[:t]))
            return _role(m) == "system" or (prev == "tool" and not answer) or later_call
        return False
    # "at generation prompts, ...": renders without a prompt are not covered
    return ext.startswith("at generation prompts")


def prompt_break_expected(extension: str, msgs: Sequence[Mapping[str, Any]], t: int) -> bool:
    """Whether a ``prompt`` break before the assistant message ``t`` is outside the property
    (``prompt_prefix`` holds for every format, in the exact Qwen3 mode only after a message
    that is not the assistant's)."""
    ext = extension.lower()
    return ext.startswith("at generation prompts") and t > 0 and _role(msgs[t - 1]) == "assistant"


def prefix_audit_ids(
    renders: Sequence[Sequence[Any] | None],
    decode: Callable[[Sequence[Any]], str],
    renderer: str,
    prompts: Mapping[int, Sequence[Any] | None] | None = None,
) -> list[PrefixBreak]:
    """Turn-by-turn prefix audit over precomputed renders (token lists, or strings).

    ``renders[t]`` is the render of ``messages[:t+1]`` (``None`` when it could not be
    rendered); ``prompts[t]`` is the generation-prompt render of ``messages[:t]`` where
    message ``t`` is an assistant answer.
    """
    out: list[PrefixBreak] = []
    for t in range(len(renders) - 1):
        a, b = renders[t], renders[t + 1]
        if a is None or b is None or is_prefix(a, b):
            continue
        pos = first_difference(a, b)
        assert pos is not None
        out.append(PrefixBreak(
            renderer, "turn", t + 1, pos, decode(a[pos: pos + CONTEXT_TOKENS]),
            decode(b[pos: pos + CONTEXT_TOKENS]),
            f"render of messages[:{t + 1}] is not a prefix of render of messages[:{t + 2}]"))
    for t, p in sorted((prompts or {}).items()):
        full = renders[t] if t < len(renders) else None
        if p is None or full is None or is_prefix(p, full):
            continue
        pos = first_difference(p, full)
        assert pos is not None
        out.append(PrefixBreak(
            renderer, "prompt", t, pos, decode(p[pos: pos + CONTEXT_TOKENS]),
            decode(full[pos: pos + CONTEXT_TOKENS]),
            f"generation prompt for messages[:{t}] is not a prefix of render of "
            f"messages[:{t + 1}]"))
    return out


def prefix_audit_template(
    jinja: Any, conv: ConversationInput, options: Mapping[str, Any] | None = None
) -> list[PrefixBreak]:
    """Audit the template's renders (a prefix it cannot render is skipped)."""
    msgs = audit_messages(conv)

    def render(k: int, prompt: bool) -> list[int] | None:
        try:
            return list(jinja.render_ids(msgs[:k], conv.tools, prompt, options))
        except Exception:
            return None

    renders = [render(k, False) for k in range(1, len(msgs) + 1)]
    prompts = {k: render(k, True) for k in range(1, len(msgs))
               if _role(msgs[k]) == "assistant"}
    return prefix_audit_ids(renders, jinja.decode, "template", prompts)


def _sample_text(m: Mapping[str, Any]) -> str:
    c = m.get("content")
    return c if isinstance(c, str) and c else "OK."


def prefix_audit_lvt(encoder: Any, conv: ConversationInput) -> tuple[list[PrefixBreak], int]:
    """Audit lvt's renders (ids, loss mask and owners) and ``prompt_prefix``; returns
    ``(breaks, number of relations checked)``. Each break says whether the format's extension
    property (:attr:`~lvt.formats.FormatSpec.extension`) rules it out."""
    from lvt.model import Conversation, Message, Role, Sampled

    spec = encoder.format_spec
    ext = spec.extension if spec is not None else ""
    options = {**(spec.options if spec is not None else {}),
               **(getattr(encoder, "_options", None) or {})}
    msgs = audit_messages(conv)

    def dec(ids: Sequence[int]) -> str:
        return str(encoder.tokenizer.decode([int(t) for t in ids], skip_special_tokens=False))

    def render(k: int, prompt: bool) -> tuple[Any, Any] | None:
        try:
            c = encoder.from_openai(msgs[:k], conv.tools, prompt)
            return c, encoder.encode(c)
        except LvtError:
            return None

    renders = [render(k, False) for k in range(1, len(msgs) + 1)]
    breaks: list[PrefixBreak] = []
    checked = 0
    for t in range(len(renders) - 1):
        ra, rb = renders[t], renders[t + 1]
        if ra is None or rb is None:
            continue
        checked += 1
        a, b = ra[1], rb[1]
        n = len(a.ids)
        if (len(b.ids) >= n and b.ids[:n].tolist() == a.ids.tolist()
                and b.mask[:n].tolist() == a.mask.tolist()
                and b.owner[:n].tolist() == a.owner.tolist()):
            continue
        pos = first_difference(a.ids.tolist(), b.ids.tolist())
        pos = n if pos is None else pos  # same ids, different mask or owners
        breaks.append(PrefixBreak(
            "lvt", "turn", t + 1, pos, dec(a.ids[pos: pos + CONTEXT_TOKENS]),
            dec(b.ids[pos: pos + CONTEXT_TOKENS]),
            "lvt render (ids/mask/owner) of messages[:t] is not a prefix of messages[:t+1]",
            turn_break_expected(ext, msgs, t + 1, options)))
    for k in range(1, len(msgs)):
        if _role(msgs[k]) != "assistant":
            continue
        rp = render(k, True)
        if rp is None:
            continue
        conv_k, p = rp
        ts = encoder.codec.encode(_sample_text(msgs[k]))
        try:
            s = encoder.encode(Conversation(
                (*conv_k.messages, Message(Role.ASSISTANT, (Sampled(ts),))), False, conv_k.tools))
        except LvtError:
            continue
        checked += 1
        n, m = len(p.ids), len(ts)
        ok = (s.ids[:n].tolist() == p.ids.tolist() and s.mask[:n].tolist() == p.mask.tolist()
              and s.owner[:n].tolist() == p.owner.tolist()
              and s.ids[n: n + m].tolist() == list(ts)
              and all(int(x) == 1 for x in s.mask[n: n + m])
              and all(int(x) == k for x in s.owner[n: n + m]))
        if not ok:
            pos = first_difference(p.ids.tolist(), s.ids[:n].tolist())
            pos = n if pos is None else pos
            breaks.append(PrefixBreak(
                "lvt", "prompt", k, pos, dec(p.ids[pos: pos + CONTEXT_TOKENS]),
                dec(s.ids[pos: pos + CONTEXT_TOKENS]),
                "prompt_prefix: the generation prompt plus the sampled answer is not the "
                "render with that answer", prompt_break_expected(ext, msgs, k)))
    return breaks, checked
