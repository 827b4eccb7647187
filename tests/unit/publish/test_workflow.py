"""The opdrift commands the workflows call: verify-artifact, resolve-sources, pr-number, commit-snapshot."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import Opdrift
from fake_github import FakeGitHub
from goldens import check_error_line, check_golden_entry, updating
from pytorch_history import NATIVE, History, build_history

from opdrift.errors import GitError, WorkflowError
from opdrift.publish.artifact import ArtifactError, verify_artifact
from opdrift.publish.workflow import output_lines, resolve_sources
from opdrift.sources.repo import commit_file, merge_base, push_commits

GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
}
TOKEN = "ghs_workflowcommandtoken000000000000"


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


# --- verify-artifact -------------------------------------------------------------------------------


def _artifact(tmp_path: Path) -> Path:
    d = tmp_path / "artifact"
    d.mkdir()
    (d / "base.json").write_text("{}")
    (d / "head.json").write_text("{}")
    return d


def test_a_clean_artifact_passes(tmp_path: Path) -> None:
    d = _artifact(tmp_path)
    (d / "report.md").write_text("# drift\n")
    files = verify_artifact(d, required=["base.json", "head.json"], optional=["report.md"])
    assert [f.name for f in files] == ["base.json", "head.json", "report.md"]


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda d: (d / "report.md").symlink_to("/etc/passwd"), "symbolic link"),
        (lambda d: (d / "report.md").symlink_to("base.json"), "symbolic link"),
        (lambda d: (d / "evil.sh").write_text("curl x | sh"), "unexpected file"),
        (lambda d: (d / "nested").mkdir(), "unexpected directory"),
        (lambda d: os.mkfifo(d / "report.md"), "not a regular file"),
        (lambda d: (d / "head.json").unlink(), "lacks head.json"),
    ],
)
def test_an_artifact_out_of_shape_is_refused(tmp_path: Path, plant: Any, message: str) -> None:
    d = _artifact(tmp_path)
    plant(d)
    with pytest.raises(ArtifactError, match=message):
        verify_artifact(d, required=["base.json", "head.json"], optional=["report.md"])


def test_hard_links_and_oversize_files_are_refused(tmp_path: Path) -> None:
    d = _artifact(tmp_path)
    outside = tmp_path / "secret"
    outside.write_text("token")
    os.link(outside, d / "report.md")
    with pytest.raises(ArtifactError, match="hard link"):
        verify_artifact(d, required=["base.json"], optional=["head.json", "report.md"])
    (d / "report.md").unlink()
    (d / "head.json").write_text("x" * 101)
    with pytest.raises(ArtifactError, match="101 bytes exceeds the 100-byte limit"):
        verify_artifact(d, required=["base.json", "head.json"], max_bytes=100)


def test_the_artifact_directory_itself_must_be_a_real_directory(tmp_path: Path) -> None:
    d = _artifact(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(d)
    with pytest.raises(ArtifactError, match="symbolic link"):
        verify_artifact(link, required=["base.json"], optional=["head.json"])
    with pytest.raises(ArtifactError, match="cannot read"):
        verify_artifact(tmp_path / "absent", required=[])


def test_verify_artifact_command_exit_codes(tmp_path: Path, opdrift: Opdrift) -> None:
    d = _artifact(tmp_path)
    assert opdrift("verify-artifact", str(d), "--require", "base.json", "--require", "head.json").code == 0
    (d / "x").write_text("")
    run = opdrift("verify-artifact", str(d), "--require", "base.json", "--require", "head.json")
    assert run.code == 2
    assert run.err.count("\n") == 1
    assert f"{d / 'x'}: unexpected file" in run.err


def test_missing_ok_says_no_report_from_the_pr_run_in_one_line(
    tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    outputs = tmp_path / "out.txt"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    argv = ["--require", "base.json", "--require", "head.json", "--missing-ok"]
    for missing in (tmp_path / "absent", tmp_path / "empty"):
        (tmp_path / "empty").mkdir(exist_ok=True)
        run = opdrift("verify-artifact", str(missing), *argv)
        assert (run.code, run.err) == (0, "")
        # one notice, and what it says is the golden's (a workflow command: `::notice title=opdrift::…`)
        assert re.fullmatch(r"::notice title=opdrift::[^\n]+\n", run.out)
        check_golden_entry("warnings.lines.txt", "verify-artifact: no report", run.out, updating(request))
    assert outputs.read_text().count("verified=false") == 2
    d = _artifact(tmp_path)
    assert opdrift("verify-artifact", str(d), *argv).code == 0
    assert outputs.read_text().endswith("verified=true\n")
    # A present but wrong artifact is still refused, --missing-ok or not; and without it, missing is an error.
    (d / "head.json").unlink()
    assert opdrift("verify-artifact", str(d), *argv).code == 2
    assert opdrift("verify-artifact", str(tmp_path / "absent"), "--require", "base.json").code == 2


# --- resolve-sources -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A PyTorch-shaped repo whose branch `pr` forks from v2.12.0 while main went on to v2.13.0."""
    repo = build_history(tmp_path_factory.mktemp("h") / "pytorch", first="2.12.0", last="2.13.0").path
    fork = _git(repo, "rev-parse", "v2.12.0^{commit}")
    _git(repo, "checkout", "-q", "-b", "pr", fork)
    path = repo / NATIVE
    path.write_text(path.read_text() + "\n# a comment\n")
    _git(repo, "commit", "-q", "-am", "touch")
    return repo, fork, _git(repo, "rev-parse", "pr")


