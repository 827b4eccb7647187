"""opdrift.github.pulls over real HTTP against the fake GitHub API: the open-PR listing within the rate limit."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from datafiles import release_text
from fake_github import EndlessPages, FakeGitHub, blob_sha

import opdrift.github.pulls as pulls_module
from opdrift.errors import ApiLimitError, SourceError
from opdrift.github.api import ApiSettings
from opdrift.github.ghsource import read_github_source
from opdrift.github.pulljson import pull_ref
from opdrift.github.pulls import COMPARE_FILES, PullsClient
from opdrift.github.retry import RetryPolicy
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, OPERATOR_PATHS, TAGS_PATH

UPSTREAM = "acme/pytorch"
TOKEN = "ghs_pullstoken000000000000000000000000"
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


def _files(version: str) -> dict[str, bytes]:
    return {path: release_text(version, name).encode() for path, name in NAMES.items()}


class Upstream:
    """A PyTorch-shaped repository behind the fake: main at 2.14.1's files, PRs on top of it."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        fake.add_token(TOKEN, "reader")
        fake.add_repo(UPSTREAM)
        self.files = {**_files("2.14.1"), "README.md": b"PyTorch\n"}
        self.main = fake.add_commit(UPSTREAM, self.files, refs=("main",), date="2026-03-01T10:00:00Z")
        self.newer = _files("2.15.0")

    def head(self, changes: dict[str, bytes]) -> str:
        """A commit on top of main with CHANGES (path → content)."""
        files = {**self.files, **changes}
        return self.fake.add_commit(UPSTREAM, files, parent=self.main, date="2026-03-02T10:00:00Z")

    def open(self, title: str, head: str, **kw: object) -> int:
        return self.fake.add_pull(UPSTREAM, title=title, sha=head, base=self.main, **kw)  # type: ignore[arg-type]

    def native(self) -> str:
        return self.head({NATIVE_PATH: self.newer[NATIVE_PATH]})

    def readme(self, text: bytes = b"PyTorch!\n") -> str:
        return self.head({"README.md": text})


@pytest.fixture
def upstream(github_server: FakeGitHub) -> Upstream:
    return Upstream(github_server)


def _settings(fake: FakeGitHub, cache: Path | None) -> ApiSettings:
    retry = RetryPolicy(first_delay=0.01, max_delay=0.02, total_seconds=30)
    return ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=cache, retry=retry)


@pytest.fixture
def client(upstream: Upstream, tmp_path: Path) -> Iterator[PullsClient]:
    c = PullsClient(_settings(upstream.fake, tmp_path / "cache"), UPSTREAM)
    yield c
    c.close()


def _since(fake: FakeGitHub, mark: int) -> list[str]:
    """The paths (query dropped, prefix and repository stripped) requested after MARK."""
    return [r.path.split("?")[0].removeprefix(f"/repos/{UPSTREAM}") for r in fake.requests[mark:]]


def test_a_cold_scan_lists_every_open_pr_newest_first_with_what_each_touches(
    upstream: Upstream, client: PullsClient
) -> None:
    fake = upstream.fake
    native = upstream.open("Add an op", upstream.native())
    docs = upstream.open("Fix the README", upstream.readme())
    derivatives = upstream.open(
        "Change a formula",
        upstream.head({DERIVATIVES_PATH: b"- name: abs(Tensor self) -> Tensor\n"}),
        draft=True,
    )
    merged = upstream.open("Landed", upstream.native())
    fake.merge_pull(UPSTREAM, merged)
    for n in range(4):
        upstream.open(f"Docs {n}", upstream.readme(b"v%d\n" % n))
    scan = client.scan(None)
    assert scan.complete
    numbers = [p.number for p in scan.pulls]
    assert numbers == sorted(numbers, reverse=True) and merged not in numbers, "open ones, newest first"
    assert len(numbers) == 7
    assert scan.watermark == scan.pulls[0].updated_at
    # 7 open PRs, 3 a page (the fake's page size): 3 list pages and the closed ones' first page (did
    # one close while the open ones were paged?), then one compare per PR.
    paths = _since(fake, 0)
    assert paths.count("/pulls") == 4 and len([p for p in paths if "/compare/" in p]) == 7
    assert "state=closed" in fake.requests[3].path
    assert client.requests_sent == len(fake.requests) == 11
    mark = len(fake.requests)
    by = {p.number: p for p in scan.pulls}
    assert client.touched(by[native]) == (NATIVE_PATH,)
    assert client.touched(by[docs]) == ()
    assert client.touched(by[derivatives]) == (DERIVATIVES_PATH,)
    assert by[derivatives].draft and not by[native].draft
    assert {client.merge_base(p) for p in scan.pulls} == {upstream.main}
    assert len(fake.requests) == mark, "the scan paid for touched and merge_base"
    pull = by[native]
    assert (pull.title, pull.author, pull.state) == ("Add an op", "contributor", "open")
    assert pull.html_url.endswith(f"/pull/{native}") and pull.base_sha == upstream.main


