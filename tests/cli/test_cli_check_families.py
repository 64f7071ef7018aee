"""``lvt check`` with no ``--tokenizer`` or ``--template`` for the part-2 families: each
format's real zoo tokenizer and official template, on the bundled samples (tools, calls,
results, control-token text). Every difference is an allowed one; what lvt refuses is either
refused by the template too or a conversation the format cannot express (named)."""

from __future__ import annotations

from typing import Any

import pytest
from cli_helpers import run_json

from lvt.cli import EXIT_DIVERGED, EXIT_OK
from lvt.compare.templates import serving_messages

#: format -> (identical at least, the ids lvt alone refuses with the reason it gives)
EXPECTED: dict[str, tuple[int, dict[str, str]]] = {
    # the template writes no tools: 9 tool conversations are refused by both
    "gemma3": (12, {}),
    # vLLM's view of the messages (arguments as JSON strings, "" content on call messages)
    "deepseek-r1": (20, {}),
    # the template renders only tool_calls[0]: lvt refuses rather than drop the others
    "gpt-oss": (19, {"tool-parallel-calls": "one tool call per message"}),
}


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_check_defaults_to_the_real_tokenizer_and_template(
        fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, rep = run_json(capsys, ["check", "-f", fmt])
    assert rc == EXIT_OK
    assert rep["format"] == fmt
    least, lvt_only = EXPECTED[fmt]
    res = rep["results"]
    assert len(res) == 21 and rep["summary"]["identical"] >= least
    for r in res:
        if r["status"] == "differs":
            assert r["allowed"] and set(r["causes"]) <= {"control_token_text"}, r
        elif r["status"] == "lvt_error":
            assert r["id"] in lvt_only and lvt_only[r["id"]] in r["error"], r
        elif r["status"] == "refused":
            assert "the template raised too" in r["error"], r
    assert {r["id"] for r in res if r["status"] == "lvt_error"} == set(lvt_only)


def test_serving_messages_adapts_deepseek_calls_without_touching_the_input() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "w", "arguments": {"city": "Zürich"}}}]},
    ]
    out = serving_messages("deepseek", msgs)
    assert out[1]["content"] == ""
    assert out[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Zürich"}'
    assert msgs[1]["content"] is None  # the caller's messages are unchanged
    assert msgs[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Zürich"}
    assert serving_messages("qwen", msgs) == msgs


@pytest.mark.parametrize("fmt", ["gpt-oss", "deepseek-r1"])
def test_prefix_audit_judges_the_part_two_extension_properties(
        fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled samples break lvt's prefix relation exactly where the format's stated
    extension property allows it (no violation; gpt-oss's --strict fails only on the
    parallel-call sample lvt refuses, see EXPECTED), and there are breaks."""
    rc, rep = run_json(capsys, ["check", "-f", fmt, "--prefix-audit", "--strict"])
    refused = {r["id"] for r in rep["results"] if r["status"] == "lvt_error"}
    assert refused == set(EXPECTED[fmt][1])
    assert rc == (EXIT_OK if not refused else EXIT_DIVERGED)
    assert rep["summary"]["lvt_prefix_violations"] == 0
    lvt_breaks = [b for r in rep["results"] for b in r["prefix_breaks"] if b["renderer"] == "lvt"]
    assert lvt_breaks and all(b["expected"] for b in lvt_breaks)


def _m(role: str, **kw: Any) -> dict[str, Any]:
    return {"role": role, "content": kw.pop("content", "x"), **kw}


CALL = [{"type": "function", "function": {"name": "f", "arguments": {}}}]


def test_turn_break_rules_of_the_part_two_formats() -> None:
    from lvt import FORMATS
    from lvt.compare.audit import turn_break_expected

    gpt, ds = FORMATS["gpt-oss"].extension, FORMATS["deepseek-r1"].extension
    mis, mis_st = FORMATS["mistral"].extension, FORMATS["mistral-stable"].extension
    u, a, tool, sys_ = _m("user"), _m("assistant"), _m("tool"), _m("system")
    call = _m("assistant", content=None, tool_calls=CALL)
    # gpt-oss: after an answer (its <|return|> becomes <|end|>); the exact format also at a
    # final answer after calls (it drops their analysis), the stable one not
    gpt_st = FORMATS["gpt-oss-stable"].extension
    assert turn_break_expected(gpt, [u, a, u], 2)
    assert not turn_break_expected(gpt, [u, a, u, a], 3)
    assert turn_break_expected(gpt, [u, call, tool, a], 3)
    assert not turn_break_expected(gpt, [u, call, tool, a, u, a], 5)  # no call since the answer
    assert not turn_break_expected(gpt, [u, call, tool, call], 3)
    assert turn_break_expected(gpt_st, [u, a, u], 2)
    assert not turn_break_expected(gpt_st, [u, call, tool, a], 3)
    # DeepSeek-R1: an appended system message; after tool results unless an answer follows;
    # a later call right after a user message; not an ordinary user or answer append
    assert turn_break_expected(ds, [u, a, sys_], 2)
    assert turn_break_expected(ds, [u, call, tool, tool], 3)
    assert turn_break_expected(ds, [u, call, tool, call], 3)
    assert not turn_break_expected(ds, [u, call, tool, a], 3)
    assert turn_break_expected(ds, [u, call, tool, a, u, call], 5)
    assert not turn_break_expected(ds, [u, call], 1)  # the first call message
    assert not turn_break_expected(ds, [u, a, u], 2)
    # Mistral: v7/v11 exact move the tool list to the last user message; v13 and stable do not
    assert turn_break_expected(mis, [u, a, u], 2, {"version": "v7"})
    assert turn_break_expected(mis, [u, a, u], 2, {"version": "v11"})
    assert not turn_break_expected(mis, [u, a, u], 2, {"version": "v13"})
    assert not turn_break_expected(mis, [u, a], 1, {"version": "v7"})
    assert not turn_break_expected(mis_st, [u, a, u], 2, {"version": "v7"})