def test_merge_base_of_a_pr_is_its_fork_point(forked: tuple[Path, str, str]) -> None:
    repo, fork, _ = forked
    assert merge_base(repo, "main", "pr") == fork
    with pytest.raises(GitError, match="no merge base"):
        merge_base(repo, "main", "no-such-branch")
    with pytest.raises(WorkflowError, match="bad base revision"):
        merge_base(repo, "--output=stolen.txt", "pr")


def test_resolve_sources_forms() -> None:
    assert resolve_sources("pt", base="v1", head=None) == resolve_sources("pt", base="v1", head="HEAD")
    got = resolve_sources("pt", base="v1", head="v2")
    assert (got.base, got.head) == ("pt@v1", "pt@v2")
    got = resolve_sources("pt", base=None, head=None, base_source="snapshots/main.json")
    assert (got.base, got.head) == ("snapshots/main.json", "pt@HEAD")
    got = resolve_sources(
        "pt", base="a", head="b", use_merge_base=True, find_merge_base=lambda r, a, b: "c" * 40
    )
    assert got.base == "pt@" + "c" * 40
    with pytest.raises(WorkflowError, match="give a base"):
        resolve_sources("pt", base=None, head=None)
    with pytest.raises(WorkflowError, match="merge-base needs a base revision"):
        resolve_sources("pt", base=None, head=None, base_source="s.json", use_merge_base=True)


