"""The RLVR loss against an independent float64 reference with analytic gradients."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from lvt_trainer.gate import FixedGate
from lvt_trainer.kl import token_stats
from lvt_trainer.loss import RLVRLossConfig, rlvr_loss, rlvr_loss_from_logits

BOUND = 20.0


def reference(
    lp: list[list[float]],
    old: list[list[float]],
    beh: list[list[float]] | None,
    adv: list[float],
    mask: list[list[int]],
    kl_in: list[list[float]] | None,
    ref_lp: list[list[float]] | None,
    *,
    clip_mode: str,
    kl_mode: str,
    norm: str,
    beta: float,
    alpha: float,
    cap: float = 5.0,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    tis_cap: float | None = None,
) -> tuple[float, list[list[float]], list[list[float]]]:
    """Scalar loops: returns (loss, d loss / d lp, d loss / d kl_in)."""
    bsz, seq = len(lp), len(lp[0])
    n_tok = sum(sum(r) for r in mask)
    n_seq = sum(1 for r in mask if sum(r) > 0)
    value = 0.0
    g_lp = [[0.0] * seq for _ in range(bsz)]
    g_kl = [[0.0] * seq for _ in range(bsz)]
    for b in range(bsz):
        row_tokens = sum(mask[b])
        for t in range(seq):
            if not mask[b][t]:
                continue
            if norm == "token_mean":
                scale = 1.0 / n_tok
            elif norm == "seq_mean_token_mean":
                scale = 1.0 / (row_tokens * n_seq)
            else:
                scale = 1.0 / n_seq
            a = adv[b]
            x = max(-BOUND, min(BOUND, lp[b][t] - old[b][t]))
            inside = -BOUND < lp[b][t] - old[b][t] < BOUND
            w = math.exp(x)
            tis = 1.0
            if tis_cap is not None and beh is not None:
                tis = min(math.exp(max(-BOUND, min(BOUND, old[b][t] - beh[b][t]))), tis_cap)
            if clip_mode == "proximal":
                weff = cap if (w > cap and a < 0) else w
                val, dval = -weff * tis * a, -weff * tis * a
            elif clip_mode == "none":
                val, dval = -w * tis * a, -w * tis * a
            else:  # ppo
                clipped_r = min(max(w, 1 - eps_low), 1 + eps_high)
                s1, s2 = w * a, clipped_r * a
                if s1 <= s2:
                    val, dval = -tis * s1, (-tis * a * w if inside else 0.0)
                else:
                    val, dval = -tis * s2, 0.0
            gamma = 1.0 / (1.0 + math.exp(-alpha * a))
            if kl_mode == "exact":
                assert kl_in is not None
                k, dk_dlp, dk_dkl = kl_in[b][t], 0.0, 1.0
            elif kl_mode in ("k1", "k2", "k3"):
                assert ref_lp is not None
                d = ref_lp[b][t] - lp[b][t]
                if kl_mode == "k1":
                    k, dk_dlp = -d, 1.0
                elif kl_mode == "k2":
                    k, dk_dlp = 0.5 * d * d, -d
                else:
                    k, dk_dlp = math.exp(d) - d - 1.0, 1.0 - math.exp(d)
                dk_dkl = 0.0
            else:
                k = dk_dlp = dk_dkl = 0.0
            value += scale * (val + beta * gamma * k)
            g_lp[b][t] = scale * (dval + beta * gamma * dk_dlp)
            g_kl[b][t] = scale * beta * gamma * dk_dkl
    return value, g_lp, g_kl


def make_inputs(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    bsz, seq = 4, 7
    lp = -torch.rand(bsz, seq, generator=g, dtype=torch.float64) * 3 - 0.05
    old = lp + 1.5 * torch.randn(bsz, seq, generator=g, dtype=torch.float64)
    old[0, 1] = lp[0, 1] - 3.0  # w = e^3 > 5 on a negative-advantage row
    old[1, 2] = lp[1, 2] - 3.0  # and on a positive one
    beh = old + 0.7 * torch.randn(bsz, seq, generator=g, dtype=torch.float64)
    adv = torch.tensor([-1.3, 0.8, 0.0, -0.4], dtype=torch.float64)
    mask = (torch.rand(bsz, seq, generator=g) > 0.3).long()
    mask[0, 1] = mask[1, 2] = 1
    mask[2, 0] = 1
    kl = torch.rand(bsz, seq, generator=g, dtype=torch.float64) * 0.5
    ref_lp = lp + 0.5 * torch.randn(bsz, seq, generator=g, dtype=torch.float64)
    return {"lp": lp, "old": old, "beh": beh, "adv": adv, "mask": mask, "kl": kl, "ref": ref_lp}


@pytest.mark.parametrize("clip_mode", ["proximal", "ppo", "none"])
@pytest.mark.parametrize("tis_cap", [None, 1.5])
@pytest.mark.parametrize("kl_mode", ["exact", "k1", "k2", "k3", "none"])
@pytest.mark.parametrize("norm", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"])
def test_loss_matches_reference(
    clip_mode: str, tis_cap: float | None, kl_mode: str, norm: str
) -> None:
    x = make_inputs(7)
    if norm != "token_mean":
        x["mask"][3] = 0  # an empty sequence must not count
    cfg = RLVRLossConfig(
        clip_mode=clip_mode,  # type: ignore[arg-type]
        ppo_eps_high=0.28,
        tis_cap=tis_cap,
        kl_mode=kl_mode,  # type: ignore[arg-type]
        normalization=norm,  # type: ignore[arg-type]
    )
    lp = x["lp"].clone().requires_grad_()
    kl = x["kl"].clone().requires_grad_()
    beta, alpha = 0.3, 1.7
    loss, metrics = rlvr_loss(
        lp,
        x["adv"],
        x["mask"],
        logp_old=x["old"],
        logp_behavior=x["beh"],
        kl=kl,
        ref_logp=x["ref"],
        beta=beta,
        gate=FixedGate(alpha),
        config=cfg,
    )
    loss.backward()
    want, g_lp, g_kl = reference(
        x["lp"].tolist(),
        x["old"].tolist(),
        x["beh"].tolist(),
        x["adv"].tolist(),
        x["mask"].tolist(),
        x["kl"].tolist(),
        x["ref"].tolist(),
        clip_mode=clip_mode,
        kl_mode=kl_mode,
        norm=norm,
        beta=beta,
        alpha=alpha,
        eps_high=0.28,
        tis_cap=tis_cap,
    )
    assert loss.item() == pytest.approx(want, rel=1e-10, abs=1e-12)
    assert metrics["loss"] == pytest.approx(want, rel=1e-10, abs=1e-12)
    torch.testing.assert_close(lp.grad, torch.tensor(g_lp, dtype=torch.float64))
    if kl_mode == "exact":
        torch.testing.assert_close(kl.grad, torch.tensor(g_kl, dtype=torch.float64))
    else:
        assert kl.grad is None or not kl.grad.any()
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["policy_loss"] + metrics["kl_loss"] == pytest.approx(want, abs=1e-10)


def test_proximal_clip_only_caps_negative_advantages() -> None:
    lp = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    old = torch.full((2, 3), -4.0, dtype=torch.float64)  # w = e^4 ~ 54.6 > 5 everywhere
    old[:, 0] = -1.0  # w = e ~ 2.7 < 5 in column 0
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    mask = torch.ones(2, 3)
    cfg = RLVRLossConfig(kl_mode="none", normalization="seq_mean_token_sum")
    loss, m = rlvr_loss(lp, adv, mask, logp_old=old, config=cfg)
    loss.backward()
    e4, e1 = math.exp(4.0), math.exp(1.0)
    # per-token gradient -w~ * A / n_seq with n_seq = 2
    want = torch.tensor([[-e1, -e4, -e4], [e1, 5.0, 5.0]], dtype=torch.float64) / 2
    torch.testing.assert_close(lp.grad, want)
    assert m["clip_frac_pos_adv"] == 0.0
    assert m["clip_frac_neg_adv"] == pytest.approx(2 / 3)
    assert m["weight_max"] == pytest.approx(e4)
    # a different cap
    lp.grad = None
    loss, _ = rlvr_loss(lp, adv, mask, logp_old=old, config=replace(cfg, proximal_cap=10.0))
    loss.backward()
    assert lp.grad[1, 1].item() == pytest.approx(10.0 / 2)
    assert lp.grad[0, 1].item() == pytest.approx(-e4 / 2)


def test_ppo_clip_fraction_split_by_sign() -> None:
    lp = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[-1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)  # r = e, 1 / 1/e, 1
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    cfg = RLVRLossConfig(clip_mode="ppo", kl_mode="none")
    loss, m = rlvr_loss(lp, adv, torch.ones(2, 2), logp_old=old, config=cfg)
    loss.backward()
    assert m["clip_frac_pos_adv"] == 0.5 and m["clip_frac_neg_adv"] == 0.5
    assert lp.grad[0, 0].item() == 0.0 and lp.grad[1, 0].item() == 0.0
    assert lp.grad[0, 1].item() == pytest.approx(-0.25)
    assert lp.grad[1, 1].item() == pytest.approx(0.25)


def naive_logits_pipeline(
    logits: torch.Tensor,
    targets: torch.Tensor,
    ref_logits: torch.Tensor,
    old: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    beta: float,
    alpha: float,
    cap: float,
) -> torch.Tensor:
    """Surrogate with the documented gradient, via full log-softmax (plain torch ops)."""
    logp_all = torch.log_softmax(logits.double(), -1)
    ref_all = torch.log_softmax(ref_logits.double(), -1)
    lp = logp_all.gather(-1, targets[..., None]).squeeze(-1)
    kl = (logp_all.exp() * (logp_all - ref_all)).sum(-1)
    a = adv.double()[:, None].expand_as(lp)
    w = torch.exp(lp.detach() - old)
    weff = torch.where((w > cap) & (a < 0), torch.full_like(w, cap), w)
    gamma = torch.sigmoid(alpha * a)
    per_tok = -(weff * a) * torch.exp(lp - lp.detach()) + beta * gamma * kl
    return (per_tok * mask).sum() / mask.sum()


@pytest.mark.parametrize("chunk", [None, 1, 4, 5])
def test_from_logits_matches_naive_pipeline(chunk: int | None) -> None:
    g = torch.Generator().manual_seed(11)
    bsz, seq, vocab = 3, 6, 17
    logits = (2 * torch.randn(bsz, seq, vocab, generator=g, dtype=torch.float64)).requires_grad_()
    ref = 2 * torch.randn(bsz, seq, vocab, generator=g, dtype=torch.float64)
    targets = torch.randint(0, vocab, (bsz, seq), generator=g)
    old = -3 * torch.rand(bsz, seq, generator=g, dtype=torch.float64) - 2
    adv = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    mask = (torch.rand(bsz, seq, generator=g) > 0.25).double()
    cfg = RLVRLossConfig(kl_chunk_size=chunk)
    loss, m = rlvr_loss_from_logits(
        logits, targets, adv, mask, ref_logits=ref, logp_old=old, beta=0.2, config=cfg
    )
    loss.backward()
    grad = logits.grad.clone()
    logits.grad = None
    want = naive_logits_pipeline(logits, targets, ref, old, adv, mask, 0.2, 1.0, 5.0)
    want.backward()
    assert loss.item() == pytest.approx(want.item(), rel=1e-10)
    torch.testing.assert_close(grad, logits.grad)
    assert m["entropy_mean"] > 0 and m["kl_mean"] > 0
    assert 0 < m["gate_mean"] < 1


def test_masked_tokens_get_exactly_zero_gradient() -> None:
    g = torch.Generator().manual_seed(12)
    logits = torch.randn(2, 5, 11, generator=g, requires_grad=True)
    ref = torch.randn(2, 5, 11, generator=g)
    targets = torch.randint(0, 11, (2, 5), generator=g)
    mask = torch.tensor([[0, 1, 1, 0, 1], [1, 0, 0, 1, 0]])
    old = torch.randn(2, 5, generator=g) - 2
    beh = old.clone()
    # garbage at masked positions must not leak into the gradient
    old[0, 0] = float("nan")
    beh[1, 1] = float("-inf")
    for kl_mode in ("exact", "k3"):
        logits.grad = None
        cfg = RLVRLossConfig(kl_mode=kl_mode, tis_cap=2.0, entropy_coef=0.01, kl_chunk_size=2)  # type: ignore[arg-type]
        loss, m = rlvr_loss_from_logits(
            logits,
            targets,
            torch.tensor([1.0, -1.0]),
            mask,
            ref_logits=ref,
            logp_old=old,
            logp_behavior=beh,
            beta=0.5,
            config=cfg,
        )
        loss.backward()
        assert torch.isfinite(loss)
        assert all(math.isfinite(v) for v in m.values())
        masked = mask == 0
        assert (logits.grad[masked] == 0).all()
        assert (logits.grad[~masked].abs().sum(-1) > 0).all()
    # direct per-token inputs with non-finite values at masked positions
    lp = torch.tensor([[-1.0, float("-inf")], [float("nan"), -2.0]], requires_grad=True)
    loss, _ = rlvr_loss(
        lp,
        torch.tensor([1.0, -1.0]),
        torch.tensor([[1, 0], [0, 1]]),
        ref_logp=torch.tensor([[-1.5, 0.0], [0.0, -1.0]]),
        beta=0.1,
        config=RLVRLossConfig(kl_mode="k2"),
    )
    loss.backward()
    assert torch.isfinite(loss)
    assert lp.grad[0, 1].item() == 0.0 and lp.grad[1, 0].item() == 0.0


@pytest.mark.parametrize("gap", [50.0, -50.0])
@pytest.mark.parametrize("clip_mode", ["proximal", "ppo", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_finite_for_huge_log_ratio_gaps(gap: float, clip_mode: str, dtype: torch.dtype) -> None:
    lp = torch.full((2, 3), -1.0, dtype=dtype, requires_grad=True)
    old = (lp.detach().float() - gap).to(dtype)
    beh = (old.float() + gap).to(dtype)
    ref = (lp.detach().float() + gap).to(dtype)
    for kl_mode in ("k1", "k2", "k3"):
        lp.grad = None
        cfg = RLVRLossConfig(clip_mode=clip_mode, tis_cap=2.0, kl_mode=kl_mode)  # type: ignore[arg-type]
        loss, m = rlvr_loss(
            lp,
            torch.tensor([1.0, -1.0], dtype=dtype),
            torch.ones(2, 3),
            logp_old=old,
            logp_behavior=beh,
            ref_logp=ref,
            beta=0.1,
            config=cfg,
        )
        loss.backward()
        assert loss.dtype == torch.float32
        assert torch.isfinite(loss)
        assert torch.isfinite(lp.grad.float()).all()
        assert all(math.isfinite(v) for v in m.values())
        assert m["weight_max"] <= math.exp(20.0) * 1.001


def test_bf16_logits_close_to_fp32() -> None:
    g = torch.Generator().manual_seed(13)
    logits = 3 * torch.randn(2, 8, 64, generator=g)
    ref = 3 * torch.randn(2, 8, 64, generator=g)
    targets = torch.randint(0, 64, (2, 8), generator=g)
    adv = torch.tensor([0.7, -0.9])
    mask = torch.ones(2, 8)
    results = []
    for dt in (torch.float32, torch.bfloat16):
        x = logits.detach().to(dt).clone().requires_grad_()
        loss, _ = rlvr_loss_from_logits(
            x,
            targets,
            adv,
            mask,
            ref_logits=ref.to(dt),
            beta=0.1,
            config=RLVRLossConfig(kl_chunk_size=3),
        )
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(x.grad.float()).all()
        results.append((loss.item(), x.grad.float()))
    assert results[1][0] == pytest.approx(results[0][0], abs=0.05)
    torch.testing.assert_close(results[1][1], results[0][1], atol=2e-3, rtol=0.05)


def test_exact_kl_requires_kl_when_beta_nonzero() -> None:
    with pytest.raises(ValueError):
        rlvr_loss(torch.zeros(1, 2), torch.zeros(1), torch.ones(1, 2), beta=0.1)
    loss, m = rlvr_loss(torch.zeros(1, 2), torch.zeros(1), torch.zeros(1, 2), beta=0.0)
    assert loss.item() == 0.0 and m["num_tokens"] == 0.0


def test_token_stats_feed_rlvr_loss_identically() -> None:
    """rlvr_loss_from_logits == token_stats + rlvr_loss (the two public paths agree)."""
    g = torch.Generator().manual_seed(14)
    logits = torch.randn(2, 4, 9, generator=g, dtype=torch.float64)
    ref = torch.randn(2, 4, 9, generator=g, dtype=torch.float64)
    targets = torch.randint(0, 9, (2, 4), generator=g)
    adv, mask = torch.tensor([1.0, -1.0]), torch.ones(2, 4)
    a, _ = rlvr_loss_from_logits(logits, targets, adv, mask, ref_logits=ref, beta=0.4)
    lp, ent, kl = token_stats(logits, targets, ref)
    assert lp is not None
    b, _ = rlvr_loss(lp, adv, mask, kl=kl, entropy=ent, beta=0.4)
    assert a.item() == pytest.approx(b.item(), rel=1e-12)
