"""Chunked exact KL / log-prob / entropy against independent float64 references."""

from __future__ import annotations

import math

import pytest
import torch

from lvt_trainer.kl import (
    ChunkedTokenStats,
    exact_kl,
    sampled_kl,
    smoothed_log_softmax,
    token_logprobs_entropy,
    token_stats,
)


def ref_stats_loops(
    logits: torch.Tensor, targets: torch.Tensor, ref: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-position naive formulas (plain ops, one position at a time)."""
    bsz, seq, vocab = logits.shape
    lps, ents, kls = [], [], []
    for b in range(bsz):
        for t in range(seq):
            z = logits[b, t].double()
            m = z.max()
            logz = m + torch.log(torch.exp(z - m).sum())
            logp = z - logz
            p = torch.exp(logp)
            rz = ref[b, t].double()
            rq = torch.exp(rz - rz.max())
            rq = rq / rq.sum()
            rq = (1 - eps) * rq + eps / vocab
            lps.append(logp[targets[b, t]])
            ents.append(-(p * logp).sum())
            kls.append((p * (logp - torch.log(rq))).sum())
    shape = (bsz, seq)
    return (
        torch.stack(lps).view(shape),
        torch.stack(ents).view(shape),
        torch.stack(kls).view(shape),
    )


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 4, 7, 64])
@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_chunked_matches_naive_values_and_grads(chunk: int | None, eps: float) -> None:
    g = torch.Generator().manual_seed(1)
    bsz, seq, vocab = 2, 9, 13
    logits = (3 * torch.randn(bsz, seq, vocab, generator=g, dtype=torch.float64)).requires_grad_()
    ref = 3 * torch.randn(bsz, seq, vocab, generator=g, dtype=torch.float64)
    targets = torch.randint(0, vocab, (bsz, seq), generator=g)
    w_lp, w_ent, w_kl = torch.randn(3, bsz, seq, generator=g, dtype=torch.float64)

    lp, ent, kl = token_stats(logits, targets, ref, chunk_size=chunk, ref_smoothing=eps)
    assert lp is not None and ent is not None and kl is not None
    (lp * w_lp + ent * w_ent + kl * w_kl).sum().backward()
    grad = logits.grad.clone()

    logits.grad = None
    rlp, rent, rkl = ref_stats_loops(logits, targets, ref, eps)
    (rlp * w_lp + rent * w_ent + rkl * w_kl).sum().backward()
    torch.testing.assert_close(lp, rlp, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ent, rent, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(kl, rkl, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grad, logits.grad, rtol=1e-9, atol=1e-12)
    assert (kl >= -1e-12).all()


@pytest.mark.parametrize("chunk", [1, 3, 5])
def test_chunked_equals_unchunked_fp32(chunk: int) -> None:
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 11, 50, generator=g).requires_grad_()
    ref = torch.randn(2, 11, 50, generator=g)
    targets = torch.randint(0, 50, (2, 11), generator=g)
    outs = []
    for cs in (None, chunk):
        logits.grad = None
        lp, ent, kl = token_stats(logits, targets, ref, chunk_size=cs, ref_smoothing=0.01)
        (lp.sum() + 0.3 * ent.sum() + 2 * kl.sum()).backward()  # type: ignore[union-attr]
        outs.append((lp, ent, kl, logits.grad.clone()))
    for a, b in zip(*outs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_gradcheck_logits_path() -> None:
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    ref = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    targets = torch.randint(0, 5, (2, 3), generator=g)

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return ChunkedTokenStats.apply(x, None, ref, None, targets, 2, 0.1, True, True, True)

    assert torch.autograd.gradcheck(fn, (logits,))
    assert torch.autograd.gradcheck(lambda x: exact_kl(x, ref, chunk_size=3), (logits,))


def test_gradcheck_hidden_path() -> None:
    g = torch.Generator().manual_seed(4)
    hidden = torch.randn(2, 3, 3, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    ref_h = torch.randn(2, 3, 3, generator=g, dtype=torch.float64)
    ref_w = torch.randn(6, 3, generator=g, dtype=torch.float64)
    targets = torch.randint(0, 6, (2, 3), generator=g)

    def fn(h: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return token_stats(h, targets, ref_h, weight=w, ref_weight=ref_w, chunk_size=2)

    assert torch.autograd.gradcheck(fn, (hidden, weight))


def test_hidden_path_equals_logits_path() -> None:
    g = torch.Generator().manual_seed(5)
    hidden = torch.randn(2, 7, 6, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(20, 6, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 20, (2, 7), generator=g)
    lp, ent = token_logprobs_entropy(hidden, targets, weight=weight, chunk_size=3)
    assert ent is not None
    (lp.sum() + ent.sum()).backward()
    gh, gw = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    logits = hidden @ weight.t()
    lp2 = torch.log_softmax(logits, -1).gather(-1, targets[..., None]).squeeze(-1)
    ent2 = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)
    (lp2.sum() + ent2.sum()).backward()
    torch.testing.assert_close(lp, lp2)
    torch.testing.assert_close(ent, ent2)
    torch.testing.assert_close(gh, hidden.grad)
    torch.testing.assert_close(gw, weight.grad)


def test_smoothing_formula_and_finite_kl_with_zero_mass_reference() -> None:
    z = torch.tensor([[0.0, 1.0, -2.0, 3.0]], dtype=torch.float64)
    eps = 0.2
    want = torch.log((1 - eps) * torch.softmax(z, -1) + eps / 4)
    torch.testing.assert_close(smoothed_log_softmax(z, eps), want)
    # reference puts ~zero mass on token 0 where the policy has most of it
    logits = torch.tensor([[[10.0, 0.0, 0.0]]], requires_grad=True)
    ref = torch.tensor([[[-1e4, 0.0, 0.0]]])
    kl_raw = exact_kl(logits, ref)
    kl_s = exact_kl(logits, ref, ref_smoothing=1e-3)
    assert kl_raw.item() > 1000
    assert math.isfinite(kl_s.item()) and kl_s.item() < kl_raw.item()


def test_bf16_inputs_computed_in_fp32() -> None:
    g = torch.Generator().manual_seed(6)
    logits32 = 4 * torch.randn(2, 6, 300, generator=g)
    ref32 = 4 * torch.randn(2, 6, 300, generator=g)
    targets = torch.randint(0, 300, (2, 6), generator=g)
    lb = logits32.bfloat16().requires_grad_()
    lp, ent, kl = token_stats(lb, targets, ref32.bfloat16(), chunk_size=4)
    assert lp is not None and ent is not None and kl is not None
    assert lp.dtype == torch.float32
    (lp.sum() + kl.sum()).backward()
    assert lb.grad is not None and lb.grad.dtype == torch.bfloat16
    assert torch.isfinite(lb.grad.float()).all()
    lp32, _, kl32 = token_stats(
        lb.detach().float(), targets, ref32.bfloat16().float(), chunk_size=None
    )
    torch.testing.assert_close(lp, lp32)
    torch.testing.assert_close(kl, kl32)


def test_sampled_estimators_formulas_and_grads() -> None:
    lp = torch.tensor([-1.0, -2.0, -0.5, -3.0], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([-1.5, -1.0, -0.5, -0.1], dtype=torch.float64)
    for name in ("k1", "k2", "k3"):
        lp.grad = None
        val = sampled_kl(lp, ref, name)  # type: ignore[arg-type]
        val.sum().backward()
        for i in range(4):
            d = ref[i].item() - lp[i].item()
            want, dwant = {
                "k1": (-d, 1.0),
                "k2": (0.5 * d * d, -d),
                "k3": (math.exp(d) - d - 1, 1 - math.exp(d)),
            }[name]
            assert val[i].item() == pytest.approx(want, rel=1e-12, abs=1e-12)
            assert lp.grad[i].item() == pytest.approx(dwant, rel=1e-12, abs=1e-12)


def test_sampled_estimators_finite_for_huge_gaps_bf16() -> None:
    lp = torch.tensor([-60.0, -0.1, -10.0], dtype=torch.bfloat16, requires_grad=True)
    ref = torch.tensor([-0.1, -60.0, -10.0], dtype=torch.bfloat16)
    for name in ("k1", "k2", "k3"):
        lp.grad = None
        val = sampled_kl(lp, ref, name)  # type: ignore[arg-type]
        val.sum().backward()
        assert torch.isfinite(val).all() and torch.isfinite(lp.grad.float()).all()
    with pytest.raises(ValueError):
        sampled_kl(lp, ref, "k4")  # type: ignore[arg-type]
