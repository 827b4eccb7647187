"""The one table of subcommands: name, one-line help, argument adder, runner.

`--help` lists the commands in the table's order (what a user reaches for first leads, the workflows'
plumbing steps come last), and the parser is built from it. A runner is named as ``module:function``
and imported only when its command runs, so that building the parser (and running one command)
loads no stage the command does not use; the argument adders need only argparse.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from bot.cli import arguments, doctor_cmds, init_cmds, workflow_arguments
from bot.cli.options import SOURCE_HELP
from bot.version import describe

Runner = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name and help, how to add its arguments, and where its runner lives."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    runner: str  # "module:function", taking the parsed arguments and returning the exit code


_SNAPSHOT = "bot.cli.source_cmds"
_STATS = "bot.cli.stats_cmds"
_EXPLAIN = "bot.cli.explain_cmds"
_REPORTS = "bot.cli.report_cmds"
_PUBLISH = "bot.cli.publish_cmds"
_HISTORY = "bot.cli.history_cmds"
_WORKFLOW = "bot.cli.workflow_cmds"
_SITE = "bot.cli.site_cmds"
_INIT = "bot.cli.init_cmds"

COMMANDS: tuple[Command, ...] = (
    Command(
        "snapshot",
        "classify every operator of SOURCE and store the result as JSON",
        arguments.add_snapshot,
        f"{_SNAPSHOT}:run_snapshot",
    ),
    Command(
        "stats",
        "the post's table for SOURCE: counts at every level and base operators per category",
        arguments.add_stats,
        f"{_STATS}:run_stats",
    ),
    Command(
        "explain",
        "why OP sits in its bucket: the deciding rule and its reason, plus the op's facets",
        arguments.add_explain,
        f"{_EXPLAIN}:run_explain",
    ),
    Command(
        "diff",
        "what changed between two SOURCEs, for backend maintainers (exit 1 on --fail-on findings)",
        arguments.add_diff,
        f"{_REPORTS}:run_diff",
    ),
    Command(
        "comment",
        "post or update the one sticky drift comment on a pull request",
        arguments.add_comment,
        f"{_PUBLISH}:run_comment",
    ),
    Command(
        "issue",
        "open or update the weekly drift issue",
        arguments.add_issue,
        f"{_PUBLISH}:run_issue",
    ),
    Command(
        "watch",
        "the open upstream pull requests that would affect your backend: one dashboard issue, a comment when new",
        arguments.add_watch,
        "bot.cli.watch_cmds:run_watch",
    ),
    Command(
        "history",
        "walk every commit that touched the operator files: counts, buckets and drift per commit",
        arguments.add_history,
        f"{_HISTORY}:run_history",
    ),
    Command(
        "history-merge",
        "join the JSON outputs of `history --shard I/N` into the single-run timeline",
        arguments.add_history_merge,
        f"{_HISTORY}:run_history_merge",
    ),
    Command(
        "coverage",
        "what a downstream backend covers of SOURCE, what it lacks, and what went stale",
        arguments.add_coverage,
        f"{_REPORTS}:run_coverage",
    ),
    Command(
        "gates",
        "gate Ascend op-plugin's yaml for a torch release: caps, all_version, C++ bindings to fix",
        arguments.add_gates,
        f"{_REPORTS}:run_gates",
    ),
    Command(
        "site",
        "a static site of every operator: its history across SOURCEs, coverage per backend, growth",
        arguments.add_site,
        f"{_SITE}:run_site",
    ),
    Command(
        "init",
        "set opdrift up in a backend's repository: config, workflows, seeded snapshot",
        init_cmds.add_init,
        f"{_INIT}:run_init",
    ),
    Command(
        "doctor",
        "try each call the workflows make with your token: one line per call, with the permission it needs and the fix",
        doctor_cmds.add_doctor,
        "bot.cli.doctor_cmds:run_doctor",
    ),
    Command(
        "append-summary",
        "append a Markdown file to the job summary, capped at GitHub's 1 MiB per step",
        workflow_arguments.add_append_summary,
        f"{_WORKFLOW}:run_append_summary",
    ),
    Command(
        "verify-artifact",
        "check that a downloaded artifact holds only the expected regular files",
        workflow_arguments.add_verify_artifact,
        f"{_WORKFLOW}:run_verify_artifact",
    ),
    Command(
        "resolve-sources",
        "turn the action's base/head inputs into the two SOURCEs to diff",
        workflow_arguments.add_resolve_sources,
        f"{_WORKFLOW}:run_resolve_sources",
    ),
    Command(
        "pr-number",
        "the pull request a workflow_run belongs to (number=, empty when there is none)",
        workflow_arguments.add_pr_number,
        f"{_WORKFLOW}:run_pr_number",
    ),
    Command(
        "fetch-commits",
        "fetch two commits and their history, no trees or blobs, into a partial clone (the PR job)",
        workflow_arguments.add_fetch_commits,
        f"{_WORKFLOW}:run_fetch_commits",
    ),
    Command(
        "prepare-history",
        "make a PyTorch checkout hold the commits from BASE to HEAD, for issue --history",
        workflow_arguments.add_prepare_history,
        f"{_WORKFLOW}:run_prepare_history",
    ),
    Command(
        "state-branch",
        "check out (or start) the branch that keeps the stored snapshot, as a worktree",
        workflow_arguments.add_state_branch,
        f"{_WORKFLOW}:run_state_branch",
    ),
    Command(
        "commit-snapshot",
        "commit FILE (only FILE) to its git repository when it changed",
        workflow_arguments.add_commit_snapshot,
        f"{_WORKFLOW}:run_commit_snapshot",
    ),
    Command(
        "push-snapshot",
        "push the snapshot commit, rebasing it onto the branch when the branch moved meanwhile",
        workflow_arguments.add_push_snapshot,
        f"{_WORKFLOW}:run_push_snapshot",
    ),
)


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (?P<args>.*)")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error (``opdrift: error: ...``, exit 2):
    CI logs and scripts read errors by that prefix, and the usage block argparse prints hid it."""

    def error(self, message: str) -> NoReturn:
        m = _INVALID_CHOICE.search(message)
        if m is not None:
            from bot.text import did_you_mean

            choices = [c.strip(" '") for c in m.group("choices").split(",")]
            hint = did_you_mean(m.group("value"), choices)
            if hint:  # the suggestion, instead of every choice
                message = message[: m.end("value") + 1] + hint
        unknown = _UNRECOGNIZED.match(message)
        if unknown is not None:
            from bot.text import did_you_mean

            # argparse reports a mistyped option from the top parser, which does not know the command:
            # the options of every command are the candidates (`--formt` → `--format`).
            options = [a.split("=")[0] for a in unknown.group("args").split() if a.startswith("--")]
            if options:
                message += did_you_mean(options[0], self._long_options())
        command = self.prog.removeprefix("opdrift").strip()
        where = f"{command}: " if command else ""
        hint = f"opdrift {command} --help" if command else "opdrift --help"
        line = " ".join(f"opdrift: error: {where}{message} (see `{hint}`)".split())
        self.exit(2, line + "\n")

    def _long_options(self) -> set[str]:
        found = set(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for parser in action.choices.values():
                    found.update(parser._option_string_actions)
        return {o for o in found if o.startswith("--")}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="opdrift",
        description="Track PyTorch's ATen operator surface: classify operators, diff two sources, "
        "and report what changed for downstream backends.",
        epilog=SOURCE_HELP,
    )
    parser.add_argument("--version", action="version", version=f"opdrift {describe()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        command.add_arguments(p)
        p.set_defaults(runner=command.runner)
    return parser


def load_runner(spec: str) -> Runner:
    """Import the module of a ``module:function`` runner and return the function."""
    module, _, name = spec.partition(":")
    run: Runner = getattr(importlib.import_module(module), name)
    return run
