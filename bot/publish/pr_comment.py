"""The sticky PR comment: one comment per pull request, found by its hidden marker and edited in place
(`opdrift.publish.upsert`)."""

from __future__ import annotations

from opdrift.errors import PublishError
from opdrift.publish.github import Outcome, RepoClient, check_size, with_marker
from opdrift.publish.upsert import CommentOn, Tries, Wanted, find_comment, upsert

PR_MARKER = "<!-- opdrift:pr-comment -->"


def publish_pr_comment(
    client: RepoClient | None,
    pr: int,
    body: str,
    marker: str = PR_MARKER,
    *,
    has_drift: bool,
    clean_body: str,
    dry_run: bool,
    head_sha: str | None = None,
    quiet_reason: str = "",
) -> Outcome:
    """Create or edit the one sticky comment on PR `pr`.

    With drift: edit the bot's earlier comment in place (or create one). Without drift: post nothing,
    but flip an earlier comment to `clean_body`. With `client` None (no token) or `dry_run`, nothing is
    written; with a client a dry run still reads, to say what it would do.

    With `head_sha` (the commit the report was computed for), nothing is written unless the PR's head
    is still that commit. Runs for two quick pushes can finish in either order, and the posters are
    serialised but not ordered: without this check the report of the older push could overwrite the
    newer one. The check runs inside the retried step, right before the write.

    `quiet_reason`: why a report with changes posts nothing new (said in the outcome); an earlier
    comment is still flipped to `clean_body`.
    """
    text = with_marker(body if has_drift else clean_body, marker)
    check_size(text, "the PR comment")
    if client is None:
        if has_drift:
            return Outcome("dry-run", None, pr, f"would post or update the comment on PR #{pr}", text)
        why = quiet_reason or "no drift"
        return Outcome(
            "dry-run", None, pr, f"{why}: would post nothing, only flip an earlier comment on PR #{pr}", text
        )
    repo_name = client.repo_name
    tries = Tries()  # a create or an edit that "failed" may have landed: the retry finds it done

    def step() -> Outcome:
        client.own_login()  # whose comment is the bot's must be known before anything is read or written
        issue = client.repo.get_issue(pr)
        if issue.pull_request is None:
            raise PublishError(f"#{pr} in {repo_name} is an issue, not a pull request")
        if head_sha:
            current = client.repo.get_pull(pr).head.sha
            if current != head_sha:
                return Outcome(
                    "skipped",
                    None,
                    pr,
                    f"PR #{pr} has moved on to {current[:12]}; this report is for {head_sha[:12]}, "
                    "so it is not posted (the run for the new head posts its own)",
                )
        mine = find_comment(client, issue, marker)
        if mine is None and not has_drift:
            why = quiet_reason or "no drift"
            posted = "would post" if dry_run else "posted"
            return Outcome("skipped", None, pr, f"{why} and no earlier comment on PR #{pr}: {posted} nothing")
        return upsert(CommentOn(issue, pr), mine, Wanted(text), dry_run=dry_run, tries=tries)

    return client.run(
        step,
        what=f"posting the comment on PR #{pr} of {repo_name}",
        # GET issues/N (the PR as an issue) needs `issues: read`, even on a pull request: without it a
        # private repository answers 403. GitHub's X-Accepted-GitHub-Permissions, when sent, wins.
        permission="issues: read` and `pull-requests: write",
        not_found=f"repository {repo_name} or PR {pr} not found (or the token cannot see it)",
    )
