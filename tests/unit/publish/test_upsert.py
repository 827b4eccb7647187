"""opdrift.publish.upsert's outcomes and its marker rule, over real HTTP against the fake GitHub."""

from __future__ import annotations

import pytest
from fake_github import FakeGitHub

from opdrift.github.retry import RetryPolicy
from opdrift.publish.github import Outcome, RepoClient, Settings
from opdrift.publish.upsert import CommentOn, IssueIn, Tries, Wanted, find_comment, find_issue, upsert

REPO = "owner/backend"
TOKEN = "ghs_upsertT0ken1234567890abcdef"
BOT = "opdrift-bot"
MARK = "<!-- opdrift:manual run=test -->"
FAST = RetryPolicy(total_seconds=4.0, first_delay=0.05, max_delay=0.2, max_attempts=6)


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    github_server.page_size = 3
    github_server.add_token(TOKEN, BOT)
    github_server.add_repo(REPO)
    return github_server


@pytest.fixture
def client(fake: FakeGitHub) -> RepoClient:
    settings = Settings(
        repo=REPO, token=TOKEN, api_url=fake.api_url, timeout=5, retry=FAST, seconds_between_writes=None
    )
    return RepoClient(settings)


def issue(client: RepoClient, wanted: Wanted, *, dry_run: bool = False) -> Outcome:
    """One publish call, retried as the client's policy allows, as the issue publishers make it."""
    tries = Tries()

    def step() -> Outcome:
        found = find_issue(client, MARK, state="open", limit=50)
        return upsert(IssueIn(client), found, wanted, dry_run=dry_run, tries=tries)

    return client.run(step, what="test", permission="issues: write", not_found="not found")


def comment(client: RepoClient, pr: int, body: str, *, dry_run: bool = False) -> Outcome:
    tries = Tries()

    def step() -> Outcome:
        on = client.repo.get_issue(pr)
        return upsert(
            CommentOn(on, pr), find_comment(client, on, MARK), Wanted(body), dry_run=dry_run, tries=tries
        )

    return client.run(step, what="test", permission="issues: write", not_found="not found")


def text(body: str) -> str:
    return f"{MARK}\n{body}"


def test_an_issue_is_opened_then_unchanged_then_updated(fake: FakeGitHub, client: RepoClient) -> None:
    first = issue(client, Wanted(text("one"), "Title"))
    assert (first.action, first.detail, first.text) == (
        "created",
        f"opened issue #{first.number}",
        text("one"),
    )
    writes = len(fake.writes())
    again = issue(client, Wanted(text("one"), "Title"))
    assert (again.action, again.detail, again.text) == (
        "unchanged",
        f"issue #{first.number} is up to date",
        "",
    )
    assert len(fake.writes()) == writes  # nothing sent when nothing changed
    edited = issue(client, Wanted(text("two"), "Title"))
    assert (edited.action, edited.number, edited.detail) == (
        "updated",
        first.number,
        f"updated issue #{first.number}",
    )
    (only,) = fake.issues(REPO)
    assert only["body"] == text("two")


def test_a_dry_run_reads_and_writes_nothing(fake: FakeGitHub, client: RepoClient) -> None:
    would = issue(client, Wanted(text("one"), "Title"), dry_run=True)
    assert (would.action, would.detail, would.number) == ("dry-run", "would open the issue 'Title'", None)
    made = issue(client, Wanted(text("one"), "Title"))
    writes = len(fake.writes())
    would = issue(client, Wanted(text("two"), "Title"), dry_run=True)
    assert (would.action, would.detail) == ("dry-run", f"would update issue #{made.number}")
    assert len(fake.writes()) == writes


def test_only_the_bots_own_post_with_the_marker_first_counts(fake: FakeGitHub, client: RepoClient) -> None:
    """A person's issue carrying the marker, the bot's issue quoting it below the first line, and the
    bot's pull request carrying it are never taken for the bot's post: a new issue is opened."""
    forged = fake.add_issue(REPO, title="Title", body=text("forged"), author="mallory")
    quoted = fake.add_issue(REPO, title="Title", body=f"see below\n{MARK}", author=BOT)
    pull = fake.add_issue(REPO, title="Title", body=text("a PR"), author=BOT, pull=True)
    made = issue(client, Wanted(text("mine"), "Title"))
    assert made.action == "created" and made.number not in (
        forged["number"],
        quoted["number"],
        pull["number"],
    )
    bodies = {i["number"]: i["body"] for i in fake.issues(REPO)}
    assert bodies[forged["number"]] == text("forged") and bodies[quoted["number"]] == f"see below\n{MARK}"


def test_of_two_matching_issues_the_oldest_is_the_one(fake: FakeGitHub, client: RepoClient) -> None:
    old = fake.add_issue(REPO, title="Title", body=text("old"), author=BOT)
    fake.add_issue(REPO, title="Title", body=text("raced"), author=BOT)
    assert issue(client, Wanted(text("new"), "Title")).number == old["number"]


def test_a_create_that_landed_before_a_5xx_is_created_once(fake: FakeGitHub, client: RepoClient) -> None:
    fake.fail("POST", rf"/repos/{REPO}/issues$", 502, after_apply=True)
    made = issue(client, Wanted(text("one"), "Title"))
    assert made.action == "created" and made.detail == f"opened issue #{made.number}"
    assert len(fake.issues(REPO)) == 1


def test_an_edit_that_landed_before_a_5xx_is_updated(fake: FakeGitHub, client: RepoClient) -> None:
    made = issue(client, Wanted(text("one"), "Title"))
    fake.fail("PATCH", rf"/repos/{REPO}/issues/{made.number}$", 502, after_apply=True)
    assert issue(client, Wanted(text("two"), "Title")).action == "updated"


def test_labels_are_added_never_removed_and_the_title_restored_unless_kept(
    fake: FakeGitHub, client: RepoClient
) -> None:
    old = fake.add_issue(REPO, title="Renamed", body=text("one"), author=BOT, labels=("triaged",))
    kept = issue(client, Wanted(text("one"), "Title", retitle=False))
    assert kept.action == "unchanged"  # the maintainers' title is theirs
    done = issue(client, Wanted(text("one"), "Title", ("drift",)))
    assert done.action == "updated"
    (only,) = fake.issues(REPO)
    assert only["number"] == old["number"] and only["title"] == "Title"
    assert sorted(label["name"] for label in only["labels"]) == ["drift", "triaged"]


def test_a_comment_is_created_updated_and_unchanged(fake: FakeGitHub, client: RepoClient) -> None:
    pr = fake.add_pull(REPO)
    for i in range(4):  # the bot's comment lands on a later page
        fake.add_comment(REPO, pr, text(f"forged {i}") if i % 2 else f"chatter {i}", author="mallory")
    made = comment(client, pr, text("one"))
    assert made.action == "created" and made.number == pr
    assert made.detail.startswith("created comment ") and made.detail.endswith(f" on PR #{pr}")
    assert comment(client, pr, text("one")).action == "unchanged"
    assert comment(client, pr, text("two"), dry_run=True).detail == made.detail.replace(
        "created", "would update"
    )
    assert comment(client, pr, text("two")).action == "updated"
    mine = [c for c in fake.comments(REPO, pr) if c["user"]["login"] == BOT]
    assert [c["body"] for c in mine] == [text("two")]
