"""``LvtGRPOTrainer``: TRL's GRPO loop (generation, rewards, group advantages, reference
model) trains a tiny random Qwen2 with lvt's loss, prompts rendered by ``lvt.hf.wrap``.

The loss TRL backpropagates is checked against :func:`lvt_trainer.rlvr_loss` on tensors
recomputed here with a plain forward (full logits, log-softmax) of the same models, with the
optimizer step's token count counted here from the micro-batches."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig

import lvt.hf
from lvt import zoo
from lvt_trainer import FixedGate, RLVRLossConfig, TrainerConfigError, rlvr_loss
from lvt_trainer.integrations.trl import LvtGRPOTrainer

BETA = 0.1
TEMPERATURE = 0.8
GA = 2  # micro-batches per optimizer step (= TRL's steps_per_generation)
K3 = RLVRLossConfig(kl_mode="k3")
PROMPTS = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(2)]


def even_first_token(
    completions: list[Any], completion_ids: list[list[int]], **_: Any
) -> list[float]:
    """Toy verifiable reward: 1 when the answer's first token id is even."""
    return [1.0 if ids and ids[0] % 2 == 0 else 0.0 for ids in completion_ids]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    fast = PreTrainedTokenizerFast(
        tokenizer_object=zoo.load_tokenizer("qwen3"), eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    return lvt.hf.wrap(fast, format="qwen3")


def tiny_model(tokenizer: Any) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(cfg)


def grpo_args(out: Any, **kw: Any) -> GRPOConfig:
    base = {
        "output_dir": str(out), "per_device_train_batch_size": 4, "num_generations": 4,
        "gradient_accumulation_steps": GA, "max_completion_length": 6, "max_steps": 2,
        "num_iterations": 2, "beta": BETA, "temperature": TEMPERATURE, "learning_rate": 0.05,
        "seed": 0, "report_to": "none", "use_cpu": True, "save_strategy": "no",
        "logging_steps": 1, "disable_tqdm": True, "dataloader_num_workers": 0,
    }
    return GRPOConfig(**(base | kw))


def plain_logits(model: Any, inputs: dict[str, Any]) -> torch.Tensor:
    """Temperature-scaled logits scoring the completion tokens, from the model's own forward."""
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    am = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    n = inputs["completion_ids"].shape[1]
    return model(input_ids=ids, attention_mask=am).logits[:, -n - 1 : -1].float() / TEMPERATURE


def plain_logp(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits, -1).gather(-1, ids[..., None]).squeeze(-1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> dict[str, Any]:
    """Two optimizer steps (4 micro-batches, one generation reused twice: num_iterations=2);
    every micro-batch's TRL inputs, returned loss and plain recomputations are recorded."""
    root = tmp_path_factory.mktemp("trl")
    tiny_model(tokenizer).save_pretrained(root / "model")  # TRL loads the reference from disk
    trainer = LvtGRPOTrainer(
        model=str(root / "model"), reward_funcs=even_first_token, args=grpo_args(root / "out"),
        train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]),
        processing_class=tokenizer, lvt_config=K3,
    )
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    records: list[dict[str, Any]] = []
    compute_loss = trainer.compute_loss

    def hook(model: Any, inputs: dict[str, Any], *a: Any, **k: Any) -> torch.Tensor:
        with torch.no_grad():
            ids = inputs["completion_ids"]
            logp = plain_logp(plain_logits(model, inputs), ids)
            ref_logp = plain_logp(plain_logits(trainer.ref_model, inputs), ids)
        loss = compute_loss(model, inputs, *a, **k)
        records.append({
            "inputs": {k: v.clone() if torch.is_tensor(v) else v for k, v in inputs.items()},
            "loss": loss.detach().clone(), "logp": logp, "ref_logp": ref_logp,
        })
        return loss

    trainer.compute_loss = hook
    trainer.train()
    return {"trainer": trainer, "records": records, "before": before}


