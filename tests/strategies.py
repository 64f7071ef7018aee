"""Shared hypothesis strategies and fixtures for lvt tests.

* :func:`conversations` draws conversations a user could send to a format: system prompts or
  none, tools or none, user turns, assistant turns with reasoning (Qwen3), content and tool
  calls, tool results after calls, and text full of what breaks renderers (control-token
  strings of every family, the formats' own literals, newlines and spaces at the ends,
  Unicode). With ``sampled=True`` assistant turns may be :class:`~lvt.model.Sampled`.
* :func:`token_streams` draws token lists near the renders of an encoder (mutated renders,
  control ids and text runs) to attack the parser.
* :func:`toy_tokenizer` builds (once) a tiny byte-level BPE tokenizer whose added tokens are
  the control tokens of the Qwen and Llama families.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from hypothesis import strategies as st

from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, ToolCall

__all__ = [
    "CONTROL_STRINGS",
    "conversations",
    "example_count",
    "texts",
    "token_streams",
    "toy_tokenizer",
]

#: Control-token strings of the Qwen and Llama families (for adversarial text).
CONTROL_STRINGS: tuple[str, ...] = (
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<think>", "</think>", "<|begin_of_text|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>",
)

#: Literals of the formats themselves, which text may spell too.
_FORMAT_LITERALS: tuple[str, ...] = (
    "# Tools", "<tools>", "</tools>", '", "arguments": ', '{"name": "', '", "parameters": ',
    "<tool_response>\n", "\n</tool_response>", "assistant\n", "user\n", "system\n",
    "Environment: ipython\n", "Today Date: ", "{", "}", "\n\n", "\n", " ", "\t", "\r\n",
)


def example_count(default: int = 200) -> int:
    """Examples per property: ``LVT_HYPOTHESIS_EXAMPLES`` or ``default``."""
    return int(os.environ.get("LVT_HYPOTHESIS_EXAMPLES", default))


def texts(min_size: int = 0) -> st.SearchStrategy[str]:
    """Text mixing Unicode (no lone surrogates), whitespace, control-token strings and the
    formats' own literals."""
    piece = st.one_of(
        st.text(st.characters(exclude_categories=("Cs",)), max_size=6),
        st.sampled_from(CONTROL_STRINGS),
        st.sampled_from(_FORMAT_LITERALS),
        st.sampled_from(["Hello", "The answer is 42.", "é", "日本語", "🙂", "```py\nx = 1\n```",
                         "a\u0301", "  indented", "done.\n"]),
    )
    return st.lists(piece, min_size=min_size, max_size=4).map("".join)


_TOOL_NAMES = ("get_weather", "search", "calc.add", "lookup-1")


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": f"Tool {name}: does things. Ünïcode ✓",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"},
                                                        "n": {"type": "integer"}},
                       "required": ["q"]}}}


_ARGS = st.sampled_from(['{"q": "Paris"}', '{"q": "x", "n": 3}', "{}",
                         '{"q": "line\\nbreak \\"quoted\\""}', '{"q": "日本"}'])


