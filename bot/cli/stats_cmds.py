"""Runner of `opdrift stats`: the post's table for one SOURCE (imports as in opdrift.cli.source_cmds)."""

from __future__ import annotations

import argparse

from opdrift import pipeline
from opdrift.cli.common import EXIT_OK, codegen_rules, read_any_source, warn, write_output
from opdrift.render.stats import RENDERERS
from opdrift.taxonomy.stats import compute_stats


def run_stats(args: argparse.Namespace) -> int:
    overrides = None
    if args.overrides:
        from opdrift.app.overrides import load_overrides  # here: most runs have no overrides file

        overrides = load_overrides(args.overrides)
    stats = compute_stats(
        pipeline.load_source(
            args.source, overrides, warn=warn, codegen=codegen_rules(args), read=read_any_source
        )
    )
    write_output(RENDERERS[args.format](stats), args.output)
    return EXIT_OK
