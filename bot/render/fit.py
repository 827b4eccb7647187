"""Size: a PR comment or issue body must fit GitHub's 65,536 characters.

The lead sections (what a backend must do) are cut last: while any bucket list still shows an item,
they show everything. A body's one `cap` is the largest value for which it fits, found by bisection, and
`caps` reads it in two ranges: above the longest lead list, the lead lists are whole and every bucket
section shows at most ``cap - that length`` items followed by "… and N more"; below it, the bucket
lists are empty and the lead lists share `cap`. Within each range that is max-min fair: small sections
show everything, and the big ones share what is left equally, so one bucket never crowds out the rest. The operators that only gained or lost in-tree kernels are listed at most MAX_KERNEL_OPS
deep in every format but JSON, whatever the room: a release can add XPU kernels to a thousand of them.
"""

from __future__ import annotations

from collections.abc import Callable

from opdrift.render.markers import Format
from opdrift.render.view import Tier, View, lists_of
from opdrift.text import Safe

GITHUB_BODY_LIMIT = 65_536  # characters in an issue or comment body
# What the publisher may add around a body (its marker line; the previous issue's link is rendered).
PUBLISHER_MARGIN = 1_000
STEP_SUMMARY_LIMIT = 1_000_000  # GITHUB_STEP_SUMMARY accepts 1 MiB per step; keep a margin
LIMITS: dict[Format, int | None] = {
    "pr-comment": GITHUB_BODY_LIMIT - PUBLISHER_MARGIN,
    "weekly-issue": GITHUB_BODY_LIMIT - PUBLISHER_MARGIN,
    "job-summary": STEP_SUMMARY_LIMIT,
    "markdown": None,
    "text": None,
    "json": None,
}
# Detail lines shown under one change before "… and N more"; the JSON and text keep all of them.
MAX_DETAILS = 8
MAX_GAP_OPS = 20  # operator names listed per backend subscriber before "… and N more"
# Operators listed under "In-tree kernels only" in every format but JSON: a release adds XPU or MPS
# kernels to a thousand ops at once, and the per-key table already says what happened.
MAX_KERNEL_OPS = 30
MAX_WARNINGS = 10  # parse warnings a capped body lists; each is one line of at most 300 characters

# The cap of a complete render: larger than any list, so nothing is cut.
UNCAPPED = 1 << 62


def _lead_length(view: View) -> int:
    return max((len(items) for items, tier in lists_of(view) if tier == "lead"), default=0)


def caps(view: View, cap: int | None) -> dict[Tier, int]:
    """Each tier's cap in the body made at CAP (None: the complete render's). Every list of the view
    declares its tier (`opdrift.render.view.lists_of`); kernel lists never show more than MAX_KERNEL_OPS."""
    if cap is None:
        lead, bucket = UNCAPPED, UNCAPPED
    else:
        longest = _lead_length(view)
        lead, bucket = (UNCAPPED, cap - longest) if cap >= longest else (cap, 0)
    return {"lead": lead, "bucket": bucket, "kernel": min(bucket, MAX_KERNEL_OPS)}


def sections_of(view: View, cap: int | None) -> list[tuple[tuple[object, ...], int]]:
    """Every capped list of the view with its cap (None: the complete render's): the bisection's unit
    of fairness."""
    by_tier = caps(view, cap)
    return [(items, by_tier[tier]) for items, tier in lists_of(view)]


def truncated(view: View, cap: int | None, warnings: int = 0) -> bool:
    """Whether `cap` cuts any list shorter than the complete render shows it."""
    if cap is not None and warnings > MAX_WARNINGS:
        return True
    return any(
        min(len(items), c) < min(len(items), full)
        for (items, c), (_, full) in zip(sections_of(view, cap), sections_of(view, None), strict=True)
    )


def largest_fitting(view: View, limit: int, render_at: Callable[[int], str]) -> str | None:
    """The body `render_at(cap)` for the largest cap whose body fits `limit`; None if not even cap 0 fits.

    The body grows with the cap, so a bisection finds it.
    """
    largest = _lead_length(view) + max(len(x) for x, _ in sections_of(view, None))
    return largest_cap_fitting(largest, limit, render_at)


def largest_cap_fitting(largest: int, limit: int, render_at: Callable[[int], str]) -> str | None:
    """`render_at(cap)` for the largest cap in 0..LARGEST whose text fits `limit` characters, found by
    bisection (the text must grow with the cap); None if not even cap 0 fits."""
    lo, hi = 0, largest
    best: str | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        body = render_at(mid)
        if len(body) <= limit:
            best, lo = body, mid + 1
        else:
            hi = mid - 1
    return best


def fallback(marker: Safe, view: View, limit: int) -> str:
    """When not even one item per section fits: the headline numbers only."""
    symint = f" (and {len(view.kernel_symint)} SymInt form only)" if view.kernel_symint else ""
    counts = ", ".join(
        f"{s.emoji} {s.title}: {len(s.changes)}{symint if s.key == 'kernel_breaking' else ''}"
        for s in view.lead
    )
    d = view.drift
    text = (
        f"{marker}\n## Operator drift\n\n"
        f"{len(d.added)} added, {len(d.removed)} removed, {len(d.renamed)} renamed, {len(d.changed)} changed. "
        f"{counts}.\n\nThe report is too large to show here; see the full report.\n"
    )
    return text[:limit]
