"""`opdrift watch`'s outputs: the dashboard issue, the run's one comment, and the JSON for other tools.

The records here are what `bot.app.watch` decides for each open upstream pull request and each
subscribed backend (`BackendImpact`, from the same subscription matching the weekly issue and the PR
comment use), and what the issue's hidden state keeps of a row to show it again without reading the
pull request again (`PullRow`). The Markdown comes from ``templates/watch_issue.md.j2`` and
``watch_comment.md.j2`` fed a `WatchView`; the JSON is built from the same view, without Jinja2.

Every text of a row comes from someone else: a PR's title and its author's login from whoever opened
it, op names and signatures from the PR's files. They reach Markdown only through `bot.text`'s
escaping (`md`, `code`), so a title cannot mention, link or reference anything; the only ``@`` in a
comment are the subscribers' handles from the config (`mentions`), and the issue body has none (an
issue opened with mentions in it would notify them once more on every new issue).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bot import __version__
from bot.render.context import GAP_LISTS, GapList
from bot.render.details import signature_parts
from bot.render.fit import GITHUB_BODY_LIMIT, PUBLISHER_MARGIN, largest_cap_fitting
from bot.render.helpers import mentions
from bot.render.markers import WATCH_COMMENT_MARKER, WATCH_MARKER
from bot.text import Safe, code, link, md
from bot.versions import ships_in_words

BODY_LIMIT = GITHUB_BODY_LIMIT - PUBLISHER_MARGIN
# Ops a row names per list (each backend: needs, breaks, removes); the count of the rest is kept. The
# body's fit lowers it when fifty PRs each add dozens of ops.
MAX_OPS = 30
# Fingerprint items kept per PR, 10 hex digits each (40 bits: no two of a PR's items collide in
# practice), at most 13 characters of the state block apiece. A PR asking more than this of its
# backends (a new op family) is compared on the items with the smallest digests, so growth among the
# others can go unannounced: its row still shows it.
DIGEST_HEX = 10
MAX_FINGERPRINT = 48
_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]+)?/[A-Za-z0-9._/-]+/pull/[0-9]+")


@dataclass(frozen=True)
class BrokenKernel:
    """An op the backend implements whose kernel would no longer compile in the form it is written in."""

    op: str
    form: str  # "int64_t" or "SymInt": the form the kernel is judged in; "" when not known
    # what changed in that form's C++ signature: (where, before, after), as `KernelChange.differences`
    parts: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class OpList:
    """One of the gap's lists beyond needs, breaks and removals (`bot.render.context.GAP_LISTS`)."""

    field: str  # the GapList's field: schema_changed, left_core, joined_core, dead, some_need
    ops: tuple[str, ...]  # sorted, at most MAX_OPS
    more: int = 0  # how many more than `ops` shows

    @property
    def kind(self) -> GapList:
        return GAP_BY_FIELD[self.field]


GAP_BY_FIELD = {g.field: g for g in GAP_LISTS}


@dataclass(frozen=True)
class BackendImpact:
    """What one pull request would do to one subscribed backend (`bot.app.subscriptions.backend_gaps`)."""

    kind: str
    where: str  # the list's path as the config writes it, or the dispatch key
    who: tuple[str, ...]  # the subscription's handles (only the comment mentions them)
    lacking: tuple[str, ...] = ()  # new or changed ops it would need, sorted, at most MAX_OPS
    broken: tuple[BrokenKernel, ...] = ()
    removed: tuple[str, ...] = ()  # ops it implements that the PR removes (its codegen refuses them)
    more_lacking: int = 0  # how many more than the lists show
    more_broken: int = 0
    more_removed: int = 0
    also: tuple[OpList, ...] = ()  # the other lists, non-empty ones only, in GAP_LISTS order

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.where}"

    def items(self) -> frozenset[str]:
        """What the PR asks of this backend, one item per op and verdict (a different break of the same
        kernel is a different item): the fingerprint is made of these."""
        out = {f"{self.key}\0need\0{op}" for op in self.lacking}
        out |= {f"{self.key}\0remove\0{op}" for op in self.removed}
        for b in self.broken:
            out.add(f"{self.key}\0break\0{b.op}\0{b.form}\0{b.parts!r}")
        # Ops only some backends need are listed, never news (`GapList.warns`).
        out |= {f"{self.key}\0{x.field}\0{op}" for x in self.also if x.kind.warns for op in x.ops}
        return frozenset(out)

    def capped(self, cap: int) -> BackendImpact:
        """The impact listing at most CAP ops per list (the rest counted)."""
        return replace(
            self,
            lacking=self.lacking[:cap],
            broken=self.broken[:cap],
            removed=self.removed[:cap],
            more_lacking=self.more_lacking + max(0, len(self.lacking) - cap),
            more_broken=self.more_broken + max(0, len(self.broken) - cap),
            more_removed=self.more_removed + max(0, len(self.removed) - cap),
            also=tuple(
                replace(x, ops=x.ops[:cap], more=x.more + max(0, len(x.ops) - cap)) for x in self.also
            ),
        )


