"""The watch's decisions, pure: what the last run kept (`WatchState`), what this run's listing gave
(`Scanned`) and what the edge found out about the PRs that needed it (`Judgements`) → the dashboard's
next body, the run's comments and the state the next run reads. Nothing here reads a file, a clock or
the network: `opdrift.app.watch` does that before (`needs_judging` tells it which PRs to ask about) and
says the `Reconciled.notes` after.

The steps, in order, each a function of plain records (tests/unit/app/test_watch_reconcile.py):

1. `opening`: the last run's rows, quiet heads and recent closings as this run's `Board`;
2. `examine_listed`: each listed PR in turn (`in_turn`) — a closed one leaves (`leave`), an open one
   keeps its row or takes its verdict (`take`) — then the PRs the listing could not examine (`unread`);
3. `examine_retries`: the last run's retry list, for the PRs this listing did not bring;
4. `drop_unlisted`: after a re-judgement, a row the complete listing lacks is no longer open;
5. `told_news` and `announce`: what is news, measured against what was told, and whom it may
   mention now (drafts and PRs told within a day wait);
6. `next_state` and `view_of`: the state kept (`kept_broke`: the landed breaks) and the view shown;
7. `body_of`: the body with its state block; the comments; `read_back`: what did not read back.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from opdrift.app.watch_breaks import expired
from opdrift.app.watch_state import (
    COLD,
    MAX_BROKE,
    MAX_LANDED,
    MAX_QUIET,
    MAX_RETRY,
    MAX_TOLD,
    MAX_TRIES,
    Closed,
    Retry,
    WatchState,
    landed_title,
    read_state,
    row_title,
    state_block,
)
from opdrift.app.watch_verdicts import (
    Deferred,
    Judgements,
    Scanned,
    TooLarge,
    Unparsable,
    Unreadable,
    Untouched,
    Verdict,
)
from opdrift.model import PullRef
from opdrift.render.context import BackendGap
from opdrift.render.watch import (
    Landed,
    LandedBreak,
    PullRow,
    ScanProgress,
    WatchView,
    breaks_build,
    build_part,
    fingerprint,
    new_items,
    render_comment,
    render_issue,
    render_landed,
)
from opdrift.render.watch_json import watch_json

# The retry list's reason for a PR seen closed unlanded while it had a row: looked at once more.
CLOSED_UNLABELLED = "closed without a landing label: looked at once more, in case the merge bot labels it"
# The retry list's reason for a PR this run had no budget left to judge: judged first next run.
DEFERRED = "not judged: the run's judgement budget was spent; judged first next run"
TOO_LARGE = "too-large"  # the row note (`PullRow.note`) of a PR not judged for its size: shown, never news
MENTION_HOURS = 24  # a PR mentions its subscribers at most once in this many hours
REOPEN_HOURS = 7 * 24  # a PR closed unlanded keeps the fingerprint last told this long


@dataclass(frozen=True)
class RunFacts:
    """What a run knows besides the state and the scan: all plain values the edge settled."""

    upstream: str
    now: str  # ISO 8601: dates the mentions and the closings
    backends: str | None  # the digest of the lists judged against (`watch_judge.backend_digest`)
    who: Mapping[str, tuple[str, ...]]  # each subscribed backend's key → its handles
    names: Mapping[str, str] = field(default_factory=dict)  # backend key → its name in the config
    ticked: frozenset[int] = frozenset()  # landed breaks a maintainer ticked off in the last body


@dataclass(frozen=True)
class Board:
    """The dashboard while a run goes through the PRs: each step takes one and gives the next."""

    rows: Mapping[int, PullRow]
    quiet: Mapping[int, str]  # number → the head judged to affect nothing
    retry: Mapping[int, Retry]  # this run's retry list so far
    closed: Mapping[int, Closed]  # closed unlanded lately, with the fingerprint last told
    landed: tuple[Landed, ...] = ()  # in the order seen
    broke_now: tuple[LandedBreak, ...] = ()  # landed since the last run and breaking a build, as seen
    deferred: int = 0  # PRs put off for want of budget
    notes: tuple[str, ...] = ()  # warnings, in the order they arose


@dataclass(frozen=True)
class Announcement:
    """What `announce` decided: the news, the marks of what grew, the rows withheld, the told times."""

    news: tuple[tuple[PullRow, tuple[BackendGap, ...]], ...]
    fresh: Mapping[str, frozenset[str]]
    withheld: frozenset[int]
    told: Mapping[int, str]


@dataclass(frozen=True)
class Reconciled:
    body: str  # the dashboard, hidden state included
    comments: tuple[str, ...]  # what the run posts, in order: landed breaks, then the news
    state: WatchState
    view: WatchView
    comment: str  # the news comment ('' when nothing is news)
    landed_comments: tuple[str, ...]
    json: dict[str, object]
    notes: tuple[str, ...]  # warnings for the run to say


_K = TypeVar("_K")
_V = TypeVar("_V")


def _with(m: Mapping[_K, _V], key: _K, value: _V) -> dict[_K, _V]:
    return {**m, key: value}


def _without(m: Mapping[_K, _V], key: _K) -> dict[_K, _V]:
    return {k: v for k, v in m.items() if k != key}


def hours(since: str, until: str) -> float:
    """Hours from SINCE to UNTIL (ISO 8601 times); a time that does not parse is long ago."""
    try:
        a = datetime.datetime.fromisoformat(since.replace("Z", "+00:00"))
        b = datetime.datetime.fromisoformat(until.replace("Z", "+00:00"))
        return (b - a).total_seconds() / 3600
    except ValueError:
        return float("inf")


def rejudging(state: WatchState, backends: str | None) -> bool:
    """Whether the rows were judged against other backend lists (a list changed, a backend was
    added): then every open PR is listed anew and judged again; what they said stays the measure."""
    return state.backends != backends and state != COLD


def scan_since(state: WatchState, again: bool) -> str | None:
    return None if again else state.watermark


def known_heads(state: WatchState, again: bool) -> tuple[str, ...]:
    """Heads judged before need no compare to tell what they touch: their row (or quiet entry) says it."""
    return () if again else (*(r.head_sha for r in state.rows), *(sha for _, sha in state.quiet))


def failing(state: WatchState) -> list[int]:
    """The retry list's PRs the last run could not read: the scan compares them after the others."""
    return [r.number for r in state.retry if r.reason not in (DEFERRED, CLOSED_UNLABELLED)]


