"""The publisher against a fake GitHub REST API over real HTTP (PyGithub itself is not mocked)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import release_text, write_release
from driftcases import realistic_pair, rec, snap
from fake_github import FakeGitHub
from goldens import check_error_line, check_golden, updating

from opdrift.drift.changes import compute_drift
from opdrift.errors import PublishError
from opdrift.github.retry import RetryPolicy, retry_delay
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
from opdrift.publish.actions import annotation_lines, append_step_summary, workflow_command
from opdrift.publish.github import Outcome, RepoClient, Settings, check_token
from opdrift.publish.pr_comment import PR_MARKER, publish_pr_comment
from opdrift.publish.weekly_issue import publish_weekly_issue, weekly_marker

REPO = "pytorch/pytorch"
TOKEN = "ghs_s3cretT0ken1234567890abcdef"
FAST = RetryPolicy(total_seconds=4.0, first_delay=0.05, max_delay=0.2, max_attempts=6)
CLEAN = "No operator changes any more."


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    """The shared fake API with pages of 3 (so listings take several requests), the bot's token and REPO."""
    github_server.page_size = 3
    github_server.add_token(TOKEN, "opdrift-bot")
    github_server.add_repo(REPO)
    return github_server


def client_for(fake: FakeGitHub, token: str = TOKEN, **kwargs: object) -> RepoClient:
    settings = Settings(
        repo=str(kwargs.pop("repo", REPO)),
        token=token,
        api_url=fake.api_url,
        timeout=5,
        retry=kwargs.pop("retry", FAST),  # type: ignore[arg-type]
        seconds_between_writes=None,
        bot_login=kwargs.pop("bot_login", None),  # type: ignore[arg-type]
    )
    clock = kwargs.pop("clock", None)
    if isinstance(clock, VirtualClock):
        return RepoClient(settings, sleep=clock.sleep, clock=clock.now)
    return RepoClient(settings)


@dataclass
class VirtualClock:
    """The client's clock and sleep: each wait it asks for is recorded and moves the clock, with no real
    waiting; a test counts the waits instead of timing them on a shared machine."""

    time: float = 1000.0
    waits: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.time += seconds


def busy_pr(fake: FakeGitHub, chatter: int = 7) -> int:
    """A PR with enough human comments that the bot's own lands on a later page."""
    pr = fake.add_pull(REPO)
    for i in range(chatter):
        fake.add_comment(REPO, pr, f"comment {i}", author="alice")
    return pr


def bot_comments(fake: FakeGitHub, pr: int) -> list[dict[str, object]]:
    return [c for c in fake.comments(REPO, pr) if PR_MARKER in str(c["body"])]


def post(client: RepoClient | None, pr: int, body: str, *, drift: bool = True, dry: bool = False) -> Outcome:
    return publish_pr_comment(client, pr, body, has_drift=drift, clean_body=CLEAN, dry_run=dry)


# --- the sticky comment ----------------------------------------------------------------------------


def test_three_runs_with_changing_heads_leave_one_updated_comment(fake: FakeGitHub) -> None:
    pr = busy_pr(fake)
    client = client_for(fake)
    actions = [post(client, pr, f"drift up to head {head}").action for head in ("aaa", "bbb", "ccc")]
    assert actions == ["created", "updated", "updated"]
    mine = bot_comments(fake, pr)
    assert len(mine) == 1
    assert "drift up to head ccc" in str(mine[0]["body"])
    # The human comments fill pages 1-3 (page size 3), so finding the bot's comment paginated.
    assert any(
        "page=3" in r.path for r in fake.requests if r.path.startswith(f"/repos/{REPO}/issues/{pr}/comm")
    )
    writes_before = len(fake.writes())
    assert post(client, pr, "drift up to head ccc").action == "unchanged"
    assert len(fake.writes()) == writes_before


def test_a_run_for_a_superseded_head_does_not_overwrite_the_newer_report(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO, sha="1" * 40)
    client = client_for(fake)

    def post_for(head: str, body: str) -> Outcome:
        return publish_pr_comment(
            client, pr, body, has_drift=True, clean_body=CLEAN, dry_run=False, head_sha=head
        )

    assert post_for("1" * 40, "report of push 1").action == "created"
    fake.push(REPO, pr, "2" * 40)
    # Push 2's run finishes first and posts; push 1's poster, queued behind it, must not undo that.
    assert post_for("2" * 40, "report of push 2").action == "updated"
    writes = len(fake.writes())
    stale = post_for("1" * 40, "report of push 1")
    assert stale.action == "skipped"
    assert "moved on to 222222222222" in stale.detail and "111111111111" in stale.detail
    assert len(fake.writes()) == writes
    (mine,) = bot_comments(fake, pr)
    assert "report of push 2" in str(mine["body"])


def test_the_head_check_is_retried_with_the_write(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO, sha="3" * 40)
    fake.fail("GET", rf"/repos/{REPO}/pulls/{pr}$", 502, times=1)
    outcome = publish_pr_comment(
        client_for(fake), pr, "the report", has_drift=True, clean_body=CLEAN, dry_run=False, head_sha="3" * 40
    )
    assert outcome.action == "created"
    assert len(bot_comments(fake, pr)) == 1


def test_clean_pr_gets_no_comment(fake: FakeGitHub) -> None:
    pr = busy_pr(fake, chatter=2)
    outcome = post(client_for(fake), pr, "unused", drift=False)
    assert outcome.action == "skipped"
    assert fake.writes() == []
    assert bot_comments(fake, pr) == []


def test_comment_flips_when_the_drift_disappears(fake: FakeGitHub) -> None:
    pr = busy_pr(fake)
    client = client_for(fake)
    assert post(client, pr, "2 operators need a kernel").action == "created"
    flipped = post(client, pr, "unused", drift=False)
    assert flipped.action == "updated"
    (mine,) = bot_comments(fake, pr)
    assert CLEAN in str(mine["body"])
    assert "need a kernel" not in str(mine["body"])
    assert post(client, pr, "unused", drift=False).action == "unchanged"


def test_a_human_quoting_the_marker_is_never_edited(fake: FakeGitHub) -> None:
    pr = busy_pr(fake, chatter=1)
    fake.add_comment(REPO, pr, f"look: {PR_MARKER} bot, do your thing", author="mallory")
    assert post(client_for(fake), pr, "the report").action == "created"
    bodies = [str(c["body"]) for c in fake.comments(REPO, pr)]
    assert f"look: {PR_MARKER} bot, do your thing" in bodies
    assert sum("the report" in b for b in bodies) == 1


