"""What an export-based compiler receives: each operator's fate on PyTorch's export path, per release.

torch-mlir's FX importer, ExecuTorch and other Core-ATen backends compile the graph that
``torch.export.export`` traces, after ``ExportedProgram.run_decompositions(TABLE)``. The rules, tried
in this order (`export_fate`), each backed by PyTorch's code or by a run of torch.export on torch
2.13.0 (tests/data/observed/export/, the script beside its output):

1. ``functionalized``: out=, in-place and other mutable operators never appear in an exported graph;
   export functionalizes it (observed: ``add.out`` became ``add.Tensor``, ``mul_``/``relu_`` became
   ``mul``/``relu``, under every table, the empty one included).
2. ``decomposed`` by the table: ``get_decompositions`` (torch/_decomp/__init__.py) puts in a table only
   the named operators that have a Python decomposition; a packet name (``aten.addmm``) takes every
   overload (``_add_op_to_registry``). torch-mlir names ``aten.squeeze.dims``, ``grid_sampler_2d`` and
   ``linspace.default`` (observed: gone from the graph with its table, kept with the empty one).
3. ``decomposed`` as CompositeImplicitAutograd (CIA):
   - up to 2.5, every CIA operator a compiler's ``run_decompositions`` call meets: 2.5's
     ``run_decompositions(decomp_table, _preserve_ops=())`` overrides the CIA kernel only of
     ``_preserve_ops`` (``_override_composite_implicit_decomp``, torch/export/exported_program.py), and
     lowering to ATen IR runs every other CIA kernel;
   - from 2.6, only an aliasing or mutating one, or one the table names:
     ``_split_decomp_table_to_cia_and_python_decomp`` (torch/export/exported_program.py) marks every
     functional CIA operator the table does not name ``_special_op_to_preserve_cia``, and
     ``_check_valid_to_preserve`` (torch/_export/utils.py) refuses an operator with an alias annotation
     on an argument, a mutable one, one tagged ``maybe_aliasing_or_mutating``, and ``native_batch_norm``
     (observed: ``cdist``, ``kron``, ``nanmean``, ``diff``, ``clip``, ``divide.Tensor`` reach torch-mlir's
     importer; ``reshape`` and ``flatten.using_ints`` become ``view`` under every table);
   - PyTorch's default table from 2.6 (``CustomDecompTable.__init__``, torch/export/decomp_utils.py)
     names every functional CIA operator but ``PRESERVED_ATEN_CIA_OPS`` (observed: the default table
     turns ``cdist`` into ``_cdist_forward``).
4. ``evaluated``: an operator that returns only tensor metadata is answered while export traces:
   a bool, a dtype, an ``int`` or a ``float`` is a Python constant of the traced program, and a
   symbolic size, stride, offset or numel is written in terms of ``sym_size.int`` of an input, the one
   metadata operator left in a graph (observed: ``is_same_size``, ``result_type.Scalar`` and
   ``can_cast``, and ``stride.int``, ``sym_stride.int``, ``sym_is_contiguous``, ``sym_numel``,
   ``sym_storage_offset``, ``dense_dim``, ``sparse_dim``, ``get_device``, ``output_nr``, ``_version``,
   ``dim``, ``_debug_has_internal_overlap`` are dead nodes of the traced graph, gone after
   ``run_decompositions`` with static and dynamic shapes; a symbolic stride or numel became
   ``sym_size.int``; an ``int`` answer on a dynamic dimension specializes it; ``_local_scalar_dense``,
   which returns a ``Scalar`` read from data, stays; ``torch.equal`` on data stops export as
   data-dependent).
5. ``training_only``: a backward operator appears only in a training (joint) graph; export's graph is an
   inference graph unless the compiler asks for the joint one (observed: ``gelu_backward`` and
   ``native_layer_norm_backward`` only in ``aot_export_module(..., trace_joint=True)``).
6. ``reaches``: the compiler receives it and must lower it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from opdrift.dispatchkeys import CIA
from opdrift.errors import SchemaError
from opdrift.model import OpRecord
from opdrift.operators.export_table import core_aten_release
from opdrift.operators.kernels import table_of
from opdrift.schema.grammar import parse_schema
from opdrift.versions import since

ExportFate = Literal["reaches", "decomposed", "functionalized", "evaluated", "training_only"]

# Return types export answers while tracing: an operator that returns only these (a bool, a dtype, a
# plain number, a symbolic one) is a Python value in the traced program, not a node a compiler receives
# (observed on 2.13.0, tests/data/observed/reach/). A `Scalar` is not among them: `_local_scalar_dense`
# reads data and stays a graph node.
_TRACE_TIME_TYPES = frozenset(
    {
        "bool",
        "ScalarType",
        "Layout",
        "MemoryFormat",
        "Device",
        "str",
        "int",
        "float",
        "QScheme",
        "SymInt",
        "SymBool",
        "SymFloat",
    }
)
# The operator export binds each symbolic size to (an input's size): every other symbolic answer is
# an expression of these, so it is the one metadata operator a compiler receives.
_SYMBOL_SOURCE = "sym_size.int"

# The first release whose run_decompositions keeps a functional CIA operator the table does not name.
KEEPS_CIA_FROM = "2.6"

# torch/_decomp's _should_decompose_because_unsafe_op: always decomposed in export.
_UNSAFE_TAG = "maybe_aliasing_or_mutating"
_UNSAFE_OPS = frozenset({"native_batch_norm"})
# FunctionalTensor.metadata_fns (torch/_subclasses/functional_tensor.py), which _check_valid_to_preserve
# refuses: their CIA kernel answers at trace time.
_METADATA_OPS = frozenset(
    {
        "is_contiguous",
        "is_contiguous.memory_format",
        "is_strides_like_format",
        "is_non_overlapping_and_dense",
        "size",
        "sym_size",
        "stride",
        "sym_stride",
        "storage_offset",
        "sym_storage_offset",
        "numel",
        "sym_numel",
        "dim",
    }
)


@dataclass(frozen=True)
class DecompTable:
    """A decomposition table as run_decompositions receives it, by operator name."""

    origin: str  # for reasons: "torch-mlir's fx_decomp_util.py", "PyTorch 2.13.0's Core-ATen table"
    names: frozenset[str]  # "base.overload", "base" (default overload) or "base.*" (every overload)
    # PyTorch's own default table from 2.6 also names every functional CIA operator but these
    all_cia_except: frozenset[str] | None = None
    # the base operators the release's Python side decomposes (torch/_decomp, torch/_refs), which are
    # all get_decompositions puts in a table; None: not known, every named operator counts
    python_decomposed: frozenset[str] | None = None

    def names_op(self, rec: OpRecord) -> bool:
        """Whether the table decomposes REC: named, and with a Python decomposition."""
        if rec.name not in self.names and f"{rec.base}.*" not in self.names:
            return False
        return self.python_decomposed is None or rec.base in self.python_decomposed

    def names_every_cia(self, rec: OpRecord) -> bool | None:
        """Whether a table that names every functional CIA operator but some names REC (which may be
        excepted by name or, "base.*", with every overload of its base); None for any other table."""
        every = self.all_cia_except
        if every is None:
            return None
        return rec.name not in every and f"{rec.base}.*" not in every


@dataclass(frozen=True)
class ExportPath:
    """One release's export path with one table: what `export_fate` judges by."""

    table: DecompTable
    keeps_cia: bool  # the release keeps functional CIA operators the table does not name (2.6 on)


