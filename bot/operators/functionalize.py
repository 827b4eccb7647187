"""What a backend that runs under functionalization (XLA, Lazy; an exported graph) receives instead of
an out= or in-place call, and which functional ops' default kernels call such a variant back.

Functionalization turns a mutable call into its functional op: for each group torchgen forms (a
functional op with its in-place and out= variants, grouped by ``signature()``, the autogen stage's
`group_key`), the Functionalize kernel of a variant calls the group's functional op and copies the
result back (torchgen's ``gen_functionalization_type.py``). So a variant whose group has a functional
op is no work of its own there: the work, if any, is the functional op's. When that functional op is
CompositeImplicitAutograd (``adaptive_avg_pool2d`` for ``adaptive_avg_pool2d.out``), it is no work at all.

The rule that runs the other way (`calls_back`): a functional op whose only dense kernel is
CompositeExplicitAutograd while a variant of its group carries the device kernels (its own at CPU or
CUDA) is a wrapper around that variant, so at a functional backend's key its default kernel calls the
variant, which has no kernel there: the backend needs one of the pair. Two shapes, both in PyTorch's code:

- a functional op that ``autogen:`` generated from an in-place or mutable entry (``cauchy`` from
  ``cauchy_``): torchgen's ``gen_composite_functional_kernel`` (``native_function_generation.py``)
  clones the inputs and calls the mutable op;
- a hand-written CompositeExplicitAutograd functional op beside an out= or in-place op with CPU/CUDA
  kernels: ``complex`` allocates its result and returns ``at::complex_out(result, real, imag)``
  (``aten/src/ATen/native/TensorFactories.cpp``), ``median.dim`` calls ``at::median_out`` and
  ``kthvalue`` ``at::kthvalue_out`` (``Sorting.cpp``), ``logical_and`` passes ``at::logical_and_out``
  to ``comparison_op`` (``BinaryOps.cpp``), ``linspace`` ends in ``at::linspace_out``, ``polar`` in
  ``at::polar_out``, ``frexp`` calls ``at::frexp_out`` (``UnaryOps.cpp``), ``huber_loss_backward`` and
  ``smooth_l1_loss_backward`` their ``_out`` (``Loss.cpp``): read at the 2.x sources.

The function a generated functional op calls is torchgen's choice (``gen_composite_functional_kernel``,
torchgen/native_function_generation.py): the in-place op when one exists and was not generated itself,
else the mutable op of the group, never the out= one. Observed on torch 2.13.0 with the profiler
(tests/data/observed/reach/): ``_native_batch_norm_legit_functional`` clones the running stats and calls
``_native_batch_norm_legit``, ``_batch_norm_with_update_functional`` ``_batch_norm_with_update``,
``rrelu_with_noise_functional`` ``rrelu_with_noise_``; the hand-written ``complex`` and ``polar`` call
their out= op.

A view op, under the functionalization a functional backend runs (views removed as well as mutations,
no view re-applied), becomes its ``*_copy`` op (`view_copy_of`): torchgen's functionalization kernel of
``unfold`` calls ``at::_ops::unfold_copy`` on the unwrapped tensor. Observed on torch 2.13.0
(``torch.func.functionalize(f, remove="mutations_and_views")`` traced with make_fx): ``unfold`` became
``unfold_copy``, ``view_as_real`` ``view_as_real_copy``, ``view.dtype`` ``view_copy.dtype``, and so for
every view op with a copy that was tried. An exported graph keeps its views (export re-applies them).

`NOT_A_CALLBACK` holds the ops of that shape whose kernel does otherwise, read in the same sources.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from opdrift.dispatchkeys import CEA
from opdrift.errors import SchemaError
from opdrift.model import OpRecord
from opdrift.operators.autogen import group_key
from opdrift.operators.kernels import DELEGATE, OWN, kernel_for, table_of
from opdrift.schema.grammar import parse_schema

GroupKey = tuple[str, ...]

# The keys whose kernels show where an op's real work is written: a variant with its own kernel here is
# the one a wrapping default kernel calls.
DEVICE_KEYS = ("CPU", "CUDA")

# Functional ops of the wrapper shape whose default kernel calls something else (op → the variant it
# does call, or None when it calls none), read in PyTorch's sources: `mvlgamma` computes with arange,
# lgamma_ and sum itself (UnaryOps.cpp), and `bernoulli` fills `at::empty_like(self)` with
# `bernoulli_(self, gen)`, the in-place op of the `bernoulli.Tensor` group (Distributions.cpp).
NOT_A_CALLBACK: Mapping[str, str | None] = {
    "mvlgamma": None,
    "bernoulli": "bernoulli_.Tensor",
}

_VARIANTS = ("out", "inplace")
# the kind of a mutable op that is neither in-place nor out= (`_native_batch_norm_legit`, whose running
# stats are `Tensor(a!)`), as `opdrift.model` names it
_MUTABLE = "other"


def _group(rec: OpRecord) -> GroupKey | None:
    try:
        return group_key(parse_schema(rec.schema))
    except SchemaError:
        return None  # a loaded snapshot has only parsed schemas; a hand-built one may not


def _is_mutable(rec: OpRecord) -> bool:
    try:
        return parse_schema(rec.schema).is_mutable()
    except SchemaError:
        return False


def _is_view(rec: OpRecord) -> bool:
    """A view op: functional, not mutable, a return aliases an input (``Tensor(a)``)."""
    try:
        schema = parse_schema(rec.schema)
    except SchemaError:
        return False
    return (
        rec.kind == "functional"
        and not schema.is_mutable()
        and any(r.annotation is not None for r in schema.returns)
    )


def functional_base(base: str) -> str:
    """torchgen groups `add_.Tensor` and `add.out` with `add.Tensor`: an in-place base ends in "_". A
    functional op that would clash with an overload of its mutable op is named `<base>_functional`
    (`rrelu_with_noise_functional` for `rrelu_with_noise_`), and torchgen's BaseOperatorName.parse
    strips that suffix too (Note [Overload Ambiguity With Functional Variants], torchgen/model.py)."""
    if base.endswith("_") and not base.endswith("__"):
        base = base[:-1]
    return base.removesuffix("_functional")


def _has_device_kernel(rec: OpRecord) -> bool:
    table = table_of(rec.facets)
    return any(kernel_for(table, key) in (OWN, DELEGATE) for key in DEVICE_KEYS)


class Functionalization:
    """The groups of one side's operators (RECORDS), built per base operator when first asked, so that a
    drift judging a few changed records parses only their bases' schemas."""

    def __init__(self, records: Mapping[str, OpRecord]) -> None:
        self._records = records
        self._by_base: dict[str, list[OpRecord]] | None = None
        self._groups: dict[str, dict[GroupKey, list[OpRecord]]] = {}

    def _members(self, base: str) -> dict[GroupKey, list[OpRecord]]:
        found = self._groups.get(base)
        if found is None:
            if self._by_base is None:
                self._by_base = defaultdict(list)
                for rec in self._records.values():
                    self._by_base[functional_base(rec.base)].append(rec)
            found = {}
            for rec in sorted(self._by_base.get(base, ()), key=lambda r: r.name):
                key = _group(rec)
                if key is not None:
                    found.setdefault(key, []).append(rec)
            self._groups[base] = found
        return found

    def functional_of(self, rec: OpRecord) -> str | None:
        """The functional op an out= or in-place REC becomes under functionalization, or None."""
        if rec.kind not in _VARIANTS:
            return None
        key = _group(rec)
        members = self._members(functional_base(rec.base)).get(key, []) if key is not None else []
        return next((m.name for m in members if m.kind == "functional"), None)

    def out_variants_of(self, rec: OpRecord) -> tuple[str, ...]:
        """The out= variants of functional REC's group, by name: what a backend that lists only out=
        variants (ExecuTorch, whose to_out_variant pass turns each functional call into one) lists
        for it."""
        if rec.kind != "functional":
            return ()
        key = _group(rec)
        members = self._members(functional_base(rec.base)).get(key, []) if key is not None else []
        return tuple(m.name for m in members if m.kind == "out")

    def view_copy_of(self, rec: OpRecord) -> str | None:
        """The ``*_copy`` op view op REC becomes under functionalization that removes views (XLA,
        Lazy), or None: torchgen names it after the view, overload kept (``view.dtype`` →
        ``view_copy.dtype``)."""
        if not rec.base or not _is_view(rec):
            return None
        overload = rec.name.partition(".")[2]
        copy = f"{rec.base}_copy" + (f".{overload}" if overload else "")
        found = self._records.get(copy)
        return copy if found is not None and found.kind == "functional" and not _is_view(found) else None

    def calls_back(self, rec: OpRecord) -> str | None:
        """The variant that functional REC's default kernel calls (see the module docstring), or None."""
        if rec.kind != "functional" or CEA not in table_of(rec.facets) or _has_device_kernel(rec):
            return None
        if rec.name in NOT_A_CALLBACK:
            return NOT_A_CALLBACK[rec.name]
        key = _group(rec)
        members = self._members(functional_base(rec.base)).get(key, []) if key is not None else []
        if rec.facets.autogen:
            # torchgen's generated kernel calls the group's hand-written in-place op, else its mutable
            # op (gen_composite_functional_kernel), never its out= op
            for kind in ("inplace", _MUTABLE):
                called = [
                    m
                    for m in members
                    if m.kind == kind and not m.facets.autogen and (kind != _MUTABLE or _is_mutable(m))
                ]
                if called:
                    return min(m.name for m in called)
        variants = [m for m in members if m.kind in _VARIANTS and _has_device_kernel(m)]
        # A hand-written wrapper calls the variant written beside it: out= before in-place, by name.
        variants.sort(key=lambda m: (m.facets.autogen, _VARIANTS.index(m.kind), m.name))
        return variants[0].name if variants else None
