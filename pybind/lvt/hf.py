"""``lvt.hf.wrap``: a Hugging Face tokenizer whose ``apply_chat_template`` is lvt.

::

    from transformers import AutoTokenizer
    import lvt.hf

    tok = lvt.hf.wrap(AutoTokenizer.from_pretrained(path), format="qwen3")
    ids = tok.apply_chat_template(messages, add_generation_prompt=True)   # lvt's render
    tok.decode(ids)                                                         # the HF tokenizer

The wrapper is an instance of the wrapped tokenizer's own class (``isinstance`` checks such
as TRL's ``PreTrainedTokenizerBase`` hold); every attribute other than ``apply_chat_template``
and the ``lvt_*`` helpers is read from, and written to, the wrapped tokenizer
(``__getattribute__`` / ``__setattr__``: class-level defaults of the tokenizer class never
shadow the wrapped instance's state), so there is one tokenizer state, not two. Methods read
through the wrapper are the wrapped tokenizer's bound methods: one that calls
``self.apply_chat_template`` internally reaches the original template, not lvt.

``apply_chat_template`` takes the arguments of the installed ``transformers`` (5.x:
``return_dict`` defaults to ``True``; the default is read from the wrapped class's own
signature, so a 4.x tokenizer keeps its ``False``) and returns what it returns:

* ``tokenize=True, return_dict=False``: ``list[int]`` (``list[list[int]]`` for a batch of
  conversations; a ``(1, T)`` / ``(B, T)`` tensor or array with ``return_tensors``);
* ``return_dict=True``: a ``BatchEncoding`` with ``input_ids`` and ``attention_mask`` (and
  ``assistant_masks``, lvt's loss mask, with ``return_assistant_tokens_mask``), padded and
  truncated as ``padding`` / ``truncation`` / ``max_length`` say;
* ``tokenize=False``: the rendered text (a list for a batch). Encoding it with the *original*
  tokenizer (``tok(text, add_special_tokens=False)``, what TRL and ``transformers`` do) gives
  lvt's ids; this is checked on every call, and where it fails — text that spells a control
  token, which the re-encoding would turn into the control id — a
  :class:`TextRoundTripError` is raised (or a :class:`TextRoundTripWarning` issued, with
  ``wrap(..., text_mismatch="warn")``). Ids never have that problem: prefer ``tokenize=True``.

Template keyword arguments are the format's options (``enable_thinking`` for ``qwen3`` and
``qwen3-stable``; ``date_string`` and ``tools_in_user_message`` for ``llama3.1``), given per
call or as defaults to :func:`wrap`. Anything lvt cannot honour is refused with a
:class:`ChatTemplateError` rather than silently ignored: another keyword argument, a
``chat_template`` other than the tokenizer's own, ``documents``.

``continue_final_message`` (``True`` for ``"content"``, or the name of the field, e.g.
``"reasoning_content"``) has the ``transformers`` semantics: the conversation is rendered with
its final message, and everything after that message's field is cut (trailing whitespace
too when the format trims it), so the model continues the message. The cut span is encoded as
one string, as the template's tokenizer encodes the cut text. When the format does not write
the field at the end of the render (a reasoning field the format drops, say) a
:class:`ChatTemplateError` is raised, as ``transformers`` raises a ``ValueError``. It cannot be
combined with ``add_generation_prompt`` or ``return_assistant_tokens_mask`` (as in
``transformers``).

Control-token text always stays text (lvt's no-forgery theorem), so ``sanitize_control_tokens``
is accepted and has nothing left to do.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from lvt.compare.renderers import EncoderPool
from lvt.encoder import ChatEncoder
from lvt.errors import ConversationError, LvtError
from lvt.formats import get_spec
from lvt.model import Conversation
from lvt.runtime import core

__all__ = [
    "CONTINUE_TAG",
    "ChatTemplateError",
    "LvtTokenizerMixin",
    "TextRoundTripError",
    "TextRoundTripWarning",
    "wrap",
]

#: What ``transformers`` appends to the continued field to find its end in the render.
CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "

_STATE = "_lvt_state"
#: Attributes a wrapper answers itself; every other one is the wrapped tokenizer's.
_OWN = frozenset({_STATE, "__class__", "__reduce__", "__reduce_ex__", "__repr__",
                  "apply_chat_template", "parse_response", "response_template"})
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class ChatTemplateError(LvtError, ValueError):
    """An ``apply_chat_template`` argument lvt cannot honour (named in the message)."""


class TextRoundTripError(LvtError, ValueError):
    """The rendered text does not re-encode to lvt's ids with the original tokenizer.

    Attributes:
        conversation_index: which conversation of the call (0 when not batched).
        position: the first differing token position.
        spelled: control tokens the text spells (the usual cause).
    """

    def __init__(self, conversation_index: int, position: int, spelled: Sequence[str]) -> None:
        self.conversation_index = conversation_index
        self.position = position
        self.spelled = tuple(spelled)
        why = (f"the text spells the control token(s) {', '.join(map(repr, self.spelled))}, "
               "which re-encoding turns into control ids" if self.spelled else
               "the re-encoding segments the text differently")
        super().__init__(
            f"conversation {conversation_index}: the rendered text re-encodes to different ids "
            f"from token {position} on: {why}; use tokenize=True for lvt's ids")


class TextRoundTripWarning(UserWarning):
    """Issued instead of :class:`TextRoundTripError` with ``text_mismatch="warn"``."""


class _State:
    """What a wrapper holds besides the wrapped tokenizer."""

    def __init__(self, inner: Any, fmt: str, options: dict[str, Any],
                 text_mismatch: str) -> None:
        self.inner = inner
        self.spec = get_spec(fmt)
        self.format = fmt
        self.options = options
        self.text_mismatch = text_mismatch
        # encoders per template options share one codec (vocabulary tables and span cache)
        self.pool = EncoderPool(inner)
        self.encoders: dict[tuple[tuple[str, Any], ...], ChatEncoder] = {}
        self.lock = threading.Lock()
        sig = inspect.signature(type(inner).apply_chat_template).parameters
        rd = sig.get("return_dict")
        self.return_dict_default = bool(rd.default) if rd is not None else False

    def encoder(self, kwargs: Mapping[str, Any]) -> ChatEncoder:
        opts = dict(self.options)
        for k, v in kwargs.items():
            if k not in self.spec.options:
                raise ChatTemplateError(
                    f"template keyword {k!r} is not an option of format {self.spec.name!r} "
                    f"(options: {sorted(self.spec.options) or 'none'}); lvt does not ignore "
                    "template variables it cannot render")
            opts[k] = v
        key = tuple(sorted({**self.spec.options, **opts}.items()))
        with self.lock:
            enc = self.encoders.get(key)
            if enc is None:
                enc = self.encoders[key] = self.pool.get(self.format, opts)
        return enc


class LvtTokenizerMixin:
    """The methods a wrapped tokenizer gets from lvt (see the module docstring)."""

    # -- delegation ----------------------------------------------------------------------------

    def __getattribute__(self, name: str) -> Any:
        if name in _OWN or name.startswith("lvt_"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, _STATE).inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == _STATE:
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, _STATE).inner, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, _STATE).inner, name)

    def __reduce__(self) -> Any:
        st: _State = object.__getattribute__(self, _STATE)
        return (_rewrap, (st.inner, st.format, st.options, st.text_mismatch))

    def __reduce_ex__(self, protocol: Any) -> Any:
        return LvtTokenizerMixin.__reduce__(self)

    def __repr__(self) -> str:
        st: _State = object.__getattribute__(self, _STATE)
        return f"lvt.hf.wrap({st.inner!r}, format={st.format!r})"

    # -- lvt ---------------------------------------------------------------------------------

    @property
    def lvt_wrapped(self) -> Any:
        """The wrapped Hugging Face tokenizer."""
        return object.__getattribute__(self, _STATE).inner

    @property
    def lvt_format(self) -> str:
        """The lvt format name."""
        return object.__getattribute__(self, _STATE).format

    @property
    def lvt_options(self) -> dict[str, Any]:
        """The default template options given to :func:`wrap`."""
        return dict(object.__getattribute__(self, _STATE).options)

    def lvt_encoder(self, **template_kwargs: Any) -> ChatEncoder:
        """The :class:`~lvt.ChatEncoder` that renders with these template options (one per
        distinct set of options, built on first use).

        Raises:
            ChatTemplateError: a keyword that is not an option of the format.
        """
        return object.__getattribute__(self, _STATE).encoder(template_kwargs)

    @property
    def response_template(self) -> str:
        """Not ``None``: :meth:`parse_response` reads completions (TRL and ``transformers``
        then call it instead of adding a response schema of their own)."""
        return f"lvt:{object.__getattribute__(self, _STATE).format}"

    def parse_response(self, ids: Any, prefix: Any = None, tools: Any = None,
                       **template_kwargs: Any) -> dict[str, Any]:
        """A sampled completion read by lvt (:meth:`lvt.ChatEncoder.read_completion`), as the
        message ``transformers``' ``parse_response`` returns: ``content``,
        ``reasoning_content`` when the turn has reasoning, and the calls whose arguments are a
        JSON object in ``tool_calls`` (arguments as objects). A call whose arguments do not
        parse is not run: it stays out of ``tool_calls`` and is listed, raw, under
        ``lvt_unparsed_tool_calls``. ``prefix`` (the prompt) is not needed: lvt's reader
        knows what the generation prompt opened. Never raises on what a model sampled.
        """
        del prefix
        st: _State = object.__getattribute__(self, _STATE)
        c = st.encoder(template_kwargs).read_completion(list(ids), _tool_schemas(tools))
        msg: dict[str, Any] = {"role": "assistant", "content": c.content}
        if c.reasoning is not None:
            msg["reasoning_content"] = c.reasoning
        calls = [k for k in c.tool_calls if k.valid]
        if calls:
            msg["tool_calls"] = [{"type": "function", "id": k.id,
                                  "function": {"name": k.name, "arguments": k.arguments}}
                                 for k in calls]
        if len(calls) < len(c.tool_calls):
            msg["lvt_unparsed_tool_calls"] = [{"name": k.name, "arguments": k.raw}
                                              for k in c.tool_calls if not k.valid]
        return msg

    def apply_chat_template(
        self,
        conversation: Any,
        tools: list[dict[str, Any] | Callable[..., Any]] | None = None,
        documents: list[dict[str, str]] | None = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tokenize: bool = True,
        sanitize_control_tokens: bool = False,
        padding: bool | str = False,
        truncation: bool = False,
        max_length: int | None = None,
        return_tensors: str | None = None,
        return_dict: bool | None = None,
        return_assistant_tokens_mask: bool = False,
        tokenizer_kwargs: dict[str, Any] | None = None,
        **template_kwargs: Any,
    ) -> Any:
        """Render ``conversation`` (a list of message dicts, or a list of such lists) with lvt,
        returning what ``transformers``' ``apply_chat_template`` returns (module docstring).

        Raises:
            ChatTemplateError: an argument lvt cannot honour, or an invalid combination.
            TextRoundTripError: ``tokenize=False`` and the text would not re-encode to lvt's ids.
            ConversationError: the format cannot express a conversation (message index).
        """
        st: _State = object.__getattribute__(self, _STATE)
        del sanitize_control_tokens  # lvt never makes control tokens of text
        if return_dict is None:
            return_dict = st.return_dict_default
        if not tokenize:
            return_dict = False
        if return_assistant_tokens_mask and not (return_dict and tokenize):
            raise ChatTemplateError(
                "return_assistant_tokens_mask=True requires return_dict=True and tokenize=True")
        if continue_final_message and add_generation_prompt:
            raise ChatTemplateError(
                "continue_final_message and add_generation_prompt are not compatible")
        if continue_final_message and return_assistant_tokens_mask:
            raise ChatTemplateError(
                "continue_final_message is not compatible with return_assistant_tokens_mask")
        if documents is not None:
            raise ChatTemplateError(f"format {st.format!r} renders no documents (RAG)")
        own = getattr(st.inner, "chat_template", None)
        if chat_template is not None and chat_template != own:
            raise ChatTemplateError(
                f"a chat_template other than the tokenizer's own was given; lvt renders format "
                f"{st.format!r} (wrap another format instead)")
        extra = dict(tokenizer_kwargs or {})
        pad_side = extra.pop("padding_side", None)
        multiple = extra.pop("pad_to_multiple_of", None)
        if extra:
            raise ChatTemplateError(f"tokenizer_kwargs {sorted(extra)} are not supported")
        if isinstance(conversation, list | tuple) and not conversation:
            raise ChatTemplateError("cannot apply a chat template to an empty conversation")
        batched = isinstance(conversation, list | tuple) and (
            isinstance(conversation[0], list | tuple) or hasattr(conversation[0], "messages"))
        convs = list(conversation) if batched else [conversation]
        convs = [getattr(c, "messages", c) for c in convs]
        enc = st.encoder(template_kwargs)
        schemas = _tool_schemas(tools)
        rendered = []
        for n, c in enumerate(convs):
            try:
                rendered.append(_render(enc, c, schemas, add_generation_prompt,
                                        continue_final_message))
            except (ConversationError, ChatTemplateError) as e:
                if not batched:
                    raise
                raise type(e)(*_batch_args(e, n)) from None
        if not tokenize:
            texts = [_text(enc, items) for items, _ in rendered]
            _check_texts(st, texts, rendered)
            return texts if batched else texts[0]
        ids = [r[1][0] for r in rendered]
        masks = [r[1][1] for r in rendered]
        if truncation:
            limit = max_length if max_length is not None else _model_max(st.inner)
            if limit is not None:
                side = getattr(st.inner, "truncation_side", "right")
                ids = [_cut(x, limit, side) for x in ids]
                masks = [_cut(x, limit, side) for x in masks]
        attn = [[1] * len(x) for x in ids]
        if padding not in (False, None, "do_not_pad"):
            ids, attn, masks = _pad(st.inner, ids, attn, masks, padding, max_length, multiple,
                                    pad_side or getattr(st.inner, "padding_side", "right"))
        from transformers import BatchEncoding

        one = not batched and not return_tensors
        if not return_dict:
            data = ids[0] if one else ids
            if return_tensors:
                return _tensor(BatchEncoding, {"input_ids": ids}, return_tensors)["input_ids"]
            return data
        out: dict[str, Any] = {"input_ids": ids, "attention_mask": attn}
        names = getattr(st.inner, "model_input_names", ())
        if "token_type_ids" in names:
            out["token_type_ids"] = [[0] * len(x) for x in ids]
        if return_assistant_tokens_mask:
            out["assistant_masks"] = masks
        if one:
            out = {k: v[0] for k, v in out.items()}
            return BatchEncoding(out)
        return _tensor(BatchEncoding, out, return_tensors)


# ---------------------------------------------------------------------------------------------


@functools.cache
def _wrapper_class(base: type) -> type:
    return type(f"Lvt{base.__name__}", (LvtTokenizerMixin, base),
                {"__module__": __name__, "__doc__": f"{base.__name__} rendering with lvt."})


def wrap(
    tokenizer: Any,
    format: str,
    *,
    text_mismatch: Literal["raise", "warn"] = "raise",
    **options: Any,
) -> Any:
    """``tokenizer`` (a ``transformers`` fast tokenizer) with lvt's ``apply_chat_template``.

    Args:
        tokenizer: the Hugging Face tokenizer of the model (its vocabulary renders).
        format: the lvt format (:func:`lvt.format_names`), e.g. ``"qwen3"``.
        text_mismatch: what ``tokenize=False`` does when the text would not re-encode to lvt's
            ids: raise :class:`TextRoundTripError`, or warn (:class:`TextRoundTripWarning`).
        **options: default template options (per-call keyword arguments override them).

    Raises:
        FormatError: unknown format or option, or a control token the tokenizer lacks.
        ChatTemplateError: not a ``transformers`` tokenizer.
        LvtError: a ``transformers`` tokenizer that is not a fast one.
    """
    if isinstance(tokenizer, LvtTokenizerMixin):
        tokenizer = tokenizer.lvt_wrapped
    if not callable(getattr(type(tokenizer), "apply_chat_template", None)):
        raise ChatTemplateError(
            f"wrap needs a transformers fast tokenizer (PreTrainedTokenizerFast), got "
            f"{type(tokenizer).__name__}")
    if text_mismatch not in ("raise", "warn"):
        raise ChatTemplateError(f"text_mismatch must be 'raise' or 'warn', got {text_mismatch!r}")
    st = _State(tokenizer, format, dict(options), text_mismatch)
    st.encoder({})  # fail now on a bad format, option or tokenizer
    obj = object.__new__(_wrapper_class(type(tokenizer)))
    object.__setattr__(obj, _STATE, st)
    return obj


def _rewrap(inner: Any, fmt: str, options: dict[str, Any],
            text_mismatch: Literal["raise", "warn"]) -> Any:
    return wrap(inner, fmt, text_mismatch=text_mismatch, **options)


def _batch_args(e: LvtError, n: int) -> tuple[Any, ...]:
    """The arguments of ``e`` rebuilt with the conversation's index in the batch."""
    if isinstance(e, ConversationError):
        return (e.message_index, f"conversation {n} of the batch: {e.reason}")
    return (f"conversation {n} of the batch: {e}",)


