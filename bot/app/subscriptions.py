"""Subscription matching: which changes a subscription of the config matches, the handles to mention,
and each backend subscription's gap (what its backend lacks, the kernels a change broke).

Within one subscription, each given matcher kind must match (AND across `buckets`, `facets`, `tags`,
`dispatch_keys`), and within a kind any listed value may match (OR). So ``facets: [new_core,
needs_kernel]`` means either, and ``buckets: [primitive_pointwise]`` plus ``facets: [needs_kernel]``
means both.

A subscription may also name its backend's op list (``backend: {kind: xla, path: ...}``). It then
matches only what asks something of that backend (docs/config.md, "What a backend subscription is
told"): new operators, or ones that now need a kernel, that the backend lacks at HEAD (`concerns`);
the operators it implements whose kernel no longer builds in the form the backend writes it
(`breaks`), or that upstream removed where its codegen refuses the name (`removes`); the ops whose
schema it records (torch-mlir's ODS ops) when their schema changes as coverage's alerts judge it
(`schema_changed`); core-set changes for a backend of the Core ATen opset (`leaves_core`,
`joins_core`); removed ops it registers where the build still takes the registration (`dead`). The
ops it lacks that only some backends need (`concerns_some`) are listed apart and match nothing by
themselves. The caller (`opdrift.app.prepare.backend_work`) works out what it lacks and lists with
`opdrift.coverage.check` and passes them in as `lacking` and `implemented`. The config file itself is
parsed by `opdrift.config.file`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from opdrift.config.backend_specs import BackendSpec
from opdrift.config.file import BotConfig, Subscription
from opdrift.coverage.alerts import alert_for, alert_key, for_backend, judge_in_form
from opdrift.coverage.kinds import KIND_BY_ID, PROFILE_OF_KIND
from opdrift.coverage.oplist import BackendOp
from opdrift.coverage.workitems import ModelReach, cpu_only, model_reach, with_served
from opdrift.drift.changes import Change
from opdrift.drift.flags import FLAGS
from opdrift.model import OpRecord
from opdrift.operators.kernels import Profile
from opdrift.render.context import GAP_FIELDS, BackendGap, BrokenKernel
from opdrift.schema.kernel import FORM_IF_UNKNOWN, KernelForm, judged_form
from opdrift.usage.models import ModelUsage
from opdrift.work.engine import scope

# The profiles whose backends lower the Core ATen opset: an export compiler receives it (torch-mlir),
# XLA's functionalized graphs are its ops. An op leaving the core set stops reaching them and what it
# decomposes into reaches them instead (pytorch/xla#5880: native_batch_norm, 2.0.0 -> 2.1.0); one
# joining it is theirs to lower.
CORE_PROFILES: frozenset[Profile] = frozenset({"export", "functional"})


def _wants(spec: BackendSpec, change: Change) -> bool:
    if change.kind == "removed":
        return False
    if change.kernels_only:
        return KIND_BY_ID[spec.kind].in_pytorch and any(d.subject == spec.value for d in change.details)
    return change.kind in ("added", "renamed") or change.needs_kernel


def concerns(spec: BackendSpec, change: Change) -> bool:
    """Whether a change is work for a backend that lacks the op: a new (or renamed) op, or one that
    lost the kernel PyTorch gave some kind of backend (it now needs one), that every backend needs.

    A new C++ signature of an op the backend lacks asks nothing of it: it lacked the op before and
    lacks it after (it falls back, or never had it), and a kernel it writes later is written against
    the schema of that day. Telling it "write this" would be a false alarm.

    A removed op cannot be lacked; a tag or bucket change asks nothing of a kernel. A change that
    only moved in-tree kernels of *other* dispatch keys says nothing new to this backend; for a
    ``dispatch`` backend, a change to its own key's kernel does. An op only some backends need (a
    cuDNN or CUDA-only one, `opdrift.work.engine.scope`) is `concerns_some`: the same work, listed apart.
    """
    return _wants(spec, change) and scope(change.record).generic


def concerns_some(spec: BackendSpec, change: Change) -> bool:
    """`concerns`, for an op only some backends need (`opdrift.work.engine.scope`): coverage reports it
    apart as "only some backends need", and so does a subscription's gap, mentioning no one for it."""
    return _wants(spec, change) and not scope(change.record).generic


