"""``lvt.interrupts``: termination signals raised as :class:`Interrupted` inside the block (in
this process, signals sent to itself), the previous handlers restored after it, cleanup never
cut short by a second signal, ignored signals left ignored, and ``redeliver`` ending the
process by the signal once the cleanup has run (in a child process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lvt.interrupts import Interrupted, exit_code, signals_as_interrupts


@pytest.fixture(autouse=True)
def _default_dispositions() -> Any:
    """Each test starts from the default actions the module takes over: an earlier test in
    this process may have left a handler of its own (Ray's driver installs one for SIGTERM),
    which ``signals_as_interrupts`` rightly leaves in place."""
    sigs = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    saved = {s: signal.getsignal(s) for s in sigs}
    for s in sigs:
        signal.signal(s, signal.SIG_DFL if s != signal.SIGINT else signal.default_int_handler)
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def _send(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.05)  # the handler runs at the next bytecode boundary of the main thread


def test_sigterm_raises_interrupted_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as ei, signals_as_interrupts() as caught:
        assert signal.getsignal(signal.SIGTERM) is caught
        _send(signal.SIGTERM)
        pytest.fail("not interrupted")
    assert ei.value.signum == signal.SIGTERM and ei.value.exit_code == 143
    assert isinstance(ei.value, KeyboardInterrupt) and exit_code(ei.value) == 143
    assert caught.signum == signal.SIGTERM and caught.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) == before


def test_exit_codes() -> None:
    assert exit_code(Interrupted(signal.SIGHUP)) == 129
    assert exit_code(KeyboardInterrupt()) == 130
    assert exit_code(ValueError()) is None


def test_cleanup_is_not_cut_short() -> None:
    """A signal arriving while an exception is handled is recorded, and raised when the
    block ends; a repeated signal is never raised twice."""
    steps = []
    with pytest.raises(Interrupted), signals_as_interrupts() as caught:
        try:
            raise OSError("disk full")
        except OSError:
            _send(signal.SIGTERM)  # during the cleanup of another error
            _send(signal.SIGTERM)
            steps.append("cleanup finished")
        steps.append("after")
    assert steps == ["cleanup finished", "after"] and caught.signum == signal.SIGTERM
    steps.clear()
    with pytest.raises(Interrupted), signals_as_interrupts():
        try:
            _send(signal.SIGTERM)
        finally:
            _send(signal.SIGTERM)  # the repeat during the first one's cleanup
            steps.append("finally ran")
    assert steps == ["finally ran"]


def test_ignored_and_foreign_handlers_stay() -> None:
    seen: list[int] = []
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
    try:
        with signals_as_interrupts() as caught:
            _send(signal.SIGHUP)  # ignored (nohup): stays ignored
            _send(signal.SIGTERM)  # the caller's own handler: stays the caller's
        assert seen == [signal.SIGTERM] and caught.signum is None
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old_hup)
        signal.signal(signal.SIGTERM, old_term)


def test_nested_blocks_leave_it_to_the_outer_one() -> None:
    with pytest.raises(Interrupted), signals_as_interrupts() as outer, \
            signals_as_interrupts() as inner:
        assert signal.getsignal(signal.SIGTERM) is outer
        _send(signal.SIGTERM)
    assert inner.signum is None and outer.signum == signal.SIGTERM


def test_outside_the_main_thread_it_does_nothing() -> None:
    got: list[object] = []

    def run() -> None:
        with signals_as_interrupts() as caught:
            got.append(signal.getsignal(signal.SIGTERM) is caught)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got == [False]


_REDELIVER = """
import os, sys, time
from lvt.interrupts import signals_as_interrupts
with signals_as_interrupts(redeliver=True):
    try:
        os.kill(os.getpid(), int(sys.argv[1]))
        time.sleep(5)
    finally:
        open(sys.argv[2], "w").write("cleaned up")
print("not reached")
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_redeliver_ends_the_process_by_the_signal_after_cleanup(tmp_path: Path,
                                                                 sig: int) -> None:
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", _REDELIVER, str(int(sig)), str(marker)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == -sig, r.stderr
    assert marker.read_text() == "cleaned up" and "not reached" not in r.stdout
