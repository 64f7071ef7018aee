"""The Mistral structure as its Hugging Face templates write it: the 2512 templates (Ministral 3,
Devstral 2: :class:`MistralTemplate`) and Mistral Small 3 / 3.1's (:class:`MistralSmall3`).

Ministral 3 (3B, 8B, 14B Instruct 2512) and Devstral Small 2 ship one template body: the
``mistral`` structure's version ``v13`` (``[AVAILABLE_TOOLS]`` before the first user message,
``[TOOL_CALLS]NAME[ARGS]``, ``[TOOL_RESULTS]``) with two differences from mistral-common, the
structure's reference:

* a default system prompt, the model's own, when the conversation does not open with one::

      {%- if messages[0]['role'] != 'system' and default_system_message != '' %}
          {{- '[SYSTEM_PROMPT]' + default_system_message + '[/SYSTEM_PROMPT]' }}

* assistant text written as given (``{{- content -}}`` in ``render_content``), where
  mistral-common strips trailing spaces (``content.rstrip(" ")``).

The entry's ``default_system`` (a record's value: :mod:`lvt.formats.prompts`) is placed as the
Qwen structure's ``systemTurn`` places its default text: as the first turn of the *lowered*
conversation, owned by message 0 (never learned), so the owners of every other token and the
positions named in errors stay the user's message indices. Read back, the render is the
conversation with that system message written out; both render to the same ids.

Layout and reader are the structure's (``Verified/Spec/Mistral.lean``), unchanged; both loops
are stated in ``Verified/Spec/MistralTemplate.lean`` (``lowerT`` for :class:`MistralTemplate`,
``lowerS`` for :class:`MistralSmall3`; these classes are their transliteration) and proven
lawful for every record with well-formed ids and any default text (``lawfulT``, ``lawfulS``,
``tekkenT_lawful``, ``tekkenS_lawful`` in ``Thm/MistralTemplate.lean``);
``tests/lean/test_differential_mistral_template.py`` compares them in the kernel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lvt.errors import ConversationError
from lvt.families.mistral import (
    AssistantTurn,
    MConv,
    Mistral,
    MistralIds,
    SampledTurn,
    SystemTurn,
)
from lvt.model import Conversation, Message, Plain, Role, Sampled, content_of

__all__ = ["MistralSmall3", "MistralTemplate"]


class MistralTemplate(Mistral):
    """The Mistral structure with a model's default system prompt and untrimmed assistant
    text (module docstring)."""

    #: Answers are written as given (``unlower`` reads ``[/INST]</s>`` as an empty answer).
    strips_answers = False

    def __init__(self, ids: MistralIds, version: str, stable: bool, default_system: str) -> None:
        super().__init__(ids, version, stable)
        if not default_system:  # `default_system_message != ''`: an empty default is no entry
            raise ValueError("a default system prompt must not be empty")
        self.default_system = default_system

    def lower_msg(self, i: int, m: Message, tools: str | None, rid: str | None = None) -> Any:
        """The structure's ``lowerMsg`` with assistant text as given (``{{- content -}}``)."""
        t = super().lower_msg(i, m, tools, rid)
        if isinstance(t, AssistantTurn) and isinstance(t.p, str):
            return replace(t, p=self._calls(i, m.blocks)[0])
        return t

    def lower(self, c: Conversation) -> MConv:
        """The structure's ``lower``, then the default system turn when the conversation does
        not open with a system message (``messages[0]['role'] != 'system'``).

        Raises:
            ConversationError: the conversation cannot be expressed in this format.
        """
        if not c.messages:
            raise ConversationError(None, "an empty conversation (the template would write "
                                    "only its default system prompt)")
        q = super().lower(c)
        if c.messages[0].role is Role.SYSTEM:
            return q
        return MConv((SystemTurn(self.default_system, 0), *q.turns), q.prompt)


class MistralSmall3(MistralTemplate):
    """Mistral Small 3 (2501) and Small 3.1 (2503)'s template: a loop with no tool syntax and no
    role order, over the same markup and reader.

    * every message where it is (``{%- for message in loop_messages %}``): a user message
      ``[INST]…[/INST]``, a system message ``[SYSTEM_PROMPT]…[/SYSTEM_PROMPT]``, an assistant
      message ``content + eos_token``, in any order (mistral-common merges consecutive user
      messages and refuses a system message after an answer; this template writes both);
    * the system prompt first, always: the first message's, else the default (dated);
    * no tools: the template ignores ``tools``, drops an assistant message's calls and raises
      on a ``tool`` message, so tools, calls and results are refused with a typed error.

    The reader is the structure's (it reads turns in any order).
    """

    def lower(self, c: Conversation) -> MConv:
        """``loop_messages`` as the template writes them (class docstring).

        Raises:
            ConversationError: tools, calls or results (no tool syntax), reasoning, an empty
                conversation, or a message that is not one plain block.
        """
        if not c.messages:
            raise ConversationError(None, "an empty conversation (the template would write "
                                    "only its default system prompt)")
        if c.tools:
            raise ConversationError(None, "this Mistral model's template has no tool syntax "
                                    "(it ignores tool definitions)")
        turns: list[object] = []
        if c.messages[0].role is not Role.SYSTEM:
            turns.append(SystemTurn(self.default_system, 0))
        for i, m in enumerate(c.messages):
            if m.role is Role.ASSISTANT:
                bs = m.blocks
                if len(bs) == 1 and isinstance(bs[0], Sampled):
                    turns.append(SampledTurn(bs[0].ids, i))
                    continue
                if not all(isinstance(b, Plain) for b in bs) or len(bs) > 1:
                    raise ConversationError(i, "this Mistral model's template writes an "
                                            "assistant message as its content only (it drops "
                                            "tool calls and reasoning)")
                p = content_of(m) if bs else ""
                turns.append(AssistantTurn(p if p is not None else "", (), i))
            elif m.role in (Role.SYSTEM, Role.USER):
                turns.append(self.lower_msg(i, m, None))
            else:
                raise ConversationError(i, f"this Mistral model's template has no "
                                        f"{m.role.value} role (it raises 'Only user, system "
                                        "and assistant roles are supported!')")
        for t in turns:
            why = self.turn_ok(t)
            if why is not None:
                raise ConversationError(getattr(t, "owner", None), why)
        return MConv(tuple(turns), len(c.messages) if c.add_generation_prompt else None)
