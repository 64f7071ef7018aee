"""The JSON layouts (``lvt.jsonfmt``, ``Verified/Spec/Json.lean``) against Python's
``json.dumps``, which is what the templates' ``tojson`` runs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lvt.errors import ConversationError
from lvt.jsonfmt import compact, freeze, map_strings, pretty, quote, quote_spec
from strategies import example_count

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=example_count(300), deadline=None)
@given(json_values)
def test_compact_is_json_dumps(v) -> None:
    assert compact(freeze(v)) == json.dumps(v, ensure_ascii=False)


@settings(max_examples=example_count(300), deadline=None)
@given(json_values)
def test_pretty_is_json_dumps_indent_4(v) -> None:
    assert pretty(freeze(v)) == json.dumps(v, ensure_ascii=False, indent=4)


@settings(max_examples=example_count(300), deadline=None)
@given(st.text())
def test_quote_is_json_dumps_of_a_string(s) -> None:
    assert quote(s) == quote_spec(s) == json.dumps(s, ensure_ascii=False)


def test_every_control_character() -> None:
    s = "".join(chr(i) for i in range(0x21)) + '"\\\x7f\u2028é'
    assert quote(s) == quote_spec(s) == json.dumps(s, ensure_ascii=False)


def test_freeze_refuses_what_json_cannot_hold() -> None:
    for bad in [float("nan"), {1: 2}, object(), {"a": [set()]}]:
        with pytest.raises(ConversationError):
            freeze(bad)
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(ConversationError, match="nested deeper"):
        freeze(deep)


def test_map_strings_reaches_keys_and_values() -> None:
    j = freeze({"k": ["v", {"x": "y"}], "n": 1})
    assert compact(map_strings(j, str.upper)) == '{"K": ["V", {"X": "Y"}], "N": 1}'
