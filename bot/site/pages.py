"""The pages, each a pure function of the `Site`: index, one per base operator, coverage, growth.

Every value from a source is passed to the builder as a plain `str` (escaped there); the only
`Markup` here is structure this module writes, and sentences from `render.details` whose source
parts went through `_quote`.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.dispatchkeys import SHORT_NAMES
from bot.render.details import describe, describe_kernel
from bot.schema.codes import Code
from bot.site.export import index_json
from bot.site.growth import GROUPS, chart
from bot.site.html import Markup, el, escape, join, json_block, page
from bot.site.model import Cell, Event, Growth, OpPage, Overload, Site
from bot.taxonomy.buckets import BUCKETS, LABELS
from bot.work.engine import TRAINING_ONLY

PROFILES = ("eager", "functional", "export")
# The index's column is narrow; the operator page spells the kinds out.
SHORT_COMPOSITE = SHORT_NAMES


def _quote(text: str) -> str:
    return f"<code>{escape(text)}</code>"


def _label(bucket: str) -> str:
    return LABELS.get(bucket, bucket)


def _codes(values: Iterable[str]) -> Markup:
    return join([(el("code", {}, v), " ") for v in values])


def _generated(site: Site) -> str:
    labels = [r.label for r in site.releases]
    return labels[0] if len(labels) == 1 else f"{labels[0]} … {labels[-1]} ({len(labels)} sources)"


def _options(element_id: str, label: str, values: Iterable[tuple[str, str]]) -> Markup:
    return el(
        "label",
        {},
        label,
        " ",
        el(
            "select",
            {"id": element_id},
            el("option", {"value": ""}, "any"),
            [el("option", {"value": v}, t) for v, t in values],
        ),
    )


def _coverage_cell(covered: int, total: int) -> Markup:
    if total == 0:  # every overload training-only for an export backend: nothing to serve
        return el("td", {"class": "cov na", "title": "training-only: never in an inference graph"}, "n/a")
    state = "full" if covered == total else "none" if covered == 0 else "part"
    return el(
        "td",
        {"class": f"cov {state}", "title": f"{covered} of {total} overloads covered"},
        f"{covered}/{total}",
    )


def index_page(site: Site) -> str:
    ops = site.ops
    tags = sorted({t for op in ops for t in op.tags})
    keys = sorted({k for op in ops for k in op.keys})
    filters = el(
        "form",
        {"class": "filters", "id": "filters"},
        el(
            "label",
            {},
            "Search ",
            el("input", {"type": "search", "id": "q", "placeholder": "name, e.g. conv", "autofocus": True}),
        ),
        _options("bucket", "Bucket", [(b, _label(b)) for b in BUCKETS if any(op.bucket == b for op in ops)]),
        _options("tag", "Tag", [(t, t) for t in tags]),
        _options("key", "Dispatch key", [(k, k) for k in keys]),
        _options("profile", "Must write a kernel", [(p, p) for p in PROFILES]),
        _options("backend", "Backend", [(b.name, b.name) for b in site.backends]) if site.backends else None,
        el(
            "select",
            {"id": "state"},
            el("option", {"value": "missing"}, "misses some"),
            el("option", {"value": "covered"}, "covers all"),
        )
        if site.backends
        else None,
        el(
            "label",
            {},
            "Show ",
            el(
                "select",
                {"id": "status"},
                el("option", {"value": "present"}, f"in {site.now.label}"),
                el("option", {"value": "gone"}, "removed since"),
                el("option", {"value": "all"}, "all"),
            ),
        ),
    )
    head = el(
        "tr",
        {},
        el("th", {}, "operator"),
        el("th", {}, "bucket"),
        el("th", {}, "overloads"),
        el("th", {}, "tags"),
        el("th", {}, "composite"),
        el("th", {}, "kernels"),
        [el("th", {"class": "cov"}, b.name) for b in site.backends],
    )
    rows = []
    for i, op in enumerate(ops):
        rows.append(
            el(
                "tr",
                {"data-i": i, "hidden": not op.present},
                el("td", {}, el("a", {"href": f"ops/{op.file}.html"}, op.name)),
                el("td", {}, _label(op.bucket)),
                el("td", {"class": "num"}, len(op.overloads)),
                el("td", {}, ", ".join(op.tags)),
                el("td", {}, ", ".join(SHORT_COMPOSITE.get(c, c) for c in op.composites)),
                el("td", {}, ", ".join(op.keys)),
                [_coverage_cell(s.covered, s.total) for s in op.coverage]
                if op.present
                else [el("td", {}, "") for _ in site.backends],
            )
        )
    present = sum(1 for op in ops if op.present)
    body = join(
        el("h1", {}, f"ATen operators in {site.now.label}"),
        el(
            "p",
            {},
            f"{present} base operators ({site.registered} registered) in {site.now.label}; ",
            el("a", {"href": "data/ops.json"}, "data/ops.json"),
            " has this table as JSON.",
        ),
        filters,
        el("p", {"class": "count"}, el("span", {"id": "shown"}, present), " shown"),
        el("table", {"id": "ops", "class": "ops"}, el("thead", {}, head), el("tbody", {}, rows)),
        json_block("ops-data", index_json(site)),
    )
    return page(f"ATen operators in {site.now.label}", body, root="", script=True, generated=_generated(site))


def _facets(o: Overload) -> Markup:
    """The facets on two lines: a maintainer scans many overloads, so no table per overload."""
    f = o.facets
    flags = [
        o.kind,
        f"composite: {f.composite}" if f.composite else "kernels of its own",
        "structured" if f.structured else None,
        f"structured_delegate: {f.structured_delegate}" if f.structured_delegate else None,
        f"python_module: {f.python_module}" if f.python_module else None,
        f"alias of {f.alias_of}" if f.alias_of else None,
        {True: "autograd formula", False: "no autograd formula", None: None}[f.has_derivative],
        "generated by autogen" if f.autogen else None,
        "foreach" if f.foreach else None,
    ]
    return el(
        "div",
        {"class": "facets"},
        el("p", {}, " · ".join(x for x in flags if x)),
        el(
            "p",
            {},
            "dispatch: ",
            _codes(f.dispatch) if f.dispatch else "none",
            " · tags: ",
            _codes(f.tags) if f.tags else "none",
            " · must write a kernel: ",
            ", ".join(o.profiles) or "no profile",
        ),
    )


def _schemas(overloads: tuple[Overload, ...]) -> Markup:
    """Every overload's schema at a glance; the facets follow further down, one section each."""
    return el(
        "table",
        {"class": "schemas"},
        el(
            "tbody",
            {},
            [
                el(
                    "tr",
                    {},
                    el("td", {}, el("a", {"href": f"#{o.overload or 'default'}"}, o.overload or "(default)")),
                    el("td", {}, el("code", {"class": "schema"}, o.schema)),
                    el("td", {}, o.kind),
                    el("td", {}, el("a", {"href": o.url}, f"line {o.line}") if o.url else f"line {o.line}"),
                )
                for o in overloads
            ],
        ),
    )


