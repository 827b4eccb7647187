"""GitHub as it really answers: what github.com sends that a fake written from the docs
alone would not, each against the fake GitHub API over real HTTP. The shapes come from GitHub's
recorded answers in PyGithub's tests/ReplayData (cited per test) and from GitHub's OpenAPI
description (tests/integration/test_openapi_conformity.py checks the fake against it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from datafiles import release_text
from fake_github import FakeGitHub
from watch_upstream import Run, Upstream, rows_of

import opdrift.github.pulljson as pulljson
import opdrift.publish.github as github_module
from opdrift.app.watch import CLOSED_UNLABELLED
from opdrift.app.watch_judge import who_by_backend
from opdrift.app.watch_state import read_state
from opdrift.config.file import BotConfig
from opdrift.errors import PublishError
from opdrift.github.api import ApiSettings
from opdrift.github.ghsource import read_github_source
from opdrift.github.limits import link_urls
from opdrift.github.pulls import PullsClient
from opdrift.github.retry import RetryPolicy
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
from opdrift.publish.github import RepoClient, Settings
from opdrift.publish.pr_comment import PR_MARKER, publish_pr_comment

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


ROOT = Path(__file__).resolve().parents[2]


def client_for(fake: FakeGitHub, token: str = TOKEN, **kw: object) -> RepoClient:
    settings = Settings(
        repo=REPO, token=token, api_url=fake.api_url, timeout=5, retry=RETRY, seconds_between_writes=None,
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return RepoClient(settings, sleep=lambda _: None)


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
    assert pulljson.landed(state, None, labels) is expected


def test_a_reverted_then_abandoned_pr_is_closed_not_merged_over_the_api(
    fake: FakeGitHub, pulls: PullsClient
) -> None:
    pr = open_pull(fake)
    fake.land_pull(REPO, pr)  # the merge bot: pushed to main, closed, then labelled `Merged`
    fake.revert_pull(REPO, pr)  # the revert bot: main put back, `Reverted`, reopened
    fake.close_pull(REPO, pr)  # then closed for good
    (pull,) = pulls.scan("2026-01-01T00:00:00Z").pulls
    assert pull.state == "closed"  # before: "merged", from the sticky `Merged` label
    fake.land_pull(REPO, pr)  # landed again: `MergedX1`
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


# --- permissions: what each job's calls need, and a 403 that names it -------------------------------


def test_the_pr_comment_needs_issues_read_and_the_403_says_so(fake: FakeGitHub) -> None:
    """The poster's job had `contents: read` and `pull-requests: write`: GET issues/N then answers 403
    (GitHub asks `issues: read` for it, PyGithub's tests/ReplayData/Issue.setUp.txt), and the error
    blamed `pull-requests: write`, which the job had."""
    pr = open_pull(fake)
    token = "ghs_jobtoken0000000000000000000000000"
    fake.add_token(token, "github-actions[bot]", permissions={"contents": "read", "pull-requests": "write"})
    with pytest.raises(PublishError) as err:
        publish_pr_comment(
            client_for(fake, token, bot_login="github-actions[bot]"), pr, "the report",
            has_drift=True, clean_body="clean", dry_run=False,
        )  # fmt: skip
    assert "the token needs `issues: read`" in str(err.value) and "\n" not in str(err.value)
    fake.add_token(token, "github-actions[bot]", permissions=_job("examples/pytorch/pr-drift-comment.yml"))
    out = publish_pr_comment(
        client_for(fake, token, bot_login="github-actions[bot]"), pr, "the report",
        has_drift=True, clean_body="clean", dry_run=False, head_sha=fake.repos[REPO].heads[pr][2],
    )  # fmt: skip
    assert out.action == "created"


def _job(workflow: str) -> dict[str, str]:
    (job,) = yaml.safe_load((ROOT / workflow).read_text(encoding="utf-8"))["jobs"].values()
    return dict(job["permissions"])


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        ("issues=read", "issues: read"),
        ("issues=read; pull_requests=read", "issues: read` or `pull-requests: read"),
        (
            "contents=write; contents=write,workflows=write",
            "contents: write` or `contents: write` and `workflows: write",
        ),
        ("", None),
        ("issues=read`; rm -rf", None),  # the sender's text: repeated only when it is names and levels
    ],
)
def test_the_accepted_permissions_header_in_a_workflows_words(header: str, shown: str | None) -> None:
    assert github_module.needs_permission(header) == shown


# --- GET /user: only "not accessible by integration" means the token cannot read it -----------------


def test_a_rate_limited_get_user_is_waited_out_not_answered_with_a_guessed_login(fake: FakeGitHub) -> None:
    """Before, any 403 from GET /user took `login_if_refused` (github-actions[bot]) for the login: a
    personal token's bot then found none of its comments and posted a second sticky comment."""
    pr = open_pull(fake)
    fake.add_comment(REPO, pr, f"{PR_MARKER}\nold", author="opdrift-bot", bot=True)
    fake.fail(
        "GET", r"^/user$", 403, message="API rate limit exceeded for user ID 1.",
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()))},
    )  # fmt: skip
    client = client_for(fake, login_if_refused="github-actions[bot]")
    out = publish_pr_comment(client, pr, "new", has_drift=True, clean_body="clean", dry_run=False)
    assert out.action == "updated" and len(fake.comments(REPO, pr)) == 1
    assert [r.path for r in fake.requests].count("/user") == 2


