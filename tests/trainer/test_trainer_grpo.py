"""GRPO advantages, the train step on a tiny model, and the end-to-end demo."""

from __future__ import annotations

import math

import pytest
import torch

from lvt_trainer.demo import run_training_demo
from lvt_trainer.device import default_device, default_dtype
from lvt_trainer.grpo import (
    RolloutBatch,
    broadcast_advantages,
    causal_lm_logprobs,
    group_advantages,
    grpo_train_step,
)
from lvt_trainer.loss import RLVRLossConfig
from lvt_trainer.schedule import LinearDecay
from lvt_trainer.tiny import build_tiny_causal_lm


def test_group_advantages() -> None:
    rewards = [1.0, 0.0, 0.0, 1.0, 3.0, 3.0, 3.0, 3.0, 0.0, 2.0, 4.0, 6.0]
    adv = group_advantages(rewards, 4).view(3, 4)
    assert adv.dtype == torch.float32
    torch.testing.assert_close(adv.mean(1), torch.zeros(3), atol=1e-6, rtol=0)
    torch.testing.assert_close(adv[0].std(), torch.tensor(1.0), atol=1e-5, rtol=0)
    torch.testing.assert_close(adv[2].std(), torch.tensor(1.0), atol=1e-5, rtol=0)
    assert (adv[1] == 0).all()  # zero-std group: exactly zero, no NaN
    # hand value: group [0, 2, 4, 6], mean 3, unbiased std sqrt(20/3)
    assert adv[2, 0].item() == pytest.approx(-3 / math.sqrt(20 / 3), rel=1e-5)
    biased = group_advantages(rewards, 4, unbiased_std=False).view(3, 4)
    assert biased[2, 0].item() == pytest.approx(-3 / math.sqrt(5), rel=1e-5)
    centred = group_advantages(rewards, 4, normalize_std=False).view(3, 4)
    assert centred[2].tolist() == [-3.0, -1.0, 1.0, 3.0]
    assert (group_advantages([5.0, 1.0], 1) == 0).all()  # G = 1
    with pytest.raises(ValueError):
        group_advantages([1.0, 2.0, 3.0], 2)


def test_broadcast_advantages() -> None:
    mask = torch.tensor([[0, 1, 1], [1, 1, 0]])
    out = broadcast_advantages(torch.tensor([2.0, -1.0]), mask)
    assert out.tolist() == [[0.0, 2.0, 2.0], [-1.0, -1.0, 0.0]]


def test_device_helpers() -> None:
    dev = default_device()
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert default_dtype("cpu") == torch.float32


def test_causal_lm_logprobs_match_model_logits() -> None:
    model = build_tiny_causal_lm(97, seed=1, device="cpu")
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 97, (2, 9), generator=g)
    am = torch.ones_like(ids)
    am[1, 7:] = 0
    lp, ent = causal_lm_logprobs(model, ids, am, chunk_size=3, compute_entropy=True)
    assert ent is not None
    logits = model(input_ids=ids, attention_mask=am).logits.float()
    want = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    torch.testing.assert_close(lp[:, 1:], want, atol=1e-5, rtol=1e-5)
    assert (lp[:, 0] == 0).all()
    p = torch.softmax(logits[:, :-1], -1)
    torch.testing.assert_close(ent[:, 1:], -(p * p.log()).sum(-1), atol=1e-5, rtol=1e-5)


def _rollout_batch(vocab: int) -> RolloutBatch:
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, vocab, (4, 10), generator=g)
    am = torch.ones_like(ids)
    am[3, 8:] = 0
    lm = torch.zeros(4, 10)
    lm[:, 5:] = 1.0
    lm[3, 8:] = 0.0
    adv = group_advantages([1.0, 0.0, 0.5, 0.0], 4)
    beh = -3 * torch.rand(4, 10, generator=g) - 2
    return RolloutBatch(ids, am, lm, adv, beh, None)


