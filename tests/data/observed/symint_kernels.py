"""Observe which C++ kernel forms the dispatcher accepts for SymInt and int schemas (symint_kernels.json).

Usage: python tests/data/observed/symint_kernels.py > tests/data/observed/symint_kernels.json
(run with a Python that has a real torch and ninja installed; the tests only read the JSON).

It compiles one small extension (torch.utils.cpp_extension.load_inline) that defines, in a library of
its own (``kdiff``), operators whose schemas take ``SymInt[]`` and ``SymInt`` or ``int[]`` and ``int``,
and registers a CPU kernel written in one form for each: the plain form (``at::IntArrayRef``,
``int64_t``) or the SymInt form (``c10::SymIntArrayRef``, ``c10::SymInt``). Each registration runs in
a function called from Python, so a rejected one is caught and its message kept. Each accepted kernel
is then called twice: boxed, from Python (``torch.ops.kdiff.NAME``), and unboxed, from C++ through
the operator's typed handle in the SymInt form that at:: callers use (the path where
``KernelFunction::call`` unpacks SymInts for a kernel without them).

Each kernel returns ``self + sum(size) * n`` so the result shows the arguments arrived intact.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
from typing import Any

_SOURCE = r"""
#include <torch/extension.h>
#include <torch/library.h>
#include <ATen/core/dispatch/Dispatcher.h>

static std::vector<std::unique_ptr<torch::Library>> libraries;

static at::Tensor plain_kernel(const at::Tensor& self, at::IntArrayRef size, int64_t n) {
  int64_t total = 0;
  for (auto s : size) total += s;
  return self + total * n;
}

static at::Tensor symint_kernel(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymInt n) {
  c10::SymInt total = 0;
  for (const auto& s : size) total = total + s;
  return self + (total * n).expect_int();
}

static std::string guarded(const std::function<void()>& step) {
  try {
    step();
    return "";
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
}

std::string define(const std::string& schema) {
  return guarded([&] {
    auto lib = std::make_unique<torch::Library>(
        torch::Library::FRAGMENT, "kdiff", std::nullopt, __FILE__, __LINE__);
    lib->def(schema.c_str());
    libraries.push_back(std::move(lib));
  });
}

std::string register_kernel(const std::string& name, const std::string& form) {
  return guarded([&] {
    auto lib = std::make_unique<torch::Library>(
        torch::Library::IMPL, "kdiff", c10::DispatchKey::CPU, __FILE__, __LINE__);
    if (form == "int64_t") {
      lib->impl(name.c_str(), TORCH_FN(plain_kernel));
    } else {
      lib->impl(name.c_str(), TORCH_FN(symint_kernel));
    }
    libraries.push_back(std::move(lib));
  });
}

std::vector<std::string> call_unboxed(const std::string& name, const at::Tensor& self,
                                      std::vector<int64_t> size, int64_t n, const std::string& form) {
  std::string result;
  std::string error = guarded([&] {
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow(("kdiff::" + name).c_str(), "");
    at::Tensor out;
    if (form == "SymInt") {
      out = op.typed<at::Tensor(const at::Tensor&, c10::SymIntArrayRef, c10::SymInt)>().call(
          self, c10::fromIntArrayRefSlow(size), c10::SymInt(n));
    } else {
      out = op.typed<at::Tensor(const at::Tensor&, at::IntArrayRef, int64_t)>().call(self, size, n);
    }
    result = std::to_string(out.item<int64_t>());
  });
  return {result, error};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("define", &define);
  m.def("register_kernel", &register_kernel);
  m.def("call_unboxed", &call_unboxed);
}
"""

# (operator, schema, the form of the kernel registered for it)
CASES = (
    ("symint_schema_plain_kernel", "(Tensor self, SymInt[] size, SymInt n) -> Tensor", "int64_t"),
    ("symint_schema_symint_kernel", "(Tensor self, SymInt[] size, SymInt n) -> Tensor", "SymInt"),
    ("int_schema_plain_kernel", "(Tensor self, int[] size, int n) -> Tensor", "int64_t"),
    ("int_schema_symint_kernel", "(Tensor self, int[] size, int n) -> Tensor", "SymInt"),
)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else ""


def main() -> int:
    torch: Any = importlib.import_module("torch")
    cpp_extension: Any = importlib.import_module("torch.utils.cpp_extension")
    with tempfile.TemporaryDirectory() as build:
        ext = cpp_extension.load_inline(
            name="kdiff_symint_kernels", cpp_sources=[_SOURCE], build_directory=build, verbose=False
        )
    observed = []
    for name, schema, form in CASES:
        row: dict[str, object] = {"operator": name, "schema": schema, "kernel_form": form}
        defined = ext.define(name + schema)
        registered = ext.register_kernel(name, form)
        row["registered"] = not defined and not registered
        row["registration_error"] = _first_line(defined or registered)
        if row["registered"]:
            self = torch.tensor(1)
            try:
                row["boxed_call"] = int(getattr(torch.ops.kdiff, name)(self, [2, 3], 4))
            except RuntimeError as e:  # a kernel registered but not callable would show here
                row["boxed_call"] = _first_line(str(e))
            for caller in ("SymInt", "int64_t"):
                result, error = ext.call_unboxed(name, self, [2, 3], 4, caller)
                row[f"unboxed_call_{caller}"] = int(result) if result else _first_line(error)
        observed.append(row)
    json.dump({"torch": str(torch.__version__), "cases": observed}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
