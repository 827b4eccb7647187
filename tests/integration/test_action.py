"""action.yml's steps run as a script, the way the runner would, against real git and a fake GitHub.

`run_action` parses action.yml, fills each step's ``env:`` from the inputs (defaults included) and
earlier steps' outputs, evaluates its ``if:``, and runs its script with ``bash --noprofile --norc -eo
pipefail`` (the runner's bash) with GITHUB_OUTPUT / GITHUB_STEP_SUMMARY / GITHUB_ACTION_PATH set. The
install step really runs ``pip install "$GITHUB_ACTION_PATH"`` (once per module, into a prefix), so the
packaged opdrift, templates included, is what the later steps call. The PyTorch side is a git
repository built from the vendored releases (tests/pytorch_history.py); GitHub is tests/fake_github.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import Opdrift
from datafiles import release_text
from fake_github import FakeGitHub
from pytorch_history import NATIVE, History, build_history

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
TOKEN = "ghs_actiontesttoken0000000000000000000"
GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
}
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_COMPARISON = re.compile(r"(inputs\.[a-z0-9-]+|steps\.[a-z0-9-]+\.outputs\.[a-z0-9-]+) (==|!=) '([^']*)'")


@dataclass(frozen=True)
class StepRun:
    name: str
    ran: bool
    returncode: int
    stdout: str
    stderr: str
    outputs: Mapping[str, str]
    summary: str


@dataclass(frozen=True)
class ActionRun:
    steps: tuple[StepRun, ...]

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps)

    @property
    def log(self) -> str:
        return "\n".join(f"[{s.name}] rc={s.returncode}\n{s.stdout}{s.stderr}" for s in self.steps if s.ran)

    def outputs(self) -> dict[str, str]:
        """The action's declared outputs, resolved like the runner does."""
        ids = {step.get("id"): run for step, run in zip(STEPS, self.steps, strict=False) if step.get("id")}
        result = {}
        ref = r"steps\.([a-z0-9-]+)\.outputs\.([a-z0-9-]+)"
        for name, spec in ACTION["outputs"].items():
            # `${{ steps.A.outputs.X }}`, or several joined by `||` (the first that is not empty)
            m = re.fullmatch(rf"\$\{{\{{ ({ref}(?: \|\| {ref})*) \}}\}}", spec["value"])
            if m:
                values = []
                for step_id, output in re.findall(ref, m.group(1)):
                    run = ids.get(step_id)
                    values.append("" if run is None else run.outputs.get(output, ""))
                result[name] = next((v for v in values if v), "")
        return result


def _inputs(given: Mapping[str, str], github: Mapping[str, str]) -> dict[str, str]:
    unknown = set(given) - set(ACTION["inputs"])
    assert not unknown, f"not inputs of action.yml: {unknown}"
    values = {}
    for name, spec in ACTION["inputs"].items():
        default = str(spec.get("default", ""))
        values[name] = given.get(name, _substitute(default, {}, {}, github))
    return values


def _substitute(
    text: str, inputs: Mapping[str, str], outputs: Mapping[str, Mapping[str, str]], github: Mapping[str, str]
) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if mi := re.fullmatch(r"inputs\.([a-z0-9-]+)", expr):
            return inputs[mi.group(1)]
        if ms := re.fullmatch(r"steps\.([a-z0-9-]+)\.outputs\.([a-z0-9-]+)", expr):
            return outputs.get(ms.group(1), {}).get(ms.group(2), "")
        if mg := re.fullmatch(r"github\.([a-z_]+)", expr):
            return github[mg.group(1)]
        raise AssertionError(f"the harness does not evaluate ${{{{ {expr} }}}}; keep action.yml simple")

    return _EXPR.sub(one, text)


def _condition(expr: str | None, inputs: Mapping[str, str], outputs: Mapping[str, Mapping[str, str]]) -> bool:
    """`if:` as action.yml uses it: comparisons of inputs or step outputs with literals, joined by &&."""
    if expr is None:
        return True
    results = []
    for part in expr.split("&&"):
        m = _COMPARISON.fullmatch(part.strip())
        assert m is not None, f"the harness does not evaluate `if: {expr}`"
        value = _substitute(f"${{{{ {m.group(1)} }}}}", inputs, outputs, {})
        equal = value == m.group(3)
        results.append(equal if m.group(2) == "==" else not equal)
    return all(results)


