"""`issue --manual REF`: a manual run's drift as an issue of its own, rendered before any request.

The body is the weekly issue's (the same sections, mentions and attribution) under a title that names
the ref and says "manual run", with the manual marker instead of the week's, and without the link to a
previous issue: a manual run belongs to no week (issue 25: it must never replace the week's report).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.app.prepare import IssueAttribution, PublishSetup
from bot.publish.manual_issue import manual_marker
from bot.render.context import ReportContext
from bot.render.report import render
from bot.render.view import source_label


@dataclass(frozen=True)
class ManualIssuePlan:
    title: str
    body: str
    marker: str
    summary: str  # the job summary


def plan_manual_issue(setup: PublishSetup, walked: IssueAttribution, ref: str) -> ManualIssuePlan:
    drift, acks = setup.drift, setup.acks
    base, head = source_label(drift.base, short=True), source_label(drift.head, short=True)
    marker = manual_marker(ref, base, head)
    context = ReportContext(
        acknowledgements=acks,
        mentions=setup.mentions,
        title=f"manual run at {ref}",
        marker=marker,
        backend_gaps=setup.gaps,
        attributions=walked.attributions,
        chart=walked.chart,
        warnings=setup.warnings,
        head_blob_url=walked.head_blob_url,
        base_blob_url=walked.base_blob_url,
        site_url=setup.cfg.weekly.site_url,
    ).linked(drift)
    body = render(drift, "weekly-issue", context=context)
    summary = render(
        drift,
        "job-summary",
        context=ReportContext(acknowledgements=acks, warnings=setup.warnings).linked(drift),
    )
    title = f"Operator drift, manual run at {ref} ({base}..{head})"
    return ManualIssuePlan(title, body, marker, summary)
