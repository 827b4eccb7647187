"""`issue --manual REF`: a manual run's drift as an issue of its own, rendered before any request.

The body is the weekly issue's (the same sections, mentions and attribution) under a title that names
the ref and says "manual run", with the manual marker instead of the week's, and without the link to a
previous issue: a manual run belongs to no week (it must never replace the week's report).
"""

from __future__ import annotations

from dataclasses import dataclass

from opdrift.app.issue import issue_context, job_summary
from opdrift.app.prepare import IssueAttribution, PublishSetup
from opdrift.publish.manual_issue import manual_marker
from opdrift.render.report import render
from opdrift.render.view import source_label


@dataclass(frozen=True)
class ManualIssuePlan:
    title: str
    body: str
    marker: str
    summary: str  # the job summary


def plan_manual_issue(setup: PublishSetup, walked: IssueAttribution, ref: str) -> ManualIssuePlan:
    drift = setup.drift
    base, head = source_label(drift.base, short=True), source_label(drift.head, short=True)
    marker = manual_marker(ref, base, head)
    context = issue_context(setup, walked, title=f"manual run at {ref}", marker=marker)
    body = render(drift, "weekly-issue", context=context)
    title = f"Operator drift, manual run at {ref} ({base}..{head})"
    return ManualIssuePlan(title, body, marker, job_summary(setup))
