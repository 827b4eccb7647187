"""The weekly drift issue: one issue per window (``2026-W48``), found by its hidden marker, linking the last."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from github.GithubException import GithubException

from bot.errors import PublishError
from bot.publish.github import Action, Outcome, RepoClient, check_size, with_marker

_WEEKLY_MARKER_RE = re.compile(r"<!-- opdrift:weekly window=([^\s>]+) -->")
_WINDOW_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]*")
LABEL_COLOR = "c5def5"


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
    """The bot's issues only (``creator=`` its login), newest first, until the previous window's.

    Never a scan of every issue: pytorch/pytorch has over 100,000, and listing them all costs more
    requests than a workflow token has in an hour. Only the bot's own posts count (a person or another
    app's bot may quote the marker), so the login must be known (`RepoClient.own_login`).
    """
    login = client.own_login()
    issues = client.repo.get_issues(state="all", sort="created", direction="desc", creator=login)
    current = None
    previous: tuple[str, Any] | None = None
    for scanned, issue in enumerate(issues, 1):
        if scanned > MAX_SCANNED:
            break
        # The marker and the author first: reading `pull_request` of a plain issue makes PyGithub
        # fetch it again (the list leaves the field out).
        match = _WEEKLY_MARKER_RE.search(issue.body or "")
        if match is None or not client.is_mine(issue) or issue.pull_request is not None:
            continue
        window = match.group(1)
        if window == window_key:
            if current is None or issue.number < current.number:
                current = issue
        elif window < window_key:
            # Newest first: the first earlier window is the latest one; every issue of this window
            # was opened after it, so none is left below.
            previous = (window, issue)
            break
    return _Found(current, None if previous is None else previous[1])


def ensure_labels(client: RepoClient, names: Sequence[str]) -> None:
    if not names:
        return
    repo = client.repo
    have = {label.name.lower() for label in repo.get_labels()}
    for name in names:
        if name.lower() in have:
            continue
        try:
            repo.create_label(name, LABEL_COLOR, "opened by opdrift")
        except GithubException as exc:
            if exc.status != 422:  # 422: a concurrent run created it meanwhile
                raise


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
    wanted_labels = list(dict.fromkeys(labels))
    # A create that "failed" may have landed, and a step that created the issue may fail later
    # (closing last week's): the retry then finds this call's own issue, which is new, not up to date.
    tried_create = tried_update = False

    def step() -> Outcome:
        nonlocal tried_create, tried_update
        found = _find_weekly(client, window_key)
        previous = found.previous if link_previous else None
        text = weekly_body(render_for, marker, previous)
        check_size(text, "the weekly issue")
        closing = found.previous if close_previous and found.previous is not None else None
        current = found.current
        if current is None:
            if dry_run:
                return Outcome("dry-run", None, None, f"would open the issue {title!r}", text)
            ensure_labels(client, wanted_labels)
            tried_create = True
            issue = client.repo.create_issue(title=title, body=text, labels=wanted_labels)
            outcome = Outcome("created", issue.html_url, issue.number, f"opened issue #{issue.number}", text)
        else:
            have = {lb.name.lower() for lb in current.labels}
            missing = [n for n in wanted_labels if n.lower() not in have]
            if current.title == title and current.body == text and not missing:
                action: Action = "created" if tried_create else "updated" if tried_update else "unchanged"
                detail = {
                    "created": f"opened issue #{current.number}",
                    "updated": f"updated issue #{current.number}",
                    "unchanged": f"issue #{current.number} is up to date",
                }[action]
                outcome = Outcome(
                    action, current.html_url, current.number, detail, "" if action == "unchanged" else text
                )
            elif dry_run:
                return Outcome(
                    "dry-run", current.html_url, current.number, f"would update issue #{current.number}", text
                )
            else:
                if current.title != title or current.body != text:
                    tried_update = True
                    current.edit(title=title, body=text)
                if missing:
                    ensure_labels(client, missing)
                    current.add_to_labels(*missing)
                outcome = Outcome(
                    "updated", current.html_url, current.number, f"updated issue #{current.number}", text
                )
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
        for comment in issue.get_comments():
            if marker in (comment.body or "") and client.is_mine(comment):
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
