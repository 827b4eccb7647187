"""The growth page and its chart: base operators per bucket over releases, a stacked-bar SVG drawn at
build time.

The seed post's 2021 figures stand first, hatched, so the chart answers the post's question of where
the operators come from, over time. Only numbers and bucket labels reach the markup, escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from opdrift.site.html import Markup, el, join, page
from opdrift.site.model import Growth, Site
from opdrift.site.parts import generated, label
from opdrift.taxonomy.buckets import BUCKETS, CORE_BUCKETS, LABELS, TOP_BUCKETS

# The post's eight groups, bottom to top: core (its sub-buckets summed), then the others.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", CORE_BUCKETS),
    *((b, (b,)) for b in reversed(TOP_BUCKETS)),
)
COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")

WIDTH, HEIGHT = 900, 380
LEFT, RIGHT, TOP, BOTTOM = 50, 170, 20, 60


def _group_counts(g: Growth) -> list[int]:
    counts = dict(g.counts)
    return [sum(counts.get(b, 0) for b in members) for _, members in GROUPS]


def chart(points: Sequence[Growth]) -> Markup:
    stacks = [_group_counts(p) for p in points]
    peak = max((sum(s) for s in stacks), default=1) or 1
    scale = 10 ** max(len(str(peak)) - 1, 1)
    ceiling = -(-peak // (scale // 2)) * (scale // 2)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(points), 1)
    bar = step * 0.7
    parts: list[Markup] = []
    for tick in range(0, ceiling + 1, scale // 2):
        y = TOP + plot_h - plot_h * tick / ceiling
        parts.append(
            el("line", {"x1": LEFT, "x2": LEFT + plot_w, "y1": f"{y:.1f}", "y2": f"{y:.1f}", "class": "grid"})
        )
        parts.append(el("text", {"x": LEFT - 6, "y": f"{y + 4:.1f}", "text-anchor": "end"}, tick))
    for i, (point, stack) in enumerate(zip(points, stacks, strict=True)):
        x = LEFT + i * step + (step - bar) / 2
        y = TOP + plot_h
        for (group, _), colour, n in zip(GROUPS, COLOURS, stack, strict=True):
            h = plot_h * n / ceiling
            y -= h
            parts.append(
                el(
                    "rect",
                    {
                        "x": f"{x:.1f}",
                        "y": f"{y:.1f}",
                        "width": f"{bar:.1f}",
                        "height": f"{h:.1f}",
                        "fill": colour,
                        "class": "seed" if point.seed else None,
                    },
                    el("title", {}, f"{point.label}: {LABELS.get(group, group)} {n}"),
                )
            )
        parts.append(
            el(
                "text",
                {"x": f"{x + bar / 2:.1f}", "y": f"{y - 4:.1f}", "text-anchor": "middle", "class": "total"},
                sum(stack),
            )
        )
        lx, ly = x + bar / 2, TOP + plot_h + 12
        parts.append(
            el(
                "text",
                {
                    "x": f"{lx:.1f}",
                    "y": f"{ly:.1f}",
                    "text-anchor": "end",
                    "transform": f"rotate(-45 {lx:.1f} {ly:.1f})",
                    "class": "seedlabel" if point.seed else None,
                },
                point.label,
            )
        )
    for j, ((group, _), colour) in enumerate(reversed(list(zip(GROUPS, COLOURS, strict=True)))):
        y = TOP + j * 20
        parts.append(el("rect", {"x": WIDTH - RIGHT + 15, "y": y, "width": 12, "height": 12, "fill": colour}))
        parts.append(el("text", {"x": WIDTH - RIGHT + 32, "y": y + 10}, LABELS.get(group, group)))
    y = TOP + len(GROUPS) * 20 + 10
    parts.append(
        el(
            "rect",
            {"x": WIDTH - RIGHT + 15, "y": y, "width": 12, "height": 12, "fill": "#bbbbbb", "class": "seed"},
        )
    )
    parts.append(el("text", {"x": WIDTH - RIGHT + 32, "y": y + 10}, "the post's 2021 figures"))
    return el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewbox": f"0 0 {WIDTH} {HEIGHT}",
            "width": WIDTH,
            "height": HEIGHT,
            "role": "img",
            "aria-label": "base operators per bucket over releases",
            "class": "growth",
        },
        join(parts),
    )


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
                [el("th", {}, label(g)) for g in groups],
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
    return page("Growth of the ATen operator surface", body, root="", generated=generated(site))


def _growth_summary(points: tuple[Growth, ...]) -> Markup | None:
    """One sentence: how many base operators the releases added, and which buckets they went to."""
    releases = [p for p in points if not p.seed]
    if len(releases) < 2:
        return None
    first, last = dict(releases[0].counts), dict(releases[-1].counts)
    grown = sorted(((last.get(b, 0) - first.get(b, 0), b) for b in BUCKETS), reverse=True)
    top = [f"{label(b)} {delta:+d}" for delta, b in grown[:3] if delta > 0]
    total = sum(last.values()) - sum(first.values())
    return el(
        "p",
        {"class": "summary"},
        f"From {releases[0].label} to {releases[-1].label}: {total:+d} base operators in all",
        f"; the buckets that grew most: {', '.join(top)}." if top else ".",
    )
