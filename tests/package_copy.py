"""A copy of the package to change and run: the tests that show one table row is all a new kind, code,
flag, key, bucket or rule needs, and the tests that run a tool over an edited tree.

The copy is checkout-shaped (`bot/` and its import name `opdrift`, `templates/`, `pyproject.toml`), so the templates are found the way
a checkout finds them and `lint-imports` reads the copy's contracts. Everything runs in a separate process
with the copy first on PYTHONPATH, so the copy's `opdrift` is imported, never the tested one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from clirun import ROOT, Run, opdrift_process


@dataclass(frozen=True)
class PackageCopy:
    """A package tree at `root`: this checkout's, or a copy of it made by `copy_package`."""

    root: Path

    def edit(self, module: str, anchor: str, new: str) -> Path:
        """Replace `anchor` by `new` in MODULE, a path under the copy's package; the anchor must be
        there, so a moved table fails the test instead of leaving the copy unchanged."""
        path = self.root / "bot" / module
        text = path.read_text(encoding="utf-8")
        assert anchor in text, f"{anchor!r} is no longer in bot/{module}"
        path.write_text(text.replace(anchor, new), encoding="utf-8")
        return path

    def python(self, code: str, *args: str) -> str:
        """`python -c CODE ARGS` with this tree's `bot`; what it printed (a failure fails the test)."""
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={"PYTHONPATH": str(self.root), "PATH": "/usr/bin:/bin"},
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def opdrift(self, *argv: str) -> Run:
        """`python -m opdrift ARGV` with this tree's `bot`; a traceback fails the test."""
        run = opdrift_process(*argv, cwd=self.root, env={"PYTHONPATH": str(self.root)})
        assert "Traceback" not in run.err, run.err
        return run


THIS_CHECKOUT = PackageCopy(ROOT)


def copy_package(dest: Path) -> PackageCopy:
    """`bot/`, `templates/` and `pyproject.toml` of this checkout, copied to DEST (without caches)."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "bot", dest / "bot", ignore=ignore)
    # the import name, as in the checkout (pyproject.toml: the package opdrift is the directory bot/)
    (dest / "opdrift").symlink_to("bot", target_is_directory=True)
    shutil.copytree(ROOT / "templates", dest / "templates", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return PackageCopy(dest)
