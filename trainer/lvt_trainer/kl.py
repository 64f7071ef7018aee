"""Exact and sampled KL to the reference policy, and chunked per-token statistics.

The heavy lifting is :class:`ChunkedTokenStats`, a ``torch.autograd.Function`` that walks
the sequence in chunks of ``chunk_size`` positions and, for every position, computes from
the policy logits (or from hidden states and the LM-head weight):

* ``logp``: the log-probability of the target token,
* ``entropy``: the entropy of the policy distribution,
* ``kl``: the exact ``KL(pi_new || pi_ref)`` over the whole vocabulary.

Everything is computed in fp32 (fp64 when the inputs are fp64, which is what
``torch.autograd.gradcheck`` uses), whatever the input dtype. The forward pass keeps no
``(chunk, V)`` intermediates; the backward pass recomputes the softmax of each chunk and
writes the analytic gradient

* ``d logp_y / dz = onehot(y) - p``
* ``d H / dz = -p * (log p + H)``
* ``d KL / dz = p * ((log p - log r) - KL)``

so that peak extra memory is ``O(chunk_size * V)`` instead of several ``B * T * V``
buffers. Values and gradients equal the unchunked computation up to float rounding.

The reference distribution never receives gradients. It can be smoothed,
``log r = log((1 - eps) * softmax(ref_logits) + eps / V)``, which keeps the KL finite
where the reference assigns (numerically) zero mass.

Deviation from the method, on purpose: the article smooths the reference *logits*,
``z' = z + eps * (z - mean(z))``. Because softmax ignores a constant shift, that is
``softmax((1 + eps) * z)``: a temperature change that *sharpens* the reference for
``eps > 0`` and never lifts a zero-mass token, so it cannot keep the KL finite. The
mixture with the uniform distribution used here does (``log r >= log(eps / V)``), is exact
at ``eps = 0``, and is what ``ref_smoothing`` means everywhere in ``lvt_trainer``.

Numerics (every path, including :mod:`lvt_trainer.fused`):

* autocast is switched off inside: the LM-head matmul runs in the weight's dtype and
  softmax, entropy, KL and their gradients in fp32 even under ``torch.autocast``;
* ``-inf`` logits (a masked vocabulary) follow ``0 * log 0 = 0``: a token with zero
  probability adds nothing to the entropy or the KL and gets zero gradient;
* a position whose incoming gradient is zero (a masked token) gets exactly zero gradient,
  even when its logits or hidden states are NaN;
* gradients written into fp16 tensors saturate at the fp16 range instead of overflowing.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import Tensor

from .checks import check_logits_layout, check_smoothing
from .errors import TrainerConfigError

__all__ = [
    "DEFAULT_LOG_RATIO_BOUND",
    "ChunkedTokenStats",
    "KLEstimator",
    "exact_kl",
    "naive_token_stats",
    "sampled_kl",
    "saturate",
    "smoothed_log_softmax",
    "to_compute",
    "token_logprobs_entropy",
    "token_stats",
]

KLEstimator = Literal["k1", "k2", "k3"]

#: Default clamp applied to log-probability differences before exponentiation.
DEFAULT_LOG_RATIO_BOUND: float = 20.0


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for half/bf16/fp32 inputs, fp64 for fp64 inputs."""
    return torch.promote_types(dtype, torch.float32)


def smoothed_log_softmax(logits: Tensor, eps: float = 0.0) -> Tensor:
    """``log((1 - eps) * softmax(logits) + eps / V)`` along the last dimension, stably.

    With ``eps == 0`` this is ``log_softmax``. Computed in the dtype of ``logits``.
    """
    logp = torch.log_softmax(logits, dim=-1)
    if eps <= 0.0:
        return logp
    if eps >= 1.0:
        raise TrainerConfigError(f"ref_smoothing: expected 0 <= eps < 1, got {eps!r}")
    vocab = logits.shape[-1]
    floor = torch.tensor(math.log(eps / vocab), dtype=logp.dtype, device=logp.device)
    shift = math.log1p(-eps)
    logp = logp + shift if logp.requires_grad else logp.add_(shift)
    return torch.logaddexp(logp, floor)


def _no_autocast(device: torch.device) -> Any:
    """A context that disables autocast on ``device`` (fp32 statistics inside autocast)."""
    return torch.autocast(device_type=device.type, enabled=False)


