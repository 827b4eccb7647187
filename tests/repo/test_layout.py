"""The tests' own layout: what two test modules share lives in conftest.py or a helper module beside them.

A test module imported by another runs its module-level code twice under two names and ties one
file's tests to another's internals; pytest also collects whatever test functions it re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

from clirun import ROOT

TESTS = ROOT / "tests"
# The folders of test modules under tests/: a test module may sit in any of them.
TIERS = ("unit", "integration", "act", "repo")


def python_files() -> list[Path]:
    """Every Python file of the tests, in every folder but data/ (other projects' files, kept as data)."""
    return sorted(p for p in TESTS.rglob("*.py") if p.relative_to(TESTS).parts[0] != "data")


def imported_modules(path: Path) -> list[str]:
    """The names of every module PATH imports, at any depth (lazy imports in functions count too)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            if node.module.split(".")[0] in ("tests", *TIERS):
                names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.ImportFrom) and node.level > 0
        ):  # from . import test_x, from .test_x import y
            names.extend(f"{node.module or ''}.{alias.name}".lstrip(".") for alias in node.names)
            names.extend([node.module] if node.module else [])
    return names


def is_test_module(name: str) -> bool:
    return any(part.startswith("test_") or part == "conftest" for part in name.split("."))


def test_no_module_of_the_tests_imports_a_test_module() -> None:
    offenders = {
        f"{path.relative_to(TESTS)} imports {name}"
        for path in python_files()
        for name in imported_modules(path)
        if is_test_module(name)
    }
    assert not offenders, "move what they share into conftest.py or a helper module: " + ", ".join(
        sorted(offenders)
    )


def test_the_check_sees_each_spelling_of_such_an_import(tmp_path: Path) -> None:
    spellings = {
        "import test_cli\n": True,
        "from test_taxonomy import release_snapshot\n": True,
        "from tests.test_cli import Run\n": True,
        "from tests import test_cli\n": True,
        "def f() -> None:\n    from test_cli import Run\n": True,
        "import conftest\n": True,
        "from releasesnap import release_snapshot\n": False,
        "from clirun import Run\n": False,
        "from opdrift.cli import test_x\n": False,
        "from unit.app import test_gates\n": True,
        "from integration.test_cli import Run\n": True,
        "from .test_gates import x\n": True,
        "from . import test_gates\n": True,
        "from act_support import Site\n": False,
    }
    for text, flagged in spellings.items():
        path = tmp_path / "test_probe.py"
        path.write_text(text, encoding="utf-8")
        assert any(is_test_module(n) for n in imported_modules(path)) is flagged, text
