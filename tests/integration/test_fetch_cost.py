"""What the PR job fetches: its own git commands against the `fetch-depth: 0` way, on a busy origin.

The origin (tests/synthetic_origin.py) has 600 commits on main, 2,000 ghstack-style branches of 10
commits each, and tags. Both ways then read the same thing, the report of the PR's merge base against
its head (lazy fetches included), and must give the same report; the objects and bytes each clone
holds afterwards are what it fetched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import Opdrift
from synthetic_origin import Origin, build_origin


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def _held(repo: Path) -> tuple[int, int]:
    """(objects, KiB) the clone holds: packed and loose."""
    stats = dict(line.split(": ") for line in _git(repo, "count-objects", "-v").splitlines())
    return int(stats["in-pack"]) + int(stats["count"]), int(stats["size-pack"]) + int(stats["size"])


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    return build_origin(
        tmp_path_factory.mktemp("origin") / "pytorch.git", main_commits=600, branches=2000, branch_commits=10
    )


@pytest.mark.slow
def test_the_pr_fetch_costs_a_fiftieth_of_fetch_depth_0_for_the_same_report(
    origin: Origin, tmp_path: Path, opdrift: Opdrift
) -> None:
    url = f"file://{origin.path}"
    clone = tmp_path / "pytorch"

    # actions/checkout with fetch-depth: 0 and filter: blob:none, after `git init` and `remote add`.
    clone.mkdir()
    _git(clone, "init", "--quiet")
    _git(clone, "remote", "add", "origin", url)
    _git(
        clone, "-c", "protocol.version=2", "fetch", "--quiet", "--prune", "--no-recurse-submodules",
        "--filter=blob:none", "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*",
    )  # fmt: skip
    _git(clone, "config", "remote.origin.promisor", "true")
    _git(clone, "config", "remote.origin.partialclonefilter", "blob:none")
    fork = _git(clone, "merge-base", origin.base, origin.head).strip()
    full = opdrift("diff", f"{clone}@{fork}", f"{clone}@{origin.head}", "--fail-on", "never")
    assert full.code == 0, full.err
    full_objects, full_kib = _held(clone)
    shutil.rmtree(clone)

    # The PR job: opdrift fetch-commits, then the same report (trees and blobs fetched as read).
    fetched = opdrift("fetch-commits", "--remote", url, "--into", str(clone), origin.base, origin.head)
    assert fetched.code == 0, fetched.err
    assert f"merge-base={origin.fork}" in fetched.out
    assert fork == origin.fork
    cheap = opdrift("diff", f"{clone}@{origin.fork}", f"{clone}@{origin.head}", "--fail-on", "never")
    assert cheap.code == 0, cheap.err
    cheap_objects, cheap_kib = _held(clone)

    assert cheap.out == full.out
    assert "Operator drift" in cheap.out or "operator" in cheap.out.lower()
    ratio = full_objects / cheap_objects
    print(
        f"\nfetch-depth: 0 way: {full_objects} objects, {full_kib} KiB; "
        f"PR fetch: {cheap_objects} objects, {cheap_kib} KiB; {ratio:.0f}x fewer objects, "
        f"{full_kib / cheap_kib:.1f}x fewer bytes ({origin.commits} commits, {origin.branches} branches)"
    )
    assert ratio >= 50


@pytest.mark.slow
def test_fetch_commits_reuses_its_clone_and_refuses_another_origin(
    origin: Origin, tmp_path: Path, opdrift: Opdrift
) -> None:
    clone = tmp_path / "pytorch"
    argv = [
        "fetch-commits",
        "--remote",
        f"file://{origin.path}",
        "--into",
        str(clone),
        origin.base,
        origin.head,
    ]
    assert opdrift(*argv).code == 0
    assert opdrift(*argv).code == 0
    other = opdrift(
        "fetch-commits", "--remote", "file:///elsewhere.git", "--into", str(clone), origin.base, origin.head
    )
    assert other.code == 2
    assert other.err.count("\n") == 1
    assert "not file:///elsewhere.git" in other.err
    bad = opdrift(
        "fetch-commits", "--remote", f"file://{origin.path}", "--into", str(clone), "--upload-pack=x", "y"
    )
    assert bad.code == 2


@pytest.mark.slow
def test_the_fetch_token_reaches_git_in_its_environment_only(
    origin: Origin, tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    import base64

    from opdrift.sources.git import git_env, run_git

    token = "ghs_fetchtoken0000000000000000000000"
    monkeypatch.setenv("OPDRIFT_GIT_TOKEN", token)
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://ghe.example")
    env = git_env()
    assert "OPDRIFT_GIT_TOKEN" not in env  # git and its children get the header, not the token
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    clone = tmp_path / "pytorch"
    fetched = opdrift(
        "fetch-commits", "--remote", f"file://{origin.path}", "--into", str(clone), origin.base, origin.head
    )
    assert fetched.code == 0, fetched.err
    # git itself sees the header for that server (and only that one) ...
    seen = run_git(clone, "config", "--get-urlmatch", "http.extraheader", "https://ghe.example/o/r.git").text
    assert seen.strip() == f"AUTHORIZATION: basic {basic}"
    other = run_git(
        clone,
        "config",
        "--get-urlmatch",
        "http.extraheader",
        "https://elsewhere.example/o/r.git",
        check=False,
    )
    assert other.text.strip() == ""
    # ... and nothing of it is stored where a later step or an upload could read it.
    stored = (clone / ".git" / "config").read_text(encoding="utf-8")
    assert basic not in stored and token not in stored and "extraheader" not in stored
    assert any(
        v == f"AUTHORIZATION: basic {basic}" for k, v in env.items() if k.startswith("GIT_CONFIG_VALUE_")
    )
