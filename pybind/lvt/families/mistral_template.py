"""The Mistral structure as the 2512 Hugging Face templates write it (Ministral 3, Devstral 2).

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

The structure's Lean theorems (``Verified/Thm/MistralRound.lean``) are about its layout and
reader, which this class does not change; no Lean definition states these two lowering steps
yet (``FormatSpec.lawful`` says so for these entries; round trip, parity and refusals are
tested).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lvt.errors import ConversationError
from lvt.families.mistral import AssistantTurn, MConv, Mistral, MistralIds, SystemTurn
from lvt.model import Conversation, Message, Role

__all__ = ["MistralTemplate"]


class MistralTemplate(Mistral):
    """The Mistral structure with a model's default system prompt and untrimmed assistant
    text (module docstring)."""

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
