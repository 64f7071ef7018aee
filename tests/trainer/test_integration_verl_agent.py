"""verl's agent loop on lvt (``lvt_trainer.integrations.verl_agent``): a two-turn tool-use rollout
on a scripted server manager with the real Qwen3 tokenizer, checked against the official Qwen3
template through ``transformers``; the row's mask and log-probabilities against what the engine
sampled; then two optimizer steps of lvt's loss on that row with a tiny model.

The tiny model cannot call tools, so the server manager is scripted (a canonical call, then an
answer once the prompt holds a tool response), as in TRL's tool test.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.tools.function_tool import FunctionTool
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.workers.rollout.replica import TokenOutput

from lvt import zoo
from lvt.encoder import Encoded
from lvt.sampling import RolloutError
from lvt_trainer import RLVRLossConfig, rlvr_loss
from lvt_trainer.integrations.verl_agent import AGENT_NAME, LvtAgentLoop, verl_rows

CALL = ('<think>\nNeed data.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Oslo"}}\n</tool_call><|im_end|>')
ANSWER = "<think>\nGot it.\n</think>\n\nIt is 3 C.<|im_end|>"
BAD_CALL = ('<tool_call>\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call>'
            '<|im_end|>')
SCHEMA = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "the city's name"}}, "required": ["city"]}}}
USER = [{"role": "user", "content": "Weather in Oslo?"}]


class Server:
    """verl's server manager, scripted: ``first`` until the prompt holds a tool response, then
    the answer; log-probabilities distinct per turn and position."""

    def __init__(self, tok: Any, first: str) -> None:
        self.ids = {s: tok(s, add_special_tokens=False)["input_ids"] for s in (first, ANSWER)}
        self.first = first
        self.response = tok.convert_tokens_to_ids("<tool_response>")
        self.calls: list[dict[str, Any]] = []

    async def generate(self, *, request_id: str, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **_: Any) -> TokenOutput:
        turn = len(self.calls)
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids),
                           "sampling_params": dict(sampling_params)})
        ids = self.ids[ANSWER if self.response in prompt_ids else self.first]
        lps = [-(turn + 1) - k / 100 for k in range(len(ids))]
        return TokenOutput(token_ids=ids, log_probs=lps)


RAN: list[str] = []


def get_weather(city: str) -> str:
    RAN.append(city)
    return "3 C"


def make_loop(tok: Any, server: Server, **kw: Any) -> LvtAgentLoop:
    cfg = OmegaConf.create({"actor_rollout_ref": {"rollout": {
        "prompt_length": 1024, "response_length": 1024, "multi_turn": {"max_assistant_turns": 4}}}})
    tool = FunctionTool(name="get_weather", fn=get_weather,
                        tool_schema=OpenAIFunctionToolSchema.model_validate(SCHEMA))
    return LvtAgentLoop(DictConfigWrap(cfg), server, tok, None, object,
                        DictConfigWrap(OmegaConf.create({})), tools=ToolListWrap([tool]), **kw)


@pytest.fixture(scope="module")
def tok() -> Any:
    return AutoTokenizer.from_pretrained(zoo.tokenizer_dir("qwen3"))  # the official template


@pytest.fixture(scope="module")
def run(tok: Any) -> dict[str, Any]:
    RAN.clear()
    server = Server(tok, CALL)
    loop = make_loop(tok, server)  # the entry detected from the tokenizer's template
    out = asyncio.run(loop.run({"temperature": 1.0, "stop_token_ids": [7]}, raw_prompt=USER))
    return {"out": out, "server": server, "loop": loop}


def test_registered_under_its_name() -> None:
    assert _agent_loop_registry[AGENT_NAME] == {
        "_target_": "lvt_trainer.integrations.verl_agent.LvtAgentLoop"}


def test_row_is_the_official_template_render(run: dict[str, Any], tok: Any) -> None:
    out = run["out"]
    assert run["loop"].encoder.format_name == "qwen3"
    assert RAN == ["Oslo"]
    convo = [
        *USER,
        {"role": "assistant", "reasoning_content": "Need data.", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "content": "3 C"},
        {"role": "assistant", "reasoning_content": "Got it.", "content": "It is 3 C."}]
    want = tok.apply_chat_template(convo, tools=[SCHEMA], tokenize=True, return_dict=False)
    got = out.prompt_ids + out.response_ids
    assert got == want
    prompt = tok.apply_chat_template(USER, tools=[SCHEMA], tokenize=True, return_dict=False,
                                     add_generation_prompt=True)
    assert out.prompt_ids == prompt == run["server"].calls[0]["prompt_ids"]


def test_mask_selects_exactly_the_sampled_ids(run: dict[str, Any]) -> None:
    out, server = run["out"], run["server"]
    learned = [x for x, m in zip(out.response_ids, out.response_mask, strict=True) if m]
    assert learned == server.ids[CALL] + server.ids[ANSWER]
    # the second prompt is the first prompt, the sampled call and the tool turn: a prefix
    second = server.calls[1]["prompt_ids"]
    assert second[:len(out.prompt_ids) + len(server.ids[CALL])] == (
        out.prompt_ids + server.ids[CALL])
    assert (out.prompt_ids + out.response_ids)[:len(second)] == second


def test_logprobs_sit_on_the_sampled_positions(run: dict[str, Any]) -> None:
    out, server = run["out"], run["server"]
    n1, n2 = len(server.ids[CALL]), len(server.ids[ANSWER])
    on = [lp for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if m]
    assert on == [-1 - k / 100 for k in range(n1)] + [-2 - k / 100 for k in range(n2)]
    assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask, strict=True)
               if not m)


def test_engine_params_and_one_request_id(run: dict[str, Any], tok: Any) -> None:
    calls = run["server"].calls
    assert len(calls) == 2 and calls[0]["request_id"] == calls[1]["request_id"]
    stops = calls[0]["sampling_params"]["stop_token_ids"]
    assert 7 in stops and tok.convert_tokens_to_ids("<|im_end|>") in stops
    assert calls[0]["sampling_params"]["temperature"] == 1.0


def test_as_dict_gives_verl_tensors(run: dict[str, Any]) -> None:
    d = run["out"].as_dict()
    assert d["responses"].shape == d["response_mask"].shape == d["rollout_log_probs"].shape
    assert d["prompts"].dtype == torch.int64 and int(d["response_mask"].sum()) > 0


def test_unknown_tool_is_an_observation_not_a_crash(tok: Any) -> None:
    server = Server(tok, BAD_CALL)
    out = asyncio.run(make_loop(tok, server, lvt_format="qwen3").run({}, raw_prompt=USER))
    text = tok.decode(out.response_ids)
    assert "Unknown function 'get_time'" in text and out.extra_fields["lvt_stop"] == "answer"


def test_rows_refuse_a_mask_that_is_not_the_sampled_ids(run: dict[str, Any], tok: Any) -> None:
    server = Server(tok, CALL)
    loop = make_loop(tok, server)
    captured: dict[str, Any] = {}
    import lvt_trainer.integrations.verl_agent as mod

    real = mod.verl_rows

    def spy(rollout: Any, logprobs: Any) -> Any:
        captured["rollout"] = rollout
        return real(rollout, logprobs)

    mod.verl_rows = spy
    try:
        asyncio.run(loop.run({}, raw_prompt=USER))
    finally:
        mod.verl_rows = real
    r = captured["rollout"]
    e = r.encoded
    first = int(np.flatnonzero(e.mask)[0])
    for k, why in ((first - 1, "learns a prompt token"),  # the prompt's last token
                   (int(np.flatnonzero(e.mask)[-1]), "not the"),  # the last sampled id
                   (first + len(server.ids[CALL]), "not the")):  # the tool turn's header
        mask = np.array(e.mask, copy=True)
        mask[k] ^= 1
        r.encoded = Encoded(e.ids, mask, e.owner)
        with pytest.raises(RolloutError, match=why):
            verl_rows(r)
    r.encoded = e
    with pytest.raises(RolloutError, match="log-probabilities"):
        verl_rows(r, [[0.0], [0.0]])


def test_two_loss_steps_on_the_row(run: dict[str, Any], tok: Any) -> None:
    out = run["out"]
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.tensor([out.prompt_ids + out.response_ids])
    p = len(out.prompt_ids)
    mask = torch.tensor([out.response_mask], dtype=torch.bool)
    old = torch.tensor([out.response_logprobs], dtype=torch.float32)
    before = None
    for _ in range(2):
        logits = model(ids).logits[:, p - 1:-1].float()
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, p:, None])[..., 0]
        before = logp.detach() if before is None else before
        loss, _ = rlvr_loss(logp, torch.tensor([1.0]), mask, logp_behavior=old,
                            config=RLVRLossConfig(tis_cap=2.0))
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = torch.log_softmax(model(ids).logits[:, p - 1:-1].float(), -1).gather(
        -1, ids[:, p:, None])[..., 0].detach()
    assert torch.isfinite(loss)
    # a positive advantage raises the sampled tokens' log-probability on average
    assert float((after - before)[mask].mean()) > 0
