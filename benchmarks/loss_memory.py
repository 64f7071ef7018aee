"""Peak memory and fwd+bwd time of the exact-KL RLVR loss: naive vs chunked.

Each variant runs in a fresh subprocess so peaks do not mix. On CPU memory is the
process's maximum resident set size (``resource.getrusage().ru_maxrss``; tracemalloc does
not see torch allocations) minus the resident size of the Python/torch runtime measured
before any input exists, so it counts tensors as ``torch.cuda.max_memory_allocated`` does
on CUDA. Reported:

* ``peak``: peak tensor memory of the step: inputs, the loss's temporaries, gradients;
* ``rss``: the absolute peak resident size of the process (CPU only);
* ``extra``: peak minus the level right after the inputs were allocated, i.e. what the
  loss itself adds on top of what it is given (the figure the chunking controls).

With logits as inputs, policy logits, reference logits and the logits' gradient
(``3 x T x V`` floats) are a floor no loss implementation can go under, so the total-peak
ratio of the logits variants stays near one half; the hidden-state variants (final hidden
states and LM-head weights in, as a trainer that cares about memory runs it) are where the
chunked loss is compared on total peak.

Variants:

* ``naive``: full fp32 ``log_softmax`` of policy and reference logits, exact KL, entropy
  and target log-probs with plain autograd (``lvt_trainer.kl.naive_token_stats``).
* ``chunked``: ``lvt_trainer.loss.rlvr_loss_from_logits`` (fused: one chunked pass that
  forms the gradient in forward, see ``lvt_trainer.fused``).
* ``naive_hidden`` / ``chunked_hidden`` (``--hidden H``, default 896 as in Qwen2.5-0.5B;
  ``--hidden 0`` skips them): the inputs are final hidden states and LM-head weights; the
  naive variant builds the full logits, the chunked one never materialises more than
  ``chunk x V`` logits.

Usage: ``python benchmarks/loss_memory.py [--vocab 151936] [--seq 2048] [--chunk 256]
[--hidden 896] [--dtype fp32|bf16] [--device cpu|cuda]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_TRAINER = _HERE.parent / "trainer"
if str(_TRAINER) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(_TRAINER))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _worker(args: argparse.Namespace) -> dict[str, float | str]:
    import torch

    from lvt_trainer.kl import naive_token_stats
    from lvt_trainer.loss import RLVRLossConfig, rlvr_loss, rlvr_loss_from_logits

    torch.manual_seed(0)
    torch.ones(8).sum()  # finish lazy runtime initialisation before measuring
    runtime = 0.0 if args.device.startswith("cuda") else _rss_mib()
    dev = torch.device(args.device)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    cuda = dev.type == "cuda"
    b, t, v, h = args.batch, args.seq, args.vocab, args.hidden
    hidden_mode = args.variant.endswith("_hidden")
    if hidden_mode:
        pol = torch.randn(b, t, h, device=dev, dtype=dtype).requires_grad_()
        ref = torch.randn(b, t, h, device=dev, dtype=dtype)
        w = (torch.randn(v, h, device=dev, dtype=dtype) / h**0.5).requires_grad_()
        rw = torch.randn(v, h, device=dev, dtype=dtype) / h**0.5
    else:
        pol = torch.randn(b, t, v, device=dev, dtype=dtype).requires_grad_()
        ref = torch.randn(b, t, v, device=dev, dtype=dtype)
        w = rw = None
    targets = torch.randint(0, v, (b, t), device=dev)
    adv = torch.randn(b, device=dev)
    mask = torch.ones(b, t, device=dev)
    old = -torch.rand(b, t, device=dev) * 5 - 8
    cfg = RLVRLossConfig(kl_chunk_size=args.chunk)

    def run() -> float:
        if args.variant.startswith("naive"):
            logits = pol @ w.t() if hidden_mode else pol  # type: ignore[union-attr]
            ref_logits = ref @ rw.t() if hidden_mode else ref  # type: ignore[union-attr]
            lp, ent, kl = naive_token_stats(logits, targets, ref_logits)
            assert lp is not None
            loss, _ = rlvr_loss(
                lp, adv, mask, logp_old=old, kl=kl, entropy=ent, beta=0.05, config=cfg
            )
        else:
            loss, _ = rlvr_loss_from_logits(
                pol,
                targets,
                adv,
                mask,
                ref_logits=ref,
                weight=w,
                ref_weight=rw,
                logp_old=old,
                beta=0.05,
                config=cfg,
            )
        loss.backward()
        return float(loss.detach())

    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() / 2**20
    else:
        base = _rss_mib()
    t0 = time.perf_counter()
    loss = run()
    if cuda:
        torch.cuda.synchronize()
    first = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else _rss_mib()
    times = [first]
    for _ in range(args.repeat - 1):
        pol.grad = None
        if w is not None:
            w.grad = None
        t0 = time.perf_counter()
        run()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    grad = pol.grad if w is None else w.grad
    assert grad is not None
    return {
        "variant": args.variant,
        "loss": loss,
        "grad_abs_sum": float(grad.float().abs().sum()),
        "base_mib": base - runtime,
        "peak_mib": peak - runtime,
        "rss_mib": peak,
        "extra_mib": peak - base,
        "time_s": min(times),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--chunk", type=int, default=256)
    p.add_argument(
        "--hidden", type=int, default=896, help="hidden size of the *_hidden variants (0: skip)"
    )
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--device", default=None, help="default: cuda if available else cpu")
    p.add_argument("--repeat", type=int, default=1, help="timed runs (min is reported)")
    p.add_argument("--variants", default=None, help="comma list (default: all that apply)")
    p.add_argument("--worker", dest="variant", default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print one JSON line per variant")
    args = p.parse_args(argv)
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.variant is not None:
        print("RESULT " + json.dumps(_worker(args)), flush=True)
        return 0

    variants = ["naive", "chunked"]
    if args.hidden:
        variants += ["naive_hidden", "chunked_hidden"]
    if args.variants:
        variants = args.variants.split(",")
    print(
        f"exact-KL RLVR loss fwd+bwd: B={args.batch} T={args.seq} V={args.vocab} "
        f"dtype={args.dtype} chunk={args.chunk} device={args.device}"
        + (f" hidden={args.hidden}" if args.hidden else ""),
        flush=True,
    )
    common = [
        "--vocab",
        str(args.vocab),
        "--seq",
        str(args.seq),
        "--batch",
        str(args.batch),
        "--chunk",
        str(args.chunk),
        "--hidden",
        str(args.hidden),
        "--dtype",
        args.dtype,
        "--device",
        args.device,
        "--repeat",
        str(args.repeat),
    ]
    results: dict[str, dict[str, float | str]] = {}
    for var in variants:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", var, *common],
            capture_output=True,
            text=True,
            env={**os.environ},
            check=False,
        )
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            print(f"{var}: FAILED (rc={proc.returncode})\n{proc.stderr[-2000:]}", flush=True)
            continue
        results[var] = json.loads(line[-1][len("RESULT ") :])
        r = results[var]
        base = results.get("naive_hidden" if var.endswith("_hidden") else "naive")
        ratio = ""
        if base is not None and var != base["variant"]:
            ratio = (
                f"  extra {100 * float(r['extra_mib']) / float(base['extra_mib']):.1f}% "
                f"peak {100 * float(r['peak_mib']) / float(base['peak_mib']):.1f}% "
                f"time {float(r['time_s']) / float(base['time_s']):.2f}x of {base['variant']}"
            )
        rss = "" if args.device.startswith("cuda") else f"  rss {float(r['rss_mib']):8.1f} MiB"
        print(
            f"{var:>15}: peak {float(r['peak_mib']):9.1f} MiB  extra {float(r['extra_mib']):9.1f}"
            f" MiB{rss}  time {float(r['time_s']):7.2f} s  loss {float(r['loss']):+.6f}{ratio}",
            flush=True,
        )
        if args.json:
            print(json.dumps(r), flush=True)
    for a, b in (("naive", "chunked"), ("naive_hidden", "chunked_hidden")):
        if a in results and b in results:
            la, lb = float(results[a]["loss"]), float(results[b]["loss"])
            ga, gb = float(results[a]["grad_abs_sum"]), float(results[b]["grad_abs_sum"])
            print(f"{b} vs {a}: |dloss|={abs(la - lb):.2e}  rel d|grad|={abs(ga - gb) / ga:.2e}")
    return 0 if len(results) == len(variants) else 1


if __name__ == "__main__":
    raise SystemExit(main())
