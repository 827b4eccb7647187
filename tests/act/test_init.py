"""What `opdrift init` writes runs in a real workflow engine: act, on the host, no Docker.

A fresh backend repository (pytorch_dlprim's real `src/`) is set up by `opdrift init --weekly --watch` against
the fake GitHub API, whose pytorch/pytorch mirrors a local PyTorch history at its v2.13.0 commit (same
sha, same files); upstream's local origin has moved on to v2.14.1. The weekly workflow init wrote then
opens the week's issue with the drift 2.13.0 → 2.14.1, mentioning the subscribed team for what dlprim
lacks; a manual dispatch with `post-issue` opens its own issue and leaves the week's as it was. The
watch workflow init wrote opens the dashboard of the open upstream pull requests that would affect
dlprim (one PR bringing 2.14.1's operators), and its comment mentions the team once.
tests/act/test_act.py says how the act tests work.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from act_support import TOKEN, Site, add_opdrift_origin, git, job_environment, run_act
from clirun import Opdrift
from fake_github import FakeGitHub
from pytorch_history import build_history

from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

BACKEND = "acme/dlprim"


@pytest.fixture
def site(
    github_server: FakeGitHub,
    tmp_path: Path,
    act_wheelhouse: Path,
    dlprim_src: Path,
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
    act_release: tuple[Path, str],
) -> Site:
    origins = tmp_path / "origins"
    release_dir, release = act_release
    add_opdrift_origin(origins, release_dir)
    history = build_history(origins / "pytorch" / "pytorch", first="2.13.0", last="2.14.1")
    seed = history.tag_sha("2.13.0")
    # The API's pytorch/pytorch main is the local history's v2.13.0 commit: same sha, files and date.
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github_server.add_repo("pytorch/pytorch")
    files = {
        path: subprocess.run(
            ["git", "-C", str(history.path), "show", f"{seed}:{path}"], capture_output=True, check=True
        ).stdout
        for path in (NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH)
    }
    # The history's commits are dated +0000 (pytorch_history), so their own zone is UTC.
    date = git(history.path, "show", "-s", "--format=%cd", "--date=format:%Y-%m-%dT%H:%M:%SZ", seed)
    github_server.add_commit("pytorch/pytorch", files, refs=("main",), date=date, sha=seed)
    github_server.add_repo(BACKEND)

    origin = origins / "acme" / "dlprim.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    work = tmp_path / "dlprim"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    shutil.copytree(dlprim_src, work / "src")
    monkeypatch.chdir(work)
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    # An editable install records no commit: the pin is given with --action, and written everywhere.
    run = opdrift(
        "init", "--backend", "dlprim:cpp=src", "--who", "@dlprim-team", "--weekly", "--watch",
        "--action", f"OWNER/opdrift@{release}",
    )  # fmt: skip
    assert run.code == 0, run.err
    for name in ("weekly-drift.yml", "watch.yml", "manual-drift.yml"):
        assert "0" * 40 not in (work / ".github" / "workflows" / name).read_text(encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "opdrift: operator drift alerts")
    git(work, "push", "-q", str(origin), "main")
    git(work, "remote", "add", "origin", f"https://github.com/{BACKEND}.git")  # act names the repo by it
    env = job_environment(tmp_path, act_wheelhouse, origins)
    return Site(work, origin, env, origins, pytorch_head=history.tag_sha("2.14.1"))


@pytest.mark.slow  # two act runs
def test_the_written_weekly_workflow_opens_the_issue_and_a_manual_run_leaves_it_alone(
    github_server: FakeGitHub, site: Site
) -> None:
    run_act(site, github_server, "schedule", "weekly-drift.yml", {"schedule": "17 6 * * 1"})
    (week,) = github_server.issues(BACKEND)
    assert "opdrift:weekly window=" in week["body"]
    assert "2.14.1" in week["title"] + week["body"]
    # The subscription init wrote is read: dlprim lacks some of 2.14.1's new operators.
    assert "@dlprim-team" in week["body"]
    # The refreshed snapshot was pushed after the issue, to opdrift-state (started from init's seed),
    # never to the default branch.
    assert git(site.origin, "rev-list", "--count", "opdrift-state") == "2"
    assert git(site.origin, "rev-list", "--count", "main") == "1"

    # As GitHub sends them: workflow_dispatch inputs are strings in the event (act reads a JSON true as
    # the input's default).
    payload = {
        "inputs": {"pytorch-ref": "v2.14.1", "base-snapshot": "snapshots/main.json", "post-issue": "true"}
    }
    run_act(site, github_server, "workflow_dispatch", "manual-drift.yml", payload)
    issues = {i["number"]: i for i in github_server.issues(BACKEND)}
    assert len(issues) == 2, [i["title"] for i in issues.values()]
    assert (issues[week["number"]]["title"], issues[week["number"]]["body"]) == (week["title"], week["body"])
    (manual,) = [i for n, i in issues.items() if n != week["number"]]
    assert "manual run at v2.14.1" in manual["title"]
    assert git(site.origin, "rev-list", "--count", "opdrift-state") == "2"  # a manual run refreshes nothing


@pytest.mark.slow  # one act run
def test_the_written_watch_workflow_opens_the_dashboard_of_open_upstream_prs(
    github_server: FakeGitHub, site: Site
) -> None:
    """An open upstream PR that brings 2.14.1's operators (dlprim lacks some) is on the dashboard, and
    the run's one comment mentions the team once."""
    files = {
        path: subprocess.run(
            ["git", "-C", str(site.origins / "pytorch" / "pytorch"), "show", f"{site.pytorch_head}:{path}"],
            capture_output=True,
            check=True,
        ).stdout
        for path in (NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH)
    }
    main = github_server.repos["pytorch/pytorch"].refs["main"]
    head = github_server.add_commit("pytorch/pytorch", files, parent=main, date="2026-12-02T10:00:00Z")
    number = github_server.add_pull("pytorch/pytorch", title="Operators of 2.14.1", sha=head, base=main)
    run_act(site, github_server, "schedule", "watch.yml", {"schedule": "23 * * * *"})
    (dashboard,) = [
        i for i in github_server.issues(BACKEND) if str(i["body"]).startswith("<!-- opdrift:watch -->")
    ]
    assert f"/pull/{number})" in str(dashboard["body"])
    (comment,) = github_server.comments(BACKEND, int(str(dashboard["number"])))
    assert str(comment["body"]).count("@dlprim-team") == 1
