"""What must backend B write or lower for operator X at release R, and why: the one engine.

A backend is its profile (how operators reach it: `opdrift.operators.kernels`), the operators it lists,
the ones it registers at its Autograd key, the native dispatch key it is (for a backend inside
native_functions.yaml) and the decomposition table its compiler passes (export). A backend without a
list, which is what the drift's per-change ``profiles`` judge, is the same engine with an empty list.

The rules, tried in order; the first that holds names the reason (`RULES`; each rule's wording,
citation and example are its row of `opdrift.work.rules.RULE_TABLE`):

1. ``listed``: the backend lists the operator.
2. ``decomposes`` / ``backend_codegen`` / ``training_only`` (export only): its fate on the export path
   at that release with the backend's table (`opdrift.operators.exported`): decomposed by the table or as
   CompositeImplicitAutograd, or answered while tracing; functionalized (its functional op carries it,
   `via`); only in a training graph (reported apart, no need of an inference graph).
3. ``decomposes``: the CompositeImplicitAutograd kernel serves the backend's key.
4. ``default_kernel``: a CompositeExplicitAutograd(NonFunctional) kernel serves the backend's key
   (`opdrift.operators.kernels`: NonFunctional never serves XLA or Lazy). For a functional backend, a
   default kernel that calls its own out= or in-place variant back (``complex`` → ``complex.out``,
   `opdrift.operators.functionalize`) serves only when the backend lists that variant; otherwise the
   functional op needs a kernel and `Verdict.alternative` names the variant that would do instead.
5. ``structured_delegate`` (a backend outside functionalization): the functional and in-place members
   of a structured group are no work of their own, their out= delegate (`via`) carries it. torchgen
   generates CompositeExplicitAutogradNonFunctional kernels for them on top of the out= op
   (``structured_<op>_default_backend_functional`` / ``_inplace``, torchgen/dest/register_dispatch_key.py,
   "we generate CompositeExplicitAutogradNonFunctional implementations of functional and inplace based
   on the out implementation"; CompositeExplicitAutograd ones in 1.12.0), and that key serves every
   backend but Sparse, XLA and Lazy. The 2.13.0 wheel declares them: ``ATen/ops/
   add_compositeexplicitautogradnonfunctional_dispatch.h`` holds ``add`` and ``add_``, never ``add_out``
   (torchgen: "Never generate a default implementation for out"). So a backend that writes ``add.out``
   gets ``add.Tensor`` and ``add_.Tensor``; one that writes neither has one work item, the out= op.
6. ``backend_codegen`` (functional and export): functionalization turns an out= or in-place call into
   its functional op (`via`), which carries the work, if any. On the functional profile it also turns
   a view op into its ``*_copy`` op (`via`; `opdrift.operators.functionalize.view_copy_of`): XLA and Lazy
   never receive ``unfold``, only ``unfold_copy``. This is tried right after ``listed``: a view's own
   kernel or default kernel is never what runs there.
7. ``autograd_key``: the backend registers the forward op at its Autograd key, so autograd never calls
   that op's ``_backward`` for it, unless another op's derivative formula calls it too
   (`SHARED_BACKWARDS`).

Anything else needs a kernel (``needs_kernel``).

Whom a need concerns is one more split (`scope`): an operator every backend needs, or one only some
backends need (a CUDA-, cuDNN-, MPS-only, sparse, quantized, nested-tensor or test op,
`opdrift.taxonomy.scope`). It never changes a verdict; every view reports the second kind apart, under
"only some backends need": coverage's work items and new gaps, a subscription's gap, the watch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from opdrift.dispatchkeys import CEA_NON_FUNCTIONAL, CIA
from opdrift.model import OpRecord
from opdrift.operators.edge import RUNTIME_PRIM_OPS, edge_accepts
from opdrift.operators.exported import (
    DecompTable,
    ExportPath,
    core_aten_table,
    core_minus_table,
    export_fate,
    keeps_cia,
)
from opdrift.operators.functionalize import Functionalization
from opdrift.operators.kernels import (
    FUNCTIONALIZED,
    PROFILE_KEY,
    PROFILES,
    Profile,
    composite_for,
    kernel_for,
    profile_kernel,
    table_of,
)
from opdrift.signals.table import shipped_signals
from opdrift.taxonomy.scope import Scope, scope_of

# The rule ids, with each rule's wording, citation and example: `opdrift.work.rules.RULE_TABLE` (the ids
# the views compare verdicts with are re-exported here).
from opdrift.work.rules import (
    AUTOGRAD_KEY,
    BACKEND_CODEGEN,
    DECOMPOSES,
    DEFAULT_KERNEL,
    LISTED,
    STRUCTURED_DELEGATE,
)
from opdrift.work.rules import NEEDS_KERNEL as NEEDS_KERNEL
from opdrift.work.rules import RULES as RULES
from opdrift.work.rules import RUNTIME_PRIM as RUNTIME_PRIM
from opdrift.work.rules import TRAINING_ONLY as TRAINING_ONLY
from opdrift.work.rules import VERIFIER_REJECTS as VERIFIER_REJECTS

# Backward ops that derivatives.yaml calls from the formulas of other ops than their own forward op (and
# its in-place twin), so an Autograd-key registration of that forward op leaves them needed: every
# such name in the 2.1.0 to 2.15.0 derivatives.yaml (`convolution_backward` from `_convolution`'s and
# the backend convolutions', `threshold_backward` from `relu`'s...). tests/unit/coverage/test_functional.py
# reads each vendored release's derivatives.yaml to check that none is missing.
SHARED_BACKWARDS = frozenset(
    {
        "convolution_backward",
        "elu_backward",
        "fake_quantize_per_tensor_affine_cachemask_backward",
        "leaky_relu_backward",
        "native_batch_norm_backward",
        "rrelu_with_noise_backward",
        "threshold_backward",
    }
)


def python_decomposed(version: str | None) -> frozenset[str] | None:
    """The base operators torch VERSION's Python side decomposes (torch/_decomp, torch/_refs), from the
    shipped signals table: what get_decompositions can put in a table. None when none are known."""
    signals = shipped_signals(version)
    if signals is None:
        return None
    return frozenset(
        base for base, op in signals.ops.items() if op.where.startswith(("torch/_decomp", "torch/_refs"))
    )


def export_path_for(
    version: str | None,
    names: Iterable[str] | None = None,
    origin: str = "",
    core_except: frozenset[str] | None = None,
) -> ExportPath:
    """The export path of torch VERSION: with the table NAMES (a compiler's own, such as torch-mlir's
    fx_decomp_util.py; "base.overload", "base" or "base.*"), to which CORE_EXCEPT, when given, adds
    PyTorch's Core-ATen table of VERSION less those base operators (torch-mlir's form from its #4733);
    else PyTorch's own Core-ATen table."""
    known = python_decomposed(version)
    origin = origin or "the backend's decomposition table"
    if core_except is not None:
        table = core_minus_table(version, core_except, frozenset(names or ()), origin, known)
    elif names is None:
        table = core_aten_table(version, known)
    else:
        table = DecompTable(origin, frozenset(names), None, known)
    return ExportPath(table, keeps_cia(version))


