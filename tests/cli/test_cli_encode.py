"""``lvt encode``: Parquet output, metadata fingerprint, template options, bad lines (fatal
and skipped), atomic writes under a simulated crash, restart and up-to-date detection (the
Llama 3.1 format with the zoo's Llama 3.1 tokenizer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cli_helpers import write_jsonl

from lvt.cli import EXIT_BAD_LINE, EXIT_OK, EXIT_USAGE, main
from lvt.datasets.files import BadLineError, encode_jsonl, read_dataset_metadata

GOOD = [
    {
        "id": f"c{i}",
        "messages": [
            {"role": "user", "content": f"Question {i}?"},
            {"role": "assistant", "content": f"Answer {i}."},
        ],
    }
    for i in range(7)
]
TOOLS = {
    "id": "tool",
    "messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Oslo"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "7 C"},
        {"role": "assistant", "content": "It is 7 C."},
    ],
    "tools": [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    ],
}


def _temps(d: Path) -> list[Path]:
    return sorted(d.glob(".*.lvt-tmp"))


LLAMA = ["-t", "llama3.1"]


def test_encode_roundtrip(
    tmp_path: Path, llama_encoder: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_jsonl(
        tmp_path / "in.jsonl", [*GOOD, TOOLS, [{"role": "user", "content": "bare list"}]]
    )
    out = tmp_path / "out.parquet"
    assert (
        main(["encode", str(src), "-o", str(out), *LLAMA, "--batch-size", "3", "--no-progress"])
        == EXIT_OK
    )
    assert "9 rows" in capsys.readouterr().out
    t = pq.read_table(out)
    assert t.column_names == [
        "id",
        "line",
        "input_ids",
        "loss_mask",
        "owner",
        "num_tokens",
        "num_loss_tokens",
    ]
    assert str(t.schema.field("input_ids").type) == "list<element: int32>"
    assert str(t.schema.field("loss_mask").type) == "list<element: uint8>"
    rows = t.to_pylist()
    assert [r["id"] for r in rows] == [*(f"c{i}" for i in range(7)), "tool", "line9"]
    assert [r["line"] for r in rows] == list(range(1, 10))
    for r, conv in zip(rows, [*GOOD, TOOLS], strict=False):
        enc = llama_encoder.encode_openai(conv["messages"], tools=conv.get("tools"))
        assert r["input_ids"] == enc.ids.tolist()
        assert r["loss_mask"] == enc.mask.tolist()
        assert r["owner"] == enc.owner.tolist()
        assert r["num_tokens"] == len(enc.ids) and r["num_loss_tokens"] == int(enc.mask.sum())
    md = read_dataset_metadata(out)
    assert md["fingerprint"] == llama_encoder.fingerprint()
    assert md["format"] == "llama3.1" and md["complete"] == "1" and md["rows"] == "9"
    assert json.loads(md["format_options"]) == {"date_string": "26 Jul 2024",
                                                "tools_in_user_message": True}
    assert md["skipped"] == "0" and json.loads(md["options"]) == {
        "add_generation_prompt": False,
        "skip_bad": False,
        "on_collision": "warn",
    }
    assert _temps(tmp_path) == []
    # Up to date: a second run is a no-op; --force rewrites.
    mtime = out.stat().st_mtime_ns
    assert main(["encode", str(src), "-o", str(out), *LLAMA, "--no-progress"]) == EXIT_OK
    assert "up to date" in capsys.readouterr().out and out.stat().st_mtime_ns == mtime
    assert (
        main(["encode", str(src), "-o", str(out), *LLAMA, "--no-progress", "--force", "--json"])
        == EXIT_OK
    )
    js = json.loads(capsys.readouterr().out)
    assert js["rows"] == 9 and js["up_to_date"] is False


def test_generation_prompt(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"messages": [{"role": "user", "content": "Hi"}]}])
    out = tmp_path / "p.parquet"
    st = encode_jsonl(src, out, llama_encoder, add_generation_prompt=True, progress=False)
    assert st.rows == 1
    ids = pq.read_table(out).column("input_ids").to_pylist()[0]
    assert llama_encoder.tokenizer.decode(ids[-4:], skip_special_tokens=False) == (
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


BAD = [
    GOOD[0],
    '{"messages": [{"role": "user", "content": "unterminated"',
    GOOD[1],
    {"messages": [{"role": "wizard", "content": "x"}]},
    "",
    {"messages": []},
    {"messages": [{"role": "user", "content": "fine"}, {"role": "assistant", "content": 7}]},
    GOOD[2],
]


def test_bad_line_fatal_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "bad.jsonl", BAD)
    out = tmp_path / "out.parquet"
    assert main(["encode", str(src), "-o", str(out), *LLAMA, "--no-progress"]) == EXIT_BAD_LINE
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err and "invalid JSON" in err and "--skip-bad" in err
    assert not out.exists() and _temps(tmp_path) == []
    # An existing output is left untouched by a failed run.
    out.write_bytes(b"previous output")
    assert main(["encode", str(src), "-o", str(out), *LLAMA, "--no-progress"]) == EXIT_BAD_LINE
    assert out.read_bytes() == b"previous output" and _temps(tmp_path) == []
    capsys.readouterr()


def test_bad_line_typed_error(tmp_path: Path, llama_encoder: Any) -> None:
    src = write_jsonl(
        tmp_path / "bad.jsonl", [GOOD[0], {"messages": [{"role": "wizard", "content": "x"}]}]
    )
    with pytest.raises(BadLineError) as ei:
        encode_jsonl(src, tmp_path / "o.parquet", llama_encoder, progress=False)
    assert ei.value.line == 2 and "wizard" in ei.value.reason
    assert not (tmp_path / "o.parquet").exists()


def test_skip_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "bad.jsonl", BAD)
    out = tmp_path / "out.parquet"
    rc = main(
        [
            "encode",
            str(src),
            "-o",
            str(out),
            *LLAMA,
            "--skip-bad",
            "--no-progress",
            "--json",
            "--batch-size",
            "2",
        ]
    )
    cap = capsys.readouterr()
    assert rc == EXIT_OK
    js = json.loads(cap.out)
    assert js["rows"] == 3 and js["skipped"] == 4
    assert [b["line"] for b in js["bad_lines"]] == [2, 4, 6, 7]
    for n in (2, 4, 6, 7):
        assert f"bad.jsonl:{n}:" in cap.err
    md = read_dataset_metadata(out)
    assert md["skipped"] == "4" and [b[0] for b in json.loads(md["bad_lines"])] == [2, 4, 6, 7]
    assert [r["line"] for r in pq.read_table(out).to_pylist()] == [1, 3, 8]


CRASH = r"""
import os, sys
import pyarrow.parquet as pq
orig = pq.ParquetWriter.write_table
calls = []
def dying(self, *a, **k):
    orig(self, *a, **k)
    calls.append(1)
    if len(calls) == 2:
        os._exit(137)   # like SIGKILL: no cleanup, no finally blocks
