"""Numerics: autocast, -inf logits, NaN at masked positions, fp16 gradients, validation."""

from __future__ import annotations

import math

import pytest
import torch

from lvt_trainer.errors import NonFiniteInputError, TrainerConfigError, TrainerShapeError
from lvt_trainer.kl import token_stats
from lvt_trainer.loss import RLVRLossConfig, rlvr_loss, rlvr_loss_from_logits

B, T, V, H = 2, 6, 11, 4


def _inputs(seed: int, hidden: bool = False, dtype: torch.dtype = torch.float64):
    g = torch.Generator().manual_seed(seed)
    d = H if hidden else V
    x = {
        "policy": 2 * torch.randn(B, T, d, generator=g, dtype=dtype),
        "ref": 2 * torch.randn(B, T, d, generator=g, dtype=dtype),
        "targets": torch.randint(0, V - 3, (B, T), generator=g),
        "old": -torch.rand(B, T, generator=g, dtype=dtype) - 1.5,
        "adv": torch.tensor([1.2, -0.7], dtype=dtype),
        "mask": torch.tensor([[0, 1, 1, 0, 1, 1], [1, 1, 0, 1, 0, 0]], dtype=dtype),
    }
    if hidden:
        x["weight"] = torch.randn(V, H, generator=g, dtype=dtype)
        x["ref_weight"] = torch.randn(V, H, generator=g, dtype=dtype)
    return x


