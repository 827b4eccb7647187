"""Snapshots (oldest first) and each backend's coverage of the last → the `Site` (pure).

The life of an operator is the drift between each pair of neighbouring SOURCEs, the same
`compute_drift` the reports use, so a page's history says what `opdrift diff` would have said.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from itertools import pairwise

from opdrift.coverage.check import Coverage
from opdrift.coverage.workitems import model_choice
from opdrift.dispatchkeys import COMPOSITE_KEYS
from opdrift.drift.changes import Change, compute_drift
from opdrift.drift.needs import ProfileNeeds
from opdrift.errors import OpdriftError
from opdrift.history.attribution import Attribution
from opdrift.history.timeline import Point
from opdrift.model import NATIVE_PATH, OpRecord, Snapshot
from opdrift.operators.kernels import PROFILES
from opdrift.render.view import source_label
from opdrift.site.commits import Commits
from opdrift.site.model import (
    BackendColumn,
    BackendSummary,
    BucketGap,
    Cell,
    Event,
    Growth,
    OpPage,
    Overload,
    Site,
    SiteRelease,
    file_name,
)
from opdrift.site.usage import backend_work, model_source, op_models
from opdrift.taxonomy.buckets import BUCKETS
from opdrift.taxonomy.counts import count_by_bucket
from opdrift.versions import TorchVersion, parse_version
from opdrift.work.engine import TRAINING_ONLY, VERIFIER_REJECTS

# the rules of ops neither served nor needed, counted in no total: training-only (export), refused by
# ExecuTorch's verifier
APART = (TRAINING_ONLY, VERIFIER_REJECTS)

# The seed post's figures (PyTorch master, late 2021; docs/taxonomy.md): base operators per bucket.
SEED_2021: tuple[tuple[str, int], ...] = (
    ("convolution", 67),
    ("pooling", 42),
    ("batch_norm", 15),
    ("private", 233),
    ("inplace", 183),
    ("backward", 78),
    ("weird", 40),
    ("alias", 40),
    ("composite_reduction", 78),
    ("primitive_pointwise", 50),
    ("composite_pointwise", 87),
    ("composite_matmul", 13),
    ("view", 70),
    ("factory", 39),
    ("named", 5),
    ("complex", 8),
    ("linalg", 31),
    ("sparse", 13),
    ("fft", 20),
    ("rnn", 12),
    ("quantization", 11),
    ("scatter_gather", 15),
    ("fbgemm", 7),
    # The post gives core as 557 and names no "misc": the rest of core after its named sub-buckets.
    ("misc", 58),
)
SEED_LABEL = "2021 post"


class SourceOrderError(OpdriftError):
    """The SOURCEs of `site` cannot be put in order: a version or date is missing, or two tie."""


# "2.14.1", "2.6.0a0" (main's version.txt), "2.15.0+cpu", "2.0.0.dev20230101": a pre-release sorts
# before its release.


def _version_key(version: str | None) -> TorchVersion | None:
    return parse_version(version)


def _date_key(date: str | None) -> float | None:
    """A commit date as a timestamp; None when absent, unreadable, or without a time zone (a naive time
    cannot be compared with the others)."""
    if not date:
        return None
    try:
        parsed = datetime.fromisoformat(date)
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def _same_operators(a: Snapshot, b: Snapshot) -> bool:
    return a.entries == b.entries and a.operators == b.operators and a.decisions == b.decisions


def order_sources(named: Sequence[tuple[str, Snapshot]]) -> list[tuple[str, Snapshot]]:
    """(SOURCE, snapshot) pairs oldest first, whatever order they were given in: by torch version when
    every SOURCE records one (ties broken by commit date), else by commit date when every SOURCE records
    one. An order that cannot be told is a `SourceOrderError` naming the SOURCEs at fault.

    The last is what the site calls current: a newest-first command line must not make the oldest
    release "now", and the order given is not evidence of anything.
    """
    if len(named) < 2:
        return list(named)
    rows = [
        (_version_key(snap.meta.torch_version), _date_key(snap.meta.date), name, snap) for name, snap in named
    ]
    for version, date, name, _ in rows:
        if version is None and date is None:
            raise SourceOrderError(
                f"cannot tell the order of the SOURCEs: {name} records neither a torch version nor a "
                "commit date (a release, a wheel, DIR@REV or a snapshot of one does)"
            )
    if all(version is not None for version, _, _, _ in rows):
        rows.sort(key=lambda r: (r[0] or (), r[1] or 0.0))
        for (v1, d1, a, snap), (v2, d2, b, other) in pairwise(rows):
            # Two SOURCEs with the same operators (the shipped main.json, until the weekly run first
            # refreshes it, is v2.15.0.json byte for byte) give the same site in either order.
            if v1 == v2 and (d1 is None or d2 is None or d1 == d2) and not _same_operators(snap, other):
                why = "and not both record a commit date" if d1 is None or d2 is None else "of the same date"
                raise SourceOrderError(
                    f"cannot tell which of {a} and {b} is newer: both are torch {snap.meta.torch_version}, {why}"
                )
    elif all(date is not None for _, date, _, _ in rows):
        rows.sort(key=lambda r: r[1] or 0.0)
        for (_, d1, a, snap), (_, d2, b, other) in pairwise(rows):
            if d1 == d2 and not _same_operators(snap, other):
                raise SourceOrderError(
                    f"cannot tell which of {a} and {b} is newer: they record the same date"
                )
    else:
        no_version = next(name for version, _, name, _ in rows if version is None)
        no_date = next(name for _, date, name, _ in rows if date is None)
        raise SourceOrderError(
            f"cannot tell the order of the SOURCEs: {no_version} records no torch version and {no_date} "
            "no commit date"
        )
    return [(name, snap) for _, _, name, snap in rows]


def release_of(snapshot: Snapshot) -> SiteRelease:
    meta = snapshot.meta
    ref = meta.commit or (f"v{meta.torch_version}" if meta.torch_version else None)
    # The version or the revision the user named (v2.13.0 of DIR@v2.13.0) reads better than a sha.
    label = meta.torch_version or meta.revision or source_label(meta, short=True)
    return SiteRelease(label, ref, NATIVE_PATH)


def _event(
    change: Change,
    release: SiteRelease,
    commit: Attribution | None = None,
    previous: SiteRelease | None = None,
) -> Event:
    before, after = change.before, change.after
    keys_before = set(_backend_keys(before))
    keys_after = set(_backend_keys(after))
    tags_before = set(before.facets.tags) if before else set()
    tags_after = set(after.facets.tags) if after else set()
    both = before is not None and after is not None
    has_schema_news = change.kind in ("changed", "renamed")
    return Event(
        release=release.label,
        kind=change.kind,
        name=change.name,
        old_name=change.old_name or "",
        callers=_callers(change) if has_schema_news else "",
        kernel=change.kernel,
        details=change.details,
        kernel_changes=change.kernel_changes,
        keys_gained=tuple(sorted(keys_after - keys_before)) if both else (),
        keys_lost=tuple(sorted(keys_before - keys_after)) if both else (),
        tags_gained=tuple(sorted(tags_after - tags_before)) if both else (),
        tags_lost=tuple(sorted(tags_before - tags_after)) if both else (),
        # A removed operator is on no line of the release that removed it (that line is another entry's
        # now): the link goes to the last release that had it, at its line there.
        url=(
            previous.line_url(before.line)
            if change.kind == "removed" and before is not None and previous is not None
            else release.line_url(change.record.line)
        ),
        commit=commit,
    )


def _callers(change: Change) -> str:
    """Does code calling the operator still work: said only when the schema or a call-visible fact
    changed, not for a kernel key or a tag gained (details of severity info)."""
    if change.breaking:
        return "breaking"
    return (
        "compatible" if change.kind == "renamed" or any(d.severity != "info" for d in change.details) else ""
    )


def _backend_keys(rec: OpRecord | None) -> tuple[str, ...]:
    if rec is None:
        return ()
    return tuple(k for k in rec.facets.dispatch if k not in COMPOSITE_KEYS)


def _events(
    snapshots: Sequence[Snapshot], releases: Sequence[SiteRelease], commits: Commits | None
) -> dict[str, list[Event]]:
    by_base: dict[str, list[Event]] = defaultdict(list)
    for i in range(1, len(snapshots)):
        drift = compute_drift(snapshots[i - 1], snapshots[i])
        changes = (*drift.added, *drift.removed, *drift.renamed, *drift.changed)
        found = commits.attribute(changes, i) if commits is not None else {}
        for change in changes:
            event = _event(change, releases[i], found.get(change.fingerprint), releases[i - 1])
            by_base[change.record.base].append(event)
            before = change.before
            if change.kind == "renamed" and before is not None and before.base != change.record.base:
                by_base[before.base].append(event)
    return by_base


def _cells(coverages: Sequence[tuple[BackendColumn, Coverage]]) -> dict[str, tuple[Cell, ...]]:
    cells: dict[str, list[Cell]] = defaultdict(list)
    for spec, cov in coverages:
        for op in cov.ops:
            # An export backend's training-only op is neither served nor needed (an inference graph
            # never holds it), nor is one ExecuTorch's verifier refuses: not covered, and not counted
            # in its totals (as `opdrift coverage`).
            cells[op.name].append(
                Cell(spec.name, op.covered and op.rule not in APART, op.rule, op.via, cov.profile)
            )
    return {name: tuple(found) for name, found in cells.items()}


def _overload(
    rec: OpRecord, release: SiteRelease, needs: ProfileNeeds, cells: Mapping[str, tuple[Cell, ...]]
) -> Overload:
    return Overload(
        name=rec.name,
        overload=rec.overload,
        schema=rec.schema,
        kind=rec.kind,
        line=rec.line,
        url=release.line_url(rec.line),
        facets=rec.facets,
        profiles=tuple(p for p in PROFILES if p in needs(rec)),
        coverage=cells.get(rec.name, ()),
    )


def build_site(
    snapshots: Sequence[Snapshot],
    coverages: Sequence[tuple[BackendColumn, Coverage]],
    points: Sequence[Point] | None = None,
) -> Site:
    """The whole site's data. SNAPSHOTS are oldest first; COVERAGES are of the last one; POINTS, with
    --history, are the per-commit walk over the SOURCEs' range."""
    releases = tuple(release_of(s) for s in snapshots)
    commits = Commits(points, [s.meta for s in snapshots]) if points is not None else None
    events = _events(snapshots, releases, commits)
    touched_by = commits.by_base() if commits is not None else {}
    cells = _cells(coverages)
    backends = tuple(spec for spec, _ in coverages)
    # The newest snapshot that has each base operator is the one its page describes.
    newest: dict[str, int] = {}
    first: dict[str, int] = {}
    records: list[dict[str, list[OpRecord]]] = []
    for i, snap in enumerate(snapshots):
        grouped: dict[str, list[OpRecord]] = defaultdict(list)
        for rec in snap.operators.values():
            grouped[rec.base].append(rec)
        records.append(grouped)
        for base in grouped:
            first.setdefault(base, i)
            newest[base] = i
    needs = [ProfileNeeds(s.operators, version=s.meta.torch_version) for s in snapshots]
    last = len(snapshots) - 1
    # The table of the last SOURCE's release (or the nearest one's) speaks for the operators in it.
    choice = model_choice(snapshots[-1].meta.torch_version)
    ops: list[OpPage] = []
    for base in sorted(newest):
        i = newest[base]
        snap, release = snapshots[i], releases[i]
        decision = snap.decisions[base]
        recs = sorted(records[i][base], key=lambda r: r.name)
        on_now = i == last
        overloads = tuple(_overload(r, release, needs[i], cells if on_now else {}) for r in recs)
        summary = tuple(
            BackendSummary(
                spec.name,
                sum(1 for o in overloads for c in o.coverage if c.backend == spec.name and c.covered),
                len(overloads)
                - sum(1 for o in overloads for c in o.coverage if c.backend == spec.name and c.rule in APART),
            )
            for spec in backends
            if on_now
        )
        ops.append(
            OpPage(
                name=base,
                file=file_name(base),
                bucket=decision.bucket,
                rule=decision.rule,
                reason=decision.reason,
                first_release=releases[first[base]].label,
                last_release=release.label,
                present=on_now,
                overloads=overloads,
                events=tuple(events.get(base, ())),
                tags=tuple(sorted({t for o in overloads for t in o.facets.tags})),
                composites=tuple(sorted({o.facets.composite for o in overloads if o.facets.composite})),
                keys=tuple(
                    sorted({k for o in overloads for k in o.facets.dispatch if k not in COMPOSITE_KEYS})
                ),
                profiles=tuple(p for p in PROFILES if any(p in o.profiles for o in overloads)),
                coverage=summary,
                commits=touched_by.get(base, ()),
                models=op_models(choice.usage, (r.name for r in recs))
                if choice is not None and on_now
                else None,
            )
        )
    growth = (
        Growth(SEED_LABEL, SEED_2021, seed=True),
        *(Growth(r.label, _counts(s)) for r, s in zip(releases, snapshots, strict=True)),
    )
    return Site(
        releases,
        backends,
        tuple(ops),
        growth,
        _gaps(snapshots[-1], coverages),
        len(snapshots[-1].operators),
        history=points is not None,
        models=model_source(choice) if choice is not None else None,
        work=tuple(backend_work(spec, cov, snapshots[-1]) for spec, cov in coverages),
    )


def _counts(snapshot: Snapshot) -> tuple[tuple[str, int], ...]:
    counted = count_by_bucket(d.bucket for d in snapshot.decisions.values())
    return tuple((b, counted.get(b, 0)) for b in BUCKETS)


def _gaps(now: Snapshot, coverages: Sequence[tuple[BackendColumn, Coverage]]) -> tuple[BucketGap, ...]:
    out: list[BucketGap] = []
    for spec, cov in coverages:
        missing: dict[str, int] = defaultdict(int)
        total: dict[str, int] = defaultdict(int)
        for op in cov.ops:
            if op.rule in APART:
                continue
            total[op.bucket] += 1
            if not op.covered:
                missing[op.bucket] += 1
        out.extend(BucketGap(b, spec.name, missing[b], total[b]) for b in BUCKETS if total[b])
    return tuple(out)
