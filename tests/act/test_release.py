"""The release workflow (.github/workflows/release.yml) runs in act on a tag, up to the upload.

A copy of this checkout becomes a repository with a CHANGELOG section for 9.8.7 and the tag v9.8.7;
act runs the tag's push on the host (``-P ubuntu-latest=-self-hosted``). The build job builds the sdist
and the wheel with the hash-pinned backend, the verify job installs the wheel in a fresh venv from the
release's own requirements file and runs `opdrift --version` and the README's diff, the publish job
hands the files to the stand-in of pypa/gh-action-pypi-publish (tests/act_actions), and the GitHub
release is made by the stand-in `gh` (tests/act_actions/bin) that records its arguments. The jobs run on
a venv of their own (the build installs its backend into the runner's Python) and install by hash from
the session's wheelhouse, like every act test (tests/act/test_act.py).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from act_support import (
    LOCAL_ACTIONS,
    ROOT,
    Site,
    git,
    job_environment,
    pins,
    release_of_this_checkout,
    run_act,
    runner_python,
)
from fake_github import FakeGitHub

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
REPO = "acme/opdrift"
VERSION = "9.8.7"


def _release_repository(work: Path) -> str:
    """This checkout's tracked files, committed, then 9.8.7's changelog section, tagged v9.8.7."""
    release_of_this_checkout(work)
    changelog = work / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    changelog.write_text(
        text.replace("## [Unreleased]\n", f"## [Unreleased]\n\n## [{VERSION}] - 2026-12-05\n", 1),
        encoding="utf-8",
    )
    git(work, "commit", "-q", "-am", f"CHANGELOG: {VERSION}")
    git(work, "tag", "-a", f"v{VERSION}", "-m", f"opdrift {VERSION}")
    return git(work, "rev-parse", "HEAD")


@pytest.mark.slow  # an act run of four jobs with three package installs
def test_a_version_tag_builds_verifies_and_publishes_the_release(
    github_server: FakeGitHub, tmp_path: Path, act_wheelhouse: Path
) -> None:
    origins = tmp_path / "origins"
    work = tmp_path / "opdrift"
    commit = _release_repository(work)
    origin = origins / "acme" / "opdrift.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    # act names the repository after the origin URL.
    git(work, "remote", "add", "origin", f"https://github.com/{REPO}.git")
    # The runner's Python, as setup-python gives one: the build job installs its backend into it, so it
    # is a venv of its own here, not the Python running the tests.
    env = job_environment(tmp_path, act_wheelhouse, origins, runner=runner_python(tmp_path / "runner-python"))
    site = Site(work, origin, env, origins, pytorch_head="")
    log = run_act(
        site, github_server, "push", "release.yml", {"ref": f"refs/tags/v{VERSION}", "after": commit}
    )
    pypi, gh_log = Path(env["ACT_PYPI"]), Path(env["ACT_GH_LOG"])

    # The verify job ran the installed wheel: its version is the tag's, and the README's diff printed.
    assert f"opdrift {VERSION}" in log
    assert f"built from commit {commit}" in log
    assert "opdrift: 2.13.0 -> 2.14.1" in log
    # What reached the upload: exactly the wheel and the sdist of the tag's version.
    published = sorted(p.name for p in pypi.iterdir())
    assert published == [f"opdrift-{VERSION}-py3-none-any.whl", f"opdrift-{VERSION}.tar.gz"]
    # The GitHub release: the tag, the changelog's section as notes, both files and the pins.
    args = gh_log.read_text(encoding="utf-8").splitlines()
    assert args[:3] == ["release", "create", f"v{VERSION}"]
    assert "--verify-tag" in args and "release/notes.md" in args
    assert f"release/opdrift-{VERSION}-requirements.txt" in args
    requirements = Path(env["ACT_ARTIFACTS"]).glob(f"*/release/opdrift-{VERSION}-requirements.txt")
    text = next(iter(requirements)).read_text(encoding="utf-8")
    for name in published:
        digest = hashlib.sha256((pypi / name).read_bytes()).hexdigest()
        assert f"--hash=sha256:{digest}" in text, name
    assert f"opdrift=={VERSION} \\" in text


def test_only_the_publish_job_may_mint_a_token_and_only_the_release_job_may_write() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert workflow["permissions"] == {}
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as True
    jobs = workflow["jobs"]
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "build": {"contents": "read"},
        "verify": {"contents": "read"},
        "publish": {"id-token": "write"},
        "github-release": {"contents": "write"},
    }
    assert jobs["publish"]["environment"] == "pypi"
    # Nothing is published before the wheel has been installed and run.
    assert set(jobs["publish"]["needs"]) >= {"build", "verify"}
    assert "publish" in jobs["github-release"]["needs"]
    uses = [s["uses"] for s in jobs["publish"]["steps"] if "uses" in s]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses)


def test_act_resolves_every_pinned_action_of_the_release_workflow_locally() -> None:
    # A new third-party action in the workflow must get a stand-in here, or act would fetch it.
    uses = set(re.findall(r"uses: ([\w.-]+/[\w.-]+)@", WORKFLOW.read_text(encoding="utf-8")))
    assert uses <= set(LOCAL_ACTIONS), uses - set(LOCAL_ACTIONS)
    assert len(pins(WORKFLOW)) == len(uses)


# --- scripts/release_files.py, the build job's checks and files ---------------------------------------


def _release_files(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = ROOT / "scripts" / "release_files.py"
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A repository root with a changelog section for 9.8.7, the pinned requirements and a built dist/."""
    root = tmp_path / "root"
    (root / "requirements").mkdir(parents=True)
    shutil.copy(ROOT / "requirements" / "workflow.txt", root / "requirements" / "workflow.txt")
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    section = f"## [Unreleased]\n\n## [{VERSION}] - 2026-12-05\n\n### Fixed\n\n- A fix.\n\n## [9.8.6]"
    (root / "CHANGELOG.md").write_text(text.replace("## [Unreleased]", section, 1), encoding="utf-8")
    (root / "dist").mkdir()
    (root / "dist" / f"opdrift-{VERSION}.tar.gz").write_bytes(b"sdist")
    (root / "dist" / f"opdrift-{VERSION}-py3-none-any.whl").write_bytes(b"wheel")
    return root