def _overload_section(o: Overload) -> Markup:
    line = el("a", {"href": o.url}, f"native_functions.yaml line {o.line}") if o.url else f"line {o.line}"
    return el(
        "section",
        {"class": "overload", "id": o.overload or "default"},
        el("h3", {}, el("code", {}, o.name)),
        el("pre", {"class": "schema"}, o.schema),
        _facets(o),
        el("p", {}, line),
    )


# A verdict's words where the value alone would puzzle: "symint" breaks only kernels written with
# c10::SymInt (bot.schema.kernel), so the page says which form.
_VERDICT_WORDS = {"symint": "SymInt form only"}


def _verdict(value: str) -> Markup:
    if not value or value == "none":
        return join("—")
    return el("span", {"class": f"verdict {value}"}, _VERDICT_WORDS.get(value, value))


# Kernel keys and tags gained or lost have their own lines in a history row.
_SHOWN_APART = frozenset(c.id for c in Code if c.row.apart)


def _commit_cell(e: Event) -> Markup:
    c = e.commit
    if c is None:
        return el("td", {}, "")
    return el(
        "td",
        {"class": "commit"},
        el("a", {"href": c.commit_url, "title": c.subject}, c.sha[:10]),
        join(" ", el("a", {"href": c.pr_url}, f"PR {c.pr}")) if c.pr_url else None,
        el("div", {"class": "subject"}, c.subject),
    )


