"""torch-mlir's op list (``GeneratedTorchOps.td`` or the ``torch_ods_gen.py`` that generates it), and
the decomposition table its FX importer passes to ``run_decompositions`` (``fx_decomp_util.py``)."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right

from bot.coverage.oplist import BackendList, BackendOp, inplace_variant, line_finder, normalise_name
from bot.errors import ConfigError
from bot.operators.export_table import aten_names

# Where a torch-mlir checkout keeps the two files (`bot.coverage.backends` finds them under a PATH).
TD_PATH = "include/torch-mlir/Dialect/Torch/IR/GeneratedTorchOps.td"
FX_DECOMP_PATH = "python/torch_mlir/extras/fx_decomp_util.py"
_DECOMP_LIST = "DEFAULT_DECOMPOSITIONS"
# fx_decomp_util.py is some 60 lines; a file far larger is not that file, and is not parsed.
_MAX_FX_DECOMP = 1 << 20

# What torch-mlir's FX importer imports a symbolic shape op as (`SYMBOLIC_OP_TO_TORCH_OP` in
# python/torch_mlir/extras/fx_importer.py, llvm/torch-mlir 0029fc2e): an exported graph with dynamic
# shapes holds `sym_size.int` and the like, and torch-mlir serves them with the op they map to, so they
# are as listed as that op. Its `sym_size.default` and `sym_stride.default` entries are left out: no
# native_functions.yaml declares them (1.12 to 2.15). `sym_is_contiguous` and `sym_storage_offset` have
# no entry: they reach torch-mlir as themselves.
FX_IMPORTER_SYMBOLIC = {
    "sym_size.int": "size.int",
    "sym_stride.int": "stride.int",
    "sym_numel": "numel",
}

_TD_OP = re.compile(r"Generated op for `aten::([^ `]+) : (\([^`]*\) -> \([^`]*\))`")
_ODS_EMIT = re.compile(r"\b(emit|emit_with_mutating_variants)\(\s*[\"']aten::([^ \"']+) : ([^\"']*)[\"']")
# torch_ods_gen.py also emits whole lists: `for key in ["aten::tanh : (Tensor) -> (Tensor)", ...]:`
# followed by `emit_with_mutating_variants(key)` (or `emit(key)`) in the loop body.
_ODS_FOR = re.compile(r"\bfor\s+(\w+)\s+in\s+\[")
_ODS_BODY = re.compile(r"\]\s*:\s*\n\s*(emit|emit_with_mutating_variants)\(\s*(\w+)\b")
_ODS_KEY = re.compile(r"[\"']aten::([^ \"']+) : ([^\"']*)[\"']")


def python_code_only(text: str) -> str:
    """`text` with Python ``#`` comments blanked (same length and lines): a commented-out emit emits nothing."""
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if "#" not in line:
            continue
        quote = ""
        for i, c in enumerate(line):
            if quote:
                if c == quote and line[i - 1] != "\\":
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "#":
                lines[k] = line[:i] + " " * (len(line) - i)
                break
    return "\n".join(lines)


def _ods_emits(text: str) -> list[tuple[int, str, str, str]]:
    """(offset, emit function, operator key, type signature) of every emitted op, in file order."""
    code = python_code_only(text)
    found = [(m.start(2), m.group(1), m.group(2), m.group(3).strip()) for m in _ODS_EMIT.finditer(code)]
    # Each loop's list ends at the first "]" after it: found by bisection, so that many unclosed
    # `for x in [` cannot make the scan quadratic.
    closers = [m.start() for m in re.finditer(r"\]", code)]
    for loop in _ODS_FOR.finditer(code):
        k = bisect_right(closers, loop.end() - 1)
        if k == len(closers):
            break
        end = closers[k]
        body = _ODS_BODY.match(code, end)
        if body is None or body.group(2) != loop.group(1):
            continue
        for m in _ODS_KEY.finditer(code, loop.end(), end):
            found.append((m.start(), body.group(1), m.group(1), m.group(2).strip()))
    return sorted(found)


def read_torch_mlir(text: str, path: str) -> BackendList:
    """GeneratedTorchOps.td (``Generated op for `aten::x : (...) -> (...)```) or torch_ods_gen.py's emit calls."""
    ops: list[BackendOp] = []
    line_at = line_finder(text)
    for m in _TD_OP.finditer(text):
        line = line_at(m.start())
        name = normalise_name(m.group(1), path=path, line=line)
        ops.append(BackendOp(name, line, path, "GeneratedTorchOps.td", m.group(2), "types"))
    if not ops:
        for offset, how, key, signature in _ods_emits(text):
            line = line_at(offset)
            name = normalise_name(key, path=path, line=line)
            ops.append(BackendOp(name, line, path, how, signature, "types"))
            if how == "emit_with_mutating_variants":
                ops.append(BackendOp(inplace_variant(name), line, path, how, signature, "types"))
    if not ops:
        raise ConfigError(
            "no torch-mlir operators found: expected GeneratedTorchOps.td ('Generated op for `aten::...`') "
            'or torch_ods_gen.py (emit("aten::..."))',
            path=path,
        )
    by_name = {op.name: op for op in ops}
    for symbolic, target in FX_IMPORTER_SYMBOLIC.items():
        served = by_name.get(target)
        if served is not None and symbolic not in by_name:
            # no schema of its own: the importer's rewrite is judged by the op it maps to
            ops.append(BackendOp(symbolic, served.line, path, "fx_importer"))
    return BackendList("torch-mlir", path, tuple(ops))


def _extends_list(node: ast.AST) -> ast.AST | None:
    """The operand that NODE adds to DEFAULT_DECOMPOSITIONS: ``X = [...]``, ``X += [...]``,
    ``X.append(op)``, ``X.extend([...])`` (under any ``if hasattr(...)``), else None."""
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == _DECOMP_LIST for t in node.targets
    ):
        return node.value
    if (
        isinstance(node, ast.AugAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == _DECOMP_LIST
    ):
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "extend")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == _DECOMP_LIST
        and node.args
    ):
        return node.args[0]
    return None


def read_fx_decompositions(text: str, path: str) -> frozenset[str]:
    """The operators torch-mlir's ``fx_decomp_util.py`` puts in ``DEFAULT_DECOMPOSITIONS`` (the list its
    ``get_decomposition_table()`` hands to ``get_decompositions``), as ``base.overload``, ``base`` or
    ``base.*`` for a whole packet. Read as text with `ast`; a ``hasattr`` guard counts as true (the
    guarded operators exist in every release the checkout supports)."""
    if len(text) > _MAX_FX_DECOMP:
        raise ConfigError(
            f"larger than {_MAX_FX_DECOMP} characters: not torch-mlir's fx_decomp_util.py", path=path
        )
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        line = getattr(err, "lineno", None)
        raise ConfigError(f"not valid Python: {err.__class__.__name__}", path=path, line=line) from None
    names: set[str] = set()
    for node in ast.walk(tree):
        operand = _extends_list(node)
        if operand is not None:
            names |= aten_names(operand)
    if not names:
        raise ConfigError(f"no {_DECOMP_LIST} list of aten operators", path=path)
    return frozenset(names)
