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

from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
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
