"""A history timeline shown: Markdown with a Mermaid chart (templates), CSV, and the chart alone for
the weekly issue. Its JSON form is the lossless one shards exchange, `opdrift.history.timeline.render_json`.

The Markdown (``timeline.md.j2``) and the chart (``chart.md.j2``) are built from small views
(`TimelineView`, `ChartView`); the chart's labels and title are sanitised to the characters Mermaid
takes before they reach a template. CSV goes through the csv module.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass

from opdrift.errors import OpdriftError
from opdrift.history.timeline import Point, Timeline, render_json
from opdrift.taxonomy.buckets import TOP_BUCKETS
from opdrift.text import Safe, code

# The chart's series besides registered operators: the post's top-level buckets, with the core
# sub-buckets summed, since twenty lines on one small chart would be unreadable.
CORE_PARENT = "core"
TOP_LEVEL = frozenset(TOP_BUCKETS)
CHART_SERIES = ("operators", "core", "private", "inplace", "backward", "weird")
# One colour per series, in CHART_SERIES order; xychart-beta has no legend, so the caption names them.
CHART_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
COLOR_NAMES = ("blue", "red", "green", "orange", "purple", "brown")
# Mermaid draws every point; beyond this many, the chart samples evenly (first and last always kept).
CHART_MAX_POINTS = 100

CSV_FIXED = (
    "index",
    "sha",
    "date",
    "subject",
    "tag",
    "status",
    "error",
    "entries",
    "operators",
    "base_operators",
    "drift_base",
    "added",
    "removed",
    "renamed",
    "changed",
    "breaking",
    "needs_kernel",
)


# --- CSV ---------------------------------------------------------------------------------------


def _inert(text: str) -> str:
    """A commit subject or tag as a CSV cell a spreadsheet shows as text: one starting with ``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return would be run as a formula (CSV injection), so it
    gets a leading ``'``, as OWASP advises."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def render_csv(t: Timeline) -> str:
    """One row per point; fixed columns, then one ``bucket:<id>`` column per bucket (base operators).

    Drift columns hold counts; the names are in the JSON output.
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*CSV_FIXED, *(f"bucket:{b}" for b in t.buckets)])
    for i, p in enumerate(t.points):
        d = p.drift

        def n(v: int | None) -> str:
            return "" if v is None else str(v)

        row = [
            str(i),
            p.sha,
            p.date,
            _inert(p.subject),
            _inert(p.tag or ""),
            "broken" if p.broken else "ok",
            p.error or "",
            n(p.entries),
            n(p.operators),
            n(p.base_operators),
            "" if d is None else d.base,
            *(
                ("",) * 6
                if d is None
                else (
                    str(len(x))
                    for x in (d.added, d.removed, d.renamed, d.changed, d.breaking, d.needs_kernel)
                )
            ),
        ]
        cats = dict(p.by_category) if p.by_category is not None else None
        row.extend("" if cats is None else str(cats.get(b, 0)) for b in t.buckets)
        w.writerow(row)
    return buf.getvalue()


# --- Markdown and Mermaid ----------------------------------------------------------------------


def series_value(p: Point, series: str) -> int:
    """A chart series' value at P: registered operators, a top-level bucket, or core (the rest summed)."""
    if series == "operators":
        return p.operators or 0
    cats = dict(p.by_category or ())
    if series == CORE_PARENT:
        return sum(n for b, n in cats.items() if b not in TOP_LEVEL)
    return cats.get(series, 0)


def _sample(points: Sequence[Point], limit: int) -> list[Point]:
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    picked = sorted({round(i * step) for i in range(limit)})
    return [points[i] for i in picked]


_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9._+/-]")


def point_label(p: Point) -> str:
    """An x-axis label: the tag when there is one, else the short sha; only characters Mermaid takes."""
    raw = p.tag if p.tag else p.sha[:7]
    return _LABEL_UNSAFE.sub("_", raw)[:24]


@dataclass(frozen=True)
class ChartView:
    """A Mermaid ``xychart-beta``: every string already reduced to the characters Mermaid takes."""

    title: Safe
    labels: tuple[Safe, ...]
    series: tuple[tuple[int, ...], ...]  # one line per CHART_SERIES entry
    top: int  # the y axis' end
    palette: Safe
    kinds: tuple[str, ...] = ()  # "line" or "bar" per series; all lines when empty
    bottom: int = 0  # the y axis' start


