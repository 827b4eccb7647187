"""The watch's pure reconciliation (opdrift.app.watch_reconcile), step by step, over plain records: a
state, a scan and the verdicts made by hand, no upstream, no judge, no HTTP, no git. What the whole
run does against real PyTorch files and a fake GitHub is tests/test_watch*.py's."""

from __future__ import annotations

from dataclasses import dataclass, replace

from opdrift.app.watch_reconcile import (
    CLOSED_UNLABELLED,
    DEFERRED,
    MENTION_HOURS,
    TOO_LARGE,
    Board,
    RunFacts,
    announce,
    drop_unlisted,
    examine,
    examine_listed,
    examine_retries,
    in_turn,
    kept_broke,
    leave,
    needs_judging,
    next_state,
    opening,
    progress,
    read_back,
    reconcile,
    take,
    told_news,
    unread,
)
from opdrift.app.watch_state import COLD, MAX_TRIES, Closed, Retry, WatchState, read_state
from opdrift.app.watch_verdicts import (
    Deferred,
    Judged,
    Judgements,
    TooLarge,
    Unparsable,
    Unreadable,
    Untouched,
    Verdict,
)
from opdrift.model import PullRef
from opdrift.render.context import BackendGap, BrokenKernel
from opdrift.render.watch import (
    Landed,
    LandedBreak,
    PullRow,
    ScanProgress,
    fingerprint,
)

XLA = "xla:xla_native_functions.yaml"
WHO = {XLA: ("@xla-team",)}
NOW = "2026-12-07T12:00:00Z"
FACTS = RunFacts("pytorch/pytorch", NOW, None, WHO, {XLA: "XLA"})


@dataclass(frozen=True)
class Scan:
    """A listing as `opdrift.github.pulls.Scan` gives one."""

    pulls: tuple[PullRef, ...] = ()
    watermark: str | None = "2026-12-07T11:59:00Z"
    complete: bool = True
    failed: tuple[tuple[PullRef, str], ...] = ()
    listed_open: int = 0
    listed_whole: bool = True
    examined_open: int = 0
    paid: int = 0


def pull(n: int, head: str = "a", *, state: str = "open", draft: bool = False, updated: str = NOW) -> PullRef:
    return PullRef(
        number=n, title=f"PR {n}", author="someone", draft=draft, state=state,  # type: ignore[arg-type]
        updated_at=updated, html_url=f"https://github.com/pytorch/pytorch/pull/{n}",
        head_sha=head * 40, base_sha="b" * 40,
    )  # fmt: skip


def needs(*ops: str) -> tuple[BackendGap, ...]:
    return (BackendGap(("@xla-team",), "xla", "xla_native_functions.yaml", ops=ops),)


def breaks(op: str) -> tuple[BackendGap, ...]:
    return (
        BackendGap(("@xla-team",), "xla", "xla_native_functions.yaml", broken=(BrokenKernel(op, "SymInt"),)),
    )


def row(n: int, head: str = "a", impacts: tuple[BackendGap, ...] = (), *, updated: str = NOW) -> PullRow:
    p = pull(n, head, updated=updated)
    impacts = impacts or needs("add.Tensor")
    return PullRow(
        n, p.title, p.author, False, updated, p.html_url, p.head_sha, impacts, fingerprint(impacts)
    )


def board(*rows: PullRow, **kw: object) -> Board:
    return replace(Board(rows={r.number: r for r in rows}, quiet={}, retry={}, closed={}), **kw)  # type: ignore[arg-type]


# 1. opening


def test_opening_keeps_the_rows_and_quiet_heads_and_only_a_weeks_closings() -> None:
    state = WatchState(
        rows=(row(1),),
        quiet=((2, "c" * 40),),
        closed=(Closed(3, "2026-12-06T12:00:00Z", ("0" * 10,)), Closed(4, "2026-11-29T12:00:00Z", ())),
        retry=(Retry(5, "d" * 40, "gone"),),
    )
    b = opening(state, NOW)
    assert list(b.rows) == [1] and b.quiet == {2: "c" * 40} and list(b.closed) == [3]
    assert b.retry == {} and b.landed == () and b.notes == ()  # the retry list is this run's to fill


# needs_judging and in_turn: what the edge asks the upstream about, and in which order


def test_a_pr_is_judged_unless_the_last_run_judged_it_at_this_head_against_the_same_lists() -> None:
    state = WatchState(rows=(row(1, "a"),), quiet=((2, "c" * 40),))
    assert not needs_judging(pull(1, "a"), state, again=False)  # its row says it
    assert not needs_judging(pull(2, "c"), state, again=False)  # its quiet entry says it
    assert needs_judging(pull(1, "e"), state, again=False)  # a new head
    assert needs_judging(pull(3), state, again=False)  # never seen
    assert needs_judging(pull(1, "a"), state, again=True)  # other backend lists: judged again
    assert not needs_judging(pull(1, "a", state="merged"), state, again=True)  # only open PRs


