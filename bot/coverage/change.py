"""Two coverages of one backend compared: what BASE → HEAD changed for it (the gap opened and closed,
the schema alerts that are news)."""

from __future__ import annotations

from dataclasses import dataclass

from opdrift.coverage.alerts import SchemaAlert, alert_key
from opdrift.coverage.check import Coverage


@dataclass(frozen=True)
class CoverageChange:
    """What changed for a backend between BASE and HEAD."""

    new_uncovered: tuple[str, ...]  # needs a kernel at HEAD, but existed-and-covered or did not exist at BASE
    newly_covered: tuple[str, ...]
    gap_before: int
    gap_after: int
    # HEAD's schema alerts that BASE did not raise the same way (`alert_key`): what is news
    new_alerts: tuple[SchemaAlert, ...] = ()
    old_alerts: int = 0  # HEAD's alerts that BASE already raised


def compare_coverage(base: Coverage, head: Coverage) -> CoverageChange:
    base_gap = {o.name for o in base.uncovered}
    head_gap = {o.name for o in head.uncovered}
    # Closed means the backend now covers it; an op removed upstream left the gap by itself.
    at_head = {o.name for o in head.ops}
    seen = {alert_key(a) for a in base.alerts}
    new_alerts = tuple(a for a in head.alerts if alert_key(a) not in seen)
    return CoverageChange(
        new_uncovered=tuple(sorted(head_gap - base_gap)),
        newly_covered=tuple(sorted((base_gap - head_gap) & at_head)),
        gap_before=len(base_gap),
        gap_after=len(head_gap),
        new_alerts=new_alerts,
        old_alerts=len(head.alerts) - len(new_alerts),
    )