def _read_outputs(path: Path) -> dict[str, str]:
    values = {}
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    for line in lines:
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, delimiter = line.split("<<", 1)
            body = []
            for more in lines:
                if more == delimiter:
                    break
                body.append(more)
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def run_action(
    given: Mapping[str, str],
    *,
    workspace: Path,
    env: Mapping[str, str],
    github: Mapping[str, str],
    skip_install: bool = True,
) -> ActionRun:
    inputs = _inputs(given, github)
    outputs: dict[str, dict[str, str]] = {}
    runs: list[StepRun] = []
    failed = False
    for i, step in enumerate(STEPS):
        name = step.get("name", f"step {i}")
        install = i == 0
        if failed or (install and skip_install) or not _condition(step.get("if"), inputs, outputs):
            runs.append(StepRun(name, False, 0, "", "", {}, ""))
            continue
        assert step["shell"] == "bash"
        files = workspace.parent / f".runner-{os.getpid()}-{i}"
        files.mkdir(exist_ok=True)
        out_file, summary_file = files / "output", files / "summary"
        out_file.write_text("")
        summary_file.write_text("")
        step_env = {
            **env,
            "GITHUB_OUTPUT": str(out_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_WORKSPACE": str(workspace),
            **{k: _substitute(str(v), inputs, outputs, github) for k, v in step.get("env", {}).items()},
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
            check=False,
        )
        produced = _read_outputs(out_file)
        if step.get("id"):
            outputs[step["id"]] = produced
        runs.append(
            StepRun(name, True, done.returncode, done.stdout, done.stderr, produced, summary_file.read_text())
        )
        failed = done.returncode != 0
    return ActionRun(tuple(runs))


# --- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Run the action's install step for real, into a prefix; return the environment that sees it.

    The hash-pinned requirements/workflow.txt is installed into the prefix too (from the package
    index, checked against its hashes); the build uses its setuptools (no build isolation). The
    console script's interpreter is this one.
    """
    prefix = tmp_path_factory.mktemp("prefix")
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    work = tmp_path_factory.mktemp("install-work")
    install = STEPS[0]
    assert "pip install" in install["run"] and "$GITHUB_ACTION_PATH" in install["run"]
    bindir = Path(sys.executable).parent
    env = {
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(work)),
        "GITHUB_ACTION_PATH": str(ROOT),
        "PIP_PREFIX": str(prefix),
        "PIP_NO_DEPS": "1",
        "PIP_NO_INPUT": "1",
        # Install beside, never over, the developer's own `pip install -e .`: without this pip
        # uninstalls it first and the `opdrift` command is gone after the tests.
        "PIP_IGNORE_INSTALLED": "1",
        "PYTHONPATH": purelib,
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", install["run"]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    scripts = sysconfig.get_path("scripts", vars={"base": str(prefix), "platbase": str(prefix)})
    assert Path(scripts, "opdrift").exists(), "the install step must provide the opdrift command"
    return {
        "PATH": f"{scripts}{os.pathsep}{bindir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": purelib,  # the installed package, not the source tree
        "HOME": env["HOME"],
        **GIT_ID,
    }


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    return github_server


def _git(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    merged = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID | dict(env or {})
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=merged
    ).stdout.strip()


NEW_OP = """
- func: opdrift_action_test(Tensor self) -> Tensor
  dispatch:
    CPU: opdrift_action_test_cpu
"""


# --- the PR path -----------------------------------------------------------------------------------


def _weekly_workspace(
    tmp_path: Path, opdrift: Opdrift, *, depth_1: bool = False, fine: bool = False, cap: int | None = None
) -> tuple[Path, History]:
    """The bot's repository as the weekly workflow checks it out (TMP_PATH/bot): snapshots/main.json, a
    snapshot of PyTorch 2.13.0, tracked and committed as the seed, with PyTorch (2.13.0 to 2.14.1: the
    history, FINE and CAP as `build_history` takes them) checked out inside as pytorch/: the history
    itself, or with DEPTH_1 a depth-1 partial clone of it (as weekly-drift.yml checks it out)."""
    workspace = tmp_path / "bot"
    (workspace / "snapshots").mkdir(parents=True)
    _git(workspace, "init", "-q", "-b", "main")
    where = tmp_path / "upstream" if depth_1 else workspace / "pytorch"
    history = build_history(where, first="2.13.0", last="2.14.1", fine=fine, cap=cap)
    if depth_1:
        _git(history.path, "config", "uploadpack.allowFilter", "true")
        url = f"file://{history.path}"
        _git(workspace, "clone", "-q", "--depth", "1", "--filter=blob:none", url, "pytorch")
    seed = opdrift("snapshot", f"{history.path}@v2.13.0", "-o", str(workspace / "snapshots" / "main.json"))
    assert seed.code == 0, seed.err
    _git(workspace, "add", "snapshots/main.json")
    _git(workspace, "commit", "-q", "-m", "Seed the tracked snapshot")
    return workspace, history


@pytest.mark.slow
def test_the_install_is_the_package_opdrift_and_nothing_named_bot(
    installed: dict[str, str], tmp_path: Path
) -> None:
    """pip installs the directory bot/ under its import name (pyproject's package-dir): one top-level
    package, `opdrift`, with its templates and examples as package data, and no `bot`."""
    purelib = Path(installed["PYTHONPATH"])  # beside the pinned requirements the step installs too
    (record,) = purelib.glob("opdrift-*.dist-info/RECORD")
    installed_files = [line.split(",", 1)[0] for line in record.read_text(encoding="utf-8").splitlines()]
    tops = {f.split("/", 1)[0] for f in installed_files if not f.startswith("../")}  # ../: the script
    assert tops == {"opdrift", record.parent.name}
    assert not (purelib / "bot").exists()
    package = purelib / "opdrift"
    assert (package / "templates" / "weekly_issue.md.j2").is_file()
    assert (package / "examples" / "weekly-drift.yml").is_file()
    assert (package / "py.typed").is_file()
    # outside the checkout (its opdrift symlink) and beside the developer's editable install: the
    # installed copy is what imports, and nothing answers to `bot`
    probe = "import importlib.util, opdrift; print(opdrift.__file__); print(importlib.util.find_spec('bot'))"
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(purelib)!r}); {probe}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    where, bot = done.stdout.splitlines()
    assert Path(where) == package / "__init__.py" and bot == "None"


@pytest.mark.slow
def test_pr_path_posts_one_sticky_comment(
    installed: dict[str, str], fake: FakeGitHub, tmp_path: Path
) -> None:
    repo_name = "pytorch-fork/pytorch"
    fake.add_repo(repo_name)
    pr = fake.add_pull(repo_name, title="Add opdrift_action_test")
    history = build_history(tmp_path / "pytorch", first="2.12.0", last="2.13.0")
    repo = history.path
    fork_point = history.tag_sha("2.12.0")
    # A PR branched from 2.12.0 that adds one operator, while main moved on to 2.13.0: with the
    # merge base, the report holds that one operator, not the reverse of everything 2.13.0 did.
    _git(repo, "checkout", "-q", "-b", "pr", fork_point)
    native = repo / NATIVE
    native.write_text(release_text("2.12.0") + NEW_OP, encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "Add opdrift_action_test")
    inputs = {
        "pytorch": "pytorch",
        "base": "main",
        "head": "pr",
        "merge-base": "true",
        "mode": "comment",
        "repo": repo_name,
        "pr": str(pr),
        "report-dir": "opdrift-report",
    }
    env = {**installed, "GITHUB_API_URL": fake.api_url}
    github = {"repository": repo_name, "token": TOKEN}

    first = run_action(inputs, workspace=tmp_path, env=env, github=github)
    assert first.ok, first.log
    outs = first.outputs()
    assert outs["base"] == f"pytorch@{fork_point}"
    assert outs["head"] == "pytorch@pr"
    report = (tmp_path / "opdrift-report" / "report.md").read_text(encoding="utf-8")
    assert "opdrift_action_test" in report
    posting = next(s for s in first.steps if s.name.startswith("Post the sticky PR comment"))
    assert "opdrift_action_test" in posting.summary
    assert re.search(rf"^::warning file={re.escape(NATIVE)},line=\d+", posting.stdout, re.M), posting.stdout
    (comment,) = fake.comments(repo_name, pr)
    assert "opdrift_action_test" in comment["body"]

    # A re-run (a new push with the same operator files) edits nothing and adds nothing.
    second = run_action(inputs, workspace=tmp_path, env=env, github=github)
    assert second.ok, second.log
    assert [c["id"] for c in fake.comments(repo_name, pr)] == [comment["id"]]
    assert TOKEN not in first.log + second.log

    # The PR moved on while this run was queued: with head-sha, its poster writes nothing.
    fake.push(repo_name, pr, "f" * 40)
    writes = len(fake.writes())
    pr_head = _git(repo, "rev-parse", "pr")
    stale = run_action({**inputs, "head-sha": pr_head}, workspace=tmp_path, env=env, github=github)
    assert stale.ok, stale.log
    posting = next(s for s in stale.steps if s.name.startswith("Post the sticky PR comment"))
    assert "has moved on to ffffffffffff" in posting.stderr
    assert len(fake.writes()) == writes


@pytest.mark.slow
def test_weekly_path_twice_gives_one_issue_and_one_snapshot_commit(
    installed: dict[str, str], fake: FakeGitHub, tmp_path: Path, opdrift: Opdrift
) -> None:
    target = "downstream/backend"
    fake.add_repo(target)
    workspace, history = _weekly_workspace(tmp_path, opdrift)
    snapshot = workspace / "snapshots" / "main.json"
    inputs = {
        "pytorch": "pytorch",
        "head": "HEAD",
        "base-source": "snapshots/main.json",
        "mode": "issue",
        "repo": target,
        "refresh-snapshot": "snapshots/main.json",
    }
    env = {**installed, "GITHUB_API_URL": fake.api_url}
    github = {"repository": "opdrift/opdrift", "token": TOKEN}

    first = run_action(inputs, workspace=workspace, env=env, github=github)
    assert first.ok, first.log
    (issue,) = fake.issues(target)
    assert issue["title"].startswith("Operator drift")
    committed = first.outputs()["committed"]
    assert re.fullmatch(r"[0-9a-f]{40}", committed), first.log
    assert _git(workspace, "rev-parse", "HEAD") == committed
    assert _git(workspace, "status", "--porcelain", "--", "snapshots") == ""
    refreshed = json.loads(snapshot.read_text(encoding="utf-8"))
    assert history.tag_sha("2.14.1") in json.dumps(refreshed.get("meta", refreshed))

    second = run_action(inputs, workspace=workspace, env=env, github=github)
    assert second.ok, second.log
    assert len(fake.issues(target)) == 1
    assert second.outputs()["committed"] == ""
    log = _git(workspace, "log", "--format=%s").splitlines()
    assert len(log) == 2, log  # the seed and one refresh
    assert TOKEN not in first.log + second.log


@pytest.mark.slow
def test_weekly_path_attributes_changes_from_a_depth_1_checkout(
    installed: dict[str, str], fake: FakeGitHub, tmp_path: Path, opdrift: Opdrift
) -> None:
    """weekly-drift.yml checks PyTorch out at depth 1; with attribute, the action deepens it itself."""
    target = "downstream/backend"
    fake.add_repo(target)
    workspace, upstream = _weekly_workspace(tmp_path, opdrift, depth_1=True, fine=True, cap=2)
    inputs = {
        "pytorch": "pytorch",
        "base-source": "snapshots/main.json",
        "mode": "issue",
        "attribute": "true",
        "repo": target,
    }
    run = run_action(
        inputs,
        workspace=workspace,
        env={**installed, "GITHUB_API_URL": fake.api_url},
        github={"repository": target, "token": TOKEN},
    )
    assert run.ok, run.log
    (issue,) = fake.issues(target)
    attributed = set(re.findall(r"· by \[`([0-9a-f]{7})`\]", issue["body"]))
    assert attributed, run.log
    assert attributed <= {c.sha[:7] for c in upstream.commits[1:]}  # walked: after v2.13.0, up to HEAD

    # Without attribute the depth-1 checkout is left alone and the issue has no commit lines.
    fake.add_repo("other/backend")
    plain = run_action(
        {**inputs, "attribute": "false", "repo": "other/backend"},
        workspace=workspace,
        env={**installed, "GITHUB_API_URL": fake.api_url},
        github={"repository": target, "token": TOKEN},
    )
    assert plain.ok, plain.log
    (other,) = fake.issues("other/backend")
    assert "· by [" not in other["body"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "dry", [{"dry-run": "true"}, {"token": ""}], ids=["dry-run input", "empty token (a dry run too)"]
)
def test_weekly_dry_run_posts_and_commits_nothing(
    installed: dict[str, str], fake: FakeGitHub, tmp_path: Path, dry: dict[str, str], opdrift: Opdrift
) -> None:
    target = "downstream/backend"
    fake.add_repo(target)
    workspace, _ = _weekly_workspace(tmp_path, opdrift)
    run = run_action(
        {
            "pytorch": "pytorch",
            "base-source": "snapshots/main.json",
            "mode": "issue",
            "repo": target,
            "refresh-snapshot": "snapshots/main.json",
            **dry,
        },
        workspace=workspace,
        env={**installed, "GITHUB_API_URL": fake.api_url},
        github={"repository": target, "token": TOKEN},
    )
    assert run.ok, run.log
    assert fake.issues(target) == []
    assert fake.writes() == []
    assert len(_git(workspace, "log", "--format=%s").splitlines()) == 1


@pytest.mark.slow
def test_fail_on_fails_the_action_after_publishing(installed: dict[str, str], tmp_path: Path) -> None:
    build_history(tmp_path / "pytorch", first="2.12.0", last="2.13.0")
    run = run_action(
        {
            "pytorch": "pytorch",
            "base": "v2.12.0",
            "head": "v2.13.0",
            "mode": "summary",
            "fail-on": "breaking",
        },
        workspace=tmp_path,
        env={**installed},
        github={"repository": "o/r", "token": ""},
    )
    # 2.12.0 → 2.13.0 removes many named-tensor overloads: a breaking drift.
    assert not run.ok
    last = [s for s in run.steps if s.ran][-1]
    assert last.name.startswith("Fail on drift")
    assert last.returncode == 1


@pytest.mark.slow
def test_a_bad_mode_stops_the_action_before_anything_runs(installed: dict[str, str], tmp_path: Path) -> None:
    run = run_action(
        {"pytorch": ".", "base": "HEAD", "mode": "comments"},
        workspace=tmp_path,
        env={**installed},
        github={"repository": "o/r", "token": ""},
    )
    assert not run.ok
    failed = next(s for s in run.steps if s.returncode != 0)
    assert failed.name == "Resolve BASE and HEAD"
    assert "comments" in failed.stderr


@pytest.mark.slow
def test_weekly_rerun_keeps_the_weeks_report(
    installed: dict[str, str], fake: FakeGitHub, tmp_path: Path, opdrift: Opdrift
) -> None:
    target = "downstream/backend"
    fake.add_repo(target)
    workspace, _ = _weekly_workspace(tmp_path, opdrift)
    inputs = {
        "pytorch": "pytorch",
        "base-source": "snapshots/main.json",
        "mode": "issue",
        "repo": target,
        "refresh-snapshot": "snapshots/main.json",
    }
    env = {**installed, "GITHUB_API_URL": fake.api_url}
    github = {"repository": target, "token": TOKEN}
    assert run_action(inputs, workspace=workspace, env=env, github=github).ok
    (issue,) = fake.issues(target)
    before = issue["body"]
    assert run_action(inputs, workspace=workspace, env=env, github=github).ok
    (issue,) = fake.issues(target)
    assert issue["body"] == before


# --- the weekly window's base (bot/publish/workflow.py, behind resolve-sources) ----------------------------


def _commit_at(repo: Path, rel: str, text: str, when: str) -> str:
    (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "add", rel)
    _git(
        repo,
        "commit",
        "-q",
        "-m",
        f"write {rel} at {when}",
        env={"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when},
    )
    return _git(repo, "rev-parse", "HEAD")


def test_window_base_is_the_file_as_it_was_when_the_week_began(tmp_path: Path) -> None:
    from opdrift.errors import WorkflowError
    from opdrift.publish.workflow import week_start, window_base
    from opdrift.sources.repo import file_at

    repo = tmp_path / "bot"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    start = week_start("2026-W10")
    assert start.isoformat() == "2026-03-02T00:00:00+00:00"  # Monday
    last_week = _commit_at(repo, "main.json", '{"v": "last week"}\n', "2026-03-01T23:59:00Z")
    _commit_at(repo, "main.json", '{"v": "refreshed on Monday"}\n', "2026-03-02T06:20:00Z")
    _commit_at(repo, "main.json", '{"v": "refreshed again"}\n', "2026-03-04T06:20:00Z")
    found = file_at(repo / "main.json", start)
    assert (found.text, found.rev) == (b'{"v": "last week"}\n', last_week)
    source, note = window_base(str(repo / "main.json"), "2026-W10", tmp_path / "report")
    assert source == str(tmp_path / "report" / "window-base" / "main.json")  # same name: same source kind
    assert Path(source).read_text(encoding="utf-8") == '{"v": "last week"}\n'
    assert last_week[:12] in note
    # Next week, the last refresh is the base.
    assert file_at(repo / "main.json", week_start("2026-W11")).text == b'{"v": "refreshed again"}\n'

    # A depth-1 clone holds only this week's refresh: taking it as the base would report "no changes".
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", "--no-local", f"file://{repo}", str(shallow))
    with pytest.raises(WorkflowError, match=r"shallow clone.*fetch-depth: 0"):
        file_at(shallow / "main.json", start)


def test_window_base_of_a_file_seeded_inside_the_week_is_the_seed(tmp_path: Path) -> None:
    from opdrift.publish.workflow import week_start, window_base
    from opdrift.sources.repo import file_at

    repo = tmp_path / "bot"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    seed = _commit_at(repo, "main.json", '{"v": "seed"}\n', "2026-03-03T10:00:00Z")
    _commit_at(repo, "main.json", '{"v": "refresh"}\n', "2026-03-03T11:00:00Z")
    found = file_at(repo / "main.json", week_start("2026-W10"))
    assert (found.text, found.rev) == (b'{"v": "seed"}\n', seed)
    # Untracked files and non-files are used as they are.
    (repo / "loose.json").write_text("{}\n", encoding="utf-8")
    assert file_at(repo / "loose.json", week_start("2026-W10")).text is None
    assert window_base(str(repo / "loose.json"), "2026-W10", tmp_path)[0] == str(repo / "loose.json")
    assert window_base(f"{repo}@HEAD", "2026-W10", tmp_path)[0] == f"{repo}@HEAD"


def test_resolve_sources_in_issue_mode_prints_the_week_and_validates_it(
    tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    repo = tmp_path / "bot"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit_at(repo, "main.json", "{}\n", "2026-03-01T00:00:00Z")
    argv = ["resolve-sources", "--mode", "issue", "--base-source", str(repo / "main.json")]
    run = opdrift(*argv, "--week", "2026-W10", "--report-dir", str(tmp_path / "r"))
    assert run.code == 0
    assert f"base={tmp_path / 'r' / 'window-base' / 'main.json'}\n" in run.out
    assert run.out.endswith("week=2026-W10\n")
    run = opdrift(*argv, "--week", "2026-W60")
    assert run.code == 2
    assert "--week must look like 2026-W48" in run.err
