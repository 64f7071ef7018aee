"""Signals during ``lvt encode`` (a real run in a fresh process, Llama 3.1 from the zoo):
``SIGTERM`` (Slurm, Kubernetes, ``timeout``), ``SIGHUP`` and ``SIGINT`` stop it cleanly (exit
``128 + N``, no temporary file, the destination absent or untouched, no worker left); a
``SIGKILL``-ed parent leaves no worker alive either (``PR_SET_PDEATHSIG``, and the workers'
watcher thread where the kernel has no such thing).

Every test waits until the run has really started (its temporary file exists and, with
``--workers 2``, both workers are up) before it signals, with generous but bounded waits, and
kills whatever it started on the way out. Processes are looked up in ``/proc``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="needs /proc to find the worker processes")

WORDS = ("alpha", "beta", "gamma", "Oslo", "weather", "42", "tool", "é", "日本", "delta")
N_LINES = 150000  # about a minute of work on one core (30000 took 9 s in December 2026): every
# run below is stopped long before its end, even when the machine is loaded
START_WAIT = 120.0  # the run starting (interpreter, tokenizer) on a loaded machine
EXIT_WAIT = 60.0


@pytest.fixture(scope="module")
def big_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(26)
    path = tmp_path_factory.mktemp("signals") / "in.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(N_LINES):
            msgs = []
            for _ in range(rng.randint(1, 3)):
                msgs.append({"role": "user", "content": " ".join(rng.choices(WORDS, k=20))})
                msgs.append({"role": "assistant",
                             "content": " ".join(rng.choices(WORDS, k=40))})
            f.write(json.dumps({"id": f"c{i}", "messages": msgs}, ensure_ascii=False) + "\n")
    return path


def _ppid_state(pid: int) -> tuple[int, str] | None:
    """``(parent pid, state letter)`` of a process, ``None`` once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), fields[0]


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: it only waits for its exit status to be read)."""
    ps = _ppid_state(pid)
    return ps is not None and ps[1] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            ps = _ppid_state(int(d.name))
            if ps is not None and ps[0] == pid and ps[1] not in ("Z", "X"):
                out.append(int(d.name))
    return sorted(out)


def _wait_for(cond: object, timeout: float, what: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if proc.poll() is not None:
            pytest.fail(f"lvt exited {proc.returncode} before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {timeout:.0f}s")
        time.sleep(0.05)


def _temps(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".lvt-tmp"))


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids the test started (the lvt process, its workers): killed at the end whatever
    happened."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


#: ``encode_jsonl`` called as a library (no handler of the caller's: SIGTERM's default action).
_LIBRARY = """
import sys
from lvt import ChatEncoder
from lvt.datasets.files import encode_jsonl
_, src, out, workers = sys.argv
encode_jsonl(src, out, ChatEncoder.from_tokenizer("llama3.1"), workers=int(workers),
             batch_size=64, progress=False)