def test_resolve_sources_command_writes_github_output(
    forked: tuple[Path, str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    opdrift: Opdrift,
) -> None:
    repo, fork, _ = forked
    out = tmp_path / "out"
    out.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    args = [
        "resolve-sources",
        "--pytorch",
        str(repo),
        "--base",
        "main",
        "--head",
        "pr",
        "--merge-base",
        "true",
    ]
    run = opdrift(*args, "--dry-run", "true")
    assert run.code == 0
    expected = f"base={repo}@{fork}\nhead={repo}@pr\nmode=summary\ndry-run-flag=--dry-run\n"
    assert out.read_text() == "earlier=1\n" + expected
    assert run.out == expected


def test_outputs_cannot_be_forged_with_a_newline() -> None:
    with pytest.raises(WorkflowError, match="span lines"):
        output_lines({"base": "x\nnumber=1"})


# --- commit-snapshot -------------------------------------------------------------------------------


def test_commit_file_commits_only_that_file_and_only_when_changed(tmp_path: Path) -> None:
    repo = tmp_path / "bot"
    (repo / "snapshots").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    snap = repo / "snapshots" / "main.json"
    snap.write_text("{}\n")
    (repo / "other.txt").write_text("staged by someone else\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "seed")
    assert commit_file(snap, "refresh").sha is None
    snap.write_text('{"v": 2}\n')
    (repo / "other.txt").write_text("changed and staged\n")
    _git(repo, "add", "other.txt")
    done = commit_file(snap, "refresh")
    assert done.sha == _git(repo, "rev-parse", "HEAD")
    assert _git(repo, "show", "--name-only", "--format=%an|%s", "HEAD").splitlines() == [
        "github-actions[bot]|refresh",
        "",
        "snapshots/main.json",
    ]
    assert _git(repo, "diff", "--cached", "--name-only") == "other.txt"
    assert commit_file(snap, "refresh").sha is None


def test_push_snapshot_replays_the_commit_when_the_branch_moved(
    tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = tmp_path / "origin.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    bot, other = tmp_path / "bot", tmp_path / "other"
    _git(tmp_path, "clone", "-q", str(origin), str(bot))
    (bot / "snapshots").mkdir()
    (bot / "snapshots" / "main.json").write_text("{}\n")
    _git(bot, "add", "-A")
    _git(bot, "commit", "-q", "-m", "seed")
    _git(bot, "push", "-q", "origin", "HEAD:main")
    _git(tmp_path, "clone", "-q", str(origin), str(other))
    # The weekly job commits the refreshed snapshot while someone merges something else.
    (bot / "snapshots" / "main.json").write_text('{"v": 2}\n')
    assert commit_file(bot / "snapshots" / "main.json", "refresh").sha is not None
    (other / "README").write_text("merged meanwhile\n")
    _git(other, "add", "README")
    _git(other, "commit", "-q", "-m", "merged meanwhile")
    _git(other, "push", "-q", "origin", "HEAD:main")

    monkeypatch.chdir(bot)
    run = opdrift("push-snapshot", "--branch", "main", "--remote", str(origin))
    assert run.code == 0
    assert "pushed" in run.out
    assert _git(origin, "log", "--format=%s", "main").splitlines() == ["refresh", "merged meanwhile", "seed"]

    # Without --remote it needs the token; a token is never printed, even in git's own error.
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    run = opdrift("push-snapshot", "--branch", "main")
    assert run.code == 2
    assert "GITHUB_TOKEN is not set" in run.err
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_pushSecret123")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_SERVER_URL", f"file://{tmp_path}/nowhere")
    out = opdrift("push-snapshot", "--branch", "main")
    assert out.code == 2
    assert "ghs_pushSecret123" not in out.out + out.err
    assert "push to main failed: fatal:" in out.err and "does not appear to be a git repository" in out.err

    # The remote the workflow builds ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git), moved meanwhile: the
    # rebase fetches from it, and the token (a header for each command) is left nowhere in .git.
    (tmp_path / "o").mkdir()
    _git(tmp_path, "clone", "-q", "--bare", str(origin), str(tmp_path / "o" / "r.git"))
    monkeypatch.setenv("GITHUB_SERVER_URL", f"file://{tmp_path}")
    _git(other, "pull", "-q", "--rebase", str(tmp_path / "o" / "r.git"), "main")
    (other / "NOTES").write_text("merged again\n")
    _git(other, "add", "NOTES")
    _git(other, "commit", "-q", "-m", "merged again")
    _git(other, "push", "-q", str(tmp_path / "o" / "r.git"), "HEAD:main")
    (bot / "snapshots" / "main.json").write_text('{"v": 3}\n')
    assert commit_file(bot / "snapshots" / "main.json", "refresh again").sha is not None
    # Every git the push runs goes through a recorder of its arguments (what `ps` would show anyone).
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{tmp_path}/argv"\nexec {shutil.which("git")} "$@"\n'
    )
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    assert opdrift("push-snapshot", "--branch", "main").code == 0
    argv = (tmp_path / "argv").read_text()
    assert " push " in argv and " fetch " in argv and " rebase " in argv  # each step ran through it
    basic = base64.b64encode(b"x-access-token:ghs_pushSecret123").decode()
    assert basic not in argv and "ghs_pushSecret123" not in argv and "extraHeader" not in argv
    assert _git(tmp_path / "o" / "r.git", "log", "-1", "--format=%s", "main") == "refresh again"
    for leftover in (bot / ".git").rglob("*"):
        if leftover.is_file():
            assert b"ghs_pushSecret123" not in leftover.read_bytes(), leftover  # FETCH_HEAD, reflog, config


def test_push_snapshot_to_a_protected_branch_says_why_and_does_not_retry(tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'GH006: Protected branch update failed for refs/heads/main.'\nexit 1\n")
    hook.chmod(0o755)
    bot = tmp_path / "bot"
    _git(tmp_path, "clone", "-q", str(origin), str(bot))
    (bot / "main.json").write_text("{}\n")
    assert commit_file(bot / "main.json", "refresh").sha is not None
    with pytest.raises(WorkflowError, match=r"push to main failed: remote: GH006: Protected branch") as err:
        push_commits(bot, str(origin), "main")
    assert "times" not in str(err.value)  # refused once, not rebased and retried


def test_state_branch_starts_then_fast_forwards_its_own_branch_never_the_protected_default(
    tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    # The repository as GitHub holds it: main is protected (GH006), like most backends' default branch,
    # and holds the seed `opdrift init` wrote.
    (tmp_path / "acme").mkdir()
    origin = tmp_path / "acme" / "backend.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    work = tmp_path / "work"
    _git(tmp_path, "clone", "-q", str(origin), str(work))
    (work / "snapshots").mkdir()
    (work / "snapshots" / "main.json").write_text('{"seed": 1}\n')
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "opdrift: operator drift alerts")
    _git(work, "push", "-q", "origin", "HEAD:main")
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(
        '#!/bin/sh\nwhile read old new ref; do [ "$ref" = refs/heads/main ] && '
        "echo 'GH006: Protected branch update failed for refs/heads/main.' && exit 1; done; exit 0\n"
    )
    hook.chmod(0o755)
    main = _git(origin, "rev-parse", "main")
    monkeypatch.chdir(work)
    monkeypatch.setenv("GITHUB_SERVER_URL", f"file://{tmp_path}")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/backend")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)

    def week(n: int, text: str) -> dict[str, str]:
        run = opdrift(
            "state-branch", "--branch", "opdrift-state", "--file", "snapshots/main.json", "--dir", f"s{n}"
        )
        assert run.code == 0, run.err
        outputs = dict(line.split("=", 1) for line in run.out.splitlines())
        assert outputs["base-source"] == f"s{n}/snapshots/main.json"
        (work / outputs["base-source"]).write_text(text)
        committed = commit_file(work / outputs["base-source"], f"refresh {n}")
        assert committed.sha is not None
        pushed = opdrift("push-snapshot", "--dir", outputs["dir"], "--branch", "opdrift-state")
        assert pushed.code == 0, pushed.err
        return outputs

    # The first run starts the branch from the checked-out seed: one commit with no parent, then the refresh.
    first = week(1, '{"week": 1}\n')
    assert first["seeded"] == _git(origin, "rev-parse", "opdrift-state~1")
    assert _git(origin, "show", "opdrift-state~1:snapshots/main.json") == '{"seed": 1}'
    assert _git(origin, "ls-tree", "-r", "--name-only", "opdrift-state") == "snapshots/main.json"
    # The next one reads the branch with its history (the week's base is read from it) and fast-forwards it.
    second = week(2, '{"week": 2}\n')
    assert second["seeded"] == ""
    assert _git(origin, "log", "--format=%s", "opdrift-state").splitlines()[:2] == ["refresh 2", "refresh 1"]
    assert _git(origin, "rev-parse", "main") == main, "the default branch gets no bot commit"

    # Nothing to seed from: one line that names the way out.
    (work / "snapshots" / "main.json").unlink()
    run = opdrift("state-branch", "--branch", "other", "--file", "snapshots/main.json", "--dir", "s3")
    assert run.code == 2
    said = check_error_line("state-branch: nothing to seed from", run.err, updating(request))
    assert "other" in said and "snapshots/main.json" in said and "--seed" in said
    run = opdrift("state-branch", "--branch", "opdrift-state", "--file", "../x.json", "--dir", "s4")
    assert run.code == 2 and "relative to its root" in run.err


def test_commit_snapshot_command(tmp_path: Path, opdrift: Opdrift) -> None:
    run = opdrift("commit-snapshot", str(tmp_path / "absent.json"))
    assert run.code == 2
    assert "no such file" in run.err
    loose = tmp_path / "loose.json"
    loose.write_text("{}")
    run = opdrift("commit-snapshot", str(loose))
    assert run.code == 2  # not inside a git repository
    assert "git rev-parse" in run.err


# --- prepare-history -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> History:
    """2.13.0, three single-entry commits, 2.14.1: the week a weekly issue attributes."""
    return build_history(
        tmp_path_factory.mktemp("upstream") / "pytorch", first="2.13.0", last="2.14.1", fine=True, cap=3
    )


def _prepare(opdrift: Opdrift, checkout: Path, base: str, head: str) -> tuple[str, str]:
    """`prepare-history`'s history= output (the checkout to attribute with, or empty) and all it printed."""
    run = opdrift("prepare-history", "--pytorch", str(checkout), base, head)
    assert run.code == 0
    history = run.out.splitlines()[-1]
    return history.removeprefix("history="), run.out


@pytest.mark.slow
def test_prepare_history_deepens_a_depth_1_clone_to_the_base_commit(
    upstream: History, tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    clone = tmp_path / "pytorch"
    # As the weekly workflow checks PyTorch out: one commit, and no file contents until read.
    _git(upstream.path, "config", "uploadpack.allowFilter", "true")
    _git(tmp_path, "clone", "-q", "--depth", "1", "--filter=blob:none", f"file://{upstream.path}", str(clone))
    base = upstream.tag_sha("2.13.0")
    assert _git(clone, "rev-parse", "--is-shallow-repository") == "true"
    # (not `cat-file -e BASE`: in a partial clone that question alone fetches BASE and its history)
    assert _git(clone, "rev-list", "--count", "HEAD") == "1"
    base_json, head_json = tmp_path / "base.json", tmp_path / "head.json"
    assert opdrift("snapshot", f"{upstream.path}@v2.13.0", "-o", str(base_json)).code == 0
    assert opdrift("snapshot", f"{clone}@HEAD", "-o", str(head_json)).code == 0

    history, out = _prepare(opdrift, clone, str(base_json), str(head_json))
    assert history == str(clone), out
    assert "deepened" in out
    head = _git(clone, "rev-parse", "HEAD")
    assert _git(clone, "rev-list", "--count", f"{base}..{head}") == "4"  # three entries and the release
    # What the issue step then does with it: every change attributed to one of those four commits.
    issue = opdrift(
        "issue", "--repo", "o/r", "--dry-run", "--history", history, str(base_json), str(head_json)
    )
    assert issue.code == 0
    assert "· by " in issue.out, issue.err
    # A second run finds everything in place and fetches nothing.
    again, out = _prepare(opdrift, clone, str(base_json), str(head_json))
    assert again == str(clone) and "deepened" not in out


@pytest.mark.slow
def test_prepare_history_says_why_it_cannot_attribute(
    upstream: History,
    tmp_path: Path,
    release_file: Callable[[str], Path],
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    release_made = tmp_path / "release.json"  # from a bare yaml: no commit recorded
    assert opdrift("snapshot", str(release_file("2.13.0")), "-o", str(release_made)).code == 0
    head_json = tmp_path / "head.json"
    assert opdrift("snapshot", f"{upstream.path}@HEAD", "-o", str(head_json)).code == 0
    history, out = _prepare(opdrift, upstream.path, str(release_made), str(head_json))
    assert history == "" and "::notice::BASE records no commit" in out

    # Reversed, BASE is not an ancestor of HEAD: a full clone has nothing to fetch, so say so.
    history, out = _prepare(opdrift, upstream.path, str(head_json), f"{upstream.path}@v2.13.0")
    assert history == "" and "is not an ancestor" in out

    # A shallow clone whose origin is gone: a warning, and the issue goes out without attribution.
    clone = tmp_path / "pytorch"
    _git(tmp_path, "clone", "-q", "--depth", "1", "--no-local", f"file://{upstream.path}", str(clone))
    _git(clone, "remote", "set-url", "origin", f"file://{tmp_path / 'gone'}")
    base_json = tmp_path / "base.json"
    assert opdrift("snapshot", f"{upstream.path}@v2.13.0", "-o", str(base_json)).code == 0
    history, out = _prepare(opdrift, clone, str(base_json), str(head_json))
    assert history == "" and "::warning::deepening" in out


# --- pr-number -------------------------------------------------------------------------------------


@pytest.fixture
def pulls(github_server: FakeGitHub) -> FakeGitHub:
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github_server.add_repo("pytorch/pytorch")
    return github_server


PR_NUMBER = ("pr-number", "--repo", "pytorch/pytorch")


def test_pr_number_from_the_event_needs_no_lookup(
    pulls: FakeGitHub, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", pulls.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    run = opdrift(*PR_NUMBER, "--event-number", "42")
    assert (run.code, run.out) == (0, "number=42\n")
    assert pulls.requests == []
    assert opdrift(*PR_NUMBER, "--event-number", "42; rm -rf /").code == 2
    run = opdrift(*PR_NUMBER, "--event-numbers", "[42]")
    assert (run.code, run.out) == (0, "number=42\n")
    run = opdrift(*PR_NUMBER, "--event-numbers", "[42, 43]")  # one branch, two bases: which one?
    assert run.code == 0
    assert run.out.endswith("number=\n") and "::notice::this head belongs to 2 pull requests" in run.out
    assert opdrift(*PR_NUMBER, "--event-numbers", '["42"]').code == 2
    assert pulls.requests == []


def test_pr_number_of_a_fork_is_looked_up_by_repo_branch_and_sha(
    pulls: FakeGitHub, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", pulls.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    sha = "a" * 40
    pulls.add_pull(
        "pytorch/pytorch", head_repo="alice/pytorch", branch="main", sha="b" * 40
    )  # same branch, older push
    mine = pulls.add_pull("pytorch/pytorch", head_repo="alice/pytorch", branch="fix-op", sha=sha)
    pulls.add_pull(
        "pytorch/pytorch", head_repo="mallory/pytorch", branch="fix-op", sha=sha
    )  # same sha, another fork
    lookup = ["--head-sha", sha, "--head-repo", "alice/pytorch", "--head-branch", "fix-op"]
    run = opdrift(*PR_NUMBER, "--event-number", "", *lookup)
    assert (run.code, run.out) == (0, f"number={mine}\n")
    shouted = ["--head-sha", sha.upper(), "--head-repo", "alice/pytorch", "--head-branch", "fix-op"]
    run = opdrift(*PR_NUMBER, *shouted)
    assert (run.code, run.out) == (0, f"number={mine}\n")  # GitHub's shas are lower case
    run = opdrift(
        *PR_NUMBER, "--head-sha", "c" * 40, "--head-repo", "alice/pytorch", "--head-branch", "fix-op"
    )
    assert run.code == 0
    assert run.out.endswith("number=\n")
    assert "::notice::" in run.out
    assert all(r.method == "GET" for r in pulls.requests)


def test_pr_number_without_a_token_skips_with_a_notice(
    opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    run = opdrift(*PR_NUMBER, "--head-sha", "a" * 40, "--head-repo", "a/b", "--head-branch", "x")
    assert (run.code, run.out.splitlines()[-1]) == (0, "number=")


def test_git_env_passes_config_after_the_callers_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's config stays (safe.directory is given this way), ours comes after it, and a count
    is read exactly as git reads it: what git refuses is refused in one line, not silently replaced."""
    from opdrift.sources.git import git_env

    _git(tmp_path, "init", "-q", "repo")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "opdrift.mine")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "kept")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # dropped: -C names the repository

    def get(env: dict[str, str], key: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path / "repo"), "config", "--get", key],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr  # 1: not set; anything else: git refused the env
        return done.stdout.strip()

    for count, theirs in (("1", "kept"), (" +1", "kept"), ("-0", ""), ("", "")):
        monkeypatch.setenv("GIT_CONFIG_COUNT", count)
        env = git_env({"http.extraHeader": "AUTHORIZATION: basic abc"})
        assert "GIT_DIR" not in env
        assert get(env, "http.extraHeader") == "AUTHORIZATION: basic abc", count
        assert get(env, "opdrift.mine") == theirs, count
    for bogus in ("1 ", "-1", "abc", "\u00b2", "  ", "99999999999", "9" * 5000):
        monkeypatch.setenv("GIT_CONFIG_COUNT", bogus)
        with pytest.raises(GitError, match="GIT_CONFIG_COUNT is not a count git accepts"):
            git_env({"http.extraHeader": "x"})
        plain = {k: v for k, v in os.environ.items() if k != "GIT_DIR"}
        done = subprocess.run(
            ["git", "-C", str(tmp_path / "repo"), "config", "--get", "x.y"], env=plain, check=False
        )
        assert done.returncode == 128, bogus  # git refuses each of them too