def saturate(x: Tensor, dtype: torch.dtype) -> Tensor:
    """``x`` clamped to the finite range of ``dtype`` when that is fp16 (else ``x``): a
    gradient cast to fp16 saturates at +-65504 instead of overflowing to inf."""
    if dtype == torch.float16 and x.dtype != torch.float16:
        m = torch.finfo(torch.float16).max
        return x.clamp(-m, m)
    return x


class _SaturatingCast(torch.autograd.Function):
    """``x.to(dtype)`` whose backward saturates the gradient at the source dtype's range."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, dtype: torch.dtype) -> Tensor:  # type: ignore[override]
        ctx.src = x.dtype
        return x.to(dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        return saturate(g, ctx.src).to(ctx.src), None


def to_compute(x: Tensor, dtype: torch.dtype) -> Tensor:
    """``x`` in the compute dtype; the gradient flowing back into an fp16 ``x`` saturates
    at +-65504 instead of overflowing (see :func:`saturate`)."""
    if x.dtype == dtype:
        return x
    if x.dtype == torch.float16 and x.requires_grad and torch.is_grad_enabled():
        return _SaturatingCast.apply(x, dtype)
    return x.to(dtype)


def _zero_prob_fill(lp: Tensor, p: Tensor) -> Tensor:
    """Where ``p == 0`` set ``lp`` to 0 in place (``0 * log 0 = 0``); returns the mask."""
    zero = p == 0
    lp.masked_fill_(zero, 0.0)
    return zero


def _chunk_logits(src: Tensor, weight: Tensor | None, cdt: torch.dtype) -> Tensor:
    """Logits of one chunk in the compute dtype: ``src`` itself, or ``src @ weight.T``."""
    if weight is None:
        return src.to(cdt)
    # Matmul in the weight's dtype (bf16 on GPU accumulates in fp32), never copy the
    # whole (V, H) weight per chunk.
    return (src.to(weight.dtype) @ weight.t()).to(cdt)


def _chunks(length: int, chunk_size: int | None) -> list[tuple[int, int]]:
    if chunk_size is None or chunk_size <= 0 or chunk_size >= length:
        return [(0, length)]
    return [(s, min(s + chunk_size, length)) for s in range(0, length, chunk_size)]


def _backprop_chunk(
    dz: Tensor,
    src: Tensor,
    weight: Tensor | None,
    grad_policy: Tensor | None,
    grad_weight: Tensor | None,
    where: tuple[int, int, int],
    live: Tensor | None = None,
) -> None:
    """Turn one chunk's logit gradient ``dz`` into input gradients, in place.

    Logits input: ``dz`` is the gradient of ``policy[b, s:e]``. Hidden-state input
    (``weight`` given): ``dz @ weight`` for the hidden states and ``dz.T @ src`` accumulated
    into the head's gradient, with the matmuls in the weight's dtype. Rows where ``live``
    is false get exactly zero gradient and their ``src`` (possibly NaN) is not read.
    """
    b, s, e = where
    if live is not None:
        dz.masked_fill_(~live[:, None], 0.0)
    if weight is None:
        if grad_policy is not None:
            grad_policy[b, s:e] = saturate(dz, grad_policy.dtype)
        return
    dzw = saturate(dz, weight.dtype).to(weight.dtype)
    if grad_policy is not None:
        grad_policy[b, s:e] = saturate(dzw @ weight, grad_policy.dtype)
    if grad_weight is not None:
        x = src.to(weight.dtype)
        if live is not None:
            x = torch.where(live[:, None], x, torch.zeros((), dtype=x.dtype, device=x.device))
        grad_weight.add_(dzw.t() @ x)


def _live_rows(*grads: Tensor | None) -> Tensor | None:
    """Positions with a nonzero incoming gradient in any of ``grads`` (``None``: all)."""
    live: Tensor | None = None
    for g in grads:
        if g is not None:
            nz = g != 0
            live = nz if live is None else live | nz
    return live


class ChunkedTokenStats(torch.autograd.Function):
    """Chunked target log-prob, entropy and exact KL with recompute in backward.

    ``forward(ctx, policy, weight, ref, ref_weight, targets, chunk_size, smoothing,
    want_logp, want_entropy, want_kl)``:

    * ``policy``: ``(B, T, V)`` logits, or ``(B, T, H)`` hidden states when ``weight``
      (``(V, H)``, the LM head) is given; gradients flow to ``policy`` and ``weight``.
    * ``ref`` / ``ref_weight``: the same for the reference model (no gradient); may be
      ``None`` when ``want_kl`` is false.
    * ``targets``: ``(B, T)`` int64 token ids, or ``None`` when ``want_logp`` is false.

    Returns ``(logp, entropy, kl)``, each ``(B, T)`` in the compute dtype (zeros for the
    quantities not requested). Prefer the wrappers :func:`token_stats`, :func:`exact_kl`
    and :func:`token_logprobs_entropy`.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        policy: Tensor,
        weight: Tensor | None,
        ref: Tensor | None,
        ref_weight: Tensor | None,
        targets: Tensor | None,
        chunk_size: int | None,
        smoothing: float,
        want_logp: bool,
        want_entropy: bool,
        want_kl: bool,
    ) -> tuple[Tensor, Tensor, Tensor]:
        if policy.dim() != 3:
            raise ValueError(f"policy must be (B, T, V or H), got shape {tuple(policy.shape)}")
        if want_kl and ref is None:
            raise ValueError("want_kl requires reference logits or hidden states")
        if want_logp and targets is None:
            raise ValueError("want_logp requires targets")
        cdt = _compute_dtype(policy.dtype if weight is None else weight.dtype)
        bsz, seq = policy.shape[0], policy.shape[1]
        out_lp = policy.new_zeros((bsz, seq), dtype=cdt)
        out_ent = policy.new_zeros((bsz, seq), dtype=cdt)
        out_kl = policy.new_zeros((bsz, seq), dtype=cdt)
        with torch.no_grad(), _no_autocast(policy.device):
            for b in range(bsz):
                for s, e in _chunks(seq, chunk_size):
                    # at most three (chunk, V) buffers live at once: lp, p, d
                    lp = torch.log_softmax(_chunk_logits(policy[b, s:e], weight, cdt), dim=-1)
                    if want_logp:
                        assert targets is not None
                        out_lp[b, s:e] = lp.gather(-1, targets[b, s:e, None]).squeeze(-1)
                    if want_entropy or want_kl:
                        p = lp.exp()
                        zero = _zero_prob_fill(lp, p)
                        if want_kl:
                            assert ref is not None
                            d = _ref_logp(ref[b, s:e], ref_weight, cdt, smoothing)
                            d.sub_(lp).neg_().masked_fill_(zero, 0.0)  # d = lp - log r
                            out_kl[b, s:e] = d.mul_(p).sum(-1)
                            del d
                        if want_entropy:
                            out_ent[b, s:e] = -lp.mul_(p).sum(-1)  # lp is not needed after
                        del p, zero
                    del lp
        ctx.save_for_backward(policy, weight, ref, ref_weight, targets, out_ent, out_kl)
        ctx.cfg = (chunk_size, smoothing, want_logp, want_entropy, want_kl, cdt)
        return out_lp, out_ent, out_kl

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, g_lp: Tensor | None, g_ent: Tensor | None, g_kl: Tensor | None
    ) -> tuple[Tensor | None, ...]:
        policy, weight, ref, ref_weight, targets, ent, kl = ctx.saved_tensors
        _, _, want_logp, want_entropy, want_kl, cdt = ctx.cfg
        use_lp = want_logp and g_lp is not None
        use_ent = want_entropy and g_ent is not None
        use_kl = want_kl and g_kl is not None
        need_policy = ctx.needs_input_grad[0]
        need_weight = weight is not None and ctx.needs_input_grad[1]
        nothing = not (use_lp or use_ent or use_kl)
        if nothing or not (need_policy or need_weight):
            gp = torch.zeros_like(policy) if need_policy else None
            gw = torch.zeros_like(weight) if need_weight else None
            return (gp, gw, *([None] * 9))
        # every chunk is written below, so no zero fill is needed
        grad_policy = torch.empty_like(policy) if need_policy else None
        grad_weight = torch.zeros_like(weight, dtype=cdt) if need_weight else None
        live_all = _live_rows(
            g_lp if use_lp else None, g_ent if use_ent else None, g_kl if use_kl else None
        )
        with _no_autocast(policy.device):
            _backward_chunks(
                ctx, policy, weight, ref, ref_weight, targets, ent, kl, (g_lp, g_ent, g_kl),
                (use_lp, use_ent, use_kl), live_all, grad_policy, grad_weight,
            )
        gw = None
        if grad_weight is not None:
            gw = saturate(grad_weight, weight.dtype).to(weight.dtype)
        return (grad_policy, gw, *([None] * 9))


