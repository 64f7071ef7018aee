"""TRL's tool-calling GRPO loop on an lvt tokenizer with the *exact* Qwen3 format: TRL keeps lvt's
render (it does not swap in its own Jinja template), lvt reads the completions
(``parse_response``), the tool runs, and the token sequence TRL trains on is what the official
Qwen3 template renders for that conversation (compared through ``transformers``).

The tiny random model cannot call tools, so its ``generate`` is scripted: a canonical tool call
first, then an answer once the prompt holds a tool response.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from datasets import Dataset
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig

import lvt.hf
from lvt import zoo
from lvt_trainer import RLVRLossConfig
from lvt_trainer.integrations.trl import LvtGRPOTrainer

CALL = ('<think>\nNeed data.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Oslo"}}\n</tool_call><|im_end|>')
ANSWER = "<think>\nGot it.\n</think>\n\nIt is 3 C.<|im_end|>"
RAN: list[str] = []


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: the city's name
    """
    RAN.append(city)
    return "3 C"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    inner = AutoTokenizer.from_pretrained(zoo.tokenizer_dir("qwen3"))  # the official template
    inner.pad_token, inner.eos_token = "<|endoftext|>", "<|im_end|>"
    tok = lvt.hf.wrap(inner, format="qwen3")
    root = tmp_path_factory.mktemp("trl-tools")
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id)).save_pretrained(root / "model")
    seen: list[Any] = []

    def reward(completions: list[Any], **_: Any) -> list[float]:
        seen.extend(completions)
        return [float(i % 2) for i in range(len(completions))]

    trainer = LvtGRPOTrainer(
        str(root / "model"), reward_funcs=reward, processing_class=tok, tools=[get_weather],
        train_dataset=Dataset.from_list([{"prompt": [{"role": "user",
                                                      "content": "Weather in Oslo?"}]}] * 4),
        args=GRPOConfig(output_dir=str(root / "out"), beta=0.04, per_device_train_batch_size=4,
                        num_generations=4, max_completion_length=80, max_steps=1,
                        use_cpu=True, report_to="none", save_strategy="no", seed=0),
        lvt_config=RLVRLossConfig(kl_mode="k3"))
    ids = {s: inner(s, add_special_tokens=False)["input_ids"] for s in (CALL, ANSWER)}
    response = inner.convert_tokens_to_ids("<tool_response>")

    def generate(input_ids: torch.Tensor, **_: Any) -> torch.Tensor:
        rows = [ids[ANSWER] if response in r.tolist() else ids[CALL] for r in input_ids]
        n = max(map(len, rows))
        tail = [r + [tok.pad_token_id] * (n - len(r)) for r in rows]
        return torch.cat([input_ids, torch.tensor(tail, dtype=input_ids.dtype)], 1)

    trainer.model.generate = generate
    records: list[dict[str, Any]] = []
    compute_loss = trainer.compute_loss

    def hook(model: Any, inputs: dict[str, Any], *a: Any, **k: Any) -> Any:
        records.append({k: v.clone() if torch.is_tensor(v) else v for k, v in inputs.items()})
        return compute_loss(model, inputs, *a, **k)

    trainer.compute_loss = hook
    trainer.train()
    return {"trainer": trainer, "inner": inner, "records": records, "seen": seen,
            "tok": tok}


def test_trl_keeps_lvts_exact_render(run: dict[str, Any]) -> None:
    t = run["trainer"]
    assert t.chat_template is None  # no Jinja template swapped in
    assert t.processing_class is run["tok"] and t.processing_class.lvt_format == "qwen3"
    assert t._lvt_loop_tokenizer.lvt_format == "qwen3-stable"  # the tool suffix only


def test_lvt_reads_the_calls_and_the_tool_runs(run: dict[str, Any]) -> None:
    assert RAN and set(RAN) == {"Oslo"}
    first = run["seen"][0]
    assert first[0]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                     "arguments": {"city": "Oslo"}}
    assert first[0]["reasoning_content"] == "Need data."
    assert first[-1]["content"] == "It is 3 C."


def test_trained_tokens_are_the_official_templates_render(run: dict[str, Any]) -> None:
    inner, rec = run["inner"], run["records"][0]
    conv = [{"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "reasoning_content": "Need data.", "content": "",
             "tool_calls": [{"type": "function", "function": {
                 "name": "get_weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "tool", "content": "3 C"},
            {"role": "assistant", "reasoning_content": "Got it.", "content": "It is 3 C."}]
    official = inner.apply_chat_template(conv, tools=[get_weather], tokenize=True,
                                         return_dict=False)
    prompt = rec["prompt_ids"][0][rec["prompt_mask"][0].bool()].tolist()
    completion = rec["completion_ids"][0][rec["completion_mask"][0].bool()].tolist()
    assert prompt + completion == official[:len(prompt) + len(completion)]
    assert official[len(prompt) + len(completion):] == inner("\n")["input_ids"]
    # the tool response and the next prompt are not learned; both sampled turns are
    learned = [t for t, m in zip(rec["completion_ids"][0].tolist(),
                                 (rec["completion_mask"][0] * rec["tool_mask"][0]).tolist(),
                                 strict=True) if m]
    call, answer = (inner(s, add_special_tokens=False)["input_ids"] for s in (CALL, ANSWER))
    assert learned == call + answer
