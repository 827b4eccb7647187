"""The tests' own layout: what two test modules share lives in conftest.py or a helper module beside them.

A test module imported by another runs its module-level code twice under two names and ties one
file's tests to another's internals; pytest also collects whatever test functions it re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[str]:
    """The names of every module PATH imports, at any depth (lazy imports in functions count too)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            if node.module == "tests":
                names.extend(f"tests.{alias.name}" for alias in node.names)
    return names


def is_test_module(name: str) -> bool:
    last = name.removeprefix("tests.")
    return last.split(".")[0].startswith("test_") or last == "conftest"


def test_no_module_of_the_tests_imports_a_test_module() -> None:
    offenders = {
        f"{path.name} imports {name}"
        for path in sorted(TESTS.glob("*.py"))
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
        "from bot.cli import test_x\n": False,
    }
    for text, flagged in spellings.items():
        path = tmp_path / "test_probe.py"
        path.write_text(text, encoding="utf-8")
        assert any(is_test_module(n) for n in imported_modules(path)) is flagged, text
