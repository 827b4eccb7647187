"""What the watch state keeps of a row's model counts: how many models of the corpus reach a
backend's needs and each kernel a PR breaks (`opdrift.coverage.workitems.ModelReach`), so that the
dashboard, drawn again from the state on a later run, says what the run that judged the PR said.

Written as ``"models": {"release": "2.14.1", "needs": [used_by, of, flags], "breaks": {op: [...]}}``,
``flags`` 1 for "no model data yet" and 2 for "CPU-only"; a count some of whose models reach the ops
only through ops their kernels serve (`ModelReach.through`) has a fourth item, ``[models, more, op,
...]`` (up to three ops). A state written before ``through`` existed has none, and reads and writes
back as it was. The block is untrusted (`opdrift.app.watch_state`): every count is bounded, a release
is digits and dots (the dashboard shows it unescaped), an op is an operator name, and a count that
does not read drops the counts, never the row. `opdrift.app.watch_impact` calls these; they are kept
apart so that each module stays small.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from opdrift.coverage.workitems import THROUGH_NAMES, ModelReach, Through
from opdrift.render.context import BackendGap

_RELEASE = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}")
_NAME = re.compile(r"[A-Za-z0-9_.]{1,200}")  # an operator name, as `opdrift.app.watch_impact` reads them
_MAX = 10**6  # more models than any corpus holds
_NO_DATA, _CPU_ONLY = 1, 2


def _reach_data(m: ModelReach) -> list[object]:
    out: list[object] = [
        m.used_by,
        m.of,
        (_NO_DATA if m.no_data_yet else 0) | (_CPU_ONLY if m.cpu_only else 0),
    ]
    if m.through is not None:
        out.append([m.through.models, m.through.more, *m.through.ops])
    return out


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _MAX


def _through(x: Any, used_by: int) -> Through | None:
    """The fourth item `_reach_data` wrote; None when it does not read."""
    if not (
        isinstance(x, list)
        and 3 <= len(x) <= 2 + THROUGH_NAMES
        and _count(x[0])
        and 0 < x[0] <= used_by
        and _count(x[1])
        and all(isinstance(o, str) and _NAME.fullmatch(o) for o in x[2:])
    ):
        return None
    return Through(x[0], tuple(x[2:]), x[1])


def models_data(impact: BackendGap) -> dict[str, object]:
    """``{"models": ...}`` for IMPACT's counts, ``{}`` when it has none (a state without them reads the
    same as before)."""
    reaches = [impact.ops_models, *(b.models for b in impact.broken)]
    release = next((m.release for m in reaches if m is not None), None)
    if release is None or not _RELEASE.fullmatch(release):
        return {}
    out: dict[str, object] = {"release": release}
    if impact.ops_models is not None:
        out["needs"] = _reach_data(impact.ops_models)
    breaks = {b.op: _reach_data(b.models) for b in impact.broken if b.models is not None}
    if breaks:
        out["breaks"] = breaks
    return {"models": out}


def _reach(x: Any, release: str) -> ModelReach | None:
    if not (
        isinstance(x, list)
        and len(x) in (3, 4)
        and all(_count(v) for v in x[:3])
        and x[0] <= x[1]
        and x[2] <= _NO_DATA | _CPU_ONLY
    ):
        return None
    through = None if len(x) == 3 else _through(x[3], x[0])
    if len(x) == 4 and through is None:
        return None  # a count without the ops that explain it would say what the run did not
    return ModelReach(
        x[0],
        x[1],
        (),
        0,
        release,
        no_data_yet=bool(x[2] & _NO_DATA),
        cpu_only=bool(x[2] & _CPU_ONLY),
        through=through,
    )


def with_models(impact: BackendGap, d: Any) -> BackendGap:
    """IMPACT with the counts D (what `models_data` wrote under "models") gives; IMPACT as it is when
    D does not read."""
    if (
        not isinstance(d, dict)
        or not isinstance(d.get("release"), str)
        or not _RELEASE.fullmatch(d["release"])
    ):
        return impact
    release = d["release"]
    breaks = d.get("breaks", {})
    if not isinstance(breaks, dict):
        breaks = {}
    return replace(
        impact,
        ops_models=_reach(d.get("needs"), release),
        broken=tuple(replace(b, models=_reach(breaks.get(b.op), release)) for b in impact.broken),
    )
