"""The README is the user's manual: its commands must exist and its set-up must be what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from bot.cli.app import build_parser

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
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # .ci/run makes and activates its own venv (.ci-venv); after the activation it is the same command.
    venv, _, command = test_command.partition(" && . .venv/bin/activate && ")
    assert venv == "python3 -m venv .venv"
    assert command in ci


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
