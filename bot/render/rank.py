"""The order and grouping of the changes a report leads with: signal first.

Ranking: core-tagged operators first (public before private), then public ones, then private
(``_name``); within each, in the taxonomy's bucket order; then changes that break kernels before
those that break only callers before the rest. Grouping: changes of one kind that belong to one family (the Dimname overloads a
release removes together, a new ``_foreach_*`` family, many overloads of one base) become one item
with a count, shown at the place of its highest-ranked member. Both rules are data (`FAMILY_RULES`).
A coverage report's work items have their own order (`work_item_rank_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opdrift.drift.changes import Change
from opdrift.model import OpRecord
from opdrift.taxonomy.buckets import BUCKETS

if TYPE_CHECKING:  # the drift report ranks with this module too, and needs no coverage code loaded
    from opdrift.coverage.workitems import WorkItem

_BUCKET_RANK = {b: i for i, b in enumerate(BUCKETS)}
MIN_FAMILY = 3  # members before changes are shown as one family line


def tier(rec: OpRecord) -> int:
    """0 for a public core-tagged operator, 1 for a private (``_name``) core one, 2 for another public
    one, 3 for another private one."""
    private = rec.base.startswith("_")
    return (0 if "core" in rec.facets.tags else 2) + private


def record_rank_key(rec: OpRecord) -> tuple[int, int, str]:
    """Core first, then public, then private (`tier`); then in bucket order; then by name."""
    return (tier(rec), _BUCKET_RANK.get(rec.bucket, len(_BUCKET_RANK)), rec.name)


def work_item_rank_key(item: WorkItem) -> tuple[int, int, int, int, int, int, int, str]:
    """A coverage's work items: what makes the most real models fail first (`WorkItem.models`: an
    eager backend's op that fails on the device breaks each model that dispatches it); then what the
    most models use; the items no model reaches keep the order below. Then what fails on the device
    today before what runs on a CPU fallback;
    then core first; then the ops most other ops decompose into (a kernel for `mul` serves the 131
    base operators whose Python decomposition calls it, at 2.15.0); then public before private; then
    in bucket order; then by name."""
    models = item.models
    return (
        -(models.breaks if models is not None else 0),
        -(models.used_by if models is not None else 0),
        0 if item.today != "cpu_fallback" else 1,
        0 if item.core else 1,
        -item.in_degree,
        1 if item.private else 0,
        _BUCKET_RANK.get(item.bucket, len(_BUCKET_RANK)),
        item.name,
    )


def _severity(c: Change) -> int:
    if c.kernel == "breaking":
        return 0
    return 1 if c.breaking else 2


def rank_key(c: Change) -> tuple[int, int, int, str]:
    return (tier(c.record), _BUCKET_RANK.get(c.category, len(_BUCKET_RANK)), _severity(c), c.name)


def ranked(changes: Iterable[Change]) -> tuple[Change, ...]:
    return tuple(sorted(changes, key=rank_key))


def _schema(c: Change) -> str:
    return c.record.schema


# (rule id, how a family line names its members, the family a change belongs to or None). The label is
# trusted text; `{key}` in it stands for the family's key, which comes from the source and is quoted.
FAMILY_RULES: tuple[tuple[str, str, Callable[[Change], str | None]], ...] = (
    ("family.dimname", "Dimname overloads", lambda c: "" if "Dimname" in _schema(c) else None),
    (
        "family.foreach",
        "`_foreach_*` operators",
        lambda c: "" if c.record.base.startswith("_foreach_") else None,
    ),
    ("family.base", "overloads of `{key}`", lambda c: c.record.base),
)


@dataclass(frozen=True)
class Item:
    """One line of a lead section: a single change (`label` empty) or a family of them."""

    changes: tuple[Change, ...]
    label: str = ""  # a FAMILY_RULES label, `{key}` not yet filled in
    rule: str = ""
    key: str = ""

    @property
    def change(self) -> Change:
        return self.changes[0]

    @property
    def family(self) -> bool:
        return bool(self.label)


def _family_of(c: Change) -> tuple[str, str, str] | None:
    for rule, label, test in FAMILY_RULES:
        key = test(c)
        if key is not None:
            return rule, label, key
    return None


def grouped(changes: Sequence[Change]) -> tuple[Item, ...]:
    """CHANGES (ranked) as items: families of at least MIN_FAMILY changes of one kind become one item."""
    keyed = []
    members: dict[tuple[str, str, str], list[Change]] = {}
    for c in changes:
        family = _family_of(c)
        key = None if family is None else (c.kind, family[0], family[2])
        keyed.append((c, key, "" if family is None else family[1]))
        if key is not None:
            members.setdefault(key, []).append(c)
    out: list[Item] = []
    placed: set[tuple[str, str, str]] = set()
    for c, key, label in keyed:
        if key is None or len(members[key]) < MIN_FAMILY:
            out.append(Item((c,)))
        elif key not in placed:
            placed.add(key)
            out.append(Item(tuple(members[key]), label, key[1], key[2]))
    return tuple(out)
