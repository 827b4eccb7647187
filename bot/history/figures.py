"""What a timeline point records: its figures (`Summary`) and its drift from the previous point."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from opdrift.drift import changes as drift
from opdrift.history.timeline import PointDrift
from opdrift.model import Decision, OpRecord, Snapshot, SourceMeta
from opdrift.taxonomy.counts import count_by_bucket

# name → (record before, record after) of every operator that changed; None: absent on that side.
Changes = dict[str, tuple[OpRecord | None, OpRecord | None]]


@dataclass(frozen=True)
class Summary:
    """A point's figures, as `opdrift stats` counts them."""

    entries: int
    operators: int
    base_operators: int
    by_category: tuple[tuple[str, int], ...]


def summary_of(entries: int, operators: int, decisions: Mapping[str, Decision]) -> Summary:
    counts = count_by_bucket(d.bucket for d in decisions.values())
    return Summary(
        entries=entries,
        operators=operators,
        base_operators=len(decisions),
        by_category=tuple(sorted(counts.items())),
    )


def summarize(snap: Snapshot) -> Summary:
    """The figures of a (cold) snapshot."""
    return summary_of(snap.entries, len(snap.operators), snap.decisions)


def point_drift(base_sha: str, d: drift.Drift) -> PointDrift:
    return PointDrift(
        base=base_sha,
        added=tuple(c.name for c in d.added),
        removed=tuple(c.name for c in d.removed),
        renamed=tuple((c.old_name or "", c.name) for c in d.renamed),
        changed=tuple(c.name for c in d.changed),
        breaking=tuple(sorted(c.name for c in d.changes if c.breaking)),
        needs_kernel=tuple(sorted(c.name for c in d.changes if c.needs_kernel)),
    )


def same_record(a: OpRecord, b: OpRecord) -> bool:
    """Equal but for the line: a record that only moved is not a change."""
    return a == b or (a.line != b.line and replace(a, line=b.line) == b)


def changes_between(before: Mapping[str, OpRecord], after: Mapping[str, OpRecord]) -> Changes:
    out: Changes = {}
    for name, rec in before.items():
        new = after.get(name)
        if new is None or not same_record(rec, new):
            out[name] = (rec, new)
    for name, rec in after.items():
        if name not in before:
            out[name] = (None, rec)
    return out


def drift_of(
    changes: Changes, base: SourceMeta, head: SourceMeta, head_all: Mapping[str, OpRecord]
) -> drift.Drift:
    """`compute_drift` on the changed records only: the same changes as on the whole snapshots.

    HEAD_ALL is every record at the head; the base's are those with the changes undone. The drift
    looks a changed variant's functional sibling up in them (`opdrift.drift.needs`)."""
    b = {n: r for n, (r, _) in changes.items() if r is not None}
    h = {n: r for n, (_, r) in changes.items() if r is not None}
    base_all = dict(head_all)
    for name, (before, _) in changes.items():
        if before is None:
            base_all.pop(name, None)
        else:
            base_all[name] = before
    empty: Mapping[str, Decision] = MappingProxyType({})
    return drift.compute_drift(
        Snapshot(meta=base, entries=0, operators=MappingProxyType(b), decisions=empty),
        Snapshot(meta=head, entries=0, operators=MappingProxyType(h), decisions=empty),
        base_all=base_all,
        head_all=head_all,
    )
