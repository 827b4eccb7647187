"""What a backend is called when its subscription gives no `name:` (`bot.config.file`): every
report calls a backend by its name ("dlprim"), never by its kind and path ("cpp ../src")."""

from __future__ import annotations

import os

from bot.github.ghfiles import PREFIX as GH_PREFIX

NAME_MAX = 50  # a backend's name heads its row of the impact table, and follows each of its mentions
# What a backend is called when its subscription gives no `name:`: the product a kind is made for (one
# backend reads op-plugin's yaml), else the list's own name (`default_name`).
_KIND_NAMES: dict[str, tuple[str, frozenset[str]]] = {
    # kind → (the product's name, the file names its list has in the product's repository)
    "torch-mlir": ("torch-mlir", frozenset({"GeneratedTorchOps.td", "torch_ods_gen.py", "torch-mlir", "."})),
    "xla": ("xla", frozenset({"xla_native_functions.yaml"})),
    "op-plugin": ("op-plugin", frozenset({"op_plugin_functions.yaml"})),
    "torch-npu": ("torch_npu", frozenset({"npu_native_functions.yaml"})),
    "xpu": ("torch-xpu-ops", frozenset({"xpu_functions.yaml"})),
}
# Directory and file names that say nothing of whose list it is: the name is looked for above them.
_GENERIC = frozenset(
    {"", ".", "..", ".github", "src", "csrc", "source", "sources", "lib", "include", "native", "ops", "aten",
     "backend", "backends", "kernels", "codegen", "yaml", "list", "lists", "ops.txt", "op_list.txt"}
)  # fmt: skip


def default_name(kind: str, value: str, resolved: str = "") -> str:
    """A backend's name when its subscription gives none: a dispatch key's own name (``MPS``); a
    ``gh:OWNER/NAME@REF:PATH`` list's repository (``NAME``); the product of a kind made for one
    (``xla``, ``op-plugin``) when the list has the product's own file name; else the last component of
    the list's path that says whose it is (a file without its extension; ``src`` and the like skipped, up to the directory holding them:
    ``../src`` of pytorch_dlprim's checkout is ``pytorch_dlprim``)."""
    if kind == "dispatch":
        return value
    if value.startswith(GH_PREFIX):
        repo = value[len(GH_PREFIX) :].split("@", 1)[0].split(":", 1)[0]
        return repo.rsplit("/", 1)[-1][:NAME_MAX] or value[:NAME_MAX]
    product = _KIND_NAMES.get(kind)
    if product is not None and value.replace(os.sep, "/").rstrip("/").rsplit("/", 1)[-1] in product[1]:
        return product[0]
    for path in (value, resolved):
        for part in reversed(path.replace(os.sep, "/").split("/")):
            if part.lower() not in _GENERIC:
                stem = part.rsplit(".", 1)[0] if "." in part.strip(".") else part
                return (stem or part)[:NAME_MAX]
    return kind