def test_release_files_writes_the_section_and_a_hash_pinned_requirements_file(checkout: Path) -> None:
    done = _release_files(checkout, f"v{VERSION}", "dist", "release")
    assert done.returncode == 0, done.stderr
    assert (checkout / "release" / "notes.md").read_text(encoding="utf-8") == "### Fixed\n\n- A fix.\n"
    text = (checkout / "release" / f"opdrift-{VERSION}-requirements.txt").read_text(encoding="utf-8")
    sdist, wheel = (hashlib.sha256(b).hexdigest() for b in (b"sdist", b"wheel"))
    assert f"opdrift=={VERSION} \\\n" in text
    assert f"--hash=sha256:{sdist}" in text and f"--hash=sha256:{wheel}" in text
    # Every dependency of the pinned file follows, each with its hashes, so --require-hashes accepts it.
    assert "\nrequests==" in text and "\npygithub==" in text
    assert "autogenerated by pip-compile" not in text


@pytest.mark.parametrize(
    ("tag", "change", "error"),
    [
        ("9.8.7", None, "is not vX.Y.Z"),
        ("v9.8.8", None, "holds"),  # setuptools-scm built another version than the tag says
        (f"v{VERSION}", "extra", "holds"),  # a stray file would be uploaded, or fail the upload
        (f"v{VERSION}", "no-section", "no section ## [9.8.7]"),
    ],
)
def test_release_files_refuses_what_would_publish_the_wrong_thing(
    checkout: Path, tag: str, change: str | None, error: str
) -> None:
    if change == "extra":
        (checkout / "dist" / "opdrift-9.8.7.dev3-py3-none-any.whl").write_bytes(b"x")
    if change == "no-section":
        (checkout / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n", encoding="utf-8")
    done = _release_files(checkout, tag, "dist", "release")
    assert done.returncode == 1
    assert done.stderr.startswith("release_files: error:") and error in done.stderr, done.stderr
    assert not (checkout / "release").exists()
