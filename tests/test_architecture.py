"""The layer contracts in pyproject.toml hold for the tree, and they do catch a forbidden import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def _copy_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "bot", tree / "bot", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    done = _lint(_copy_tree(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # the core may not reach up into rendering or publishing
        (
            "drift/changes.py",
            "from bot.render import report as _r",
            "Each stage imports only the stages below it",
        ),
        (
            "taxonomy/classify.py",
            "from bot.publish import github as _g",
            "Each stage imports only the stages below it",
        ),
        (
            "render/coverage.py",
            "from bot.publish import config as _c",
            "Each stage imports only the stages below it",
        ),
        # only the sources stage runs git; only publish talks to the network
        ("history/timeline.py", "import subprocess as _s", "Only the sources stage runs git"),
        ("coverage/check.py", "import requests as _q", "Only the publish stage talks to the network"),
    ],
)
def test_a_forbidden_import_is_caught(tmp_path: Path, module: str, line: str, contract: str) -> None:
    tree = _copy_tree(tmp_path)
    target = tree / "bot" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    done = _lint(tree)
    assert done.returncode != 0
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout
    assert f"bot.{module[:-3].replace('/', '.')}" in broken
