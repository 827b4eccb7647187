"""The `watch` use case: the open upstream pull requests that would affect a subscribed backend, as a
dashboard issue, and one comment per run for what is new.

Given what the last run saw (`bot.app.watch_state`, read from the issue), the pull requests updated
since (a `PullSource`: `bot.publish.pulls.PullsClient` in production), and a `Judge`
(`bot.app.watch_judge`), it works out each row of the dashboard:

- a PR whose head is the one the last run judged keeps its row (its title, draft state and last update
  are taken from the listing): nothing is read or judged again;
- an open PR that touches none of the operator files (`bot.model.OPERATOR_PATHS`) has no row;
- any other open PR is judged from its merge base to its head; it has a row when it affects a backend;
- a PR that closed leaves; one that merged leaves and is named under "landed since the last run".
  PyTorch's merge bot closes a PR (its push does) before it labels it ``Merged`` (`bot.publish.pulljson.
  landed`): a PR with a row seen closed without the label keeps its row one more run, on the retry
  list, so that a label added after this run's listing still names it as landed.
- a PR that cannot be read now (its compare, its files, a read's deadline) keeps its row as it was and
  goes to the state's retry list: the next run fetches it again although the watermark moved past it.

What is news: a row's backend whose impact items (`bot.render.watch.BackendImpact.items`) are not all
in the fingerprint the last run kept for that PR, i.e. the PR newly affects that backend, or asks more
of it: a new op to write, a kernel that would now break (or break in another way), an op it would now
remove. A PR that asks the same or less is not news. The comment names only news, and mentions the
handles of the subscriptions that matched it, each once; no news, no comment.

Nothing here talks to GitHub: the publisher (`bot.publish.watch_issue`) reads the issue's body before
and writes what this plans after, only when the body changed.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from bot.app.watch_breaks import expired, ticked
from bot.app.watch_state import (
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
from bot.errors import ApiLimitError, SchemaError, SourceError, YamlError
from bot.model import PullRef
from bot.publish.config import BotConfig
from bot.publish.pulls import DEFAULT_BUDGET
from bot.render.watch import (
    BackendImpact,
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
    watch_json,
)

Say = Callable[[str], None]
# The retry list's reason for a PR seen closed unlanded while it had a row: looked at once more.
CLOSED_UNLABELLED = "closed without a landing label: looked at once more, in case the merge bot labels it"
# The retry list's reason for a PR this run had no budget left to judge: judged first next run.
DEFERRED = "not judged: the run's judgement budget was spent; judged first next run"
# What one run judges at most, and for how long (each judgement reads about five answers and parses
# two native_functions.yaml): a fork force-pushing hundreds of PRs hourly cannot take the run, and
# what is left waits on the retry list, judged first next run.
MAX_JUDGED = 60  # pytorch/pytorch has about 60 open PRs touching the operator files
JUDGE_SECONDS = 300.0
# A PR-head operator file past this is not judged (the real native_functions.yaml is 0.63 MB; GitHub
# takes files of 100 MB, and parsing 64 MB of YAML costs a run about 50 s and 800 MB). Read from the
# tree's blob size before any content is downloaded.
MAX_JUDGED_BYTES = 8 * 1024 * 1024
TOO_LARGE = "too-large"  # the row note (`PullRow.note`) of such a PR: shown, never news
MENTION_HOURS = 24  # a PR mentions its subscribers at most once in this many hours
REOPEN_HOURS = 7 * 24  # a PR closed unlanded keeps the fingerprint last told this long


class Scanned(Protocol):
    """What one listing of the upstream's pull requests gave (`bot.publish.pulls.Scan`)."""

    @property
    def pulls(self) -> tuple[PullRef, ...]: ...  # updated since the watermark, any state, newest first

    @property
    def watermark(self) -> str | None: ...  # what to pass as `since` next run

    @property
    def complete(self) -> bool: ...  # False: the request budget stopped the scan

    @property
    def failed(self) -> tuple[tuple[PullRef, str], ...]: ...  # PRs it could not examine, and why

    @property
    def listed_open(self) -> int: ...  # open PRs listed

    @property
    def listed_whole(self) -> bool: ...  # the listing itself finished (else: at least listed_open)

    @property
    def examined_open(self) -> int: ...  # of them, examined

    @property
    def paid(self) -> int: ...  # compares this run paid for: the pace of the runs to come


