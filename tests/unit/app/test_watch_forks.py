"""`opdrift watch` against hostile fork pull requests: each attack of the security
review reproduced on `plan_watch` with a scripted upstream (`Forks`) and a scripted judge, so that a
run of hundreds of pull requests costs milliseconds. The impacts are shaped as the real judge makes
them (`BackendGap`); the real judge over real PyTorch files is tests/unit/app/test_watch.py's."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from opdrift.app.watch import DEFERRED, MAX_JUDGED, WatchPlan, plan_watch
from opdrift.app.watch_state import (
    MAX_BROKE,
    MAX_CLOSED,
    MAX_LANDED,
    MAX_QUIET,
    MAX_RETRY,
    MAX_STATE_CHARS,
    MAX_TOLD,
    Closed,
    Retry,
    WatchState,
    read_state,
    state_block,
)
from opdrift.config.file import BotConfig
from opdrift.github.pulls import Scan
from opdrift.model import OPERATOR_PATHS, PullRef
from opdrift.render.context import BackendGap, BrokenKernel
from opdrift.render.watch import Landed, LandedBreak, PullRow

XLA = "xla:xla_native_functions.yaml"
WHO: dict[str, tuple[str, ...]] = {XLA: ("@xla-team",)}
CFG = BotConfig()
EMOJI = "\U0001f600" * 256  # a title GitHub takes (256 characters)


def breaks(op: str) -> tuple[BackendGap, ...]:
    return (
        BackendGap(("@xla-team",), "xla", "xla_native_functions.yaml", broken=(BrokenKernel(op, "SymInt"),)),
    )


def needs(*ops: str) -> tuple[BackendGap, ...]:
    return (BackendGap(("@xla-team",), "xla", "xla_native_functions.yaml", ops=tuple(sorted(ops))),)


@dataclass
class Forks:
    """The upstream's pull requests, each touching native_functions.yaml; a clock of minutes."""

    pulls: dict[int, PullRef] = field(default_factory=dict)
    minute: int = 0
    sizes: dict[str, int] = field(default_factory=dict)  # head sha → native_functions.yaml's bytes
    requests: int = 0  # what the upstream was asked, the judge's reads included (Judged adds them)

    def now(self) -> str:
        return (
            f"2026-12-{5 + self.minute // 1440:02d}T{self.minute // 60 % 24:02d}:{self.minute % 60:02d}:00Z"
        )

    def hours(self, n: int) -> None:
        self.minute += 60 * n

    def put(
        self, number: int, head: str, *, title: str = "", draft: bool = False, state: str = "open"
    ) -> None:
        self.minute += 1
        self.pulls[number] = PullRef(
            number=number, title=title or f"PR {number}", author="forker", draft=draft,
            state=state,  # type: ignore[arg-type]
            updated_at=self.now(), html_url=f"https://github.com/pytorch/pytorch/pull/{number}",
            head_sha=head, base_sha="b" * 40,
        )  # fmt: skip

    def scan(
        self,
        since: str | None,
        *,
        budget: int = 800,
        known_heads: Collection[str] = (),
        later: Collection[int] = (),
    ) -> Scan:
        self.requests += 1
        found = sorted(
            (p for p in self.pulls.values() if since is None or p.updated_at >= since),
            key=lambda p: p.updated_at,
            reverse=True,
        )
        return Scan(tuple(found), found[0].updated_at if found else since, True)

    def touched(self, pull: PullRef) -> tuple[str, ...]:
        return OPERATOR_PATHS[:1]

    def merge_base(self, pull: PullRef) -> str:
        return "b" * 40

    def pull(self, number: int) -> PullRef:
        self.requests += 1
        return self.pulls[number]

    def head_sizes(self, pull: PullRef) -> dict[str, int]:
        return {OPERATOR_PATHS[0]: self.sizes.get(pull.head_sha, 630_000)}


def sha(n: int) -> str:
    return f"{n:040x}"


@dataclass
class Watch:
    """Runs of `plan_watch`, each reading the body the last one wrote; JUDGE maps a head to impacts."""

    forks: Forks = field(default_factory=Forks)
    judge: dict[str, tuple[BackendGap, ...]] = field(default_factory=dict)
    body: str | None = None
    warnings: list[str] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)
    budget: int = 800

    def __call__(self) -> WatchPlan:
        def judge(base: str, head: str) -> tuple[BackendGap, ...]:
            self.judged.append(head)
            self.forks.requests += 5  # two commits, two trees, a blob: what a judgement reads
            return self.judge[head]

        start = self.forks.requests
        plan = plan_watch(
            CFG, "pytorch/pytorch", self.body, self.forks, judge, who=WHO, warn=self.warnings.append,
            budget=self.budget, now=self.forks.now(), spent=lambda: self.forks.requests - start,
        )  # fmt: skip
        self.body = plan.body
        self.forks.hours(1)
        return plan


