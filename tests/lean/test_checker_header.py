"""The checker's reading of Lean module headers and of the lakefile's Lean options.

The header grammar is Lean 4.28's ``Lean.Parser.Module.header``: ``module``? ``prelude``?
then imports ``public``? ``meta``? ``import`` ``all``? NAME, with Lean's whitespace (line and
nested block comments) between any two tokens; a doc comment or any other token ends the
header. The expected import lists below are read off that grammar, not off the parser.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import leangen

lc = leangen.load_checker()
REPO = Path(__file__).resolve().parents[2]


def imports(text: str) -> list[str]:
    return lc.header_imports(text)


# ---------------------------------------------------------------------------------------
# Header grammar
# ---------------------------------------------------------------------------------------


def test_import_wrapped_over_lines_with_comments_between_tokens() -> None:
    text = ("module\n\npublic\n  import\n    Verified.A\npublic -- why\n meta /- nested /- "
            "block -/ comment -/ import\n  all\n  Verified.B\n\npublic section\n")
    h = lc.parse_header(text)
    assert [i.module for i in h.imports] == ["Verified.A", "Verified.B"]
    a, b = h.imports
    assert (a.public, a.meta, a.all, a.line) == (True, False, False, 3)
    assert (b.public, b.meta, b.all, b.line) == (True, True, True, 6)
    assert h.is_module and not h.prelude
    assert text[h.end:].startswith("public section")


def test_the_old_line_regex_missed_what_the_parser_reads() -> None:
    # The import the audit found missed: keyword and name on different lines.
    assert imports("module\nimport\n  Verified.Dep\n\ndef x := 1\n") == ["Verified.Dep"]
    assert imports("module\nimport Verified.A -- trailing comment\n") == ["Verified.A"]
    assert imports("module\nimport Verified.A /- c -/ import Verified.B\n") == [
        "Verified.A", "Verified.B"]


def test_prelude_module_and_escaped_names() -> None:
    h = lc.parse_header("module\nprelude\nimport «Verified».«My Mod».X\n")
    assert h.is_module and h.prelude
    assert [i.module for i in h.imports] == ["Verified.My Mod.X"]
    h2 = lc.parse_header("prelude\nimport Init.Core\n")
    assert not h2.is_module and h2.prelude and [i.module for i in h2.imports] == ["Init.Core"]


def test_header_ends_where_lean_ends_it() -> None:
    # A doc comment is a token, not whitespace: the header ends there.
    assert imports("module\n/-! doc -/\nimport Verified.A\n") == []
    assert imports("module\n/-- doc -/\nimport Verified.A\n") == []
    # `public section` backtracks out of the import rule.
    h = lc.parse_header("module\nimport Verified.A\npublic section\nimport Verified.B\n")
    assert [i.module for i in h.imports] == ["Verified.A"]
    # One module per import: Lean reads `B` as the first command (and fails on it).
    assert imports("module\nimport Verified.A Verified.B\n") == ["Verified.A"]
    # Names that merely start with a keyword are identifiers.
    assert imports("module\nimportant\nimport Verified.A\n") == []
    assert not lc.parse_header("modules\n").is_module
    # No `module` keyword: not a module file (the line regex accepted `module` anywhere).
    assert not lc.parse_header("-- x\ndef y := 1\nmodule\n").is_module


@pytest.mark.parametrize(("text", "why"), [
    ("module\nimport\n\ndef x := 1\n", "expected a module name"),
    ("module\nimport all\n", "expected a module name"),
    ("module\nimport Verified.\n", "partial module name"),
    ("module\n\timport Verified.A\n", "tabs are not allowed"),
    ("module\n/- open\nimport Verified.A\n", "unterminated comment"),
    ("module\rimport Verified.A\n", "isolated carriage return"),
])
def test_malformed_headers_are_located_errors(text: str, why: str) -> None:
    with pytest.raises(lc.HeaderError, match=why) as e:
        lc.parse_header(text, "Verified/X.lean")
    assert str(e.value).startswith("Verified/X.lean:")


def test_crlf_is_whitespace() -> None:
    assert imports("module\r\nimport Verified.A\r\n") == ["Verified.A"]


def test_staged_text_after_a_wrapped_import() -> None:
    src = "module\n\npublic import\n  Verified.A -- note\n/-! doc -/\ntheorem t : True := trivial\n"
    staged, inserted = lc.staged_text(src)
    lines = staged.splitlines()
    assert inserted == 5 and lines[4] == "noncomputable section"
    assert lines[:4] + lines[5:] == src.splitlines()


def test_staged_text_does_not_land_inside_a_comment() -> None:
    src = "module\nimport Verified.A /- a comment\n over lines -/\ndef x := 1\n"
    staged, inserted = lc.staged_text(src)
    lines = staged.splitlines()
    assert inserted == 4 and lines[3] == "noncomputable section"
    assert lines[:3] + lines[4:] == src.splitlines()
    src2 = "module\nimport Verified.A /- c -/ def x := 1\n"
    staged2, inserted2 = lc.staged_text(src2)
    assert inserted2 is None, "inline: no line shifts"
    assert staged2 == "module\nimport Verified.A /- c -/ noncomputable section def x := 1\n"


def test_discover_follows_a_wrapped_import(tmp_path: Path) -> None:
    (tmp_path / "Verified").mkdir()
    (tmp_path / "Verified/Dep.lean").write_text("module\ndef d := 1\n", encoding="utf-8")
    (tmp_path / "Verified/Top.lean").write_text(
        "module\npublic\nimport -- the name is on the next line\n  Verified.Dep\n",
        encoding="utf-8")
    mods = lc.discover(tmp_path, [tmp_path / "Verified/Top.lean"])
    assert mods["Verified.Top"].imports == ["Verified.Dep"]
    lc.topo_order(mods)
    before = {n: m.key for n, m in mods.items()}
    (tmp_path / "Verified/Dep.lean").write_text("module\ndef d := 2\n", encoding="utf-8")
    mods2 = lc.discover(tmp_path, [tmp_path / "Verified/Top.lean"])
    lc.topo_order(mods2)
    assert mods2["Verified.Top"].key != before["Verified.Top"]


def test_keys_cover_the_context() -> None:
    def key(context: str) -> str:
        m = lc.Module("Verified.A", Path("A.lean"), [], "module\n")
        lc.topo_order({"Verified.A": m}, context)
        return m.key

    base = lc.context_digest("tc1", "chk1", "opt1")
    assert len({key(base), key(lc.context_digest("tc2", "chk1", "opt1")),
                key(lc.context_digest("tc1", "chk2", "opt1")),
                key(lc.context_digest("tc1", "chk1", "opt2"))}) == 4
    assert key(base) == key(base)


def test_checker_digest_covers_every_checker_file(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "lvt_lean"
    pkg.mkdir()
    for f in (REPO / "scripts/lvt_lean").glob("*.py"):
        (pkg / f.name).write_bytes(f.read_bytes())
    entry = tmp_path / "lean_check"
    entry.write_bytes((REPO / "scripts/lean_check").read_bytes())
    monkeypatch.setattr(lc.graph, "CHECKER_DIR", pkg)
    monkeypatch.setattr(lc.graph, "CHECKER_ENTRY", entry)
    first = lc.checker_digest()
    for f in [entry, *sorted(pkg.glob("*.py"))]:
        old = f.read_bytes()
        f.write_bytes(old + b"\n# changed\n")
        assert lc.checker_digest() != first, f.name
        f.write_bytes(old)
    assert lc.checker_digest() == first


# ---------------------------------------------------------------------------------------
# Lakefile options
# ---------------------------------------------------------------------------------------


def test_the_projects_lakefile_options() -> None:
    opts = lc.parse_lakefile(REPO / "lakefile.lean")
    assert dict(opts.options) == {"autoImplicit": "false", "relaxedAutoImplicit": "false"}
    assert "-DautoImplicit=false" in opts.argv()


def _lake(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "lakefile.lean"
    p.write_text("import Lake\nopen Lake DSL\n\n" + body, encoding="utf-8")
    return p


def test_lakefile_options_and_args_in_every_block(tmp_path: Path) -> None:
    p = _lake(tmp_path, (
        "package p where\n  leanOptions := #[⟨`autoImplicit, false⟩,\n"
        "    ⟨`maxHeartbeats, 400000⟩] -- leanOptions := #[⟨`x, true⟩]\n"
        "  moreLeanArgs := #[\"-DmaxRecDepth=2000\"]\n"
        "/- leanOptions := #[⟨`hidden, true⟩] -/\n"
        "lean_lib L where\n  leanOptions := #[⟨`pp.all, .ofBool true⟩, ⟨`s, \"a b\"⟩]\n"))
    opts = lc.parse_lakefile(p)
    assert opts.argv() == ["-DautoImplicit=false", "-DmaxHeartbeats=400000", "-Dpp.all=true",
                           "-Ds=a b", "-DmaxRecDepth=2000"]
    assert opts.digest() != lc.LeanOptions().digest()


@pytest.mark.parametrize("body", [
    "package p where\n  leanOptions := if true then #[] else #[]\n",
    "package p where\n  leanOptions := #[⟨`autoImplicit, someValue⟩]\n",
    "package p where\n  leanOptions := #[myOption]\n",
    "package p where\n  moreLeanArgs := #[s!\"-D{x}\"]\n",
    "package p where\n  moreLeanArgs := args\n",
    "package p where\n  leanOptions := #[⟨`a, true⟩\n",
    "package p where\n  leanOptions := #[⟨`a, true⟩]\nlean_lib L where\n"
    "  leanOptions := #[⟨`a, false⟩]\n",
])
def test_lakefile_options_that_cannot_be_passed_fail_loudly(tmp_path: Path, body: str) -> None:
    p = _lake(tmp_path, body)
    with pytest.raises(lc.LakefileError, match=r"lakefile\.lean:\d+: `(leanOptions|moreLeanArgs)`"):
        lc.parse_lakefile(p)


def test_main_exits_2_on_a_lakefile_it_cannot_read(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "Verified").mkdir()
    (tmp_path / "Verified/A.lean").write_text("module\n", encoding="utf-8")
    _lake(tmp_path, "package p where\n  leanOptions := opts\n")
    rc = lc.main(["--root", str(tmp_path)])
    assert rc == 2
    assert "lakefile.lean:5: `leanOptions`" in capsys.readouterr().err
