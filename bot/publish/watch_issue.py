"""`opdrift watch`'s issue: the one dashboard issue, found by its hidden marker among the bot's own open
issues, its body edited only when it changed, and the run's comment on it (opdrift.app.watch plans both).

Found and written as every post of the bot is (`opdrift.publish.upsert`): only issues the token's own
login opened (``creator=``), newest first, at most MAX_SCANNED of them, the marker on the first line,
so a person or another app quoting the marker is never taken for it. Its body carries the last run's state, which is why it is read before
anything is planned (`find_watch_issue`) and written after (`publish_watch`).

A run with nothing new sends no write at all: the body is compared byte for byte, and no comment is
planned. A landed PR that breaks a backend's build gets a comment of its own, before the news'. A run
with news comments first and writes the body after, so that a comment that fails
leaves the state that would have recorded it unwritten. A retried step (the create or the comment "failed" but landed) finds its own write: the issue
by its marker, the comment by its exact body among the issue's comments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opdrift.publish.github import Outcome, RepoClient, check_size, with_marker
from opdrift.publish.upsert import IssueIn, Tries, Wanted, find_issue, upsert
from opdrift.render.markers import WATCH_COMMENT_MARKER, WATCH_MARKER

MAX_SCANNED = 200  # the bot's own open issues looked through: its watch issue is one of a handful
DEFAULT_TITLE = "Open upstream pull requests that would affect your backend"
# The body of an issue opened to carry the first comment, until the dashboard replaces it.
PENDING = "The dashboard of open upstream pull requests is being written."


@dataclass(frozen=True)
class FoundIssue:
    number: int
    body: str
    url: str


def _find(client: RepoClient) -> Any | None:
    return find_issue(client, WATCH_MARKER, state="open", limit=MAX_SCANNED)


def find_watch_issue(client: RepoClient | None) -> FoundIssue | None:
    """The dashboard issue with its body, or None (no client: a dry run without a token reads nothing)."""
    if client is None:
        return None

    def step() -> FoundIssue | None:
        issue = _find(client)
        return None if issue is None else FoundIssue(issue.number, issue.body or "", issue.html_url)

    return client.run(
        step,
        what=f"looking for the watch issue in {client.repo_name}",
        permission="issues: read",
        not_found=f"repository {client.repo_name} not found (or the token cannot see it)",
    )


def publish_watch(
    client: RepoClient | None,
    *,
    body: str,
    comments: Sequence[str],
    found: FoundIssue | None,
    title: str = DEFAULT_TITLE,
    dry_run: bool,
) -> tuple[Outcome, tuple[Outcome, ...]]:
    """Post COMMENTS ('' ones skipped: a landed break's own comments, then the run's news) on the
    dashboard, in order, then write the dashboard (create it, or edit its body when it changed): the
    outcome of the body and of each comment posted."""
    text = with_marker(body, WATCH_MARKER)
    check_size(text, "the watch issue")
    notes = [with_marker(c, WATCH_COMMENT_MARKER) for c in comments if c]
    for note in notes:
        check_size(note, "the watch comment")
    if client is None or dry_run:
        where = f"issue #{found.number}" if found else "a new issue"
        if found is not None and found.body == text:
            issue = Outcome("unchanged", found.url, found.number, f"issue #{found.number} is up to date")
        else:
            issue = Outcome("dry-run", found.url if found else None, found.number if found else None,
                            f"would {'update' if found else 'open'} {where}", text)  # fmt: skip
        return issue, tuple(Outcome("dry-run", None, None, f"would comment on {where}", n) for n in notes)
    if found is not None and found.body == text and not notes:
        # What was read before planning is what would be written: nothing to send, nothing to re-read.
        return Outcome("unchanged", found.url, found.number, f"issue #{found.number} is up to date"), ()
    repo_name = client.repo_name
    tries = Tries()  # what the opening step and earlier attempts wrote
    posted: list[Outcome] = []
    if notes:
        # The comment before the body: the body's hidden state records the news as told, so a comment
        # that fails must leave the body as it was, and the next run tells it again (a duplicate
        # warning is better than a lost one). With no issue yet, one is opened with a body that
        # holds no state: a failed comment then leaves a cold start, which tells everything again.
        def open_issue() -> int:
            current = _find(client)
            if current is None:
                tries.created = True
                current = client.repo.create_issue(title=title, body=with_marker(PENDING, WATCH_MARKER))
            return int(current.number)

        number = client.run(
            open_issue,
            what=f"opening the watch issue in {repo_name}",
            permission="issues: write",
            not_found=f"repository {repo_name} not found (or the token cannot see it)",
        )
        for note in notes:
            posted.append(_comment(client, number, note))

    # The title only when opening: once set, it is the maintainers' to change.
    wanted = Wanted(text, title, retitle=False)

    def write_issue() -> Outcome:
        return upsert(IssueIn(client), _find(client), wanted, dry_run=False, tries=tries)

    issue = client.run(
        write_issue,
        what=f"publishing the watch issue in {repo_name}",
        permission="issues: write",
        not_found=f"repository {repo_name} not found (or the token cannot see it)",
    )
    return issue, tuple(posted)


def _comment(client: RepoClient, number: int, note: str) -> Outcome:
    """NOTE posted on issue NUMBER, once: a retried post first looks for its own exact body."""
    tried = False

    def write_comment() -> Outcome:
        nonlocal tried
        target = client.repo.get_issue(number)
        if tried:  # a comment that "failed" may have landed: never post it twice
            for old in target.get_comments():
                if old.body == note and client.is_mine(old):
                    return Outcome("created", old.html_url, number, f"commented on issue #{number}", note)
        tried = True
        made = target.create_comment(note)
        return Outcome("created", made.html_url, number, f"commented on issue #{number}", note)

    return client.run(
        write_comment,
        what=f"commenting on the watch issue #{number} of {client.repo_name}",
        permission="issues: write",
        not_found=f"issue #{number} of {client.repo_name} not found",
    )
