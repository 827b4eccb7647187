"""Hostile API answers (endless pages, huge bodies, slow answers, links off the API root) end within the budget, in bounded memory, and never
send a request, or the token, off the configured API root. Real HTTP against the fake GitHub API."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clirun import ROOT, Opdrift, opdrift_process
from datafiles import release_text
from fake_github import Drip, EndlessPages, FakeGitHub, Flood, Misdirect

from opdrift.errors import ApiLimitError, SourceError
from opdrift.github.api import ApiSettings
from opdrift.github.ghsource import read_github_source
from opdrift.github.limits import MAX_JSON_BYTES, MAX_PAGES, Answer, ApiRoot, Guard
from opdrift.github.retry import RetryPolicy
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
from opdrift.publish.github import CONNECTION_HOOKS, RepoClient, Settings
from opdrift.publish.pr_comment import publish_pr_comment

REPO = "pytorch/pytorch"
TOKEN = "ghs_b0undsT0ken1234567890abcdefgh"
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    github_server.page_size = 3
    github_server.add_token(TOKEN, "opdrift-bot")
    github_server.add_repo(REPO)
    github_server.add_commit(
        REPO,
        {path: release_text("2.14.1", name).encode() for path, name in NAMES.items()},
        refs=("v2.14.1",),
    )
    return github_server


@pytest.fixture
def evil() -> Iterator[FakeGitHub]:
    """Another server that would gladly take the token: it must never see a request."""
    with FakeGitHub() as server:
        yield server


# A dripped answer (tests/fake_github.py's Drip) takes a minute or more in full: its status line and
# headers alone are well over 100 bytes, at 0.5 s a byte. A call that ends at its deadline (0.5-2 s
# here) ends long before, and this bound tells the two apart with room for a loaded shared machine. It
# is not a timing (bench/ has those): the budget's own message says which bound ended the call.
LONG_BEFORE_THE_DRIP_ENDS = 15.0


def client_for(fake: FakeGitHub, seconds: float = 30.0) -> RepoClient:
    policy = RetryPolicy(total_seconds=seconds, first_delay=0.05, max_delay=0.2, max_attempts=4)
    settings = Settings(
        repo=REPO, token=TOKEN, api_url=fake.api_url, timeout=5, retry=policy, seconds_between_writes=None
    )
    return RepoClient(settings)


def post(client: RepoClient, pr: int) -> object:
    return publish_pr_comment(client, pr, "the report", has_drift=True, clean_body="clean", dry_run=False)


def gh_env(fake: FakeGitHub, tmp_path: Path) -> dict[str, str]:
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": fake.api_url,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }


# --- pagination: a page cap and the request budget --------------------------------------------------


def test_an_endless_link_next_stops_at_the_page_cap_within_the_budget(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    fake.add_comment(REPO, pr, "hello", author="alice")
    fake.misbehave("GET", rf"/issues/{pr}/comments$", EndlessPages())
    client = client_for(fake, seconds=30.0)
    with pytest.raises(ApiLimitError, match=rf"another page after {MAX_PAGES} pages"):
        post(client, pr)
    listed = [r for r in fake.requests if r.path.startswith(f"/repos/{REPO}/issues/{pr}/comments")]
    assert len(listed) == MAX_PAGES  # before: 1,200 requests and counting
    assert fake.writes() == []


@pytest.mark.slow
def test_the_cli_ends_an_endless_listing_with_one_line_and_exit_2(
    fake: FakeGitHub, tmp_path: Path, release_file: Callable[[str], Path]
) -> None:
    pr = fake.add_pull(REPO)
    fake.add_comment(REPO, pr, "hello", author="alice")
    fake.misbehave("GET", rf"/issues/{pr}/comments", EndlessPages())
    run = opdrift_process(
        "comment", "--repo", REPO, "--pr", str(pr), str(release_file("2.14.1")), str(release_file("2.15.0")),
        "--retry-budget", "30", env=gh_env(fake, tmp_path),
    )  # fmt: skip
    assert run.code == 2, run.err
    assert run.err.count("\n") == 1 and run.err.startswith("opdrift: error: ")
    assert "another page" in run.err
    assert len(fake.requests) < 60
    assert fake.writes() == []


def test_a_call_sends_at_most_the_request_budget(fake: FakeGitHub) -> None:
    guard = Guard(ApiRoot.parse(fake.api_url), seconds=10.0, max_requests=3)
    from opdrift.github.limits import new_session

    session = new_session(TOKEN)
    for _ in range(3):
        guard.exchange(session, "GET", f"{fake.api_url}/repos/{REPO}", timeout=5)
    with pytest.raises(ApiLimitError, match="more than 3 requests"):
        guard.exchange(session, "GET", f"{fake.api_url}/repos/{REPO}", timeout=5)
    assert len(fake.requests) == 3
    guard.restart(10.0)  # the next call has its own budget
    guard.exchange(session, "GET", f"{fake.api_url}/repos/{REPO}", timeout=5)


# --- a deadline per call, not a socket timeout per read ---------------------------------------------


@pytest.mark.slow
def test_a_dripping_answer_ends_the_gh_source_at_its_budget(fake: FakeGitHub) -> None:
    fake.misbehave("GET", r"/commits/", Drip(0.5))  # each byte well inside any socket timeout
    settings = ApiSettings(api_url=fake.api_url, token=TOKEN, retry=RetryPolicy(total_seconds=2.0))
    start = time.monotonic()
    with pytest.raises(ApiLimitError, match=r"no complete answer .* within the 2s budget"):
        read_github_source(f"gh:{REPO}@v2.14.1", settings)
    assert time.monotonic() - start < LONG_BEFORE_THE_DRIP_ENDS


@pytest.mark.slow
def test_stats_of_a_dripping_gh_source_is_one_line_at_the_budget(
    fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, opdrift: Opdrift
) -> None:
    import opdrift.github.api as api

    monkeypatch.setattr(api, "READ_BUDGET", 2.0)
    for name, value in gh_env(fake, tmp_path).items():
        monkeypatch.setenv(name, value)
    fake.misbehave("GET", r"/git/trees/", Drip(0.5))
    start = time.monotonic()
    run = opdrift("stats", f"gh:{REPO}@v2.14.1")
    assert time.monotonic() - start < LONG_BEFORE_THE_DRIP_ENDS  # before: still waiting after 180 s
    assert run.code == 2
    assert run.err.count("\n") == 1 and "within the 2s budget" in run.err
    assert TOKEN not in run.err


@pytest.mark.slow
def test_a_dripping_answer_ends_a_publish_call_at_the_retry_budget(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    fake.misbehave("GET", rf"/issues/{pr}$", Drip(0.5))
    start = time.monotonic()
    with pytest.raises(ApiLimitError, match="within the 2s budget"):
        post(client_for(fake, seconds=2.0), pr)
    assert time.monotonic() - start < LONG_BEFORE_THE_DRIP_ENDS
    assert fake.writes() == []


# --- a size cap on every JSON body, read streaming ----------------------------------------------------

# The child's own peak: VmHWM counts only the memory of the program exec'd, where ru_maxrss also keeps
# the peak of the test process it was forked from.
PEAK_RSS = """
import re, resource, sys
from opdrift.cli import main
code = main(sys.argv[1:])
try:
    with open("/proc/self/status") as fh:
        peak = int(re.search(r"VmHWM:\\s*([0-9]+) kB", fh.read()).group(1))
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"peak-rss-kib={peak}", file=sys.stderr)
sys.exit(code)
"""


def _peak_rss_run(argv: list[str], env: dict[str, str]) -> tuple[int, str, int]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *argv],
        capture_output=True, text=True, env=base | env | {"PYTHONPATH": str(ROOT)},
        cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    *lines, last = done.stderr.splitlines()
    return done.returncode, "\n".join(lines) + "\n", int(last.removeprefix("peak-rss-kib="))


@pytest.mark.parametrize("declare_length", [False, True], ids=["streamed", "content-length"])
def test_a_600_mb_json_answer_is_refused_in_bounded_memory(
    fake: FakeGitHub, tmp_path: Path, declare_length: bool
) -> None:
    fake.misbehave("GET", r"/commits/", Flood(600_000_000, declare_length=declare_length))
    code, err, peak_kib = _peak_rss_run(["stats", f"gh:{REPO}@v2.14.1"], gh_env(fake, tmp_path))
    assert code == 2, err
    assert err.count("\n") == 1 and f"over the {MAX_JSON_BYTES}-byte limit" in err
    # The cap is 32 MiB; before, this answer took 1.28 GB.
    assert peak_kib < 150 * 1024, f"peak RSS {peak_kib // 1024} MiB"


def test_a_flooded_listing_is_refused_by_the_publisher(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    fake.misbehave("GET", rf"/issues/{pr}/comments", Flood(MAX_JSON_BYTES + 5_000_000))
    with pytest.raises(ApiLimitError, match=r"over the \d+-byte limit"):
        post(client_for(fake), pr)
    assert fake.writes() == []


def test_an_answer_nested_without_end_or_broken_json_is_one_named_error() -> None:
    guard = Guard(ApiRoot.parse("https://api.github.com"), seconds=5)
    with pytest.raises(ApiLimitError, match="nested too deeply"):
        guard._inspect(Answer("https://api.github.com/x", 200, "OK", {}, b"[" * 200_000))
    with pytest.raises(ApiLimitError, match="not valid JSON"):
        guard._inspect(Answer("https://api.github.com/x", 500, "", {}, b"{oops"))


# --- every URL followed stays on the configured API root --------------------------------------------


@pytest.mark.parametrize("optimize", [False, True], ids=["python", "python -O"])
@pytest.mark.slow
def test_a_comment_url_naming_another_host_is_never_followed(
    fake: FakeGitHub, evil: FakeGitHub, tmp_path: Path, release_file: Callable[[str], Path], optimize: bool
) -> None:
    pr = fake.add_pull(REPO)
    fake.add_comment(REPO, pr, "<!-- opdrift:pr-comment -->\nold report", author="opdrift-bot", bot=True)
    fake.misbehave("GET", rf"/issues/{pr}/comments", Misdirect(evil.api_url))
    run = opdrift_process(
        "comment", "--repo", REPO, "--pr", str(pr),
        str(release_file("2.14.1")), str(release_file("2.15.0")),
        optimize=optimize, env=gh_env(fake, tmp_path),
    )  # fmt: skip
    assert run.code == 2, run.err
    assert run.err.count("\n") == 1 and "Traceback" not in run.err
    assert f"outside the configured API root {fake.api_url}" in run.err
    assert evil.requests == []  # before, under -O: the PATCH, with the token, went there
    assert fake.writes() == []


def test_a_link_to_another_host_is_never_followed(fake: FakeGitHub, evil: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    for i in range(5):
        fake.add_comment(REPO, pr, f"comment {i}", author="alice")
    fake.misbehave("GET", rf"/issues/{pr}/comments", Misdirect(evil.api_url), times=1)
    with pytest.raises(ApiLimitError, match="Link 'next'"):
        post(client_for(fake), pr)
    assert evil.requests == []


def test_a_relative_redirect_under_the_root_is_followed(fake: FakeGitHub) -> None:
    sha = fake.repos[REPO].refs["v2.14.1"]
    fake.fail("GET", r"/commits/old-name$", 301, headers={"Location": f"/api/v3/repos/{REPO}/commits/{sha}"})
    files = read_github_source(f"gh:{REPO}@old-name", ApiSettings(api_url=fake.api_url, token=TOKEN))
    assert files.meta.commit == sha


def test_a_malformed_link_header_is_one_named_error(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    fake.fail("GET", rf"/issues/{pr}/comments", 200, headers={"Link": f'<{fake.api_url}/x>;rel="next"'})
    with pytest.raises(ApiLimitError, match="Link header that is not"):
        post(client_for(fake), pr)  # PyGithub itself would fail with a bare ValueError


def test_a_source_file_that_opens_like_json_is_not_read_as_an_answer(fake: FakeGitHub) -> None:
    flow = b"[{func: 'opdrift_flow(Tensor self) -> Tensor'}]\n"
    fake.add_commit(REPO, {NATIVE_PATH: flow}, refs=("flow",))
    files = read_github_source(f"gh:{REPO}@flow", ApiSettings(api_url=fake.api_url, token=TOKEN))
    assert files.native_functions is not None
    assert files.native_functions.text == flow.decode()


def test_a_redirect_off_the_root_is_not_followed_by_the_gh_source(fake: FakeGitHub, evil: FakeGitHub) -> None:
    fake.fail("GET", r"/commits/", 302, headers={"Location": f"{evil.api_url}/repos/{REPO}/commits/x"})
    settings = ApiSettings(api_url=fake.api_url, token=TOKEN)
    with pytest.raises(ApiLimitError, match="a redirect points to"):
        read_github_source(f"gh:{REPO}@v2.14.1", settings)
    assert evil.requests == []


def test_the_connection_refuses_another_host_even_if_pygithub_asks(
    fake: FakeGitHub, evil: FakeGitHub
) -> None:
    """The backstop under PyGithub's own (assert-based) check: whatever URL PyGithub was led to, the
    request goes out only under the root."""
    client = client_for(fake)
    requester = client._gh.requester
    connection = getattr(requester, CONNECTION_HOOKS[1])("127.0.0.1", int(evil.root.rsplit(":", 1)[1]))
    connection.request(
        "PATCH", "/api/v3/repos/x/y/issues/comments/1", '{"body": "x"}', {"Authorization": "t"}
    )
    with pytest.raises(ApiLimitError, match="outside the configured API root"):
        connection.getresponse()
    assert evil.requests == []


def test_every_request_of_a_publish_call_goes_through_the_guard(fake: FakeGitHub) -> None:
    pr = fake.add_pull(REPO)
    for i in range(7):
        fake.add_comment(REPO, pr, f"comment {i}", author="alice")
    client = client_for(fake)
    post(client, pr)
    assert client.requests_sent == len(fake.requests) > 3


@pytest.mark.parametrize(
    ("url", "held"),
    [
        ("http://127.0.0.1:8080/api/v3/repos/a/b", True),
        ("http://127.0.0.1:8080/api/v3", True),
        ("http://127.0.0.1:8081/api/v3/repos/a/b", False),  # another port
        ("https://127.0.0.1:8080/api/v3/repos/a/b", False),  # another scheme
        ("http://127.0.0.1:8080/api/v3x/repos", False),  # a sibling of the prefix
        ("http://127.0.0.1:8080/other/repos", False),
        ("http://127.0.0.1:8080/api/v3/../../x", False),  # dot segments a server may resolve
        ("http://127.0.0.1:8080/api/v3/%2e%2e/x", False),
        ("http://user@127.0.0.1:8080/api/v3/x", False),
        ("http://127.0.0.1.evil.test:8080/api/v3/x", False),
        ("http://127.0.0.1:bad/api/v3/x", False),
    ],
)
def test_what_the_api_root_holds(url: str, held: bool) -> None:
    assert ApiRoot.parse("http://127.0.0.1:8080/api/v3/").holds(url) is held


def test_github_com_root_holds_only_api_github_com() -> None:
    root = ApiRoot.parse("https://api.github.com")
    assert root.holds("https://api.github.com/repositories/1/issues?page=2")
    assert root.holds("https://API.github.com:443/repos/a/b")
    assert not root.holds("https://uploads.github.com/repos/a/b")
    assert not root.holds("http://api.github.com/repos/a/b")
    with pytest.raises(SourceError):
        read_github_source("gh:a/b@main", ApiSettings(api_url="ftp://api.github.com"))


def test_the_error_names_only_the_scheme_and_host_of_a_foreign_url() -> None:
    root = ApiRoot.parse("https://api.github.com")
    with pytest.raises(ApiLimitError) as caught:
        root.check(f"https://{TOKEN}:x@evil.test/path/{TOKEN}?t={TOKEN}", "a URL in GitHub's answer")
    assert "'https://evil.test'" in caught.value.message
    assert TOKEN not in caught.value.message


def test_one_exchange_has_its_own_deadline_within_the_call(fake: FakeGitHub) -> None:
    """Past its own deadline an exchange is a timeout, which the caller's retry policy may retry."""
    import requests

    from opdrift.github.limits import new_session

    fake.misbehave("GET", rf"/repos/{REPO}$", Drip(0.5), times=1)
    guard = Guard(ApiRoot.parse(fake.api_url), seconds=30.0, request_seconds=0.5)
    session = new_session(TOKEN)
    start = time.monotonic()
    with pytest.raises(requests.Timeout, match=r"within 0.5s"):
        guard.exchange(session, "GET", f"{fake.api_url}/repos/{REPO}", timeout=5)
    assert time.monotonic() - start < LONG_BEFORE_THE_DRIP_ENDS
    assert guard.exchange(session, "GET", f"{fake.api_url}/repos/{REPO}", timeout=5).status == 200