def in_turn(pulls: Iterable[PullRef], tried: Mapping[int, Retry]) -> list[PullRef]:
    """The listed PRs in the order they are examined: each once, as most recently listed; first the
    ones a run put off at the same head (judged first, so a flood of new heads cannot starve them),
    then the least recently updated first (a PR force-pushed every hour comes last)."""
    latest: dict[int, PullRef] = {}
    for pull in pulls:  # newest first: the first listing of a PR is its latest
        latest.setdefault(pull.number, pull)

    def waited(pull: PullRef) -> bool:
        old = tried.get(pull.number)
        return old is not None and old.head_sha == pull.head_sha and old.reason == DEFERRED

    return sorted(latest.values(), key=lambda p: (not waited(p), p.updated_at, p.number))


def needs_judging(pull: PullRef, state: WatchState, again: bool) -> bool:
    """Whether examining PULL asks the upstream anything: an open PR, unless the last run judged it
    at this head (its row, or its quiet entry, says what it does) and the lists are the same."""
    if pull.state != "open":
        return False
    if again:
        return True
    same_row = any(r.number == pull.number and r.head_sha == pull.head_sha for r in state.rows)
    return not same_row and dict(state.quiet).get(pull.number) != pull.head_sha


def listed_numbers(scan: Scanned) -> set[int]:
    return {p.number for p in scan.pulls} | {p.number for p, _ in scan.failed}


def new_row(pull: PullRef, impacts: tuple[BackendGap, ...], note: str = "") -> PullRow:
    return PullRow(
        pull.number,
        row_title(pull.title),
        pull.author,
        pull.draft,
        pull.updated_at,
        pull.html_url,
        pull.head_sha,
        impacts,
        fingerprint(impacts),
        note,
    )


