"""Snapshots for the drift and report tests: the real releases through the pipeline, and small
hand-made ones (opdrift.model records) for edges the releases do not contain, such as hostile names."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from datafiles import write_release

from opdrift.model import Decision, Facets, OpKind, OpRecord, Snapshot, SourceMeta

IMPLICIT = "CompositeImplicitAutograd"


@cache
def real_snapshot(version: str, tmp_root: str) -> Snapshot:
    from opdrift.pipeline import load_snapshot

    path = write_release(version, Path(tmp_root) / version)
    return load_snapshot(str(path))


def _kind(name: str, schema: str) -> OpKind:
    base = name.split(".")[0]
    if base.endswith("_") and not base.startswith("__"):
        return "inplace"
    if "!" in schema.split("*")[-1] and "*" in schema:
        return "out"
    return "functional"


def rec(
    schema: str,
    *,
    name: str | None = None,
    bucket: str = "misc",
    dispatch: Iterable[str] = (),
    composite: str | None = None,
    tags: Iterable[str] = (),
    delegate: str | None = None,
    structured: bool = False,
    line: int = 1,
    variants: Iterable[str] = ("function",),
) -> OpRecord:
    """A record whose name comes from `schema` (or `name`, for names no schema could hold).

    No dispatch and no delegate means CompositeImplicitAutograd, as in native_functions.yaml.
    """
    if name is None:
        name = schema.split("(")[0]
    base, _, overload = name.partition(".")
    keys = tuple(sorted(dispatch))
    if composite is None and not keys and delegate is None:
        composite = IMPLICIT
    if composite is not None and composite not in keys and composite != IMPLICIT:
        keys = tuple(sorted((*keys, composite)))
    facets = Facets(
        composite=composite,
        dispatch=keys,
        tags=tuple(sorted(tags)),
        structured=structured,
        structured_delegate=delegate,
        variants=tuple(sorted(variants)),
    )
    return OpRecord(name, base, overload, schema, bucket, "test", _kind(name, schema), facets, line)


def snap(records: Iterable[OpRecord], *, version: str = "2.13.0", commit: str | None = None) -> Snapshot:
    ops = {r.name: r for r in records}
    decisions = {r.base: Decision(r.bucket, "test", "test") for r in ops.values()}
    meta = SourceMeta("yaml", f"{version}/native_functions.yaml", torch_version=version, commit=commit)
    return Snapshot(meta, len(ops), dict(sorted(ops.items())), decisions, "native_functions.yaml")


# --- a drift shaped like 2.13.0 → 2.14.1, small enough to read --------------------------------------

_UNCHANGED = [
    rec(
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        bucket="primitive_pointwise",
        delegate="add.out",
        tags=["core", "pointwise"],
        line=500,
    ),
    rec(
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        bucket="primitive_pointwise",
        dispatch=["CPU", "CUDA", "MPS"],
        structured=True,
        line=520,
    ),
    rec(
        "relu(Tensor self) -> Tensor",
        bucket="primitive_pointwise",
        dispatch=["CPU", "CUDA"],
        tags=["core"],
        line=4800,
    ),
    rec(
        "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
        "SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
        bucket="convolution",
        line=1700,
    ),
]


def realistic_pair() -> tuple[Snapshot, Snapshot]:
    base = [
        *_UNCHANGED,
        rec(
            "cholesky(Tensor self, bool upper=False) -> Tensor",
            bucket="linalg",
            delegate=None,
            dispatch=["CPU", "CUDA"],
            line=9324,
        ),
        rec(
            "cholesky.out(Tensor self, bool upper=False, *, Tensor(a!) out) -> Tensor(a!)",
            bucket="linalg",
            dispatch=["CPU", "CUDA"],
            line=9320,
        ),
        rec(
            "_cdist_backward(Tensor grad, Tensor x1, Tensor x2, float p, Tensor cdist) -> Tensor",
            bucket="private",
            dispatch=["CPU", "CUDA"],
            line=4529,
        ),
        rec(
            "_cudnn_attention_forward(Tensor query, Tensor key, Tensor value, bool is_causal=False) -> Tensor",
            bucket="private",
            dispatch=["CUDA"],
            line=15000,
        ),
        rec(
            "logit(Tensor self, float? eps=None) -> Tensor",
            bucket="composite_pointwise",
            dispatch=["CPU", "CUDA"],
            tags=["pointwise"],
            line=5100,
        ),
        rec("hardswish(Tensor self) -> Tensor", bucket="primitive_pointwise", line=11000),
        rec(
            "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
            bucket="composite_reduction",
            delegate="sum.IntList_out",
            tags=["core", "reduction"],
            line=5900,
        ),
        rec(
            "std.names_dim(Tensor self, Dimname[1] dim, bool unbiased=True, bool keepdim=False) -> Tensor",
            bucket="named",
            line=6100,
        ),
        rec(
            "narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor",
            bucket="view",
            dispatch=["CompositeExplicitAutogradNonFunctional"],
            composite="CompositeExplicitAutogradNonFunctional",
            tags=["view_copy"],
            line=5400,
        ),
        rec(
            "abs(Tensor self) -> Tensor",
            bucket="primitive_pointwise",
            dispatch=["CompositeExplicitAutograd"],
            composite="CompositeExplicitAutograd",
            tags=["core", "pointwise"],
            line=400,
        ),
        rec(
            "abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            bucket="primitive_pointwise",
            dispatch=["CPU", "CUDA", "MPS"],
            line=410,
        ),
        rec("tile(Tensor self, SymInt[] dims) -> Tensor", bucket="view", line=7000),
    ]
    head = [
        *_UNCHANGED,
        rec(
            "_cdist_backward(Tensor grad_output, Tensor x1, Tensor x2, float p, Tensor cdist) -> Tensor",
            bucket="private",
            dispatch=["CPU", "CUDA", "XPU"],
            line=4531,
        ),
        rec(
            "_cudnn_attention_forward(Tensor query, Tensor key, Tensor value, bool is_causal=False, "
            "Tensor? block_table=None) -> Tensor",
            bucket="private",
            dispatch=["CUDA"],
            line=15010,
        ),
        rec(
            "logit(Tensor self, float? eps=None) -> Tensor",
            bucket="composite_pointwise",
            tags=["pointwise"],
            line=5102,
        ),
        rec(
            "hardswish(Tensor self) -> Tensor",
            bucket="primitive_pointwise",
            dispatch=["CPU", "CUDA", "MPS"],
            tags=["core", "pointwise"],
            line=11004,
        ),
        rec(
            "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
            bucket="composite_reduction",
            delegate="sum.IntList_out",
            tags=["reduction"],
            line=5904,
        ),
        rec(
            "narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor",
            bucket="view",
            dispatch=["CompositeExplicitAutogradNonFunctional"],
            composite="CompositeExplicitAutogradNonFunctional",
            tags=["view_copy"],
            line=5404,
        ),
        rec(
            "abs(Tensor self) -> Tensor",
            bucket="primitive_pointwise",
            dispatch=["CompositeExplicitAutograd", "XPU", "SparseXPU"],
            composite="CompositeExplicitAutograd",
            tags=["core", "pointwise"],
            line=400,
        ),
        rec(
            "abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            bucket="primitive_pointwise",
            dispatch=["CPU", "CUDA", "MPS", "XPU"],
            line=410,
        ),
        rec("tile.sym(Tensor self, SymInt[2] dims) -> Tensor", bucket="view", line=7002),
        rec(
            "linalg_polar(Tensor A) -> (Tensor U, Tensor H)",
            bucket="linalg",
            delegate="linalg_polar.out",
            line=14720,
        ),
        rec(
            "linalg_polar.out(Tensor A, *, Tensor(a!) U, Tensor(b!) H) -> (Tensor(a!) U, Tensor(b!) H)",
            bucket="linalg",
            dispatch=["CPU", "CUDA", "MPS"],
            structured=True,
            line=14727,
        ),
        rec("linalg_matrix_sqrth(Tensor self) -> Tensor", bucket="linalg", line=14407),
        rec(
            "_philox_key_fold_in.Tensor(Tensor key, Tensor data) -> Tensor",
            bucket="private",
            dispatch=["CPU", "CUDA"],
            line=6620,
        ),
    ]
    return snap(base, version="2.13.0", commit="a" * 40), snap(head, version="2.14.1", commit="b" * 40)


# --- names chosen to break a renderer -------------------------------------------------------------

HOSTILE_NAMES = (
    "evil`name``with```ticks",
    "<script>alert(1)</script>",
    "x](http://evil.example/pwn)",
    "@everyone",
    "line\n# Injected heading\n\n<img src=x onerror=alert(1)>",
    "term\x1b[2J\x1b[31mred",
    "pipe|in|table",
    "www.evil.example",
    "#1234",
    "L" * 5000,
)


def hostile_pair() -> tuple[Snapshot, Snapshot]:
    base = [
        rec("foo(Tensor self) -> Tensor", name="@here.<b>bold</b>", bucket="misc", dispatch=["CPU"], line=3),
        rec("bar(Tensor self) -> Tensor", bucket="<img src=x onerror=alert(1)>", line=4),
    ]
    head = [
        rec(
            f"{i}(Tensor self) -> Tensor `x` @everyone",
            name=n,
            bucket="misc",
            dispatch=["CPU", "@team"],
            tags=["core", "<b>t</b>"],
            line=10 + i,
        )
        for i, n in enumerate(HOSTILE_NAMES)
    ]
    head.append(rec("bar(Tensor self) -> Tensor\n## pwned", bucket="<img src=x onerror=alert(1)>", line=5))
    return snap(base, version="2.13.0"), snap(head, version="@everyone <b>2.14</b>")


def many_added(n: int, buckets: dict[str, int] | None = None) -> tuple[Snapshot, Snapshot]:
    """`n` new ops needing kernels in one bucket, plus `buckets` (name → count) of smaller ones."""
    base = list(_UNCHANGED)
    head = list(_UNCHANGED)
    for i in range(n):
        head.append(
            rec(
                f"big_op_{i:05d}(Tensor self, int dim, bool keepdim=False) -> Tensor",
                bucket="misc",
                dispatch=["CPU", "CUDA"],
                line=20000 + i,
            )
        )
    for bucket, count in (buckets or {}).items():
        for i in range(count):
            head.append(
                rec(f"{bucket}_op_{i}(Tensor self) -> Tensor", bucket=bucket, dispatch=["CPU"], line=i + 1)
            )
    return snap(base), snap(head, version="2.14.1")
