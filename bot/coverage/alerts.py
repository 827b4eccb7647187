"""A backend's recorded schema against upstream's → a `SchemaAlert`: coverage's schema comparator.

A list that records each op's schema (op-plugin's and torch_npu's yamls, a C++ tree's schema comments,
torch-mlir's ODS types) is compared with the snapshot's schema of the op by the drift's two rules:
callers (`opdrift.schema.compare.diff_schemas`) and the C++ kernel (`opdrift.schema.kernel`), each side bound
as it is at the snapshot's release. torch-mlir's TorchScript types say less than a schema, so its
alerts are built from the types (`_types_alert`). Coverage raises the alerts
(`opdrift.coverage.check.compute_coverage`), a subscription asks `alert_for` of both sides of a change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from opdrift.coverage.oplist import BackendList, BackendOp
from opdrift.coverage.schema_history import SinceEvent, schema_since
from opdrift.errors import SchemaError
from opdrift.model import OpRecord, Snapshot
from opdrift.operators.codegen import kernel_binding, rules_for_version
from opdrift.schema.codes import Code, Detail
from opdrift.schema.compare import diff_schemas, widens
from opdrift.schema.grammar import parse_schema, parse_type
from opdrift.schema.kernel import (
    Binding,
    KernelChange,
    KernelForm,
    KernelSignature,
    KernelVerdict,
    bound,
    breaks_form,
    judged_form,
    kernel_changes,
    verdict_of,
)
from opdrift.schema.model import Argument, Arguments, FunctionSchema, Return, Type


@dataclass(frozen=True)
class SchemaAlert:
    """The backend implements `name` with a signature that upstream no longer has.

    Both verdicts of the drift model, from the backend's signature to upstream's: `breaking` for
    callers (`opdrift.schema.compare`), `kernel` for the C++ signature its kernels are built against
    (`opdrift.schema.kernel`; "compatible" when they still build, and `kernel_changes` empty).
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
    # the form the verdict judged it in (`judged_form`; see Note [SymInt kernels from 1.13])
    judged_in: KernelForm | None = None
    # the first release of the run of releases, up to the snapshot's, whose schema is upstream's
    # (`opdrift.coverage.schema_history`): how long the backend has been behind. None: in no release yet
    upstream_since: str | None = None
    # how that run began: "added" (the op came with that schema), "changed", or "earliest" (the run
    # starts at the table's first release: unchanged since it or earlier); None with upstream_since
    upstream_event: SinceEvent | None = None


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
    (`opdrift.operators.codegen.kernel_binding`, the drift's rule too)."""

    theirs: Binding
    ours: Binding


def _bindings(op: BackendOp, rec: OpRecord, torch_version: str | None) -> _Bindings:
    """A list whose own keys bind its kernels (`BackendOp.own_binding`: op-plugin's) is bound by them,
    but for the tensor lists of an op its codegen binds as ITensorListRef whatever its keys say, which
    take either binding (`BackendOp.ilistref_either`); any other backend's kernel is bound as upstream
    binds it: its list does not say, and its codegen (torchgen's gen_backend_stubs for XLA's and XPU's)
    reads upstream's yaml."""
    rules = rules_for_version(torch_version)
    ours = kernel_binding(rec.facets, rules)
    theirs = kernel_binding(op, rules) if op.own_binding else ours
    if op.ilistref_either:  # its codegen's own list: it builds with upstream's tensor lists either way
        theirs = dataclasses.replace(theirs, ilistref=ours.ilistref)
    return _Bindings(theirs, ours)


def _kernel_verdict(
    theirs: FunctionSchema | None,
    schema: FunctionSchema,
    form: KernelForm | None,
    bindings: _Bindings,
) -> tuple[KernelVerdict, tuple[KernelChange, ...]]:
    """The kernel verdict from the backend's schema to upstream's, for a kernel written in FORM.

    A change that alters only the SymInt form leaves an int64_t kernel building: "symint", not
    "breaking" (see Note [SymInt kernels from 1.13]). With no form known (torch-mlir lowers by types) the verdict is every
    form's (`verdict_of`). Each side is bound by BINDINGS (`_bindings`): an op that joined a structured
    group upstream (``_scaled_mm_v2`` in 2.14.0) breaks a kernel its list still binds outside one. An
    unreadable backend side is "breaking" with no signature, as the drift does for an unreadable
    schema."""
    if theirs is None:
        return "breaking", ()
    found = kernel_changes(theirs, schema, binding_before=bindings.theirs, binding_after=bindings.ours)
    return judge_in_form(found, form), found


_LIST_REF = "const at::ITensorListRef &"


def for_backend(op: BackendOp | None, changes: tuple[KernelChange, ...]) -> tuple[KernelChange, ...]:
    """CHANGES as the backend's kernel for OP meets them: for one its codegen binds with ITensorListRef
    whatever upstream does (`BackendOp.ilistref_either`), not those that only take a tensor list as
    ``at::TensorList`` on one side and ``const at::ITensorListRef &`` on the other (the kernel takes
    the list ref, which the wrapper's TensorList converts to)."""
    if op is None or not op.ilistref_either:
        return changes
    return tuple(c for c in changes if _lists_as_refs(c.before) != _lists_as_refs(c.after))


def _lists_as_refs(sig: KernelSignature) -> tuple[str, tuple[str, ...]]:
    return sig.returns, tuple(_LIST_REF if p == "at::TensorList" else p for p in sig.parameters)


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
    """Callers' details type by type, by position, with diff's widening rule and codes. Not
    `diff_schemas` over `_schema_from_types`: the types carry no names, defaults or keyword-only
    marker, and that comparison reports what they cannot tell (torch-mlir's 2.12.0 types of
    ``_cudnn_attention_forward`` against 2.15.0: two arguments added with defaults, compatible, become
    also "scale made keyword-only", breaking)."""
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


def alert_for(op: BackendOp, rec: OpRecord, torch_version: str | None) -> SchemaAlert | None:
    """The schema alert for the backend's OP (which records a schema) against upstream's REC at torch
    TORCH_VERSION, or None when they agree. The one rule: coverage's alerts, and a subscription's
    "its recorded schema changed" (`opdrift.app.subscriptions.schema_changed`), which asks it of both
    sides of a change."""
    judged = judged_form(op.kernel_form, torch_version)
    schema = parse_schema(rec.schema)
    bindings = _bindings(op, rec, torch_version)
    if op.schema_kind == "types":
        return _types_alert(op, schema, judged, bindings)
    return _full_alert(op, rec, schema, judged, bindings)


def schema_alerts(snapshot: Snapshot, backend: BackendList) -> Iterable[SchemaAlert]:
    """The alerts of every op BACKEND lists with a schema, each dated by when upstream's schema began."""
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


def alert_key(a: SchemaAlert) -> tuple[str, str, str, tuple[str, ...]]:
    """What makes two alerts the same news: the operator, the backend's text, upstream's schema and
    upstream's C++ signatures (not the line: an edit elsewhere in the backend's file moves it). A kernel
    that built at BASE and breaks at HEAD with no text changed (``_scaled_mm_v2`` joined a structured
    group in 2.14.0) is news."""
    return (a.name, a.backend_schema, a.upstream_schema, tuple(str(k.after) for k in a.kernel_changes))
