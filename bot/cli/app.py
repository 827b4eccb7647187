"""The command line: parse arguments, call the stages, map errors to exit codes.

Exit codes: 0 success (and nothing reached --fail-on), 1 a finding reached --fail-on,
2 a problem the user can fix (bad input, bad config, GitHub refused) printed as one line.
Each subcommand is a pair: ``_add_<name>(subparsers)`` builds its parser and ``_cmd_<name>(args)``
runs it and returns the exit code. Keep this module thin: logic lives in the stage modules.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from bot import __version__
from bot.errors import OpdriftError
from bot.text import one_line

if TYPE_CHECKING:
    from bot.coverage.backends import BackendList
    from bot.drift.warnings import SourceWarning
    from bot.model import Snapshot
    from bot.taxonomy.overrides import Overrides

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_ERROR = 2

Command = Callable[[argparse.Namespace], int]

SOURCE_HELP = (
    "SOURCE: a PyTorch checkout DIR, DIR@REV (a git revision, read without checkout), "
    "a torch .whl, a native_functions.yaml (tags.yaml beside it is used), or a snapshot .json"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opdrift",
        description="Track PyTorch's ATen operator surface: classify operators, diff two sources, "
        "and report what changed for downstream backends.",
        epilog=SOURCE_HELP,
    )
    parser.add_argument("--version", action="version", version=f"opdrift {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # What a user reaches for first leads `--help`; the workflows' plumbing steps come last.
    for add in sorted(_COMMANDS, key=lambda add: _HELP_ORDER.index(add.__name__)):
        add(sub)
    return parser


# Each entry registers one subcommand; appended below by the command's own section.
_COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = []
_HELP_ORDER = [
    f"_add_{name}"
    for name in [
        "snapshot",
        "stats",
        "explain",
        "diff",
        "comment",
        "issue",
        "history",
        "history_merge",
        "coverage",
        "verify_artifact",
        "resolve_sources",
        "pr_number",
        "prepare_history",
        "commit_snapshot",
        "push_snapshot",
    ]
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except OpdriftError as err:
        # One line whatever the message quotes: a value from the user's file may hold line breaks.
        print(f"opdrift: error: {one_line(str(err))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("opdrift: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `opdrift ... | head` closes stdout early; that is not an error worth a traceback.
        return EXIT_OK


# --- subcommands -------------------------------------------------------------------------------
# (each section: _add_x + _cmd_x, then _COMMANDS.append(_add_x))


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of stdout")


def _add_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overrides", metavar="FILE", help="bucket overrides file (see README)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds, 0 or more, got {text!r}")
    return value


def _commit_sha(text: str) -> str:
    """A full commit id (40 hex digits, or 64 in a SHA-256 repository), lower-cased as GitHub reports it."""
    if re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", text) is None:
        raise argparse.ArgumentTypeError(f"expected a full commit sha (40 hex digits), got {text!r}")
    return text.lower()


def _warn(message: str) -> None:
    print(f"opdrift: warning: {one_line(message)}", file=sys.stderr)


def _load(spec: str, overrides: Overrides | None = None) -> Snapshot:
    """SOURCE → Snapshot for a command, with the parse's warnings shown on stderr."""
    from bot import pipeline

    return pipeline.load_snapshot(spec, overrides, warn=_warn)


def _load_pair(
    base_spec: str, head_spec: str, overrides: Overrides | None
) -> tuple[Snapshot, Snapshot, tuple[SourceWarning, ...]]:
    """BASE and HEAD, and the parse warnings HEAD has and BASE had not: what a report lists.

    Snapshots keep their parse's warnings, so this holds for stored snapshots too (the action
    diffs the two snapshots it made first).
    """
    from bot.drift.warnings import new_warnings

    base = _load(base_spec, overrides)
    head = _load(head_spec, overrides)
    found = new_warnings(head.warnings, head.native_display, base.warnings, base.native_display)
    return base, head, found


# --- workflow helpers (verify-artifact, resolve-sources, pr-number, commit-snapshot) -------------
# The decisions the GitHub workflows and action.yml make, as commands so that no YAML holds logic.


def _add_verify_artifact(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify-artifact",
        help="check that a downloaded artifact holds only the expected regular files",
        description="Exit 2 unless DIR holds exactly the --require files (plus any --allow files), "
        "all regular files of at most --max-bytes: no links, directories or other names.",
    )
    p.add_argument("directory", metavar="DIR", help="the folder the artifact was downloaded into")
    p.add_argument(
        "--require",
        metavar="NAME",
        action="append",
        default=[],
        help="a file that must be there (repeatable)",
    )
    p.add_argument(
        "--allow", metavar="NAME", action="append", default=[], help="a file that may be there (repeatable)"
    )
    p.add_argument(
        "--max-bytes", type=_positive_int, default=None, metavar="N", help="the largest file size allowed"
    )
    p.set_defaults(func=_cmd_verify_artifact)


def _cmd_verify_artifact(args: argparse.Namespace) -> int:
    from bot.publish import artifact

    limit = artifact.DEFAULT_MAX_BYTES if args.max_bytes is None else args.max_bytes
    files = artifact.verify_artifact(
        args.directory, required=args.require, optional=args.allow, max_bytes=limit
    )
    listed = ", ".join(f"{f.name} ({f.size} B)" for f in files)
    print(f"{args.directory}: ok, {len(files)} file(s): {listed}")
    return EXIT_OK


