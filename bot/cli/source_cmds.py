"""Runners of the commands on one SOURCE's operators: snapshot, stats, explain.

The stages they use are imported at the top, so that `main` imports them with the runner (while the
cycle collector waits, see bot.cli.app), and nothing else: no renderer, no network client.
"""

from __future__ import annotations

import argparse
import sys

from bot import pipeline, snapshot
from bot.cli.common import EXIT_OK, warn, write_output
from bot.model import Snapshot
from bot.render.explain import explain
from bot.render.stats import RENDERERS
from bot.taxonomy.overrides import Overrides, load_overrides
from bot.taxonomy.stats import compute_stats


def _load(spec: str, overrides: Overrides | None) -> Snapshot:
    """SOURCE → Snapshot, with the parse's warnings on stderr (as bot.cli.common.load)."""
    return pipeline.load_snapshot(spec, overrides, warn=warn)


def run_snapshot(args: argparse.Namespace) -> int:
    overrides = load_overrides(args.overrides) if args.overrides else None
    snap = _load(args.source, overrides)
    write_output(snapshot.to_json(snap), args.output)
    return EXIT_OK


def run_stats(args: argparse.Namespace) -> int:
    overrides = load_overrides(args.overrides) if args.overrides else None
    stats = compute_stats(_load(args.source, overrides))
    write_output(RENDERERS[args.format](stats), args.output)
    return EXIT_OK


def run_explain(args: argparse.Namespace) -> int:
    overrides = load_overrides(args.overrides) if args.overrides else None
    sys.stdout.write(explain(_load(args.source, overrides), args.op))
    return EXIT_OK
