"""``lvt.datasets``: Hugging Face ``datasets`` and Ray Data encoding, row by row equal to
``ChatEncoder.encode`` on the same conversations, the same for any number of processes."""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")

import lvt  # noqa: E402
import lvt.datasets as ld  # noqa: E402
from lvt.datasets import raydata  # noqa: E402
from lvt.datasets.files import read_dataset_metadata  # noqa: E402
from parity.corpus import conversations  # noqa: E402


def _args_as_json(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call arguments as JSON strings (an Arrow struct column would give every call the
    union of all argument names); lvt parses JSON-string arguments as it reads objects."""
    out = []
    for m in msgs:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.dumps(
                c["function"]["arguments"], ensure_ascii=False)}} for c in m["tool_calls"]]
        out.append(m)
    return out


@pytest.fixture(scope="module")
def cases() -> list[Any]:
    return conversations("qwen3")[::2]


@pytest.fixture(scope="module")
def ds(cases: list[Any]) -> Any:
    datasets.disable_progress_bars()
    return datasets.Dataset.from_list([
        {"id": c.name, "messages": _args_as_json(c.messages),
         "tools": json.dumps(c.tools) if c.tools else None,
         "add_generation_prompt": c.add_generation_prompt}
        for c in cases])


@pytest.fixture(scope="module")
def enc(qwen3_tok: Any) -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(qwen3_tok, "qwen3")


def _expected(enc: lvt.ChatEncoder, case: Any, gen: bool | None = None) -> lvt.Encoded:
    agp = case.add_generation_prompt if gen is None else gen
    return enc.encode(lvt.from_openai(case.messages, case.tools, agp))


def _assert_rows(table: Any, enc: lvt.ChatEncoder, cases: list[Any], lines: list[int]) -> None:
    assert table.column("line").to_pylist() == lines
    assert table.column("id").to_pylist() == [cases[i].name for i in lines]
    for n, i in enumerate(lines):
        e = _expected(enc, cases[i])
        assert table.column("input_ids")[n].as_py() == e.ids.tolist(), cases[i].name
        assert table.column("loss_mask")[n].as_py() == e.mask.tolist(), cases[i].name
        assert table.column("owner")[n].as_py() == e.owner.tolist(), cases[i].name
        assert table.column("num_tokens")[n].as_py() == len(e)
        assert table.column("num_loss_tokens")[n].as_py() == int(e.mask.sum())


def test_rows_equal_encoder_encode(ds: Any, enc: lvt.ChatEncoder, cases: list[Any]) -> None:
    out = ld.encode(ds, enc, batch_size=16)
    assert isinstance(out, datasets.Dataset) and len(out) == len(cases)
    table = ld.to_arrow(out)
    assert table.schema.field("input_ids").type == pa.list_(pa.int32())
    assert table.schema.field("loss_mask").type == pa.list_(pa.uint8())
    assert table.schema.field("owner").type == pa.list_(pa.int32())
    _assert_rows(table, enc, cases, list(range(len(cases))))
    meta = ld.read_metadata(out)
    assert meta["fingerprint"] == enc.fingerprint() and meta["format"] == "qwen3"
    assert meta["rows"] == str(len(cases)) and meta["complete"] == "1"
    want_tokens = sum(len(_expected(enc, c)) for c in cases)
    assert meta["tokens"] == str(want_tokens)
    assert ld.read_metadata(table) == meta  # the Arrow table carries it in its schema


def test_two_processes_give_the_same_table(ds: Any, enc: lvt.ChatEncoder) -> None:
    one = ld.to_arrow(ld.encode(ds, enc))
    two = ld.to_arrow(ld.encode(ds, enc, num_proc=2, batch_size=5, load_from_cache_file=False))
    assert one.equals(two, check_metadata=True)
    assert one.schema.metadata == two.schema.metadata
    again = ld.to_arrow(ld.encode(ds, enc, num_proc=2, batch_size=5, load_from_cache_file=False))
    assert again.equals(two, check_metadata=True)  # deterministic
    assert enc.fingerprint() not in ld._ENCODERS  # registered only for the call


def test_arrow_in_arrow_out_and_parquet_metadata(ds: Any, enc: lvt.ChatEncoder,
                                                 tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    table_in = ds.with_format("arrow")[:]
    out = ld.encode(table_in, enc, batch_size=32)
    assert isinstance(out, pa.Table)
    assert out.equals(ld.to_arrow(ld.encode(ds, enc)))
    assert out.equals(ld.encode(table_in, enc), check_metadata=True)  # same table, same bytes
    meta, via_ds = ld.read_metadata(out), ld.read_metadata(ld.encode(ds, enc))
    assert meta.pop("source_fingerprint") != via_ds.pop("source_fingerprint")
    assert meta == via_ds
    path = tmp_path / "enc.parquet"
    pq.write_table(out, path)
    meta = read_dataset_metadata(path)  # the reader of `lvt encode` files
    assert meta["fingerprint"] == enc.fingerprint()
    assert meta["columns"] == "input_ids:int32,loss_mask:uint8,owner:int32"


def test_generation_prompt_option_and_column(enc: lvt.ChatEncoder, cases: list[Any]) -> None:
    few = cases[:4]
    rows = [{"messages": _args_as_json(c.messages), "tools": c.tools and json.dumps(c.tools),
             "add_generation_prompt": i == 1} for i, c in enumerate(few)]
    d = datasets.Dataset.from_list(rows)
    t = ld.to_arrow(ld.encode(d, enc))
    assert t.column("id").to_pylist() == ["row0", "row1", "row2", "row3"]
    for n, c in enumerate(few):
        assert t.column("input_ids")[n].as_py() == _expected(enc, c, n == 1).ids.tolist()
    t = ld.to_arrow(ld.encode(d, enc, add_generation_prompt=True))
    for n, c in enumerate(few):
        assert t.column("input_ids")[n].as_py() == _expected(enc, c, True).ids.tolist()
    assert json.loads(ld.read_metadata(t)["options"])["add_generation_prompt"] is True


def test_bad_rows_are_named_or_skipped(enc: lvt.ChatEncoder, cases: list[Any]) -> None:
    good = [{"id": c.name, "messages": _args_as_json(c.messages)} for c in cases[:3]
            if not c.tools]
    rows = [*good[:1], {"id": "bad", "messages": [{"role": "wizard", "content": "x"}]},
            *good[1:]]
    d = datasets.Dataset.from_list(rows)
    with pytest.raises(ld.DatasetRowError, match=r"row 1 \(id 'bad'\).*message 0") as ei:
        ld.encode(d, enc)
    assert ei.value.row == 1 and ei.value.row_id == "bad"
    t = ld.to_arrow(ld.encode(d, enc, skip_bad=True))
    assert t.column("line").to_pylist() == [0, *range(2, len(rows))]
    assert ld.read_metadata(t)["rows"] == str(len(rows) - 1)
    tools = json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    mixed = datasets.Dataset.from_list([  # the first bad row is named, whatever its tools
        {"messages": [{"role": "user", "content": "a"}], "tools": tools},
        {"messages": [{"role": "wizard", "content": "b"}], "tools": None},
        {"messages": [{"role": "wizard", "content": "c"}], "tools": tools}])
    with pytest.raises(ld.DatasetRowError, match=r"row 1 \(id 'row1'\)"):
        ld.encode(mixed, enc)
    with pytest.raises(ld.DatasetError, match="no 'conversation' column"):
        ld.encode(d, enc, messages_column="conversation")
    with pytest.raises(ld.DatasetError, match="num_proc"):
        ld.encode(d, enc, num_proc=0)


def test_other_columns_are_carried_with_their_rows(enc: lvt.ChatEncoder,
                                                   cases: list[Any]) -> None:
    """An ``answer`` and reward metadata reach the output row of their conversation (with
    their type), also when a bad row before them is skipped."""
    good = [c for c in cases if not c.tools][:3]
    rows = [{"id": c.name, "messages": _args_as_json(c.messages), "answer": f"ans{k}",
             "meta": {"level": k, "tags": ["t"] * k}} for k, c in enumerate(good)]
    rows.insert(1, {"id": "bad", "messages": [{"role": "wizard", "content": "x"}],
                    "answer": "never", "meta": {"level": 9, "tags": []}})
    d = datasets.Dataset.from_list(rows)
    t = ld.to_arrow(ld.encode(d, enc, skip_bad=True, batch_size=2))
    assert t.column("id").to_pylist() == [c.name for c in good]
    assert t.column("answer").to_pylist() == ["ans0", "ans1", "ans2"]
    assert t.column("meta").to_pylist() == [{"level": k, "tags": ["t"] * k} for k in range(3)]
    assert t.schema.field("meta").type == d.data.schema.field("meta").type
    for n, c in enumerate(good):
        assert t.column("input_ids")[n].as_py() == _expected(enc, c, False).ids.tolist()
    only = ld.to_arrow(ld.encode(d, enc, skip_bad=True, keep_columns=["answer"]))
    assert only.column_names == [*t.column_names[:7], "answer"]
    assert ld.to_arrow(ld.encode(d, enc, skip_bad=True, keep_columns=[])).num_columns == 7
    with pytest.raises(ld.DatasetError, match="'owner' has the name of an output column"):
        ld.encode(d.add_column("owner", [0] * len(rows)), enc)
    with pytest.raises(ld.DatasetError, match="does not have"):
        ld.encode(d, enc, keep_columns=["reward"])


def test_worker_recipe_rebuilds_the_same_encoder(toy_tok: Any) -> None:
    toy = lvt.ChatEncoder.from_tokenizer(toy_tok, "qwen3", enable_thinking=False)
    recipe = ld._Recipe(toy)
    assert recipe.get() is toy  # this process uses it as it is
    blob = pickle.dumps(recipe)
    saved = dict(ld._ENCODERS)
    try:
        ld._ENCODERS[toy.fingerprint()] = toy  # a forked worker inherits the registered one
        assert pickle.loads(blob).get() is toy
        ld._ENCODERS.clear()  # a spawned worker: nothing inherited
        rebuilt = pickle.loads(blob).get()
        assert rebuilt is not toy and rebuilt.fingerprint() == toy.fingerprint()
        conv = lvt.from_openai([{"role": "user", "content": "the <|im_end|> text"}])
        assert rebuilt.encode(conv) == toy.encode(conv)
        ld._ENCODERS.clear()
        forged = pickle.loads(blob)
        forged.fingerprint = "0" * 64
        with pytest.raises(ld.DatasetError, match="another fingerprint"):
            forged.get()
    finally:
        ld._ENCODERS.clear()
        ld._ENCODERS.update(saved)


def test_ray_local_mode_encoder_per_worker(toy_tok: Any) -> None:
    pytest.importorskip("ray")
    import ray
    import ray.data

    convs = [[{"role": "user", "content": f"question {i}: is <|im_start|> text?"},
              {"role": "assistant", "content": f"answer {i}"}] for i in range(24)]
    rows = [{"id": f"c{i}", "messages": m} for i, m in enumerate(convs)]
    toy = lvt.ChatEncoder.from_tokenizer(toy_tok, "qwen3")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        out = ld.encode_ray(ray.data.from_items(rows), tokenizer=toy_tok, format="qwen3",
                            concurrency=2, batch_size=5)
        with pytest.raises(ld.DatasetError, match="not both"):
            ld.encode_ray(out, tokenizer=toy_tok, format="qwen3", encoder_factory=lambda: toy)
        by_name = ld.encode_ray(ray.data.from_items(rows[:3]), tokenizer="qwen3")  # as the CLI
        got = pa.concat_tables(ray.get(by_name.to_arrow_refs()))
        zoo_enc = lvt.ChatEncoder.from_tokenizer("qwen3")
        assert ld.read_metadata(got)["fingerprint"] == zoo_enc.fingerprint()
        assert got.column("input_ids")[0].as_py() == zoo_enc.encode(
            lvt.from_openai(convs[0])).ids.tolist()
        blocks = ray.get(out.to_arrow_refs())
        assert all(ld.read_metadata(b)["fingerprint"] == toy.fingerprint() for b in blocks)
        table = pa.concat_tables(blocks)
        assert table.column("id").to_pylist() == [r["id"] for r in rows]
        for n, m in enumerate(convs):
            e = toy.encode(lvt.from_openai(m))
            assert np.array_equal(table.column("input_ids")[n].values.to_numpy(), e.ids)
            assert table.column("loss_mask")[n].as_py() == e.mask.tolist()
            assert table.column("owner")[n].as_py() == e.owner.tolist()
    finally:
        ray.shutdown()


def test_ray_worker_class_refuses_bad_rows_and_other_encoders(toy_tok: Any) -> None:
    """What each Ray worker runs (``_RayEncode``), called here without Ray."""
    factory = raydata._Factory(toy_tok, "qwen3", {})
    toy = factory()
    cols = ld._Columns(["id", "messages"], "messages", "tools", "id", "add_generation_prompt")
    meta = ld.metadata(toy)
    worker = raydata._RayEncode(factory, toy.fingerprint(), cols, False, False, meta)
    batch = pa.Table.from_pylist([{"id": "ok", "messages": [{"role": "user", "content": "hi"}]},
                                  {"id": "bad", "messages": [{"role": "wizard", "content": "x"}]}])
    with pytest.raises(ld.DatasetRowError, match=r"id 'bad'.*message 0") as ei:
        worker(batch)
    assert ei.value.row is None
    pickle.loads(pickle.dumps(ei.value))  # crosses process boundaries intact
    skip = raydata._RayEncode(factory, toy.fingerprint(), cols, False, True, meta)(batch)
    assert skip.column("id").to_pylist() == ["ok"] and skip.column("line").to_pylist() == [-1]
    assert ld.read_metadata(skip)["fingerprint"] == toy.fingerprint()
    with pytest.raises(ld.DatasetError, match="another fingerprint"):
        raydata._RayEncode(raydata._Factory(toy_tok, "qwen3", {"enable_thinking": False}),
                      toy.fingerprint(), cols, False, False, meta)


def test_deepseek_rows_keep_argument_strings_as_written() -> None:
    """A dataset encoded for DeepSeek-R1 keeps each argument string as written (its template
    concatenates it), row for row equal to ``encode_openai``: a compact and a pretty-printed
    string give different ids, as they do in the template."""
    from lvt import zoo

    enc = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("deepseek-r1"), "deepseek-r1")

    def msgs(args: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "w", "arguments": args}}]},
                {"role": "tool", "content": "sunny"}]

    forms = ['{"city":"Paris"}', '{\n  "city": "Paris"\n}']
    d = datasets.Dataset.from_list([{"messages": msgs(a)} for a in forms])
    t = ld.to_arrow(ld.encode(d, enc))
    got = [t.column("input_ids")[n].as_py() for n in range(len(forms))]
    assert got == [enc.encode_openai(msgs(a)).ids.tolist() for a in forms]
    assert got[0] != got[1]
    assert enc.tokenizer.decode(got[0], skip_special_tokens=False).count('{"city":"Paris"}') == 1
