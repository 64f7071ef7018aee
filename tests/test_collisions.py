"""Collisions (:mod:`lvt.collisions`): different conversations that a format renders to the same
ids and loss mask are warned about, refused or ignored as asked, in ``encode_batch`` and across
a whole ``lvt encode`` file (chunks and workers included); equal inputs never are."""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lvt
from lvt.cli import EXIT_BAD_LINE, EXIT_OK, main
from lvt.collisions import Collision, CollisionTracker, CollisionWarning, first_difference
from lvt.datasets.files import encode_jsonl, read_dataset_metadata
from lvt.errors import ArgumentError, CollisionError
from lvt.model import Conversation, Message, Plain, Text, ToolCall


@pytest.fixture(scope="module")
def llama() -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer("llama3.1")


@pytest.fixture(scope="module")
def qwen() -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer("qwen3")


def _chat(user: str, answer: str = "Fine.") -> Conversation:
    return Conversation([Message.text("user", user), Message.text("assistant", answer)])


def test_trimmed_text_collides_on_llama(llama: lvt.ChatEncoder) -> None:
    """Llama's template writes ``content | trim``: "Hi " and "Hi" are one example."""
    a, b, c = _chat("Hi "), _chat("Hi"), _chat("Hello")
    with pytest.warns(CollisionWarning) as rec:
        out = llama.encode_batch([a, c, b])
    assert [str(w.message) for w in rec] == [
        "conversations 0 and 2 differ (message 0, block 0: Plain.payload.text 'Hi ' vs 'Hi') "
        "but render to the same ids and loss mask: the template does not write the difference"]
    assert rec[0].filename == __file__  # the warning points at the caller's line
    assert out[0] == out[2] and out[0] != out[1]  # the warning does not change the renders


