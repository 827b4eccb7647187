"""The engine's rules: the one place a rule is defined, with its wording, its citation and its example.

`opdrift.work.engine.Engine.judge` answers with a rule id (``listed``, ``decomposes``, …, ``needs_kernel``);
every channel that says a verdict in words (`explain`, the site's coverage cells, coverage's report,
the drift's badge) reads the rule's sentence here (`Rule.words`), so a rule reads one way everywhere.
Each row cites what the verdict rests on: a PyTorch (or ExecuTorch) file at a release, or data the
project observed (a path in this repository). Its example is a real operator of a vendored release
(tests/data/releases) that a backend of the example's profile gets by that rule:
`tests/unit/work/test_rules.py` asks the engine for each, and fails if a rule's wording is written
anywhere else in bot/ or templates/.
"""

from __future__ import annotations

from dataclasses import dataclass

from opdrift.operators.kernels import Profile

LISTED = "listed"
DECOMPOSES = "decomposes"
DEFAULT_KERNEL = "default_kernel"
STRUCTURED_DELEGATE = "structured_delegate"
BACKEND_CODEGEN = "backend_codegen"
AUTOGRAD_KEY = "autograd_key"
# export only: in a training graph alone, so no need of the inference graph export gives by default
TRAINING_ONLY = "training_only"
# ExecuTorch's edge dialect only: its verifier rejects the op at to_edge (neither core nor view_copy),
# so no kernel is ever asked for it: no need of the backend's, the model's author must decompose it
VERIFIER_REJECTS = "verifier_rejects"
# ExecuTorch's edge dialect only: its runtime serves the op itself, as a prim op (`opdrift.operators.edge`)
RUNTIME_PRIM = "runtime_prim"
NEEDS_KERNEL = "needs_kernel"


@dataclass(frozen=True)
class Example:
    """A real case of a rule: OP of the vendored RELEASE, judged for a backend of PROFILE that lists
    LISTED, registers AUTOGRAD at its Autograd key and (EDGE) runs ExecuTorch's edge dialect; VIA is
    the operator the verdict names as carrying it ("" for none)."""

    op: str
    release: str
    profile: Profile
    via: str = ""
    listed: tuple[str, ...] = ()
    autograd: tuple[str, ...] = ()
    edge: bool = False


@dataclass(frozen=True)
class Rule:
    """One rule of the engine.

    `wording` is the sentence every channel says for it, with ``{via}`` where the verdict names the
    operator that carries it; `without_via` the sentence when the verdict names none ("": the same
    sentence); `export_wording` the sentence on the export path, where what a backend writes is a
    lowering ("": the same); `edge_wording` the sentence for ExecuTorch's edge dialect, where what a
    backend writes is an out= kernel ("": as on the export path). `covered`: whether a backend has the op by this rule. `citation`: a
    file at a release (``torchgen/….py@v2.15.0``, ``executorch:exir/….py@cff6f4d``) or a path of
    this repository holding observed data."""

    id: str
    wording: str
    citation: str
    example: Example
    covered: bool = True
    without_via: str = ""
    export_wording: str = ""
    edge_wording: str = ""

    def words(self, via: str = "", profile: str = "", *, edge: bool = False) -> str:
        """The rule's sentence for a verdict naming VIA, for a backend of PROFILE (EDGE: one that runs
        ExecuTorch's edge dialect, whose kernels are out= kernels)."""
        if edge and self.edge_wording:
            return self.edge_wording
        if profile == "export" and self.export_wording:
            return self.export_wording
        if "{via}" in self.wording and not via:
            return self.without_via
        return self.wording.format(via=via) if via else (self.without_via or self.wording)


