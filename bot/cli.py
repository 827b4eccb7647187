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
