"""examples/downstream/manual-drift.yml in act (tests/test_act.py says how the act tests work)."""

from __future__ import annotations

import pytest
from act_support import Site, git, run_act
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
