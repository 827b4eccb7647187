"""Runner of `site`: SOURCEs and backend lists in, a static site in DIR out."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bot.cli.common import EXIT_OK, load, note, warn

if TYPE_CHECKING:
    from bot.history.timeline import Point
    from bot.model import Snapshot


def run_site(args: argparse.Namespace) -> int:
    from bot.coverage import backends as backend_lists
    from bot.coverage import check as coverage
    from bot.errors import ConfigError
    from bot.site.backends import check_unique, parse_site_backend
    from bot.site.build import build_site, order_sources
    from bot.site.files import site_files
    from bot.site.model import BackendSpec
    from bot.site.write import write_site

    # Every argument is checked before the first SOURCE is parsed.
    if args.tags and not args.history:
        raise ConfigError("--tags needs --history REPO")
    specs = [parse_site_backend(arg) for arg in args.backend or ()]
    check_unique(specs)
    given = [(spec, load(spec)) for spec in args.sources]
    ordered = order_sources(given)
    if [spec for spec, _ in ordered] != list(args.sources):
        note(f"SOURCEs taken oldest first: {', '.join(spec for spec, _ in ordered)} (the last is current)")
    snapshots = [snap for _, snap in ordered]
    now = snapshots[-1]
    for spec in specs:
        if spec.kind == "dispatch":
            coverage.check_dispatch_key(now, spec.value)
    coverages = []
    for spec in specs:
        listed = backend_lists.read_backend(spec.kind, spec.value, torch_version=now.meta.torch_version)
        for message in listed.warnings:
            warn(message)
        cov = coverage.compute_coverage(now, listed)
        coverages.append((BackendSpec(spec.name, spec.kind, spec.label, cov.profile), cov))
    points = _walk(args, snapshots) if args.history else None
    write_site(args.output, site_files(build_site(snapshots, coverages, points)))
    return EXIT_OK


def _walk(args: argparse.Namespace, snapshots: list[Snapshot]) -> tuple[Point, ...]:
    """The per-commit walk over the SOURCEs' range (or the release tags matching --tags)."""
    from bot.history import walk as history
    from bot.history.attribution import history_range, walk_range

    if args.tags:
        options = history.WalkOptions(tags=args.tags, keep_going=True)
        return history.walk(args.history, options, warn=warn).points
    start, end = history_range(snapshots[0].meta, snapshots[-1].meta, None, None)
    return walk_range(args.history, start, end, warn=warn).points
