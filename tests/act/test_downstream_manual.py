"""examples/downstream/manual-drift.yml in act (tests/act/test_act.py says how the act tests work)."""

from __future__ import annotations

from pathlib import Path

import pytest
from act_support import BACKEND, Site, git, run_act, snapshot
from fake_github import FakeGitHub


@pytest.mark.slow  # an act run
def test_downstream_manual_dispatch_writes_the_summary_and_posts_nothing(
    github_server: FakeGitHub, act_site: Site
) -> None:
    payload = {
        "inputs": {"pytorch-ref": "v2.14.1", "base-snapshot": "snapshots/main.json", "post-issue": False}
    }
    log = run_act(act_site, github_server, "workflow_dispatch", "manual-drift.yml", payload)
    assert "Job succeeded" in log
    assert github_server.writes() == []
    assert git(act_site.origin, "rev-list", "--count", "main") == "1"


@pytest.mark.slow  # an act run
def test_downstream_manual_issue_reads_the_tracked_snapshot_from_its_branch(
    github_server: FakeGitHub, act_site: Site, tmp_path: Path
) -> None:
    """After the first weekly run the default branch holds only the old seed (v2.13.0 here); the
    tracked snapshot is on opdrift-state (v2.14.1 here). A manual run diffs against that one, pushes
    nothing, and (like every act run) meets GitHub's deprecation Link headers on the way."""
    site = act_site
    pytorch = site.origins / "pytorch" / "pytorch"  # build_site's: v2.13.0 and v2.14.1
    state = tmp_path / "state"
    git(tmp_path, "clone", "-q", str(site.origin), str(state))
    git(state, "checkout", "-q", "--orphan", "opdrift-state")
    snapshot(f"{pytorch}@v2.14.1", state / "snapshots" / "main.json")
    git(state, "add", "snapshots/main.json")
    git(state, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "tracked")
    git(state, "push", "-q", "origin", "opdrift-state")
    tracked = git(site.origin, "rev-parse", "opdrift-state")
    payload = {
        "inputs": {"pytorch-ref": "v2.14.1", "base-snapshot": "snapshots/main.json", "post-issue": "true"}
    }
    log = run_act(site, github_server, "workflow_dispatch", "manual-drift.yml", payload)
    assert f"snapshots/main.json from opdrift-state at {tracked[:12]}" in log, log[-4000:]
    issues = github_server.issues(BACKEND)
    assert len(issues) == 1, ([i["title"] for i in issues], log[-6000:])
    (issue,) = issues
    body = str(issue["body"])
    assert "2.14.1" in body and "2.13.0" not in body, body[:2000]
    # Nothing pushed: the manual run refreshes nothing.
    assert git(site.origin, "rev-parse", "opdrift-state") == tracked
    assert git(site.origin, "rev-list", "--count", "main") == "1"
    # The run's API calls were answered with the deprecation notice in their Link.
    assert github_server.deprecation_links
    assert any(r.method == "GET" and "/issues" in r.path and r.status == 200 for r in github_server.requests)