def scope(rec: OpRecord) -> Scope:
    """Whether every backend needs REC (`Scope.generic`), or only some, and why: the one split every
    view makes of the needs the engine finds (coverage's "only some backends need", a subscription's
    and the watch's list apart). A need of the second kind is reported, apart, never dropped."""
    return scope_of(rec)


@dataclass(frozen=True)
class Backend:
    """What the engine knows of a backend. The default is a backend of PROFILE that lists nothing."""

    profile: Profile
    listed: frozenset[str] = frozenset()
    # the operators it registers at its Autograd key (XLA's `autograd:`, AutogradPrivateUse1)
    autograd: frozenset[str] = frozenset()
    # a backend inside native_functions.yaml: its dispatch key, filled as the dispatcher fills it
    dispatch_key: str | None = None
    # export: the table its compiler passes ("base.overload", "base", "base.*"), None for PyTorch's
    decompositions: frozenset[str] | None = None
    decompositions_origin: str = ""
    # with the table above, PyTorch's Core-ATen table less these base operators (torch-mlir's #4733 form)
    decompositions_core_except: frozenset[str] | None = None
    # export: the backend runs ExecuTorch's edge dialect (`opdrift.operators.edge`): its views become
    # their ``*_copy`` ops, it lists out= variants (a functional op is covered when its out= variant
    # is listed), and its verifier rejects an op that is neither core nor view_copy before any kernel
    # is looked up
    edge: bool = False


