"""Which operators ExecuTorch's edge dialect accepts: the verifier every exported program meets.

ExecuTorch compiles the graph ``torch.export`` traces, after ``run_decompositions`` with PyTorch's
Core-ATen table (`opdrift.operators.exported`), then ``to_edge`` (exir/program/_program.py at
``cff6f4d``, 2026-08-22) replaces each view op by its ``*_copy`` op
(``ReplaceViewOpsWithViewCopyOpsPass``) and verifies the graph: ``check_valid_op``
(exir/verification/verifier.py) raises ``SpecViolationError`` "is not in Core ATen opset" for an
``aten`` op tagged neither ``core`` nor ``view_copy`` unless it is on its exception list. The
exported program is then converted to out= variants (``to_out_variant``), which is what ExecuTorch's
kernel yamls list. So an op the verifier refuses never asks a kernel of the backend: the model's
author decomposes it or adds it to ``_core_aten_ops_exception_list``.
"""

from __future__ import annotations

from opdrift.model import OpRecord

# The tags the verifier accepts an op by.
ACCEPTED_TAGS = frozenset({"core", "view_copy"})
# `_get_core_aten_ops_exception_list` (exir/verification/verifier.py at cff6f4d): accepted untagged.
# `DISALLOW_LIST` names Python operators, not ATen ops.
EXCEPTIONS = frozenset(
    {
        "mkldnn_rnn_layer",
        "_upsample_bilinear2d_aa",
        "quantize_per_tensor",
        "dequantize.self",
        "max",
        "min",
        "full_like",
    }
)


def edge_accepts(rec: OpRecord) -> bool:
    """Whether ExecuTorch's edge verifier lets REC through (tagged core or view_copy, or excepted)."""
    return bool(ACCEPTED_TAGS.intersection(rec.facets.tags)) or rec.name in EXCEPTIONS


# The ATen ops ExecuTorch's runtime serves itself, as prim ops every program can call: registered by
# kernels/prim_ops/register_prim_ops.cpp ("aten::sym_size.int", "aten::sym_numel",
# "aten::_local_scalar_dense", at cff6f4d), and kept as they are by to_out_variant (they are among
# `_EXECUTORCH_SYM_OPS`, exir/passes/executorch_prim_ops_registry.py, which to_out_var_skiplist holds).
# No kernel library lists them, and none needs to.
RUNTIME_PRIM_OPS = frozenset({"sym_size.int", "sym_numel", "_local_scalar_dense"})
