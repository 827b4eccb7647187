"""examples/pytorch/weekly-drift.yml in act, twice (tests/act/test_act.py says how the act tests work)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from act_support import PYTORCH, ROOT, PyTorchSite, git, run_act, snapshot, weekly_issues
from fake_github import FakeGitHub


@pytest.mark.slow  # act runs
def test_pytorch_weekly_twice_gives_one_issue_and_one_commit_on_the_snapshot_branch(
    github_server: FakeGitHub, act_pytorch_site: PyTorchSite, tmp_path: Path
) -> None:
    ps = act_pytorch_site
    # The snapshot branch, seeded once from a commit (docs/workflows.md, "Seeding the snapshot").
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(ps.site.origin), str(seed)], check=True)
    git(seed, "checkout", "-q", "--orphan", "opdrift-snapshots")
    git(seed, "rm", "-q", "-rf", ".")
    snapshot(f"{ps.site.origin}@v2.13.0", seed / "main.json")
    git(seed, "add", "main.json")
    git(seed, "commit", "-q", "-m", "seed the snapshot from v2.13.0")
    git(seed, "push", "-q", "origin", "opdrift-snapshots")
    work = ps.site.work
    git(work, "checkout", "-q", "main")
    (work / ".github" / "workflows" / "weekly-drift.yml").write_text(
        (ROOT / "examples" / "pytorch" / "weekly-drift.yml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    main_before = git(ps.site.origin, "rev-parse", "main")
    for _ in range(2):
        run_act(ps.site, github_server, "schedule", "weekly-drift.yml", {"schedule": "17 6 * * 1"})
    assert len(weekly_issues(github_server, PYTORCH)) == 1
    assert git(ps.site.origin, "rev-list", "--count", "opdrift-snapshots") == "2"  # the seed and one refresh
    refreshed = json.loads(git(ps.site.origin, "show", "opdrift-snapshots:main.json"))
    assert refreshed["source"]["commit"] == main_before
    assert git(ps.site.origin, "rev-parse", "main") == main_before, "the default branch gets no bot commit"