pq.ParquetWriter.write_table = dying
from lvt.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_crash_mid_write_is_atomic_and_restartable(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD)
    out = tmp_path / "out.parquet"
    args = ["encode", str(src), "-o", str(out), *LLAMA, "--batch-size", "2", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-c", CRASH, *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 137, r.stderr
    # The crash left a partial temp file but nothing under the output name.
    assert not out.exists()
    stale = _temps(tmp_path)
    assert len(stale) == 1 and stale[0].stat().st_size > 0
    # Restart: the stale temp file of the dead process is removed and the output is complete.
    assert main(args) == EXIT_OK
    assert _temps(tmp_path) == []
    assert pq.read_table(out).num_rows == 7 and read_dataset_metadata(out)["complete"] == "1"


def test_options_and_line_options(
    tmp_path: Path, llama_encoder: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--option`` builds the encoder with that template option (another fingerprint and
    render); a line whose own ``options`` disagree with the run's is a bad line."""
    src = write_jsonl(tmp_path / "in.jsonl", [
        GOOD[0], {**GOOD[1], "options": {"date_string": "01 Dec 2026"}},
        {**GOOD[2], "options": {"enable_thinking": False}}])
    out = tmp_path / "o.parquet"
    rc = main(["encode", str(src), "-o", str(out), *LLAMA, "--option",
               "date_string=01 Dec 2026", "--skip-bad", "--no-progress", "--json"])
    cap = capsys.readouterr()
    assert rc == EXIT_OK
    js = json.loads(cap.out)
    assert js["rows"] == 2 and [b["line"] for b in js["bad_lines"]] == [3]
    assert "enable_thinking" in js["bad_lines"][0]["reason"]
    md = read_dataset_metadata(out)
    assert md["fingerprint"] != llama_encoder.fingerprint()
    assert json.loads(md["format_options"])["date_string"] == "01 Dec 2026"
    ids = pq.read_table(out).column("input_ids").to_pylist()[0]
    text = llama_encoder.tokenizer.decode(ids, skip_special_tokens=False)
    assert "Today Date: 01 Dec 2026" in text
    # the default date on the same line differs only there
    assert "26 Jul 2024" in llama_encoder.tokenizer.decode(
        llama_encoder.encode_openai(GOOD[0]["messages"]).ids.tolist(), skip_special_tokens=False)
    assert main(["encode", str(src), "-o", str(out), *LLAMA, "--option", "nope=1"]) == EXIT_USAGE
    assert "has no option 'nope'" in capsys.readouterr().err


def test_pool_encoders_are_from_tokenizer_encoders(setups: Any) -> None:
    """The encoders ``lvt check`` / ``lvt encode`` share a codec between option sets; each is
    the encoder ``ChatEncoder.from_tokenizer`` builds (same fingerprint, same render)."""
    from lvt.encoder import ChatEncoder

    st = setups("llama3.1")
    pooled = st.checker.encoder({"date_string": "01 Dec 2026"})
    assert pooled.codec is st.checker.encoder().codec  # shared
    fresh = ChatEncoder.from_tokenizer(st.tokenizer, format="llama3.1", date_string="01 Dec 2026")
    assert pooled.fingerprint() == fresh.fingerprint() != st.checker.encoder().fingerprint()
    msgs = TOOLS["messages"]
    assert pooled.encode_openai(msgs, TOOLS["tools"]) == fresh.encode_openai(msgs, TOOLS["tools"])
