"""With ``--history``: the upstream commit (and PR) behind each change of an operator's life, and every
commit that touched it, from the per-commit walk (pure; the walk itself runs in the CLI).

A release-to-release change is attributed among the commits between those two releases only, so an
operator edited in several releases gets the right commit each time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from opdrift.drift.changes import Change
from opdrift.history.attribution import Attribution, attribute, commit_url, pull_url, split_subject, touched
from opdrift.history.timeline import Point
from opdrift.model import SourceMeta

UPSTREAM = "pytorch/pytorch"


@dataclass(frozen=True)
class CommitRef:
    """One commit that touched an operator: what the page lists and links."""

    sha: str
    subject: str
    date: str
    url: str
    pr: int | None
    pr_url: str | None
    tag: str | None


def _anchor(points: Sequence[Point], meta: SourceMeta) -> int | None:
    for i, p in enumerate(points):
        if (meta.commit and p.sha == meta.commit) or (
            meta.torch_version and p.tag == f"v{meta.torch_version}"
        ):
            return i
    return None


class Commits:
    """The walk's points, cut at the SOURCEs they hold, ready to attribute changes."""

    def __init__(
        self, points: Sequence[Point], metas: Sequence[SourceMeta], upstream: str = UPSTREAM
    ) -> None:
        self._points = tuple(points)
        self._anchors = [_anchor(self._points, m) for m in metas]
        self._upstream = upstream

    def window(self, i: int) -> tuple[Point, ...]:
        """The points after SOURCE i-1 up to SOURCE i; all of them when either is not in the walk."""
        start, end = self._anchors[i - 1], self._anchors[i]
        if start is None and i == 1:
            start = -1  # a walk from the first SOURCE's commit starts after it
        if start is None or end is None or end <= start:
            return self._points
        return self._points[start + 1 : end + 1]

    def attribute(self, changes: Sequence[Change], i: int) -> dict[str, Attribution]:
        return attribute(changes, self.window(i), upstream=self._upstream)

    def by_base(self) -> dict[str, tuple[CommitRef, ...]]:
        """Base operator → every commit whose drift names one of its operators, oldest first."""
        out: dict[str, list[CommitRef]] = defaultdict(list)
        for p in self._points:
            if p.drift is None or p.broken:
                continue
            subject, pr = split_subject(p.subject)
            ref = CommitRef(
                sha=p.sha,
                subject=subject,
                date=p.date,
                url=commit_url(self._upstream, p.sha),
                pr=pr,
                pr_url=pull_url(self._upstream, pr) if pr is not None else None,
                tag=p.tag,
            )
            for base in sorted({name.split(".", 1)[0] for name in touched(p.drift)}):
                out[base].append(ref)
        return {base: tuple(refs) for base, refs in out.items()}