class PullSource(Protocol):
    """What `watch` asks of the upstream repository (`bot.publish.pulls.PullsClient`)."""

    def scan(
        self,
        since: str | None,
        *,
        budget: int = ...,
        known_heads: Collection[str] = ...,
        later: Collection[int] = ...,  # compared after the others: the last run could not compare them
    ) -> Scanned: ...

    def touched(self, pull: PullRef) -> tuple[str, ...]: ...  # which OPERATOR_PATHS the PR changes

    def merge_base(self, pull: PullRef) -> str: ...

    def pull(
        self, number: int
    ) -> PullRef: ...  # as it is now: a PR to try again, which the scan did not list

    def head_sizes(self, pull: PullRef) -> dict[str, int]: ...  # OPERATOR_PATHS at its head → bytes


JudgeFn = Callable[[str, str], tuple[BackendImpact, ...]]  # (merge base sha, head sha) → impacts


@dataclass(frozen=True)
class WatchPlan:
    body: str  # the dashboard, hidden state included
    comment: str  # the news: '' when no open PR is news
    view: WatchView
    state: WatchState
    judged: int  # pull requests judged this run (a cached judgement counts)
    json: dict[str, object]
    # a comment of its own for each PR that landed since the last run and breaks a build (bounded)
    landed_comments: tuple[str, ...] = ()

    @property
    def comments(self) -> tuple[str, ...]:
        """What the run posts, in order: the landed breaks, then the news ('' ones left out)."""
        return tuple(c for c in (*self.landed_comments, self.comment) if c)


def _progress(scan: Scanned) -> ScanProgress:
    """How far a scan the budget stopped got, and how many more runs at this run's pace the rest takes
    (None when this run examined nothing new: no pace to tell from)."""
    left = max(scan.listed_open - scan.examined_open, 0)
    runs = -(-left // scan.paid) if scan.paid else None
    return ScanProgress(scan.examined_open, scan.listed_open, scan.listed_whole, runs)


def _row(pull: PullRef, impacts: tuple[BackendImpact, ...]) -> PullRow:
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
    )


def _relisted(row: PullRow, pull: PullRef) -> PullRow:
    """ROW with what the listing now says of the PR (its title, draft state, last update)."""
    return replace(
        row,
        title=row_title(pull.title),
        author=pull.author,
        draft=pull.draft,
        updated_at=pull.updated_at,
        url=pull.html_url,
    )


def _hours(since: str, until: str) -> float:
    """Hours from SINCE to UNTIL (ISO 8601 times); a time that does not parse is long ago."""
    try:
        a = datetime.datetime.fromisoformat(since.replace("Z", "+00:00"))
        b = datetime.datetime.fromisoformat(until.replace("Z", "+00:00"))
        return (b - a).total_seconds() / 3600
    except ValueError:
        return float("inf")


def _announce(
    rows: Sequence[PullRow], seen: dict[int, frozenset[str]], told: dict[int, str], now: str
) -> tuple[tuple[tuple[PullRow, tuple[BackendImpact, ...]], ...], dict[str, frozenset[str]], set[int]]:
    """The news to tell (rows whose impact grew past SEEN, the fingerprint last told, and for each
    the backends it is news for); for each backend of the news its PR asked something of when last
    told and asks more of now, the items that are new (`WatchView.fresh`); and the rows whose growth
    is withheld: a draft, or a PR whose subscribers were mentioned less than MENTION_HOURS ago (TOLD,
    updated here). A withheld row keeps the fingerprint last told, so it is news once it is ready,
    or once the day is over, whatever it asked meanwhile, and its marks are measured from then."""
    out = []
    fresh: dict[str, frozenset[str]] = {}
    withheld = set()
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
        last = told.get(row.number)
        if row.draft or (last is not None and _hours(last, now) < MENTION_HOURS):
            withheld.add(row.number)
            continue
        told[row.number] = now
        fresh.update(marks)
        out.append((row, tuple(grown)))
    return tuple(out), fresh, withheld


def _in_turn(pulls: Iterable[PullRef], tried: dict[int, Retry]) -> list[PullRef]:
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def names_by_backend(cfg: BotConfig) -> dict[str, str]:
    """Each subscribed backend's key (``kind:where``, as `watch_judge.who_by_backend`) → its name, the
    first subscription's that names it."""
    out: dict[str, str] = {}
    for sub in cfg.subscriptions:
        if sub.backend is not None:
            out.setdefault(sub.backend.key, sub.backend.label)
    return out


