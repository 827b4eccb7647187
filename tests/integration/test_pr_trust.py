"""What a fork's pull request controls cannot change what the privileged poster posts.

The poster's own steps (examples/pytorch/pr-drift-comment.yml, run by bash as the runner would) against
the fake GitHub API over real HTTP, with the real CLI: it reads the PR's three files itself, at the
merge base and at the run's head commit, and nothing the PR's run uploaded. The same pair end to end in
a workflow engine is tests/act/test_act.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import Opdrift
from datafiles import release_text
from fake_github import FakeGitHub

from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

ROOT = Path(__file__).resolve().parents[2]
POSTER = ROOT / "examples" / "pytorch" / "pr-drift-comment.yml"
REPO = "acme/pytorch"
TOKEN = "ghs_prtrusttoken0000000000000000000000"
BOT = "github-actions[bot]"
FORGED = "Nothing to review here, merge at will."
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


def _files(version: str) -> dict[str, bytes]:
    return {path: release_text(version, name).encode() for path, name in NAMES.items()}


@pytest.fixture
def pull(github_server: FakeGitHub) -> tuple[FakeGitHub, int, str]:
    """A fork's PR: base 2.14.1's files, head 2.15.0's (a real drift); the workflow token's identity."""
    fake = github_server
    fake.add_token(TOKEN, BOT, user_endpoint=False)
    fake.add_repo(REPO)
    base = fake.add_commit(REPO, _files("2.14.1"), refs=("main",), date="2026-03-02T10:00:00Z")
    head = fake.add_commit(REPO, _files("2.15.0"), date="2026-06-01T10:00:00Z", parent=base)
    number = fake.add_pull(REPO, sha=head, head_repo="mallory/pytorch", branch="patch-1")
    fake.set_pull_base(REPO, number, base)
    return fake, number, head


def _forged_artifact(where: Path, opdrift: Opdrift, head: str) -> Path:
    """The reproduction: base.json a copy of head.json, plus the fork's own sentence in `warnings`."""
    report = where / "opdrift-report"
    report.mkdir(parents=True)
    run = opdrift("snapshot", f"gh:{REPO}@{head}", "-o", str(report / "head.json"))
    assert run.code == 0, run.err
    forged = json.loads((report / "head.json").read_text(encoding="utf-8"))
    (report / "base.json").write_text(json.dumps(forged), encoding="utf-8")
    forged["warnings"] = [FORGED]
    (report / "head.json").write_text(json.dumps(forged), encoding="utf-8")
    (report / "report.md").write_text("## ✅ No operator changes\n", encoding="utf-8")
    return report


