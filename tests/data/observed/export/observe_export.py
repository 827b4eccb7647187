"""What an exported graph really holds: torch.export on a real torch, three decomposition tables.

    python observe_export.py FX_DECOMP_UTIL_PY -o export-X.Y.Z.json

Run with a real torch (never by the tests: they read the JSON this writes). Each small module is
exported with ``torch.export.export`` (an inference graph) and its program decomposed with
``run_decompositions``: (a) torch-mlir's own table (the FX importer's ``get_decomposition_table()``,
executed from FX_DECOMP_UTIL_PY), (b) PyTorch's default Core-ATen table (no argument), (c) an empty
table. One module is also exported as a training graph (``_export_forward_backward``, which applies
the Core-ATen table, and ``aot_export_module(trace_joint=True)``, which applies none), for the
backward ops. The JSON records, per module and table, the ATen operators its graph calls, in
native_functions.yaml's spelling; beside them the keys of torch-mlir's table and the functional
CompositeImplicitAutograd operators export may keep (``_collect_all_valid_cia_ops_for_aten_namespace``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def _name(target: Any) -> str | None:
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    base = target._schema.name.split("::", 1)[1]
    overload = target._overloadname
    return base if overload == "default" else f"{base}.{overload}"


def _ops(gm: torch.fx.GraphModule) -> list[str]:
    found = {_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    return sorted(n for n in found if n is not None)


class Cdist(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cdist(x, y)


class Kron(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.kron(x, y)


class Nanmean(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nanmean(x, dim=1)


class Diff(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.diff(x, dim=1)


class Clip(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clip(x, -0.5, 0.5)


class Divide(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.divide(x, y)


class SqueezeDims(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.squeeze(x.unsqueeze(0).unsqueeze(0), (0, 1)) * 2


class GridSample(nn.Module):
    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return F.grid_sample(x, grid, align_corners=False)


class Linspace(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.linspace(0.0, 1.0, steps=4)


class Aliasing(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(x.reshape(2, 2, 4), 1) * 2


class OutCall(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        buf = torch.empty_like(x)
        torch.add(x, y, out=buf)
        return buf * 2


class InPlace(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.mul_(2)
        y.relu_()
        return y


class ScalarAnswers(nn.Module):
    # Operators that answer with a bool or a dtype; torch.equal and torch.allclose on data stop export
    # (DataDependentOutputException), so they are not here.
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        same = x.is_same_size(y)
        dtype = torch.result_type(x, 2.0)
        castable = torch.can_cast(x.dtype, torch.float64)
        return (x * 2).to(dtype) + int(same) + int(castable) + int(torch.is_complex(x))


class Train(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        return (F.gelu(self.norm(self.linear(x))).sum(),)


def _cases() -> dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]]:
    r = torch.randn
    return {
        "cdist": (Cdist(), (r(3, 4), r(5, 4))),
        "kron": (Kron(), (r(2, 2), r(2, 2))),
        "nanmean": (Nanmean(), (r(3, 4),)),
        "diff": (Diff(), (r(3, 4),)),
        "clip": (Clip(), (r(3, 4),)),
        "divide": (Divide(), (r(3, 4), r(3, 4))),
        "squeeze_dims": (SqueezeDims(), (r(3, 4),)),
        "grid_sample": (GridSample(), (r(1, 1, 4, 4), r(1, 2, 2, 2))),
        "linspace": (Linspace(), (r(4),)),
        "aliasing": (Aliasing(), (r(4, 4),)),
        "out_call": (OutCall(), (r(3, 4), r(3, 4))),
        "in_place": (InPlace(), (r(3, 4),)),
        "scalar_answers": (ScalarAnswers(), (r(3), r(3))),
        "train": (Train(), (r(2, 4),)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fx_decomp_util")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    namespace: dict[str, Any] = {}
    with open(args.fx_decomp_util, encoding="utf-8") as f:
        exec(compile(f.read(), args.fx_decomp_util, "exec"), namespace)
    mlir_table: Callable[[], dict[Any, Any]] = namespace["get_decomposition_table"]
    tables: dict[str, Callable[[], dict[Any, Any] | None]] = {
        "torch_mlir": mlir_table,
        "core_aten": lambda: None,
        "empty": dict,
    }
    graphs: dict[str, dict[str, list[str]]] = {}
    for case, (module, inputs) in _cases().items():
        module.eval()
        row = graphs[case] = {}
        ep = torch.export.export(module, inputs)
        row["exported"] = _ops(ep.graph_module)
        for table_name, table in tables.items():
            row[table_name] = _ops(ep.run_decompositions(table()).graph_module)
    from torch.export.experimental import _export_forward_backward

    module, inputs = _cases()["train"]
    module.train()
    joint = _export_forward_backward(torch.export.export(module, inputs))
    graphs["train"]["training_graph"] = _ops(joint.graph_module)
    # The same joint graph without any decomposition table: the backward kernels autograd calls.
    from torch._functorch.aot_autograd import aot_export_module

    joint_gm, _ = aot_export_module(
        torch.export.export(module, inputs).module(), inputs, trace_joint=True, output_loss_index=0
    )
    graphs["train"]["training_graph_undecomposed"] = _ops(joint_gm)

    from torch._export.utils import _collect_all_valid_cia_ops_for_aten_namespace

    out = {
        "torch": torch.__version__,
        "script": "tests/data/observed/export/observe_export.py",
        "graphs": graphs,
        "torch_mlir_table": sorted(n for n in map(_name, mlir_table()) if n is not None),
        "preservable_cia": sorted(
            n for n in map(_name, _collect_all_valid_cia_ops_for_aten_namespace()) if n is not None
        ),
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(graphs, indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