def test_in_turn_puts_the_deferred_first_then_the_least_recently_updated_each_once() -> None:
    old, new = "2026-12-07T10:00:00Z", "2026-12-07T11:00:00Z"
    listed = (
        pull(1, "f", updated=new),
        pull(2, updated=new),
        pull(3, updated=old),
        pull(1, "a", updated=old),
    )
    tried = {2: Retry(2, "a" * 40, DEFERRED, 0)}
    assert [(p.number, p.head_sha[0]) for p in in_turn(listed, tried)] == [(2, "a"), (3, "a"), (1, "f")]
    # put off at another head: no longer first
    assert [p.number for p in in_turn(listed, {2: Retry(2, "e" * 40, DEFERRED, 0)})] == [3, 1, 2]


# 2. examining: leave, take, unread, examine


def test_a_merged_pr_with_a_row_lands_and_its_build_break_is_told() -> None:
    b = leave(
        board(row(1, impacts=needs("x")), row(2, impacts=breaks("add.Tensor"))),
        pull(2, state="merged"),
        {},
        NOW,
    )
    assert list(b.rows) == [1] and b.landed == (Landed(2, "PR 2", pull(2).html_url),)
    (broke,) = b.broke_now
    assert broke.number == 2 and broke.landed_at == NOW and broke.impacts[0].broken[0].op == "add.Tensor"
    quiet = leave(board(row(1, impacts=needs("x"))), pull(1, state="merged"), {}, NOW)
    assert quiet.landed and quiet.broke_now == ()  # asked for work, broke nothing
    assert leave(board(), pull(3, state="merged"), {}, NOW) == board()  # no row: nothing to name


def test_a_pr_closed_with_a_row_is_looked_at_once_more_then_keeps_its_fingerprint_a_week() -> None:
    r = row(1)
    first = leave(board(r), pull(1, state="closed"), {}, NOW)
    assert first.rows == {1: r} and first.retry == {1: Retry(1, "a" * 40, CLOSED_UNLABELLED, 1)}
    tried = {1: Retry(1, "a" * 40, CLOSED_UNLABELLED, 1)}
    second = leave(board(r), pull(1, state="closed"), tried, NOW)
    assert second.rows == {} and second.retry == {} and second.landed == ()
    assert second.closed == {1: Closed(1, NOW, r.fingerprint)}


def test_each_verdict_on_the_board() -> None:
    r, p = row(1, "a"), pull(1, "e")
    start = board(r, quiet={9: "9" * 40})
    judged = take(start, p, Judged(breaks("mul.Tensor")), {})
    assert judged.rows[1].head_sha == "e" * 40 and judged.rows[1].impacts == breaks("mul.Tensor")
    assert take(start, p, Judged(()), {}).rows == {} and take(start, p, Judged(()), {}).quiet[1] == "e" * 40
    assert take(start, p, Untouched(), {}).rows == {} and 1 not in take(start, p, Untouched(), {}).quiet
    large = take(start, p, TooLarge(8), {})
    assert (
        large.rows[1].note == TOO_LARGE and large.rows[1].impacts == () and "over 8 bytes" in large.notes[0]
    )
    broken = take(start, p, Unparsable("line 3: bad"), {})
    assert broken.rows == {} and broken.quiet[1] == "e" * 40 and broken.notes[0].endswith("line 3: bad")
    # the row stays as it was, the PR goes to the retry list
    unreadable = take(start, p, Unreadable("timed out"), {})
    assert unreadable.rows == {1: r} and unreadable.retry[1] == Retry(1, "e" * 40, "timed out", 1)
    deferred = take(start, p, Deferred(), {1: Retry(1, "e" * 40, DEFERRED, 3)})
    assert (
        deferred.rows == {1: r}
        and deferred.retry[1] == Retry(1, "e" * 40, DEFERRED, 3)
        and deferred.deferred == 1
    )


def test_unread_counts_tries_at_one_head_and_says_when_it_gives_up() -> None:
    once = unread(board(), 1, "a" * 40, "x" * 300, {})
    assert once.retry[1] == Retry(1, "a" * 40, "x" * 200, 1) and "tried again next run" in once.notes[0]
    last = unread(board(), 1, "a" * 40, "gone", {1: Retry(1, "a" * 40, "gone", MAX_TRIES - 1)})
    assert last.retry[1].tries == MAX_TRIES and f"given up after {MAX_TRIES} tries" in last.notes[0]
    assert unread(board(), 1, "e" * 40, "gone", {1: Retry(1, "a" * 40, "gone", 5)}).retry[1].tries == 1


