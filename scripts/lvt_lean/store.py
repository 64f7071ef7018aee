"""The cache of checked modules: one directory per key, its artefacts verified on reuse.

``store/KEY/`` holds the artefacts Lean produced for a module (``module.olean``,
``module.ilean``, ...) and a marker ``ok``: JSON with the key, the module name and the
SHA-256 of every artefact. A cached result is reused only when the marker parses, names this
key and module, and lists exactly the artefacts present with matching digests; the bytes
that are checked are the bytes copied into the run's build directory. Anything else (an old
marker format, a missing, extra or altered artefact, a marker written for another key) is
rejected with the reason, the entry is removed and the module is checked again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

MARKER = "ok"
MARKER_SCHEMA = 2
OUTPUT_SUFFIXES = (".olean", ".olean.private", ".olean.server", ".ir", ".ilean")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def discard(entry: Path) -> None:
    """Remove a store entry (renamed away first, so no reader sees it half deleted)."""
    if not entry.exists():
        return
    trash = Path(tempfile.mkdtemp(dir=entry.parent, prefix="trash."))
    with contextlib.suppress(OSError):
        entry.rename(trash / "entry")
    shutil.rmtree(trash, ignore_errors=True)


def restore(store: Path, key: str, module: str, build: Path, rel: Path) -> tuple[bool, str]:
    """Copy the verified artefacts of ``store/key`` to ``build/rel.*``.

    Returns ``(True, "")`` when reused, ``(False, "")`` when there is no entry, and
    ``(False, reason)`` when an entry was there and rejected (it is then removed).
    """
    entry = store / key
    marker_path = entry / MARKER
    if not marker_path.exists():
        return False, ""
    reason = ""
    blobs: dict[str, bytes] = {}
    try:
        marker = json.loads(marker_path.read_text(encoding="utf-8"))
        if not isinstance(marker, dict) or marker.get("schema") != MARKER_SCHEMA:
            reason = "marker of an older format (no artefact digests)"
        elif marker.get("key") != key or marker.get("module") != module:
            reason = (f"marker written for {marker.get('module')!r} with key "
                      f"{marker.get('key')!r}")
        else:
            artefacts = marker.get("artefacts")
            present = {p.name for p in entry.iterdir() if p.name != MARKER}
            if not isinstance(artefacts, dict) or "module.olean" not in artefacts:
                reason = "marker lists no .olean"
            elif set(artefacts) != present:
                reason = (f"artefacts {sorted(present)} differ from the marker's "
                          f"{sorted(artefacts)}")
            else:
                for name, digest in sorted(artefacts.items()):
                    data = (entry / name).read_bytes()
                    if _sha(data) != digest:
                        reason = f"{name} does not match its digest"
                        break
                    blobs[name] = data
    except (OSError, ValueError) as e:
        reason = f"unreadable entry ({e})"
    if reason:
        discard(entry)
        return False, reason
    for name, data in blobs.items():
        dst = build / (str(rel) + name.removeprefix("module"))
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    return True, ""


def save(store: Path, key: str, module: str, build: Path, rel: Path, seconds: float) -> None:
    """Store the artefacts Lean produced at ``build/rel.*`` under ``key``, with their digests
    in the marker (written last, the entry renamed into place in one step)."""
    tmp = Path(tempfile.mkdtemp(dir=store, prefix="tmp."))
    digests: dict[str, str] = {}
    for suffix in OUTPUT_SUFFIXES:
        produced = build / (str(rel) + suffix)
        if produced.exists():
            data = produced.read_bytes()
            (tmp / ("module" + suffix)).write_bytes(data)
            digests["module" + suffix] = _sha(data)
    marker = {"schema": MARKER_SCHEMA, "key": key, "module": module, "artefacts": digests,
              "seconds": seconds}
    (tmp / MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
    if (store / key).exists():
        discard(store / key)  # an entry without a valid marker (we hold the key's lock)
    try:
        tmp.rename(store / key)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
