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
import json
import os
from typing import Any

from hypothesis import strategies as st

from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, ToolCall

__all__ = [
    "ALL_CONTROL_STRINGS",
    "CONTROL_STRINGS",
    "EDGE_TEXTS",
    "Draws",
    "conversations",
    "edge_args",
    "edge_conversation",
    "edge_text",
    "example_count",
    "roundtrip_conversations",
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

#: Control-token strings of every shipped family (Qwen, Llama, Gemma, DeepSeek, gpt-oss,
#: Mistral), spelled as text.
ALL_CONTROL_STRINGS: tuple[str, ...] = (
    *CONTROL_STRINGS,
    "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
    *(f"<\uff5c{n}\uff5c>" for n in (  # DeepSeek's names, between full-width bars
        "begin\u2581of\u2581sentence", "end\u2581of\u2581sentence", "User", "Assistant",
        "tool\u2581calls\u2581begin", "tool\u2581calls\u2581end", "tool\u2581call\u2581begin",
        "tool\u2581call\u2581end", "tool\u2581sep", "tool\u2581outputs\u2581begin",
        "tool\u2581output\u2581begin", "tool\u2581output\u2581end",
        "place\u2581holder\u2581no\u258154")),
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>",
    "<|constrain|>", "<|startoftext|>", " to=functions.", "analysis", "commentary", "final",
    "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CONTENT]", "[ARGS]",
    "[CALL_ID]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[THINK]", "[/THINK]",
)

#: Text on the edges of what tokenizers normalise or rewrite: combining sequences (in and out
#: of canonical order, alone after a newline or a quote), Hangul jamo, singletons and
#: composition exclusions NFC maps elsewhere, supplementary-plane characters, SentencePiece
#: markers (U+2581, byte-fallback names), whitespace-only runs, JSON escapes before a
#: combining mark.
EDGE_TEXTS: tuple[str, ...] = (
    "e\u0301", "\u0301", "a\u0323\u0301", "a\u0301\u0323", "\n\u0301", "\"\u0301",
    "n\u0303", "\u1100\u1161\u11a8", "\u212b", "\u2126", "\u0958", "\U0001d15e",
    "\U0001f642", "\U00020000", "\U0002f800", "\U0001f1ef\U0001f1f5", "\U0001f44d\U0001f3fd",
    "\u0915\u093c", "\ufb01", "\u00c5\u0301", "\u2581", "a\u2581b", "\u2581\u2581",
    "\u2581 ", "<0x41>", "<0xE2>", "<unk>", " ", "  ", "\n", "\t", " \n ", "\r\n", "\u3000",
    "\u00a0", "\u200b", "\ufeff", "\\n\u0301", "\\u0301", "\\",
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


_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_SPACES = (" ", "  ", "\n", "\t", "\r\n", "\u3000", "\u00a0")
_WORDS = ("Hello", "é", "日本語", "x = 1", "done.\n", "The answer is 42.", "🙂")
#: Code point ranges random characters come from (surrogates excluded): ASCII, Latin-1 and
#: Latin Extended, combining marks, Hangul jamo, CJK, emoji, any other plane.
_RANGES = ((0x20, 0x7E), (0x00, 0x1F), (0xA0, 0x24F), (0x300, 0x36F), (0x1100, 0x11FF),
           (0x4E00, 0x4E80), (0x1F300, 0x1FAFF), (0x10000, 0x10FFFF), (0xE000, 0xFFFD))

#: Arguments on the edges: empty, empty values, an escape before a combining mark, escaped
#: (ASCII) JSON of text that is not NFC.
_EDGE_ARGS: tuple[str, ...] = (
    "", "{}", '{"q": ""}', '{"v": "x\\n\u0301y"}', '{"q": "\\u0065\\u0301"}',
    '{"q": "a\u2581b"}', '{"q": "\\u2581"}', '{"q": "\\n"}', "[]", '"text"', "not json",
)


class Draws:
    """The choices a generator makes, from hypothesis (``Draws.of(draw)``, shrinkable) or from
    a seeded ``random.Random`` (``Draws.seeded(rng)``, about 20x faster per conversation)."""

    def __init__(self, integer: Any, choice: Any, chars: Any) -> None:
        self.integer, self.choice, self.chars = integer, choice, chars

    @classmethod
    def of(cls, draw: st.DrawFn) -> Draws:
        """Choices drawn by hypothesis."""
        chars = st.text(st.characters(exclude_categories=("Cs",)), max_size=4)
        return cls(lambda a, b: draw(st.integers(a, b)),
                   lambda xs: draw(st.sampled_from(xs)), lambda: draw(chars))

    @classmethod
    def seeded(cls, rng: Any) -> Draws:
        """Choices made by ``rng`` (a ``random.Random``)."""
        def chars() -> str:
            out = []
            for _ in range(rng.randint(0, 4)):
                a, b = rng.choice(_RANGES)
                c = rng.randint(a, b)
                out.append(chr(c) if not 0xD800 <= c <= 0xDFFF else "?")
            return "".join(out)
        return cls(rng.randint, rng.choice, chars)

    def flag(self) -> bool:
        """A coin flip."""
        return self.integer(0, 1) == 1


def edge_text(d: Draws, controls: tuple[str, ...] = ALL_CONTROL_STRINGS) -> str:
    """Text on the edges of normalisation: random characters, ``controls`` spelled as text,
    :data:`EDGE_TEXTS`, the formats' literals; one text in eight is whitespace only."""
    if d.integer(0, 7) == 0:
        return "".join(d.choice(_SPACES) for _ in range(d.integer(1, 3)))
    out = []
    for _ in range(d.integer(0, 4)):
        k = d.integer(0, 5)
        out.append(d.chars() if k == 0 else d.choice(controls) if k == 1 else
                   d.choice(EDGE_TEXTS) if k in (2, 3) else
                   d.choice(_FORMAT_LITERALS) if k == 4 else d.choice(_WORDS))
    return "".join(out)


def edge_args(d: Draws, controls: tuple[str, ...] = ALL_CONTROL_STRINGS) -> str:
    """Tool-call arguments: :data:`_EDGE_ARGS`, or a JSON object of edge values written as
    ``tojson`` writes it or with ASCII escapes."""
    k = d.integer(0, 2)
    if k == 0:
        return d.choice(_EDGE_ARGS)
    obj: dict[str, Any] = {}
    for _ in range(d.integer(0, 3)):
        v = d.integer(0, 5)
        obj[d.choice(("q", "n", "é", "e\u0301", "k"))] = (
            edge_text(d, controls) if v < 3 else d.integer(-3, 3) if v == 3 else
            d.flag() if v == 4 else None)
    return json.dumps(obj, ensure_ascii=k == 2)


def _edge_tool(name: str, desc: str, enum: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": desc,
        "parameters": {"type": "object", "properties": {
            "q": {"type": "string", "description": desc, "enum": [enum, "plain"]},
            "n": {"type": "integer"}}, "required": ["q"]}}}


def edge_conversation(d: Draws, caps: dict[str, bool],
                      controls: tuple[str, ...] = ALL_CONTROL_STRINGS,
                      max_turns: int = 4) -> Conversation:
    """A conversation in the shapes a format takes (``caps``: ``tools``, ``calls``,
    ``parallel``, ``reasoning``, ``system``, ``mid_system``, as probed on its encoder), with
    :func:`edge_text` everywhere (combining sequences, supplementary planes, ``controls``
    spelled as text, SentencePiece markers, whitespace-only content, in tool definitions too)
    and :func:`edge_args`. Every tool call has a 9-character id (Mistral v7/v11 need one)."""
    tools = None
    if caps.get("tools") and d.flag():
        names = ["get_weather", "search", "lookup_1"][:d.integer(1, 2)]
        tools = [_edge_tool(n, edge_text(d, controls), edge_text(d, controls)) for n in names]
    names = [x["function"]["name"] for x in tools] if tools else ["get_weather"]
    msgs: list[Message] = []
    if caps.get("system") and d.flag():
        msgs.append(Message(Role.SYSTEM, _plain(edge_text(d, controls))))
    end_gen = False
    for _ in range(d.integer(1, max_turns)):
        msgs.append(Message(Role.USER, _plain(edge_text(d, controls))))
        if caps.get("mid_system") and d.integer(0, 7) == 0:
            msgs.append(Message(Role.SYSTEM, _plain(edge_text(d, controls))))
        end_gen = d.integer(0, 3) == 0
        if end_gen:
            break
        for _ in range(d.integer(0, 2) if caps.get("calls") else 0):
            ncalls = d.integer(1, 3 if caps.get("parallel") else 1)
            blocks: list[Any] = []
            if caps.get("reasoning") and d.flag():
                blocks.append(Reasoning(Text(edge_text(d, controls))))
            blocks += [ToolCall(d.choice(names), edge_args(d, controls),
                                "".join(d.choice(_ID_CHARS) for _ in range(9)))
                       for _ in range(ncalls)]
            msgs.append(Message(Role.ASSISTANT, blocks))
            msgs += [Message(Role.TOOL, _plain(edge_text(d, controls))) for _ in range(ncalls)]
        blocks = []
        if caps.get("reasoning") and d.flag():
            blocks.append(Reasoning(Text(edge_text(d, controls))))
        blocks += _plain(edge_text(d, controls))
        msgs.append(Message(Role.ASSISTANT, blocks))
    return Conversation(msgs, end_gen and d.flag(), tools)


@st.composite
def roundtrip_conversations(draw: st.DrawFn, caps: dict[str, bool],
                            controls: tuple[str, ...] = ALL_CONTROL_STRINGS) -> Conversation:
    """:func:`edge_conversation` drawn by hypothesis (shrinkable)."""
    return edge_conversation(Draws.of(draw), caps, controls)


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
