"""`opdrift stats`: one snapshot's `Stats` as text, Markdown (a template) or JSON.

`stats_view` orders and labels the figures once; the text table and the Markdown template
(``stats.md.j2``) both show that view, and the JSON is the figures themselves (`Stats.as_dict`). The
text is built in Python rather than through a template so that ``opdrift stats`` in text or JSON never
loads Jinja2: it is a quick look-up, and the import would be most of its start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from opdrift.dispatchkeys import CIA
from opdrift.taxonomy.buckets import BUCKETS, CORE_BUCKETS, LABELS, TOP_BUCKETS
from opdrift.taxonomy.stats import Stats
from opdrift.text import Safe, terminal


@dataclass(frozen=True)
class CategoryRow:
    """One row of the category table."""

    label: str
    count: int
    sub: bool = False  # a core sub-bucket, shown indented under "core"


@dataclass(frozen=True)
class StatsView:
    """What the stats table shows, as plain values for the renderer."""

    title: str  # the source, its torch version and commit (source-derived)
    levels: tuple[tuple[Safe, int], ...]  # our labels, in the post's order of counting
    categories: tuple[CategoryRow, ...]
    legend: tuple[tuple[Safe, Safe], ...] = ()  # (label, what the row counts)


def _title(stats: Stats) -> str:
    parts = [stats.source]
    if stats.torch_version:
        parts.append(f"torch {stats.torch_version}")
    if stats.commit:
        parts.append(stats.commit[:12])
    return " · ".join(parts)


# The rows of the level table: (label, Stats field, what it counts). The meanings are the legend of
# the text and Markdown outputs; `opdrift stats --help` and docs/buckets.md say the same for overloads.
LEVELS: tuple[tuple[str, str, str], ...] = (
    ("entries", "entries", "`- func:` items of native_functions.yaml"),
    ("registered operators", "operators", "entries plus the operators `autogen:` generates"),
    (
        "base operators",
        "base_operators",
        "names without the overload (`add.Tensor` is `add`; `relu_` is its own)",
    ),
    (
        "overloads",
        "overloads",
        "registered operators with an overload name (`add.Tensor`, `add.out`; not `relu`)",
    ),
    (
        "out overloads",
        "out_overloads",
        "overloads that write an out= argument (`.out`, `.grad_input`, `.values`...)",
    ),
    (
        "overloads named .out",
        "overloads_named_out",
        "overloads named exactly `out` (how the 2021 post counted)",
    ),
    ("operators beyond one per base", "extra_overloads", "registered operators minus base operators"),
    (
        CIA,
        "composite_implicit",
        "registered operators built from others, no kernel of their own",
    ),
    ("after removing composite", "non_composite", "registered operators minus those"),
    (
        "... and in-place/out variants",
        "non_composite_functional",
        "of those, the functional ones (in-place and out= variants removed too)",
    ),
    (
        "core with kernels of its own",
        "core_non_composite",
        "core base operators with an operator that is not CompositeImplicitAutograd",
    ),
    ("_foreach_ base operators", "foreach_base_operators", "base operators named `_foreach_*`"),
    ("autogen operators", "autogen_operators", "registered operators that `autogen:` generates"),
)


def _levels(stats: Stats) -> tuple[tuple[Safe, int], ...]:
    return tuple((Safe(label), int(getattr(stats, field))) for label, field, _ in LEVELS)


def _legend() -> tuple[tuple[Safe, Safe], ...]:
    return tuple((Safe(label), Safe(meaning)) for label, _, meaning in LEVELS)


def _categories(stats: Stats) -> tuple[CategoryRow, ...]:
    """The top buckets, then core with its sub-buckets indented."""
    rows = [CategoryRow(LABELS[b], stats.by_category[b]) for b in TOP_BUCKETS]
    rows.append(CategoryRow("core", stats.core))
    rows.extend(CategoryRow(LABELS[b], stats.by_category[b], sub=True) for b in CORE_BUCKETS)
    # A bucket this opdrift does not know (a hand-edited snapshot, or one from a newer opdrift) still
    # counts in base_operators, so it is shown too, or the rows would not add up.
    known = frozenset(BUCKETS)
    rows.extend(
        CategoryRow(f"{b} (unknown bucket)", n)
        for b, n in sorted(stats.by_category.items())
        if b not in known
    )
    return tuple(rows)


def stats_view(stats: Stats) -> StatsView:
    return StatsView(
        title=_title(stats), levels=_levels(stats), categories=_categories(stats), legend=_legend()
    )


def render_text(stats: Stats) -> str:
    view = stats_view(stats)
    lines = [view.title, ""]
    width = max(len(label) for label, _ in view.levels)
    lines.extend(f"{label:<{width}}  {value:>6}" for label, value in view.levels)
    lines += ["", "base operators by category"]
    for row in view.categories:
        indent = "  " if row.sub else ""
        lines.append(f"  {indent}{terminal(row.label):<{24 - len(indent)}}{row.count:>6}")
    lines += ["", "what each row counts"]
    lines.extend(f"  {label}: {meaning}" for label, meaning in view.legend)
    return "\n".join(lines) + "\n"


def render_markdown(stats: Stats) -> str:
    from opdrift.render.jinja import render_template

    return render_template("stats.md.j2", "md", view=stats_view(stats))


def render_json(stats: Stats) -> str:
    import json  # here: the text table, what most runs print, does not need it

    return json.dumps(stats.as_dict(), indent=2, sort_keys=True) + "\n"


RENDERERS: dict[str, Callable[[Stats], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