def _steps() -> list[dict[str, Any]]:
    data = yaml.safe_load(POSTER.read_text(encoding="utf-8"))
    (job,) = data["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _expand(value: str, event: dict[str, str], outputs: dict[str, str], temp: Path) -> str:
    """The few expressions the poster's env uses, as Actions would fill them for this event."""
    table = {
        "${{ runner.temp }}": str(temp),
        "${{ github.token }}": TOKEN,
        "${{ github.repository }}": REPO,
        "${{ toJSON(github.event.workflow_run.pull_requests.*.number) }}": event["prs"],
        "${{ github.event.workflow_run.head_sha }}": event["head_sha"],
        "${{ github.event.workflow_run.head_repository.full_name }}": event["head_repo"],
        "${{ github.event.workflow_run.head_branch }}": event["head_branch"],
        "${{ steps.pr.outputs.number }}": outputs.get("number", ""),
    }
    for expr, filled in table.items():
        value = value.replace(expr, filled)
    assert "${{" not in value, f"an expression this test does not fill: {value}"
    return value


def run_poster(fake: FakeGitHub, tmp_path: Path, event: dict[str, str]) -> str:
    """Every `opdrift` step of the poster's job, in order, as bash runs it; returns their output."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "opdrift"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bot "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "workspace"
    work.mkdir(exist_ok=True)
    outputs: dict[str, str] = {}
    log: list[str] = []
    for step in _steps():
        script = step.get("run", "")
        if not any(line.lstrip().startswith("opdrift ") for line in script.splitlines()):
            continue  # setup-python, the checkout of opdrift's release and the install: not this test's
        if "steps.pr.outputs.number != ''" in step.get("if", "") and not outputs.get("number"):
            continue
        out_file = tmp_path / f"output-{len(log)}"
        env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("GITHUB_", "GIT_", "PYTHON", "OPDRIFT_"))
            },
            "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),
            "GITHUB_API_URL": fake.api_url,
            "GITHUB_OUTPUT": str(out_file),
            "RUNNER_TEMP": str(tmp_path),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            **{k: _expand(str(v), event, outputs, tmp_path) for k, v in step.get("env", {}).items()},
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        log.append(done.stdout + done.stderr)
        assert done.returncode == 0, "\n".join(log)
        if out_file.exists() and "id" in step and step["id"] == "pr":
            for line in out_file.read_text().splitlines():
                name, _, value = line.partition("=")
                outputs[name] = value
    return "\n".join(log)


def _event(number: int | None, head: str) -> dict[str, str]:
    return {
        "prs": json.dumps([] if number is None else [number]),
        "head_sha": head,
        "head_repo": "mallory/pytorch",
        "head_branch": "patch-1",
    }


@pytest.mark.slow
def test_a_forged_report_of_the_pr_run_cannot_change_what_is_posted(
    pull: tuple[FakeGitHub, int, str], opdrift: Opdrift, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, number, head = pull
    monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    # Planted where the old poster downloaded the artifact and in the workspace: read by nobody now.
    _forged_artifact(tmp_path, opdrift, head)
    _forged_artifact(tmp_path / "workspace", opdrift, head)
    # Fork PRs carry no pull_requests in the event: the poster finds the PR by head repo, branch and sha.
    log = run_poster(fake, tmp_path, _event(None, head))
    (comment,) = fake.comments(REPO, number)
    body = str(comment["body"])
    assert comment["user"]["login"] == BOT
    assert FORGED not in body and "merge at will" not in log
    assert "✅" not in body.splitlines()[1], body[:400]
    assert "Operator drift" in body
    # What it read: the merge base and the run's head commit, through the API.
    paths = [r.path for r in fake.requests if r.method == "GET"]
    assert any(p.startswith(f"/repos/{REPO}/compare/") for p in paths)
    # the head commit by the git database (about a kilobyte), not commits/REF with its patches
    assert any(p == f"/repos/{REPO}/git/commits/{head}" for p in paths)


def test_the_poster_reads_nothing_the_pr_run_made_and_checks_out_only_opdrift() -> None:
    steps = _steps()
    text = POSTER.read_text(encoding="utf-8")
    assert "download-artifact" not in text and "verify-artifact" not in text
    for step in steps:
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/checkout@"):
            given = step["with"]
            # opdrift's pinned release, or the config alone from the default branch (no `ref:`)
            if "repository" in given:
                assert given["repository"] == "OWNER/opdrift", "the privileged job never checks out the PR"
            else:
                assert "ref" not in given and given["sparse-checkout"] == ".github/opdrift.yml", given
            assert given["persist-credentials"] is False
    (post,) = [s for s in steps if "opdrift comment" in str(s.get("run", ""))]
    assert '"gh:$REPO#$PR:merge-base" "gh:$REPO@$HEAD_SHA"' in post["run"]
    assert '--head-sha "$HEAD_SHA"' in post["run"]
    assert post["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    pr_workflow = (ROOT / "examples" / "pytorch" / "pr-drift.yml").read_text(encoding="utf-8")
    assert "upload-artifact" not in pr_workflow, "the PR's run hands the poster nothing"


@pytest.mark.slow
def test_comment_refuses_a_head_snapshot_of_another_commit(
    pull: tuple[FakeGitHub, int, str], opdrift: Opdrift, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a poster is given, a HEAD that is not the event's head commit is not posted."""
    fake, number, head = pull
    monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("OPDRIFT_BOT_LOGIN", BOT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    base_spec = f"gh:{REPO}#{number}:merge-base"
    other = fake.repos[REPO].refs["main"]
    argv = ["comment", "--repo", REPO, "--pr", str(number), "--head-sha", head, base_spec]
    run = opdrift(*argv, f"gh:{REPO}@{other}")
    assert run.code == 2, run.err
    assert f"not --head-sha {head[:12]}" in run.err and len(run.err.strip().splitlines()) == 1
    # A stored snapshot that records no commit is refused the same way.
    report = _forged_artifact(tmp_path, opdrift, head)
    stripped = json.loads((report / "head.json").read_text(encoding="utf-8"))
    stripped["source"].pop("commit", None)
    (report / "nocommit.json").write_text(json.dumps(stripped), encoding="utf-8")
    run = opdrift(*argv, str(report / "nocommit.json"))
    assert run.code == 2 and "records no commit" in run.err, run.err
    assert fake.writes() == []
    run = opdrift(*argv, f"gh:{REPO}@{head}")
    assert run.code == 0, run.err
    assert len(fake.comments(REPO, number)) == 1
