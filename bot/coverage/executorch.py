"""ExecuTorch's kernel yamls: the ops its kernel libraries register, in its own format.

Each entry of ``kernels/portable/functions.yaml`` (and of ``kernels/optimized/optimized.yaml``,
``kernels/quantized/quantized.yaml``, ``kernels/aten/functions.yaml``, ``custom_ops.yaml``) is either
``- op: add.out``, an ATen operator named as native_functions.yaml names it, whose schema ExecuTorch's
codegen takes from upstream, or ``- func: SCHEMA``, a full schema of its own: an ATen operator
upstream lacks (``allclose.out``) or one it writes out itself (``bitwise_left_shift.Tensor_out``), or
an operator of another namespace (``quantized_decomposed::add.out``, ``dim_order_ops::...``), which
is not ATen's and is left out. A ``kernels:`` list names the C++ kernels (``arg_meta`` per dtype and
dim order); how many does not matter here. The format is ExecuTorch's kernels/README.md (pytorch/
executorch at ``cff6f4d``, 2026-08-22).

What the entries mean for coverage is the edge dialect's matter (`opdrift.operators.edge`): ExecuTorch
lists out= variants, since the exported program is converted to them.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from opdrift.coverage.oplist import BackendList, BackendOp, normalise_name
from opdrift.errors import ConfigError
from opdrift.yamltext import compose_yaml_document

# The yamls of a checkout that a lean-mode runtime links (the portable library, its custom ops, the
# optimized and quantized libraries); ``kernels/aten/functions.yaml`` is the ATen-mode build's, read
# when named as a file.
CHECKOUT_YAMLS = (
    "kernels/portable/functions.yaml",
    "kernels/portable/custom_ops.yaml",
    "kernels/optimized/optimized.yaml",
    "kernels/quantized/quantized.yaml",
)
_FUNC = re.compile(r"^\s*(?:([A-Za-z_][A-Za-z0-9_]*)::)?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?)\(")


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def read_executorch(text: str, path: str) -> BackendList:
    """One ExecuTorch kernel yaml: a list of ``- op:`` and ``- func:`` entries."""
    root = compose_yaml_document(text, path)
    if root is None or (isinstance(root, yaml.ScalarNode) and root.value in ("", "~", "null")):
        return BackendList("executorch", path, ())
    if not isinstance(root, yaml.SequenceNode):
        raise ConfigError("expected a list of '- op:' and '- func:' entries", path=path, line=_line(root))
    ops: list[BackendOp] = []
    for entry in root.value:
        if not isinstance(entry, yaml.MappingNode):
            raise ConfigError("expected an entry with 'op:' or 'func:'", path=path, line=_line(entry))
        fields = {str(k.value): v for k, v in entry.value if isinstance(k, yaml.ScalarNode)}
        op, func = fields.get("op"), fields.get("func")
        if isinstance(op, yaml.ScalarNode) and func is None:
            line = _line(op)
            ops.append(BackendOp(normalise_name(str(op.value), path=path, line=line), line, path, "op"))
        elif isinstance(func, yaml.ScalarNode) and op is None:
            line = _line(func)
            schema = " ".join(str(func.value).split())
            m = _FUNC.match(schema)
            if m is None:
                raise ConfigError(f"'func' is not a schema: {schema[:80]!r}", path=path, line=line)
            if m.group(1) not in (None, "aten"):
                continue  # another namespace's operator (quantized_decomposed::, et_copy::): not ATen
            name = normalise_name(m.group(2), path=path, line=line)
            own = schema if m.group(1) is None else schema.split("::", 1)[1]
            ops.append(BackendOp(name, line, path, "func", own, "full"))
        else:
            raise ConfigError("an entry has one of 'op:' or 'func:'", path=path, line=_line(entry))
    return BackendList("executorch", path, tuple(ops))


def read_executorch_path(value: str, text_of: dict[str, str]) -> BackendList:
    """VALUE's yamls (a file, or a checkout's `CHECKOUT_YAMLS` that exist), given as path → text."""
    lists = [read_executorch(text, path) for path, text in text_of.items()]
    if not any(b.ops for b in lists):
        raise ConfigError("no ATen operator in any '- op:' or '- func:' entry", path=value)
    roots = (value,) if Path(value).is_dir() else ()
    return BackendList("executorch", value, tuple(op for b in lists for op in b.ops), roots=roots)