def digest(item: str) -> str:
    return hashlib.sha256(item.encode()).hexdigest()[:DIGEST_HEX]


def fingerprint(impacts: Sequence[BackendImpact], cap: int = MAX_FINGERPRINT) -> tuple[str, ...]:
    """The PR's impact as a set of short digests, the CAP smallest: a later run compares by inclusion."""
    return tuple(sorted({digest(i) for imp in impacts for i in imp.items()})[:cap])


def grew(impact: BackendImpact, before: frozenset[str], cap: int = MAX_FINGERPRINT) -> bool:
    """Whether the PR now asks this backend for something it did not ask at the last run: an op it
    would need, a kernel it would break (or break differently), an op it would remove that the
    fingerprint of then (BEFORE) did not hold. Less (a fix) or the same is not news."""
    mine = {digest(i) for i in impact.items()}
    if not mine:
        return False
    if len(before) >= cap:  # BEFORE kept only its smallest digests: compare within that range
        mine = {d for d in mine if d <= max(before)}
    return not mine <= before


@dataclass(frozen=True)
class PullRow:
    """One open pull request on the dashboard: what the listing said of it, and its impact."""

    number: int
    title: str
    author: str
    draft: bool
    updated_at: str
    url: str
    head_sha: str
    impacts: tuple[BackendImpact, ...]
    fingerprint: tuple[str, ...] = ()


def pull_url(url: str, number: int) -> str | None:
    """URL when it is a plain link to pull request NUMBER, else None (the row is then not linked)."""
    return url if _URL.fullmatch(url) and url.endswith(f"/pull/{number}") else None


@dataclass(frozen=True)
class Landed:
    number: int
    title: str
    url: str


@dataclass(frozen=True)
class WatchView:
    upstream: str
    rows: tuple[PullRow, ...]  # newest update first
    landed: tuple[Landed, ...]
    news: tuple[
        tuple[PullRow, tuple[BackendImpact, ...]], ...
    ]  # the rows the comment names, and which backends
    state_block: str  # the hidden block, rendered by bot.app.watch_state
    complete: bool = True  # False: the scan stopped at its request budget
    hidden_rows: int = 0  # rows the body had no room for


class _Words:
    """What the templates call: each escapes what it shows."""

    def __init__(self, view: WatchView) -> None:
        self.view = view

    def title(self, row: PullRow | Landed) -> Safe:
        label = Safe(f"#{row.number}")  # the bot's own reference: the one that may link
        url = pull_url(row.url, row.number)
        return Safe(f"{link(label, url) if url else label} {md(row.title[:256])}")

    def author(self, row: PullRow) -> Safe:
        return code(row.author, 40)

    def ships(self, row: PullRow) -> Safe:
        """``: if it lands now, ships in 2.16 (branch cut …)``, by the PR's last update; "" past the
        calendar. Our own words and digits: nothing to escape."""
        words = ships_in_words(row.updated_at)
        return Safe(f"; if it lands now, it {words}" if words else "")

    def backend(self, imp: BackendImpact) -> Safe:
        return Safe(f"{code(imp.kind)} {code(imp.where, 80)}")

    def effects(self, imp: BackendImpact) -> list[Safe]:
        """One phrase per thing the PR does to the backend."""
        out: list[Safe] = []
        for b in imp.broken:
            form = f"your form: {code(b.form)}; " if b.form else ""
            change = signature_parts(b.parts, code) if b.parts else "its schema no longer parses"
            out.append(Safe(f"would stop your {code(b.op)} kernel from compiling ({form}{change})"))
        if imp.more_broken:
            out.append(Safe(f"… and would break {imp.more_broken} more of your kernels"))
        if imp.lacking or imp.more_lacking:
            n = len(imp.lacking) + imp.more_lacking
            more = f", … and {imp.more_lacking} more" if imp.more_lacking else ""
            names = ", ".join(code(o) for o in imp.lacking)
            out.append(Safe(f"adds {n} op{'s' if n != 1 else ''} you would need: {names}{more}"))
        if imp.removed or imp.more_removed:
            n = len(imp.removed) + imp.more_removed
            more = f", … and {imp.more_removed} more" if imp.more_removed else ""
            names = ", ".join(code(o) for o in imp.removed)
            out.append(
                Safe(
                    f"removes {n} op{'s' if n != 1 else ''} you implement, which your codegen refuses: {names}{more}"
                )
            )
        for x in imp.also:
            n = len(x.ops) + x.more
            more = f", … and {x.more} more" if x.more else ""
            names = ", ".join(code(o) for o in x.ops)
            out.append(Safe(f"{x.kind.mark} {n} op{'s' if n != 1 else ''} {x.kind.says}: {names}{more}"))
        return out

    def summary(self, imp: BackendImpact) -> Safe:
        """The row's short cell: counts."""
        parts = []
        if imp.broken or imp.more_broken:
            n = len(imp.broken) + imp.more_broken
            parts.append(f"🔧 {n} kernel{'s' if n != 1 else ''} would break")
        if imp.lacking or imp.more_lacking:
            n = len(imp.lacking) + imp.more_lacking
            parts.append(f"⚠️ {n} op{'s' if n != 1 else ''} to write")
        if imp.removed or imp.more_removed:
            parts.append(f"🗑️ {len(imp.removed) + imp.more_removed} removed")
        for x in imp.also:
            parts.append(f"{x.kind.mark} {len(x.ops) + x.more} {x.kind.short}")
        return Safe(", ".join(parts))

    def news_who(self) -> Safe:
        """The handles of every backend the news concerns, each once (GitHub handles are
        case-insensitive), in the order the backends come."""
        seen: dict[str, str] = {}
        for _, impacts in self.view.news:
            for h in (h for imp in impacts for h in imp.who):
                seen.setdefault(h.lower(), h)
        return mentions(tuple(seen.values()))


