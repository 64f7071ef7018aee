"""Correctness checks and the memory benchmark of the RLVR loss on a CUDA GPU.

Self-contained: run ``python benchmarks/cuda_loss_check.py`` from a checkout (the package
is imported from ``trainer/`` when not installed). Exits 0 with a message when CUDA is
absent. Designed to finish in well under 5 minutes on one modern GPU:

1. chunked vs unchunked token stats (values and gradients, several chunk sizes, some not
   dividing T) on CUDA in fp32, and against a CPU float64 reference;
2. bf16 logits / bf16 hidden states: finite, close to fp32;
3. the full loss from logits vs a naive autograd pipeline; huge log-ratio gaps in bf16;
4. the fused loss (gradients in forward) against the recompute path, logits and hidden;
5. one GRPO step of the tiny model in bf16 on CUDA;
6. the new paths: KL/weights/gate in fp32 under ``torch.autocast`` (bf16, fused and
   recompute), ``-inf`` logits and NaN logits at masked positions (exact zero gradient),
   fp16 gradients inside the log-ratio bound, input validation;
7. per-token credit: the token critic (value heads on bf16 hidden states) feeding
   per-token advantages to ``grpo_train_step`` with the learnable-alpha controller;
8. a batch built from lvt's render and a two-turn tool episode on the agent loop, trained
   on the device (skipped when the Llama-3 tokenizer package is missing);
9. ``benchmarks/loss_memory.py`` at a larger size (naive vs chunked, logits and hidden).

Flags: ``--skip-bench``, ``--seq`` / ``--vocab`` / ``--chunk`` / ``--hidden`` for step 6.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent / "trainer"))

RESULTS: list[tuple[str, bool, str]] = []


def check(name: str) -> Callable[[Callable[[], str]], Callable[[], None]]:
    def deco(fn: Callable[[], str]) -> Callable[[], None]:
        def run() -> None:
            t0 = time.perf_counter()
            try:
                info = fn()
                ok = True
            except Exception as exc:  # report and continue with the other checks
                info = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
                ok = False
            dt = time.perf_counter() - t0
            RESULTS.append((name, ok, info))
            print(f"[{'PASS' if ok else 'FAIL'}] {name} ({dt:.1f}s) {info}", flush=True)

        return run

    return deco


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-bench", action="store_true")
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--chunk", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--device", default="cuda",
                   help="cuda (default); cpu runs the same checks as a smoke test of the script")
    args = p.parse_args()

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("CUDA is not available: nothing to check here (run the CPU test-suite instead).")
        return 0

    from lvt_trainer.grpo import RolloutBatch, causal_lm_logprobs, grpo_train_step
    from lvt_trainer.kl import naive_token_stats, token_stats
    from lvt_trainer.loss import RLVRLossConfig, rlvr_loss, rlvr_loss_from_logits
    from lvt_trainer.tiny import build_tiny_causal_lm

    dev = torch.device(args.device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"device: {name}  torch {torch.__version__}", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False

    @check("chunked == unchunked on CUDA (fp32, chunks 1/7/64/None)")
    def _chunked() -> str:
        g = torch.Generator(device=dev).manual_seed(0)
        shape = (2, 131, 5003)
        x = torch.randn(*shape, device=dev, generator=g) * 3
        r = torch.randn(*shape, device=dev, generator=g) * 3
        y = torch.randint(0, shape[-1], shape[:2], device=dev, generator=g)
        w = torch.randn(3, *shape[:2], device=dev, generator=g)
        outs = []
        for cs in (None, 1, 7, 64):
            xx = x.clone().requires_grad_()
            lp, ent, kl = token_stats(xx, y, r, chunk_size=cs, ref_smoothing=1e-3)
            (w[0] * lp + w[1] * ent + w[2] * kl).sum().backward()  # type: ignore[operator]
            outs.append((lp, ent, kl, xx.grad))
        worst = 0.0
        for o in outs[1:]:
            for a, b in zip(outs[0], o, strict=True):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
                worst = max(worst, float((a - b).detach().abs().max()))
        # against a CPU float64 naive reference
        xd = x.double().cpu().requires_grad_()
        lp64, ent64, kl64 = naive_token_stats(xd, y.cpu(), r.double().cpu(), ref_smoothing=1e-3)
        wc = w.double().cpu()
        (wc[0] * lp64 + wc[1] * ent64 + wc[2] * kl64).sum().backward()  # type: ignore[operator]
        for a, b in zip(outs[2], (lp64, ent64, kl64, xd.grad), strict=True):
            torch.testing.assert_close(a.double().cpu(), b, rtol=1e-4, atol=1e-4)
        return f"max |chunked - unchunked| = {worst:.2e}"

    @check("bf16 logits and bf16 hidden states: finite, close to fp32")
    def _bf16() -> str:
        g = torch.Generator(device=dev).manual_seed(1)
        x = torch.randn(2, 257, 32000, device=dev, generator=g) * 4
        r = torch.randn(2, 257, 32000, device=dev, generator=g) * 4
        y = torch.randint(0, 32000, (2, 257), device=dev, generator=g)
        xb = x.bfloat16().requires_grad_()
        lp, _, kl = token_stats(xb, y, r.bfloat16(), chunk_size=100)
        (lp.sum() + kl.sum()).backward()  # type: ignore[union-attr]
        assert torch.isfinite(xb.grad.float()).all()  # type: ignore[union-attr]
        lp32, _, kl32 = token_stats(xb.detach().float(), y, r.bfloat16().float(), chunk_size=None)
        torch.testing.assert_close(lp, lp32, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(kl, kl32, rtol=1e-4, atol=1e-4)
        h = torch.randn(2, 257, 512, device=dev, generator=g).bfloat16().requires_grad_()
        wt = (torch.randn(32000, 512, device=dev, generator=g) / 512**0.5).bfloat16()
        wt.requires_grad_()
        lph, enth = token_stats(h, y, None, weight=wt, chunk_size=64)[:2]
        (lph.sum() + enth.sum()).backward()  # type: ignore[union-attr]
        assert torch.isfinite(h.grad.float()).all() and torch.isfinite(wt.grad.float()).all()
        ref_lp = torch.log_softmax((h.detach().float() @ wt.detach().float().t()), -1)
        ref_lp = ref_lp.gather(-1, y[..., None]).squeeze(-1)
        err = float((lph - ref_lp).abs().max())
        assert err < 0.1, err
        return f"bf16 hidden-path max |dlogp| vs fp32 = {err:.3f}"

    @check("full loss from logits == naive pipeline; +-50 gaps finite in bf16")
    def _loss() -> str:
        g = torch.Generator(device=dev).manual_seed(2)
        bsz, seq, vocab = 3, 77, 4099
        x = (torch.randn(bsz, seq, vocab, device=dev, generator=g)).requires_grad_()
        r = torch.randn(bsz, seq, vocab, device=dev, generator=g)
        y = torch.randint(0, vocab, (bsz, seq), device=dev, generator=g)
        adv = torch.tensor([1.0, -1.0, 0.3], device=dev)
        mask = (torch.rand(bsz, seq, device=dev, generator=g) > 0.2).float()
        old = -torch.rand(bsz, seq, device=dev, generator=g) * 3 - 7
        cfg = RLVRLossConfig(kl_chunk_size=16)
        loss, m = rlvr_loss_from_logits(
            x, y, adv, mask, ref_logits=r, logp_old=old, beta=0.1, config=cfg
        )
        loss.backward()
        gx = x.grad.clone()  # type: ignore[union-attr]
        x.grad = None
        lp, ent, kl = naive_token_stats(x, y, r)
        assert lp is not None
        loss2, _ = rlvr_loss(lp, adv, mask, logp_old=old, kl=kl, entropy=ent, beta=0.1, config=cfg)
        loss2.backward()
        torch.testing.assert_close(loss, loss2, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(gx, x.grad, rtol=1e-4, atol=1e-7)
        lpb = torch.full((2, 5), -1.0, device=dev, dtype=torch.bfloat16, requires_grad=True)
        for gap in (50.0, -50.0):
            for mode in ("proximal", "ppo"):
                lpb.grad = None
                c = RLVRLossConfig(clip_mode=mode, tis_cap=2.0, kl_mode="k3")  # type: ignore[arg-type]
                lo, mm = rlvr_loss(
                    lpb,
                    torch.tensor([1.0, -1.0], device=dev),
                    torch.ones(2, 5, device=dev),
                    logp_old=(lpb.detach().float() - gap).bfloat16(),
                    logp_behavior=(lpb.detach().float() + gap).bfloat16(),
                    ref_logp=(lpb.detach().float() + gap).bfloat16(),
                    beta=0.1,
                    config=c,
                )
                lo.backward()
                assert torch.isfinite(lo) and torch.isfinite(lpb.grad.float()).all()  # type: ignore[union-attr]
                assert all(math.isfinite(v) for v in mm.values())
        return f"loss {loss.item():+.5f} clip_frac_neg {m['clip_frac_neg_adv']:.3f}"

    @check("fused loss == recompute path on CUDA (logits fp32, hidden bf16, k3 and exact)")
    def _fused() -> str:
        g = torch.Generator(device=dev).manual_seed(4)
        bsz, seq, vocab, hid = 2, 129, 8191, 256
        y = torch.randint(0, vocab, (bsz, seq), device=dev, generator=g)
        adv = torch.tensor([0.8, -1.3], device=dev)
        mask = (torch.rand(bsz, seq, device=dev, generator=g) > 0.1).float()
        old = -torch.rand(bsz, seq, device=dev, generator=g) * 3 - 7
        worst = 0.0
        for hidden in (False, True):
            dt = torch.bfloat16 if hidden else torch.float32
            d = hid if hidden else vocab
            x0 = torch.randn(bsz, seq, d, device=dev, generator=g).to(dt)
            r0 = torch.randn(bsz, seq, d, device=dev, generator=g).to(dt)
            w0 = (torch.randn(vocab, hid, device=dev, generator=g) / hid**0.5).to(dt)
            rw = (torch.randn(vocab, hid, device=dev, generator=g) / hid**0.5).to(dt)
            for kl_mode in ("exact", "k3"):
                cfg = RLVRLossConfig(kl_chunk_size=50, kl_mode=kl_mode, tis_cap=2.0)  # type: ignore[arg-type]
                outs = []
                for fused in (True, False):
                    x = x0.clone().requires_grad_()
                    w = w0.clone().requires_grad_() if hidden else None
                    loss, _ = rlvr_loss_from_logits(
                        x, y, adv, mask, ref_logits=r0, weight=w,
                        ref_weight=rw if hidden else None, logp_old=old,
                        logp_behavior=old + 0.1, beta=0.1, config=cfg, fused=fused,
                    )
                    loss.backward()
                    grads = [x.grad] + ([w.grad] if w is not None else [])
                    outs.append((loss.detach(), [t.float() for t in grads]))  # type: ignore[union-attr]
                (la, ga), (lb, gb) = outs
                tol = 2e-2 if hidden else 1e-5
                torch.testing.assert_close(la, lb, rtol=tol, atol=tol)
                for a, b in zip(ga, gb, strict=True):
                    torch.testing.assert_close(a, b, rtol=tol, atol=tol * float(b.abs().max()))
                    worst = max(worst, float((a - b).abs().max()))
        return f"max |fused - recompute| grad = {worst:.2e}"

    @check("GRPO step of the tiny model in bf16 on CUDA")
    def _grpo() -> str:
        policy = build_tiny_causal_lm(151936, seed=0, device=dev, dtype=torch.bfloat16)
        reference = build_tiny_causal_lm(151936, seed=0, device=dev, dtype=torch.bfloat16)
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
        g = torch.Generator(device=dev).manual_seed(3)
        ids = torch.randint(0, 151936, (8, 64), device=dev, generator=g)
        am = torch.ones_like(ids)
        lm = torch.zeros(8, 64, device=dev)
        lm[:, 20:] = 1
        adv = torch.randn(8, device=dev, generator=g)
        with torch.no_grad():
            old, _ = causal_lm_logprobs(policy, ids, am)
        batch = RolloutBatch(ids, am, lm, adv, old + 0.01, old)
        before = [q.detach().clone() for q in policy.parameters()]
        ms = [
            grpo_train_step(
                policy, reference, opt, batch, config=RLVRLossConfig(tis_cap=2.0), beta=0.05
            )
            for _ in range(2)
        ]
        assert all(math.isfinite(v) for m in ms for v in m.values())
        assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters(), strict=True))
        return f"loss {ms[-1]['loss']:+.4f} kl_mean {ms[-1]['kl_mean']:.2e}"

    @check("autocast bf16: KL, weights and gate in fp32 (fused and recompute, hidden states)")
    def _autocast() -> str:
        g = torch.Generator(device=dev).manual_seed(5)
        bsz, seq, vocab, hid = 2, 97, 8191, 256
        h = torch.randn(bsz, seq, hid, device=dev, generator=g)
        rh = h + 0.1 * torch.randn(bsz, seq, hid, device=dev, generator=g)
        w = torch.randn(vocab, hid, device=dev, generator=g) / hid**0.5
        y = torch.randint(0, vocab, (bsz, seq), device=dev, generator=g)
        adv = torch.tensor([1.0, -1.0], device=dev)
        mask = torch.ones(bsz, seq, device=dev)
        worst = 0.0
        for fused in (True, False):
            ms = []
            for ac in (False, True):
                hh = h.clone().requires_grad_()
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=ac):
                    _, m = rlvr_loss_from_logits(hh, y, adv, mask, ref_logits=rh, weight=w,
                                                 ref_weight=w, beta=0.1, fused=fused,
                                                 config=RLVRLossConfig(kl_chunk_size=32))
                ms.append(m)
            for k in ("kl_mean", "gate_mean", "weight_mean", "entropy_mean"):
                rel = abs(ms[1][k] - ms[0][k]) / max(abs(ms[0][k]), 1e-12)
                assert rel < 1e-5, (k, ms[0][k], ms[1][k])
                worst = max(worst, rel)
        return f"max relative change under autocast {worst:.1e}"

    @check("-inf logits, NaN at masked positions, fp16 gradients, typed input errors")
    def _numerics() -> str:
        from lvt_trainer.errors import NonFiniteInputError, TrainerConfigError

        g = torch.Generator(device=dev).manual_seed(6)
        bsz, seq, vocab = 2, 33, 4099
        x = torch.randn(bsz, seq, vocab, device=dev, generator=g)
        r = torch.randn(bsz, seq, vocab, device=dev, generator=g)
        y = torch.randint(0, vocab - 100, (bsz, seq), device=dev, generator=g)
        mask = (torch.rand(bsz, seq, device=dev, generator=g) > 0.3).float()
        x[..., vocab - 100 :] = float("-inf")
        r[..., vocab - 100 :] = float("-inf")
        x[mask == 0] = float("nan")
        adv = torch.tensor([0.5, -1.5], device=dev)
        for fused in (True, False):
            xx = x.clone().requires_grad_()
            loss, m = rlvr_loss_from_logits(xx, y, adv, mask, ref_logits=r, beta=0.1,
                                            fused=fused, config=RLVRLossConfig(kl_chunk_size=8))
            loss.backward()
            assert torch.isfinite(loss) and all(math.isfinite(v) for v in m.values())
            gx = xx.grad
            assert gx is not None and torch.isfinite(gx).all()
            assert (gx[mask == 0] == 0).all() and (gx[..., vocab - 100 :] == 0).all()
        lp = torch.full((1, 4), -1.0, device=dev, dtype=torch.float16, requires_grad=True)
        lo, _ = rlvr_loss(lp, torch.ones(1, device=dev), torch.ones(1, 4, device=dev),
                          logp_old=(lp.detach().float() - 15).half(),
                          config=RLVRLossConfig(clip_mode="none", kl_mode="none"))
        lo.backward()
        assert lp.grad is not None and torch.isfinite(lp.grad.float()).all()
        bad = torch.tensor([float("nan"), 0.0], device=dev)
        try:
            rlvr_loss(torch.zeros(2, 3, device=dev), bad, torch.ones(2, 3, device=dev))
        except NonFiniteInputError:
            pass
        else:
            raise AssertionError("NaN advantages were accepted")
        try:
            RLVRLossConfig(proximal_cap=-1.0)
        except TrainerConfigError:
            pass
        else:
            raise AssertionError("proximal_cap=-1 was accepted")
        return "finite, exact zeros where masked or -inf"

    @check("token critic -> per-token advantages -> grpo_train_step (bf16, learnable alpha)")
    def _critic() -> str:
        from lvt_trainer.critic import CriticConfig, TokenCritic
        from lvt_trainer.gate import LearnableAlphaGate
        from lvt_trainer.grpo import causal_lm_forward

        vocab = 2048
        policy = build_tiny_causal_lm(vocab, seed=0, device=dev, dtype=torch.bfloat16)
        reference = build_tiny_causal_lm(vocab, seed=1, device=dev, dtype=torch.bfloat16)
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
        g = torch.Generator(device=dev).manual_seed(7)
        ids = torch.randint(0, vocab, (8, 48), device=dev, generator=g)
        am = torch.ones_like(ids)
        lm = torch.zeros(8, 48, device=dev)
        lm[:, 16:] = 1
        rewards = (torch.rand(8, device=dev, generator=g) > 0.5).float()
        critic = TokenCritic(CriticConfig(v_warmup_steps=1, v_kl_until=2, q_every=1,
                                          v_every=1), hidden_size=64, device=dev)
        gate = LearnableAlphaGate(target_gated_kl=1e-4)
        alphas = []
        for _ in range(3):
            batch = RolloutBatch(ids, am, lm, torch.zeros(8, device=dev), rewards=rewards)
            old, _, hidden = causal_lm_forward(policy, ids, am)
            batch.old_logp = old
            res = critic.assign(batch, hidden)
            assert res.advantages.shape == ids.shape and torch.isfinite(res.advantages).all()
            batch.advantages = res.advantages
            m = grpo_train_step(policy, reference, opt, batch, beta=0.05, gate=gate)
            assert all(math.isfinite(v) for v in m.values())
            alphas.append(m["alpha"])
        assert alphas[-1] != 1.0
        return f"alpha {alphas[0]:.3f} -> {alphas[-1]:.3f}, phase {res.metrics['critic/phase']}"

    @check("lvt batch and a two-turn tool episode trained on the device")
    def _lvt() -> str:
        try:
            import lvt
            from lvt import zoo

            tok = zoo.load_tokenizer("llama3")
        except Exception as exc:  # report as a skip, not a failure
            return f"SKIPPED ({type(exc).__name__}: {exc})"
        import json

        from lvt_trainer.agent import Sample, calculator, run_episodes
        from lvt_trainer.lvt_batch import build_batch
        from lvt_trainer.vocab import IdMap

        enc = lvt.ChatEncoder.from_tokenizer(tok, format="llama3")
        # the call as the format writes it: lvt's own render, learned tokens, no end of turn
        msgs = [{"role": "user", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "c0", "type": "function",
                    "function": {"name": "calc", "arguments": json.dumps({"expr": "37*43"})}}]}]
        conv = lvt.from_openai(msgs, None, False)
        shape = getattr(enc, "shape", None)
        e = enc.encode(shape(conv) if shape is not None else conv)
        call = [int(t) for t, m, o in zip(e.ids, e.mask, e.owner, strict=True) if m and o == 1]
        call = call[:-1] if call[-1] == 128009 else call
        answer = [*tok.encode("1591", add_special_tokens=False).ids, 128009]
        turns = iter([call, answer])

        def sampler(prompts: list[list[int]]) -> list[Sample]:
            ids = next(turns)
            return [Sample(tuple(ids), (-1.0,) * len(ids), False) for _ in prompts]

        user = lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("What is 37*43?")),))
        eps = run_episodes(enc, [lvt.Conversation((user,), False)] * 2, sampler,
                           tools={"calc": calculator},
                           reward_fn=lambda i, e: float(e.answer == "1591"))
        trajs = [e.trajectory for e in eps]
        idmap = IdMap.from_sequences([enc.encode(t.conversation).ids for t in trajs])
        batch = build_batch(enc, trajs, id_map=idmap, device=dev)
        policy = build_tiny_causal_lm(idmap.size, seed=0, device=dev)
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-3)
        batch.advantages = torch.ones(2, device=dev)
        m = grpo_train_step(policy, None, opt, batch, config=RLVRLossConfig(kl_mode="none"))
        assert m["num_tokens"] == 2 * (len(call) + len(answer)), m["num_tokens"]
        return f"{int(m['num_tokens'])} learned tokens, rewards {batch.rewards.tolist()}"

    for fn in (_chunked, _bf16, _loss, _fused, _grpo, _autocast, _numerics, _critic, _lvt):
        fn()

    if not args.skip_bench:
        bench = str(_HERE / "loss_memory.py")
        common = [
            "--device",
            args.device,
            "--vocab",
            str(args.vocab),
            "--chunk",
            str(args.chunk),
            "--repeat",
            "3",
        ]
        runs = [
            [*common, "--seq", str(args.seq // 2), "--dtype", "fp32", "--hidden", "0"],
            [*common, "--seq", str(args.seq), "--dtype", "bf16", "--hidden", str(args.hidden)],
        ]
        for extra in runs:
            print(f"$ loss_memory.py {' '.join(extra)}", flush=True)
            proc = subprocess.run([sys.executable, bench, *extra], check=False, timeout=200)
            RESULTS.append((f"benchmark {' '.join(extra)}", proc.returncode == 0, ""))

    failed = [n for n, ok, _ in RESULTS if not ok]
    print(f"\n{len(RESULTS) - len(failed)}/{len(RESULTS)} checks passed", flush=True)
    for n in failed:
        print(f"FAILED: {n}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