def test_equal_inputs_and_distinct_renders_are_not_collisions(llama: lvt.ChatEncoder) -> None:
    """A GRPO group repeats its prompt: equal conversations never warn; nor do conversations
    whose renders differ."""
    group = [_chat("Solve 2+2.")] * 8 + [_chat("Solve 2+3."), _chat("Solve 2+2.", "4")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        llama.encode_batch(group)
        llama.encode_batch(group, on_collision="error")


def test_error_mode_names_both_inputs(llama: lvt.ChatEncoder) -> None:
    with pytest.raises(CollisionError) as ei:
        llama.encode_batch([_chat("x"), _chat("y"), _chat("y\n"), _chat("x\t")],
                           on_collision="error")
    e = ei.value
    assert (e.first, e.second) == (1, 2) and "conversations 1 and 2 differ" in str(e)
    assert isinstance(e, lvt.errors.LvtError) and isinstance(e, ValueError)
    back = pickle.loads(pickle.dumps(e))  # crosses process boundaries intact
    assert (back.first, back.second, str(back)) == (1, 2, str(e))


def test_ignore_does_not_look(llama: lvt.ChatEncoder) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = llama.encode_batch([_chat("Hi "), _chat("Hi")], on_collision="ignore")
    assert out[0] == out[1]


@pytest.mark.parametrize("bad", ["raise", "", None, 1, "WARN"])
def test_on_collision_is_checked(llama: lvt.ChatEncoder, bad: object) -> None:
    with pytest.raises(ArgumentError, match="on_collision"):
        llama.encode_batch([_chat("a")], on_collision=bad)  # type: ignore[arg-type]


def test_call_ids_the_template_never_writes_collide(qwen: lvt.ChatEncoder) -> None:
    """Qwen's template writes no ``tool_calls[].id``: two calls that differ only by it are one
    example, and the difference named is the call."""
    def conv(call_id: str) -> Conversation:
        return Conversation([
            Message.text("user", "Weather?"),
            Message("assistant", [ToolCall("weather", '{"city": "Oslo"}', call_id)]),
            Message.text("tool", "7 C"),
        ], tools=[{"type": "function", "function": {"name": "weather", "parameters": {}}}])

    with pytest.warns(CollisionWarning, match=r"conversations 0 and 1 differ \(message 1, "
                      r"block 0: ToolCall.id 'call_a' vs 'call_b'\)"):
        qwen.encode_batch([conv("call_a"), conv("call_b")])


def test_first_difference_in_words() -> None:
    a = _chat("q")
    assert first_difference(a, Conversation(a.messages, add_generation_prompt=True)) == (
        "add_generation_prompt")
    assert first_difference(a, Conversation(a.messages, tools=[])) == "tools"
    assert first_difference(a, Conversation(a.messages[:1])) == "2 vs 1 messages"
    swapped = Conversation([Message.text("system", "q"), a.messages[1]])
    assert first_difference(a, swapped) == "message 0: role 'user' vs 'system'"
    extra = Conversation([a.messages[0], Message("assistant", [Plain(Text("Fine.")),
                                                               Plain(Text("!"))])])
    assert first_difference(a, extra) == "message 1: 1 vs 2 blocks"
    long = first_difference(_chat("x" * 200), _chat("y" * 200))
    assert long == f"message 0, block 0: Plain.payload.text '{'x' * 58}… vs '{'y' * 58}…"
    toks = Conversation([a.messages[0], Message("assistant", [Plain(lvt.model.Tokens([1, 2]))])])
    assert first_difference(a, toks) == (
        "message 1, block 0: Plain.payload Text(text='Fine.') vs Tokens(ids=(1, 2))")


def test_tracker_keeps_digests_only() -> None:
    t = CollisionTracker()
    assert t.add(b"r1", b"i1", 1) is None
    assert t.add(b"r1", b"i1", 2) is None  # the same input again
    assert t.add(b"r2", b"i2", 3) is None
    assert t.add(b"r1", b"i3", 4) == (1, 4)
    assert t.add(b"r1", b"i4", 5, keep=1) == (1, 5)
    assert t.add(b"r1", b"i3", 6) is None  # a repeat of an input that already collided
    assert t.count == 2 and t.examples == [(1, 4)]
    assert Collision(1, 4, "x").describe("lines") == (
        "lines 1 and 4 differ (x) but render to the same ids and loss mask: the template does "
        "not write the difference")


def _lines(tmp_path: Path) -> Path:
    rows = [{"messages": [{"role": "user", "content": u},
                          {"role": "assistant", "content": "Fine."}]}
            for u in ["Hi", "Question?", "Hi", "Other", "Hi  ", "Question?\n"]]
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_finds_collisions_across_chunks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: int
) -> None:
    """Lines 1 and 3 are equal (no collision); 5 trims to 1 and 6 to 2, in other chunks."""
    src, out = _lines(tmp_path), tmp_path / "out.parquet"
    args = ["encode", str(src), "-o", str(out), "-t", "llama3.1", "--batch-size", "2",
            "--no-progress", "--workers", str(workers)]
    assert main(args) == EXIT_OK
    io = capsys.readouterr()
    assert io.err.splitlines() == [
        f"lvt: collision: {src}:1 and line 5 differ but render to the same ids and loss mask "
        "(the template does not write the difference)",
        f"lvt: collision: {src}:2 and line 6 differ but render to the same ids and loss mask "
        "(the template does not write the difference)"]
    assert "6 rows" in io.out and "2 collisions" in io.out
    md = read_dataset_metadata(out)
    assert md["collisions"] == "2" and json.loads(md["collision_lines"]) == [[1, 5], [2, 6]]
    assert pq.read_table(out).num_rows == 6  # both rows of a collision are kept
    assert main([*args, "--json"]) == EXIT_OK  # up to date: the stats come from the metadata
    js = json.loads(capsys.readouterr().out)
    assert js["up_to_date"] and js["collisions"] == 2 and js["collision_lines"] == [[1, 5], [2, 6]]


def test_encode_error_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _lines(tmp_path), tmp_path / "out.parquet"
    args = ["encode", str(src), "-o", str(out), "-t", "llama3.1", "--batch-size", "2",
            "--no-progress"]
    assert main([*args, "--on-collision", "error"]) == EXIT_BAD_LINE
    err = capsys.readouterr().err
    assert f"input lines 1 and 5 of {src} differ" in err and "nothing written" in err
    assert not out.exists() and list(tmp_path.glob(".*.lvt-tmp")) == []
    assert main([*args, "--on-collision", "ignore"]) == EXIT_OK
    assert capsys.readouterr().err == ""
    assert read_dataset_metadata(out)["collisions"] == "0"


def test_encode_jsonl_warns_without_a_callback(tmp_path: Path, llama: lvt.ChatEncoder) -> None:
    src = _lines(tmp_path)
    with pytest.warns(CollisionWarning) as rec:
        st = encode_jsonl(src, tmp_path / "o.parquet", llama, progress=False)
    assert [str(w.message).split(" of ")[0] for w in rec] == ["input lines 1 and 5",
                                                             "input lines 2 and 6"]
    assert {w.filename for w in rec} == {__file__}
    assert st.collisions == 2 and st.collision_lines == [(1, 5), (2, 6)]
    with pytest.raises(ArgumentError, match="on_collision"):
        encode_jsonl(src, tmp_path / "o2.parquet", llama, on_collision="loud")
