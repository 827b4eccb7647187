"""The arguments of the workflow plumbing commands (verify-artifact, resolve-sources, pr-number,
prepare-history, commit-snapshot, push-snapshot): the decisions the GitHub workflows and action.yml
make, as commands so that no YAML holds logic. Only argparse and opdrift.cli.options are imported.
"""

from __future__ import annotations

import argparse

from opdrift.cli.options import SOURCE_HELP, positive_int


def add_append_summary(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Append FILE to the job summary ($GITHUB_STEP_SUMMARY), cut on a line break with a note when "
        "the step's summary would pass GitHub's 1 MiB limit (past it GitHub shows none of it)."
    )
    p.add_argument("file", metavar="FILE", help="the Markdown file to append")


def add_verify_artifact(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Exit 2 unless DIR holds exactly the --require files (plus any --allow files), "
        "all regular files of at most --max-bytes: no links, directories or other names."
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
        "--max-bytes", type=positive_int, default=None, metavar="N", help="the largest file size allowed"
    )
    p.add_argument(
        "--missing-ok",
        action="store_true",
        help=(
            "a missing or empty DIR (the run failed before it uploaded) prints one notice "
            "'no report from the PR run' and verified=false, exit 0; verified=true otherwise"
        ),
    )


def add_resolve_sources(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Print base=SOURCE and head=SOURCE (and append them to $GITHUB_OUTPUT). A --*-source "
        "wins; a revision REV becomes PYTORCH@REV. With --merge-base, base is the merge base of the "
        "base and head revisions. Empty values count as not given."
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
        choices=("comment", "issue", "manual-issue", "summary"),
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


def add_pr_number(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Print number=N (and append it to $GITHUB_OUTPUT). --event-numbers (the JSON list of "
        "workflow_run.pull_requests' numbers) or --event-number wins when given; a head that belongs to "
        "several PRs (one branch proposed into two bases) posts nothing, since the run was for one of them; "
        "otherwise (a fork's PR, for which GitHub leaves workflow_run.pull_requests empty) the open PRs "
        "of --repo are searched for the one whose head is exactly --head-sha in --head-repo. "
        "No match prints a notice and number= (empty), exit 0. Token from GITHUB_TOKEN, API root from "
        "GITHUB_API_URL."
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


def add_prepare_history(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Print history=DIR when `opdrift issue --history DIR` can walk from BASE's commit to "
        "HEAD's in the checkout DIR (and append it to $GITHUB_OUTPUT). A shallow clone is deepened first: "
        "fetched from its origin back to a week before BASE's commit date. When that is not possible "
        "(BASE or HEAD records no commit, the fetch fails, BASE is not an ancestor of HEAD) it prints why "
        "and history= (empty), exit 0: the issue is then posted without attribution."
    )
    p.epilog = SOURCE_HELP
    p.add_argument("--pytorch", metavar="DIR", required=True, help="the PyTorch checkout (a git repository)")
    p.add_argument("base", metavar="BASE", help="the SOURCE the report starts from (e.g. base.json)")
    p.add_argument("head", metavar="HEAD", help="the SOURCE the report ends at (e.g. head.json)")


def add_fetch_commits(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Make DIR a partial clone of REMOTE holding the commits BASE and HEAD and their ancestors, "
        "and no tree or blob (git fetch --no-tags --filter=tree:0 origin BASE HEAD): the three files "
        "are fetched when opdrift reads them. Prints dir= and merge-base= (and appends them to "
        "$GITHUB_OUTPUT). For a private repository set OPDRIFT_GIT_TOKEN: it authenticates this fetch "
        "and the later on-demand ones, and is never written to the repository's config."
    )
    p.add_argument(
        "--remote", metavar="URL", required=True, help="the repository to fetch from (a URL or path)"
    )
    p.add_argument("--into", metavar="DIR", required=True, help="the directory of the partial clone")
    p.add_argument("base", metavar="BASE", help="the base commit (a pull request's base sha)")
    p.add_argument("head", metavar="HEAD", help="the head commit (a pull request's head sha)")


def add_state_branch(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Clone BRANCH, the branch that keeps the stored snapshot (never the default branch), with its "
        "history into DIR, from the repository push-snapshot pushes to. When BRANCH does not exist yet it is started at DIR as one commit holding the "
        "seed at FILE: the checked-out copy of FILE when there is one (the seed `opdrift init` wrote), else "
        "a snapshot of --seed SOURCE. Prints dir=, base-source= (DIR/FILE) and seeded= (the seed commit to "
        "push, empty when the branch existed or in a dry run) for $GITHUB_OUTPUT."
    )
    p.add_argument("--branch", required=True, help="the snapshot's branch (e.g. opdrift-state)")
    p.add_argument("--file", required=True, metavar="FILE", help="the snapshot's path inside the branch")
    p.add_argument(
        "--dir", default=".opdrift-state", metavar="DIR", help="the worktree to make (default: %(default)s)"
    )
    p.add_argument(
        "--seed", metavar="SOURCE", help="what to seed a new branch from, when FILE is not checked out"
    )
    p.add_argument(
        "--remote", help="a remote URL (default: this repository on GitHub, with $GITHUB_TOKEN when set)"
    )
    p.add_argument("--dry-run", choices=("true", "false"), default="false", help="seed locally, push nothing")


def add_commit_snapshot(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Stage and commit FILE alone when it differs from HEAD; do nothing when it is "
        "unchanged. Prints committed=SHA (empty when nothing was committed) for $GITHUB_OUTPUT. "
        "Pushing is left to the workflow, which holds the credentials."
    )
    p.add_argument("file", metavar="FILE", help="the snapshot file, inside a git work tree")
    p.add_argument(
        "-m",
        "--message",
        default="snapshots: refresh the tracked snapshot",
        help="the commit message (default: %(default)r)",
    )


def add_push_snapshot(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Push HEAD of the repository holding DIR to BRANCH. When the push is rejected because "
        "something was merged while the job ran, the commit is rebased onto the branch and pushed again "
        "(three attempts). Without --remote, the remote is $GITHUB_SERVER_URL/$GITHUB_REPOSITORY and "
        "$GITHUB_TOKEN goes along as an HTTP header for each command: it is never written to .git or "
        "printed."
    )
    p.add_argument("--branch", required=True, help="the branch to push to (e.g. $GITHUB_REF_NAME)")
    p.add_argument(
        "--remote", help="a remote URL or name (default: this repository on GitHub, with the token)"
    )
    p.add_argument("--dir", default=".", metavar="DIR", help="a directory inside the repository (default: .)")