def test_a_steady_run_costs_one_request_per_updated_pr_plus_the_list_page(
    upstream: Upstream, client: PullsClient, tmp_path: Path
) -> None:
    fake = upstream.fake
    prs = [upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n)) for n in range(5)]
    first = client.scan(None)
    assert first.complete and len(first.pulls) == 5

    # Nothing changed: one list page; run again and it is a 304, which the rate limit does not count.
    mark, used = len(fake.requests), fake.rate_used
    quiet = client.scan(first.watermark)
    assert _since(fake, mark) == ["/pulls"]
    assert [p.number for p in quiet.pulls] == [prs[-1]], "the one at the watermark again, free"
    mark, used = len(fake.requests), fake.rate_used
    again = client.scan(quiet.watermark)
    assert [r.status for r in fake.requests[mark:]] == [304]
    assert fake.rate_used == used and again == quiet
    assert client.not_modified == 1

    # PR 1 gets a push that touches native_functions.yaml, PR 2 only a new title, PR 3 merges.
    fake.update_pull(UPSTREAM, prs[1], sha=upstream.native())
    fake.update_pull(UPSTREAM, prs[2], title="PR 2, retitled")
    fake.merge_pull(UPSTREAM, prs[3])
    mark = len(fake.requests)
    scan = client.scan(again.watermark)
    # Newest first, down to the one at the last watermark (listed again: one-second ties).
    assert [p.number for p in scan.pulls] == [prs[3], prs[2], prs[1], prs[4]]
    assert [p.state for p in scan.pulls] == ["merged", "open", "open", "open"]
    # Two pages (3 a page; the second stops at PR 0, older than the watermark) and one compare:
    # PR 2's head did not move, PR 4's compare is cached, a merged PR needs none.
    compare = f"/compare/{upstream.main}...{scan.pulls[2].head_sha}"
    assert _since(fake, mark) == ["/pulls", "/pulls", compare]
    assert client.touched(scan.pulls[2]) == (NATIVE_PATH,)
    assert scan.pulls[1].title == "PR 2, retitled"

    # Another process with the same cache: what touched and merge_base learnt is on disk.
    other = PullsClient(_settings(fake, tmp_path / "cache"), UPSTREAM)
    mark = len(fake.requests)
    assert other.touched(scan.pulls[2]) == (NATIVE_PATH,)
    assert other.merge_base(scan.pulls[2]) == upstream.main
    assert [p.number for p in other.scan(scan.watermark).pulls] == [prs[3]]
    assert [r.status for r in fake.requests[mark:]] == [304]
    other.close()


def test_a_budget_stops_a_cold_scan_and_the_next_runs_resume_through_the_cache(
    upstream: Upstream, client: PullsClient
) -> None:
    fake = upstream.fake
    for n in range(7):
        upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n))
    partial = client.scan(None, budget=5)  # 3 list pages, the closed ones' first, one compare
    assert not partial.complete and partial.watermark is None
    assert len(partial.pulls) == 1 and client.charged == 5
    second = client.scan(None, budget=5)  # the pages are 304s now: five compares
    assert not second.complete and len(second.pulls) == 6
    assert client.not_modified == 4
    third = client.scan(None, budget=5)
    assert third.complete and len(third.pulls) == 7 and third.watermark == third.pulls[0].updated_at
    assert [p.number for p in third.pulls[:6]] == [p.number for p in second.pulls]
    compares = [r.path for r in fake.requests if "/compare/" in r.path]
    assert len(compares) == len(set(compares)) == 7, "no PR compared twice"


