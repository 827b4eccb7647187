"""scripts/check_changelog.py on real git repositories, and CHANGELOG.md's own shape.

Each test builds a small repository with a main branch and a pull request's branch off it, and runs
the script as the changelog workflow does (`python scripts/check_changelog.py BASE HEAD` in the clone).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_changelog.py"
GIT_ID = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@localhost",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@localhost",
}
CHANGELOG = """# Changelog

## [Unreleased]

### Added

- `opdrift diff`.

## [0.1.0] - 2026-12-01

### Added

- The first release.
"""


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str = "change") -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {"CHANGELOG.md": CHANGELOG, "bot/errors.py": "x = 1\n", "docs/index.md": "# opdrift\n"})
    _git(repo, "checkout", "-q", "-b", "pr")
    return repo


def _check(repo: Path, base: str = "main", head: str = "pr") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), base, head], cwd=repo, capture_output=True, text=True, check=False
    )


def _with_entry(line: str, *, under: str = "### Added\n") -> str:
    return CHANGELOG.replace(under, under + "\n" + line + "\n", 1)


def test_a_change_to_bot_with_an_unreleased_entry_passes(repo: Path) -> None:
    _commit(repo, {"bot/errors.py": "x = 2\n", "CHANGELOG.md": _with_entry("- `opdrift --version`.")})
    done = _check(repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "opdrift --version" in done.stdout


def test_a_change_to_bot_without_a_changelog_change_fails_and_names_the_label(repo: Path) -> None:
    _commit(repo, {"bot/errors.py": "x = 2\n", "bot/text.py": "y = 1\n"})
    done = _check(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bot/errors.py" in done.stdout and "bot/text.py" in done.stdout
    assert "skip news" in done.stdout


def test_an_entry_under_a_released_version_does_not_count(repo: Path) -> None:
    released = CHANGELOG.replace("- The first release.\n", "- The first release.\n- Sneaked in.\n")
    _commit(repo, {"bot/errors.py": "x = 2\n", "CHANGELOG.md": released})
    done = _check(repo)
    assert done.returncode == 1, done.stdout
    assert "Unreleased" in done.stdout


def test_a_heading_or_a_reworded_line_is_not_an_entry(repo: Path) -> None:
    reworded = CHANGELOG.replace("### Added\n", "### Added\n\n### Fixed\n").replace(
        "- `opdrift diff`.", "- `opdrift diff`, reworded."
    )
    _commit(repo, {"bot/errors.py": "x = 2\n", "CHANGELOG.md": reworded})
    # The reworded line is an added list item under Unreleased: a rewording counts (as black's does).
    assert _check(repo).returncode == 0
    only_heading = CHANGELOG.replace("### Added\n", "### Added\n\n### Fixed\n")
    _git(repo, "reset", "-q", "--hard", "main")
    _commit(repo, {"bot/errors.py": "x = 3\n", "CHANGELOG.md": only_heading})
    assert _check(repo).returncode == 1


@pytest.mark.parametrize(
    "path", ["templates/pr_comment.md.j2", "examples/downstream/weekly-drift.yml", "action.yml"]
)
def test_what_ships_outside_bot_needs_an_entry_too(repo: Path, path: str) -> None:
    """Templates and the downstream examples ship inside the package (every report; what init writes), and
    action.yml is what workflows run: a user sees each change."""
    _commit(repo, {path: "changed\n"})
    done = _check(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert path in done.stdout


def test_changes_outside_bot_need_no_entry(repo: Path) -> None:
    _commit(repo, {"docs/index.md": "# opdrift, documented\n", "tests/test_x.py": "def test(): pass\n"})
    done = _check(repo)
    assert done.returncode == 0, done.stdout
    assert "no change under bot/" in done.stdout


def test_the_change_is_measured_from_the_merge_base(repo: Path) -> None:
    # main moves on after the branch point with its own bot/ change and entry; a docs-only pull request
    # must not be charged with main's change, as a two-dot diff against main's tip would.
    _commit(repo, {"docs/index.md": "# opdrift, documented\n"})
    _git(repo, "checkout", "-q", "main")
    _commit(repo, {"bot/errors.py": "x = 5\n", "CHANGELOG.md": _with_entry("- Main's own.")})
    assert _check(repo, "main", "pr").returncode == 0
    # And a pull request that changes bot/ cannot borrow main's later entry.
    _git(repo, "checkout", "-q", "pr")
    _commit(repo, {"bot/errors.py": "x = 6\n"})
    assert _check(repo, "main", "pr").returncode == 1


def test_an_unknown_commit_is_an_error_not_a_verdict(repo: Path) -> None:
    done = _check(repo, "main", "0" * 40)
    assert done.returncode == 2
    assert done.stderr.startswith("check_changelog: error: git merge-base")


def test_the_repository_changelog_keeps_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    versions = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert versions[0] == "Unreleased"
    for version in versions[1:]:
        # Released sections carry a version and a date: "## [1.2.0] - 2026-12-24".
        assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.MULTILINE)
    groups = set(re.findall(r"^### (.+)$", text, flags=re.MULTILINE))
    assert groups <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, groups


def test_the_workflow_runs_the_script_on_pull_requests_unless_labelled() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "changelog.yml").read_text(encoding="utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert "labeled" in triggers["pull_request"]["types"]
    (job,) = workflow["jobs"].values()
    assert "skip news" in job["if"]
    assert job["permissions"] == {"contents": "read"}
    runs = " ".join(str(step.get("run", "")) for step in job["steps"])
    assert "scripts/check_changelog.py" in runs
