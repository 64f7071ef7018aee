"""A run that learns, on the CPU: GRPO-style sequence advantages vs the token-wise critic.

For each task (``sort``: single turn; ``calc``: a multi-turn tool-use episode on the agent
loop) and each seed: a tiny Llama over a compact id map of the Llama-3 vocabulary gets a few
supervised steps on lvt's render of demonstrations, then the same copy of it is trained with
RL twice, once per variant, on the same problems and sampling seed:

* ``grpo``: group-normalised sequence rewards on every sampled token;
* ``critic``: ``A_t = Q(s_t, a_t) - V(s_t)`` from value heads on the policy's hidden states,
  with the method's warm-up (V frozen, moving-average baseline; then a KL-to-baseline term)
  and delayed updates (Q every 2 steps, V every 4), step counts scaled to the run.

Every batch is lvt's render of the conversation in the ``llama3`` format (loss mask from
lvt's mask and owner). Prints reward, KL, clip fraction and entropy per step for both
variants, a summary (mean reward over the last 10 steps, first step whose 5-step moving
average reaches the threshold), and writes a PNG of the curves (mean over seeds) and the raw
results as JSON.

Usage: ``python benchmarks/rl_learning.py [--tasks sort,calc] [--seeds 0,1] [--rl-steps N]
[--sft-steps N] [--out trainer/rl_learning.png] [--toy]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_TRAINER = _HERE.parent / "trainer"
if str(_TRAINER) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(_TRAINER))

#: per task: supervised steps, RL steps, reward threshold of the summary
DEFAULTS = {"sort": (120, 80, 0.5), "calc": (150, 40, 0.7)}


def _mean_curve(per_seed: dict[int, list[dict[str, float]]], key: str) -> list[float]:
    hists = list(per_seed.values())
    n = min(len(h) for h in hists)
    return [sum(h[i][key] for h in hists) / len(hists) for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="sort,calc")
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--rl-steps", type=int, default=None, help="default: per task")
    p.add_argument("--sft-steps", type=int, default=None, help="default: per task")
    p.add_argument("--prompts", type=int, default=8, help="prompts per RL step")
    p.add_argument("--group", type=int, default=4, help="rollouts per prompt")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(_HERE.parent / "trainer" / "rl_learning.png"))
    p.add_argument("--json", default=None, help="results file (default: --out with .json)")
    p.add_argument("--toy", action="store_true", help="a few steps of everything (tests)")
    p.add_argument("--quiet", action="store_true", help="no per-step lines")
    args = p.parse_args(argv)

    import torch

    from lvt_trainer.learning import LearningConfig, run_learning, setup_task, summarize
    from lvt_trainer.plot import Panel, line_chart

    torch.set_num_threads(args.threads)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    tasks = args.tasks.split(",")
    results: dict[str, dict] = {}
    summary: dict[str, dict] = {}
    panels = []
    t_all = time.perf_counter()
    for task in tasks:
        sft, rl, threshold = DEFAULTS[task]
        if args.toy:
            sft, rl = 2, 3
        sft = args.sft_steps if args.sft_steps is not None else sft
        rl = args.rl_steps if args.rl_steps is not None else rl
        cfg = LearningConfig(
            task=task, seeds=seeds, sft_steps=sft, rl_steps=rl,
            prompts_per_step=2 if args.toy else args.prompts,
            group_size=2 if args.toy else args.group, lr=args.lr, threshold=threshold,
        )
        t0 = time.perf_counter()
        st = setup_task(task)
        print(f"== task {task}: llama3 format, model vocabulary {st.id_map.size} ids "
              f"(id map over lvt's renders), stop ids {list(st.stop_ids)}; seeds {seeds}, "
              f"{sft} supervised + {rl} RL steps, {cfg.prompts_per_step} prompts x "
              f"{cfg.group_size} rollouts", flush=True)
        res = run_learning(cfg, setup=st, log=None if args.quiet else print)
        dt = time.perf_counter() - t0
        results[task] = res
        summ = summarize(res, threshold=threshold)
        summary[task] = {"threshold": threshold, "seconds": dt, **summ}
        print(f"-- {task}: per step, mean over seeds (reward / KL / clip fraction / entropy)")
        variants = list(res)
        header = "step " + " ".join(f"{v + ' r':>9} {'kl':>7} {'clip':>6} {'ent':>6}"
                                    for v in variants)
        print(header)
        curves = {v: {k: _mean_curve(res[v], k)
                      for k in ("reward_mean", "kl_mean", "clip_frac", "entropy_mean")}
                  for v in variants}
        for i in range(len(curves[variants[0]]["reward_mean"])):
            cells = []
            for v in variants:
                c = curves[v]
                cells.append(f"{c['reward_mean'][i]:9.3f} {c['kl_mean'][i]:7.4f} "
                             f"{c['clip_frac'][i]:6.3f} {c['entropy_mean'][i]:6.3f}")
            print(f"{i:4d} " + " ".join(cells))
        for v in variants:
            s = summ[v]
            per = ", ".join(f"{x:.3f}" for x in s["final_reward_per_seed"])
            print(f"{task} {v:6s}: mean reward over the last 10 steps {s['final_reward']:.3f} "
                  f"(seeds: {per}); steps to a 5-step average >= {threshold}: "
                  f"{s['steps_to_threshold']}; mean KL {s['kl_mean']:.4f}, clip fraction "
                  f"{s['clip_frac']:.4f}, entropy {s['entropy_mean']:.3f}", flush=True)
        print(f"{task}: {dt:.1f}s", flush=True)
        for key, title in (("reward_mean", "reward"), ("kl_mean", "kl to reference"),
                           ("clip_frac", "clip fraction"), ("entropy_mean", "entropy")):
            panels.append(Panel(f"{task}: {title}", {v: curves[v][key] for v in variants}))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    line_chart(out, panels, cols=4, panel_w=340, panel_h=230)
    jpath = Path(args.json) if args.json else out.with_suffix(".json")
    jpath.write_text(json.dumps({"summary": summary, "results": results}, indent=1))
    print(f"plot: {out}\nresults: {jpath}\ntotal {time.perf_counter() - t_all:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