def test_a_compare_at_githubs_cap_of_300_files_goes_straight_to_the_trees(
    upstream: Upstream, client: PullsClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork's 3,000-file pull request: its file list would be 30 pages (about 34 requests for each
    new head); the trees of the three operator paths' two directories answer in 2 to 4."""
    fake = upstream.fake
    # 300 files sort before aten/: a compare that lists 300 left native_functions.yaml out.
    many = {f"a/f{n:04d}": b"x" for n in range(COMPARE_FILES)}
    long = upstream.open("Many files", upstream.head({**many, NATIVE_PATH: b"- func: x\n"}))
    mark = len(fake.requests)
    scan = client.scan(None)
    assert client.touched(scan.pulls[0]) == (NATIVE_PATH,)
    sent = [r.path for r in fake.requests[mark:]]
    assert not any(f"/pulls/{long}/files" in p for p in sent)
    assert 1 <= sum("/git/trees/" in p for p in sent) <= 4 and len(sent) <= 6, sent
    second = upstream.open("Again", upstream.head({**many, DERIVATIVES_PATH: b"- name: y\n"}))
    assert client.touched(client.pull(second)) == (DERIVATIVES_PATH,)
    assert not any(f"/pulls/{second}/files" in r.path for r in fake.requests)


def test_a_compare_that_fails_with_a_5xx_is_not_retried_inside_the_scan_and_comes_last_next_run(
    upstream: Upstream, client: PullsClient
) -> None:
    fake = upstream.fake
    bad = upstream.open("Slow 5xx", upstream.readme(b"one\n"))
    good = upstream.open("Fine", upstream.readme(b"two\n"))
    fake.fail("GET", rf"/repos/{UPSTREAM}/compare/", 502, times=100)
    mark = len(fake.requests)
    scan = client.scan(None)
    compares = [r for r in fake.requests[mark:] if "/compare/" in r.path]
    assert len(compares) == 2  # one attempt each: no retry loop inside the scan
    assert {p.number for p, _ in scan.failed} == {bad, good} and scan.complete
    fake.faults.clear()
    mark = len(fake.requests)
    client.scan(None, later=[bad])
    order = [r.path for r in fake.requests[mark:] if "/compare/" in r.path]
    assert len(order) == 2
    heads = {n: fake.repos[UPSTREAM.lower()].heads[n][2] for n in (bad, good)}
    assert heads[good] in order[0] and heads[bad] in order[1]


def test_hostile_answers_stay_data_or_stop_with_a_named_error(
    upstream: Upstream, client: PullsClient, tmp_path: Path
) -> None:
    fake = upstream.fake
    title = "@pytorch/everyone [click](https://evil.test) <!-- opdrift --> `x` | row |\n## head"
    number = upstream.open(title, upstream.native(), author="mallory")
    pull = client.scan(None).pulls[0]
    assert pull.title == title and pull.author == "mallory", "a title is data, kept as written"

    fake.misbehave("GET", r"/pulls$", EndlessPages())
    with pytest.raises(ApiLimitError, match="another page"):
        PullsClient(_settings(fake, None), UPSTREAM).scan("2000-01-01T00:00:00Z")

    # A corrupt or tampered cache entry is a miss, never a crash or a wrong answer.
    cache = tmp_path / "cache" / "api"
    for path in cache.rglob("*.json"):
        entry = json.loads(path.read_bytes())
        if str(entry["key"]).startswith("touched"):
            entry["value"] = [DERIVATIVES_PATH]  # the digest no longer matches
            path.write_text(json.dumps(entry))
        else:
            path.write_bytes(b"\x00{not json")
    fresh = PullsClient(_settings(fake, tmp_path / "cache"), UPSTREAM)
    mark = len(fake.requests)
    assert fresh.touched(pull) == (NATIVE_PATH,)
    assert fresh.pull(number).title == title
    assert [r.status for r in fake.requests[mark:]] == [200, 200]
    fresh.close()