def schema_changed(spec: BackendSpec, change: Change, kernels: Kernels | None) -> bool:
    """The backend records the op's schema and builds from it rather than writing a C++ kernel
    (torch-mlir's GeneratedTorchOps.td is generated from the registry: a new or retyped argument
    changes the ODS op's operands), and the change gives it a schema alert it did not have, or
    another one: coverage's rule (`opdrift.coverage.alerts.alert_for`), asked of both sides, new alerts
    as `compare_coverage` finds them. A SymInt-only or default-only change keeps the types it records:
    no alert, nothing to say."""
    if change.kind != "changed" or KIND_BY_ID[spec.kind].writes_kernels or kernels is None:
        return False
    op = kernels.recorded.get(change.name)
    if op is None or change.before is None or change.after is None:
        return False
    after = alert_for(op, change.after, kernels.torch_version)
    if after is None:
        return False
    before = alert_for(op, change.before, kernels.torch_version)
    return before is None or alert_key(before) != alert_key(after)


def _core(change: Change, side: str) -> bool:
    rec = change.before if side == "before" else change.after
    return rec is not None and "core" in rec.facets.tags


def leaves_core(spec: BackendSpec, change: Change, kernels: Kernels | None) -> bool:
    """An op the backend lists left the core set, and the backend lowers the Core ATen opset
    (`CORE_PROFILES`, by its kind's profile)."""
    return (
        change.kind == "changed"
        and PROFILE_OF_KIND[spec.kind] in CORE_PROFILES
        and _core(change, "before")
        and not _core(change, "after")
        and kernels is not None
        and change.name in kernels.forms
    )


def joins_core(spec: BackendSpec, change: Change, lacking: frozenset[str] | None) -> bool:
    """An op the backend lacks at HEAD (what coverage calls uncovered) joined the core set, and the
    backend lowers the Core ATen opset. A new op in the core set is a new op it lacks (`concerns`)."""
    return (
        change.kind == "changed"
        and PROFILE_OF_KIND[spec.kind] in CORE_PROFILES
        and change.new_core
        and lacking is not None
        and change.name in lacking
    )


def dead(spec: BackendSpec, change: Change, kernels: Kernels | None) -> bool:
    """An op the backend registers was removed (or renamed away), and its build takes the
    registration all the same (its kind's `on_removal`, `opdrift.coverage.kinds`): not a break, a dead
    registration."""
    return (
        change.kind in ("removed", "renamed")
        and KIND_BY_ID[spec.kind].on_removal == "dead"
        and kernels is not None
        and listed_name(change) in kernels.forms
    )


def breaks(
    spec: BackendSpec,
    change: Change,
    form: KernelForm | None,
    torch_version: str | None,
    op: BackendOp | None = None,
) -> bool:
    """Whether a change breaks the build of the kernel this backend implements for the op, written
    in FORM (None: not known, so judged as every form would be), against torch TORCH_VERSION
    (HEAD's), in the form `judged_form` gives (see Note [SymInt kernels from 1.13]). An op upstream removes, or renames (the backend lists its old name: `breaks_kernel`),
    breaks the build of a backend whose codegen refuses the name (its kind's `on_removal`,
    `opdrift.coverage.kinds`). An in-tree ``dispatch`` key's kernels are changed by the same PR
    (`in_pytorch`), and torch-mlir writes no C++ kernel (it `lowers` by types). OP, what the backend
    records of it, may say its kernel takes tensor lists either way (`opdrift.coverage.alerts.for_backend`)."""
    row = KIND_BY_ID[spec.kind]
    if change.kind in ("removed", "renamed"):
        return row.on_removal == "breaks"  # a rename removes the old name the backend lists
    if row.in_pytorch or row.lowers or change.kind != "changed":
        return False
    if not change.kernel_changes:
        return change.kernel == "breaking"  # a schema that does not parse: no signature to judge
    changes = for_backend(op, change.kernel_changes)
    return judge_in_form(changes, judged_form(form, torch_version)) == "breaking"


def removes(spec: BackendSpec, change: Change) -> bool:
    """A change removes (or renames away) an op this backend's build refuses to lose (see `breaks`)."""
    return change.kind in ("removed", "renamed") and KIND_BY_ID[spec.kind].on_removal == "breaks"


def listed_name(change: Change) -> str:
    """The name a backend's list has for the op a change is about: a renamed op's old name."""
    return change.old_name if change.kind == "renamed" and change.old_name else change.name


@dataclass(frozen=True)
class Kernels:
    """The operators a backend lists, each with the form its kernel is written in (None: not known),
    and the torch version they are built against (HEAD's), which decides the form they are judged in
    (`breaks`; see Note [SymInt kernels from 1.13])."""

    forms: Mapping[str, KernelForm | None]
    torch_version: str | None
    # the ops it lists with the schema it records for each (op-plugin's yaml, torch-mlir's ODS
    # summaries): what `schema_changed` judges, by coverage's rule
    recorded: Mapping[str, BackendOp] = field(default_factory=dict)
    # the models that dispatch each op on the backend's paths and device; None without a table
    models: ModelData | None = None