def _commits(op: OpPage) -> Markup:
    return el(
        "table",
        {"class": "commits"},
        el(
            "thead",
            {},
            el("tr", {}, [el("th", {}, h) for h in ("date", "commit", "pull request", "subject")]),
        ),
        el(
            "tbody",
            {},
            [
                el(
                    "tr",
                    {},
                    el("td", {}, c.date[:10]),
                    el("td", {}, el("a", {"href": c.url}, c.sha[:10]), f" ({c.tag})" if c.tag else ""),
                    el("td", {}, el("a", {"href": c.pr_url}, f"#{c.pr}") if c.pr_url else ""),
                    el("td", {}, c.subject),
                )
                for c in op.commits
            ],
        ),
    )


def _event_row(e: Event, history: bool = False) -> Markup:
    what: list[object] = [Markup(describe(d, _quote)) for d in e.details if d.code not in _SHOWN_APART]
    if e.kernel_changes:
        what.append(Markup("C++ signature: " + describe_kernel(e.kernel_changes, _quote)))
    if e.kind == "renamed":
        what.insert(0, join("renamed from ", el("code", {}, e.old_name)))
    gained_lost = [
        join("kernel keys gained: ", _codes(e.keys_gained)) if e.keys_gained else None,
        join("kernel keys lost: ", _codes(e.keys_lost)) if e.keys_lost else None,
        join("tags gained: ", _codes(e.tags_gained)) if e.tags_gained else None,
        join("tags lost: ", _codes(e.tags_lost)) if e.tags_lost else None,
    ]
    return el(
        "tr",
        {"class": e.kind},
        el("td", {}, e.release),
        el("td", {}, el("code", {}, e.name)),
        el("td", {}, e.kind),
        el("td", {}, _verdict(e.callers)),
        el("td", {}, _verdict(e.kernel)),
        el("td", {}, el("ul", {}, [el("li", {}, w) for w in (*what, *gained_lost) if w is not None])),
        el("td", {}, el("a", {"href": e.url}, "yaml") if e.url else ""),
        _commit_cell(e) if history else None,
    )


# How a coverage rule reads in a cell, where it needs more than its name: `backend_codegen` is decided
# only for the functional and export profiles (`bot.work.engine`), where functionalization turns the
# out= or in-place call into its functional op (`via`); it is no codegen of the backend's own.
_RULE_WORDS = {"backend_codegen": "functionalized into {via}"}


def _mark(cell: Cell) -> str:
    return "✓ " if cell.covered else "· " if cell.rule == TRAINING_ONLY else "✗ "


def _rule_words(rule: str, via: str) -> str:
    words = _RULE_WORDS.get(rule)
    if words is not None and via:
        return words.format(via=via)
    return rule.replace("_", " ") + (f" ({via})" if via else "")