def relisted(row: PullRow, pull: PullRef) -> PullRow:
    """ROW with what the listing now says of the PR (its title, draft state, last update)."""
    return replace(
        row,
        title=row_title(pull.title),
        author=pull.author,
        draft=pull.draft,
        updated_at=pull.updated_at,
        url=pull.html_url,
    )


def opening(state: WatchState, now: str) -> Board:
    """The board a run starts from: the last run's rows and quiet heads, its closings of the last week."""
    return Board(
        rows={r.number: r for r in state.rows},
        quiet=dict(state.quiet),
        retry={},
        closed={c.number: c for c in state.closed if hours(c.when, now) < REOPEN_HOURS},
    )


def unread(board: Board, number: int, head: str, reason: str, tried: Mapping[int, Retry]) -> Board:
    """A PR that cannot be read now: its row, if any, stays as it was; the watermark moves on, so the
    retry list is what brings it back next run (a failed PR is listed again only when updated)."""
    old = tried.get(number)
    tries = old.tries + 1 if old is not None and old.head_sha == head else 1
    then = "tried again next run" if tries < MAX_TRIES else f"given up after {tries} tries"
    note = f"#{number} at {head[:12]}: cannot read it, so it is not judged ({then}): {reason}"
    retry = _with(board.retry, number, Retry(number, head, reason[:200], tries))
    return replace(board, retry=retry, notes=(*board.notes, note))


def leave(board: Board, pull: PullRef, tried: Mapping[int, Retry], now: str) -> Board:
    """A PR seen closed or merged. Closed while it had a row, and not yet looked at once more: kept one
    more run on the retry list, as PyTorch's merge bot closes a PR (its push does) before it labels it
    `Merged` (`opdrift.github.pulljson.landed`). Else it leaves: merged, it is named as landed (and as a
    landed break when it breaks a build); closed, what it asked stays the measure for a week."""
    n = pull.number
    old = tried.get(n)
    if (
        pull.state == "closed"
        and n in board.rows
        and not (old is not None and old.reason == CLOSED_UNLABELLED)
    ):
        return replace(board, retry=_with(board.retry, n, Retry(n, pull.head_sha, CLOSED_UNLABELLED, 1)))
    gone = board.rows.get(n)
    board = replace(
        board, rows=_without(board.rows, n), quiet=_without(board.quiet, n), retry=_without(board.retry, n)
    )
    if gone is None:
        return board
    if pull.state != "merged":
        return replace(board, closed=_with(board.closed, n, Closed(n, now, gone.fingerprint)))
    title = landed_title(pull.title)
    landed = (*board.landed, Landed(n, title, pull.html_url))
    breaking = tuple(build_part(i) for i in gone.impacts if breaks_build(i))
    if not breaking:
        return replace(board, landed=landed)
    broke = LandedBreak(n, title, pull.html_url, pull.updated_at, breaking)
    return replace(board, landed=landed, broke_now=(*board.broke_now, broke))


def take(board: Board, pull: PullRef, verdict: Verdict, tried: Mapping[int, Retry]) -> Board:
    """An open PR's verdict on the board."""
    n, head = pull.number, pull.head_sha
    rows, quiet = _without(board.rows, n), _without(board.quiet, n)
    if isinstance(verdict, Deferred):  # its row stays; judged first next run, its tries unchanged
        old = tried.get(n)
        tries = old.tries if old is not None and old.head_sha == head else 0
        retry = _with(board.retry, n, Retry(n, head, DEFERRED, tries))
        return replace(board, retry=retry, deferred=board.deferred + 1)
    if isinstance(verdict, Unreadable):
        return unread(board, n, head, verdict.reason, tried)
    if isinstance(verdict, Untouched):
        return replace(board, rows=rows, quiet=quiet)
    if isinstance(verdict, TooLarge):  # a row that says so, asking nothing of anyone
        note = f"#{n} at {head[:12]}: an operator file is over {verdict.limit} bytes: not judged"
        rows[n] = new_row(pull, (), TOO_LARGE)
        return replace(board, rows=rows, quiet=quiet, notes=(*board.notes, note))
    if isinstance(verdict, Unparsable):  # not judged again at this head, never the end of the run
        note = f"#{n} at {head[:12]}: its operator files do not parse, so it is not judged: {verdict.reason}"
        return replace(board, rows=rows, quiet=_with(quiet, n, head), notes=(*board.notes, note))
    if verdict.impacts:
        return replace(board, rows=_with(rows, n, new_row(pull, verdict.impacts)), quiet=quiet)
    return replace(board, rows=rows, quiet=_with(quiet, n, head))


