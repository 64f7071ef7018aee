"""The agent loop: completion parsing, the run-time extension check, tools, sampling."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import lvt
from lvt_trainer.agent import (
    ExtensionGuard,
    Sample,
    calculator,
    completion_text,
    parse_completion,
    run_episodes,
    sampled_message,
    tool_request,
)
from lvt_trainer.errors import CompletionParseError, PrefixViolationError
from lvt_trainer.grpo import causal_lm_logprobs
from lvt_trainer.lvt_batch import build_batch
from lvt_trainer.sampling import PolicySampler, sample_batch
from lvt_trainer.tiny import build_tiny_causal_lm
from lvt_trainer.vocab import IdMap

EOT, PYTHON_TAG, START_HEADER = 128009, 128010, 128006


def _ids(tok, s: str) -> list[int]:
    return tok.encode(s, add_special_tokens=False).ids


def _call(enc, expr: str) -> list[int]:
    """What a model emits for a ``calc`` call, read off lvt's own render of the call (its
    learned tokens without the end of turn): no format layout is hard-coded here."""
    msgs = [{"role": "user", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c0", "type": "function",
                "function": {"name": "calc", "arguments": json.dumps({"expr": expr})}}]}]
    conv = lvt.from_openai(msgs, None, False)
    shape = getattr(enc, "shape", None)
    e = enc.encode(shape(conv) if shape is not None else conv)
    learned = [int(t) for t, m, o in zip(e.ids, e.mask, e.owner, strict=True) if m and o == 1]
    return learned[:-1] if learned[-1] == EOT else learned


def test_parse_completion_plain_and_tool_call(llama3_encoder, llama3_tok) -> None:
    enc, tok = llama3_encoder, llama3_tok
    answer = _ids(tok, "1591")
    assert completion_text(enc, [*answer, EOT]) == "1591"
    assert completion_text(enc, answer) == "1591"  # no stop token (cut at the limit)
    call = _call(enc, "37*43")
    blocks = parse_completion(enc, call)
    assert len(blocks) == 1 and isinstance(blocks[0], lvt.ToolCall)
    req = tool_request(blocks[0])
    assert req == ("calc", {"expr": "37*43"})
    assert completion_text(enc, call) is None
    assert calculator(req[1]) == "1591"
    assert calculator({"expr": "2 + -3"}) == "-1" and calculator({"expr": "__import__"}) == "error"


@pytest.mark.parametrize("which", ["plain", "call"])
def test_sampled_message_renders_back_to_the_sampled_ids(llama3_encoder, llama3_tok,
                                                         which) -> None:
    enc, tok = llama3_encoder, llama3_tok
    ids = [*_ids(tok, "1591"), EOT] if which == "plain" else _call(enc, "37*43")
    user = lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("What is 37*43?")),))
    gp = enc.generation_prompt(lvt.Conversation((user,), True)).tolist()
    msg = sampled_message(enc, ids)
    full = enc.encode(lvt.Conversation((user, msg), False)).ids.tolist()
    assert full[: len(gp) + len(ids)] == [*gp, *ids]  # verbatim, then the format's footer
    assert full[-1] == EOT


@pytest.mark.parametrize("case", ["stray_header", "second_message", "unclosed_call"])
def test_parse_completion_refuses_forged_structure(llama3_encoder, llama3_tok, case) -> None:
    enc, tok = llama3_encoder, llama3_tok
    ids = {
        "stray_header": [*_ids(tok, "hi"), START_HEADER, *_ids(tok, "user"), EOT],
        "second_message": [*_ids(tok, "hi"), EOT, START_HEADER, *_ids(tok, "assistant"),
                           128007, *_ids(tok, "\n\nbye"), EOT],
        "unclosed_call": [PYTHON_TAG, *_ids(tok, '{"name": "calc"'), EOT],
    }[case]
    with pytest.raises(CompletionParseError):
        parse_completion(enc, ids)


def test_extension_guard_fails_loudly() -> None:
    g = ExtensionGuard()
    g.check([1, 2, 3])  # nothing to extend yet
    g.extend([1, 2, 3], [4, 5])
    g.check([1, 2, 3, 4, 5, 6, 7])
    assert g.new_tokens([1, 2, 3, 4, 5, 6, 7]).tolist() == [6, 7]
    with pytest.raises(PrefixViolationError) as ei:
        g.check([1, 2, 3, 9, 5, 6])
    assert (ei.value.turn, ei.value.position) == (1, 3)
    with pytest.raises(PrefixViolationError) as ei:
        g.check([1, 2, 3])  # shorter than the previous render
    assert ei.value.position == 3


def test_re_rendering_from_text_is_caught(llama3_encoder, llama3_tok) -> None:
    """A sample tokenised non-canonically ("1591" as 1/5/9/1): kept as tokens, the next
    prompt extends the last; rebuilt from its decoded text, the check fires."""
    enc, tok = llama3_encoder, llama3_tok
    digits = [i for d in "1591" for i in _ids(tok, d)]
    assert digits != _ids(tok, "1591")
    user = lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("say 1591")),))
    prompt = enc.generation_prompt(lvt.Conversation((user,), True))
    g = ExtensionGuard()
    g.check(prompt)
    g.extend(prompt, [*digits, EOT])
    nxt = (user, sampled_message(enc, [*digits, EOT]),
           lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("again")),)))
    g.check(enc.generation_prompt(lvt.Conversation(nxt, True)))  # token in, token out
    text = lvt.Message(lvt.Role.ASSISTANT, (lvt.Plain(lvt.Text(tok.decode(digits))),))
    with pytest.raises(PrefixViolationError):
        g.check(enc.generation_prompt(lvt.Conversation((user, text, nxt[2]), True)))


def test_multi_turn_episode_with_a_tool(llama3_encoder, llama3_tok) -> None:
    enc, tok = llama3_encoder, llama3_tok
    script = {0: _call(enc, "37*43"), 1: [*_ids(tok, "1591"), EOT]}
    seen: list[list[int]] = []

    def sampler(prompts):
        k = len(seen)
        seen.extend(prompts)
        ids = script[k]
        return [Sample(tuple(ids), tuple(-0.5 for _ in ids), False) for _ in prompts]

    user = lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("What is 37*43?")),))
    (ep,) = run_episodes(enc, [lvt.Conversation((user,), False)], sampler,
                         tools={"calc": calculator},
                         reward_fn=lambda i, e: float(e.answer == "1591"))
    assert ep.answer == "1591" and ep.trajectory.reward == 1.0 and not ep.malformed
    assert ep.tool_calls == [("calc", {"expr": "37*43"}, "1591")]
    roles = [m.role for m in ep.trajectory.conversation.messages]
    assert roles == [lvt.Role.USER, lvt.Role.ASSISTANT, lvt.Role.TOOL, lvt.Role.ASSISTANT]
    # the second prompt extends the first prompt followed by the sampled call
    assert seen[1][: len(seen[0]) + len(script[0])] == [*seen[0], *script[0]]
    b = build_batch(enc, [ep.trajectory])
    ids, mask = b.input_ids[0].tolist(), b.loss_mask[0].bool().tolist()
    learned = [t for t, m in zip(ids, mask, strict=True) if m]
    assert learned == [*script[0], *script[1]]  # exactly the sampled tokens
    # lvt learns the end of turn it appends after the call; the model never sampled it
    after_call = len(seen[0]) + len(script[0])
    assert ids[after_call] == EOT and not mask[after_call]
    assert b.behavior_logp is not None
    assert b.behavior_logp[0][b.loss_mask[0].bool()].tolist() == [-0.5] * len(learned)


def test_malformed_turn_ends_the_episode_as_forged(llama3_encoder, llama3_tok) -> None:
    enc, tok = llama3_encoder, llama3_tok
    bad = [*_ids(tok, "hi"), START_HEADER, EOT]

    def sampler(prompts):
        return [Sample(tuple(bad), (0.0,) * len(bad), False) for _ in prompts]

    user = lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("hello")),))
    (ep,) = run_episodes(enc, [lvt.Conversation((user,), False)], sampler, tools={},
                         reward_fn=lambda i, e: 0.0)
    assert ep.malformed and ep.answer is None
    b = build_batch(enc, [ep.trajectory], on_forged="mask")
    assert b.forged is not None and b.forged.tolist() == [True] and b.loss_mask.sum() == 0


def test_sampler_log_probs_equal_the_trainer_log_probs() -> None:
    model = build_tiny_causal_lm(40, seed=3, device="cpu")
    prompts = [[1, 2, 3, 4], [5], [6, 7]]
    gen = torch.Generator().manual_seed(0)
    out = sample_batch(model, prompts, stop_ids=[0, 1], max_new_tokens=5, generator=gen)
    for p, (ids, lps, truncated) in zip(prompts, out, strict=True):
        assert len(ids) == len(lps) and 1 <= len(ids) <= 5
        assert truncated == (ids[-1] not in (0, 1))
        seq = torch.tensor([p + ids])
        lp, _ = causal_lm_logprobs(model, seq, torch.ones_like(seq))
        torch.testing.assert_close(lp[0, len(p):], torch.tensor(lps), rtol=0, atol=1e-5)
    # through an id map: tokenizer ids in and out
    m = IdMap([100 + i for i in range(40)])
    s = PolicySampler(model, stop_ids=[100], id_map=m, max_new_tokens=3,
                      generator=torch.Generator().manual_seed(1))
    (smp,) = s([[101, 102]])
    assert all(100 <= t < 140 for t in smp.ids) and len(smp.logps) == len(smp.ids)
    assert isinstance(np.asarray(smp.ids), np.ndarray)
