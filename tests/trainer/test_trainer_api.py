"""The API RL users recognise: aliases, metric names, per-token advantages in the train
step, the alpha controller inside the step, the method's beta schedule, DP metrics."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from lvt_trainer.errors import TrainerConfigError, TrainerShapeError
from lvt_trainer.gate import LearnableAlphaGate
from lvt_trainer.grpo import RolloutBatch, causal_lm_logprobs, grpo_train_step
from lvt_trainer.loss import RLVRLossConfig, rlvr_loss, rlvr_loss_from_logits
from lvt_trainer.metrics import VERL_ALIASES
from lvt_trainer.schedule import MethodBeta, beta_schedule
from lvt_trainer.tiny import build_tiny_causal_lm


def _tok_inputs(seed: int = 0, bsz: int = 3, seq: int = 5):
    g = torch.Generator().manual_seed(seed)
    lp = -torch.rand(bsz, seq, generator=g, dtype=torch.float64) - 0.1
    old = lp + 0.3 * torch.randn(bsz, seq, generator=g, dtype=torch.float64)
    adv = torch.randn(bsz, seq, generator=g, dtype=torch.float64)
    mask = (torch.rand(bsz, seq, generator=g) > 0.3).long()
    mask[:, 0] = 1
    return lp, old, adv, mask


@pytest.mark.parametrize(("alias", "name"), [("token-mean", "token_mean"),
                                             ("seq-mean-token-sum", "seq_mean_token_sum"),
                                             ("seq-mean-token-mean", "seq_mean_token_mean")])
def test_loss_agg_mode_names(alias: str, name: str) -> None:
    lp, old, adv, mask = _tok_inputs()
    a = RLVRLossConfig(normalization=alias, kl_mode="none")  # type: ignore[arg-type]
    b = RLVRLossConfig(loss_agg_mode=alias, kl_mode="none")
    c = RLVRLossConfig(normalization=name, kl_mode="none")  # type: ignore[arg-type]
    assert a == b == c and a.normalization == name and b.loss_agg_mode is None
    losses = [rlvr_loss(lp, adv, mask, logp_old=old, config=cfg)[0].item() for cfg in (a, c)]
    assert losses[0] == losses[1]
    with pytest.raises(TrainerConfigError, match="token-mean"):
        RLVRLossConfig(loss_agg_mode="seq-mean-token-sum-norm")


def test_verl_trl_argument_aliases_and_metric_names() -> None:
    lp, old, adv, mask = _tok_inputs(1)
    cfg = RLVRLossConfig(kl_mode="none")
    x1 = lp.clone().requires_grad_()
    want, m1 = rlvr_loss(x1, adv, mask, logp_old=old, config=cfg)
    want.backward()
    x2 = lp.clone().requires_grad_()
    got, m2 = rlvr_loss(x2, advantages=adv, response_mask=mask, old_log_probs=old, config=cfg)
    got.backward()
    assert got.item() == want.item() and m1 == m2
    torch.testing.assert_close(x1.grad, x2.grad, rtol=0, atol=0)
    for alias, key in VERL_ALIASES.items():
        if key in m1:
            assert m1[alias] == m1[key]
    assert m1["actor/ppo_kl"] == pytest.approx(
        ((old - lp)[mask.bool()]).mean().item(), rel=1e-12)
    with pytest.raises(TrainerConfigError, match="not both"):
        rlvr_loss(lp, adv, mask, response_mask=mask)
    logits = torch.randn(3, 5, 7, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 7, (3, 5))
    a, _ = rlvr_loss_from_logits(logits, targets, adv, mask, logp_old=old, config=cfg)
    b, _ = rlvr_loss_from_logits(logits, targets, adv, response_mask=mask, old_log_probs=old,
                                 config=cfg)
    assert a.item() == b.item()


def _batch(vocab: int, seed: int = 3) -> RolloutBatch:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (4, 10), generator=g)
    am = torch.ones_like(ids)
    am[3, 8:] = 0
    lm = torch.zeros(4, 10)
    lm[:, 5:] = 1.0
    lm[3, 8:] = 0.0
    return RolloutBatch(ids, am, lm, torch.tensor([1.0, -0.5, 0.3, -1.0]))


def test_train_step_takes_per_token_advantages_laid_out_like_input_ids() -> None:
    vocab = 61
    base = build_tiny_causal_lm(vocab, seed=0, device="cpu")
    batch = _batch(vocab)
    with torch.no_grad():
        batch.old_logp, _ = causal_lm_logprobs(base, batch.input_ids, batch.attention_mask)
    per_seq = batch.advantages
    per_tok = per_seq[:, None] * batch.loss_mask  # (B, T), input_ids layout
    out = []
    for adv in (per_seq, per_tok):
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        b = copy.copy(batch)
        b.advantages = adv
        m = grpo_train_step(model, None, opt, b, config=RLVRLossConfig(kl_mode="none"))
        out.append((m, [p.detach().clone() for p in model.parameters()]))
    assert out[0][0]["loss"] == pytest.approx(out[1][0]["loss"], rel=1e-6)
    for a, b in zip(out[0][1], out[1][1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    # token-level advantages really act per token: zero them on one token only
    tok2 = per_tok.clone()
    tok2[0, 5:] = 0.0
    model = copy.deepcopy(base)
    b = copy.copy(batch)
    b.advantages = tok2
    m = grpo_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1), b,
                        config=RLVRLossConfig(kl_mode="none"))
    assert m["advantage_mean"] != pytest.approx(out[1][0]["advantage_mean"])
    bad = copy.copy(batch)
    bad.advantages = per_tok[:, 1:]  # the shifted (B, T-1) layout is refused, with a hint
    with pytest.raises(TrainerShapeError, match="laid out like input_ids"):
        grpo_train_step(copy.deepcopy(base), None, opt, bad)


def test_alpha_controller_is_updated_inside_the_step() -> None:
    vocab = 61
    policy = build_tiny_causal_lm(vocab, seed=0, device="cpu")
    reference = build_tiny_causal_lm(vocab, seed=1, device="cpu").eval()  # KL > 0
    batch = _batch(vocab)
    gate = LearnableAlphaGate(target_gated_kl=1e-4, alpha_init=1.0, lr=0.5)
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    alphas = []
    for _ in range(3):
        m = grpo_train_step(policy, reference, opt, batch, beta=0.1, gate=gate)
        alphas.append(m["alpha"])
    # gated KL far above the target: the controller raises the penalty every step
    assert alphas[0] > 1.0 and alphas[2] > alphas[1] > alphas[0]
    assert float(gate.alpha) == alphas[-1]
    k3 = LearnableAlphaGate(target_gated_kl=1e-4)
    grpo_train_step(policy, reference, opt, batch, beta=0.1, gate=k3,
                    config=RLVRLossConfig(kl_mode="k3"))
    assert float(k3.alpha) != 1.0


def test_method_beta_schedule() -> None:
    s = beta_schedule("method")
    assert isinstance(s, MethodBeta)
    assert s(0) == s(499) == 0.05
    assert s(1000) == pytest.approx(0.03)  # halfway down the linear segment
    assert s(1499) == pytest.approx(0.05 + (0.01 - 0.05) * 999 / 1000)
    assert s(1500) == pytest.approx(0.005)  # 0.005 + 0.005 sin(3 pi)
    assert s(1750) == pytest.approx(0.0, abs=1e-12)  # sin(3.5 pi) = -1
    assert s(2250) == pytest.approx(0.01)  # sin(4.5 pi) = 1
    for step in range(1500, 4000, 37):
        assert s(step) == pytest.approx(0.005 + 0.005 * math.sin(2 * math.pi * step / 1000))
    small = beta_schedule("method", hold_steps=5, decay_end=15, period=10)
    assert small(4) == 0.05 and small(15) == pytest.approx(0.005)
    assert beta_schedule("constant", beta=0.02)(7) == 0.02
    with pytest.raises(TrainerConfigError):
        beta_schedule("cosine")
    with pytest.raises(TrainerConfigError):
        beta_schedule("method", warmup=3)


def _shard(rank: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(40 + rank)
    bsz = 2 + 2 * rank
    lp = -torch.rand(bsz, 6, generator=g, dtype=torch.float64) - 0.2
    old = lp + 0.8 * torch.randn(bsz, 6, generator=g, dtype=torch.float64)
    adv = torch.randn(bsz, generator=g, dtype=torch.float64)
    mask = (torch.rand(bsz, 6, generator=g) > 0.4).long()
    ref = lp + 0.5 * torch.randn(bsz, 6, generator=g, dtype=torch.float64)
    return lp, old, adv, mask, ref


def _metrics(parts: tuple[torch.Tensor, ...]) -> dict[str, float]:
    lp, old, adv, mask, ref = parts
    cfg = RLVRLossConfig(kl_mode="k3", proximal_cap=1.5)
    _, m = rlvr_loss(lp, adv, mask, logp_old=old, ref_logp=ref, entropy=-lp, beta=0.2,
                     config=cfg)
    return m


def _metrics_worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        m = _metrics(_shard(rank))
        Path(out_dir, f"m{rank}.json").write_text(json.dumps(m))
    finally:
        dist.destroy_process_group()


def test_metrics_are_all_reduced_under_data_parallelism(tmp_path: Path) -> None:
    mp.spawn(_metrics_worker, args=(2, str(tmp_path / "pg"), str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"m{r}.json").read_text()) for r in range(2)]
    full = _metrics(tuple(torch.cat([a, b]) for a, b in zip(_shard(0), _shard(1), strict=True)))
    local = _metrics(_shard(0))  # what rank 0 alone would report
    for k, v in full.items():
        for r in ranks:
            assert r[k] == pytest.approx(v, rel=1e-10, abs=1e-12), k
    assert local["num_tokens"] != full["num_tokens"]
    assert local["clip_frac"] != pytest.approx(full["clip_frac"])
