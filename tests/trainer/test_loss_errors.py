"""Typed errors of the loss entry points: one case per shape, dtype and range mistake, and
valid inputs still giving the loss of a plain PyTorch computation written out here."""

from __future__ import annotations

import math

import pytest
import torch

import lvt_trainer
from lvt_trainer import (
    NonFiniteInputError,
    RLVRLossConfig,
    TrainerConfigError,
    TrainerDtypeError,
    TrainerError,
    TrainerShapeError,
    TrainerValueError,
    exact_kl,
    rlvr_loss,
    rlvr_loss_from_logits,
    token_stats,
)

B, T, V = 2, 5, 7
FUSED = [True, False]


def _batch(dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return {
        "logits": torch.randn(B, T, V, generator=g, dtype=dtype).requires_grad_(),
        "ref": torch.randn(B, T, V, generator=g, dtype=dtype),
        "targets": torch.randint(0, V, (B, T), generator=g),
        "adv": torch.tensor([0.8, -1.3], dtype=dtype),
        "mask": torch.tensor([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1]], dtype=dtype),
        "old": -torch.rand(B, T, generator=g, dtype=dtype) - 1.0,
    }


def _from_logits(x: dict[str, torch.Tensor], fused: bool, **kw):
    args = {"ref_logits": x["ref"], "beta": 0.1}
    args.update(kw)
    return rlvr_loss_from_logits(
        x["logits"], args.pop("targets", x["targets"]), args.pop("adv", x["adv"]),
        args.pop("mask", x["mask"]), fused=fused, **args)


def test_the_error_types_keep_the_builtin_bases() -> None:
    assert issubclass(TrainerShapeError, ValueError)
    assert issubclass(TrainerDtypeError, TypeError)
    assert issubclass(TrainerValueError, ValueError)
    assert issubclass(TrainerConfigError, TrainerValueError)
    assert issubclass(NonFiniteInputError, TrainerValueError)
    for cls in (TrainerShapeError, TrainerDtypeError, TrainerValueError):
        assert issubclass(cls, TrainerError) and cls.__name__ in lvt_trainer.__all__


@pytest.mark.parametrize("fused", FUSED)
@pytest.mark.parametrize(("shape", "got"), [((B, T, V - 1), "(2, 5, 6)"),
                                            ((B, T - 1, V), "(2, 4, 7)")])
def test_reference_logits_of_the_wrong_shape(fused: bool, shape: tuple, got: str) -> None:
    x = _batch()
    with pytest.raises(TrainerShapeError) as ei:
        _from_logits(x, fused, ref_logits=torch.randn(*shape))
    msg = str(ei.value)
    assert msg.startswith("ref_logits:") and "(2, 5, 7)" in msg and f"got {got}" in msg


def test_reference_hidden_states_with_the_wrong_head() -> None:
    g = torch.Generator().manual_seed(0)
    hid = torch.randn(B, T, 3, generator=g, requires_grad=True)
    w = torch.randn(V, 3, generator=g)
    ok = dict(weight=w, ref_logits=torch.randn(B, T, 4), ref_weight=torch.randn(V, 4))
    rlvr_loss_from_logits(hid, torch.zeros(B, T, dtype=torch.long), torch.ones(B),
                          torch.ones(B, T), beta=0.1, **ok)
    with pytest.raises(TrainerShapeError, match=r"ref_weight: expected \(V, H\) = \(7, 4\).*"
                                                r"got \(6, 4\)"):
        rlvr_loss_from_logits(hid, torch.zeros(B, T, dtype=torch.long), torch.ones(B),
                              torch.ones(B, T), beta=0.1, weight=w, ref_logits=ok["ref_logits"],
                              ref_weight=torch.randn(V - 1, 4))


@pytest.mark.parametrize("fused", FUSED)
def test_float_targets(fused: bool) -> None:
    x = _batch()
    with pytest.raises(TrainerDtypeError, match=r"targets: .*integer.*got torch\.float32"):
        _from_logits(x, fused, targets=x["targets"].float())


