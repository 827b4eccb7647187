"""The fake GitHub API answers like GitHub, checked against GitHub's own OpenAPI description
(tests/data/github/SOURCES.md): every request the session's fakes received is an operation of that
description (method, path template, query parameters), and the answers they gave (a few per request
shape, `fake_github.Recorder`) follow the operation's response schema. A scenario of its own (the
sticky comment, the weekly issue, a `gh:` source, the watch's listing) runs first, so the check
never depends on which other tests this process ran before it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fake_github
import github_openapi
import pytest
from datafiles import release_text
from fake_github import FakeGitHub, Recorder
from github_json import public_user, simple_user

from opdrift.app.doctor import run_doctor
from opdrift.github.api import ApiSettings
from opdrift.github.ghfiles import materialised
from opdrift.github.ghsource import read_github_source
from opdrift.github.pulls import PullsClient
from opdrift.github.retry import RetryPolicy
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, VERSION_PATH
from opdrift.publish.doctor import Prober
from opdrift.publish.github import RepoClient, Settings
from opdrift.publish.pr_comment import publish_pr_comment
from opdrift.publish.weekly_issue import publish_weekly_issue

REPO = "pytorch/pytorch"
TOKEN = "ghs_conformity000000000000000000000000"
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    github_server.add_token(TOKEN, "opdrift-bot")
    github_server.add_repo(REPO)
    # version.txt names the torch version a gh: SOURCE at a non-tag ref has (read through contents)
    files = {**{p: release_text("2.14.1", n).encode() for p, n in NAMES.items()}, VERSION_PATH: b"2.14.0a0\n"}
    main = github_server.add_commit(REPO, files, refs=("main", "v2.14.1"))
    head = github_server.add_commit(
        REPO, {**files, NATIVE_PATH: release_text("2.15.0").encode()}, parent=main
    )
    github_server.add_pull(REPO, sha=head, base=main)
    return github_server


def _scenario(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """What opdrift's publishing (the sticky comment, the weekly issue with its label and last week's
    closed), sources (a `gh:` snapshot, a `gh:` file), watch (the list, a compare with and without
    its files) and doctor ask of GitHub, recorded apart from the session's (then added to it): this
    check never depends on which other tests ran in this process."""
    session = fake_github.RECORDER
    assert session is not None, "tests/conftest.py turns the recorder on for the session"
    own = Recorder()
    monkeypatch.setattr(fake_github, "RECORDER", own)
    retry = RetryPolicy(total_seconds=30, first_delay=0.01, max_delay=0.02)
    settings = Settings(REPO, TOKEN, api_url=fake.api_url, retry=retry, seconds_between_writes=None)
    client = RepoClient(settings)
    publish_pr_comment(client, 1, "report", has_drift=True, clean_body="clean", dry_run=False)
    publish_pr_comment(client, 1, "report 2", has_drift=True, clean_body="clean", dry_run=False)
    # The second week links and closes the first; its rerun adds a label it lacks.
    for week, labels in (("2026-W48", ("drift",)), ("2026-W49", ("drift",)), ("2026-W49", ("drift", "ops"))):
        publish_weekly_issue(client, title=week, body=lambda _: "b", window_key=week, labels=labels,
                             close_previous=True, dry_run=False)  # fmt: skip
    api = ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=tmp_path, retry=retry)
    read_github_source(f"gh:{REPO}#1:merge-base", api)
    with materialised(f"gh:{REPO}@main:{TAGS_PATH}", api, lambda _: True, warn=lambda _: None):
        pass
    pulls = PullsClient(api, REPO)
    try:
        (pull,) = pulls.scan(None).pulls
        pulls.touched(pull)
    finally:
        pulls.close()
    fake.compare_without_files = True  # GitHub may leave them out: the pull request's own list then
    pulls = PullsClient(ApiSettings(api_url=fake.api_url, token=TOKEN, retry=retry), REPO)
    try:
        pulls.touched(pull)
    finally:
        pulls.close()
    prober = Prober(fake.api_url, TOKEN)
    try:
        assert run_doctor(
            prober, REPO, REPO, bot_login="opdrift-bot", write=True, emit=lambda line: print(line.render())
        )
    finally:
        prober.close()
    session.merge(own.to_json())
    return own


def test_every_request_is_an_operation_of_github_s_and_every_answer_follows_its_schema(
    fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _scenario(fake, tmp_path, monkeypatch)
    found = github_openapi.problems(recorder)
    assert found == [], "\n".join(found[:40])
    # Not vacuous: every operation of the description (opdrift's calls) was asked and its answer checked.
    missing = github_openapi.unchecked(recorder, github_openapi.operations())
    assert missing == [], "never answered: " + ", ".join(missing)


def test_the_check_finds_what_github_would_not_send() -> None:
    """The checker is not vacuous: a list without `direction`'s own values, an issue without its
    number, a pull request whose author is no object, an unknown query parameter, a user without
    its avatar, and an operation never answered."""
    request_problems, answer_problems = github_openapi.request_problems, github_openapi.answer_problems
    assert list(request_problems("GET", "/repos/a/b/pulls?sort=updated&order=desc"))
    assert list(request_problems("DELETE", "/repos/a/b"))
    assert not list(request_problems("GET", "/repos/a/b/git/trees/abc:aten/src"))
    issue = {"id": 1, "number": "1", "title": "t"}
    assert list(answer_problems("GET", "/repos/a/b/issues/N", 200, json.dumps(issue).encode()))
    assert list(answer_problems("GET", "/repos/a/b/pulls", 200, b'[{"user": 3}]'))
    user = simple_user("https://api.github.com", "https://github.com", "someone", 7)
    assert not list(answer_problems("GET", "/users/someone", 200, json.dumps(public_user(user)).encode()))
    del user["avatar_url"]
    assert list(answer_problems("GET", "/users/someone", 200, json.dumps(public_user(user)).encode()))
    recorder = Recorder()
    recorder.add("GET", "/repos/a/b/issues/3", 404, {"message": "Not Found"})
    assert github_openapi.unchecked(recorder, {("GET", "/repos/{owner}/{repo}/issues/{issue_number}")})


_SESSION_TEST = """
import urllib.request

