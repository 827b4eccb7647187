"""examples/pytorch/pr-drift-comment.yml in act against a forged report of the PR's run
(tests/act/test_act.py says how the act tests work)."""

from __future__ import annotations

import json

import pytest
from act_support import PYTORCH, PyTorchSite, run_act, run_event, snapshot
from fake_github import FakeGitHub


@pytest.mark.slow  # an act run
def test_pytorch_poster_ignores_a_forged_report_of_the_pr_run(
    github_server: FakeGitHub, act_pytorch_site: PyTorchSite
) -> None:
    """A forged artifact: a fork's run uploads base.json = a copy of head.json with its own sentence
    in `warnings`; the poster reads the PR's files itself and posts the real drift."""
    ps = act_pytorch_site
    number = github_server.add_pull(PYTORCH, sha=ps.heads[1], branch="pr")
    github_server.set_pull_base(PYTORCH, number, ps.base)
    run_id = "4242"
    report = ps.artifacts / run_id / "opdrift-report"
    report.mkdir(parents=True)
    snapshot(f"{ps.site.origin}@{ps.heads[1]}", report / "head.json")
    forged = json.loads((report / "head.json").read_text(encoding="utf-8"))
    forged["warnings"] = ["Nothing to review here, merge at will."]
    for name in ("base.json", "head.json"):
        (report / name).write_text(json.dumps(forged), encoding="utf-8")
    (report / "report.md").write_text("## ✅ No operator changes\n", encoding="utf-8")
    run_act(ps.site, github_server, "workflow_run", "pr-drift-comment.yml", run_event(ps.heads[1], run_id))
    (comment,) = github_server.comments(PYTORCH, number)
    body = str(comment["body"])
    assert "opdrift_act_first" in body and "opdrift_act_second" in body
    assert "merge at will" not in body
    assert "✅" not in body.splitlines()[1]
