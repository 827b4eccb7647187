"""What nn.LSTM, nn.GRU, nn.RNN and scaled_dot_product_attention dispatch on a PrivateUse1 device
and on the CPU, on a real torch (never in the tests; bot/usage/device.py's table is checked against
its output, device-<release>.json).

The device is emulated: a tensor subclass whose TensorImpl says ``privateuseone:0`` (so PyTorch's C++
takes the path it takes for an out-of-tree backend: ``input.is_privateuseone()``), and a
TorchDispatchMode that records each operator below Autograd, as a backend's kernels receive it, and
runs it on CPU tensors, as a boxed CPU fallback would. An operator with no CPU kernel is recorded in
``no_cpu_kernel`` and, so that the run goes on, computed by a Python reference of the fused cell.
Inference only: autograd on a device needs a device guard, which Python cannot register.

    python tests/data/observed/device/observe_device.py > tests/data/observed/device/device-2.14.1.json
"""

from __future__ import annotations

import collections
import json
import sys
import types

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

_module = types.ModuleType("privateuseone")
_module.is_available = lambda: False  # nn.RNN asks the device's module
torch._register_device_module("privateuseone", _module)

seen: collections.Counter[str] = collections.Counter()
failed: set[str] = set()
wrap = {"on": True}  # off: the CPU's run, nothing wrapped


def _lstm(ig, hg, cx, bi=None, bh=None):
    g = ig + hg + (bi if bi is not None else 0) + (bh if bh is not None else 0)
    i, f, c, o = g.chunk(4, 1)
    i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
    cy = f * cx + i * c
    return o * cy.tanh(), cy, torch.cat([i, f, c, o], 1)


def _gru(ig, hg, hx, bi=None, bh=None):
    ig = ig + (bi if bi is not None else 0)
    hg = hg + (bh if bh is not None else 0)
    ir, iz, inn = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, hn], 1)


REFERENCE = {"_thnn_fused_lstm_cell": _lstm, "_thnn_fused_gru_cell": _gru}


def _name(func) -> str:
    base = func._schema.name.split("::")[1]
    return base if func._overloadname == "default" else f"{base}.{func._overloadname}"


def _handle(func, args, kwargs):
    name = _name(func)
    seen[name] += 1

    def unwrap(x):
        if isinstance(x, Dev):
            return x.elem
        return torch.device("cpu") if isinstance(x, torch.device) else x

    uargs, ukw = tree_map(unwrap, args), tree_map(unwrap, kwargs or {})
    try:
        out = func(*uargs, **ukw)
    except NotImplementedError:
        failed.add(name)  # no CPU kernel: a boxed CPU fallback fails here
        out = REFERENCE[name](*uargs, **ukw)
    if not wrap["on"]:
        return out
    return tree_map(lambda x: Dev(x) if isinstance(x, torch.Tensor) and not isinstance(x, Dev) else x, out)


class Dev(torch.Tensor):
    @staticmethod
    def __new__(cls, elem):
        r = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.shape,
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            device=torch.device("privateuseone", 0),
            requires_grad=elem.requires_grad,
        )
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _handle(func, args, kwargs)


class Mode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _handle(func, args, kwargs)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.proj(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


CASES = {
    "nn.LSTM": (lambda: torch.nn.LSTM(8, 8, 2), lambda: torch.randn(5, 2, 8)),
    "nn.GRU": (lambda: torch.nn.GRU(8, 8, 2), lambda: torch.randn(5, 2, 8)),
    "nn.RNN": (lambda: torch.nn.RNN(8, 8, 2), lambda: torch.randn(5, 2, 8)),
    "scaled_dot_product_attention": (Attention, lambda: torch.randn(2, 5, 8)),
}


def observe(build, make, device: bool) -> tuple[list[str], list[str]]:
    torch.manual_seed(0)
    wrap["on"] = device
    model = build().eval()
    if device:
        for mod in model.modules():
            for k, p in list(mod._parameters.items()):
                if p is not None:
                    mod._parameters[k] = torch.nn.Parameter(Dev(p.detach().clone()), requires_grad=False)
    x = Dev(make()) if device else make()
    seen.clear()
    failed.clear()
    with torch.no_grad(), Mode():
        model(x)
    return sorted(seen), sorted(failed)


def main() -> None:
    out = {"torch": torch.__version__, "python": sys.version.split()[0], "cases": {}}
    for label, (build, make) in CASES.items():
        cpu, _ = observe(build, make, device=False)
        dev, no_cpu = observe(build, make, device=True)
        out["cases"][label] = {"cpu": cpu, "privateuseone": dev, "no_cpu_kernel": no_cpu}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
