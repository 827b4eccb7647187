"""bot/version.py: the version and commit setuptools-scm writes into bot/_version.py, and `--version`.

The generated file is stood in for by a module in sys.modules; the last test renders pyproject.toml's
own template, so the file setuptools-scm writes and the reader cannot drift apart. A real build from a
tag is tests/act/test_release.py's.
"""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from opdrift import version as v

ROOT = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"


def _generated(monkeypatch: pytest.MonkeyPatch, version: str, node: str | None) -> None:
    module = types.ModuleType("opdrift._version")
    module.VERSION = version  # type: ignore[attr-defined]
    module.NODE = node  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "opdrift._version", module)


@pytest.mark.parametrize(
    ("version", "node", "commit", "described"),
    [
        ("1.2.0", f"g{SHA}", SHA, "1.2.0"),
        ("1.3.0rc1", f"g{SHA}", SHA, "1.3.0rc1"),
        ("1.2.1.dev5", f"g{SHA}", SHA, "1.2.1.dev5 (commit 0123456789ab)"),
        # An abbreviated node (another describe command) or none (a build from an sdist of old) is no pin.
        ("1.2.1.dev5", "g0123456", None, "1.2.1.dev5"),
        ("0.0.dev0", None, None, "0.0.dev0"),
    ],
)
def test_the_generated_file_gives_version_commit_and_what_version_prints(
    monkeypatch: pytest.MonkeyPatch, version: str, node: str | None, commit: str | None, described: str
) -> None:
    _generated(monkeypatch, version, node)
    assert v.version() == version
    assert v.commit() == commit
    assert v.describe() == described


def test_a_tree_without_the_generated_file_says_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opdrift._version", None)  # import raises ImportError
    assert (v.version(), v.commit(), v.is_release()) == ("0+unknown", None, False)


def test_opdrift_version_prints_the_name_and_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "opdrift", "--version"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    # the shape, not a recomputation: a release `opdrift X.Y.Z`, a dev build with its commit
    assert re.fullmatch(
        r"opdrift (\d+(\.\d+)*((a|b|rc)\d+)?|\d+(\.\d+)*\.dev\d+( \(commit [0-9a-f]{12}\))?|0\+unknown)\n",
        done.stdout,
    ), done.stdout


def test_pyprojects_template_renders_a_file_this_reader_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools_scm"]
    assert config["version_file"] == "bot/_version.py"
    # The describe command keeps the full sha (setuptools-scm's default abbreviates it).
    assert "--abbrev=40" in config["scm"]["git"]["describe_command"]
    scm_version = types.SimpleNamespace(node=f"g{SHA}")
    text = config["version_file_template"].format(
        version="2.0.0", version_tuple=(2, 0, 0), scm_version=scm_version
    )
    module = types.ModuleType("opdrift._version")
    exec(compile(text, "bot/_version.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "opdrift._version", module)
    assert (v.version(), v.commit(), v.describe()) == ("2.0.0", SHA, "2.0.0")
