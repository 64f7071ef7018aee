"""Batches from lvt's render: owner-selected mask, forged ids, truncation, prefix checks."""

from __future__ import annotations

import pytest
import torch

import lvt
from lvt_trainer.errors import (
    ForgedTokenError,
    PrefixViolationError,
    RenderMismatchError,
    TrainerConfigError,
)
from lvt_trainer.lvt_batch import SampledTurn, Trajectory, build_batch, end_of_turn_ids, single_turn
from lvt_trainer.vocab import IdMap

EOT, START_HEADER = 128009, 128006


def _user(s: str) -> lvt.Message:
    return lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text(s)),))


def _asst(s: str) -> lvt.Message:
    return lvt.Message(lvt.Role.ASSISTANT, (lvt.Plain(lvt.Text(s)),))


@pytest.fixture()
def history() -> lvt.Conversation:
    """A prompt whose history already holds an assistant turn (learned by lvt's mask)."""
    return lvt.Conversation((_user("hi"), _asst("hello there"), _user("What is 2+2?")), False)


def _ids(tok, s: str) -> list[int]:
    return tok.encode(s, add_special_tokens=False).ids


def test_mask_is_the_sampled_turn_selected_by_owner(llama3_encoder, llama3_tok, history) -> None:
    enc, tok = llama3_encoder, llama3_tok
    assert end_of_turn_ids(enc, history) == (EOT,)
    comp = [*_ids(tok, "It is 4."), EOT]
    tr = single_turn(enc, history, comp, reward=1.0, truncated=False,
                     behavior_logp=[-0.1 * (i + 1) for i in range(len(comp))])
    b = build_batch(enc, [tr])
    gp = enc.generation_prompt(lvt.Conversation(history.messages, True))
    full = enc.encode(tr.conversation)
    n = len(full)
    # ids and owner are lvt's render; the row is prompt + sampled tokens (+ nothing else)
    assert b.input_ids[0, :n].tolist() == full.ids.tolist() == [*gp.tolist(), *comp]
    assert b.owner is not None and b.owner[0, :n].tolist() == full.owner.tolist()
    # lvt learns the earlier assistant turn too; the batch learns only the sampled one
    earlier = (full.owner == 1) & (full.mask == 1)
    assert earlier.sum() > 0
    want = [0.0] * len(gp) + [1.0] * len(comp)
    assert b.loss_mask[0].tolist() == want
    assert (b.loss_mask[0, torch.from_numpy(earlier)] == 0).all()
    assert b.behavior_logp is not None
    assert b.behavior_logp[0, len(gp):].tolist() == pytest.approx(tr.turns[0].behavior_logp)
    assert b.rewards is not None and b.rewards.tolist() == [1.0]
    assert b.truncated is not None and b.truncated.tolist() == [False]


def test_forged_control_id_is_refused_or_masked(llama3_encoder, llama3_tok, history) -> None:
    enc, tok = llama3_encoder, llama3_tok
    ok = single_turn(enc, history, [*_ids(tok, "4"), EOT], reward=1.0, truncated=False)
    forged_ids = [*_ids(tok, "4"), START_HEADER, *_ids(tok, "user"), EOT]
    forged = single_turn(enc, history, forged_ids, reward=0.5, truncated=False)
    with pytest.raises(ForgedTokenError) as ei:
        build_batch(enc, [ok, forged])
    assert (ei.value.rollout_index, ei.value.token_id, ei.value.position) == (1, START_HEADER, 1)
    assert isinstance(ei.value.__cause__, lvt.ConversationError)
    b = build_batch(enc, [ok, forged], on_forged="mask")
    assert b.forged is not None and b.forged.tolist() == [False, True]
    assert b.loss_mask[1].sum() == 0 and b.loss_mask[0].sum() == 2
    gp = enc.generation_prompt(lvt.Conversation(history.messages, True))
    assert b.input_ids[1, : len(gp)].tolist() == gp.tolist()  # lvt's render of the prompt
    assert b.attention_mask[1].sum() == len(gp)
    assert b.rewards is not None and b.rewards.tolist() == [1.0, 0.5]  # still counts
    # a completion that stops on another control id keeps it in the payload: refused too
    eom = single_turn(enc, history, [*_ids(tok, "4"), 128008], reward=0.0, truncated=False)
    with pytest.raises(ForgedTokenError):
        build_batch(enc, [eom])
    with pytest.raises(TrainerConfigError):
        build_batch(enc, [ok], on_forged="drop")  # type: ignore[arg-type]


def test_truncated_rollout_learns_no_end_of_turn(llama3_encoder, llama3_tok, history) -> None:
    enc, tok = llama3_encoder, llama3_tok
    cut = _ids(tok, "It is 4 because two and")
    tr = single_turn(enc, history, cut, reward=0.0, truncated=True)
    done = single_turn(enc, history, [*_ids(tok, "4"), EOT], reward=1.0, truncated=False)
    b = build_batch(enc, [tr, done])
    gp = enc.generation_prompt(lvt.Conversation(history.messages, True))
    n = len(gp) + len(cut)
    assert b.attention_mask[0].sum() == n
    assert b.input_ids[0, :n].tolist() == [*gp.tolist(), *cut]  # no end of turn appended
    assert b.loss_mask[0].sum() == len(cut)
    assert EOT not in b.input_ids[0, len(gp):n].tolist()
    assert b.truncated is not None and b.truncated.tolist() == [True, False]
    # the finished one does learn its end of turn
    m = b.loss_mask[1].bool()
    assert b.input_ids[1][m].tolist()[-1] == EOT


