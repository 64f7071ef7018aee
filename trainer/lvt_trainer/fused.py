"""The RLVR loss fused with the chunked log-softmax: gradients formed in the forward pass.

:class:`lvt_trainer.kl.ChunkedTokenStats` bounds memory by recomputing every chunk's logits
in backward, which costs a second pass over the vocabulary (and, for hidden states, two more
``(chunk, H) x (H, V)`` matmuls for the policy and reference logits). That is unavoidable for
a generic consumer of the per-token statistics, but the RLVR loss is *separable*: once the
normalisation constants are known (they depend on the loss mask only), the loss is
``sum_t c_t * f_t(logp_t, H_t, KL_t, ref_logp_t)`` with ``c_t = d loss / d per_token_t``
and ``f_t`` the elementwise per-token loss of :func:`lvt_trainer.loss.token_terms`. So
``d loss / d logp_t`` (and for ``H_t``, ``KL_t``) can be evaluated as soon as a chunk's
statistics exist, and the chunk's logit gradient

``dz = p * (g_KL (lp - log r - KL) - g_H (lp + H) - g_lp) + onehot(y) g_lp``

is turned into the gradient of the logits (or of the hidden states and the LM head) while
the chunk's ``lp``, ``p`` and ``log r`` are still in memory. Backward then only scales the
stored gradients by the incoming scalar. Total work is what the unchunked computation does
(for hidden states: four matmuls per chunk), peak memory is a few ``(chunk, V)`` buffers
plus the gradients themselves.

The gradient is computed eagerly, so :func:`lvt_trainer.loss.rlvr_loss_from_logits` takes
this path only when a gradient is wanted (``torch.is_grad_enabled()`` and an input requires
it). One backward pass per forward: the stored gradients are scaled in place.

Numerics are those of :mod:`lvt_trainer.kl`: no autocast inside (fp32 statistics, LM-head
matmul in the weight's dtype), ``0 * log 0 = 0`` for ``-inf`` logits, exactly zero gradient
at positions whose loss coefficient is zero (masked tokens, even with NaN logits), fp16
gradients saturated at the fp16 range.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .kl import (
    _backprop_chunk,
    _chunk_logits,
    _chunks,
    _live_rows,
    _no_autocast,
    _ref_logp,
    _zero_prob_fill,
    saturate,
)

__all__ = ["ChunkTail", "FusedRLVR"]

# (batch row, start, end, logp, entropy, kl, ref_logp) -> the chunk's share of the loss
ChunkTail = Callable[[int, int, int, Tensor, Tensor | None, Tensor | None, Tensor | None], Tensor]


def _tail_grads(
    tail: ChunkTail,
    b: int,
    s: int,
    e: int,
    stats: tuple[Tensor, Tensor | None, Tensor | None, Tensor | None],
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]:
    """The chunk's loss share and its gradients with respect to logp, entropy and KL."""
    lp, ent, kl, ref_lp = stats
    with torch.enable_grad():
        leaves = [x.detach().requires_grad_() if x is not None else None for x in (lp, ent, kl)]
        value = tail(b, s, e, leaves[0], leaves[1], leaves[2], ref_lp)  # type: ignore[arg-type]
        wrt = [x for x in leaves if x is not None]
        grads = (
            iter(torch.autograd.grad(value, wrt, allow_unused=True))
            if value.requires_grad
            else iter([None] * len(wrt))
        )
    g = [next(grads) if x is not None else None for x in leaves]
    return value.detach(), g[0], g[1], g[2]