def test_bad_answers_and_names_are_one_line_errors(upstream: Upstream, tmp_path: Path) -> None:
    fake = upstream.fake
    with pytest.raises(SourceError, match="OWNER/NAME"):
        PullsClient(_settings(fake, None), "not a repo")
    client = PullsClient(_settings(fake, None), "acme/absent")
    with pytest.raises(SourceError, match="no pull request #7"):
        client.pull(7)
    number = upstream.open("Made-up head", "f" * 40)
    (failed,) = PullsClient(_settings(fake, None), UPSTREAM).scan(None).failed
    assert failed[0].number == number and failed[1].startswith(f"no merge base for pull request #{number}")
    # A watermark that is not GitHub's form (it comes back from an issue body) means a cold run.
    fake.close_pull(UPSTREAM, number)
    cold = PullsClient(_settings(fake, None), UPSTREAM).scan("yesterday")
    assert cold.pulls == () and cold.complete and cold.watermark is None
    assert "state=open" in fake.requests[-1].path


def test_known_heads_are_not_compared_again_and_a_future_watermark_means_a_cold_run(
    upstream: Upstream, tmp_path: Path
) -> None:
    fake = upstream.fake
    prs = [upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n)) for n in range(3)]
    first = PullsClient(_settings(fake, tmp_path / "a"), UPSTREAM).scan(None)
    heads = {p.head_sha for p in first.pulls}
    fake.update_pull(UPSTREAM, prs[0], title="retitled")
    fake.update_pull(UPSTREAM, prs[1], sha=upstream.native())
    # A runner with an empty cache (a fresh Actions runner) that knows the heads it judged last run.
    fresh = PullsClient(_settings(fake, tmp_path / "b"), UPSTREAM)
    mark = len(fake.requests)
    scan = fresh.scan(first.watermark, known_heads=heads)
    assert [p.number for p in scan.pulls] == [prs[1], prs[0], prs[2]]
    compares = [p for p in _since(fake, mark) if "/compare/" in p]
    assert compares == [f"/compare/{upstream.main}...{scan.pulls[0].head_sha}"]
    assert fresh.touched(scan.pulls[0]) == (NATIVE_PATH,)

    before = len(fake.requests)
    future = fresh.scan("2999-01-01T00:00:00Z")
    assert "state=open" in fake.requests[before].path, "a watermark from the future would hide everything"
    assert len(future.pulls) == 3 and future.complete


def test_prs_served_from_a_git_history_open_update_and_merge(
    github_server: FakeGitHub, tmp_path: Path
) -> None:
    from pytorch_history import build_history

    fake = github_server
    fake.add_token(TOKEN, "reader")
    fake.add_repo(UPSTREAM)
    history = build_history(tmp_path / "pytorch", first="2.14.1", last="2.15.0", checkout=False)
    work = history.path
    base, newer = history.tag_sha("2.14.1"), history.tag_sha("2.15.0")

    def commit_on(parent: str, path: str, text: str) -> str:
        git = ["git", "-C", str(work), "-c", "user.name=Dev", "-c", "user.email=dev@localhost"]
        subprocess.run([*git, "checkout", "-q", "--detach", parent], check=True)
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text, encoding="utf-8")
        subprocess.run([*git, "add", path], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"edit {path}"], check=True)
        return subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()

    docs = commit_on(base, "README.md", "PyTorch\n")
    formula = commit_on(docs, DERIVATIVES_PATH, release_text("2.14.1", "derivatives.yaml") + "# edited\n")
    paths = (*OPERATOR_PATHS, "README.md")
    fake.mirror_git(UPSTREAM, work / ".git", [base, newer, docs, formula], paths)
    fake.repos[UPSTREAM].refs["main"] = base
    adds = fake.add_pull(UPSTREAM, title="2.15.0's operators", sha=newer, base=base)
    readme = fake.add_pull(UPSTREAM, title="A README", sha=docs, base=base)

    client = PullsClient(_settings(fake, tmp_path / "cache"), UPSTREAM)
    cold = client.scan(None)
    by = {p.number: p for p in cold.pulls}
    assert NATIVE_PATH in client.touched(by[adds]) and client.touched(by[readme]) == ()
    assert client.merge_base(by[adds]) == client.merge_base(by[readme]) == base
    # The two sides of the PR's drift read through gh: specs at the merge base and the head.
    head_files = read_github_source(f"gh:{UPSTREAM}@{by[adds].head_sha}", _settings(fake, tmp_path / "cache"))
    assert head_files.native_functions is not None
    assert head_files.native_functions.text == release_text("2.15.0", "native_functions.yaml")

    fake.update_pull(UPSTREAM, readme, sha=formula)  # a push that now edits derivatives.yaml
    steady = client.scan(cold.watermark)
    assert steady.pulls[0].number == readme
    assert client.touched(steady.pulls[0]) == (DERIVATIVES_PATH,)
    fake.merge_pull(UPSTREAM, adds)
    landed = client.scan(steady.watermark)
    assert [(p.number, p.state) for p in landed.pulls] == [(adds, "merged"), (readme, "open")]
    client.close()


