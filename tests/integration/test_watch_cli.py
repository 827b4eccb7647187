"""`opdrift watch` end to end over real HTTP: the fake GitHub API serves a
PyTorch-shaped upstream (release 2.14.1 on main) with open PRs that (a) add an op XLA lacks, (b) change
the signature of an op XLA implements, (c) touch no operator file, (d) only add an in-tree kernel, (e)
have merged; the backend's repository gets one issue listing exactly (a) and (b), and one comment
mentioning the subscriber once. A second run writes nothing and fetches no file list or content again;
(b) reverting its break and a new PR bringing one move the dashboard, with exactly one new comment."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

import jsonschema
import pytest
from clirun import Opdrift
from datafiles import DATA, release_text
from fake_github import FakeGitHub
from watch_upstream import ServedUpstream, added_entry, with_fast, with_xpu_kernel

UPSTREAM = "pytorch/pytorch"
REPO = "me/backend"
TOKEN = "ghs_watchcli0000000000000000000000000000"
ROOT = Path(__file__).resolve().parents[2]


class Site:
    def __init__(self, fake: FakeGitHub, tmp: Path) -> None:
        self.fake = fake
        fake.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
        fake.add_repo(REPO)
        self.up = ServedUpstream.serve(fake)
        self.base = release_text("2.14.1")
        xla = DATA / "backends" / "real" / "pytorch-xla.xla_native_functions.yaml.xz"
        (tmp / "xla_native_functions.yaml").write_bytes(lzma.decompress(xla.read_bytes()))
        self.config = tmp / "opdrift.yml"
        self.config.write_text(
            'subscriptions:\n  - who: ["@xla-team"]\n    backend: {kind: xla, path: xla_native_functions.yaml}\n'
        )

    def dashboard(self) -> list[dict[str, object]]:
        return [i for i in self.fake.issues(REPO) if i["user"]["login"] == "github-actions[bot]"]


def _with_added(base: str) -> str:
    at = base.index("- func: _dirichlet_grad(")
    return base[:at] + added_entry() + base[at:]


@pytest.fixture
def site(github_server: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("OPDRIFT_BOT_LOGIN", "github-actions[bot]")
    return Site(github_server, tmp_path)


@pytest.mark.slow
def test_the_dashboard_follows_the_upstream_and_a_quiet_run_writes_nothing(
    site: Site, opdrift: Opdrift, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = site.fake
    merged = site.up.open("(e) merged", site.up.head(_with_added(site.base)))
    fake.merge_pull(UPSTREAM, merged)
    a = site.up.open("(a) add _philox_randint_", site.up.head(_with_added(site.base)))
    b = site.up.open("(b) mean: a fast path", site.up.head(with_fast(site.base)))
    site.up.open("(c) docs", site.up.head(readme=b"docs\n"))
    site.up.open("(d) an XPU kernel", site.up.head(with_xpu_kernel(site.base)))
    argv = ("watch", "--upstream", UPSTREAM, "--repo", REPO, "--config", str(site.config))
    out = tmp_path / "impact.json"
    run = opdrift(*argv, "--format", "json", "-o", str(out))
    assert run.code == 0, run.err
    (issue,) = site.dashboard()
    body = str(issue["body"])
    assert f"/pull/{a})" in body and f"/pull/{b})" in body
    assert "(c)" not in body and "(d)" not in body and "(e)" not in body
    (comment,) = fake.comments(REPO, int(issue["number"]))  # type: ignore[call-overload]
    assert str(comment["body"]).count("@xla-team") == 1
    # its wording is tests/golden/watch-dashboard.comment.md's (test_watch.py)
    assert "`mean.dim`" in str(comment["body"]) and "`bool fast`" in str(comment["body"])
    report = json.loads(out.read_text())
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "watch.schema.json").read_text()))
    assert sorted(p["number"] for p in report["pulls"]) == sorted([a, b])

    first_run = list(fake.requests)
    assert any("/compare/" in r.path for r in first_run) and any("/git/" in r.path for r in first_run)
    # a second run, on a fresh runner (no disk cache: the issue's state is all it knows): no write, no
    # file list, no content
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-runner"))
    mark = len(fake.requests)
    again = opdrift(*argv)
    assert again.code == 0, again.err
    later = fake.requests[mark:]
    assert [r for r in later if r.method != "GET"] == []
    fetched = [
        r.path
        for r in later
        if "/compare/" in r.path or "/files" in r.path or "/git/" in r.path or "/contents/" in r.path
    ]
    assert fetched == [], fetched
    assert "nothing new" in again.err
    # the login, the bot's issues (PyGithub completes the one that carries the marker), one list page
    assert (
        len(later) <= 4 and [r.path.split("?")[0] for r in later].count("/repos/pytorch/pytorch/pulls") == 1
    )

    # (b) reverts its break; a new PR brings one: the dashboard follows, one new comment
    fake.push(UPSTREAM, b, site.up.head(readme=b"reverted\n"))
    precise = site.base.replace(
        "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False,",
        "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
    ).replace(
        "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False,",
        "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
    )
    new = site.up.open("(f) mean: precise", site.up.head(precise))
    third = opdrift(*argv)
    assert third.code == 0, third.err
    (issue,) = site.dashboard()
    body = str(issue["body"])
    assert f"/pull/{a})" in body and f"/pull/{new})" in body and f"/pull/{b})" not in body
    comments = fake.comments(REPO, int(issue["number"]))  # type: ignore[call-overload]
    assert len(comments) == 2
    latest = str(comments[1]["body"])
    assert latest.count("@xla-team") == 1 and f"/pull/{new})" in latest and f"/pull/{a})" not in latest


@pytest.mark.slow
def test_a_first_run_the_budget_stops_says_how_far_it_got_and_the_count_is_every_request_sent(
    site: Site, opdrift: Opdrift
) -> None:
    fake = site.fake
    site.up.open("(a) add _philox_randint_", site.up.head(_with_added(site.base)))
    for n in range(5):
        site.up.open(f"docs {n}", site.up.head(readme=f"docs {n}\n".encode()))
    site.up.open("(b) mean: a fast path", site.up.head(with_fast(site.base)))
    argv = ("watch", "--upstream", UPSTREAM, "--repo", REPO, "--config", str(site.config))
    mark = len(fake.requests)
    run = opdrift(*argv, "--budget", "6")  # the listing's page, then a few compares
    assert run.code == 0, run.err
    (issue,) = site.dashboard()
    body = str(issue["body"])
    partial = re.search(
        r"⚠️ \*\*Partial\*\*: scanned (\d) of 7 open pull requests; the rest within about (\d) more hourly runs",
        body,
    )
    assert partial is not None, body[:2000]
    scanned, runs = int(partial.group(1)), int(partial.group(2))
    assert 0 < scanned < 7 and runs == -(-(7 - scanned) // scanned)  # at this run's pace
    # The count printed is what reached the upstream: the scan's list and compares, and the judge's reads.
    sent = [r for r in fake.requests[mark:] if f"/repos/{UPSTREAM}/" in r.path]
    said = re.search(r"(\d+) request\(s\) to pytorch/pytorch", run.err)
    assert said is not None and int(said.group(1)) == len(sent), (run.err, len(sent))
    # The next runs go on from there (the budget counts the judge's reads too: judged as it affords),
    # and the last one's dashboard is whole.
    judged = False
    for _ in range(runs):
        mark = len(fake.requests)
        later = opdrift(*argv, "--budget", "6")
        assert later.code == 0
        sent = [r for r in fake.requests[mark:] if f"/repos/{UPSTREAM}/" in r.path]
        said = re.search(r"(\d+) request\(s\) to pytorch/pytorch", later.err)
        assert said is not None and int(said.group(1)) == len(sent), (later.err, len(sent))
        judged = judged or any("/git/" in r.path or "/contents/" in r.path for r in sent)
    assert judged  # the judge's reads are counted too
    (issue,) = site.dashboard()
    assert "Partial" not in str(issue["body"]) and "request budget" not in str(issue["body"])


def test_a_dry_run_prints_the_body_and_the_comment_and_writes_nothing(site: Site, opdrift: Opdrift) -> None:
    site.up.open("(b) mean: a fast path", site.up.head(with_fast(site.base)))
    run = opdrift("watch", "--upstream", UPSTREAM, "--repo", REPO, "--config", str(site.config), "--dry-run")
    assert run.code == 0, run.err
    assert "<!-- opdrift:watch -->" in run.out and "<!-- opdrift:watch-comment -->" in run.out
    assert site.fake.writes() == []


def test_a_config_without_a_backend_is_one_line(site: Site, opdrift: Opdrift, tmp_path: Path) -> None:
    config = tmp_path / "plain.yml"
    config.write_text('subscriptions:\n  - who: ["@x"]\n    buckets: [primitive_pointwise]\n')
    run = opdrift("watch", "--upstream", UPSTREAM, "--repo", REPO, "--config", str(config))
    assert run.code == 2 and run.err.startswith("opdrift: error: ") and "backend" in run.err
    assert len(run.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_backend_lists_warnings_are_printed_once_per_run(
    site: Site, opdrift: Opdrift, tmp_path: Path, dlprim_src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dlprim's real tree has six schema comments its reader cannot check; the watch reads the list
    once per judged side of every PR, and printed each of the six 24 times in one run. One line per
    distinct warning per run, and the next run (on a fresh runner) prints them again."""
    config = tmp_path / "dlprim.yml"
    config.write_text(
        'subscriptions:\n  - who: ["@dlprim-team"]\n'
        f"    backend: {{kind: cpp, path: {json.dumps(str(dlprim_src))}}}\n"
    )
    site.up.open("(a) add _philox_randint_", site.up.head(_with_added(site.base)))
    site.up.open("(b) mean: a fast path", site.up.head(with_fast(site.base)))
    argv = ("watch", "--upstream", UPSTREAM, "--repo", REPO, "--config", str(config), "--dry-run")
    for cache in ("runner-1", "runner-2"):  # a fresh runner each time: the judge reads the list again
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / cache))
        run = opdrift(*argv)
        assert run.code == 0, run.err
        warnings = [line for line in run.err.splitlines() if line.startswith("opdrift: warning: ")]
        schema_comments = [w for w in warnings if "schema comment" in w]
        assert len(schema_comments) == 6, run.err
        assert len(warnings) == len(set(warnings)), run.err
