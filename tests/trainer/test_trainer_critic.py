"""Per-token credit: GAE by hand, the warm-up baseline, and the critic's schedules step by step."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lvt_trainer.advantages import (
    MovingAverageBaseline,
    gae,
    learned_offsets,
    masked_whiten,
    place_rewards,
    reward_to_go,
)
from lvt_trainer.critic import CriticConfig, CriticSchedule, TokenCritic, grpo_token_advantages
from lvt_trainer.errors import TrainerConfigError
from lvt_trainer.grpo import RolloutBatch

F64 = torch.float64


def test_gae_hand_worked() -> None:
    """Row 0: learned tokens at 2, 3, 5 (4 is a tool result), per-token reward -0.1 at 3 and
    terminal reward 1; row 1: truncated after tokens 1, 2, bootstrap V = 0.5."""
    mask = torch.tensor([[0, 0, 1, 1, 0, 1], [0, 1, 1, 0, 0, 0]])
    token_r = torch.zeros(2, 6, dtype=F64)
    token_r[0, 3] = -0.1
    token_r[0, 4] = 7.0  # at an unlearned position: ignored
    rewards = place_rewards(mask, torch.tensor([1.0, 0.0]), token_r)
    assert rewards.tolist() == [[0, 0, 0, -0.1, 0, 1.0], [0, 0, 0, 0, 0, 0]]
    values = torch.zeros(2, 6, dtype=F64)
    values[0, 2], values[0, 3], values[0, 5] = 0.5, 0.6, 0.8
    values[1, 1], values[1, 2] = 0.2, 0.4
    values[0, 4] = 99.0  # unlearned: never read
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=0.5,
                   bootstrap=torch.tensor([0.0, 0.5], dtype=F64))
    # row 0: d5 = 1 - 0.8 = 0.2; d3 = -0.1 + 0.9*0.8 - 0.6 = 0.02; d2 = 0.9*0.6 - 0.5 = 0.04
    #        A5 = 0.2, A3 = 0.02 + 0.45*0.2 = 0.11, A2 = 0.04 + 0.45*0.11 = 0.0895
    # row 1: d2 = 0.9*0.5 - 0.4 = 0.05, d1 = 0.9*0.4 - 0.2 = 0.16; A1 = 0.16 + 0.45*0.05
    want = torch.tensor([[0, 0, 0.0895, 0.11, 0, 0.2], [0, 0.1825, 0.05, 0, 0, 0]], dtype=F64)
    torch.testing.assert_close(adv, want, rtol=0, atol=1e-12)
    want_ret = torch.tensor([[0, 0, 0.5895, 0.71, 0, 1.0], [0, 0.3825, 0.45, 0, 0, 0]],
                            dtype=F64)
    torch.testing.assert_close(ret, want_ret, rtol=0, atol=1e-12)
    # lam = 1, V = 0: the discounted reward-to-go
    g = reward_to_go(rewards, mask, gamma=0.9)
    torch.testing.assert_close(g[0], torch.tensor([0, 0, 0.9 * (-0.1 + 0.9), -0.1 + 0.9, 0, 1.0],
                                                  dtype=F64), rtol=0, atol=1e-12)
    with pytest.raises(TrainerConfigError):
        gae(rewards, values, mask, gamma=1.5)


def test_place_rewards_and_offsets() -> None:
    mask = torch.tensor([[0, 1, 1, 0], [0, 0, 0, 0], [1, 0, 1, 1]])
    r = place_rewards(mask, torch.tensor([2.0, 5.0, -1.0]))
    assert r.tolist() == [[0, 0, 2.0, 0], [0, 0, 0, 0], [0, 0, 0, -1.0]]  # empty row: none
    assert learned_offsets(mask).tolist() == [[-1, 0, 1, -1], [-1, -1, -1, -1], [0, -1, 1, 2]]
    w = masked_whiten(torch.tensor([[0.0, 1.0, 3.0, 9.0]]), torch.tensor([[0, 1, 1, 0]]))
    assert w[0, 0] == 0 and w[0, 3] == 0
    assert w[0, 1].item() == pytest.approx(-1 / 2**0.5) and w[0, 2].item() == pytest.approx(
        1 / 2**0.5)


def test_moving_average_baseline_by_hand() -> None:
    b = MovingAverageBaseline(decay=0.5)
    mask1 = torch.tensor([[1, 1, 1], [1, 1, 0]])
    g1 = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 9.0]])  # 9.0 is unlearned
    assert b.values(mask1).tolist() == [[0, 0, 0], [0, 0, 0]]  # nothing seen yet
    b.update(g1, mask1)
    assert b.values(mask1).tolist() == [[0.5, 0.5, 1.0], [0.5, 0.5, 0.0]]
    assert b.mean() == pytest.approx(3 / 5)
    b.update(torch.zeros(1, 3), torch.tensor([[1, 1, 1]]))
    assert b.values(torch.tensor([[1, 1, 1, 1]])).tolist() == [[0.25, 0.25, 0.5, 0.3]]
    assert b.mean() == pytest.approx(0.3)  # offset 3 never seen: the global EMA
    assert b.next_value(torch.tensor([[1, 1, 0, 0]])).tolist() == [0.5]


def test_schedule_step_by_step() -> None:
    s = CriticSchedule(CriticConfig(v_warmup_steps=3, v_kl_until=6, q_every=2, v_every=4))
    steps = range(10)
    assert [s.v_frozen(i) for i in steps] == [True] * 3 + [False] * 7
    assert [s.v_kl_active(i) for i in steps] == [False] * 3 + [True] * 3 + [False] * 4
    assert [i for i in steps if s.q_update(i)] == [1, 3, 5, 7, 9]
    assert [i for i in steps if s.v_update(i)] == [3, 7]
    assert [s.phase(i) for i in (0, 2, 3, 5, 6, 9)] == [
        "warmup", "warmup", "kl_to_baseline", "kl_to_baseline", "free", "free"]
    d = CriticSchedule(CriticConfig())  # the article's numbers
    assert d.v_frozen(499) and not d.v_frozen(500)
    assert d.v_kl_active(1999) and not d.v_kl_active(2000)
    with pytest.raises(TrainerConfigError):
        CriticConfig(v_warmup_steps=10, v_kl_until=5)
    with pytest.raises(TrainerConfigError):
        CriticConfig(q_every=0)


def _batch(seed: int = 0, hidden: int = 8) -> tuple[RolloutBatch, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 30, (4, 7), generator=g)
    mask = torch.zeros(4, 7)
    mask[:, 3:] = 1
    mask[1, 6] = 0
    b = RolloutBatch(ids, torch.ones_like(ids), mask, torch.zeros(4),
                     rewards=torch.tensor([1.0, 0.0, 1.0, 0.0]),
                     truncated=torch.tensor([False, True, False, False]))
    return b, torch.randn(4, 7, hidden, generator=g)


def _params(m: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in m.parameters()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("q_estimate", ["return", "head"])
def test_critic_updates_on_schedule_and_advantages_come_from_the_previous_critic(
    q_estimate: str,
) -> None:
    cfg = CriticConfig(v_warmup_steps=3, v_kl_until=6, q_every=2, v_every=4, whiten=False,
                       v_warm_start=False, lr=1e-2, lam=0.9, q_estimate=q_estimate,
                       bootstrap_truncated=True)
    critic = TokenCritic(cfg, hidden_size=8, seed=1)
    assert critic.q is not None and critic.v is not None
    sched = CriticSchedule(cfg)
    for step in range(9):
        batch, hidden = _batch(step)
        keep = batch.loss_mask != 0
        before = critic.snapshot()
        q0, v0 = _params(critic.q), _params(critic.v)
        res = critic.assign(batch, hidden)
        assert before.q is not None and before.v is not None
        with torch.no_grad():
            q_prev = before.q(batch, hidden)
            v_prev = torch.nn.functional.pad(before.v(batch, hidden)[:, :-1], (1, 0))
        base = critic.baseline.values(batch.loss_mask).float()
        v_hat = base if sched.v_frozen(step) else v_prev
        if q_estimate == "head":
            q_used = q_prev
        else:  # the rollout's rewards, bootstrapped by the previous Q head
            rewards = place_rewards(batch.loss_mask, batch.rewards)
            boot = torch.zeros(4, dtype=F64)
            if not sched.v_frozen(step):  # the truncated row bootstraps from V after it
                boot[1] = before.v(batch, hidden)[1, 5].double().detach()
            else:
                boot[1] = critic.baseline.next_value(batch.loss_mask)[1]
            _, q_used = gae(rewards, q_prev.double(), batch.loss_mask, gamma=1.0, lam=0.9,
                            bootstrap=boot)
            q_used = q_used.float()
        want = torch.where(keep, q_used - v_hat, torch.zeros(()))
        torch.testing.assert_close(res.advantages, want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(res.values, torch.where(keep, v_hat, torch.zeros(())),
                                   rtol=1e-5, atol=1e-6)
        assert _same(q0, _params(critic.q)) == (not sched.q_update(step)), step
        assert _same(v0, _params(critic.v)) == (not sched.v_update(step)), step
        assert res.metrics["critic/q_updated"] == float(sched.q_update(step))
        assert res.metrics["critic/v_updated"] == float(sched.v_update(step))
        kl_on = sched.v_kl_active(step)
        assert (res.metrics["critic/v_kl"] > 0) == kl_on, step
        if kl_on:  # the KL-to-baseline term, (V - b)^2 / 2 over learned tokens
            want_kl = (0.5 * (v_prev - base) ** 2)[keep].mean().item()
            assert res.metrics["critic/v_kl"] == pytest.approx(want_kl, rel=1e-5)
    assert critic.step == 9


def test_warm_start_centres_v_on_the_baseline_and_truncation_bootstraps() -> None:
    cfg = CriticConfig(v_warmup_steps=2, v_kl_until=4, whiten=False, bootstrap_truncated=True)
    critic = TokenCritic(cfg, hidden_size=8, seed=2)
    for step in range(3):
        batch, hidden = _batch(step)
        res = critic.assign(batch, hidden)
    keep = batch.loss_mask != 0
    base = critic.baseline.values(batch.loss_mask).float()
    # at the switch (step 2) V's mean over the batch equals the baseline's
    assert res.values[keep].mean().item() == pytest.approx(base[keep].mean().item(), abs=1e-5)
    # the truncated row's last token bootstraps from V instead of a terminal 0
    assert res.returns[1, 5].item() != pytest.approx(0.0)


def test_gae_mode_and_grpo_mode() -> None:
    batch, hidden = _batch(3)
    gcfg = CriticConfig(advantage="gae", v_warmup_steps=5, v_kl_until=5, whiten=False, lam=1.0,
                        bootstrap_truncated=True)
    res = TokenCritic(gcfg, hidden_size=8).assign(batch, hidden)
    plain = TokenCritic(replace(gcfg, bootstrap_truncated=False), hidden_size=8)
    terminal = plain.assign(batch, hidden)  # the truncated row's reward 0 is final
    # warm-up, gamma = lam = 1: A_t = R - b_t, b the per-offset baseline of this first batch
    # (offsets 0-2: mean of the 4 rewards; offset 3: rows 0, 2, 3 only)
    r = batch.rewards
    assert r is not None
    base = [0.5, 0.5, 0.5, 2 / 3]
    want = torch.zeros(4, 7)
    for i in (0, 2, 3):
        for k in range(4):
            want[i, 3 + k] = r[i] - base[k]
    # the truncated row bootstraps with the baseline one offset past its end: 2/3 - b_t
    want[1, 3:6] = 2 / 3 - 0.5
    torch.testing.assert_close(res.advantages, want, rtol=0, atol=1e-6)
    want[1, 3:6] = 0.0 - 0.5
    torch.testing.assert_close(terminal.advantages, want, rtol=0, atol=1e-6)
    grpo = TokenCritic(CriticConfig(advantage="grpo", group_size=2)).assign(batch, None)
    torch.testing.assert_close(grpo.advantages, grpo_token_advantages(r, batch.loss_mask, 2))
    assert grpo.advantages[0, 3].item() == pytest.approx(2**0.5 / 2, rel=1e-4)
    assert grpo.advantages[0, 0].item() == 0.0


def test_separate_critic_model_trains_on_ids() -> None:
    batch, _ = _batch(4)
    critic = TokenCritic(CriticConfig(source="separate", v_warmup_steps=0, v_kl_until=0,
                                      q_every=1, v_every=1), vocab_size=30)
    assert critic.q is not None and critic.q.trunk is not None
    before = _params(critic.q)
    res = critic.assign(batch, None)
    assert not _same(before, _params(critic.q))
    assert torch.isfinite(res.advantages).all()
    with pytest.raises(TrainerConfigError):
        TokenCritic(CriticConfig())  # a head on the policy needs hidden_size
