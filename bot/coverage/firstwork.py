"""First work: the fewest work items that let the most models of the corpus run without fallback.

A model *runs without fallback* on a backend when every ATen operator it dispatches on the backend's
paths (`opdrift.coverage.workitems.model_paths`) is covered: for an eager backend, every op of its
inference and training runs, as the backend's device receives them (`opdrift.usage.device`), has a
kernel of the backend's or a default one that serves it, so nothing goes to a CPU fallback or fails;
for an export backend, every op of its exported graph (decomposed by the backend's table) has a
lowering; for a functional one, every op of its functionalized joint graph. Operators of other
namespaces (``torchvision::nms``) and those whose only device kernel is the CPU's (the device
dispatches its own variant, which the CPU-recorded corpus cannot name) are left out. The models
counted are those whose run succeeded on one of the paths (`models_recorded`).

Greedy, as for a set cover: each step takes the blocked model whose missing items unblock the most
models per item written (fewer items on a tie, then the model's name), writes them all, and says how
many models run without fallback after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from opdrift.coverage.workitems import WorkItem, cpu_only, models_recorded
from opdrift.model import Snapshot
from opdrift.usage.models import ModelUsage


@dataclass(frozen=True)
class Step:
    items: tuple[str, ...]  # the work items to write, in the report's rank order
    unblocks: tuple[str, ...]  # the models that run without fallback once they are written, sorted
    runs: int  # how many models run without fallback after this step


@dataclass(frozen=True)
class FirstWork:
    of: int  # the models recorded on the backend's paths
    start: int  # how many of them run without fallback today
    steps: tuple[Step, ...]

    def upto(self, count: int) -> tuple[Step, ...]:
        return self.steps[:count]


def first_work(
    ranked: Sequence[WorkItem], usage: ModelUsage, paths: tuple[str, ...], snapshot: Snapshot
) -> FirstWork:
    """RANKED (the work items in the report's order) against USAGE's models on PATHS (already as the
    backend's device receives them, `opdrift.coverage.workitems.model_usage`)."""
    records = snapshot.operators
    item_of: dict[str, str] = {}
    for item in ranked:
        for name in (item.name, *item.members):
            item_of[name] = item.name
    order = {item.name: i for i, item in enumerate(ranked)}
    models = models_recorded(usage, paths)
    missing: dict[str, frozenset[str]] = {}
    for model in models:
        needs = {
            item_of[op]
            for path in paths
            for op, users in usage.counts.get(path, {}).items()
            if model in users and op in item_of and op in records and not cpu_only(records[op])
        }
        missing[model] = frozenset(needs)
    return _greedy(missing, order)


def _greedy(missing: Mapping[str, frozenset[str]], order: Mapping[str, int]) -> FirstWork:
    written: set[str] = set()
    blocked = {m for m, needs in missing.items() if needs}
    start = len(missing) - len(blocked)
    runs = start
    steps = []
    while blocked:
        best = min(blocked, key=lambda m: _gain(m, missing, blocked, written))
        todo = missing[best] - written
        written |= todo
        freed = sorted(b for b in blocked if missing[b] <= written)
        blocked -= set(freed)
        runs += len(freed)
        steps.append(Step(tuple(sorted(todo, key=lambda n: order.get(n, len(order)))), tuple(freed), runs))
    return FirstWork(of=len(missing), start=start, steps=tuple(steps))


def _gain(
    model: str, missing: Mapping[str, frozenset[str]], blocked: set[str], written: set[str]
) -> tuple[float, int, str]:
    """The greedy's key: most models freed per item written, then fewer items, then the name."""
    todo = missing[model] - written
    freed = sum(1 for b in blocked if missing[b] - written <= todo)
    return (-freed / len(todo), len(todo), model)


def first_work_json(fw: FirstWork | None) -> dict[str, object] | None:
    """The coverage JSON's ``first_work``: every step, null without model data."""
    if fw is None:
        return None
    return {
        "models": fw.of,
        "run_without_fallback": fw.start,
        "steps": [{"items": list(s.items), "unblocks": list(s.unblocks), "runs": s.runs} for s in fw.steps],
    }
