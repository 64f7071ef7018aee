"""Collisions: different conversations that a format renders to the same training example.

A format is injective only up to what its template drops or normalises (``Format.LowerInjective``
in ``Verified/Spec/Format.lean``): Llama and Gemma trim content, most templates never write a
tool call's id, templates without reasoning drop it, empty content and no content render
alike, Unicode text is taken in NFC. Two inputs of one batch that differ only there become the
same example (same ids, same loss mask), so a reward or a label attached to one is silently
attached to the other. :meth:`lvt.ChatEncoder.encode_batch` and ``lvt encode`` find them:

* ``on_collision="warn"`` (the default): a :class:`CollisionWarning` per collision, naming
  both inputs and their first difference;
* ``"error"``: :class:`lvt.errors.CollisionError` before anything is returned or written;
* ``"ignore"``: no check.

Equal inputs (a GRPO group's repeated prompt) are not a collision: only inputs that differ as
conversations and render to the same ids *and* loss mask are. The check costs one hash per
rendered example; inputs are compared only where two hashes meet.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lvt.errors import ArgumentError, CollisionError
from lvt.model import Conversation

__all__ = [
    "ON_COLLISION",
    "Collision",
    "CollisionTracker",
    "CollisionWarning",
    "check_batch",
    "check_on_collision",
    "first_difference",
    "input_digest",
    "render_digest",
]

#: The values of ``on_collision``.
ON_COLLISION = ("warn", "error", "ignore")

_SHOW = 60  # characters of a differing value shown in a message


class CollisionWarning(UserWarning):
    """Two different inputs render to the same ids and loss mask (:mod:`lvt.collisions`)."""


@dataclass(frozen=True)
class Collision:
    """Inputs ``first`` and ``second`` (batch indices, or input lines for ``lvt encode``) differ
    but render to the same example; ``difference`` says where they first differ."""

    first: int
    second: int
    difference: str

    def describe(self, what: str = "conversations") -> str:
        """One line naming both inputs and their first difference."""
        return (f"{what} {self.first} and {self.second} differ ({self.difference}) but render "
                "to the same ids and loss mask: the template does not write the difference")


def check_on_collision(value: Any) -> str:
    """``value`` if it is one of :data:`ON_COLLISION`.

    Raises:
        ArgumentError: any other value.
    """
    if not isinstance(value, str) or value not in ON_COLLISION:
        raise ArgumentError("on_collision", f"expected one of {', '.join(map(repr, ON_COLLISION))}"
                            f", got {value!r}")
    return value


def render_digest(ids: Any, loss: Any) -> bytes:
    """A 16-byte digest of a rendered example (its ids and loss mask arrays)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(memoryview(ids).cast("B"))
    h.update(b"\x00mask\x00")
    h.update(memoryview(loss).cast("B"))
    return h.digest()


def input_digest(conv: Conversation) -> bytes:
    """A 16-byte digest of a conversation (equal conversations give equal digests)."""
    return hashlib.blake2b(repr(conv).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _show(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= _SHOW else r[: _SHOW - 1] + "…"


def _diff(a: Any, b: Any) -> str:
    """The first differing field of two blocks, down to the value (``ToolCall.id 'a' vs
    'b'``, ``Plain.payload.text 'Hi ' vs 'Hi'``)."""
    path = ""
    while (type(a) is type(b) and dataclasses.is_dataclass(a)
           and not isinstance(a, type)):
        f = next(f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name))
        path += ("." if path else type(a).__name__ + ".") + f
        a, b = getattr(a, f), getattr(b, f)
    return f"{path} {_show(a)} vs {_show(b)}" if path else f"{_show(a)} vs {_show(b)}"


def first_difference(c: Conversation, d: Conversation) -> str:
    """Where two conversations first differ, in words (``"message 1, block 0: …"``)."""
    if c.tools != d.tools:
        return "tools"
    if c.add_generation_prompt != d.add_generation_prompt:
        return "add_generation_prompt"
    for i, (m, n) in enumerate(zip(c.messages, d.messages, strict=False)):
        if m == n:
            continue
        if m.role != n.role:
            return f"message {i}: role {m.role.value!r} vs {n.role.value!r}"
        for k, (a, b) in enumerate(zip(m.blocks, n.blocks, strict=False)):
            if a != b:
                return f"message {i}, block {k}: {_diff(a, b)}"
        return f"message {i}: {len(m.blocks)} vs {len(n.blocks)} blocks"
    return f"{len(c.messages)} vs {len(d.messages)} messages"


class CollisionTracker:
    """Collisions among examples seen one at a time (a dataset streamed in chunks), with the
    semantics of :func:`check_batch`: each distinct input that renders as an earlier, other
    input is one collision, reported against the first input of that render; a repeat of an
    input already seen is none.

    Only digests are kept: two 16-byte digests and an int per distinct render, plus the input
    digests of renders that collided, so a run over millions of rows holds tens of megabytes.
    """

    def __init__(self) -> None:
        self._seen: dict[bytes, tuple[bytes, int]] = {}
        self._more: dict[bytes, set[bytes]] = {}  # per collided render, its other inputs
        self.count = 0
        self.examples: list[tuple[int, int]] = []

    def add(self, render: bytes, inp: bytes, where: int, keep: int = 10) -> tuple[int, int] | None:
        """Record an example (its digests and where it is); the earlier input it collides with
        and ``where``, or ``None``. The first ``keep`` collisions are kept in ``examples``."""
        first, at = self._seen.setdefault(render, (inp, where))
        more = self._more.setdefault(render, set()) if first != inp else None
        if more is None or inp in more:
            return None
        more.add(inp)
        self.count += 1
        pair = (at, where)
        if len(self.examples) < keep:
            self.examples.append(pair)
        return pair


def check_batch(convs: Sequence[Conversation], encoded: Sequence[Any],
                on_collision: str) -> list[Collision]:
    """The collisions of a batch (``encoded[i]`` the render of ``convs[i]``), warned about or
    raised as ``on_collision`` says (``"ignore"``: none are looked for).

    Raises:
        CollisionError: ``on_collision="error"`` and two inputs collide (the first pair).
    """
    if on_collision == "ignore" or len(convs) < 2:
        return []
    reps: dict[bytes, list[int]] = {}  # per render, the first index of each distinct input
    found: list[Collision] = []
    for i, e in enumerate(encoded):
        seen = reps.setdefault(render_digest(e.ids, e.mask), [])
        if any(convs[j] == convs[i] for j in seen):
            continue  # a repeat of an input already seen (a GRPO group's prompt)
        if seen:
            j = seen[0]
            col = Collision(j, i, first_difference(convs[j], convs[i]))
            if on_collision == "error":
                raise CollisionError(col.first, col.second, col.describe())
            found.append(col)
        seen.append(i)
    for col in found:
        warnings.warn(col.describe(), CollisionWarning, stacklevel=3)
    return found
