"""What a backend is called when its subscription gives no `name:` (`opdrift.config.file`): every
report calls a backend by its name ("dlprim"), never by its kind and path ("cpp ../src")."""

from __future__ import annotations

import os

from opdrift.coverage.kinds import KIND_BY_ID, BackendKind
from opdrift.github.ghfiles import PREFIX as GH_PREFIX

NAME_MAX = 50  # a backend's name heads its row of the impact table, and follows each of its mentions
# Directory and file names that say nothing of whose list it is: the name is looked for above them.
_GENERIC = frozenset(
    {"", ".", "..", ".github", "src", "csrc", "source", "sources", "lib", "include", "native", "ops", "aten",
     "backend", "backends", "kernels", "codegen", "yaml", "list", "lists", "ops.txt", "op_list.txt"}
)  # fmt: skip


def default_name(kind: BackendKind, value: str, resolved: str = "") -> str:
    """A backend's name when its subscription gives none: a dispatch key's own name (``MPS``); a
    ``gh:OWNER/NAME@REF:PATH`` list's repository (``NAME``); the product of a kind made for one
    (``xla``, ``op-plugin``: `opdrift.coverage.kinds.KindRow.product`) when the list has the product's own file name; else the last component of
    the list's path that says whose it is (a file without its extension; ``src`` and the like skipped, up to the directory holding them:
    ``../src`` of pytorch_dlprim's checkout is ``pytorch_dlprim``)."""
    row = KIND_BY_ID[kind]
    if row.in_pytorch:
        return value
    if value.startswith(GH_PREFIX):
        repo = value[len(GH_PREFIX) :].split("@", 1)[0].split(":", 1)[0]
        return repo.rsplit("/", 1)[-1][:NAME_MAX] or value[:NAME_MAX]
    if row.product and value.replace(os.sep, "/").rstrip("/").rsplit("/", 1)[-1] in row.product_files:
        return row.product
    for path in (value, resolved):
        for part in reversed(path.replace(os.sep, "/").split("/")):
            if part.lower() not in _GENERIC:
                stem = part.rsplit(".", 1)[0] if "." in part.strip(".") else part
                return (stem or part)[:NAME_MAX]
    return kind
