"""The `watch` use case: the open upstream pull requests that would affect a subscribed backend, as a
dashboard issue, and one comment per run for what is new.

This module is the run's edges: it reads what the last run saw (`opdrift.app.watch_state`, from the
issue), lists the pull requests updated since (a `PullSource`: `opdrift.github.pulls.PullsClient` in
production), reads and judges those that need it (a `Judge`, `opdrift.app.watch_judge`) within the run's
budget (`gather`), and says the warnings. What follows from all that is decided, pure, by
`opdrift.app.watch_reconcile.reconcile`, step by named step; each row of the dashboard:

- a PR whose head is the one the last run judged keeps its row (its title, draft state and last update
  are taken from the listing): nothing is read or judged again;
- an open PR that touches none of the operator files (`opdrift.model.OPERATOR_PATHS`) has no row;
- any other open PR is judged from its merge base to its head; it has a row when it affects a backend;
- a PR that closed leaves; one that merged leaves and is named under "landed since the last run".
  PyTorch's merge bot closes a PR (its push does) before it labels it ``Merged`` (`opdrift.github.pulljson.
  landed`): a PR with a row seen closed without the label keeps its row one more run, on the retry
  list, so that a label added after this run's listing still names it as landed.
- a PR that cannot be read now (its compare, its files, a read's deadline) keeps its row as it was and
  goes to the state's retry list: the next run fetches it again although the watermark moved past it.

What is news: a row's backend whose impact items (`opdrift.render.context.BackendGap.items`) are not all
in the fingerprint the last run kept for that PR, i.e. the PR newly affects that backend, or asks more
of it: a new op to write, a kernel that would now break (or break in another way), an op it would now
remove. A PR that asks the same or less is not news. The comment names only news, and mentions the
handles of the subscriptions that matched it, each once; no news, no comment.

Nothing here talks to GitHub: the publisher (`opdrift.publish.watch_issue`) reads the issue's body before
and writes what this plans after, only when the body changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from opdrift.app.watch_breaks import ticked
from opdrift.app.watch_reconcile import CLOSED_UNLABELLED as CLOSED_UNLABELLED  # the retry list's reasons
from opdrift.app.watch_reconcile import DEFERRED as DEFERRED
from opdrift.app.watch_reconcile import (
    RunFacts,
    failing,
    in_turn,
    known_heads,
    listed_numbers,
    needs_judging,
    reconcile,
    rejudging,
    scan_since,
)
from opdrift.app.watch_state import MAX_TRIES, WatchState, read_state
from opdrift.app.watch_verdicts import (
    Deferred,
    Judged,
    Judgements,
    Scanned,
    TooLarge,
    Unparsable,
    Unreadable,
    Untouched,
    Verdict,
)
from opdrift.config.file import BotConfig
from opdrift.errors import ApiLimitError, SchemaError, SourceError, YamlError
from opdrift.github.pulls import DEFAULT_BUDGET
from opdrift.model import PullRef
from opdrift.render.context import BackendGap
from opdrift.render.watch import WatchView

Say = Callable[[str], None]
# What one run judges at most, and for how long (each judgement reads about five answers and parses
# two native_functions.yaml): a fork force-pushing hundreds of PRs hourly cannot take the run, and
# what is left waits on the retry list, judged first next run.
MAX_JUDGED = 60  # pytorch/pytorch has about 60 open PRs touching the operator files
JUDGE_SECONDS = 300.0
# A PR-head operator file past this is not judged (the real native_functions.yaml is 0.63 MB; GitHub
# takes files of 100 MB, and parsing 64 MB of YAML costs a run about 50 s and 800 MB). Read from the
# tree's blob size before any content is downloaded.
MAX_JUDGED_BYTES = 8 * 1024 * 1024


class PullSource(Protocol):
    """What `watch` asks of the upstream repository (`opdrift.github.pulls.PullsClient`)."""

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


JudgeFn = Callable[[str, str], tuple[BackendGap, ...]]  # (merge base sha, head sha) → impacts


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


@dataclass
class _Budget:
    """Whether another judgement fits the run: its count, its time, the requests of the run (SPENT:
    the requests sent so far; without it only the scan's are counted)."""

    budget: int
    spent: Callable[[], int] | None
    clock: Callable[[], float]
    started: float
    judged: int = 0

    def affordable(self) -> bool:
        within = self.spent is None or self.spent() < self.budget
        return self.judged < MAX_JUDGED and self.clock() - self.started < JUDGE_SECONDS and within


def _verdict(pull: PullRef, pulls: PullSource, judge: JudgeFn, budget: _Budget) -> Verdict:
    """What reading and judging PULL at its head finds, as far as the budget goes."""
    try:
        if not pulls.touched(pull):
            return Untouched()
        if not budget.affordable():
            return Deferred()
        # From the trees' blob sizes: no content read for a PR too large to judge.
        if max(pulls.head_sizes(pull).values(), default=0) > MAX_JUDGED_BYTES:
            return TooLarge(MAX_JUDGED_BYTES)
        impacts = judge(pulls.merge_base(pull), pull.head_sha)
    except (YamlError, SchemaError) as err:  # work in progress upstream
        return Unparsable(str(err))
    except (SourceError, ApiLimitError) as err:  # gone, the network, a read's deadline
        return Unreadable(str(err))
    budget.judged += 1
    return Judged(impacts)


def gather(
    state: WatchState, scan: Scanned, pulls: PullSource, judge: JudgeFn, budget: _Budget, *, again: bool
) -> Judgements:
    """The edge's reads, in the order `reconcile` examines the PRs: a verdict for each listed PR that
    needs one (`needs_judging`), then the retry list's PRs the listing lacked, fetched again while
    the listing was complete and the budget lasts."""
    verdicts: dict[int, Verdict] = {}
    failed = {p.number for p, _ in scan.failed}
    for pull in in_turn(scan.pulls, {r.number: r for r in state.retry}):
        if pull.number not in failed and needs_judging(pull, state, again):
            verdicts[pull.number] = _verdict(pull, pulls, judge, budget)
    fetched: list[PullRef] = []
    unfetched: dict[int, str] = {}
    listed = listed_numbers(scan)
    for old in state.retry:
        if old.number in listed or old.tries >= MAX_TRIES:
            continue
        if not scan.complete or not budget.affordable():  # kept for a run that can afford it
            continue
        try:
            current = pulls.pull(old.number)
        except (SourceError, ApiLimitError) as err:
            unfetched[old.number] = str(err)
            continue
        fetched.append(current)
        if needs_judging(current, state, again):
            verdicts[current.number] = _verdict(current, pulls, judge, budget)
    return Judgements(verdicts, tuple(fetched), unfetched)


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
    scan's are counted); NOW (ISO 8601, the current time when None) dates the mentions. CFG names
    the backends."""
    now = now or _now()
    started = clock()
    state, problem = read_state(previous_body, who)
    if problem is not None and previous_body is not None:
        warn(problem)
    again = rejudging(state, backends)
    if again:
        warn(
            "the subscribed backend lists changed since the last run: every open pull request is judged again"
        )
    scan = pulls.scan(
        scan_since(state, again), budget=budget, known_heads=known_heads(state, again), later=failing(state)
    )
    if not scan.complete:
        warn("the pull request listing stopped at its request budget: the rest is looked at next run")
    judgements = gather(state, scan, pulls, judge, _Budget(budget, spent, clock, started), again=again)
    facts = RunFacts(upstream, now, backends, who, names_by_backend(cfg), ticked(previous_body))
    done = reconcile(state, scan, judgements, facts)
    for note in done.notes:
        warn(note)
    return WatchPlan(
        done.body, done.comment, done.view, done.state, judgements.judged, done.json, done.landed_comments
    )
