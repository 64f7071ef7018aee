"""The Lean checker `scripts/lean_check` is not vacuous.

Fast, unmarked tests exercise its pure parts (comment/string stripping, the forbidden-word
scan, the import graph and cache keys, the `noncomputable section` insertion and the line
mapping of Lean's messages back to the source). The `lean`-marked test runs the real checker
once on a staged copy of the library in which one definition is broken and on two small
modules (a wrong and a corrected `example … := by rfl`), and asserts that the checker fails,
names the failing theorem and module, and accepts the corrected example.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import leangen

lc = leangen.load_checker()


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------------------------------
# Comment and string stripping
# ---------------------------------------------------------------------------------------


def test_strip_removes_line_and_block_comments_keeping_lines() -> None:
    text = "a -- sorry here\nb /- x\n sorry\n -/ c\nd"
    out = lc.strip_comments_and_strings(text)
    assert "sorry" not in out
    assert out.count("\n") == text.count("\n"), "line structure must be preserved"
    assert out.splitlines()[0].strip() == "a"
    assert out.splitlines()[3].strip() == "c"
    assert out.splitlines()[4] == "d"


def test_strip_handles_nested_block_comments() -> None:
    text = "x /- outer /- inner -/ still comment sorry -/ y"
    out = lc.strip_comments_and_strings(text)
    assert "sorry" not in out and "comment" not in out
    assert out.replace(" ", "") == "xy"


def test_strip_doc_comments_and_module_docs() -> None:
    text = "/-! module doc: sorry -/\n/-- doc: axiom -/\ntheorem t : True := trivial\n"
    out = lc.strip_comments_and_strings(text)
    assert "sorry" not in out and "axiom" not in out
    assert "theorem t : True := trivial" in out


def test_strip_string_literals_with_escapes() -> None:
    text = 'def s := "sorry \\" still string -- not a comment"\ndef t := 1'
    out = lc.strip_comments_and_strings(text)
    assert "sorry" not in out and "still" not in out
    assert 'def s := ""' in out
    assert "def t := 1" in out


def test_comment_markers_inside_strings_are_not_comments() -> None:
    text = 'def s := "/-"\ntheorem bad : False := sorry\ndef u := "-/"\n'
    out = lc.strip_comments_and_strings(text)
    assert "sorry" in out, "a `/-` inside a string must not open a comment"


# ---------------------------------------------------------------------------------------
# Forbidden-word scan
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("word", lc.FORBIDDEN)
def test_forbidden_word_in_code_counts(tmp_path: Path, word: str) -> None:
    f = write(tmp_path, "Verified/A.lean", f"module\n\ntheorem t : True := by\n  {word}\n")
    hits = lc.forbidden_hits(tmp_path, [f])
    assert hits == [f"Verified/A.lean:4: forbidden `{word}`"]


@pytest.mark.parametrize("word", lc.FORBIDDEN)
def test_forbidden_word_in_comment_or_string_does_not_count(tmp_path: Path, word: str) -> None:
    text = (f"module\n-- {word} in a line comment\n/- {word} in a block comment -/\n"
            f"/-- doc mentioning {word} -/\ndef s : String := \"{word}\"\n")
    f = write(tmp_path, "Verified/A.lean", text)
    assert lc.forbidden_hits(tmp_path, [f]) == []


def test_forbidden_scan_needs_whole_words(tmp_path: Path) -> None:
    text = ("module\ndef sorryCount := 1\ndef admits := 2\ntheorem axiom_free : True := "
            "trivial\ndef x := Foo.sorry\ndef externals := 3\n")
    f = write(tmp_path, "Verified/A.lean", text)
    assert lc.forbidden_hits(tmp_path, [f]) == []


def test_forbidden_scan_reports_every_hit_with_its_line(tmp_path: Path) -> None:
    text = ("module\n/- a\nmulti-line\ncomment -/\naxiom bad : False\n"
            "@[implemented_by foo] def g := 1\ntheorem h : 1 = 1 := by native_decide\n")
    f = write(tmp_path, "Verified/B.lean", text)
    assert lc.forbidden_hits(tmp_path, [f]) == [
        "Verified/B.lean:5: forbidden `axiom`",
        "Verified/B.lean:6: forbidden `implemented_by`",
        "Verified/B.lean:7: forbidden `native_decide`",
    ]


def test_char_literal_quote_does_not_hide_code(tmp_path: Path) -> None:
    text = "module\ndef q : Char := '\"'\naxiom cheat : False\ndef r := \"x\"\n"
    f = write(tmp_path, "Verified/A.lean", text)
    assert lc.forbidden_hits(tmp_path, [f]) == ["Verified/A.lean:3: forbidden `axiom`"]


def test_multiline_string_keeps_line_numbers(tmp_path: Path) -> None:
    text = 'module\ndef s := "a\nb"\naxiom c : False\n'
    f = write(tmp_path, "Verified/A.lean", text)
    assert lc.forbidden_hits(tmp_path, [f]) == ["Verified/A.lean:4: forbidden `axiom`"]


def test_main_fails_on_forbidden_word_before_running_lean(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "Verified/A.lean",
          "module\n-- sorry in a comment is fine\ntheorem t : True := by\n  sorry\n")
    calls: list[object] = []

    def no_lean(*args: object, **kwargs: object) -> object:
        calls.append(args)
        raise AssertionError("Lean must not run when the scan fails")

    monkeypatch.setenv("LVT_LEAN_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(lc.toolchain, "ensure_toolchain", no_lean)
    monkeypatch.setattr(lc.runner, "run_module", no_lean)
    rc = lc.main(["--root", str(tmp_path), str(tmp_path / "Verified/A.lean")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "Verified/A.lean:4: forbidden `sorry`" in out
    assert "lean: FAILED, 1 forbidden proof escapes" in out
    assert ":2:" not in out, "the comment on line 2 must not be reported"
    assert calls == []


def test_main_scans_imported_modules_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "Verified/Dep.lean", "module\naxiom cheat : False\n")
    write(tmp_path, "Verified/Top.lean", "module\npublic import Verified.Dep\n")
    monkeypatch.setenv("LVT_LEAN_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(lc.toolchain, "ensure_toolchain", lambda home: pytest.fail("ran"))
    rc = lc.main(["--root", str(tmp_path), str(tmp_path / "Verified/Top.lean")])
    assert rc == 1
    assert "Verified/Dep.lean:2: forbidden `axiom`" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------
# Import graph, topological order, cache keys
# ---------------------------------------------------------------------------------------


def test_header_imports_forms() -> None:
    text = ("module\n\n-- a line comment\n/- a block comment\nimport Fake.InComment\n-/\n"
            "public import Verified.A\nimport Verified.B\nmeta import Verified.C\n"
            "public meta import Verified.D\nimport all Verified.E\n-- import Verified.F\n"
            "import Init.Data.List\n")
    assert lc.header_imports(text) == [
        "Verified.A", "Verified.B", "Verified.C", "Verified.D", "Verified.E", "Init.Data.List"]


def _tree(tmp_path: Path) -> Path:
    write(tmp_path, "Verified/Spec/A.lean", "module\n")
    write(tmp_path, "Verified/Spec/B.lean", "module\npublic import Verified.Spec.A\n")
    write(tmp_path, "Verified/Spec/C.lean",
          "module\npublic import Verified.Spec.A\nimport Init.Data.List\n")
    write(tmp_path, "Verified/Thm/D.lean",
          "module\npublic import Verified.Spec.B\npublic import Verified.Spec.C\n")
    write(tmp_path, "Verified/Unrelated.lean", "module\n")
    return tmp_path


def test_discover_follows_project_imports_only(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    mods = lc.discover(root, [root / "Verified/Thm/D.lean"])
    assert set(mods) == {"Verified.Spec.A", "Verified.Spec.B", "Verified.Spec.C",
                         "Verified.Thm.D"}
    assert mods["Verified.Spec.C"].imports == ["Verified.Spec.A"], "Init is not a project module"


def test_topo_order_respects_dependencies(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    mods = lc.discover(root, lc.default_targets(root))
    order = lc.topo_order(mods)
    assert sorted(order) == sorted(mods)
    pos = {n: i for i, n in enumerate(order)}
    for m in mods.values():
        for d in m.imports:
            assert pos[d] < pos[m.name], f"{d} must come before {m.name}"


def test_import_cycle_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "Verified/X.lean", "module\nimport Verified.Y\n")
    write(tmp_path, "Verified/Y.lean", "module\nimport Verified.X\n")
    mods = lc.discover(tmp_path, [tmp_path / "Verified/X.lean"])
    with pytest.raises(lc.CheckError, match="import cycle"):
        lc.topo_order(mods)


def test_non_module_file_and_missing_import_are_errors(tmp_path: Path) -> None:
    write(tmp_path, "Verified/Old.lean", "import Verified.New\ntheorem t : True := trivial\n")
    with pytest.raises(lc.CheckError, match="not a `module` file"):
        lc.discover(tmp_path, [tmp_path / "Verified/Old.lean"])
    write(tmp_path, "Verified/M.lean", "module\nimport Verified.Missing\n")
    with pytest.raises(lc.CheckError, match="no such module file"):
        lc.discover(tmp_path, [tmp_path / "Verified/M.lean"])


def _keys(root: Path) -> dict[str, str]:
    mods = lc.discover(root, lc.default_targets(root))
    lc.topo_order(mods)
    return {n: m.key for n, m in mods.items()}


def test_cache_key_changes_with_the_module_and_everything_it_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = _keys(root)
    # Change B: B and D (which imports B) must be re-checked, A, C and Unrelated not.
    (root / "Verified/Spec/B.lean").write_text("module\npublic import Verified.Spec.A\n-- x\n")
    after = _keys(root)
    changed = {n for n in before if before[n] != after[n]}
    assert changed == {"Verified.Spec.B", "Verified.Thm.D"}
    # Change A: everything that imports it, transitively.
    (root / "Verified/Spec/A.lean").write_text("module\ndef a := 1\n")
    after2 = _keys(root)
    changed2 = {n for n in after if after[n] != after2[n]}
    assert changed2 == {"Verified.Spec.A", "Verified.Spec.B", "Verified.Spec.C",
                        "Verified.Thm.D"}


def test_cache_key_depends_on_module_name(tmp_path: Path) -> None:
    write(tmp_path, "Verified/P.lean", "module\n")
    write(tmp_path, "Verified/Q.lean", "module\n")
    keys = _keys(tmp_path)
    assert keys["Verified.P"] != keys["Verified.Q"]


def test_count_theorems(tmp_path: Path) -> None:
    f = write(tmp_path, "Verified/T.lean",
              "module\ntheorem a : True := trivial\n@[simp] theorem b : True := trivial\n"
              "private theorem c : True := trivial\n-- theorem d : True := trivial\n"
              "/-- theorem e -/\nlemma f : True := trivial\n")
    assert lc.count_theorems([f]) == 3


def test_lean_home_must_be_visible_to_wasm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LVT_LEAN_HOME", "/var/lvt-lean")
    with pytest.raises(lc.CheckError, match="/tmp or /home"):
        lc.lean_home()
    monkeypatch.setenv("LVT_LEAN_HOME", "/tmp/lvt-lean-x")
    assert lc.lean_home() == Path("/tmp/lvt-lean-x")


# ---------------------------------------------------------------------------------------
# `noncomputable section` insertion and message line mapping
# ---------------------------------------------------------------------------------------

SRC = """module

