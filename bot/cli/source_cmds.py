"""Runner of `opdrift snapshot`: one SOURCE's operators, classified and stored.

Each command on one SOURCE has its own module (this, stats_cmds, explain_cmds), so that a command
imports only the stages it uses. They are imported at the top, so that `main` imports them with the
runner, and nothing else: no renderer, no network client.
"""

from __future__ import annotations

import argparse

from opdrift import pipeline, snapshot
from opdrift.app.overrides import load_overrides
from opdrift.cli.common import EXIT_OK, codegen_rules, read_any_source, warn, write_output


def run_snapshot(args: argparse.Namespace) -> int:
    overrides = load_overrides(args.overrides) if args.overrides else None
    snap = pipeline.load_snapshot(
        args.source, overrides, warn=warn, codegen=codegen_rules(args), read=read_any_source
    )
    write_output(snapshot.to_json(snap), args.output)
    return EXIT_OK