@pytest.mark.parametrize("kl_mode", ["exact", "k3"])
def test_grpo_step_changes_parameters(kl_mode: str) -> None:
    vocab = 97
    policy = build_tiny_causal_lm(vocab, seed=0, device="cpu")
    reference = build_tiny_causal_lm(vocab, seed=0, device="cpu").eval()
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-2)
    before = [p.detach().clone() for p in policy.parameters()]
    batch = _rollout_batch(vocab)
    with torch.no_grad():
        batch.old_logp, _ = causal_lm_logprobs(policy, batch.input_ids, batch.attention_mask)
    cfg = RLVRLossConfig(kl_mode=kl_mode, tis_cap=2.0, kl_chunk_size=4)  # type: ignore[arg-type]
    hist = [grpo_train_step(policy, reference, opt, batch, config=cfg, beta=0.1) for _ in range(3)]
    changed = [not torch.equal(a, b) for a, b in zip(before, policy.parameters(), strict=True)]
    assert all(changed)
    for m in hist:
        assert all(math.isfinite(v) for v in m.values())
        assert m["num_tokens"] == 4 * 5 - 2  # response tokens 5..9, row 3 padded after 7
    assert hist[0]["weight_mean"] == pytest.approx(1.0)  # on-policy at the first step
    assert hist[0]["kl_mean"] == pytest.approx(0.0, abs=1e-6)  # policy == reference
    assert hist[-1]["kl_mean"] > 0
    assert hist[0]["tis_mean"] <= 2.0


def test_demo_small_vocab() -> None:
    calls: list[dict[str, float]] = []
    samples = [{"prompt_ids": [1, 2, 3]}, {"prompt_ids": [4, 5, 6, 7, 8]}]
    hist = run_training_demo(
        samples,
        vocab_size=64,
        steps=3,
        reward_fn=lambda c: float(len(c) % 3),
        eos_id=0,
        ref_smoothing=LinearDecay(1e-3, 0.0, 2),
        callback=calls.append,
        progress=False,
        device="cpu",
    )
    assert len(hist) == 3 and calls == hist
    assert [m["step"] for m in hist] == [0.0, 1.0, 2.0]
    for m in hist:
        assert all(math.isfinite(v) for v in m.values())
    assert hist[0]["weight_mean"] == pytest.approx(1.0, abs=1e-5)


def test_demo_llama3_vocab_is_fast() -> None:
    """The full Llama-3 vocabulary runs (speed is a benchmark figure, not asserted here)."""
    samples = [
        {
            "prompt_ids": [128000, 9906, 11, 1917],
            "eos_id": 128009,
            "reward_fn": lambda c: float(sum(c) % 2),
        }
    ]
    hist = run_training_demo(
        samples, 128256, steps=2, callback=None, progress=False, device="cpu", group_size=4
    )
    assert len(hist) == 2 and all(math.isfinite(v) for m in hist for v in m.values())


def test_demo_with_lvt_encoder_trains_on_lvt_render(llama3_encoder) -> None:
    """With an encoder the demo's batch is lvt's render: prompts from the generation prompt,
    forged control ids masked, truncated rollouts without an end of turn."""
    import lvt

    user = lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("Say hi")),))
    samples = [{"conversation": lvt.Conversation((user,), False), "eos_id": 128009,
                "reward_fn": lambda c: float(len(c) % 2)}]
    hist = run_training_demo(samples, 128256, steps=2, callback=None, progress=False,
                             device="cpu", group_size=2, max_new_tokens=4,
                             encoder=llama3_encoder)
    assert len(hist) == 2 and all(math.isfinite(v) for m in hist for v in m.values())
    assert "forged_frac" in hist[0]
    with pytest.raises(ValueError, match="conversation"):
        run_training_demo([{"prompt_ids": [1, 2]}], 64, steps=1, reward_fn=lambda c: 0.0,
                          eos_id=0, callback=None, progress=False, encoder=llama3_encoder)