def test_actions_token_without_user_endpoint_finds_its_own_bot_comment(fake: FakeGitHub) -> None:
    actions_token = "ghs_actionsInstallationToken000"
    fake.add_token(actions_token, "github-actions[bot]", bot=True, user_endpoint=False)
    pr = busy_pr(fake, chatter=4)
    fake.add_comment(REPO, pr, f"{PR_MARKER} quoted by a person", author="mallory")
    login = "github-actions[bot]"  # what the workflow tells it (OPDRIFT_BOT_LOGIN): GET /user is refused
    assert post(client_for(fake, token=actions_token, bot_login=login), pr, "first").action == "created"
    assert post(client_for(fake, token=actions_token, bot_login=login), pr, "second").action == "updated"
    assert [c["user"]["login"] for c in bot_comments(fake, pr)].count("github-actions[bot]") == 1  # type: ignore[index]


def test_with_the_login_unknown_another_apps_bot_post_is_never_taken_for_the_bots(fake: FakeGitHub) -> None:
    """GET /user refused and no login given: a post with the marker by any other Bot does not count."""
    actions_token = "ghs_actionsInstallationToken001"
    fake.add_token(actions_token, "github-actions[bot]", bot=True, user_endpoint=False)
    pr = fake.add_pull(REPO)
    relayed = fake.add_comment(REPO, pr, f"{PR_MARKER}\nrelayed", author="relay-app[bot]", bot=True)
    fake.add_issue(REPO, title="week", body=weekly_marker("2026-W40"), author="relay-app[bot]")
    with pytest.raises(PublishError, match="cannot tell which posts are the bot's own"):
        post(client_for(fake, token=actions_token), pr, "the report")
    with pytest.raises(PublishError, match="bot_login"):
        publish_weekly_issue(
            client_for(fake, token=actions_token),
            title="t",
            body=lambda _: "b",
            window_key="2026-W40",
            dry_run=False,
        )
    assert fake.writes() == []
    assert [c["body"] for c in fake.comments(REPO, pr)] == [relayed["body"]]


def test_issue_number_that_is_not_a_pr_is_refused(fake: FakeGitHub) -> None:
    issue = fake.add_issue(REPO, title="an issue", body="", author="alice")
    with pytest.raises(PublishError, match="is an issue, not a pull request"):
        post(client_for(fake), int(issue["number"]), "body")
    assert fake.writes() == []


def test_over_long_body_is_never_sent(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    with pytest.raises(PublishError, match="over GitHub's limit of 65536"):
        post(client_for(fake), pr, "x" * 70_000)
    assert fake.writes() == []
    with pytest.raises(PublishError, match="over GitHub's limit"):
        publish_weekly_issue(
            client_for(fake), title="t", body=lambda _: "y" * 70_000, window_key="2026-W48", dry_run=False
        )
    assert fake.writes() == []


# --- dry run ---------------------------------------------------------------------------------------


def test_dry_run_reads_but_never_writes(fake: FakeGitHub) -> None:
    pr = busy_pr(fake, chatter=4)
    client = client_for(fake)
    outcome = post(client, pr, "the report", dry=True)
    assert outcome.action == "dry-run"
    assert "would create" in outcome.detail
    assert "the report" in outcome.text
    weekly = publish_weekly_issue(
        client,
        title="Operator drift",
        body=lambda _: "b",
        window_key="2026-W48",
        labels=["drift"],
        dry_run=True,
    )
    assert weekly.action == "dry-run"
    assert fake.requests  # it did look
    assert fake.writes() == []


def test_without_a_token_nothing_is_requested_at_all(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    outcome = post(None, pr, "the report")
    assert (outcome.action, outcome.number) == ("dry-run", pr)
    assert PR_MARKER in outcome.text
    assert publish_weekly_issue(
        None, title="t", body=lambda _: "b", window_key="2026-W48", dry_run=False
    ).action == ("dry-run")
    assert fake.requests == []


# --- retries and idempotency -----------------------------------------------------------------------


def comment_posts(fake: FakeGitHub, pr: int) -> int:
    return sum(
        1 for r in fake.writes() if r.method == "POST" and r.path == f"/repos/{REPO}/issues/{pr}/comments"
    )


def test_500_then_success_posts_exactly_once(fake: FakeGitHub) -> None:
    pr = busy_pr(fake, chatter=2)
    fake.fail("POST", rf"/issues/{pr}/comments$", 500)
    assert post(client_for(fake), pr, "the report").action == "created"
    assert len(bot_comments(fake, pr)) == 1
    assert comment_posts(fake, pr) == 2


def test_500_after_github_stored_the_comment_is_not_reposted(fake: FakeGitHub) -> None:
    pr = busy_pr(fake, chatter=2)
    fake.fail("POST", rf"/issues/{pr}/comments$", 502, after_apply=True)
    outcome = post(client_for(fake), pr, "the report")
    # The retry listed the comments again and found the one that landed.
    assert outcome.action == "created"
    assert len(bot_comments(fake, pr)) == 1
    assert comment_posts(fake, pr) == 1


def test_weekly_issue_survives_a_500_after_create_without_duplicating(fake: FakeGitHub) -> None:
    fake.fail("POST", r"/issues$", 500, after_apply=True)
    outcome = publish_weekly_issue(
        client_for(fake), title="t", body=lambda _: "b", window_key="2026-W48", dry_run=False
    )
    assert len(fake.issues(REPO)) == 1
    assert outcome.action == "created"  # found on the retry, but opened by this call, not "up to date"


def test_an_edit_that_landed_before_a_5xx_is_reported_as_an_update(fake: FakeGitHub) -> None:
    pr = busy_pr(fake, chatter=1)
    client = client_for(fake)
    assert post(client, pr, "first report").action == "created"
    fake.fail("PATCH", r"/issues/comments/\d+$", 500, after_apply=True)
    assert post(client, pr, "second report").action == "updated"  # found done on the retry
    assert weekly(client, "2026-W48", "week body").action == "created"
    fake.fail("PATCH", r"/issues/\d+$", 502, after_apply=True)
    assert weekly(client, "2026-W48", "new week body").action == "updated"


def test_weekly_issue_opened_before_a_failed_close_is_reported_as_opened(fake: FakeGitHub) -> None:
    client = client_for(fake)
    assert weekly(client, "2026-W47", "last week").action == "created"
    fake.fail("PATCH", r"/issues/1$", 502)  # closing last week's issue fails once, after the create
    outcome = weekly(client, "2026-W48", "this week", close_previous=True)
    assert (outcome.action, outcome.number) == ("created", 2)
    assert [i["state"] for i in sorted(fake.issues(REPO), key=lambda i: i["number"])] == ["closed", "open"]


@pytest.mark.parametrize(
    ("status", "headers", "message"),
    [
        (403, {"Retry-After": "1"}, "You have exceeded a secondary rate limit"),
        (429, {"Retry-After": "1"}, "Too many requests"),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "+1"}, "API rate limit exceeded"),
    ],
)
def test_rate_limit_is_waited_out(
    fake: FakeGitHub, status: int, headers: dict[str, str], message: str
) -> None:
    pr = busy_pr(fake, chatter=1)
    if headers.get("X-RateLimit-Reset") == "+1":
        headers = {**headers, "X-RateLimit-Reset": str(int(time.time()) + 1)}
    fake.fail("GET", rf"/issues/{pr}/comments$", status, headers=headers, message=message)
    clock = VirtualClock()
    assert post(client_for(fake, clock=clock), pr, "the report").action == "created"
    (wait,) = clock.waits  # one wait, as long as GitHub asked (a reset: its time, plus half a second)
    assert 0.5 <= wait < FAST.total_seconds
    assert len(bot_comments(fake, pr)) == 1


