"""A manual run's drift issue: its own issue, never the week's.

A manual dispatch diffs an arbitrary PyTorch ref against an arbitrary stored snapshot; posted into the
week's issue, that drift replaced the week's report. It gets an issue of its own instead, found again by
its own marker (``<!-- opdrift:manual run=KEY -->``, KEY naming the ref and the two sides), so that a
re-run of the same dispatch edits that issue rather than opening a second one. The weekly lookup
(`opdrift.publish.weekly_issue`) matches only ``opdrift:weekly window=``, so it can never take a manual
issue for the week's or the previous week's, and this module never edits an issue without its own marker (`opdrift.publish.upsert`'s rule).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from opdrift.publish.github import Outcome, RepoClient, check_size, with_marker
from opdrift.publish.upsert import IssueIn, Tries, Wanted, find_issue, upsert
from opdrift.publish.weekly_issue import MAX_SCANNED

_UNSAFE = re.compile(r"[^0-9A-Za-z._-]+")
_MAX_KEY = 120


def manual_marker(*parts: str) -> str:
    """The hidden marker of one manual run's issue: the ref and the two sides, in the characters a
    marker allows (``release/2.16`` → ``release-2.16``), then a digest of them as given, so two refs
    that read alike there (``release/2.16``, ``release-2.16``) or share a long prefix never share an
    issue."""
    readable = "_".join(_UNSAFE.sub("-", p).strip("-") or "-" for p in parts)[: _MAX_KEY - 13]
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
    return f"<!-- opdrift:manual run={readable}-{digest} -->"


def publish_manual_issue(
    client: RepoClient | None,
    *,
    title: str,
    body: str,
    marker: str,
    labels: Sequence[str] = (),
    dry_run: bool,
) -> Outcome:
    """Open the manual run's issue, or edit the open one with the same marker (a re-run)."""
    text = with_marker(body, marker)
    check_size(text, "the manual run's issue")
    if client is None:
        return Outcome("dry-run", None, None, f"would open the issue {title!r}", text)
    repo_name = client.repo_name
    wanted = Wanted(text, title, tuple(dict.fromkeys(labels)))
    tries = Tries()  # a create that "failed" may have landed: the retry finds it, and it is new

    def step() -> Outcome:
        # The bot's own open issue with exactly this marker; a closed one was dealt with, and a re-run
        # opens a new one.
        current = find_issue(client, marker, state="open", limit=MAX_SCANNED)
        return upsert(IssueIn(client), current, wanted, dry_run=dry_run, tries=tries)

    return client.run(
        step,
        what=f"publishing the manual run's issue in {repo_name}",
        permission="issues: write",
        not_found=f"repository {repo_name} not found (or the token cannot see it)",
    )