from fake_github import FakeGitHub


def test_one() -> None:
    server = FakeGitHub()
    server.start()
    try:
        server.add_repo("o/{name}")
        {spoil}
        urllib.request.urlopen(server.api_url + "/repos/o/{name}").read()
    finally:
        server.stop()
"""


@pytest.mark.slow
def test_the_session_check_sees_every_xdist_worker_s_requests(tmp_path: Path) -> None:
    """Under `pytest -n 2` each worker's fakes record only that worker's requests; the session's
    check (tests/openapi_session.py) gets them all and fails the run on a bad answer, whichever
    worker gave it."""
    tests = Path(__file__).parents[1]
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(tests)!r})\nimport fake_github\n"
        "from openapi_session import pytest_sessionfinish, pytest_testnodedown  # noqa: F401\n"
        "fake_github.RECORDER = fake_github.Recorder()\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_good.py").write_text(_SESSION_TEST.format(name="good", spoil="pass"))
    spoil = (
        'del server.users["o"]["avatar_url"]'  # the owner, inside the repository, as GitHub never sends it
    )
    (tmp_path / "test_bad.py").write_text(_SESSION_TEST.format(name="bad", spoil=spoil))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *args],
            cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip

    both = run("-n", "2", "--dist", "loadfile")
    assert both.returncode == 1, both.stdout + both.stderr
    assert "2 passed" in both.stdout
    assert "2 requests and 2 answers of the fakes checked, 1 problem(s)" in both.stdout, both.stdout
    assert "GET /repos/{owner}/{repo} 200 at owner: 'avatar_url' is a required property" in both.stdout
    good = run("-n", "2", "--dist", "loadfile", "test_good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "1 requests and 1 answers of the fakes checked, 0 problem(s)" in good.stdout
