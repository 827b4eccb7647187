"""The one table of subcommands: name, one-line help, argument adder, runner.

`--help` lists the commands in the table's order (what a user reaches for first leads, the workflows'
plumbing steps come last), and the parser is built from it. A runner's module is imported only when
its command runs (inside the small typed function that stands for it below), so that building the
parser (and running one command) loads no stage the command does not use; the argument adders need
only argparse.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from opdrift.cli import arguments, doctor_cmds, init_cmds, workflow_arguments
from opdrift.cli.options import SOURCE_HELP
from opdrift.version import describe

Runner = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name and help, how to add its arguments, and its runner."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Runner  # takes the parsed arguments, returns the exit code


# Each runner's module is imported when its command runs, inside the function that stands for it: the
# parser is built without any stage, and mypy checks each call against the runner's signature.


def _run_snapshot(args: argparse.Namespace) -> int:
    from opdrift.cli.source_cmds import run_snapshot

    return run_snapshot(args)


def _run_stats(args: argparse.Namespace) -> int:
    from opdrift.cli.stats_cmds import run_stats

    return run_stats(args)


def _run_explain(args: argparse.Namespace) -> int:
    from opdrift.cli.explain_cmds import run_explain

    return run_explain(args)


def _run_diff(args: argparse.Namespace) -> int:
    from opdrift.cli.report_cmds import run_diff

    return run_diff(args)


def _run_comment(args: argparse.Namespace) -> int:
    from opdrift.cli.publish_cmds import run_comment

    return run_comment(args)


def _run_issue(args: argparse.Namespace) -> int:
    from opdrift.cli.publish_cmds import run_issue

    return run_issue(args)


def _run_watch(args: argparse.Namespace) -> int:
    from opdrift.cli.watch_cmds import run_watch

    return run_watch(args)


def _run_history(args: argparse.Namespace) -> int:
    from opdrift.cli.history_cmds import run_history

    return run_history(args)


def _run_history_merge(args: argparse.Namespace) -> int:
    from opdrift.cli.history_cmds import run_history_merge

    return run_history_merge(args)


def _run_coverage(args: argparse.Namespace) -> int:
    from opdrift.cli.report_cmds import run_coverage

    return run_coverage(args)


def _run_gates(args: argparse.Namespace) -> int:
    from opdrift.cli.report_cmds import run_gates

    return run_gates(args)


def _run_site(args: argparse.Namespace) -> int:
    from opdrift.cli.site_cmds import run_site

    return run_site(args)


def _run_append_summary(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_append_summary

    return run_append_summary(args)


def _run_verify_artifact(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_verify_artifact

    return run_verify_artifact(args)


def _run_resolve_sources(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_resolve_sources

    return run_resolve_sources(args)


def _run_pr_number(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_pr_number

    return run_pr_number(args)


def _run_fetch_commits(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_fetch_commits

    return run_fetch_commits(args)


def _run_prepare_history(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_prepare_history

    return run_prepare_history(args)


def _run_state_branch(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_state_branch

    return run_state_branch(args)


def _run_commit_snapshot(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_commit_snapshot

    return run_commit_snapshot(args)


def _run_push_snapshot(args: argparse.Namespace) -> int:
    from opdrift.cli.workflow_cmds import run_push_snapshot

    return run_push_snapshot(args)


COMMANDS: tuple[Command, ...] = (
    Command(
        "snapshot",
        "classify every operator of SOURCE and store the result as JSON",
        arguments.add_snapshot,
        _run_snapshot,
    ),
    Command(
        "stats",
        "the post's table for SOURCE: counts at every level and base operators per category",
        arguments.add_stats,
        _run_stats,
    ),
    Command(
        "explain",
        "why OP sits in its bucket: the deciding rule and its reason, plus the op's facets",
        arguments.add_explain,
        _run_explain,
    ),
    Command(
        "diff",
        "what changed between two SOURCEs, for backend maintainers (exit 1 on --fail-on findings)",
        arguments.add_diff,
        _run_diff,
    ),
    Command(
        "comment",
        "post or update the one sticky drift comment on a pull request",
        arguments.add_comment,
        _run_comment,
    ),
    Command(
        "issue",
        "open or update the weekly drift issue",
        arguments.add_issue,
        _run_issue,
    ),
    Command(
        "watch",
        "the open upstream pull requests that would affect your backend: one dashboard issue, a comment when new",
        arguments.add_watch,
        _run_watch,
    ),
    Command(
        "history",
        "walk every commit that touched the operator files: counts, buckets and drift per commit",
        arguments.add_history,
        _run_history,
    ),
    Command(
        "history-merge",
        "join the JSON outputs of `history --shard I/N` into the single-run timeline",
        arguments.add_history_merge,
        _run_history_merge,
    ),
    Command(
        "coverage",
        "what a downstream backend covers of SOURCE, what it lacks, and what went stale",
        arguments.add_coverage,
        _run_coverage,
    ),
    Command(
        "gates",
        "gate Ascend op-plugin's yaml for a torch release: caps, all_version, C++ bindings to fix",
        arguments.add_gates,
        _run_gates,
    ),
    Command(
        "site",
        "a static site of every operator: its history across SOURCEs, coverage per backend, growth",
        arguments.add_site,
        _run_site,
    ),
    Command(
        "init",
        "set opdrift up in a backend's repository: config, workflows, seeded snapshot",
        init_cmds.add_init,
        init_cmds.run_init,
    ),
    Command(
        "doctor",
        "try each call the workflows make with your token: one line per call, with the permission it needs and the fix",
        doctor_cmds.add_doctor,
        doctor_cmds.run_doctor,
    ),
    Command(
        "append-summary",
        "append a Markdown file to the job summary, capped at GitHub's 1 MiB per step",
        workflow_arguments.add_append_summary,
        _run_append_summary,
    ),
    Command(
        "verify-artifact",
        "check that a downloaded artifact holds only the expected regular files",
        workflow_arguments.add_verify_artifact,
        _run_verify_artifact,
    ),
    Command(
        "resolve-sources",
        "turn the action's base/head inputs into the two SOURCEs to diff",
        workflow_arguments.add_resolve_sources,
        _run_resolve_sources,
    ),
    Command(
        "pr-number",
        "the pull request a workflow_run belongs to (number=, empty when there is none)",
        workflow_arguments.add_pr_number,
        _run_pr_number,
    ),
    Command(
        "fetch-commits",
        "fetch two commits and their history, no trees or blobs, into a partial clone (the PR job)",
        workflow_arguments.add_fetch_commits,
        _run_fetch_commits,
    ),
    Command(
        "prepare-history",
        "make a PyTorch checkout hold the commits from BASE to HEAD, for issue --history",
        workflow_arguments.add_prepare_history,
        _run_prepare_history,
    ),
    Command(
        "state-branch",
        "check out (or start) the branch that keeps the stored snapshot, as a worktree",
        workflow_arguments.add_state_branch,
        _run_state_branch,
    ),
    Command(
        "commit-snapshot",
        "commit FILE (only FILE) to its git repository when it changed",
        workflow_arguments.add_commit_snapshot,
        _run_commit_snapshot,
    ),
    Command(
        "push-snapshot",
        "push the snapshot commit, rebasing it onto the branch when the branch moved meanwhile",
        workflow_arguments.add_push_snapshot,
        _run_push_snapshot,
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
            from opdrift.text import did_you_mean

            choices = [c.strip(" '") for c in m.group("choices").split(",")]
            hint = did_you_mean(m.group("value"), choices)
            if hint:  # the suggestion, instead of every choice
                message = message[: m.end("value") + 1] + hint
        unknown = _UNRECOGNIZED.match(message)
        if unknown is not None:
            from opdrift.text import did_you_mean

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
        # From a parser with every command's arguments: the one `main` built holds only its command's.
        full = build_parser()
        found = set(full._option_string_actions)
        for action in full._actions:
            if isinstance(action, argparse._SubParsersAction):
                for parser in action.choices.values():
                    found.update(parser._option_string_actions)
        return {o for o in found if o.startswith("--")}


def command_named(argv: Sequence[str]) -> str | None:
    """The command ARGV runs when it starts with one (``stats FILE``); None otherwise (``--help``,
    ``-h stats``, a mistyped command, nothing)."""
    return argv[0] if argv and any(c.name == argv[0] for c in COMMANDS) else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of COMMAND alone.

    `main` builds the one command it runs: argparse's parsers and arguments for all 23 commands cost
    a `stats` run more than counting and printing its table. Every command's parser is built where
    one is needed: for --help, a mistyped command and a mistyped option's suggestions.
    """
    parser = OneLineParser(
        prog="opdrift",
        description="Track PyTorch's ATen operator surface: classify operators, diff two sources, "
        "and report what changed for downstream backends.",
        epilog=SOURCE_HELP,
    )
    parser.add_argument("--version", action="version", version=f"opdrift {describe()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for each in COMMANDS:
        if command is None or each.name == command:
            p = sub.add_parser(each.name, help=each.help)
            each.add_arguments(p)
            p.set_defaults(run=each.run)
    return parser