def examine(
    board: Board, pull: PullRef, judgements: Judgements, state: WatchState, again: bool, now: str
) -> Board:
    """One PR as listed (or fetched again): it leaves, keeps its row, or takes its verdict (none for a
    PR that needed one: the edge did not get to it, so it is put off)."""
    tried = {r.number: r for r in state.retry}
    if pull.state != "open":
        return leave(board, pull, tried, now)
    if needs_judging(pull, state, again):
        return take(board, pull, judgements.verdicts.get(pull.number, Deferred()), tried)
    row = board.rows.get(pull.number)
    if row is not None and row.head_sha == pull.head_sha:
        return replace(board, rows=_with(board.rows, pull.number, relisted(row, pull)))
    return board  # quiet at this head


def examine_listed(
    board: Board, state: WatchState, scan: Scanned, judgements: Judgements, again: bool, now: str
) -> Board:
    """The listed PRs in turn, then those the listing could not examine."""
    tried = {r.number: r for r in state.retry}
    failed = {p.number for p, _ in scan.failed}
    for pull in in_turn(scan.pulls, tried):
        if pull.number not in failed:
            board = examine(board, pull, judgements, state, again, now)
    for pull, reason in scan.failed:
        board = unread(board, pull.number, pull.head_sha, reason, tried)
    return board


def examine_retries(
    board: Board, state: WatchState, scan: Scanned, judgements: Judgements, again: bool, now: str
) -> Board:
    """What the last run could not read, and this listing did not bring: fetched again and examined,
    or unread once more, or (the budget spent before it) kept as it was; given up after MAX_TRIES."""
    tried = {r.number: r for r in state.retry}
    listed = listed_numbers(scan)
    fetched = {p.number: p for p in judgements.fetched}
    for old in state.retry:
        if old.number in listed or old.tries >= MAX_TRIES:
            continue
        if old.number in judgements.unfetched:
            board = unread(board, old.number, old.head_sha, judgements.unfetched[old.number], tried)
        elif old.number in fetched:
            board = examine(board, fetched[old.number], judgements, state, again, now)
        else:
            board = replace(board, retry=_with(board.retry, old.number, old))
    return board


def drop_unlisted(board: Board, scan: Scanned, again: bool) -> Board:
    """Listed anew and completely: a row the listing of open PRs lacks is no longer open."""
    if not (again and scan.complete):
        return board
    listed = listed_numbers(scan)
    return replace(board, rows={n: r for n, r in board.rows.items() if n in listed})


def announce(
    rows: Sequence[PullRow], seen: Mapping[int, frozenset[str]], told: Mapping[int, str], now: str
) -> Announcement:
    """The news to tell (rows whose impact grew past SEEN, the fingerprint last told, and for each the
    backends it is news for); for each backend of the news its PR asked something of when last told
    and asks more of now, the items that are new (`WatchView.fresh`); and the rows whose growth is
    withheld: a draft, or a PR whose subscribers were mentioned less than MENTION_HOURS ago (TOLD; the
    announcement's own `told` adds NOW for each row told). A withheld row keeps the fingerprint last
    told, so it is news once it is ready, or once the day is over, and its marks are measured from then."""
    out = []
    fresh: dict[str, frozenset[str]] = {}
    withheld = set()
    told_now = dict(told)
    for row in rows:
        last_told = seen.get(row.number, frozenset())
        grown = []
        marks: dict[str, frozenset[str]] = {}
        for i in row.impacts:
            new = new_items(i, last_told)
            if not new:
                continue
            grown.append(i)
            if new != i.items():  # some of it was said: mark what was not
                marks[f"{row.number}\0{i.key}"] = new
        if not grown:
            continue
        last = told_now.get(row.number)
        if row.draft or (last is not None and hours(last, now) < MENTION_HOURS):
            withheld.add(row.number)
            continue
        told_now[row.number] = now
        fresh.update(marks)
        out.append((row, tuple(grown)))
    return Announcement(tuple(out), fresh, frozenset(withheld), told_now)