def news(plan: WatchPlan) -> list[int]:
    return [r.number for r, _ in plan.view.news]


def kept(plan: WatchPlan) -> set[int]:
    return {r.number for r in read_state(plan.body, WHO)[0].rows}


# 1. Emoji titles must not evict a real row from the state.


def test_fork_prs_titled_with_emoji_do_not_push_a_real_row_out_of_the_state() -> None:
    w = Watch()
    w.forks.put(1, sha(1), title="mean: a fast path")
    w.judge[sha(1)] = breaks("mean.dim")
    for n in range(2, 40):  # newer than #1, each asking for thirty ops XLA lacks, under an emoji title
        w.forks.put(n, sha(n), title=EMOJI)
        w.judge[sha(n)] = needs(*(f"op_{n}_{i}_with_a_long_overload_name.out" for i in range(30)))
    first = w()
    assert 1 in news(first)
    assert 1 in kept(first)
    assert len(first.body) <= 65_536
    second = w()  # nothing changed: #1 is not announced again
    assert 1 not in news(second) and second.comment == ""


# 2. The writer bounds every section: the worst a hostile upstream can fill still reads back.


def test_the_worst_state_a_hostile_upstream_can_fill_is_written_within_what_the_reader_takes() -> None:
    nasty = ('-\x01"\\\U0001f600' * 100)[:300]  # what takes most when written: 6, 6, 2, 2, 12 characters
    url = "https://github.com/pytorch/pytorch/pull/{}"
    fp = tuple(f"{i:010x}" for i in range(48))
    many = needs(*(f"op_{i}_overload.out" for i in range(30)))
    rows = tuple(
        PullRow(
            n,
            nasty,
            "forker",
            False,
            f"2026-12-05T{n % 24:02d}:00:00Z",
            url.format(n),
            sha(n),
            breaks("mean.dim") if n == 7 else many,
            fp,
        )
        for n in range(1, 60)
    )
    state = WatchState(
        watermark="2026-12-05T01:00:00Z",
        rows=rows,
        quiet=tuple((9_999_999_000 + i, sha(i)) for i in range(MAX_QUIET)),
        landed=tuple(
            Landed(9_999_990_000 + i, nasty, url.format(9_999_990_000 + i)) for i in range(MAX_LANDED)
        ),
        backends="a" * 64,
        retry=tuple(Retry(9_999_980_000 + i, sha(i), nasty, 3) for i in range(MAX_RETRY)),
        told=tuple((9_999_970_000 + i, "2026-12-05T01:00:00Z") for i in range(MAX_TOLD)),
        closed=tuple(Closed(9_999_960_000 + i, "2026-12-05T01:00:00Z", fp) for i in range(MAX_CLOSED)),
        # landed PRs that break the build, each removing thirty long-named ops under a nasty title
        broke=tuple(
            LandedBreak(
                9_999_950_000 + i,
                nasty,
                url.format(9_999_950_000 + i),
                "2026-12-05T01:00:00Z",
                (
                    replace(
                        breaks("mean.dim")[0], removed=tuple(f"op_{i}_{j}_" + "x" * 150 for j in range(30))
                    ),
                ),
            )
            for i in range(MAX_BROKE)
        ),
    )
    block = state_block(state)
    assert len(block) <= MAX_STATE_CHARS + 40
    back, problem = read_state(block, WHO)
    assert problem is None
    assert 7 in {r.number for r in back.rows}  # the row that breaks a kernel is the last to go
    assert len(back.quiet) == MAX_QUIET and back.landed and back.retry and back.told and back.closed
    assert 0 < len(back.broke) < MAX_BROKE  # the newest landed breaks, within their share
    assert len(back.rows) >= 5


# 3. Mention spam: drafts, a fork force-pushed hourly, a PR closed and reopened.


def mentions(plan: WatchPlan) -> int:
    return plan.comment.count("@xla-team")


def test_a_fork_force_pushed_hourly_with_a_new_op_mentions_at_most_once_a_day() -> None:
    w = Watch()
    w.forks.put(1, sha(1000))
    w.judge[sha(1000)] = needs("op_0")
    told = [mentions(w())]
    for hour in range(1, 49):
        head = sha(1000 + hour)
        w.judge[head] = needs(*(f"op_{i}" for i in range(hour + 1)))  # one more op each push
        w.forks.put(1, head)
        told.append(mentions(w()))
    assert told[0] == 1 and sum(told) <= 3  # the first, then at most once a day
    assert sum(told[1:25]) <= 1
    # the dashboard shows each push meanwhile
    assert w.body is not None and "49 ops" in w.body


def test_a_draft_mentions_nobody_until_it_is_ready() -> None:
    w = Watch()
    w.forks.put(1, sha(1), draft=True)
    w.judge[sha(1)] = breaks("mean.dim")
    first = w()
    assert mentions(first) == 0 and 1 in kept(first)
    assert mentions(w()) == 0
    w.forks.put(1, sha(1), draft=False)  # marked ready: the same head, now news
    ready = w()
    assert mentions(ready) == 1 and news(ready) == [1]
    assert mentions(w()) == 0


