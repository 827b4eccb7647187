"""The `comment` use case after its setup: HEAD checked against --head-sha, the bodies rendered, and
whether the PR gets a comment at all (the quiet policy), all before the first request."""

from __future__ import annotations

from dataclasses import dataclass

from opdrift.app.prepare import PublishSetup
from opdrift.errors import PublishError
from opdrift.render.context import ReportContext
from opdrift.render.report import render


@dataclass(frozen=True)
class CommentPlan:
    body: str  # the sticky comment (also its clean body)
    summary: str  # the job summary
    has_drift: bool  # whether the PR gets (or keeps) a comment with drift
    quiet_reason: str  # why a drift posts no comment ('' when it does, or when there is none)


def check_head_commit(commit: str | None, head_sha: str, spec: str) -> None:
    """A report for --head-sha must be computed at that commit: a snapshot made anywhere else (an
    artifact a pull request's own run uploaded could say anything) is refused, not posted."""
    if (commit or "").lower() != head_sha.lower():
        found = f"commit {commit[:12]}" if commit else "no commit"
        raise PublishError(
            f"HEAD records {found}, not --head-sha {head_sha[:12]}: this report is not for that commit, "
            "so it is not posted",
            path=spec,
        )


def plan_comment(setup: PublishSetup) -> CommentPlan:
    """The bodies, and whether the drift is news for the PR."""
    drift = setup.drift
    context = ReportContext(
        acknowledgements=setup.acks,
        mentions=setup.mentions,
        backend_gaps=setup.gaps,
        warnings=setup.warnings,
        impact=setup.impact,
    ).linked(drift)
    body = render(drift, "pr-comment", context=context)
    summary = render(drift, "job-summary", context=context)
    # A PR that only adds or drops in-tree kernels (an XPU kernel) asks nothing of another backend:
    # it gets the job summary, and a comment only when the config asks for one.
    kernel_keys_only = bool(drift.changes) and all(c.kernels_only for c in drift.changes)
    # ... unless a subscription matched (a `dispatch` backend whose own key lost a kernel), or a
    # listed downstream backend is affected.
    quiet = (
        kernel_keys_only
        and not setup.cfg.comment_on_kernel_keys
        and not setup.mentions
        and not setup.gaps
        and not any(not i.unread for i in setup.impact)
    )
    # A PR that only breaks the file's codegen (an unknown key, a family out of step) is news too.
    has_drift = (not drift.is_empty and not quiet) or bool(setup.warnings)
    return CommentPlan(
        body,
        summary,
        has_drift,
        "only in-tree kernels changed" if quiet and not setup.warnings else "",
    )
