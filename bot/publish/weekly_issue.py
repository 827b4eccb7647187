"""The weekly drift issue: one issue per window (``2026-W48``), found by its hidden marker, linking the last
(`opdrift.publish.upsert`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opdrift.errors import PublishError
from opdrift.publish.github import Outcome, RepoClient, check_size, with_marker
from opdrift.publish.upsert import IssueIn, Tries, Wanted, find_comment, is_ours, own_issues, upsert

_WEEKLY_MARKER_RE = re.compile(r"<!-- opdrift:weekly window=([^\s>]+) -->")
_WINDOW_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]*")


def weekly_marker(window_key: str) -> str:
    """The hidden marker of the weekly issue for one window, e.g. ``2026-W48``."""
    if not _WINDOW_RE.fullmatch(window_key):
        raise PublishError(f"bad weekly window {window_key!r}: use letters, digits, '.', '_' or '-'")
    return f"<!-- opdrift:weekly window={window_key} -->"


# The most of the bot's own issues one lookup reads (newest first): the current window's issue is
# among the newest, and the previous window's is the first older one, so a bot that opened more than
# this many issues since then gets no link rather than a scan of its whole history.
MAX_SCANNED = 1000


@dataclass(frozen=True)
class _Found:
    current: Any | None
    previous: Any | None  # the bot's issue of the latest earlier window


def _find_weekly(client: RepoClient, window_key: str) -> _Found:
    """The bot's issues (`opdrift.publish.upsert.own_issues`), newest first, until the previous window's:
    the current window's issue by the marker rule (`is_ours`), the previous by its marker's window."""
    current = None
    previous: tuple[str, Any] | None = None
    marker = weekly_marker(window_key)
    for issue in own_issues(client, state="all", limit=MAX_SCANNED):
        # The marker and the author first: reading `pull_request` of a plain issue makes PyGithub
        # fetch it again (the list leaves the field out).
        match = _WEEKLY_MARKER_RE.match(issue.body or "")
        if match is None or not is_ours(client, issue, match.group(0)) or issue.pull_request is not None:
            continue
        window = match.group(1)
        if match.group(0) == marker:
            if current is None or issue.number < current.number:
                current = issue
        elif window < window_key:
            # Newest first: the first earlier window is the latest one; every issue of this window
            # was opened after it, so none is left below.
            previous = (window, issue)
            break
    return _Found(current, None if previous is None else previous[1])


# The issue's body, rendered for the previous window's issue number (None: no link), which only the
# lookup inside the publishing step knows.
BodyFor = Callable[[int | None], str]


def weekly_body(body_for: BodyFor, marker: str, previous: Any | None) -> str:
    return with_marker(body_for(None if previous is None else previous.number), marker)


def publish_weekly_issue(
    client: RepoClient | None,
    *,
    title: str,
    body: BodyFor,
    window_key: str,
    labels: Sequence[str] = (),
    link_previous: bool = True,
    close_previous: bool = False,
    dry_run: bool,
) -> Outcome:
    """Open or update the drift issue of one window (e.g. ``2026-W48``), found by its hidden marker.

    `body` renders the issue given the previous window's issue number, which it links (or None).
    Re-running for the same window edits the same issue. A new window's issue links the previous
    window's issue, and with `close_previous` closes it. Configured labels are created when missing
    and added (never removed: people may have added their own).
    """
    marker = weekly_marker(window_key)
    render_for: BodyFor = functools.cache(body)  # a retried step renders each link once
    check_size(weekly_body(render_for, marker, None), "the weekly issue")
    if client is None:
        text = weekly_body(render_for, marker, None)
        return Outcome("dry-run", None, None, f"would open or update the issue {title!r}", text)
    repo_name = client.repo_name
    wanted_labels = tuple(dict.fromkeys(labels))
    # A create that "failed" may have landed, and a step that created the issue may fail later
    # (closing last week's): the retry then finds this call's own issue, which is new, not up to date.
    tries = Tries()

    def step() -> Outcome:
        found = _find_weekly(client, window_key)
        previous = found.previous if link_previous else None
        text = weekly_body(render_for, marker, previous)
        check_size(text, "the weekly issue")
        wanted = Wanted(text, title, wanted_labels)
        outcome = upsert(IssueIn(client), found.current, wanted, dry_run=dry_run, tries=tries)
        closing = found.previous if close_previous and found.previous is not None else None
        if closing is not None and closing.state == "open" and not dry_run:
            closing.edit(state="closed", state_reason="completed")
        return outcome

    return client.run(
        step,
        what=f"publishing the weekly issue in {repo_name}",
        permission="issues: write",
        not_found=f"repository {repo_name} not found (or the token cannot see it)",
    )


# --- a quiet week ----------------------------------------------------------------------------------

_QUIET_MARKER = "<!-- opdrift:weekly quiet={} -->"


def publish_quiet_week(client: RepoClient | None, *, window_key: str, text: str, dry_run: bool) -> Outcome:
    """A week with no operator change (`weekly.quiet: comment`): one comment on the bot's open issue of
    the latest earlier week, found by a hidden per-week marker, so a re-run adds none. No issue is
    opened; with none open, nothing is posted."""
    marker = _QUIET_MARKER.format(weekly_marker(window_key).split("window=")[1].removesuffix(" -->"))
    body = with_marker(text, marker)
    check_size(body, "the quiet week's comment")
    if client is None:
        return Outcome(
            "dry-run", None, None, "would comment on the open drift issue that nothing changed", body
        )

    def step() -> Outcome:
        found = _find_weekly(client, window_key)
        issue = found.previous
        if issue is None or issue.state != "open":
            return Outcome(
                "skipped", None, None, "no operator changes this week; no open drift issue to comment on"
            )
        if find_comment(client, issue, marker) is not None:
            return Outcome(
                "unchanged", issue.html_url, issue.number, f"issue #{issue.number} already says so"
            )
        if dry_run:
            return Outcome(
                "dry-run", issue.html_url, issue.number, f"would comment on issue #{issue.number}", body
            )
        issue.create_comment(body)
        return Outcome("updated", issue.html_url, issue.number, f"commented on issue #{issue.number}", body)

    repo_name = client.repo_name
    return client.run(
        step,
        what=f"commenting on the weekly issue in {repo_name}",
        permission="issues: write",
        not_found=f"repository {repo_name} not found (or the token cannot see it)",
    )