def test_an_installation_token_refused_get_user_takes_the_given_login(fake: FakeGitHub) -> None:
    pr = open_pull(fake)
    fake.add_token("ghs_app00000000000000000000000000000", "my-app[bot]", user_endpoint=False)
    fake.add_comment(REPO, pr, f"{PR_MARKER}\nold", author="my-app[bot]", bot=True)
    client = client_for(fake, "ghs_app00000000000000000000000000000", login_if_refused="my-app[bot]")
    out = publish_pr_comment(client, pr, "new", has_drift=True, clean_body="clean", dry_run=False)
    assert out.action == "updated"


def _steps(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for job_id, job in data.get("jobs", {}).items():
        for step in job.get("steps", []):
            yield f"{path.relative_to(ROOT)} {job_id} {step.get('name', step.get('uses', ''))}", step


WORKFLOWS = sorted([*(ROOT / ".github" / "workflows").glob("*.yml"), *(ROOT / "examples").glob("*/*.yml")])


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_step_that_passes_a_secret_token_also_passes_the_login(path: Path) -> None:
    """An App's installation token is refused GET /user like the workflow's own; the action's
    `bot-login` default (github-actions[bot]) would then be a wrong guess. With the login given (or
    empty: a run that cannot know it stops in one line naming bot_login) nothing is guessed."""
    for where, step in _steps(path):
        given = {str(k): str(v) for k, v in dict(step.get("with") or {}).items()}  # type: ignore[call-overload]
        env = {str(k): str(v) for k, v in dict(step.get("env") or {}).items()}  # type: ignore[call-overload]
        if "secrets." in given.get("token", ""):
            assert "bot-login" in given, where
            assert "secrets." in given["bot-login"] or "vars." in given["bot-login"], where
        if "secrets." in env.get("GITHUB_TOKEN", ""):
            assert "OPDRIFT_BOT_LOGIN" in env, where


# --- null and optional fields -------------------------------------------------------------------------


def test_a_pr_whose_author_is_null_goes_to_the_retry_list_and_the_scan_goes_on(
    fake: FakeGitHub, pulls: PullsClient
) -> None:
    """A deleted account's pull request has ``"user": null`` (nullable-simple-user in GitHub's
    schema). Before, it failed the whole listing: no pull request was examined."""
    native = {NATIVE_PATH: release_text("2.15.0", "native_functions.yaml").encode()}
    kept = open_pull(fake, native)
    ghost = open_pull(fake, native)
    fake.repos[REPO].pulls[ghost].ghost = True
    scan = pulls.scan(None)
    assert [p.number for p in scan.pulls] == [kept] and scan.complete
    ((failed, reason),) = scan.failed
    assert failed.number == ghost and failed.head_sha == fake.repos[REPO].heads[ghost][2]
    assert "no title or author" in reason
    assert scan.watermark == fake.repos[REPO].pulls[ghost].updated_at


def test_a_compare_without_files_falls_back_to_the_trees(fake: FakeGitHub, pulls: PullsClient) -> None:
    fake.compare_without_files = True
    pr = open_pull(fake, {TAGS_PATH: b"- tag: new\n  desc: x\n"})
    (pull,) = pulls.scan(None).pulls
    assert pulls.touched(pull) == (TAGS_PATH,)
    # the operator files' blobs at both ends, never the file list (30 pages for a fork's 3,000 files)
    assert not any(r.path.startswith(f"/repos/{REPO}/pulls/{pr}/files") for r in fake.requests)
    assert any("/git/trees/" in r.path for r in fake.requests)


# --- cheap commit lookups, and the undocumented tree form with its documented fallback ------------------


def test_a_source_reads_its_commit_from_the_git_database_not_the_commit_with_its_files(
    fake: FakeGitHub,
) -> None:
    """commits/REF answers with up to 300 files and their patches; only the sha and the date are read."""
    main = fake.repos[REPO].refs["main"]
    head = fake.add_commit(
        REPO, {p: fake.blobs[o] for p, o in fake.repos[REPO].commits[main].files.items()},
        parent=main, date="2026-03-04T10:00:00Z",
    )  # fmt: skip
    for spec in (f"gh:{REPO}@{head}", f"gh:{REPO}@main"):
        mark = len(fake.requests)
        files = read_github_source(spec, ApiSettings(api_url=fake.api_url, token=TOKEN))
        assert files.meta.commit == (head if "@" + head in spec else main) and files.meta.date
        paths = [r.path for r in fake.requests[mark:]]
        full = [p for p in paths if p.startswith(f"/repos/{REPO}/commits/")]
        assert all(r.size <= 64 for r in fake.requests[mark:] if r.path in full), "only the sha, if anything"
        assert any(p.startswith(f"/repos/{REPO}/git/commits/") for p in paths)
    assert not [r for r in fake.requests if f"/commits/{head}" in r.path and "/git/" not in r.path]


def test_a_refused_commit_colon_directory_tree_falls_back_to_the_documented_walk(
    fake: FakeGitHub, pulls: PullsClient
) -> None:
    fake.refuse_tree_paths = True
    files = read_github_source(f"gh:{REPO}@v2.14.1", ApiSettings(api_url=fake.api_url, token=TOKEN))
    assert files.native_functions is not None and files.tags is not None and files.derivatives is not None
    trees = [r.path.split("/git/trees/")[1] for r in fake.requests if "/git/trees/" in r.path]
    assert sum(":" in t for t in trees) == 1, "refused once, then walked"
    # A compare without files, and a file list at GitHub's cap of 3,000: only the trees can tell.
    fake.compare_without_files, fake.page_size = True, 100
    pr = open_pull(fake, {TAGS_PATH: b"- tag: new\n  desc: x\n"}, files=[{"filename": "x"}] * 3000)
    (pull,) = pulls.scan(None).pulls
    assert pull.number == pr and pulls.touched(pull) == (TAGS_PATH,)  # by the walked trees