def test_int32_targets_are_ids_like_int64() -> None:
    x = _batch()
    a, _ = _from_logits(x, False)
    b, _ = _from_logits(x, False, targets=x["targets"].int())
    assert a.item() == b.item()


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("logp_new", lambda: rlvr_loss(torch.zeros(B, T, dtype=torch.long), torch.ones(B),
                                       torch.ones(B, T))),
        ("advantages", lambda: rlvr_loss(torch.zeros(B, T), torch.ones(B, dtype=torch.bool),
                                         torch.ones(B, T))),
        ("logp_old", lambda: rlvr_loss(torch.zeros(B, T), torch.ones(B), torch.ones(B, T),
                                       logp_old=torch.zeros(B, T, dtype=torch.long))),
        ("loss_mask", lambda: rlvr_loss(torch.zeros(B, T), torch.ones(B),
                                        torch.ones(B, T, dtype=torch.complex64))),
        ("logits", lambda: rlvr_loss_from_logits(torch.zeros(B, T, V, dtype=torch.long),
                                                 torch.zeros(B, T, dtype=torch.long),
                                                 torch.ones(B), torch.ones(B, T))),
    ],
)
def test_other_dtype_mistakes_name_the_argument(name: str, call) -> None:
    with pytest.raises(TrainerDtypeError, match=rf"^{name}: expected .* got torch\.\w+"):
        call()


@pytest.mark.parametrize("fused", FUSED)
def test_reference_smoothing_of_one(fused: bool) -> None:
    x = _batch()
    with pytest.raises(TrainerConfigError, match=r"ref_smoothing .*< 1.*got 1\.0"):
        _from_logits(x, fused, ref_smoothing=1.0)
    with pytest.raises(TrainerValueError, match="ref_smoothing"):
        _from_logits(x, fused, ref_smoothing=-0.1)
    with pytest.raises(TrainerConfigError, match="ref_smoothing"):
        exact_kl(x["logits"], x["ref"], ref_smoothing=1.0)


@pytest.mark.parametrize("value", [0.5, 2.0, -1.0])
@pytest.mark.parametrize("entry", ["terms", "fused", "unfused"])
def test_mask_values_other_than_zero_and_one(value: float, entry: str) -> None:
    x = _batch()
    mask = x["mask"].clone()
    mask[1, 3] = value
    with pytest.raises(TrainerValueError) as ei:
        if entry == "terms":
            rlvr_loss(-torch.rand(B, T), x["adv"], mask)
        else:
            _from_logits(x, entry == "fused", mask=mask)
    msg = str(ei.value)
    assert msg.startswith("loss_mask:") and "0/1" in msg
    assert f"got {value!r} at position (1, 3)" in msg


def test_an_integer_mask_with_a_two_is_refused_too() -> None:
    with pytest.raises(TrainerValueError, match=r"got 2 at position \(0, 1\)"):
        rlvr_loss(torch.zeros(1, 3), torch.ones(1), torch.tensor([[1, 2, 0]]))


@pytest.mark.parametrize(("dtype", "value"), [(torch.float32, 1e38), (torch.float64, 1e300)])
def test_huge_advantages_are_refused(dtype: torch.dtype, value: float) -> None:
    lp = torch.full((B, T), -0.5, dtype=dtype)
    old = torch.full((B, T), -1.5, dtype=dtype)  # ratio e > 1, so w * A overflows fp32
    adv = torch.tensor([value, 0.5], dtype=dtype)
    cfg = RLVRLossConfig(kl_mode="none")
    with pytest.raises(TrainerValueError) as ei:
        rlvr_loss(lp, adv, torch.ones(B, T), logp_old=old, config=cfg)
    msg = str(ei.value)
    assert msg.startswith("advantages:") and "max_abs_advantage" in msg
    assert "1e+06" in msg and f"{value:g}" in msg and "(0,)" in msg
    assert not isinstance(ei.value, NonFiniteInputError)
    x = _batch(dtype)
    with pytest.raises(TrainerValueError, match="max_abs_advantage"):
        _from_logits(x, True, adv=adv)
    # the same value where the mask is 0 is never read
    per_token = torch.zeros(B, T, dtype=dtype)
    per_token[0, 2] = value
    mask = torch.ones(B, T)
    mask[0, 2] = 0
    loss, _ = rlvr_loss(lp, per_token, mask, logp_old=old, config=cfg)
    assert torch.isfinite(loss)


def test_the_advantage_bound_is_configurable_and_keeps_the_loss_finite() -> None:
    bound = 1e6
    seq = 4096
    # the worst case the bound allows: every token at the largest weight e^20 and |A| at the
    # bound, summed per sequence in fp32
    lp = torch.zeros(1, seq, requires_grad=True)
    old = torch.full((1, seq), -50.0)
    cfg = RLVRLossConfig(kl_mode="none", clip_mode="none", max_abs_advantage=bound,
                         normalization="seq-mean-token-sum")
    loss, _ = rlvr_loss(lp, torch.tensor([bound]), torch.ones(1, seq), logp_old=old, config=cfg)
    loss.backward()
    assert torch.isfinite(loss) and loss.item() < -1e17
    assert lp.grad is not None and torch.isfinite(lp.grad).all()
    assert rlvr_loss(lp.detach(), torch.tensor([5e7]), torch.ones(1, seq),
                     config=RLVRLossConfig(kl_mode="none", max_abs_advantage=1e8))[0].isfinite()
    with pytest.raises(TrainerValueError, match="max_abs_advantage"):
        rlvr_loss(lp.detach(), torch.tensor([5e7]), torch.ones(1, seq),
                  config=RLVRLossConfig(kl_mode="none"))
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(TrainerConfigError, match="max_abs_advantage"):
            RLVRLossConfig(max_abs_advantage=bad)
    # a bound whose worst case could overflow is refused up front
    with pytest.raises(TrainerConfigError, match="overflow"):
        RLVRLossConfig(max_abs_advantage=1e30)
    with pytest.raises(TrainerConfigError, match="log_ratio_bound"):
        RLVRLossConfig(log_ratio_bound=90.0)


