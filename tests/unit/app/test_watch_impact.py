"""A backend's impact as the watch stores it (opdrift.app.watch_impact): a state block an earlier
version wrote, before the watch's own impact record became the reports' `BackendGap`, reads into the
one record unchanged: written back byte for byte, drawn into the same dashboard, fingerprinted the
same. The block is real (tests/data/watch/SOURCES.md says how it was made)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from datafiles import DATA
from goldens import check_golden, updating

from opdrift.app.watch_reconcile import named, named_break
from opdrift.app.watch_state import WatchState, read_state, state_block
from opdrift.render.context import BackendGap
from opdrift.render.watch import WatchView, fingerprint, render_issue

BLOCK = (DATA / "watch" / "state-v1.txt").read_text(encoding="utf-8")
WHO = {"cpp:dlprim/src": ("@dlprim-team",), "xla:xla_native_functions.yaml": ("@xla-team",)}
NAMES = {"cpp:dlprim/src": "dlprim", "xla:xla_native_functions.yaml": "xla"}


def _state() -> WatchState:
    state, problem = read_state(f"<!-- opdrift:watch -->\n{BLOCK}", WHO)
    assert problem is None, problem
    return state


def test_an_earlier_state_writes_back_byte_for_byte() -> None:
    assert state_block(_state()) + "\n" == BLOCK


def test_an_earlier_state_draws_the_dashboard_it_drew(request: pytest.FixtureRequest) -> None:
    state = _state()
    rows = tuple(named(r, NAMES) for r in state.rows)
    broke = tuple(named_break(x, NAMES) for x in state.broke)
    view = WatchView("pytorch/pytorch", rows, state.landed, (), "", broke=broke)
    body = render_issue(view, lambda v: state_block(replace(state, rows=v.rows, broke=v.broke)))
    check_golden("watch-state-v1.issue.md", body, updating(request))


def test_an_earlier_state_reads_into_the_gap_record() -> None:
    state = _state()
    rows = {r.number: r for r in state.rows}
    assert sorted(rows) == [7, 9, 10]
    dlprim, xla = rows[7].impacts
    assert all(isinstance(g, BackendGap) for r in state.rows for g in r.impacts)
    assert (dlprim.who, dlprim.kind, dlprim.where) == (("@dlprim-team",), "cpp", "dlprim/src")
    # its kernels with the form they are judged in, both declarations and the models that reach them
    (out,) = dlprim.broken
    assert (out.op, out.form, out.parts[0]) == ("mean.out", "int64_t", ("parameter 4", "::std::optional<at::ScalarType>", "bool"))  # fmt: skip
    assert out.before is not None and out.after is not None and "fast" in out.after.names
    assert out.models is not None and (out.models.used_by, out.models.of, out.models.release) == (
        0,
        51,
        "2.14.1",
    )
    assert (dlprim.ops, dlprim.removed, dlprim.dead, dlprim.more) == ((), (), ("mse_loss_backward",), ())
    assert (xla.broken_names, xla.removed, xla.dead) == (("mean.dim",), ("mse_loss_backward",), ())
    # the needs, with their count, and the counts of a capped row
    philox = rows[10].impacts[1]
    assert philox.ops == ("_philox_randint",) and philox.ops_models is not None
    assert philox.ops_models.no_data_yet
    capped = [(g.ops, g.broken, g.removed, g.dead, g.more) for g in rows[9].impacts]
    assert capped == [
        ((), (), (), (), (("broken", 1), ("dead", 1))),
        ((), (), (), (), (("broken", 1), ("removed", 1))),
    ]
    assert [g.count(f) for g in rows[9].impacts for f in ("broken", "removed", "dead")] == [1, 0, 1, 1, 1, 0]
    # the landed break keeps what breaks the build
    (landed,) = state.broke
    assert [g.broken_names for g in landed.impacts] == [("mean.out",), ("mean.dim",)]
    # what the earlier code fingerprinted is what the record's items give now: nothing is news again
    for n in (7, 10):
        assert rows[n].fingerprint == fingerprint(rows[n].impacts)
