"""The arguments several commands share (opdrift.cli.options): each is added by one function, so it reads
the same in every command that takes it (name, metavar, help, choices, default, type)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from opdrift.cli import options
from opdrift.cli.registry import COMMANDS

Adder = Callable[[argparse.ArgumentParser], None]

# each shared argument's adder → the commands that take it
SHARED: list[tuple[Adder, set[str]]] = [
    (options.add_source, {"snapshot", "stats", "explain", "coverage"}),
    (options.add_base_head, {"diff", "comment", "issue"}),
    (options.add_timeline_format, {"history", "history-merge"}),
    (options.add_retry_budget, {"comment", "issue", "watch"}),
    (
        options.add_output,
        {"snapshot", "stats", "diff", "history", "history-merge", "coverage", "gates", "watch"},
    ),
    (options.add_overrides, {"snapshot", "stats", "explain", "diff", "history"}),
    (options.add_codegen, {"snapshot", "stats", "explain", "diff", "comment", "issue", "coverage"}),
]


def _parser(adder: Adder) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    adder(parser)
    return parser


def _spelled(action: argparse.Action) -> str:
    return repr(
        (
            tuple(action.option_strings),
            action.dest,
            action.metavar,
            action.help,
            action.choices,
            action.default,
            action.type,
            action.required,
            action.nargs,
        )
    )


def _arguments(parser: argparse.ArgumentParser) -> set[str]:
    return {_spelled(a) for a in parser._actions if a.dest != "help"}


@pytest.mark.parametrize(("adder", "commands"), SHARED, ids=[a.__name__ for a, _ in SHARED])
def test_a_shared_argument_is_the_same_in_every_command_that_takes_it(
    adder: Adder, commands: set[str]
) -> None:
    wanted = _arguments(_parser(adder))
    taking = {c.name for c in COMMANDS if wanted <= _arguments(_parser(c.add_arguments))}
    assert taking == commands
