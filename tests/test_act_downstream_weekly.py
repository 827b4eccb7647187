"""examples/downstream/weekly-drift.yml in act, twice (tests/test_act.py says how the act tests work)."""

from __future__ import annotations

import json

import pytest
from act_support import BACKEND, Site, git, run_act, weekly_issues
from fake_github import FakeGitHub


@pytest.mark.slow  # act runs
def test_downstream_weekly_twice_gives_one_issue_and_one_snapshot_commit(
    github_server: FakeGitHub, act_site: Site
) -> None:
    site = act_site
    before = git(site.origin, "rev-list", "--count", "main")
    logs = [
        run_act(site, github_server, "schedule", "weekly-drift.yml", {"schedule": "17 6 * * 1"})
        for _ in range(2)
    ]
    # The depth-1 PyTorch checkout was deepened by date to the seed's commit: attribution ran.
    assert "opdrift: deepened" in logs[0], logs[0][-4000:]
    issues = weekly_issues(github_server, BACKEND)
    assert len(issues) == 1, [i["title"] for i in github_server.issues(BACKEND)]
    body = str(issues[0]["body"])
    assert "2.13.0" in body or "v2.13.0" in body
    # One refresh commit pushed to the origin, by the first run only; it holds 2.14.1's snapshot.
    assert int(git(site.origin, "rev-list", "--count", "main")) == int(before) + 1
    refreshed = json.loads(git(site.origin, "show", "main:snapshots/main.json"))
    assert refreshed["source"]["commit"] == site.pytorch_head
