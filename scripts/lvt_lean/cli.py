"""The command line of ``scripts/lean_check``: scan, order, check in parallel, summarise.

Exit status: 0 when every module checked (or was reused from a verified cache entry) without
error and without ``sorry``; 1 when a module failed or the proof-escape scan found something;
2 when the checker could not run (installation, arguments, a malformed header, a lakefile
option it cannot pass on).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import graph, options, runner, scan, store, toolchain
from .errors import CheckError

REPO = Path(__file__).resolve().parents[2]


def _lakefile(root: Path, given: Path | None) -> Path | None:
    """The lakefile whose options apply: ``--lakefile``, else the root's, else this
    checkout's (a staged copy of the library is checked with the library's options)."""
    if given is not None:
        return given
    for cand in (root / "lakefile.lean", REPO / "lakefile.lean"):
        if cand.exists():
            return cand
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the checker; return the exit status."""
    ap = argparse.ArgumentParser(description="Check the Lean library with the wasm Lean.")
    ap.add_argument("targets", nargs="*", type=Path, help="module files (default: all)")
    ap.add_argument("--root", type=Path, default=REPO,
                    help="project root holding Verified/ (default: this checkout)")
    ap.add_argument("--lakefile", type=Path, default=None,
                    help="lakefile whose Lean options apply (default: ROOT/lakefile.lean, "
                         "else this checkout's)")
    ap.add_argument("--jobs", "-j", type=int, default=int(os.environ.get("LVT_LEAN_JOBS", "2")))
    ap.add_argument("--no-cache", action="store_true", help="ignore cached successes")
    args = ap.parse_args(argv)
    root: Path = args.root.resolve()
    try:
        targets = ([(t if t.is_absolute() else Path.cwd() / t).resolve() for t in args.targets]
                   or graph.default_targets(root))
        if not targets:
            raise CheckError(f"no Lean modules under {root}")
        for t in targets:
            if root not in t.parents:
                raise CheckError(f"{t} is not under the root {root}")
        lakefile = _lakefile(root, args.lakefile)
        opts = options.parse_lakefile(lakefile) if lakefile else options.LeanOptions()
        home = toolchain.lean_home()
        modules = graph.discover(root, targets)
        hits = scan.forbidden_hits(root, [m.path for m in modules.values()])
        if hits:
            print("\n".join(hits))
            print(f"lean: FAILED, {len(hits)} forbidden proof escapes")
            return 1
        tc = toolchain.ensure_toolchain(home)
        context = graph.context_digest(tc.identity, graph.checker_digest(), opts.digest())
        order = graph.topo_order(modules, context)
    except CheckError as e:
        print(f"lean_check: error: {e}", file=sys.stderr)
        return 2
    print(f"lean_check: options {' '.join(opts.argv()) or '(none)'} from {opts.source}",
          flush=True)
    return _check_all(modules, order, tc, opts, home, args.jobs, args.no_cache)


def _check_all(modules: dict[str, graph.Module], order: list[str], tc: toolchain.Toolchain,
               opts: options.LeanOptions, home: Path, jobs: int, no_cache: bool) -> int:
    st = home / "store"
    st.mkdir(exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(dir=home, prefix="run."))
    build, stage = run_dir / "build", run_dir / "stage"
    build.mkdir()
    stage.mkdir()
    if no_cache:
        for m in modules.values():
            store.discard(st / m.key)
    jobs = max(1, jobs)
    results: dict[str, runner.Result] = {}
    pending = list(order)
    running: dict[concurrent.futures.Future[runner.Result], str] = {}
    failed: set[str] = set()
    t0 = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            while pending or running:
                blocked = [n for n in pending if any(d in failed for d in modules[n].imports)]
                for n in blocked:
                    pending.remove(n)
                    failed.add(n)
                    results[n] = runner.Result(n, False, 0.0, False,
                                               [f"{n}: skipped, an import failed"])
                ready = [n for n in pending
                         if all(d in results and results[d].ok for d in modules[n].imports)]
                for n in ready[:jobs - len(running)]:
                    pending.remove(n)
                    running[pool.submit(runner.run_module, modules[n], tc, opts, build, stage,
                                        st)] = n
                if not running:
                    continue
                done, _ = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
                for fut in done:
                    n = running.pop(fut)
                    r = fut.result()
                    results[n] = r
                    if not r.ok:
                        failed.add(n)
                    tag = "cached" if r.cached else f"{r.seconds:6.1f} s"
                    print(f"  {'ok' if r.ok else 'FAILED':6} {n:40} {tag}", flush=True)
                    for msg in r.messages:
                        print("    " + msg.replace("\n", "\n    "), flush=True)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    theorems = scan.count_theorems([m.path for m in modules.values()])
    sorry = sum(r.sorry for r in results.values())
    bad = [n for n in order if not results[n].ok]
    elapsed = time.monotonic() - t0
    if bad:
        print(f"lean: FAILED {len(bad)} of {len(order)} modules ({', '.join(bad)}), "
              f"{sorry} sorry, {elapsed:.0f} s")
        return 1
    print(f"lean_check: {elapsed:.0f} s wall")
    print(f"lean: {len(order)} modules checked, {theorems} theorems, {sorry} sorry")
    return 0
