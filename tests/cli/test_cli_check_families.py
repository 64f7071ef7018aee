"""``lvt check`` with no ``--tokenizer`` or ``--template`` for the part-2 families: each
format's real zoo tokenizer and official template, on the bundled samples (tools, calls,
results, control-token text). Every difference is an allowed one; what lvt refuses is either
refused by the template too or a conversation the format cannot express (named)."""

from __future__ import annotations

from typing import Any

import pytest
from cli_helpers import run_json

from lvt.cli import EXIT_OK
from lvt.templates import serving_messages

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