public import Verified.Spec.A
/- a comment between imports
   import Fake.Thing -/
import Verified.Spec.B

public section

theorem t : 1 = 2 := by decide
"""


def test_staged_text_inserts_after_the_last_import() -> None:
    staged, inserted = lc.staged_text(SRC)
    lines = staged.splitlines()
    src_lines = SRC.splitlines()
    assert src_lines[5] == "import Verified.Spec.B"
    assert inserted == 7, "1-based line of the inserted `noncomputable section`"
    assert lines[inserted - 1] == "noncomputable section"
    # every other line is unchanged, in order
    assert lines[: inserted - 1] + lines[inserted:] == src_lines


def test_staged_text_without_imports_goes_after_module() -> None:
    staged, inserted = lc.staged_text("module\n\ndef x := 1\n")
    assert staged.splitlines() == ["module", "noncomputable section", "", "def x := 1"]
    assert inserted == 2


def _msg(line: int, severity: str, data: str, col: int = 2) -> str:
    return json.dumps({"severity": severity, "data": data,
                       "pos": {"line": line, "column": col}, "fileName": "X.lean"})


def test_message_line_numbers_map_back_to_the_source() -> None:
    staged, inserted = lc.staged_text(SRC)
    staged_line = staged.splitlines().index("theorem t : 1 = 2 := by decide") + 1
    src_line = SRC.splitlines().index("theorem t : 1 = 2 := by decide") + 1
    assert staged_line == src_line + 1
    out = "\n".join([
        "[DEBUG] noise",
        _msg(staged_line, "error", "decide failed"),
        _msg(2, "warning", "unused variable"),
        "not json {",
        _msg(staged_line, "warning", "declaration uses 'sorry'"),
        json.dumps({"no": "severity"}),
    ])
    messages, errors, sorry = lc.parse_messages(out, Path("X.lean"), inserted)
    assert errors == 1 and sorry == 1
    assert messages == [f"X.lean:{src_line}:2: error: decide failed",
                        f"X.lean:{src_line}:2: warning: declaration uses 'sorry'"]


def test_warnings_other_than_sorry_are_not_failures() -> None:
    messages, errors, sorry = lc.parse_messages(
        _msg(3, "warning", "unused variable `x`"), Path("X.lean"), 2)
    assert (messages, errors, sorry) == ([], 0, 0)


def test_verdict_lines_are_parsed_per_module() -> None:
    out = ("  ok     Verified.Spec.Token                        cached\n"
           "  FAILED Verified.Thm.Formats                       123.4 s\n"
           "    /tmp/x/Verified/Thm/Formats.lean:20:2: error: decide failed\n"
           "  ok     LvtVectors.A                               61.0 s\n"
           "lean: FAILED 1 of 3 modules (Verified.Thm.Formats), 0 sorry, 200 s\n")
    run = leangen.CheckRun(1, out, 0.0, {}, {})
    for line in out.splitlines():
        m = leangen._VERDICT_RE.match(line)
        if m:
            run.status[m.group(2)] = m.group(1)
    assert run.status == {"Verified.Spec.Token": "ok", "Verified.Thm.Formats": "FAILED",
                          "LvtVectors.A": "ok"}
    assert "decide failed" in run.messages_for("Verified.Thm.Formats")
    assert run.messages_for("LvtVectors.A") == ""


# ---------------------------------------------------------------------------------------
# The runtime patches: indexed dlsym, deep stacks
# ---------------------------------------------------------------------------------------

# Emscripten's dlsym body around the scanned lookup, as the pinned lean.js has it.
FAKE_RUNTIME = (
    "var __dlsym_js=(handle,symbol,symbolIndex)=>{symbol=UTF8ToString(symbol);var result;"
    "var newSymIndex;var lib=LDSO.loadedLibsByHandle[handle];" + lc.DLSYM_SCAN
    + "if(newSymIndex==-1||lib.exports[symbol].stub){return 0}return newSymIndex};"
)


def test_patched_runtime_replaces_the_scan_once(tmp_path: Path) -> None:
    lean_js = write(tmp_path, "lean.js", "prefix;" + FAKE_RUNTIME + "suffix;")
    out = lc.patched_runtime(lean_js)
    assert out.parent == lean_js.parent and out != lean_js
    text = out.read_text(encoding="utf-8")
    assert lc.DLSYM_SCAN not in text and text.count(lc.DLSYM_INDEXED) == 1
    assert text == ("prefix;" + FAKE_RUNTIME + "suffix;").replace(lc.DLSYM_SCAN,
                                                                 lc.DLSYM_INDEXED)
    assert lean_js.read_text(encoding="utf-8").count(lc.DLSYM_SCAN) == 1  # original untouched
    out.write_text("kept", encoding="utf-8")
    assert lc.patched_runtime(lean_js) == out and out.read_text(encoding="utf-8") == "kept"


def test_patched_runtime_falls_back_when_the_code_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lean_js = write(tmp_path, "lean.js", "var x = 1;")
    assert lc.patched_runtime(lean_js) == lean_js
    assert "unpatched" in capsys.readouterr().err
    assert not list(tmp_path.glob("lean.*.js"))


def test_indexed_dlsym_returns_what_the_scan_returns(tmp_path: Path) -> None:
    """Both lookups on the same export object, in node: hits, misses, prototype names,
    stubs, and an export added after the index was built."""
    node = shutil.which("node")
    assert node is not None, "node is needed (npm, which installs the checker, needs it)"
    harness = """
