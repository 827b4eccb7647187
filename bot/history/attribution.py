"""Which upstream commit introduced each change of a report: the history walk over the report's range.

The weekly issue diffs two snapshots, which says *what* changed in the week but not *who* changed it.
`opdrift.history.walk` over the same range gives, per commit that touched the operator files, the drift
from the previous good commit (`PointDrift`); a change of the report is attributed to the **first**
commit in the range whose drift names one of its operator names (added, removed, changed, or either
side of a rename).

Why the first and not the last: the report's question is "which upstream PR did it", and the PR that
introduced a new op, or first changed an existing one, is the one whose authors and reviewers a
backend maintainer wants to reach; later commits in the same week are mostly follow-ups to it. They
are not hidden: the attribution counts them (`later`), and the report says "+N later".

The walk (`walk_range`) is the only I/O here; `attribute` is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from opdrift.drift.changes import Change
from opdrift.errors import OpdriftError
from opdrift.history.timeline import Point, PointDrift, Timeline
from opdrift.model import SourceMeta
from opdrift.taxonomy.overrides import Overrides

# PyTorch's merge bot ends a subject with the PR number: "Add foo (#70012)".
_PR_SUFFIX = re.compile(r"\s*\(#([1-9][0-9]{0,9})\)\s*$")
_SLUG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")


class AttributionError(OpdriftError):
    """The range to attribute over is unknown or not in the repository."""


@dataclass(frozen=True)
class Attribution:
    """The commit that introduced a change, and how many later commits in the range touched it too."""

    sha: str
    subject: str  # without the trailing "(#NNNN)", which `pr` holds
    pr: int | None
    commit_url: str
    pr_url: str | None
    later: int = 0
    date: str = (
        ""  # the commit's, ISO 8601: which release the change ships in (opdrift.release_calendar.ships_in)
    )


def split_subject(subject: str) -> tuple[str, int | None]:
    """``"Add foo (#70012)"`` → ``("Add foo", 70012)``; a subject without the suffix has no PR."""
    m = _PR_SUFFIX.search(subject)
    if m is None:
        return subject, None
    return subject[: m.start()], int(m.group(1))


def check_slug(slug: str) -> str:
    if _SLUG.fullmatch(slug) is None:
        raise AttributionError(f"not a GitHub repository OWNER/NAME: {slug!r}")
    return slug


def commit_url(slug: str, sha: str) -> str:
    return f"https://github.com/{check_slug(slug)}/commit/{sha}"


def pull_url(slug: str, number: int) -> str:
    return f"https://github.com/{check_slug(slug)}/pull/{number}"


def touched(d: PointDrift) -> frozenset[str]:
    """Every operator name a commit's drift mentions."""
    return frozenset(
        (*d.added, *d.removed, *d.changed, *(old for old, _ in d.renamed), *(new for _, new in d.renamed))
    )


def _names(c: Change) -> frozenset[str]:
    return frozenset(n for n in (c.name, c.old_name) if n)


def _introduces(c: Change, d: PointDrift) -> bool:
    """Whether commit drift `d` made a change of `c`'s kind: the removal of a removed op, not the
    commit that only retagged it the day before."""
    if c.kind == "added":
        return c.name in d.added or any(new == c.name for _, new in d.renamed)
    if c.kind == "removed":
        return c.name in d.removed or any(old == c.name for old, _ in d.renamed)
    if c.kind == "renamed":
        return (c.old_name, c.name) in d.renamed or c.name in d.added or c.old_name in d.removed
    return c.name in d.changed