def test_a_pr_pytorchs_merge_bot_closed_with_the_merged_label_has_landed(
    upstream: Upstream, client: PullsClient
) -> None:
    fake = upstream.fake
    landed = upstream.open("Landed by the bot", upstream.native())
    dropped = upstream.open("Abandoned", upstream.native())
    labelled = upstream.open("Merged label, still open", upstream.readme())
    first = client.scan(None)
    # PyTorch's merge bot pushes to main itself, closes the PR, then adds the `Merged` label:
    # merged_at stays null (pytorch/pytorch#77005, #102559).
    between: list[str] = []
    sha = fake.land_pull(UPSTREAM, landed, between=lambda: between.extend(
        p.state for p in client.scan(first.watermark).pulls if p.number == landed))  # fmt: skip
    assert between == ["closed"]  # pushed and closed, not yet labelled
    main = fake.repos[UPSTREAM].commits[sha]
    assert fake.repos[UPSTREAM].refs["main"] == sha and main.files[NATIVE_PATH] == blob_sha(
        upstream.newer[NATIVE_PATH]
    )
    assert f"Pull Request resolved: https://github.test/{UPSTREAM}/pull/{landed}" in main.message
    fake.close_pull(UPSTREAM, dropped, labels=("triaged",))
    fake.label_pull(UPSTREAM, labelled, "merged")
    scan = client.scan(first.watermark)
    states = {p.number: p.state for p in scan.pulls}
    assert states[landed] == "merged" and states[dropped] == "closed" and states[labelled] == "open"
    # The page is stored slimmed: a 304 answers from it, the labels included.
    again = client.scan(first.watermark)
    assert client.not_modified >= 1 and {p.number: p.state for p in again.pulls} == states


def test_one_pr_that_cannot_be_compared_is_reported_and_the_scan_goes_on(
    upstream: Upstream, client: PullsClient
) -> None:
    fake = upstream.fake
    before = upstream.open("Fine", upstream.native())
    unrelated = upstream.open("Unrelated history", "f" * 40)  # no merge base: compare is a 404
    refused = upstream.open("Refused", upstream.readme())
    after = upstream.open("Fine too", upstream.readme(b"again\n"))
    fake.fail("GET", rf"/compare/{upstream.main}\.\.\.{fake.repos[UPSTREAM].heads[refused][2]}", 422, times=9)
    scan = client.scan(None)
    assert scan.complete and scan.watermark == scan.pulls[0].updated_at
    assert [p.number for p in scan.pulls] == [after, before], "the others examined, newest first"
    failed = {p.number: why for p, why in scan.failed}
    assert set(failed) == {unrelated, refused}
    assert f"no merge base for pull request #{unrelated}" in failed[unrelated]
    assert "422" in failed[refused] and "\n" not in failed[refused]


