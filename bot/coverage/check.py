"""A backend's op list against a snapshot → what it covers, what it lacks, what went stale.

Pure: a `Snapshot` and a `BackendList` in, a `Coverage` out. Whether an operator is covered, and by
which rule (``listed``, ``decomposes``, ``default_kernel``, ``structured_delegate``,
``backend_codegen``, ``autograd_key``, export's ``training_only``), is the work engine's answer
(`bot.work.engine`, which documents the rules): the engine the drift's per-change profiles,
subscriptions, `explain` and the site ask too. docs/coverage.md documents the rules per backend kind.

A ``dispatch`` list is the operators with a kernel under that dispatch key in native_functions.yaml,
judged as the dispatcher fills that key.

Anything else needs a kernel. Listed names that no longer exist upstream are stale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.coverage.kinds import EDGE_KINDS, FALLBACK_OF_KIND, PROFILE_OF_KIND
from bot.coverage.names import last_registered
from bot.coverage.oplist import BackendList, BackendOp
from bot.coverage.schema_history import SinceEvent, schema_since
from bot.errors import ConfigError, SchemaError
from bot.model import OpRecord, Snapshot
from bot.operators.codegen import kernel_binding, rules_for_version
from bot.operators.kernels import Profile
from bot.schema.codes import Code, Detail
from bot.schema.compare import diff_schemas, widens
from bot.schema.grammar import parse_schema, parse_type
from bot.schema.kernel import (
    Binding,
    KernelChange,
    KernelForm,
    KernelVerdict,
    bound,
    breaks_form,
    kernel_changes,
    plain_kernels_accepted,
    verdict_of,
)
from bot.schema.model import Argument, Arguments, FunctionSchema, Return, Type
from bot.text import did_you_mean
from bot.work.engine import RULES, SHARED_BACKWARDS, TRAINING_ONLY, VERIFIER_REJECTS, Backend, Engine

# The engine's vocabulary, which coverage reports use as they are.
__all__ = ["RULES", "SHARED_BACKWARDS", "TRAINING_ONLY"]


@dataclass(frozen=True)
class OpCoverage:
    name: str
    bucket: str
    covered: bool
    rule: str  # one of RULES, or "needs_kernel"
    via: str = ""  # the operator that covers it (delegate, or functional sibling), when not itself
    # for one that needs a kernel: the variant whose kernel would serve it instead (a functional op whose
    # default kernel calls it back: "complex.out" for "complex"), "" when there is none
    alternative: str = ""


@dataclass(frozen=True)
class SchemaAlert:
    """The backend implements `name` with a signature that upstream no longer has.

    Both verdicts of the drift model, from the backend's signature to upstream's: `breaking` for
    callers (`bot.schema.compare`), `kernel` for the C++ signature its kernels are built against
    (`bot.schema.kernel`; "compatible" when they still build, and `kernel_changes` empty).
    """

    name: str
    path: str
    line: int
    backend_schema: str
    upstream_schema: str
    breaking: bool
    details: tuple[Detail, ...]
    kernel: KernelVerdict  # judged in `judged_in` (`judge_in_form`)
    kernel_changes: tuple[KernelChange, ...] = ()
    form: KernelForm | None = None  # the form the backend's kernel is written in; None: not known
    # the form the verdict judged it in: `form`, except before 1.13, whose dispatcher accepted only the
    # SymInt form (`judged_form`)
    judged_in: KernelForm | None = None
    # the first release of the run of releases, up to the snapshot's, whose schema is upstream's
    # (`bot.coverage.schema_history`): how long the backend has been behind. None: in no release yet
    upstream_since: str | None = None
    # how that run began: "added" (the op came with that schema), "changed", or "earliest" (the run
    # starts at the table's first release: unchanged since it or earlier); None with upstream_since
    upstream_event: SinceEvent | None = None


@dataclass(frozen=True)
class Coverage:
    backend_kind: str
    backend_path: str
    profile: Profile
    ops: tuple[OpCoverage, ...]  # every registered operator, sorted by name
    stale: tuple[BackendOp, ...]  # listed, but not an operator upstream
    alerts: tuple[SchemaAlert, ...]
    # the backend's boxed fallback ("path:line (KEY)"), where an op that needs a kernel runs meanwhile
    fallback: str | None = None
    roots: tuple[str, ...] = ()  # what the list was read from (BackendList.roots, else its path)
    decompositions: str = ""  # export: the decomposition table judged by (its origin), else ""
    name: str = ""  # the backend's NAME (`BackendList.name`), "" when none was given
    # ops the backend runs on CPU one by one (`BackendList.cpu_fallback_ops`), and where it lists them
    cpu_fallback_ops: frozenset[str] = frozenset()
    cpu_fallback_at: str = ""

    @property
    def uncovered(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if not o.covered)

    @property
    def training_only(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if o.rule == TRAINING_ONLY)

    @property
    def covered(self) -> tuple[OpCoverage, ...]:
        """The ops the backend serves. An export backend's training-only ops are neither served nor
        needed (an inference graph never holds them), so they are counted apart: `covered`, `uncovered`
        and `training_only` add up to `ops`."""
        return tuple(o for o in self.ops if o.covered and o.rule != TRAINING_ONLY)

    def by_rule(self) -> dict[str, int]:
        """rule → operators it decided, every rule listed (zeros included; ``training_only`` for the
        export profile), "needs_kernel" last."""
        rules = (*RULES, TRAINING_ONLY) if self.profile == "export" else RULES
        if self.backend_kind in EDGE_KINDS:
            rules = (*rules, VERIFIER_REJECTS)
        return {rule: sum(1 for o in self.ops if o.rule == rule) for rule in (*rules, "needs_kernel")}

    def by_bucket(self) -> dict[str, tuple[int, int, int]]:
        """bucket → (covered, needs a kernel, training-only): the three parts of `covered`."""
        counts: dict[str, list[int]] = {}
        for o in self.ops:
            part = counts.setdefault(o.bucket, [0, 0, 0])
            part[2 if o.rule == TRAINING_ONLY else 0 if o.covered else 1] += 1
        return {bucket: (c, n, t) for bucket, (c, n, t) in sorted(counts.items())}


def dispatch_keys(snapshot: Snapshot) -> frozenset[str]:
    """Every dispatch key that some operator of `snapshot` has a kernel under (composite kinds too)."""
    return frozenset(k for rec in snapshot.operators.values() for k in rec.facets.dispatch)


def check_dispatch_key(snapshot: Snapshot, key: str) -> None:
    """Raise ConfigError unless some operator has a kernel under `key`: a ``dispatch`` backend whose
    key matches nothing (``mps`` for ``MPS``) would otherwise list no operator and pass silently."""
    known = dispatch_keys(snapshot)
    if key not in known:
        raise ConfigError(
            f"--backend dispatch={key}: no operator of {snapshot.meta.path} has a kernel under {key!r}"
            f"{did_you_mean(key, known)}"
        )


def _listed(snapshot: Snapshot, backend: BackendList) -> frozenset[str]:
    if backend.kind == "dispatch":
        key = backend.dispatch_key or ""
        return frozenset(name for name, rec in snapshot.operators.items() if key in rec.facets.dispatch)
    # a Python registration of a packet (torch.ops.aten.view) serves every overload of its base
    packets = {op.name for op in backend.ops if op.origin == "packet"}
    if packets:
        return backend.names | {name for name, rec in snapshot.operators.items() if rec.base in packets}
    return backend.names


def engine_backend(snapshot: Snapshot, backend: BackendList, profile: Profile | None = None) -> Backend:
    """BACKEND as the work engine sees it, as a backend of PROFILE (default: its kind's). A native
    dispatch key is judged as the dispatcher fills that key; any other list as a backend of its profile
    that is not in the yaml at all."""
    profile = profile or PROFILE_OF_KIND[backend.kind]
    return Backend(
        profile,
        _listed(snapshot, backend),
        frozenset(op.name for op in backend.ops if _at_autograd_key(op)),
        backend.dispatch_key if backend.kind == "dispatch" and profile != "export" else None,
        backend.decompositions,
        backend.decompositions_origin,
        backend.decompositions_core_except,
        edge=profile == "export" and backend.kind in EDGE_KINDS,
    )


def backend_engine(snapshot: Snapshot, backend: BackendList, profile: Profile | None = None) -> Engine:
    """The engine that judges SNAPSHOT's operators for BACKEND as a backend of PROFILE: the one
    coverage asks, and `explain --backend` too."""
    model = engine_backend(snapshot, backend, profile)
    return Engine(snapshot.operators, model, version=snapshot.meta.torch_version)


def compute_coverage(snapshot: Snapshot, backend: BackendList, profile: Profile | None = None) -> Coverage:
    """Every operator of SNAPSHOT judged for BACKEND, as a backend of PROFILE (default: its kind's), by
    the work engine (`bot.work.engine`), the one that decides the drift's per-change profiles too."""
    engine = backend_engine(snapshot, backend, profile)
    model = engine.backend
    records = snapshot.operators
    ops = []
    for name in sorted(records):
        rec = records[name]
        v = engine.judge(rec)
        ops.append(OpCoverage(name, rec.bucket, v.covered, v.rule, v.via, v.alternative))
    seen_stale: set[str] = set()
    stale = []
    bases = {rec.base for rec in records.values()}
    for op in (*backend.ops, *backend.cpu_fallback_ops):
        if op.origin == "packet" and op.name in bases:
            continue  # a packet names every overload of its base (`_listed`)
        # an operator the backend defines itself, by a schema of its own (ExecuTorch's `- func:`
        # allclose.out), that no release ever registered is its own, not a stale name of upstream's
        if op.origin == "func" and last_registered(op.name) is None:
            continue
        if op.name not in records and op.name not in seen_stale:
            seen_stale.add(op.name)
            stale.append(op)
    return Coverage(
        backend.kind,
        backend.path,
        model.profile,
        tuple(ops),
        tuple(stale),
        tuple(_alerts(snapshot, backend)),
        fallback_of(backend),
        backend.roots or (backend.path,),
        engine.export.table.origin if model.profile == "export" else "",
        backend.name,
        frozenset(op.name for op in backend.cpu_fallback_ops),
        backend.cpu_fallback_at,
    )


def _at_autograd_key(op: BackendOp) -> bool:
    return op.origin == "autograd" or (op.dispatch_key or "").startswith("Autograd")


# torch-mlir prints types as the TorchScript registry does: enums travel as int, SymInt as int.
_MLIR_TYPE = {
    "SymInt": "int",
    "ScalarType": "int",
    "Layout": "int",
    "MemoryFormat": "int",
    "SymFloat": "float",
    "SymBool": "bool",
}


def _mlir_type(t: Type) -> str:
    text = str(t)
    for ours, theirs in _MLIR_TYPE.items():
        text = text.replace(ours, theirs)
    # Fixed sizes (int[2]) are a codegen hint, not part of the TorchScript type.
    return "".join(ch for ch in text if not ch.isdigit()) if "[" in text else text


def mlir_signature(schema: FunctionSchema) -> str:
    """Upstream schema in torch-mlir's ``(Tensor, int[], Scalar) -> (Tensor)`` form."""
    args = ", ".join(_mlir_type(a.type) for a in schema.arguments.flat_all)
    rets = ", ".join(_mlir_type(r.type) for r in schema.returns)
    return f"({args}) -> ({rets})"


def _split_types(sig: str) -> tuple[list[str], str]:
    args, _, rets = sig.partition(") -> (")
    items = [t.strip() for t in args.lstrip("(").split(",") if t.strip()]
    return items, rets.rstrip(")")


def _widened(before: str, after: str) -> bool:
    """The backend's type widens to upstream's, by the rule diff uses (int? → Scalar?)."""
    try:
        return widens(parse_type(before), parse_type(after))
    except SchemaError:
        return False  # a type the grammar does not know (torch-mlir's `t`, `Any`): not provably wider


@dataclass(frozen=True)
class _Bindings:
    """How the backend's kernel is bound and how upstream's is, at the snapshot's release
    (`bot.operators.codegen.kernel_binding`, the drift's rule too)."""

    theirs: Binding
    ours: Binding


def _bindings(op: BackendOp, rec: OpRecord, torch_version: str | None) -> _Bindings:
    """A list whose own keys bind its kernels (`BackendOp.own_binding`: op-plugin's) is bound by them;
    any other backend's kernel is bound as upstream binds it: its list does not say, and its codegen
    (torchgen's gen_backend_stubs for XLA's and XPU's) reads upstream's yaml."""
    rules = rules_for_version(torch_version)
    ours = kernel_binding(rec.facets, rules)
    return _Bindings(kernel_binding(op, rules) if op.own_binding else ours, ours)


def _kernel_verdict(
    theirs: FunctionSchema | None,
    schema: FunctionSchema,
    form: KernelForm | None,
    bindings: _Bindings,
) -> tuple[KernelVerdict, tuple[KernelChange, ...]]:
    """The kernel verdict from the backend's schema to upstream's, for a kernel written in FORM.

    The dispatcher accepts a kernel in the int64_t form for a SymInt schema and unpacks the SymInts
    when it calls it (c10's KernelFunction::call; OperatorEntry checks a kernel against the signature
    of its own form), so a change that alters only the SymInt form leaves an int64_t kernel building:
    "symint", not "breaking". With no form known (torch-mlir lowers by types) the verdict is every
    form's (`verdict_of`). Each side is bound by BINDINGS (`_bindings`): an op that joined a structured
    group upstream (``_scaled_mm_v2`` in 2.14.0) breaks a kernel its list still binds outside one. An
    unreadable backend side is "breaking" with no signature, as the drift does for an unreadable
    schema."""
    if theirs is None:
        return "breaking", ()
    found = kernel_changes(theirs, schema, binding_before=bindings.theirs, binding_after=bindings.ours)
    return judge_in_form(found, form), found


def judge_in_form(changes: tuple[KernelChange, ...], form: KernelForm | None) -> KernelVerdict:
    """The verdict for a kernel written in FORM: "breaking" when that form's signature changed;
    "symint" when only the SymInt form did and the kernel is int64_t; else "compatible"."""
    if form is None:
        return verdict_of(changes)
    if breaks_form(changes, form):
        return "breaking"
    return "symint" if changes and form == "int64_t" else "compatible"


def _schema_from_types(
    theirs: list[str], their_rets: str, ours: list[str], our_rets: str, schema: FunctionSchema
) -> FunctionSchema | None:
    """The backend's schema as far as torch-mlir's types tell it, for the kernel verdict.

    torch-mlir prints TorchScript types, which cannot tell SymInt from int, an enum from int, or
    ``int[1]`` from ``int[]``, and carry no names, alias annotations or keyword-only marker. So where
    the backend's type prints as upstream's, upstream's argument stands for it; elsewhere the
    backend's type is read, keeping upstream's annotation on a Tensor. None when a type does not read.
    """
    flat = schema.arguments.flat_all
    try:
        args = []
        for i, text in enumerate(theirs):
            up = flat[i] if i < len(flat) else None
            if up is not None and i < len(ours) and ours[i] == text:
                args.append(up)
                continue
            t = parse_type(text)
            annotation = up.annotation if up is not None and t.is_tensor_like() else None
            args.append(Argument(up.name if up is not None else f"arg{i}", t, None, annotation))
        returns = schema.returns
        if their_rets != our_rets:
            texts = [r.strip() for r in their_rets.split(",") if r.strip()]
            returns = tuple(
                Return(None, t, r.annotation if r is not None and t.is_tensor_like() else None)
                for t, r in ((parse_type(text), _at(schema.returns, i)) for i, text in enumerate(texts))
            )
    except SchemaError:
        return None
    return FunctionSchema(schema.name, Arguments(positional=tuple(args)), returns)


def _at(returns: tuple[Return, ...], i: int) -> Return | None:
    return returns[i] if i < len(returns) else None


def _types_alert(
    op: BackendOp, schema: FunctionSchema, judged: KernelForm | None, bindings: _Bindings
) -> SchemaAlert | None:
    backend_sig = " ".join((op.schema or "").split())
    upstream = mlir_signature(schema)
    if backend_sig == upstream:
        return None
    theirs, their_rets = _split_types(backend_sig)
    ours, our_rets = _split_types(upstream)
    flat = schema.arguments.flat_all
    details: list[Detail] = []
    if our_rets != their_rets:
        details.append(Code.RETURN_CHANGED("returns", their_rets, our_rets))
    for i in range(max(len(theirs), len(ours))):
        before = theirs[i] if i < len(theirs) else ""
        after = ours[i] if i < len(ours) else ""
        if before == after:
            continue
        arg = flat[i].name if i < len(flat) else f"#{i}"
        if not before and i < len(flat) and flat[i].default is not None:
            details.append(Code.ARGUMENT_ADDED_WITH_DEFAULT(arg, "", after))
        elif before and after and _widened(before, after):
            details.append(Code.ARGUMENT_WIDENED(arg, before, after))
        else:
            code = (
                Code.ARGUMENT_REMOVED
                if not after
                else Code.ARGUMENT_ADDED
                if not before
                else Code.ARGUMENT_RETYPED
            )
            details.append(code(arg, before, after))
    breaking = any(d.severity == "breaking" for d in details)
    kernel, kernels = _kernel_verdict(
        _schema_from_types(theirs, their_rets, ours, our_rets, schema), schema, judged, bindings
    )
    return SchemaAlert(
        op.name,
        op.path,
        op.line,
        backend_sig,
        str(schema),
        breaking,
        tuple(details),
        kernel,
        kernels,
        op.kernel_form,
        judged_in=judged,
    )


def _full_alert(
    op: BackendOp, rec: OpRecord, schema: FunctionSchema, judged: KernelForm | None, bindings: _Bindings
) -> SchemaAlert | None:
    text = op.schema or ""
    if text == rec.schema and bound(bindings.theirs, schema) == bound(bindings.ours, schema):
        return None
    try:
        theirs = parse_schema(text, path=op.path, line=op.line)
    except SchemaError:
        # A schema comment the grammar rejects is the backend's typo, not an upstream change; the
        # alert still shows both texts so a maintainer can compare them.
        return SchemaAlert(
            op.name, op.path, op.line, text, rec.schema, True, (), "breaking", (), op.kernel_form, judged
        )
    details = diff_schemas(theirs, schema)
    kernel, kernels = _kernel_verdict(theirs, schema, judged, bindings)
    # Nothing a caller or a kernel notices (a default respelled, `1e-05` for `1.0e-05`): no alert.
    if not kernels and all(d.severity == "info" for d in details):
        return None
    breaking = any(d.severity == "breaking" for d in details)
    return SchemaAlert(
        op.name,
        op.path,
        op.line,
        text,
        rec.schema,
        breaking,
        details,
        kernel,
        kernels,
        op.kernel_form,
        judged,
    )


def judged_form(form: KernelForm | None, torch_version: str | None) -> KernelForm | None:
    """The form a kernel written in FORM (None: not known) is judged in against torch TORCH_VERSION:
    its own, from the release whose dispatcher calls an int64_t kernel for a SymInt schema (1.13.0,
    `bot.schema.kernel.plain_kernels_accepted`); before it a kernel had to take its schema's own types,
    the SymInt form, whatever it was written in. Coverage alerts and subscriptions judge alike."""
    return form if plain_kernels_accepted(torch_version) else "SymInt"


def alert_for(op: BackendOp, rec: OpRecord, torch_version: str | None) -> SchemaAlert | None:
    """The schema alert for the backend's OP (which records a schema) against upstream's REC at torch
    TORCH_VERSION, or None when they agree. The one rule: coverage's alerts, and a subscription's
    "its recorded schema changed" (`bot.app.subscriptions.schema_changed`), which asks it of both
    sides of a change."""
    judged = judged_form(op.kernel_form, torch_version)
    schema = parse_schema(rec.schema)
    bindings = _bindings(op, rec, torch_version)
    if op.schema_kind == "types":
        return _types_alert(op, schema, judged, bindings)
    return _full_alert(op, rec, schema, judged, bindings)


def _alerts(snapshot: Snapshot, backend: BackendList) -> Iterable[SchemaAlert]:
    version = snapshot.meta.torch_version
    for op in backend.ops:
        rec = snapshot.operators.get(op.name)
        if rec is None or op.schema is None:
            continue
        alert = alert_for(op, rec, version)
        if alert is not None:
            # since when upstream's schema has been what it is AND bound as it is (a run of the table)
            schema = parse_schema(rec.schema)
            bindings = _bindings(op, rec, version)
            since = schema_since(op.name, rec.schema, version, binding=bound(bindings.ours, schema).label)
            if since is not None:
                alert = dataclasses.replace(alert, upstream_since=since.release, upstream_event=since.event)
            yield alert


@dataclass(frozen=True)
class CoverageChange:
    """What changed for a backend between BASE and HEAD."""

    new_uncovered: tuple[str, ...]  # needs a kernel at HEAD, but existed-and-covered or did not exist at BASE
    newly_covered: tuple[str, ...]
    gap_before: int
    gap_after: int
    # HEAD's schema alerts that BASE did not raise the same way (`alert_key`): what is news
    new_alerts: tuple[SchemaAlert, ...] = ()
    old_alerts: int = 0  # HEAD's alerts that BASE already raised


def alert_key(a: SchemaAlert) -> tuple[str, str, str, tuple[str, ...]]:
    """What makes two alerts the same news: the operator, the backend's text, upstream's schema and
    upstream's C++ signatures (not the line: an edit elsewhere in the backend's file moves it). A kernel
    that built at BASE and breaks at HEAD with no text changed (``_scaled_mm_v2`` joined a structured
    group in 2.14.0) is news."""
    return (a.name, a.backend_schema, a.upstream_schema, tuple(str(k.after) for k in a.kernel_changes))


def compare_coverage(base: Coverage, head: Coverage) -> CoverageChange:
    base_gap = {o.name for o in base.uncovered}
    head_gap = {o.name for o in head.uncovered}
    # Closed means the backend now covers it; an op removed upstream left the gap by itself.
    at_head = {o.name for o in head.ops}
    seen = {alert_key(a) for a in base.alerts}
    new_alerts = tuple(a for a in head.alerts if alert_key(a) not in seen)
    return CoverageChange(
        new_uncovered=tuple(sorted(head_gap - base_gap)),
        newly_covered=tuple(sorted((base_gap - head_gap) & at_head)),
        gap_before=len(base_gap),
        gap_after=len(head_gap),
        new_alerts=new_alerts,
        old_alerts=len(head.alerts) - len(new_alerts),
    )


def fallback_of(backend: BackendList) -> str | None:
    """Where BACKEND's boxed CPU fallback is registered ("path:line (KEY)"), or None when it has none:
    the sources' own (a C++ tree's `m.fallback`), else the one every backend of its kind has."""
    return backend.fallback or FALLBACK_OF_KIND.get(backend.kind) or None


def runs_on_cpu(cov: Coverage, name: str) -> bool:
    """Whether the backend sends NAME, which it has no kernel for, to a CPU fallback: its boxed one for
    every op, or the list of ops it registers one by one to one (torch-xpu-ops' `fallback_list`).
    Whether PyTorch has the CPU kernel the fallback calls is `workitems.has_cpu_kernel`'s matter."""
    return falls_back(cov) or name in cov.cpu_fallback_ops


def falls_back(cov: Coverage) -> bool:
    """What an op without a kernel does on this backend: run on its boxed CPU fallback (XLA's
    aten_fallback.cpp, pytorch_dlprim's `m.fallback`), or fail."""
    return cov.fallback is not None


def coverage_json(cov: Coverage, change: CoverageChange | None = None) -> Mapping[str, object]:
    """The documented machine form of a coverage report (``--format json``)."""
    out: dict[str, object] = {
        "backend": {
            "kind": cov.backend_kind,
            "path": cov.backend_path,
            **({"name": cov.name} if cov.name else {}),
            "profile": cov.profile,
            "fallback": cov.fallback,
            # the list of ops it runs on CPU one by one ("path:line (KEY)"), only when given
            **({"cpu_fallback_list": cov.cpu_fallback_at} if cov.cpu_fallback_at else {}),
            **({"decompositions": cov.decompositions} if cov.profile == "export" else {}),
        },
        "operators": len(cov.ops),
        # covered + needs_kernel + len(training_only) == operators: a training-only op is neither
        "covered": len(cov.covered),
        "needs_kernel": len(cov.uncovered),
        # what those ops do meanwhile: "falls_back_to_cpu" on a backend with a boxed fallback, else "fails"
        "uncovered_run": "falls_back_to_cpu" if falls_back(cov) else "fails",
        "by_rule": cov.by_rule(),
        "by_bucket": {
            b: {"covered": c, "needs_kernel": n, **({"training_only": t} if cov.profile == "export" else {})}
            for b, (c, n, t) in cov.by_bucket().items()
        },
        # alternative: the variant whose kernel would serve the op instead (`OpCoverage.alternative`), or null
        "uncovered": [
            {"name": o.name, "bucket": o.bucket, "alternative": o.alternative or None} for o in cov.uncovered
        ],
        **(
            {"training_only": [{"name": o.name, "bucket": o.bucket} for o in cov.training_only]}
            if cov.profile == "export"
            else {}
        ),
        # last_registered: the last release (1.9.0 on) that had it; null for a name none ever did
        "stale": [
            {"name": o.name, "path": o.path, "line": o.line, "last_registered": last_registered(o.name)}
            for o in cov.stale
        ],
        "schema_alerts": [
            {
                "name": a.name,
                "path": a.path,
                "line": a.line,
                "backend_schema": a.backend_schema,
                "upstream_schema": a.upstream_schema,
                "breaking": a.breaking,
                "kernel": a.kernel,
                "form": a.form,
                "judged_in": a.judged_in,
                "upstream_since": a.upstream_since,
                "upstream_since_event": a.upstream_event,
                "kernel_changes": [
                    {"form": k.form, "before": str(k.before), "after": str(k.after)} for k in a.kernel_changes
                ],
                "details": [
                    {
                        "code": d.code,
                        "severity": d.severity,
                        "subject": d.subject,
                        "before": d.before,
                        "after": d.after,
                    }
                    for d in a.details
                ],
            }
            for a in cov.alerts
        ],
    }
    if change is not None:
        out["since_base"] = {
            "new_uncovered": list(change.new_uncovered),
            "newly_covered": list(change.newly_covered),
            "gap_before": change.gap_before,
            "gap_after": change.gap_after,
            "new_alerts": [a.name for a in change.new_alerts],
            "old_alerts": change.old_alerts,
        }
    return out
