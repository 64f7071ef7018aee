"""Bounded template evaluation (``lvt.compare.bounds``) through the API that renders templates
(``JinjaRenderer``, ``build_jinja``, ``make_checker``): a looping template and a huge-output
one are stopped with a typed :class:`TemplateLimitError` within the limit, a normal template
renders exactly as without limits, the sandbox still refuses the known escapes, and nothing
leaks into later renders."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from lvt.compare import check as ck
from lvt.compare.bounds import TemplateLimitError, TemplateLimits
from lvt.compare.renderers import JinjaRenderer, build_jinja
from lvt.errors import ArgumentError, LvtError

MSGS = [{"role": "user", "content": "hi"}]
#: 1e10 iterations and no output (range is capped at 1e5 by the sandbox, so two nested).
LOOP = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}x"
#: The same through lists: no range object left to hook, the loop is plain bytecode.
LOOP_LISTS = ("{% set r = range(100000)|list %}{% for a in r %}{% for b in r %}{% endfor %}"
              "{% endfor %}x")
#: Up to 1e12 characters of output.
HUGE = ("{% for a in range(100000) %}{% for b in range(100000) %}{{ 'x' * 100 }}{% endfor %}"
        "{% endfor %}")
#: Text collected in a {% set %} block (never written while it grows).
SET_BLOCK = ("{% set x %}{% for a in range(1000) %}{{ 'y' * 1000 }}{% endfor %}{% endset %}"
             "{{ x|length }}")
#: A macro that builds without end in memory (1e10 pieces), never written.
MACRO = ("{% macro m() %}{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}-{{ b }}"
         "{% endfor %}{% endfor %}{% endmacro %}{{ m()|length }}")
NORMAL = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
          "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def tok() -> Any:
    """A byte-level tokenizer (every byte one token): built in microseconds, so each test
    can build the renderers it needs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    t = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    return t


@pytest.fixture(scope="module")
def qwen() -> Any:
    """The real qwen2.5 tokenizer, as ``lvt check`` loads it (shared with ``make_checker``)."""
    from lvt.compare.templates import load_tokenizer_spec

    return load_tokenizer_spec("qwen2.5")[0]


R = JinjaRenderer


def _stopped(r: JinjaRenderer, budget: float) -> tuple[TemplateLimitError, float]:
    t0 = time.monotonic()
    with pytest.raises(TemplateLimitError) as ei:
        r.render_ids(MSGS)
    took = time.monotonic() - t0
    assert took < budget, took
    return ei.value, took


@pytest.mark.parametrize("text", [LOOP, LOOP_LISTS], ids=["range", "lists"])
def test_a_loop_without_output_stops_at_the_deadline(tok: Any, text: str) -> None:
    r = R(tok, text, template_timeout=0.5)
    err, took = _stopped(r, 3.0)
    assert took >= 0.5
    assert isinstance(err, LvtError)
    assert (err.limit, err.value, err.setting) == ("time", 0.5, "--template-timeout")
    assert "time limit of 0.5 s" in str(err)


def test_huge_output_stops_at_the_output_limit(tok: Any) -> None:
    r = R(tok, HUGE, template_timeout=60, template_max_output=10_000)
    err, _ = _stopped(r, 2.0)
    assert (err.limit, err.value) == ("output", 10_000)
    assert "passed 10000 characters" in str(err)


def test_a_set_block_larger_than_the_limit_is_refused(tok: Any) -> None:
    r = R(tok, SET_BLOCK, template_max_output=10_000)
    err, _ = _stopped(r, 2.0)
    assert err.limit == "output" and "built 1000000 characters" in str(err)
    # the same block within the limit renders
    ok = R(tok, SET_BLOCK, template_max_output=2_000_000)
    assert ok.render_text(MSGS) == "1000000"


def test_text_built_in_memory_is_stopped_by_the_memory_guard(tok: Any) -> None:
    """No output and a generous deadline: the growth of resident memory stops it."""
    r = R(tok, MACRO, template_timeout=30, template_max_output=1000)
    err, _ = _stopped(r, 20.0)
    assert err.limit == "output" and "in memory" in str(err)