def test_rate_limit_longer_than_the_budget_fails_at_once(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    fake.fail("GET", rf"/issues/{pr}$", 403, headers={"Retry-After": "3600"}, message="secondary rate limit")
    clock = VirtualClock()
    with pytest.raises(PublishError, match=r"rate limit .* wait 3600s, beyond the 4s retry budget"):
        post(client_for(fake, clock=clock), pr, "the report")
    assert clock.waits == []  # not a second of the hour waited
    assert [r.path for r in fake.requests if r.path.endswith(f"/issues/{pr}")] == [
        f"/repos/{REPO}/issues/{pr}"
    ]
    assert fake.writes() == []


def test_persistent_5xx_gives_up_within_the_budget(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    fake.fail(None, r".", 503, times=1000, message="Service Unavailable")
    policy = RetryPolicy(total_seconds=1.0, first_delay=0.1, max_delay=0.4, max_attempts=50)
    clock = VirtualClock()
    with pytest.raises(PublishError, match=r"kept failing .*503 Service Unavailable.* nothing more was sent"):
        post(client_for(fake, retry=policy, clock=clock), pr, "the report")
    assert sum(clock.waits) <= policy.total_seconds  # it gave up within the budget, not at 50 attempts
    assert clock.waits == sorted(clock.waits) and len(clock.waits) >= 2  # it did retry, with growing waits
    assert len(fake.requests) == len(clock.waits) + 1
    assert fake.writes() == []


def test_retry_delay_policy() -> None:
    p = RetryPolicy(first_delay=1.0, max_delay=8.0)
    assert [retry_delay(500, {}, "", n, p, now=0.0) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert retry_delay(403, {"retry-after": "7"}, "", 1, p, now=0.0) == 7.0
    # a 503 that says when to come back is waited for (the budget still decides whether to)
    assert retry_delay(503, {"Retry-After": "120"}, "", 1, p, now=0.0) == 120.0
    assert retry_delay(503, {"Retry-After": "soon"}, "", 1, p, now=0.0) == 1.0
    assert retry_delay(
        403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "110"}, "", 1, p, now=100.0
    ) == (10.5)
    assert (
        retry_delay(403, {"x-ratelimit-remaining": "12"}, "Resource not accessible by integration", 1, p, 0)
        is None
    )
    assert retry_delay(404, {}, "Not Found", 1, p, now=0.0) is None
    assert retry_delay(422, {}, "Validation Failed", 1, p, now=0.0) is None
    # A rate limit that names no wait: at least a minute, as GitHub asks (retrying sooner extends it).
    assert retry_delay(403, {}, "You have exceeded a secondary rate limit", 1, p, now=0.0) == 60.0
    assert retry_delay(429, {"retry-after": "soon"}, "", 1, p, now=0.0) == 60.0


def test_a_token_that_cannot_be_a_header_is_one_line_that_never_quotes_it() -> None:
    assert check_token("  ghs_abc123\n") == "ghs_abc123"
    for bad in ("ghs_abc 123", "ghs_abc\n123", "ghs_äbc", ""):
        with pytest.raises(PublishError, match="GITHUB_TOKEN holds spaces") as err:
            check_token(bad)
        assert bad.strip() == "" or bad not in str(err.value)


def test_410_says_the_feature_is_off_not_that_the_repository_is_missing(fake: FakeGitHub) -> None:
    fake.fail("GET", r"/issues$", 410, message="Issues are disabled for this repo")
    with pytest.raises(PublishError) as err:
        weekly(client_for(fake), "2026-W48", "body")
    assert "410 Issues are disabled for this repo" in err.value.message
    assert "not found" not in err.value.message


# --- errors a user must fix ------------------------------------------------------------------------


def test_401_is_one_clear_line(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    with pytest.raises(PublishError) as err:
        post(client_for(fake, token="ghp_wrongToken0000000000"), pr, "x")
    assert str(err.value) == "GitHub rejected the token (401 Bad credentials): check GITHUB_TOKEN"
    assert "wrongToken" not in str(err.value)


def test_403_names_the_missing_permission(fake: FakeGitHub) -> None:
    fake.add_token("ghs_readOnly0000", "github-actions[bot]", can_write=False, user_endpoint=False)
    pr = fake.add_pull(REPO)
    with pytest.raises(
        PublishError, match=r"403 Resource not accessible by integration.*`pull-requests: write`"
    ):
        post(client_for(fake, token="ghs_readOnly0000", bot_login="github-actions[bot]"), pr, "x")
    with pytest.raises(PublishError, match=r"`issues: write`"):
        publish_weekly_issue(
            client_for(fake, token="ghs_readOnly0000", bot_login="github-actions[bot]"),
            title="t",
            body=lambda _: "b",
            window_key="2026-W48",
            dry_run=False,
        )


def test_404_names_the_repository_and_pr(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    with pytest.raises(PublishError) as err:
        post(client_for(fake), pr + 100, "x")
    assert str(err.value) == f"repository {REPO} or PR {pr + 100} not found (or the token cannot see it)"
    with pytest.raises(PublishError, match="repository nobody/nothing or PR 1 not found"):
        post(client_for(fake, repo="nobody/nothing"), 1, "x")


def test_the_token_never_appears_in_logs_or_output(
    fake: FakeGitHub, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("github", "urllib3", "bot"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    pr = busy_pr(fake, chatter=4)
    fake.fail("POST", rf"/issues/{pr}/comments$", 500)
    client = client_for(fake)
    post(client, pr, "the report")
    publish_weekly_issue(
        client, title="t", body=lambda _: "b", window_key="2026-W48", labels=["drift"], dry_run=False
    )
    with pytest.raises(PublishError) as err:
        post(client_for(fake, token=TOKEN + "x"), pr, "x")
    out = capsys.readouterr()
    # The capture is not empty: PyGithub logged every request, headers included (masked).
    assert any(r.name == "github.Requester" and "Authorization" in r.getMessage() for r in caplog.records)
    assert any("retrying" in r.getMessage() for r in caplog.records)
    for text in (caplog.text, out.out, out.err, str(err.value)):
        assert TOKEN[4:20] not in text
    # On the wire the token travels only in the Authorization header.
    for where, text in fake.iter_request_text():
        if TOKEN in text:
            assert where == "header Authorization", where


# --- the weekly issue ------------------------------------------------------------------------------


def weekly(client: RepoClient, week: str, body: str, **kwargs: object) -> Outcome:
    return publish_weekly_issue(
        client,
        title=f"Operator drift {week} (abc1234..def5678)",
        # the renderer's link is the template's (tests/unit/render/test_report.py); here a stand-in shows it arrived
        body=lambda previous: body if previous is None else f"{body}\nprevious #{previous}",
        window_key=week,
        labels=kwargs.pop("labels", ["operator-drift"]),  # type: ignore[arg-type]
        close_previous=bool(kwargs.pop("close_previous", False)),
        dry_run=False,
    )


def test_weekly_issue_is_idempotent_per_window(fake: FakeGitHub) -> None:
    for i in range(5):  # other people's issues, so the search pages through the list
        fake.add_issue(REPO, title=f"bug {i}", body="", author="alice")
    client = client_for(fake)
    first = weekly(client, "2026-W48", "3 changes")
    assert first.action == "created"
    assert weekly(client, "2026-W48", "3 changes").action == "unchanged"
    again = weekly(client_for(fake), "2026-W48", "4 changes")
    assert (again.action, again.number) == ("updated", first.number)
    mine = [i for i in fake.issues(REPO) if weekly_marker("2026-W48") in i["body"]]
    assert len(mine) == 1
    assert "4 changes" in mine[0]["body"]
    assert [lb["name"] for lb in mine[0]["labels"]] == ["operator-drift"]


def test_a_title_lookalike_is_not_taken_for_the_bot_issue(fake: FakeGitHub) -> None:
    fake.add_issue(
        REPO, title="Operator drift 2026-W48 (abc1234..def5678)", body="hand-written", author="alice"
    )
    assert weekly(client_for(fake), "2026-W48", "b").action == "created"
    assert len(fake.issues(REPO)) == 2


def test_new_window_links_and_closes_the_previous_issue(fake: FakeGitHub) -> None:
    client = client_for(fake)
    old = weekly(client, "2026-W47", "last week")
    new = weekly(client, "2026-W48", "this week", close_previous=True)
    assert new.action == "created"
    assert new.number != old.number
    issues = {i["number"]: i for i in fake.issues(REPO)}
    assert issues[new.number]["body"].endswith(f"this week\nprevious #{old.number}")
    assert issues[old.number]["state"] == "closed"
    assert issues[new.number]["state"] == "open"
    # Re-running the new week changes nothing and does not touch the old one again.
    writes = len(fake.writes())
    assert weekly(client, "2026-W48", "this week", close_previous=True).action == "unchanged"
    assert len(fake.writes()) == writes


def test_labels_are_created_when_missing_and_added_to_an_existing_issue(fake: FakeGitHub) -> None:
    client = client_for(fake)
    weekly(client, "2026-W48", "b", labels=["operator-drift"])
    assert weekly(client, "2026-W48", "b", labels=["operator-drift", "module: backends"]).action == "updated"
    (issue,) = fake.issues(REPO)
    assert sorted(lb["name"] for lb in issue["labels"]) == ["module: backends", "operator-drift"]
    assert {"operator-drift", "module: backends"} <= {
        lb["name"] for lb in fake.repos[REPO.lower()].labels.values()
    }


def test_api_url_must_be_http() -> None:
    with pytest.raises(PublishError, match="GITHUB_API_URL must be an http"):
        RepoClient(Settings(repo=REPO, token=TOKEN, api_url="api.github.com"))
    with pytest.raises(PublishError, match="--repo must be OWNER/NAME"):
        RepoClient(Settings(repo="pytorch", token=TOKEN))


def test_github_com_style_root_without_prefix() -> None:
    server = FakeGitHub(prefix="", page_size=2)
    server.start()
    try:
        server.add_token(TOKEN, "opdrift-bot")
        server.add_repo(REPO)
        pr = server.add_pull(REPO)
        assert post(client_for(server), pr, "body").action == "created"
        assert all(not r.path.startswith("/api/") for r in server.requests)
    finally:
        server.stop()


# --- Actions conventions ---------------------------------------------------------------------------


def test_workflow_command_escapes_data_and_properties() -> None:
    line = workflow_command(
        "warning", "100% new\r\nop: a,b", file="aten/src/ATen/native/native_functions.yaml", line=42
    )
    assert line == (
        "::warning file=aten/src/ATen/native/native_functions.yaml,line=42::100%25 new%0D%0Aop: a,b"
    )
    assert workflow_command("warning", "m", title="a:b,c%") == "::warning title=a%3Ab%2Cc%25::m"
    assert "\n" not in workflow_command("error", "x\ny")


def test_annotations_point_at_head_lines_most_urgent_first_and_stay_inert(
    request: pytest.FixtureRequest,
) -> None:
    base, head = realistic_pair()
    hostile = rec(
        "evil(Tensor self) -> Tensor", name="evil\n::error file=x::pwned%0A,x", bucket="misc", line=77
    )
    drift = compute_drift(base, snap([*head.operators.values(), hostile]))
    lines = annotation_lines(drift.changes, limit=1000)
    assert all(
        line.startswith("::warning file=aten/src/ATen/native/native_functions.yaml,line=") for line in lines
    )
    assert lines[0].endswith("(primitive_pointwise); needs kernel; new core")  # hardswish
    assert not any("abs.out" in line for line in lines)  # only its in-tree kernels changed
    (evil,) = [line for line in lines if "evil" in line]
    # the hostile name escaped, so that it stays in the message: no second command, no raw newline
    assert evil.startswith(
        "::warning file=aten/src/ATen/native/native_functions.yaml,line=77,title=opdrift::"
    )
    assert "evil%0A::error file=x::pwned%250A,x" in evil and "\n" not in evil
    check_golden("annotations.realistic.txt", "\n".join(lines) + "\n", updating(request))
    capped = annotation_lines(drift.changes, limit=2)
    assert len(capped) == 3
    assert capped[:2] == lines[:2]
    assert capped[-1].startswith(
        f"::notice title=opdrift::{len(lines) - 2} more changed operators not annotated: "
    )
    third = lines[2].split("::operator ")[1].split(" ")[0]
    assert f": {third}, " in capped[-1]
    assert "\n" not in capped[-1]


def test_at_most_ten_annotations_per_step_on_a_real_release_diff(
    release_file: Callable[[str], Path],
) -> None:
    # GitHub keeps 10 warnings per step and drops the rest without a word: 2.13.0 -> 2.14.1 has 14.
    from opdrift import pipeline

    drift = compute_drift(
        pipeline.load_snapshot(str(release_file("2.13.0"))),
        pipeline.load_snapshot(str(release_file("2.14.1"))),
    )
    every = annotation_lines(drift.changes, limit=1000)
    lines = annotation_lines(drift.changes)
    assert len(every) > 10
    warnings = [line for line in lines if line.startswith("::warning ")]
    assert warnings == every[:10]
    (notice,) = lines[10:]
    assert notice.startswith(
        f"::notice title=opdrift::{len(every) - 10} more changed operators not annotated: "
    )
    for line in every[10:]:
        assert line.split("::operator ")[1].split(" ")[0] in notice


def test_step_summary_is_capped_at_one_mib_counting_what_the_step_wrote(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 1000 + "\n")
    line = "é" * 99 + "\n"  # 199 bytes: a cap counted in characters would let the file pass 1 MiB
    append_step_summary(str(summary), line * 10_000)
    data = summary.read_bytes()
    assert len(data) <= 1024 * 1024
    assert len(data) > 1024 * 1024 - 400
    assert data.decode("utf-8").rstrip().endswith("the full report is in the log or artifact.*")
    append_step_summary(str(summary), "more\n" * 100)  # what is left of the step's 1 MiB, at most
    assert len(summary.read_bytes()) <= 1024 * 1024


def test_step_summary_appends(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    append_step_summary(str(summary), "## opdrift")
    append_step_summary(str(summary), "more\n")
    assert summary.read_text() == "# earlier step\n## opdrift\nmore\n"
    with pytest.raises(PublishError, match="cannot write the job summary"):
        append_step_summary(str(tmp_path / "missing" / "x.md"), "t")


# --- the commands, end to end (real release files, real HTTP) --------------------------------------


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory, release_file: Callable[[str], Path]) -> dict[str, str]:
    """Stored snapshots of real releases, as the weekly workflow diffs against (parsed once per module)."""
    from opdrift import pipeline, snapshot

    root = tmp_path_factory.mktemp("releases")
    out = {}
    for version in ("2.13.0", "2.14.1", "2.15.0"):
        stored = root / f"{version}.json"
        stored.write_text(snapshot.to_json(pipeline.load_snapshot(str(release_file(version)))))
        out[version] = str(stored)
    return out


@pytest.fixture
def gh_env(fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


@pytest.mark.slow
def test_cli_comment_three_heads_one_comment_then_flip(
    fake: FakeGitHub, gh_env: Path, releases: dict[str, str], opdrift: Opdrift
) -> None:
    pr = busy_pr(fake, chatter=4)
    base = releases["2.13.0"]
    bodies = []
    for head in ("2.14.1", "2.15.0", "2.14.1"):
        run = opdrift("comment", "--repo", REPO, "--pr", str(pr), base, releases[head])
        assert run.code == 0, run.err
        (mine,) = bot_comments(fake, pr)
        bodies.append(str(mine["body"]))
    assert bodies[0] != bodies[1]
    assert bodies[2] == bodies[0]
    assert "Operator drift" in gh_env.read_text()
    # The drift disappears (head = base): the same comment flips, nothing new is created.
    run = opdrift("comment", "--repo", REPO, "--pr", str(pr), base, base)
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    assert str(mine["body"]) != bodies[0]
    assert "✅" in str(mine["body"])


@pytest.mark.slow
def test_cli_comment_with_head_sha_posts_only_for_the_current_head(
    fake: FakeGitHub, gh_env: Path, opdrift: Opdrift, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    names = {
        NATIVE_PATH: "native_functions.yaml",
        TAGS_PATH: "tags.yaml",
        DERIVATIVES_PATH: "derivatives.yaml",
    }
    base, head = None, ""
    for version in ("2.13.0", "2.14.1"):
        files = {path: release_text(version, name).encode() for path, name in names.items()}
        head = fake.add_commit(REPO, files, parent=base)
        base = base or head
    pr = fake.add_pull(REPO, sha="a" * 40)
    argv = ["comment", "--repo", REPO, "--pr", str(pr), f"gh:{REPO}@{base}", f"gh:{REPO}@{head}"]
    run = opdrift(*argv, "--head-sha", head)
    assert run.code == 0, run.err
    assert "has moved on to aaaaaaaaaaaa" in run.err
    assert bot_comments(fake, pr) == []
    fake.push(REPO, pr, head)
    run = opdrift(*argv, "--head-sha", head.upper())  # GitHub reports shas lower-cased
    assert run.code == 0, run.err
    assert len(bot_comments(fake, pr)) == 1
    usage_error = opdrift(*argv, "--head-sha", "abc123")
    assert usage_error.code == 2
    assert "full commit sha" in usage_error.err


@pytest.mark.slow
def test_cli_bot_login_from_the_config_decides_whose_posts_are_the_bots(
    fake: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
) -> None:
    actions_token = "ghs_actionsInstallationToken111"
    fake.add_token(actions_token, "github-actions[bot]", bot=True, user_endpoint=False)
    monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", actions_token)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    config = tmp_path / "opdrift.yml"
    config.write_text("bot_login: github-actions[bot]\n")
    pr = fake.add_pull(REPO)
    # Another app's bot quoting the marker: without bot_login, "any Bot account" would take it.
    other = fake.add_comment(REPO, pr, f"{PR_MARKER}\nrelayed", author="relay-app[bot]", bot=True)
    fake.add_issue(REPO, title="week", body=weekly_marker("2026-W40"), author="relay-app[bot]")
    base, head = releases["2.13.0"], releases["2.14.1"]
    for argv in (
        ["comment", "--pr", str(pr)],
        ["issue", "--week", "2026-W40"],
    ):
        run = opdrift(*argv, "--repo", REPO, "--config", str(config), base, head)
        assert run.code == 0, run.err
    assert [c["body"] for c in fake.comments(REPO, pr) if c["id"] == other["id"]] == [f"{PR_MARKER}\nrelayed"]
    assert len(bot_comments(fake, pr)) == 2  # the relay's, untouched, and the bot's own
    weekly_issues = [i for i in fake.issues(REPO) if weekly_marker("2026-W40") in str(i["body"])]
    assert sorted(str(i["user"]["login"]) for i in weekly_issues) == ["github-actions[bot]", "relay-app[bot]"]
    assert not any(r.path == "/user" for r in fake.requests)
    listings = [
        r.path for r in fake.requests if r.method == "GET" and r.path.startswith(f"/repos/{REPO}/issues?")
    ]
    assert listings and all("creator=github-actions" in p for p in listings)


@pytest.mark.slow
def test_cli_weekly_lookup_in_a_repository_of_20000_issues_lists_at_most_10_pages(
    github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch, releases: dict[str, str], opdrift: Opdrift
) -> None:
    """With the workflow token (GET /user refused) and no bot_login, the lookup
    listed every issue: 200 pages for 20,000. The action tells opdrift the token's login instead."""
    github_server.page_size = 100
    actions_token = "ghs_actionsInstallationToken002"
    github_server.add_token(actions_token, "github-actions[bot]", bot=True, user_endpoint=False)
    github_server.add_repo(REPO)
    github_server.add_issue(REPO, title="W39", body=weekly_marker("2026-W39"), author="github-actions[bot]")
    for i in range(20_000):
        github_server.add_issue(REPO, title=f"issue {i}", body="", author=f"user{i % 50}")
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", actions_token)
    monkeypatch.setenv("OPDRIFT_BOT_LOGIN", "github-actions[bot]")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for _ in range(2):  # a re-run of the week edits; neither run scans
        run = opdrift("issue", "--repo", REPO, "--week", "2026-W40", releases["2.13.0"], releases["2.14.1"])
        assert run.code == 0, run.err
    lists = [r for r in github_server.requests if r.method == "GET" and re.search(r"/issues\?", r.path)]
    assert 0 < len(lists) <= 10, len(lists)
    assert all("creator=github-actions" in r.path for r in lists)
    (mine,) = [i for i in github_server.issues(REPO) if weekly_marker("2026-W40") in str(i["body"])]
    assert "Previous drift issue: #1" in str(mine["body"])
    monkeypatch.setenv("OPDRIFT_BOT_LOGIN", "not a login")
    run = opdrift("issue", "--repo", REPO, "--week", "2026-W40", releases["2.13.0"], releases["2.14.1"])
    assert run.code == 2 and "OPDRIFT_BOT_LOGIN must be a GitHub login" in run.err


@pytest.mark.slow
def test_cli_allowlist_flag_acknowledges_like_the_configs(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text("subscriptions:\n  - who: ['@kernel-team']\n    facets: [needs_kernel]\n")
    allow = tmp_path / "allow.yaml"
    allow.write_text("- name: '*'\n  reason: planned for this release\n  expires: 2099-01-01\n")
    pr = fake.add_pull(REPO)
    argv = ["comment", "--repo", REPO, "--pr", str(pr), "--config", str(config)]
    base, head = releases["2.13.0"], releases["2.14.1"]
    run = opdrift(*argv, base, head)
    assert run.code == 0, run.err
    assert "@kernel-team" in str(bot_comments(fake, pr)[0]["body"])
    run = opdrift(*argv, "--allowlist", str(allow), base, head)
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    assert "@kernel-team" not in str(mine["body"])  # every change acknowledged: nobody is paged


@pytest.mark.slow
def test_cli_clean_pr_gets_no_comment(
    fake: FakeGitHub, gh_env: Path, releases: dict[str, str], opdrift: Opdrift
) -> None:
    pr = fake.add_pull(REPO)
    same = releases["2.14.1"]
    run = opdrift("comment", "--repo", REPO, "--pr", str(pr), same, same)
    assert run.code == 0, run.err
    assert fake.writes() == []
    assert fake.comments(REPO, pr) == []


@pytest.mark.slow
def test_cli_mentions_only_matching_subscriptions(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text(
        "subscriptions:\n"
        "  - who: ['@llvm/torch-mlir']\n    facets: [new_core, needs_kernel]\n"
        # a real key (it must be: see the next test) that no operator changed in this release has
        "  - who: ['@nobody-here']\n    dispatch_keys: [CompositeImplicitAutogradNestedTensor]\n"
        "labels: [operator-drift]\n"
    )
    pr = fake.add_pull(REPO)
    args = ["--repo", REPO, "--config", str(config), releases["2.13.0"], releases["2.14.1"]]
    run = opdrift("comment", "--pr", str(pr), *args)
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    assert "@llvm/torch-mlir" in str(mine["body"])
    assert "@nobody-here" not in str(mine["body"])


@pytest.mark.slow
def test_cli_weekly_issue_reruns_keep_one_issue(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text("labels: [operator-drift]\nweekly:\n  close_previous: true\n")
    args = ["issue", "--repo", REPO, "--config", str(config), releases["2.13.0"]]
    for head in ("2.14.1", "2.15.0"):
        run = opdrift(*args, releases[head], "--week", "2026-W48")
        assert run.code == 0, run.err
    (issue,) = fake.issues(REPO)
    assert issue["title"].startswith("Operator drift 2026-W48 (")
    assert [lb["name"] for lb in issue["labels"]] == ["operator-drift"]
    run = opdrift(*args, releases["2.15.0"], "--week", "2026-W49")
    assert run.code == 0, run.err
    old, new = sorted(fake.issues(REPO), key=lambda i: int(i["number"]))
    assert old["state"] == "closed"
    assert f"#{old['number']}" in new["body"]


@pytest.mark.slow
def test_cli_a_quiet_week_opens_no_issue_and_a_new_week_closes_the_last(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # No config at all: the defaults a new user gets.
    run = opdrift("issue", "--repo", REPO, releases["2.13.0"], releases["2.14.1"], "--week", "2026-W47")
    assert run.code == 0, run.err
    run = opdrift("issue", "--repo", REPO, releases["2.14.1"], releases["2.14.1"], "--week", "2026-W48")
    assert run.code == 0, run.err
    assert "no operator changes between" in run.err and "no issue this week (weekly.quiet: skip)" in run.err
    (first,) = fake.issues(REPO)  # 52 quiet weeks would have opened 52 issues
    assert first["state"] == "open"
    run = opdrift("issue", "--repo", REPO, releases["2.14.1"], releases["2.15.0"], "--week", "2026-W49")
    assert run.code == 0, run.err
    old, new = sorted(fake.issues(REPO), key=lambda i: int(i["number"]))
    assert old["state"] == "closed" and new["state"] == "open"  # close_previous is on by default
    # `weekly.quiet: comment`: one line on the open issue, once per week however often it runs.
    config = tmp_path / "opdrift.yml"
    config.write_text("weekly:\n  quiet: comment\n")
    for _ in range(2):
        run = opdrift(
            "issue",
            "--repo",
            REPO,
            "--config",
            str(config),
            releases["2.15.0"],
            releases["2.15.0"],
            "--week",
            "2026-W50",
        )
        assert run.code == 0, run.err
    assert len(fake.issues(REPO)) == 2
    said = [c for c in fake.comments(REPO, int(new["number"])) if "no operator changes" in str(c["body"])]
    assert len(said) == 1 and str(said[0]["body"]).count("2026-W50: no operator changes between") == 1
    config.write_text("weekly:\n  quiet: never\n")
    run = opdrift("issue", "--repo", REPO, "--config", str(config), releases["2.15.0"], releases["2.15.0"])
    assert run.code == 2
    message = check_error_line("config: weekly quiet", run.err, updating(request), file=str(config), line=2)
    assert "quiet" in message and "'never'" in message


@pytest.mark.slow
def test_cli_dry_run_prints_the_markdown_alone_and_no_body_when_it_would_post_nothing(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`comment --dry-run > body.md` is the post: the status goes to stderr. A run that would post
    nothing shows no body, with a token (it reads: no earlier comment) or without (it cannot read)."""
    pr = fake.add_pull(REPO)
    argv = ["comment", "--repo", REPO, "--pr", str(pr), "--dry-run"]
    for token in (TOKEN, None):
        if token is None:
            monkeypatch.delenv("GITHUB_TOKEN")
        run = opdrift(*argv, releases["2.13.0"], releases["2.14.1"])
        assert run.code == 0, run.err
        assert run.out.startswith(f"{PR_MARKER}\n") and "dry run" not in run.out
        assert "opdrift: dry run: would " in run.err
        same = opdrift(*argv, releases["2.14.1"], releases["2.14.1"])
        assert same.code == 0, same.err
        assert same.out == ""
        assert "would post nothing" in same.err, same.err
    assert fake.writes() == []


@pytest.mark.slow
def test_cli_without_token_is_a_dry_run_with_no_request(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    pr = fake.add_pull(REPO)
    run = opdrift(
        "comment",
        "--repo",
        REPO,
        "--pr",
        str(pr),
        "--annotations",
        releases["2.13.0"],
        releases["2.14.1"],
    )
    assert run.code == 0, run.err
    assert "GITHUB_TOKEN is not set" in run.err
    assert PR_MARKER in run.out
    assert re.search(
        r"^::warning file=aten/src/ATen/native/native_functions\.yaml,line=\d+,title=opdrift::", run.out, re.M
    )
    assert fake.requests == []
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    run = opdrift(
        "issue",
        "--repo",
        REPO,
        "--dry-run",
        releases["2.13.0"],
        releases["2.14.1"],
        "--week",
        "2026-W48",
    )
    assert run.code == 0, run.err
    assert "would open the issue" in run.err
    assert fake.writes() == []


@pytest.mark.parametrize(
    ("token", "repo", "expected"),
    [
        ("ghp_notAValidToken", REPO, "GitHub rejected the token (401 Bad credentials): check GITHUB_TOKEN"),
        (
            TOKEN,
            "someone/elsewhere",
            "repository someone/elsewhere or PR 1 not found (or the token cannot see it)",
        ),
    ],
)
@pytest.mark.slow
def test_cli_401_and_404_are_one_line_and_exit_2(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
    token: str,
    repo: str,
    expected: str,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", token)
    fake.add_pull(REPO)
    run = opdrift("comment", "--repo", repo, "--pr", "1", releases["2.13.0"], releases["2.14.1"])
    assert run.code == 2
    assert run.err == f"opdrift: error: {expected}\n"
    assert token not in run.out + run.err


def test_cli_config_error_is_file_line_exit_2(
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text("subscriptions:\n  - who: ['@a']\n    facets: [needs-kernel]\n")
    run = opdrift("issue", "--repo", REPO, "--config", str(config), releases["2.13.0"], releases["2.14.1"])
    assert run.code == 2
    said = check_error_line("config: unknown facet", run.err, updating(request), file=str(config), line=3)
    assert "'needs-kernel'" in said and "needs_kernel" in said


@pytest.mark.parametrize(
    ("matcher", "line", "message"),
    [
        (
            "dispatch_keys: [mps]",
            3,
            "no operator of BASE or HEAD has a kernel under dispatch key 'mps'; did you mean MPS?",
        ),
        ("tags: [coer]", 3, "unknown tag 'coer': neither BASE nor HEAD knows it; did you mean core?"),
        (
            "backend:\n      kind: dispatch\n      key: mps",
            5,
            "backend: no operator of BASE or HEAD has a kernel under dispatch key 'mps'; did you mean MPS?",
        ),
    ],
)
@pytest.mark.slow
def test_cli_config_names_that_match_nothing_fail_before_any_request(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
    matcher: str,
    line: int,
    message: str,
) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text(f"subscriptions:\n  - who: ['@mps-team']\n    {matcher}\n")
    pr = fake.add_pull(REPO)
    run = opdrift(
        "comment",
        "--repo",
        REPO,
        "--pr",
        str(pr),
        "--config",
        str(config),
        releases["2.13.0"],
        releases["2.14.1"],
    )
    assert run.code == 2
    assert run.err == f"opdrift: error: {config}:{line}: subscription 1: {message}\n"
    assert fake.requests == []


@pytest.mark.slow
def test_cli_a_tag_defined_in_tags_yaml_but_unused_is_accepted(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    opdrift: Opdrift,
    tmp_path: Path,
) -> None:
    """pt2_compliant_tag is in 2.14.1's tags.yaml and on no operator: fine where tags.yaml can be read."""
    config = tmp_path / "opdrift.yml"
    config.write_text("subscriptions:\n  - who: ['@pt2']\n    tags: [pt2_compliant_tag]\n")
    base = str(write_release("2.13.0", tmp_path / "base"))
    head = str(write_release("2.14.1", tmp_path / "head"))
    args = ["issue", "--repo", REPO, "--dry-run", "--config", str(config), "--week", "2026-W48"]
    run = opdrift(*args, base, head)
    assert run.code == 0, run.err
    # Stored snapshots carry no tags.yaml: there only the tags operators use are known.
    run = opdrift(*args, releases["2.13.0"], releases["2.14.1"])
    assert run.code == 2
    assert f"{config}:3: subscription 1: unknown tag 'pt2_compliant_tag'" in run.err


def test_cli_rejects_a_week_the_year_lacks_and_a_negative_retry_budget(
    releases: dict[str, str], opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    same = releases["2.13.0"]
    run = opdrift("issue", "--repo", REPO, "--week", "2027-W53", same, same)
    assert run.code == 2 and "--week 2027-W53" in run.err  # 2027 has 52 ISO weeks
    for budget in ("-5", "nan", "inf"):
        usage = opdrift("comment", "--repo", REPO, "--pr", "1", "--retry-budget", budget, same, same)
        assert usage.code == 2


@pytest.mark.slow
def test_cli_comment_posts_for_a_pr_whose_only_news_is_a_parse_warning(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    tmp_path: Path,
    opdrift: Opdrift,
) -> None:
    # The PR adds a key opdrift does not model: no operator changes, but the author should hear of it.
    head = write_release("2.14.1", tmp_path / "head")
    text = head.read_text()
    head.write_text(
        text.replace(
            "  structured_delegate: add.out\n", "  structured_delegate: add.out\n  grad_mode: skip\n", 1
        )
    )
    pr = busy_pr(fake, chatter=1)
    run = opdrift("comment", "--repo", REPO, "--pr", str(pr), releases["2.14.1"], str(head))
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    body = str(mine["body"])
    assert body.splitlines()[1].startswith("## ⚠️ Operator drift")
    assert "No operator changes" in body and "unknown key 'grad\\_mode' kept" in body
    assert str(tmp_path) not in body
    # The weekly issue and its job summary list it too, from the snapshots the action makes first.
    head_json = tmp_path / "head.json"
    assert opdrift("snapshot", str(head), "-o", str(head_json)).code == 0
    gh_env.write_text("")
    argv = ["issue", "--repo", REPO, "--week", "2026-W48", releases["2.14.1"], str(head_json)]
    run = opdrift(*argv)
    assert run.code == 0, run.err
    (issue,) = [i for i in fake.issues(REPO) if "2026-W48" in str(i["title"])]
    assert "unknown key 'grad\\_mode' kept" in str(issue["body"])
    summary = gh_env.read_text()
    assert summary.splitlines()[1] == "## ⚠️ Operator drift" and "unknown key 'grad\\_mode' kept" in summary
    # The key is taken out again: the same comment flips to clean.
    run = opdrift("comment", "--repo", REPO, "--pr", str(pr), releases["2.14.1"], releases["2.14.1"])
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    assert str(mine["body"]).splitlines()[1].startswith("## ✅") and "🧐" not in str(mine["body"])


def test_finding_the_weekly_issue_reads_pages_not_every_issue(fake: FakeGitHub) -> None:
    """The bot's own issues are listed (``creator=``): reading `pull_request` first made PyGithub fetch
    each one again."""
    for i in range(60):
        fake.add_issue(
            REPO, title=f"bug {i}", body="an issue the bot opened for something else", author="opdrift-bot"
        )
    client = client_for(fake)
    publish_weekly_issue(
        client, title="Operator drift", body=lambda _: "b", window_key="2026-W48", dry_run=False
    )
    single = [r for r in fake.requests if r.method == "GET" and re.search(r"/issues/\d+$", r.path)]
    assert single == []


@pytest.mark.slow
def test_cli_comment_stays_quiet_for_a_pr_that_only_adds_an_in_tree_kernel(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    tmp_path: Path,
    opdrift: Opdrift,
) -> None:
    """A PR that gives an op an XPU kernel asks nothing of another backend: the job summary says it,
    no comment is posted, and `--dry-run` says it would post nothing. A config option turns it on."""
    head = write_release("2.14.1", tmp_path / "head")
    text = head.read_text()
    entry = "- func: _add_relu.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  variants: function\n  dispatch:\n"
    assert entry in text
    head.write_text(text.replace(entry, entry + "    XPU: add_relu_xpu\n", 1))
    pr = fake.add_pull(REPO)
    argv = ["comment", "--repo", REPO, "--pr", str(pr), releases["2.14.1"], str(head)]
    dry = opdrift(*argv, "--dry-run")
    assert dry.code == 0, dry.err
    assert "only in-tree kernels changed" in dry.out + dry.err and "would post nothing" in dry.out + dry.err
    run = opdrift(*argv)
    assert run.code == 0, run.err
    assert fake.comments(REPO, pr) == []
    assert "`XPU`" in gh_env.read_text()  # the job summary still tells
    config = tmp_path / "opdrift.yml"
    config.write_text("comment_on_kernel_keys: true\n")
    run = opdrift(*argv, "--config", str(config))
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    assert "`XPU`" in str(mine["body"])


def test_cli_comment_is_not_quiet_when_a_dispatch_subscriber_lost_a_kernel(
    fake: FakeGitHub,
    gh_env: Path,
    releases: dict[str, str],
    tmp_path: Path,
    opdrift: Opdrift,
) -> None:
    """Only in-tree kernel keys changed, but `histc` lost its XPU kernel: the XPU subscriber's backend
    now lacks it, so the comment is posted and mentions them."""
    head = write_release("2.14.1", tmp_path / "head")
    text = head.read_text()
    kernel = "    XPU: _histc_xpu\n"
    assert text.count(kernel) == 1
    head.write_text(text.replace(kernel, "", 1))
    config = tmp_path / "opdrift.yml"
    config.write_text("subscriptions:\n  - who: ['@xpu-team']\n    backend: {kind: dispatch, key: XPU}\n")
    pr = fake.add_pull(REPO)
    run = opdrift(
        "comment", "--repo", REPO, "--pr", str(pr), "--config", str(config), releases["2.14.1"], str(head)
    )
    assert run.code == 0, run.err
    (mine,) = bot_comments(fake, pr)
    assert "@xpu-team" in str(mine["body"]) and "`histc`" in str(mine["body"])
