"""GitHub as it really answers (issue 30): what github.com sends that a fake written from the docs
alone would not, each against the fake GitHub API over real HTTP. The shapes come from GitHub's
recorded answers in PyGithub's tests/ReplayData (cited per test) and from GitHub's OpenAPI
description (tests/test_openapi_conformity.py checks the fake against it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from datafiles import release_text
from fake_github import FakeGitHub
from watch_upstream import Run, Upstream, rows_of

import bot.publish.pulls as pulls_module
from bot.app.watch import CLOSED_UNLABELLED
from bot.app.watch_judge import who_by_backend
from bot.app.watch_state import read_state
from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
from bot.publish.config import BotConfig
from bot.publish.ghsource import ApiSettings, read_github_source
from bot.publish.github import RepoClient, RetryPolicy, Settings
from bot.publish.limits import link_urls
from bot.publish.pr_comment import PR_MARKER, publish_pr_comment
from bot.publish.pulls import PullsClient

REPO = "pytorch/pytorch"
TOKEN = "ghs_realgithubt0ken000000000000000000"
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}
RETRY = RetryPolicy(total_seconds=30, first_delay=0.01, max_delay=0.02, max_attempts=4)


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    github_server.page_size = 3
    github_server.add_token(TOKEN, "opdrift-bot")
    github_server.add_repo(REPO)
    github_server.add_commit(
        REPO,
        {path: release_text("2.14.1", name).encode() for path, name in NAMES.items()},
        refs=("main", "v2.14.1"),
        date="2026-03-01T10:00:00Z",
    )
    return github_server


def client_for(fake: FakeGitHub, **kw: object) -> RepoClient:
    settings = Settings(
        repo=REPO, token=TOKEN, api_url=fake.api_url, timeout=5, retry=RETRY, seconds_between_writes=None,
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return RepoClient(settings)


@pytest.fixture
def pulls(fake: FakeGitHub, tmp_path: Path) -> Iterator[PullsClient]:
    client = PullsClient(
        ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=tmp_path, retry=RETRY), REPO
    )
    yield client
    client.close()


def open_pull(fake: FakeGitHub, changes: dict[str, bytes] | None = None, **kw: object) -> int:
    """A pull request on top of main with CHANGES (path → content)."""
    repo = fake.repos[REPO]
    main = repo.refs["main"]
    files = {p: fake.blobs[oid] for p, oid in repo.commits[main].files.items()}
    head = fake.add_commit(REPO, {**files, **(changes or {})}, parent=main, date="2026-03-02T10:00:00Z")
    return fake.add_pull(REPO, sha=head, base=main, **kw)  # type: ignore[arg-type]


# --- Link: a deprecation notice is read past, pages are still checked ------------------------------


def test_link_parts_of_other_relations_and_with_parameters_are_read_past() -> None:
    value = (
        '<https://github.blog/changelog/x/>; rel="deprecation"; type="text/html", '
        '<https://api.github.com/repos/a/b/pulls?page=2>; rel="next"'
    )
    assert list(link_urls(value)) == [("next", "https://api.github.com/repos/a/b/pulls?page=2")]


def test_an_answer_with_a_deprecation_link_is_read_by_every_client(
    fake: FakeGitHub, pulls: PullsClient
) -> None:
    """Before, the whole answer was refused ("a Link header that is not <URL>; rel=NAME"), and the
    deprecation link's URL, off the API root, would have been refused again had it parsed."""
    fake.deprecation_links = True
    pr = open_pull(fake, {NATIVE_PATH: release_text("2.15.0", "native_functions.yaml").encode()})
    for i in range(5):  # two pages of comments: the pages are followed through the notice
        fake.add_comment(REPO, pr, f"comment {i}", author="alice")
    fake.add_comment(REPO, pr, f"{PR_MARKER}\nold", author="opdrift-bot", bot=True)
    out = publish_pr_comment(
        client_for(fake), pr, "the report", has_drift=True, clean_body="clean", dry_run=False
    )
    assert out.action == "updated"
    files = read_github_source(f"gh:{REPO}@v2.14.1", ApiSettings(api_url=fake.api_url, token=TOKEN))
    assert files.native_functions is not None
    scan = pulls.scan(None)
    assert [p.number for p in scan.pulls] == [pr] and scan.complete
    assert pulls.touched(scan.pulls[0]) == (NATIVE_PATH,)


# --- landed: the merge bot's close, then its label; a revert's label; labels that stay ----------------


@pytest.mark.parametrize(
    ("state", "labels", "expected"),
    [
        ("closed", [], False),  # closed unmerged, or the merge bot's push before its label call
        ("closed", ["Merged"], True),
        ("closed", ["merged", "ciflow/trunk"], True),
        ("open", ["Merged", "Reverted"], False),  # reverted: the revert bot reopens it
        ("closed", ["Merged", "Reverted"], False),  # pytorch/test-infra#8085: reverted, then abandoned
        ("closed", ["Merged", "Reverted", "MergedX1"], True),  # landed again
        ("closed", ["Merged", "Reverted", "MergedX1", "RevertedX1"], False),
        ("closed", ["Merged", "Reverted", "MergedX1", "RevertedX1", "MergedX2"], True),
        ("closed", ["Merged-ish", "not merged"], False),
    ],
)
def test_landed_counts_the_merge_bots_labels_against_the_revert_bots(
    state: str, labels: list[str], expected: bool
) -> None:
    assert pulls_module.landed(state, None, labels) is expected


def test_a_reverted_then_abandoned_pr_is_closed_not_merged_over_the_api(
    fake: FakeGitHub, pulls: PullsClient
) -> None:
    pr = open_pull(fake)
    fake.close_pull(REPO, pr, labels=("Merged",))  # the bot's push and label, as one move here
    fake.label_pull(REPO, pr, "Reverted")  # reverted: reopened, then closed for good
    (pull,) = pulls.scan("2026-01-01T00:00:00Z").pulls
    assert pull.state == "closed"  # before: "merged", from the sticky `Merged` label
    fake.label_pull(REPO, pr, "MergedX1")
    assert pulls.pull(pr).state == "merged"


def test_a_pr_closed_before_its_merged_label_is_still_named_as_landed(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig
) -> None:
    """The merge bot's push closes the PR; its `Merged` label comes in a later call. A run between
    the two saw it closed unlanded: before, its row went, and the next run, seeing it merged, had no
    row to name under "landed"."""
    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(1, heads["a"])
    assert 1 in rows_of(run())
    run.pulls.update(1, state="closed")  # pushed and closed, not labelled yet
    between = run()
    assert 1 in rows_of(between) and between.view.landed == ()
    (kept,) = read_state(between.body, who_by_backend(cfg))[0].retry
    assert (kept.number, kept.reason) == (1, CLOSED_UNLABELLED)
    run.pulls.update(1, state="merged")  # the label: updated_at moves, the listing brings it
    after = run()
    assert [x.number for x in after.view.landed] == [1] and 1 not in rows_of(after)
    assert read_state(after.body, who_by_backend(cfg))[0].retry == ()


def test_a_pr_closed_for_good_leaves_after_one_more_run(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig
) -> None:
    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(1, heads["a"])
    run()
    run.pulls.update(1, state="closed")
    assert 1 in rows_of(run())
    last = run()  # looked at once more (listed again at the watermark, or fetched), still unlabelled
    assert 1 not in rows_of(last) and last.view.landed == ()
    assert read_state(last.body, who_by_backend(cfg))[0].retry == ()
