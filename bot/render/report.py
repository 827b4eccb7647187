"""Drift → text, Markdown or JSON: `render` is the entry point of the drift report.

Text and Markdown go through the Jinja2 templates in ``templates/`` (`opdrift.render.jinja`, imported only
when a template is rendered), JSON through `opdrift.render.drift_json`. The pieces: the view model
(`opdrift.render.view`), the words the templates call (`opdrift.render.helpers`), the size caps and their
bisection (`opdrift.render.fit`), the markers the publisher searches for (`opdrift.render.markers`) and the
context a caller passes (`opdrift.render.context`). Rendering is pure: `render` returns a string.
"""

from __future__ import annotations

from opdrift import __version__
from opdrift.drift.changes import Drift
from opdrift.render.context import ReportContext
from opdrift.render.drift_json import render_json
from opdrift.render.fit import (
    LIMITS,
    MAX_DETAILS,
    MAX_GAP_OPS,
    MAX_WARNINGS,
    UNCAPPED,
    caps,
    fallback,
    largest_fitting,
    truncated,
)
from opdrift.render.helpers import Helpers
from opdrift.render.markers import (
    Format,
    marker_for,
)
from opdrift.render.view import View, build_view, source_label
from opdrift.text import Safe

_TEMPLATES: dict[Format, str] = {
    "pr-comment": "pr_comment.md.j2",
    "weekly-issue": "weekly_issue.md.j2",
    "job-summary": "job_summary.md.j2",
    "markdown": "report.md.j2",
    "text": "report.txt.j2",
}


def _render_template(fmt: Format, view: View, context: ReportContext, cap: int | None) -> str:
    from opdrift.render.jinja import render_template, squeeze

    markdown = fmt != "text"
    d = view.drift
    by_tier = caps(view, cap)
    bucket_cap = by_tier["bucket"]
    # The context goes whole as `ctx`; the rest is what this render derives: the view, its caps and labels.
    text = render_template(
        _TEMPLATES[fmt],
        "md" if markdown else "text",
        ctx=context,
        marker=marker_for(fmt, context.marker),
        d=d,
        view=view,
        cap=bucket_cap,
        lead_cap=by_tier["lead"],
        kernel_cap=by_tier["kernel"],
        max_details=MAX_DETAILS if cap is not None else UNCAPPED,
        base_label=source_label(d.base),
        head_label=source_label(d.head),
        h=Helpers(context, markdown),
        # the weekly issue of a backend's repository leads with its backends' gaps (templates/_lead.md.j2)
        lead=fmt == "weekly-issue" and bool(context.backends) and not d.is_empty,
        truncated=truncated(view, cap, len(context.warnings)),
        version=Safe(__version__),
        gap_cap=min(bucket_cap, MAX_GAP_OPS),
        warning_cap=MAX_WARNINGS if cap is not None else UNCAPPED,
    )
    return squeeze(text)


def render(drift: Drift, fmt: Format, *, context: ReportContext) -> str:
    """Render `drift` in `fmt`. Bodies for GitHub are capped to the limit; text, markdown, json are complete."""
    if fmt == "json":
        return render_json(drift, context)
    if fmt not in _TEMPLATES:
        raise ValueError(f"unknown format {fmt!r}")
    view = build_view(drift, context.acknowledgements)
    limit = context.limit if context.limit is not None else LIMITS[fmt]
    full = _render_template(fmt, view, context, None)
    if limit is None or len(full) <= limit:
        return full
    best = largest_fitting(view, limit, lambda cap: _render_template(fmt, view, context, cap))
    if best is not None:
        return best
    return fallback(marker_for(fmt, context.marker), view, limit)