@dataclass(frozen=True)
class ModelData:
    """The model table as a backend receives it (`opdrift.coverage.workitems.model_usage`: its device's
    choices), its paths, HEAD's operators (those whose only device kernel is the CPU's are not
    counted, `cpu_only`), and the caveat when the table is another release's than HEAD's."""

    usage: ModelUsage
    paths: tuple[str, ...]
    operators: Mapping[str, OpRecord] = field(repr=False)
    caveat: str = ""
    # operator -> the operators its kernel serves on the backend (`opdrift.coverage.workitems.served_by`)
    served: Mapping[str, frozenset[str]] = field(default_factory=dict, repr=False)

    def reach(self, names: Iterable[str]) -> ModelReach | None:
        """How many models reach any of NAMES or the operators their kernels serve (coverage's count of
        a work item and its members, `model_reach`, `with_served`): a broken ``mean.out`` kernel breaks
        the models calling ``mean.dim``, whose structured kernel runs it, and its count says it is
        through ``mean.dim``. None for no names."""
        listed = tuple(names)
        ops = with_served(listed, self.served)
        if not ops:
            return None
        cpu = frozenset(n for n in ops if n in self.operators and cpu_only(self.operators[n]))
        # the models reaching NAMES only through the ops they serve say which (`ModelReach.through`)
        return model_reach(self.usage, self.paths, ops, None, cpu, frozenset(ops) - frozenset(listed))


def matches(
    sub: Subscription,
    change: Change,
    lacking: frozenset[str] | None = None,
    implemented: Kernels | None = None,
) -> bool:
    """`lacking`: the operators this subscription's backend needs a kernel for at HEAD (required
    when it names a backend); `implemented`: the operators it lists, each with the form its kernel
    is written in, and HEAD's torch version."""
    if sub.backend is not None:
        if lacking is None:
            raise ValueError(f"subscription at line {sub.line} names a backend: pass what it lacks")
        spec = sub.backend
        if not (
            (concerns(spec, change) and change.name in lacking)
            or breaks_kernel(sub, change, implemented)
            or schema_changed(spec, change, implemented)
            or leaves_core(spec, change, implemented)
            or joins_core(spec, change, lacking)
            or dead(spec, change, implemented)
        ):
            return False
    return _filters_match(sub, change)


def _filters_match(sub: Subscription, change: Change) -> bool:
    """The subscription's buckets, facets, tags and dispatch keys (each given kind must match)."""
    records = [r for r in (change.before, change.after) if r is not None]
    if sub.buckets and not ({change.category} | {r.bucket for r in records}) & set(sub.buckets):
        return False
    if sub.facets and not any(FLAGS[f](change) for f in sub.facets):
        return False
    if sub.tags and not {t for r in records for t in r.facets.tags} & set(sub.tags):
        return False
    keys = {k for r in records for k in r.facets.dispatch}
    return not sub.dispatch_keys or bool(keys & set(sub.dispatch_keys))


def breaks_kernel(sub: Subscription, change: Change, implemented: Kernels | None) -> bool:
    """The subscription's backend implements the op, and the change breaks its kernel's build."""
    name = listed_name(change)
    if sub.backend is None or implemented is None or name not in implemented.forms:
        return False
    return breaks(
        sub.backend,
        change,
        implemented.forms[name],
        implemented.torch_version,
        implemented.recorded.get(name),
    )


Lacking = Mapping[BackendSpec, frozenset[str]]
# Each backend → the operators it lists (`Kernels`).
Implemented = Mapping[BackendSpec, "Kernels"]


def backend_specs(config: BotConfig) -> tuple[BackendSpec, ...]:
    """The distinct backend lists the subscriptions name, in config order (each read once)."""
    return tuple(dict.fromkeys(s.backend for s in config.subscriptions if s.backend is not None))


def _lacking_for(sub: Subscription, lacking: Lacking | None) -> frozenset[str] | None:
    if sub.backend is None:
        return None
    if lacking is None or sub.backend not in lacking:
        raise ValueError(f"no coverage given for the backend of the subscription at line {sub.line}")
    return lacking[sub.backend]


def _implemented_for(sub: Subscription, implemented: Implemented | None) -> Kernels | None:
    if sub.backend is None or implemented is None:
        return None
    return implemented.get(sub.backend)


def mentions_for(
    config: BotConfig,
    changes: Iterable[Change],
    lacking: Lacking | None = None,
    implemented: Implemented | None = None,
) -> tuple[str, ...]:
    """The handles whose subscriptions matched at least one change, in config order, each once.

    `lacking` maps each backend of `backend_specs(config)` to the operators it needs a kernel for at
    HEAD; `implemented` to the operators it lists, with their kernel forms.
    """
    pending = list(changes)
    seen: dict[str, str] = {}  # GitHub handles are case-insensitive: lower-cased → as first written
    for sub in config.subscriptions:
        gap = _lacking_for(sub, lacking)
        listed = _implemented_for(sub, implemented)
        if any(matches(sub, c, gap, listed) for c in pending):
            for handle in sub.who:
                seen.setdefault(handle.lower(), handle)
    return tuple(seen.values())


