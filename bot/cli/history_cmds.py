"""Runners of `history` (walk a repository's commits) and `history-merge` (join sharded walks)."""

from __future__ import annotations

import argparse
import sys

from opdrift.cli.common import EXIT_OK, note, write_output


def run_history(args: argparse.Namespace) -> int:
    from opdrift.app.overrides import load_overrides
    from opdrift.history import timeline
    from opdrift.history import walk as history
    from opdrift.render import timeline as timeline_render

    options = history.WalkOptions(
        from_rev=args.from_rev,
        to_rev=args.to_rev,
        paths=tuple(args.paths) if args.paths else history.DEFAULT_PATHS,
        tags=args.tags,
        shard=history.parse_shard(args.shard) if args.shard else None,
        keep_going=not args.strict,
        cache_dir=args.cache,
        overrides=load_overrides(args.overrides) if args.overrides else None,
    )
    result = history.walk(args.repo, options, progress=timeline.Progress(sys.stderr))
    write_output(timeline_render.render(result, args.format), args.output)
    for line in history.skipped_summary(result.points):
        note(line)
    return EXIT_OK


def run_history_merge(args: argparse.Namespace) -> int:
    from opdrift.history import timeline
    from opdrift.render import timeline as timeline_render
    from opdrift.sources.read import read_text

    parts = []
    for name in args.shards:
        # Size-capped and strict UTF-8, like every file a run reads (a shard may come from an artifact).
        text = read_text(name, "history file", timeline.TimelineError)
        parts.append((name, timeline.parse_json(text, name)))
    write_output(timeline_render.render(timeline.merge(parts), args.format), args.output)
    return EXIT_OK
