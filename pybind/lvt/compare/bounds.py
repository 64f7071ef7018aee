"""Bounded evaluation of a chat template: a time limit and an output-size limit per render.

``lvt check --template`` runs a template the user hands in: untrusted code. Jinja's sandbox
(``ImmutableSandboxedEnvironment``, as ``transformers`` compiles it) refuses attribute escapes
(``cycler.__init__.__globals__``, ``__subclasses__``), ``include`` has no loader and ``range``
is capped at 100 000 items, but nothing bounds the *work*: two nested ``range(100000)`` loops
run 1e10 iterations, and a loop that writes text can build gigabytes. :func:`bounded` runs one
render under :class:`TemplateLimits`:

* **time**: a watchdog thread (one per process, idle when nothing renders) raises an
  asynchronous exception in the rendering thread at the deadline
  (``PyThreadState_SetAsyncExc``). Jinja compiles templates to Python bytecode, so any loop,
  with output or without, inside a macro or a ``{% set %}`` block, stops within a few
  milliseconds of the deadline;
* **output**: the rendered text is counted as it streams out of the compiled template's
  generator (the environment's ``concat``, which Jinja calls with the render's generator),
  and the render stops as soon as it passes ``max_output`` characters; a ``{% set %}`` block
  or macro collecting more than that is refused too. While the template runs, the watchdog
  also watches the process's resident memory: text built in memory without being written
  (a ``{% set %}`` block in a loop) is stopped once it grows past
  ``256 MiB + 8 bytes * max_output`` (Linux, where ``/proc/self/statm`` tells it).

A stopped render raises :class:`TemplateLimitError` (an :class:`~lvt.errors.LvtError`) naming
the limit, its value and the setting that moves it; ``lvt check`` reports it as the
conversation's status ``template_limit``. The hooks only act while :func:`bounded` runs in
the calling thread: the same compiled template rendered elsewhere renders as before.

Not bounded: one C-level operation that allocates a lot at once (``'x' * 10**9`` in the
template) runs to its end before the limits are checked (its result is then counted).
"""

from __future__ import annotations

import contextvars
import ctypes
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from lvt.errors import ArgumentError, LvtError

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "TemplateLimitError",
    "TemplateLimits",
    "bounded",
    "install_counter",
]

#: Default time limit of one render, in seconds (``--template-timeout``).
DEFAULT_TIMEOUT: float = 10.0
#: Default output limit of one render, in characters (``--template-max-output``): 16 Mi.
DEFAULT_MAX_OUTPUT: int = 16 * 2**20
#: Memory the template may build beyond its output while it runs (plus 8 bytes a char).
_MEMORY_BASE = 256 * 2**20
_POLL_S = 0.01
_IDLE_AFTER_S = 1.0

T = TypeVar("T")


class TemplateLimitError(LvtError):
    """A template render stopped by a limit of :class:`TemplateLimits`.

    Attributes:
        limit: ``"time"`` or ``"output"``.
        value: the limit (seconds or characters).
        setting: the option that moves it (``--template-timeout`` / ``template_timeout``).
    """

    def __init__(self, limit: str, value: float, setting: str, detail: str) -> None:
        self.limit = limit
        self.value = value
        self.setting = setting
        super().__init__(detail)


@dataclass(frozen=True)
class TemplateLimits:
    """Limits of one template render; ``None`` lifts a limit.

    Attributes:
        timeout: seconds (> 0, finite); default 10.
        max_output: characters of rendered text (>= 1); default 16 Mi (16 777 216).

    Raises:
        ArgumentError: a limit out of range.
    """

    timeout: float | None = DEFAULT_TIMEOUT
    max_output: int | None = DEFAULT_MAX_OUTPUT

    def __post_init__(self) -> None:
        t = self.timeout
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                              or not math.isfinite(t) or t <= 0):
            raise ArgumentError("template_timeout", f"must be a number of seconds > 0, got {t!r}")
        m = self.max_output
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 1):
            raise ArgumentError("template_max_output",
                                f"must be an int >= 1 (characters), got {m!r}")

    @property
    def unbounded(self) -> bool:
        """Whether no limit is set."""
        return self.timeout is None and self.max_output is None


class _Stop(BaseException):
    """Raised asynchronously in the rendering thread (a BaseException, so no ``except
    Exception`` in the template's pipeline swallows it)."""


class _Render:
    """The state of one bounded render."""

    def __init__(self, limits: TemplateLimits, tid: int) -> None:
        self.limits = limits
        self.tid = tid
        self.start = time.monotonic()
        self.deadline = None if limits.timeout is None else self.start + limits.timeout
        self.lock = threading.Lock()
        self.done = False
        self.fired: str | None = None  # "time" | "memory", once the watchdog fired
        self.rendering = False  # the template is running (its output is being counted)
        self.memory_limit: int | None = None  # absolute RSS bound, set by the watchdog

    def stop(self, kind: str) -> None:
        """Called by the watchdog: interrupt the rendering thread once."""
        with self.lock:
            if self.done or self.fired is not None:
                return
            self.fired = kind
            _set_async_exc(self.tid, _Stop)

    def error(self, kind: str, extra: str = "") -> TemplateLimitError:
        took = time.monotonic() - self.start
        lim = self.limits
        if kind == "time":
            assert lim.timeout is not None
            return TemplateLimitError(
                "time", lim.timeout, "--template-timeout",
                f"the template ran past its time limit of {lim.timeout:g} s "
                "(--template-timeout / template_timeout)")
        assert lim.max_output is not None
        what = extra or (f"its output passed {lim.max_output} characters" if kind == "output"
                         else "it built more text in memory than the output limit allows")
        return TemplateLimitError(
            "output", lim.max_output, "--template-max-output",
            f"the template was stopped after {took:.2f} s: {what} (--template-max-output / "
            f"template_max_output = {lim.max_output})")


