"""Normalisation modes, gradient accumulation, and data parallelism with two gloo ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from lvt_trainer.loss import RLVRLossConfig, rlvr_loss_from_logits
from lvt_trainer.normalize import (
    global_sequence_count,
    global_token_count,
    normalize_loss,
)

MODES = ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"]


def test_modes_by_hand() -> None:
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    m = torch.tensor([[1, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert normalize_loss(x, m, "token_mean").item() == pytest.approx((1 + 2 + 6) / 3)
    assert normalize_loss(x, m, "seq_mean_token_mean").item() == pytest.approx((1.5 + 6) / 2)
    assert normalize_loss(x, m, "seq_mean_token_sum").item() == pytest.approx((3 + 6) / 2)
    for alias in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum"):
        assert normalize_loss(x, m, alias).item() == normalize_loss(  # type: ignore[arg-type]
            x, m, alias.replace("-", "_")).item()  # type: ignore[arg-type]
    assert global_token_count(m).item() == 3
    assert global_sequence_count([m, m]).item() == 4
    empty = torch.zeros(2, 3)
    assert normalize_loss(x[:2], empty, "token_mean").item() == 0.0
    with pytest.raises(ValueError):
        normalize_loss(x, m, "bogus")  # type: ignore[arg-type]


def _batch(seed: int, bsz: int = 4, seq: int = 6, vocab: int = 13, hid: int = 5):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(bsz, seq, hid, generator=g, dtype=torch.float64)
    ref_h = torch.randn(bsz, seq, hid, generator=g, dtype=torch.float64)
    targets = torch.randint(0, vocab, (bsz, seq), generator=g)
    mask = (torch.rand(bsz, seq, generator=g) > 0.4).long()
    mask[-1] = 0  # an empty sequence
    mask[0, 0] = 1
    adv = torch.randn(bsz, generator=g, dtype=torch.float64)
    old = -2 * torch.rand(bsz, seq, generator=g, dtype=torch.float64) - 1.5
    return hidden, ref_h, targets, mask, adv, old


def _weights(vocab: int = 13, hid: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(99)
    w = torch.randn(vocab, hid, generator=g, dtype=torch.float64)
    rw = torch.randn(vocab, hid, generator=g, dtype=torch.float64)
    return w, rw


def _loss_and_grad(parts: list[tuple], mode: str, counts: dict | None) -> tuple[float, list]:
    """Sum of micro-batch losses and the gradient of the shared weight."""
    w, rw = _weights()
    w.requires_grad_()
    total = 0.0
    cfg = RLVRLossConfig(normalization=mode, kl_chunk_size=4)  # type: ignore[arg-type]
    for hidden, ref_h, targets, mask, adv, old in parts:
        loss, _ = rlvr_loss_from_logits(
            hidden,
            targets,
            adv,
            mask,
            ref_logits=ref_h,
            weight=w,
            ref_weight=rw,
            logp_old=old,
            beta=0.3,
            config=cfg,
            **(counts or {}),
        )
        loss.backward()
        total += loss.item()
    assert w.grad is not None
    return total, w.grad.tolist()


def _concat(a: tuple, b: tuple) -> tuple:
    return tuple(torch.cat([x, y]) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("mode", MODES)
def test_gradient_accumulation_matches_full_batch(mode: str) -> None:
    a, b = _batch(1), _batch(2)
    full_loss, full_grad = _loss_and_grad([_concat(a, b)], mode, None)
    counts = {
        "global_token_count": global_token_count([a[3], b[3]]),
        "global_seq_count": global_sequence_count([a[3], b[3]]),
    }
    acc_loss, acc_grad = _loss_and_grad([a, b], mode, counts)
    assert acc_loss == pytest.approx(full_loss, rel=1e-10)
    torch.testing.assert_close(torch.tensor(acc_grad), torch.tensor(full_grad))
    # without the step-level counts the micro-batch results differ (the check has teeth)
    naive_loss, _ = _loss_and_grad([a, b], mode, None)
    assert naive_loss != pytest.approx(full_loss, rel=1e-6)


def _dp_worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        results = {}
        for mode in MODES:
            # rank 0 gets a 2-row shard, rank 1 a 4-row shard: uneven token counts
            shard = _batch(10 + rank, bsz=2 + 2 * rank)
            loss, grad = _loss_and_grad([shard], mode, None)  # counts all-reduced inside
            lt = torch.tensor([loss], dtype=torch.float64)
            gt = torch.tensor(grad, dtype=torch.float64)
            dist.all_reduce(lt)  # DDP semantics: average loss and gradients over ranks
            dist.all_reduce(gt)
            results[mode] = {"loss": lt.item() / world, "grad": (gt / world).tolist()}
        if rank == 0:
            Path(out_dir, "dp.json").write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


def test_data_parallel_two_gloo_ranks_equal_single_process(tmp_path: Path) -> None:
    init_file = tmp_path / "pg_init"
    mp.spawn(_dp_worker, args=(2, str(init_file), str(tmp_path)), nprocs=2, join=True)
    results = json.loads((tmp_path / "dp.json").read_text())
    for mode in MODES:
        full = _concat(_batch(10, bsz=2), _batch(11, bsz=4))
        want_loss, want_grad = _loss_and_grad([full], mode, None)
        assert results[mode]["loss"] == pytest.approx(want_loss, rel=1e-10), mode
        torch.testing.assert_close(torch.tensor(results[mode]["grad"]), torch.tensor(want_grad))
