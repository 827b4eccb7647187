"""The command line: parse arguments, call the stages, map errors to exit codes.

Exit codes: 0 success (and nothing reached --fail-on), 1 a finding reached --fail-on,
2 a problem the user can fix (bad input, bad config, GitHub refused) printed as one line.
Each subcommand is a pair: ``_add_<name>(subparsers)`` builds its parser and ``_cmd_<name>(args)``
runs it and returns the exit code. Keep this module thin: logic lives in the stage modules.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from bot import __version__
from bot.errors import OpdriftError

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_ERROR = 2

Command = Callable[[argparse.Namespace], int]

SOURCE_HELP = (
    "SOURCE: a PyTorch checkout DIR, DIR@REV (a git revision, read without checkout), "
    "a torch .whl, a native_functions.yaml (tags.yaml beside it is used), or a snapshot .json"
)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its message on one line plus the usage."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="opdrift",
        description="Track PyTorch's ATen operator surface: classify operators, diff two sources, "
        "and report what changed for downstream backends.",
        epilog=SOURCE_HELP,
    )
    parser.add_argument("--version", action="version", version=f"opdrift {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


# Each entry registers one subcommand; appended below by the command's own section.
_COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = []


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except OpdriftError as err:
        print(f"opdrift: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("opdrift: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `opdrift ... | head` closes stdout early; that is not an error worth a traceback.
        return EXIT_OK


# --- subcommands -------------------------------------------------------------------------------
# (each section: _add_x + _cmd_x, then _COMMANDS.append(_add_x))


def _write_output(text: str, output: str | None) -> None:
    """Print to stdout, or write FILE atomically so an interrupted run never leaves half a file."""
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    from bot.snapshot import write_atomic

    write_atomic(output, text)


# --- snapshot ---------------------------------------------------------------------------------


def _add_snapshot(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "snapshot",
        help="classify every operator of SOURCE and store the result as JSON",
        description="Classify every registered operator of SOURCE and write a deterministic, "
        "versioned snapshot (JSON). Same input, same bytes.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of stdout")
    p.add_argument("--overrides", metavar="FILE", help="bucket overrides file (see README)")
    p.set_defaults(func=_cmd_snapshot)


def _cmd_snapshot(args: argparse.Namespace) -> int:
    from bot import pipeline, snapshot
    from bot.overrides import load_overrides

    overrides = load_overrides(args.overrides) if args.overrides else None
    snap = pipeline.load_snapshot(args.source, overrides)
    _write_output(snapshot.to_json(snap), args.output)
    return EXIT_OK


_COMMANDS.append(_add_snapshot)


# --- coverage ---------------------------------------------------------------------------------


def _add_coverage(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "coverage",
        help="what a downstream backend covers of SOURCE, what it lacks, and what went stale",
        description="Compare a backend's own op list with SOURCE's operators: coverage per bucket, "
        "the ops that need a kernel, stale entries, and schema alerts. "
        "KIND is one of torch-mlir, xla, cpp, op-plugin, xpu, dispatch, text; for dispatch, "
        "PATH is a dispatch key of native_functions.yaml such as MPS.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("--backend", metavar="KIND=PATH", action="append", required=True, help="repeatable")
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--base", metavar="BASE", help="also report what changed since BASE (a SOURCE)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("-o", "--output", metavar="FILE")
    p.add_argument(
        "--torch-version",
        metavar="X.Y",
        help="torch version for op-plugin version gates (default: the SOURCE's, when known)",
    )
    p.set_defaults(func=_cmd_coverage)


def _cmd_coverage(args: argparse.Namespace) -> int:
    from bot import backends, coverage, coverage_report, pipeline

    specs = [backends.parse_backend_arg(arg) for arg in args.backend]
    head = pipeline.load_snapshot(args.source)
    base = pipeline.load_snapshot(args.base) if args.base else None
    results = []
    for kind, value in specs:
        version = args.torch_version or head.meta.torch_version
        backend = backends.read_backend(kind, value, torch_version=version)
        cov = coverage.compute_coverage(head, backend)
        change = None
        if base is not None:
            base_backend = backends.read_backend(
                kind, value, torch_version=args.torch_version or base.meta.torch_version
            )
            change = coverage.compare_coverage(coverage.compute_coverage(base, base_backend), cov)
        results.append((cov, change))
    _write_output(coverage_report.render(results, args.format, head=head), args.output)
    return EXIT_OK


_COMMANDS.append(_add_coverage)