_MARKERS = {"watch_issue.md.j2": WATCH_MARKER, "watch_comment.md.j2": WATCH_COMMENT_MARKER}


def _render(template: str, view: WatchView) -> str:
    from bot.render.jinja import render_template, squeeze

    return squeeze(
        render_template(
            template, "md", v=view, w=_Words(view), version=Safe(__version__), marker=Safe(_MARKERS[template])
        )
    )


def _capped(view: WatchView, cap: int) -> WatchView:
    rows = tuple(replace(r, impacts=tuple(i.capped(cap) for i in r.impacts)) for r in view.rows)
    return replace(view, rows=rows)


def render_issue(view: WatchView, state_for: Callable[[WatchView], str], limit: int = BODY_LIMIT) -> str:
    """The dashboard's body with its hidden state (`state_for(view)`, which sees the rows as shown), the
    largest per-list cap that fits LIMIT; rows the body has no room for even then are left out of
    it, the least recently updated, and counted ("N more"). STATE_FOR sees the rows shown; `bot.app.watch`'s
    keeps the others in the state too, so they come back when room does."""

    def at(cap: int, rows: int | None = None) -> str:
        shown = _capped(view, cap)
        if rows is not None:
            shown = replace(shown, rows=shown.rows[:rows], hidden_rows=len(view.rows) - rows)
        shown = replace(
            shown, state_block=Safe(state_for(shown))
        )  # built by bot.app.watch_state: no text of it can end the comment
        return _render("watch_issue.md.j2", shown)

    full = at(MAX_OPS)
    if len(full) <= limit:
        return full
    best = largest_cap_fitting(MAX_OPS, limit, at)
    if best is not None:
        return best
    fits = largest_cap_fitting(len(view.rows), limit, lambda n: at(0, n))
    return fits if fits is not None else at(0, 0)[:limit]


def render_comment(view: WatchView, limit: int = BODY_LIMIT) -> str:
    """The run's one comment: the PRs that newly affect a backend or ask more of it, with the handles
    of those backends' subscriptions, each once. '' when there is no news."""
    if not view.news:
        return ""
    full = _render("watch_comment.md.j2", view)
    if len(full) <= limit:
        return full

    def at(cap: int) -> str:
        news = tuple((r, tuple(i.capped(cap) for i in imps)) for r, imps in view.news)
        return _render("watch_comment.md.j2", replace(view, news=news))

    best = largest_cap_fitting(MAX_OPS, limit, at)
    return best if best is not None else at(0)[:limit]


def _impact_json(imp: BackendImpact) -> dict[str, object]:
    also = {x.field: x for x in imp.also}
    return {
        "kind": imp.kind,
        "where": imp.where,
        "who": list(imp.who),
        "needs": list(imp.lacking),
        "breaks": [
            {
                "op": b.op,
                "form": b.form or None,
                "changes": [{"where": w, "before": x, "after": y} for w, x, y in b.parts],
            }
            for b in imp.broken
        ],
        "removes": list(imp.removed),
        **{g.field: list(also[g.field].ops) if g.field in also else [] for g in GAP_LISTS},
        "more": {
            "needs": imp.more_lacking,
            "breaks": imp.more_broken,
            "removes": imp.more_removed,
            **{g.field: also[g.field].more if g.field in also else 0 for g in GAP_LISTS},
        },
    }


def watch_json(view: WatchView) -> dict[str, object]:
    """The impact per open PR and backend (schemas/watch.json)."""
    news = {r.number: {i.key for i in imps} for r, imps in view.news}
    return {
        "upstream": view.upstream,
        "complete": view.complete,
        "pulls": [
            {
                "number": r.number,
                "title": r.title,
                "author": r.author,
                "draft": r.draft,
                "updated_at": r.updated_at,
                "url": r.url,
                "head_sha": r.head_sha,
                "backends": [
                    {**_impact_json(i), "new": i.key in news.get(r.number, set())} for i in r.impacts
                ],
            }
            for r in view.rows
        ],
        "landed": [{"number": x.number, "title": x.title, "url": x.url} for x in view.landed],
    }