const exportsObj = {};
for (let i = 0; i < 2000; i++) exportsObj['l_fn_' + i] = function () {};
exportsObj['stubbed'] = { stub: true };
const lib = { exports: exportsObj };
const scan = (lib, symbol) => { let newSymIndex; SCAN return newSymIndex; };
const indexed = (lib, symbol) => { let newSymIndex; INDEXED return newSymIndex; };
const names = ['l_fn_0', 'l_fn_1999', 'l_fn_777', 'missing', 'toString', '__proto__',
               'stubbed', 'l_fn_2000'];
const out = [];
for (const n of names) out.push([n, scan(lib, n), indexed(lib, n)]);
exportsObj['late_export'] = function () {};
for (const n of ['late_export', 'l_fn_5', 'missing']) out.push([n, scan(lib, n), indexed(lib, n)]);
console.log(JSON.stringify(out));
""".replace("SCAN", lc.DLSYM_SCAN).replace("INDEXED", lc.DLSYM_INDEXED)
    script = write(tmp_path, "harness.js", harness)
    proc = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 11
    for name, want, got in rows:
        assert got == want, name
    found = {name: want for name, want, _ in rows}
    assert found["l_fn_1999"] == 1999 and found["missing"] == -1
    assert found["late_export"] == 2001  # the index was rebuilt for the new export


def test_stack_options_write_the_shim_and_raise_the_limit(tmp_path: Path) -> None:
    opts = lc.stack_options(tmp_path)
    shim = tmp_path / "lvt-stack-shim.cjs"
    assert opts[1:] == ["--require", str(shim)]
    assert shim.read_text(encoding="utf-8") == lc.WORKER_STACK_SHIM
    assert "stackSizeMb" in lc.WORKER_STACK_SHIM
    kib = int(opts[0].removeprefix("--stack-size="))
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    assert kib >= 984
    assert soft == resource.RLIM_INFINITY or kib * 1024 < soft  # V8's limit fits the stack


# ---------------------------------------------------------------------------------------
# The real checker on a broken library (one Lean run)
# ---------------------------------------------------------------------------------------

# A Lean module with a small hand-made codec and layout; `{expected}` is the claimed token ids
# of its render. The right ids follow from `encodeItems` (`Verified/Spec/Span.lean`): control
# tokens 1 and 2 stay as they are, each text span is one codec call, and the codec maps a
# character to 100 + its code point: "hi" -> 204 205, "ok" -> 211 207.
EXAMPLE_MODULE = """module