@st.composite
def conversations(draw: st.DrawFn, fmt: str, max_turns: int = 5, sampled: bool = False,
                  sample_ids: tuple[int, ...] = ()) -> Conversation:
    """A conversation for the format ``fmt`` (``qwen2.5``, ``qwen3``, ``qwen3-stable``,
    ``llama3.1``): the shapes its template can express, with adversarial text."""
    llama = fmt.startswith("llama")
    reasoning_ok = fmt in ("qwen3", "qwen3-stable")
    tools = draw(st.sampled_from([None, None, [_tool("get_weather")],
                                  [_tool(n) for n in _TOOL_NAMES]]))
    msgs: list[Message] = []
    if draw(st.booleans()):
        msgs.append(Message(Role.SYSTEM, _plain(draw(texts()))))
    end_gen = False
    for _ in range(draw(st.integers(1, max_turns))):
        msgs.append(Message(Role.USER, _plain(draw(texts()))))
        if draw(st.integers(0, 5)) == 0 and not llama:
            msgs.append(Message(Role.SYSTEM, _plain(draw(texts()))))
        end_gen = draw(st.integers(0, 3)) == 0
        if end_gen:
            break
        # an agent loop: assistant turns with calls and their results, then an answer
        for _ in range(draw(st.integers(0, 2))):
            ncalls = draw(st.integers(1, 1 if llama else 3))
            msgs.append(_assistant(draw, reasoning_ok, ncalls, sampled, sample_ids))
            for _ in range(ncalls):
                msgs.append(Message(Role.TOOL, _plain(draw(texts()))))
        if draw(st.integers(0, 4)) == 0:
            end_gen = True
            break
        msgs.append(_assistant(draw, reasoning_ok, 0, sampled, sample_ids))
    return Conversation(msgs, end_gen and draw(st.booleans()), tools)


def _plain(s: str) -> tuple[Plain, ...]:
    return (Plain(Text(s)),) if s else ()


def _assistant(draw: st.DrawFn, reasoning_ok: bool, ncalls: int, sampled: bool,
               sample_ids: tuple[int, ...]) -> Message:
    if sampled and sample_ids and draw(st.integers(0, 2)) == 0:
        return Message(Role.ASSISTANT, (Sampled(draw(st.lists(st.sampled_from(sample_ids),
                                                              max_size=12))),))
    blocks: list[Any] = []
    if reasoning_ok and draw(st.booleans()):
        blocks.append(Reasoning(Text(draw(texts()))))
    c = draw(texts())
    if c:
        blocks.append(Plain(Text(c)))
    for _ in range(ncalls):
        blocks.append(ToolCall(draw(st.sampled_from(_TOOL_NAMES)), draw(_ARGS)))
    return Message(Role.ASSISTANT, blocks)


@st.composite
def token_streams(draw: st.DrawFn, enc: Any, render: list[int]) -> list[int]:
    """A token list near ``render`` (a render by ``enc``): a mutation of it, or a sequence
    of control ids and text runs."""
    reserved = sorted(enc.reserved)
    text_ids = st.integers(0, 5000)
    piece = st.one_of(st.sampled_from(reserved).map(lambda t: [t]),
                      st.lists(text_ids, min_size=1, max_size=4))
    ts = list(render)
    if ts and draw(st.integers(0, 3)) > 0:
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, max(len(ts) - 1, 0)))
            op = draw(st.sampled_from(["drop", "insert", "replace", "cut", "swap"]))
            p = draw(piece)
            if op == "drop":
                ts = ts[:i] + ts[i + 1:]
            elif op == "insert":
                ts = ts[:i] + p + ts[i:]
            elif op == "replace":
                ts = ts[:i] + p + ts[i + 1:]
            elif op == "cut":
                ts = ts[:i]
            elif i + 1 < len(ts):
                ts[i], ts[i + 1] = ts[i + 1], ts[i]
        return ts
    return [t for p in draw(st.lists(piece, max_size=12)) for t in p]


@functools.lru_cache(maxsize=1)
def toy_tokenizer() -> Any:
    """A tiny byte-level BPE tokenizer (256 byte tokens and a few merges, including across
    ``"\\n"`` boundaries) whose added tokens are the control tokens of the Qwen and Llama
    families (Qwen's in-body tokens non-special, as in Qwen's tokenizer), plus one
    non-control added token ``<table>`` that stays part of text encoding."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from lvt.runtime.codec import bytes_to_unicode

    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ċ", "Ċ"), (".", "Ċ"),
              ("t", "Ċ")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    non_special = {"<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>",
                   "</tool_response>"}
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False)
                            for s in CONTROL_STRINGS if s not in non_special])
    tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in CONTROL_STRINGS
                    if s in non_special])
    tok.add_tokens([AddedToken("<table>", special=False, normalized=False)])
    return tok