def newest_first(rows: Iterable[PullRow]) -> tuple[PullRow, ...]:
    return tuple(sorted(rows, key=lambda r: (r.updated_at, r.number), reverse=True))


def named(row: PullRow, names: Mapping[str, str]) -> PullRow:
    """ROW with each backend called by its name in the config (NAMES: backend key → name)."""
    return replace(row, impacts=tuple(replace(i, name=names.get(i.key, i.name)) for i in row.impacts))


def named_break(x: LandedBreak, names: Mapping[str, str]) -> LandedBreak:
    return replace(x, impacts=tuple(replace(i, name=names.get(i.key, i.name)) for i in x.impacts))


def told_news(state: WatchState, board: Board, facts: RunFacts) -> tuple[tuple[PullRow, ...], Announcement]:
    """The rows newest first and what is news among them, measured against what was told: the row's
    last fingerprint, or, for a PR that reopened, the one it had when it closed. Drafts, and PRs told
    less than a day ago, wait: a withheld row keeps the fingerprint last told."""
    ordered = newest_first(board.rows.values())
    seen = {n: frozenset(c.fingerprint) for n, c in board.closed.items()}
    seen.update({r.number: frozenset(r.fingerprint) for r in state.rows})
    told = {n: when for n, when in state.told if hours(when, facts.now) < MENTION_HOURS}
    said = announce(tuple(named(r, facts.names) for r in ordered), seen, told, facts.now)
    ordered = tuple(
        replace(r, fingerprint=tuple(sorted(seen.get(r.number, ())))) if r.number in said.withheld else r
        for r in ordered
    )
    return ordered, said


def kept_broke(
    state: WatchState, board: Board, ticked: frozenset[int], watermark: str | None
) -> tuple[LandedBreak, ...]:
    """Landed breaks: this run's first (newest first), then the last run's that nobody ticked off and
    that are not older than BROKE_DAYS, at most MAX_BROKE (the state stays bounded)."""
    now = {x.number for x in board.broke_now}
    older = (
        x
        for x in state.broke
        if x.number not in ticked and x.number not in now and not expired(x.landed_at, watermark)
    )
    return (*reversed(board.broke_now), *older)[:MAX_BROKE]


def next_state(
    state: WatchState,
    board: Board,
    scan: Scanned,
    ordered: tuple[PullRow, ...],
    said: Announcement,
    facts: RunFacts,
) -> WatchState:
    """What the next run reads, its rows all of ORDERED (the body may show fewer)."""
    again = rejudging(state, facts.backends)
    # "Landed since the last run" stays while nothing else changes, so that a quiet run edits nothing.
    changed = board.landed or ordered != newest_first(state.rows)
    landed = tuple(reversed(board.landed))[:MAX_LANDED] if changed else state.landed
    watermark = scan.watermark if scan.watermark is not None else state.watermark
    # Those put off first (they are judged first next run), then the newest PRs.
    retry = tuple(sorted(board.retry.values(), key=lambda r: (r.reason != DEFERRED, -r.number)))[:MAX_RETRY]
    if board.deferred > sum(r.reason == DEFERRED for r in retry):
        watermark = state.watermark  # more put off than the retry list holds: listed again next run
    closed = (c for n, c in board.closed.items() if n not in board.rows)
    return WatchState(
        watermark,
        ordered,
        tuple(sorted(board.quiet.items(), reverse=True))[:MAX_QUIET],
        landed,
        # a re-judgement the budget cut short is not done: the next run carries on judging again
        state.backends if again and not scan.complete else facts.backends,
        retry,
        tuple(sorted(said.told.items(), key=lambda x: (x[1], x[0]), reverse=True))[:MAX_TOLD],
        tuple(sorted(closed, key=lambda c: (c.when, c.number), reverse=True)),
        kept_broke(state, board, facts.ticked, watermark),
    )


