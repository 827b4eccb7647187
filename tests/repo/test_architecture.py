"""The layer contracts in pyproject.toml hold for the tree, and they do catch a forbidden import."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from package_copy import PackageCopy

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or "lint-imports"


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH puts the copy's `bot` ahead of the installed one; --no-cache so that a copy is read afresh.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", str(tree / "pyproject.toml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_tree_keeps_every_contract(package_copy: PackageCopy) -> None:
    done = _lint(package_copy.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # the core may not reach up into rendering or publishing
        (
            "drift/changes.py",
            "from opdrift.render import report as _r",
            "Each stage imports only the stages below it",
        ),
        (
            "taxonomy/classify.py",
            "from opdrift.publish import github as _g",
            "Each stage imports only the stages below it",
        ),
        (
            "render/coverage.py",
            "from opdrift.config import file as _c",
            "Each stage imports only the stages below it",
        ),
        # the renderer may not reach up into the use cases; publish composes no stage, it gets bodies
        (
            "render/report.py",
            "from opdrift.app import prepare as _a",
            "Each stage imports only the stages below it",
        ),
        (
            "publish/pr_comment.py",
            "from opdrift.app import prepare as _a",
            "The publish stage talks to GitHub; it composes no stage",
        ),
        (
            "publish/doctor.py",
            "from opdrift.coverage import check as _c",
            "The publish stage talks to GitHub; it composes no stage",
        ),
        # the publisher gets bodies, not the config; the pure stages never reach GitHub's read API
        (
            "publish/pr_comment.py",
            "from opdrift.config import file as _c",
            "Each stage imports only the stages below it",
        ),
        (
            "render/report.py",
            "from opdrift.github import pulls as _p",
            "Each stage imports only the stages below it",
        ),
        # reading GitHub posts nothing and composes no stage
        (
            "github/pulls.py",
            "from opdrift.publish import github as _g",
            "The github stage reads GitHub; it posts nothing and composes no stage",
        ),
        (
            "github/ghsource.py",
            "from opdrift import pipeline as _p",
            "The github stage reads GitHub; it posts nothing and composes no stage",
        ),
        (
            "github/api.py",
            "import github as _g",
            "The github stage reads GitHub; it posts nothing and composes no stage",
        ),
        (
            "publish/github.py",
            "from opdrift import pipeline as _p",
            "The publish stage talks to GitHub; it composes no stage",
        ),
        # only the sources stage runs git; only github and publish talk to the network
        ("history/timeline.py", "import subprocess as _s", "Only the sources stage runs git"),
        ("github/limits.py", "import subprocess as _s", "Only the sources stage runs git"),
        (
            "coverage/check.py",
            "import requests as _q",
            "Only the github and publish stages talk to the network",
        ),
        ("config/file.py", "import requests as _q", "Only the github and publish stages talk to the network"),
        # classification is pure: the overrides file is read at the edge and handed over as text
        ("taxonomy/classify.py", "from opdrift.sources import read as _r", "Classification reads no files"),
    ],
)
@pytest.mark.slow
def test_a_forbidden_import_is_caught(
    package_copy: PackageCopy, module: str, line: str, contract: str
) -> None:
    target = package_copy.root / "bot" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    done = _lint(package_copy.root)
    assert done.returncode != 0
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout
    assert f"opdrift.{module[:-3].replace('/', '.')}" in broken


def test_the_architecture_page_names_every_module_and_layer() -> None:
    """docs/ARCHITECTURE.md is the picture of the tree: a module it does not name is a module nobody
    was told about, and its layer list must be the contract's."""
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    tree = page.split("## The tree", 1)[1].split("## ", 1)[0]
    unnamed = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "bot").rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py") and p.name not in tree
    )
    assert unnamed == [], f"docs/ARCHITECTURE.md's tree does not name {unnamed}"
    subpackages = sorted(p.parent.name for p in (ROOT / "bot").glob("*/__init__.py"))
    assert [s for s in subpackages if f"  {s}/" not in tree] == []
    # The layers contract's list, as pyproject.toml writes it (tomllib is not in Python 3.10).
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = config.split('id = "layers"', 1)[1].split("layers = [", 1)[1].split("]", 1)[0]
    layers = re.findall(r'"([^"]+)"', listed)
    assert "opdrift.cli" in layers and "opdrift.errors" in layers
    drawn = page.split("## Layers", 1)[1].split("## ", 1)[0]
    for layer in layers:
        assert layer in drawn, f"docs/ARCHITECTURE.md's layers do not show {layer!r}"
