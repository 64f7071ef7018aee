"""Shared cases of the native-path tests: the format instances (real tokenizers) and the
conversations the kernel check and the toolchain oracle test use."""

from __future__ import annotations

import lvt
from lvt import zoo
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Text, ToolCall

FORMATS = [("qwen2.5", "qwen2.5", {}), ("qwen3", "qwen3", {}),
           ("qwen3", "qwen3", {"enable_thinking": False}), ("qwen3-stable", "qwen3", {}),
           ("llama3.1", "llama3.1", {}),
           ("llama3.1", "llama3.1", {"tools_in_user_message": False, "date_string": "1 Dec"})]
_ENC: dict[int, lvt.ChatEncoder] = {}


def encoder(k: int) -> lvt.ChatEncoder:
    if k not in _ENC:
        fmt, tok, opts = FORMATS[k]
        _ENC[k] = lvt.ChatEncoder.from_tokenizer(zoo.load_tokenizer(tok), fmt,
                                                 backend="reference", **opts)
    return _ENC[k]


TOOLS = [{"type": "function", "function": {"name": "calc", "description": "Add numbers.",
                                           "parameters": {"type": "object", "properties": {
                                               "a": {"type": "integer"}}, "required": ["a"]}}}]


def kernel_cases() -> list[tuple[lvt.ChatEncoder, Conversation]]:
    """Qwen3 and Llama 3.1 conversations with tools, a tool call, a tool result and (Qwen3)
    reasoning, and one the format refuses."""
    q = Conversation([
        Message.text(Role.SYSTEM, "Be exact."),
        Message.text(Role.USER, "Add 1 and 2. <|im_start|> is text."),
        Message(Role.ASSISTANT, [Reasoning(Text("I call calc.")), Plain(Text("Calling.")),
                                 ToolCall("calc", '{"a": 1}')]),
        Message.text(Role.TOOL, "3"),
        Message(Role.ASSISTANT, [Reasoning(Text("Done.")), Plain(Text("It is 3, é."))]),
        Message.text(Role.USER, "Thanks"),
    ], True, TOOLS)
    ll = Conversation([
        Message.text(Role.USER, " Add 1 and 2 "),
        Message(Role.ASSISTANT, [ToolCall("calc", '{"a": 1}')]),
        Message.text(Role.TOOL, "3"),
        Message.text(Role.ASSISTANT, "It is 3."),
    ], True, TOOLS)
    refused = Conversation([Message.text(Role.DEVELOPER, "x")])
    return [(encoder(1), q), (encoder(4), ll), (encoder(1), refused)]
