"""The index and the page of each base operator, each a pure function of the `Site` (the coverage
page is in `coverage_page`, the growth page in `growth`).

Every value from a source is passed to the builder as a plain `str` (escaped there); the only
`Markup` here is structure this module writes, and sentences from `render.details` whose source
parts went through `parts.quote`.
"""

from __future__ import annotations

from collections.abc import Iterable

from opdrift.dispatchkeys import SHORT_NAMES
from opdrift.render.details import describe, describe_kernel
from opdrift.schema.codes import Code
from opdrift.site.export import index_json
from opdrift.site.html import Markup, el, join, json_block, page
from opdrift.site.model import Cell, Event, OpPage, Overload, Site
from opdrift.site.parts import PATH_WORDS, codes, coverage_cell, generated, label, models_cell, quote
from opdrift.taxonomy.buckets import BUCKETS
from opdrift.work.engine import TRAINING_ONLY, VERIFIER_REJECTS
from opdrift.work.rules import words

PROFILES = ("eager", "functional", "export")
# The index's column is narrow; the operator page spells the kinds out.
SHORT_COMPOSITE = SHORT_NAMES
# How many models a path's row names on an operator page; the JSON names them all.
MODEL_NAMES = 8


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


def _sortable(key: str, text: str, css: str | None = None, first: str = "desc") -> Markup:
    """A header the site's script sorts the table by (`data-sort`: the index row's key; `data-first`:
    the direction of the first click, most first for a count)."""
    return el(
        "th",
        {"class": css, "data-sort": key, "data-first": first},
        el("button", {"type": "button", "class": "sort"}, text),
    )


def _models_note(site: Site) -> Markup | None:
    m = site.models
    if m is None:
        return None
    return join(
        f" The models column counts the models of opdrift's corpus (of {m.of}) that dispatch an operator "
        f"on any path, by the table of torch {m.release}",
        f" ({m.caveat})" if m.caveat else "",
        "; “new”: no model data yet, the operator is newer than the table.",
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
        _options("bucket", "Bucket", [(b, label(b)) for b in BUCKETS if any(op.bucket == b for op in ops)]),
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
        _sortable("n", "operator", first="asc"),
        el("th", {}, "bucket"),
        _sortable("o", "overloads"),
        _sortable("m", "models", "models") if site.models is not None else None,
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
                el("td", {}, label(op.bucket)),
                el("td", {"class": "num"}, len(op.overloads)),
                models_cell(op.models, site.models.release) if site.models is not None else None,
                el("td", {}, ", ".join(op.tags)),
                el("td", {}, ", ".join(SHORT_COMPOSITE.get(c, c) for c in op.composites)),
                el("td", {}, ", ".join(op.keys)),
                [coverage_cell(s.covered, s.total) for s in op.coverage]
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
            _models_note(site),
        ),
        filters,
        el("p", {"class": "count"}, el("span", {"id": "shown"}, present), " shown"),
        el("table", {"id": "ops", "class": "ops"}, el("thead", {}, head), el("tbody", {}, rows)),
        json_block("ops-data", index_json(site)),
    )
    return page(f"ATen operators in {site.now.label}", body, root="", script=True, generated=generated(site))


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
            codes(f.dispatch) if f.dispatch else "none",
            " · tags: ",
            codes(f.tags) if f.tags else "none",
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
# c10::SymInt (opdrift.schema.kernel), so the page says which form.
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
    what: list[object] = [Markup(describe(d, quote)) for d in e.details if d.code not in _SHOWN_APART]
    if e.kernel_changes:
        what.append(Markup("C++ signature: " + describe_kernel(e.kernel_changes, quote)))
    if e.kind == "renamed":
        what.insert(0, join("renamed from ", el("code", {}, e.old_name)))
    gained_lost = [
        join("kernel keys gained: ", codes(e.keys_gained)) if e.keys_gained else None,
        join("kernel keys lost: ", codes(e.keys_lost)) if e.keys_lost else None,
        join("tags gained: ", codes(e.tags_gained)) if e.tags_gained else None,
        join("tags lost: ", codes(e.tags_lost)) if e.tags_lost else None,
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


def _mark(cell: Cell) -> str:
    return "✓ " if cell.covered else "· " if cell.rule in (TRAINING_ONLY, VERIFIER_REJECTS) else "✗ "


def _used_by(used: int, of: int, no_data_yet: bool, release: str) -> str:
    if no_data_yet:
        return f"no model data yet (newer than torch {release})"
    return f"used by {used} of {of} models" if used else f"used by none of {of} models"


def _models(site: Site, op: OpPage) -> Markup:
    """Which models of the corpus dispatch the operator, per path (`opdrift.usage.models`)."""
    source, m = site.models, op.models
    if source is None:
        return el("p", {}, "No model table answers for this release.")
    if m is None:
        return el("p", {}, f"Not in {site.now.label}.")
    rows = [
        el(
            "tr",
            {"data-path": p.path},
            el("td", {}, PATH_WORDS.get(p.path, p.path)),
            el("td", {}, _used_by(p.used_by, p.of, p.no_data_yet, source.release)),
            el(
                "td",
                {},
                ", ".join(p.names[:MODEL_NAMES]),
                f", and {len(p.names) - MODEL_NAMES} more" if len(p.names) > MODEL_NAMES else "",
            ),
            el("td", {}, join([(el("code", {}, n), f" ({k}) ") for n, k in p.overloads])),
        )
        for p in m.paths
    ]
    return join(
        el(
            "p",
            {"class": "models"},
            _used_by(m.used_by, m.of, m.no_data_yet, source.release).capitalize(),
            " of opdrift's corpus on any path, by the table of torch ",
            source.release,
            f" ({source.caveat})" if source.caveat else "",
            ".",
        ),
        el(
            "table",
            {"class": "models"},
            el(
                "thead",
                {},
                el("tr", {}, [el("th", {}, h) for h in ("path", "used by", "models", "overloads (models)")]),
            ),
            el("tbody", {}, rows),
        ),
    )


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
                                        if c.rule in (TRAINING_ONLY, VERIFIER_REJECTS)
                                        else "cov none"
                                    },
                                    _mark(c) + words(c.rule, c.via, c.profile),
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
            el("strong", {}, label(op.bucket)),
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
        el("h2", {"id": "models"}, "Models that run it"),
        _models(site, op),
        el("h2", {"id": "coverage"}, "Coverage"),
        coverage,
        el("h2", {"id": "facets"}, "Facets of each overload"),
        [_overload_section(o) for o in op.overloads],
    )
    return page(f"{op.name} — ATen operator", body, root="../", generated=generated(site))
