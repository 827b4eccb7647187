"""`opdrift watch`'s outputs: the dashboard issue, the run's one comment, and the JSON for other tools.

The records here are what `opdrift.app.watch_reconcile` decides for each open upstream pull request (its
impact on each subscribed backend is the weekly issue's and the PR comment's record,
`opdrift.render.context.BackendGap`, from the same subscription matching, its lists capped), and what the
issue's hidden state keeps of a row to show it again without reading the pull request again (`PullRow`).
The Markdown comes from ``templates/watch_issue.md.j2``, ``watch_comment.md.j2`` and
``watch_landed.md.j2`` fed a `WatchView` and the words they call
(`opdrift.render.watch_words`); the JSON (`opdrift.render.watch_json`) is built from the same view, without
Jinja2.

Every text of a row comes from someone else: a PR's title and its author's login from whoever opened
it, op names and signatures from the PR's files. They reach Markdown only through `opdrift.text`'s
escaping (`md`, `code`, in the words), so a title cannot mention, link or reference anything; the only ``@`` in a
comment are the subscribers' handles from the config (`mentions`), and the issue body has none (an
issue opened with mentions in it would notify them once more on every new issue).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from opdrift import __version__
from opdrift.render.context import GAP_FIELDS, BackendGap
from opdrift.render.fit import GITHUB_BODY_LIMIT, PUBLISHER_MARGIN, largest_cap_fitting
from opdrift.render.markers import WATCH_COMMENT_MARKER, WATCH_MARKER
from opdrift.render.watch_json import watch_json as watch_json  # the JSON twin, from the same view
from opdrift.text import Safe

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


# Landed breaks told in comments of their own per run; more are named together in one more comment.
MAX_LANDED_COMMENTS = 3

NEW = "🆕"  # what the run's comment marks as new since its last comment about a PR


def new_items(impact: BackendGap, before: frozenset[str], cap: int = MAX_FINGERPRINT) -> frozenset[str]:
    """The items of IMPACT (`BackendGap.items`) the fingerprint of the last run (BEFORE) did not
    hold: what `grew` finds, item by item."""
    mine = {i: digest(i) for i in impact.items()}
    if len(before) >= cap:  # BEFORE kept only its smallest digests: compare within that range
        top = max(before)
        mine = {i: d for i, d in mine.items() if d <= top}
    return frozenset(i for i, d in mine.items() if d not in before)


def digest(item: str) -> str:
    return hashlib.sha256(item.encode()).hexdigest()[:DIGEST_HEX]


def fingerprint(impacts: Sequence[BackendGap], cap: int = MAX_FINGERPRINT) -> tuple[str, ...]:
    """The PR's impact as a set of short digests, the CAP smallest: a later run compares by inclusion."""
    return tuple(sorted({digest(i) for imp in impacts for i in imp.items()})[:cap])


def grew(impact: BackendGap, before: frozenset[str], cap: int = MAX_FINGERPRINT) -> bool:
    """Whether the PR now asks this backend for something it did not ask at the last run: an op it
    would need, a kernel it would break (or break differently), an op it would remove that the
    fingerprint of then (BEFORE) did not hold. Less (a fix) or the same is not news."""
    return bool(new_items(impact, before, cap))


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
    impacts: tuple[BackendGap, ...]
    fingerprint: tuple[str, ...] = ()
    note: str = ""  # a key of ROW_NOTES: why the row has no impacts (the PR was not judged)


# Why a row has no impacts: shown in its cell, never news.
ROW_NOTES = {"too-large": "not judged: an operator file at its head is over 8 MB"}


def pull_url(url: str, number: int) -> str | None:
    """URL when it is a plain link to pull request NUMBER, else None (the row is then not linked)."""
    return url if _URL.fullmatch(url) and url.endswith(f"/pull/{number}") else None


@dataclass(frozen=True)
class Landed:
    number: int
    title: str
    url: str


@dataclass(frozen=True)
class ScanProgress:
    """How far a scan the request budget stopped got (a first run over thousands of open PRs)."""

    examined: int  # open pull requests examined so far
    listed: int  # open pull requests listed
    listed_whole: bool  # False: the listing itself stopped, there are more than `listed`
    runs_left: int | None  # runs at this run's pace to examine the rest; None: unknown


@dataclass(frozen=True)
class LandedBreak:
    """A PR that landed while it broke a backend's build (a kernel that stops compiling, an op its
    codegen refuses): shown at the top of the dashboard until a maintainer ticks it off, or for
    `opdrift.app.watch_breaks.BROKE_DAYS` after it landed."""

    number: int
    title: str
    url: str
    landed_at: str  # the listing's last update of the PR when it was seen merged
    impacts: tuple[BackendGap, ...]  # only what breaks the build: its broken kernels and removals


def breaks_build(imp: BackendGap) -> bool:
    """Whether IMPACT breaks the backend's build once its PR lands (rather than asking for work)."""
    return bool(imp.count("broken") or imp.count("removed"))