_CURRENT: contextvars.ContextVar[_Render | None] = contextvars.ContextVar(
    "lvt_template_render", default=None)


def _rss() -> int | None:
    """Resident memory of this process in bytes (Linux), else ``None``."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


try:
    import os as _os

    _PAGE = _os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
    _PAGE = 4096


class _Watchdog:
    """One daemon thread that watches every bounded render of the process: deadlines, and
    the resident memory while a template with an output limit runs (its baseline read at
    the first poll, so the rendering thread never pays for it). It polls every
    ``_POLL_S`` while renders come and goes idle a second after the last one."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.active: set[_Render] = set()
        self.thread: threading.Thread | None = None
        self.idle = True

    def add(self, r: _Render) -> None:
        with self.cv:
            self.active.add(r)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="lvt-template-watchdog",
                                               daemon=True)
                self.thread.start()
            if self.idle:
                self.cv.notify()

    def remove(self, r: _Render) -> None:
        with self.cv:
            self.active.discard(r)

    def _run(self) -> None:
        last = time.monotonic()
        while True:
            with self.cv:
                if not self.active and time.monotonic() - last > _IDLE_AFTER_S:
                    self.idle = True
                    while not self.active:
                        self.cv.wait()
                    self.idle = False
                renders = list(self.active)
            if renders:
                last = time.monotonic()
                self._poll(renders, last)
            time.sleep(_POLL_S)

    @staticmethod
    def _poll(renders: list[_Render], now: float) -> None:
        rss: int | None = -1
        for r in renders:
            if r.deadline is not None and now >= r.deadline:
                r.stop("time")
            elif r.rendering and r.limits.max_output is not None:
                if rss == -1:
                    rss = _rss()
                if rss is None:
                    continue
                if r.memory_limit is None:
                    r.memory_limit = rss + _MEMORY_BASE + 8 * r.limits.max_output
                elif rss > r.memory_limit:
                    r.stop("memory")


_WATCHDOG = _Watchdog()


def bounded(fn: Callable[[], T], limits: TemplateLimits) -> T:
    """``fn()`` (a template render) under ``limits``, in the calling thread.

    Raises:
        TemplateLimitError: a limit was reached; the render was stopped.
    """
    if limits.unbounded:
        return fn()
    r = _Render(limits, threading.get_ident())
    token = _CURRENT.set(r)
    try:
        try:
            if limits.timeout is not None:
                _WATCHDOG.add(r)
            try:
                return fn()
            finally:
                _finish(r)
        except _Stop:
            raise r.error(r.fired or "time") from None
    finally:
        _finish(r)  # again, in case the interruption landed inside the first call
        _CURRENT.reset(token)


def _finish(r: _Render) -> None:
    """Stop watching ``r`` and cancel an interruption fired but not yet delivered
    (idempotent; at most one interruption is ever fired)."""
    _WATCHDOG.remove(r)
    with r.lock:
        if not r.done:
            r.done = True
            if r.fired is not None:
                _set_async_exc(r.tid, None)


# PyThreadState_SetAsyncExc(thread id, exception class), and with NULL to cancel a pending one
_RAISE = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))
_CANCEL = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))


def _set_async_exc(tid: int, exc: type[BaseException] | None) -> None:
    if exc is None:
        _CANCEL(tid, None)
    else:
        _RAISE(tid, exc)


class _Counted:
    """An environment ``concat`` that counts what the template emits while :func:`bounded`
    runs in this thread (and is ``"".join`` otherwise)."""

    def __init__(self, inner: Callable[[Iterable[str]], str]) -> None:
        self.inner = inner

    def __call__(self, chunks: Iterable[str]) -> str:
        r = _CURRENT.get()
        if r is None or r.limits.max_output is None:
            return self.inner(chunks)
        limit = r.limits.max_output
        if isinstance(chunks, list):  # a {% set %} block or macro body, already built
            n = sum(len(s) for s in chunks)
            if n > limit:
                raise r.error("output", f"a block or macro built {n} characters")
            return self.inner(chunks)
        if r.deadline is None:
            _WATCHDOG.add(r)  # for the memory guard
        out: list[str] = []
        n = 0
        r.rendering = True
        try:
            for s in chunks:
                n += len(s)
                if n > limit:
                    raise r.error("output")
                out.append(s)
        finally:
            r.rendering = False
            r.memory_limit = None
        return self.inner(out)


def install_counter(template_text: str) -> bool:
    """Make the output of ``template_text``, as ``transformers`` compiles it, countable by
    :func:`bounded` (idempotent). ``False`` when this ``transformers`` does not expose its
    compiled template (then only the time limit and the final length apply)."""
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template
    except ImportError:  # pragma: no cover - other transformers layouts
        return False
    try:
        env: Any = _compile_jinja_template(template_text).environment
    except Exception:  # the template does not compile: the render reports it
        return False
    if not isinstance(env.concat, _Counted):
        env.concat = _Counted(env.concat)
    return True
