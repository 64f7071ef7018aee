"""The project modules, their import graph (from the parsed headers) and their cache keys.

A module's key is a hash of: the key schema, the *context* (the toolchain identity, the
checker's own source and the Lean options: see :func:`context_digest`), the module's name
and full text, and the names and keys of the project modules it imports. Keys are computed in
dependency order, so a module's key changes whenever anything it imports changes, however far
down.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .errors import CheckError
from .header import parse_header

PROJECT_ROOTS = ("Verified",)
KEY_SCHEMA = "lvt-lean-key-v2"
CHECKER_DIR = Path(__file__).resolve().parent
CHECKER_ENTRY = CHECKER_DIR.parent / "lean_check"


@dataclass
class Module:
    """A project module: its name, source path and project imports."""

    name: str
    path: Path
    imports: list[str]
    text: str
    key: str = ""


def module_name(root: Path, path: Path) -> str:
    """The module name of ``path`` under ``root``: ``Verified/A/B.lean`` → ``Verified.A.B``."""
    rel = path.resolve().relative_to(root.resolve())
    return ".".join(rel.with_suffix("").parts)


def project_roots(root: Path) -> set[str]:
    """The first components of module names that belong to the project."""
    names = set(PROJECT_ROOTS)
    names.update(p.stem for p in root.glob("*.lean") if p.name != "lakefile.lean")
    return names


def default_targets(root: Path) -> list[Path]:
    """Every module of the library: ``Verified/**.lean`` and ``Verified.lean``."""
    targets = [p for r in PROJECT_ROOTS for p in sorted((root / r).rglob("*.lean"))]
    targets += [root / f"{r}.lean" for r in PROJECT_ROOTS if (root / f"{r}.lean").exists()]
    return targets


def discover(root: Path, targets: list[Path]) -> dict[str, Module]:
    """Load the targets and, transitively, every project module they import."""
    modules: dict[str, Module] = {}
    roots = project_roots(root)
    todo = list(targets)
    while todo:
        path = todo.pop()
        name = module_name(root, path)
        if name in modules:
            continue
        if not path.exists():
            raise CheckError(f"{path}: no such module file")
        text = path.read_text(encoding="utf-8")
        header = parse_header(text, str(path))
        if not header.is_module:
            raise CheckError(f"{path}: not a `module` file (every project file must start "
                             "with `module`)")
        imports = [i.module for i in header.imports if i.module.split(".")[0] in roots]
        modules[name] = Module(name, path, imports, text)
        for imp in imports:
            todo.append(root / (imp.replace(".", "/") + ".lean"))
    return modules


def checker_digest() -> str:
    """Digest of the checker's own source: ``scripts/lean_check`` and this package."""
    h = hashlib.sha256()
    files = [CHECKER_ENTRY, *sorted(CHECKER_DIR.glob("*.py"))]
    for f in files:
        if f.exists():
            h.update(f"{f.name}\0".encode() + f.read_bytes() + b"\0")
    return h.hexdigest()


def context_digest(toolchain_identity: str, checker: str, options: str) -> str:
    """What every key covers besides the modules: toolchain, checker source, options."""
    return hashlib.sha256(
        f"toolchain {toolchain_identity}\0checker {checker}\0options {options}".encode()
    ).hexdigest()


def topo_order(modules: dict[str, Module], context: str = "") -> list[str]:
    """Dependency order of ``modules`` (imports first); sets every module's ``key``."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str, stack: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise CheckError("import cycle: " + " -> ".join([*stack, name]))
        state[name] = 1
        for dep in modules[name].imports:
            visit(dep, [*stack, name])
        state[name] = 2
        order.append(name)

    for name in sorted(modules):
        visit(name, [])
    for name in order:
        m = modules[name]
        h = hashlib.sha256(f"{KEY_SCHEMA}\0{context}\0".encode())
        h.update(m.name.encode() + b"\0" + m.text.encode())
        for dep in sorted(set(m.imports)):
            h.update(f"\0{dep}={modules[dep].key}".encode())
        m.key = h.hexdigest()[:32]
    return order
