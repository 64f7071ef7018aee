"""Training batches built from ``lvt``'s render: ids, loss mask and owner.

A rollout is a :class:`Trajectory`: the conversation as ``lvt`` renders it (the prompt
messages, then every sampled assistant turn as a message whose payloads are the sampled
token ids, verbatim, plus tool results for multi-turn episodes) and, per sampled turn, the
prompt ids the model was given and the ids it produced (:class:`SampledTurn`).
:func:`single_turn` makes one from a prompt conversation and a completion.

:func:`build_batch` renders every trajectory with ``ChatEncoder.encode`` and takes
``ids``, ``mask`` and ``owner`` from the render:

* the loss mask is lvt's ``mask`` on the tokens whose ``owner`` is a sampled turn (never an
  earlier assistant turn of the history), restricted to the positions the model actually
  sampled (a token the format appends after the model stopped, such as Llama-3's
  ``<|eot_id|>`` after a tool call's ``<|eom_id|>``, is rendered but not trained on);
* at run time it checks the ``prompt_prefix`` property: the render starts with each turn's
  prompt and holds the turn's sampled ids right after it
  (:class:`~lvt_trainer.errors.PrefixViolationError`,
  :class:`~lvt_trainer.errors.RenderMismatchError` otherwise);
* a rollout whose sampled ids contain a control id of the format (a forged turn
  boundary) is refused by lvt; ``on_forged="raise"`` (default) raises
  :class:`~lvt_trainer.errors.ForgedTokenError` naming the rollout, the id and its
  position, ``on_forged="mask"`` keeps the row as lvt's render of the prompt with no loss
  tokens (its reward still counts in group statistics) and flags it in ``batch.forged``;
* a truncated rollout (cut at the length limit) is rendered without the end of turn: its
  row stops after the last sampled token, so no end of turn is learned, and
  ``batch.truncated`` marks it (the critic bootstraps its value there).

With an :class:`~lvt_trainer.vocab.IdMap` the rendered ids are relabelled into the model's
compact vocabulary (``batch.render_ids`` keeps lvt's ids).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

import lvt
from lvt.sampling import sampled_block

from .errors import (
    ForgedTokenError,
    PrefixViolationError,
    RenderMismatchError,
    TrainerConfigError,
)
from .grpo import RolloutBatch
from .vocab import IdMap

__all__ = [
    "SampledTurn",
    "Trajectory",
    "build_batch",
    "end_of_turn_ids",
    "single_turn",
]

OnForged = Literal["raise", "mask"]


@dataclass(frozen=True)
class SampledTurn:
    """One sampled assistant turn.

    Attributes:
        message_index: index of the turn's message in the trajectory's conversation.
        prompt_ids: the ids the model was prompted with (lvt's generation prompt).
        ids: the ids it sampled, the stop token included when it produced one.
        behavior_logp: the sampler's log-prob of each of ``ids`` (or ``None``).
        token_rewards: optional per-token rewards aligned with ``ids``.
    """

    message_index: int
    prompt_ids: tuple[int, ...]
    ids: tuple[int, ...]
    behavior_logp: tuple[float, ...] | None = None
    token_rewards: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("behavior_logp", "token_rewards"):
            x = getattr(self, name)
            if x is not None and len(x) != len(self.ids):
                raise TrainerConfigError(
                    f"{name} has {len(x)} entries for {len(self.ids)} sampled ids"
                )


@dataclass(frozen=True)
class Trajectory:
    """A rollout as lvt renders it (see the module docstring).

    Attributes:
        conversation: every message, sampled turns included, without a generation prompt.
        turns: the sampled turns, in order.
        reward: the terminal (verifiable) reward.
        truncated: the last turn was cut at the length limit (no end of turn).
    """

    conversation: lvt.Conversation
    turns: tuple[SampledTurn, ...]
    reward: float
    truncated: bool = False


def end_of_turn_ids(encoder: lvt.ChatEncoder, prompt: lvt.Conversation) -> tuple[int, ...]:
    """The ids the format writes after an assistant message's body (its footer), read off
    lvt's own render: ``render(prompt + [assistant with no blocks])`` minus the generation
    prompt. The first one is the token a sampler stops at."""
    gp = encoder.generation_prompt(lvt.Conversation(prompt.messages, True))
    empty = lvt.Message(lvt.Role.ASSISTANT, ())
    full = encoder.encode(lvt.Conversation((*prompt.messages, empty), False)).ids
    if not np.array_equal(full[: len(gp)], gp):
        raise RenderMismatchError("the render does not extend the generation prompt")
    return tuple(int(t) for t in full[len(gp) :])


def single_turn(
    encoder: lvt.ChatEncoder,
    prompt: lvt.Conversation,
    completion: Sequence[int],
    *,
    reward: float,
    truncated: bool,
    behavior_logp: Sequence[float] | None = None,
    token_rewards: Sequence[float] | None = None,
) -> Trajectory:
    """A one-turn trajectory: ``prompt`` then the sampled ``completion`` as a
    :class:`lvt.Sampled` turn (so ``mask_sampled``, the theorem on sampled turns, is what
    covers its mask): its ids verbatim, the format's in-body control tokens (``<think>``,
    ``<tool_call>``, harmony's channels) included.

    ``completion`` holds the sampled ids with the stop token (the format's first stop id,
    :attr:`lvt.ChatEncoder.stop_ids`) when the model produced it; ``truncated`` says it was
    cut at the length limit instead. A completion that stopped on any other id keeps that id
    in the turn, where lvt refuses it when it is a control token no assistant turn may hold
    (a forged turn boundary).
    """
    comp = tuple(int(t) for t in completion)
    gp = tuple(int(t) for t in encoder.generation_prompt(lvt.Conversation(prompt.messages, True)))
    body = comp if truncated else sampled_block(encoder, comp).ids
    blocks = (lvt.Sampled(body),) if body else ()
    conv = lvt.Conversation((*prompt.messages, lvt.Message(lvt.Role.ASSISTANT, blocks)), False)
    turn = SampledTurn(
        len(prompt.messages),
        gp,
        comp,
        None if behavior_logp is None else tuple(float(x) for x in behavior_logp),
        None if token_rewards is None else tuple(float(x) for x in token_rewards),
    )
    return Trajectory(conv, (turn,), float(reward), bool(truncated))


_REFUSED: weakref.WeakKeyDictionary[Any, dict[int, str | None]] = weakref.WeakKeyDictionary()


def _refusal(encoder: lvt.ChatEncoder, token: int) -> str | None:
    """Why lvt refuses ``token`` alone as an assistant token payload (``None``: accepted);
    asked once per id and encoder."""
    cache = _REFUSED.setdefault(encoder, {})
    if token not in cache:
        probe = lvt.Conversation(
            (
                lvt.Message(lvt.Role.USER, (lvt.Plain(lvt.Text("x")),)),
                lvt.Message(lvt.Role.ASSISTANT, (lvt.Sampled((token,)),)),
            ),
            False,
        )
        try:
            encoder.encode(probe)
            cache[token] = None
        except lvt.ConversationError as e:
            cache[token] = str(e)
    return cache[token]


def _locate(encoder: lvt.ChatEncoder, tr: Trajectory) -> tuple[int, int, str] | None:
    """``(position, id, reason)`` of the first refused sampled id, or ``None``."""
    for turn in tr.turns:
        for pos, t in enumerate(turn.ids):
            reason = _refusal(encoder, t)
            if reason is not None:
                return pos, t, reason
    return None


def _first_diff(a: np.ndarray, b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    neq = np.nonzero(a[:n] != np.asarray(b[:n], dtype=a.dtype))[0]
    return int(neq[0]) if neq.size else n


@dataclass
class _Row:
    ids: np.ndarray
    owner: np.ndarray
    mask: np.ndarray
    behavior: np.ndarray | None
    token_rewards: np.ndarray
    forged: bool


def _row(encoder: lvt.ChatEncoder, index: int, tr: Trajectory, on_forged: OnForged) -> _Row:
    if not tr.turns:
        raise TrainerConfigError(f"rollout {index}: a trajectory needs at least one sampled turn")
    try:
        enc = encoder.encode(tr.conversation)
    except lvt.ConversationError as err:
        where = _locate(encoder, tr)
        if where is None:
            raise
        pos, tok, reason = where
        if on_forged == "raise":
            raise ForgedTokenError(index, tok, pos, reason) from err
        first = tr.turns[0]
        prompt = lvt.Conversation(tr.conversation.messages[: first.message_index], True)
        e = encoder.encode(prompt)
        n = len(e.ids)
        return _Row(e.ids.astype(np.int64), e.owner.astype(np.int64), np.zeros(n, np.int64),
                    None, np.zeros(n), True)
    ids = enc.ids.astype(np.int64)
    owner = enc.owner.astype(np.int64)
    lvt_mask = enc.mask.astype(bool)
    if tr.truncated:
        last = tr.turns[-1]
        cut = len(last.prompt_ids) + len(last.ids)
        ids, owner, lvt_mask = ids[:cut], owner[:cut], lvt_mask[:cut]
    sampled = np.zeros(len(ids), dtype=bool)
    behavior = np.zeros(len(ids)) if all(t.behavior_logp is not None for t in tr.turns) else None
    trw = np.zeros(len(ids))
    for k, turn in enumerate(tr.turns):
        p = len(turn.prompt_ids)
        if len(ids) < p or not np.array_equal(ids[:p], np.asarray(turn.prompt_ids)):
            d = _first_diff(ids, turn.prompt_ids)
            raise PrefixViolationError(
                k, d, int(turn.prompt_ids[d]) if d < p else None,
                int(ids[d]) if d < len(ids) else None,
            )
        span = slice(p, p + len(turn.ids))
        if not np.array_equal(ids[span], np.asarray(turn.ids, dtype=np.int64)):
            d = _first_diff(ids[span], turn.ids)
            raise RenderMismatchError(
                f"rollout {index}, turn {k}: lvt's render differs from the sampled ids at "
                f"sampled token {d} (render {ids[span][d:d + 1].tolist()}, sampled "
                f"{list(turn.ids[d:d + 1])})"
            )
        if not (lvt_mask[span].all() and (owner[span] == turn.message_index).all()):
            raise RenderMismatchError(
                f"rollout {index}, turn {k}: a sampled token is not learned by lvt's mask or "
                f"not owned by message {turn.message_index}"
            )
        sampled[span] = True
        if behavior is not None:
            behavior[span] = np.asarray(turn.behavior_logp)
        if turn.token_rewards is not None:
            trw[span] = np.asarray(turn.token_rewards)
    turns = np.asarray([t.message_index for t in tr.turns])
    mask = lvt_mask & np.isin(owner, turns) & sampled
    return _Row(ids, owner, mask.astype(np.int64), behavior, trw, False)


def build_batch(
    encoder: lvt.ChatEncoder,
    rollouts: Sequence[Trajectory],
    *,
    on_forged: OnForged = "raise",
    id_map: IdMap | None = None,
    pad_id: int = 0,
    device: torch.device | str | None = None,
) -> RolloutBatch:
    """A :class:`~lvt_trainer.grpo.RolloutBatch` from lvt's render of ``rollouts``.

    ``advantages`` are left at zero (fill them from group statistics or a critic);
    ``rewards``, ``truncated``, ``forged``, ``owner``, ``behavior_logp`` (when every turn
    carries it) and ``token_rewards`` are set. ``pad_id`` is in the model's vocabulary
    (after ``id_map``). See the module docstring for the mask and the checks.

    Raises:
        ForgedTokenError: a sampled control id with ``on_forged="raise"``.
        PrefixViolationError, RenderMismatchError: the render does not extend what the
            model saw.
        lvt.ConversationError: the conversation itself is invalid for the format.
    """
    if on_forged not in ("raise", "mask"):
        raise TrainerConfigError(f"on_forged must be 'raise' or 'mask', got {on_forged!r}")
    if not rollouts:
        raise TrainerConfigError("build_batch needs at least one rollout")
    rows = [_row(encoder, i, tr, on_forged) for i, tr in enumerate(rollouts)]
    bsz, width = len(rows), max(len(r.ids) for r in rows)
    ids = np.zeros((bsz, width), dtype=np.int64)
    owner = np.full((bsz, width), -1, dtype=np.int64)
    am = np.zeros((bsz, width), dtype=np.int64)
    lm = np.zeros((bsz, width), dtype=np.float32)
    blp = np.zeros((bsz, width), dtype=np.float32)
    trw = np.zeros((bsz, width), dtype=np.float32)
    have_blp = all(r.behavior is not None or r.forged for r in rows)
    for i, r in enumerate(rows):
        n = len(r.ids)
        ids[i, :n] = r.ids
        owner[i, :n] = r.owner
        am[i, :n] = 1
        lm[i, :n] = r.mask
        trw[i, :n] = r.token_rewards
        if r.behavior is not None:
            blp[i, :n] = r.behavior
    real = torch.from_numpy(ids)
    pad = torch.from_numpy(am) == 0
    if id_map is not None:
        model_ids = id_map.to_model(torch.where(pad, id_map.real_ids[0], real))
        if not torch.equal(id_map.to_real(model_ids)[~pad], real[~pad]):  # pragma: no cover
            raise RenderMismatchError("the id map is not a bijection on the rendered ids")
    else:
        model_ids = real.clone()
    model_ids[pad] = int(pad_id)
    dev = torch.device("cpu") if device is None else torch.device(device)
    batch = RolloutBatch(
        input_ids=model_ids,
        attention_mask=torch.from_numpy(am),
        loss_mask=torch.from_numpy(lm),
        advantages=torch.zeros(bsz),
        behavior_logp=torch.from_numpy(blp) if have_blp else None,
        rewards=torch.tensor([float(t.reward) for t in rollouts], dtype=torch.float32),
        token_rewards=torch.from_numpy(trw) if bool(trw.any()) else None,
        truncated=torch.tensor([bool(t.truncated) for t in rollouts]),
        owner=torch.from_numpy(owner),
        render_ids=real if id_map is not None else None,
        forged=torch.tensor([r.forged for r in rows]),
    )
    return batch.to(dev)
