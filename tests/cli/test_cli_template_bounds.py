"""``lvt check --template-timeout / --template-max-output``: a user-given template that loops
or writes without end gives the conversation the status ``template_limit`` within seconds
(exit 0, or 1 under ``--strict``), out-of-range limits are usage errors (exit 2), and the
known sandbox escapes stay refused (``template_error``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assistant, run_json, user, write_jsonl

from lvt.cli import EXIT_DIVERGED, EXIT_OK, EXIT_USAGE, main

LOOP = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}x"
HUGE = ("{% for m in messages %}{% for a in range(100000) %}{% for b in range(100000) %}"
        "{{ m.content }}{% endfor %}{% endfor %}{% endfor %}")
CONVS = [{"id": "one", "messages": [user("Hi there"), assistant("Hello!")]},
         {"id": "two", "messages": [user("2+2?")], "add_generation_prompt": True}]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    out = {"convs": str(write_jsonl(tmp_path / "c.jsonl", CONVS))}
    for name, text in (("loop", LOOP), ("huge", HUGE)):
        (tmp_path / f"{name}.jinja").write_text(text, encoding="utf-8")
        out[name] = str(tmp_path / f"{name}.jinja")
    return out


def _check(capsys: pytest.CaptureFixture[str], files: dict[str, str], template: str,
           *extra: str) -> tuple[int, Any, float]:
    t0 = time.monotonic()
    rc, rep = run_json(capsys, ["check", files["convs"], "-f", "qwen2.5", "--template",
                                template, *extra])
    return rc, rep, time.monotonic() - t0


def test_a_looping_template_hits_the_time_limit(capsys: pytest.CaptureFixture[str],
                                                files: dict[str, str]) -> None:
    rc, rep, took = _check(capsys, files, files["loop"], "--template-timeout", "0.5")
    assert rc == EXIT_OK
    assert took < 20  # two conversations at 0.5 s each, plus loading
    assert rep["summary"]["template_limit"] == 2 and rep["summary"]["identical"] == 0
    for r in rep["results"]:
        assert r["status"] == "template_limit" and r["allowed"] is False
        assert r["error"].startswith("TemplateLimitError: ") and "0.5 s" in r["error"]
        assert r["lvt_tokens"] > 0 and r["template_tokens"] is None
    rc, _, _ = _check(capsys, files, files["loop"], "--template-timeout", "0.3", "--strict")
    assert rc == EXIT_DIVERGED


def test_a_huge_output_template_hits_the_output_limit(capsys: pytest.CaptureFixture[str],
                                                      files: dict[str, str]) -> None:
    rc, rep, took = _check(capsys, files, files["huge"], "--template-max-output", "5000",
                           "--template-timeout", "60")
    assert rc == EXIT_OK and took < 20
    assert [r["status"] for r in rep["results"]] == ["template_limit"] * 2
    assert all("5000" in r["error"] and "output" in r["error"] for r in rep["results"])
    assert main(["check", files["convs"], "-f", "qwen2.5", "--template", files["huge"],
                 "--template-max-output", "5000", "--strict"]) == EXIT_DIVERGED
    table = capsys.readouterr().out
    assert "template_limit" in table and "2 stopped by a template limit" in table


def test_the_default_limits_keep_the_official_template_identical(
        capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    rc, rep = run_json(capsys, ["check", files["convs"], "-f", "qwen2.5", "--strict"])
    assert rc == EXIT_OK and rep["summary"]["identical"] == 2
    assert rep["summary"]["template_limit"] == 0


@pytest.mark.parametrize(("flag", "value"), [
    ("--template-timeout", "0"), ("--template-timeout", "-1"), ("--template-timeout", "nan"),
    ("--template-timeout", "inf"), ("--template-timeout", "soon"),
    ("--template-max-output", "0"), ("--template-max-output", "1.5"),
])
def test_limits_out_of_range_are_usage_errors(capsys: pytest.CaptureFixture[str],
                                              flag: str, value: str) -> None:
    assert main(["check", "-f", "qwen2.5", flag, value]) == EXIT_USAGE
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("escape", [
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{% include '/etc/passwd' %}",
])
def test_the_known_sandbox_escapes_stay_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                files: dict[str, str], escape: str) -> None:
    p = tmp_path / "escape.jinja"
    p.write_text(escape, encoding="utf-8")
    rc, rep, _ = _check(capsys, files, str(p))
    assert rc == EXIT_OK
    for r in rep["results"]:
        assert r["status"] == "differs" and r["cause"] == "template_error"
        detail = r["divergence"]["detail"]
        kind = detail.split(":")[0]
        assert kind in ("SecurityError", "UndefinedError") or (
            kind == "TypeError" and "no loader" in detail), detail
        assert "uid=" not in detail and "root:" not in detail