def build_part(imp: BackendGap) -> BackendGap:
    """IMPACT reduced to what breaks the build: the kernels and the removals."""
    lists = {f: () for f in GAP_FIELDS if f not in _BUILD}
    return replace(imp.with_lists(lists, {f: imp.more_of(f) for f in _BUILD}), ops_models=None)


_BUILD = ("broken", "removed")  # the lists of a gap that break the build


LANDED_MARK = "<!-- opdrift:landed {} -->"  # ends each landed-break line; a ticked box there dismisses it


@dataclass(frozen=True)
class WatchView:
    upstream: str
    rows: tuple[PullRow, ...]  # newest update first
    landed: tuple[Landed, ...]
    news: tuple[tuple[PullRow, tuple[BackendGap, ...]], ...]  # the rows the comment names, and which backends
    state_block: str  # the hidden block, rendered by opdrift.app.watch_state
    complete: bool = True  # False: the scan stopped at its request budget
    hidden_rows: int = 0  # rows the body had no room for
    progress: ScanProgress | None = None  # with `complete` False: how far it got
    # "number\0backend key" → the items (`BackendGap.items`) new since the last comment, for each
    # backend of the news whose PR asked less of it then (a PR news for the first time has none: all
    # of it is new); the comment marks them
    fresh: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # the landed PRs that break a backend's build, newest first: the dashboard leads with them
    broke: tuple[LandedBreak, ...] = ()
    broke_now: tuple[
        LandedBreak, ...
    ] = ()  # those that landed since the last run: the comment leads with them


_MARKERS = {
    "watch_issue.md.j2": WATCH_MARKER,
    "watch_comment.md.j2": WATCH_COMMENT_MARKER,
    "watch_landed.md.j2": WATCH_COMMENT_MARKER,
}


def _render(template: str, view: WatchView) -> str:
    # Imported here: Jinja2 loads only when Markdown is rendered, and the words read this module's records.
    from opdrift.render.jinja import render_template, squeeze
    from opdrift.render.watch_words import Words

    return squeeze(
        render_template(
            template, "md", v=view, w=Words(view), version=Safe(__version__), marker=Safe(_MARKERS[template])
        )
    )


def _capped(view: WatchView, cap: int) -> WatchView:
    rows = tuple(replace(r, impacts=tuple(i.capped(cap) for i in r.impacts)) for r in view.rows)
    broke = tuple(replace(x, impacts=tuple(i.capped(cap) for i in x.impacts)) for x in view.broke)
    return replace(view, rows=rows, broke=broke)


def render_issue(view: WatchView, state_for: Callable[[WatchView], str], limit: int = BODY_LIMIT) -> str:
    """The dashboard's body with its hidden state (`state_for(view)`, which sees the rows as shown), the
    largest per-list cap that fits LIMIT; rows the body has no room for even then are left out of
    it, the least recently updated, and counted ("N more"). STATE_FOR sees the rows shown;
    `opdrift.app.watch_reconcile`'s keeps the others in the state too, so they come back when room does."""

    def at(cap: int, rows: int | None = None) -> str:
        shown = _capped(view, cap)
        if rows is not None:
            shown = replace(shown, rows=shown.rows[:rows], hidden_rows=len(view.rows) - rows)
        shown = replace(
            shown, state_block=Safe(state_for(shown))
        )  # built by opdrift.app.watch_state: no text of it can end the comment
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
    """The run's news comment: the open PRs that newly affect a backend or ask more of it, with the
    handles of those backends' subscriptions, each once. '' when there is none."""
    if not view.news:
        return ""
    return _fitting("watch_comment.md.j2", replace(view, broke_now=()), limit)


def render_landed(view: WatchView, limit: int = BODY_LIMIT) -> tuple[str, ...]:
    """A comment of its own for each PR that landed since the last run and breaks a backend's build
    (`WatchView.broke_now`, newest first), with the handles of the backends it breaks: at most
    MAX_LANDED_COMMENTS; the others, when there are more, named in one more comment."""
    own = tuple(
        _fitting("watch_landed.md.j2", replace(view, broke_now=(x,), news=()), limit)
        for x in view.broke_now[:MAX_LANDED_COMMENTS]
    )
    rest = view.broke_now[MAX_LANDED_COMMENTS:]
    if not rest:
        return own
    return (*own, _fitting("watch_landed.md.j2", replace(view, broke_now=rest, news=()), limit))


def _fitting(template: str, view: WatchView, limit: int) -> str:
    """TEMPLATE fed VIEW with the largest per-list cap that fits LIMIT."""
    full = _render(template, view)
    if len(full) <= limit:
        return full

    def at(cap: int) -> str:
        news = tuple((r, tuple(i.capped(cap) for i in imps)) for r, imps in view.news)
        now = tuple(replace(x, impacts=tuple(i.capped(cap) for i in x.impacts)) for x in view.broke_now)
        return _render(template, replace(view, news=news, broke_now=now))

    best = largest_cap_fitting(MAX_OPS, limit, at)
    return best if best is not None else at(0)[:limit]