def backend_gaps(
    config: BotConfig, changes: Iterable[Change], lacking: Lacking, implemented: Implemented | None = None
) -> tuple[BackendGap, ...]:
    """One gap per backend subscription that matched something, in config order: the ops it lacks,
    and apart the ops it implements whose kernel no longer builds in its form, those upstream
    removed or renamed that its list still names (its codegen refuses them), and the lists of
    `opdrift.render.context.GAP_LISTS`. A subscription whose backend only lacks ops some backends need
    has a gap too (it does not warn: `BackendGap.warns`)."""
    pending = list(changes)
    out = []
    for sub in config.subscriptions:
        spec = sub.backend
        if spec is None:
            continue
        gap = _lacking_for(sub, lacking)
        listed = _implemented_for(sub, implemented)
        matched = [c for c in pending if matches(sub, c, gap, listed)]
        breaking = [c for c in matched if breaks_kernel(sub, c, listed)]
        # An op removed, or renamed away, is named as the backend lists it; a renamed op's new name
        # is still work when the backend lacks it.
        removed = {listed_name(c) for c in breaking if removes(spec, c)}
        broken = {c.name for c in breaking if not removes(spec, c)}
        lacks = {c.name for c in matched if gap is not None and c.name in gap and concerns(spec, c)}
        names = sorted(lacks - broken)
        some = sorted(
            c.name
            for c in pending
            if gap is not None and c.name in gap and concerns_some(spec, c) and _filters_match(sub, c)
        )
        lists = {
            "ops": names,
            "broken": broken,
            "removed": removed,
            "schema_changed": (c.name for c in matched if schema_changed(spec, c, listed)),
            "left_core": (c.name for c in matched if leaves_core(spec, c, listed)),
            "joined_core": (c.name for c in matched if joins_core(spec, c, gap)),
            "dead": (listed_name(c) for c in matched if dead(spec, c, listed)),
            "some_need": some,
        }
        found = gap_of(spec, sub.who, lists, {c.name: c for c in breaking}, listed)
        if found.warns() or found.some_need:
            out.append(found)
    return tuple(out)


def gap_of(
    spec: BackendSpec,
    who: tuple[str, ...],
    lists: Mapping[str, Iterable[str]],
    changes: Mapping[str, Change],
    listed: Kernels | None,
) -> BackendGap:
    """The gap of SPEC's backend, mentioning WHO, from LISTS (a list of `GAP_FIELDS` → op names: each
    is sorted, each op once): each broken kernel with what changed in the form the backend writes it
    in (from CHANGES, op name → its change), and the models that reach its ops (LISTED's table).
    `backend_gaps` makes one per subscription; the watch one per backend, its subscriptions' lists
    merged (`opdrift.app.watch_judge.impacts_of`)."""
    names = {f: tuple(sorted(set(lists.get(f, ())))) for f in GAP_FIELDS}
    models = None if listed is None else listed.models
    broken = tuple(
        replace(
            _kernel(changes[op], listed) if op in changes else BrokenKernel(op, ""),
            models=None if models is None else models.reach((op,)),
        )
        for op in names.pop("broken")
    )
    gap = BackendGap(
        who,
        spec.kind,
        spec.value,
        names["ops"],
        broken,
        name=spec.label,
        ops_models=None if models is None else models.reach(names["ops"]),
        broken_models=None if models is None else models.reach(b.op for b in broken),
        models_caveat="" if models is None else models.caveat,
    )
    return gap.with_lists(names)  # every other list


def _kernel(change: Change, listed: Kernels | None) -> BrokenKernel:
    """The broken kernel of CHANGE's op in the form it is judged in: the backend's, or when that is
    not known `FORM_IF_UNKNOWN`, the form `breaks` judged it in then (its `form` stays "": every
    report says the form was not known, and which one it shows)."""
    form = None if listed is None else judged_form(listed.forms.get(change.name), listed.torch_version)
    # the changes that break it, as `breaks` judged them (a list binding its codegen forces is none)
    met = for_backend(None if listed is None else listed.recorded.get(change.name), change.kernel_changes)
    changes = [k for k in met if k.form == (form or FORM_IF_UNKNOWN)]
    if not changes:
        return BrokenKernel(change.name, form or "")
    one = changes[0]
    return BrokenKernel(change.name, form or "", one.differences(), one.before, one.after)
