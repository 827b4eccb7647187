"""The watch dashboard over real HTTP (tests/fake_github.py): one issue found by its marker among the
bot's own, a quiet run that sends no write, one comment per run with news, and a marker quoted by
someone else never taken for the bot's issue."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_github import FakeGitHub
from watch_upstream import Run, Upstream

from opdrift.config.file import BotConfig
from opdrift.errors import PublishError
from opdrift.github.retry import RetryPolicy
from opdrift.publish.github import RepoClient, Settings
from opdrift.publish.watch_issue import find_watch_issue, publish_watch

TOKEN = "ghs_watchT0ken1234567890abcdefghijkl"
REPO = "downstream/backend"


@pytest.fixture
def client(github_server: FakeGitHub) -> RepoClient:
    github_server.add_token(TOKEN, "opdrift-bot")
    github_server.add_repo(REPO)
    settings = Settings(
        repo=REPO,
        token=TOKEN,
        api_url=github_server.api_url,
        retry=RetryPolicy(total_seconds=5.0, first_delay=0.01),
        seconds_between_writes=None,
    )
    return RepoClient(settings)


def _publish(run: Run, client: RepoClient) -> tuple[str, str | None]:
    found = find_watch_issue(client)
    run.body = found.body if found else None
    plan = run()
    issue, comments = publish_watch(
        client, body=plan.body, comments=plan.comments, found=found, dry_run=False
    )
    return issue.action, comments[-1].action if comments else None


@pytest.mark.slow
def test_one_issue_a_quiet_run_writes_nothing_and_news_gets_one_comment(
    upstream: tuple[Upstream, dict[str, str]],
    cfg: BotConfig,
    client: RepoClient,
    github_server: FakeGitHub,
    tmp_path: Path,
) -> None:
    up, heads = upstream
    # someone quotes the marker in an issue of their own: never the bot's dashboard
    github_server.add_issue(
        REPO, title="quoting", body="<!-- opdrift:watch -->\nnot the bot", author="someone"
    )
    run = Run(up, cfg)
    run.pulls.add(1, heads["a"])
    run.pulls.add(2, heads["b"])
    run.pulls.add(3, heads["c"])
    assert _publish(run, client) == ("created", "created")
    mine = [i for i in github_server.issues(REPO) if i["user"]["login"] == "opdrift-bot"]
    assert len(mine) == 1
    number = mine[0]["number"]
    (comment,) = github_server.comments(REPO, number)
    assert comment["body"].count("@xla-team") == 1

    writes = len(github_server.writes())
    assert _publish(run, client) == ("unchanged", None)
    assert len(github_server.writes()) == writes  # no PATCH, no POST

    run.pulls.update(2, head_sha=heads["c"])  # the break reverted
    run.pulls.add(4, heads["b"], title="the break again, elsewhere")
    assert _publish(run, client) == ("updated", "created")
    comments = github_server.comments(REPO, number)
    assert len(comments) == 2 and "pull/4" in comments[1]["body"] and "pull/2" not in comments[1]["body"]
    (dashboard,) = [i for i in github_server.issues(REPO) if i["user"]["login"] == "opdrift-bot"]
    assert "pull/4" in dashboard["body"] and "pull/2)" not in dashboard["body"]


def test_a_dry_run_reads_and_writes_nothing(
    upstream: tuple[Upstream, dict[str, str]],
    cfg: BotConfig,
    client: RepoClient,
    github_server: FakeGitHub,
) -> None:
    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(2, heads["b"])
    found = find_watch_issue(client)
    plan = run()
    issue, (comment,) = publish_watch(
        client, body=plan.body, comments=plan.comments, found=found, dry_run=True
    )
    assert issue.action == "dry-run" and comment.action == "dry-run"
    assert "mean.dim" in issue.text and "@xla-team" in comment.text
    assert github_server.writes() == []


@pytest.mark.slow
def test_a_comment_that_fails_leaves_the_news_to_tell_next_run(
    upstream: tuple[Upstream, dict[str, str]],
    cfg: BotConfig,
    client: RepoClient,
    github_server: FakeGitHub,
) -> None:
    """The body records the news as told: written before a comment that fails, nobody would ever be
    told. The comment goes first; a failed one leaves the body as it was, and the next run tells."""
    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(2, heads["b"])
    github_server.fail("POST", r"/repos/.*/issues/\d+/comments$", 422, message="Validation Failed")
    with pytest.raises(PublishError):
        _publish(run, client)
    # the first run opened the issue (a body with no state yet): its news is told now
    assert _publish(run, client) == ("updated", "created")
    (issue,) = [i for i in github_server.issues(REPO) if i["user"]["login"] == "opdrift-bot"]
    assert len(github_server.comments(REPO, issue["number"])) == 1
    before = issue["body"]
    run.pulls.add(4, heads["a"])
    github_server.fail("POST", r"/repos/.*/issues/\d+/comments$", 422, message="Validation Failed")
    with pytest.raises(PublishError):
        _publish(run, client)
    (issue,) = [i for i in github_server.issues(REPO) if i["user"]["login"] == "opdrift-bot"]
    assert issue["body"] == before  # not written: #4 is still news
    assert _publish(run, client) == ("updated", "created")
    (*_, last) = github_server.comments(REPO, issue["number"])
    assert "pull/4" in last["body"] and "pull/2" not in last["body"]
