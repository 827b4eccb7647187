"""The `issue` use case after its setup and attribution: the weekly issue's title, its body (which
links the previous issue once the publisher has found it) and the job summary, before any request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from opdrift.app.prepare import IssueAttribution, PublishSetup
from opdrift.publish.weekly_issue import weekly_marker
from opdrift.render.context import ReportContext
from opdrift.render.report import render
from opdrift.render.view import source_label


@dataclass(frozen=True)
class IssuePlan:
    title: str
    body: Callable[[int | None], str]  # the previous issue's number (None: none) → the body
    summary: str  # the job summary
    # No operator changed and HEAD's file reads as cleanly as BASE's: nothing to tell anyone
    # (`weekly.quiet` says what such a week posts).
    quiet: bool = False


def issue_context(setup: PublishSetup, walked: IssueAttribution, *, title: str, marker: str) -> ReportContext:
    """What the weekly issue's body shows beyond the drift, under TITLE and MARKER: the weekly issue's and
    a manual run's issue (`opdrift.app.manual_issue`) are the same report."""
    return ReportContext(
        acknowledgements=setup.acks,
        mentions=setup.mentions,
        title=title,
        marker=marker,
        backend_gaps=setup.gaps,
        attributions=walked.attributions,
        chart=walked.chart,
        warnings=setup.warnings,
        head_blob_url=walked.head_blob_url,
        base_blob_url=walked.base_blob_url,
        site_url=setup.cfg.weekly.site_url,
        backends=tuple(
            dict.fromkeys(s.backend.label for s in setup.cfg.subscriptions if s.backend is not None)
        ),
    ).linked(setup.drift)


def job_summary(setup: PublishSetup) -> str:
    drift = setup.drift
    return render(
        drift,
        "job-summary",
        context=ReportContext(acknowledgements=setup.acks, warnings=setup.warnings).linked(drift),
    )


def plan_issue(setup: PublishSetup, walked: IssueAttribution, week: str) -> IssuePlan:
    drift = setup.drift
    context = issue_context(setup, walked, title=week, marker=weekly_marker(week))

    def body(previous_issue: int | None) -> str:
        return render(drift, "weekly-issue", context=replace(context, previous_issue=previous_issue))

    title = setup.cfg.weekly.title(
        week=week, base=source_label(drift.base, short=True), head=source_label(drift.head, short=True)
    )
    return IssuePlan(title, body, job_summary(setup), drift.is_empty and not setup.warnings)