def _emit_outputs(values: dict[str, str], *, echo: bool = True) -> None:
    """Print NAME=VALUE lines (unless not `echo`), and append them to $GITHUB_OUTPUT when Actions set it."""
    import os

    from bot.publish import workflow

    if echo:
        sys.stdout.write(workflow.output_lines(values))
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        workflow.write_outputs(target, values)


def _add_resolve_sources(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "resolve-sources",
        help="turn the action's base/head inputs into the two SOURCEs to diff",
        description="Print base=SOURCE and head=SOURCE (and append them to $GITHUB_OUTPUT). A --*-source "
        "wins; a revision REV becomes PYTORCH@REV. With --merge-base, base is the merge base of the "
        "base and head revisions. Empty values count as not given.",
    )
    p.add_argument(
        "--pytorch", metavar="DIR", default=".", help="the PyTorch checkout REVs name (default: .)"
    )
    p.add_argument("--base", metavar="REV", default="", help="the base revision (becomes DIR@REV)")
    p.add_argument("--head", metavar="REV", default="", help="the head revision (default: HEAD)")
    p.add_argument("--base-source", metavar="SOURCE", default="", help="a base SOURCE; wins over --base")
    p.add_argument("--head-source", metavar="SOURCE", default="", help="a head SOURCE; wins over --head")
    p.add_argument(
        "--merge-base",
        choices=("true", "false"),
        default="false",
        help="compare from the merge base of --base and --head (what a PR adds)",
    )
    # Checked here so that a typo in a workflow's `with:` fails loudly instead of skipping every step.
    p.add_argument(
        "--mode",
        choices=("comment", "issue", "summary"),
        default="summary",
        help="what the action will do with the diff, printed as mode= (default: summary)",
    )
    p.add_argument("--dry-run", choices=("true", "false"), default="false", help="also prints dry-run-flag=")
    p.add_argument(
        "--week",
        metavar="YYYY-Www",
        default="",
        help="the weekly window (default: this ISO week, UTC); with --mode issue printed as week=, and a base "
        "source tracked by git is taken as it was when this window began, so a re-run in the same week "
        "reports the same drift after the refreshed snapshot was committed",
    )
    p.add_argument(
        "--report-dir", metavar="DIR", default="opdrift-report", help="where that window base is written"
    )
    p.set_defaults(func=_cmd_resolve_sources)


def _cmd_resolve_sources(args: argparse.Namespace) -> int:
    from bot.publish import workflow

    found = workflow.resolve_sources(
        args.pytorch or ".",
        base=args.base or None,
        head=args.head or None,
        base_source=args.base_source or None,
        head_source=args.head_source or None,
        use_merge_base=args.merge_base == "true",
    )
    import datetime as dt

    flag = "--dry-run" if args.dry_run == "true" else ""
    week = args.week or workflow.iso_week(dt.datetime.now(dt.timezone.utc).date())
    workflow.week_start(week)  # a malformed --week fails here, not in the issue step after the diff
    values = {"base": found.base, "head": found.head, "mode": args.mode, "dry-run-flag": flag}
    if args.mode == "issue":
        if args.base_source:
            values["base"], note = workflow.window_base(args.base_source, week, args.report_dir)
            print(f"opdrift: window {week} base: {note}", file=sys.stderr)
        values["week"] = week
    _emit_outputs(values)
    return EXIT_OK


def _add_pr_number(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pr-number",
        help="the pull request a workflow_run belongs to (number=, empty when there is none)",
        description="Print number=N (and append it to $GITHUB_OUTPUT). --event-numbers (the JSON list of "
        "workflow_run.pull_requests' numbers) or --event-number wins when given; a head that belongs to "
        "several PRs (one branch proposed into two bases) posts nothing, since the run was for one of them; "
        "otherwise (a fork's PR, for which GitHub leaves workflow_run.pull_requests empty) the open PRs "
        "of --repo are searched for the one whose head is exactly --head-sha in --head-repo. "
        "No match prints a notice and number= (empty), exit 0. Token from GITHUB_TOKEN, API root from "
        "GITHUB_API_URL.",
    )
    p.add_argument("--repo", metavar="OWNER/NAME", required=True, help="the repository the PRs are opened on")
    p.add_argument("--event-number", metavar="N", default="", help="one PR number taken from the event")
    p.add_argument(
        "--event-numbers",
        default="",
        metavar="JSON",
        help='workflow_run.pull_requests\' numbers, e.g. "[12]" or "[12, 15]"',
    )
    p.add_argument(
        "--head-sha", metavar="SHA", default="", help="the run's head commit (workflow_run.head_sha)"
    )
    p.add_argument(
        "--head-repo", metavar="OWNER/NAME", default="", help="the repository the head was pushed to"
    )
    p.add_argument("--head-branch", metavar="BRANCH", default="", help="the branch the head was pushed to")
    p.set_defaults(func=_cmd_pr_number)


