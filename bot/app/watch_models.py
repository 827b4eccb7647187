"""What the watch state keeps of a row's model counts: how many models of the corpus reach a
backend's needs and each kernel a PR breaks (`opdrift.coverage.workitems.ModelReach`), so that the
dashboard, drawn again from the state on a later run, says what the run that judged the PR said.

Written as ``"models": {"release": "2.14.1", "needs": [used_by, of, flags], "breaks": {op: [...]}}``,
``flags`` 1 for "no model data yet" and 2 for "CPU-only". The block is untrusted (`opdrift.app.watch_state`):
every count is bounded, a release is digits and dots (the dashboard shows it unescaped), and a count
that does not read drops the counts, never the row. `opdrift.app.watch_impact` calls these; they are kept
apart so that each module stays small.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from opdrift.coverage.workitems import ModelReach
from opdrift.render.context import BackendGap

_RELEASE = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}")
_MAX = 10**6  # more models than any corpus holds
_NO_DATA, _CPU_ONLY = 1, 2


def _reach_data(m: ModelReach) -> list[int]:
    return [m.used_by, m.of, (_NO_DATA if m.no_data_yet else 0) | (_CPU_ONLY if m.cpu_only else 0)]


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
        and len(x) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _MAX for v in x)
        and x[0] <= x[1]
        and x[2] <= _NO_DATA | _CPU_ONLY
    ):
        return None
    return ModelReach(
        x[0], x[1], (), 0, release, no_data_yet=bool(x[2] & _NO_DATA), cpu_only=bool(x[2] & _CPU_ONLY)
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