def progress(scan: Scanned) -> ScanProgress | None:
    """How far a scan the budget stopped got, and how many more runs at this run's pace the rest takes
    (None when this run examined nothing new: no pace to tell from); None for a complete scan."""
    if scan.complete:
        return None
    left = max(scan.listed_open - scan.examined_open, 0)
    runs = -(-left // scan.paid) if scan.paid else None
    return ScanProgress(scan.examined_open, scan.listed_open, scan.listed_whole, runs)


def view_of(new: WatchState, board: Board, scan: Scanned, said: Announcement, facts: RunFacts) -> WatchView:
    return WatchView(
        upstream=facts.upstream,
        rows=tuple(named(r, facts.names) for r in new.rows),
        landed=new.landed,
        news=said.news,
        state_block="",
        complete=scan.complete,
        progress=progress(scan),
        fresh=said.fresh,
        broke=tuple(named_break(x, facts.names) for x in new.broke),
        broke_now=tuple(named_break(x, facts.names) for x in reversed(board.broke_now)),
    )


def compact(row: PullRow) -> PullRow:
    """ROW as the state keeps a row the body has no room to show: its counts, not its op names (the
    row comes back with them when it has room, or with its names once its PR is judged again)."""
    return replace(row, impacts=tuple(i.capped(0) for i in row.impacts))


def body_of(view: WatchView, new: WatchState) -> str:
    """The dashboard. Its state keeps the rows as the body shows them (lists capped to fit), with the
    fingerprints of what was judged, not of what had room; and the rows it has no room for,
    compacted: a row dropped from the state would be news again the next time its PR moves."""
    full = {r.number: r for r in new.rows}

    def state_for(shown: WatchView) -> str:
        on_show = {r.number for r in shown.rows}
        kept = (
            *(replace(r, fingerprint=full[r.number].fingerprint) for r in shown.rows),
            *(compact(r) for r in new.rows if r.number not in on_show),
        )
        return state_block(replace(new, rows=kept))

    return render_issue(view, state_for)


def read_back(body: str, new: WatchState, who: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """What is published must read back, or the next run starts cold and mentions everyone again:
    a warning when it does not, or when some rows could not be kept."""
    back, unreadable = read_state(body, who)
    if unreadable is not None:
        return (f"the watch state written does not read back ({unreadable}): the next run starts cold",)
    lost = sorted({r.number for r in new.rows} - {r.number for r in back.rows})
    if not lost:
        return ()
    numbers = ", ".join(f"#{n}" for n in lost[:20])
    return (f"{len(lost)} row(s) could not be kept in the watch state ({numbers}): they will be news again",)


def reconcile(state: WatchState, scan: Scanned, judgements: Judgements, facts: RunFacts) -> Reconciled:
    """The dashboard's next body, the run's comments and the next state, from the last run's STATE,
    this run's SCAN and what the edge found out (JUDGEMENTS), through the steps the module names."""
    again = rejudging(state, facts.backends)
    board = opening(state, facts.now)
    board = examine_listed(board, state, scan, judgements, again, facts.now)
    board = examine_retries(board, state, scan, judgements, again, facts.now)
    board = drop_unlisted(board, scan, again)
    ordered, said = told_news(state, board, facts)
    new = next_state(state, board, scan, ordered, said, facts)
    view = view_of(new, board, scan, said, facts)
    body = body_of(view, new)
    comment, landed = render_comment(view), render_landed(view)
    comments = tuple(c for c in (*landed, comment) if c)
    notes = (*board.notes, *read_back(body, new, facts.who))
    return Reconciled(body, comments, new, view, comment, landed, watch_json(view), notes)