def _tool_schemas(tools: Any) -> list[Any] | None:
    if tools is None:
        return None
    out = []
    for t in tools:
        if isinstance(t, Mapping):
            out.append(t)
        elif callable(t):
            from transformers.utils import get_json_schema

            out.append(get_json_schema(t))
        else:
            raise ChatTemplateError(
                "tools must be JSON schemas or callables with type hints and a docstring")
    return out


def _messages(conv: Any) -> list[dict[str, Any]]:
    if not isinstance(conv, list | tuple):
        raise ChatTemplateError(
            f"a conversation must be a list of message dicts, got {type(conv).__name__}")
    out = []
    for i, m in enumerate(conv):
        if not isinstance(m, Mapping):
            raise ChatTemplateError(f"message {i} must be a dict, got {type(m).__name__}")
        out.append({k: v for k, v in m.items() if v is not None})
    return out


def _tag_final(msgs: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    """``msgs`` with :data:`CONTINUE_TAG` appended to the continued field of the last message
    (every reasoning alias holding the same value, as ``transformers`` tags them)."""
    if not msgs:
        raise ChatTemplateError("continue_final_message is set but the conversation is empty")
    last = dict(msgs[-1])
    value = last.get(field)
    if value is None:
        raise ChatTemplateError(
            f"continue_final_message is set but the final message has no {field!r} to continue")
    fields = [field]
    if field in _REASONING_FIELDS:
        fields = [f for f in _REASONING_FIELDS if last.get(f) == value]
    for f in fields:
        v = last[f]
        if isinstance(v, list | tuple):
            parts = [dict(p) if isinstance(p, Mapping) else p for p in v]
            for p in reversed(parts):
                if isinstance(p, dict) and "text" in p:
                    p["text"] = str(p["text"]) + CONTINUE_TAG
                    break
            else:
                raise ChatTemplateError("continue_final_message is set but the final message "
                                        "has no text part to continue")
            last[f] = parts
        elif isinstance(v, str):
            last[f] = v + CONTINUE_TAG
        else:
            raise ChatTemplateError(f"the final message's {f!r} is not text")
    return [*msgs[:-1], last]


def _render(
    enc: ChatEncoder, conv: Any, tools: list[Any] | None, gen: bool, cont: bool | str
) -> tuple[list[core.Item], tuple[list[int], list[int]]]:
    """(items, (ids, mask)) of one conversation, the final message left open with ``cont``."""
    msgs = _messages(conv)
    if cont:
        msgs = _tag_final(msgs, cont if isinstance(cont, str) else "content")
    c: Conversation = enc.from_openai(msgs, tools, gen)
    items = enc.layout(c)
    if cont:
        items = _cut_at_tag(enc, items)
    ids, mask, _, _ = core.encode_items(enc.codec, items)
    return items, (ids, mask)


def _cut_at_tag(enc: ChatEncoder, items: list[core.Item]) -> list[core.Item]:
    """The items up to the end of the continued field (``transformers``' cut at the tag)."""
    pieces = [_piece(enc, it) for it in items]
    text = "".join(pieces)
    tag = CONTINUE_TAG.strip()
    at = text.rfind(tag)
    if at < 0 or not any(it.kind == core.TEXT and tag in it.value for it in items):
        raise ChatTemplateError(
            "continue_final_message is set but the format does not write the final message's "
            f"field in its render (format {enc.format_name!r}): it cannot be continued")
    cut = at if text[at:at + len(CONTINUE_TAG)] == CONTINUE_TAG else len(text[:at].rstrip())
    out: list[core.Item] = []
    pos = 0
    for it, p in zip(items, pieces, strict=True):
        if pos + len(p) <= cut:
            out.append(it)
        elif pos < cut:
            if it.kind != core.TEXT:
                raise ChatTemplateError("continue_final_message: the cut falls inside a token")
            out.append(core.Item(it.kind, it.value[: cut - pos], it.owner, it.learn))
        else:
            break
        pos += len(p)
    return out


def _piece(enc: ChatEncoder, it: core.Item) -> str:
    if it.kind == core.TEXT:
        return str(it.value)
    if it.kind == core.CTRL:
        return str(enc.tokenizer.id_to_token(it.value))
    return enc.codec.decode(list(it.value))


def _text(enc: ChatEncoder, items: list[core.Item]) -> str:
    """The rendered string: text as written, control tokens by their content."""
    return "".join(_piece(enc, it) for it in items)


def _check_texts(st: _State, texts: list[str], rendered: list[Any]) -> None:
    """Every text must re-encode to lvt's ids with the original tokenizer."""
    again = st.inner(texts, add_special_tokens=False)["input_ids"]
    for n, (a, (items, (ids, _))) in enumerate(zip(again, rendered, strict=True)):
        if list(a) == list(ids):
            continue
        pos = next((j for j, (x, y) in enumerate(zip(a, ids, strict=False)) if x != y),
                   min(len(a), len(ids)))
        spans = core.spans_of(items)
        added = {t.content for t in st.inner.added_tokens_decoder.values() if t.content.strip()}
        err = TextRoundTripError(n, pos, sorted(t for t in added if any(t in s for s in spans)))
        if st.text_mismatch == "warn":
            warnings.warn(str(err), TextRoundTripWarning, stacklevel=3)
        else:
            raise err


def _model_max(inner: Any) -> int | None:
    m = getattr(inner, "model_max_length", None)
    return int(m) if isinstance(m, int) and m < 1 << 40 else None


def _cut(x: list[int], n: int, side: str) -> list[int]:
    if len(x) <= n:
        return x
    return x[len(x) - n:] if side == "left" else x[:n]


def _pad(inner: Any, ids: list[list[int]], attn: list[list[int]], masks: list[list[int]],
         padding: bool | str, max_length: int | None, multiple: int | None, side: str
         ) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    strategy = "longest" if padding is True else str(getattr(padding, "value", padding))
    if strategy == "longest":
        n = max(len(x) for x in ids)
    elif strategy == "max_length":
        n = max_length if max_length is not None else _model_max(inner)
        if n is None:
            raise ChatTemplateError("padding='max_length' needs max_length")
    else:
        raise ChatTemplateError(f"unknown padding strategy {padding!r}")
    if multiple:
        n = -(-n // multiple) * multiple
    pad_id = getattr(inner, "pad_token_id", None)
    if pad_id is None:
        raise ChatTemplateError("padding needs a pad token: the tokenizer has none "
                                "(set tokenizer.pad_token)")

    def fill(rows: list[list[int]], v: int) -> list[list[int]]:
        out = []
        for r in rows:
            extra = [v] * max(0, n - len(r))
            out.append(extra + r if side == "left" else r + extra)
        return out

    return fill(ids, int(pad_id)), fill(attn, 0), fill(masks, 0)


def _tensor(batch_encoding: type, data: dict[str, Any], kind: str | None) -> Any:
    try:
        return batch_encoding(data, tensor_type=kind)
    except ValueError as e:
        raise ChatTemplateError(
            f"cannot make {kind!r} tensors of sequences of different lengths (pass padding=True): "
            f"{e}") from None
