"""Termination signals as exceptions, so that a long run cleans up before it ends.

``SIGTERM`` (what Slurm, Kubernetes, ``docker stop`` and ``timeout`` send) and ``SIGHUP`` (the
terminal went away) end a Python process at once by default: ``finally`` blocks do not run, a
temporary file stays behind and worker processes are orphaned. Inside
:func:`signals_as_interrupts` they raise :class:`Interrupted` (a ``KeyboardInterrupt``, as
``SIGINT`` does), so the same cleanup runs for every one of them: the temporary output is
removed, the destination is untouched, the workers are stopped.

Rules of the handler:

- only a signal whose disposition is the default one is taken over (``SIG_DFL``; for
  ``SIGINT`` Python's :func:`signal.default_int_handler`): a signal the process ignores
  (``nohup``, a background job) stays ignored, a handler someone else installed (the caller's,
  or an enclosing :func:`signals_as_interrupts`) stays in place;
- the first signal raises :class:`Interrupted` in the main thread; a signal that arrives while
  an exception is already being handled (a ``finally`` or ``except`` block: cleanup in
  progress) does not interrupt that cleanup, it is recorded and takes effect when the block
  ends; a repeated signal (``timeout`` sends ``SIGTERM`` to the command and again to its process
  group) is recorded, never raised twice;
- on exit the previous handlers are restored; with ``redeliver=True`` a signal whose previous
  disposition was the default one is sent again once the cleanup is over, so the process ends
  by that signal as it would have without the handler (what a library call wants; the CLI
  instead exits with :func:`exit_code`, ``128 + signal number``).

Outside the main thread (where Python cannot install handlers) the context does nothing.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

__all__ = ["TERMINATING", "Caught", "Interrupted", "exit_code", "signals_as_interrupts"]

#: The signals :func:`signals_as_interrupts` handles by default (those this platform has).
TERMINATING: tuple[int, ...] = tuple(
    int(getattr(signal, n)) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(KeyboardInterrupt):
    """A run was stopped by a signal (``SIGINT``, ``SIGTERM``, ``SIGHUP``).

    A ``KeyboardInterrupt``, so code that cleans up on Ctrl-C cleans up on every one of them.

    Attributes:
        signum: the signal number.
    """

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"interrupted by {_name(self.signum)}")

    def __reduce__(self) -> tuple[type, tuple[int]]:
        return (type(self), (self.signum,))

    @property
    def exit_code(self) -> int:
        """The shell's code of a process ended by this signal: ``128 + signum`` (130 for
        ``SIGINT``, 143 for ``SIGTERM``, 129 for ``SIGHUP``)."""
        return 128 + self.signum


def exit_code(e: BaseException) -> int | None:
    """``128 + signal number`` for an interrupt (a plain ``KeyboardInterrupt`` is ``SIGINT``:
    130); ``None`` for any other exception."""
    if isinstance(e, Interrupted):
        return e.exit_code
    if isinstance(e, KeyboardInterrupt):
        return 128 + int(signal.SIGINT)
    return None


class Caught:
    """What :func:`signals_as_interrupts` saw: ``signum`` is the first signal received
    (``None`` while none was), whether it was raised or recorded during cleanup."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.raised = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:  # a repeat: the first one's cleanup is running
            return
        self.signum = signum
        if sys.exc_info()[0] is not None:  # an exception is being handled: let cleanup run
            return
        self.raised = True
        raise Interrupted(signum)

    @property
    def exit_code(self) -> int | None:
        """``128 + signum`` once a signal was received, else ``None``."""
        return None if self.signum is None else 128 + self.signum


def _default(signum: int, handler: Any) -> bool:
    """Whether ``handler`` is the default disposition of ``signum``."""
    if signum == getattr(signal, "SIGINT", None):
        return handler is signal.default_int_handler
    return handler == signal.SIG_DFL


@contextlib.contextmanager
def signals_as_interrupts(signals: Sequence[int] = TERMINATING, *,
                          redeliver: bool = False) -> Iterator[Caught]:
    """Within the block, ``signals`` raise :class:`Interrupted` (see the module docstring for
    the rules); the previous handlers are restored on exit. Yields a :class:`Caught` that
    tells which signal came, if any.

    ``redeliver``: on exit after a signal whose previous disposition was the default, send it
    again with that disposition restored (the process then ends by that signal, after the
    cleanup; ``SIGINT`` is left as the ``KeyboardInterrupt`` it already is).
    """
    caught = Caught()
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous: dict[int, Any] = {}
    try:
        for s in signals:
            prev = signal.getsignal(s)
            if _default(s, prev):
                signal.signal(s, caught)
                previous[s] = prev
        try:
            yield caught
        finally:
            for s, prev in previous.items():
                signal.signal(s, prev)
            previous.clear()
            _after(caught, redeliver)
    finally:
        for s, prev in previous.items():  # a signal during the installation loop itself
            signal.signal(s, prev)


def _after(caught: Caught, redeliver: bool) -> None:
    """On exit: a recorded signal takes effect (the handlers are already restored)."""
    s = caught.signum
    if s is None:
        return
    if redeliver and s != getattr(signal, "SIGINT", None):
        signal.raise_signal(s)  # default disposition restored: the process ends here
    if not caught.raised and sys.exc_info()[0] is None:
        caught.raised = True
        raise Interrupted(s)