def test_limits_leave_a_normal_render_unchanged(tok: Any) -> None:
    from lvt.compare.templates import resolve_template

    official = resolve_template("qwen3", None).text
    free = R(tok, official, template_timeout=None, template_max_output=None)
    bound = R(tok, official)
    assert free.limits.unbounded and not bound.limits.unbounded
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    for msgs, tl, gen in ((MSGS, None, True),
                          ([*MSGS, {"role": "assistant", "content": "hello"}], tools, False)):
        want = free.render_ids(msgs, tl, gen)
        assert want and bound.render_ids(msgs, tl, gen) == want
        assert bound.render_text(msgs, tl, gen) == free.render_text(msgs, tl, gen)
    # an output exactly at the limit is kept, one character more is not
    n = len(R(tok, NORMAL, template_timeout=None,
              template_max_output=None).render_text(MSGS, None, True))
    assert R(tok, NORMAL, template_max_output=n).render_text(MSGS, None, True)
    with pytest.raises(TemplateLimitError):
        R(tok, NORMAL, template_max_output=n - 1).render_text(MSGS, None, True)


def test_a_stopped_render_leaves_nothing_behind(tok: Any) -> None:
    r = R(tok, LOOP, template_timeout=0.3)
    _stopped(r, 3.0)
    ok = R(tok, NORMAL, template_timeout=0.3)
    assert ok.render_text(MSGS) == "<|user|>hi\n"
    # busy Python code past the old deadline: no interruption arrives late
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < 0.6:
        n += 1
    assert n > 0
    # the counting hook acts only inside a bounded render: the same template text rendered
    # by transformers directly is not limited
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=SET_BLOCK)
    with pytest.raises(TemplateLimitError):  # installs the hook on the compiled template
        R(tok, SET_BLOCK, template_max_output=10).render_text(MSGS)
    assert hf.apply_chat_template(MSGS, tokenize=False) == "1000000"


@pytest.mark.parametrize("bad", [
    {"template_timeout": 0}, {"template_timeout": -1.0}, {"template_timeout": math.nan},
    {"template_timeout": math.inf}, {"template_timeout": True},
    {"template_max_output": 0}, {"template_max_output": 1.5}, {"template_max_output": False},
])
def test_limits_out_of_range_are_argument_errors(tok: Any, bad: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError, match=next(iter(bad))):
        R(tok, NORMAL, **bad)
    with pytest.raises(ArgumentError):
        TemplateLimits(bad.get("template_timeout", 1.0), bad.get("template_max_output", 10))


def test_build_jinja_and_make_checker_take_the_limits(tok: Any, qwen: Any) -> None:
    a = build_jinja(tok, NORMAL, template_timeout=2.0, template_max_output=50)
    b = build_jinja(tok, NORMAL)
    assert a is not b
    assert (a.limits.timeout, a.limits.max_output) == (2.0, 50)
    assert (b.limits.timeout, b.limits.max_output) == (10.0, 16 * 2**20)
    setup = ck.make_checker("qwen2.5", None, None, template_timeout=3.0, template_max_output=99)
    assert (setup.checker.jinja.limits.timeout, setup.checker.jinja.limits.max_output) == (3.0, 99)


def test_checker_reports_a_template_limit_per_conversation(qwen: Any) -> None:
    checker = ck.Checker(qwen, "qwen2.5", build_jinja(qwen, LOOP, template_timeout=0.3),
                         pool=ck.encoder_pool(qwen))
    conv = ck.parse_conversation_record({"messages": MSGS}, "c1")
    res = checker.check(conv, prefix_audit=True)
    assert res.status == "template_limit" and not res.allowed
    assert res.error is not None and res.error.startswith("TemplateLimitError: ")
    assert res.lvt_tokens and res.template_tokens is None and not res.divergences
    report = checker.check_all([conv])
    assert report.failed() and report.summary()["template_limit"] == 1
    assert "1 stopped by a template limit" in ck.format_report(report)


@pytest.mark.parametrize("escape", [
    "{{ cycler.__init__.__globals__.os }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{% include '/etc/passwd' %}",
    "{% import '/etc/passwd' as x %}",
])
def test_the_sandbox_still_refuses_the_known_escapes(tok: Any, escape: str) -> None:
    r = R(tok, escape)
    with pytest.raises(Exception) as ei:
        r.render_text(MSGS)
    assert not isinstance(ei.value, TemplateLimitError)
    name = type(ei.value).__name__
    assert name in ("SecurityError", "UndefinedError") or (
        name == "TypeError" and "no loader" in str(ei.value)), (name, str(ei.value))
    assert "root:" not in str(ei.value) and "uid=" not in str(ei.value)
