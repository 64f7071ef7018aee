"""The Lean tagged-turns entries (``Verified/Spec/TaggedEntries.lean``, and
``TaggedDefault.lean`` for the two with a default system turn) hold the values the
Python registry resolves from the entries' vocabularies: the control ids of every header, the
footer token and text, ``eos_token``, the think block, how much of it the prompt writes, and
the reserved ids. The goldens (``Verified/Thm/Golden.lean``) pin the renders; this pins what a
render does not show (the reserved set the no-forgery theorem is stated for, and the other
value of the ``thinking`` option).

The Lean file is read with patterns for the forms it uses; a record written another way fails
here with the entry's name rather than passing unread.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import lvt

LEAN = Path(__file__).resolve().parents[1] / "Verified" / "Spec" / "TaggedEntries.lean"
#: the entries whose template inserts a default system turn
LEAN_DEFAULT = LEAN.with_name("TaggedDefault.lean")
#: registry entry -> (vocabulary, the Lean record's name, the `thinking` option or None)
ENTRIES = {"phi3": ("phi3-text", "phi3", None), "talkie": ("phi3-text", "talkie", None),
           "phi4": ("phi4-text", "phi4", None),
           "kimi-k2.5": ("kimi-text", "kimiK25", True),
           "kimi-k2.5/no-thinking": ("kimi-text", "kimiK25", False),
           "kimi-k2.7-code": ("kimi-text", "kimiK27Code", None)}
_ROLES = ("system", "user", "assistant")


def _defs(text: str) -> dict[str, str]:
    """Each ``@[expose] def NAME`` with its body (up to the blank line after it)."""
    parts = re.split(r"^@\[expose\] def ", text, flags=re.M)[1:]
    return {p.split()[0]: p.split("\n\n")[0] for p in parts}


def _ints(s: str) -> list[int]:
    return [int(x) for x in re.findall(r"\b\d+\b", s)]


def _role_fn(defs: dict[str, str], name: str) -> dict[str, int]:
    """A ``Role → Token`` function written as ``| .system => N | .user => N | _ => N``."""
    arms = dict(re.findall(r"\| (\.\w+|_) => (\d+)", defs[name]))
    return {r: int(arms.get(f".{r}", arms["_"])) for r in _ROLES}


def _field(body: str, name: str) -> str:
    m = re.search(rf"^  {name} := (.*?)(?=^  \w+ :=|\Z)", body, re.M | re.S)
    assert m, f"no field {name!r} in {body[:40]!r}"
    return m.group(1).strip()


def _record(defs: dict[str, str], name: str, thinking: bool | None) -> dict[str, Any]:
    """The Lean record's values, following ``kimiK25 thinking := kimi false (if ...)``."""
    body, args = defs[name], {}
    call = re.search(r":= kimi (true|false) (\d+|\(if thinking then (\d+) else (\d+)\))", body)
    if call:
        keep, pt = call.group(1) == "true", call.group(2)
        if pt.startswith("("):
            pt = call.group(3) if thinking else call.group(4)
        body, args = defs["kimi"], {"keep": keep, "pt": int(pt)}
    heads = _field(body, "heads")
    fn = re.search(r"\.ctrl \((\w+) r\)", heads)
    role_ids = _role_fn(defs, fn.group(1)) if fn else None
    lit = [int(x) for x in re.findall(r"\.ctrl (\d+)", heads)]
    headers = {r: ([role_ids[r]] if role_ids else []) + lit for r in _ROLES}
    reserved = _field(body, "reserved")
    return {"headers": headers,
            "end": int(_field(body, "endTurn")),
            "tail": "".join(re.findall(r"'(\\n|.)'", _field(body, "footTail"))).replace(
                "\\n", "\n"),
            "eos": (_ints(_field(body, "eos")) or [None])[0],
            "think": tuple(_ints(_field(body, "think"))) or None,
            "keep": args["keep"] if args else _field(body, "keep") == "true",
            "pt": args["pt"] if args else int(_field(body, "promptThink")),
            "reserved": set(_ints(defs[reserved]) if reserved in defs else _ints(reserved))}


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_lean_entry_holds_the_registry_values(entry: str) -> None:
    vocab, name, thinking = ENTRIES[entry]
    opts = {} if thinking is None else {"thinking": thinking}
    fam = lvt.ChatEncoder.from_tokenizer(vocab, entry.split("/")[0], **opts).family
    lean = _record(_defs(LEAN.read_text(encoding="utf-8")), name, thinking)
    assert lean["headers"] == {r: [x for x in fam.headers[r] if isinstance(x, int)]
                               for r in _ROLES}, entry
    assert lean["end"] == fam.footer[0]
    assert lean["tail"] == "".join(x for x in fam.footer[1:] if isinstance(x, str))
    assert lean["eos"] == fam.eos
    assert lean["think"] == fam.think
    assert (lean["keep"], lean["pt"]) == (fam.keep_reasoning, fam.prompt_think)
    assert lean["reserved"] == set(fam.reserved)


