"""What the watch's edge (`opdrift.app.watch`) hands its reconciliation (`opdrift.app.watch_reconcile`): the
listing as the scan gave it (`Scanned`), and what reading and judging the PRs that needed it found
(`Judgements`: a `Verdict` per PR, the retry list's PRs fetched again). Plain records: a test builds
them by hand, with no upstream and no judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from opdrift.model import PullRef
from opdrift.render.context import BackendGap


class Scanned(Protocol):
    """What one listing of the upstream's pull requests gave (`opdrift.github.pulls.Scan`)."""

    @property
    def pulls(self) -> tuple[PullRef, ...]: ...  # updated since the watermark, any state, newest first

    @property
    def watermark(self) -> str | None: ...  # what to pass as `since` next run

    @property
    def complete(self) -> bool: ...  # False: the request budget stopped the scan

    @property
    def failed(self) -> tuple[tuple[PullRef, str], ...]: ...  # PRs it could not examine, and why

    @property
    def listed_open(self) -> int: ...  # open PRs listed

    @property
    def listed_whole(self) -> bool: ...  # the listing itself finished (else: at least listed_open)

    @property
    def examined_open(self) -> int: ...  # of them, examined

    @property
    def paid(self) -> int: ...  # compares this run paid for: the pace of the runs to come


# What the edge found out about one open PR at the head it was examined at (`needs_judging`).
@dataclass(frozen=True)
class Judged:
    impacts: tuple[BackendGap, ...]  # () : it affects no subscribed backend


@dataclass(frozen=True)
class Untouched:
    """It changes none of the operator files (`opdrift.model.OPERATOR_PATHS`)."""


@dataclass(frozen=True)
class Deferred:
    """The run's judgement budget was spent before it (a PR the edge never got to counts as this)."""


@dataclass(frozen=True)
class TooLarge:
    limit: int  # an operator file at its head is over this many bytes: not judged


@dataclass(frozen=True)
class Unparsable:
    reason: str  # its operator files do not parse: work in progress, asks nothing yet


@dataclass(frozen=True)
class Unreadable:
    reason: str  # its compare, files or a read's deadline failed: tried again next run


Verdict = Judged | Untouched | Deferred | TooLarge | Unparsable | Unreadable


@dataclass(frozen=True)
class Judgements:
    """What the edge found out: a verdict per PR number it examined; the retry list's PRs it fetched
    again, as they are now (in the order fetched), and those it could not fetch, with why. A retry
    entry in neither is kept as it was (the budget was spent before it)."""

    verdicts: Mapping[int, Verdict] = field(default_factory=dict)
    fetched: tuple[PullRef, ...] = ()
    unfetched: Mapping[int, str] = field(default_factory=dict)

    @property
    def judged(self) -> int:
        return sum(isinstance(v, Judged) for v in self.verdicts.values())