def _cmd_pr_number(args: argparse.Namespace) -> int:
    import os

    from bot.publish import github, workflow

    numbers = workflow.event_pr_numbers(args.event_numbers) if args.event_numbers else []
    if args.event_number:
        numbers = [workflow.check_pr_number(args.event_number)]
    if len(numbers) > 1:
        listed = ", ".join(f"#{n}" for n in numbers)
        print(f"::notice::this head belongs to {len(numbers)} pull requests ({listed}): nothing to post")
        _emit_outputs({"number": ""})
        return EXIT_OK
    if numbers:
        _emit_outputs({"number": str(numbers[0])})
        return EXIT_OK
    token = os.environ.get("GITHUB_TOKEN", "").strip()
    if not (args.head_sha and args.head_repo and args.head_branch and token):
        print("::notice::no pull request in the event and not enough to look it up; nothing to post")
        _emit_outputs({"number": ""})
        return EXIT_OK
    owner = github.check_repo_name(args.head_repo).split("/")[0]
    settings = github.Settings(
        repo=github.check_repo_name(args.repo),
        token=github.check_token(token),
        api_url=os.environ.get("GITHUB_API_URL") or github.DEFAULT_API_URL,
    )
    client = github.connect(settings)
    try:
        number = client.run(
            lambda: workflow.match_pull(
                client.repo.get_pulls(state="open", head=f"{owner}:{args.head_branch}"),
                head_sha=args.head_sha.lower(),  # GitHub reports shas in lower case
                head_repo=args.head_repo,
            ),
            what=f"looking up the pull request of {args.head_repo}@{args.head_sha[:12]}",
            permission="pull-requests: read",
            not_found=f"repository {args.repo} not found (or the token cannot see it)",
        )
    finally:
        client.close()
    if number is None:
        head = f"{args.head_repo}@{args.head_sha[:12]}"
        print(f"::notice::no open pull request has head {head}; nothing to post")
    _emit_outputs({"number": "" if number is None else str(number)})
    return EXIT_OK