def _backward_chunks(
    ctx: Any,
    policy: Tensor,
    weight: Tensor | None,
    ref: Tensor | None,
    ref_weight: Tensor | None,
    targets: Tensor | None,
    ent: Tensor,
    kl: Tensor,
    grads: tuple[Tensor | None, Tensor | None, Tensor | None],
    uses: tuple[bool, bool, bool],
    live_all: Tensor | None,
    grad_policy: Tensor | None,
    grad_weight: Tensor | None,
) -> None:
    """The chunk loop of :meth:`ChunkedTokenStats.backward` (autocast already off)."""
    chunk_size, smoothing, _, _, _, cdt = ctx.cfg
    g_lp, g_ent, g_kl = grads
    use_lp, use_ent, use_kl = uses
    bsz, seq = policy.shape[0], policy.shape[1]
    for b in range(bsz):
        for s, e in _chunks(seq, chunk_size):
            src = policy[b, s:e]
            # gz = p * (-g_H * lp + g_KL * (lp - log r) + c) + onehot(y) * g_lp with
            # c = -g_lp - g_H * H - g_KL * KL; built in place in the lp buffer.
            lp = torch.log_softmax(_chunk_logits(src, weight, cdt), dim=-1)
            p = lp.exp()
            zero = _zero_prob_fill(lp, p)
            c = torch.zeros((e - s, 1), dtype=cdt, device=lp.device)
            d: Tensor | None = None
            if use_kl:
                assert g_kl is not None
                gk = g_kl[b, s:e, None].to(cdt)
                c.sub_(gk * kl[b, s:e, None])
                d = _ref_logp(ref[b, s:e], ref_weight, cdt, smoothing)
                d.sub_(lp).neg_().masked_fill_(zero, 0.0)  # lp - log r
                d.mul_(gk)
            del zero
            if use_ent:
                assert g_ent is not None
                gh = g_ent[b, s:e, None].to(cdt)
                c.sub_(gh * ent[b, s:e, None])
                gz = lp.mul_(-gh)
            else:
                gz = lp.zero_()
            del lp
            if d is not None:
                gz.add_(d)
                del d
            if use_lp:
                assert g_lp is not None and targets is not None
                gl = g_lp[b, s:e, None].to(cdt)
                c.sub_(gl)
            gz.add_(c).mul_(p)
            del p
            if use_lp:
                gz.scatter_add_(-1, targets[b, s:e, None], gl)
            live = None if live_all is None else live_all[b, s:e]
            _backprop_chunk(gz, src, weight, grad_policy, grad_weight, (b, s, e), live)
            del gz


