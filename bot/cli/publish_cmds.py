"""Runners of `comment` and `issue`, which publish a drift report to GitHub.

The report is computed and rendered (opdrift.app) completely before the first request, so a
failure never leaves a half-written post. The environment (GITHUB_TOKEN, GITHUB_API_URL,
GITHUB_STEP_SUMMARY) is read here and passed on explicitly.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from opdrift.cli.common import (
    EXIT_OK,
    codegen_rules,
    emit_outputs,
    fetch_gh_files,
    github_token,
    note,
    read_any_source,
    warn,
)

if TYPE_CHECKING:
    from opdrift.app.prepare import IssueAttribution, PublishSetup
    from opdrift.config.file import BotConfig
    from opdrift.publish.github import Outcome, RepoClient


def _setup(args: argparse.Namespace, *, impact: bool = False) -> PublishSetup:
    """The use case's setup; with IMPACT (the PR comment's), the config's `backends:` lists are read
    and judged too."""
    from opdrift.app.prepare import publish_setup

    return publish_setup(
        args.repo,
        args.base,
        args.head,
        config=args.config,
        allowlist=args.allowlist,
        warn=warn,
        note=note,
        codegen=codegen_rules(args),
        read=read_any_source,
        fetch=fetch_gh_files,
        impact=impact,
    )


def _env_login() -> str | None:
    """OPDRIFT_BOT_LOGIN: the token's login when GitHub refuses it GET /user (the workflow's own token
    posts as github-actions[bot]); GET /user's answer, and the config's bot_login, win over it."""
    from opdrift.config.file import BOT_LOGIN
    from opdrift.errors import PublishError

    value = os.environ.get("OPDRIFT_BOT_LOGIN", "").strip().removeprefix("@")
    if not value:
        return None
    if not BOT_LOGIN.fullmatch(value):
        raise PublishError(
            f"OPDRIFT_BOT_LOGIN must be a GitHub login (e.g. github-actions[bot]), got {value!r}"
        )
    return value


def _publish_client(args: argparse.Namespace, cfg: BotConfig) -> tuple[RepoClient | None, bool]:
    """A client when GITHUB_TOKEN is set (a dry run still reads with it), and whether to write."""
    from opdrift.github.retry import DEFAULT_API_URL, RetryPolicy
    from opdrift.publish.github import RepoClient, Settings, check_token

    token = github_token()
    if token is None:
        print("opdrift: GITHUB_TOKEN is not set: dry run, nothing is sent", file=sys.stderr)
        return None, True
    settings = Settings(
        repo=args.repo,
        token=check_token(token),
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
        retry=RetryPolicy(total_seconds=args.retry_budget),
        bot_login=cfg.bot_login,
        login_if_refused=_env_login(),
    )
    return RepoClient(settings), bool(args.dry_run)


def _publish_report(outcome: Outcome, summary: str, *, shows_body: bool = True) -> None:
    """The status line on stderr; a dry run's body alone on stdout (so `> body.md` is the post), and
    only when it `shows_body`: a run that would post nothing prints none."""
    from opdrift.publish.actions import append_step_summary

    if outcome.action == "dry-run":
        print(f"opdrift: dry run: {outcome.detail}", file=sys.stderr)
        if outcome.text and shows_body:
            sys.stdout.write(outcome.text if outcome.text.endswith("\n") else outcome.text + "\n")
    else:
        print(f"opdrift: {outcome.detail}" + (f": {outcome.url}" if outcome.url else ""), file=sys.stderr)
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        append_step_summary(target, summary)


def run_comment(args: argparse.Namespace) -> int:
    from opdrift.app.comment import check_head_commit, plan_comment
    from opdrift.publish.actions import annotation_lines
    from opdrift.publish.pr_comment import publish_pr_comment
    from opdrift.render.markers import PR_COMMENT_MARKER

    setup = _setup(args, impact=True)
    drift = setup.drift
    if args.head_sha:
        check_head_commit(drift.head.commit, args.head_sha, args.head)
    plan = plan_comment(setup)
    if args.annotations:
        for line in annotation_lines(drift.changes):
            print(line)
    client, dry_run = _publish_client(args, setup.cfg)
    outcome = publish_pr_comment(
        client,
        args.pr,
        plan.body,
        PR_COMMENT_MARKER,
        has_drift=plan.has_drift,
        clean_body=plan.body,
        dry_run=dry_run,
        head_sha=args.head_sha,
        quiet_reason=plan.quiet_reason,
    )
    # Without a token nothing is read either: a report without drift would post nothing (an earlier
    # comment, if any, is only flipped), so no body is shown. With a token a dry run knows, and shows
    # the flip it would make.
    _publish_report(outcome, plan.summary, shows_body=plan.has_drift or client is not None)
    return EXIT_OK


def run_issue(args: argparse.Namespace) -> int:
    import datetime as dt

    from opdrift.app.issue import plan_issue
    from opdrift.app.prepare import issue_attribution
    from opdrift.errors import OpdriftError
    from opdrift.publish.weekly_issue import publish_weekly_issue
    from opdrift.publish.workflow import iso_week, week_start

    given: str | None = args.week
    week = "" if given is None else given
    if args.manual is not None:
        if given is not None:
            raise OpdriftError("--manual posts its own issue, which belongs to no week: drop --week")
        if not args.manual.strip():
            raise OpdriftError("--manual needs the ref the run was for, e.g. main or v2.15.0")
    elif given is None:
        # UTC, as resolve-sources takes it: a runner's local date may already be next week
        week = iso_week(dt.datetime.now(dt.timezone.utc).date())
    else:
        week_start(week)  # the form, and that the year has such a week (2027 has no W53)
    if args.history is None and (args.from_rev or args.to_rev or args.chart):
        raise OpdriftError("--from, --to and --chart need --history REPO")
    setup = _setup(args)
    walked = issue_attribution(
        setup,
        history=args.history,
        upstream=args.upstream,
        chart=args.chart,
        from_rev=args.from_rev,
        to_rev=args.to_rev,
        warn=warn,
        note=note,
    )
    cfg = setup.cfg
    if args.manual is not None:
        return _manual_issue(args, setup, walked)
    plan = plan_issue(setup, walked, week)
    client, dry_run = _publish_client(args, cfg)
    if plan.quiet and cfg.weekly.quiet != "issue":
        return _quiet_week(setup, plan.summary, week, client, dry_run)
    outcome = publish_weekly_issue(
        client,
        title=plan.title,
        body=plan.body,
        window_key=week,
        labels=cfg.labels,
        link_previous=cfg.weekly.link_previous,
        close_previous=cfg.weekly.close_previous,
        dry_run=dry_run,
    )
    _publish_report(outcome, plan.summary)
    # For the action: the snapshot may advance only past a drift that is really in an issue now.
    published = outcome.action in ("created", "updated", "unchanged")
    emit_outputs({"published": "true" if published else "false"}, echo=False)
    return EXIT_OK


def _quiet_week(
    setup: PublishSetup,
    summary: str,
    week: str,
    client: RepoClient | None,
    dry_run: bool,
) -> int:
    """A week with no operator change opens no issue (`weekly.quiet`: skip, or comment on the open one).
    The snapshot may still advance (published=true): there was nothing to tell."""
    from opdrift.publish.github import Outcome
    from opdrift.publish.weekly_issue import publish_quiet_week
    from opdrift.render.view import source_label

    drift = setup.drift
    between = f"{source_label(drift.base, short=True)} and {source_label(drift.head, short=True)}"
    if setup.cfg.weekly.quiet == "comment":
        text = f"{week}: no operator changes between {between} ({drift.head_operators} operators)."
        outcome = publish_quiet_week(client, window_key=week, text=text, dry_run=dry_run)
    else:
        outcome = Outcome(
            "skipped",
            detail=f"no operator changes between {between}: no issue this week (weekly.quiet: skip)",
        )
    _publish_report(outcome, summary)
    emit_outputs({"published": "false" if outcome.action == "dry-run" else "true"}, echo=False)
    return EXIT_OK


def _manual_issue(args: argparse.Namespace, setup: PublishSetup, walked: IssueAttribution) -> int:
    from opdrift.app.manual_issue import plan_manual_issue
    from opdrift.publish.manual_issue import publish_manual_issue
    from opdrift.text import one_line

    plan = plan_manual_issue(setup, walked, one_line(args.manual.strip()))
    client, dry_run = _publish_client(args, setup.cfg)
    outcome = publish_manual_issue(
        client, title=plan.title, body=plan.body, marker=plan.marker, labels=setup.cfg.labels, dry_run=dry_run
    )
    _publish_report(outcome, plan.summary)
    return EXIT_OK
