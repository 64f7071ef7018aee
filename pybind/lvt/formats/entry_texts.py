"""Texts shared by the registry entries of the Python-only structures (Gemma 4, tagged turns):
what each entry states about its extension property and its lawfulness, the common parts of
their descriptions, and Kimi's parameters. Data only: :mod:`lvt.formats` registers the
entries."""

from __future__ import annotations

from typing import Any

__all__ = ["G4_DESC", "G4_EXT", "G4_LAWFUL", "KIMI_PARAMS", "KIMI_SYSTEM", "TAGGED_DESC",
           "TAGGED_EXT", "tagged_default_lawful",
           "tagged_lawful"]

#: The Gemma 4 entries' extension property (thinking on, or a sampled turn).
G4_EXT = ("tested, not proven: a render with the generation prompt is a prefix of an "
          "extension by one assistant turn when the prompt's opening is the turn's (thinking "
          "on, or a sampled turn); an appended user message drops earlier reasoning")
#: The Gemma 4 entries: not proven, and where they are tested.
G4_LAWFUL = ("not proven: no Lean definition states the Gemma 4 structure yet; round trip, "
             "masks and no-forgery are tested by tests/test_gemma4.py and "
             "tests/test_roundtrip_property.py")
#: The Gemma 4 entries' common description.
G4_DESC = ("(turns <|turn>ROLE ... <turn|>, <|think|> in the system turn with enable_thinking, "
           "reasoning as a thought channel after the last user message; text-level: Gemma 3's "
           "vocabulary with Gemma 4's markers; tools refused: its tool syntax is not built yet)")

def tagged_lawful(entry: str) -> str:
    """Where a tagged-turns entry's ``Format.Lawful`` is proven: the structure's ``lawful``
    instantiated by the entry's kernel-decided side condition."""
    return (f"Verified/Thm/TaggedLawful.lean: lawful; Verified/Thm/TaggedEntries.lean: "
            f"{entry}_lawful, {entry}_wf")


def tagged_default_lawful(entry: str) -> str:
    """The same for an entry whose template inserts a default system turn
    (``Verified/Spec/TaggedDefault.lean``)."""
    return f"Verified/Thm/TaggedDefault.lean: lawfulD, {entry}_lawful, {entry}_wf"


#: The tagged-turns entries' extension property.
TAGGED_EXT = ("tested, not proven: a render with the generation prompt is a prefix of its "
              "extension by one assistant turn")
#: The Phi entries' common description.
TAGGED_DESC = ("every message one turn, content verbatim; text-level: the model's control "
               "tokens at its ids on a registry vocabulary; tools and reasoning refused: the "
               "template never writes them")

#: The system text Kimi K2-Instruct and K2-Thinking insert.
KIMI_SYSTEM = "You are Kimi, an AI assistant created by Moonshot AI."
#: Kimi K2.x's turns as tagged-turns parameters (``<|im_user|>user<|im_middle|>`` ...).
KIMI_PARAMS: dict[str, Any] = {
    "header": ("<|im_{role}|>", "{role}", "<|im_middle|>"), "footer": ("<|im_end|>",),
    "roles": ("system", "user", "assistant"), "eos": None, "think": ("<think>", "</think>"),
    "tools": False,
}