def test_examine_relists_a_row_at_its_head_and_puts_off_a_pr_the_edge_did_not_get_to() -> None:
    state = WatchState(rows=(row(1, "a"),))
    relisted = examine(
        board(row(1, "a")),
        replace(pull(1, "a"), title="Renamed", draft=True),
        Judgements(),
        state,
        False,
        NOW,
    )
    assert relisted.rows[1].title == "Renamed" and relisted.rows[1].draft
    missed = examine(board(), pull(2), Judgements(), state, False, NOW)
    assert missed.retry[2].reason == DEFERRED and missed.deferred == 1


def test_the_listing_is_examined_in_turn_then_what_it_could_not_examine_is_unread() -> None:
    state = COLD
    scan = Scan(pulls=(pull(1), pull(2, "c")), failed=((pull(2, "c"), "compare failed"),))
    b = examine_listed(
        board(), state, scan, Judgements({1: Judged(needs("x")), 2: Judged(needs("y"))}), False, NOW
    )
    assert list(b.rows) == [1]  # a failed PR's verdict is not taken: it goes to the retry list
    assert b.retry[2].reason == "compare failed" and b.notes == (b.notes[0],)


# 3. the retry list


def test_the_retry_list_fetched_again_unfetched_kept_or_given_up() -> None:
    retry = (
        Retry(1, "a" * 40, "gone"),  # fetched again, now merged
        Retry(2, "a" * 40, "gone", 2),  # cannot be fetched
        Retry(3, "a" * 40, "gone"),  # the budget was spent before it
        Retry(4, "a" * 40, "gone", MAX_TRIES),  # given up
        Retry(5, "a" * 40, "gone"),  # listed by this scan: examined there
    )
    state = WatchState(rows=(row(1),), retry=retry)
    judgements = Judgements(fetched=(pull(1, state="merged"),), unfetched={2: "not found"})
    b = examine_retries(opening(state, NOW), state, Scan(pulls=(pull(5),)), judgements, False, NOW)
    assert [x.number for x in b.landed] == [1] and 1 not in b.retry
    assert b.retry[2] == Retry(2, "a" * 40, "not found", 3) and b.retry[3] == retry[2]
    assert 4 not in b.retry and 5 not in b.retry


# 4. after a re-judgement


def test_a_complete_relisting_drops_the_rows_it_lacks_and_an_incomplete_one_keeps_them() -> None:
    b = board(row(1), row(2))
    assert list(drop_unlisted(b, Scan(pulls=(pull(2),)), again=True).rows) == [2]
    assert drop_unlisted(b, Scan(pulls=(pull(2),), complete=False), again=True) == b
    assert drop_unlisted(b, Scan(pulls=(pull(2),)), again=False) == b


# 5. what is news


def test_news_is_what_grew_past_what_was_told_marked_when_some_of_it_was_said() -> None:
    told_fp = {1: frozenset(fingerprint(needs("a"))), 2: frozenset(fingerprint(needs("a", "b")))}
    rows = (row(1, impacts=needs("a", "b")), row(2, impacts=needs("a")), row(3, impacts=needs("c")))
    said = announce(rows, told_fp, {}, NOW)
    assert [(r.number, len(i)) for r, i in said.news] == [(1, 1), (3, 1)]  # #2 asks less: not news
    assert set(said.fresh) == {f"1\0{XLA}"} and len(said.fresh[f"1\0{XLA}"]) == 1  # only "b" is new
    assert said.told == {1: NOW, 3: NOW} and said.withheld == frozenset()


def test_a_draft_and_a_pr_told_within_the_day_are_withheld() -> None:
    draft = replace(row(1), draft=True)
    told = {2: "2026-12-07T02:00:00Z", 3: "2026-12-06T11:00:00Z"}
    said = announce((draft, row(2), row(3)), {}, told, NOW)
    assert [r.number for r, _ in said.news] == [3] and said.withheld == {1, 2}
    assert said.told == {2: told[2], 3: NOW}  # #2 keeps its time: the day runs from then
    assert MENTION_HOURS == 24


def test_a_reopened_pr_is_measured_against_its_closing_and_a_withheld_row_keeps_the_told_fingerprint() -> (
    None
):
    closed_fp = fingerprint(needs("a"))
    state = WatchState(rows=(replace(row(2), draft=True),))
    b = board(
        row(1, impacts=needs("a")),
        replace(row(2, impacts=needs("a", "z")), draft=True),
        closed={1: Closed(1, NOW, closed_fp)},
    )
    ordered, said = told_news(state, b, FACTS)
    assert said.news == ()  # #1 asks what it asked when it closed; #2 is a draft
    assert {r.number: r.fingerprint for r in ordered}[2] == row(2).fingerprint  # not its grown one
    assert said.news == () and all(i.name == "" for r in ordered for i in r.impacts)  # names are the view's


