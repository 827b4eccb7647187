"""A coverage's needs as work items: what a maintainer writes, and what follows from it.

Pure: a `Coverage` and the `Snapshot` it was judged on in, `WorkItem`s out. A need is rarely one
operator on its own:

- in an eager backend, the functional and in-place members of a structured group take their kernel
  from the group's out= op (``structured_delegate``): write ``acos.out`` and ``acos`` and ``acos_``
  follow (the dispatcher runs the delegate's structured kernel for them, `opdrift.operators.kernels`);
- under functionalization (the ``functional`` and ``export`` profiles) the out= and in-place variants
  become their functional op (`OpCoverage.via`, rule ``backend_codegen``), so writing ``acos`` serves
  the trio.

What an item's operators do today, meanwhile (`today`, for the eager profile): a backend with a
boxed CPU fallback (its kind's, `opdrift.coverage.kinds`, or one its sources register; or one it registers
for the ops of a list only, torch-xpu-ops' `fallback_list`) runs them on CPU through ``at::native::cpu_fallback``, which calls the operator again on CPU tensors, so only when the
dispatcher has a kernel for it at the CPU key: its own or its structured delegate's, or a composite one
that serves CPU (`opdrift.operators.kernels.kernel_for`; the set this derives for 2.13.0 is the one the
dispatcher computed, tests/data/observed/reach/). Otherwise, or without a fallback, they fail on the
device: ``_thnn_fused_lstm_cell`` (CUDA and XPU kernels only) fails on pytorch_dlprim, so ``nn.LSTM``
training does.

Each item carries the C++ signature to write in the backend's form (torch-mlir lowers an op by its
schema and writes no C++ kernel: no signature), the schema, why it is needed, and the keys it is
ranked by (`opdrift.render.rank.work_item_rank_key`): core first, then the ops most other ops' Python
decompositions call (the in-degree of the ``decomposes_to`` facet over the snapshot's base operators).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from opdrift.coverage.check import Coverage, OpCoverage, runs_on_cpu
from opdrift.coverage.kinds import EDGE_KINDS, KIND_BY_ID, BackendKind
from opdrift.coverage.names import first_registered
from opdrift.dispatchkeys import CEA, CEA_NON_FUNCTIONAL, CIA, CIA_NESTED
from opdrift.model import OpRecord, Snapshot
from opdrift.operators.codegen import kernel_binding, rules_for_version
from opdrift.operators.functionalize import Functionalization
from opdrift.operators.kernels import FUNCTIONALIZED, kernel_for, table_of
from opdrift.schema.grammar import parse_schema
from opdrift.schema.kernel import Binding, KernelForm, judged_form, kernel_signature
from opdrift.taxonomy.scope import LAYOUT_PREFIXES, Scope, device_kernel_keys
from opdrift.usage.device import on_device
from opdrift.usage.models import ModelTableError, ModelUsage, Status, UsageChoice, paths_for, usage_for
from opdrift.work.engine import scope
from opdrift.work.rules import BACKEND_CODEGEN, DEFAULT_KERNEL, LISTED, STRUCTURED_DELEGATE

# What an item's operators do today on the backend's device, meanwhile.
Today = Literal["fails", "cpu_fallback"]
TODAY_WORDS: Mapping[Today, str] = {"fails": "fails on your device", "cpu_fallback": "runs on CPU"}
# Models an item names, most calls first; the JSON counts them all.
MODEL_NAMES = 3
# Operators a count names it reaches its models through (`Through`), most models first.
THROUGH_NAMES = 3


@dataclass(frozen=True)
class Through:
    """How a count's models reach the ops it is said of when some call none of them: ``models`` of
    them dispatch only operators those ops' kernels serve (`served_by`), such as ``mean.dim``,
    whose structured kernel runs a backend's ``mean.out``; ``ops``: the served operators those
    models dispatch, up to THROUGH_NAMES, most of those models first, and ``more`` the rest."""

    models: int
    ops: tuple[str, ...]
    more: int = 0


@dataclass(frozen=True)
class ModelReach:
    """Which models of the corpus (`opdrift.usage.models`) an item's operators reach on the backend's
    paths: ``used_by`` of ``of`` models dispatch at least one of them; ``breaks`` of those fail on
    the device today (an eager backend's item that `today` fails). ``no_data_yet``: no model uses
    them and one of them is newer than the table's release, so the table cannot say "none"."""

    used_by: int
    of: int
    names: tuple[str, ...]  # up to MODEL_NAMES, most calls first
    breaks: int
    release: str
    no_data_yet: bool = False
    # every one of its operators has a device kernel for the CPU only (`_scaled_dot_product_flash_
    # attention_for_cpu`, `mkldnn_rnn_layer`): the corpus ran on the CPU, where the models chose them;
    # on another device they dispatch that device's variant, so they are not counted as used
    cpu_only: bool = False
    # when some of the `used_by` models dispatch none of the ops it is said of, only ops their kernels
    # serve: which (a maintainer's broken ``mean.out`` is "used by" the models calling ``mean.dim``)
    through: Through | None = None

    def short_words(self, name: Callable[[str], str] = str) -> str:
        """One phrase for a list of ops in a report: "used by 31 of 51 models", "used by none of 51
        models", "no model data yet" (an op newer than the table's release), "CPU-only in the model
        data" (the models reach them on the CPU only); then `through_words`, each op by NAME."""
        if self.no_data_yet:
            return "no model data yet"
        if self.cpu_only:
            return "CPU-only in the model data"
        if not self.used_by:
            return f"used by none of {self.of} models"
        return f"used by {self.used_by} of {self.of} models{self.through_words(name)}"

    def through_words(self, name: Callable[[str], str] = str) -> str:
        """ ", through mean.dim" when every model counted reaches the ops only through ops their
        kernels serve; ", 25 only through mean.dim" when some of them; ", through a, b, c and 2
        more" beyond THROUGH_NAMES; "" when the ops themselves account for every model. Each op
        written by NAME (a Markdown code span in the reports)."""
        t = self.through
        if t is None or not t.ops:
            return ""
        ops = ", ".join(name(o) for o in t.ops)
        listed = f"{ops} and {t.more} more" if t.more else ops
        only = "" if t.models >= self.used_by else f" {t.models} only"
        return f",{only} through {listed}"


@dataclass(frozen=True)
class WorkItem:
    """One thing to write: `name`, and the `members` that follow from it."""

    name: str  # the operator to write (for an eager structured group: its out= op)
    members: tuple[str, ...]  # the operators writing `name` serves too, sorted
    bucket: str
    schema: str
    line: int  # its entry's line in native_functions.yaml
    form: KernelForm | None  # the form `signature` is in; None: the backend lowers, no C++ kernel
    signature: str  # the dispatcher's C++ signature in `form`, "" when `form` is None
    why: str  # one sentence: why the backend needs it
    alternative: str  # a variant whose kernel would do instead ("complex.out" for "complex"), or ""
    core: bool  # it or a member is tagged core
    in_degree: int  # how many base operators' Python decompositions call its base
    private: bool  # its base starts with "_"
    scope: Scope  # whether every backend needs it (`opdrift.taxonomy.scope`)
    # what its operators do today on an eager backend (the module docstring); None for the other
    # profiles (an export compiler runs nothing it cannot lower; XLA's fallback is not judged yet)
    today: Today | None = None
    # the models that dispatch its operators on the backend's paths; None without model data
    models: ModelReach | None = None

    @property
    def models_words(self) -> str:
        """ "breaks 3 models; used by 12 of 51 models (resnet18, gpt2, llama)", "used by no model of
        51", "no model data yet (newer than torch 2.14.1)"; "" without model data."""
        m = self.models
        if m is None:
            return ""
        if m.no_data_yet:
            return f"no model data yet (newer than torch {m.release})"
        if m.cpu_only:
            return "CPU-only: the models (run on the CPU) reach it there only"
        if not m.used_by:
            return f"used by none of {m.of} models"
        named = f" ({', '.join(m.names)}{', ...' if m.used_by > len(m.names) else ''})"
        breaks = f"breaks {m.breaks} model{'s' if m.breaks != 1 else ''}; " if m.breaks else ""
        # not `ModelReach.through_words`: the item names the ops it serves beside this
        return f"{breaks}used by {m.used_by} of {m.of} models{named}"

    @property
    def today_words(self) -> str:
        return TODAY_WORDS[self.today] if self.today is not None else ""


def has_cpu_kernel(rec: OpRecord) -> bool:
    """Whether the dispatcher has a kernel for REC at the CPU key, by its rules over REC's dispatch
    table (`opdrift.operators.kernels.kernel_for`)."""
    return kernel_for(table_of(rec.facets), "CPU") is not None


def _today(cov: Coverage, records: Mapping[str, OpRecord], names: tuple[str, ...]) -> Today | None:
    if cov.profile != "eager":
        return None
    if all(runs_on_cpu(cov, n) and has_cpu_kernel(records[n]) for n in names):
        return "cpu_fallback"
    return "fails"


def model_paths(cov: Coverage) -> tuple[str, ...]:
    """The corpus paths whose operators reach COV's backend: torch-mlir decomposes by its own table."""
    return paths_for(cov.profile, torch_mlir=KIND_BY_ID[cov.backend_kind].own_decompositions)


def model_choice(torch_version: str | None) -> UsageChoice | None:
    """The model table that answers for TORCH_VERSION (its release's or the nearest one), or None when
    the snapshot names no release a table can answer for."""
    if torch_version is None:
        return None
    try:
        return usage_for(torch_version)
    except ModelTableError:
        return None


def device_key(backend_kind: BackendKind, backend_path: str) -> str:
    """The dispatch key an eager backend's device has: its kind's (`opdrift.coverage.kinds`: XPU for
    Intel's lists, PrivateUse1, the out-of-tree key, for pytorch_dlprim, torch_npu's op-plugin and the
    others), or a ``dispatch`` list's own key."""
    return KIND_BY_ID[backend_kind].device_key or backend_path


def model_usage(cov: Coverage, usage: ModelUsage) -> ModelUsage:
    """USAGE as COV's backend receives it: on an eager backend's device, what the models dispatch
    there instead of the CPU's choices (`opdrift.usage.device`: ``nn.LSTM`` calls ``_thnn_fused_lstm_cell``)."""
    if cov.profile != "eager":
        return usage
    key = device_key(cov.backend_kind, cov.backend_path)
    return dataclasses.replace(usage, counts=on_device(usage.counts, key))


def models_recorded(usage: ModelUsage, paths: tuple[str, ...]) -> tuple[str, ...]:
    """The models whose run succeeded on any of PATHS: the "of M" of "used by N of M models"."""
    return tuple(sorted({m for p in paths for m in usage.recorded(p)}))


def cpu_only(rec: OpRecord) -> bool:
    """Whether PyTorch's only device kernel for REC is the CPU's (layouts aside)."""
    return [k for k in device_kernel_keys(rec) if not k.startswith(LAYOUT_PREFIXES)] == ["CPU"]


def model_reach(
    usage: ModelUsage,
    paths: tuple[str, ...],
    names: tuple[str, ...],
    today: Today | None,
    cpu_names: frozenset[str] = frozenset(),
    served: frozenset[str] = frozenset(),
) -> ModelReach:
    """How many models dispatch any of NAMES on any of PATHS, and how many of them break today.
    CPU_NAMES: those of NAMES whose only device kernel is the CPU's (`cpu_only`), not counted.
    SERVED: those of NAMES counted because the others' kernels serve them (`served_by`): the models
    that dispatch only those are said to reach the others through them (`Through`)."""
    calls: dict[str, int] = {}
    reached: dict[str, set[str]] = {}  # operator -> the models that dispatch it
    for name in names:
        if name in cpu_names:
            continue
        for path in paths:
            for model, count in usage.counts.get(path, {}).get(name, {}).items():
                calls[model] = calls.get(model, 0) + count
                reached.setdefault(name, set()).add(model)
    users = sorted(calls, key=lambda m: (-calls[m], m))
    unknown = not users and any(
        usage.lookup(n, paths[0], first_registered(n)).status is Status.NO_DATA_YET for n in names
    )
    return ModelReach(
        used_by=len(users),
        of=len(models_recorded(usage, paths)),
        names=tuple(users[:MODEL_NAMES]),
        # the eager paths are an eager backend's: an op that fails there fails each model using it
        breaks=len(users) if today == "fails" else 0,
        release=usage.release,
        no_data_yet=unknown,
        cpu_only=bool(names) and all(n in cpu_names for n in names),
        through=_through(reached, served),
    )


def _through(reached: Mapping[str, set[str]], served: frozenset[str]) -> Through | None:
    """The `Through` of a count whose operators the models of REACHED dispatch, SERVED those served
    by the others' kernels; None when the others reach every model."""
    direct = {m for op, models in reached.items() if op not in served for m in models}
    only = {m for op, models in reached.items() if op in served for m in models} - direct
    if not only:
        return None
    by = {op: len(models & only) for op, models in reached.items() if op in served and models & only}
    ops = sorted(by, key=lambda op: (-by[op], op))
    return Through(len(only), tuple(ops[:THROUGH_NAMES]), max(0, len(ops) - THROUGH_NAMES))


# The rules by which an operator's verdict names (`OpCoverage.via`) another operator whose kernel runs
# for it on the backend (`opdrift.work.engine`): a structured group's functional and in-place members run
# their out= delegate's kernel (eager); functionalization turns a variant into its functional op, and a
# view into its *_copy op; a functional op's default kernel calls back its listed out= variant
# (``complex`` -> ``complex.out``); ExecuTorch runs a functional op as its listed out= variant. Not
# ``autograd_key``: the forward's Autograd kernel answers for a backward, no kernel of the backward runs.
SERVING_RULES = frozenset({STRUCTURED_DELEGATE, BACKEND_CODEGEN, DEFAULT_KERNEL, LISTED})


def served_by(cov: Coverage) -> dict[str, frozenset[str]]:
    """operator -> the operators its kernel serves on COV's backend (`SERVING_RULES`), through any
    number of hops (ExecuTorch: ``add_.Tensor`` becomes ``add.Tensor``, which runs ``add.out``): the
    members of a work item to write it, and what breaks with it when its kernel does. Pure."""
    via = {o.name: o.via for o in cov.ops if o.via and o.rule in SERVING_RULES and o.via != o.name}
    served: dict[str, set[str]] = {}
    for name, at in via.items():
        seen = {name}
        while at and at not in seen:  # up the chain to the op nothing carries (and never round a cycle)
            served.setdefault(at, set()).add(name)
            seen.add(at)
            at = via.get(at, "")
    return {k: frozenset(v) for k, v in served.items()}


def with_served(names: Iterable[str], served: Mapping[str, frozenset[str]]) -> tuple[str, ...]:
    """NAMES, then the operators their kernels serve (`served_by`), each once, sorted after NAMES: the
    operators whose callers break when NAMES' kernels do."""
    ops = tuple(dict.fromkeys(names))
    more = sorted({s for n in ops for s in served.get(n, ())} - set(ops))
    return (*ops, *more)


def decomposition_in_degree(snapshot: Snapshot) -> dict[str, int]:
    """base operator → how many other base operators' decompositions (`Facets.decomposes_to`) call it.

    Counted per base operator, not per overload, so that a base with many overloads does not count
    many times."""
    callers: dict[str, set[str]] = {}
    for rec in snapshot.operators.values():
        for target in rec.facets.decomposes_to:
            if target != rec.base:
                callers.setdefault(target, set()).add(rec.base)
    return {target: len(bases) for target, bases in callers.items()}


def declaration(name: str, schema: str, form: KernelForm, binding: Binding) -> str:
    """The C++ function to register for NAME: the dispatcher's signature in FORM, bound by BINDING
    (`opdrift.schema.kernel.kernel_signature`, `opdrift.operators.codegen.kernel_binding`), its parameters named
    as the schema names them, the function named after the operator (``acos.out`` → ``acos_out``, as
    torchgen names out= kernels)."""
    parsed = parse_schema(schema)
    sig = kernel_signature(parsed, form, binding)
    params = ", ".join(
        f"{t} {a.name}" for t, a in zip(sig.parameters, parsed.arguments.flat_all, strict=True)
    )
    return f"{sig.returns} {name.replace('.', '_')}({params})"


def _form(cov: Coverage, torch_version: str | None) -> KernelForm | None:
    """The form a new kernel of COV's backend is declared in: its kind's (`opdrift.coverage.kinds`), else
    the plain one, as judged at TORCH_VERSION (see Note [SymInt kernels from 1.13]). None for a backend
    that writes no C++ (torch-mlir lowers ops by their schema in its own dialect)."""
    kind = KIND_BY_ID.get(cov.backend_kind)
    if kind is not None and not kind.writes_kernels:
        return None
    return judged_form((kind.kernel_form if kind is not None else None) or "int64_t", torch_version)


def _why(o: OpCoverage, rec: OpRecord, cov: Coverage) -> str:
    """Why the backend needs `o`, from its kernel table and the backend's profile (the reasons
    `opdrift.coverage.check.compute_coverage` decides by, in words)."""
    table = table_of(rec.facets)
    if cov.profile == "export":
        if CIA in table:
            return (
                "it reaches the exported graph: export keeps a functional, non-aliasing "
                "CompositeImplicitAutograd op unless the decomposition table names it, and this one does not"
            )
        return (
            "it reaches the exported graph: export does not decompose it (no CompositeImplicitAutograd), "
            "nor does the decomposition table"
        )
    keys = device_kernel_keys(rec)
    devices = [k for k in keys if not k.startswith(LAYOUT_PREFIXES)]
    others = " and other layouts" if len(devices) < len(keys) else ""
    only = (
        f"PyTorch's kernels are for {', '.join(devices)}{others}"
        if devices
        else "PyTorch's kernels are for sparse, quantized or nested layouts"
        if keys
        else "PyTorch registers no kernel for it"
    )
    if o.alternative:
        # check.py's exception to the default kernel: the variant it calls has no kernel at a
        # functional backend's key unless the backend lists it
        return (
            f"its default kernel calls {o.alternative}, which has no kernel at a functional backend's key "
            f"unless the backend lists it: write this op or {o.alternative}"
        )
    if cov.profile == "functional" and CEA_NON_FUNCTIONAL in table:
        return (
            "its only default kernel is CompositeExplicitAutogradNonFunctional, which the dispatcher "
            "does not give functional backends"
        )
    if CIA_NESTED in table and CIA not in table and CEA not in table:
        return f"its only decomposition is for nested tensors; {only}"
    return f"no default kernel or decomposition serves it: {only}"


def _edge_why(functional: str, rec: OpRecord, out: str) -> str:
    """Why an ExecuTorch backend needs FUNCTIONAL, and what it writes: its out= variant OUT (or
    FUNCTIONAL itself when upstream has none)."""
    tag = "core" if "core" in rec.facets.tags else "view_copy" if "view_copy" in rec.facets.tags else ""
    accepted = f"tagged {tag}, " if tag else "on the verifier's exception list, "
    reaches = f"{functional} reaches the edge program ({accepted}not decomposed by export)"
    if not out:
        return (
            f"{reaches}, and it has no out= variant upstream: to_out_variant cannot convert it (ToOutVarPass "
            f"keeps the functional call), so the kernel is listed as `- op: {functional}`"
        )
    return f"{reaches}, and to_out_variant turns it into {out}: list `- op: {out}` with its kernel"


def _edge_target(fz: Functionalization, rec: OpRecord, group: list[str]) -> str:
    """The out= variant an ExecuTorch backend writes for functional REC (ExecuTorch's to_out_variant,
    exir/operator/convert.py at cff6f4d: the out= schema of REC's signature group), preferring one
    of GROUP; "" when upstream has none."""
    outs = fz.out_variants_of(rec)
    return next((v for v in outs if v in group), outs[0] if outs else "")


def _lead_of(o: OpCoverage, rec: OpRecord, cov: Coverage, uncovered: Mapping[str, OpCoverage]) -> str:
    """The item an operator's need belongs to: its own, or (eager) its structured delegate's."""
    delegate = rec.facets.structured_delegate
    if cov.profile not in FUNCTIONALIZED and delegate is not None and delegate in uncovered:
        return delegate
    return o.name


def work_items(cov: Coverage, snapshot: Snapshot) -> tuple[WorkItem, ...]:
    """COV's needs grouped into work items, in name order (rank them with `work_item_rank_key`)."""
    records = snapshot.operators
    uncovered = {o.name: o for o in cov.uncovered if o.name in records}
    members: dict[str, set[str]] = {}
    for o in uncovered.values():
        lead = _lead_of(o, records[o.name], cov, uncovered)
        members.setdefault(lead, set())
        if lead != o.name:
            members[lead].add(o.name)
    # The work engine calls a structured delegator (eager) or a functionalized variant no work of its
    # own, whatever its carrier's state: it joins the item of the operator that carries it.
    served = served_by(cov)
    for lead, carried in members.items():
        carried.update(served.get(lead, ()))
    version = snapshot.meta.torch_version
    form = _form(cov, version)
    rules = rules_for_version(version)
    in_degree = decomposition_in_degree(snapshot)
    choice = model_choice(version)
    paths = model_paths(cov)
    usage = None if choice is None else model_usage(cov, choice.usage)
    # ExecuTorch lists out= variants: the exported program is converted to them (to_out_variant), so
    # its item names the out= op to write and serves the functional op it carries
    fz = Functionalization(records) if cov.backend_kind in EDGE_KINDS and cov.profile == "export" else None
    items = []
    for lead in sorted(members):
        rec = records[lead]
        group = sorted(members[lead])
        name, write, why = lead, rec, ""
        if fz is not None:
            out = _edge_target(fz, rec, group)
            why = _edge_why(lead, rec, out)
            if out:
                name, write, group = out, records[out], sorted({*group, lead} - {out})
        signature = (
            "" if form is None else declaration(name, write.schema, form, kernel_binding(write.facets, rules))
        )
        names = (name, *group)  # the item's operators, the one it writes first
        today = _today(cov, records, names)
        items.append(
            WorkItem(
                name=name,
                members=tuple(group),
                bucket=rec.bucket,
                schema=write.schema,
                line=write.line,
                form=form,
                signature=signature,
                why=why or _why(uncovered[lead], rec, cov),
                alternative=uncovered[lead].alternative,
                core=any("core" in records[n].facets.tags for n in names),
                # an item ranks where its best member would: `unfold_copy` serves `unfold` on a
                # functional backend, and ranks as `unfold` does
                in_degree=max(in_degree.get(records[n].base, 0) for n in names),
                private=all(records[n].base.startswith("_") for n in names),
                scope=scope(rec),
                today=today,
                models=None
                if usage is None
                else model_reach(
                    usage,
                    paths,
                    names,
                    today,
                    frozenset(n for n in names if cpu_only(records[n])),
                    frozenset(group),  # the ops writing `name` serves
                ),
            )
        )
    return tuple(items)
