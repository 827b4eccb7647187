"""The coverage page: registered operators missing per bucket and backend, each backend's first work
(the top of `opdrift coverage`'s ranked work items, with the models each serves), and the matrix."""

from __future__ import annotations

from opdrift.render.coverage import FIRST_STEPS
from opdrift.site.html import Markup, el, join, page
from opdrift.site.model import BackendWork, OpPage, Site
from opdrift.site.parts import coverage_cell, generated, label, path_words
from opdrift.taxonomy.buckets import BUCKETS


def _core_first(op: OpPage) -> tuple[int, str]:
    rank = 0 if "core" in op.tags else 2 if op.name.startswith("_") else 1
    return rank, op.name


def coverage_page(site: Site) -> str:
    if not site.backends:
        body = join(el("h1", {}, "Coverage"), el("p", {}, "The site was built without --backend."))
        return page("Coverage", body, root="", generated=generated(site))
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
                    el("td", {}, label(bucket)),
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
                    el("td", {}, label(op.bucket)),
                    [coverage_cell(s.covered, s.total) for s in op.coverage],
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
        _first_work(site),
        el(
            "h2",
            {},
            "Every base operator: Core ATen IR first, then public, then private; covered overloads of all",
        ),
        matrix,
    )
    return page(f"Coverage of {site.now.label}", body, root="", generated=generated(site))


def _work_list(site: Site, work: BackendWork) -> Markup:
    spec = next(b for b in site.backends if b.name == work.backend)
    heading = el("h3", {"id": f"work-{work.backend}"}, f"{work.backend} ({spec.kind}, {spec.profile})")
    if not work.rows:
        return join(heading, el("p", {}, "Nothing every backend needs is missing."))
    reach = f"; models on {path_words(work.paths)}" if work.paths else ""
    rows = []
    for row in work.rows:
        item = row.item
        rows.append(
            el(
                "li",
                {},
                el("a", {"href": f"ops/{row.file}.html"}, el("code", {}, item.name)),
                join(" serves ", ", ".join(item.members)) if item.members else None,
                el("span", {"class": "bucket"}, f" [{label(item.bucket)}]"),
                el("div", {"class": "reach"}, item.models_words) if item.models_words else None,
                el("div", {"class": "today"}, item.today_words) if item.today_words else None,
            )
        )
    return join(
        heading,
        _greedy(work),
        el("p", {}, f"The first {len(work.rows)} of {work.total} work items{reach}:"),
        el("ol", {"class": "work", "data-backend": work.backend}, rows),
    )


def _greedy(work: BackendWork) -> Markup | None:
    """`opdrift coverage`'s first work: the fewest items that let the most models run without fallback,
    step by step, each with the models it frees (the first FIRST_STEPS steps)."""
    fw = work.first
    if fw is None or not fw.steps:
        return None
    steps = fw.upto(FIRST_STEPS)
    written = sum(len(s.items) for s in steps)
    return join(
        el(
            "p",
            {"class": "first-work"},
            f"First work: write these {written} items, and {fw.start} → {steps[-1].runs} of {fw.of} "
            f"models run without fallback (every ATen op they dispatch on {path_words(work.paths)} covered):",
        ),
        el(
            "ol",
            {"class": "first-work", "data-backend": work.backend},
            [
                el(
                    "li",
                    {},
                    join(
                        *(
                            join(el("code", {}, n), ", " if k < len(s.items) - 1 else "")
                            for k, n in enumerate(s.items)
                        )
                    ),
                    f": {s.runs} of {fw.of} models (+{len(s.unblocks)}: {', '.join(s.unblocks)})",
                )
                for s in steps
            ],
        ),
    )


def _first_work(site: Site) -> Markup:
    """Each backend's top work items, as `opdrift coverage` ranks them: what breaks the most models of
    the corpus first, then what the most models use (`opdrift.render.rank.work_item_rank_key`)."""
    if not site.work:
        return join()
    models = site.models
    source = (
        f" Model counts from the corpus of torch {models.release}"
        + (f" ({models.caveat})" if models.caveat else "")
        + "."
        if models is not None
        else " No model table answers for this release."
    )
    return join(
        el("h2", {"id": "first-work"}, "What to write first"),
        el(
            "p",
            {},
            "Each backend's top work items as opdrift coverage ranks them (those every backend needs): "
            "what makes the most models fail first, then what the most models use, then core operators "
            "and those most others decompose into." + source,
        ),
        [_work_list(site, w) for w in site.work],
    )
