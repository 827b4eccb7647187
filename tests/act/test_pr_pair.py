"""The fork-safe PR pair of examples/pytorch in act: pr-drift.yml, then its pr-drift-comment.yml poster
(tests/act/test_act.py says how the act tests work)."""

from __future__ import annotations

import pytest
from act_support import PYTORCH, PyTorchSite, pr_event, run_act, run_event
from fake_github import FakeGitHub


@pytest.mark.slow  # act runs
def test_pytorch_pr_pair_two_pushes_give_one_sticky_comment(
    github_server: FakeGitHub, act_pytorch_site: PyTorchSite
) -> None:
    ps = act_pytorch_site
    number = github_server.add_pull(PYTORCH, sha=ps.heads[0], branch="pr")
    assert number == 1
    github_server.set_pull_base(PYTORCH, number, ps.base)
    for push, head in enumerate(ps.heads):
        github_server.push(PYTORCH, number, head)
        log = run_act(ps.site, github_server, "pull_request", "pr-drift.yml", pr_event(ps, head))
        assert "::warning" in log or "opdrift_act_first" in log
        # Fetched as the PR job does: the two commits' history, the three files on demand.
        assert "fetched" in log and "merge base" in log
        # The PR's run hands the poster nothing: a fork's run could hand it anything.
        assert not ps.artifacts.exists() or not any(ps.artifacts.iterdir())
        run_act(
            ps.site, github_server, "workflow_run", "pr-drift-comment.yml", run_event(head, str(10 + push))
        )
        comments = [
            c for c in github_server.comments(PYTORCH, number) if c["user"]["login"] == "github-actions[bot]"
        ]
        assert len(comments) == 1, f"after push {push + 1}: {len(comments)} comments"
    (comment,) = comments
    assert "opdrift_act_second" in str(comment["body"])