def test_header_texts_are_the_roles() -> None:
    """Phi-4's and Kimi's headers write the role as text between two control tokens, Phi-3's a
    newline after one: what the Lean records write with ``roleText`` and ``['\\n']``."""
    defs = _defs(LEAN.read_text(encoding="utf-8"))
    assert "(roleText r)" in _field(defs["phi4"], "heads")
    assert "(roleText r)" in _field(defs["kimi"], "heads")
    assert ".text ['\\n']" in _field(defs["phi3"], "heads")
    for entry, texts in (("phi4", ["system", "user", "assistant"]),
                         ("kimi-k2.5", ["system", "user", "assistant"]),
                         ("phi3", ["\n"] * 3)):
        fam = lvt.ChatEncoder.from_tokenizer(ENTRIES[entry][0], entry).family
        assert ["".join(x for x in fam.headers[r] if isinstance(x, str)) for r in _ROLES] \
            == texts


@pytest.mark.parametrize(("entry", "name"), [("kimi-k2", "kimiK2"),
                                             ("kimi-k2-thinking", "kimiK2Thinking")])
def test_default_turn_entries_hold_the_registry_values(entry: str, name: str) -> None:
    """K2-Instruct and K2-Thinking (``Spec/TaggedDefault.lean``): the turns' record is Kimi's
    (``kimi keep pt``, K2-Instruct without a think block), then the default text, the text after
    the turn and whether an empty conversation gets it."""
    defs = _defs(LEAN_DEFAULT.read_text(encoding="utf-8"))
    fam = lvt.ChatEncoder.from_tokenizer("kimi-text", entry).family
    m = re.search(r":=\s*⟨(\{ )?kimi (true|false) (\d+)( with think := none \})?, kimiSystem, "
                  r"\[(.*?)\], (true|false)⟩", defs[name])
    assert m, defs[name]
    assert (m.group(2) == "true", int(m.group(3))) == (fam.keep_reasoning, fam.prompt_think)
    assert (m.group(4) is not None) == (fam.think is None)
    assert "".join(re.findall(r"'(\\n|.)'", m.group(5))).replace("\\n", "\n") == \
        fam.default_tail
    assert (m.group(6) == "true") == fam.default_if_empty
    text = "".join(re.findall(r"'(.)'", defs["kimiSystem"].split(":=", 1)[1]))
    assert text == fam.default_system
    # the turns' control ids are those of the Kimi record the other entries are checked on
    kimi = _record(_defs(LEAN.read_text(encoding="utf-8")), "kimiK27Code", None)
    assert kimi["headers"] == {r: [x for x in fam.headers[r] if isinstance(x, int)]
                               for r in _ROLES}
    assert (kimi["end"], kimi["reserved"]) == (fam.footer[0], set(fam.reserved))
