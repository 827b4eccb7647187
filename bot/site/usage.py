"""The site's model data (pure): each base operator against the model corpus's table
(`opdrift.usage.models`), and each backend's first work as `opdrift coverage` ranks it.

A base operator is "used by" a model on a path when the model dispatched any of its overloads there;
"of M" counts the models whose run on that path succeeded. An operator no model used, one of whose
overloads the table's release did not register yet, has no model data: not "used by none".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opdrift.coverage.check import Coverage
from opdrift.coverage.firstwork import first_work
from opdrift.coverage.names import first_registered
from opdrift.coverage.workitems import model_choice, model_paths, model_usage, models_recorded, work_items
from opdrift.model import Snapshot
from opdrift.render.rank import work_item_rank_key
from opdrift.site.model import (
    BackendColumn,
    BackendWork,
    ModelSource,
    OpModels,
    PathModels,
    WorkRow,
    file_name,
)
from opdrift.usage.models import PATHS, ModelUsage, Status, UsageChoice

# How many work items each backend's list shows: the rest are `opdrift coverage`'s.
TOP_WORK = 10


def model_source(choice: UsageChoice) -> ModelSource:
    # `UsageChoice.caveat` names the table's release too; the pages name it already
    caveat = "" if choice.exact else f"torch {choice.requested} has no table of its own"
    return ModelSource(choice.usage.release, caveat, len(models_recorded(choice.usage, PATHS)))


def _newer(usage: ModelUsage, names: Sequence[str]) -> bool:
    """Whether one of NAMES is newer than USAGE's release (or was never registered by a release
    opdrift knows): the table cannot speak for it."""
    return any(usage.lookup(n, PATHS[0], first_registered(n)).status is Status.NO_DATA_YET for n in names)


def _on_path(usage: ModelUsage, path: str, names: Sequence[str], newer: bool) -> PathModels:
    calls: dict[str, int] = {}
    overloads: list[tuple[str, int]] = []
    for name in names:
        per_model = usage.counts.get(path, {}).get(name, {})
        if per_model:
            overloads.append((name, len(per_model)))
        for model, count in per_model.items():
            calls[model] = calls.get(model, 0) + count
    users = tuple(sorted(calls, key=lambda m: (-calls[m], m)))
    return PathModels(
        path=path,
        used_by=len(users),
        of=len(usage.recorded(path)),
        names=users,
        overloads=tuple(sorted(overloads, key=lambda x: (-x[1], x[0]))),
        no_data_yet=not users and newer,
    )


def op_models(usage: ModelUsage, names: Iterable[str]) -> OpModels:
    """NAMES (a base operator's overloads) against USAGE, per path and on any path."""
    ordered = sorted(names)
    newer = _newer(usage, ordered)
    paths = tuple(_on_path(usage, p, ordered, newer) for p in PATHS)
    anywhere = {m for p in paths for m in p.names}
    return OpModels(
        paths=paths,
        used_by=len(anywhere),
        of=len(models_recorded(usage, PATHS)),
        release=usage.release,
        no_data_yet=not anywhere and newer,
    )


def backend_work(spec: BackendColumn, cov: Coverage, now: Snapshot) -> BackendWork:
    """SPEC's first work: `opdrift coverage`'s ranked items that every backend needs (scope generic),
    the first TOP_WORK of them."""
    every = sorted(work_items(cov, now), key=work_item_rank_key)
    ranked = [i for i in every if i.scope.generic]
    rows = tuple(WorkRow(i, file_name(now.operators[i.name].base)) for i in ranked[:TOP_WORK])
    choice = model_choice(now.meta.torch_version)
    paths = model_paths(cov) if choice is not None else ()
    # the same greedy set as `opdrift coverage` prints, over the same ranked items
    first = None if choice is None else first_work(every, model_usage(cov, choice.usage), paths, now)
    return BackendWork(spec.name, rows, len(ranked), paths, first)