# In the order `Engine.judge` tries them, then the verdicts no rule gives (a need).
RULE_TABLE: tuple[Rule, ...] = (
    Rule(
        LISTED,
        "listed by the backend as {via}, its out= variant",
        # a backend's yaml names the operators it registers kernels for; the stubs it generates
        # declare exactly those
        "torchgen/gen_backend_stubs.py@v2.15.0",
        Example("abs", "2.15.0", "eager", listed=("abs",)),
        without_via="listed by the backend",
    ),
    Rule(
        DECOMPOSES,
        "PyTorch decomposes it",
        # computeDispatchTableEntryWithDebug: a CompositeImplicitAutograd kernel fills every backend
        # key that has no kernel of its own
        "aten/src/ATen/core/dispatch/OperatorEntry.cpp@v2.15.0",
        Example("absolute", "2.15.0", "eager"),
    ),
    Rule(
        DEFAULT_KERNEL,
        "a default kernel of PyTorch's serves it, calling {via}",
        # the same function: a CompositeExplicitAutograd(NonFunctional) kernel fills a backend key
        # without a kernel of its own, before CompositeImplicitAutograd is looked at
        "aten/src/ATen/core/dispatch/OperatorEntry.cpp@v2.15.0",
        Example("abs", "2.15.0", "eager"),
        without_via="a default kernel of PyTorch's serves it",
    ),
    Rule(
        STRUCTURED_DELEGATE,
        "no work of its own: the out= kernel of {via} serves it",
        # "we generate CompositeExplicitAutogradNonFunctional implementations of functional and
        # inplace based on the out implementation"
        "torchgen/dest/register_dispatch_key.py@v2.13.0",
        Example("acos", "2.15.0", "eager", via="acos.out"),
        without_via="no work of its own: the out= kernel of its structured delegate serves it",
    ),
    Rule(
        BACKEND_CODEGEN,
        "no work of its own: functionalized into {via}",
        # functionalization replaces an out= or in-place call (and a view) by its functional op
        "torchgen/gen_functionalization_type.py@v2.15.0",
        Example("acos.out", "2.15.0", "functional", via="acos"),
        without_via="no work of its own: functionalized into its functional op",
    ),
    Rule(
        AUTOGRAD_KEY,
        "no work of its own: {via} at the Autograd key",
        # a backward op's only caller is its forward op's derivative formula
        "tools/autograd/derivatives.yaml@v2.15.0",
        Example("hardtanh_backward", "2.15.0", "functional", via="hardtanh", autograd=("hardtanh",)),
        without_via="no work of its own: its forward op at the Autograd key",
    ),
    Rule(
        RUNTIME_PRIM,
        "no work of its own: ExecuTorch's runtime serves it itself, as a prim op",
        # register_prim_ops.cpp registers "aten::sym_size.int", "aten::sym_numel" and
        # "aten::_local_scalar_dense"; to_out_variant keeps them as they are
        "executorch:kernels/prim_ops/register_prim_ops.cpp@cff6f4d",
        Example("_local_scalar_dense", "2.15.0", "export", edge=True),
    ),
    Rule(
        TRAINING_ONLY,
        "only in training graphs",
        # observed on torch 2.13.0: backward ops appear only in aot_export_module(..., trace_joint=True)
        "tests/data/observed/export/observe_export.py",
        Example("avg_pool2d_backward", "2.15.0", "export"),
    ),
    Rule(
        VERIFIER_REJECTS,
        "refused by ExecuTorch's edge verifier: neither core nor view_copy",
        # SpecViolationError "is not in Core ATen opset" at to_edge
        "executorch:exir/verification/verifier.py@cff6f4d",
        Example("addbmm", "2.15.0", "export", edge=True),
    ),
    Rule(
        NEEDS_KERNEL,
        "needs a kernel",
        # no kernel of its own and none that fills its key: the dispatcher raises NotImplementedError
        "aten/src/ATen/core/dispatch/OperatorEntry.cpp@v2.15.0",
        Example("abs.out", "2.15.0", "eager"),
        covered=False,
        export_wording="needs a lowering",
        # ExecuTorch runs the program converted to out= variants (exir's to_out_variant)
        edge_wording="needs an out= kernel",
    ),
)

RULE_BY_ID: dict[str, Rule] = {r.id: r for r in RULE_TABLE}
# The rules that cover an op for every profile, in the order the engine tries them (the export path's
# TRAINING_ONLY and the edge dialect's VERIFIER_REJECTS are apart: coverage counts them apart).
RULES: tuple[str, ...] = tuple(
    r.id for r in RULE_TABLE if r.covered and r.id not in (TRAINING_ONLY, VERIFIER_REJECTS)
)


def words(rule: str, via: str = "", profile: str = "", *, edge: bool = False) -> str:
    """The sentence of RULE (an id `Engine.judge` answers with) for a verdict naming VIA."""
    return RULE_BY_ID[rule].words(via, profile, edge=edge)