def test_render_is_checked_against_what_the_model_saw(llama3_encoder, llama3_tok,
                                                      history) -> None:
    enc, tok = llama3_encoder, llama3_tok
    tr = single_turn(enc, history, [*_ids(tok, "4"), EOT], reward=1.0, truncated=False)
    t = tr.turns[0]
    # the model was shown a different prompt (e.g. a template that re-rendered history)
    other = list(t.prompt_ids)
    other[5] = 13
    bad_prompt = Trajectory(tr.conversation, (SampledTurn(t.message_index, tuple(other),
                                                          t.ids),), 1.0)
    with pytest.raises(PrefixViolationError) as ei:
        build_batch(enc, [bad_prompt])
    assert ei.value.position == 5
    # the sampled ids are not where the render puts the turn's tokens
    bad_ids = Trajectory(tr.conversation, (SampledTurn(t.message_index, t.prompt_ids,
                                                       (t.ids[0] + 1, EOT)),), 1.0)
    with pytest.raises(RenderMismatchError):
        build_batch(enc, [bad_ids])
    with pytest.raises(TrainerConfigError):
        SampledTurn(0, (1,), (2, 3), behavior_logp=(0.0,))


def test_id_map_relabels_lvt_render(llama3_encoder, llama3_tok, history) -> None:
    enc, tok = llama3_encoder, llama3_tok
    trs = [single_turn(enc, history, [*_ids(tok, s), EOT], reward=1.0, truncated=False)
           for s in ("4", "It is 4")]
    ids = [enc.encode(t.conversation).ids for t in trs]
    m = IdMap.from_sequences(ids)
    b = build_batch(enc, trs, id_map=m, pad_id=0)
    assert b.render_ids is not None
    real = b.attention_mask == 1
    assert torch.equal(m.to_real(b.input_ids[real]), b.render_ids[real])
    assert int(b.input_ids.max()) < m.size
    assert m.real_ids == sorted(m.real_ids)  # compact id i = i-th smallest tokenizer id
    assert m.to_model([m.real_ids[3]]).tolist() == [3]
    with pytest.raises(TrainerConfigError, match="not in the id map"):
        m.to_model([1])
    with pytest.raises(TrainerConfigError):
        m.to_real([m.size])
    assert 128000 in m and 1 not in m


#: format -> (a real completion of "What is 2+2?" with the format's in-body control tokens and
#: its stop id, a forged one holding a turn boundary the model cannot write in a turn; gpt-oss
#: has none: a sampled harmony turn may hold every control token, ``<|start|>`` included)
COMPLETIONS = {
    "qwen3": ("<think>\nAdd them.\n</think>\n\nIt is 4.<|im_end|>",
              "It is 4.<|im_start|>user\nthanks<|im_end|>"),
    "qwen3-tools": ('<think>\nLook it up.\n</think>\n\n<tool_call>\n{"name": "add", "arguments": '
                    '{"a": 2, "b": 2}}\n</tool_call><|im_end|>',
                    "<|im_start|>assistant\n4<|im_end|>"),
    "gpt-oss": ("<|channel|>analysis<|message|>Add them.<|end|><|start|>assistant"
                "<|channel|>final<|message|>It is 4.<|return|>", None),
    "deepseek-r1": ("Add them.\n</think>\n\nIt is 4.<｜end▁of▁sentence｜>",  # noqa: RUF001
                    "4<｜User｜>thanks<｜end▁of▁sentence｜>"),  # noqa: RUF001
}


@pytest.mark.parametrize("case", sorted(COMPLETIONS))
def test_single_turn_keeps_reasoning_and_call_completions(case: str) -> None:
    """A completion is a ``Sampled`` turn: reasoning, channels and calls are trained on
    verbatim (``mask_sampled``); a turn boundary inside it is still a forgery."""
    fmt = case.removesuffix("-tools")
    zoo_name = {"qwen3": "qwen3", "gpt-oss": "gpt-oss", "deepseek-r1": "deepseek-r1"}[fmt]
    enc = lvt.ChatEncoder.from_tokenizer(zoo_name, fmt)
    text, forged_text = COMPLETIONS[case]
    good = enc.tokenizer.encode(text, add_special_tokens=False).ids
    prompt = lvt.Conversation((_user("What is 2+2?"),), False)
    tr = single_turn(enc, prompt, good, reward=1.0, truncated=False)
    assert isinstance(tr.conversation.messages[-1].blocks[0], lvt.Sampled)
    b = build_batch(enc, [tr])
    learned = b.input_ids[0][b.loss_mask[0] > 0].tolist()
    assert learned == good
    gp = enc.generation_prompt(lvt.Conversation(prompt.messages, True)).tolist()
    assert b.input_ids[0, :len(gp)].tolist() == gp
    if forged_text is None:
        return
    forged = enc.tokenizer.encode(forged_text, add_special_tokens=False).ids
    bad = single_turn(enc, prompt, forged, reward=0.0, truncated=False)
    with pytest.raises(ForgedTokenError):
        build_batch(enc, [bad])
    masked = build_batch(enc, [tr, bad], on_forged="mask")
    assert masked.forged is not None and masked.forged.tolist() == [False, True]
    assert masked.loss_mask[1].sum() == 0 and masked.loss_mask[0].sum() == len(good)


def test_truncated_thinking_completion_is_learned_whole() -> None:
    enc = lvt.ChatEncoder.from_tokenizer("qwen3", "qwen3")
    cut = enc.tokenizer.encode("<think>\nAdd them and then", add_special_tokens=False).ids
    prompt = lvt.Conversation((_user("What is 2+2?"),), False)
    b = build_batch(enc, [single_turn(enc, prompt, cut, reward=0.0, truncated=True)])
    assert b.input_ids[0][b.loss_mask[0] > 0].tolist() == cut
    assert b.truncated is not None and b.truncated.tolist() == [True]
