"""gpt-oss (Harmony) token for token against ``openai-harmony`` (the reference renderer:
``render_conversation_for_training`` / ``…for_completion`` through ``Conversation`` and
``render_conversation``), each intended difference asserted per conversation. The template
side and the family's own laws are ``tests/test_harmony.py``."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from lvt import zoo
from parity.corpus import Case, conversations
from test_harmony import DATE, END, START, WEATHER, _case, lvt_ids


@pytest.fixture(scope="module")
def tok() -> Any:
    return zoo.load_tokenizer("gpt-oss")


@pytest.fixture(scope="module")
def hm(tmp_path_factory: Any) -> Any:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent / "thirdparty"))
    import refdata

    d = Path(os.environ.get("LVT_CACHE_DIR") or tmp_path_factory.mktemp("o200k"))
    refdata.write_o200k_tiktoken(d)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(d)
    import openai_harmony

    return openai_harmony


_HARMONY: dict[str, Any] = {}


def _encoding(H: Any) -> Any:
    """openai-harmony's gpt-oss encoding (loaded once: it builds the tokenizer)."""
    if "gpt-oss" not in _HARMONY:
        _HARMONY["gpt-oss"] = H.load_harmony_encoding(H.HarmonyEncodingName.HARMONY_GPT_OSS)
    return _HARMONY["gpt-oss"]


def _harmony_ids(H: Any, case: Case, *, quote: bool = True, pad_instructions: bool = True,
                 drop_last_analysis: bool = False) -> list[int]:
    """openai-harmony's render of the messages the template writes. Adaptations (each an
    intended difference, see the test): tool results given ``tojson``-quoted; instructions
    without tools given with the template's trailing ``\\n\\n``; no ``auto_drop_analysis``."""
    E = _encoding(H)
    eff = {"low": H.ReasoningEffort.LOW, "medium": H.ReasoningEffort.MEDIUM,
           "high": H.ReasoningEffort.HIGH}[case.template_kwargs.get("reasoning_effort", "medium")]
    M, R = H.Message, H.Role
    out = [M.from_role_and_content(R.SYSTEM, H.SystemContent.new()
                                   .with_conversation_start_date(DATE).with_reasoning_effort(eff))]
    ms, rest, instr = case.messages, case.messages, None
    if ms[0]["role"] in ("system", "developer"):
        instr, rest = ms[0]["content"], ms[1:]
    if instr or case.tools:
        dev = H.DeveloperContent.new()
        if instr:
            dev = dev.with_instructions(instr + ("\n\n" if pad_instructions and not case.tools
                                                 else ""))
        if case.tools:
            dev = dev.with_function_tools([H.ToolDescription.new(
                t["function"]["name"], t["function"]["description"],
                parameters=t["function"].get("parameters")) for t in case.tools])
        out.append(M.from_role_and_content(R.DEVELOPER, dev))
    name = None
    for k, m in enumerate(rest):
        later = rest[k + 1:]
        if m["role"] == "user":
            out.append(M.from_role_and_content(R.USER, m["content"]))
        elif m["role"] == "tool":
            c = json.dumps(m["content"], ensure_ascii=False) if quote else m["content"]
            out.append(M.from_author_and_content(H.Author.new(R.TOOL, "functions." + name), c)
                       .with_channel("commentary").with_recipient("assistant"))
        elif m.get("tool_calls"):
            final_after = any(n["role"] == "assistant" and "tool_calls" not in n for n in later)
            a = m.get("content") or m.get("thinking")
            if a and not final_after:
                out.append(M.from_role_and_content(R.ASSISTANT, a).with_channel("analysis"))
            f = m["tool_calls"][0]["function"]
            name = f["name"]
            out.append(M.from_role_and_content(R.ASSISTANT, json.dumps(
                f["arguments"], ensure_ascii=False)).with_channel("commentary")
                .with_recipient("functions." + name).with_content_type("json"))
        else:
            last = not later and not case.add_generation_prompt
            # the template's `{%- if "thinking" in message %}`: an empty field writes one too
            if last and "thinking" in m and not drop_last_analysis:
                out.append(M.from_role_and_content(R.ASSISTANT, m["thinking"])
                           .with_channel("analysis"))
            out.append(M.from_role_and_content(R.ASSISTANT, m.get("content") or "")
                       .with_channel("final"))
    conv = H.Conversation.from_messages(out)
    if case.add_generation_prompt:
        return list(E.render_conversation_for_completion(conv, R.ASSISTANT))
    last = ms[-1]
    if last["role"] == "assistant" and not last.get("tool_calls"):
        cfg = H.RenderConversationConfig(auto_drop_analysis=drop_last_analysis)
        return list(E.render_conversation_for_training(conv, cfg))
    return list(E.render_conversation(conv))


