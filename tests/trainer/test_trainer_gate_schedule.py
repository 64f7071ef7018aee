"""The advantage-aware gate (fixed and learnable alpha) and the beta schedules."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from lvt_trainer.errors import TrainerConfigError
from lvt_trainer.gate import FixedGate, LearnableAlphaGate
from lvt_trainer.loss import RLVRLossConfig, rlvr_loss
from lvt_trainer.schedule import ConstantBeta, LinearDecay, WarmupDecayPerturbBeta
from lvt_trainer.terms import gate_values


def test_fixed_gate_values() -> None:
    a = torch.tensor([-2.0, 0.0, 1.0])
    torch.testing.assert_close(FixedGate()(a), torch.sigmoid(a.double()))
    torch.testing.assert_close(FixedGate(3.0)(a), torch.sigmoid(3 * a.double()))
    assert FixedGate()(a)[1].item() == 0.5


def test_the_gate_runs_in_double_precision_by_default() -> None:
    """The method's double-precision gate: ``alpha * A`` and the sigmoid in float64, rounded
    once to the loss's dtype; single precision (``dtype=torch.float32``) rounds ``alpha * A``
    first and differs on most tokens."""
    torch.manual_seed(0)
    a = torch.randn(4096) * 4
    ref = torch.sigmoid(1.3 * a.double())
    for gate in (FixedGate(1.3), LearnableAlphaGate(alpha_init=1.3)):
        g = gate(a)
        assert g.dtype == torch.float64 and torch.equal(g, ref)
        assert torch.equal(gate_values(gate, a), ref.float())  # what the loss multiplies
    single = FixedGate(1.3, dtype=torch.float32)(a)
    assert single.dtype == torch.float32 and int((single != ref.float()).sum()) > 1000
    assert torch.equal(LearnableAlphaGate(alpha_init=1.3, dtype=torch.float32)(a), single)
    for bad in (torch.float16, torch.bfloat16):
        with pytest.raises(TrainerConfigError, match="gate dtype"):
            FixedGate(dtype=bad)
        with pytest.raises(TrainerConfigError, match="gate dtype"):
            LearnableAlphaGate(dtype=bad)


def _main_step(
    logits: torch.Tensor,
    ref_lp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    gate: object,
    opt: torch.optim.Optimizer,
) -> dict[str, float]:
    lp = torch.log_softmax(logits, -1)[..., 0]
    loss, m = rlvr_loss(
        lp,
        adv,
        mask,
        ref_logp=ref_lp,
        beta=1.0,
        gate=gate,  # type: ignore[arg-type]
        config=RLVRLossConfig(kl_mode="k3"),
    )
    opt.zero_grad()
    loss.backward()
    opt.step()
    return m


def test_naive_learnable_alpha_collapses_but_ours_does_not() -> None:
    """All-negative advantages with KL > 0: descending the main loss in alpha kills the gate."""
    g = torch.Generator().manual_seed(0)
    adv = -torch.rand(8, generator=g) - 0.5
    mask = torch.ones(8, 4)
    ref_lp = torch.full((8, 4), -3.0)

    # naive (written out here): alpha is a plain parameter of the main loss
    raw = torch.nn.Parameter(torch.tensor(1.0))
    logits = torch.nn.Parameter(torch.zeros(8, 4, 3))
    opt = torch.optim.Adam([raw, logits], lr=0.1)
    for _ in range(80):
        lp = torch.log_softmax(logits, -1)[..., 0]
        d = ref_lp - lp
        naive = (-adv[:, None] * lp + torch.sigmoid(raw * adv)[:, None] * (d.exp() - d - 1)).mean()
        opt.zero_grad()
        naive.backward()
        opt.step()
    naive_gate = torch.sigmoid(raw.detach() * adv).mean().item()
    assert naive_gate < 0.01  # collapsed: the KL penalty is switched off

    # rlvr_loss never differentiates the gate, even for an arbitrary callable
    raw2 = torch.nn.Parameter(torch.tensor(1.0))
    logits = torch.nn.Parameter(torch.zeros(8, 4, 3))
    opt = torch.optim.Adam([raw2, logits], lr=0.1)
    _main_step(logits, ref_lp, adv, mask, lambda a: torch.sigmoid(raw2 * a), opt)
    assert raw2.grad is None or raw2.grad.item() == 0.0

    # ours: a buffer, so it cannot even be handed to the optimizer; main steps leave it be
    gate = LearnableAlphaGate(target_gated_kl=0.05, alpha_init=1.0, alpha_max=5.0)
    assert list(gate.parameters()) == []
    logits = torch.nn.Parameter(torch.zeros(8, 4, 3))
    opt = torch.optim.Adam([logits], lr=0.1)
    gate0 = gate(adv).mean().item()
    for _ in range(80):
        m = _main_step(logits, ref_lp, adv, mask, gate, opt)
    assert gate.alpha.item() == 1.0
    assert m["gate_mean"] == pytest.approx(gate0) and gate0 > 0.2

    # with its own controller interleaved: KL is above target, so the penalty goes *up*
    for _ in range(30):
        m = _main_step(logits, ref_lp, adv, mask, gate, opt)
        lp = torch.log_softmax(logits.detach(), -1)[..., 0]
        kl = torch.expm1(ref_lp - lp) - (ref_lp - lp)
        gate.update(adv, kl, mask)
    assert m["gate_mean"] >= gate0
    assert gate.alpha_min <= gate.alpha.item() <= gate.alpha_max


def test_learnable_gate_tracks_target_in_closed_loop() -> None:
    """Synthetic policy response: per-token KL grows as the penalty shrinks (KL = c / gamma^2)."""
    adv = torch.tensor([-1.5, -0.5, 0.5, 1.5])
    mask = torch.ones(4, 3)
    base = torch.tensor([[0.02] * 3, [0.01] * 3, [0.01] * 3, [0.005] * 3])
    gate = LearnableAlphaGate(target_gated_kl=0.03, alpha_init=2.0)
    errs = []
    for _ in range(200):
        kl = base / gate(adv)[:, None] ** 2
        errs.append(abs(gate.tracking_error(adv, kl, mask)))
        gate.update(adv, kl, mask)
    assert errs[0] > 0.1 and errs[-1] < 1e-3
    gamma = gate(adv)
    assert (gamma > 0.1).all()
    # unreachable target: alpha saturates at a bound instead of running away
    gate = LearnableAlphaGate(target_gated_kl=1e-4)
    for _ in range(100):
        gate.update(adv, base / gate(adv)[:, None] ** 2, mask)
    assert gate.alpha.item() in (gate.alpha_min, gate.alpha_max)
    assert (gate(adv) >= torch.sigmoid(-gate.alpha_max * adv.abs().max())).all()
    with pytest.raises(ValueError):
        LearnableAlphaGate(alpha_init=10.0, alpha_max=5.0)


def test_constant_beta() -> None:
    s = ConstantBeta(0.02)
    assert {s(i) for i in (0, 1, 10_000)} == {0.02}


def test_warmup_decay_perturb_shape() -> None:
    s = WarmupDecayPerturbBeta(
        beta_max=0.1, beta_min=0.01, warmup_steps=10, decay_steps=20, perturb=0.2, period=8
    )
    vals = [s(i) for i in range(80)]
    assert vals[0] == 0.0
    warm = vals[:11]
    assert all(b > a for a, b in itertools.pairwise(warm))  # strictly rising
    assert vals[10] == pytest.approx(0.1)
    decay = vals[10:31]
    assert all(b < a for a, b in itertools.pairwise(decay))  # strictly falling
    assert vals[30] == pytest.approx(0.01)
    tail = vals[30:]
    assert max(tail) == pytest.approx(0.012) and min(tail) == pytest.approx(0.008)
    assert all(0.008 - 1e-12 <= v <= 0.012 + 1e-12 for v in tail)
    assert vals[30:38] == pytest.approx(vals[38:46])  # periodic with period 8
    assert all(v >= 0 for v in vals)
    with pytest.raises(ValueError):
        WarmupDecayPerturbBeta(period=0)


def test_linear_decay_for_smoothing() -> None:
    s = LinearDecay(1e-2, 0.0, 10)
    assert s(0) == 1e-2 and s(5) == pytest.approx(5e-3) and s(10) == 0.0 and s(99) == 0.0
    assert math.isclose(LinearDecay(1.0, 0.5, 0)(3), 0.5)
