"""Runner of `opdrift explain`: why one operator sits in its bucket (imports as in
bot.cli.source_cmds)."""

from __future__ import annotations

import argparse
import sys

from bot import pipeline
from bot.cli.common import EXIT_OK, codegen_rules, read_any_source, warn
from bot.render.explain import explain
from bot.taxonomy.overrides import load_overrides


def run_explain(args: argparse.Namespace) -> int:
    overrides = load_overrides(args.overrides) if args.overrides else None
    sys.stdout.write(
        explain(
            pipeline.load_snapshot(
                args.source, overrides, warn=warn, codegen=codegen_rules(args), read=read_any_source
            ),
            args.op,
        )
    )
    return EXIT_OK