@dataclass(frozen=True)
class Verdict:
    """The engine's answer for one operator: whether the backend has it, by which rule, and why."""

    covered: bool
    rule: str  # one of RULES, TRAINING_ONLY or NEEDS_KERNEL
    via: str = ""  # the operator that carries it (delegate, functional op, forward op), when not itself
    # for one that needs a kernel: the variant whose kernel would serve it instead ("complex.out")
    alternative: str = ""


class Engine:
    """One backend judged against every operator of one release (RECORDS, at torch VERSION): the
    functional op of a variant and a structured delegate are looked for among them."""

    def __init__(
        self,
        records: Mapping[str, OpRecord],
        backend: Backend,
        *,
        version: str | None = None,
        export: ExportPath | None = None,
        functionalization: Functionalization | None = None,
    ) -> None:
        self.records = records
        self.backend = backend
        self._version = version
        self._export = export
        self._functionalization = functionalization or Functionalization(records)
        self._bypassed = _bypassed_backwards(backend.autograd, records)

    @property
    def _gets_default_backend_kernels(self) -> bool:
        """Whether torchgen's CompositeExplicitAutogradNonFunctional kernels of structured groups serve
        the backend's key, as the dispatcher fills it (`opdrift.operators.kernels.kernel_for`): not for
        XLA or Lazy (functionalized), Sparse or NestedTensor keys."""
        b = self.backend
        if b.profile in FUNCTIONALIZED:
            return False
        key = b.dispatch_key or PROFILE_KEY[b.profile]
        return kernel_for({CEA_NON_FUNCTIONAL: CEA_NON_FUNCTIONAL}, key) == CEA_NON_FUNCTIONAL

    @property
    def export(self) -> ExportPath:
        """The export path the backend is judged by (built when first asked)."""
        if self._export is None:
            b = self.backend
            self._export = export_path_for(
                self._version, b.decompositions, b.decompositions_origin, b.decompositions_core_except
            )
        return self._export

    def _serving(self, rec: OpRecord) -> str | None:
        table = table_of(rec.facets)
        key = self.backend.dispatch_key
        if key is not None:
            return composite_for(table, key)
        return profile_kernel(table, self.backend.profile)

    def judge(self, rec: OpRecord) -> Verdict:
        """What the backend must do for REC (the module docstring's rules, in order)."""
        b = self.backend
        edge = b.edge and b.profile == "export"
        if rec.name in b.listed:
            # ExecuTorch: a listed op the verifier refuses is extra, neither covered nor needed
            return Verdict(True, VERIFIER_REJECTS if edge and self._edge_refuses(rec) else LISTED)
        fz = self._functionalization
        if b.profile == "export":
            fate = export_fate(rec, self.export)
            if fate in ("decomposed", "evaluated"):
                return Verdict(True, DECOMPOSES)
            if fate == "functionalized":
                if edge and self._edge_refuses(rec):
                    return Verdict(True, VERIFIER_REJECTS)
                return Verdict(True, BACKEND_CODEGEN, fz.functional_of(rec) or "")
            if fate == TRAINING_ONLY:
                return Verdict(True, TRAINING_ONLY)
            if b.edge:
                return self._edge(rec)
            return self._autograd(rec)
        kernel = self._serving(rec)
        if b.profile == "functional" and kernel != CIA and (copy := fz.view_copy_of(rec)):
            return Verdict(True, BACKEND_CODEGEN, copy)
        if kernel == CIA:
            return Verdict(True, DECOMPOSES)
        back = fz.calls_back(rec) if b.profile == "functional" and kernel is not None else None
        if kernel is not None and (back is None or back in b.listed):
            return Verdict(True, DEFAULT_KERNEL, back or "")
        delegate = rec.facets.structured_delegate
        if delegate is not None and delegate in self.records and self._gets_default_backend_kernels:
            return Verdict(True, STRUCTURED_DELEGATE, delegate)
        if b.profile in FUNCTIONALIZED and (via := fz.functional_of(rec)):
            return Verdict(True, BACKEND_CODEGEN, via)
        return self._autograd(rec, back or "")

    def _edge(self, rec: OpRecord) -> Verdict:
        """An op that reaches ExecuTorch's edge dialect: its view_copy op, the runtime's own prim op, the
        verifier's refusal, its listed out= variant, or a need (`opdrift.operators.edge`)."""
        fz = self._functionalization
        if copy := fz.view_copy_of(rec):
            return Verdict(True, BACKEND_CODEGEN, copy)
        if rec.name in RUNTIME_PRIM_OPS:
            return Verdict(True, RUNTIME_PRIM)
        # refused before any kernel is looked up: a listed out= variant of it is extra
        if not edge_accepts(rec):
            return Verdict(True, VERIFIER_REJECTS)
        out = next((v for v in fz.out_variants_of(rec) if v in self.backend.listed), "")
        if out:
            return Verdict(True, LISTED, out)
        # what ExecuTorch writes for it is its out= variant; no "alternative" (a default kernel's callee)
        return Verdict(False, NEEDS_KERNEL)

    def _edge_refuses(self, rec: OpRecord) -> bool:
        """Whether ExecuTorch's verifier refuses the op REC stands for in the edge program: REC itself,
        or the functional op an out= or in-place REC becomes. False when that op never reaches the
        program (decomposed, answered while tracing, training-only), becomes its view_copy op, or is one
        the runtime serves itself."""
        target = rec
        if rec.kind != "functional":
            functional = self._functionalization.functional_of(rec)
            if functional is None or functional not in self.records:
                return False
            target = self.records[functional]
        if (
            export_fate(target, self.export) != "reaches"
            or self._functionalization.view_copy_of(target)
            or target.name in RUNTIME_PRIM_OPS
        ):
            return False
        return not edge_accepts(target)

    def _autograd(self, rec: OpRecord, alternative: str = "") -> Verdict:
        forward = self._bypassed.get(rec.base)
        if forward:
            return Verdict(True, AUTOGRAD_KEY, forward)
        return Verdict(False, NEEDS_KERNEL, alternative=alternative)


def _bypassed_backwards(autograd: frozenset[str], records: Mapping[str, OpRecord]) -> dict[str, str]:
    """base of a backward op → the forward op registered at the backend's Autograd key, whose own
    derivative formula is that backward op's only caller (see `SHARED_BACKWARDS`)."""
    out: dict[str, str] = {}
    for name in sorted(autograd):
        rec = records.get(name)
        if rec is None or rec.facets.has_derivative is not True:
            continue
        backward = f"{rec.base}_backward"
        if backward not in SHARED_BACKWARDS:
            out.setdefault(backward, name)
    return out


def profile_engines(
    records: Mapping[str, OpRecord], *, version: str | None = None, export: ExportPath | None = None
) -> dict[Profile, Engine]:
    """One engine per profile for a backend that lists nothing (the drift's per-change profiles,
    explain's "without its own" line), sharing one functionalization of RECORDS."""
    fz = Functionalization(records)
    return {
        p: Engine(records, Backend(p), version=version, export=export, functionalization=fz) for p in PROFILES
    }