def _run(x, *, fused: bool, cfg: RLVRLossConfig | None = None, beta: float = 0.3, **kw):
    pol = x["policy"].clone().requires_grad_()
    w = x["weight"].clone().requires_grad_() if "weight" in x else None
    loss, m = rlvr_loss_from_logits(
        pol, x["targets"], x["adv"], x["mask"], ref_logits=x["ref"], weight=w,
        ref_weight=x.get("ref_weight"), logp_old=x["old"], beta=beta, fused=fused,
        config=cfg or RLVRLossConfig(kl_chunk_size=4, entropy_coef=0.01), **kw,
    )
    loss.backward()
    return loss.detach(), m, pol.grad, None if w is None else w.grad


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("hidden", [False, True], ids=["logits", "hidden"])
def test_autocast_keeps_kl_weights_and_gate_in_fp32(fused: bool, hidden: bool) -> None:
    x = _inputs(1, hidden, torch.float32)
    x["policy"] = 3 * x["policy"]
    want = _run(x, fused=fused)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = _run(x, fused=fused)
    for k in ("kl_mean", "entropy_mean", "gate_mean", "weight_mean", "loss"):
        assert got[1][k] == pytest.approx(want[1][k], rel=1e-6, abs=1e-9), k
    torch.testing.assert_close(got[2], want[2], rtol=1e-6, atol=1e-8)
    if hidden:
        torch.testing.assert_close(got[3], want[3], rtol=1e-6, atol=1e-8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lp, ent, kl = token_stats(x["policy"], x["targets"], x["ref"],
                                  weight=x.get("weight"), ref_weight=x.get("ref_weight"))
    assert lp is not None and ent is not None and kl is not None
    assert lp.dtype == ent.dtype == kl.dtype == torch.float32


@pytest.mark.parametrize("fused", [True, False])
def test_minus_inf_logits_follow_zero_log_zero(fused: bool) -> None:
    """A masked vocabulary (-inf logits, different per position) equals the computation on
    the restricted vocabulary: same loss, metrics and gradients; zero gradient at -inf."""
    x = _inputs(2)
    banned = torch.zeros(B, T, V, dtype=torch.bool)
    banned[..., V - 3:] = True
    banned[0, 2, 0] = True  # one more, at one position only (never a target there)
    x["targets"][0, 2] = 1
    pol, ref = x["policy"].clone(), x["ref"].clone()
    pol[banned] = -math.inf
    ref[banned] = -math.inf
    got = _run({**x, "policy": pol, "ref": ref}, fused=fused)
    assert torch.isfinite(got[0]) and torch.isfinite(got[2]).all()
    assert (got[2][banned] == 0).all()
    # reference: the same distributions with the banned entries at -1e4 (exp underflows to 0)
    pol2, ref2 = x["policy"].clone(), x["ref"].clone()
    pol2[banned] = -1e4
    ref2[banned] = -1e4
    want = _run({**x, "policy": pol2, "ref": ref2}, fused=fused)
    assert got[0].item() == pytest.approx(want[0].item(), rel=1e-12)
    for k in ("kl_mean", "entropy_mean"):
        assert got[1][k] == pytest.approx(want[1][k], rel=1e-12), k
    torch.testing.assert_close(got[2], want[2], rtol=1e-12, atol=1e-15)
    # policy -inf where the reference is finite is fine; the reverse is an infinite KL
    ref3 = x["ref"].clone()
    ok = _run({**x, "policy": pol, "ref": ref3}, fused=fused)
    assert torch.isfinite(ok[2]).all()
    ref4 = x["ref"].clone()
    ref4[1, 0, 0] = -math.inf  # unmasked position, the policy puts mass there
    with pytest.raises(NonFiniteInputError):
        _run({**x, "ref": ref4}, fused=fused)
    ref4[1, 0, 0] = 0.0
    ref4[0, 0, 0] = -math.inf  # masked position: no error, zero gradient
    masked = _run({**x, "ref": ref4}, fused=fused)
    assert (masked[2][0, 0] == 0).all() and torch.isfinite(masked[2]).all()


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("hidden", [False, True], ids=["logits", "hidden"])
def test_nan_logits_at_masked_positions_give_exactly_zero_gradient(fused: bool,
                                                                   hidden: bool) -> None:
    x = _inputs(3, hidden)
    clean = _run(x, fused=fused)
    dirty = dict(x)
    dirty["policy"] = x["policy"].clone()
    dirty["ref"] = x["ref"].clone()
    masked = x["mask"] == 0
    dirty["policy"][masked] = math.nan
    dirty["ref"][masked] = math.nan
    dirty["targets"] = x["targets"].clone()
    dirty["targets"][masked] = -100  # padding label, never read
    got = _run(dirty, fused=fused)
    assert torch.isfinite(got[0]) and all(math.isfinite(v) for v in got[1].values())
    assert (got[2][masked] == 0).all()
    torch.testing.assert_close(got[2], clean[2].masked_fill(masked[..., None], 0.0),
                               rtol=0, atol=1e-15)
    assert got[0].item() == pytest.approx(clean[0].item(), rel=1e-13)
    if hidden:
        torch.testing.assert_close(got[3], clean[3], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("gap", [15.0, -15.0])
def test_fp16_gradients_finite_inside_the_log_ratio_bound(gap: float) -> None:
    # |log ratio| = 15 < 20 = bound: w = e^15 = 3.3e6 is beyond fp16's 65504
    lp = torch.full((1, 2), -1.0, dtype=torch.float16, requires_grad=True)
    old = (lp.detach().float() - gap).half()
    for mode in ("none", "proximal", "ppo"):
        lp.grad = None
        cfg = RLVRLossConfig(clip_mode=mode, kl_mode="none")  # type: ignore[arg-type]
        loss, _ = rlvr_loss(lp, torch.tensor([1.0]), torch.ones(1, 2), logp_old=old, config=cfg)
        loss.backward()
        assert lp.grad is not None and torch.isfinite(lp.grad.float()).all(), mode
    lp.grad = None
    loss, _ = rlvr_loss(lp, torch.tensor([1.0]), torch.ones(1, 2), logp_old=old,
                        config=RLVRLossConfig(clip_mode="none", kl_mode="none"))
    loss.backward()
    if gap > 0:  # saturated at the fp16 range, in the right direction
        assert lp.grad.float().tolist() == [[-65504.0, -65504.0]]
    # logits in fp16, fused and recompute paths
    g = torch.Generator().manual_seed(4)
    logits = (torch.randn(1, 3, 7, generator=g)).half()
    targets = torch.tensor([[1, 2, 3]])
    lp32 = torch.log_softmax(logits.float(), -1).gather(-1, targets[..., None]).squeeze(-1)
    for fused in (True, False):
        x = logits.clone().requires_grad_()
        loss, _ = rlvr_loss_from_logits(
            x, targets, torch.tensor([1.0]), torch.ones(1, 3), logp_old=lp32 - gap,
            config=RLVRLossConfig(clip_mode="none", kl_mode="none"), fused=fused)
        loss.backward()
        assert x.grad is not None and torch.isfinite(x.grad.float()).all(), fused


def test_inputs_are_validated_with_typed_errors() -> None:
    lp = torch.zeros(2, 3, requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    adv = torch.tensor([[1.0, 0.5, math.nan], [0.2, math.nan, math.nan]])
    loss, _ = rlvr_loss(lp, adv, mask, config=RLVRLossConfig(kl_mode="none"))  # NaN masked
    assert torch.isfinite(loss)
    adv[0, 1] = math.nan
    with pytest.raises(NonFiniteInputError, match=r"advantages .* \(0, 1\)"):
        rlvr_loss(lp, adv, mask, config=RLVRLossConfig(kl_mode="none"))
    with pytest.raises(NonFiniteInputError):
        rlvr_loss(lp, torch.tensor([math.inf, 0.0]), mask, config=RLVRLossConfig(kl_mode="none"))
    old = torch.zeros(2, 3)
    old[1, 0] = math.nan
    with pytest.raises(NonFiniteInputError, match="logp_old"):
        rlvr_loss(lp, torch.zeros(2), mask, logp_old=old, config=RLVRLossConfig(kl_mode="none"))
    with pytest.raises(TrainerShapeError, match=r"advantages: .*\(2, 4\)"):
        rlvr_loss(lp, torch.zeros(2, 4), mask)
    with pytest.raises(TrainerShapeError, match=r"logp_old: .*\(2, 3\).*got \(3, 2\)"):
        rlvr_loss(lp, torch.zeros(2), mask, logp_old=torch.zeros(3, 2))
    with pytest.raises(TrainerConfigError, match="beta"):
        rlvr_loss(lp, torch.zeros(2), mask, beta=-0.1, config=RLVRLossConfig(kl_mode="none"))
    for bad in ({"proximal_cap": -1.0}, {"proximal_cap": 0.0}, {"ppo_eps_low": 1.5},
                {"tis_cap": 0.0}, {"log_ratio_bound": -1.0}, {"kl_chunk_size": 0},
                {"clip_mode": "dual"}, {"kl_mode": "k4"}, {"normalization": "mean"},
                {"entropy_coef": math.nan}):
        with pytest.raises(TrainerConfigError):
            RLVRLossConfig(**bad)  # type: ignore[arg-type]
    # targets outside the vocabulary at an unmasked position; -100 padding where masked
    logits = torch.randn(1, 3, 5, requires_grad=True)
    targets = torch.tensor([[1, -100, 2]])
    m = torch.tensor([[1, 0, 1]])
    loss, _ = rlvr_loss_from_logits(logits, targets, torch.ones(1), m)
    assert torch.isfinite(loss)
    with pytest.raises(TrainerShapeError, match=r"outside \[0, 5\)"):
        rlvr_loss_from_logits(logits, torch.tensor([[1, 7, 2]]), torch.ones(1),
                              torch.ones(1, 3))
    nan_logits = torch.randn(1, 3, 5)
    nan_logits[0, 2, 1] = math.nan
    with pytest.raises(NonFiniteInputError, match="log-prob of the targets"):
        rlvr_loss_from_logits(nan_logits.requires_grad_(), torch.tensor([[1, 2, 3]]),
                              torch.ones(1), torch.ones(1, 3))