def test_a_pr_closed_and_reopened_is_not_news_again() -> None:
    w = Watch()
    w.forks.put(1, sha(1))
    w.judge[sha(1)] = breaks("mean.dim")
    assert mentions(w()) == 1
    for _ in range(3):  # closed: its row goes (after the one more look for a landing label)
        w.forks.put(1, sha(1), state="closed")
        w.forks.hours(24)
        w()
    assert 1 not in kept(w())
    w.forks.put(1, sha(2))  # reopened, force-pushed: asks the same
    w.judge[sha(2)] = breaks("mean.dim")
    again = w()
    assert 1 in kept(again) and mentions(again) == 0 and news(again) == []


# 4. One budget for every request; judgements capped per run, the rest carried over.


def test_a_flood_of_force_pushed_prs_cannot_spend_more_than_the_budget_nor_starve_a_real_pr() -> None:
    w = Watch(budget=300)
    for n in range(1, 171):
        w.forks.put(n, sha(n))
        w.judge[sha(n)] = ()
    w()
    for hour in range(1, 4):
        before = w.forks.requests
        for n in range(1, 171):  # every fork PR force-pushed again
            head = sha(hour * 1000 + n)
            w.judge[head] = ()
            w.forks.put(n, head)
        if hour == 1:
            w.forks.put(500, sha(500), title="the real one")
            w.judge[sha(500)] = breaks("mean.dim")
        plan = w()
        assert w.forks.requests - before <= 300 + 5  # one judgement may start under the budget
        assert len([h for h in w.judged if h.startswith(f"{hour:037x}") or h == sha(500)]) <= MAX_JUDGED
        if hour >= 2:
            assert 500 in {r.number for r in plan.view.rows}, hour


def test_judging_stops_at_its_time_budget_and_carries_the_rest_over() -> None:
    now = [0.0]
    w = Watch()
    for n in range(1, 11):
        w.forks.put(n, sha(n))
        w.judge[sha(n)] = breaks("mean.dim")

    def slow(base: str, head: str) -> tuple[BackendGap, ...]:
        now[0] += 100.0  # each judgement takes 100 s
        return w.judge[head]

    def run() -> WatchPlan:
        plan = plan_watch(
            CFG, "pytorch/pytorch", w.body, w.forks, slow, who=WHO, warn=w.warnings.append,
            now=w.forks.now(), clock=lambda: now[0],
        )  # fmt: skip
        w.body = plan.body
        w.forks.hours(1)
        return plan

    first = run()
    assert len(first.view.rows) == 3  # 0, 100, 200 s: the fourth would start past 300 s
    assert {r.reason for r in read_state(first.body, WHO)[0].retry} == {DEFERRED}
    seen = {r.number for r in first.view.rows}
    for _ in range(3):
        seen |= {r.number for r in run().view.rows}
    assert seen == set(range(1, 11))


# 6. A huge operator file at a fork's head is not judged: a row note, no mention, no download.


def test_a_64_mb_native_functions_at_a_fork_head_is_not_judged_and_mentions_nobody() -> None:
    w = Watch()
    w.forks.put(1, sha(1), title="huge")
    w.forks.sizes[sha(1)] = 64 * 1024 * 1024
    w.forks.put(2, sha(2))
    w.judge[sha(2)] = breaks("mean.dim")
    plan = w()
    assert sha(1) not in w.judged and news(plan) == [2] and mentions(plan) == 1
    assert "over 8 MB" in plan.body and 1 in kept(plan)
    again = w()
    assert sha(1) not in w.judged and again.comment == "" and again.body == plan.body


def test_growth_held_back_within_the_day_is_marked_new_when_told() -> None:
    """The mention limit and the 🆕 mark of a grown impact together: what a PR added since its last mention, across
    the runs that held it back, is what the comment marks when the day is over; what was told then
    is not marked."""
    w = Watch()
    w.forks.put(1, sha(1))
    w.judge[sha(1)] = needs("op_a")
    assert mentions(w()) == 1
    w.forks.put(1, sha(2))  # an hour later: one more op, held back
    w.judge[sha(2)] = needs("op_a", "op_b")
    held = w()
    assert mentions(held) == 0 and held.view.fresh == {}
    w.forks.hours(24)
    w.forks.put(1, sha(3))  # a day on: one more again, told with everything since the last mention
    w.judge[sha(3)] = needs("op_a", "op_b", "op_c")
    told = w()
    assert mentions(told) == 1
    (marks,) = told.view.fresh.values()
    assert {m.rsplit("\0", 1)[1] for m in marks} == {"op_b", "op_c"}
    assert "`op_b` 🆕" in told.comment and "`op_c` 🆕" in told.comment and "`op_a` 🆕" not in told.comment
