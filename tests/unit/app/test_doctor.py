"""`opdrift doctor` against the fake GitHub over real HTTP: one line per call the workflows make, with
the status, the permissions GitHub names and the rate limit left; a token that lacks a permission
gets the failing line naming it and the fix; --write opens, comments, deletes and closes."""

from __future__ import annotations

import re

import pytest
from clirun import Opdrift
from datafiles import release_text
from fake_github import FakeGitHub

from opdrift.model import NATIVE_PATH, TAGS_PATH

REPO = "downstream/backend"
UPSTREAM = "pytorch/pytorch"
TOKEN = "ghp_doctor0000000000000000000000000000000"
APP_TOKEN = "ghs_doctor0000000000000000000000000000000"


@pytest.fixture
def fake(github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    github_server.add_token(TOKEN, "maintainer", bot=False)
    github_server.add_repo(REPO)
    github_server.add_repo(UPSTREAM)
    files = {
        NATIVE_PATH: release_text("2.14.1").encode(),
        TAGS_PATH: release_text("2.14.1", "tags.yaml").encode(),
    }
    main = github_server.add_commit(UPSTREAM, files, refs=("main",))
    head = github_server.add_commit(
        UPSTREAM, {**files, "README.md": b"PyTorch\n"}, refs=("main",), parent=main
    )
    github_server.add_pull(UPSTREAM, sha=head, base=main)
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.delenv("OPDRIFT_BOT_LOGIN", raising=False)
    return github_server


def _calls(out: str) -> list[tuple[str, str, str, str]]:
    """(verdict, status, method, path without its query) of each line."""
    found = []
    for line in out.splitlines():
        m = re.match(r"(ok|FAIL|SKIP) +(\d{3}|---) (\w+) (\S+)", line)
        assert m is not None, line
        verdict, status, method, path = m.groups()
        found.append((verdict, status, method, path.split("?")[0]))
    return found


def test_every_call_answers_and_write_leaves_one_closed_issue(
    fake: FakeGitHub, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    run = opdrift("doctor", "--repo", REPO, "--write")
    assert run.code == 0, run.out + run.err
    calls = _calls(run.out)
    assert {verdict for verdict, *_ in calls} == {"ok"}, run.out
    shapes = [
        (status, method, re.sub(r"/[0-9a-f]{40}", "/SHA", re.sub(r"\.\.\.", "/", path)))
        for _, status, method, path in calls
    ]
    assert shapes == [
        ("200", "GET", f"/repos/{REPO}"),
        ("200", "GET", f"/repos/{REPO}/issues"),
        ("200", "GET", "/user"),
        ("200", "GET", f"/repos/{UPSTREAM}/pulls"),
        ("200", "GET", f"/repos/{UPSTREAM}/commits/main"),
        ("200", "GET", f"/repos/{UPSTREAM}/git/commits/SHA"),
        ("200", "GET", f"/repos/{UPSTREAM}/compare/SHA/SHA"),
        ("200", "GET", f"/repos/{UPSTREAM}/git/trees/SHA"),
        ("200", "GET", f"/repos/{UPSTREAM}/git/blobs/SHA"),
        ("201", "POST", f"/repos/{REPO}/issues"),
        ("201", "POST", f"/repos/{REPO}/issues/1/comments"),
        ("204", "DELETE", calls[11][3]),
        ("200", "PATCH", f"/repos/{REPO}/issues/1"),
        ("200", "GET", "/rate_limit"),
    ]
    assert re.fullmatch(rf"/repos/{REPO}/issues/comments/\d+", calls[11][3])
    assert "rate limit 4999 left" in run.out.splitlines()[0]
    (issue,) = fake.issues(REPO)
    assert issue["state"] == "closed" and issue["state_reason"] == "not_planned"
    assert fake.comments(REPO, 1) == []
    # A classic token's answers name no permission; the doctor says so rather than guessing.
    assert "needs: not said" in run.out.splitlines()[0]


def test_a_token_without_issues_permission_gets_the_line_that_names_it_and_the_fix(
    fake: FakeGitHub, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workflow's token with `contents: read` only: GET /user is refused (the bot's login is set),
    # the upstream is public, the repository's issues need `issues: read`.
    fake.add_token(APP_TOKEN, "github-actions[bot]", permissions={"contents": "read"}, repository=REPO)
    monkeypatch.setenv("GITHUB_TOKEN", APP_TOKEN)
    monkeypatch.setenv("OPDRIFT_BOT_LOGIN", "github-actions[bot]")
    run = opdrift("doctor", "--repo", REPO)
    assert run.code == 1, run.out + run.err
    lines = run.out.splitlines()
    (failed,) = [line for line in lines if line.startswith("FAIL")]
    assert f"403 GET /repos/{REPO}/issues?" in failed
    assert "needs issues: read" in failed
    assert "fix: the token lacks `issues: read`" in failed and "the job's `permissions:`" in failed
    assert lines[0].startswith("ok") and "needs metadata: read" in lines[0]
    assert any("200 GET /users/github-actions%5Bbot%5D" in line for line in lines)
    assert fake.writes() == []  # without --write nothing is written
