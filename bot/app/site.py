"""The `site` use case: SOURCEs and backend lists in, the catalogue's `Site` out (the command line
writes it). Every argument is checked before the first SOURCE is parsed; SOURCEs load through the
`load` the caller gives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from opdrift.app.coverage import read_and_cover
from opdrift.coverage import check as coverage
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.errors import ConfigError
from opdrift.site.backends import check_unique, parse_site_backend
from opdrift.site.build import build_site, order_sources
from opdrift.site.model import BackendColumn

if TYPE_CHECKING:
    from opdrift.history.timeline import Point
    from opdrift.model import Snapshot
    from opdrift.site.model import Site

Say = Callable[[str], None]


def site_of(
    sources: Sequence[str],
    backend_args: Sequence[str],
    *,
    load: Callable[[str], Snapshot],
    history: str | None,
    tags: str | None,
    warn: Say,
    note: Say,
) -> Site:
    if tags and not history:
        raise ConfigError("--tags needs --history REPO")
    specs = [parse_site_backend(arg) for arg in backend_args]
    check_unique(specs)
    given = [(spec, load(spec)) for spec in sources]
    ordered = order_sources(given)
    if [spec for spec, _ in ordered] != list(sources):
        note(f"SOURCEs taken oldest first: {', '.join(spec for spec, _ in ordered)} (the last is current)")
    snapshots = [snap for _, snap in ordered]
    now = snapshots[-1]
    for spec in specs:
        if KIND_BY_ID[spec.kind].in_pytorch:
            coverage.check_dispatch_key(now, spec.value)
    coverages = []
    for spec in specs:
        _, cov = read_and_cover(now, spec.kind, spec.value, warn=warn)
        coverages.append((BackendColumn(spec.name, spec.kind, spec.label, cov.profile), cov))
    points = _walk(history, tags, snapshots, warn=warn) if history else None
    return build_site(snapshots, coverages, points)


def _walk(history: str, tags: str | None, snapshots: list[Snapshot], *, warn: Say) -> tuple[Point, ...]:
    """The per-commit walk over the SOURCEs' range (or the release tags matching --tags)."""
    from opdrift.history import walk as walker
    from opdrift.history.attribution import history_range, walk_range

    if tags:
        options = walker.WalkOptions(tags=tags, keep_going=True)
        return walker.walk(history, options, warn=warn).points
    start, end = history_range(snapshots[0].meta, snapshots[-1].meta, None, None)
    return walk_range(history, start, end, warn=warn).points