def chart_view(points: Sequence[Point], *, title: str = "ATen operators over time") -> ChartView | None:
    """The chart of registered operators and the main buckets; None when no point has counts.

    Broken points are left out (they have no counts).
    """
    good = [p for p in points if not p.broken]
    if not good:
        return None
    good = _sample(good, CHART_MAX_POINTS)
    values = [tuple(series_value(p, s) for p in good) for s in CHART_SERIES]
    top = max(max(v) for v in values)
    return ChartView(
        title=Safe(_LABEL_UNSAFE.sub(" ", title).strip()),
        labels=tuple(Safe(point_label(p)) for p in good),
        series=tuple(values),
        top=max(10, -(-top * 11 // 10)),
        palette=Safe(", ".join(CHART_COLORS)),
    )


def mermaid_chart(points: Sequence[Point], *, title: str = "ATen operators over time") -> str:
    """A Mermaid ``xychart-beta`` block (fenced) of registered operators and the main buckets.

    Broken points are left out (they have no counts). An empty sequence gives an empty string.
    """
    view = chart_view(points, title=title)
    if view is None:
        return ""
    from opdrift.render.jinja import render_template

    return render_template("chart.md.j2", "md", chart=view)


def chart_legend() -> str:
    names = {"operators": "registered operators", "core": "core (all core sub-buckets)"}
    parts = [f"{c}: {names.get(s, s)}" for s, c in zip(CHART_SERIES, COLOR_NAMES, strict=True)]
    return "Lines — " + "; ".join(parts) + "."


# Below this many commits with a drift, a chart shows nothing a table would not say better.
MIN_CHART_POINTS = 3


def _short_label(p: Point) -> str:
    """The tag, else the commit's date (MM-DD) and short sha, else the short sha."""
    if p.tag:
        return point_label(p)
    raw = f"{p.date[5:10]} {p.sha[:7]}" if len(p.date) >= 10 else p.sha[:7]
    return _LABEL_UNSAFE.sub("_", raw.replace(" ", "_"))[:24]


def chart_of_last(t: Timeline, n: int, *, title: str | None = None) -> str:
    """What moved over the last N points, for the weekly issue to embed ('' if none): operators added
    (bars) and removed (line) per commit, on a y axis fitted to them. The registered total hardly moves
    in a week, so a line of it would be flat; with fewer than MIN_CHART_POINTS commits that changed
    anything, a small table says it instead."""
    good = [p for p in (t.points[-n:] if n > 0 else ()) if not p.broken and p.drift is not None]
    if not good:
        return ""
    good = _sample(good, CHART_MAX_POINTS)
    added = tuple(len(p.drift.added) + len(p.drift.renamed) for p in good if p.drift is not None)
    removed = tuple(len(p.drift.removed) + len(p.drift.renamed) for p in good if p.drift is not None)
    moved = [i for i, (a, r) in enumerate(zip(added, removed, strict=True)) if a or r]
    if len(moved) < MIN_CHART_POINTS:
        if not moved:
            return f"No operator was added or removed in the last {len(good)} commits.\n"
        rows = "".join(f"| `{_short_label(good[i])}` | {added[i]} | {removed[i]} |\n" for i in moved)
        return f"| commit | operators added | removed |\n|---|--:|--:|\n{rows}"
    shown = title or f"Operators added (bars) and removed (line) per commit, last {len(good)} commits"
    view = ChartView(
        title=Safe(_LABEL_UNSAFE.sub(" ", shown).strip()),
        labels=tuple(Safe(_short_label(p)) for p in good),
        series=(added, removed),
        top=max(2, max(*added, *removed) + 1),
        palette=Safe(", ".join(CHART_COLORS[:2])),
        kinds=("bar", "line"),
    )
    from opdrift.render.jinja import render_template

    chart = render_template("chart.md.j2", "md", chart=view)
    legend = (
        "Bars: operators added (or renamed in) by each commit; line: operators removed (or renamed away)."
    )
    return f"{chart}\n{legend}\n"


@dataclass(frozen=True)
class TimelineRow:
    index: int
    ref: Safe  # the tag and short sha as code spans
    date: str
    subject: str
    error: str | None  # set on a broken point
    operators: int | None
    base_operators: int | None
    counts: tuple[Safe, ...]  # added, removed, renamed, changed, breaking, needs kernel ("-": no drift)


@dataclass(frozen=True)
class TimelineView:
    repo: str
    points: int
    broken: int
    what: Safe  # which points: release tags matching a pattern, or the commits that touched the files
    range: str
    sampled: int | None  # the good points when the chart samples CHART_MAX_POINTS of them, else None
    chart: Safe  # the fenced chart, or "" when no point has counts
    legend: Safe
    rows: tuple[TimelineRow, ...]


def _row(i: int, p: Point) -> TimelineRow:
    ref = code(p.tag, in_table=True) + " " + code(p.sha[:12]) if p.tag else code(p.sha[:12])
    d = p.drift
    counts = (
        (Safe("-"),) * 6
        if d is None
        else tuple(
            Safe(str(len(x))) for x in (d.added, d.removed, d.renamed, d.changed, d.breaking, d.needs_kernel)
        )
    )
    return TimelineRow(
        index=i,
        ref=Safe(ref),
        date=p.date,
        subject=p.subject,
        error=(p.error or "") if p.broken else None,
        operators=p.operators,
        base_operators=p.base_operators,
        counts=counts,
    )


def timeline_view(t: Timeline) -> TimelineView:
    good = [p for p in t.points if not p.broken]
    what = f"release tags matching {code(t.tags)}" if t.tags else "commits that touched the operator files"
    return TimelineView(
        repo=t.repo,
        points=len(t.points),
        broken=len(t.points) - len(good),
        what=Safe(what),
        range=f"{t.from_sha[:12]}..{t.to_sha[:12]}" if t.from_sha else f"up to {t.to_sha[:12]}",
        sampled=len(good) if len(good) > CHART_MAX_POINTS else None,
        chart=Safe(mermaid_chart(t.points)),
        legend=Safe(chart_legend()),
        rows=tuple(_row(i, p) for i, p in enumerate(t.points)),
    )


def render_markdown(t: Timeline) -> str:
    """A heading, the chart and one table row per point (broken points say why)."""
    from opdrift.render.jinja import render_template

    return render_template("timeline.md.j2", "md", view=timeline_view(t), max_points=CHART_MAX_POINTS)


def render(t: Timeline, fmt: str) -> str:
    if fmt == "json":
        return render_json(t)
    if fmt == "csv":
        return render_csv(t)
    if fmt == "markdown":
        return render_markdown(t)
    raise OpdriftError(f"unknown history format {fmt!r} (json, csv or markdown)")
