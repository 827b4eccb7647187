"""Runners of the workflow plumbing commands: verify-artifact, resolve-sources, pr-number,
fetch-commits, prepare-history, state-branch, commit-snapshot, push-snapshot, append-summary.

The decisions the GitHub workflows and action.yml make, as commands so that no YAML holds logic.
Their results go to stdout as NAME=VALUE lines and to $GITHUB_OUTPUT (opdrift.cli.common.emit_outputs).
"""

from __future__ import annotations

import argparse
import os
import sys

from opdrift.cli.common import EXIT_OK, emit_outputs, github_token


def run_append_summary(args: argparse.Namespace) -> int:
    from opdrift.errors import WorkflowError
    from opdrift.publish.actions import append_step_summary

    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        raise WorkflowError("GITHUB_STEP_SUMMARY is not set (this runs inside a GitHub Actions step)")
    try:
        with open(args.file, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise WorkflowError(f"cannot read the summary: {reason}", path=args.file) from None
    append_step_summary(target, text)
    return EXIT_OK


def run_verify_artifact(args: argparse.Namespace) -> int:
    from opdrift.publish import artifact

    limit = artifact.DEFAULT_MAX_BYTES if args.max_bytes is None else args.max_bytes
    if args.missing_ok and artifact.is_missing(args.directory):
        # The PR run failed or was cancelled before its upload step: nothing to post, and no error,
        # since the PR run's own failure is already what the author sees.
        print("::notice title=opdrift::no report from the PR run: nothing to post")
        emit_outputs({"verified": "false"}, echo=False)
        return EXIT_OK
    files = artifact.verify_artifact(
        args.directory, required=args.require, optional=args.allow, max_bytes=limit
    )
    listed = ", ".join(f"{f.name} ({f.size} B)" for f in files)
    print(f"{args.directory}: ok, {len(files)} file(s): {listed}")
    if args.missing_ok:
        emit_outputs({"verified": "true"}, echo=False)
    return EXIT_OK


def run_resolve_sources(args: argparse.Namespace) -> int:
    import datetime as dt

    from opdrift.publish import workflow

    found = workflow.resolve_sources(
        args.pytorch or ".",
        base=args.base or None,
        head=args.head or None,
        base_source=args.base_source or None,
        head_source=args.head_source or None,
        use_merge_base=args.merge_base == "true",
    )
    flag = "--dry-run" if args.dry_run == "true" else ""
    week = args.week or workflow.iso_week(dt.datetime.now(dt.timezone.utc).date())
    workflow.week_start(week)  # a malformed --week fails here, not in the issue step after the diff
    values = {"base": found.base, "head": found.head, "mode": args.mode, "dry-run-flag": flag}
    if args.mode == "issue":
        if args.base_source:
            values["base"], note = workflow.window_base(args.base_source, week, args.report_dir)
            print(f"opdrift: window {week} base: {note}", file=sys.stderr)
        values["week"] = week
    emit_outputs(values)
    return EXIT_OK


def run_pr_number(args: argparse.Namespace) -> int:
    from opdrift.github.retry import DEFAULT_API_URL
    from opdrift.publish import github, workflow

    numbers = workflow.event_pr_numbers(args.event_numbers) if args.event_numbers else []
    if args.event_number:
        numbers = [workflow.check_pr_number(args.event_number)]
    if len(numbers) > 1:
        listed = ", ".join(f"#{n}" for n in numbers)
        print(f"::notice::this head belongs to {len(numbers)} pull requests ({listed}): nothing to post")
        emit_outputs({"number": ""})
        return EXIT_OK
    if numbers:
        emit_outputs({"number": str(numbers[0])})
        return EXIT_OK
    token = github_token()
    if not (args.head_sha and args.head_repo and args.head_branch and token):
        print("::notice::no pull request in the event and not enough to look it up; nothing to post")
        emit_outputs({"number": ""})
        return EXIT_OK
    owner = github.check_repo_name(args.head_repo).split("/")[0]
    settings = github.Settings(
        repo=github.check_repo_name(args.repo),
        token=github.check_token(token),
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
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
    emit_outputs({"number": "" if number is None else str(number)})
    return EXIT_OK


def run_fetch_commits(args: argparse.Namespace) -> int:
    from opdrift.sources.fetch import fetch_commits

    done = fetch_commits(args.into, args.remote, args.base, args.head)
    print(f"opdrift: {done.note}", file=sys.stderr)
    emit_outputs({"dir": done.directory, "merge-base": done.merge_base})
    return EXIT_OK


def run_prepare_history(args: argparse.Namespace) -> int:
    from opdrift import pipeline
    from opdrift.sources.repo import prepare_history

    base, head = pipeline.load_snapshot(args.base).meta, pipeline.load_snapshot(args.head).meta
    ready = prepare_history(
        args.pytorch, base_commit=base.commit, base_date=base.date, head_commit=head.commit
    )
    if ready.repo is not None:
        print(f"opdrift: {ready.note}")
    else:
        print(f"::{'warning' if ready.problem else 'notice'}::{ready.note}")
    emit_outputs({"history": ready.repo or ""})
    return EXIT_OK


def _this_repository(remote: str | None, *, token_needed: bool) -> tuple[str, str | None, tuple[str, ...]]:
    """The remote the snapshot's branch is read from and pushed to, its credentials header and the
    secrets to keep out of messages: REMOTE as given, else $GITHUB_SERVER_URL/$GITHUB_REPOSITORY with
    $GITHUB_TOKEN (needed to push; a read of a public repository goes without)."""
    import base64

    from opdrift.errors import WorkflowError
    from opdrift.publish import github

    if remote is not None:
        return remote, None, ()
    token = github_token()
    if token is None and token_needed:
        raise WorkflowError("GITHUB_TOKEN is not set: nothing to push with (or give --remote)")
    repo = github.check_repo_name(os.environ.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY")
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    url = f"{server}/{repo}.git"
    if token is None:
        return url, None, ()
    token = github.check_token(token)
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return url, f"AUTHORIZATION: basic {basic}", (token, basic)


def run_push_snapshot(args: argparse.Namespace) -> int:
    from opdrift.sources.repo import push_commits

    remote, header, secrets = _this_repository(args.remote, token_needed=True)
    print(f"opdrift: {push_commits(args.dir, remote, args.branch, auth_header=header, secrets=secrets)}")
    return EXIT_OK


def run_state_branch(args: argparse.Namespace) -> int:
    from pathlib import Path

    from opdrift import snapshot
    from opdrift.cli.common import load
    from opdrift.errors import WorkflowError
    from opdrift.sources.repo import open_state_branch

    def seed() -> bytes:
        checked_out = Path(args.file)
        if checked_out.is_file():
            print(f"opdrift: seeding {args.branch} from the checked-out {args.file}", file=sys.stderr)
            return checked_out.read_bytes()
        if args.seed:
            print(f"opdrift: seeding {args.branch} from {args.seed}", file=sys.stderr)
            return snapshot.to_json(load(args.seed)).encode("utf-8")
        raise WorkflowError(
            f"{args.branch} does not exist and there is no {args.file} to seed it from: give --seed SOURCE "
            '(e.g. gh:pytorch/pytorch@main), or commit a seed (docs/workflows.md, "Seeding the snapshot")'
        )

    remote, header, _ = _this_repository(args.remote, token_needed=False)
    state = open_state_branch(remote, args.branch, args.dir, args.file, seed, auth_header=header)
    print(f"opdrift: {state.note}", file=sys.stderr)
    seeded = state.seeded if state.seeded and args.dry_run != "true" else ""
    emit_outputs({"dir": state.directory, "base-source": f"{state.directory}/{args.file}", "seeded": seeded})
    return EXIT_OK


def run_commit_snapshot(args: argparse.Namespace) -> int:
    from opdrift.sources.repo import commit_file

    done = commit_file(args.file, args.message)
    print(done.message)
    emit_outputs({"committed": done.sha or ""})
    return EXIT_OK