class FusedRLVR(torch.autograd.Function):
    """Chunked statistics, the loss, and its input gradients in one forward pass.

    ``forward(ctx, policy, weight, ref, ref_weight, targets, tail, chunk_size, smoothing,
    want_entropy, want_kl, want_ref_logp)``:

    * ``policy``: ``(B, T, V)`` logits, or ``(B, T, H)`` hidden states with ``weight``
      (``(V, H)``); gradients flow to both.
    * ``ref`` / ``ref_weight``: reference logits or hidden states + head (never
      differentiated); needed when ``want_kl`` or ``want_ref_logp``.
    * ``tail``: the chunk's share of the scalar loss from the chunk's per-token statistics,
      differentiable in ``logp``, ``entropy`` and ``kl`` (see :data:`ChunkTail`).

    Returns ``(loss, logp, entropy, kl, ref_logp)``: the scalar loss (differentiable) and the
    detached ``(B, T)`` statistics in the compute dtype (zeros for those not requested).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        policy: Tensor,
        weight: Tensor | None,
        ref: Tensor | None,
        ref_weight: Tensor | None,
        targets: Tensor,
        tail: ChunkTail,
        chunk_size: int | None,
        smoothing: float,
        want_entropy: bool,
        want_kl: bool,
        want_ref_logp: bool,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        if policy.dim() != 3:
            raise ValueError(f"policy must be (B, T, V or H), got shape {tuple(policy.shape)}")
        if (want_kl or want_ref_logp) and ref is None:
            raise ValueError("the KL needs reference logits or hidden states")
        cdt = torch.promote_types(policy.dtype if weight is None else weight.dtype, torch.float32)
        bsz, seq = policy.shape[0], policy.shape[1]
        stats = [policy.new_zeros((bsz, seq), dtype=cdt) for _ in range(4)]
        out_lp, out_ent, out_kl, out_ref = stats
        need_policy = policy.requires_grad
        need_weight = weight is not None and weight.requires_grad
        grad_policy = torch.empty_like(policy) if need_policy else None
        grad_weight = (
            torch.zeros_like(weight, dtype=cdt) if need_weight and weight is not None else None
        )
        total = torch.zeros((), dtype=cdt, device=policy.device)
        with _no_autocast(policy.device):
            _fused_chunks(
                policy, weight, ref, ref_weight, targets, tail, chunk_size, smoothing,
                (want_entropy, want_kl, want_ref_logp), stats, total, grad_policy, grad_weight,
            )
        gw = None
        if grad_weight is not None and weight is not None:
            gw = saturate(grad_weight, weight.dtype).to(weight.dtype)
        ctx.grads = [grad_policy, gw]
        ctx.mark_non_differentiable(*stats)
        return total, out_lp, out_ent, out_kl, out_ref

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, g_loss: Tensor, *_unused: Tensor
    ) -> tuple[Tensor | None, ...]:
        grads = ctx.grads
        if grads is None:
            raise RuntimeError(
                "FusedRLVR supports one backward pass per forward (its gradients are formed "
                "in forward and scaled in place); recompute the loss to differentiate again"
            )
        ctx.grads = None
        scale = g_loss.detach()
        out: list[Tensor | None] = []
        for g in grads:
            if g is not None and not bool((scale == 1).all()):
                g.mul_(scale.to(g.dtype))
            out.append(g)
        return (out[0], out[1], *([None] * 9))


def _fused_chunks(
    policy: Tensor,
    weight: Tensor | None,
    ref: Tensor | None,
    ref_weight: Tensor | None,
    targets: Tensor,
    tail: ChunkTail,
    chunk_size: int | None,
    smoothing: float,
    wants: tuple[bool, bool, bool],
    stats: list[Tensor],
    total: Tensor,
    grad_policy: Tensor | None,
    grad_weight: Tensor | None,
) -> None:
    """The chunk loop of :meth:`FusedRLVR.forward`: fills ``stats``, ``total`` and the
    gradients in place."""
    want_entropy, want_kl, want_ref_logp = wants
    out_lp, out_ent, out_kl, out_ref = stats
    cdt = out_lp.dtype
    bsz, seq = policy.shape[0], policy.shape[1]
    for b in range(bsz):
        for s, e in _chunks(seq, chunk_size):
            src = policy[b, s:e]
            y = targets[b, s:e, None]
            lp = torch.log_softmax(_chunk_logits(src, weight, cdt), dim=-1)
            p = lp.exp()
            lp_y = lp.gather(-1, y).squeeze(-1)
            zero = _zero_prob_fill(lp, p)
            ent = kl = ref_lp = None
            d: Tensor | None = None  # lp - log r
            if want_kl or want_ref_logp:
                assert ref is not None
                # smoothing applies to the exact KL's reference distribution only
                d = _ref_logp(ref[b, s:e], ref_weight, cdt, smoothing if want_kl else 0.0)
                if want_ref_logp:
                    ref_lp = d.gather(-1, y).squeeze(-1)
                if want_kl:
                    d.sub_(lp).neg_().masked_fill_(zero, 0.0)
                    kl = torch.linalg.vecdot(p, d)
                else:
                    d = None
            del zero
            if want_entropy:
                ent = -torch.linalg.vecdot(p, lp)
            value, g_lp, g_ent, g_kl = _tail_grads(tail, b, s, e, (lp_y, ent, kl, ref_lp))
            total += value
            out_lp[b, s:e] = lp_y
            for out, x in ((out_ent, ent), (out_kl, kl), (out_ref, ref_lp)):
                if x is not None:
                    out[b, s:e] = x
            if grad_policy is None and grad_weight is None:
                continue
            # dz = p * (g_KL d - g_H lp + c) + onehot(y) g_lp, built in the lp buffer,
            # with c = -g_lp - g_H H - g_KL KL
            c = torch.zeros((e - s, 1), dtype=cdt, device=lp.device)
            if g_ent is not None and ent is not None:
                c.sub_((g_ent * ent)[:, None])
                dz = lp.mul_(-g_ent[:, None])
            else:
                dz = lp.zero_()
            if g_kl is not None and kl is not None and d is not None:
                c.sub_((g_kl * kl)[:, None])
                dz.add_(d.mul_(g_kl[:, None]))
            del d
            if g_lp is not None:
                c.sub_(g_lp[:, None])
            dz.add_(c).mul_(p)
            del p
            if g_lp is not None:
                dz.scatter_add_(-1, y, g_lp[:, None])
            live = _live_rows(g_lp, g_ent, g_kl)
            _backprop_chunk(dz, src, weight, grad_policy, grad_weight, (b, s, e), live)
            del dz, lp