def op_page(site: Site, op: OpPage) -> str:
    # An op of the first SOURCE may be older: the site cannot say when it came.
    first = (
        "Present in the first release shown, "
        if op.first_release == site.releases[0].label
        else "First seen in "
    )
    life = [
        el(
            "p",
            {},
            first,
            el("strong", {}, op.first_release),
            "" if op.present else f"; last seen in {op.last_release}",
            ".",
        ),
    ]
    if op.events:
        life.append(
            el(
                "table",
                {"class": "life"},
                el(
                    "thead",
                    {},
                    el(
                        "tr",
                        {},
                        [
                            el("th", {}, h)
                            for h in ("release", "operator", "change", "callers", "kernels", "what", "")
                        ],
                        el("th", {}, "commit") if site.history else None,
                    ),
                ),
                el("tbody", {}, [_event_row(e, site.history) for e in op.events]),
            )
        )
    else:
        life.append(el("p", {}, f"No change across the {len(site.releases)} sources."))
    coverage: list[Markup] = []
    if op.present and site.backends:
        coverage.append(
            el(
                "table",
                {"class": "opcov"},
                el(
                    "thead",
                    {},
                    el("tr", {}, el("th", {}, "overload"), [el("th", {}, b.name) for b in site.backends]),
                ),
                el(
                    "tbody",
                    {},
                    [
                        el(
                            "tr",
                            {},
                            el("td", {}, el("code", {}, o.name)),
                            [
                                el(
                                    "td",
                                    {
                                        "class": "cov full"
                                        if c.covered
                                        else "cov na"
                                        if c.rule == TRAINING_ONLY
                                        else "cov none"
                                    },
                                    _mark(c) + _rule_words(c.rule, c.via),
                                )
                                for c in o.coverage
                            ],
                        )
                        for o in op.overloads
                    ],
                ),
            )
        )
    elif not op.present:
        coverage.append(el("p", {}, f"Not in {site.now.label}."))
    else:
        coverage.append(el("p", {}, "No backend was given (--backend)."))
    body = join(
        el("p", {"class": "crumbs"}, el("a", {"href": "../index.html"}, "all operators")),
        el("h1", {}, el("code", {}, op.name)),
        el(
            "p",
            {"class": "bucket"},
            "Bucket ",
            el("strong", {}, _label(op.bucket)),
            " by rule ",
            el("code", {}, op.rule),
            ": ",
            op.reason,
        ),
        el("p", {}, el("a", {"href": f"../data/ops/{op.file}.json"}, "this page as JSON")),
        el("h2", {}, f"Overloads ({len(op.overloads)}, as of {op.last_release})"),
        _schemas(op.overloads),
        el("h2", {"id": "history"}, "History"),
        life,
        [el("h2", {"id": "commits"}, f"Commits that touched it ({len(op.commits)})"), _commits(op)]
        if op.commits
        else None,
        el("h2", {"id": "coverage"}, "Coverage"),
        coverage,
        el("h2", {"id": "facets"}, "Facets of each overload"),
        [_overload_section(o) for o in op.overloads],
    )
    return page(f"{op.name} — ATen operator", body, root="../", generated=_generated(site))


def _core_first(op: OpPage) -> tuple[int, str]:
    rank = 0 if "core" in op.tags else 2 if op.name.startswith("_") else 1
    return rank, op.name


