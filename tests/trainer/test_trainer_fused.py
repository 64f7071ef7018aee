"""The fused loss (gradients formed in forward) against the recompute-in-backward path.

Both paths of :func:`lvt_trainer.loss.rlvr_loss_from_logits` must give the same loss, the
same metrics and the same gradients for every clip mode, KL mode, normalisation, chunk size,
for logits and for hidden states with an LM head; the unfused path is itself checked against
an independent float64 pipeline in ``test_trainer_loss.py``.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from lvt_trainer.gate import FixedGate
from lvt_trainer.loss import RLVRLossConfig, rlvr_loss_from_logits

B, T, V, H = 3, 7, 13, 5


def _inputs(seed: int, hidden: bool) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    d = H if hidden else V
    out = {
        "policy": 2 * torch.randn(B, T, d, generator=g, dtype=f64),
        "ref": 2 * torch.randn(B, T, d, generator=g, dtype=f64),
        "targets": torch.randint(0, V, (B, T), generator=g),
        "old": -3 * torch.rand(B, T, generator=g, dtype=f64) - 1,
        "beh": -3 * torch.rand(B, T, generator=g, dtype=f64) - 1,
        "adv": torch.tensor([1.5, -2.0, 0.0], dtype=f64),
        "mask": (torch.rand(B, T, generator=g) > 0.3).to(f64),
    }
    if hidden:
        out["weight"] = torch.randn(V, H, generator=g, dtype=f64)
        out["ref_weight"] = torch.randn(V, H, generator=g, dtype=f64)
    return out


def _run(x: dict[str, torch.Tensor], cfg: RLVRLossConfig, *, fused: bool, hidden: bool,
         scale: float = 1.0, **kw: object) -> tuple[float, dict[str, float], list[torch.Tensor]]:
    policy = x["policy"].clone().requires_grad_()
    weight = x["weight"].clone().requires_grad_() if hidden else None
    loss, metrics = rlvr_loss_from_logits(
        policy,
        x["targets"],
        x["adv"],
        x["mask"],
        ref_logits=x["ref"],
        weight=weight,
        ref_weight=x.get("ref_weight"),
        logp_old=x["old"],
        logp_behavior=x["beh"],
        config=cfg,
        fused=fused,
        **kw,  # type: ignore[arg-type]
    )
    (scale * loss).backward()
    grads = [policy.grad] + ([weight.grad] if weight is not None else [])
    assert all(g is not None for g in grads)
    return float(loss.detach()), metrics, grads  # type: ignore[return-value]


MODES = list(itertools.product(
    ["proximal", "ppo", "none"],
    ["exact", "k1", "k2", "k3", "none"],
    ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"],
))


@pytest.mark.parametrize("hidden", [False, True], ids=["logits", "hidden"])
@pytest.mark.parametrize(("clip_mode", "kl_mode", "norm"), MODES)
def test_fused_equals_recompute(clip_mode: str, kl_mode: str, norm: str, hidden: bool) -> None:
    x = _inputs(hash((clip_mode, kl_mode, norm)) % 1000, hidden)
    for chunk, tis, ent in ((None, None, 0.0), (3, 1.5, 0.02), (1, 0.8, 0.0)):
        cfg = RLVRLossConfig(
            clip_mode=clip_mode,  # type: ignore[arg-type]
            kl_mode=kl_mode,  # type: ignore[arg-type]
            normalization=norm,  # type: ignore[arg-type]
            kl_chunk_size=chunk,
            tis_cap=tis,
            entropy_coef=ent,
            proximal_cap=1.2,
        )
        kw = {"beta": 0.3, "gate": FixedGate(0.7), "ref_smoothing": 0.05}
        lf, mf, gf = _run(x, cfg, fused=True, hidden=hidden, **kw)
        lu, mu, gu = _run(x, cfg, fused=False, hidden=hidden, **kw)
        assert lf == pytest.approx(lu, rel=1e-12, abs=1e-14)
        assert mf.keys() == mu.keys()
        for k in mf:
            assert mf[k] == pytest.approx(mu[k], rel=1e-10, abs=1e-12), k
        for a, b in zip(gf, gu, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
        # the policy and KL terms both move the gradient (the comparison is not vacuous)
        assert gf[0].abs().sum() > 0


@pytest.mark.parametrize("hidden", [False, True], ids=["logits", "hidden"])
def test_backward_scales_by_the_incoming_gradient(hidden: bool) -> None:
    x = _inputs(3, hidden)
    cfg = RLVRLossConfig(kl_chunk_size=2)
    _, _, g1 = _run(x, cfg, fused=True, hidden=hidden, beta=0.2)
    _, _, g3 = _run(x, cfg, fused=True, hidden=hidden, beta=0.2, scale=-3.0)
    for a, b in zip(g1, g3, strict=True):
        torch.testing.assert_close(b, -3.0 * a, rtol=1e-12, atol=1e-14)


def test_second_backward_is_a_clear_error() -> None:
    x = _inputs(4, False)
    policy = x["policy"].clone().requires_grad_()
    loss, _ = rlvr_loss_from_logits(policy, x["targets"], x["adv"], x["mask"],
                                    ref_logits=x["ref"], beta=0.1)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="one backward pass"):
        loss.backward()


def test_only_the_head_needs_a_gradient() -> None:
    x = _inputs(5, True)
    weight = x["weight"].clone().requires_grad_()
    cfg = RLVRLossConfig(kl_chunk_size=4)
    loss, _ = rlvr_loss_from_logits(x["policy"], x["targets"], x["adv"], x["mask"],
                                    ref_logits=x["ref"], weight=weight,
                                    ref_weight=x["ref_weight"], beta=0.1, config=cfg)
    loss.backward()
    w2 = x["weight"].clone().requires_grad_()
    want, _ = rlvr_loss_from_logits(x["policy"], x["targets"], x["adv"], x["mask"],
                                    ref_logits=x["ref"], weight=w2, ref_weight=x["ref_weight"],
                                    beta=0.1, config=cfg, fused=False)
    want.backward()
    assert weight.grad is not None and w2.grad is not None
    torch.testing.assert_close(weight.grad, w2.grad, rtol=1e-10, atol=1e-12)


def test_without_grad_the_values_are_the_same() -> None:
    x = _inputs(6, False)
    cfg = RLVRLossConfig(kl_chunk_size=3)
    policy = x["policy"].clone().requires_grad_()
    with_grad, m1 = rlvr_loss_from_logits(policy, x["targets"], x["adv"], x["mask"],
                                          ref_logits=x["ref"], beta=0.1, config=cfg)
    with torch.no_grad():
        no_grad, m2 = rlvr_loss_from_logits(policy, x["targets"], x["adv"], x["mask"],
                                            ref_logits=x["ref"], beta=0.1, config=cfg)
    assert not no_grad.requires_grad and with_grad.requires_grad
    assert float(with_grad.detach()) == pytest.approx(float(no_grad), rel=1e-12)
    assert m1 == pytest.approx(m2, rel=1e-10)


def test_shape_errors_name_the_shapes() -> None:
    logits = torch.randn(2, 3, 5, requires_grad=True)
    with pytest.raises(ValueError, match=r"\(2, 4\)"):
        rlvr_loss_from_logits(logits, torch.zeros(2, 4, dtype=torch.long), torch.zeros(2),
                              torch.ones(2, 4))
