"""What several commands' arguments share: argument types, common options, the choices they offer.

Only argparse is imported here: building the parser must not load a stage. The choices that a stage
defines (report formats, --fail-on levels, stats formats) are spelled out here for that reason;
tests/unit/cli/test_startup.py holds them equal to the stage's own tuples.
"""

from __future__ import annotations

import argparse
import re

SOURCE_HELP = (
    "SOURCE: a PyTorch checkout DIR, DIR@REV (a git revision, read without checkout), "
    "a torch .whl, a native_functions.yaml (tags.yaml beside it is used), a snapshot .json, or "
    "through GitHub's API with no clone (GITHUB_TOKEN when set): gh:OWNER/NAME@REF (a branch, tag or "
    "sha), gh:OWNER/NAME#PR (a pull request's head) or gh:OWNER/NAME#PR:merge-base (the commit its "
    "diff starts from)"
)

# opdrift.render.markers.FORMATS, opdrift.drift.policy.FAIL_ON and DEFAULT_FAIL_ON, opdrift.render.stats.RENDERERS' keys.
REPORT_FORMATS = ("text", "markdown", "json", "pr-comment", "weekly-issue", "job-summary")
FAIL_ON = ("breaking", "kernel", "any", "never")
DEFAULT_FAIL_ON = "breaking"
STATS_FORMATS = ("text", "markdown", "json")
PROFILES = ("eager", "functional", "export")  # opdrift.operators.kernels.PROFILES


def add_source(p: argparse.ArgumentParser) -> None:
    """The one SOURCE of a command that reads one (its epilog is SOURCE_HELP, the "below")."""
    p.add_argument("source", metavar="SOURCE", help="where the operators come from (see below)")


def add_base_head(p: argparse.ArgumentParser) -> None:
    """The two SOURCEs a drift is computed between (diff, comment, issue)."""
    p.add_argument("base", metavar="BASE", help="the SOURCE to compare from (e.g. a stored snapshot)")
    p.add_argument("head", metavar="HEAD", help="the SOURCE to compare to (e.g. DIR@REV of the PR head)")


def add_timeline_format(p: argparse.ArgumentParser) -> None:
    """How a timeline is written (history, and history-merge, which writes what history would)."""
    p.add_argument(
        "--format",
        choices=("json", "csv", "markdown"),
        default="json",
        help="json (the whole timeline), csv (one row per commit) or markdown (a table); default: json",
    )


def add_retry_budget(p: argparse.ArgumentParser) -> None:
    """The time a step's GitHub calls may take (comment, issue, watch)."""
    p.add_argument(
        "--retry-budget",
        type=seconds,
        default=300.0,
        metavar="SECONDS",
        help="total time for the GitHub calls of one publish step, requests and retries included (default 300)",
    )


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of stdout")


def add_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--overrides", metavar="FILE", help="bucket overrides file (see docs/buckets.md, Overrides)"
    )


def add_codegen(p: argparse.ArgumentParser) -> None:
    # The X.Y is checked when the command runs (opdrift.operators.codegen knows the releases), so that
    # building the parser loads no stage and an unknown one is the usual one-line error.
    p.add_argument(
        "--codegen",
        metavar="X.Y",
        help="expand autogen by the codegen rules of torch release X.Y (default: those of each "
        "SOURCE's torch version, the newest when it has none; see docs/commands.md)",
    )


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds, 0 or more, got {text!r}")
    return value


def commit_sha(text: str) -> str:
    """A full commit id (40 hex digits, or 64 in a SHA-256 repository), lower-cased as GitHub reports it."""
    if re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", text) is None:
        raise argparse.ArgumentTypeError(f"expected a full commit sha (40 hex digits), got {text!r}")
    return text.lower()
