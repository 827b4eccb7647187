"""Scope: whether an operator is something every backend needs, or only some backends.

A new op such as ``_cudnn_attention_forward_no_dropout_inplace`` or ``_scaled_addmm.out`` (CUDA-only)
needs a kernel only on the backend it was written for: an XLA, OpenCL or Ascend backend does not want
it at the top of its report. The rules are data, read top to bottom like the taxonomy's; the first that
holds names the reason `explain` and the reports show. An operator no rule claims is generic.

- by name: the vendor libraries and backend-specific families PyTorch names its operators after
  (cudnn, miopen, mkldnn, mps, cuda, cufft, nested tensors, sparse, quantized, tests);
- by kernels: every kernel it has of its own is under Sparse*, Quantized*, NestedTensor* or Mkldnn*
  keys, or under one device that is not the CPU (only CUDA, only MPS, ...), and no default kernel or
  decomposition serves the other backends (``sum`` has sparse kernels and a CompositeExplicitAutograd
  one: every backend's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from opdrift.dispatchkeys import GENERIC_KEYS
from opdrift.model import OpRecord
from opdrift.operators.kernels import DELEGATE, OWN, table_of


@dataclass(frozen=True)
class Scope:
    """`generic`: every backend needs it; else `rule` and `reason` say which backends do."""

    generic: bool
    rule: str = ""
    reason: str = ""


GENERIC = Scope(True)

# Keys that say how a tensor is stored or what a kernel wraps, not which hardware runs it.
LAYOUT_PREFIXES = ("Sparse", "SparseCsr", "Quantized", "NestedTensor", "Mkldnn")
# Keys that hold no hardware kernel: shape inference, tensor subclasses, tracing.
_NOT_A_DEVICE = frozenset(
    {"Meta", "ZeroTensor", "Conjugate", "Negative", "FuncTorchBatched", "BackendSelect", "Python"}
)


def _name_rule(pattern: str, says: str) -> Callable[[OpRecord], str | None]:
    compiled = re.compile(pattern)

    def test(rec: OpRecord) -> str | None:
        found = compiled.search(rec.base)
        return None if found is None else f"its name contains {found.group(0).strip('_')}: {says}"

    return test


def device_kernel_keys(rec: OpRecord) -> list[str]:
    """The keys REC has a kernel of its own under (or its structured delegate's), devices and layouts
    alike, but no key that holds no hardware kernel (Meta, ZeroTensor...)."""
    table = table_of(rec.facets)
    return sorted(k for k, source in table.items() if source in (OWN, DELEGATE) and k not in _NOT_A_DEVICE)


def _served_by_default(rec: OpRecord) -> bool:
    """A default kernel or a decomposition serves every backend without a kernel of its own (sum,
    clone): whatever else the op has, it is every backend's."""
    return not table_of(rec.facets).keys().isdisjoint(_DEFAULTS)


def _layout_only(rec: OpRecord) -> str | None:
    if _served_by_default(rec):
        return None
    keys = device_kernel_keys(rec)
    if keys and all(k.startswith(LAYOUT_PREFIXES) for k in keys):
        return f"its only kernels are {', '.join(keys)}: for sparse, quantized, nested or mkldnn tensors"
    return None


def _one_device(rec: OpRecord) -> str | None:
    if _served_by_default(rec):
        return None
    keys = {k for k in device_kernel_keys(rec) if not k.startswith(LAYOUT_PREFIXES)}
    # A reference kernel on the CPU is how most generic ops start, so CPU alone does not count.
    if len(keys) == 1 and keys != {"CPU"}:
        return f"its only kernel is for {next(iter(keys))}"
    return None


_DEFAULTS = GENERIC_KEYS

# (rule id, test → the reason, or None). Names first: `_cudnn_rnn` is cuDNN's whatever its keys say.
SCOPE_RULES: tuple[tuple[str, Callable[[OpRecord], str | None]], ...] = (
    (
        "scope.name.vendor",
        _name_rule(
            r"cudnn|miopen|mkldnn|cufft|cusparse|cublas|(^|_)mps(_|$)|(^|_)cuda(_|$)|fbgemm|xnnpack|vulkan",
            "a vendor library or device",
        ),
    ),
    ("scope.name.nested", _name_rule(r"(^|_)nested(_|$)", "for nested tensors")),
    ("scope.name.sparse", _name_rule(r"sparse|(^|_)(coo|csr|csc|bsr|bsc)(_|$)", "for sparse tensors")),
    ("scope.name.quantized", _name_rule(r"quantized|(^|_)q_", "for quantized tensors")),
    ("scope.name.test", _name_rule(r"(^|_)test(_|$)", "for PyTorch's own tests")),
    ("scope.kernels.layout", _layout_only),
    ("scope.kernels.one_device", _one_device),
)


def scope_of(rec: OpRecord) -> Scope:
    """The first scope rule REC meets, or GENERIC."""
    for rule, test in SCOPE_RULES:
        reason = test(rec)
        if reason is not None:
            return Scope(False, rule, reason)
    return GENERIC
