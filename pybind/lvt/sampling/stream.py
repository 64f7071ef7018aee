"""Reading a completion while the engine streams it: text deltas that are never taken back and
tool calls once they are complete, ending with the same :class:`Completion` as
:func:`~lvt.sampling.read_completion` of all the ids.

Each :meth:`CompletionStream.feed` re-reads the ids so far with the lenient reader (one
definition of what a completion means) and emits only what no later token can change: content
and reasoning up to a held-back tail (trailing newlines, which the formats drop around blocks;
Llama content that starts with ``{`` and may still become a JSON call; DeepSeek text before
any ``</think>``, which may be reasoning), and every call but one still open. The final
:class:`Completion` is authoritative. Re-reading costs time linear in the ids so far per
feed: for an interactive view, not for training throughput (rollouts read once, at the end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lvt.families import deepseek, llama
from lvt.model import check_token_ids
from lvt.sampling.completion import Completion, ReadCall
from lvt.sampling.read import read_completion

__all__ = ["CompletionStream", "Delta"]


@dataclass(frozen=True)
class Delta:
    """What a :meth:`CompletionStream.feed` adds: new content and reasoning text, and the
    tool calls completed since the last delta."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ReadCall, ...] = ()


class CompletionStream:
    """Incremental reading of one sampled assistant turn (``encoder.read_completion`` as the
    ids arrive).

    ``feed(ids)`` takes the next ids (any number, the stop token included when it comes) and
    returns a :class:`Delta`; :meth:`finish` returns the final :class:`Completion` and the last
    delta. The concatenated deltas are the final completion's content, reasoning and calls.
    """

    def __init__(self, encoder: Any, tools: Any = None) -> None:
        self.encoder = encoder
        self.tools = tools
        self._ids: list[int] = []
        self._content = ""
        self._reasoning = ""
        self._calls = 0

    def _delta(self, c: Completion, final: bool) -> Delta:
        content, reasoning = c.content, c.reasoning or ""
        if not final:
            content, reasoning = content.rstrip("\n"), reasoning.rstrip("\n")
            fam = self.encoder.family
            if isinstance(fam, llama.Llama) and fam.tools and content.lstrip().startswith("{"):
                content = self._content  # may still become a JSON call: hold it back
            if isinstance(fam, deepseek.DeepSeek) and c.reasoning is None:
                content = self._content  # may be reasoning whose </think> is still to come
        calls = c.tool_calls
        if not final and c.termination.reason == "length" and calls:
            calls = calls[:-1]  # the last one may still be open
        dc = content[len(self._content):] if content.startswith(self._content) else ""
        dr = reasoning[len(self._reasoning):] if reasoning.startswith(self._reasoning) else ""
        new = tuple(calls[self._calls:])
        self._content += dc
        self._reasoning += dr
        self._calls = max(self._calls, len(calls))
        return Delta(dc, dr, new)

    def feed(self, ids: Sequence[int] | np.ndarray) -> Delta:
        """Read the next ids; the text and calls no later token can change.

        Raises:
            ArgumentError: ``ids`` is not a flat sequence of vocabulary ids.
        """
        self._ids += check_token_ids(ids, "ids", limit=None)
        return self._delta(read_completion(self.encoder, self._ids, self.tools), final=False)

    def finish(self) -> tuple[Completion, Delta]:
        """The completion of every id fed, and what was still held back."""
        c = read_completion(self.encoder, self._ids, self.tools)
        return c, self._delta(c, final=True)