def coverage_page(site: Site) -> str:
    if not site.backends:
        body = join(el("h1", {}, "Coverage"), el("p", {}, "The site was built without --backend."))
        return page("Coverage", body, root="", generated=_generated(site))
    gaps = {(g.bucket, g.backend): g for g in site.gaps}
    summary = el(
        "table",
        {"class": "gaps", "id": "gaps"},
        el(
            "thead",
            {},
            el(
                "tr",
                {},
                el("th", {}, "bucket"),
                [el("th", {}, f"{b.name} ({b.kind}, {b.profile})") for b in site.backends],
            ),
        ),
        el(
            "tbody",
            {},
            [
                el(
                    "tr",
                    {"data-bucket": bucket},
                    el("td", {}, _label(bucket)),
                    [
                        el(
                            "td",
                            {"class": "num", "data-backend": b.name},
                            f"{g.missing} of {g.total}" if g else "—",
                        )
                        for b in site.backends
                        for g in [gaps.get((bucket, b.name))]
                    ],
                )
                for bucket in BUCKETS
                if any((bucket, b.name) in gaps for b in site.backends)
            ],
            el(
                "tr",
                {"class": "total", "data-bucket": "all"},
                el("td", {}, "all buckets"),
                [
                    el(
                        "td",
                        {"class": "num", "data-backend": b.name},
                        f"{sum(g.missing for g in site.gaps if g.backend == b.name)} of "
                        f"{sum(g.total for g in site.gaps if g.backend == b.name)}",
                    )
                    for b in site.backends
                ],
            ),
        ),
    )
    present = sorted((op for op in site.ops if op.present), key=_core_first)
    matrix = el(
        "table",
        {"class": "matrix", "id": "matrix"},
        el(
            "thead",
            {},
            el(
                "tr",
                {},
                el("th", {}, "operator"),
                el("th", {}, "bucket"),
                [el("th", {}, b.name) for b in site.backends],
            ),
        ),
        el(
            "tbody",
            {},
            [
                el(
                    "tr",
                    {"class": "core" if "core" in op.tags else None},
                    el("td", {}, el("a", {"href": f"ops/{op.file}.html"}, op.name)),
                    el("td", {}, _label(op.bucket)),
                    [_coverage_cell(s.covered, s.total) for s in op.coverage],
                )
                for op in present
            ],
        ),
    )
    body = join(
        el("h1", {}, f"Coverage of {site.now.label}"),
        el(
            "p",
            {},
            "Registered operators each backend must still write a kernel for (missing of all), per bucket. "
            "An operator PyTorch decomposes or gives a default kernel for counts as covered, as in opdrift coverage.",
        ),
        summary,
        el(
            "h2",
            {},
            "Every base operator: Core ATen IR first, then public, then private; covered overloads of all",
        ),
        matrix,
    )
    return page(f"Coverage of {site.now.label}", body, root="", generated=_generated(site))


def growth_page(site: Site) -> str:
    points = site.growth
    groups = [g for g, _ in GROUPS]

    def group_value(counts: tuple[tuple[str, int], ...], members: tuple[str, ...]) -> int:
        found = dict(counts)
        return sum(found.get(b, 0) for b in members)

    table = el(
        "table",
        {"class": "growth"},
        el(
            "thead",
            {},
            el(
                "tr",
                {},
                el("th", {}, "source"),
                [el("th", {}, _label(g)) for g in groups],
                el("th", {}, "total"),
            ),
        ),
        el(
            "tbody",
            {},
            [
                el(
                    "tr",
                    {"class": "seed" if p.seed else None},
                    el("td", {}, p.label),
                    [el("td", {"class": "num"}, group_value(p.counts, members)) for _, members in GROUPS],
                    el("td", {"class": "num"}, sum(n for _, n in p.counts)),
                )
                for p in points
            ],
        ),
    )
    body = join(
        el("h1", {}, "Where the operators come from, over time"),
        _growth_summary(points),
        el(
            "p",
            {},
            "Base operators per bucket in each source. The first bar is the 2021 post's own count "
            "(PyTorch master between 1.9 and 1.10), for comparison with the classifier's.",
        ),
        chart(points),
        table,
    )
    return page("Growth of the ATen operator surface", body, root="", generated=_generated(site))


def _growth_summary(points: tuple[Growth, ...]) -> Markup | None:
    """One sentence: how many base operators the releases added, and which buckets they went to."""
    releases = [p for p in points if not p.seed]
    if len(releases) < 2:
        return None
    first, last = dict(releases[0].counts), dict(releases[-1].counts)
    grown = sorted(((last.get(b, 0) - first.get(b, 0), b) for b in BUCKETS), reverse=True)
    top = [f"{_label(b)} {delta:+d}" for delta, b in grown[:3] if delta > 0]
    total = sum(last.values()) - sum(first.values())
    return el(
        "p",
        {"class": "summary"},
        f"From {releases[0].label} to {releases[-1].label}: {total:+d} base operators in all",
        f"; the buckets that grew most: {', '.join(top)}." if top else ".",
    )
