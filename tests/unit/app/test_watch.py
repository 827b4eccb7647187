"""`opdrift watch`'s judgement side: the dashboard, the news, the hidden
state, over a real PyTorch-shaped git history whose PR heads are made from release 2.14.1 and 2.15.0's
entries (tests/watch_upstream.py), judged against XLA's real list with the weekly issue's engine."""

from __future__ import annotations

import dataclasses
import json
import lzma
import os
import re
from pathlib import Path

import jsonschema
import pytest
from datafiles import DATA
from goldens import check_golden, updating
from inert import live, rendered, visible
from watch_upstream import Run, Upstream, rows_of

from opdrift.app.watch_judge import Judge, JudgementCache, who_by_backend
from opdrift.app.watch_state import read_state, state_block
from opdrift.config.file import BotConfig, parse_config
from opdrift.render.context import BackendGap, BrokenKernel
from opdrift.render.watch import Landed, PullRow, WatchView, grew
from opdrift.sources.read import read_source

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_the_dashboard_lists_exactly_the_prs_that_affect_the_backend(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    up, heads = upstream
    run = Run(up, cfg, JudgementCache(tmp_path / "cache", warn=print))
    for n, key in enumerate("abcd", start=1):
        run.pulls.add(n, heads[key], title=f"PR ({key})")
    run.pulls.add(5, heads["e"], state="merged")
    first = run()
    rows = rows_of(first)
    assert sorted(rows) == [1, 2]  # (a) and (b); not (c) no operator file, (d) in-tree kernel, (e) merged
    assert rows[1].ops == ("_philox_randint",) and not rows[1].broken
    (broken,) = rows[2].broken
    assert broken.op == "mean.dim" and broken.form == "int64_t"
    # the C++ kernel's parameters are types: `bool fast` lands at 4, where the dtype was
    assert broken.parts == (
        ("parameter 4", "::std::optional<at::ScalarType>", "bool"),
        ("parameters added", "", "::std::optional<at::ScalarType>"),
    )
    assert run.pulls.calls["merge_base"] == 3  # (a), (b), (d): (c) touches no operator file
    # the comment: both PRs, the subscribers once each
    assert first.comment.count("@xla-team") == 1 and first.comment.count("@Someone") == 1
    # the change by parameter name, then both declarations in the backend's form; the new op it lacks
    check_golden("watch-dashboard.comment.md", first.comment, updating(request))
    assert "@" not in first.body.replace("<!-- opdrift", "")  # the body mentions nobody
    # a second run with nothing new: the same body, no comment, nothing touched or judged again
    calls = dict(run.pulls.calls)
    second = run()
    assert second.body == first.body and second.comment == ""
    assert {k: v - calls[k] for k, v in run.pulls.calls.items()} == {"scan": 1, "touched": 0, "merge_base": 0}
    assert second.judged == 0

    # (b) reverts its break; a new PR brings another: the dashboard follows, one comment for the new one
    run.pulls.update(2, head_sha=heads["c"])  # now touches no operator file
    new_break = up.commit(
        {"aten/src/ATen/native/native_functions.yaml": up.base_text.replace(
            "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False,",
            "- func: mean.dim(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
        ).replace(
            "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False,",
            "- func: mean.out(Tensor self, int[1]? dim, bool keepdim=False, bool precise=False,",
        )}, "mean: precise",
    )  # fmt: skip
    run.pulls.add(6, new_break, title="mean precise")
    third = run()
    assert sorted(rows_of(third)) == [1, 6]
    assert [r.number for r, _ in third.view.news] == [6]
    assert third.comment.count("@xla-team") == 1 and "#6" not in re.sub(r"\[#6\]", "", third.comment)
    # (a) merges: it leaves the dashboard and is named once under "landed"
    run.pulls.update(1, state="merged")
    fourth = run()
    assert sorted(rows_of(fourth)) == [6] and fourth.comment == ""
    assert (
        "Landed since the last run" in fourth.body
        and "[#1](https://github.com/pytorch/pytorch/pull/1)" in fourth.body
    )
    assert run().body == fourth.body  # the landed list stays while nothing else changes


@pytest.mark.slow
def test_a_judgement_is_cached_by_the_blobs_of_both_sides(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig, tmp_path: Path
) -> None:
    up, heads = upstream
    cache = JudgementCache(tmp_path / "cache", warn=print)
    first = Run(up, cfg, cache)
    first.pulls.add(2, heads["b"])
    first()
    assert (first.judge.judged, first.judge.cached) == (1, 0)
    # a cold start (no issue) over the same PR, and another commit with the same files: cached
    same_files = up.commit({"README.md": "x\n"}, "rebased", parent=heads["b"])
    again = Run(up, cfg, cache)
    again.pulls.add(2, heads["b"])
    again.pulls.add(7, same_files)
    plan = again()
    assert (again.judge.judged, again.judge.cached) == (0, 2)
    assert sorted(rows_of(plan)) == [2, 7]
    # a damaged cache file is a miss with a warning, not an error
    for path in (tmp_path / "cache").rglob("*.json"):
        path.write_text('{"impacts": [{"kind": "nope"}]}')
    damaged = Run(up, cfg, JudgementCache(tmp_path / "cache", warn=damaged_warn.append))
    damaged.pulls.add(2, heads["b"])
    damaged()
    assert damaged.judge.judged == 1 and any("damaged" in w for w in damaged_warn)


damaged_warn: list[str] = []


def test_growth_is_set_inclusion() -> None:
    imp = BackendGap(
        ("@a",), "xla", "x.yaml", ("op1",), (BrokenKernel("mean.dim", "int64_t", (("p", "a", "b"),)),)
    )
    items = frozenset(__import__("opdrift.render.watch", fromlist=["digest"]).digest(i) for i in imp.items())
    assert not grew(imp, items)
    smaller = BackendGap(("@a",), "xla", "x.yaml", ("op1",))
    assert not grew(smaller, items)  # asks less: no news
    other_break = BackendGap(
        ("@a",), "xla", "x.yaml", ("op1",), (BrokenKernel("mean.dim", "int64_t", (("p", "a", "c"),)),)
    )
    assert grew(other_break, items)  # the same kernel broken another way is news
    assert grew(BackendGap(("@a",), "xla", "x.yaml", ("op1", "op2")), items)


HOSTILE_TITLE = "@pytorch/xla see #1 GH-2 https://evil.test :tada: a5c3785ed8d6 <b>x</b> | --> `x`"


@pytest.mark.slow
def test_untrusted_titles_and_a_forged_state_stay_inert(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig
) -> None:
    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(2, heads["b"], title=HOSTILE_TITLE)
    plan = run()
    for body in (plan.body, plan.comment):
        text = body.split("<!-- opdrift:watch-state")[0]
        # the bot's own link to the PR (GitHub leaves text inside a link alone), and the config's handles
        own = re.sub(r"\[#2\]\(https://github\.com/pytorch/pytorch/pull/2\)", "", text)
        found = live(own.replace("@xla-team", "").replace("@Someone", ""))
        assert found == {}, found
        assert HOSTILE_TITLE.replace("`", "") in visible(rendered(text)).replace("`", "")
    # the state block survives the title's `-->` and reads back as it was written
    state, problem = read_state(plan.body, who_by_backend(cfg))
    assert problem is None and state.rows[0].title == HOSTILE_TITLE
    assert state_block(state) in plan.body
    # forged blocks: a cold start with a warning, never an error
    who = who_by_backend(cfg)
    block = plan.body[plan.body.index("<!-- opdrift:watch-state") :]
    forged = [
        block.replace('"draft":false', '"draft":"yes"'),
        block.replace('"author":"contributor"', '"author":"@everyone please"'),
        block.replace("v1\n", "v2\n"),
        "<!-- opdrift:watch-state v1\n" + "[" * 100_000 + "\n-->",
        '<!-- opdrift:watch-state v1\n{"watermark": 5}\n-->',
        "<!-- opdrift:watch-state v1\nnot json\n-->",
        "<!-- opdrift:watch-state v1\n"
        + json.dumps({"watermark": None, "rows": [], "quiet": [[1, "x" * 40]], "landed": []})
        + "\n-->",
    ]
    for text in forged:
        state, problem = read_state(text, who)
        assert problem is not None and state.rows == ()
    # a run over a forged body starts cold: the PR is news again, mentions only the config's handles
    run.body = forged[1]
    again = run()
    assert run.warnings and "does not read" in run.warnings[-1]
    assert re.findall(r"@[\w-]+", again.comment.replace("<!-- opdrift", "")) == ["@xla-team", "@Someone"]


@pytest.mark.slow
def test_the_json_follows_its_schema(upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig) -> None:
    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(1, heads["a"])
    run.pulls.add(2, heads["b"])
    plan = run()
    schema = json.loads((ROOT / "schemas" / "watch.schema.json").read_text())
    jsonschema.validate(plan.json, schema)
    pulls = {p["number"]: p for p in plan.json["pulls"]}  # type: ignore[attr-defined]
    assert pulls[2]["backends"][0]["breaks"][0]["op"] == "mean.dim"
    assert pulls[1]["backends"][0]["needs"] == ["_philox_randint"] and pulls[1]["backends"][0]["new"]


@pytest.mark.slow
def test_the_body_fits_with_many_prs(upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig) -> None:
    """Rows the body has no room for are left out of it and counted, the state block stays whole and
    readable (what plan_watch's state keeps of the hidden rows: tests/unit/app/test_watch_judge.py)."""
    from opdrift.render.watch import WatchView, render_issue

    up, heads = upstream
    run = Run(up, cfg)
    run.pulls.add(2, heads["b"], title="x" * 250)
    plan = run()
    row = plan.view.rows[0]
    many = tuple(
        __import__("dataclasses").replace(row, number=n, url=f"https://github.com/pytorch/pytorch/pull/{n}")
        for n in range(1, 400)
    )
    view = WatchView("pytorch/pytorch", many, (), (), "")
    from opdrift.app.watch_state import WatchState

    body = render_issue(view, lambda v: state_block(WatchState(None, v.rows)))
    assert len(body) <= 64_536 and "more that this body has no room for" in body
    state, problem = read_state(body, who_by_backend(cfg))
    assert problem is None and len(state.rows) == body.count("<details>") > 0
    assert f"… and {399 - len(state.rows)} more that this body has no room for" in body


@pytest.mark.slow
def test_the_watch_verdict_is_the_weekly_issues(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig
) -> None:
    """One question, one answer (tests/integration/test_one_answer.py): for each PR head, what `watch` says of the
    backend is the gap the weekly issue and the PR comment show for the same two commits."""
    from opdrift.app.prepare import publish_setup

    up, heads = upstream
    judge = Judge(cfg, up.spec_for, read_source)
    for key in "abd":
        setup = publish_setup(
            "me/backend", up.spec_for(up.main), up.spec_for(heads[key]),
            config=cfg.path, allowlist=None, warn=lambda _: None, note=lambda _: None,
        )  # fmt: skip
        impacts = judge(up.main, heads[key])
        assert [(i.kind, i.where, i.who) for i in impacts] == [(g.kind, g.where, g.who) for g in setup.gaps]
        for imp, gap in zip(impacts, setup.gaps, strict=True):
            assert imp.ops == gap.ops and imp.removed == gap.removed
            assert imp.broken == gap.broken
    assert not judge(up.main, heads["d"])  # an in-tree kernel only: no gap, no row


def _golden_view() -> WatchView:
    """Fixed records, every part of a row shown: a broken kernel, a capped list, a removal, landed."""
    broken = BrokenKernel(
        "mean.dim", "int64_t", (("parameter 4", "::std::optional<at::ScalarType>", "bool"),)
    )
    many = BackendGap(
        ("@xla-team",), "xla", "codegen/xla_native_functions.yaml", ("_philox_randint",), (broken,)
    )
    lots = BackendGap(("@npu/team", "@XLA-team"), "op-plugin", "op_plugin_functions.yaml", tuple(f"new_op_{i}" for i in range(30)), (), ("old_op.Tensor",), more=(("ops", 12),),
    )  # fmt: skip
    rows = (
        PullRow(170002, "mean: a `fast` path | @someone", "dev-1", True, "2026-12-05T01:02:00Z",
                "https://github.com/pytorch/pytorch/pull/170002", "b" * 40, (many,)),
        PullRow(170001, "Add _philox_randint_", "dev-2", False, "2026-12-05T01:01:00Z",
                "https://github.com/pytorch/pytorch/pull/170001", "a" * 40, (many, lots)),
    )  # fmt: skip
    landed = (Landed(169990, "Remove old_op", "https://github.com/pytorch/pytorch/pull/169990"),)
    return WatchView("pytorch/pytorch", rows, landed, ((rows[1], (lots,)),), "")


def test_golden_watch_outputs(request: pytest.FixtureRequest) -> None:
    update_golden = updating(request)
    from opdrift.app.watch_state import WatchState
    from opdrift.render.watch import render_comment, render_issue, watch_json

    view = _golden_view()
    body = render_issue(view, lambda v: state_block(WatchState("2026-12-05T01:02:00Z", v.rows)))
    check_golden("watch.issue.md", body, update_golden)
    check_golden("watch.comment.md", render_comment(view), update_golden)
    check_golden("watch.json", json.dumps(watch_json(view), indent=2, sort_keys=True) + "\n", update_golden)


@pytest.mark.slow
def test_a_changed_backend_list_has_every_open_pr_judged_again(
    upstream: tuple[Upstream, dict[str, str]], tmp_path: Path
) -> None:
    """The backend starts implementing `mean.dim`: PR (b), which asked nothing of it while it lacked
    the op (a new signature of an op it never wrote is no work), now breaks its kernel, although
    nobody pushed to (b): news, once."""
    up, heads = upstream
    xla = DATA / "backends" / "real" / "pytorch-xla.xla_native_functions.yaml.xz"
    full = lzma.decompress(xla.read_bytes()).decode()
    listing = tmp_path / "xla_native_functions.yaml"
    listing.write_text(full.replace("  - mean.dim\n", ""))
    text = (
        'subscriptions:\n  - who: ["@xla-team"]\n    backend: {kind: xla, path: xla_native_functions.yaml}\n'
    )
    config = parse_config(text, str(tmp_path / "opdrift.yml"), base_dir=str(tmp_path))
    run = Run(up, config)
    run.pulls.add(2, heads["b"])
    first = run()
    assert 2 not in rows_of(first)
    listing.write_text(full)
    run.judge = Judge(config, up.spec_for, read_source)  # the next run reads the list anew
    second = run()
    assert [b.op for b in rows_of(second)[2].broken] == ["mean.dim"]
    assert [r.number for r, _ in second.view.news] == [2] and "judged again" in run.warnings[-1]
    third = run()
    assert third.comment == "" and third.body == second.body


@pytest.mark.slow
def test_a_pr_whose_files_do_not_parse_is_warned_about_and_the_others_are_listed(
    upstream: tuple[Upstream, dict[str, str]], cfg: BotConfig
) -> None:
    up, heads = upstream
    broken = up.commit(
        {
            "aten/src/ATen/native/native_functions.yaml": up.base_text
            + "\n- func: half(Tensor self -> Tensor\n  : [\n"
        },
        "work in progress",
    )
    run = Run(up, cfg)
    run.pulls.add(8, broken)
    run.pulls.add(2, heads["b"])
    plan = run()
    assert sorted(rows_of(plan)) == [2]
    assert any(w.startswith("#8 at ") and "do not parse" in w for w in run.warnings)
    calls = dict(run.pulls.calls)
    assert run().body == plan.body and run.pulls.calls["merge_base"] == calls["merge_base"]  # not tried again


def test_the_judgement_cache_is_bounded(tmp_path: Path) -> None:
    cache = JudgementCache(tmp_path / "cache", warn=print, max_entries=2)
    imp = BackendGap(("@a",), "xla", "x.yaml", ("op1",))
    who = {"xla:x.yaml": ("@a",)}
    for n in range(4):
        for old in (tmp_path / "cache").rglob("*.json"):  # one second apart, whatever the clock's grain
            os.utime(old, (old.stat().st_mtime - 1, old.stat().st_mtime - 1))
        cache.put(cache.disk.key(n), (imp,))
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2
    assert cache.get(cache.disk.key(3), who) == (imp,)  # the newest stay
    assert cache.get(cache.disk.key(3), {}) == ()  # a backend no longer subscribed: its part goes


def test_a_dashboard_row_says_which_release_it_would_ship_in(request: pytest.FixtureRequest) -> None:
    """A PR last updated on 2026-11-02 would, if it landed now, make 2.16 (branch cut 2026-11-30); the
    golden rows, updated after that cut, say that their release is not scheduled yet: the calendar has
    no later date, and no release is guessed."""
    from opdrift.app.watch_state import WatchState
    from opdrift.render.watch import render_issue

    view = _golden_view()
    early = dataclasses.replace(view.rows[0], updated_at="2026-11-02T10:00:00Z")
    body = render_issue(
        dataclasses.replace(view, rows=(early, view.rows[1])),
        lambda v: state_block(WatchState("2026-12-05T01:02:00Z", v.rows)),
    )
    summaries = [line for line in body.splitlines() if line.startswith("<details><summary>")]
    # the release and its cut, and which side of the cut (the wording: golden/watch-release.rows.md)
    assert all("2.16" in line and "2026-11-30" in line for line in summaries[:2])
    assert "after 2.16" not in summaries[0] and "after 2.16" in summaries[1]
    check_golden("watch-release.rows.md", "\n".join(summaries[:2]) + "\n", updating(request))