def test_a_watermark_too_old_to_page_through_falls_back_to_a_cold_scan(
    upstream: Upstream, client: PullsClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = upstream.fake
    prs = [upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n)) for n in range(8)]
    old = client.scan(None).watermark
    fake.merge_pull(UPSTREAM, prs[0])
    fake.close_pull(UPSTREAM, prs[1])
    for n in prs[2:]:
        fake.update_pull(UPSTREAM, n, title="touched again")
    # 8 updated since OLD, 3 a page: more than two pages. A schedule paused for a week on
    # pytorch/pytorch is more than MAX_LIST_PAGES pages of updates.
    monkeypatch.setattr(pulls_module, "MAX_LIST_PAGES", 2)
    mark = len(fake.requests)
    scan = client.scan(old)
    assert scan.complete and scan.failed == ()
    listed = [r.path for r in fake.requests[mark:] if r.path.split("?")[0].endswith("/pulls")]
    # then the open ones from the top (and, after several pages of them, whether one closed meanwhile)
    assert "state=all" in listed[0] and any("state=open" in path for path in listed[1:])
    assert {p.number for p in scan.pulls if p.state == "open"} == set(prs[2:])
    assert scan.watermark == max(p.updated_at for p in scan.pulls)
    numbers = [p.number for p in scan.pulls]
    assert len(numbers) == len(set(numbers))
    assert [p.updated_at for p in scan.pulls] == sorted((p.updated_at for p in scan.pulls), reverse=True)


def test_the_cache_records_whether_the_last_scan_was_complete(upstream: Upstream, tmp_path: Path) -> None:
    # examples/downstream/watch.yml names the Actions cache entry after this file: a new entry after
    # every run of a cold start (each gets further), one a day once the listing is complete.
    for n in range(4):
        upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n))
    progress = tmp_path / "cache" / pulls_module.PROGRESS_FILE
    client = PullsClient(_settings(upstream.fake, tmp_path / "cache"), UPSTREAM)
    assert not client.scan(None, budget=3).complete
    client.close()
    first = progress.read_text()
    assert first.startswith("incomplete ")
    client = PullsClient(_settings(upstream.fake, tmp_path / "cache"), UPSTREAM)
    assert client.scan(None).complete
    client.close()
    done = progress.read_text()
    assert re.fullmatch(r"complete \d{4}-\d\d-\d\d\n", done), "a day: one new entry a day at most"
    PullsClient(_settings(upstream.fake, tmp_path / "cache"), UPSTREAM).close()  # no scan: unchanged
    assert progress.read_text() == done


def test_a_pr_closed_while_a_cold_scan_pages_makes_it_incomplete_and_the_next_run_finds_the_skipped_one(
    upstream: Upstream, client: PullsClient
) -> None:
    fake = upstream.fake
    prs = [upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n)) for n in range(7)]
    # Pages of 3, newest first: [6 5 4] [3 2 1] [0]. PR 5 closes after page 1 was read: every open
    # one below it moves up a place, and PR 3 slips from page 2 onto page 1, already read.
    fake.before(r"/pulls\?.*page=2", lambda: fake.close_pull(UPSTREAM, prs[5]))
    first = client.scan(None)
    assert prs[3] not in [p.number for p in first.pulls], "page-number pagination skipped it"
    assert not first.complete and first.watermark is None
    again = client.scan(None)
    assert again.complete and sorted(p.number for p in again.pulls) == sorted(set(prs) - {prs[5]})


def test_a_pr_updated_while_paging_is_listed_by_the_next_run(upstream: Upstream, client: PullsClient) -> None:
    fake = upstream.fake
    prs = [upstream.open(f"PR {n}", upstream.readme(b"%d\n" % n)) for n in range(7)]
    # PR 0 (on the last page) is updated while page 2 is asked for: it moves to the top, a page
    # already read, and the others down a place (one is listed twice). Its new updated_at is later
    # than anything this scan saw, so the watermark leaves it to the next run.
    fake.before(r"/pulls\?.*page=2", lambda: fake.update_pull(UPSTREAM, prs[0], title="new"))
    scan = client.scan(None)
    assert scan.complete and sorted(p.number for p in scan.pulls) == sorted(prs[1:])
    assert [p.number for p in client.scan(scan.watermark).pulls] == [prs[0], prs[6]]