def test_nan_advantage_is_still_a_non_finite_error() -> None:
    with pytest.raises(NonFiniteInputError, match=r"advantages is nan .* \(1,\)"):
        rlvr_loss(torch.zeros(B, T), torch.tensor([0.0, math.nan]), torch.ones(B, T))


def test_validate_inputs_false_skips_the_value_checks_only() -> None:
    cfg = RLVRLossConfig(kl_mode="none", validate_inputs=False)
    mask = torch.tensor([[1.0, 0.5, 0.0]])
    loss, _ = rlvr_loss(torch.zeros(1, 3), torch.ones(1), mask, config=cfg)
    assert torch.isfinite(loss)
    with pytest.raises(TrainerShapeError):
        rlvr_loss(torch.zeros(1, 3), torch.ones(1), torch.ones(1, 4), config=cfg)
    with pytest.raises(TrainerDtypeError):
        rlvr_loss(torch.zeros(1, 3, dtype=torch.long), torch.ones(1), mask, config=cfg)


def test_token_stats_checks_its_layout() -> None:
    x = _batch()
    with pytest.raises(TrainerShapeError, match="ref_logits"):
        token_stats(x["logits"], x["targets"], torch.randn(B, T, V + 1))
    with pytest.raises(TrainerDtypeError, match="targets"):
        token_stats(x["logits"], x["targets"].double())


def _reference_loss(logits, ref, targets, adv, mask, old, beta, cap):
    """Proximal RLVR with exact gated KL, token mean, written out in plain PyTorch.

    Returns (value, surrogate): the loss value, and a function of the logits with the
    same gradient (the detached weight times A times logp)."""
    logp_all = torch.log_softmax(logits.double(), -1)
    ref_all = torch.log_softmax(ref.double(), -1)
    lp = logp_all.gather(-1, targets[..., None])[..., 0]
    kl = (logp_all.exp() * (logp_all - ref_all)).sum(-1)
    a = adv.double()[:, None].expand(B, T)
    w = torch.exp(lp.detach() - old.double())
    w = torch.where(a < 0, torch.clamp(w, max=cap), w)
    gamma = torch.sigmoid(a)
    m = mask.double()
    n = m.sum()
    value = ((-w * a + beta * gamma * kl) * m).sum() / n
    surrogate = ((-w * a * lp + beta * gamma * kl) * m).sum() / n
    return value, surrogate


@pytest.mark.parametrize("fused", FUSED)
@pytest.mark.parametrize("mask_dtype", [torch.float32, torch.long, torch.bool])
def test_valid_inputs_give_the_plain_pytorch_loss(fused: bool, mask_dtype: torch.dtype) -> None:
    x = _batch()
    cap, beta = 1.5, 0.3
    cfg = RLVRLossConfig(proximal_cap=cap)
    logits = x["logits"]
    loss, _ = rlvr_loss_from_logits(logits, x["targets"], x["adv"], x["mask"].to(mask_dtype),
                                    ref_logits=x["ref"], logp_old=x["old"], beta=beta,
                                    config=cfg, fused=fused)
    loss.backward()
    assert logits.grad is not None
    leaf = logits.detach().clone().requires_grad_()
    value, surrogate = _reference_loss(leaf, x["ref"], x["targets"], x["adv"], x["mask"],
                                       x["old"], beta, cap)
    surrogate.backward()
    assert loss.item() == pytest.approx(value.item(), rel=1e-5, abs=1e-6)
    torch.testing.assert_close(logits.grad.double(), leaf.grad.double(), rtol=1e-4, atol=1e-6)
    # some weights were capped, so the cap is exercised
    w = torch.exp(torch.log_softmax(logits.detach(), -1).gather(-1, x["targets"][..., None])[
        ..., 0] - x["old"])
    assert bool(((w > cap) & (x["adv"][:, None] < 0) & (x["mask"] > 0)).any())
