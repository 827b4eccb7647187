"""examples/downstream/weekly-drift.yml in act, twice (tests/act/test_act.py says how the act tests work)."""

from __future__ import annotations

import json

import pytest
from act_support import BACKEND, Site, git, run_act, weekly_issues
from fake_github import FakeGitHub


@pytest.mark.slow  # act runs
def test_downstream_weekly_twice_gives_one_issue_and_one_snapshot_commit_on_its_own_branch(
    github_server: FakeGitHub, act_site: Site
) -> None:
    site = act_site
    # main is protected, as GitHub refuses a push of github-actions[bot] to most default branches.
    hook = site.origin / "hooks" / "pre-receive"
    hook.write_text(
        '#!/bin/sh\nwhile read old new ref; do [ "$ref" = refs/heads/main ] && '
        "echo 'GH006: Protected branch update failed for refs/heads/main.' && exit 1; done; exit 0\n"
    )
    hook.chmod(0o755)
    main = git(site.origin, "rev-parse", "main")
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
    # The first run started opdrift-state from the checked-out seed (v2.13.0) and pushed it with one
    # refresh (2.14.1); the second found the same base there, so the same issue, and nothing to commit.
    assert git(site.origin, "rev-list", "--count", "opdrift-state") == "2"
    seed = json.loads(git(site.origin, "show", "opdrift-state~1:snapshots/main.json"))
    refreshed = json.loads(git(site.origin, "show", "opdrift-state:snapshots/main.json"))
    assert seed["source"]["commit"] != site.pytorch_head
    assert refreshed["source"]["commit"] == site.pytorch_head
    assert git(site.origin, "rev-parse", "main") == main, "the default branch gets no bot commit"
