"""The message AST (lvt.model)."""

from __future__ import annotations

import dataclasses

import pytest

from lvt.errors import ArgumentError
from lvt.model import (
    BLOCK_KIND_ALL,
    ROLE_ALL,
    BlockKind,
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Sampled,
    Text,
    Tokens,
    ToolCall,
    block_kind,
)


def test_role_values_and_order() -> None:
    assert [r.value for r in ROLE_ALL] == ["system", "developer", "user", "assistant", "tool"]
    assert Role("user") is Role.USER
    assert Role.USER == "user"
    with pytest.raises(ValueError):
        Role("bot")


def test_block_kinds() -> None:
    assert set(BLOCK_KIND_ALL) == set(BlockKind)
    assert block_kind(Plain(Text("a"))) is BlockKind.PLAIN
    assert Reasoning(Text("a")).kind is BlockKind.REASONING
    assert ToolCall("f", "{}").kind is BlockKind.TOOL_CALL
    assert Sampled([1, 2]).kind is BlockKind.SAMPLED
    # a call's name and arguments are text; Text is accepted for convenience
    assert ToolCall(Text("f"), Text("{}")) == ToolCall("f", "{}")
    assert ToolCall("f", "{}").id is None and ToolCall("f", "{}", "c1").id == "c1"
    assert ToolCall("f", "{}", "c1") != ToolCall("f", "{}")
    assert ToolCall("f", "{}", "c1").without_id() == ToolCall("f", "{}")
    with pytest.raises(ArgumentError, match="id"):
        ToolCall("f", "{}", 3)  # type: ignore[arg-type]


def test_frozen_and_hashable() -> None:
    m = Message("user", [Plain(Text("hi")), Plain(Tokens([1, 2]))])
    c = Conversation([m], add_generation_prompt=True)
    assert isinstance(m.blocks, tuple)
    assert m.role is Role.USER
    assert Tokens([1, 2]).ids == (1, 2)
    assert hash(c) == hash(Conversation((m,), True))
    assert c == Conversation((m,), True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.role = Role.ASSISTANT  # type: ignore[misc]
    assert len({c, Conversation((m,), True)}) == 1


def test_message_text_helper() -> None:
    assert Message.text("user", "hi") == Message(Role.USER, (Plain(Text("hi")),))
    assert Message.text(Role.ASSISTANT, "") == Message(Role.ASSISTANT, ())


def test_map_and_concat() -> None:
    c = Conversation([Message("user", [Plain(Text("ab")), ToolCall("n", "x")])],
                     tools=[{"name": "n"}])
    d = c.map(lambda p: Tokens([len(p.text)]))
    assert d.messages[0].blocks == (Plain(Tokens([2])), ToolCall("n", "x"))
    assert d.tools == c.tools
    e = c + Conversation([Message.text("assistant", "y")], True)
    assert len(e) == 2 and e.add_generation_prompt and e.tools == c.tools


def test_tools_are_frozen_json() -> None:
    from lvt.jsonfmt import JNum, JObj

    c = Conversation([], tools=[{"a": 1, "b": [True, None, 1.5]}])
    assert isinstance(c.tools[0], JObj) and c.tools[0].members[0] == ("a", JNum("1"))
    assert hash(c) == hash(Conversation([], tools=[{"a": 1, "b": [True, None, 1.5]}]))
    assert Conversation([]).tools is None and Conversation([], tools=[]).tools == ()