def _add_prepare_history(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "prepare-history",
        help="make a PyTorch checkout hold the commits from BASE to HEAD, for issue --history",
        description="Print history=DIR when `opdrift issue --history DIR` can walk from BASE's commit to "
        "HEAD's in the checkout DIR (and append it to $GITHUB_OUTPUT). A shallow clone is deepened first: "
        "fetched from its origin back to a week before BASE's commit date. When that is not possible "
        "(BASE or HEAD records no commit, the fetch fails, BASE is not an ancestor of HEAD) it prints why "
        "and history= (empty), exit 0: the issue is then posted without attribution.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("--pytorch", metavar="DIR", required=True, help="the PyTorch checkout (a git repository)")
    p.add_argument("base", metavar="BASE", help="the SOURCE the report starts from (e.g. base.json)")
    p.add_argument("head", metavar="HEAD", help="the SOURCE the report ends at (e.g. head.json)")
    p.set_defaults(func=_cmd_prepare_history)


def _cmd_prepare_history(args: argparse.Namespace) -> int:
    from bot import pipeline
    from bot.sources import repo

    base, head = pipeline.load_snapshot(args.base).meta, pipeline.load_snapshot(args.head).meta
    ready = repo.prepare_history(
        args.pytorch, base_commit=base.commit, base_date=base.date, head_commit=head.commit
    )
    if ready.repo is not None:
        print(f"opdrift: {ready.note}")
    else:
        print(f"::{'warning' if ready.problem else 'notice'}::{ready.note}")
    _emit_outputs({"history": ready.repo or ""})
    return EXIT_OK


def _add_push_snapshot(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "push-snapshot",
        help="push the snapshot commit, rebasing it onto the branch when the branch moved meanwhile",
        description="Push HEAD of the repository holding DIR to BRANCH. When the push is rejected because "
        "something was merged while the job ran, the commit is rebased onto the branch and pushed again "
        "(three attempts). Without --remote, the remote is $GITHUB_SERVER_URL/$GITHUB_REPOSITORY and "
        "$GITHUB_TOKEN goes along as an HTTP header for each command: it is never written to .git or "
        "printed.",
    )
    p.add_argument("--branch", required=True, help="the branch to push to (e.g. $GITHUB_REF_NAME)")
    p.add_argument(
        "--remote", help="a remote URL or name (default: this repository on GitHub, with the token)"
    )
    p.add_argument("--dir", default=".", metavar="DIR", help="a directory inside the repository (default: .)")
    p.set_defaults(func=_cmd_push_snapshot)


def _cmd_push_snapshot(args: argparse.Namespace) -> int:
    import base64
    import os

    from bot.errors import WorkflowError
    from bot.publish import github
    from bot.sources.repo import push_commits

    header = None
    secrets: tuple[str, ...] = ()
    remote = args.remote
    if remote is None:
        if not os.environ.get("GITHUB_TOKEN", "").strip():
            raise WorkflowError("GITHUB_TOKEN is not set: nothing to push with (or give --remote)")
        token = github.check_token(os.environ["GITHUB_TOKEN"])
        repo = github.check_repo_name(os.environ.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY")
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        remote = f"{server}/{repo}.git"
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        header, secrets = f"AUTHORIZATION: basic {basic}", (token, basic)
    print(f"opdrift: {push_commits(args.dir, remote, args.branch, auth_header=header, secrets=secrets)}")
    return EXIT_OK


def _add_commit_snapshot(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "commit-snapshot",
        help="commit FILE (only FILE) to its git repository when it changed",
        description="Stage and commit FILE alone when it differs from HEAD; do nothing when it is "
        "unchanged. Prints committed=SHA (empty when nothing was committed) for $GITHUB_OUTPUT. "
        "Pushing is left to the workflow, which holds the credentials.",
    )
    p.add_argument("file", metavar="FILE", help="the snapshot file, inside a git work tree")
    p.add_argument(
        "-m",
        "--message",
        default="snapshots: refresh the tracked snapshot",
        help="the commit message (default: %(default)r)",
    )
    p.set_defaults(func=_cmd_commit_snapshot)


def _cmd_commit_snapshot(args: argparse.Namespace) -> int:
    from bot.sources import repo

    done = repo.commit_file(args.file, args.message)
    print(done.message)
    _emit_outputs({"committed": done.sha or ""})
    return EXIT_OK


_COMMANDS.extend(
    [
        _add_verify_artifact,
        _add_resolve_sources,
        _add_pr_number,
        _add_prepare_history,
        _add_commit_snapshot,
        _add_push_snapshot,
    ]
)


def _write_output(text: str, output: str | None) -> None:
    """Print to stdout, or write FILE atomically so an interrupted run never leaves half a file."""
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    from bot.snapshot import write_atomic

    write_atomic(output, text)


# --- diff -------------------------------------------------------------------------------------


def _add_diff(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from bot.render.report import DEFAULT_FAIL_ON, FAIL_ON, FORMATS

    p = sub.add_parser(
        "diff",
        help="what changed between two SOURCEs, for backend maintainers (exit 1 on --fail-on findings)",
        description="Compute the operator drift from BASE to HEAD and report it: ops that need a kernel, "
        "BC-breaking changes, new core ops, ops that now decompose, then every change by bucket. "
        "Exit 0 when nothing reaches --fail-on, 1 when something does, 2 on error.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("base", metavar="BASE", help="the SOURCE to compare from (e.g. a stored snapshot)")
    p.add_argument("head", metavar="HEAD", help="the SOURCE to compare to (e.g. DIR@REV of the PR head)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text, markdown or json (the full report); pr-comment, weekly-issue, job-summary (capped bodies)",
    )
    _add_output(p)
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=DEFAULT_FAIL_ON,
        help="exit 1 on unacknowledged changes of this level: breaking (BC breaks, removals, renames; "
        "the default), kernel (those plus ops that need a new kernel), any (any change), never",
    )
    p.add_argument("--allowlist", metavar="FILE", help="acknowledged changes (see README)")
    _add_overrides(p)
    p.add_argument("--title", default="", help="a title for the Markdown formats")
    p.set_defaults(func=_cmd_diff)


def _cmd_diff(args: argparse.Namespace) -> int:
    import datetime as dt

    from bot.drift.allowlist import NO_ACKNOWLEDGEMENTS, acknowledge, load_allowlist
    from bot.drift.changes import compute_drift
    from bot.render.report import context_for, failing, render
    from bot.taxonomy.overrides import load_overrides

    allow = load_allowlist(args.allowlist) if args.allowlist else None
    overrides = load_overrides(args.overrides) if args.overrides else None
    base, head, source_warnings = _load_pair(args.base, args.head, overrides)
    drift = compute_drift(base, head)
    acks = NO_ACKNOWLEDGEMENTS if allow is None else acknowledge(drift, allow, today=dt.date.today())
    for warning in acks.warnings:
        print(f"opdrift: {warning}", file=sys.stderr)
    context = context_for(drift, title=args.title, acknowledgements=acks, warnings=source_warnings)
    _write_output(render(drift, args.format, context=context), args.output)
    found = failing(drift, args.fail_on, acks)
    if found:
        print(f"opdrift: {len(found)} change(s) reach --fail-on {args.fail_on}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


_COMMANDS.append(_add_diff)


# --- snapshot ---------------------------------------------------------------------------------


def _add_snapshot(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "snapshot",
        help="classify every operator of SOURCE and store the result as JSON",
        description="Classify every registered operator of SOURCE and write a deterministic, "
        "versioned snapshot (JSON). Same input, same bytes.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("source", metavar="SOURCE", help="where the operators come from (see below)")
    _add_output(p)
    _add_overrides(p)
    p.set_defaults(func=_cmd_snapshot)


def _cmd_snapshot(args: argparse.Namespace) -> int:
    from bot import snapshot
    from bot.taxonomy.overrides import load_overrides

    overrides = load_overrides(args.overrides) if args.overrides else None
    snap = _load(args.source, overrides)
    _write_output(snapshot.to_json(snap), args.output)
    return EXIT_OK


_COMMANDS.append(_add_snapshot)


# --- coverage ---------------------------------------------------------------------------------


def _add_coverage(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "coverage",
        help="what a downstream backend covers of SOURCE, what it lacks, and what went stale",
        description="Compare a backend's own op list with SOURCE's operators: coverage per bucket, "
        "the ops that need a kernel, stale entries, and schema alerts. "
        "KIND is one of torch-mlir, xla, cpp, op-plugin, xpu, dispatch, text; for dispatch, "
        "PATH is a dispatch key of native_functions.yaml such as MPS.",
        epilog=SOURCE_HELP,
    )
    p.add_argument(
        "--backend",
        metavar="KIND=PATH",
        action="append",
        required=True,
        help="a backend to check (repeatable; KIND and PATH as described above)",
    )
    p.add_argument("source", metavar="SOURCE", help="where the operators come from (see below)")
    p.add_argument("--base", metavar="BASE", help="also report what changed since BASE (a SOURCE)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="(default: text)")
    _add_output(p)
    p.add_argument(
        "--torch-version",
        metavar="X.Y",
        help="torch version for op-plugin version gates (default: the SOURCE's, when known)",
    )
    p.set_defaults(func=_cmd_coverage)


def _cmd_coverage(args: argparse.Namespace) -> int:

    from bot.coverage import backends
    from bot.coverage import check as coverage
    from bot.errors import ConfigError
    from bot.render import coverage as coverage_report

    # Checked here, before any file is read. torch's own spellings count (2.6.0a0 on main, 2.1.0+cpu).
    if args.torch_version is not None:
        try:
            backends.torch_version_key(args.torch_version)
        except ConfigError:
            raise ConfigError(
                f"--torch-version {args.torch_version!r}: expected a version like 2.14, 2.14.1 or 2.15.0a0"
            ) from None
    specs = [backends.parse_backend_arg(arg) for arg in args.backend]
    head = _load(args.source)
    base = _load(args.base) if args.base else None
    for kind, value in specs:
        if kind == "dispatch":
            coverage.check_dispatch_key(head, value)
    results = []
    for kind, value in specs:
        version = args.torch_version or head.meta.torch_version
        backend = backends.read_backend(kind, value, torch_version=version)
        _warn_ungated(backend, "SOURCE")
        cov = coverage.compute_coverage(head, backend)
        change = None
        if base is not None:
            base_backend = backends.read_backend(
                kind, value, torch_version=args.torch_version or base.meta.torch_version
            )
            _warn_ungated(base_backend, "BASE")
            change = coverage.compare_coverage(coverage.compute_coverage(base, base_backend), cov)
        results.append((cov, change))
    _write_output(coverage_report.render(results, args.format, head=head), args.output)
    return EXIT_OK


def _warn_ungated(backend: BackendList, which: str) -> None:
    if backend.ungated:
        _warn(
            f"{backend.path}: {which} has no torch version, so the version gates of {backend.ungated} "
            "op-plugin entries were not checked and every entry counts (give --torch-version X.Y)"
        )


_COMMANDS.append(_add_coverage)


# --- stats / explain ----------------------------------------------------------------------------


def _add_stats(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from bot.render.stats import RENDERERS

    p = sub.add_parser(
        "stats",
        help="the post's table for SOURCE: counts at every level and base operators per category",
        description="Count SOURCE's entries, registered operators, base operators, overloads and "
        "composites, and how many base operators fall in each taxonomy bucket.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("source", metavar="SOURCE", help="where the operators come from (see below)")
    p.add_argument(
        "--format",
        choices=tuple(RENDERERS),
        default="text",
        help="text (a table), markdown (the post's table) or json (the figures, for scripts); default: text",
    )
    _add_output(p)
    _add_overrides(p)
    p.set_defaults(func=_cmd_stats)


def _cmd_stats(args: argparse.Namespace) -> int:
    from bot.render.stats import RENDERERS
    from bot.taxonomy.overrides import load_overrides
    from bot.taxonomy.stats import compute_stats

    overrides = load_overrides(args.overrides) if args.overrides else None
    stats = compute_stats(_load(args.source, overrides))
    _write_output(RENDERERS[args.format](stats), args.output)
    return EXIT_OK


def _add_explain(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explain",
        help="why OP sits in its bucket: the deciding rule and its reason, plus the op's facets",
        description="Show the bucket of OP (a registered name such as add.out, or a base name such as "
        "add), the taxonomy rule that decided it and why, and the facets of its registered operators.",
        epilog=SOURCE_HELP,
    )
    p.add_argument("op", metavar="OP", help="a registered name (add.out) or a base name (add)")
    p.add_argument("source", metavar="SOURCE", help="where the operators come from (see below)")
    _add_overrides(p)
    p.set_defaults(func=_cmd_explain)


def _cmd_explain(args: argparse.Namespace) -> int:
    from bot.render.explain import explain
    from bot.taxonomy.overrides import load_overrides

    overrides = load_overrides(args.overrides) if args.overrides else None
    sys.stdout.write(explain(_load(args.source, overrides), args.op))
    return EXIT_OK


_COMMANDS.extend([_add_stats, _add_explain])


# --- comment, issue (publish to GitHub) -----------------------------------------------------------
# The report is computed and rendered completely before the first request, so a failure never leaves a
# half-written post. The environment (GITHUB_TOKEN, GITHUB_API_URL, GITHUB_STEP_SUMMARY) is read here
# and passed on explicitly.

if TYPE_CHECKING:
    from bot.drift.allowlist import Acknowledgements
    from bot.drift.changes import Drift
    from bot.history.attribution import Attribution
    from bot.model import SourceMeta
    from bot.publish.config import BackendSpec, BotConfig
    from bot.publish.github import Outcome, RepoClient
    from bot.render.context import BackendGap


def _add_publish_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", metavar="BASE", help="the SOURCE to compare from (e.g. a stored snapshot)")
    p.add_argument("head", metavar="HEAD", help="the SOURCE to compare to (e.g. DIR@REV of the PR head)")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME", help="where to post")
    p.add_argument("--config", metavar="FILE", help="subscriptions, labels, allow-list (docs/config.md)")
    p.add_argument(
        "--allowlist", metavar="FILE", help="acknowledged changes (instead of the config's `allowlist:`)"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be posted and send no write request (the default without GITHUB_TOKEN)",
    )
    p.add_argument(
        "--retry-budget",
        type=_seconds,
        default=300.0,
        metavar="SECONDS",
        help="total time for retries (default 300)",
    )


def _add_comment(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "comment",
        help="post or update the one sticky drift comment on a pull request",
        description="Compute the drift from BASE to HEAD and keep one comment on PR N up to date: "
        "edited in place, never created on a PR without drift, flipped to ✅ when the drift is gone.",
        epilog=SOURCE_HELP,
    )
    _add_publish_args(p)
    p.add_argument("--pr", required=True, type=_positive_int, metavar="N", help="the pull request number")
    p.add_argument(
        "--head-sha",
        metavar="SHA",
        type=_commit_sha,
        help="the PR head commit HEAD was taken at: post only while PR N's head is still SHA, so a run for "
        "an older push never overwrites the report of a newer one",
    )
    p.add_argument(
        "--annotations",
        action="store_true",
        help="print ::warning lines pointing at new and changed entries of native_functions.yaml",
    )
    p.set_defaults(func=_cmd_comment)


def _add_issue(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "issue",
        help="open or update the weekly drift issue",
        description="Compute the drift from BASE to HEAD and open (or update) the issue of one week, "
        "found by a hidden per-week marker; a new week's issue links the previous one.",
        epilog=SOURCE_HELP,
    )
    _add_publish_args(p)
    p.add_argument(
        "--week", metavar="YYYY-Www", help="the window, e.g. 2026-W48 (default: this ISO week, UTC)"
    )
    p.add_argument(
        "--history",
        metavar="REPO",
        help="attribute every change to the upstream commit that introduced it, by walking REPO (a PyTorch "
        "git repository) from the commit BASE was taken at to HEAD's",
    )
    p.add_argument(
        "--from",
        dest="from_rev",
        metavar="REV",
        help="with --history: walk from REV (default: BASE's commit)",
    )
    p.add_argument(
        "--to", dest="to_rev", metavar="REV", help="with --history: walk to REV (default: HEAD's commit)"
    )
    p.add_argument(
        "--upstream",
        metavar="OWNER/NAME",
        help="where commit and PR links point (default: weekly.upstream of the config, else pytorch/pytorch)",
    )
    p.add_argument(
        "--chart",
        type=int,
        metavar="N",
        help="with --history: embed the Mermaid chart of the last N commits (default: weekly.chart, 0 = none)",
    )
    p.set_defaults(func=_cmd_issue)


class _Setup(NamedTuple):
    cfg: BotConfig
    drift: Drift
    acks: Acknowledgements
    mentions: tuple[str, ...]
    gaps: tuple[BackendGap, ...]  # per backend subscription: the new or changed ops it lacks
    overrides: Overrides | None
    warnings: tuple[SourceWarning, ...]  # HEAD's parse warnings that BASE's parse did not give


def _backend_lacking(cfg: BotConfig, head: Snapshot) -> dict[BackendSpec, frozenset[str]]:
    """Each backend list the subscriptions name → the operators it needs a kernel for at HEAD."""
    import os

    from bot.coverage import backends
    from bot.coverage import check as coverage
    from bot.errors import ConfigError
    from bot.publish.config import backend_specs

    lacking = {}
    for spec in backend_specs(cfg):
        if spec.kind != "dispatch" and not os.path.exists(spec.resolved):
            raise ConfigError(f"backend list {spec.resolved}: no such file", path=cfg.path, line=spec.line)
        backend = backends.read_backend(spec.kind, spec.resolved, torch_version=head.meta.torch_version)
        cov = coverage.compute_coverage(head, backend)
        lacking[spec] = frozenset(o.name for o in cov.uncovered)
    return lacking


def _check_config_names(cfg: BotConfig, args: argparse.Namespace, base: Snapshot, head: Snapshot) -> None:
    """The subscriptions' dispatch keys and tags against what BASE and HEAD know (bot.publish.config.check_names).

    A tag may be defined in tags.yaml and used by no operator yet, so when a subscription names a tag
    that no operator has, the tags.yaml of each source is read too (stored snapshots have none).
    """
    from bot.coverage.check import dispatch_keys
    from bot.operators.native import read_tags
    from bot.publish.config import check_names
    from bot.sources import read as sources

    keys = dispatch_keys(base) | dispatch_keys(head)
    tags = {t for snap in (base, head) for rec in snap.operators.values() for t in rec.facets.tags}
    if not {t for sub in cfg.subscriptions for t in sub.tags} <= tags:
        for spec in (args.base, args.head):
            defined = sources.read_source(spec).tags
            if defined is not None:
                tags |= read_tags(defined)
    check_names(cfg, dispatch_keys=keys, tags=tags)


def _publish_setup(args: argparse.Namespace) -> _Setup:
    """Config, drift, acknowledgements, the handles to mention and the backend gaps: everything before
    rendering (backend lists are read and their coverage computed here, before any request)."""
    import datetime as dt

    from bot.drift.allowlist import NO_ACKNOWLEDGEMENTS, acknowledge, load_allowlist
    from bot.drift.changes import compute_drift
    from bot.publish.config import BotConfig, backend_gaps, load_config, mentions_for
    from bot.publish.github import check_repo_name
    from bot.taxonomy.overrides import load_overrides

    check_repo_name(args.repo)
    cfg = load_config(args.config) if args.config else BotConfig()
    overrides = load_overrides(cfg.overrides) if cfg.overrides else None
    allow_path = args.allowlist or cfg.allowlist
    allow = load_allowlist(allow_path) if allow_path else None
    base, head, source_warnings = _load_pair(args.base, args.head, overrides)
    _check_config_names(cfg, args, base, head)
    drift = compute_drift(base, head)
    acks = NO_ACKNOWLEDGEMENTS if allow is None else acknowledge(drift, allow, today=dt.date.today())
    for warning in acks.warnings:
        print(f"opdrift: {warning}", file=sys.stderr)
    live = [c for c in drift.changes if c not in acks]
    lacking = _backend_lacking(cfg, head)
    return _Setup(
        cfg,
        drift,
        acks,
        mentions_for(cfg, live, lacking),
        backend_gaps(cfg, live, lacking),
        overrides,
        source_warnings,
    )


def _publish_client(args: argparse.Namespace, cfg: BotConfig) -> tuple[RepoClient | None, bool]:
    """A client when GITHUB_TOKEN is set (a dry run still reads with it), and whether to write."""
    import os

    from bot.publish.github import DEFAULT_API_URL, RepoClient, RetryPolicy, Settings, check_token

    token = os.environ.get("GITHUB_TOKEN", "").strip() or None
    if token is None:
        print("opdrift: GITHUB_TOKEN is not set: dry run, nothing is sent", file=sys.stderr)
        return None, True
    settings = Settings(
        repo=args.repo,
        token=check_token(token),
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
        retry=RetryPolicy(total_seconds=args.retry_budget),
        bot_login=cfg.bot_login,
    )
    return RepoClient(settings), bool(args.dry_run)


def _publish_report(outcome: Outcome, summary: str) -> None:
    import os

    from bot.publish.actions import append_step_summary

    if outcome.action == "dry-run":
        print(f"opdrift: dry run: {outcome.detail}")
        if outcome.text:
            sys.stdout.write(outcome.text if outcome.text.endswith("\n") else outcome.text + "\n")
    else:
        print(f"opdrift: {outcome.detail}" + (f": {outcome.url}" if outcome.url else ""))
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        append_step_summary(target, summary)


def _cmd_comment(args: argparse.Namespace) -> int:
    from bot.publish.actions import annotation_lines
    from bot.publish.pr_comment import publish_pr_comment
    from bot.render.report import PR_COMMENT_MARKER, context_for, render

    cfg, drift, acks, mentions, gaps, _, source_warnings = _publish_setup(args)
    context = context_for(
        drift, acknowledgements=acks, mentions=mentions, backend_gaps=gaps, warnings=source_warnings
    )
    body = render(drift, "pr-comment", context=context)
    summary = render(drift, "job-summary", context=context)
    if args.annotations:
        for line in annotation_lines(drift.changes):
            print(line)
    client, dry_run = _publish_client(args, cfg)
    outcome = publish_pr_comment(
        client,
        args.pr,
        body,
        PR_COMMENT_MARKER,
        # A PR that only breaks the file's codegen (an unknown key, a family out of step) is news too.
        has_drift=not drift.is_empty or bool(source_warnings),
        clean_body=body,
        dry_run=dry_run,
        head_sha=args.head_sha,
    )
    _publish_report(outcome, summary)
    return EXIT_OK


def _source_label(meta: SourceMeta) -> str:
    """Short name of a source for titles: a 7-character commit, else the version, else the revision."""
    if meta.commit:
        return meta.commit[:7]
    if meta.torch_version or meta.revision:
        return str(meta.torch_version or meta.revision)
    parts = [p for p in meta.path.replace("\\", "/").split("/") if p]
    name = parts[-1] if parts else meta.path
    if name.endswith((".yaml", ".yml")) and len(parts) > 1:
        return parts[-2]  # DIR/native_functions.yaml: the directory says which one
    return name.removesuffix(".json").removesuffix(".whl")


def _attribute(
    args: argparse.Namespace, cfg: BotConfig, drift: Drift, overrides: Overrides | None
) -> tuple[dict[str, Attribution], str, dict[str, str | None]]:
    """With --history: change fingerprint → introducing commit, the chart, and blob links to --upstream."""
    from bot.history import attribution
    from bot.publish.config import MAX_CHART_POINTS
    from bot.render.report import blob_url
    from bot.render.timeline import chart_of_last

    upstream = attribution.check_slug(args.upstream or cfg.weekly.upstream)
    repo_url = f"https://github.com/{upstream}"
    blobs = {
        "head_blob_url": blob_url(drift.head.commit, repo_url),
        "base_blob_url": blob_url(drift.base.commit, repo_url),
    }
    points = cfg.weekly.chart if args.chart is None else args.chart
    if not 0 <= points <= MAX_CHART_POINTS:
        raise OpdriftError(f"--chart must be between 0 and {MAX_CHART_POINTS}, got {points}")
    if args.history is None:
        if points:
            _warn("weekly.chart is set but there is no --history REPO to chart: no chart")
        return {}, "", blobs
    start, end = attribution.history_range(drift.base, drift.head, args.from_rev, args.to_rev)
    walked = attribution.walk_range(args.history, start, end, overrides=overrides, warn=_warn)
    found = attribution.attribute(drift.changes, walked.points, upstream=upstream)
    print(
        "opdrift: " + attribution.summary_line(found, len(drift.changes), len(walked.points)), file=sys.stderr
    )
    chart = chart_of_last(walked, points) if points else ""
    return found, chart, blobs


def _cmd_issue(args: argparse.Namespace) -> int:
    import datetime as dt

    from bot.errors import OpdriftError
    from bot.publish.weekly_issue import publish_weekly_issue, weekly_marker
    from bot.render.report import context_for, render

    if args.week is None:
        # UTC, as resolve-sources takes it: a runner's local date may already be next week
        from bot.publish.workflow import iso_week

        args.week = iso_week(dt.datetime.now(dt.timezone.utc).date())
    else:
        from bot.publish.workflow import week_start

        week_start(args.week)  # the form, and that the year has such a week (2027 has no W53)
    if args.history is None and (args.from_rev or args.to_rev or args.chart):
        raise OpdriftError("--from, --to and --chart need --history REPO")
    cfg, drift, acks, mentions, gaps, overrides, source_warnings = _publish_setup(args)
    marker = weekly_marker(args.week)
    attributions, chart, blobs = _attribute(args, cfg, drift, overrides)
    context = context_for(
        drift,
        acknowledgements=acks,
        mentions=mentions,
        title=args.week,
        marker=marker,
        backend_gaps=gaps,
        attributions=attributions,
        chart=chart,
        warnings=source_warnings,
        head_blob_url=blobs["head_blob_url"],
        base_blob_url=blobs["base_blob_url"],
    )
    body = render(drift, "weekly-issue", context=context)
    summary = render(
        drift, "job-summary", context=context_for(drift, acknowledgements=acks, warnings=source_warnings)
    )
    title = cfg.weekly.title(week=args.week, base=_source_label(drift.base), head=_source_label(drift.head))
    client, dry_run = _publish_client(args, cfg)
    outcome = publish_weekly_issue(
        client,
        title=title,
        body=body,
        window_key=args.week,
        labels=cfg.labels,
        link_previous=cfg.weekly.link_previous,
        close_previous=cfg.weekly.close_previous,
        dry_run=dry_run,
    )
    _publish_report(outcome, summary)
    # For the action: the snapshot may advance only past a drift that is really in an issue now.
    published = outcome.action in ("created", "updated", "unchanged")
    _emit_outputs({"published": "true" if published else "false"}, echo=False)
    return EXIT_OK


_COMMANDS.extend([_add_comment, _add_issue])


# --- history / history-merge ----------------------------------------------------------------------


def _add_history(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="walk every commit that touched the operator files: counts, buckets and drift per commit",
        description="For each commit in FROM..TO (first-parent, oldest first) that touched "
        "native_functions.yaml, tags.yaml or derivatives.yaml: registered operators, base operators per "
        "bucket, and the drift from the previous point. --tags walks release tags instead.",
    )
    p.add_argument("repo", metavar="REPO", help="a PyTorch git repository (a checkout or a bare clone)")
    p.add_argument(
        "--from", dest="from_rev", metavar="REV", help="start after REV (default: the first commit)"
    )
    p.add_argument("--to", dest="to_rev", metavar="REV", default="HEAD", help="end at REV (default: HEAD)")
    p.add_argument(
        "--paths", nargs="+", metavar="PATH", help="the files whose commits count (default: the three)"
    )
    p.add_argument(
        "--tags", metavar="GLOB", help="walk release tags matching GLOB (e.g. 'v*'), version-sorted"
    )
    p.add_argument(
        "--format",
        choices=("json", "csv", "markdown"),
        default="json",
        help="json (the whole timeline), csv (one row per commit) or markdown (a table); default: json",
    )
    _add_output(p)
    p.add_argument("--cache", metavar="DIR", help="keep per-commit results here, so reruns start warm")
    p.add_argument("--shard", metavar="I/N", help="walk only the I-th of N contiguous chunks (JSON to merge)")
    p.add_argument("--keep-going", action="store_true", help="record a broken commit and go on")
    _add_overrides(p)
    p.set_defaults(func=_cmd_history)


def _cmd_history(args: argparse.Namespace) -> int:
    from bot.history import timeline
    from bot.history import walk as history
    from bot.render import timeline as timeline_render
    from bot.taxonomy.overrides import load_overrides

    options = history.WalkOptions(
        from_rev=args.from_rev,
        to_rev=args.to_rev,
        paths=tuple(args.paths) if args.paths else history.DEFAULT_PATHS,
        tags=args.tags,
        shard=history.parse_shard(args.shard) if args.shard else None,
        keep_going=args.keep_going,
        cache_dir=args.cache,
        overrides=load_overrides(args.overrides) if args.overrides else None,
    )
    result = history.walk(args.repo, options, progress=timeline.Progress(sys.stderr))
    _write_output(timeline_render.render(result, args.format), args.output)
    broken = sum(p.broken for p in result.points)
    if broken:
        print(f"opdrift: {broken} broken commit(s) recorded in the timeline", file=sys.stderr)
    return EXIT_OK


def _add_history_merge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history-merge",
        help="join the JSON outputs of `history --shard I/N` into the single-run timeline",
        description="Join every shard's JSON (all N of them, any order) into the timeline one "
        "unsharded run writes, byte for byte.",
    )
    p.add_argument(
        "shards", metavar="SHARD", nargs="+", help="the JSON output of each `history --shard I/N` run"
    )
    p.add_argument(
        "--format",
        choices=("json", "csv", "markdown"),
        default="json",
        help="json (the whole timeline), csv (one row per commit) or markdown (a table); default: json",
    )
    _add_output(p)
    p.set_defaults(func=_cmd_history_merge)


def _cmd_history_merge(args: argparse.Namespace) -> int:
    from bot.history import timeline
    from bot.render import timeline as timeline_render

    parts = []
    for name in args.shards:
        try:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        except OSError as err:
            raise timeline.TimelineError(f"cannot read: {err.strerror or err}", path=name) from err
        except ValueError:
            raise timeline.TimelineError("not UTF-8 text: not a history file", path=name) from None
        parts.append((name, timeline.parse_json(text, name)))
    _write_output(timeline_render.render(timeline.merge(parts), args.format), args.output)
    return EXIT_OK


_COMMANDS.extend([_add_history, _add_history_merge])