def step_tokens(records: list[dict[str, Any]], i: int) -> float:
    """Loss tokens of the optimizer step holding micro-batch ``i``, counted here."""
    s = (i // GA) * GA
    return float(sum(r["inputs"]["completion_mask"].sum() for r in records[s : s + GA]))


def step_seqs(records: list[dict[str, Any]], i: int) -> float:
    s = (i // GA) * GA
    masks = [r["inputs"]["completion_mask"] for r in records[s : s + GA]]
    return float(sum((m.sum(-1) > 0).sum() for m in masks))


def test_prompts_are_lvt_renders(trained: dict[str, Any], tokenizer: Any):
    want = {tuple(tokenizer.apply_chat_template(p, add_generation_prompt=True, return_dict=False))
            for p in PROMPTS}
    for r in trained["records"]:
        x = r["inputs"]
        got = {tuple(ids[m.bool()].tolist()) for ids, m in zip(x["prompt_ids"], x["prompt_mask"],
                                                              strict=True)}
        assert got <= want


def test_loss_is_rlvr_loss_on_trl_tensors(trained: dict[str, Any]):
    records = trained["records"]
    assert len(records) == 2 * GA
    for i, r in enumerate(records):
        x = r["inputs"]
        mask = x["completion_mask"].bool()
        # TRL's reference log-probs are the reference model's (the k3 KL's input)
        torch.testing.assert_close(x["ref_per_token_logps"][mask], r["ref_logp"][mask],
                                   rtol=1e-4, atol=1e-5)
        want, metrics = rlvr_loss(
            r["logp"], x["advantages"], x["completion_mask"], logp_old=x["old_per_token_logps"],
            ref_logp=r["ref_logp"], beta=BETA, gate=FixedGate(1.0), config=K3,
            global_token_count=step_tokens(records, i), global_seq_count=step_seqs(records, i),
        )
        torch.testing.assert_close(r["loss"], want.to(r["loss"].dtype), rtol=1e-4, atol=1e-6)
        if i >= GA:  # the second step reuses the generation: off-policy, KL > 0
            assert metrics["kl_mean"] > 0 and metrics["weight_max"] != 1.0


def test_micro_batches_sum_to_the_step_loss(trained: dict[str, Any]):
    """TRL does not rescale the returned losses: their sum is the step's loss on the
    concatenated micro-batches (lvt's token-mean over the whole step)."""
    records = trained["records"]
    for s in range(0, len(records), GA):
        rs = records[s : s + GA]
        cat = {k: torch.cat([r["inputs"][k] for r in rs]) for k in
               ("advantages", "completion_mask", "old_per_token_logps")}
        want, _ = rlvr_loss(
            torch.cat([r["logp"] for r in rs]), cat["advantages"], cat["completion_mask"],
            logp_old=cat["old_per_token_logps"], ref_logp=torch.cat([r["ref_logp"] for r in rs]),
            beta=BETA, config=K3,
        )
        got = sum(r["loss"] for r in rs)
        torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-4, atol=1e-6)


def test_training_moved_the_policy(trained: dict[str, Any]):
    records = trained["records"]
    first = records[0]["inputs"]
    assert bool((first["advantages"] != 0).any())  # the reward separates completions
    # at the first micro-batch the policy has not moved: TRL's old log-probs are its own
    mask = first["completion_mask"].bool()
    torch.testing.assert_close(first["old_per_token_logps"][mask], records[0]["logp"][mask],
                               rtol=1e-4, atol=1e-5)
    model = trained["trainer"].model
    changed = [k for k, v in model.named_parameters()
               if not torch.equal(v.detach(), trained["before"][k])]
    assert "model.embed_tokens.weight" in changed and len(changed) >= 5
    history = [h for h in trained["trainer"].state.log_history if "lvt/weight_mean" in h]
    assert len(history) == 2 and history[1]["kl"] > 0


def test_exact_kl_loss_and_gradient(trained: dict[str, Any]):
    """``kl_mode="exact"``: value and parameter gradients equal rlvr_loss with the exact KL
    over the vocabulary computed here from both models' full logits."""
    trainer = trained["trainer"]
    records = trained["records"]
    i = GA
    x = records[i]["inputs"]
    model = trainer.model
    params = [p for p in model.parameters() if p.requires_grad]
    exact = RLVRLossConfig(kl_mode="exact")
    trainer.lvt_config = exact
    try:
        got = trainer.compute_loss(model, x)
    finally:
        trainer.lvt_config = K3
    g_got = torch.autograd.grad(got, params)
    logits = plain_logits(model, x)
    with torch.no_grad():
        ref = torch.log_softmax(plain_logits(trainer.ref_model, x), -1)
    lp_all = torch.log_softmax(logits, -1)
    kl = (lp_all.exp() * (lp_all - ref)).sum(-1)
    want, metrics = rlvr_loss(
        plain_logp(logits, x["completion_ids"]), x["advantages"], x["completion_mask"],
        logp_old=x["old_per_token_logps"], kl=kl, beta=BETA, config=exact,
        global_token_count=step_tokens(records, i), global_seq_count=step_seqs(records, i),
    )
    g_want = torch.autograd.grad(want, params)
    assert metrics["kl_mean"] > 0
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    for a, b in zip(g_got, g_want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("config", [
    RLVRLossConfig(kl_mode="k3", proximal_cap=1.05, normalization="seq-mean-token-mean"),
    RLVRLossConfig(kl_mode="k1", clip_mode="ppo", normalization="seq-mean-token-sum"),
], ids=["cap-seq-mean-token-mean", "ppo-k1-seq-mean-token-sum"])
def test_other_settings_on_a_recorded_batch(trained: dict[str, Any], config: RLVRLossConfig):
    """Other lvt settings through the trainer's loss on an off-policy micro-batch."""
    trainer, records = trained["trainer"], trained["records"]
    i = GA + 1
    x = records[i]["inputs"]
    trainer.lvt_config = config
    try:
        got = trainer.compute_loss(trainer.model, x).detach()
    finally:
        trainer.lvt_config = K3
    with torch.no_grad():
        logp = plain_logp(plain_logits(trainer.model, x), x["completion_ids"])
    want, metrics = rlvr_loss(
        logp, x["advantages"], x["completion_mask"], logp_old=x["old_per_token_logps"],
        ref_logp=records[i]["ref_logp"], beta=BETA, config=config,
        global_token_count=step_tokens(records, i), global_seq_count=step_seqs(records, i),
    )
    torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-4, atol=1e-6)
    assert metrics["clip_frac"] > 0  # the cap / the PPO range is exercised


def test_refuses_trl_loss_options_lvt_does_not_implement(tmp_path: Any, tokenizer: Any):
    with pytest.raises(TrainerConfigError, match="importance_sampling_level"):
        LvtGRPOTrainer(
            model=tiny_model(tokenizer), reward_funcs=even_first_token,
            args=grpo_args(tmp_path, beta=0.0, importance_sampling_level="sequence"),
            train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]),
            processing_class=tokenizer,
        )
