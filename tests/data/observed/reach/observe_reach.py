"""What really reaches each kind of backend: four observations on a real torch (reach-X.Y.Z.json).

    python observe_reach.py FX_DECOMP_UTIL_PY -o reach-X.Y.Z.json

Run with a real torch (never by the tests: they read the JSON this writes), single-threaded.

1. ``functionalized_views``: the operators a view op becomes under functionalization that removes
   views as well as mutations (``torch.func.functionalize(f, remove="mutations_and_views")``, traced
   with ``make_fx``): the functionalization a functional backend (XLA, Lazy) runs under, which does not
   re-apply views. Each view op is called as its ATen overload, on CPU tensors.
2. ``default_kernel_calls``: the ATen operators the default kernel of a functional op calls, seen by
   the profiler as the op's direct children when it runs on CPU (record_shapes, so that an overload is
   told from its out= twin by its argument count: the profiler names an operator without its overload).
3. ``export_metadata``: the ATen operators of the graph ``torch.export.export`` traces for a module
   that calls one metadata operator (its result feeds a tensor op), with static shapes, the first
   dimension dynamic (``dynamic``) and both (``dynamic_all``, so that a stride is symbolic too), before and after ``run_decompositions`` with torch-mlir's table (the FX importer's
   ``get_decomposition_table()``, executed from FX_DECOMP_UTIL_PY). An operator that fails to export
   records its error (a quantized or sparse one on dense tensors; an ``int`` answer that specializes a
   dynamic dimension: "Constraints violated").
4. ``cpu_kernels``: every ``aten::`` operator the dispatcher knows, and those without a kernel at the
   CPU key as the dispatcher computes its table (``_dispatch_has_computed_kernel_for_dispatch_key``:
   a kernel of its own or one an alias key such as CompositeExplicitAutograd fills in). That is what
   a boxed CPU fallback (``at::native::cpu_fallback``) needs to run an operator on CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

aten = torch.ops.aten


def _name(target: Any) -> str | None:
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    base = target._schema.name.split("::", 1)[1]
    overload = target._overloadname
    return base if overload == "default" else f"{base}.{overload}"


def _ops(gm: torch.fx.GraphModule) -> list[str]:
    found = {_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    return sorted(n for n in found if n is not None)


# 1. view ops under functionalization -----------------------------------------------------------------


def _view_cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    r = torch.randn
    c = torch.randn(4, 4, dtype=torch.complex64)
    return {
        "unfold": (lambda x: aten.unfold(x, 0, 2, 1), (r(4, 4),)),
        "view_as_real": (lambda x: aten.view_as_real(x), (c,)),
        "view_as_complex": (lambda x: aten.view_as_complex(x), (r(4, 2),)),
        "view": (lambda x: aten.view(x, [16]), (r(4, 4),)),
        "view.dtype": (lambda x: aten.view.dtype(x, torch.int32), (r(4, 4),)),
        "permute": (lambda x: aten.permute(x, [1, 0]), (r(4, 4),)),
        "expand": (lambda x: aten.expand(x, [3, 4]), (r(1, 4),)),
        "transpose.int": (lambda x: aten.transpose.int(x, 0, 1), (r(4, 4),)),
        "t": (lambda x: aten.t(x), (r(4, 4),)),
        "diagonal": (lambda x: aten.diagonal(x), (r(4, 4),)),
        "select.int": (lambda x: aten.select.int(x, 0, 1), (r(4, 4),)),
        "slice.Tensor": (lambda x: aten.slice.Tensor(x, 0, 1, 3), (r(4, 4),)),
        "squeeze.dim": (lambda x: aten.squeeze.dim(x, 0), (r(1, 4),)),
        "unsqueeze": (lambda x: aten.unsqueeze(x, 0), (r(4, 4),)),
        "alias": (lambda x: aten.alias(x), (r(4, 4),)),
        "as_strided": (lambda x: aten.as_strided(x, [2, 2], [1, 2]), (r(4, 4),)),
        "split.Tensor": (lambda x: aten.split.Tensor(x, 2), (r(4, 4),)),
        "split_with_sizes": (lambda x: aten.split_with_sizes(x, [1, 3]), (r(4, 4),)),
        "unbind.int": (lambda x: aten.unbind.int(x), (r(4, 4),)),
        "detach": (lambda x: aten.detach(x), (r(4, 4),)),
        "_conj": (lambda x: aten._conj(x), (c,)),
        "_neg_view": (lambda x: aten._neg_view(x), (r(4, 4),)),
        "_reshape_alias": (lambda x: aten._reshape_alias(x, [16], [1]), (r(4, 4),)),
        "chunk": (lambda x: aten.chunk(x, 2), (r(4, 4),)),
    }


def _functionalized_views() -> dict[str, Any]:
    from torch.fx.experimental.proxy_tensor import make_fx

    out: dict[str, Any] = {}
    for name, (call, inputs) in _view_cases().items():

        def f(*xs: torch.Tensor, call: Callable[..., Any] = call) -> Any:
            result = call(*xs)
            # use the view, so that it is not dead code
            if isinstance(result, (list, tuple)):
                return [t * 1 for t in result]
            return result * 1

        gm = make_fx(torch.func.functionalize(f, remove="mutations_and_views"))(*inputs)
        plain = make_fx(f)(*inputs)
        out[name] = {"functionalized": _ops(gm), "traced": _ops(plain)}
    return out


# 2. what a functional op's default kernel calls --------------------------------------------------------


def _bn_args() -> tuple[Any, ...]:
    r = torch.randn
    return (r(2, 3, 4), r(3), r(3), torch.zeros(3), torch.ones(3))


def _kernel_cases() -> dict[str, tuple[Any, tuple[Any, ...]]]:
    x, w, b, rm, rv = _bn_args()
    return {
        "_native_batch_norm_legit_functional": (
            aten._native_batch_norm_legit_functional.default,
            (x, w, b, rm, rv, True, 0.1, 1e-5),
        ),
        "_batch_norm_with_update_functional": (
            aten._batch_norm_with_update_functional.default,
            (x, w, b, rm, rv, 0.1, 1e-5),
        ),
        "rrelu_with_noise_functional": (
            aten.rrelu_with_noise_functional.default,
            (torch.randn(3, 4), torch.zeros(3, 4), 0.125, 1 / 3, True),
        ),
        # controls: hand-written CompositeExplicitAutograd wrappers around their out= op
        "complex": (aten.complex.default, (torch.randn(3), torch.randn(3))),
        "polar": (aten.polar.default, (torch.rand(3), torch.randn(3))),
    }


def _overloads_of(base: str, arity: int) -> list[str]:
    packet = getattr(aten, base)
    found = []
    for overload in packet.overloads():
        schema = getattr(packet, overload)._schema
        if len(schema.arguments) == arity:
            found.append(base if overload == "default" else f"{base}.{overload}")
    return sorted(found)


def _default_kernel_calls() -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    out: dict[str, Any] = {}
    for name, (op, args) in _kernel_cases().items():
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            op(*args)
        top = [e for e in prof.events() if e.name == f"aten::{name.split('.')[0]}" and e.cpu_parent is None]
        calls = []
        for child in top[0].cpu_children:
            base = child.name.removeprefix("aten::")
            calls.append({"base": base, "overloads": _overloads_of(base, len(child.input_shapes))})
        out[name] = {
            "cpu_kernel": torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "CPU"),
            "calls": calls,
        }
    return out


# 3. metadata operators on the export path --------------------------------------------------------------


def _metadata_cases() -> dict[str, Callable[[torch.Tensor], Any]]:
    return {
        "sym_is_contiguous": lambda x: int(aten.sym_is_contiguous(x)),
        "is_contiguous": lambda x: int(aten.is_contiguous(x)),
        "sym_stride.int": lambda x: aten.sym_stride.int(x, 0),
        "stride.int": lambda x: aten.stride.int(x, 0),
        "sym_size.int": lambda x: aten.sym_size.int(x, 0),
        "size.int": lambda x: aten.size.int(x, 0),
        "sym_numel": lambda x: aten.sym_numel(x),
        "numel": lambda x: aten.numel(x),
        "sym_storage_offset": lambda x: aten.sym_storage_offset(x),
        "storage_offset": lambda x: aten.storage_offset(x),
        "dim": lambda x: aten.dim(x),
        "dense_dim": lambda x: aten.dense_dim(x),
        "sparse_dim": lambda x: aten.sparse_dim(x),
        "get_device": lambda x: aten.get_device(x),
        "output_nr": lambda x: aten.output_nr(x),
        "_version": lambda x: aten._version(x),
        "_debug_has_internal_overlap": lambda x: aten._debug_has_internal_overlap(x),
        "_nnz": lambda x: aten._nnz(x),
        "q_scale": lambda x: aten.q_scale(x),
        "_local_scalar_dense": lambda x: aten._local_scalar_dense(x.sum()),
    }


class _Meta(nn.Module):
    def __init__(self, call: Callable[[torch.Tensor], Any]) -> None:
        super().__init__()
        self.call = call

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.call(x)


def _export_metadata(mlir_table: Callable[[], dict[Any, Any]]) -> dict[str, Any]:
    from torch.export import Dim

    out: dict[str, Any] = {}
    for name, call in _metadata_cases().items():
        row: dict[str, Any] = {}
        for shapes, dims in (("static", ()), ("dynamic", (0,)), ("dynamic_all", (0, 1))):
            x = torch.randn(4, 3)
            dynamic = {"x": {d: Dim(f"d{d}", min=2, max=64) for d in dims}} if dims else None
            try:
                ep = torch.export.export(_Meta(call), (x,), dynamic_shapes=dynamic)
                row[shapes] = {
                    "exported": _ops(ep.graph_module),
                    "torch_mlir": _ops(ep.run_decompositions(mlir_table()).graph_module),
                }
            except Exception as e:  # the observation keeps what stopped export
                row[shapes] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        out[name] = row
    return out


# 4. which operators have a kernel at the CPU key -------------------------------------------------------


def _cpu_kernels() -> dict[str, Any]:
    names = sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))
    missing = [
        n.removeprefix("aten::")
        for n in names
        if not torch._C._dispatch_has_computed_kernel_for_dispatch_key(n, "CPU")
    ]
    return {"operators": len(names), "without_cpu_kernel": missing}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fx_decomp_util")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    namespace: dict[str, Any] = {}
    with open(args.fx_decomp_util, encoding="utf-8") as f:
        exec(compile(f.read(), args.fx_decomp_util, "exec"), namespace)
    out = {
        "torch": torch.__version__,
        "script": "tests/data/observed/reach/observe_reach.py",
        "functionalized_views": _functionalized_views(),
        "default_kernel_calls": _default_kernel_calls(),
        "export_metadata": _export_metadata(namespace["get_decomposition_table"]),
        "cpu_kernels": _cpu_kernels(),
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    summary = {k: v for k, v in out.items() if k != "cpu_kernels"}
    print(json.dumps(summary, indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