def _ref_logp(src: Tensor, weight: Tensor | None, cdt: torch.dtype, eps: float) -> Tensor:
    return smoothed_log_softmax(_chunk_logits(src, weight, cdt), eps)


def token_stats(
    policy: Tensor,
    targets: Tensor | None = None,
    ref: Tensor | None = None,
    *,
    weight: Tensor | None = None,
    ref_weight: Tensor | None = None,
    chunk_size: int | None = 512,
    ref_smoothing: float = 0.0,
    compute_entropy: bool = True,
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """Per-position target log-prob, entropy and exact KL in one chunked pass.

    Args:
        policy: ``(B, T, V)`` policy logits, or ``(B, T, H)`` hidden states when ``weight``
            is given (then logits are ``policy @ weight.T`` and are never materialised for
            more than ``chunk_size`` positions at a time).
        targets: ``(B, T)`` token ids whose log-probs are returned (``None``: skip).
        ref: reference logits ``(B, T, V)`` or hidden states (with ``ref_weight``);
            ``None`` skips the KL. Never receives gradients.
        chunk_size: positions per chunk (``None``: whole sequence at once).
        ref_smoothing: ``eps`` of the reference smoothing, see :func:`smoothed_log_softmax`.
        compute_entropy: whether to compute the entropy.

    Returns:
        ``(logp, entropy, kl)``, each ``(B, T)`` fp32 (fp64 for fp64 inputs) or ``None``
        when not requested.

    Raises:
        TrainerShapeError, TrainerDtypeError: a layout or dtype mistake (reference logits
            not ``(B, T, V)`` like the policy, float targets, ...);
        TrainerConfigError: ``ref_smoothing`` outside ``[0, 1)``.
    """
    check_logits_layout(policy, targets, ref, weight, ref_weight)
    check_smoothing("ref_smoothing", ref_smoothing)
    if targets is not None and targets.dtype != torch.long:
        targets = targets.long()
    want_lp = targets is not None
    want_kl = ref is not None
    if not (want_lp or compute_entropy or want_kl):
        return None, None, None
    if ref is not None:
        ref = ref.detach()
    if ref_weight is not None:
        ref_weight = ref_weight.detach()
    lp, ent, kl = ChunkedTokenStats.apply(
        policy,
        weight,
        ref,
        ref_weight,
        targets,
        chunk_size,
        float(ref_smoothing),
        want_lp,
        compute_entropy,
        want_kl,
    )
    return (lp if want_lp else None, ent if compute_entropy else None, kl if want_kl else None)


def exact_kl(
    logits: Tensor,
    ref_logits: Tensor,
    *,
    chunk_size: int | None = 512,
    ref_smoothing: float = 0.0,
) -> Tensor:
    """Exact per-position ``KL(softmax(logits) || ref)`` over the vocabulary, chunked.

    ``logits`` and ``ref_logits`` are ``(B, T, V)`` (any float dtype; computed in fp32).
    The reference may be smoothed with ``ref_smoothing``. Returns ``(B, T)``; gradients
    flow to ``logits`` only.
    """
    _, _, kl = token_stats(
        logits,
        None,
        ref_logits,
        chunk_size=chunk_size,
        ref_smoothing=ref_smoothing,
        compute_entropy=False,
    )
    assert kl is not None
    return kl


def token_logprobs_entropy(
    policy: Tensor,
    targets: Tensor,
    *,
    weight: Tensor | None = None,
    chunk_size: int | None = 512,
    compute_entropy: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """Chunked log-prob of ``targets`` and entropy from logits or hidden states.

    ``policy`` is ``(B, T, V)`` logits, or ``(B, T, H)`` hidden states with ``weight``
    the ``(V, H)`` LM-head weight. ``targets[b, t]`` is scored under the distribution at
    ``policy[b, t]`` (shift the inputs before calling for next-token prediction).
    """
    lp, ent, _ = token_stats(
        policy, targets, None, weight=weight, chunk_size=chunk_size, compute_entropy=compute_entropy
    )
    assert lp is not None
    return lp, ent


def naive_token_stats(
    logits: Tensor,
    targets: Tensor | None = None,
    ref_logits: Tensor | None = None,
    *,
    ref_smoothing: float = 0.0,
) -> tuple[Tensor | None, Tensor, Tensor | None]:
    """Unchunked plain-autograd counterpart of :func:`token_stats` (fp32 full log-softmax).

    Materialises several ``(B, T, V)`` buffers; kept as the memory/time baseline.
    """
    lp_full = torch.log_softmax(logits.to(_compute_dtype(logits.dtype)), dim=-1)
    p = lp_full.exp()
    ent = -(p * lp_full).sum(-1)
    lp = None if targets is None else lp_full.gather(-1, targets[..., None]).squeeze(-1)
    kl = None
    if ref_logits is not None:
        rlp = smoothed_log_softmax(ref_logits.detach().to(lp_full.dtype), ref_smoothing)
        kl = (p * (lp_full - rlp)).sum(-1)
    return lp, ent, kl


def sampled_kl(
    logp: Tensor,
    ref_logp: Tensor,
    estimator: KLEstimator = "k3",
    *,
    log_ratio_bound: float = DEFAULT_LOG_RATIO_BOUND,
) -> Tensor:
    """Sampled-token KL estimators (Schulman's k1, k2, k3) of ``KL(pi || pi_ref)``.

    With ``d = ref_logp - logp`` (computed in fp32):

    * ``k1 = -d = logp - ref_logp`` (unbiased, high variance, can be negative),
    * ``k2 = d**2 / 2``,
    * ``k3 = exp(d) - d - 1`` (unbiased, always >= 0).

    ``d`` is clamped to ``[-log_ratio_bound, log_ratio_bound]`` for k2/k3 so the result
    stays finite for arbitrary gaps (the gradient is zero beyond the bound). Gradients
    flow to ``logp``; ``ref_logp`` is detached.
    """
    cdt = _compute_dtype(logp.dtype)
    d = ref_logp.detach().to(cdt) - logp.to(cdt)
    if estimator == "k1":
        return -d
    d = d.clamp(-log_ratio_bound, log_ratio_bound)
    if estimator == "k2":
        return 0.5 * d * d
    if estimator == "k3":
        return torch.expm1(d) - d
    raise TrainerConfigError(f"unknown KL estimator {estimator!r}; known k1, k2, k3")