public import Verified.Spec.Span

/-! Checker self-test: a concrete render stated with `by decide +kernel`. -/

namespace Verified

def tinyCodec : Codec where
  encode cs := cs.map fun c => 100 + c.toNat
  bytes t := [UInt8.ofNat (t - 100)]

def tinyItems : List Item :=
  [⟨.ctrl 1, ⟨0, false⟩⟩, ⟨.text ['h', 'i'], ⟨0, false⟩⟩, ⟨.ctrl 2, ⟨1, true⟩⟩,
   ⟨.text ['o', 'k'], ⟨1, true⟩⟩]

example : ids (encodeItems tinyCodec tinyItems) = {expected} := by decide +kernel

example : mask (encodeItems tinyCodec tinyItems) =
    [false, false, false, true, true, true] := by decide +kernel

end Verified
"""

RIGHT_IDS = [1, 204, 205, 2, 211, 207]
# One id wrong: the last character's id off by one.
WRONG_IDS = [*RIGHT_IDS[:5], 208]


def _break_library(root: Path) -> tuple[Path, str, str]:
    """Break one definition of the staged library so that a theorem catches it.

    Returns the theorem file to check, the module name, and the name of the theorem expected
    to fail. Makes Llama 3.1's end of turn the header token (`<|eot_id|>` 128009 replaced by
    `<|start_header_id|>` 128006: a turn would close by opening the next one, and the parser
    could no longer find turn boundaries); `llama31Ids_wf`, proved by `decide`, must fail.
    """
    path = root / "Verified/Spec/Llama.lean"
    text = path.read_text(encoding="utf-8")
    old = "  ⟨128000, 128006, 128007, 128009, [128001, 128008, 128010]⟩\n"
    assert text.count(old) == 1, "Llama.lean changed: update the break in test_checker.py"
    path.write_text(text.replace(old, old.replace("128009", "128006")), encoding="utf-8")
    theorem = "llama31Ids_wf"
    thm = next(p for p in sorted((root / "Verified/Thm").glob("*.lean"))
               if f"theorem {theorem}" in p.read_text(encoding="utf-8"))
    module = "Verified.Thm." + thm.stem
    return thm, module, theorem


@pytest.mark.lean
@pytest.mark.skipif(not leangen.lean_available(), reason="no npm and no installed wasm Lean")
def test_checker_rejects_a_broken_library_and_a_wrong_example() -> None:
    """One `lean_check` invocation, three target modules checked independently:

    * the library with one definition broken: the theorem that depends on it must fail and
      the checker must name it (file, line, theorem) and the failing module;
    * `Verified/SelfTest/Wrong.lean`: a wrong `example … := by decide +kernel` must fail on its own;
    * `Verified/SelfTest/Right.lean`: the same example with the right ids must pass.
    """
    root = leangen.stage_library("lvt-checker-selftest-")
    try:
        thm, thm_module, theorem = _break_library(root)
        wrong = write(root, "Verified/SelfTest/Wrong.lean",
                      EXAMPLE_MODULE.replace("{expected}", str(WRONG_IDS)))
        right = write(root, "Verified/SelfTest/Right.lean",
                      EXAMPLE_MODULE.replace("{expected}", str(RIGHT_IDS)))
        run = leangen.run_checker(root, [thm, wrong, right])
        print(run.output)
        print(f"lean_check wall time: {run.seconds:.0f} s")

        assert run.returncode == 1, run.output
        # The broken spec module itself still compiles: the break is semantic.
        assert run.status.get("Verified.Spec.Llama") == "ok", run.output
        # The theorem file fails, and the checker says which theorem and where.
        assert run.status.get(thm_module) == "FAILED", run.output
        msgs = run.messages_for(thm_module)
        thm_lines = thm.read_text(encoding="utf-8").splitlines()
        line_of = next(i for i, ln in enumerate(thm_lines, 1) if f"theorem {theorem}" in ln)
        assert "error" in msgs, msgs
        reported = {int(x.split(":")[1]) for x in msgs.splitlines()
                    if x.strip().startswith(str(thm))}
        assert any(line_of <= ln <= line_of + 2 for ln in reported), (line_of, msgs)
        # The wrong example fails on its own, the corrected one passes.
        assert run.status.get("Verified.SelfTest.Wrong") == "FAILED", run.output
        assert "error" in run.messages_for("Verified.SelfTest.Wrong")
        wrong_lines = wrong.read_text(encoding="utf-8").splitlines()
        wrong_line = next(i for i, ln in enumerate(wrong_lines, 1)
                          if ln.startswith("example : ids"))
        assert f"Wrong.lean:{wrong_line}:" in run.messages_for("Verified.SelfTest.Wrong")
        assert run.status.get("Verified.SelfTest.Right") == "ok", run.output
        # The summary line names the failing modules.
        summary = run.output.strip().splitlines()[-1]
        assert summary.startswith("lean: FAILED 2 of"), summary
        assert thm_module in summary and "Verified.SelfTest.Wrong" in summary
        assert "Verified.SelfTest.Right" not in summary
    finally:
        shutil.rmtree(root, ignore_errors=True)