def _named_break(x: LandedBreak, names: Mapping[str, str]) -> LandedBreak:
    return replace(x, impacts=tuple(replace(i, name=names.get(i.key, i.name)) for i in x.impacts))


def _named(row: PullRow, names: Mapping[str, str]) -> PullRow:
    """ROW with each backend called by its name in the config (NAMES: backend key → name)."""
    return replace(row, impacts=tuple(replace(i, name=names.get(i.key, i.name)) for i in row.impacts))


def _compact(row: PullRow) -> PullRow:
    """ROW as the state keeps a row the body has no room to show: its counts, not its op names (the
    row comes back with them when it has room, or with its names once its PR is judged again)."""
    return replace(row, impacts=tuple(i.capped(0) for i in row.impacts))


def plan_watch(
    cfg: BotConfig,
    upstream: str,
    previous_body: str | None,
    pulls: PullSource,
    judge: JudgeFn,
    *,
    who: dict[str, tuple[str, ...]],
    warn: Say,
    backends: str | None = None,
    budget: int = DEFAULT_BUDGET,
    now: str | None = None,
    spent: Callable[[], int] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> WatchPlan:
    """The dashboard's next body and the run's comment, from the issue's PREVIOUS_BODY (None: there is
    no issue yet) and what PULLS lists since its watermark. WHO: each subscribed backend → handles;
    BACKENDS: the digest of their lists (`watch_judge.backend_digest`). BUDGET bounds every request
    of the run, the scan's and the judge's (SPENT: the requests sent so far; without it only the
    scan's are counted); NOW (ISO 8601, the current time when None) dates the mentions."""
    now = now or _now()
    started = clock()
    state, problem = read_state(previous_body, who)
    if problem is not None and previous_body is not None:
        warn(problem)
    # Rows judged against other backend lists (a list changed, a backend was added) are judged again,
    # every open PR listed anew; what they said stays the measure of what is news.
    again = state.backends != backends and state != COLD
    if again:
        warn(
            "the subscribed backend lists changed since the last run: every open pull request is judged again"
        )
    # Heads judged before need no compare to tell what they touch: their row (or quiet entry) says it.
    known = () if again else (*(r.head_sha for r in state.rows), *(sha for _, sha in state.quiet))
    failing = [r.number for r in state.retry if r.reason not in (DEFERRED, CLOSED_UNLABELLED)]
    scan = pulls.scan(None if again else state.watermark, budget=budget, known_heads=known, later=failing)
    if not scan.complete:
        warn("the pull request listing stopped at its request budget: the rest is looked at next run")
    rows = {r.number: r for r in state.rows}
    before = dict(rows)
    quiet = dict(state.quiet)
    landed: list[Landed] = []
    broke_now: list[LandedBreak] = []
    tried = {r.number: r for r in state.retry}
    retry: dict[int, Retry] = {}
    judged = 0
    deferred = 0
    closed = {c.number: c for c in state.closed if _hours(c.when, now) < REOPEN_HOURS}

    def affordable() -> bool:
        """Whether another judgement fits the run: its count, its time, the requests of the run."""
        within = spent is None or spent() < budget
        return judged < MAX_JUDGED and clock() - started < JUDGE_SECONDS and within

    def defer(pull: PullRef) -> None:
        # Its row, if any, stays as it was; judged first next run (`_in_turn`), its tries unchanged.
        nonlocal deferred
        old = tried.get(pull.number)
        tries = old.tries if old is not None and old.head_sha == pull.head_sha else 0
        retry[pull.number] = Retry(pull.number, pull.head_sha, DEFERRED, tries)
        deferred += 1

    def too_large(pull: PullRef) -> bool:
        """Whether an operator file at the PR's head is over MAX_JUDGED_BYTES (from the trees: no
        content read); then the PR has a row that says so, and asks nothing of anyone."""
        if max(pulls.head_sizes(pull).values(), default=0) <= MAX_JUDGED_BYTES:
            return False
        warn(
            f"#{pull.number} at {pull.head_sha[:12]}: an operator file is over {MAX_JUDGED_BYTES} bytes: not judged"
        )
        rows[pull.number] = replace(_row(pull, ()), note=TOO_LARGE)
        quiet.pop(pull.number, None)
        return True

    def unread(number: int, head: str, reason: str) -> None:
        # Its row, if any, stays as it was; the watermark moves on, so the retry list is what brings
        # the PR back next run (a failed PR is listed again only when someone updates it).
        old = tried.get(number)
        tries = old.tries + 1 if old is not None and old.head_sha == head else 1
        retry[number] = Retry(number, head, reason[:200], tries)
        then = "tried again next run" if tries < MAX_TRIES else f"given up after {tries} tries"
        warn(f"#{number} at {head[:12]}: cannot read it, so it is not judged ({then}): {reason}")

    def examine(pull: PullRef) -> None:
        nonlocal judged
        if pull.state != "open":
            old = tried.get(pull.number)
            if (
                pull.state == "closed"
                and pull.number in rows
                and not (old is not None and old.reason == CLOSED_UNLABELLED)
            ):
                # The merge bot's push closed it; its `Merged` label comes in a later call, which
                # this run's listing may have missed (see the module docstring).
                retry[pull.number] = Retry(pull.number, pull.head_sha, CLOSED_UNLABELLED, 1)
                return
            retry.pop(pull.number, None)
            gone = rows.pop(pull.number, None)
            quiet.pop(pull.number, None)
            if gone is not None and pull.state == "merged":
                landed.append(Landed(pull.number, landed_title(pull.title), pull.html_url))
                breaking = tuple(build_part(i) for i in gone.impacts if breaks_build(i))
                if breaking:  # its own comment, and the dashboard's top until ticked off
                    broke_now.append(
                        LandedBreak(
                            pull.number, landed_title(pull.title), pull.html_url, pull.updated_at, breaking
                        )
                    )
            elif gone is not None:  # what it asked stays the measure if it reopens within a week
                closed[pull.number] = Closed(pull.number, now, gone.fingerprint)
            return
        row = rows.get(pull.number)
        if row is not None and row.head_sha == pull.head_sha and not again:
            rows[pull.number] = _relisted(row, pull)
            return
        if quiet.get(pull.number) == pull.head_sha and not again:
            return
        try:
            if not pulls.touched(pull):
                rows.pop(pull.number, None)
                quiet.pop(pull.number, None)
                return
            if not affordable():
                defer(pull)
                return
            if too_large(pull):
                return
            impacts = judge(pulls.merge_base(pull), pull.head_sha)
        except (YamlError, SchemaError) as err:
            # Work in progress upstream: a PR whose files do not parse asks nothing yet. Not judged
            # again at this head, and never the end of the run for the other PRs.
            warn(
                f"#{pull.number} at {pull.head_sha[:12]}: its operator files do not parse, so it is not judged: {err}"
            )
            rows.pop(pull.number, None)
            quiet[pull.number] = pull.head_sha
            return
        except (SourceError, ApiLimitError) as err:  # gone, the network, a read's deadline
            unread(pull.number, pull.head_sha, str(err))
            return
        rows.pop(pull.number, None)
        quiet.pop(pull.number, None)
        judged += 1
        if impacts:
            rows[pull.number] = _row(pull, impacts)
        else:
            quiet[pull.number] = pull.head_sha

    failed = {p.number for p, _ in scan.failed}
    for pull in _in_turn(scan.pulls, tried):
        if pull.number not in failed:
            examine(pull)
    for pull, reason in scan.failed:
        unread(pull.number, pull.head_sha, reason)
    listed = {p.number for p in scan.pulls} | failed
    for old in state.retry:  # what the last run could not read, and this listing did not bring
        if old.number in listed:
            continue
        if old.tries >= MAX_TRIES:
            continue
        if not scan.complete or not affordable():  # the budget is spent: kept for a run that can afford it
            retry[old.number] = old
            continue
        try:
            current = pulls.pull(old.number)
        except (SourceError, ApiLimitError) as err:
            unread(old.number, old.head_sha, str(err))
            continue
        examine(current)
    if again and scan.complete:  # listed anew: a row the listing of open PRs lacks is no longer open
        rows = {n: r for n, r in rows.items() if n in listed}
    ordered = tuple(sorted(rows.values(), key=lambda r: (r.updated_at, r.number), reverse=True))
    # What is news is measured against what was told: the row's last fingerprint, or, for a PR that
    # reopened, the one it had when it closed. Drafts, and PRs told less than a day ago, wait.
    seen = {n: frozenset(c.fingerprint) for n, c in closed.items()}
    seen.update({n: frozenset(r.fingerprint) for n, r in before.items()})
    told = {n: when for n, when in state.told if _hours(when, now) < MENTION_HOURS}
    names = names_by_backend(cfg)
    news, fresh, withheld = _announce(tuple(_named(r, names) for r in ordered), seen, told, now)
    ordered = tuple(
        replace(r, fingerprint=tuple(sorted(seen.get(r.number, ())))) if r.number in withheld else r
        for r in ordered
    )
    for n in rows:
        closed.pop(n, None)
    # "Landed since the last run" stays while nothing else changes, so that a quiet run edits nothing.
    changed = landed or ordered != tuple(
        sorted(state.rows, key=lambda r: (r.updated_at, r.number), reverse=True)
    )
    kept_landed = tuple(reversed(landed))[:MAX_LANDED] if changed else state.landed
    watermark = scan.watermark if scan.watermark is not None else state.watermark
    # A re-judgement the budget cut short is not done: the next run carries on judging again.
    judged_against = state.backends if again and not scan.complete else backends
    # Those put off first (they are judged first next run), then the newest PRs.
    retry_kept = tuple(sorted(retry.values(), key=lambda r: (r.reason != DEFERRED, -r.number)))[:MAX_RETRY]
    if deferred > sum(r.reason == DEFERRED for r in retry_kept):
        watermark = state.watermark  # more put off than the retry list holds: listed again next run
    # Landed breaks: this run's first, then the last run's that nobody ticked off and that are not
    # older than BROKE_DAYS, at most MAX_BROKE (the state stays bounded).
    done = ticked(previous_body)
    fresh_numbers = {x.number for x in broke_now}
    broke = (
        *reversed(broke_now),
        *(
            x
            for x in state.broke
            if x.number not in done and x.number not in fresh_numbers and not expired(x.landed_at, watermark)
        ),
    )[:MAX_BROKE]
    view = WatchView(
        upstream=upstream,
        rows=tuple(_named(r, names) for r in ordered),
        landed=kept_landed,
        news=news,
        state_block="",
        complete=scan.complete,
        progress=None if scan.complete else _progress(scan),
        fresh=fresh,
        broke=tuple(_named_break(x, names) for x in broke),
        broke_now=tuple(_named_break(x, names) for x in reversed(broke_now)),
    )
    quiet_kept = tuple(sorted(quiet.items(), reverse=True))[:MAX_QUIET]
    told_kept = tuple(sorted(told.items(), key=lambda x: (x[1], x[0]), reverse=True))[:MAX_TOLD]
    closed_kept = tuple(sorted(closed.values(), key=lambda c: (c.when, c.number), reverse=True))
    full = {r.number: r for r in ordered}

    def kept_state(kept_rows: tuple[PullRow, ...]) -> WatchState:
        return WatchState(
            watermark,
            kept_rows,
            quiet_kept,
            kept_landed,
            judged_against,
            retry_kept,
            told_kept,
            closed_kept,
            broke,
        )

    def state_for(shown: WatchView) -> str:
        # The rows as the body shows them (lists capped to fit), with the fingerprints of what was
        # judged, not of what had room; and the rows it has no room for, compacted: a row dropped
        # from the state would be news again the next time its PR moves.
        on_show = {r.number for r in shown.rows}
        kept = (
            *(replace(r, fingerprint=full[r.number].fingerprint) for r in shown.rows),
            *(_compact(r) for r in ordered if r.number not in on_show),
        )
        return state_block(kept_state(kept))

    body = render_issue(view, state_for)
    # What is published must read back, or the next run starts cold and mentions everyone again.
    back, unreadable = read_state(body, who)
    if unreadable is not None:
        warn(f"the watch state written does not read back ({unreadable}): the next run starts cold")
    else:
        lost = sorted(set(full) - {r.number for r in back.rows})
        if lost:
            named = ", ".join(f"#{n}" for n in lost[:20])
            warn(
                f"{len(lost)} row(s) could not be kept in the watch state ({named}): they will be news again"
            )
    final_state = kept_state(ordered)
    return WatchPlan(
        body, render_comment(view), view, final_state, judged, watch_json(view), render_landed(view)
    )