def attribute(
    changes: Iterable[Change], points: Sequence[Point], *, upstream: str = "pytorch/pytorch"
) -> dict[str, Attribution]:
    """Change fingerprint → the first point (oldest first) whose drift makes a change of its kind to
    the change's operator (its removal, its addition...), else the first that names it at all.

    Broken points and the first point of a walk (no drift) attribute nothing; a change no point names
    (e.g. when the range walked is not the report's) is left out.
    """
    check_slug(upstream)
    per_point = [(p, touched(p.drift)) for p in points if p.drift is not None and not p.broken]
    out: dict[str, Attribution] = {}
    for c in changes:
        names = _names(c)
        hits = [p for p, seen in per_point if names & seen]
        exact = [p for p in hits if p.drift is not None and _introduces(c, p.drift)]
        if exact:
            # the commit that did it, and how many later ones touched the op again
            hits = hits[hits.index(exact[0]) :]
        if not hits:
            continue
        first = hits[0]
        subject, pr = split_subject(first.subject)
        out[c.fingerprint] = Attribution(
            sha=first.sha,
            subject=subject,
            pr=pr,
            commit_url=commit_url(upstream, first.sha),
            pr_url=pull_url(upstream, pr) if pr is not None else None,
            later=len(hits) - 1,
            date=first.date,
        )
    return out


def history_range(
    base: SourceMeta, head: SourceMeta, from_rev: str | None, to_rev: str | None
) -> tuple[str, str]:
    """The revisions to walk: --from/--to when given, else the commits BASE and HEAD were read at.

    A snapshot records the commit it was taken at (as does a ``DIR@REV`` source), so the weekly
    workflow's stored snapshot and its PyTorch checkout give the week's range without flags.
    """
    start = from_rev or base.commit
    end = to_rev or head.commit
    for rev, flag, meta in ((start, "--from", base), (end, "--to", head)):
        if not rev:
            raise AttributionError(
                f"--history: {meta.path} records no commit; give {flag} REV (a revision of the history repository)"
            )
        if rev.startswith("-"):
            raise AttributionError(f"--history: bad revision {rev!r}")
    return str(start), str(end)


def walk_range(
    repo: str,
    from_rev: str,
    to_rev: str,
    *,
    overrides: Overrides | None = None,
    warn: Callable[[str], None] | None = None,
) -> Timeline:
    """Walk FROM..TO of REPO. Broken commits are recorded and skipped (a change then goes to the next
    good commit), so one unparsable commit in the week never stops the weekly issue."""
    from opdrift.history import walk as history

    options = history.WalkOptions(from_rev=from_rev, to_rev=to_rev, keep_going=True, overrides=overrides)
    try:
        return history.walk(repo, options, warn=warn)
    except OpdriftError as err:
        hint = " (a shallow clone? attribution needs the range's history, e.g. fetch-depth: 0)"
        raise AttributionError(f"--history {repo}: {err}{hint}") from err


def summary_line(attributions: Mapping[str, Attribution], changes: int, commits: int) -> str:
    """One line for stderr: how much of the report the walk could attribute."""
    return f"attributed {len(attributions)} of {changes} change(s) to {commits} commit(s)"


__all__ = [
    "Attribution",
    "AttributionError",
    "attribute",
    "commit_url",
    "history_range",
    "pull_url",
    "split_subject",
    "touched",
    "walk_range",
]


def attribute_walk(
    repo: str,
    changes: Sequence[Change],
    base: SourceMeta,
    head: SourceMeta,
    *,
    upstream: str,
    from_rev: str | None = None,
    to_rev: str | None = None,
    overrides: Overrides | None = None,
    warn: Callable[[str], None] | None = None,
    note: Callable[[str], None] | None = None,
) -> tuple[dict[str, Attribution], Timeline]:
    """Walk REPO over BASE..HEAD (or --from/--to) and attribute each change to the commit that
    introduced it; also the walk itself, for a chart of its last points.

    `note` receives the one-line summary of how much was attributed.
    """
    start, end = history_range(base, head, from_rev, to_rev)
    walked = walk_range(repo, start, end, overrides=overrides, warn=warn)
    found = attribute(changes, walked.points, upstream=upstream)
    if note is not None:
        note(summary_line(found, len(changes), len(walked.points)))
    return found, walked