def _developer_span(ids: list[int], dev: int) -> tuple[int, int] | None:
    """The positions of the developer message (``<|start|>developer … <|end|>``; ``dev`` is
    the id of ``developer``)."""
    starts = [k for k, t in enumerate(ids) if t == START]
    if len(starts) < 2:
        return None
    k = starts[1]
    return (k, ids.index(END, k) + 1) if ids[k + 1] == dev else None


def _plain_schema(p: Any) -> bool:
    """A parameter both renderers write alike: no default, no nested object."""
    return "default" not in p and p.get("type") != "object" and not (
        p.get("type") == "array" and isinstance(p.get("items"), dict)
        and p["items"].get("type") == "object")


def test_harmony_token_for_token(tok: Any, hm: Any) -> None:
    """Per corpus conversation: lvt's ids equal openai-harmony's on the messages the template
    writes, and each intended difference is asserted where the conversation has it:

    1. tool results are ``tojson``-quoted by the template (harmony writes them raw);
    2. without tools the template ends the instructions with ``\\n\\n`` (harmony does not);
    3. harmony's ``auto_drop_analysis`` drops the last training message's analysis, which
       the template writes;
    4. tool schemas with defaults or nested objects: the template's TypeScript differs from
       harmony's (``, // default: X,`` vs ``, // default: X``; nested objects inline with
       the template's whitespace vs indented): everything outside the developer message is
       equal, and the developer message differs only after ``## functions``.
    """
    (dev,) = tok.encode("developer").ids
    seen = {1: 0, 2: 0, 3: 0, 4: 0, "equal": 0}
    for case in conversations("gpt-oss"):
        got = lvt_ids(tok, case)
        want = _harmony_ids(hm, case)
        if any(m["role"] == "tool" for m in case.messages):
            assert _harmony_ids(hm, case, quote=False) != want
            seen[1] += 1
        if case.messages[0]["role"] == "system" and case.messages[0]["content"] \
                and not case.tools:
            assert _harmony_ids(hm, case, pad_instructions=False) != want
            seen[2] += 1
        last = case.messages[-1]
        if not case.add_generation_prompt and last["role"] == "assistant" \
                and last.get("thinking") and not last.get("tool_calls"):
            assert _harmony_ids(hm, case, drop_last_analysis=True) != want
            seen[3] += 1
        plain = all(_plain_schema(p) for t in case.tools or []
                    for p in t["function"].get("parameters", {}).get("properties", {}).values())
        if plain:
            assert got == want, case.name
            seen["equal"] += 1
            continue
        g, w = _developer_span(got, dev), _developer_span(want, dev)
        assert g is not None and w is not None
        assert got[: g[0]] == want[: w[0]] and got[g[1]:] == want[w[1]:], case.name
        fn = tok.encode("## functions").ids
        gd, wd = got[g[0]:g[1]], want[w[0]:w[1]]
        cut = next(k for k in range(len(gd)) if gd[k:k + len(fn)] == fn)
        assert gd[:cut] == wd[:cut] and gd != wd
        seen[4] += 1
    assert seen["equal"] >= 60 and min(seen[k] for k in (1, 2, 3, 4)) >= 3, seen


def test_harmony_system_and_layout_details(tok: Any, hm: Any) -> None:
    """The system message with tools (its ``functions`` line), the call header (recipient
    before the channel, ``json`` content type) and the generation prompt agree with harmony."""
    case = _case([{"role": "user", "content": "Weather in Oslo?"},
                  {"role": "assistant", "content": None, "tool_calls": [
                      {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}],
                 [WEATHER], False, reasoning_effort="high")
    assert lvt_ids(tok, case) == _harmony_ids(hm, case)
    gen = dataclasses.replace(case, messages=case.messages[:1], add_generation_prompt=True)
    assert lvt_ids(tok, gen) == _harmony_ids(hm, gen)