"""


def _default_dispositions() -> None:
    """In the child before ``exec``: the signals under test at their default action. A
    disposition of "ignore" is inherited across ``exec`` (``nohup``, a background job of a
    non-interactive shell) and lvt rightly keeps a signal its caller ignores; the tests are
    about a process that does not ignore them, however pytest itself was started."""
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)


def _start(big_input: Path, out: Path, workers: int, started: list[int],
           prelude: str = "", library: bool = False) -> tuple[subprocess.Popen[str], list[int]]:
    """``lvt encode`` (or ``encode_jsonl``) in a fresh process, returned once its temporary
    file exists and its ``workers`` workers (when more than one) are up; the process and the
    worker pids."""
    code = ("import sys\n" + prelude + "from lvt.cli import main\nsys.exit(main(sys.argv[1:]))")
    argv = ["encode", str(big_input), "-o", str(out), "-t", "llama3.1", "--workers",
            str(workers), "--batch-size", "64", "--no-progress"]
    if library:
        code, argv = _LIBRARY, [str(big_input), str(out), str(workers)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_dispositions)
    started.append(proc.pid)
    _wait_for(lambda: _temps(out.parent), START_WAIT, "temporary file", proc)
    kids: list[int] = []
    if workers > 1:
        def up() -> bool:
            kids[:] = _children(proc.pid)
            return len(kids) >= workers
        _wait_for(up, START_WAIT, f"{workers} workers", proc)
        started.extend(kids)
    return proc, kids


def _assert_workers_gone(kids: list[int], within: float) -> None:
    deadline = time.monotonic() + within
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [k for k in kids if _alive(k)], "workers still alive"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129),
                                           (signal.SIGINT, 130)])
def test_signal_stops_a_one_process_run(tmp_path: Path, big_input: Path, started: list[int],
                                        sig: int, code: int) -> None:
    out = tmp_path / "out" / "data.parquet"
    out.parent.mkdir()
    proc, _ = _start(big_input, out, 1, started)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=EXIT_WAIT)
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == f"lvt: error: interrupted by {signal.Signals(sig).name}"
    assert list(out.parent.iterdir()) == []  # no temporary file, no output


def test_sigterm_with_two_workers(tmp_path: Path, big_input: Path, started: list[int]) -> None:
    out = tmp_path / "data.parquet"
    out.write_bytes(b"previous output")
    proc, kids = _start(big_input, out, 2, started)
    assert len(kids) == 2
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EXIT_WAIT)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "interrupted by SIGTERM" in err, err
    _assert_workers_gone(kids, 5.0)
    assert out.read_bytes() == b"previous output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.parquet"]


def test_sigterm_of_a_library_call_cleans_up_then_ends_the_process(
        tmp_path: Path, big_input: Path, started: list[int]) -> None:
    """``encode_jsonl`` in a program that does not handle SIGTERM: the temporary file is
    removed and the workers stopped, then the process ends by SIGTERM, as it would have."""
    out = tmp_path / "data.parquet"
    proc, kids = _start(big_input, out, 2, started, library=True)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EXIT_WAIT)
    assert proc.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err, err
    _assert_workers_gone(kids, 5.0)
    assert list(tmp_path.iterdir()) == []


#: Workers that never finish a chunk (a chunk far slower than the test's patience).
_STUCK = ("import time\nimport lvt.datasets.workers as w\n"
          "w.encode_chunk = lambda *a: time.sleep(600)\n")


def test_sigterm_does_not_wait_for_stuck_workers(tmp_path: Path, big_input: Path,
                                                 started: list[int]) -> None:
    """The parent kills its workers rather than wait for the chunks in flight."""
    out = tmp_path / "data.parquet"
    proc, kids = _start(big_input, out, 2, started, prelude=_STUCK)
    time.sleep(0.5)  # both workers inside their (endless) first chunk
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EXIT_WAIT)
    assert proc.returncode == 143, err
    assert time.monotonic() - t0 < 30
    _assert_workers_gone(kids, 5.0)
    assert list(tmp_path.iterdir()) == []


def test_sigkill_of_the_parent_ends_its_workers(tmp_path: Path, big_input: Path,
                                                started: list[int]) -> None:
    out = tmp_path / "data.parquet"
    proc, kids = _start(big_input, out, 2, started)
    proc.kill()
    proc.communicate(timeout=EXIT_WAIT)
    assert proc.returncode == -signal.SIGKILL
    _assert_workers_gone(kids, 5.0)
    assert not out.exists()  # its temporary file stays: the next run removes it


#: A parent whose forked child only runs the workers' watcher (no PR_SET_PDEATHSIG): the
#: child prints its pid and sleeps; the parent sleeps.
_WATCHED = """
import os, sys, time
from lvt.datasets import workers
pid = os.fork()
if pid == 0:
    workers.threading.Thread(target=workers._watch, args=(os.getppid(),), daemon=True).start()
    print(os.getpid(), flush=True)
    time.sleep(600)
    os._exit(0)
time.sleep(600)
"""


def test_the_watcher_ends_an_orphaned_worker(started: list[int]) -> None:
    """Where the kernel has no parent-death signal, the watcher thread alone ends a worker
    whose parent was killed, within a few of its polling intervals."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", _WATCHED], stdout=subprocess.PIPE,
                            text=True, env=env)
    started.append(proc.pid)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    started.append(child)
    assert _alive(child)
    time.sleep(0.3)
    assert _alive(child)  # the watcher leaves a worker with a live parent alone
    proc.kill()
    proc.wait(timeout=EXIT_WAIT)
    _assert_workers_gone([child], 5.0)
