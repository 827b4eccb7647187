"""The command line's entry point: parse arguments, run the command, map errors to exit codes.

Exit codes: 0 success (and nothing reached --fail-on), 1 a finding reached --fail-on,
2 a problem the user can fix (bad input, bad config, GitHub refused) printed as one line.
The commands are listed once, in opdrift.cli.registry; their arguments live in opdrift.cli.arguments and
opdrift.cli.workflow_arguments, their runners in the *_cmds modules, and the logic in the stages.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from opdrift.cli.common import EXIT_ERROR, EXIT_FINDING, EXIT_OK, start_run
from opdrift.cli.registry import Runner, build_parser, command_named
from opdrift.errors import OpdriftError
from opdrift.text import one_line

__all__ = ["EXIT_ERROR", "EXIT_FINDING", "EXIT_OK", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Only the command being run is built (a mistyped option is still matched against every command's).
    parser = build_parser(command_named(argv))
    args = parser.parse_args(argv)
    start_run()
    try:
        run: Runner = args.run
        return run(args)
    except OpdriftError as err:
        # One line whatever the message quotes: a value from the user's file may hold line breaks.
        print(f"opdrift: error: {one_line(str(err))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("opdrift: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `opdrift ... | head` closes stdout early; that is not an error worth a traceback.
        return EXIT_OK
