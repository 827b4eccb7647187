"""torch-mlir's op list (``GeneratedTorchOps.td`` or the ``torch_ods_gen.py`` that generates it), and
the decomposition table its FX importer passes to ``run_decompositions`` (``fx_decomp_util.py``), in
either of its forms: the hand list, or core_aten_decompositions() minus exclusions (`FxTable`)."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from dataclasses import dataclass

from opdrift.coverage.oplist import BackendList, BackendOp, inplace_variant, line_finder, normalise_name
from opdrift.errors import ConfigError
from opdrift.operators.export_table import aten_names

# Where a torch-mlir checkout keeps the two files (`opdrift.coverage.backends` finds them under a PATH).
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


@dataclass(frozen=True)
class FxTable:
    """The table ``get_decomposition_table()`` of torch-mlir's ``fx_decomp_util.py`` returns, as read.

    Two forms: the hand list (``get_decompositions(DEFAULT_DECOMPOSITIONS)``, up to llvm/torch-mlir
    #4733), and ``get_expanded_decomposition_table()`` (from #4733): ``core_aten_decompositions()``
    without the entries whose ``k._overloadpacket`` its exclusion list names, updated with
    ``get_decompositions(DEFAULT_DECOMPOSITIONS)``. ``core_except`` is None for the hand list; for the
    second form it holds the excluded base operators, and the torch release judged resolves
    ``core_aten_decompositions()`` (`opdrift.operators.exported.core_minus_table`). ``named`` is None when
    neither form was recognised (a warning says where): PyTorch's default Core-ATen table stands."""

    named: frozenset[str] | None
    core_except: frozenset[str] | None = None
    form: str = ""
    warnings: tuple[str, ...] = ()


def _extends_list(node: ast.AST, list_name: str = _DECOMP_LIST) -> ast.AST | None:
    """The operand that NODE adds to the list LIST_NAME: ``X = [...]``, ``X += [...]``,
    ``X.append(op)``, ``X.extend([...])`` (under any ``if hasattr(...)``), else None."""
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == list_name for t in node.targets
    ):
        return node.value
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == list_name:
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "extend")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == list_name
        and node.args
    ):
        return node.args[0]
    return None


def _parse_fx(text: str, path: str) -> ast.Module:
    if len(text) > _MAX_FX_DECOMP:
        raise ConfigError(
            f"larger than {_MAX_FX_DECOMP} characters: not torch-mlir's fx_decomp_util.py", path=path
        )
    try:
        return ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        line = getattr(err, "lineno", None)
        raise ConfigError(f"not valid Python: {err.__class__.__name__}", path=path, line=line) from None


def _list_names(tree: ast.AST, list_name: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        operand = _extends_list(node, list_name)
        if operand is not None:
            names |= aten_names(operand)
    return frozenset(names)


def read_fx_decompositions(text: str, path: str) -> frozenset[str]:
    """The operators torch-mlir's ``fx_decomp_util.py`` puts in ``DEFAULT_DECOMPOSITIONS`` (the list its
    ``get_decomposition_table()`` hands to ``get_decompositions``), as ``base.overload``, ``base`` or
    ``base.*`` for a whole packet. Read as text with `ast`; a ``hasattr`` guard counts as true (the
    guarded operators exist in every release the checkout supports)."""
    names = _list_names(_parse_fx(text, path), _DECOMP_LIST)
    if not names:
        raise ConfigError(f"no {_DECOMP_LIST} list of aten operators", path=path)
    return names


def _called(node: ast.AST) -> str | None:
    """``f(...)`` or ``m.f(...)`` → "f"."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _list_arg(node: ast.AST, function: str) -> str | None:
    """X of ``FUNCTION(X)``, X a plain name."""
    if _called(node) == function and isinstance(node, ast.Call) and node.args:
        arg = node.args[0]
        return arg.id if isinstance(arg, ast.Name) else None
    return None


def _returned_call(func: ast.FunctionDef) -> ast.Call | None:
    """What FUNC returns, when its one ``return`` returns a call."""
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return)]
    if len(returns) == 1 and isinstance(returns[0].value, ast.Call):
        return returns[0].value
    return None


def _excluded_list(func: ast.FunctionDef) -> tuple[str, int] | None:
    """The module list whose packets FUNC leaves out of core_aten_decompositions(), and the line of the
    test: ``k._overloadpacket not in E``, E being the list or a local ``E = set(LIST)``."""
    local: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            inner = _list_arg(value, "set") or _list_arg(value, "frozenset")
            if inner is None and isinstance(value, ast.Name):
                inner = value.id
            if inner is not None:
                local[node.targets[0].id] = inner
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.NotIn)
            and isinstance(node.left, ast.Attribute)
            and node.left.attr == "_overloadpacket"
            and isinstance(node.comparators[0], ast.Name)
        ):
            name = node.comparators[0].id
            return local.get(name, name), node.lineno
    return None


def _core_minus(tree: ast.Module, func: ast.FunctionDef, path: str) -> FxTable | None:
    """FUNC's table when it is get_expanded_decomposition_table's: core_aten_decompositions() without the
    excluded packets, updated with get_decompositions(LIST); None when FUNC is not of that form."""
    core = next((n for n in ast.walk(func) if _called(n) == "core_aten_decompositions"), None)
    excluded = _excluded_list(func)
    added = [a for n in ast.walk(func) if (a := _list_arg(n, "get_decompositions")) is not None]
    if core is None or excluded is None or len(added) > 1:
        return None
    list_name, line = excluded
    entries = _list_names(tree, list_name)
    if not entries:
        return None
    # k._overloadpacket is a packet: an entry naming one overload (aten.x.ov) equals none of them
    warnings = tuple(
        f"{path}:{line}: {list_name} names the overload {name}, which excludes nothing (the test compares"
        " each entry with an overload's packet)"
        for name in sorted(entries)
        if not name.endswith(".*")
    )
    bases = frozenset(name[:-2] for name in entries if name.endswith(".*"))
    named = _list_names(tree, added[0]) if added else frozenset()
    plus = f", plus {added[0]}" if added else ""
    form = f"core_aten_decompositions() minus the {len(bases)} operators of {list_name}{plus}"
    return FxTable(named, bases, form, warnings)


def read_fx_table(text: str, path: str) -> FxTable:
    """The decomposition table torch-mlir's ``get_decomposition_table()`` returns (`FxTable`), read
    with `ast` and followed through the functions of the file, never imported."""
    tree = _parse_fx(text, path)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    entry = functions.get("get_decomposition_table")
    if entry is None:
        return FxTable(read_fx_decompositions(text, path), None, f"the hand list {_DECOMP_LIST}")
    func, seen = entry, {entry.name}
    while True:
        call = _returned_call(func)
        hand = None if call is None else _list_arg(call, "get_decompositions")
        if hand is not None:
            named = _list_names(tree, hand)
            if named:
                return FxTable(named, None, f"the hand list {hand}")
            break
        expanded = _core_minus(tree, func, path)
        if expanded is not None:
            return expanded
        callee = _called(call) if call is not None else None
        if callee is None or callee not in functions or callee in seen:
            break
        func = functions[callee]
        seen.add(callee)
    return FxTable(
        None,
        warnings=(
            f"{path}:{func.lineno}: cannot read the decomposition table {func.name}() builds (neither"
            f" get_decompositions({_DECOMP_LIST}) nor core_aten_decompositions() minus an exclusion list);"
            " judged by PyTorch's default Core-ATen table",
        ),
    )
