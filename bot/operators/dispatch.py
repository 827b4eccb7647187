"""Dispatch of one validated entry → its `Operator`: composite status and the kernels it runs.

Which kernel each dispatch key runs is `opdrift.operators.kernels`'s model; this module gathers the table
it works on.

Comma-joined keys were expanded and ufunc kernels filled in by `opdrift.operators.validate`; here an entry
without a dispatch table (and not structured) is CompositeImplicitAutograd, and a
``structured_delegate`` op inherits its delegate's structured kernels (see `_resolve_delegate`).
"""

from __future__ import annotations

from collections.abc import Mapping

from opdrift.dispatchkeys import CIA, STRUCTURED_KEYS
from opdrift.errors import EntryError
from opdrift.model import Operator
from opdrift.operators.kernels import dense_composite, kernel_sources
from opdrift.operators.validate import Entry


def _resolve_delegate(e: Entry, by_name: Mapping[str, Entry], path: str) -> dict[str, str]:
    """The dispatch table of a structured_delegate op, with the delegate's kernels merged in.

    The functional and in-place members of a structured group register no kernel of their own for
    the structured backends: the codegen wraps the out= op's structured kernel for them. So the
    operator *runs* the delegate's kernels on exactly the delegate's structured keys (CPU, CUDA,
    MPS, XPU, MTIA); other keys (Sparse*, Quantized*, ...) it names itself, and those stay. The
    inherited entries carry the delegate's kernel name, so a reader sees where the code lives.
    Recording them (instead of leaving the keys out, as torchgen's backend index does) is what the
    taxonomy needs: "has backend kernels" must be true for ``add.Tensor``, not only for ``add.out``.
    """
    target = by_name.get(e.structured_delegate or "")
    if target is None:
        raise EntryError(
            f"structured_delegate {e.structured_delegate!r} names no entry", path=path, line=e.raw.line
        )
    if not target.structured:
        raise EntryError(
            f"structured_delegate {e.structured_delegate!r} is not marked `structured: True`",
            path=path,
            line=e.raw.line,
        )
    merged = dict(e.dispatch)
    for key, kernel in target.dispatch.items():
        if key in STRUCTURED_KEYS:
            merged.setdefault(key, kernel)
    return merged


def make_operator(e: Entry, by_name: Mapping[str, Entry], path: str) -> Operator:
    dispatch = _resolve_delegate(e, by_name, path) if e.structured_delegate else e.dispatch
    keys = (*dispatch, CIA) if e.implicit else tuple(dispatch)
    name = e.schema.name
    return Operator(
        name=name.name,
        base=name.base,
        overload=name.overload,
        schema=e.raw.data["func"],  # type: ignore[arg-type]  # a str, checked in validate_entry
        kind=e.schema.kind(),
        line=e.raw.line,
        comments=e.raw.comments,
        dispatch=tuple(sorted(dispatch.items())) if len(dispatch) > 1 else tuple(dispatch.items()),
        composite=dense_composite(keys),
        structured=e.structured,
        structured_delegate=e.structured_delegate,
        tags=e.tags,
        python_module=e.python_module,
        variants=e.variants,
        category_override=e.category_override,
        unknown_keys=e.unknown_keys,
        kernels=kernel_sources(keys, delegated=dispatch.keys() - e.dispatch.keys()),
        const_ref_mutable=e.const_ref_mutable,
    )
