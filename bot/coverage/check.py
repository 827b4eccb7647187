"""A backend's op list against a snapshot → what it covers, what it lacks, what went stale.

Pure: a `Snapshot` and a `BackendList` in, a `Coverage` out. Whether an operator is covered, and by
which rule (``listed``, ``decomposes``, ``default_kernel``, ``structured_delegate``,
``backend_codegen``, ``autograd_key``, export's ``training_only``), is the work engine's answer
(`opdrift.work.engine`, which documents the rules): the engine the drift's per-change profiles,
subscriptions, `explain` and the site ask too. docs/coverage.md documents the rules per backend kind.

A ``dispatch`` list is the operators with a kernel under that dispatch key in native_functions.yaml,
judged as the dispatcher fills that key.

Anything else needs a kernel. Listed names that no longer exist upstream are stale. A list that
records schemas gets schema alerts (`opdrift.coverage.alerts`). Two coverages compared are
`opdrift.coverage.change`; the JSON form is `opdrift.coverage.jsonform`.
"""

from __future__ import annotations

from dataclasses import dataclass

from opdrift.coverage.alerts import SchemaAlert, schema_alerts
from opdrift.coverage.kinds import EDGE_KINDS, FALLBACK_OF_KIND, KIND_BY_ID, PROFILE_OF_KIND, BackendKind
from opdrift.coverage.names import last_registered
from opdrift.coverage.oplist import BackendList, BackendOp
from opdrift.errors import ConfigError
from opdrift.model import Snapshot
from opdrift.operators.kernels import Profile
from opdrift.text import did_you_mean
from opdrift.work.engine import (
    RULES,
    RUNTIME_PRIM,
    SHARED_BACKWARDS,
    TRAINING_ONLY,
    VERIFIER_REJECTS,
    Backend,
    Engine,
)

# The engine's vocabulary, which coverage reports use as they are, and the alert a Coverage holds.
__all__ = ["RULES", "SHARED_BACKWARDS", "TRAINING_ONLY", "SchemaAlert"]


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
class Coverage:
    backend_kind: BackendKind
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
    # ExecuTorch: the listed ops its edge verifier refuses (`rejected`): kernels no program reaches
    extra: tuple[str, ...] = ()

    @property
    def uncovered(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if not o.covered)

    @property
    def training_only(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if o.rule == TRAINING_ONLY)

    @property
    def rejected(self) -> tuple[OpCoverage, ...]:
        """ExecuTorch's: the ops its edge verifier refuses (neither core nor view_copy), listed or not."""
        return tuple(o for o in self.ops if o.rule == VERIFIER_REJECTS)

    @property
    def covered(self) -> tuple[OpCoverage, ...]:
        """The ops the backend serves. An export backend's training-only ops are neither served nor
        needed (an inference graph never holds them), nor are the ops ExecuTorch's verifier refuses (a
        kernel listed for one is extra), so they are counted apart: `covered`, `uncovered`,
        `training_only` and `rejected` add up to `ops`."""
        return tuple(o for o in self.ops if o.covered and o.rule not in (TRAINING_ONLY, VERIFIER_REJECTS))

    def by_rule(self) -> dict[str, int]:
        """rule → operators it decided, every rule listed (zeros included; ``training_only`` for the
        export profile), "needs_kernel" last."""
        rules = (*RULES, TRAINING_ONLY) if self.profile == "export" else RULES
        if self.backend_kind in EDGE_KINDS:
            rules = (*rules, RUNTIME_PRIM, VERIFIER_REJECTS)
        return {rule: sum(1 for o in self.ops if o.rule == rule) for rule in (*rules, "needs_kernel")}

    def by_bucket(self) -> dict[str, tuple[int, int, int]]:
        """bucket → (covered, needs a kernel, training-only): three of the four parts of `ops` (the
        verifier's refusals, `rejected`, are in none)."""
        counts: dict[str, list[int]] = {}
        for o in self.ops:
            part = counts.setdefault(o.bucket, [0, 0, 0])
            if o.rule == VERIFIER_REJECTS:
                continue
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
    if KIND_BY_ID[backend.kind].in_pytorch:
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
        backend.dispatch_key if KIND_BY_ID[backend.kind].in_pytorch and profile != "export" else None,
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
    the work engine (`opdrift.work.engine`), the one that decides the drift's per-change profiles too."""
    engine = backend_engine(snapshot, backend, profile)
    model = engine.backend
    records = snapshot.operators
    ops = []
    extra = []
    for name in sorted(records):
        rec = records[name]
        v = engine.judge(rec)
        ops.append(OpCoverage(name, rec.bucket, v.covered, v.rule, v.via, v.alternative))
        if v.rule == VERIFIER_REJECTS and name in model.listed:
            extra.append(name)
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
        tuple(schema_alerts(snapshot, backend)),
        fallback_of(backend),
        backend.roots or (backend.path,),
        engine.export.table.origin if model.profile == "export" else "",
        backend.name,
        frozenset(op.name for op in backend.cpu_fallback_ops),
        backend.cpu_fallback_at,
        tuple(extra),
    )


def _at_autograd_key(op: BackendOp) -> bool:
    return op.origin == "autograd" or (op.dispatch_key or "").startswith("Autograd")


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