# 6. what is kept


def test_landed_breaks_this_runs_first_then_the_last_runs_not_ticked_not_expired() -> None:
    def lb(n: int, when: str = NOW) -> LandedBreak:
        return LandedBreak(n, f"PR {n}", pull(n).html_url, when, breaks("x"))

    state = WatchState(broke=(lb(1), lb(2), lb(3, "2026-11-01T00:00:00Z"), lb(4)))
    b = board(broke_now=(lb(4), lb(5)))
    assert [x.number for x in kept_broke(state, b, frozenset({2}), NOW)] == [5, 4, 1]


def test_next_state_holds_the_watermark_when_more_was_put_off_than_the_retry_list_keeps() -> None:
    state = WatchState(watermark="2026-12-01T00:00:00Z", backends="0" * 64)
    deferred = {n: Retry(n, "a" * 40, DEFERRED, 0) for n in range(1, 41)}
    b = board(retry=deferred, deferred=40)
    said = announce((), {}, {}, NOW)
    kept = next_state(state, b, Scan(), (), said, replace(FACTS, backends="1" * 64))
    assert len(kept.retry) == 30 and kept.watermark == state.watermark  # ten of them were not kept
    assert kept.backends == "1" * 64
    moved = next_state(
        state, board(retry=dict(list(deferred.items())[:3]), deferred=3), Scan(), (), said, FACTS
    )
    assert moved.watermark == Scan().watermark
    # a re-judgement the budget cut short carries on next run: still judged against the old lists
    cut = next_state(state, board(), Scan(complete=False), (), said, replace(FACTS, backends="1" * 64))
    assert cut.backends == "0" * 64


def test_landed_stays_while_nothing_changes_and_is_replaced_when_something_does() -> None:
    state = WatchState(rows=(row(1),), landed=(Landed(7, "PR 7", pull(7).html_url),))
    said = announce((), {}, {}, NOW)
    assert next_state(state, board(row(1)), Scan(), (row(1),), said, FACTS).landed == state.landed
    assert next_state(state, board(), Scan(), (), said, FACTS).landed == ()


def test_progress_says_how_many_runs_the_rest_takes_at_this_runs_pace() -> None:
    assert progress(Scan()) is None
    assert progress(Scan(complete=False, listed_open=100, examined_open=10, paid=30)) == ScanProgress(
        10, 100, True, 3
    )
    assert progress(Scan(complete=False, listed_open=100, examined_open=10)) == ScanProgress(
        10, 100, True, None
    )


# 7. the body, read back


def test_read_back_says_when_the_body_has_no_state_or_lost_rows() -> None:
    (said,) = read_back("no block", WatchState(rows=(row(1),)), WHO)
    assert "does not read back" in said
    done = reconcile(COLD, Scan(pulls=(pull(1),)), Judgements({1: Judged(needs("x"))}), FACTS)
    assert read_back(done.body, done.state, WHO) == ()
    (lost,) = read_back(done.body, replace(done.state, rows=(*done.state.rows, row(2))), WHO)
    assert lost.startswith("1 row(s) could not be kept") and "#2" in lost


# the steps composed


def test_reconcile_from_cold_to_a_second_quiet_run() -> None:
    scan = Scan(pulls=(pull(1), pull(2, "c"), pull(3, "e")))
    verdicts: dict[int, Verdict] = {1: Judged(breaks("add.Tensor")), 2: Untouched(), 3: Judged(())}
    first = reconcile(COLD, scan, Judgements(verdicts), FACTS)
    assert [r.number for r in first.view.rows] == [1] and first.view.rows[0].impacts[0].label == "XLA"
    assert first.state.quiet == ((3, "e" * 40),) and first.notes == ()
    (comment,) = first.comments
    assert "@xla-team" in comment and "@xla-team" not in first.body
    state, problem = read_state(first.body, WHO)
    assert problem is None and state == replace(first.state, rows=state.rows) and state.rows[0].number == 1
    # the next run lists the same PRs at the same heads: only #2, which touched no operator file
    # and so left no trace, is asked about again; nothing is said or changed
    assert [p.number for p in scan.pulls if needs_judging(p, state, again=False)] == [2]
    later = replace(FACTS, now="2026-12-07T13:00:00Z")
    again = reconcile(state, scan, Judgements({2: Untouched()}), later)
    assert again.comments == () and again.body == first.body
    # without its verdict (the edge had no budget left), #2 waits on the retry list, judged first
    put_off = reconcile(state, scan, Judgements(), later)
    assert put_off.state.retry == (Retry(2, "c" * 40, DEFERRED, 0),) and put_off.comments == ()