def test_the_reader_refuses_what_the_watch_state_would(tmp_path: Path) -> None:
    """An updated_at in other digits, a number past 10^10, an html_url off github.com or of another
    pull request: each refused where the listing is read (the pull request then goes to `failed`)."""
    api = "https://api.github.com"
    good = {
        "number": 7, "title": "t", "user": {"login": "u"}, "state": "open", "merged_at": None,
        "draft": False, "labels": [], "updated_at": "2026-12-05T01:02:03Z",
        "html_url": "https://github.com/pytorch/pytorch/pull/7",
        "head": {"sha": "a" * 40}, "base": {"sha": "b" * 40},
    }  # fmt: skip
    assert pull_ref(good, "pytorch/pytorch", api).number == 7
    for change in (
        {"updated_at": "٢٠٢٦-12-05T01:02:03Z"},
        {"number": 10**10, "html_url": f"https://github.com/pytorch/pytorch/pull/{10**10}"},
        {"html_url": "https://evil.example/pytorch/pytorch/pull/7"},
        {"html_url": "https://github.com/pytorch/pytorch/pull/8"},
        {"html_url": "https://github.com/evil/pytorch/pull/7"},
    ):
        with pytest.raises(SourceError):
            pull_ref({**good, **change}, "pytorch/pytorch", api)


def test_a_revert_reopens_a_landed_pr_and_a_second_landing_counts_again(
    upstream: Upstream, client: PullsClient
) -> None:
    """PyTorch's revert bot puts main back, adds `Reverted` and reopens the PR; landing it again adds
    `MergedX1`: open, then merged again, as `landed` counts the bots' labels."""
    fake = upstream.fake
    number = upstream.open("Landed twice", upstream.native())
    first = client.scan(None)
    landing = fake.land_pull(UPSTREAM, number)
    assert client.pull(number).state == "merged"
    revert = fake.revert_pull(UPSTREAM, number)
    repo = fake.repos[UPSTREAM]
    assert repo.commits[revert].files == repo.commits[upstream.main].files
    assert f"This reverts commit {landing}." in repo.commits[revert].message
    (pull,) = client.scan(first.watermark).pulls
    assert pull.state == "open" and [lb["name"] for lb in repo.issues[number]["labels"]] == [
        "Merged",
        "Reverted",
    ]
    fake.land_pull(UPSTREAM, number)
    assert client.pull(number).state == "merged"
    assert [lb["name"] for lb in repo.issues[number]["labels"]] == ["Merged", "Reverted", "MergedX1"]


def test_the_list_s_order_is_asked_for_not_left_to_github_s_default(
    upstream: Upstream, client: PullsClient
) -> None:
    """GitHub's `direction` defaults to desc only for sort=created; for sort=updated it is asc
    (oldest update first), which would make the scan stop at once at the watermark. The fake
    answers that way, and the scan names its direction on every page."""
    fake = upstream.fake
    older = upstream.open("older", upstream.readme(b"a\n"))
    newer = upstream.open("newer", upstream.readme(b"b\n"))
    url = f"{fake.api_url}/repos/{UPSTREAM}/pulls?state=all&sort=updated"
    headers = {"Authorization": f"token {TOKEN}"}
    listed = json.loads(urllib.request.urlopen(urllib.request.Request(url, headers=headers)).read())
    assert [p["number"] for p in listed] == [older, newer]
    default = json.loads(
        urllib.request.urlopen(
            urllib.request.Request(url.replace("updated", "created"), headers=headers)
        ).read()
    )
    assert [p["number"] for p in default] == [newer, older]
    mark = len(fake.requests)
    assert [p.number for p in client.scan(None).pulls] == [newer, older]
    pages = [r.path for r in fake.requests[mark:] if r.path.split("?")[0].endswith("/pulls")]
    assert pages and all("direction=desc" in path for path in pages)
