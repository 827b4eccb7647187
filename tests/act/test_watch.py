"""examples/downstream/watch.yml end to end in act, against the fake GitHub API
serving a PyTorch-shaped upstream (release 2.14.1 on main) and its open pull requests. A PR appears, is
updated, and merges; the backend's one dashboard issue and its comments follow, and an hour with nothing
new writes nothing. actions/cache is the stand-in of tests/act_actions/cache; tests/act/test_act.py says how
the act tests work.
"""

from __future__ import annotations

import lzma
from dataclasses import dataclass
from pathlib import Path

import pytest
from act_support import BACKEND, ROOT, TOKEN, Site, add_opdrift_origin, git, job_environment, run_act
from datafiles import DATA, release_text
from fake_github import FakeGitHub, blob_sha
from watch_upstream import ServedUpstream, added_entry, with_fast

UPSTREAM = "pytorch/pytorch"
CONFIG = 'subscriptions:\n  - who: ["@acme/xla-team"]\n    backend: {kind: xla, path: ../xla_native_functions.yaml}\n'


@dataclass(frozen=True)
class Watched:
    """The backend's site and the upstream behind the fake API."""

    site: Site
    up: ServedUpstream

    @property
    def fake(self) -> FakeGitHub:
        return self.up.fake

    def dashboards(self) -> list[dict[str, object]]:
        return [
            i
            for i in self.fake.issues(BACKEND)
            if str(i.get("body", "")).startswith("<!-- opdrift:watch -->")
        ]

    def run(self, run_id: int) -> str:
        # Each hour's run its own id, as on GitHub: the cache's key differs, its restore key finds it.
        payload = {"schedule": "23 * * * *"}
        return run_act(self.site, self.fake, "schedule", "watch.yml", payload, run_id=run_id)


@pytest.fixture
def watched(
    github_server: FakeGitHub, tmp_path: Path, act_wheelhouse: Path, act_release: tuple[Path, str]
) -> Watched:
    origins = tmp_path / "origins"
    release_dir, release = act_release
    add_opdrift_origin(origins, release_dir)
    # The backend's repository: its list, the config, the workflow pinned to the local release.
    work = tmp_path / "backend"
    (work / ".github" / "workflows").mkdir(parents=True)
    xla = DATA / "backends" / "real" / "pytorch-xla.xla_native_functions.yaml.xz"
    (work / "xla_native_functions.yaml").write_bytes(lzma.decompress(xla.read_bytes()))
    (work / ".github" / "opdrift.yml").write_text(CONFIG, encoding="utf-8")
    text = (ROOT / "examples" / "downstream" / "watch.yml").read_text(encoding="utf-8")
    (work / ".github" / "workflows" / "watch.yml").write_text(
        text.replace("0" * 40, release), encoding="utf-8"
    )
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "the backend, its config and the watch workflow")
    origin = origins / "acme" / "backend.git"
    git(work, "clone", "-q", "--bare", str(work), str(origin))
    git(work, "remote", "add", "origin", f"https://github.com/{BACKEND}.git")  # act names the repository so
    # GitHub: the workflow token (github-actions[bot], no GET /user), the backend, the upstream.
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github_server.add_repo(BACKEND)
    up = ServedUpstream.serve(github_server)
    env = job_environment(tmp_path, act_wheelhouse, origins)
    return Watched(Site(work, origin, env, origins, pytorch_head=up.main), up)


@pytest.mark.slow  # act runs
def test_the_watch_workflow_keeps_one_dashboard_and_comments_only_on_news(watched: Watched) -> None:
    s = watched
    fake = s.fake
    base = release_text("2.14.1")
    at = base.index("- func: _dirichlet_grad(")
    a = s.up.open("Add _philox_randint_", s.up.head(base[:at] + added_entry() + base[at:]))
    b = s.up.open("mean: a fast path", s.up.head(with_fast(base)))
    s.up.open("Docs", s.up.head(readme=b"docs\n"))
    log = s.run(101)
    assert "2 open pull request(s) affect a backend, 2 newly" in log, log[-4000:]
    (issue,) = s.dashboards()
    number = int(str(issue["number"]))
    assert f"/pull/{a})" in str(issue["body"]) and f"/pull/{b})" in str(issue["body"])
    (comment,) = fake.comments(BACKEND, number)
    assert str(comment["body"]).count("@acme/xla-team") == 1
    assert "cache saved as opdrift-watch-" in log

    writes = len(fake.writes())
    log = s.run(102)  # an hour with nothing new
    assert len(fake.writes()) == writes and "nothing new, no comment" in log
    assert "cache restored from opdrift-watch-" in log
    # The listing was complete in both runs: the day's entry exists, and this run saves none.
    assert "cache saved as" not in log

    # (b) is updated to revert its break, (a) merges, and a new PR brings a break
    fake.push(UPSTREAM, b, s.up.head(readme=b"reverted\n"))
    fake.merge_pull(UPSTREAM, a)
    precise = base.replace(
        "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False,",
        "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
    ).replace(
        "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False,",
        "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
    )
    new = s.up.open("mean: precise", s.up.head(precise))
    mark = len(fake.requests)
    s.run(103)
    # main's files, the merge base of every PR, come from the cache: no blob of them is fetched again
    main_blobs = {blob_sha(data) for data in s.up.files.values()}
    assert not [r.path for r in fake.requests[mark:] if any(b in r.path for b in main_blobs)]
    (issue,) = s.dashboards()
    body = str(issue["body"])
    assert f"/pull/{new})" in body and f"/pull/{b})" not in body
    assert "Landed since the last run" in body and f"/pull/{a})" in body.split("Landed since the last run")[1]
    comments = fake.comments(BACKEND, number)
    assert len(comments) == 2 and f"/pull/{new})" in str(comments[1]["body"])
    assert str(comments[1]["body"]).count("@acme/xla-team") == 1