def keeps_cia(version: str | None) -> bool:
    """Whether torch VERSION's run_decompositions keeps unnamed functional CIA operators (the newest
    rule for an unknown version)."""
    return since(KEEPS_CIA_FROM, version)


def core_aten_table(version: str | None, python_decomposed: frozenset[str] | None = None) -> DecompTable:
    """PyTorch's default Core-ATen table at VERSION, from the shipped table."""
    release = core_aten_release(version)
    return DecompTable(
        f"PyTorch {release.version}'s Core-ATen table",
        release.decomposes,
        release.preserved_cia if since(KEEPS_CIA_FROM, release.version) else None,
        python_decomposed,
    )


def core_minus_table(
    version: str | None,
    excluded: frozenset[str],
    named: frozenset[str],
    origin: str,
    python_decomposed: frozenset[str] | None = None,
) -> DecompTable:
    """torch-mlir's table from llvm/torch-mlir#4733 at torch VERSION: ``get_expanded_decomposition_table``
    (python/torch_mlir/extras/fx_decomp_util.py) keeps each entry ``k`` of ``core_aten_decompositions()``
    whose ``k._overloadpacket`` is not EXCLUDED (so every overload of an excluded base goes, its CIA
    ones too), then ``update``s it with ``get_decompositions`` of its own list (NAMED). VERSION's
    ``core_aten_decompositions()`` is its shipped Core-ATen table (`core_aten_table`)."""
    core = core_aten_table(version, python_decomposed)
    kept = frozenset(n for n in core.names if n.partition(".")[0] not in excluded)
    every = core.all_cia_except
    # core's origin, "PyTorch 2.14.1's Core-ATen table", names the release that stands for VERSION
    return DecompTable(
        f"{origin}, with {core.origin} as core_aten_decompositions()",
        kept | named,
        None if every is None else every | {f"{base}.*" for base in excluded},
        python_decomposed,
    )


def is_backward(rec: OpRecord) -> bool:
    # The kernels autograd's formulas call (derivatives.yaml), named so by convention.
    return "backward" in rec.base


def _schema_facts(rec: OpRecord) -> tuple[bool, bool, bool]:
    """(mutable, an argument carries an alias annotation, answered at trace time), as c10's
    FunctionSchema says."""
    try:
        schema = parse_schema(rec.schema)
    except SchemaError:
        # a hand-built record; a loaded snapshot's schemas parse
        return rec.kind in ("inplace", "out"), False, False
    args = schema.arguments.flat_all
    answered = (
        rec.name != _SYMBOL_SOURCE
        and bool(schema.returns)
        and all(str(r.type) in _TRACE_TIME_TYPES for r in schema.returns)
    )
    return (
        rec.kind in ("inplace", "out") or schema.is_mutable(),
        any(a.annotation is not None for a in args),
        answered,
    )


def export_fate(rec: OpRecord, path: ExportPath) -> ExportFate:
    """What becomes of REC on the export path (the module docstring's rules, in order)."""
    mutable, aliasing, answered = _schema_facts(rec)
    if mutable:
        return "functionalized"
    if answered:
        return "evaluated"
    if path.table.names_op(rec):
        return "decomposed"
    if CIA in table_of(rec.facets):
        unsafe = (
            aliasing or _UNSAFE_TAG in rec.facets.tags or rec.base in _UNSAFE_OPS or rec.name in _METADATA_OPS
        )
        if not path.keeps_cia or unsafe or path.table.names_every_cia(rec):
            return "decomposed"
    if is_backward(rec):
        return "training_only"
    return "reaches"
